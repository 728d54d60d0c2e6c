/* The posemb subcommands. Each takes the arguments after its name
 * (argv[0] is the subcommand) and returns the process exit status:
 * 0 success, 1 a runtime failure (bad file, i/o), 2 a usage error
 * (unknown flag, bad value, bad spec string). */
#ifndef POSEMB_CLI_COMMANDS_H
#define POSEMB_CLI_COMMANDS_H

#include "posemb/error.h"

#define EXIT_USAGE 2

int cmd_inspect(int argc, char **argv);
int cmd_pe(int argc, char **argv);
int cmd_demo(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_forward(int argc, char **argv);
int cmd_perplexity(int argc, char **argv);
int cmd_passkey(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_study(int argc, char **argv);
int cmd_analyze(int argc, char **argv);
int cmd_probe(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_plot(int argc, char **argv);

/* The line main kept for a parallel subcommand run without --threads when other processes hold
 * CPUs ("posemb: 2 other runnable tasks on 2 CPUs; 1 thread, not 2 ..."), printed once: each
 * parallel subcommand calls it after its arguments parse, so a usage error stays one line. */
void cli_say_threads(void);
/* Keeps note (copied, cut to 255 bytes) for cli_say_threads: main's default thread count's reason. */
void cli_keep_threads_note(const char *note);

/* Prints "posemb SUB: message" on stderr and returns the exit status that
 * fits err->code (2 for EINVAL, 1 otherwise). */
int cli_report(const char *sub, const posemb_error *err);

#endif

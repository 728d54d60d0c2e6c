/* Flag parsing shared by the subcommands: "--flag VALUE" or "--flag=VALUE".
 * Every bad value gives one line "posemb SUB: --flag: problem" and exit 2. */
#ifndef POSEMB_CLI_ARGS_H
#define POSEMB_CLI_ARGS_H

typedef struct cli_args {
    const char *sub; /* subcommand name, for messages */
    int argc, i;
    char **argv;
    const char *flag;  /* the flag being read (in flag_buf) */
    const char *value; /* its inline value after '=', if any */
    char flag_buf[128];
} cli_args;

void cli_args_init(cli_args *a, const char *sub, int argc, char **argv);
/* Advances to the next argument; returns it, or NULL at the end. Sets
 * a->flag when it starts with "--" (splitting "--flag=value"). */
const char *cli_next(cli_args *a);
/* 1 if the current flag is name. */
int cli_is(const cli_args *a, const char *name);
/* A switch: *var = to, or EXIT_USAGE for "--switch=VALUE" (a switch takes no value); else 0. */
int cli_switch(cli_args *a, int *var, int to);
/* The current flag's value; NULL (after printing the error) when missing. */
const char *cli_value(cli_args *a);
/* Parses the current flag's value as an integer in [lo, hi]; 0 or EXIT_USAGE. */
int cli_int(cli_args *a, long lo, long hi, int *out);
/* --threads N: parses N in [1, 1024] and sets the thread count now; 0 or EXIT_USAGE. */
int cli_threads(cli_args *a);
/* Parses the current flag's value as context lengths "N,N,..." (up to 16,
 * each in [2, 2^20]) into lengths [16], their count into *n; 0 or EXIT_USAGE. */
int cli_lengths(cli_args *a, int *lengths, int *n);
/* EXIT_USAGE, after "unknown option", when arg, taken where a positional argument (a path) goes,
 * reads as an option (a dash and more): a misspelt "-x" is not opened as a file. Else 0. */
int cli_positional(const cli_args *a, const char *arg);
/* Prints "posemb SUB: message" and returns EXIT_USAGE. */
int cli_usage_error(const cli_args *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

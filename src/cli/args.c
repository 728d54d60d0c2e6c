#include "args.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "posemb/threads.h"

void cli_args_init(cli_args *a, const char *sub, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->sub = sub;
    a->argc = argc;
    a->argv = argv;
    a->i = 0; /* argv[0] is the subcommand */
}

const char *cli_next(cli_args *a)
{
    if (++a->i >= a->argc) return NULL;
    const char *s = a->argv[a->i];
    a->flag = NULL;
    a->value = NULL;
    if (strncmp(s, "--", 2) || !s[2]) return s;
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    if (n >= sizeof a->flag_buf) n = sizeof a->flag_buf - 1;
    memcpy(a->flag_buf, s, n);
    a->flag_buf[n] = '\0';
    a->flag = a->flag_buf;
    a->value = eq ? eq + 1 : NULL;
    return s;
}

int cli_is(const cli_args *a, const char *name) { return a->flag && !strcmp(a->flag, name); }

int cli_threads(cli_args *a)
{
    int threads = 0, rc = cli_int(a, 1, 1024, &threads);
    if (!rc) posemb_threads_set(threads);
    return rc;
}

int cli_switch(cli_args *a, int *var, int to)
{
    if (a->value) return cli_usage_error(a, "%s takes no value (got '%s')", a->flag, a->value);
    *var = to;
    return 0;
}

int cli_positional(const cli_args *a, const char *arg)
{
    if (arg[0] != '-' || !arg[1]) return 0;
    return cli_usage_error(a, "unknown option '%s' (see 'posemb %s --help')", arg, a->sub);
}

int cli_usage_error(const cli_args *a, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "posemb %s: ", a->sub);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return EXIT_USAGE;
}

const char *cli_value(cli_args *a)
{
    if (a->value) return a->value;
    if (a->i + 1 >= a->argc) {
        cli_usage_error(a, "%s needs a value", a->flag);
        return NULL;
    }
    return a->argv[++a->i];
}

int cli_lengths(cli_args *a, int *lengths, int *n)
{
    const char *v = cli_value(a);
    if (!v) return EXIT_USAGE;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", v);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        char *end;
        long x = strtol(tok, &end, 10);
        if (*end || x < 2 || x > 1 << 20 || *n == 16)
            return cli_usage_error(a, "--lengths %s: up to 16 lengths, each in [2, 1048576]", v);
        lengths[(*n)++] = (int)x;
    }
    return *n ? 0 : cli_usage_error(a, "--lengths: give at least one length");
}

int cli_int(cli_args *a, long lo, long hi, int *out)
{
    const char *v = cli_value(a);
    if (!v) return EXIT_USAGE;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end) return cli_usage_error(a, "%s: '%s' is not an integer", a->flag, v);
    if (errno == ERANGE || x < lo || x > hi)
        return cli_usage_error(a, "%s: %s is outside [%ld, %ld]", a->flag, v, lo, hi);
    *out = (int)x;
    return 0;
}

static char threads_note[256]; /* main's busy-CPU line, until cli_say_threads prints it */

void cli_keep_threads_note(const char *note) { snprintf(threads_note, sizeof threads_note, "%s", note); }

void cli_say_threads(void)
{
    if (threads_note[0]) fprintf(stderr, "posemb: %s\n", threads_note);
    threads_note[0] = '\0';
}

int cli_report(const char *sub, const posemb_error *err)
{
    fprintf(stderr, "posemb %s: %s\n", sub, err->msg[0] ? err->msg : posemb_status_name(err->code));
    return err->code == POSEMB_EINVAL ? EXIT_USAGE : 1;
}

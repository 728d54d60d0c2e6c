#include "posemb/error.h"
#include "core/error_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

posemb_status posemb_fail(posemb_error *err, posemb_status code, const char *fmt, ...)
{
    if (err) { /* via a copy, so that err->msg may itself be an argument ("%s: %s", path, err->msg) */
        char msg[POSEMB_ERROR_MSG];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof msg, fmt, ap);
        va_end(ap);
        memcpy(err->msg, msg, sizeof msg);
        err->code = code;
    }
    return code;
}

void posemb_error_clear(posemb_error *err)
{
    if (err) {
        err->code = POSEMB_OK;
        err->msg[0] = '\0';
    }
}

const char *posemb_status_name(posemb_status code)
{
    switch (code) {
    case POSEMB_OK:
        return "ok";
    case POSEMB_EINVAL:
        return "invalid argument";
    case POSEMB_EIO:
        return "i/o error";
    case POSEMB_EFORMAT:
        return "malformed file";
    case POSEMB_ENOMEM:
        return "out of memory";
    case POSEMB_ERANGE:
        return "out of range";
    }
    return "unknown error";
}

void posemb_abort(const char *file, int line, const char *cond, const char *what)
{
    fprintf(stderr, "posemb: internal error at %s:%d: %s (%s)\n", file, line, what, cond);
    abort();
}

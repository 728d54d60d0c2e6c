/* Error reporting: every fallible function returns a posemb_status and, when
 * given a posemb_error, fills it with one line naming the file or argument
 * and the problem. Callers that do not care pass NULL. */
#ifndef POSEMB_ERROR_H
#define POSEMB_ERROR_H

#include "posemb/api.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum posemb_status {
    POSEMB_OK = 0,
    POSEMB_EINVAL = 1,  /* bad argument, option or spec string (a usage error) */
    POSEMB_EIO = 2,     /* the file system refused: open, read, write, rename */
    POSEMB_EFORMAT = 3, /* a file's contents are malformed or inconsistent */
    POSEMB_ENOMEM = 4,  /* an allocation failed */
    POSEMB_ERANGE = 5,  /* a value is outside what the object supports */
} posemb_status;

#define POSEMB_ERROR_MSG 512

typedef struct posemb_error {
    posemb_status code;
    char msg[POSEMB_ERROR_MSG];
} posemb_error;

/* Records code and a printf-style message into err (if non-NULL) and returns
 * code, so that callers can write `return posemb_fail(err, ...)`. */
POSEMB_API posemb_status posemb_fail(posemb_error *err, posemb_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* A short name for a status code ("invalid argument", "malformed file", ...):
 * a static string, "unknown error" for a value outside the enum. */
POSEMB_API const char *posemb_status_name(posemb_status code);

/* Preconditions of the API that callers (not users' files) must meet, such
 * as an attention call that fits its PE. Checked in every build type; a
 * violation is a programming error and aborts with the condition named. */
#define POSEMB_REQUIRE(cond, what)                                                                                     \
    do {                                                                                                               \
        if (!(cond)) posemb_abort(__FILE__, __LINE__, #cond, (what));                                                  \
    } while (0)
POSEMB_API void posemb_abort(const char *file, int line, const char *cond, const char *what) __attribute__((noreturn));

#ifdef __cplusplus
}
#endif
#endif

/* POSEMB_API marks the public functions of libposemb. The library is built
 * with hidden visibility, so these are the only symbols its shared object
 * exports: a program linking it cannot collide with posemb's internals. */
#ifndef POSEMB_API_H
#define POSEMB_API_H

#if defined(__GNUC__) || defined(__clang__)
#define POSEMB_API __attribute__((visibility("default")))
#else
#define POSEMB_API
#endif

/* The longest path posemb builds: a path the user gives (PATH_MAX, 4096) and
 * the names posemb adds to it. A path that would not fit is an error, never
 * cut short. */
#define POSEMB_PATH_MAX 4608

#endif

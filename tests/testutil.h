/* Helpers shared by the tests. */
#ifndef POSEMB_TESTUTIL_H
#define POSEMB_TESTUTIL_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "posemb/pe.h"
#include "posemb/safetensors.h"

/* 1 if ../shared exists (CI has it); otherwise prints why the caller skips. */
int tu_have_shared(const char *what);
/* A fresh temporary directory (removed by tu_rmtree). */
char *tu_tmpdir(void);
void tu_rmtree(const char *dir);
/* The byte-level tokenizer (ids are the bytes), written to dir/bytes.json and loaded; fails the test otherwise. */
struct posemb_tokenizer *tu_bytes_tokenizer(const char *dir);
/* Runs a shell command, captures stdout+stderr (up to cap bytes) and returns
 * the exit status (or 128+signal if it was killed). */
int tu_run(const char *cmd, char *out, size_t cap);
/* Writes n bytes to path; returns 0 on success. */
int tu_write_file(const char *path, const void *data, size_t n);
/* dir/vocab.txt (a WordPiece vocabulary of 20 words and BERT's specials) and
 * dir/corpus.txt (3000 short sentences of them drawn from seed). */
void tu_write_toy_corpus(const char *dir, unsigned seed);
/* The losses of run/train_log.jsonl in order: its train lines, and with eval
 * its evaluation lines too (eval[i] = 1 for those). Returns how many. */
int tu_read_train_log(const char *run, double *loss, int *eval, int cap);
/* The lines of a study's results.jsonl without their timings ("seconds"),
 * sorted and joined: what any split of the study among workers must give. */
char *tu_results_canonical(const char *path);
/* The lines of dir/run/results.jsonl (0 when it does not exist). */
int tu_count_results(const char *dir, const char *run);
/* Runs `posemb study ARGS --out RUN` in dir, SIGKILLs it once run's
 * results.jsonl holds lines lines (or lets it end); returns the lines then.
 * No timeout: a slow machine waits longer, never fails for time. */
int tu_study_killed_after(const char *dir, const char *args, const char *run, int lines);
/* The same, killed as soon as a path matching the glob pattern (under dir)
 * exists; 1 if one did, 0 when the study ended first. */
int tu_study_killed_when(const char *dir, const char *args, const char *run, const char *pattern);

/* Tensor name of f as float32, malloc'ed (fails the test when absent); *numel its size. */
float *tu_st_read(const posemb_st_file *f, const char *name, int64_t *numel);
/* A PE for spec with its parameters allocated, initialised from a fixed
 * seed and prepared; fails the test when spec is refused. */
posemb_pe *tu_pe(const char *spec, int D, int H, int layers, int max_len, int causal);
/* p's learned tables redrawn from N(0, 0.5^2) (a fixed seed), O(1) so that
 * every hook's terms matter (CoPE's start at 0), then prepared; frequencies
 * and thresholds keep their init. */
void tu_pe_scramble(posemb_pe *p);
/* 1 when bf16 products run here; else 0, after printing that what (e.g.
 * "bf16 products") is not checked on this machine, and why. */
int tu_bf16_here(const char *what);

/* Asserts |a - b| <= atol + rtol * |b| with a message naming what and index i. */
#define TU_CLOSE(a, b, atol, rtol, what, i)                                                                            \
    tu_assert_close((double)(a), (double)(b), (atol), (rtol), (what), (long)(i), __FILE__, __LINE__)
void tu_assert_close(double a, double b, double atol, double rtol, const char *what, long i, const char *file,
                     int line);

#endif

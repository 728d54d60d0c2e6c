/* A table cell of the length study's reports: one value per seed (the
 * pretraining, the unit of replication), its mean, std and Welch star.
 * study_length_report.c and study_extend_report.c. */
#ifndef POSEMB_STUDY_CELL_H
#define POSEMB_STUDY_CELL_H

#include <stddef.h>

typedef struct cell {
    double v[16];
    int n;
} cell;

/* Adds v when finite (a missing number is no seed), up to 16. */
void cell_put(cell *c, double v);
/* NAN when empty. */
double cell_mean(const cell *c);
/* The sample std (n - 1); 0 below two seeds. */
double cell_std(const cell *c);
/* "*" when a two-sided Welch t-test of the seeds of a against those of the
 * reference b gives p < 0.05 (the spec's mark; none below 2 seeds a side,
 * or when b is NULL or a). */
const char *cell_star(const cell *a, const cell *b);
/* "5.123 +- 0.041" of exp over a cell of losses (perplexities per seed),
 * the star of its losses against ref's, " w" when windowed; one seed
 * without +-; "-" when empty. */
void cell_ppl_text(const cell *loss, const cell *ref, int windowed, char *buf, size_t cap);

#endif

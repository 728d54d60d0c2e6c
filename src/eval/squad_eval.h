/* SQuAD v1.1's evaluation: exact match and token F1 of the official
 * evaluate-v1.1.py, maximum over the gold answers, as fractions in [0, 1]
 * (the official script prints 100 times these). Pure and thread-safe. */
#ifndef POSEMB_SQUAD_EVAL_H
#define POSEMB_SQUAD_EVAL_H

#include "posemb/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The official answer normalisation of evaluate-v1.1.py, on UTF-8 text:
 *   1. lower case as Python's str.lower (full mapping: U+0130 becomes
 *      "i" + U+0307; a capital sigma at the end of a word becomes final
 *      sigma, Python's Final_Sigma rule);
 *   2. remove every character of Python's string.punctuation (the 32 ASCII
 *      symbols !"#$%&'()*+,-./:;<=>?@[\]^_`{|}~; other punctuation stays);
 *   3. replace the words "a", "an", "the" by a space: a word is a maximal
 *      run of the characters of Python's regex \w (str.isalnum, i.e. the
 *      Unicode categories L* and N*, or "_");
 *   4. split on Python whitespace (str.split()) and join with one space.
 * Invalid UTF-8 bytes (which a Python str cannot hold) become U+FFFD.
 * Unicode data comes from utf8proc (Unicode 15.0) where Python 3.11 has
 * 14.0: only characters new in 15.0 can differ. Checked against Python
 * 3.11's normalize_answer on every code point assigned in Unicode 14, each
 * in nine contexts (word boundaries, whitespace, final sigma on both sides),
 * and on every context, question and answer of SQuAD's dev set.
 * Returns a malloc'ed string that the caller frees, or NULL when out of
 * memory. */
char *posemb_squad_normalize(const char *text);

/* 1 if the normalised prediction equals the normalised form of any gold
 * answer, else 0 (0 when n_golds <= 0). NaN when out of memory. */
double posemb_squad_exact_match(const char *prediction, const char *const *golds, int n_golds);

/* The official token F1, maximum over the golds: the normalised texts split
 * on whitespace, common = the bag-of-tokens intersection (Counter & Counter),
 * 0 when it is empty (so two empty answers score 0, as v1.1 does), else
 * 2 P R / (P + R). 0 when n_golds <= 0. NaN when out of memory. */
double posemb_squad_f1(const char *prediction, const char *const *golds, int n_golds);

#ifdef __cplusplus
}
#endif

#endif

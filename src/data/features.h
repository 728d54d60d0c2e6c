/* Model inputs from the study's real data, as Hugging Face's fine-tuning
 * scripts build them (run_glue.py, run_qa.py with a slow BertTokenizer):
 * GLUE examples encoded and truncated to T tokens, SQuAD questions cut into
 * overlapping windows of their context (a document stride), answers
 * labelled by token, and the best span of each question decoded back into
 * the text of its context. */
#ifndef POSEMB_FEATURES_H
#define POSEMB_FEATURES_H

#include "posemb/api.h"

#include <stdint.h>

#include "data/datasets.h"
#include "posemb/error.h"
#include "posemb/tokenizer.h"

#ifdef __cplusplus
extern "C" {
#endif

/* n rows of T tokens, padded with [PAD] (type 0, mask 0). The arrays are
 * malloc'ed; posemb_features_free frees them and zeroes the struct, so it
 * may be called on a zeroed struct or twice. A failed call leaves f zeroed. */
typedef struct posemb_features {
    int n, T;
    int32_t *ids, *types; /* [n, T] */
    float *mask;          /* [n, T] 1 token, 0 padding */
    int32_t *label;       /* [n] GLUE classification; NULL otherwise */
    float *score;         /* [n] STS-B; NULL otherwise */
    /* SQuAD only (NULL for GLUE): */
    int32_t *starts, *ends;       /* [n] answer tokens (inclusive); 0 and 0 ([CLS]) when the window misses the answer */
    int32_t *example;             /* [n] k: the window belongs to question idx[k] */
    int32_t *tok_start, *tok_end; /* [n, T] the byte span of a context token in its context; -1 for the rest */
} posemb_features;

void posemb_features_free(posemb_features *f);

/* GLUE: every example of d as tokenizer(a, b, truncation="longest_first",
 * max_length=T, padding="max_length"): [CLS] a [SEP] (b [SEP]), types 0 then
 * 1: while a and b overflow T - 3 tokens, the longer one loses its last
 * token, b on a tie (HF's slow truncate_sequences: `if len(ids) >
 * len(pair_ids): ids = ids[:-1] else: pair_ids = pair_ids[:-1]`); a single
 * text is cut to T - 2. label and score are copied from d (NULL where d has
 * none). EINVAL when d is empty, T < 4 or the tokenizer has no [CLS],
 * [SEP], [PAD]; ENOMEM; the tokenizer's errors. The caller frees f with
 * posemb_features_free; a failed call leaves it zeroed. */
posemb_status posemb_glue_features(const posemb_tokenizer *tok, const posemb_glue_data *d, int T, posemb_features *f,
                                   posemb_error *err);

/* SQuAD: the questions idx[0..n) of sq as Hugging Face prepares them
 * (run_qa.py's windows; the words and answer spans of its older SQuAD
 * processor, data/processors/squad.py, which a slow tokenizer needs):
 * [CLS] question [SEP] context window [SEP], types 0 up to the first [SEP]
 * and 1 after it, the question cut to max_query tokens. The context is cut
 * into windows of L = T - 3 - len(question) tokens that overlap by `stride`
 * tokens (HF's doc_stride): they start at 0, L - stride, 2 (L - stride), ...
 * until one reaches the end of the context, every question giving at least
 * one window. Rows of one question are consecutive, in idx order.
 *
 * Context tokens carry the byte span of the word they come from, the words
 * being split on whitespace as HF's SQuAD processor splits them (" ", "\t",
 * "\r", "\n", U+202F) and each word tokenized alone (the pieces of one
 * word share its span), so a decoded answer is made of whole words of the
 * context ("flies." for the answer "flies").
 *
 * The answer (the first one of the question) labels a window when its
 * tokens lie wholly inside it; otherwise the window is labelled [CLS]
 * (0, 0). Its tokens are those of the words it touches, narrowed as HF's
 * _improve_answer_span to the first run of the answer's own tokens among
 * them, if there is one ("flies" without the "." of "flies.").
 *
 * EINVAL when n < 1, an index is out of range, the tokenizer has no [CLS],
 * [SEP], [PAD], or T, the stride or max_query leave no room; the room is
 * checked for the longest question allowed, so T >= max_query + 4 and
 * 0 <= stride < T - 3 - max_query whatever the questions are. ERANGE when
 * the rows or a context's tokens pass INT32_MAX / 2, ENOMEM, the tokenizer's
 * errors; f as for posemb_glue_features. */
posemb_status posemb_squad_features(const posemb_tokenizer *tok, const posemb_squad *sq, const int *idx, int n, int T,
                                    int stride, int max_query, posemb_features *f, posemb_error *err);

/* The answer of each question idx[k] (answers[k], malloc'ed, NUL-terminated):
 * over all its windows, the span start <= end of context tokens, at most
 * max_answer tokens long, that maximises start logit + end logit; its text
 * is the context from the first byte of the start token's word to the last
 * byte of the end token's word. logits [f->n, T, 2] (start, end per token),
 * as the span head gives them. Ties keep the first span found (rows in
 * order, then start, then end); a question whose windows hold no context
 * token gets "". EINVAL when f is not SQuAD features of these questions
 * (a row of another question, a span outside its context) or
 * max_answer < 1, ENOMEM; *answers is NULL on failure. Free with
 * posemb_squad_answers_free. */
posemb_status posemb_squad_decode(const posemb_squad *sq, const int *idx, int n, const posemb_features *f,
                                  const float *logits, int max_answer, char ***answers, posemb_error *err);
void posemb_squad_answers_free(char **answers, int n);

/* A reference for span tasks with no learned model: start and end logits 1
 * on every context token whose id occurs among its window's question
 * tokens (WordPiece ids: a shared "##s" counts), 0 elsewhere ([CLS], the
 * question, [SEP], padding). posemb_squad_decode's rules (start <= end,
 * the first of equal spans) then answer the word of the first matching
 * token, one word. On SQuAD-locate, where the question is the answer, it
 * is what answering "the first word of the paragraph that is in the
 * answer" scores. logits [f->n, f->T, 2]; EINVAL when f is not SQuAD
 * features. */
posemb_status posemb_squad_match_logits(const posemb_features *f, float *logits, posemb_error *err);

#ifdef __cplusplus
}
#endif
#endif

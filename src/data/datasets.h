/* Readers for the study's real data: GLUE TSV files and SQuAD v1.1 JSON,
 * validated, with one-line errors naming the file (and line or question).
 * CSV tables are formats/csv.h.
 *
 * GLUE (the files of download_glue_data.py, ../shared/data/glue/TASK/):
 * read as Hugging Face's GLUE processors read them, csv with delimiter "\t"
 * and quotechar=None: a line is split on tabs only (quotes are text), its
 * trailing "\n" and "\r" stripped, a leading UTF-8 BOM dropped (MRPC has
 * one; HF opens with utf-8-sig). Columns by task:
 *
 *   task   header  text_a       text_b       label (id = position in the list)
 *   CoLA   no      column 3     -            column 1: "0" "1"       (4 columns)
 *   SST-2  yes     sentence     -            label: "0" "1"
 *   MRPC   yes     #1 String    #2 String    Quality: "0" "1"
 *   STS-B  yes     sentence1    sentence2    score: a number in [0, 5] (regression)
 *   RTE    yes     sentence1    sentence2    label: "entailment" "not_entailment"
 *   QNLI   yes     question     sentence     label: "entailment" "not_entailment"
 *   WNLI   yes     sentence1    sentence2    label: "0" "1"
 *
 * Columns are found by their header names (the test files of CoLA, MRPC
 * and others have other layouts); every line must have as many columns as
 * the header (4 for CoLA's headerless train/dev). Test files are read
 * unlabeled (their CoLA file has a header "index sentence"). Metrics as GLUE
 * defines them: CoLA MCC; SST-2 accuracy; MRPC F1 then accuracy; STS-B
 * Pearson then Spearman; RTE, QNLI, WNLI accuracy.
 *
 * Errors: EIO when the file cannot be opened or read; EFORMAT, naming the
 * file and line, for an empty file, a header without the task's columns, a
 * line with the wrong number of columns, a label outside the task's list
 * (such as "maybe"), a score that is not a plain decimal number or lies
 * outside [0, 5], and a file with a header but no example.
 *
 * SQuAD v1.1 (dev-v1.1.json): {"data": [{"title", "paragraphs": [{"context",
 * "qas": [{"id", "question", "answers": [{"text", "answer_start"}]}]}]}]}.
 * answer_start counts Unicode code points (Python string offsets); every
 * answer is checked: context[answer_start : answer_start + len(text)] ==
 * text, in code points. Errors (EFORMAT) name the file and the question id:
 * not JSON, a missing or mistyped field, a question without answers, an
 * empty answer, an answer that starts or ends outside its context or does
 * not match it, a context that is not UTF-8, a duplicate question id. */
#ifndef POSEMB_DATASETS_H
#define POSEMB_DATASETS_H

#include "posemb/api.h"

#include <stddef.h>
#include <stdint.h>

#include "posemb/error.h"
#include "core/fileio.h"
#include "eval/metrics.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ================================================================ GLUE */

typedef enum posemb_glue_task {
    POSEMB_GLUE_COLA = 0,
    POSEMB_GLUE_SST2,
    POSEMB_GLUE_MRPC,
    POSEMB_GLUE_STSB,
    POSEMB_GLUE_RTE,
    POSEMB_GLUE_QNLI,
    POSEMB_GLUE_WNLI,
    POSEMB_GLUE_TASK_COUNT
} posemb_glue_task;

typedef struct posemb_glue_info {
    const char *name;               /* "CoLA", "SST-2", ...: also the folder name */
    int pair;                       /* 1 when examples have a text_b */
    int n_classes;                  /* 0 for regression (STS-B) */
    const char *const *label_names; /* n_classes strings as the files write them; id = index */
    int n_metrics;
    posemb_metric metrics[2]; /* the task's GLUE metrics, the main one first */
} posemb_glue_info;

/* The table above for one task (static data); NULL for a value outside the
 * enum. */
const posemb_glue_info *posemb_glue_task_info(posemb_glue_task task);
/* The task of a name, case-insensitive, with or without the hyphen
 * ("cola", "SST-2", "sst2", "STS-B", "stsb", ...); -1 when unknown. */
int posemb_glue_task_from_name(const char *name);

/* The examples of one file. Strings are NUL-terminated UTF-8 (as in the
 * file) and belong to the struct. */
typedef struct posemb_glue_data {
    posemb_glue_task task;
    int n; /* examples */
    const char **text_a;
    const char **text_b; /* NULL for single-sentence tasks (CoLA, SST-2) */
    int32_t *label;      /* [n] class ids; NULL for STS-B and unlabeled files */
    float *score;        /* [n] STS-B scores in [0, 5]; NULL otherwise */
    int labeled;         /* 0 for a test file */
    int n_classes;       /* as posemb_glue_info; 0 for regression */
    int n_metrics;
    posemb_metric metrics[2];
    char *text_; /* internal: the file's bytes, which the strings point into */
} posemb_glue_data;

/* Reads one TSV file of a task; labeled = 0 for the unlabeled test files.
 * The caller owns out's arrays and frees them with posemb_glue_free; on
 * failure (EINVAL for an unknown task, EIO, EFORMAT naming the file, line and
 * field, ENOMEM) out holds nothing to free. */
posemb_status posemb_glue_read(posemb_glue_task task, const char *path, int labeled, posemb_glue_data *out,
                               posemb_error *err);

/* Reads glue_dir/NAME/SPLIT.tsv ("train", "dev" labeled; "test" unlabeled);
 * EINVAL for another split or a path too long; otherwise as
 * posemb_glue_read. */
posemb_status posemb_glue_load(const char *glue_dir, posemb_glue_task task, const char *split, posemb_glue_data *out,
                               posemb_error *err);

void posemb_glue_free(posemb_glue_data *d);

/* The task's metrics of predictions against a labeled set: values[k] for
 * d->metrics[k] (fractions, as posemb/metrics.h). Classification reads
 * pred_label[n], regression pred_score[n] (the other may be NULL). EINVAL
 * for an unlabeled set or a missing prediction array. */
posemb_status posemb_glue_evaluate(const posemb_glue_data *d, const int32_t *pred_label, const float *pred_score,
                                   double *values, posemb_error *err);

/* =============================================================== SQuAD */

typedef struct posemb_squad_answer {
    const char *text;
    int32_t start, end;       /* byte offsets in the context: text = context[start, end) */
    int32_t cp_start, cp_end; /* the same span in code points (cp_start = the file's answer_start) */
} posemb_squad_answer;

typedef struct posemb_squad_example {
    const char *id;
    const char *question;
    const char *context;
    const char *title;                /* the article's */
    int article;                      /* index of the article in the file (0-based) */
    int paragraph;                    /* index of the paragraph in the file, over all articles */
    int32_t context_len, context_cps; /* the context's length in bytes and in code points */
    int n_answers;                    /* >= 1 */
    const posemb_squad_answer *answers;
} posemb_squad_example;

typedef struct posemb_squad {
    int n; /* questions, in file order */
    posemb_squad_example *ex;
    int n_articles;
    const char **titles; /* [n_articles] */
    int n_paragraphs;
    posemb_squad_answer *answers_; /* internal: every answer; ex[i].answers point into it */
    void *json_;                   /* internal: the parsed file; the strings point into it */
} posemb_squad;

/* Reads and validates a SQuAD v1.1 file (see the top of this file). EIO
 * when it cannot be read, EFORMAT when malformed, ENOMEM; out then holds
 * nothing to free, else the caller frees it with posemb_squad_free. */
posemb_status posemb_squad_load(const char *path, posemb_squad *out, posemb_error *err);
void posemb_squad_free(posemb_squad *sq);

/* The fixed split of the study (only SQuAD's dev set is available): by
 * article, in file order, every 5th article (index 4, 9, 14, ...) goes to
 * the eval part, the others to the train part. No article is in both, so
 * no paragraph is either. On dev-v1.1.json: 48 articles, 39 train
 * (8595 questions) and 9 eval (1975 questions: Computational_complexity_theory,
 * Victoria_(Australia), Apollo_program, Packet_switching,
 * American_Broadcasting_Company, Construction, Doctor_Who, Chloroplast,
 * Imperialism). */
typedef enum posemb_squad_part { POSEMB_SQUAD_TRAIN = 0, POSEMB_SQUAD_EVAL = 1 } posemb_squad_part;
#define POSEMB_SQUAD_EVAL_EVERY 5

/* The part that article index `article` belongs to. */
posemb_squad_part posemb_squad_article_part(int article);
/* Writes the indices (into sq->ex, ascending) of the questions of `part`
 * into idx (room for sq->n) and returns their count. */
int posemb_squad_split(const posemb_squad *sq, posemb_squad_part part, int *idx);

/* The study's locate task (SQuAD-locate): every question becomes the text of
 * its first answer, so the model has to find where the paragraph says it.
 * It needs the span machinery (windows, labels, decoding, scoring) and
 * token matching in order, not reading comprehension: a control of the
 * span pipeline, and a span task small models learn from little data. */
void posemb_squad_ask_answers(posemb_squad *sq);

/* The official evaluate-v1.1.py over the questions idx[0..n) (all of them,
 * in order, when idx is NULL; then n must be sq->n): predictions[k] answers
 * question idx[k] (NULL: unanswered, scored 0 as the script does). Fills
 * *exact_match and *f1 in percent (100 * mean), as the script prints them.
 * ENOMEM when out of memory; EINVAL for an index out of range or n < 1;
 * both results are NaN on failure. */
posemb_status posemb_squad_evaluate(const posemb_squad *sq, const int *idx, int n, const char *const *predictions,
                                    double *exact_match, double *f1, posemb_error *err);

/* ============================================================= helpers */

/* posemb_read_data_file, which the readers above use, is in posemb/fileio.h. */

/* ================================================================ spans */

/* Maps the character span [char_start, char_end) to the tokens that cover
 * it, given each token's character span [tok_start[i], tok_end[i]) (any
 * unit, bytes or code points, the same as the span's; tokens in text order,
 * as a tokenizer emits them; zero-width tokens such as [CLS] never match).
 * *tok_s = the first token that overlaps the span, *tok_e = the last one
 * (inclusive). A span that starts or ends inside a token takes that whole
 * token. Returns 0, or -1 (and leaves *tok_s, *tok_e alone) when the span
 * is not covered: empty or inverted, no token overlaps it, or it reaches
 * before the first token's start or past the last token's end (as Hugging
 * Face's run_qa labels an answer outside a window). */
int posemb_char_span_to_tokens(const int32_t *tok_start, const int32_t *tok_end, int n_tok, int char_start,
                               int char_end, int *tok_s, int *tok_e);

#ifdef __cplusplus
}
#endif
#endif

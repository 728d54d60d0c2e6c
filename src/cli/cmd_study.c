/* posemb study: the seed paper's comparison of PEs, end to end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "args.h"
#include "cli_mpi.h"
#include "cli_study_mpi.h"
#include "commands.h"
#include "core/fileio.h"
#include "study/study.h"
#include "posemb/threads.h"

static const char USAGE[] =
    "usage: posemb study [CONFIG.json] [--data DATA [--length]] [--out DIR] [--jobs N] [--threads N] [--report]\n\n"
    "Trains a small encoder with each PE on each task and seed, evaluates it at longer\n"
    "lengths, and writes DIR/results.jsonl (one line per run and length), DIR/tables.md and\n"
    "tables.csv (the seed paper's Tables 2 and 3 and Figure 1: mean +- std over seeds, Welch\n"
    "t-tests against ape), and DIR/report.html with the figures and what each PE learned.\n"
    "Without CONFIG: the embedded default, 16 PEs (the seed paper's 13, rope, alibi, t5) x 6\n"
    "synthetic tasks x 3 seeds. Run it again to continue an interrupted study: recorded runs\n"
    "are kept. CONFIG keys (all optional): pes, tasks, seeds, lengths (multiples of n_train),\n"
    "layers, hidden, heads, intermediate, n_train, steps, batch, lr, eval_examples, curve_every,\n"
    "jobs, analyze, ranks_per_run, task_budgets ({\"TASK\": {\"steps\", \"epochs\", \"curve_every\",\n"
    "\"lr\"}}: a task's own; the default trains absolute and order at lr 1e-3, the rest at 3e-3).\n"
    "Tasks: absolute, order, near, distance (classification), offset, retrieve, between, copy\n"
    "(span), reverse (a causal LM); the default's are absolute order offset retrieve between\n"
    "reverse. Length generalisation (causal LM): seq_copy, seq_reverse, seq_copy_bits,\n"
    "seq_reverse_bits, seq_sort, seq_add, seq_add_hints, seq_parity, seq_parity_running; over\n"
    "4, 8, 16 symbols seq_copy_aK, seq_reverse_aK; multi-key retrieval seq_lookup, seq_lookup_aK\n"
    "(K 2, 4, 8, 16).\n\n"
    "With --data DATA (a folder laid out like ../shared/data): the real-data study. Per PE a\n"
    "BERT (default 4 layers, width 128; none ape sin lsin rpe srpe lsrpe ape+rpe lsin+lsrpe\n"
    "rope alibi t5) is pretrained with masked LM on DATA's wikitext-2, janeausten and\n"
    "tinyshakespeare (or the files and folders under DATA that corpora lists, cut to\n"
    "corpus_tokens tokens; scripts/corpus-extra adds more English text; pretrain_steps,\n"
    "pretrain_batch, pretrain_lr, pretrain_warmup (steps; default a tenth), pretrain_seed: the\n"
    "initial weights' and dropout's draw; pre_ln 1: pre-LN layers; vocab: a WordPiece vocab.txt\n"
    "under DATA, default bert-base-uncased's; resumed from its checkpoints, pretrain_keep of them\n"
    "kept),\n"
    "then fine-tuned per task and seed (steps, epochs, batch, lr, dropout; the\n"
    "best of the evaluations every curve_every steps is kept) on CoLA SST-2 MRPC STS-B RTE (dev\n"
    "metrics) and SQuAD-locate (its own budget: 10 epochs, at most 3600 steps at lr 1e-3,\n"
    "evaluated every 300; SQuAD's paragraphs, each question replaced by its answer's text:\n"
    "find where the paragraph says it; held-out articles; windows of n_train x lengths,\n"
    "squad_stride, squad_max_query, max_answer, eval_examples questions). \"SQuAD\" in tasks\n"
    "adds SQuAD itself (not learned from DATA's corpora: results/study-data/README.md).\n\n"
    "With --length --data DATA: the length study (train short, test long). Per decoder\n"
    "(gpt2, llama: the tasks; also llama4, Llama 4's text decoder, and smollm3, Llama\n"
    "written as SmolLM3 for NoPE/RoPE interleavings), PE (none ape sin rope\n"
    "alibi t5 kerple sandwich fire xpos cope fox rope+random) and seed, a causal LM\n"
    "(4 layers, width 128) is trained at n_train = 128\n"
    "tokens (bytes; \"tokenizer\": \"gpt2\" for GPT-2's BPE) on DATA's text, then scored on\n"
    "WikiText-2's test set (eval_tokens) at n_train x lengths (1 .. 16): perplexity, RoPE also\n"
    "under each of rope_scalings (linear ntk dynamic yarn, applied without retraining), and\n"
    "passkey retrieval (passkey_trials prompts per length and depth; passkey_train: the share\n"
    "of training sequences that are passkey prompts of n_train tokens, default 0.25). With the\n"
    "tables, DIR/attention.jsonl: where each kept model attends on the held-out text at each\n"
    "length (per layer: the attention-weighted distance, the first token's mass).\n"
    "With extend_factors (e.g. [2, 4]) each trained rope run is also fine-tuned at n_train x\n"
    "factor under each of extend_scalings (none linear ntk dynamic yarn llama3; drope on\n"
    "request), extend_steps (400) at extend_lr (0: lr / 10; DroPE: lr), extend_batch (0: batch\n"
    "/ factor) sequences, perplexity read every extend_every (100) steps: DIR/extend.jsonl\n"
    "(docs/study.md, \"Every PE: the length study\").\n\n"
    "Under mpirun or srun (posemb built with MPI) each rank is one worker, taking the next run\n"
    "(a PE, for --data) as it frees up; rank 0 writes the results (docs/mpi.md). With\n"
    "\"ranks_per_run\": N, groups of N ranks train each run together (data parallel); one\n"
    "process then runs each update as the same N micro-batches.\n\n"
    "  --data DATA the real-data study on DATA (CONFIG then overrides its defaults)\n"
    "  --length    with --data: the length study instead\n"
    "  --report    train nothing: write the tables and report of the runs DIR/results.jsonl\n"
    "              holds so far (a study in progress; runs not yet done are empty cells)\n"
    "  --out DIR   output folder (default: posemb-study)\n"
    "  --jobs N    worker processes (default: 2)\n"
    "  --threads N threads per worker (default: 1 per worker with --jobs 2 or more; with\n"
    "              --jobs 1 and per MPI rank, the CPUs free when it starts)\n";

/* --report: the tables and report of the runs recorded so far, training
 * nothing, so that a study of many hours can be read while it runs. */
static int study_report_only(const posemb_study_config *c, const char *out)
{
    posemb_error err;
    char path[POSEMB_PATH_MAX];
    if (posemb_path_join(path, sizeof path, out, "results.jsonl") || access(path, R_OK)) {
        fprintf(stderr, "posemb study: %s: no runs recorded yet, nothing to report\n", path);
        return EXIT_FAILURE;
    }
    int n = 0, *pending = malloc((size_t)posemb_study_n_units(c) * sizeof *pending);
    posemb_status st =
        pending ? posemb_study_pending(c, out, pending, &n, &err) : posemb_fail(&err, POSEMB_ENOMEM, "out of memory");
    free(pending);
    if (st || posemb_study_finish(c, out, &err)) return cli_report("study", &err);
    printf("posemb study: wrote %s/tables.md, %s/tables.csv and %s/report.html", out, out, out);
    if (n)
        printf(" (%d of %d %s still to run: their cells are empty, or hold the seeds run so far)", n,
               posemb_study_n_units(c), c->data[0] && !c->length ? "PEs" : "runs");
    putchar('\n');
    return 0;
}

/* A study builds one model after another in each worker. glibc maps blocks
 * above its threshold (at most 32 MiB; a model's activations at 256 tokens
 * are larger) afresh and unmaps them at free, so every model faulted its
 * pages in again: 12% of a default-study run's samples under perf. Kept in
 * the heap, the next model reuses them; numbers are unchanged (bench/README,
 * "The studies' allocations"). */
static void keep_freed_memory(void)
{
#ifdef __GLIBC__
    mallopt(M_MMAP_MAX, 0);              /* glibc falls back to mmap where the heap cannot grow */
    mallopt(M_TRIM_THRESHOLD, 1L << 30); /* hand back only past 1 GiB free at the top */
#endif
}

int cmd_study(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "study", argc, argv);
    const char *config = NULL, *out = "posemb-study", *data = NULL, *arg;
    int rc = 0, jobs = 0, threads = 0, length = 0, report = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!a.flag) {
            if (cli_positional(&a, arg)) return EXIT_USAGE;
            if (config) return cli_usage_error(&a, "one CONFIG only");
            config = arg;
        } else if (cli_is(&a, "--out")) rc = (out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--jobs")) rc = cli_int(&a, 1, 64, &jobs);
        else if (cli_is(&a, "--threads")) rc = cli_int(&a, 1, 1024, &threads);
        else if (cli_is(&a, "--data")) rc = (data = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--length")) rc = cli_switch(&a, &length, 1);
        else if (cli_is(&a, "--report")) rc = cli_switch(&a, &report, 1);
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb study --help')", arg);
    }
    if (rc) return rc;
    if (data && strlen(data) >= sizeof((posemb_study_config *)0)->data)
        return cli_usage_error(&a, "--data: path too long");
    if (length && !data) return cli_usage_error(&a, "--length needs --data DATA (the text it trains and tests on)");
    posemb_study_config c = length ? posemb_study_length_default(data)
                            : data ? posemb_study_data_default(data)
                                   : posemb_study_default();
    posemb_error err;
    if (config && posemb_study_config_load(&c, config, &err)) return cli_report("study", &err);
    cli_say_threads();
    if (jobs) c.jobs = jobs;
    if (threads) { /* each forked worker sets c.threads; this process runs one worker, or an MPI rank's */
        c.threads = threads;
        posemb_threads_set(threads);
    }
    if (report) return study_report_only(&c, out);
    keep_freed_memory();
    const posemb_comm *g = cli_mpi_comm(); /* under mpirun: one worker per rank, --jobs aside */
    if (g ? cli_study_mpi(&c, out, g, &err) : posemb_study_run(&c, out, &err)) return cli_report("study", &err);
    if (posemb_comm_leader(g))
        printf("posemb study: wrote %s/tables.md, %s/tables.csv and %s/report.html\n", out, out, out);
    return 0;
}

/* posemb study: the seed paper's comparison of PEs, end to end. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "posemb/study.h"

static const char USAGE[] =
    "usage: posemb study [CONFIG.json] [--data DATA] [--out DIR] [--jobs N]\n\n"
    "Trains a small encoder with each PE on each task and seed, evaluates it at longer\n"
    "lengths, and writes DIR/results.jsonl (one line per run and length), DIR/tables.md and\n"
    "tables.csv (the seed paper's Tables 2 and 3 and Figure 1: mean +- std over seeds, Welch\n"
    "t-tests against ape), and DIR/report.html with the figures and what each PE learned.\n"
    "Without CONFIG: the embedded default, 16 PEs (the seed paper's 13, rope, alibi, t5) x 6\n"
    "synthetic tasks x 3 seeds. Run it again to continue an interrupted study: recorded runs\n"
    "are kept. CONFIG keys (all optional): pes, tasks, seeds, lengths (multiples of n_train),\n"
    "layers, hidden, heads, intermediate, n_train, steps, batch, lr, eval_examples, curve_every,\n"
    "jobs, analyze. Tasks: absolute, order, distance, retrieve, between, copy (span), reverse\n"
    "(a causal LM; the default leaves copy out).\n\n"
    "With --data DATA (a folder laid out like ../shared/data): the real-data study. Per PE a\n"
    "BERT (default 4 layers, width 256; ape sin lsin rpe lsrpe ape+rpe rope alibi) is pretrained\n"
    "with masked LM on DATA's wikitext-2, janeausten and tinyshakespeare (pretrain_steps,\n"
    "pretrain_batch, pretrain_lr; resumed from its checkpoints), then fine-tuned per task and\n"
    "seed (steps, batch, lr, dropout; the best of the evaluations every curve_every steps is\n"
    "kept) on CoLA SST-2 MRPC STS-B RTE (dev metrics) and SQuAD (held-out articles; windows of\n"
    "n_train x lengths, squad_stride, squad_max_query, max_answer, eval_examples questions).\n\n"
    "  --data DATA the real-data study on DATA (CONFIG then overrides its defaults)\n"
    "  --out DIR   output folder (default: posemb-study)\n"
    "  --jobs N    worker processes (default: 2)\n";

int cmd_study(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "study", argc, argv);
    const char *config = NULL, *out = "posemb-study", *data = NULL, *arg;
    int rc = 0, jobs = 0;
    while (!rc && (arg = cli_next(&a))) {
        if (!strcmp(arg, "-h") || cli_is(&a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (!a.flag) {
            if (config) return cli_usage_error(&a, "one CONFIG only");
            config = arg;
        } else if (cli_is(&a, "--out")) rc = (out = cli_value(&a)) ? 0 : EXIT_USAGE;
        else if (cli_is(&a, "--jobs")) rc = cli_int(&a, 1, 64, &jobs);
        else if (cli_is(&a, "--data")) rc = (data = cli_value(&a)) ? 0 : EXIT_USAGE;
        else return cli_usage_error(&a, "unknown flag '%s' (see 'posemb study --help')", arg);
    }
    if (rc) return rc;
    if (data && strlen(data) >= sizeof((posemb_study_config *)0)->data)
        return cli_usage_error(&a, "--data: path too long");
    posemb_study_config c = data ? posemb_study_data_default(data) : posemb_study_default();
    posemb_error err;
    if (config && posemb_study_config_load(&c, config, &err)) return cli_report("study", &err);
    if (jobs) c.jobs = jobs;
    if (posemb_study_run(&c, out, &err)) return cli_report("study", &err);
    printf("posemb study: wrote %s/tables.md, %s/tables.csv and %s/report.html\n", out, out, out);
    return 0;
}

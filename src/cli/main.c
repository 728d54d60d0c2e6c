/* posemb: the command-line entry. Dispatches to one file per subcommand;
 * no maths here. */
#include <stdio.h>
#include <string.h>

#include "cli_mpi.h"
#include "commands.h"
#include "posemb/blas.h"
#include "nn/nn_internal.h"
#include "posemb/threads.h"
#include "posemb/version.h"

typedef struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
    int parallel; /* does work worth threads: choose their count, and say when the machine is busy */
    int mpi;      /* runs across the ranks of mpirun or srun (others refuse more than one rank) */
} subcommand;

static const subcommand SUBCOMMANDS[] = {
    {"inspect", cmd_inspect, "list the tensors and metadata of a .safetensors file", 0, 0},
    {"study", cmd_study, "compare PEs by training: tasks, seeds, lengths, tables, report (mpirun)", 1, 1},
    {"train", cmd_train, "pretrain a BERT, RoBERTa, GPT-2, Llama or GPT-NeoX with any PE on text (resumable; mpirun)",
     1, 1},
    {"forward", cmd_forward, "run a model on inputs.json and write hidden states and attentions", 1, 0},
    {"perplexity", cmd_perplexity, "a decoder's perplexity on text at several context lengths", 1, 0},
    {"passkey", cmd_passkey, "a decoder's passkey retrieval over lengths and needle depths", 1, 0},
    {"analyze", cmd_analyze, "what a PE is and has learned: indicators, probes, figures, report", 1, 0},
    {"probe", cmd_probe, "one analysis of a PE at a time, its key numbers", 1, 0},
    {"compare", cmd_compare, "several PEs side by side in one report", 1, 0},
    {"demo", cmd_demo, "the PE catalogue at BERT-base size with each PE's properties", 1, 0},
    {"plot", cmd_plot, "figures from CSV tables: a forest plot of claims, small multiples of lines", 0, 0},
    {"pe", cmd_pe, "write a position embedding as numbers (tables, frequencies, biases)", 0, 0},
    {"tokenize", cmd_tokenize, "tokens and ids of a text, as Hugging Face's BERT or GPT-2 tokenizer gives them", 0, 0},
};

#define N_SUBCOMMANDS (int)(sizeof SUBCOMMANDS / sizeof SUBCOMMANDS[0])

static void usage(FILE *out)
{
    fprintf(out, "usage: posemb SUBCOMMAND [ARGS]\n\nPosition embeddings for Transformers: build, train, analyse.\n\n"
                 "subcommands:\n");
    for (int i = 0; i < N_SUBCOMMANDS; i++) fprintf(out, "  %-10s %s\n", SUBCOMMANDS[i].name, SUBCOMMANDS[i].summary);
    fprintf(out, "\n'posemb SUBCOMMAND --help' describes each one; 'posemb --version' prints the version and the\n"
                 "BLAS kernels. Exit status: 0 done, 2 a usage error or an input posemb refuses (a bad flag, spec\n"
                 "or config), 1 any other failure (a missing or damaged file, a full disk).\n");
}

/* The thread count for commands run without --threads: the CPUs free now
 * (posemb_threads_default), with a line when other processes took some.
 * Asking for help runs nothing. */
static void default_threads(int argc, char **argv)
{
    int given = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) return;
        given |= !strncmp(argv[i], "--threads", 9) && (!argv[i][9] || argv[i][9] == '=');
    }
    char why[256];
    posemb_threads_set(posemb_threads_default(why, sizeof why));
    if (why[0] && !given && posemb_comm_leader(cli_mpi_comm())) cli_keep_threads_note(why);
}

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("posemb %s (OpenBLAS's %s kernels; small products: %s)\n", posemb_version(), posemb_blas_core(),
               posemb_small_products());
        return 0;
    }
    for (int i = 0; i < N_SUBCOMMANDS; i++)
        if (!strcmp(argv[1], SUBCOMMANDS[i].name)) {
            int rc = cli_mpi_start(&argc, &argv, argv[1], SUBCOMMANDS[i].mpi);
            if (rc) return rc;
            if (SUBCOMMANDS[i].parallel) default_threads(argc, argv);
            return cli_mpi_end(SUBCOMMANDS[i].run(argc - 1, argv + 1));
        }
    fprintf(stderr, "posemb: unknown subcommand '%s' (see 'posemb --help')\n", argv[1]);
    return EXIT_USAGE;
}

/* posemb demo: the catalogue at BERT-base size, with the three properties
 * of each PE as indicators. A first look that needs no data. */
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "commands.h"
#include "analysis/analysis.h"
#include "posemb/indicators.h"
#include "core/arena_internal.h"

static const char USAGE[] = "usage: posemb demo [--len N] [--dim D] [--heads H] [--layers L] [-K K] [--threads N]\n\n"
                            "Builds every PE of the catalogue for a BERT-base sized model (default 512 positions,\n"
                            "width 768, 12 heads, 12 layers), counts its parameters, and prints the translation\n"
                            "invariance (TI), monotonicity (MONO, monotone window) and symmetry (SYM) of the\n"
                            "matrix that describes it, over the band 1 <= |i-j| <= K (default 32).\n"
                            "Learned PEs are shown at their (seeded) initialisation.\n\n"
                            "  --threads N     threads (default: the CPUs not busy with other processes)\n";

/* The catalogue; decoder-only PEs are built for a causal model. */
static const struct {
    const char *spec;
    int causal;
} SPECS[] = {
    {"none", 0},
    {"ape", 0},
    {"sin", 0},
    {"lsin", 0},
    {"rpe", 0},
    {"srpe", 0},
    {"lsrpe", 0},
    {"relative_key", 0},
    {"rope", 0},
    {"rope:base=500000", 0},
    {"rope:scaling=linear,factor=4", 0},
    {"rope:scaling=ntk,factor=4", 0},
    {"rope:scaling=dynamic,factor=4,original=128", 0},
    {"rope:scaling=yarn,factor=4,original=128", 0},
    {"rope:scaling=llama3,factor=4,original=128", 0},
    {"rope:p=0.75", 0},
    {"alibi", 0},
    {"t5", 0},
    {"kerple", 0},
    {"kerple:kind=power", 0},
    {"sandwich", 0},
    {"xpos", 1},
    {"fire", 0},
    {"cope", 1},
    {"fox", 1},
    {"tupe", 0},
    {"rope+random:max=512", 0},
    {"ape+rpe", 0},
    {"lsin+lsrpe", 0},
};

static void demo_row(const char *spec, int causal, const posemb_pe_dims *model, int K)
{
    posemb_pe_dims d = *model, *dims = &d;
    d.causal = causal;
    char label[64];
    snprintf(label, sizeof label, "%s%s", spec, causal ? " (decoder)" : "");
    posemb_error err;
    posemb_pe *p = NULL;
    if (posemb_pe_create(&p, spec, dims, &err) || posemb_pe_alloc(p, &err)) {
        printf("%-44s error: %s\n", label, err.msg);
        posemb_pe_free(p);
        return;
    }
    posemb_rng rng;
    posemb_rng_seed(&rng, 0, 0);
    posemb_pe_init_params(p, &rng);
    posemb_arena a;
    posemb_arena_init(&a, 0);
    posemb_pe_matrix m;
    posemb_indicators ind;
    printf("%-44s %10zu  ", label, posemb_pe_n_floats(p));
    if (posemb_pe_matrix_of(p, dims->max_len, &a, &m, &err)) printf("%s\n", err.msg);
    else if (posemb_indicators_compute(m.data, m.size, K, &ind, &err)) printf("%s\n", err.msg);
    else printf("%5.3f  %5.3f  %6d  %5.3f  %s\n", ind.ti, ind.mono, ind.window, ind.sym, m.what);
    posemb_arena_free(&a);
    posemb_pe_free(p);
}

int cmd_demo(int argc, char **argv)
{
    cli_args a;
    cli_args_init(&a, "demo", argc, argv);
    posemb_pe_dims dims = {.dim = 768, .n_heads = 12, .n_layers = 12, .max_len = 512, .max_threads = 1};
    int K = 32, rc = 0;
    const char *arg;
    while (!rc && (arg = cli_next(&a))) {
        if (cli_is(&a, "--help") || !strcmp(arg, "-h")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (cli_is(&a, "--len")) rc = cli_int(&a, 2, 4096, &dims.max_len);
        else if (cli_is(&a, "--dim")) rc = cli_int(&a, 2, 8192, &dims.dim);
        else if (cli_is(&a, "--heads")) rc = cli_int(&a, 1, 256, &dims.n_heads);
        else if (cli_is(&a, "--layers")) rc = cli_int(&a, 1, 128, &dims.n_layers);
        else if (!strcmp(arg, "-K") || cli_is(&a, "--K")) {
            a.flag = "-K";
            rc = cli_int(&a, 1, 4096, &K);
        } else if (cli_is(&a, "--threads")) rc = cli_threads(&a);
        else return cli_usage_error(&a, "unknown argument '%s' (see 'posemb demo --help')", arg);
    }
    if (rc) return rc;
    posemb_error err;
    posemb_pe *probe;
    if (posemb_pe_create(&probe, "ape", &dims, &err)) return cli_usage_error(&a, "%s", err.msg);
    posemb_pe_free(probe);
    cli_say_threads();
    printf("posemb demo: %d positions, width %d, %d heads, %d layers; indicators over 1 <= |i-j| <= %d\n\n",
           dims.max_len, dims.dim, dims.n_heads, dims.n_layers, K);
    printf("%-44s %10s  %5s  %5s  %6s  %5s  %s\n", "PE", "params", "TI", "MONO", "window", "SYM", "matrix");
    for (size_t i = 0; i < sizeof SPECS / sizeof *SPECS; i++) demo_row(SPECS[i].spec, SPECS[i].causal, &dims, K);
    printf(
        "\nTI, MONO, SYM in [0, 1]: higher = the property holds better (docs/indicators.md).\n"
        "Learned PEs (ape, lsin, rpe, lsrpe, relative_key, t5, kerple, fire, cope, fox, tupe) are at initialisation\n"
        "here; "
        "random:max= changes which positions a model feeds the PE, not the PE's matrix.\n");
    return 0;
}

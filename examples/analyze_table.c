/* Analyse a table of positions stored in a .safetensors file (rows are
 * positions), e.g. GPT-2's wpe.weight: the three property indicators of its
 * dot similarity and the regression probe, as `posemb analyze` computes them.
 *
 *   cc analyze_table.c $(pkg-config --cflags --libs posemb) -o analyze_table
 *   ./analyze_table gpt2_pe.safetensors wpe.weight
 */
#include <stdio.h>
#include <stdlib.h>

#include <posemb/posemb.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s FILE.safetensors TENSOR\n", argv[0]);
        return 2;
    }
    posemb_source_opts so = {.tensor = argv[2]};
    posemb_analyze_opts o = posemb_analyze_defaults();
    o.figures = 0;
    o.report = 0;
    o.quiet = 1;
    posemb_error err;
    posemb_source s;
    if (posemb_source_open(&s, argv[1], &so, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    posemb_analysis r;
    posemb_status st = posemb_analyze(&s, &o, "analysis", &r, &err);
    if (st) {
        fprintf(stderr, "%s\n", err.msg);
    } else {
        const posemb_indicators *in = &r.similarity;
        printf("%s: %d positions of width %d\n", s.provenance, s.n, s.dim);
        printf("dot similarity, 1 <= |i-j| <= %d: translation invariance %.3f, monotonicity %.3f, symmetry %.3f\n", o.K,
               in->ti, in->mono, in->sym);
        printf("regression probe: mean |error| %.2f positions; everything in analysis/indicators.json\n",
               r.regress.mae_all);
    }
    posemb_analysis_free(&r);
    posemb_source_close(&s);
    return st ? 1 : 0;
}

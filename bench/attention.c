/* One layer's attention alone, forward and backward, in fp32 and in a bf16
 * model's precision, taking turns: B 32 sequences of T tokens, 4 heads of
 * width d, PE `none` (no hook), padded by nothing. Where the bf16 kernel
 * keeps fp32 products (attention.c, bf16_wins) both rows time the same
 * code, unless EVERY is 1: then the bf16 row takes bf16 products on any
 * shape, which is how the rule was measured. usage: bench_attention [T] [d]
 * [THREADS] [causal 0|1] [REPEATS] [EVERY 0|1]; one JSON line, medians of
 * REPEATS rounds. */
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"
#include "posemb/attention.h"
#include "posemb/pe.h"

enum { B = 32, H = 4 };

/* Seconds of one forward and backward in mm's precision. */
static double one(posemb_matmul *mm, const posemb_nn_attn_shape *sh, posemb_pe *p, float *qkv, float *probs, float *out,
                  const float *dout, float *dqkv, float *scratch)
{
    double t0 = bench_now();
    posemb_nn_attention_forward_in(mm, sh, p, 1, qkv, NULL, NULL, probs, out, scratch);
    posemb_nn_attention_backward_in(mm, sh, p, 1, qkv, NULL, probs, dout, dqkv, scratch);
    return bench_now() - t0;
}

int main(int argc, char **argv)
{
    posemb_blas_reexec(argv); /* OpenBLAS's fast kernels on a CPU newer than it (posemb/blas.h) */
    int T = argc > 1 ? atoi(argv[1]) : 128, d = argc > 2 ? atoi(argv[2]) : 64, threads = argc > 3 ? atoi(argv[3]) : 1,
        causal = argc > 4 ? atoi(argv[4]) : 0, repeats = argc > 5 ? atoi(argv[5]) : 21,
        every = argc > 6 ? atoi(argv[6]) : 0;
    if (T < 1 || d < 1 || threads < 1 || repeats < 1) {
        fprintf(stderr, "usage: bench_attention [T] [d] [THREADS] [causal 0|1] [REPEATS] [EVERY 0|1]\n");
        return 2;
    }
    posemb_threads_set(threads);
    posemb_nn_attention_set_bf16_everywhere(every);
    posemb_pe_dims dims = {.dim = H * d, .n_heads = H, .n_layers = 2, .max_len = T, .causal = causal};
    posemb_error err;
    posemb_pe *p;
    posemb_matmul *bf16 = NULL;
    if (posemb_pe_create(&p, "none", &dims, &err) || posemb_pe_alloc(p, &err) ||
        posemb_matmul_new(&bf16, POSEMB_PRECISION_BF16, &err)) {
        fprintf(stderr, "bench_attention: %s\n", err.msg);
        return 1;
    }
    posemb_pe_prepare(p);
    posemb_nn_attn_shape sh = {.B = B, .T = T, .D = H * d, .H = H, .causal = causal};
    size_t nqkv = (size_t)B * T * 3 * H * d, nout = (size_t)B * T * H * d;
    float *qkv = malloc(nqkv * sizeof *qkv), *dqkv = malloc(nqkv * sizeof *dqkv), *out = malloc(nout * sizeof *out),
          *dout = malloc(nout * sizeof *dout), *probs = malloc((size_t)B * H * T * T * sizeof *probs),
          *scratch = calloc(posemb_nn_attention_scratch_floats(&sh, p), sizeof(float));
    double *t32 = malloc((size_t)repeats * sizeof *t32), *t16 = malloc((size_t)repeats * sizeof *t16);
    if (!qkv || !dqkv || !out || !dout || !probs || !scratch || !t32 || !t16) return 1;
    for (size_t i = 0; i < nqkv; i++) qkv[i] = (float)(i % 97) / 97.0f - 0.5f;
    for (size_t i = 0; i < nout; i++) dout[i] = (float)(i % 89) / 89.0f - 0.5f;
    for (int r = -1; r < repeats; r++) { /* one warm-up round: the bf16 primitives are built there */
        double a = one(NULL, &sh, p, qkv, probs, out, dout, dqkv, scratch);
        double b = one(bf16, &sh, p, qkv, probs, out, dout, dqkv, scratch);
        if (r >= 0) {
            t32[r] = a;
            t16[r] = b;
        }
    }
    double m32 = 1e3 * bench_median(t32, repeats), m16 = 1e3 * bench_median(t16, repeats);
    printf(
        "{\"bench\": \"attention\", \"B\": %d, \"T\": %d, \"heads\": %d, \"d\": %d, \"causal\": %d, \"threads\": %d, "
        "\"bf16_everywhere\": %d, \"fp32_ms\": %.3f, \"bf16_ms\": %.3f, \"speedup\": %.3f, \"repeats\": %d}\n",
        B, T, H, d, causal, threads, every, m32, m16, m32 / m16, repeats);
    posemb_matmul_free(bf16);
    posemb_pe_free(p);
    return 0;
}

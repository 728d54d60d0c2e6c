/* Cross-entropy losses, forward and backward fused: the gradient of a
 * softmax cross-entropy is (p - onehot), known as soon as p is. */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>

#include "posemb/nn.h"
#include "core/vmath.h"
#include "core/simd.h"
#include "gemm_impl.h"
#include "nn/nn_internal.h"

#define MAX_THREADS 256

/* Row softmax in place; returns log-sum-exp; *argmax the largest logit. */
POSEMB_KERNEL static double softmax_row(float *z, int V, int *argmax)
{
    float mx = z[0];
#pragma omp simd reduction(max : mx)
    for (int v = 1; v < V; v++) mx = z[v] > mx ? z[v] : mx;
    int best = 0;                                 /* the first maximum, as torch's argmax */
    while (best < V - 1 && z[best] != mx) best++; /* bounded: an all-NaN row has no match */
    double sum = 0.0;                             /* float lanes within blocks of 1024, the blocks added in double */
    for (int v0 = 0; v0 < V; v0 += 1024) sum += vm_exp_shift_sum(z + v0, V - v0 < 1024 ? V - v0 : 1024, mx);
    float inv = (float)(1.0 / sum);
    for (int v = 0; v < V; v++) z[v] *= inv;
    *argmax = best;
    return mx + log(sum);
}

/* One row: loss (-log p[target]); z becomes grad_scale * (p - onehot) or stays p. */
POSEMB_KERNEL static double xent_row(float *z, int V, int target, float grad_scale, long *correct)
{
    int best;
    float zt = z[target];
    double lse = softmax_row(z, V, &best);
    if (correct && best == target) (*correct)++;
    if (grad_scale != 0.0f) {
        for (int v = 0; v < V; v++) z[v] *= grad_scale;
        z[target] -= grad_scale;
    }
    return lse - zt;
}

double posemb_nn_xent(float *logits, int M, int V, const int32_t *targets, float grad_scale, long *correct)
{
    double total = 0.0;
    for (int i = 0; i < M; i++) {
        float *z = logits + (size_t)i * V;
        if (targets[i] < 0 || targets[i] >= V) {
            if (grad_scale != 0.0f) memset(z, 0, (size_t)V * sizeof *z);
            continue;
        }
        total += xent_row(z, V, targets[i], grad_scale, correct);
    }
    return total;
}

/* The loss of rows z [n, V] in parallel. Each thread sums its static share
 * of the rows and the shares are added in thread order: a reduction clause
 * would add them in the order the threads finish, and the total would then
 * change from run to run in its last bits. z16 (NULL: none): each row's
 * gradient rounded to bf16 as it is written, for the backward's products. */
static double xent_rows(float *z, uint16_t *z16, int n, int V, const int32_t *targets, float grad_scale, long *correct)
{
    double part[MAX_THREADS] = {0};
    int used = 1;
#pragma omp parallel num_threads(omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS)
    {
        int id = omp_get_thread_num();
        double mine = 0.0;
        long hits = 0;
#pragma omp for schedule(static)
        for (int i = 0; i < n; i++) {
            float *zi = z + (size_t)i * V;
            if (targets[i] < 0) memset(zi, 0, (size_t)V * sizeof *zi);
            else mine += xent_row(zi, V, targets[i], grad_scale, correct ? &hits : NULL);
            if (z16) bf16_round_row(z16 + (size_t)i * V, zi, V);
        }
        part[id] = mine;
        if (id == 0) used = omp_get_num_threads();
        if (correct && hits) {
#pragma omp atomic
            *correct += hits;
        }
    }
    double total = 0.0;
    for (int k = 0; k < used; k++) total += part[k];
    return total;
}

double posemb_nn_xent_tied(posemb_matmul *mm, const float *x, int M, int D, const float *W, const float *b, int V,
                           const int32_t *targets, float grad_scale, float *dx, float *dW, float *db, float *scratch,
                           int chunk, long *correct)
{
    double total = 0.0;
    matmul_reuse(mm, W); /* read by every chunk's products: converted to bf16 once */
    for (int r0 = 0; r0 < M; r0 += chunk) {
        int n = M - r0 < chunk ? M - r0 : chunk;
        const float *xc = x + (size_t)r0 * D;
        posemb_nn_linear_forward(mm, scratch, xc, W, b, n, D, V, POSEMB_NN_W_OUT_IN);
        /* the gradient's bf16 copy written with it, for the backward's two products */
        uint16_t *z16 = grad_scale != 0.0f ? matmul_stash_claim(mm, scratch, n, V) : NULL;
        total += xent_rows(scratch, z16, n, V, targets + r0, grad_scale, correct);
        if (grad_scale != 0.0f)
            posemb_nn_linear_backward(mm, dx ? dx + (size_t)r0 * D : NULL, dW, db, scratch, xc, W, n, D, V,
                                      POSEMB_NN_W_OUT_IN);
    }
    matmul_reuse(mm, NULL);
    return total;
}

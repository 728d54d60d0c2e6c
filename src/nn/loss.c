/* Cross-entropy losses, forward and backward fused: the gradient of a
 * softmax cross-entropy is (p - onehot), known as soon as p is. */
#include <cblas.h>
#include <math.h>
#include <string.h>

#include "posemb/nn.h"
#include "vmath.h"

/* Row softmax in place; returns log-sum-exp; *argmax the largest logit. */
static double softmax_row(float *z, int V, int *argmax)
{
    int best = 0;
    for (int v = 1; v < V; v++)
        if (z[v] > z[best]) best = v;
    float mx = z[best];
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int v = 0; v < V; v++) sum += (z[v] = vm_expf(z[v] - mx));
    float inv = (float)(1.0 / sum);
    for (int v = 0; v < V; v++) z[v] *= inv;
    *argmax = best;
    return mx + log(sum);
}

/* One row: loss (-log p[target]); z becomes grad_scale * (p - onehot) or stays p. */
static double xent_row(float *z, int V, int target, float grad_scale, long *correct)
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

double nn_xent(float *logits, int M, int V, const int32_t *targets, float grad_scale, long *correct)
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

double nn_xent_tied(const float *x, int M, int D, const float *W, const float *b, int V, const int32_t *targets,
                    float grad_scale, float *dx, float *dW, float *db, float *scratch, int chunk, long *correct)
{
    double total = 0.0;
    for (int r0 = 0; r0 < M; r0 += chunk) {
        int n = M - r0 < chunk ? M - r0 : chunk;
        const float *xc = x + (size_t)r0 * D;
        nn_linear_forward(scratch, xc, W, b, n, D, V, NN_W_OUT_IN);
#pragma omp parallel for reduction(+ : total) schedule(static)
        for (int i = 0; i < n; i++) {
            long hits = 0;
            float *z = scratch + (size_t)i * V;
            if (targets[r0 + i] < 0) {
                memset(z, 0, (size_t)V * sizeof *z);
                continue;
            }
            total += xent_row(z, V, targets[r0 + i], grad_scale, correct ? &hits : NULL);
            if (correct && hits) {
#pragma omp atomic
                (*correct)++;
            }
        }
        if (grad_scale != 0.0f)
            nn_linear_backward(dx ? dx + (size_t)r0 * D : NULL, dW, db, scratch, xc, W, n, D, V, NN_W_OUT_IN);
    }
    return total;
}

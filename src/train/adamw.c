#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/optim.h"
#include "core/simd.h"
#include "train/optim_internal.h"

posemb_adamw_config posemb_adamw_defaults(float lr, long warmup, long total)
{
    posemb_adamw_config c = {.lr = lr,
                             .beta1 = 0.9f,
                             .beta2 = 0.999f,
                             .eps = 1e-8f,
                             .weight_decay = 0.01f,
                             .clip = 1.0f,
                             .warmup = warmup,
                             .total = total};
    return c;
}

posemb_status posemb_adamw_init_n(posemb_adamw *o, size_t n, posemb_error *err)
{
    memset(o, 0, sizeof *o);
    o->n = n;
    o->m = calloc(n + 1, sizeof *o->m);
    o->v = calloc(n + 1, sizeof *o->v);
    o->decay = calloc(n + 1, 1);
    if (o->m && o->v && o->decay) return POSEMB_OK;
    posemb_adamw_free(o);
    return posemb_fail(err, POSEMB_ENOMEM, "optimizer: cannot allocate state for %zu parameters", n);
}

posemb_status posemb_adamw_init(posemb_adamw *o, const posemb_model *model, posemb_error *err)
{
    posemb_status st = posemb_adamw_init_n(o, posemb_model_n_floats(model), err);
    if (st) return st;
    for (int i = 0; i < posemb_model_n_params(model); i++) {
        const posemb_param *p = posemb_model_param(model, i);
        if (p->decay) memset(o->decay + p->offset, 1, p->numel);
    }
    return POSEMB_OK;
}

void posemb_adamw_free(posemb_adamw *o)
{
    free(o->m);
    free(o->v);
    free(o->decay);
    memset(o, 0, sizeof *o);
}

float posemb_lr_at(const posemb_adamw_config *c, long step)
{
    if (step < c->warmup) return c->lr * (float)step / (float)(c->warmup > 0 ? c->warmup : 1);
    if (c->total <= c->warmup) return c->lr;
    double left = (double)(c->total - step) / (double)(c->total - c->warmup);
    return c->lr * (float)(left > 0 ? left : 0);
}

/* A fixed number of blocks, each summed in order, the block sums then added
 * in order: the same bits on any number of threads, so that the ranks of a
 * group (posemb/comm.h), which may run different thread counts, clip alike.
 * (A reduction clause would add in the order threads finish.) */
POSEMB_KERNEL double posemb_grad_norm(const float *g, size_t n)
{
    enum { BLOCKS = 256 };
    double part[BLOCKS];
#pragma omp parallel for schedule(static)
    for (int b = 0; b < BLOCKS; b++) {
        double mine = 0.0;
        for (size_t i = n * (size_t)b / BLOCKS; i < n * (size_t)(b + 1) / BLOCKS; i++) mine += (double)g[i] * g[i];
        part[b] = mine;
    }
    double s = 0.0;
    for (int b = 0; b < BLOCKS; b++) s += part[b];
    return sqrt(s);
}
POSEMB_KERNEL_INTERNAL(posemb_grad_norm);

POSEMB_KERNEL double posemb_adamw_update(posemb_adamw *o, float *w, const float *g, const posemb_adamw_config *c)
{
    double norm = posemb_grad_norm(g, o->n);
    float gscale =
        c->clip > 0 && norm > c->clip ? (float)(c->clip / (norm + 1e-6)) : 1.0f; /* torch's clip_grad_norm_ */
    float lr = posemb_lr_at(c, o->step);
    o->step++;
    /* torch.optim.AdamW: decay first, then the bias-corrected Adam step */
    double bc1 = 1.0 - pow(c->beta1, (double)o->step), bc2 = 1.0 - pow(c->beta2, (double)o->step);
    float step_size = (float)(lr / bc1), sqrt_bc2 = (float)sqrt(bc2), b1 = c->beta1, b2 = c->beta2;
    float decay = 1.0f - lr * c->weight_decay, eps = c->eps;
    float *restrict m = o->m, *restrict v = o->v;
    const unsigned char *restrict dec = o->decay;
    /* a select, not a branch, and no loads through o or c: the loop vectorises */
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < o->n; i++) {
        float gi = g[i] * gscale;
        w[i] *= dec[i] ? decay : 1.0f;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        w[i] -= step_size * m[i] / (sqrtf(v[i]) / sqrt_bc2 + eps);
    }
    return norm;
}
POSEMB_KERNEL_INTERNAL(posemb_adamw_update);

double posemb_adamw_step(posemb_adamw *o, posemb_model *model, const posemb_adamw_config *c)
{
    double norm = posemb_adamw_update(o, posemb_model_weights(model), posemb_model_grads(model), c);
    posemb_pe_prepare(posemb_model_pe(model));
    return norm;
}

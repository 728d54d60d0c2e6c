#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "posemb/optim.h"
#include "core/simd.h"

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

/* Threads sum static shares, added in thread order (a reduction clause adds
 * them in the order threads finish: the norm, hence the clipping, would then
 * differ in its last bits from run to run on three or more threads). */
POSEMB_KERNEL double posemb_grad_norm(const float *g, size_t n)
{
    enum { MAX_THREADS = 256 };
    double part[MAX_THREADS] = {0};
    int used = 1;
#pragma omp parallel num_threads(omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS)
    {
        double mine = 0.0;
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i++) mine += (double)g[i] * g[i];
        part[omp_get_thread_num()] = mine;
        if (omp_get_thread_num() == 0) used = omp_get_num_threads();
    }
    double s = 0.0;
    for (int k = 0; k < used; k++) s += part[k];
    return sqrt(s);
}

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

double posemb_adamw_step(posemb_adamw *o, posemb_model *model, const posemb_adamw_config *c)
{
    double norm = posemb_adamw_update(o, posemb_model_weights(model), posemb_model_grads(model), c);
    posemb_pe_prepare(posemb_model_pe(model));
    return norm;
}

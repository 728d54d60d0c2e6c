/* Elementwise exp, erf and log1p in plain float arithmetic that the compiler turns
 * into vector code (libm's expf and erff are scalar calls, which kept the
 * GELU and softmax loops scalar). Accuracy, checked in tests/test_kernels.c:
 * vm_expf within 1 ulp of exp on [-87, 88] (0 below -87.3, exp(88) above
 * 88); vm_erf within 5e-7 of erf everywhere (Abramowitz & Stegun 7.1.26,
 * whose bound is 1.5e-7, plus the float rounding of its polynomial); GELU
 * built on them within 1.6e-7 max(1, |x|), its derivative within 3e-7;
 * vm_tanhf within 2.5e-7 absolute; GPT-2's tanh GELU within 1.1e-7 max(1, |x|),
 * its derivative within 4e-7 max(1, |x|); vm_log1pf within 1.75e-7 relative
 * on [0, 1] (every float of [2^-30, 1] checked once: 1.748e-7 at
 * 0x1.08705ep-11; the test samples the range). */
#ifndef POSEMB_VMATH_H
#define POSEMB_VMATH_H

#include <stdint.h>
#include <string.h>

/* exp(x) = 2^n exp(r), r = x - n ln 2 in [-ln2/2, ln2/2] (Cody-Waite split of
 * ln 2), exp(r) by Cephes' degree-6 polynomial, 2^n built in the exponent bits. */
static inline float vm_expf(float x0)
{
    float x = x0 > -87.3f ? x0 : -87.3f; /* NaN becomes -87.3 here, so the bit work below stays defined */
    x = x < 88.0f ? x : 88.0f;
    /* round to nearest by adding and subtracting 1.5 * 2^23 (floorf would not vectorise) */
    float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
    float r = x - n * 0.693359375f;
    r = r + n * 2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float y = p * r * r + r + 1.0f;
    uint32_t bits = (uint32_t)((int32_t)n + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    if (x0 != x0) return x0;               /* NaN stays NaN: a diverged run must see it */
    return x0 < -87.3f ? 0.0f : y * scale; /* masked logits (-FLT_MAX) give exactly 0 */
}

/* log(1 + u) for u in [0, 1] (the softplus term log1p(exp(-|z|))): log(w),
 * w = 1 + u = 2^e m with m in [sqrt(1/2), sqrt(2)], by Cephes' logf
 * polynomial in m - 1, then Goldberg's correction u / (w - 1), which gives
 * back the part of u that w's rounding lost (tiny u: log1p(u) = u, not 0).
 * Outside [0, 1] it is wrong (e is 0 or 1 only); NaN stays NaN. */
static inline float vm_log1pf(float u)
{
    float w = 1.0f + u;
    float e = w > 1.41421356f ? 1.0f : 0.0f;
    float x = (e > 0.0f ? 0.5f * w : w) - 1.0f; /* exact: m in [0.707, 1.415) */
    float z = x * x;
    float y = 7.0376836292e-2f;
    y = y * x - 1.1514610310e-1f;
    y = y * x + 1.1676998740e-1f;
    y = y * x - 1.2420140846e-1f;
    y = y * x + 1.4249322787e-1f;
    y = y * x - 1.6668057665e-1f;
    y = y * x + 2.0000714765e-1f;
    y = y * x - 2.4999993993e-1f;
    y = y * x + 3.3333331174e-1f;
    y = y * x * z - 2.12194440e-4f * e - 0.5f * z;
    float lw = x + y + 0.693359375f * e;
    return w == 1.0f ? u : lw * (u / (w - 1.0f));
}

/* erf(z) from e = exp(-z^2), which the caller often needs too (GELU's backward). */
static inline float vm_erf_with(float z, float e)
{
    float a = z < 0 ? -z : z, t = 1.0f / (1.0f + 0.3275911f * a);
    float p = 1.061405429f;
    p = p * t - 1.453152027f;
    p = p * t + 1.421413741f;
    p = p * t - 0.284496736f;
    p = p * t + 0.254829592f;
    float y = 1.0f - p * t * e;
    return z < 0 ? -y : y;
}

static inline float vm_erf(float z) { return vm_erf_with(z, vm_expf(-z * z)); }

/* tanh(u) = 1 - 2 / (exp(2u) + 1): within 2.5e-7 absolute (not relative near 0, which GELU's 1 + tanh does not need). */
static inline float vm_tanhf(float u) { return 1.0f - 2.0f / (vm_expf(2.0f * u) + 1.0f); }

/* Reductions in 16 fixed lanes, added up in a fixed order: a vectorised
 * reduction loop peels elements until its data is aligned, which regroups
 * the sum by where the data lies in memory, and a resumed run (other buffers)
 * would then not repeat an uninterrupted one bit for bit. */
#define VM_LANES 16

static inline double vm_lanes_total(const float *acc)
{
    double s = 0.0;
    for (int l = 0; l < VM_LANES; l++) s += acc[l];
    return s;
}

/* z[i] = exp(z[i] - shift) for i < n; returns their sum. */
static inline double vm_exp_shift_sum(float *z, int n, float shift)
{
    float acc[VM_LANES] = {0};
    int i = 0;
    for (; i + VM_LANES <= n; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) acc[l] += (z[i + l] = vm_expf(z[i + l] - shift));
    for (; i < n; i++) acc[i % VM_LANES] += (z[i] = vm_expf(z[i] - shift));
    return vm_lanes_total(acc);
}

/* sum_i a[i] b[i]. */
static inline double vm_dot(const float *a, const float *b, int n)
{
    float acc[VM_LANES] = {0};
    int i = 0;
    for (; i + VM_LANES <= n; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) acc[l] += a[i + l] * b[i + l];
    for (; i < n; i++) acc[i % VM_LANES] += a[i] * b[i];
    return vm_lanes_total(acc);
}

/* sum_i a[i]. */
static inline double vm_sum(const float *a, int n)
{
    float acc[VM_LANES] = {0};
    int i = 0;
    for (; i + VM_LANES <= n; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) acc[l] += a[i + l];
    for (; i < n; i++) acc[i % VM_LANES] += a[i];
    return vm_lanes_total(acc);
}

/* sum_i (a[i] - m)^2. */
static inline double vm_sq_dev(const float *a, int n, float m)
{
    float acc[VM_LANES] = {0};
    int i = 0;
    for (; i + VM_LANES <= n; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) acc[l] += (a[i + l] - m) * (a[i + l] - m);
    for (; i < n; i++) acc[i % VM_LANES] += (a[i] - m) * (a[i] - m);
    return vm_lanes_total(acc);
}

/* sum_i a[i] b[i] (c[i] - m). */
static inline double vm_dot_dev(const float *a, const float *b, const float *c, int n, float m)
{
    float acc[VM_LANES] = {0};
    int i = 0;
    for (; i + VM_LANES <= n; i += VM_LANES)
        for (int l = 0; l < VM_LANES; l++) acc[l] += a[i + l] * b[i + l] * (c[i + l] - m);
    for (; i < n; i++) acc[i % VM_LANES] += a[i] * b[i] * (c[i] - m);
    return vm_lanes_total(acc);
}

#endif

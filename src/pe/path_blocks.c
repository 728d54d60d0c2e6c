/* PaTH's logits by blocks of tokens: the compact WY form of each block's maps and sgemms (path_blocks.h).
 *
 * Notation per block c of cc tokens (rows a, b of the block; i a query, j a key):
 *   W [cc, d], beta [cc], Gm = W W^T, L = I + diag(beta) stril(Gm), T = L^-1 diag(beta)   [cc, cc]
 *   A = tril(Q W^T) (a <= i), Bm = W K^T where b > j, AT = A T, TB = T Bm                  [cc, cc]
 *   Q~ = Q - AT W, K~ = K - TB^T W, M = T W, P = I - W^T M                                 [cc, d], [d, d]
 *   in the block: S = scale (Q K^T - A TB), j <= i
 *   query block m, key block k < m: S = scale X_k K~_k^T, X_(m-1) = Q~_m, X_(k-1) = X_k P_k. */
#include "path_blocks.h"

#include <cblas.h>
#include <string.h>

/* Every block's T [C, C] and P [d, d], Q~ and K~ [n, d]; the backward's gradients of the four and the states
 * X_k of one query block [n, d]; one block's temporaries. */
typedef struct blk_work {
    float *T, *P, *Qt, *Kt;
    float *dT, *dP, *dQt, *dKt, *X;
    float *Gm, *A, *Bm, *AT, *TB, *M, *Y, *Y2, *gS, *dA, *dAT, *dTB, *dBm, *R, *dM;
} blk_work;

static int n_blocks(const path_blocks *h) { return (h->n + h->C - 1) / h->C; }

size_t path_blocks_floats(int n, int d, int C)
{
    size_t nc = (size_t)(n + C - 1) / C, CC = (size_t)C * C, Cd = (size_t)C * d;
    return 2 * nc * CC + 2 * nc * d * d + 5 * (size_t)n * d + 11 * CC + 4 * Cd;
}

static blk_work carve(const path_blocks *h, float *p)
{
    size_t nc = (size_t)n_blocks(h), CC = (size_t)h->C * h->C, Cd = (size_t)h->C * h->d, nd = (size_t)h->n * h->d;
    size_t dd = (size_t)h->d * h->d;
    blk_work z;
    float **nc_cc[] = {&z.T, &z.dT}, **nc_dd[] = {&z.P, &z.dP}, **n_d[] = {&z.Qt, &z.Kt, &z.dQt, &z.dKt, &z.X};
    float **c_c[] = {&z.Gm, &z.A, &z.Bm, &z.AT, &z.TB, &z.gS, &z.dA, &z.dAT, &z.dTB, &z.dBm, &z.R};
    float **c_d[] = {&z.M, &z.Y, &z.Y2, &z.dM};
    for (size_t i = 0; i < sizeof nc_cc / sizeof *nc_cc; i++, p += nc * CC) *nc_cc[i] = p;
    for (size_t i = 0; i < sizeof nc_dd / sizeof *nc_dd; i++, p += nc * dd) *nc_dd[i] = p;
    for (size_t i = 0; i < sizeof n_d / sizeof *n_d; i++, p += nd) *n_d[i] = p;
    for (size_t i = 0; i < sizeof c_c / sizeof *c_c; i++, p += CC) *c_c[i] = p;
    for (size_t i = 0; i < sizeof c_d / sizeof *c_d; i++, p += Cd) *c_d[i] = p;
    return z;
}

/* c = alpha op(a) op(b) + beta c, row major; op(x) = x^T where ta / tb. */
static void mm(int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda, const float *b, int ldb,
               float beta, float *c, int ldc)
{
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
}

/* Keeps the lower triangle of x [m, m] (ld ld), with its diagonal or (strict) without, and zeroes the rest. */
static void keep_lower(float *x, int m, int ld, int strict)
{
    for (int r = 0; r < m; r++)
        for (int c = strict ? r : r + 1; c < m; c++) x[(size_t)r * ld + c] = 0.0f;
}

/* One block's place in the sequence. */
typedef struct blk {
    int i0, cc;
    const float *W, *beta, *Q, *K;
    float *T, *P, *Qt, *Kt;
} blk;

static blk block_at(const path_blocks *h, const blk_work *z, int c, const float *q, int ldq, const float *k, int ldk)
{
    blk b;
    b.i0 = c * h->C;
    b.cc = h->n - b.i0 < h->C ? h->n - b.i0 : h->C;
    b.W = h->w + (size_t)b.i0 * h->d;
    b.beta = h->beta + b.i0;
    b.Q = q + (size_t)b.i0 * ldq;
    b.K = k + (size_t)b.i0 * ldk;
    b.T = z->T + (size_t)c * h->C * h->C;
    b.P = z->P + (size_t)c * h->d * h->d;
    b.Qt = z->Qt + (size_t)b.i0 * h->d;
    b.Kt = z->Kt + (size_t)b.i0 * h->d;
    return b;
}

/* T by forward substitution of L T = diag(beta): row a is beta_a e_a - sum_(b<a) beta_a Gm_ab T_b. */
static void ut_transform(const blk *b, int C, float *Gm)
{
    int cc = b->cc;
    for (int a = 0; a < cc; a++) {
        float *ta = b->T + (size_t)a * C;
        memset(ta, 0, (size_t)C * sizeof *ta);
        ta[a] = b->beta[a];
        for (int r = 0; r < a; r++) {
            float l = b->beta[a] * Gm[(size_t)a * C + r];
            const float *tr = b->T + (size_t)r * C;
            for (int col = 0; col <= r; col++) ta[col] -= l * tr[col];
        }
    }
}

/* Block b's T, P, Q~, K~ and the products A, Bm, AT, TB, M they come from (in z's temporaries). */
static void block_prepare(const path_blocks *h, const blk *b, int ldq, int ldk, blk_work *z)
{
    int cc = b->cc, d = h->d, C = h->C;
    mm(0, 1, cc, cc, d, 1.0f, b->W, d, b->W, d, 0.0f, z->Gm, C);
    ut_transform(b, C, z->Gm);
    mm(0, 1, cc, cc, d, 1.0f, b->Q, ldq, b->W, d, 0.0f, z->A, C);
    keep_lower(z->A, cc, C, 0);
    mm(0, 1, cc, cc, d, 1.0f, b->W, d, b->K, ldk, 0.0f, z->Bm, C);
    keep_lower(z->Bm, cc, C, 1);
    mm(0, 0, cc, cc, cc, 1.0f, z->A, C, b->T, C, 0.0f, z->AT, C);
    mm(0, 0, cc, cc, cc, 1.0f, b->T, C, z->Bm, C, 0.0f, z->TB, C);
    for (int r = 0; r < cc; r++) {
        memcpy(b->Qt + (size_t)r * d, b->Q + (size_t)r * ldq, (size_t)d * sizeof *b->Qt);
        memcpy(b->Kt + (size_t)r * d, b->K + (size_t)r * ldk, (size_t)d * sizeof *b->Kt);
    }
    mm(0, 0, cc, d, cc, -1.0f, z->AT, C, b->W, d, 1.0f, b->Qt, d);
    mm(1, 0, cc, d, cc, -1.0f, z->TB, C, b->W, d, 1.0f, b->Kt, d);
    mm(0, 0, cc, d, cc, 1.0f, b->T, C, b->W, d, 0.0f, z->M, d);
    mm(1, 0, d, d, cc, -1.0f, b->W, d, z->M, d, 0.0f, b->P, d);
    for (int e = 0; e < d; e++) b->P[(size_t)e * d + e] += 1.0f;
}

void path_blocks_forward(const path_blocks *h, const float *q, int ldq, const float *k, int ldk, float *s, int lds,
                         float *work)
{
    blk_work z = carve(h, work);
    int nc = n_blocks(h), d = h->d, C = h->C;
    for (int c = 0; c < nc; c++) {
        blk b = block_at(h, &z, c, q, ldq, k, ldk);
        block_prepare(h, &b, ldq, ldk, &z);
        float *sd = s + (size_t)b.i0 * lds + b.i0;
        mm(0, 1, b.cc, b.cc, d, h->scale, b.Q, ldq, b.K, ldk, 0.0f, sd, lds);
        mm(0, 0, b.cc, b.cc, b.cc, -h->scale, z.A, C, z.TB, C, 1.0f, sd, lds);
        for (int r = 0; r < b.cc; r++) /* right of the diagonal, to the end of the row */
            memset(sd + (size_t)r * lds + r + 1, 0, (size_t)(h->n - b.i0 - r - 1) * sizeof *s);
    }
    for (int m = 1; m < nc; m++) {
        blk bm = block_at(h, &z, m, q, ldq, k, ldk);
        float *x = z.Y, *x2 = z.Y2;
        memcpy(x, bm.Qt, (size_t)bm.cc * d * sizeof *x);
        for (int kb = m - 1; kb >= 0; kb--) {
            blk bk = block_at(h, &z, kb, q, ldq, k, ldk);
            mm(0, 1, bm.cc, C, d, h->scale, x, d, bk.Kt, d, 0.0f, s + (size_t)bm.i0 * lds + bk.i0, lds);
            if (!kb) break;
            mm(0, 0, bm.cc, d, d, 1.0f, x, d, bk.P, d, 0.0f, x2, d);
            float *t = x;
            x = x2;
            x2 = t;
        }
    }
}

/* Query block m's part between blocks, back: its states X_k again, then from key block 0 up to m - 1 the
 * gradient G of the state, into dP, dK~ and dQ~ of the blocks. */
static void between_backward(const path_blocks *h, blk_work *z, int m, const float *q, int ldq, const float *k, int ldk,
                             const float *ds, int ldds)
{
    int d = h->d, C = h->C;
    blk bm = block_at(h, z, m, q, ldq, k, ldk);
    size_t step = (size_t)C * d;
    memcpy(z->X + (m - 1) * step, bm.Qt, (size_t)bm.cc * d * sizeof *z->X);
    for (int kb = m - 1; kb > 0; kb--)
        mm(0, 0, bm.cc, d, d, 1.0f, z->X + kb * step, d, z->P + (size_t)kb * d * d, d, 0.0f, z->X + (kb - 1) * step, d);
    float *g = z->Y, *g2 = z->Y2;
    memset(g, 0, (size_t)bm.cc * d * sizeof *g);
    for (int kb = 0; kb < m; kb++) {
        const float *x = z->X + kb * step, *dsk = ds + (size_t)bm.i0 * ldds + (size_t)kb * C;
        const float *P = z->P + (size_t)kb * d * d;
        if (kb) { /* X_(kb-1) = X_kb P_kb */
            mm(1, 0, d, d, bm.cc, 1.0f, x, d, g, d, 1.0f, z->dP + (size_t)kb * d * d, d);
            mm(0, 1, bm.cc, d, d, 1.0f, g, d, P, d, 0.0f, g2, d);
            float *t = g;
            g = g2;
            g2 = t;
        }
        mm(0, 0, bm.cc, d, C, h->scale, dsk, ldds, z->Kt + (size_t)kb * step, d, 1.0f, g, d);
        mm(1, 0, C, d, bm.cc, h->scale, dsk, ldds, x, d, 1.0f, z->dKt + (size_t)kb * step, d);
    }
    memcpy(z->dQt + (size_t)bm.i0 * d, g, (size_t)bm.cc * d * sizeof *g);
}

/* T = L^-1 diag(beta) back to W and beta, given dT in z->dT's block: R = L^-T dT (lower part), dbeta_a += R_aa;
 * dL = -R T^T below the diagonal, L_ab = beta_a Gm_ab: dbeta_a += sum_b dL_ab Gm_ab, dGm_ab = beta_a dL_ab;
 * Gm = W W^T: dW += (dGm + dGm^T) W. Uses z->R, z->dA (as dL). */
static void ut_backward(const path_blocks *h, const blk *b, blk_work *z, float *dT, float *dw, float *dbeta)
{
    int cc = b->cc, C = h->C, d = h->d;
    keep_lower(dT, cc, C, 0);
    for (int a = cc - 1; a >= 0; a--) { /* L^T R = dT, L^T unit upper: rows from the last */
        float *ra = z->R + (size_t)a * C;
        memcpy(ra, dT + (size_t)a * C, (size_t)cc * sizeof *ra);
        for (int r = a + 1; r < cc; r++) {
            float l = b->beta[r] * z->Gm[(size_t)r * C + a];
            const float *rr = z->R + (size_t)r * C;
            for (int col = 0; col < cc; col++) ra[col] -= l * rr[col];
        }
        dbeta[a] += ra[a];
    }
    float *dL = z->dA;
    mm(0, 1, cc, cc, cc, -1.0f, z->R, C, b->T, C, 0.0f, dL, C);
    for (int a = 0; a < cc; a++)
        for (int r = 0; r < cc; r++) {
            float *v = dL + (size_t)a * C + r;
            if (r >= a) {
                *v = 0.0f;
                continue;
            }
            dbeta[a] += *v * z->Gm[(size_t)a * C + r];
            *v *= b->beta[a];
        }
    mm(0, 0, cc, d, cc, 1.0f, dL, C, b->W, d, 1.0f, dw, d);
    mm(1, 0, cc, d, cc, 1.0f, dL, C, b->W, d, 1.0f, dw, d);
}

/* Block c's own part, back: the logits in the block, Q~, K~ and P to q, k, W, T, then T to W and beta. */
static void block_backward(const path_blocks *h, blk_work *z, int c, const float *q, int ldq, const float *k, int ldk,
                           const float *ds, int ldds, float *dq, int lddq, float *dk, int lddk, float *dw, float *dbeta)
{
    int d = h->d, C = h->C;
    blk b = block_at(h, z, c, q, ldq, k, ldk);
    int cc = b.cc;
    block_prepare(h, &b, ldq, ldk, z);
    float *dT = z->dT + (size_t)c * C * C, *dP = z->dP + (size_t)c * d * d, *dQt = z->dQt + (size_t)b.i0 * d,
          *dKt = z->dKt + (size_t)b.i0 * d, *dqc = dq + (size_t)b.i0 * lddq, *dkc = dk + (size_t)b.i0 * lddk,
          *dwc = dw + (size_t)b.i0 * d;
    for (int r = 0; r < cc; r++) {
        for (int e = 0; e < cc; e++)
            z->gS[(size_t)r * C + e] = e <= r ? h->scale * ds[(size_t)(b.i0 + r) * ldds + b.i0 + e] : 0.0f;
        memcpy(dqc + (size_t)r * lddq, dQt + (size_t)r * d, (size_t)d * sizeof *dq);
        for (int e = 0; e < d; e++) dkc[(size_t)r * lddk + e] += dKt[(size_t)r * d + e];
    }
    mm(0, 0, cc, d, cc, 1.0f, z->gS, C, b.K, ldk, 1.0f, dqc, lddq); /* S = Q K^T - A TB */
    mm(1, 0, cc, d, cc, 1.0f, z->gS, C, b.Q, ldq, 1.0f, dkc, lddk);
    mm(0, 1, cc, cc, cc, -1.0f, z->gS, C, z->TB, C, 0.0f, z->dA, C);
    mm(1, 0, cc, cc, cc, -1.0f, z->A, C, z->gS, C, 0.0f, z->dTB, C);
    mm(0, 1, cc, cc, d, -1.0f, b.W, d, dKt, d, 1.0f, z->dTB, C); /* K~ = K - TB^T W */
    mm(0, 0, cc, d, cc, -1.0f, z->TB, C, dKt, d, 1.0f, dwc, d);
    mm(0, 1, cc, cc, d, -1.0f, dQt, d, b.W, d, 0.0f, z->dAT, C); /* Q~ = Q - AT W */
    mm(1, 0, cc, d, cc, -1.0f, z->AT, C, dQt, d, 1.0f, dwc, d);
    mm(0, 1, cc, cc, cc, 1.0f, z->dAT, C, b.T, C, 1.0f, z->dA, C); /* AT = A T */
    mm(1, 0, cc, cc, cc, 1.0f, z->A, C, z->dAT, C, 1.0f, dT, C);
    mm(0, 1, cc, cc, cc, 1.0f, z->dTB, C, z->Bm, C, 1.0f, dT, C); /* TB = T Bm */
    mm(1, 0, cc, cc, cc, 1.0f, b.T, C, z->dTB, C, 0.0f, z->dBm, C);
    mm(0, 0, cc, d, d, -1.0f, b.W, d, dP, d, 0.0f, z->dM, d); /* P = I - W^T M, M = T W */
    mm(0, 1, cc, d, d, -1.0f, z->M, d, dP, d, 1.0f, dwc, d);
    mm(0, 1, cc, cc, d, 1.0f, z->dM, d, b.W, d, 1.0f, dT, C);
    mm(1, 0, cc, d, cc, 1.0f, b.T, C, z->dM, d, 1.0f, dwc, d);
    keep_lower(z->dA, cc, C, 0); /* A = tril(Q W^T) */
    mm(0, 0, cc, d, cc, 1.0f, z->dA, C, b.W, d, 1.0f, dqc, lddq);
    mm(1, 0, cc, d, cc, 1.0f, z->dA, C, b.Q, ldq, 1.0f, dwc, d);
    keep_lower(z->dBm, cc, C, 1); /* Bm = W K^T below the diagonal */
    mm(0, 0, cc, d, cc, 1.0f, z->dBm, C, b.K, ldk, 1.0f, dwc, d);
    mm(1, 0, cc, d, cc, 1.0f, z->dBm, C, b.W, d, 1.0f, dkc, lddk);
    ut_backward(h, &b, z, dT, dwc, dbeta + b.i0);
}

void path_blocks_backward(const path_blocks *h, const float *q, int ldq, const float *k, int ldk, const float *ds,
                          int ldds, float *dq, int lddq, float *dk, int lddk, int accumulate, float *dw, float *dbeta,
                          float *work)
{
    blk_work z = carve(h, work);
    int nc = n_blocks(h), d = h->d;
    size_t nd = (size_t)h->n * d;
    memset(z.dT, 0, (size_t)nc * h->C * h->C * sizeof *z.dT);
    memset(z.dP, 0, (size_t)nc * d * d * sizeof *z.dP);
    memset(z.dQt, 0, nd * sizeof *z.dQt);
    memset(z.dKt, 0, nd * sizeof *z.dKt);
    if (!accumulate)
        for (int j = 0; j < h->n; j++) memset(dk + (size_t)j * lddk, 0, (size_t)d * sizeof *dk);
    for (int c = 0; c < nc; c++) {
        blk b = block_at(h, &z, c, q, ldq, k, ldk);
        block_prepare(h, &b, ldq, ldk, &z);
    }
    for (int m = 1; m < nc; m++) between_backward(h, &z, m, q, ldq, k, ldk, ds, ldds);
    for (int c = 0; c < nc; c++) block_backward(h, &z, c, q, ldq, k, ldk, ds, ldds, dq, lddq, dk, lddk, dw, dbeta);
}

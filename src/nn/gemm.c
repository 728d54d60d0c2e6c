/* The matmul context: the dense layers' product in its precision, and the
 * attention threads' own bf16 engines. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gemm_impl.h"
#include "posemb/nn.h"
#include "posemb/error.h"
#include "posemb/precision.h"
#include "nn/nn_internal.h"
#include "nn/precision_internal.h"

struct posemb_matmul {
    posemb_precision precision;
    bf16_engine *bf16;  /* NULL in fp32 */
    bf16_engine **attn; /* the attention's own, one per thread slot (matmul_attn_prepare) */
    int n_attn;
};

int posemb_bf16_available(char *why, size_t cap) { return gemm_bf16_available(why, cap); }

posemb_status posemb_matmul_new(posemb_matmul **out, posemb_precision p, posemb_error *err)
{
    char why[256] = "";
    *out = calloc(1, sizeof **out);
    if (!*out) return posemb_fail(err, POSEMB_ENOMEM, "out of memory for a matmul context");
    (*out)->precision = p == POSEMB_PRECISION_BF16 ? POSEMB_PRECISION_BF16 : POSEMB_PRECISION_FP32;
    if (p == POSEMB_PRECISION_BF16 && !((*out)->bf16 = bf16_engine_new(why, sizeof why))) {
        free(*out);
        *out = NULL;
        return posemb_fail(err, POSEMB_ERANGE, "%s", why);
    }
    return POSEMB_OK;
}

void posemb_matmul_free(posemb_matmul *mm)
{
    if (!mm) return;
    bf16_engine_free(mm->bf16);
    for (int i = 0; i < mm->n_attn; i++) bf16_engine_free(mm->attn[i]);
    free(mm->attn);
    free(mm);
}

void matmul_attn_prepare(posemb_matmul *mm, int n)
{
    if (!mm || !mm->bf16 || omp_in_parallel()) return;
    if (n > mm->n_attn) {
        bf16_engine **a = realloc(mm->attn, (size_t)n * sizeof *a);
        if (!a) return; /* memory refused: the slots past n_attn stay fp32 */
        memset(a + mm->n_attn, 0, (size_t)(n - mm->n_attn) * sizeof *a);
        mm->attn = a;
        mm->n_attn = n;
    }
    for (int i = 0; i < n; i++)
        if (!mm->attn[i]) mm->attn[i] = bf16_engine_new(NULL, 0); /* NULL (memory refused): that slot stays fp32 */
}

bf16_engine *matmul_attn_engine(const posemb_matmul *mm, int slot)
{
    return mm && slot >= 0 && slot < mm->n_attn ? mm->attn[slot] : NULL;
}

posemb_precision posemb_matmul_precision(const posemb_matmul *mm) { return mm ? mm->precision : POSEMB_PRECISION_FP32; }

void matmul_reuse(posemb_matmul *mm, const float *p)
{
    if (mm && !omp_in_parallel()) gemm_bf16_reuse(mm->bf16, p); /* products there are fp32, and mm's engine is shared */
}

uint16_t *matmul_stash_claim(posemb_matmul *mm, const float *src, int rows, int cols)
{
    return mm ? gemm_bf16_claim(mm->bf16, src, rows, cols) : NULL;
}

void matmul_new_pass(posemb_matmul *mm, int keep)
{
    if (mm) gemm_bf16_new_pass(mm->bf16, keep);
}

void matmul_stash(posemb_matmul *mm, gemm_stash_mode mode)
{
    if (mm) gemm_bf16_stash(mm->bf16, mode);
}

const char *posemb_precision_name(posemb_precision p) { return p == POSEMB_PRECISION_BF16 ? "bf16" : "fp32"; }

int posemb_precision_parse(const char *name, posemb_precision *out)
{
    if (!name) return 0;
    if (!strcmp(name, "fp32")) *out = POSEMB_PRECISION_FP32;
    else if (!strcmp(name, "bf16")) *out = POSEMB_PRECISION_BF16;
    else return 0;
    return 1;
}

/* mm's bf16 engine where a product may use it, else NULL (gemm_bf16 then
 * declines): its buffers are shared by its callers, so serial callers only. */
static bf16_engine *serial_bf16(const posemb_matmul *mm) { return mm && !omp_in_parallel() ? mm->bf16 : NULL; }

void posemb_nn_gemm(posemb_matmul *mm, int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A,
                    int lda, const float *B, int ldb, float beta, float *C, int ldc)
{
    if (gemm_bf16(serial_bf16(mm), trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc)) return;
    if (gemm_xsmm(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc)) return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K, alpha,
                A, lda, B, ldb, beta, C, ldc);
}

int matmul_bf16_bias(posemb_matmul *mm, int trans_b, int M, int N, int K, const float *A, int lda, const float *B,
                     int ldb, const float *bias, float *C, int ldc)
{
    return gemm_bf16(serial_bf16(mm), 0, trans_b, M, N, K, 1.0f, A, lda, B, ldb, bias, 0.0f, C, ldc);
}

/* The dense layers' matrix product, in the process's matmul precision. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <string.h>

#include "gemm_impl.h"
#include "posemb/nn.h"
#include "posemb/precision.h"

static posemb_precision g_precision = POSEMB_PRECISION_FP32;

int posemb_bf16_available(char *why, size_t cap) { return gemm_bf16_available(why, cap); }

posemb_precision posemb_set_matmul_precision(posemb_precision p, char *why, size_t cap)
{
    if (why && cap) why[0] = '\0';
    g_precision = p == POSEMB_PRECISION_BF16 && gemm_bf16_available(why, cap) ? POSEMB_PRECISION_BF16 : POSEMB_PRECISION_FP32;
    return g_precision;
}

posemb_precision posemb_get_matmul_precision(void) { return g_precision; }

const char *posemb_precision_name(posemb_precision p) { return p == POSEMB_PRECISION_BF16 ? "bf16" : "fp32"; }

int posemb_precision_parse(const char *name, posemb_precision *out)
{
    if (!name) return 0;
    if (!strcmp(name, "fp32")) *out = POSEMB_PRECISION_FP32;
    else if (!strcmp(name, "bf16")) *out = POSEMB_PRECISION_BF16;
    else return 0;
    return 1;
}

void posemb_nn_gemm(int trans_a, int trans_b, int M, int N, int K, float alpha, const float *A, int lda, const float *B,
             int ldb, float beta, float *C, int ldc)
{
    /* bf16 keeps conversion buffers shared by the process: serial callers only. */
    if (g_precision == POSEMB_PRECISION_BF16 && !omp_in_parallel() &&
        gemm_bf16(trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc))
        return;
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, M, N, K,
                alpha, A, lda, B, ldb, beta, C, ldc);
}

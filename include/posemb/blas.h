/* Which kernels OpenBLAS runs. OpenBLAS chooses them when it loads, by CPU
 * model; an OpenBLAS older than the CPU (Debian 12's 0.3.21 on an Intel
 * family 6 model 207, Emerald Rapids) does not know the model and falls back
 * to its Prescott kernels (SSE3), three to four times slower than the
 * AVX-512 ones the CPU runs. OPENBLAS_CORETYPE, read when the library loads,
 * chooses instead: these functions say when to set it, and posemb's programs
 * do so before they start (posemb_blas_reexec). The kernels also decide the
 * rounding of every product, so a run is reproducible bit for bit only under
 * the same kernels (posemb_blas_core names them). */
#ifndef POSEMB_BLAS_H
#define POSEMB_BLAS_H

#include "posemb/api.h"

#ifdef __cplusplus
extern "C" {
#endif

/* OpenBLAS's name for the kernels it runs ("SkylakeX", "Haswell", "Zen",
 * "Prescott", ...). */
POSEMB_API const char *posemb_blas_core(void);
/* The OPENBLAS_CORETYPE this CPU should run when the kernels loaded lack the
 * AVX2 and FMA the CPU has, else NULL: the kernels OpenBLAS itself takes for
 * a CPU it does not know by model, by the instructions the CPU has
 * ("Cooperlake" with AVX512_BF16, "SkylakeX" with AVX-512, "Haswell" with
 * AVX2 and FMA; OpenBLAS 0.3.21's table of names stops one short of
 * Cooperlake, which it then reaches by that same rule). Kernels with AVX2
 * are left alone, whatever the CPU; so is an OpenBLAS built for one set of
 * kernels (no DYNAMIC_ARCH), which ignores the variable. */
POSEMB_API const char *posemb_blas_core_advice(void);
/* For a program's main, before anything else: when posemb_blas_core_advice
 * names kernels and OPENBLAS_CORETYPE is not set, sets it and executes the
 * program again (its own file, /proc/self/exe's target, with argv; the
 * process keeps its pid and name), so that OpenBLAS loads with
 * them; returns when there is nothing to change, under valgrind (whose
 * tools would not follow the exec), in a program without an interpreter (a
 * static one, or one started as `ld.so PROGRAM`), or when the exec fails
 * (saying so on stderr). Setting OPENBLAS_CORETYPE by hand (any value) turns
 * it off. */
POSEMB_API void posemb_blas_reexec(char **argv);

#ifdef __cplusplus
}
#endif
#endif

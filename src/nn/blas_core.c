/* The OpenBLAS kernels in use, and the fix for an OpenBLAS that does not know
 * the CPU (posemb/blas.h). */
#include "posemb/blas.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <unistd.h>

char *openblas_get_corename(void);
char *openblas_get_config(void);

const char *posemb_blas_core(void) { return openblas_get_corename(); }

/* OpenBLAS's x86 kernels that use AVX2 and FMA (its kernel/x86_64 targets
 * from Haswell on, AMD's from Excavator on; non-DYNAMIC_ARCH builds name them
 * in capitals). */
static int has_avx2_kernels(const char *core)
{
    static const char *const AVX2[] = {"Haswell", "SkylakeX", "Cooperlake", "SapphireRapids", "Zen", "Excavator"};
    for (size_t i = 0; i < sizeof AVX2 / sizeof *AVX2; i++)
        if (!strcasecmp(core, AVX2[i])) return 1;
    return 0;
}

const char *posemb_blas_core_advice(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *config = openblas_get_config();
    if (!config || !strstr(config, "DYNAMIC_ARCH")) return NULL; /* one set of kernels, built in */
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma")) return NULL;
    const char *core = posemb_blas_core();
    if (!core || has_avx2_kernels(core)) return NULL;
    if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
        __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    return "Haswell";
#else
    return NULL;
#endif
}

void posemb_blas_reexec(char **argv)
{
    if (getenv("OPENBLAS_CORETYPE")) return;    /* the user's choice, or this program already re-executed */
    const char *preload = getenv("LD_PRELOAD"); /* under valgrind the new image would run outside it */
    if (preload && strstr(preload, "vgpreload")) return;
    /* No interpreter: a static program, or one started as `ld.so PROGRAM`,
     * where /proc/self/exe is ld.so and not the program. */
    if (!getauxval(AT_BASE)) return;
    const char *core = posemb_blas_core_advice();
    char self[4096]; /* the program's own path, not /proc/self/exe: its name is the process's (ps, pgrep) */
    ssize_t n = core ? readlink("/proc/self/exe", self, sizeof self - 1) : 0;
    if (n <= 0 || n >= (ssize_t)sizeof self - 1 || setenv("OPENBLAS_CORETYPE", core, 1)) return;
    self[n] = '\0';
    execv(self, argv);
    fprintf(stderr, "posemb: cannot restart %s with OPENBLAS_CORETYPE=%s (%s): running OpenBLAS's %s kernels\n", self,
            core, strerror(errno), posemb_blas_core());
    unsetenv("OPENBLAS_CORETYPE");
}

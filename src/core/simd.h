/* POSEMB_KERNEL marks the loops the compiler vectorises (GELU, softmax,
 * LayerNorm, RoPE, AdamW, ...). A packaged libposemb targets any x86-64, so
 * GCC builds each such function three times, for x86-64-v4 (AVX-512),
 * x86-64-v3 (AVX2, FMA) and the baseline, and the dynamic loader picks the
 * one the CPU runs (function multi-versioning: an ifunc resolved once, at
 * load). OpenMP regions inside are cloned with their function. Built with
 * POSEMB_NATIVE (-march=native) the whole library already targets the
 * building CPU, and other compilers get the plain function. */
#ifndef POSEMB_SIMD_H
#define POSEMB_SIMD_H

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(POSEMB_NATIVE_BUILD) && __GNUC__ >= 12
#define POSEMB_KERNEL __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
/* GCC gives a cloned function's ifunc and resolver default visibility
 * whatever -fvisibility says, so an internal kernel would leave
 * libposemb.so: POSEMB_KERNEL_INTERNAL(name); after its definition hides both. */
#define POSEMB_KERNEL_INTERNAL(name) __asm__(".hidden " #name "\n\t.hidden " #name ".resolver")
#else
#define POSEMB_KERNEL
#define POSEMB_KERNEL_INTERNAL(name) _Static_assert(1, #name)
#endif

#endif

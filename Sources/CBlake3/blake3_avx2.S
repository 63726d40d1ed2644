// One of the x86-64 SIMD kernels that blake3_dispatch.c picks at run time (cpuid), from
// Debian's copy of BLAKE3's assembly (see include/CBlake3.h): unlike the intrinsics files, it
// needs no compiler flags.
#if defined(__x86_64__)
#include "/usr/share/cargo/registry/blake3-1.3.1/c/blake3_avx2_x86-64_unix.S"
#endif

// Compiler attributes statlet uses, in one place.
#pragma once

// Forced inlining, where the optimizer's budget would leave calls on a hot path (the
// encoder's per-family loops). Only in optimized builds: at -O0 (the sanitizer build) nothing
// folds, and forcing it copied the whole per-family visit into each of ~100 loops — one
// translation unit then took 15 GB and tens of minutes to compile.
#if defined(__OPTIMIZE__)
#define STATLET_ALWAYS_INLINE __attribute__((always_inline))
#else
#define STATLET_ALWAYS_INLINE
#endif

// Compiles a CUDA translation unit of anvil's as C++ and runs its grid on the CPU, one
// thread after another: what checks the generated CUDA code's semantics on machines
// without a GPU (the tests compare it with the reference interpreter). Each thread of
// anvil's kernels works on items of its own, so a serial order is one of the orders a GPU
// may run them in.
#pragma once
#define ANVIL_EMULATION
#include <math.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __noinline__ __attribute__((noinline))
#define __align__(n) __attribute__((aligned(n)))
// Unrolling is the GPU's business: the emulation keeps the loops.
#define ANVIL_UNROLL

struct anvil_dim3 {
  unsigned x, y, z;
};
// The built-in variables, set by the launcher for each emulated thread.
[[maybe_unused]] static anvil_dim3 threadIdx, blockIdx, blockDim, gridDim;
[[maybe_unused]] static constexpr int warpSize = 32;

[[maybe_unused]] static inline void __syncthreads() {}
[[maybe_unused]] static inline double __longlong_as_double(long long v) {
  double d;
  memcpy(&d, &v, sizeof d);
  return d;
}
[[maybe_unused]] static inline float __int_as_float(int v) {
  float f;
  memcpy(&f, &v, sizeof f);
  return f;
}

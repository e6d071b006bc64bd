// Compiles a CUDA translation unit of anvil's as C++ and runs its grid on the CPU, one
// thread after another: what checks the generated CUDA code's semantics on machines
// without a GPU (the tests compare it with the reference interpreter). Each thread of
// anvil's kernels works on items of its own, so a serial order is one of the orders a GPU
// may run them in. The lanes of a warp are coroutines: one runs until it reaches a warp
// shuffle, which all of them must reach before any goes on, then the next one runs.
#pragma once
#define ANVIL_EMULATION
#include <math.h>
#include <string.h>
#include <ucontext.h>

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

// The warp being run: its lanes' contexts, where the launcher waits, which lane runs, the
// first lane's thread index, and a word per lane for shuffles.
struct anvil_warp_t {
  ucontext_t launcher;
  ucontext_t lanes[32];
  unsigned count, current, base;
  unsigned long long words[32];
};
[[maybe_unused]] static anvil_warp_t anvil_warp;

// Where every lane must arrive before any goes on: the lanes run in turn up to it.
[[maybe_unused]] static void anvil_lanes_meet() {
  const unsigned me = anvil_warp.current, next = (me + 1) % anvil_warp.count;
  if (next == me) return;
  anvil_warp.current = next;
  threadIdx.x = anvil_warp.base + next;
  swapcontext(&anvil_warp.lanes[me], &anvil_warp.lanes[next]);
  anvil_warp.current = me;
  threadIdx.x = anvil_warp.base + me;
}

// Each lane's `value`, then lane `from`'s (every lane having written before any reads, and
// read before any writes again).
template <class T>
static T anvil_exchange(T value, unsigned from) {
  static_assert(sizeof(T) <= sizeof(unsigned long long), "a shuffle carries one word");
  memcpy(&anvil_warp.words[anvil_warp.current], &value, sizeof value);
  anvil_lanes_meet();
  T got;
  memcpy(&got, &anvil_warp.words[from], sizeof got);
  anvil_lanes_meet();
  return got;
}
template <class T>
[[maybe_unused]] static T __shfl_down_sync(unsigned, T value, int delta) {
  const unsigned from = anvil_warp.current + static_cast<unsigned>(delta);
  return anvil_exchange(value, from < anvil_warp.count ? from : anvil_warp.current);
}
template <class T>
[[maybe_unused]] static T __shfl_sync(unsigned, T value, int lane) {
  return anvil_exchange(value, static_cast<unsigned>(lane) % anvil_warp.count);
}

// What the interior-point runtime's C++ checks share (tests/cpp/ipm_headers.cpp, and the
// random KKT matrices of opti/ipm/sparse_kkt.rs's tests): the runtime's headers, in
// `namespace anvil_ipm` as a module holds them (the method's interface, then the KKT
// factorisations), a failure count, and deterministic numbers.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "interior_point.hpp"

namespace anvil_ipm {
namespace {
#include "common.hpp"
#include "dense_ldl.hpp"
#include "front.hpp"
#include "compiled_front.hpp"
#include "sparse_ldl.hpp"
#include "stage_ldl.hpp"
}  // namespace
}  // namespace anvil_ipm

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}

// A deterministic pseudo-random number in [-1, 1].
double uniform(unsigned* state) {
  *state = *state * 1664525u + 1013904223u;
  return static_cast<double>(*state >> 8) / static_cast<double>(1u << 24) * 2.0 - 1.0;
}

// Factorises the matrix (sparse: permuted upper triangle values; dense: the same matrix in
// the original order) both ways and compares.
template <class S, int N>
void compare_sparse_with_dense(const char* what, const double* values, anvil_ipm::DenseLdl<N>& dense, anvil_ipm::SparseLdl<S>& sparse) {
  double full[N * N];
  for (int k = 0; k < N * N; ++k) full[k] = 0.0;
  for (int j = 0; j < N; ++j) {
    for (int p = S::kOuter[j]; p < S::kOuter[j + 1]; ++p) {
      const int i = S::kInner[p], oi = S::kPerm[i], oj = S::kPerm[j];
      full[(oi < oj ? oi : oj) * N + (oi < oj ? oj : oi)] = values[p];
      sparse.a[p] = values[p];
    }
  }
  for (int k = 0; k < N * N; ++k) dense.a[k] = full[k];
  const anvil_ipm::Inertia d = dense.factorize(anvil_ipm::kZeroPivot);
  // As the interior-point method does: a zero pivot may be an unstable pivot's cancellation,
  // which a stabler factorisation tells apart.
  sparse.reset_quality();
  anvil_ipm::Inertia s = sparse.factorize(anvil_ipm::kZeroPivot);
  while (s.zero > 0 && sparse.increase_quality()) s = sparse.factorize(anvil_ipm::kZeroPivot);
  const bool same = d.positive == s.positive && d.negative == s.negative && d.zero == s.zero;
  if (!same) {
    std::printf("%s: inertia dense (%d, %d, %d), sparse (%d, %d, %d)\n", what, d.positive, d.negative, d.zero,
                s.positive, s.negative, s.zero);
  }
  check(same, what);
  if (d.zero > 0) return;
  double b[N], x[N];
  unsigned state = 7u;
  for (int i = 0; i < N; ++i) x[i] = b[i] = uniform(&state);
  const double ratio = sparse.solve(x);
  double residual = 0.0, size = 0.0;
  for (int i = 0; i < N; ++i) {
    double r = -b[i];
    for (int j = 0; j < N; ++j) r += full[(i < j ? i : j) * N + (i < j ? j : i)] * x[j];
    residual = std::fabs(r) > residual ? std::fabs(r) : residual;
    size = std::fabs(x[i]) > size ? std::fabs(x[i]) : size;
  }
  const bool accurate = ratio <= 1e-10 && residual <= 1e-8 * (1.0 + size);
  if (!accurate) std::printf("%s: solve ratio %g, residual %g\n", what, ratio, residual);
  check(accurate, what);
}
}  // namespace

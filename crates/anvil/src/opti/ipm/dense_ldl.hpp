// Dense symmetric indefinite LDL' factorisation with Bunch-Kaufman pivoting, and its inertia.
//
// The interior-point method factorises its KKT matrix once per iteration and must know the
// matrix's inertia (how many positive, negative and zero eigenvalues) to correct it. A
// symmetric indefinite factorisation P A P' = L D L' (L unit lower triangular, D block
// diagonal with 1x1 and 2x2 blocks) gives it by Sylvester's law: a 2x2 block that
// Bunch-Kaufman chooses always has one eigenvalue of each sign.
//
// Part of anvil's interior-point runtime: the KKT factorisations (this, front.hpp,
// sparse_ldl.hpp, stage_ldl.hpp) are templated on the sizes, so each generated module that
// holds an interior-point solver includes them (once), after the method's interface
// (interior_point.hpp, which declares Inertia) and common.hpp, inside
// `namespace anvil_ipm { namespace { ... } }` (internal linkage: modules compiled with
// different flags never share a definition).

#include <cmath>

// A pivot at most this times the absolute terms it was computed from is cancellation's
// roundoff, a zero eigenvalue (about 45 machine epsilons).
constexpr double kZeroPivot = 1e-14;

// Iterative refinement of x, an approximate solution of A x = b, as Ipopt refines: until the
// residual is at most 1e-10 of ||A|| ||x|| + ||b|| (max norms), at most 10 corrections, and no
// further once a correction stops reducing it. `residual(x, r)` sets r = b - A x and
// `correct(r)` overwrites r with the factors' solution of A d = r. Returns the residual
// ratio ||b - A x|| / (||A|| ||x|| + ||b||) reached (NaN if x is not finite): an unstable
// factorisation of a nearly singular matrix shows as a large ratio.
template <class Residual, class Correct>
double refine(int n, double size_a, double size_b, double* x, double* r, Residual residual, Correct correct) {
  double ratio_before = HUGE_VAL;
  for (int step = 0;; ++step) {
    residual(x, r);
    double res = 0.0, size_x = 0.0;
    for (int i = 0; i < n; ++i) {
      res = std::fabs(r[i]) > res ? std::fabs(r[i]) : res;
      size_x = std::fabs(x[i]) > size_x ? std::fabs(x[i]) : size_x;
      if (!std::isfinite(x[i]) || !std::isfinite(r[i])) return NAN;
    }
    const double scale = size_a * size_x + size_b;
    const double ratio = scale > 0.0 ? res / scale : 0.0;
    if (ratio <= 1e-10 || step == 10 || !(ratio < 0.999999 * ratio_before)) return ratio;
    ratio_before = ratio;
    correct(r);
    for (int i = 0; i < n; ++i) x[i] += r[i];
  }
}

// A symmetric N x N matrix, factorised in place. `a` is column-major and only its lower
// triangle (diagonal included) is read; factorize() overwrites it with L (strictly below the
// diagonal) and D.
template <int N>
class DenseLdl {
 public:
  static constexpr int kSize = N;
  double a[N > 0 ? N * N : 1];

  // Factorises `a`; returns the inertia. A 1x1 pivot at most `zero_pivot` times the terms
  // it was computed from (its diagonal entry and the updates to it, in absolute value) is
  // cancellation's roundoff: it counts as a zero eigenvalue (the matrix is then singular:
  // solve() is not valid). A small pivot that is no cancellation is a true one, such as
  // -1/sigma of an equality row on a variable at its bound.
  Inertia factorize(double zero_pivot) {
    Inertia inertia{0, 0, 0};
    for (int i = 0; i < N; ++i) terms_[i] = std::fabs(at(i, i));
    // Bunch and Kaufman's threshold (1 + sqrt(17)) / 8: it bounds the growth of L's entries.
    const double alpha = 0.6403882032022076;
    for (int k = 0; k < N;) {
      swaps_[k] = k;
      double colmax = 0.0;
      int imax = k;
      for (int i = k + 1; i < N; ++i) {
        if (std::fabs(at(i, k)) > colmax) {
          colmax = std::fabs(at(i, k));
          imax = i;
        }
      }
      const double absakk = std::fabs(at(k, k));
      int size = 1;
      if (absakk < alpha * colmax) {
        double rowmax = 0.0;
        for (int j = k; j < imax; ++j) rowmax = std::fabs(at(imax, j)) > rowmax ? std::fabs(at(imax, j)) : rowmax;
        for (int i = imax + 1; i < N; ++i) rowmax = std::fabs(at(i, imax)) > rowmax ? std::fabs(at(i, imax)) : rowmax;
        if (absakk * rowmax >= alpha * colmax * colmax) {
          // The diagonal pivot is large enough after all.
        } else if (std::fabs(at(imax, imax)) >= alpha * rowmax) {
          swap(k, imax);
        } else {
          swaps_[k + 1] = k + 1;
          swap(k + 1, imax);
          size = 2;
        }
      }
      if (size == 1) {
        eliminate_1x1(k, zero_pivot * terms_[k], &inertia);
      } else {
        eliminate_2x2(k, &inertia);
      }
      block_[k] = size;
      if (size == 2) block_[k + 1] = 0;
      k += size;
    }
    return inertia;
  }

  // Bunch-Kaufman pivoting is as stable as it gets.
  bool increase_quality() { return false; }
  void reset_quality() {}

  // Solves A x = b in place (b becomes x) with the factors from factorize(). Returns the
  // residual ratio as refine() does: Bunch-Kaufman is backward stable, so it is roundoff's,
  // reported as 0 (NaN if x is not finite).
  double solve(double* b) const {
    for (int k = 0; k < N; ++k) {
      const int p = swaps_[k];
      if (p != k) {
        const double t = b[k];
        b[k] = b[p];
        b[p] = t;
      }
    }
    // L y = b (unit lower triangular).
    for (int j = 0; j < N; ++j) {
      const double bj = b[j];
      if (bj == 0.0) continue;
      const int first = block_[j] == 2 ? j + 2 : j + 1;
      for (int i = first; i < N; ++i) b[i] -= at(i, j) * bj;
      if (block_[j] == 2) {
        const double bj1 = b[j + 1];
        for (int i = j + 2; i < N; ++i) b[i] -= at(i, j + 1) * bj1;
        ++j;
      }
    }
    // D z = y.
    for (int k = 0; k < N; ++k) {
      if (block_[k] == 1) {
        b[k] /= at(k, k);
      } else if (block_[k] == 2) {
        const double d11 = at(k, k), d21 = at(k + 1, k), d22 = at(k + 1, k + 1);
        const double det = d11 * d22 - d21 * d21;
        const double b0 = b[k], b1 = b[k + 1];
        b[k] = (d22 * b0 - d21 * b1) / det;
        b[k + 1] = (d11 * b1 - d21 * b0) / det;
      }
    }
    // L' x = z.
    for (int j = N - 1; j >= 0; --j) {
      if (block_[j] == 0) {
        // The second column of a 2x2 block: done with its first.
        continue;
      }
      const bool two = block_[j] == 2;
      const int first = two ? j + 2 : j + 1;
      double s0 = 0.0, s1 = 0.0;
      for (int i = first; i < N; ++i) {
        s0 += at(i, j) * b[i];
        if (two) s1 += at(i, j + 1) * b[i];
      }
      b[j] -= s0;
      if (two) b[j + 1] -= s1;
    }
    for (int k = N - 1; k >= 0; --k) {
      const int p = swaps_[k];
      if (p != k) {
        const double t = b[k];
        b[k] = b[p];
        b[p] = t;
      }
    }
    for (int k = 0; k < N; ++k) {
      if (!std::isfinite(b[k])) return NAN;
    }
    return 0.0;
  }

 private:
  // For each position, the row it was swapped with when it became a pivot (itself if none).
  int swaps_[N > 0 ? N : 1];
  // 1: a 1x1 pivot; 2: the first column of a 2x2 pivot; 0: its second column.
  int block_[N > 0 ? N : 1];
  // At each position, the sum of the absolute terms its diagonal was computed from so far
  // (interchanges move them).
  double terms_[N > 0 ? N : 1];

  double& at(int i, int j) { return a[j * N + i]; }
  double at(int i, int j) const { return a[j * N + i]; }
  static void exchange(double& u, double& v) {
    const double t = u;
    u = v;
    v = t;
  }

  // Symmetric interchange of rows and columns p < q of the trailing matrix, in its lower
  // triangle. The rows of L computed so far (columns before the current step) move with
  // them, so that P A P' = L D L' with P all interchanges in order. GCC 12 at -O3 warns of an access beyond the 2 x 2 matrix on a path it cannot rule out
  // (p < q < N always holds: q is a pivot row below p).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif
  void swap(int p, int q) {
    swaps_[p] = q;
    if (p == q) return;
    exchange(at(p, p), at(q, q));
    exchange(terms_[p], terms_[q]);
    for (int j = 0; j < p; ++j) exchange(at(p, j), at(q, j));
    for (int i = p + 1; i < q; ++i) exchange(at(i, p), at(q, i));
    for (int i = q + 1; i < N; ++i) exchange(at(i, p), at(i, q));
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  void eliminate_1x1(int k, double tiny, Inertia* inertia) {
    const double d = at(k, k);
    if (std::fabs(d) <= tiny) {
      // A zero pivot: the matrix is singular. Its column is left as it is.
      ++inertia->zero;
      at(k, k) = d != 0.0 ? d : (tiny > 0.0 ? tiny : 1.0);
      for (int i = k + 1; i < N; ++i) at(i, k) = 0.0;
      return;
    }
    (d > 0.0 ? inertia->positive : inertia->negative) += 1;
    for (int j = k + 1; j < N; ++j) {
      const double ljk = at(j, k) / d;
      if (ljk == 0.0) continue;
      for (int i = j; i < N; ++i) at(i, j) -= at(i, k) * ljk;
      terms_[j] += std::fabs(at(j, k) * ljk);
    }
    for (int i = k + 1; i < N; ++i) at(i, k) /= d;
  }

  void eliminate_2x2(int k, Inertia* inertia) {
    const double d11 = at(k, k), d21 = at(k + 1, k), d22 = at(k + 1, k + 1);
    const double det = d11 * d22 - d21 * d21;
    // Bunch-Kaufman takes a 2x2 pivot only where det < 0: one eigenvalue of each sign.
    inertia->positive += 1;
    inertia->negative += 1;
    for (int j = k + 2; j < N; ++j) {
      // [l_jk, l_j,k+1] = [a_jk, a_j,k+1] D^-1
      const double ajk = at(j, k), ajk1 = at(j, k + 1);
      const double l0 = (d22 * ajk - d21 * ajk1) / det;
      const double l1 = (d11 * ajk1 - d21 * ajk) / det;
      for (int i = j; i < N; ++i) at(i, j) -= at(i, k) * l0 + at(i, k + 1) * l1;
      terms_[j] += std::fabs(ajk * l0) + std::fabs(ajk1 * l1);
    }
    for (int i = k + 2; i < N; ++i) {
      const double aik = at(i, k), aik1 = at(i, k + 1);
      at(i, k) = (d22 * aik - d21 * aik1) / det;
      at(i, k + 1) = (d11 * aik1 - d21 * aik) / det;
    }
  }
};

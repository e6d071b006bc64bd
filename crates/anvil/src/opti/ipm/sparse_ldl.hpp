// Sparse symmetric LDL' of a fixed pattern, and its inertia.
//
// The pattern of a solver's KKT matrix is known when the solver is generated, so the
// symbolic work is done then (in Rust, opti/ipm/sparse_kkt.rs): a minimum-degree ordering,
// the permuted matrix's upper triangle, its elimination tree and the column pointers of L.
// What runs here is the numeric factorisation (Davis's up-looking algorithm, "LDL: a concise
// sparse Cholesky package", ACM TOMS 31, 2005), without pivoting: D's signs give the inertia
// (Sylvester's law) when it exists; a pivot that is cancellation's roundoff (dense_ldl.hpp)
// counts as a zero eigenvalue, which the interior-point method answers with regularisation
// (delta_c, delta_w) until the matrix factorises with the right inertia. Solves refine
// iteratively against the matrix, which recovers the accuracy an unpivoted factorisation of
// an indefinite matrix can lose.
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>

// The factorisation of an N x N matrix whose upper triangle (permuted: P A P') has the CSC
// pattern (AOuter, AInner) of NnzA entries; L has NnzL entries below its unit diagonal, in
// the columns LOuter delimits; Parent is the elimination tree; Perm[k] is the original index
// of permuted position k.
template <int N, int NnzA, int NnzL, const int* AOuter, const int* AInner, const int* Parent, const int* LOuter,
          const int* Perm>
class SparseLdl {
 public:
  // The permuted upper triangle's values (the caller assembles them before factorize()).
  double a[NnzA > 0 ? NnzA : 1];

  Inertia factorize(double zero_pivot) {
    Inertia inertia{0, 0, 0};
    size_a_ = 0.0;
    for (int p = 0; p < NnzA; ++p) size_a_ = std::fabs(a[p]) > size_a_ ? std::fabs(a[p]) : size_a_;
    for (int k = 0; k < N; ++k) {
      y_[k] = 0.0;
      int top = N;
      flag_[k] = k;
      count_[k] = 0;
      // Row k of L: the pattern is the reach of column k's entries in the elimination tree.
      for (int p = AOuter[k]; p < AOuter[k + 1]; ++p) {
        int i = AInner[p];
        y_[i] += a[p];
        int len = 0;
        for (; flag_[i] != k; i = Parent[i]) {
          pattern_[len++] = i;
          flag_[i] = k;
        }
        while (len > 0) pattern_[--top] = pattern_[--len];
      }
      double dk = y_[k], terms = std::fabs(dk);
      y_[k] = 0.0;
      for (; top < N; ++top) {
        const int i = pattern_[top];
        const double yi = y_[i];
        y_[i] = 0.0;
        const int end = LOuter[i] + count_[i];
        for (int p = LOuter[i]; p < end; ++p) y_[rows_[p]] -= values_[p] * yi;
        const double lki = yi / d_[i];
        dk -= lki * yi;
        terms += std::fabs(lki * yi);
        rows_[end] = k;
        values_[end] = lki;
        ++count_[i];
      }
      const double tiny = zero_pivot * terms;
      if (!(std::fabs(dk) > tiny)) {
        // A zero (or NaN) pivot: singular. Its column is decoupled so that the rest factorises.
        ++inertia.zero;
        dk = tiny > 0.0 ? tiny : 1.0;
      } else {
        (dk > 0.0 ? inertia.positive : inertia.negative) += 1;
      }
      d_[k] = dk;
    }
    return inertia;
  }

  // Solves A x = b in place (b becomes x, both in the original order), refined against the
  // assembled matrix (refine()); returns the residual ratio reached.
  double solve(double* b) {
    double size_b = 0.0;
    for (int k = 0; k < N; ++k) {
      rhs_[k] = x_[k] = b[Perm[k]];
      size_b = std::fabs(rhs_[k]) > size_b ? std::fabs(rhs_[k]) : size_b;
    }
    substitute(x_);
    const double ratio = refine(
        N, size_a_, size_b, x_, r_,
        [this](const double* x, double* r) {
          for (int k = 0; k < N; ++k) r[k] = rhs_[k];
          for (int j = 0; j < N; ++j) {
            for (int p = AOuter[j]; p < AOuter[j + 1]; ++p) {
              const int i = AInner[p];
              r[i] -= a[p] * x[j];
              if (i != j) r[j] -= a[p] * x[i];
            }
          }
        },
        [this](double* r) { substitute(r); });
    for (int k = 0; k < N; ++k) b[Perm[k]] = x_[k];
    return ratio;
  }

 private:
  double values_[NnzL > 0 ? NnzL : 1];
  int rows_[NnzL > 0 ? NnzL : 1];
  double d_[N > 0 ? N : 1], y_[N > 0 ? N : 1], size_a_ = 0.0;
  double rhs_[N > 0 ? N : 1], x_[N > 0 ? N : 1], r_[N > 0 ? N : 1];
  int pattern_[N > 0 ? N : 1], flag_[N > 0 ? N : 1], count_[N > 0 ? N : 1];

  // v <- (L D L')^-1 v, in the permuted order.
  void substitute(double* v) const {
    for (int j = 0; j < N; ++j) {
      const double vj = v[j];
      for (int p = LOuter[j]; p < LOuter[j + 1]; ++p) v[rows_[p]] -= values_[p] * vj;
    }
    for (int j = 0; j < N; ++j) v[j] /= d_[j];
    for (int j = N - 1; j >= 0; --j) {
      double s = v[j];
      for (int p = LOuter[j]; p < LOuter[j + 1]; ++p) s -= values_[p] * v[rows_[p]];
      v[j] = s;
    }
  }
};

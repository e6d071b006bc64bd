// Sparse symmetric indefinite LDL' of a fixed pattern, and its inertia: a multifrontal
// factorisation with threshold pivoting and delayed pivots.
//
// The pattern of a solver's KKT matrix is known when the solver is generated, so the
// symbolic work is done then (in Rust, opti/ipm/sparse_kkt.rs): a minimum-degree ordering,
// its elimination tree, postordered, and its supernodes. Each supernode is a front: a dense
// matrix of its own columns (fully summed once the front is assembled) and the rows they
// couple to. Fronts are factorised children first (Duff and Reid's multifrontal method): a
// front assembles its matrix entries and its children's updates (their Schur complements,
// kept on a stack), pivots its fully summed unknowns by front.hpp's threshold test, and
// leaves its own Schur complement for its parent. An unknown that no stable pivot can
// eliminate in its front (a KKT matrix's zero diagonal, a tiny pivot beside large entries) is
// delayed: it goes up with the update, fully summed in the parent, where more of its entries
// are summed in. That is what lets the factorisation follow a fill-reducing order whatever
// the signs and zeros of the diagonal, and keeps it stable on the indefinite matrices the
// interior-point method meets. Delays enlarge fronts: the storage is sized when the solver is
// generated for a bounded number of them, and a pivot that would exceed the bound is taken
// in place by Bunch and Kaufman's rule instead.
//
// D's blocks give the inertia (Sylvester's law); a pivot that is cancellation's roundoff
// counts as a zero eigenvalue, which the interior-point method answers with regularisation
// (delta_c, delta_w). Solves refine iteratively against the matrix.
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>

// An array's length for N elements (C++ has no empty arrays).
template <int N>
struct StorageFor {
  static constexpr int value = N > 0 ? N : 1;
};

// The factorisation of the matrix whose structure S describes (generated: see the Fronts of
// sparse_kkt.rs for the meaning of each table):
//   kSize, kNnz; kPerm[kSize]: the original index of each permuted position; kOuter,
//   kInner: the permuted upper triangle's CSC pattern; kFronts; kCols[kFronts + 1];
//   kParent[kFronts]; kRowStart[kFronts + 1], kRows, kRelative; kAsmStart[kFronts + 1],
//   kAsmSrc, kAsmRow, kAsmCol; kMaxFront, kMaxDelays, kFactorCapacity, kFactorSlack,
//   kStackCapacity, kStackSlack, kStackIndexCapacity, kUnknownCapacity.
template <class S>
class SparseLdl {
 public:
  static constexpr int N = S::kSize;

  // A stabler factorisation from the next factorize() on (PivotThreshold); false if the
  // threshold is at its largest already.
  bool increase_quality() { return threshold_.increase(); }
  void reset_quality() { threshold_.reset(); }

  // The permuted upper triangle's values (the caller assembles them before factorize()).
  double a[StorageFor<S::kNnz>::value];

  Inertia factorize(double zero_pivot) {
    Inertia inertia{0, 0, 0};
    measure();
    int factor_top = 0, unknown_top = 0, pivot_top = 0, stack_top = 0, index_top = 0, delays = 0;
    // What delays have added to the factors of the fronts done (possibly negative: a front
    // that delays stores fewer pivots), what they will add at most to the fronts to come,
    // and what they add to the updates on the stack.
    long factor_extra = 0, factor_pending = 0, stack_extra = 0;
    for (int s = 0; s < S::kFronts; ++s) delayed_in_[s] = 0;
    for (int s = 0; s < S::kFronts; ++s) {
      const int own = S::kCols[s + 1] - S::kCols[s], rows = S::kRowStart[s + 1] - S::kRowStart[s];
      const int d = delayed_in_[s], nf = own + d, n = nf + rows;
      factor_pending -= growth(s, d);
      double* f = factor_ + factor_top;
      int* unknown = unknown_ + unknown_top;
      for (int k = 0; k < n * n; ++k) f[k] = 0.0;
      // Positions: own columns, then the delayed unknowns, then the rows.
      const auto place = [own, d](int local) { return local < own ? local : local + d; };
      for (int q = 0; q < own; ++q) unknown[q] = S::kCols[s] + q;
      for (int q = 0; q < rows; ++q) unknown[nf + q] = S::kRows[S::kRowStart[s] + q];
      for (int p = S::kAsmStart[s]; p < S::kAsmStart[s + 1]; ++p) {
        f[place(S::kAsmCol[p]) * n + place(S::kAsmRow[p])] += a[S::kAsmSrc[p]];
      }
      // The children's updates, the last on the stack: delayed unknowns first, then rows.
      int next_delayed = own;
      while (index_top > 0 && S::kParent[index_[index_top - 3]] == s) {
        const int m = index_[index_top - 1], dc = index_[index_top - 2], child = index_[index_top - 3];
        const int* ids = index_ + index_top - 3 - m;
        const double* u = stack_ + stack_top - triangle(m);
        for (int q = 0; q < m; ++q) {
          if (q < dc) {
            unknown[next_delayed] = ids[q];
            position_[q] = next_delayed++;
          } else {
            position_[q] = place(S::kRelative[S::kRowStart[child] + q - dc]);
          }
        }
        for (int j = 0; j < m; ++j) {
          const int pj = position_[j];
          const double* column = u + j * m - j * (j - 1) / 2 - j;
          for (int i = j; i < m; ++i) {
            const int pi = position_[i];
            f[(pi > pj ? pj : pi) * n + (pi > pj ? pi : pj)] += column[i];
          }
        }
        stack_top -= triangle(m);
        stack_extra -= triangle(m) - triangle(m - dc);
        index_top -= m + 3;
      }
      const int parent = S::kParent[s];
      const long symbolic = static_cast<long>(own) * (own + rows);
      SparseFront kernel(f, n, unknown, terms_, row_size_, threshold_.value());
      int pivots = 0;
      const auto can_delay = [&](int left) {
        // Into the parent's front, if it and the storage have room for them.
        if (parent < 0 || delays + left > S::kMaxDelays) return false;
        const int before = delayed_in_[parent];
        if (symbolic_size(parent) + before + left > S::kMaxFront) return false;
        const long factors = factor_extra + (static_cast<long>(nf - left) * n - symbolic) + factor_pending -
                             growth(parent, before) + growth(parent, before + left);
        const long updates = stack_extra + triangle(rows + left) - triangle(rows);
        return factors <= S::kFactorSlack && updates <= S::kStackSlack;
      };
      pivots = kernel.factorize(nf, n, zero_pivot, kind_ + pivot_top, &inertia, can_delay);
      factor_extra += static_cast<long>(pivots) * n - symbolic;
      // The update (positions pivots..n), packed lower triangle, with its unknowns, the
      // front it came from, the delayed count and its size.
      if (parent >= 0) {
        const int m = n - pivots, dc = nf - pivots;
        double* u = stack_ + stack_top;
        for (int j = pivots; j < n; ++j) {
          for (int i = j; i < n; ++i) *u++ = f[j * n + i];
        }
        stack_top += triangle(m);
        stack_extra += triangle(m) - triangle(rows);
        for (int q = pivots; q < n; ++q) index_[index_top++] = unknown[q];
        index_[index_top++] = s;
        index_[index_top++] = dc;
        index_[index_top++] = m;
        factor_pending += growth(parent, delayed_in_[parent] + dc) - growth(parent, delayed_in_[parent]);
        delayed_in_[parent] += dc;
        delays += dc;
      }
      front_[s] = FrontRecord{factor_top, unknown_top, pivot_top, n, pivots};
      factor_top += pivots * n;
      unknown_top += n;
      pivot_top += pivots;
    }
    return inertia;
  }

  // Solves A x = b in place (b becomes x, both in the original order), refined against the
  // assembled matrix (refine()); returns the residual ratio reached.
  double solve(double* b) {
    double size_b = 0.0, size_a = 0.0;
    for (int k = 0; k < N; ++k) {
      rhs_[k] = x_[k] = b[S::kPerm[k]];
      size_b = SparseFront::max2(size_b, std::fabs(rhs_[k]));
      size_a = SparseFront::max2(size_a, row_size_[k]);
    }
    substitute(x_);
    const double ratio = refine(
        N, size_a, size_b, x_, r_,
        [this](const double* x, double* r) {
          for (int k = 0; k < N; ++k) r[k] = rhs_[k];
          for (int j = 0; j < N; ++j) {
            for (int p = S::kOuter[j]; p < S::kOuter[j + 1]; ++p) {
              const int i = S::kInner[p];
              r[i] -= a[p] * x[j];
              if (i != j) r[j] -= a[p] * x[i];
            }
          }
        },
        [this](double* r) { substitute(r); });
    for (int k = 0; k < N; ++k) b[S::kPerm[k]] = x_[k];
    return ratio;
  }

 private:
  using SparseFront = Front;
  PivotThreshold threshold_;

  // Where front s's factors are (offsets into factor_, unknown_ and kind_), its size and
  // its pivots.
  struct FrontRecord {
    int factor, unknown, pivot, size, pivots;
  };
  FrontRecord front_[StorageFor<S::kFronts>::value];
  double factor_[StorageFor<S::kFactorCapacity>::value];
  int unknown_[StorageFor<S::kUnknownCapacity>::value];
  int kind_[StorageFor<N>::value];
  double stack_[StorageFor<S::kStackCapacity>::value];
  int index_[StorageFor<S::kStackIndexCapacity>::value];
  int delayed_in_[StorageFor<S::kFronts>::value];
  int position_[StorageFor<S::kMaxFront>::value];
  double row_size_[StorageFor<N>::value], terms_[StorageFor<N>::value];
  double rhs_[StorageFor<N>::value], x_[StorageFor<N>::value], r_[StorageFor<N>::value], v_[StorageFor<S::kMaxFront>::value];

  static long triangle(int m) { return static_cast<long>(m) * (m + 1) / 2; }
  static int symbolic_size(int s) { return S::kCols[s + 1] - S::kCols[s] + S::kRowStart[s + 1] - S::kRowStart[s]; }
  // The most that d delayed unknowns add to front s's factors (all pivoted there).
  static long growth(int s, int d) {
    const long own = S::kCols[s + 1] - S::kCols[s], size = symbolic_size(s);
    return (own + d) * (size + d) - own * size;
  }

  // Per unknown, the largest entry of its row and its diagonal's size.
  void measure() {
    for (int k = 0; k < N; ++k) row_size_[k] = terms_[k] = 0.0;
    for (int j = 0; j < N; ++j) {
      for (int p = S::kOuter[j]; p < S::kOuter[j + 1]; ++p) {
        const int i = S::kInner[p];
        const double v = std::fabs(a[p]);
        row_size_[i] = SparseFront::max2(row_size_[i], v);
        row_size_[j] = SparseFront::max2(row_size_[j], v);
        if (i == j) terms_[j] = v;
      }
    }
  }

  // v <- A^-1 v with the factors: forwards through the fronts (L and D), then backwards (L').
  void substitute(double* b) {
    for (int s = 0; s < S::kFronts; ++s) {
      const FrontRecord& r = front_[s];
      const int* unknown = unknown_ + r.unknown;
      for (int q = 0; q < r.size; ++q) v_[q] = b[unknown[q]];
      SparseFront::forward(factor_ + r.factor, r.size, kind_ + r.pivot, r.pivots, r.size, v_);
      for (int q = 0; q < r.size; ++q) b[unknown[q]] = v_[q];
    }
    for (int s = S::kFronts - 1; s >= 0; --s) {
      const FrontRecord& r = front_[s];
      const int* unknown = unknown_ + r.unknown;
      for (int q = 0; q < r.size; ++q) v_[q] = b[unknown[q]];
      SparseFront::backward(factor_ + r.factor, r.size, kind_ + r.pivot, r.pivots, r.size, v_);
      for (int q = 0; q < r.pivots; ++q) b[unknown[q]] = v_[q];
    }
  }
};

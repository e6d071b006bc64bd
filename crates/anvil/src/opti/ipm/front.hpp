// Partial LDL' of one dense symmetric front with threshold pivoting: the kernel that the
// stage-wise (stage_ldl.hpp) and the general sparse (sparse_ldl.hpp) factorisations share.
//
// A front holds n unknowns, column-major, lower triangle: the first nf are fully summed
// (every entry of their rows is assembled, so they may be pivots), the rest receive the
// Schur complement. A 1x1 pivot must be at least `threshold` times the largest entry of its
// column, a 2x2 pivot must keep its multipliers below 1 / threshold (Duff and Reid's test,
// as MA57 and MUMPS apply it); a fully summed unknown that no such pivot can eliminate is
// left for the caller to delay to a later front, where more of its entries are summed. Where
// nothing can be delayed, Bunch and Kaufman's rule pivots what is left. A pivot that is
// cancellation's roundoff (at most zero_pivot times the absolute terms it was computed from:
// dense_ldl.hpp) counts as a zero eigenvalue and is decoupled.
//
// After factorisation, the pivot columns hold L below the diagonal and D on it (a 2x2 block
// in its two columns), and the trailing block the Schur complement passed on.
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>
#include <utility>

// The threshold a front's pivots must pass: it starts at Ipopt's for MUMPS (1e-6: few
// delays, the fill of the order) and rises, as Ipopt raises it (to the power 0.75), each time
// a solve is inaccurate or a pivot vanishes, to at most 0.01 (MA57's default).
class PivotThreshold {
 public:
  static constexpr double kFirst = 1e-6, kLast = 0.01;
  double value() const { return value_; }
  // A stabler threshold from now on; false if it is at its largest already.
  bool increase() {
    if (value_ >= kLast) return false;
    value_ = std::pow(value_, 0.75);
    if (value_ > kLast) value_ = kLast;
    return true;
  }
  void reset() { value_ = kFirst; }

 private:
  double value_ = kFirst;
};

// A front's pivot kinds, per position: 1 for a 1x1 pivot, 2 for the first column of a 2x2,
// 0 for its second.
enum PivotKind { kSecondOfTwo = 0, kOneByOne = 1, kTwoByTwo = 2 };

// The front at `f` with leading dimension `lda`. `unknown[q]`: the unknown at position q (an
// index into `terms` and `row_size`: per unknown, the absolute terms its diagonal was
// computed from so far, and the largest entry of its row of the assembled matrix). (A front
// whose sparsity is known at compile time has code of its own: compiled_front.hpp.)
class Front {
 public:
  Front(double* f, int lda, int* unknown, double* terms, const double* row_size, double threshold)
      : f_(f), lda_(lda), unknown_(unknown), terms_(terms), row_size_(row_size), threshold_(threshold) {}

  double& at(int i, int j) { return f_[j * lda() + i]; }
  double at(int i, int j) const { return f_[j * lda() + i]; }

  // Finds a pivot that passes the threshold test among the fully summed positions [t, nf)
  // and moves it to t (a 2x2 to t, t + 1); returns its size, 0 if there is none.
  int threshold_pivot(int t, int nf, int n, double zero_pivot) {
    // The usual case first: the diagonal at t itself, against its contiguous column.
    if (passes_in_place(t, n, zero_pivot)) return 1;
    for (int j = t; j < nf; ++j) {
      int r = -1, unused = -1;
      const double cj = column_max(j, t, nf, n, -1, &r);
      const double djj = std::fabs(at(j, j));
      if (djj > zero_pivot * terms_[unknown_[j]] && djj >= threshold_ * cj) {
        swap(t, j, n);
        return 1;
      }
      if (r < 0) continue;
      const double drr = std::fabs(at(r, r));
      if (drr > zero_pivot * terms_[unknown_[r]] && drr >= threshold_ * column_max(r, t, nf, n, -1, &unused)) {
        swap(t, r, n);
        return 1;
      }
      // The 2x2 pivot [a b; b c] on (j, r): its inverse times the largest other entries of
      // its columns bounds the multipliers.
      const double a = at(j, j), c = at(r, r), b = r > j ? at(r, j) : at(j, r);
      const double det = a * c - b * b;
      const double mj = column_max(j, t, nf, n, r, &unused), mr = column_max(r, t, nf, n, j, &unused);
      const double scale = max2(row_size_[unknown_[j]], row_size_[unknown_[r]]);
      const double bound = std::fabs(det) / threshold_;
      if (std::fabs(b) > zero_pivot * scale && std::fabs(det) > 1e-14 * (std::fabs(a * c) + b * b) &&
          std::fabs(c) * mj + std::fabs(b) * mr <= bound && std::fabs(b) * mj + std::fabs(a) * mr <= bound) {
        const int lo = j < r ? j : r, hi = j < r ? r : j;
        swap(t, lo, n);
        swap(t + 1, hi, n);
        return 2;
      }
    }
    return 0;
  }

  // Bunch and Kaufman's choice at position t among the fully summed [t, nf), where nothing
  // can be delayed; moves it to t and returns its size. A column whose entries are all
  // roundoff next to its rows' entries in the matrix (a singular matrix's) takes its diagonal,
  // a zero pivot, rather than a 2x2 pivot on roundoff.
  int forced_pivot(int t, int nf, int n, double zero_pivot) {
    const double alpha = 0.6403882032022076;
    int imax = t;
    double colmax = 0.0;
    for (int i = t + 1; i < nf; ++i) {
      if (std::fabs(at(i, t)) > colmax) {
        colmax = std::fabs(at(i, t));
        imax = i;
      }
    }
    const double akk = std::fabs(at(t, t));
    const double roundoff = zero_pivot * max2(row_size_[unknown_[t]], row_size_[unknown_[imax]]);
    if (akk >= alpha * colmax || !(colmax > roundoff)) return 1;
    double rowmax = 0.0;
    for (int i = t; i < nf; ++i) {
      if (i != imax) rowmax = max2(rowmax, std::fabs(i > imax ? at(i, imax) : at(imax, i)));
    }
    if (akk * rowmax >= alpha * colmax * colmax) return 1;
    if (std::fabs(at(imax, imax)) >= alpha * rowmax) {
      swap(t, imax, n);
      return 1;
    }
    swap(t + 1, imax, n);
    return 2;
  }

  // Eliminates the pivot at t (size 1 or 2) from the front's n positions.
  void eliminate(int t, int size, int n, double zero_pivot, Inertia* inertia) {
    if (size == 1) {
      const double d = at(t, t), tiny = zero_pivot * terms_[unknown_[t]];
      if (!(std::fabs(d) > tiny)) {
        // A zero pivot: singular. Its column is decoupled so that the rest factorises.
        ++inertia->zero;
        at(t, t) = tiny > 0.0 ? tiny : 1.0;
        for (int i = t + 1; i < n; ++i) at(i, t) = 0.0;
        return;
      }
      (d > 0.0 ? inertia->positive : inertia->negative) += 1;
      update_1x1(t, n, d);
      return;
    }
    const double d11 = at(t, t), d21 = at(t + 1, t), d22 = at(t + 1, t + 1);
    const double det = d11 * d22 - d21 * d21;
    if (det < 0.0) {
      inertia->positive += 1;
      inertia->negative += 1;
    } else {
      (d11 + d22 > 0.0 ? inertia->positive : inertia->negative) += 2;
    }
    // (One division per pivot: a division per entry was the elimination's latency.)
    const double inverse_det = 1.0 / det;
    const double* __restrict first = f_ + t * lda();
    const double* __restrict second = f_ + (t + 1) * lda();
    for (int j = t + 2; j < n; ++j) {
      const double ajt = first[j], ajt1 = second[j];
      const double l0 = (d22 * ajt - d21 * ajt1) * inverse_det;
      const double l1 = (d11 * ajt1 - d21 * ajt) * inverse_det;
      double* __restrict column = f_ + j * lda();
      for (int i = j; i < n; ++i) column[i] -= first[i] * l0 + second[i] * l1;
      terms_[unknown_[j]] += std::fabs(ajt * l0) + std::fabs(ajt1 * l1);
    }
    for (int i = t + 2; i < n; ++i) {
      const double ait = at(i, t), ait1 = at(i, t + 1);
      at(i, t) = (d22 * ait - d21 * ait1) * inverse_det;
      at(i, t + 1) = (d11 * ait1 - d21 * ait) * inverse_det;
    }
  }

  // Pivots the fully summed [first, nf) of the front's n positions (those before `first`
  // pivoted in place already, as this would have), recording each pivot's kind in `kind`;
  // stops at the first position where no pivot passes the threshold test if
  // `can_delay(left)` allows the `left` positions still unpivoted to be delayed, else pivots
  // them by Bunch and Kaufman. Returns the number pivoted.
  template <class CanDelay>
  int factorize(int nf, int n, double zero_pivot, int* kind, Inertia* inertia, CanDelay can_delay, int first = 0) {
    int t = first;
    while (t < nf) {
      int size = threshold_pivot(t, nf, n, zero_pivot);
      if (size == 0) {
        if (can_delay(nf - t)) break;
        size = forced_pivot(t, nf, n, zero_pivot);
      }
      eliminate(t, size, n, zero_pivot, inertia);
      kind[t] = size == 2 ? kTwoByTwo : kOneByOne;
      if (size == 2) kind[t + 1] = kSecondOfTwo;
      t += size;
    }
    return t;
  }

  // v <- (L D)^-1 v with the factorised front at f (leading dimension lda; p pivots of kinds
  // `kind`; v: the front's n values), or with its pivots from `first` on only (those before
  // pivoted by other code, whose substitution comes before).
  static void forward(const double* f, int lda, const int* kind, int p, int n, double* v, int first = 0) {
    for (int t = first; t < p; t += kind[t] == kTwoByTwo ? 2 : 1) {
      if (kind[t] == kOneByOne) {
        const double vt = v[t];
        for (int i = t + 1; i < n; ++i) v[i] -= entry(f, lda, i, t) * vt;
        v[t] = vt / entry(f, lda, t, t);
      } else {
        const double v0 = v[t], v1 = v[t + 1];
        for (int i = t + 2; i < n; ++i) v[i] -= entry(f, lda, i, t) * v0 + entry(f, lda, i, t + 1) * v1;
        const double d11 = entry(f, lda, t, t), d21 = entry(f, lda, t + 1, t), d22 = entry(f, lda, t + 1, t + 1);
        const double det = d11 * d22 - d21 * d21;
        v[t] = (d22 * v0 - d21 * v1) / det;
        v[t + 1] = (d11 * v1 - d21 * v0) / det;
      }
    }
  }

  // v <- L'^-1 v with the factorised front at f: from the last position down, each v_i, once
  // final, is taken out of the pivots' v_t (t < i) through row i of L. The updates of one
  // row are independent of each other, where a dot product per pivot would be one chain of
  // dependent additions (the solve's latency). A 2x2 pivot's second column holds D's
  // off-diagonal in its first column's row: no L entry.
  // (With `first`: the pivots from `first` on only, whose substitution comes before the
  // others'.)
  static void backward(const double* f, int lda, const int* kind, int p, int n, double* v, int first = 0) {
    for (int i = n - 1; i > first; --i) {
      const int last = i >= p ? p : kind[i] == kSecondOfTwo ? i - 1 : i;
      const double vi = v[i];
      const double* row = f + i;
      for (int t = first; t < last; ++t) v[t] -= row[t * lda] * vi;
    }
  }
  static double max2(double u, double v) { return u > v ? u : v; }
  // The largest |v[i]|, i < count, in four independent chains (a single chain of maxima is
  // latency-bound, and the compiler may not reorder it).
  static double abs_max(const double* v, int count) {
    double m0 = 0.0, m1 = 0.0, m2 = 0.0, m3 = 0.0;
    int i = 0;
    for (; i + 4 <= count; i += 4) {
      m0 = max2(m0, std::fabs(v[i]));
      m1 = max2(m1, std::fabs(v[i + 1]));
      m2 = max2(m2, std::fabs(v[i + 2]));
      m3 = max2(m3, std::fabs(v[i + 3]));
    }
    for (; i < count; ++i) m0 = max2(m0, std::fabs(v[i]));
    return max2(max2(m0, m1), max2(m2, m3));
  }

 private:
  double* f_;
  int lda_;
  int* unknown_;
  double* terms_;
  const double* row_size_;
  double threshold_;

  int lda() const { return lda_; }

  // Whether the diagonal at t of a front of n positions passes the zero and threshold tests
  // as it stands.
  bool passes_in_place(int t, int n, double zero_pivot) const {
    const double* column = f_ + t * lda();
    const double d = std::fabs(column[t]);
    return d > zero_pivot * terms_[unknown_[t]] && d >= threshold_ * abs_max(column + t + 1, n - t - 1);
  }

  // Eliminates the 1x1 pivot d at t from the front's n positions: the Schur complement's
  // update, then L's column.
  void update_1x1(int t, int n, double d) {
    const int lda = lda_;
    // (One division per pivot: a division per entry was the elimination's latency.)
    const double inverse = 1.0 / d;
    {
      // (The pivot column is only read in this block: its restrict ends before it is scaled.)
      const double* __restrict pivot = f_ + t * lda;
      for (int j = t + 1; j < n; ++j) {
        // Zero entries (most of a stage's) are skipped before the division, whose latency
        // the branch would otherwise wait for.
        if (pivot[j] == 0.0) continue;
        const double ljt = pivot[j] * inverse;
        if (ljt == 0.0) continue;
        double* __restrict column = f_ + j * lda;
        for (int i = j; i < n; ++i) column[i] -= pivot[i] * ljt;
        terms_[unknown_[j]] += std::fabs(pivot[j] * ljt);
      }
    }
    double* own = f_ + t * lda;
    for (int i = t + 1; i < n; ++i) own[i] *= inverse;
  }
  static double entry(const double* f, int lda, int i, int j) { return f[j * lda + i]; }

  // Column j's largest off-diagonal entry over the active rows [t, n) but `skip`, and the
  // fully summed row (below nf) of its largest entry.
  double column_max(int j, int t, int nf, int n, int skip, int* best_row) const {
    double largest = 0.0, best = 0.0;
    *best_row = -1;
    for (int i = t; i < n; ++i) {
      if (i == j || i == skip) continue;
      const double v = std::fabs(i > j ? at(i, j) : at(j, i));
      largest = max2(largest, v);
      if (i < nf && v > best) {
        best = v;
        *best_row = i;
      }
    }
    return largest;
  }

  // Symmetric interchange of positions p <= q of the front (n positions): rows of L already
  // computed move with them.
  void swap(int p, int q, int n) {
    if (p == q) return;
    const int u = unknown_[p];
    unknown_[p] = unknown_[q];
    unknown_[q] = u;
    exchange(at(p, p), at(q, q));
    for (int j = 0; j < p; ++j) exchange(at(p, j), at(q, j));
    for (int i = p + 1; i < q; ++i) exchange(at(i, p), at(q, i));
    for (int i = q + 1; i < n; ++i) exchange(at(i, p), at(i, q));
  }
  static void exchange(double& u, double& v) {
    const double t = u;
    u = v;
    v = t;
  }
};

// Symmetric indefinite LDL' of a KKT matrix with stage structure, and its inertia.
//
// A multistage problem orders its unknowns by stage: stage k owns its variables z_k and the
// constraint rows that act on z_k alone or that couple z_{k-1} with z_k (the dynamics that
// define x_k). Every entry then lies in a stage's own block or couples a stage's own unknowns
// with the previous stage's variables (its "link"), so the matrix is block tridiagonal and
// eliminating stage by stage, from the last to the first, fills only the link block: each
// stage is a dense front of its own unknowns (fully summed) and its link (updated).
//
// Inside a front the pivots are chosen for stability, as a multifrontal solver does: a 1x1
// pivot must be at least kThreshold times the largest entry of its column, a 2x2 pivot must
// keep its multipliers below 1 / kThreshold; own unknowns that no such pivot can eliminate
// are delayed to the previous stage's front (where more of their entries are summed). This
// is what makes terminal and point constraints work: rows that pin a state the dynamics
// already fix cannot be pivoted in their own stage, but can one or more stages earlier,
// where the controls reach them. The first stage pivots what is left, by Bunch and
// Kaufman's rule; a pivot that is cancellation's roundoff (at most zero_pivot times the
// absolute terms it was computed from: dense_ldl.hpp) counts as a zero eigenvalue.
//
// The inertia is the sum of the pivots' (Sylvester's law), which the interior-point method's
// inertia correction needs; a Riccati recursion over states and controls is the special case
// in which every front pairs the dynamics rows with the states they define. Solves refine
// against the assembled matrix.
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>

// Stages stages, each with at most Own own unknowns (its first Link of them the variables
// the next stage links to), at most MaxDelay unknowns delayed into a front, Size unknowns in
// all (the right-hand side's length).
template <int Stages, int Own, int Link, int MaxDelay, int Size>
class StageLdl {
 public:
  static constexpr int kFront = Own + MaxDelay + Link;
  static constexpr int kCols = Own + Link;
  static constexpr double kThreshold = 0.01;

  // The caller's assembly, before factorize(): each stage's own unknowns (count, and their
  // positions in the right-hand side) and entries. set_structure() once, then per matrix
  // clear() and add()/add_link().
  int count[Stages];
  int index[Stages * Own];

  void clear() {
    for (int k = 0; k < Stages * Own * kCols; ++k) a_[k] = 0.0;
  }
  // Own entries (r, c) and (c, r) of stage k.
  void add(int k, int r, int c, double v) {
    a_[(k * Own + r) * kCols + c] += v;
    if (r != c) a_[(k * Own + c) * kCols + r] += v;
  }
  // The entry between stage k's own unknown r and its link's c-th (stage k-1's own unknown c).
  void add_link(int k, int r, int c, double v) { a_[(k * Own + r) * kCols + Own + c] += v; }

  Inertia factorize(double zero_pivot) {
    Inertia inertia{0, 0, 0};
    for (int i = 0; i < Size; ++i) row_size_[i] = 0.0;
    for (int k = 0; k < Stages; ++k) {
      for (int c = 0; c < count[k]; ++c) terms_[index[k * Own + c]] = std::fabs(own(k, c, c));
    }
    int delayed = 0;
    for (int k = Stages - 1; k >= 0; --k) {
      measure_rows(k);
      delayed = factorize_stage(k, delayed, zero_pivot, &inertia);
    }
    return inertia;
  }

  // Solves A x = b in place (b becomes x), refined against the assembled matrix (refine());
  // returns the residual ratio reached.
  double solve(double* b) {
    double size_b = 0.0, size_a = 0.0;
    for (int i = 0; i < Size; ++i) {
      rhs_[i] = x_[i] = b[i];
      size_b = max2(size_b, std::fabs(b[i]));
      size_a = max2(size_a, row_size_[i]);
    }
    substitute(x_);
    const double ratio = refine(
        Size, size_a, size_b, x_, r_,
        [this](const double* x, double* r) {
          for (int i = 0; i < Size; ++i) r[i] = rhs_[i];
          subtract_product(x, r);
        },
        [this](double* r) { substitute(r); });
    for (int i = 0; i < Size; ++i) b[i] = x_[i];
    return ratio;
  }

 private:
  double a_[Stages * Own * kCols];
  // Each stage's front after factorize(): column-major, lower triangle: L below the diagonal
  // of its pivot columns, D on it, the Schur complement passed on in the trailing block.
  double front_[Stages * kFront * kFront];
  // Per front position: the unknown there (its position in b) and the pivot kind (1: 1x1,
  // 2: first column of a 2x2, 0: its second); per stage: front size and pivots.
  int unknown_[Stages * kFront];
  int block_[Stages * kFront];
  int size_[Stages], pivots_[Stages];
  double row_size_[Size > 0 ? Size : 1];
  // Per unknown, the sum of the absolute terms its diagonal was computed from so far.
  double terms_[Size > 0 ? Size : 1];
  double rhs_[Size > 0 ? Size : 1], x_[Size > 0 ? Size : 1], r_[Size > 0 ? Size : 1];
  double v_[kFront];

  double own(int k, int r, int c) const { return a_[(k * Own + r) * kCols + c]; }
  double link(int k, int r, int c) const { return a_[(k * Own + r) * kCols + Own + c]; }
  static double* front(double* f, int k) { return f + k * kFront * kFront; }
  static double& at(double* f, int i, int j) { return f[j * kFront + i]; }
  static double at(const double* f, int i, int j) { return f[j * kFront + i]; }
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

  // The largest entry of each row of the assembled matrix (what "zero" is relative to): its
  // own and link entries; the next stage's link entries in the row were added when that
  // stage was assembled (stages are assembled from the last).
  void measure_rows(int k) {
    for (int r = 0; r < count[k]; ++r) {
      const double* row = a_ + (k * Own + r) * kCols;
      double size = max2(row_size_[index[k * Own + r]], abs_max(row, count[k]));
      for (int c = 0; c < Link && k > 0; ++c) {
        const double v = std::fabs(row[Own + c]);
        size = max2(size, v);
        double& other = row_size_[index[(k - 1) * Own + c]];
        other = max2(other, v);
      }
      row_size_[index[k * Own + r]] = size;
    }
  }

  // Assembles stage k's front: [own | delayed from stage k + 1 | link], the next stage's
  // Schur complement added; factorises it partially. Returns the unknowns it delays.
  int factorize_stage(int k, int delayed, double zero_pivot, Inertia* inertia) {
    double* f = front(front_, k);
    int* unknown = unknown_ + k * kFront;
    const int m = count[k], link_size = k > 0 ? Link : 0;
    const int nf = m + delayed, n = nf + link_size;
    // The own columns are copied whole (own rows, then zeros for the delayed, then the link);
    // the delayed and link columns start at zero.
    for (int c = 0; c < m; ++c) {
      unknown[c] = index[k * Own + c];
      double* column = f + c * kFront;
      for (int r = c; r < m; ++r) column[r] = own(k, r, c);
      for (int r = m; r < nf; ++r) column[r] = 0.0;
      for (int r = 0; r < link_size; ++r) column[nf + r] = link(k, c, r);
    }
    for (int j = m; j < n; ++j) {
      for (int i = j; i < n; ++i) at(f, i, j) = 0.0;
    }
    for (int c = 0; c < link_size; ++c) unknown[nf + c] = index[(k - 1) * Own + c];
    if (k + 1 < Stages) {
      // The next stage's trailing block: its delayed unknowns, then its link (our first Link).
      const double* g = front(front_, k + 1);
      const int p = pivots_[k + 1], n1 = size_[k + 1], nf1 = n1 - Link;
      const auto place = [&](int q) { return q < nf1 ? m + (q - p) : q - nf1; };
      for (int q = p; q < nf1; ++q) unknown[place(q)] = unknown_[(k + 1) * kFront + q];
      for (int q2 = p; q2 < n1; ++q2) {
        for (int q1 = q2; q1 < n1; ++q1) {
          const int i = place(q1), j = place(q2);
          at(f, i > j ? i : j, i > j ? j : i) += at(g, q1, q2);
        }
      }
    }
    size_[k] = n;
    int* block = block_ + k * kFront;
    int t = 0;
    while (t < nf) {
      int size = threshold_pivot(f, unknown, t, nf, n, zero_pivot);
      if (size == 0) {
        // Nothing here is a stable pivot: delay the rest, unless this is the first stage or
        // the next front has no room.
        if (link_size > 0 && nf - t <= MaxDelay) break;
        size = forced_pivot(f, unknown, t, nf, n);
      }
      eliminate(f, unknown, t, size, n, zero_pivot, inertia);
      block[t] = size;
      if (size == 2) block[t + 1] = 0;
      t += size;
    }
    pivots_[k] = t;
    return nf - t;
  }

  // Column j's largest off-diagonal entry over the active rows [t, n) but `skip`, and the
  // fully summed row (below nf) of its largest entry.
  static double column_max(const double* f, int j, int t, int nf, int n, int skip, int* best_row) {
    double largest = 0.0, best = 0.0;
    *best_row = -1;
    for (int i = t; i < n; ++i) {
      if (i == j || i == skip) continue;
      const double v = std::fabs(i > j ? at(f, i, j) : at(f, j, i));
      largest = max2(largest, v);
      if (i < nf && v > best) {
        best = v;
        *best_row = i;
      }
    }
    return largest;
  }

  // Finds a pivot that passes the threshold test among the fully summed positions [t, nf)
  // and moves it to t (a 2x2 to t, t + 1); returns its size, 0 if there is none.
  int threshold_pivot(double* f, int* unknown, int t, int nf, int n, double zero_pivot) {
    {
      // The usual case first: the diagonal at t itself, against its contiguous column.
      const double* column = f + t * kFront;
      const double d = std::fabs(column[t]);
      if (d > zero_pivot * terms_[unknown[t]] && d >= kThreshold * abs_max(column + t + 1, n - t - 1)) return 1;
    }
    for (int j = t; j < nf; ++j) {
      int r = -1, unused = -1;
      const double cj = column_max(f, j, t, nf, n, -1, &r);
      const double djj = std::fabs(at(f, j, j));
      if (djj > zero_pivot * terms_[unknown[j]] && djj >= kThreshold * cj) {
        swap(f, unknown, t, j, n);
        return 1;
      }
      if (r < 0) continue;
      const double drr = std::fabs(at(f, r, r));
      if (drr > zero_pivot * terms_[unknown[r]] && drr >= kThreshold * column_max(f, r, t, nf, n, -1, &unused)) {
        swap(f, unknown, t, r, n);
        return 1;
      }
      // The 2x2 pivot [a b; b c] on (j, r): its inverse times the largest other entries of
      // its columns bounds the multipliers.
      const double a = at(f, j, j), c = at(f, r, r), b = r > j ? at(f, r, j) : at(f, j, r);
      const double det = a * c - b * b;
      const double mj = column_max(f, j, t, nf, n, r, &unused), mr = column_max(f, r, t, nf, n, j, &unused);
      const double scale = max2(row_size_[unknown[j]], row_size_[unknown[r]]);
      const double bound = std::fabs(det) / kThreshold;
      if (std::fabs(b) > zero_pivot * scale && std::fabs(det) > 1e-14 * (std::fabs(a * c) + b * b) &&
          std::fabs(c) * mj + std::fabs(b) * mr <= bound && std::fabs(b) * mj + std::fabs(a) * mr <= bound) {
        const int lo = j < r ? j : r, hi = j < r ? r : j;
        swap(f, unknown, t, lo, n);
        swap(f, unknown, t + 1, hi, n);
        return 2;
      }
    }
    return 0;
  }

  // Bunch and Kaufman's choice at position t among the fully summed [t, nf), where nothing
  // can be delayed (the first stage, or a front whose delayed unknowns would not fit the
  // next); moves it to t and returns its size.
  int forced_pivot(double* f, int* unknown, int t, int nf, int n) {
    const double alpha = 0.6403882032022076;
    int imax = t;
    double colmax = 0.0;
    for (int i = t + 1; i < nf; ++i) {
      if (std::fabs(at(f, i, t)) > colmax) {
        colmax = std::fabs(at(f, i, t));
        imax = i;
      }
    }
    const double akk = std::fabs(at(f, t, t));
    if (akk >= alpha * colmax || colmax == 0.0) return 1;
    double rowmax = 0.0;
    for (int i = t; i < nf; ++i) {
      if (i != imax) rowmax = max2(rowmax, std::fabs(i > imax ? at(f, i, imax) : at(f, imax, i)));
    }
    if (akk * rowmax >= alpha * colmax * colmax) return 1;
    if (std::fabs(at(f, imax, imax)) >= alpha * rowmax) {
      swap(f, unknown, t, imax, n);
      return 1;
    }
    swap(f, unknown, t + 1, imax, n);
    return 2;
  }

  // Symmetric interchange of positions p <= q of the front (n positions): rows of L already
  // computed move with them.
  void swap(double* f, int* unknown, int p, int q, int n) {
    if (p == q) return;
    const int u = unknown[p];
    unknown[p] = unknown[q];
    unknown[q] = u;
    exchange(at(f, p, p), at(f, q, q));
    for (int j = 0; j < p; ++j) exchange(at(f, p, j), at(f, q, j));
    for (int i = p + 1; i < q; ++i) exchange(at(f, i, p), at(f, q, i));
    for (int i = q + 1; i < n; ++i) exchange(at(f, i, p), at(f, i, q));
  }
  static void exchange(double& u, double& v) {
    const double t = u;
    u = v;
    v = t;
  }

  // Eliminates the pivot at t (size 1 or 2) from the front's n positions.
  void eliminate(double* f, const int* unknown, int t, int size, int n, double zero_pivot, Inertia* inertia) {
    if (size == 1) {
      const double d = at(f, t, t), tiny = zero_pivot * terms_[unknown[t]];
      if (!(std::fabs(d) > tiny)) {
        // A zero pivot: singular. Its column is decoupled so that the rest factorises.
        ++inertia->zero;
        at(f, t, t) = tiny > 0.0 ? tiny : 1.0;
        for (int i = t + 1; i < n; ++i) at(f, i, t) = 0.0;
        return;
      }
      (d > 0.0 ? inertia->positive : inertia->negative) += 1;
      const double* __restrict pivot = f + t * kFront;
      for (int j = t + 1; j < n; ++j) {
        const double ljt = pivot[j] / d;
        if (ljt == 0.0) continue;
        double* __restrict column = f + j * kFront;
        for (int i = j; i < n; ++i) column[i] -= pivot[i] * ljt;
        terms_[unknown[j]] += std::fabs(pivot[j] * ljt);
      }
      const double inverse = 1.0 / d;
      for (int i = t + 1; i < n; ++i) at(f, i, t) *= inverse;
      return;
    }
    const double d11 = at(f, t, t), d21 = at(f, t + 1, t), d22 = at(f, t + 1, t + 1);
    const double det = d11 * d22 - d21 * d21;
    if (det < 0.0) {
      inertia->positive += 1;
      inertia->negative += 1;
    } else {
      (d11 + d22 > 0.0 ? inertia->positive : inertia->negative) += 2;
    }
    const double* __restrict first = f + t * kFront;
    const double* __restrict second = f + (t + 1) * kFront;
    for (int j = t + 2; j < n; ++j) {
      const double ajt = first[j], ajt1 = second[j];
      const double l0 = (d22 * ajt - d21 * ajt1) / det;
      const double l1 = (d11 * ajt1 - d21 * ajt) / det;
      double* __restrict column = f + j * kFront;
      for (int i = j; i < n; ++i) column[i] -= first[i] * l0 + second[i] * l1;
      terms_[unknown[j]] += std::fabs(ajt * l0) + std::fabs(ajt1 * l1);
    }
    for (int i = t + 2; i < n; ++i) {
      const double ait = at(f, i, t), ait1 = at(f, i, t + 1);
      at(f, i, t) = (d22 * ait - d21 * ait1) / det;
      at(f, i, t + 1) = (d11 * ait1 - d21 * ait) / det;
    }
  }

  // v <- A^-1 v with the factors: forwards through the stages in elimination order (L and
  // D), then backwards (L').
  void substitute(double* b) {
    for (int k = Stages - 1; k >= 0; --k) {
      const double* f = front(front_, k);
      const int* unknown = unknown_ + k * kFront;
      const int* block = block_ + k * kFront;
      const int n = size_[k], p = pivots_[k];
      for (int q = 0; q < n; ++q) v_[q] = b[unknown[q]];
      for (int t = 0; t < p; t += block[t] == 2 ? 2 : 1) {
        if (block[t] == 1) {
          const double vt = v_[t];
          for (int i = t + 1; i < n; ++i) v_[i] -= at(f, i, t) * vt;
          v_[t] = vt / at(f, t, t);
        } else {
          const double v0 = v_[t], v1 = v_[t + 1];
          for (int i = t + 2; i < n; ++i) v_[i] -= at(f, i, t) * v0 + at(f, i, t + 1) * v1;
          const double d11 = at(f, t, t), d21 = at(f, t + 1, t), d22 = at(f, t + 1, t + 1);
          const double det = d11 * d22 - d21 * d21;
          v_[t] = (d22 * v0 - d21 * v1) / det;
          v_[t + 1] = (d11 * v1 - d21 * v0) / det;
        }
      }
      for (int q = 0; q < n; ++q) b[unknown[q]] = v_[q];
    }
    for (int k = 0; k < Stages; ++k) {
      const double* f = front(front_, k);
      const int* unknown = unknown_ + k * kFront;
      const int* block = block_ + k * kFront;
      const int n = size_[k], p = pivots_[k];
      for (int q = 0; q < n; ++q) v_[q] = b[unknown[q]];
      for (int t = p - 1; t >= 0; --t) {
        if (block[t] == 0) continue;  // the second column of a 2x2: done with its first
        const bool two = block[t] == 2;
        double s0 = 0.0, s1 = 0.0;
        for (int i = t + (two ? 2 : 1); i < n; ++i) {
          s0 += at(f, i, t) * v_[i];
          if (two) s1 += at(f, i, t + 1) * v_[i];
        }
        v_[t] -= s0;
        if (two) v_[t + 1] -= s1;
      }
      for (int q = 0; q < p; ++q) b[unknown[q]] = v_[q];
    }
  }

  // out -= A x with the assembled matrix.
  void subtract_product(const double* x, double* out) const {
    for (int k = 0; k < Stages; ++k) {
      const int* idx = index + k * Own;
      for (int r = 0; r < count[k]; ++r) {
        double s = 0.0;
        for (int c = 0; c < count[k]; ++c) s += own(k, r, c) * x[idx[c]];
        for (int c = 0; c < Link && k > 0; ++c) {
          const double v = link(k, r, c);
          s += v * x[index[(k - 1) * Own + c]];
          out[index[(k - 1) * Own + c]] -= v * x[idx[r]];
        }
        out[idx[r]] -= s;
      }
    }
  }
};

// A front whose sparsity is known when the module is compiled, factorised and solved with
// code for exactly its nonzeros: the usual stage's front of a multistage KKT matrix
// (stage_ldl.hpp), whose variables meet few of its rows, whose rows meet few of the
// previous stage's variables, and whose variables meet those not at all unless the Hessian
// couples stages.
//
// The pattern is a type: `kSize` positions, the first `kPivots` of them pivoted,
// `kEntries[i * kSize + j]` (i >= j) whether entry (i, j) of the assembled front may be
// nonzero, and optionally `kPartner[kPivots]`: for a variable, the row that defines it (a
// later position), or -1. The elimination takes the positions in order, each with its
// partner as a 2x2 pivot [p b; b c], b the dynamics' coefficient: a Riccati recursion's
// order, in which a state without curvature of its own (a position or a velocity whose
// cost-to-go is zero) meets the row of its dynamics instead of failing as a 1x1 pivot. The
// fill of that order is derived when the module is compiled, and the multiples of
// structural zeros are never computed.
//
// Every pivot passes Front's test (front.hpp): a 1x1 pivot where it stands, a 2x2 pivot
// Duff and Reid's. A front without partners is Front's elimination, the same operations in
// the same order (the factors and the inertia are the same, bit for bit); where a pivot
// fails, it stops, with the front as Front leaves it after the same steps, so that Front
// goes on from there. Where a pivot of a reordered front fails after others, the front is
// Front's to factorise again from its assembly. A pattern with kSize 0 compiles nothing
// (NoCompiledFront).
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>
#include <type_traits>
#include <utility>

// No front compiled for its pattern. (Unused in a module without a multistage solver.)
struct NoCompiledFront {
  [[maybe_unused]] static constexpr int kSize = 0;
  [[maybe_unused]] static constexpr int kPivots = 0;
  [[maybe_unused]] static constexpr bool kEntries[1] = {false};
};

// A pattern's partners (none where it lists none).
template <class Pattern, class = void>
struct PartnersOf {
  static constexpr int of(int) { return -1; }
};
template <class Pattern>
struct PartnersOf<Pattern, std::void_t<decltype(Pattern::kPartner)>> {
  static constexpr int of(int p) { return Pattern::kPartner[p]; }
};

// Pattern's front without its partners: its positions pivoted in place, in order.
template <class Pattern>
struct InPlace {
  static constexpr int kSize = Pattern::kSize, kPivots = Pattern::kPivots;
  static constexpr const auto& kEntries = Pattern::kEntries;
};

template <class Pattern>
class CompiledFront {
 public:
  static constexpr int kSize = Pattern::kSize, kPivots = Pattern::kPivots;
  // The widest front compiled (its fill, computed at compile time, grows with the cube).
  static constexpr int kMaxSize = 64;
  // What factorize() returns where a reordered front's pivot fails.
  static constexpr int kAgain = -1;

 private:
  static constexpr bool kSmall = kSize > 0 && kSize <= kMaxSize && kPivots > 0 && kPivots <= kSize;
  static constexpr int N = kSmall ? kSize : 1, P = kSmall ? kPivots : 1;

  // Where a front's positions lie: the pattern's, or (Border) with `count` unknowns delayed
  // into it from the next stage's front between the pattern's pivots and the rest: rows no
  // control reaches yet, handed from stage to stage (terminal rows, or a minimum-time
  // problem's terminal row near its optimum, which only the final time moves). They hold part
  // of the next front's Schur complement, so they may meet every position; the compiled steps
  // update them by loops over their count (code of one size for any count), and Front pivots
  // them after the pattern's pivots, or delays them again.
  struct NoBorder {
    static constexpr int count = 0;
  };
  struct Border {
    int count;
  };
  // Position q's place in the front, and the front's leading dimension (its size).
  template <class B>
  static constexpr int place(const B& b, int q) {
    return q < kPivots ? q : q + b.count;
  }
  template <class B>
  static constexpr int lda(const B& b) {
    return kSize + b.count;
  }

  // The elimination's steps, each a position (`first`) and its partner (`second`, -1 for
  // none), and the filled pattern: `below`, the positions left that meet the step's pivot
  // when it is eliminated, in ascending order. `in_place`: the leading steps that pivot
  // their own position (step t at position t), after which the front is Front's.
  struct Structure {
    int steps, in_place;
    int first[P], second[P];
    int below[P][N], below_count[P];
    long work;
    bool valid;
  };
  static constexpr int partner(int p) { return PartnersOf<Pattern>::of(p); }
  static constexpr Structure structure() {
    Structure s{};
    s.valid = true;
    bool nonzero[N][N] = {};
    for (int i = 0; i < kSize; ++i) {
      for (int j = 0; j <= i; ++j) nonzero[i][j] = nonzero[j][i] = Pattern::kEntries[i * kSize + j];
    }
    bool gone[N] = {};
    for (int p = 0; p < kPivots; ++p) {
      if (gone[p]) continue;
      int q = partner(p);
      if (q >= 0 && !(q > p && q < kPivots && !gone[q] && nonzero[q][p] && partner(q) < 0)) {
        s.valid = false;
        q = -1;
      }
      const int t = s.steps++;
      s.first[t] = p;
      s.second[t] = q;
      gone[p] = true;
      if (q >= 0) gone[q] = true;
      // The positions left that meet the pivot, ascending; their pairs then meet.
      int* list = s.below[t];
      int count = 0;
      for (int i = 0; i < kSize; ++i) {
        if (!gone[i] && (nonzero[i][p] || (q >= 0 && nonzero[i][q]))) list[count++] = i;
      }
      for (int a = 0; a < count; ++a) {
        for (int b = 0; b < count; ++b) nonzero[list[a]][list[b]] = true;
      }
      s.below_count[t] = count;
      s.work += static_cast<long>(count) * (count + 1) / 2 * (q >= 0 ? 2 : 1);
      if (s.in_place == t && p == t && q < 0) ++s.in_place;
    }
    return s;
  }
  static constexpr Structure kStructure = kSmall ? structure() : Structure{};
  static_assert(!kSmall || kStructure.valid,
                "a partner must be a later pivot that meets its variable and has no partner of its own");

  // Entry (i, j) of the lower triangle (column-major), i and j the pattern's positions.
  template <class B>
  static constexpr int slot(const B& b, int i, int j) {
    const int pi = place(b, i), pj = place(b, j);
    return pi > pj ? pj * lda(b) + pi : pi * lda(b) + pj;
  }
  // The border's entry r of column j (a pattern's position before it, or the border's own
  // column kPivots + c): the border lies after every pivot, before the rest.
  template <class B>
  static int border_slot(const B& b, int r, int column) {
    return column * lda(b) + kPivots + r;
  }
  // The positions step S's pivot meets, and how many of them are pivots (before the border).
  template <int S>
  static constexpr int at(int a) { return kStructure.below[S][a]; }
  template <int S>
  static constexpr int count() { return kStructure.below_count[S]; }
  template <int S>
  static constexpr int count_before_border() {
    int c = 0;
    for (int a = 0; a < count<S>(); ++a) c += at<S>(a) < kPivots ? 1 : 0;
    return c;
  }

 public:
  // Whether the pattern is compiled: a front at all, and one whose elimination is small
  // enough to be straight-line code (the operations' count bounds the code's size).
  static constexpr bool kCompiled = kSmall && kStructure.work <= 6000;
  // Whether any position is pivoted with its partner (the front reordered); the elimination's
  // multiply-adds (its code's size).
  static constexpr bool kReordered = kStructure.in_place < kStructure.steps;
  static constexpr long kWork = kStructure.work;

  // Eliminates the pivots of the front at f (column-major, leading dimension kSize) in
  // place, step by step, while they pass Front's tests; records each position's pivot kind
  // (front.hpp) in `kind`. Returns kPivots if all did; else, where the front is Front's
  // after the in-place pivots before the failing one, their number; else kAgain.
  // `unknown`, `terms`, `row_size`: as Front's.
  static int factorize(double* f, const int* unknown, double* terms, const double* row_size, double threshold,
                       double zero_pivot, int* kind, Inertia* inertia) {
    return steps(Scope<NoBorder>{NoBorder{}, f, unknown, terms, row_size, threshold, zero_pivot, kind, inertia},
                 std::make_integer_sequence<int, P>{});
  }
  // The same for the front with `delayed` unknowns received between the pattern's pivots and
  // the rest (leading dimension kSize + delayed), which it updates but does not pivot.
  static int factorize_bordered(int delayed, double* f, const int* unknown, double* terms, const double* row_size,
                                double threshold, double zero_pivot, int* kind, Inertia* inertia) {
    return steps(Scope<Border>{Border{delayed}, f, unknown, terms, row_size, threshold, zero_pivot, kind, inertia},
                 std::make_integer_sequence<int, P>{});
  }

  // Front::forward() and Front::backward() for a front that factorize() pivoted whole (its
  // pivots only, with factorize_bordered()'s `delayed`).
  static void forward(const double* f, double* v) { forward_steps(NoBorder{}, f, v, std::make_integer_sequence<int, P>{}); }
  static void backward(const double* f, double* v) { backward_steps(NoBorder{}, f, v, std::make_integer_sequence<int, P>{}); }
  static void forward_bordered(int delayed, const double* f, double* v) {
    forward_steps(Border{delayed}, f, v, std::make_integer_sequence<int, P>{});
  }
  static void backward_bordered(int delayed, const double* f, double* v) {
    backward_steps(Border{delayed}, f, v, std::make_integer_sequence<int, P>{});
  }

 private:
  template <class B>
  struct Scope {
    B border;
    double* f;
    const int* unknown;
    double* terms;
    const double* row_size;
    double threshold, zero_pivot;
    int* kind;
    Inertia* inertia;
  };

  // A step's tests come before it changes the front: where one fails, the front is as the
  // steps before it left it.
  template <class B, int... S>
  static int steps(const Scope<B>& s, std::integer_sequence<int, S...>) {
    int done = 0;
    ((done == S && step<S>(s) ? ++done : 0), ...);
    if (done == kStructure.steps) return kPivots;
    return done <= kStructure.in_place ? done : kAgain;
  }

  // One step: its position as a 1x1 pivot, or with its partner as a 2x2 pivot.
  template <int S, class B>
  static bool step(const Scope<B>& s) {
    if constexpr (S >= kStructure.steps) {
      return false;
    } else {
      constexpr int p = kStructure.first[S], q = kStructure.second[S];
      if constexpr (q < 0) {
        return single<S, p>(s, std::make_integer_sequence<int, count<S>()>{});
      } else {
        return pair<S, p, q>(s, std::make_integer_sequence<int, count<S>()>{});
      }
    }
  }

  // The largest |entry| of the border in column `column`.
  template <class B>
  static double border_max(const B& b, const double* f, int column) {
    double largest = 0.0;
    for (int r = 0; r < b.count; ++r) largest = Front::max2(largest, std::fabs(f[border_slot(b, r, column)]));
    return largest;
  }

  // The 1x1 pivot at C (Front::passes_in_place(), then Front::update_1x1()).
  template <int S, int C, class B, int... A>
  static bool single(const Scope<B>& s, std::integer_sequence<int, A...>) {
    const B& b = s.border;
    double* f = s.f;
    const double d = f[slot(b, C, C)];
    const double size = std::fabs(d);
    double largest = border_max(b, f, C);
    ((largest = Front::max2(largest, std::fabs(f[slot(b, at<S>(A), C)]))), ...);
    if (!(size > s.zero_pivot * s.terms[s.unknown[C]] && size >= s.threshold * largest)) return false;
    (d > 0.0 ? s.inertia->positive : s.inertia->negative) += 1;
    s.kind[C] = kOneByOne;
    const double inverse = 1.0 / d;
    (update_column<S, C, A>(s, inverse, std::make_integer_sequence<int, count<S>() - A>{}), ...);
    if constexpr (!std::is_same_v<B, NoBorder>) update_border_1x1<S, C>(s, inverse);
    ((f[slot(b, at<S>(A), C)] *= inverse), ...);
    for (int r = 0; r < b.count; ++r) f[border_slot(b, r, C)] *= inverse;
    return true;
  }
  // Column j (a position C meets) less its multiple of C's: the rows C meets from j on, and
  // the border's where j is before it.
  template <int S, int C, int A, class B, int... R>
  static void update_column(const Scope<B>& s, double inverse, std::integer_sequence<int, R...>) {
    constexpr int j = at<S>(A);
    const B& b = s.border;
    double* f = s.f;
    const double ljt = f[slot(b, j, C)] * inverse;
    if (ljt == 0.0) return;
    ((f[slot(b, at<S>(A + R), j)] -= f[slot(b, at<S>(A + R), C)] * ljt), ...);
    if constexpr (j < kPivots) {
      for (int r = 0; r < b.count; ++r) f[border_slot(b, r, j)] -= f[border_slot(b, r, C)] * ljt;
    }
    s.terms[s.unknown[place(s.border, j)]] += std::fabs(f[slot(b, j, C)] * ljt);
  }
  // The border's columns less their multiples of C's: the border's rows from theirs on, and
  // the rows after the border that C meets.
  template <int S, int C, class B>
  static void update_border_1x1(const Scope<B>& s, double inverse) {
    constexpr int first_after = count_before_border<S>();
    const B& b = s.border;
    double* f = s.f;
    for (int c = 0; c < b.count; ++c) {
      const double lct = f[border_slot(b, c, C)] * inverse;
      if (lct == 0.0) continue;
      for (int r = c; r < b.count; ++r) f[border_slot(b, r, kPivots + c)] -= f[border_slot(b, r, C)] * lct;
      update_after_border<S, C>(s, c, lct, std::make_integer_sequence<int, count<S>() - first_after>{});
      s.terms[s.unknown[kPivots + c]] += std::fabs(f[border_slot(b, c, C)] * lct);
    }
  }
  template <int S, int C, class B, int... R>
  static void update_after_border(const Scope<B>& s, int c, [[maybe_unused]] double lct,
                                  std::integer_sequence<int, R...>) {
    constexpr int first_after = count_before_border<S>();
    const B& b = s.border;
    double* f = s.f;
    [[maybe_unused]] double* column = f + (kPivots + c) * lda(b);
    ((column[place(b, at<S>(first_after + R))] -= f[slot(b, at<S>(first_after + R), C)] * lct), ...);
  }

  // The 2x2 pivot on (p, q) over the pair's neighbours (Front::threshold_pivot()'s test,
  // then Front::eliminate()).
  template <int S, int p, int q, class B, int... A>
  static bool pair(const Scope<B>& s, std::integer_sequence<int, A...>) {
    const B& bd = s.border;
    double* f = s.f;
    const double a = f[slot(bd, p, p)], b = f[slot(bd, q, p)], c = f[slot(bd, q, q)];
    const double det = a * c - b * b;
    double mp = border_max(bd, f, p), mq = border_max(bd, f, q);
    ((mp = Front::max2(mp, std::fabs(f[slot(bd, at<S>(A), p)]))), ...);
    ((mq = Front::max2(mq, std::fabs(f[slot(bd, at<S>(A), q)]))), ...);
    const double scale = Front::max2(s.row_size[s.unknown[p]], s.row_size[s.unknown[q]]);
    const double bound = std::fabs(det) / s.threshold;
    if (!(std::fabs(b) > s.zero_pivot * scale && std::fabs(det) > 1e-14 * (std::fabs(a * c) + b * b) &&
          std::fabs(c) * mp + std::fabs(b) * mq <= bound && std::fabs(b) * mp + std::fabs(a) * mq <= bound)) {
      return false;
    }
    if (det < 0.0) {
      s.inertia->positive += 1;
      s.inertia->negative += 1;
    } else {
      (a + c > 0.0 ? s.inertia->positive : s.inertia->negative) += 2;
    }
    s.kind[p] = kTwoByTwo;
    s.kind[q] = kSecondOfTwo;
    const double inverse_det = 1.0 / det;
    (pair_column<S, p, q, A>(s, a, b, c, inverse_det, std::make_integer_sequence<int, count<S>() - A>{}), ...);
    if constexpr (!std::is_same_v<B, NoBorder>) update_border_2x2<S, p, q>(s, a, b, c, inverse_det);
    ((pair_multipliers(f, slot(bd, at<S>(A), p), slot(bd, at<S>(A), q), a, b, c, inverse_det)), ...);
    for (int r = 0; r < bd.count; ++r) {
      pair_multipliers(f, border_slot(bd, r, p), border_slot(bd, r, q), a, b, c, inverse_det);
    }
    return true;
  }
  template <int S, int p, int q, int A, class B, int... R>
  static void pair_column(const Scope<B>& s, double a, double b, double c, double inverse_det,
                          std::integer_sequence<int, R...>) {
    constexpr int j = at<S>(A);
    const B& bd = s.border;
    double* f = s.f;
    const double ajp = f[slot(bd, j, p)], ajq = f[slot(bd, j, q)];
    const double l0 = (c * ajp - b * ajq) * inverse_det;
    const double l1 = (a * ajq - b * ajp) * inverse_det;
    ((f[slot(bd, at<S>(A + R), j)] -= f[slot(bd, at<S>(A + R), p)] * l0 + f[slot(bd, at<S>(A + R), q)] * l1),
     ...);
    if constexpr (j < kPivots) {
      for (int r = 0; r < bd.count; ++r) {
        f[border_slot(bd, r, j)] -= f[border_slot(bd, r, p)] * l0 + f[border_slot(bd, r, q)] * l1;
      }
    }
    s.terms[s.unknown[place(s.border, j)]] += std::fabs(ajp * l0) + std::fabs(ajq * l1);
  }
  template <int S, int p, int q, class B>
  static void update_border_2x2(const Scope<B>& s, double a, double b, double c, double inverse_det) {
    constexpr int first_after = count_before_border<S>();
    const B& bd = s.border;
    double* f = s.f;
    for (int col = 0; col < bd.count; ++col) {
      const double ajp = f[border_slot(bd, col, p)], ajq = f[border_slot(bd, col, q)];
      const double l0 = (c * ajp - b * ajq) * inverse_det;
      const double l1 = (a * ajq - b * ajp) * inverse_det;
      for (int r = col; r < bd.count; ++r) {
        f[border_slot(bd, r, kPivots + col)] -= f[border_slot(bd, r, p)] * l0 + f[border_slot(bd, r, q)] * l1;
      }
      pair_after_border<S, p, q>(s, col, l0, l1, std::make_integer_sequence<int, count<S>() - first_after>{});
      s.terms[s.unknown[kPivots + col]] += std::fabs(ajp * l0) + std::fabs(ajq * l1);
    }
  }
  template <int S, int p, int q, class B, int... R>
  static void pair_after_border(const Scope<B>& s, int col, [[maybe_unused]] double l0, [[maybe_unused]] double l1,
                                std::integer_sequence<int, R...>) {
    constexpr int first_after = count_before_border<S>();
    const B& bd = s.border;
    double* f = s.f;
    [[maybe_unused]] double* column = f + (kPivots + col) * lda(bd);
    ((column[place(bd, at<S>(first_after + R))] -=
      f[slot(bd, at<S>(first_after + R), p)] * l0 + f[slot(bd, at<S>(first_after + R), q)] * l1),
     ...);
  }
  static void pair_multipliers(double* f, int ip, int iq, double a, double b, double c, double inverse_det) {
    const double aip = f[ip], aiq = f[iq];
    f[ip] = (c * aip - b * aiq) * inverse_det;
    f[iq] = (a * aiq - b * aip) * inverse_det;
  }

  template <class B, int... S>
  static void forward_steps(const B& b, const double* f, double* v, std::integer_sequence<int, S...>) {
    (forward_step<S>(b, f, v), ...);
  }
  template <int S, class B>
  static void forward_step([[maybe_unused]] const B& b, [[maybe_unused]] const double* f, [[maybe_unused]] double* v) {
    if constexpr (S < kStructure.steps) {
      constexpr int p = kStructure.first[S], q = kStructure.second[S];
      if constexpr (q < 0) {
        forward_single<S, p>(b, f, v, std::make_integer_sequence<int, count<S>()>{});
      } else {
        forward_pair<S, p, q>(b, f, v, std::make_integer_sequence<int, count<S>()>{});
      }
    }
  }
  // (v is indexed by the front's places: the border's values after the pivots'.)
  template <int S, int C, class B, int... A>
  static void forward_single(const B& b, const double* f, double* v, std::integer_sequence<int, A...>) {
    const double vc = v[C];
    ((v[place(b, at<S>(A))] -= f[slot(b, at<S>(A), C)] * vc), ...);
    for (int r = 0; r < b.count; ++r) v[kPivots + r] -= f[border_slot(b, r, C)] * vc;
    v[C] = vc / f[slot(b, C, C)];
  }
  template <int S, int p, int q, class B, int... A>
  static void forward_pair(const B& bd, const double* f, double* v, std::integer_sequence<int, A...>) {
    const double v0 = v[p], v1 = v[q];
    ((v[place(bd, at<S>(A))] -= f[slot(bd, at<S>(A), p)] * v0 + f[slot(bd, at<S>(A), q)] * v1), ...);
    for (int r = 0; r < bd.count; ++r) {
      v[kPivots + r] -= f[border_slot(bd, r, p)] * v0 + f[border_slot(bd, r, q)] * v1;
    }
    const double a = f[slot(bd, p, p)], b = f[slot(bd, q, p)], c = f[slot(bd, q, q)];
    const double det = a * c - b * b;
    v[p] = (c * v0 - b * v1) / det;
    v[q] = (a * v1 - b * v0) / det;
  }

  // From the last step back: each pivot's value, once the positions after it are final,
  // less its column's L times theirs, from the last place up (Front::backward()'s order for
  // each pivot: the rest's, the border's, then the later pivots').
  template <class B, int... S>
  static void backward_steps(const B& b, const double* f, double* v, std::integer_sequence<int, S...>) {
    (backward_step<P - 1 - S>(b, f, v), ...);
  }
  template <int S, class B>
  static void backward_step([[maybe_unused]] const B& b, [[maybe_unused]] const double* f, [[maybe_unused]] double* v) {
    if constexpr (S < kStructure.steps) {
      constexpr int p = kStructure.first[S], q = kStructure.second[S];
      backward_single<S, p>(b, f, v);
      if constexpr (q >= 0) backward_single<S, q>(b, f, v);
    }
  }
  template <int S, int C, class B>
  static void backward_single(const B& b, const double* f, double* v) {
    constexpr int before = count_before_border<S>();
    backward_part<S, C, before>(b, f, v, std::make_integer_sequence<int, count<S>() - before>{});
    for (int r = b.count - 1; r >= 0; --r) v[C] -= f[border_slot(b, r, C)] * v[kPivots + r];
    backward_part<S, C, 0>(b, f, v, std::make_integer_sequence<int, before>{});
  }
  // The positions step S meets from its `from`-th on, from the last down.
  template <int S, int C, int from, class B, int... A>
  static void backward_part([[maybe_unused]] const B& b, [[maybe_unused]] const double* f,
                            [[maybe_unused]] double* v, std::integer_sequence<int, A...>) {
    constexpr int n = sizeof...(A);
    ((v[C] -= f[slot(b, at<S>(from + n - 1 - A), C)] * v[place(b, at<S>(from + n - 1 - A))]), ...);
  }
};

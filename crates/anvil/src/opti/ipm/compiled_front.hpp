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

// Pattern's front with `Delayed` unknowns delayed into it from the next stage's front:
// positions between Pattern's pivots and the rest, not pivoted by the compiled code (Front
// pivots them after its pivots, or delays them again). They hold part of the next front's
// Schur complement, so they meet each other and the first `Variables` positions (the
// variables that front links to). (Rows no control reaches yet, handed from stage to stage:
// terminal rows, or a minimum-time problem's terminal row near its optimum, which only the
// final time moves.)
template <class Pattern, int Variables, int Delayed>
struct WithDelayed {
  static constexpr int kSize = Pattern::kSize + Delayed, kPivots = Pattern::kPivots;

 private:
  static constexpr bool delayed(int q) { return q >= kPivots && q < kPivots + Delayed; }
  // Pattern's position of a position not delayed.
  static constexpr int before(int q) { return q < kPivots ? q : q - Delayed; }
  struct Entries {
    bool v[kSize * kSize];
  };
  struct Partners {
    int v[kPivots > 0 ? kPivots : 1];
  };
  static constexpr Entries entries() {
    Entries e{};
    for (int i = 0; i < kSize; ++i) {
      for (int j = 0; j <= i; ++j) {
        const int other = delayed(i) ? j : i;
        e.v[i * kSize + j] = delayed(i) || delayed(j) ? delayed(other) || other < Variables
                                                      : Pattern::kEntries[before(i) * Pattern::kSize + before(j)];
      }
    }
    return e;
  }
  static constexpr Partners partners() {
    Partners p{};
    for (int q = 0; q < kPivots; ++q) p.v[q] = PartnersOf<Pattern>::of(q);
    return p;
  }
  static constexpr Entries kEntryTable = entries();
  static constexpr Partners kPartnerTable = partners();

 public:
  static constexpr const auto& kEntries = kEntryTable.v;
  static constexpr const auto& kPartner = kPartnerTable.v;
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

  // Entry (i, j) of the lower triangle (column-major, leading dimension N).
  static constexpr int slot(int i, int j) { return i > j ? j * N + i : i * N + j; }
  // The positions step S's pivot meets.
  template <int S>
  static constexpr int at(int a) { return kStructure.below[S][a]; }
  template <int S>
  static constexpr int count() { return kStructure.below_count[S]; }

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
    return steps(Scope{f, unknown, terms, row_size, threshold, zero_pivot, kind, inertia},
                 std::make_integer_sequence<int, P>{});
  }

  // Front::forward() and Front::backward() for a front that factorize() pivoted whole.
  static void forward(const double* f, double* v) { forward_steps(f, v, std::make_integer_sequence<int, P>{}); }
  static void backward(const double* f, double* v) { backward_steps(f, v, std::make_integer_sequence<int, P>{}); }

 private:
  struct Scope {
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
  template <int... S>
  static int steps(const Scope& s, std::integer_sequence<int, S...>) {
    int done = 0;
    ((done == S && step<S>(s) ? ++done : 0), ...);
    if (done == kStructure.steps) return kPivots;
    return done <= kStructure.in_place ? done : kAgain;
  }

  // One step: its position as a 1x1 pivot, or with its partner as a 2x2 pivot.
  template <int S>
  static bool step(const Scope& s) {
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

  // The 1x1 pivot at C (Front::passes_in_place(), then Front::update_1x1()).
  template <int S, int C, int... A>
  static bool single(const Scope& s, std::integer_sequence<int, A...>) {
    double* f = s.f;
    const double d = f[slot(C, C)];
    const double size = std::fabs(d);
    double largest = 0.0;
    ((largest = Front::max2(largest, std::fabs(f[slot(at<S>(A), C)]))), ...);
    if (!(size > s.zero_pivot * s.terms[s.unknown[C]] && size >= s.threshold * largest)) return false;
    (d > 0.0 ? s.inertia->positive : s.inertia->negative) += 1;
    s.kind[C] = kOneByOne;
    const double inverse = 1.0 / d;
    (update_column<S, C, A>(s, inverse, std::make_integer_sequence<int, count<S>() - A>{}), ...);
    ((f[slot(at<S>(A), C)] *= inverse), ...);
    return true;
  }
  template <int S, int C, int A, int... B>
  static void update_column(const Scope& s, double inverse, std::integer_sequence<int, B...>) {
    constexpr int j = at<S>(A);
    double* f = s.f;
    const double ljt = f[slot(j, C)] * inverse;
    if (ljt == 0.0) return;
    ((f[slot(at<S>(A + B), j)] -= f[slot(at<S>(A + B), C)] * ljt), ...);
    s.terms[s.unknown[j]] += std::fabs(f[slot(j, C)] * ljt);
  }

  // The 2x2 pivot on (p, q) over the pair's neighbours (Front::threshold_pivot()'s test,
  // then Front::eliminate()).
  template <int S, int p, int q, int... A>
  static bool pair(const Scope& s, std::integer_sequence<int, A...>) {
    double* f = s.f;
    const double a = f[slot(p, p)], b = f[slot(q, p)], c = f[slot(q, q)];
    const double det = a * c - b * b;
    double mp = 0.0, mq = 0.0;
    ((mp = Front::max2(mp, std::fabs(f[slot(at<S>(A), p)]))), ...);
    ((mq = Front::max2(mq, std::fabs(f[slot(at<S>(A), q)]))), ...);
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
    ((pair_multipliers<at<S>(A), p, q>(f, a, b, c, inverse_det)), ...);
    return true;
  }
  template <int S, int p, int q, int A, int... B>
  static void pair_column(const Scope& s, double a, double b, double c, double inverse_det,
                          std::integer_sequence<int, B...>) {
    constexpr int j = at<S>(A);
    double* f = s.f;
    const double ajp = f[slot(j, p)], ajq = f[slot(j, q)];
    const double l0 = (c * ajp - b * ajq) * inverse_det;
    const double l1 = (a * ajq - b * ajp) * inverse_det;
    ((f[slot(at<S>(A + B), j)] -= f[slot(at<S>(A + B), p)] * l0 + f[slot(at<S>(A + B), q)] * l1),
     ...);
    s.terms[s.unknown[j]] += std::fabs(ajp * l0) + std::fabs(ajq * l1);
  }
  template <int i, int p, int q>
  static void pair_multipliers(double* f, double a, double b, double c, double inverse_det) {
    const double aip = f[slot(i, p)], aiq = f[slot(i, q)];
    f[slot(i, p)] = (c * aip - b * aiq) * inverse_det;
    f[slot(i, q)] = (a * aiq - b * aip) * inverse_det;
  }

  template <int... S>
  static void forward_steps(const double* f, double* v, std::integer_sequence<int, S...>) {
    (forward_step<S>(f, v), ...);
  }
  template <int S>
  static void forward_step([[maybe_unused]] const double* f, [[maybe_unused]] double* v) {
    if constexpr (S < kStructure.steps) {
      constexpr int p = kStructure.first[S], q = kStructure.second[S];
      if constexpr (q < 0) {
        forward_single<S, p>(f, v, std::make_integer_sequence<int, count<S>()>{});
      } else {
        forward_pair<S, p, q>(f, v, std::make_integer_sequence<int, count<S>()>{});
      }
    }
  }
  template <int S, int C, int... A>
  static void forward_single(const double* f, double* v, std::integer_sequence<int, A...>) {
    const double vc = v[C];
    ((v[at<S>(A)] -= f[slot(at<S>(A), C)] * vc), ...);
    v[C] = vc / f[slot(C, C)];
  }
  template <int S, int p, int q, int... A>
  static void forward_pair(const double* f, double* v, std::integer_sequence<int, A...>) {
    const double v0 = v[p], v1 = v[q];
    ((v[at<S>(A)] -= f[slot(at<S>(A), p)] * v0 + f[slot(at<S>(A), q)] * v1), ...);
    const double a = f[slot(p, p)], b = f[slot(q, p)], c = f[slot(q, q)];
    const double det = a * c - b * b;
    v[p] = (c * v0 - b * v1) / det;
    v[q] = (a * v1 - b * v0) / det;
  }

  // From the last step back: each pivot's value, once the positions after it are final,
  // less its column's L times theirs, from the last position up (Front::backward()'s order
  // for each pivot).
  template <int... S>
  static void backward_steps(const double* f, double* v, std::integer_sequence<int, S...>) {
    (backward_step<P - 1 - S>(f, v), ...);
  }
  template <int S>
  static void backward_step([[maybe_unused]] const double* f, [[maybe_unused]] double* v) {
    if constexpr (S < kStructure.steps) {
      constexpr int p = kStructure.first[S], q = kStructure.second[S];
      backward_single<S, p>(f, v, std::make_integer_sequence<int, count<S>()>{});
      if constexpr (q >= 0) backward_single<S, q>(f, v, std::make_integer_sequence<int, count<S>()>{});
    }
  }
  template <int S, int C, int... A>
  static void backward_single([[maybe_unused]] const double* f, [[maybe_unused]] double* v,
                              std::integer_sequence<int, A...>) {
    constexpr int n = sizeof...(A);
    ((v[C] -= f[slot(at<S>(n - 1 - A), C)] * v[at<S>(n - 1 - A)]), ...);
  }
};

// A front whose sparsity is known when the module is compiled, factorised and solved with
// code for exactly its nonzeros: the usual stage's front of a multistage KKT matrix
// (stage_ldl.hpp), whose variables meet few of its rows, whose rows meet few of the
// previous stage's variables, and whose variables meet those not at all unless the Hessian
// couples stages.
//
// It does what Front (front.hpp) does for a front whose pivots all pass the threshold test
// in place, in order: the same tests, and each entry that changes receives the same
// operations in the same order (so the factors and the inertia are the same, bit for bit);
// the multiples of structural zeros are not computed. Where a pivot fails the test, it
// stops there, with the front as Front leaves it after the same steps, so that Front goes on
// from that position.
//
// The pattern is a type: `kSize` positions, the first `kPivots` of them pivoted,
// `kEntries[i * kSize + j]` (i >= j) whether entry (i, j) of the assembled front may be
// nonzero; the fill of the elimination is derived from it when the module is compiled. A
// pattern with kSize 0 compiles nothing (NoCompiledFront).
//
// Part of anvil's interior-point runtime (see dense_ldl.hpp for how it is included).

#include <cmath>
#include <utility>

// No front compiled for its pattern. (Unused in a module without a multistage solver.)
struct NoCompiledFront {
  [[maybe_unused]] static constexpr int kSize = 0;
  [[maybe_unused]] static constexpr int kPivots = 0;
  [[maybe_unused]] static constexpr bool kEntries[1] = {false};
};

template <class Pattern>
class CompiledFront {
 public:
  static constexpr int kSize = Pattern::kSize, kPivots = Pattern::kPivots;
  // The widest front compiled (its fill, computed at compile time, grows with the cube).
  static constexpr int kMaxSize = 64;

 private:
  static constexpr bool kSmall = kSize > 0 && kSize <= kMaxSize && kPivots > 0 && kPivots <= kSize;
  static constexpr int N = kSmall ? kSize : 1, P = kSmall ? kPivots : 1;

  // The filled pattern, by pivot column and by row: for pivot t, the rows below it that may
  // be nonzero when it is eliminated; for row i, the pivot columns t < i whose L entry in
  // row i may be nonzero.
  struct Structure {
    int below[P][N];
    int below_count[P];
    int left[N][P];
    int left_count[N];
    long work;
  };
  static constexpr Structure structure() {
    Structure s{};
    bool nonzero[N][N] = {};
    for (int i = 0; i < kSize; ++i) {
      for (int j = 0; j <= i; ++j) nonzero[i][j] = Pattern::kEntries[i * kSize + j];
    }
    for (int t = 0; t < kPivots; ++t) {
      int count = 0;
      for (int i = t + 1; i < kSize; ++i) {
        if (nonzero[i][t]) s.below[t][count++] = i;
      }
      s.below_count[t] = count;
      for (int a = 0; a < count; ++a) {
        for (int b = a; b < count; ++b) nonzero[s.below[t][b]][s.below[t][a]] = true;
      }
      s.work += static_cast<long>(count) * (count + 1) / 2;
    }
    for (int i = 0; i < kSize; ++i) {
      int count = 0;
      for (int t = 0; t < kPivots && t < i; ++t) {
        if (nonzero[i][t]) s.left[i][count++] = t;
      }
      s.left_count[i] = count;
    }
    return s;
  }
  static constexpr Structure kStructure = kSmall ? structure() : Structure{};

 public:
  // Whether the pattern is compiled: a front at all, and one whose elimination is small
  // enough to be straight-line code (the operations' count bounds the code's size).
  static constexpr bool kCompiled = kSmall && kStructure.work <= 6000;

  // Eliminates the pivots of the front at f (column-major, leading dimension kSize) in
  // place, in order, while they pass Front's in-place test (front.hpp: passes_in_place);
  // returns how many did (kPivots if all). `unknown`, `terms`: as Front's.
  static int factorize(double* f, const int* unknown, double* terms, double threshold, double zero_pivot,
                       Inertia* inertia) {
    return pivots(f, unknown, terms, threshold, zero_pivot, inertia, std::make_integer_sequence<int, P>{});
  }

  // Front::forward() and Front::backward() for a front that factorize() pivoted whole.
  static void forward(const double* f, double* v) { forward_steps(f, v, std::make_integer_sequence<int, P>{}); }
  static void backward(const double* f, double* v) { backward_steps(f, v, std::make_integer_sequence<int, N>{}); }

 private:
  template <int... T>
  static int pivots(double* f, const int* unknown, double* terms, double threshold, double zero_pivot,
                    Inertia* inertia, std::integer_sequence<int, T...>) {
    int done = 0;
    ((done == T && pivot<T>(f, unknown, terms, threshold, zero_pivot, inertia) ? ++done : 0), ...);
    return done;
  }

  template <int T>
  static bool pivot(double* f, const int* unknown, double* terms, double threshold, double zero_pivot,
                    Inertia* inertia) {
    constexpr int count = kStructure.below_count[T];
    const double d = f[T * N + T];
    const double size = std::fabs(d);
    const double largest = column_max<T>(f, std::make_integer_sequence<int, count>{});
    if (!(size > zero_pivot * terms[unknown[T]] && size >= threshold * largest)) return false;
    (d > 0.0 ? inertia->positive : inertia->negative) += 1;
    update<T>(f, d, unknown, terms, std::make_integer_sequence<int, count>{});
    const double inverse = 1.0 / d;
    scale<T>(f, inverse, std::make_integer_sequence<int, count>{});
    return true;
  }

  // (A pack may be empty: a column with no nonzero below its pivot, a row with none left of
  // its diagonal.)
  template <int T, int... A>
  static double column_max([[maybe_unused]] const double* f, std::integer_sequence<int, A...>) {
    double largest = 0.0;
    ((largest = Front::max2(largest, std::fabs(f[T * N + kStructure.below[T][A]]))), ...);
    return largest;
  }

  // The Schur complement's update by pivot T: column by column, each its rows at and below
  // the diagonal (Front::update_1x1()).
  template <int T, int... A>
  static void update([[maybe_unused]] double* f, [[maybe_unused]] double d, [[maybe_unused]] const int* unknown,
                     [[maybe_unused]] double* terms, std::integer_sequence<int, A...>) {
    (update_column<T, A>(f, d, unknown, terms, std::make_integer_sequence<int, kStructure.below_count[T] - A>{}), ...);
  }
  template <int T, int A, int... B>
  static void update_column(double* f, double d, const int* unknown, double* terms, std::integer_sequence<int, B...>) {
    constexpr int j = kStructure.below[T][A];
    const double* pivot = f + T * N;
    const double ljt = pivot[j] / d;
    if (ljt == 0.0) return;
    double* column = f + j * N;
    ((column[kStructure.below[T][A + B]] -= pivot[kStructure.below[T][A + B]] * ljt), ...);
    terms[unknown[j]] += std::fabs(pivot[j] * ljt);
  }
  template <int T, int... A>
  static void scale([[maybe_unused]] double* f, [[maybe_unused]] double inverse, std::integer_sequence<int, A...>) {
    ((f[T * N + kStructure.below[T][A]] *= inverse), ...);
  }

  template <int... T>
  static void forward_steps(const double* f, double* v, std::integer_sequence<int, T...>) {
    (forward_step<T>(f, v, std::make_integer_sequence<int, kStructure.below_count[T]>{}), ...);
  }
  template <int T, int... A>
  static void forward_step(const double* f, double* v, std::integer_sequence<int, A...>) {
    const double vt = v[T];
    ((v[kStructure.below[T][A]] -= f[T * N + kStructure.below[T][A]] * vt), ...);
    v[T] = vt / f[T * N + T];
  }

  // From the last row up (Front::backward()).
  template <int... I>
  static void backward_steps(const double* f, double* v, std::integer_sequence<int, I...>) {
    (backward_step<N - 1 - I>(f, v, std::make_integer_sequence<int, kStructure.left_count[N - 1 - I]>{}), ...);
  }
  template <int I, int... A>
  static void backward_step([[maybe_unused]] const double* f, [[maybe_unused]] double* v,
                            std::integer_sequence<int, A...>) {
    if constexpr (sizeof...(A) > 0) {
      const double vi = v[I];
      ((v[kStructure.left[I][A]] -= f[kStructure.left[I][A] * N + I] * vi), ...);
    }
  }
};

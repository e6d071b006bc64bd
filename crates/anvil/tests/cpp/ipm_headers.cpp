// The interior-point runtime's sources on their own (tests/opti.rs compiles this with
// -Wall -Wextra -Werror under ASan and UBSan): the dense LDL' against matrices of known
// inertia, and the method on a small problem written by hand against its interface.
#include <algorithm>
#include <vector>

#include "ipm_check.hpp"
// The method itself, compiled apart in a program (the JIT's library, a module's anvil_ipm.cpp).
#include "interior_point.cpp"

namespace {

// A = Q diag(d) Q' with Q a product of Householder reflections: its inertia is d's signs.
template <int N>
void known_inertia(unsigned seed, const double* d, anvil_ipm::Inertia want) {
  double a[N * N];
  for (int i = 0; i < N * N; ++i) a[i] = 0.0;
  for (int i = 0; i < N; ++i) a[i * N + i] = d[i];
  unsigned state = seed;
  for (int r = 0; r < 3; ++r) {
    double v[N], norm = 0.0;
    for (int i = 0; i < N; ++i) {
      v[i] = uniform(&state);
      norm += v[i] * v[i];
    }
    // A <- H A H, H = I - 2 v v' / v'v.
    double av[N], vav = 0.0;
    for (int i = 0; i < N; ++i) {
      av[i] = 0.0;
      for (int j = 0; j < N; ++j) av[i] += a[j * N + i] * v[j];
      vav += v[i] * av[i];
    }
    for (int i = 0; i < N; ++i) {
      for (int j = 0; j < N; ++j) {
        a[j * N + i] += -2.0 / norm * (v[i] * av[j] + av[i] * v[j]) + 4.0 * vav / (norm * norm) * v[i] * v[j];
      }
    }
  }
  anvil_ipm::DenseLdl<N> ldl;
  for (int i = 0; i < N * N; ++i) ldl.a[i] = a[i];
  const anvil_ipm::Inertia got = ldl.factorize(1e-12);
  check(got.positive == want.positive && got.negative == want.negative && got.zero == want.zero, "inertia");
  if (want.zero > 0) return;
  double b[N], x[N];
  for (int i = 0; i < N; ++i) b[i] = x[i] = uniform(&state);
  ldl.solve(x);
  // The backward error, relative to |A| |x| + |b|.
  double residual = 0.0, scale = 0.0;
  for (int i = 0; i < N; ++i) {
    double r = -b[i], s = std::fabs(b[i]);
    for (int j = 0; j < N; ++j) {
      r += a[j * N + i] * x[j];
      s += std::fabs(a[j * N + i] * x[j]);
    }
    residual = std::fabs(r) > residual ? std::fabs(r) : residual;
    scale = s > scale ? s : scale;
  }
  check(residual <= 1e-13 * scale, "solve residual");
}

// min (x0 - 1)^2 + (x1 - 2)^2  s.t.  x0 + x1 = 1,  x0 x1 >= 0.1,  x0 >= 0.
// On the line the cost 2 x0^2 + 2 falls toward x0 = 0, so the product is active at its
// lower bound: x0 (1 - x0) = 0.1, x0 = (1 - sqrt(0.6)) / 2.
struct Toy final : anvil_ipm::Problem {
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  double jac[2][2] = {{0.0, 0.0}, {0.0, 0.0}}, hess[4] = {0.0, 0.0, 0.0, 0.0};
  anvil_ipm::DenseLdl<4> kkt;

  Toy() : Problem(2, 1, 1) {}
  double x_lb(int j) const override { return j == 0 ? 0.0 : -kInf; }
  double x_ub(int) const override { return kInf; }
  double q_lb(int) const override { return 0.1; }
  double q_ub(int) const override { return kInf; }

  bool values(const double* x, double* f, double* c, double* d) override {
    *f = obj_scale * ((x[0] - 1.0) * (x[0] - 1.0) + (x[1] - 2.0) * (x[1] - 2.0));
    c[0] = row_scale[0] * (x[0] + x[1] - 1.0);
    d[0] = row_scale[1] * x[0] * x[1];
    return true;
  }
  bool linearize(const double* x, double* f, double* grad, double* c, double* d) override {
    values(x, f, c, d);
    grad[0] = obj_scale * 2.0 * (x[0] - 1.0);
    grad[1] = obj_scale * 2.0 * (x[1] - 2.0);
    jac[0][0] = row_scale[0];
    jac[0][1] = row_scale[0];
    jac[1][0] = row_scale[1] * x[1];
    jac[1][1] = row_scale[1] * x[0];
    return true;
  }
  void choose_scaling(const double*, double) override {}
  void add_jacobian_transpose_times(const double* yc, const double* yd, double* out) override {
    for (int j = 0; j < 2; ++j) out[j] += jac[0][j] * yc[0] + jac[1][j] * yd[0];
  }
  bool hessian(const double*, const double*, const double* yd) override {
    hess[0] = hess[3] = 2.0 * obj_scale;
    hess[1] = hess[2] = row_scale[1] * yd[0];
    return true;
  }
  bool constraint_hessian(const double*, const double*, const double* yd) override {
    hess[0] = hess[3] = 0.0;
    hess[1] = hess[2] = row_scale[1] * yd[0];
    return true;
  }
  anvil_ipm::Inertia factorize(bool with_hessian, const double* diag_x, const double* diag_y) override {
    double* a = kkt.a;
    for (int k = 0; k < 16; ++k) a[k] = 0.0;
    for (int j = 0; j < 2; ++j) {
      for (int i = j; i < 2; ++i) a[j * 4 + i] = with_hessian ? hess[j * 2 + i] : 0.0;
      a[j * 4 + j] += diag_x[j];
      a[j * 4 + 2] = jac[0][j];
      a[j * 4 + 3] = jac[1][j];
    }
    a[2 * 4 + 2] = diag_y[0];
    a[3 * 4 + 3] = diag_y[1];
    return kkt.factorize(1e-14);
  }
  double solve(double* rhs) override { return kkt.solve(rhs); }
  bool increase_quality() override { return kkt.increase_quality(); }
  void reset_quality() override { kkt.reset_quality(); }
};

void toy_problem() {
  Toy toy;
  anvil_ipm::InteriorPoint ipm(toy);
  const anvil_ipm::IpmOptions options{3000, 1e-10, 1e-6, 15, 1e-4, 1.0, 1e-4, 0.1, false, 1e-2, 1e-2, 1e-8, 100.0, 4,
                                      false, 1e-9, 0};
  const double x0[2] = {2.0, 2.0};
  double x[2], lam_eq[1], lam_q[1], lam_box[2];
  const anvil_ipm::IpmReport r = ipm.run(toy, x0, anvil_ipm::IpmMultipliers{nullptr, nullptr, nullptr}, options, x,
                                         lam_eq, lam_q, lam_box);
  const double x0_opt = (1.0 - std::sqrt(0.6)) / 2.0;
  check(r.outcome == anvil_ipm::IpmOutcome::Solved, "toy problem solved");
  check(std::fabs(x[0] - x0_opt) < 1e-7 && std::fabs(x[1] - (1.0 - x0_opt)) < 1e-7, "toy optimum");
  // The product constraint is active at its lower bound: a negative multiplier.
  check(lam_q[0] < 0.0 && std::fabs(lam_box[0]) < 1e-6, "toy multiplier signs");
  check(r.stat < 1e-8 && r.eq < 1e-10, "toy residuals");
}

// A KKT-like arrow matrix in the order x0, x1, x2, y (y couples to every x): the upper
// triangle's columns are {0}, {1}, {2}, {0, 1, 2, 3}; the elimination tree is 0, 1, 2 -> 3,
// four fronts (each x's with the row y, and y's), each assembling its column's entries.
// The original order is (y, x0, x1, x2): position k holds original index kPerm[k]. (The
// tables are what sparse_kkt.rs generates for this pattern.)
struct Arrow {
  static constexpr int kSize = 4, kNnz = 7, kFronts = 4;
  static constexpr int kPerm[4] = {1, 2, 3, 0};
  static constexpr int kOuter[5] = {0, 1, 2, 3, 7};
  static constexpr int kInner[7] = {0, 1, 2, 0, 1, 2, 3};
  static constexpr int kCols[5] = {0, 1, 2, 3, 4};
  static constexpr int kParent[4] = {3, 3, 3, -1};
  static constexpr int kRowStart[5] = {0, 1, 2, 3, 3};
  static constexpr int kRows[3] = {3, 3, 3};
  static constexpr int kRelative[3] = {0, 0, 0};
  static constexpr int kAsmStart[5] = {0, 2, 4, 6, 7};
  static constexpr int kAsmSrc[7] = {0, 3, 1, 4, 2, 5, 6};
  static constexpr int kAsmRow[7] = {0, 1, 0, 1, 0, 1, 0};
  static constexpr int kAsmCol[7] = {0, 0, 0, 0, 0, 0, 0};
  static constexpr int kMaxFront = 4, kMaxDelays = 96;
  static constexpr int kFactorCapacity = 87, kFactorSlack = 64, kStackCapacity = 35, kStackSlack = 32;
  static constexpr int kStackIndexCapacity = 108, kUnknownCapacity = 103;
};

void sparse_arrow() {
  anvil_ipm::SparseLdl<Arrow> ldl;
  // diag(2, -3, -1) on the x block, y's -1e-8: pivots 2, -3, -1 and 5/6, inertia (2, 2) (a
  // KKT matrix of 3 variables and 1 constraint needs (3, 1)).
  const double values[7] = {2.0, -3.0, -1.0, 1.0, 1.0, 1.0, -1e-8};
  for (int k = 0; k < 7; ++k) ldl.a[k] = values[k];
  anvil_ipm::Inertia in = ldl.factorize(1e-14);
  check(in.positive == 2 && in.negative == 2 && in.zero == 0, "sparse inertia (indefinite x block)");
  ldl.a[1] = 3.0;
  ldl.a[2] = 4.0;
  in = ldl.factorize(1e-14);
  check(in.positive == 3 && in.negative == 1 && in.zero == 0, "sparse inertia (KKT)");
  // Solve against the dense matrix in the original order (y first: Perm maps position k to
  // original index Perm[k]).
  const double dense[4][4] = {{-1e-8, 1.0, 1.0, 1.0}, {1.0, 2.0, 0.0, 0.0}, {1.0, 0.0, 3.0, 0.0}, {1.0, 0.0, 0.0, 4.0}};
  const double b[4] = {1.0, -2.0, 0.5, 3.0};
  double x[4] = {1.0, -2.0, 0.5, 3.0};
  ldl.solve(x);
  double residual = 0.0;
  for (int i = 0; i < 4; ++i) {
    double r = -b[i];
    for (int j = 0; j < 4; ++j) r += dense[i][j] * x[j];
    residual = std::fabs(r) > residual ? std::fabs(r) : residual;
  }
  check(residual < 1e-12, "sparse solve residual");
  // A zero row: a zero eigenvalue, reported, never a division by zero.
  for (int k = 0; k < 7; ++k) ldl.a[k] = 0.0;
  in = ldl.factorize(1e-14);
  check(in.zero == 4, "sparse zero matrix");
}


// An equality row's zero diagonal ordered first: [0 1 0; 1 1 1; 0 1 2] in the order (y, x0,
// x1). Its elimination tree is a chain, fronts {y} (row x0) and {x0, x1}: y is no stable
// pivot in its front and is delayed to its parent, which pivots it with x0.
struct Delayed {
  static constexpr int kSize = 3, kNnz = 5, kFronts = 2;
  static constexpr int kPerm[3] = {0, 1, 2};
  static constexpr int kOuter[4] = {0, 1, 3, 5};
  static constexpr int kInner[5] = {0, 0, 1, 1, 2};
  static constexpr int kCols[3] = {0, 1, 3};
  static constexpr int kParent[2] = {1, -1};
  static constexpr int kRowStart[3] = {0, 1, 1};
  static constexpr int kRows[1] = {1};
  static constexpr int kRelative[1] = {0};
  static constexpr int kAsmStart[3] = {0, 2, 5};
  static constexpr int kAsmSrc[5] = {0, 1, 2, 3, 4};
  static constexpr int kAsmRow[5] = {0, 1, 0, 1, 1};
  static constexpr int kAsmCol[5] = {0, 0, 0, 0, 1};
  static constexpr int kMaxFront = 3, kMaxDelays = 88;
  static constexpr int kFactorCapacity = 51, kFactorSlack = 36, kStackCapacity = 19, kStackSlack = 18;
  static constexpr int kStackIndexCapacity = 92, kUnknownCapacity = 92;
};

void sparse_delays_a_zero_diagonal() {
  anvil_ipm::SparseLdl<Delayed> ldl;
  const double values[5] = {0.0, 1.0, 1.0, 1.0, 2.0};
  for (int k = 0; k < 5; ++k) ldl.a[k] = values[k];
  const anvil_ipm::Inertia in = ldl.factorize(anvil_ipm::kZeroPivot);
  // det = -2, trace 3: two positive eigenvalues, one negative.
  check(in.positive == 2 && in.negative == 1 && in.zero == 0, "delayed pivot: inertia");
  const double dense[3][3] = {{0.0, 1.0, 0.0}, {1.0, 1.0, 1.0}, {0.0, 1.0, 2.0}};
  const double b[3] = {1.0, -2.0, 0.5};
  double x[3] = {1.0, -2.0, 0.5};
  const double ratio = ldl.solve(x);
  double residual = 0.0;
  for (int i = 0; i < 3; ++i) {
    double r = -b[i];
    for (int j = 0; j < 3; ++j) r += dense[i][j] * x[j];
    residual = std::fabs(r) > residual ? std::fabs(r) : residual;
  }
  check(ratio <= 1e-10 && residual < 1e-14, "delayed pivot: solve");
}

// A multistage matrix kept whole on the checks' side (StageLdl keeps none): each stage's own
// block and its entries with the previous stage's unknowns, assembled into the factorisation
// stage by stage as it asks, and multiplied for its solves' refinement. `count` and `index`
// are the factorisation's.
template <int Stages, int Own, int Link, int MaxDelay, int Size, class Usual = anvil_ipm::NoCompiledFront>
struct AssembledStages {
  using Ldl = anvil_ipm::StageLdl<Stages, Own, Link, MaxDelay, Size, Usual>;
  Ldl& ldl;
  int* const count = ldl.count;
  int* const index = ldl.index;
  std::vector<double> own = std::vector<double>(Stages * Own * Own, 0.0);
  std::vector<double> link = std::vector<double>(Stages * Own * Link, 0.0);

  void clear() {
    std::fill(own.begin(), own.end(), 0.0);
    std::fill(link.begin(), link.end(), 0.0);
  }
  // Stage k's own entries (r, c) and (c, r), and its entry between own unknown r and the
  // link's c (the previous stage's own unknown c).
  void add(int k, int r, int c, double v) {
    own[(k * Own + r) * Own + c] += v;
    if (r != c) own[(k * Own + c) * Own + r] += v;
  }
  void add_link(int k, int r, int c, double v) { link[(k * Own + r) * Link + c] += v; }

  anvil_ipm::Inertia factorize(double zero_pivot, bool stop_when_wrong = false) {
    return ldl.factorize(zero_pivot, stop_when_wrong, [this](int k, typename Ldl::Entries& e) {
      for (int r = 0; r < count[k]; ++r) {
        for (int c = 0; c <= r; ++c) e.add_lower(r, c, own[(k * Own + r) * Own + c]);
        for (int c = 0; c < Link && k > 0; ++c) e.add_link(r, c, link[(k * Own + r) * Link + c]);
      }
    });
  }
  double solve(double* b) {
    return ldl.solve(b, [this](const double* x, double* out) {
      for (int k = 0; k < Stages; ++k) {
        const int* idx = index + k * Own;
        for (int r = 0; r < count[k]; ++r) {
          for (int c = 0; c < count[k]; ++c) out[idx[r]] -= own[(k * Own + r) * Own + c] * x[idx[c]];
          for (int c = 0; c < Link && k > 0; ++c) {
            const int previous = index[(k - 1) * Own + c];
            out[idx[r]] -= link[(k * Own + r) * Link + c] * x[previous];
            out[previous] -= link[(k * Own + r) * Link + c] * x[idx[r]];
          }
        }
      }
    });
  }
  int compiled_stages() const { return ldl.compiled_stages(); }
};

// What counts as a zero pivot: cancellation's roundoff, not smallness. An equality row on a
// variable at its bound (barrier curvature 1e14) has the true pivot -1e-14, as small as its
// row's entries times roundoff but computed without cancellation: the KKT inertia (1, 1).
// Two proportional constraint rows leave a pivot of roundoff size out of terms of order
// one: a zero eigenvalue.
struct Pair {
  static constexpr int kSize = 2, kNnz = 3, kFronts = 1;
  static constexpr int kPerm[2] = {0, 1};
  static constexpr int kOuter[3] = {0, 1, 3};
  static constexpr int kInner[3] = {0, 0, 1};
  static constexpr int kCols[2] = {0, 2};
  static constexpr int kParent[1] = {-1};
  static constexpr int kRowStart[2] = {0, 0};
  static constexpr int kRows[1] = {0};
  static constexpr int kRelative[1] = {0};
  static constexpr int kAsmStart[2] = {0, 3};
  static constexpr int kAsmSrc[3] = {0, 1, 2};
  static constexpr int kAsmRow[3] = {0, 1, 1};
  static constexpr int kAsmCol[3] = {0, 0, 1};
  static constexpr int kMaxFront = 2, kMaxDelays = 80;
  static constexpr int kFactorCapacity = 24, kFactorSlack = 16, kStackCapacity = 8, kStackSlack = 8;
  static constexpr int kStackIndexCapacity = 80, kUnknownCapacity = 82;
};

void zero_pivots_are_cancellations() {
  anvil_ipm::DenseLdl<2> dense;
  const double bound_row[4] = {1e14, 1.0, 1.0, 0.0};
  for (int k = 0; k < 4; ++k) dense.a[k] = bound_row[k];
  anvil_ipm::Inertia in = dense.factorize(anvil_ipm::kZeroPivot);
  check(in.positive == 1 && in.negative == 1 && in.zero == 0, "dense: a tiny true pivot is no zero");
  anvil_ipm::SparseLdl<Pair> sparse;
  const double upper[3] = {1e14, 1.0, 0.0};
  for (int k = 0; k < 3; ++k) sparse.a[k] = upper[k];
  in = sparse.factorize(anvil_ipm::kZeroPivot);
  check(in.positive == 1 && in.negative == 1 && in.zero == 0, "sparse: a tiny true pivot is no zero");
  anvil_ipm::StageLdl<1, 2, 1, 2, 2> ldl;
  AssembledStages<1, 2, 1, 2, 2> stage{ldl};
  stage.count[0] = 2;
  stage.index[0] = 0;
  stage.index[1] = 1;
  stage.clear();
  stage.add(0, 0, 0, 1e14);
  stage.add(0, 1, 0, 1.0);
  in = stage.factorize(anvil_ipm::kZeroPivot);
  check(in.positive == 1 && in.negative == 1 && in.zero == 0, "stage: a tiny true pivot is no zero");

  // [H J'; J 0] with H = diag(0.3, 0.7) and the second row of J 0.7 times the first.
  constexpr int N = 4;
  const double h[2] = {0.3, 0.7}, j1[2] = {0.1, 0.3};
  anvil_ipm::DenseLdl<N> kkt;
  anvil_ipm::StageLdl<1, N, 1, N, N> staged_ldl;
  AssembledStages<1, N, 1, N, N> staged{staged_ldl};
  staged.count[0] = N;
  for (int i = 0; i < N; ++i) staged.index[i] = i;
  staged.clear();
  for (int k = 0; k < N * N; ++k) kkt.a[k] = 0.0;
  for (int c = 0; c < 2; ++c) {
    kkt.a[c * N + c] = h[c];
    staged.add(0, c, c, h[c]);
    for (int r = 0; r < 2; ++r) {
      const double v = (r == 0 ? 1.0 : 0.7) * j1[c];
      kkt.a[c * N + 2 + r] = v;
      staged.add(0, 2 + r, c, v);
    }
  }
  in = kkt.factorize(anvil_ipm::kZeroPivot);
  check(in.positive == 2 && in.negative == 1 && in.zero == 1, "dense: dependent rows leave a zero pivot");
  in = staged.factorize(anvil_ipm::kZeroPivot);
  check(in.positive == 2 && in.negative == 1 && in.zero == 1, "stage: dependent rows leave a zero pivot");
}

// A solve reports the residual ratio its refinement reached: Ipopt's 1e-10 when the
// factorisation is good; not below any threshold (NaN) when the matrix holds a NaN, which the
// interior-point method answers as it answers a singular matrix.
// all_finite() (one OR over the array, vectorised): a NaN or an infinity anywhere, in the
// first, a middle or the last entry, is found; finite values of any size, and an empty
// array, are finite.
void all_finite_finds_any_nonfinite_entry() {
  double v[37];
  for (int i = 0; i < 37; ++i) v[i] = (i % 2 ? -1.0 : 1.0) * std::pow(10.0, (i % 9) * 38 - 150);
  check(anvil_ipm::all_finite(v, 37) && anvil_ipm::all_finite(v, 0), "finite arrays are finite");
  for (const double bad : {std::numeric_limits<double>::quiet_NaN(), HUGE_VAL, -HUGE_VAL}) {
    for (const int at : {0, 18, 36}) {
      const double kept = v[at];
      v[at] = bad;
      check(!anvil_ipm::all_finite(v, 37), "a NaN or an infinity is found wherever it is");
      check(at == 36 || anvil_ipm::all_finite(v + at + 1, 36 - at), "entries after it alone are finite");
      v[at] = kept;
    }
  }
}

void solves_report_their_residual() {
  anvil_ipm::SparseLdl<Pair> ldl;
  const double stable[3] = {4.0, 1.0, -3.0};
  for (int k = 0; k < 3; ++k) ldl.a[k] = stable[k];
  ldl.factorize(anvil_ipm::kZeroPivot);
  double y[2] = {1.0, 2.0};
  const double ratio = ldl.solve(y);
  check(ratio <= 1e-10 && std::fabs(4.0 * y[0] + y[1] - 1.0) < 1e-14 && std::fabs(y[0] - 3.0 * y[1] - 2.0) < 1e-14,
        "a stable solve is exact");
  ldl.a[2] = std::numeric_limits<double>::quiet_NaN();
  ldl.factorize(anvil_ipm::kZeroPivot);
  double z[2] = {1.0, 2.0};
  check(!(ldl.solve(z) <= 1e-5), "a solve with a NaN reports no residual ratio");
}

// stage_kkt()'s usual front, as a module's codegen describes it: z_k = (x, u) dense, its two
// rows (x_k in its defining rows) on their diagonals and with the previous stage's z.
struct UsualStage {
  static constexpr int kSize = 8, kPivots = 5;
  static constexpr bool kEntries[kSize * kSize] = {
      1, 0, 0, 0, 0, 0, 0, 0,  //
      1, 1, 0, 0, 0, 0, 0, 0,  //
      1, 1, 1, 0, 0, 0, 0, 0,  //
      1, 0, 0, 1, 0, 0, 0, 0,  //
      0, 1, 0, 0, 1, 0, 0, 0,  //
      0, 0, 0, 1, 1, 0, 0, 0,  //
      0, 0, 0, 1, 1, 0, 0, 0,  //
      0, 0, 0, 1, 1, 0, 0, 0,  //
  };
};
// Every entry may be nonzero.
template <int Size, int Pivots>
struct Dense {
  static constexpr int kSize = Size, kPivots = Pivots;
  struct All {
    constexpr bool operator[](int) const { return true; }
  };
  static constexpr All kEntries{};
};

// UsualStage in a Riccati recursion's order: each state with the row that defines it.
struct RiccatiStage : UsualStage {
  static constexpr int kPartner[kPivots] = {3, 4, -1, -1, -1};
};

// A front too wide (or too dense) for straight-line code is left to Front; its pattern is
// never expanded (this compiles in moments).
static_assert(!anvil_ipm::CompiledFront<Dense<200, 150>>::kCompiled, "a wide front is not compiled");
static_assert(!anvil_ipm::CompiledFront<Dense<60, 40>>::kCompiled, "a dense front of 60 is too much code");
static_assert(anvil_ipm::CompiledFront<Dense<8, 5>>::kCompiled, "a small front is compiled");

// A front of Pattern's nonzeros (random values; with `flat`, a position whose diagonal and
// entries with the positions before it are 0, so that its in-place pivot fails), with `D`
// unknowns delayed into it (a border between its pivots and the rest, meeting every
// position): the compiled code's pivots (then Front's from where it stops) leave the front as
// Front pivoting the same positions does: factors, kinds, inertia and terms bit for bit in
// place, to rounding in a Riccati recursion's order; the solves with those pivots likewise.
template <class Pattern, int D = 0>
void compiled_front_is_front(unsigned seed, int flat) {
  using Compiled = anvil_ipm::CompiledFront<Pattern>;
  constexpr int S = Pattern::kSize, P = Pattern::kPivots, N = S + D;
  static_assert(Compiled::kCompiled, "a compiled pattern");
  constexpr bool exact = !Compiled::kReordered;
  const auto place = [](int q) { return q < P ? q : q + D; };
  const auto border = [](int q) { return q >= P && q < P + D; };
  unsigned state = seed;
  double a[N * N], b[N * N], terms_a[N], terms_b[N], row_size[N];
  int unknown_a[N], unknown_b[N], kind_a[N], kind_b[N];
  for (int q = 0; q < N * N; ++q) a[q] = b[q] = 0.0;
  for (int j = 0; j < S; ++j) {
    for (int i = j; i < S; ++i) {
      double v = Pattern::kEntries[i * S + j] && (i != flat || j == flat) ? uniform(&state) : 0.0;
      if (i == j && j < 3) v = exact ? 4.0 + v : (j < 2 ? 1.0 + v : 2.0 + v);
      if (i == j && j == flat) v = 0.0;
      if (i == j && j >= 3 && j < P) v = exact ? -1e-3 * std::fabs(v) : 0.0;
      if (!exact && j < 2 && i == j + 3) v = 1.0;
      if (i == j && j >= P) v = 0.0;
      a[place(j) * N + place(i)] = v;
    }
  }
  for (int j = 0; j < N; ++j) {
    for (int i = j; i < N; ++i) {
      if (border(i) || border(j)) a[j * N + i] = i == j ? -0.5 * std::fabs(uniform(&state)) : 0.3 * uniform(&state);
      b[j * N + i] = a[j * N + i];
    }
  }
  for (int q = 0; q < N; ++q) {
    unknown_a[q] = unknown_b[q] = q;
    terms_a[q] = terms_b[q] = std::fabs(a[q * N + q]);
    row_size[q] = 5.0;
  }
  const auto no_delay = [](int) { return false; };
  anvil_ipm::Inertia in_a{0, 0, 0}, in_b{0, 0, 0};
  const int pa = anvil_ipm::Front(a, N, unknown_a, terms_a, row_size, 1e-6).factorize(P, N, 1e-14, kind_a, &in_a, no_delay);
  const int first = D == 0 ? Compiled::factorize(b, unknown_b, terms_b, row_size, 1e-6, 1e-14, kind_b, &in_b)
                            : Compiled::factorize_bordered(D, b, unknown_b, terms_b, row_size, 1e-6, 1e-14, kind_b, &in_b);
  check(flat < 0 ? first == P : first == flat, "the compiled front stops where its in-place pivots do");
  const int pb = first == P ? P
                            : anvil_ipm::Front(b, N, unknown_b, terms_b, row_size, 1e-6)
                                  .factorize(P, N, 1e-14, kind_b, &in_b, no_delay, first);
  check(pa == pb && in_a.positive == in_b.positive && in_a.negative == in_b.negative && in_a.zero == in_b.zero,
        "the compiled front's pivots and inertia are Front's");
  // Compared where Front's interchanges (none in place) leave each position.
  double diff = 0.0, size = 0.0;
  bool same = true;
  for (int j = exact ? 0 : P; j < N; ++j) {
    for (int i = j; i < N; ++i) {
      diff = std::fmax(diff, std::fabs(a[j * N + i] - b[j * N + i]));
      size = std::fmax(size, std::fabs(a[j * N + i]));
      same = same && a[j * N + i] == b[j * N + i];
    }
    if (exact) same = same && unknown_a[j] == unknown_b[j] && terms_a[j] == terms_b[j];
  }
  for (int q = 0; q < pa && exact; ++q) same = same && kind_a[q] == kind_b[q];
  check(exact ? same : diff <= 1e-12 * (1.0 + size), "the compiled front's factors are Front's");
  if (first == P) {
    double rhs[N], v[N], w[N];
    for (int q = 0; q < N; ++q) rhs[q] = w[q] = uniform(&state);
    for (int q = 0; q < N; ++q) v[q] = rhs[unknown_a[q]];
    anvil_ipm::Front::forward(a, N, kind_a, pa, N, v);
    anvil_ipm::Front::backward(a, N, kind_a, pa, N, v);
    if (D == 0) {
      Compiled::forward(b, w);
      Compiled::backward(b, w);
    } else {
      Compiled::forward_bordered(D, b, w);
      Compiled::backward_bordered(D, b, w);
    }
    diff = size = 0.0;
    same = true;
    for (int q = 0; q < N; ++q) {
      diff = std::fmax(diff, std::fabs(v[q] - w[unknown_a[q]]));
      size = std::fmax(size, std::fabs(v[q]));
      same = same && v[q] == w[unknown_a[q]];
    }
    check(exact ? same : diff <= 1e-10 * (1.0 + size), "the compiled front's solves are Front's");
  }
}

// A NaN where a pivot would be: the compiled front stops there (its test fails, as Front's
// does), leaving Front to decide, with the pivots before it done.
void compiled_front_stops_at_a_nan() {
  constexpr int N = UsualStage::kSize;
  double f[N * N], terms[N], row_size[N];
  int unknown[N], kind[N];
  for (int q = 0; q < N * N; ++q) f[q] = 0.0;
  for (int q = 0; q < N; ++q) {
    f[q * N + q] = q < 3 ? 4.0 : -1e-3;
    unknown[q] = q;
    terms[q] = std::fabs(f[q * N + q]);
    row_size[q] = 4.0;
  }
  f[1 * N + 1] = std::numeric_limits<double>::quiet_NaN();
  anvil_ipm::Inertia in{0, 0, 0};
  const int first =
      anvil_ipm::CompiledFront<UsualStage>::factorize(f, unknown, terms, row_size, 1e-6, 1e-14, kind, &in);
  check(first == 1 && in.positive == 1 && in.negative == 0, "the compiled front stops at a NaN pivot");
}

// A front of RiccatiStage's nonzeros (random values; the states' curvature `weight` times a
// random one, 0 for none): its compiled code, which reorders it, pivots it whole (the
// states with their rows as 2x2 pivots) and leaves the same Schur complement and inertia as
// Front, and its solves are Front's to rounding.
void reordered_front_is_front(unsigned seed, double weight) {
  using Compiled = anvil_ipm::CompiledFront<RiccatiStage>;
  constexpr int N = RiccatiStage::kSize, P = RiccatiStage::kPivots;
  unsigned state = seed;
  double a[N * N], b[N * N], terms_a[N], terms_b[N], row_size[N];
  int unknown_a[N], unknown_b[N], kind_a[N], kind_b[N];
  for (int j = 0; j < N; ++j) {
    for (int i = 0; i < N; ++i) {
      double v = i >= j && RiccatiStage::kEntries[i * N + j] ? uniform(&state) : 0.0;
      if (i == j) v = j < 2 ? weight * (1.0 + v) : j == 2 ? 2.0 + v : 0.0;
      if (j < 2 && i < 2 && i != j) v *= weight;
      if (j < 2 && i == j + 3) v = 1.0;
      a[j * N + i] = b[j * N + i] = v;
    }
  }
  for (int q = 0; q < N; ++q) {
    unknown_a[q] = unknown_b[q] = q;
    terms_a[q] = terms_b[q] = std::fabs(a[q * N + q]);
    row_size[q] = 3.0;
  }
  anvil_ipm::Inertia in_a{0, 0, 0}, in_b{0, 0, 0};
  const auto no_delay = [](int) { return false; };
  const int pa = anvil_ipm::Front(a, N, unknown_a, terms_a, row_size, 1e-6).factorize(P, N, 1e-14, kind_a, &in_a, no_delay);
  const int pb = Compiled::factorize(b, unknown_b, terms_b, row_size, 1e-6, 1e-14, kind_b, &in_b);
  check(pa == P && pb == P, "the reordered front is pivoted whole");
  check(kind_b[0] == anvil_ipm::kTwoByTwo && kind_b[1] == anvil_ipm::kTwoByTwo,
        "states pivot with their rows");
  check(in_a.positive == in_b.positive && in_a.negative == in_b.negative && in_a.zero == in_b.zero,
        "the reordered front's inertia is Front's");
  // The Schur complement on the link: whatever the order of the pivots, the same.
  double diff = 0.0, size = 0.0;
  for (int j = P; j < N; ++j) {
    for (int i = j; i < N; ++i) {
      diff = std::fmax(diff, std::fabs(a[j * N + i] - b[j * N + i]));
      size = std::fmax(size, std::fabs(a[j * N + i]));
    }
  }
  check(diff <= 1e-12 * (1.0 + size), "the reordered front passes Front's Schur complement on");
  // (Front's interchanges moved its unknowns: position q holds unknown_a[q].)
  double rhs[N], v[N], w[N];
  for (int u = 0; u < N; ++u) rhs[u] = w[u] = uniform(&state);
  for (int q = 0; q < N; ++q) v[q] = rhs[unknown_a[q]];
  anvil_ipm::Front::forward(a, N, kind_a, pa, N, v);
  anvil_ipm::Front::backward(a, N, kind_a, pa, N, v);
  Compiled::forward(b, w);
  Compiled::backward(b, w);
  diff = size = 0.0;
  for (int q = 0; q < N; ++q) {
    diff = std::fmax(diff, std::fabs(v[q] - w[unknown_a[q]]));
    size = std::fmax(size, std::fabs(v[q]));
  }
  check(diff <= 1e-10 * (1.0 + size), "the reordered front's solves are Front's");
}

// A NaN in a 2x2 pivot of the reordered front: its test fails (as Front's does) before the
// front changes, at the first step (Front starts over from it as assembled), or at a later
// one (again from its assembly: kAgain).
void reordered_front_stops_at_a_nan() {
  using Compiled = anvil_ipm::CompiledFront<RiccatiStage>;
  constexpr int N = RiccatiStage::kSize;
  for (const int state : {0, 1}) {
    double f[N * N], terms[N], row_size[N];
    int unknown[N], kind[N];
    for (int q = 0; q < N * N; ++q) f[q] = 0.0;
    for (int q = 0; q < N; ++q) {
      unknown[q] = q;
      row_size[q] = 2.0;
    }
    f[2 * N + 2] = 3.0;                                       // the control's curvature
    f[0 * N + 3] = f[1 * N + 4] = 1.0;                         // each state in its row
    f[state * N + state] = std::numeric_limits<double>::quiet_NaN();
    for (int q = 0; q < N; ++q) terms[q] = std::fabs(f[q * N + q]);
    const double before = f[2 * N + 2];
    anvil_ipm::Inertia in{0, 0, 0};
    const int done = Compiled::factorize(f, unknown, terms, row_size, 1e-6, 1e-14, kind, &in);
    check(done == (state == 0 ? 0 : Compiled::kAgain), "the reordered front stops at a NaN pivot");
    check(state == 1 || (in.positive == 0 && in.negative == 0 && f[2 * N + 2] == before),
          "a reordered front stopped at its first step is unchanged");
  }
}

// A stage factorisation and the dense one of the same matrix, assembled side by side.
template <class Stage, int Own, int N>
struct StageAndDense {
  Stage& stage;
  anvil_ipm::DenseLdl<N>& dense;
  // Stage k's own entry (r, c), and its entry between own unknown r and the link's c.
  void both(int k, int r, int c, double v) {
    stage.add(k, r, c, v);
    add_dense(stage.index[k * Own + r], stage.index[k * Own + c], v);
  }
  void linked(int k, int r, int c, double v) {
    stage.add_link(k, r, c, v);
    add_dense(stage.index[k * Own + r], stage.index[(k - 1) * Own + c], v);
  }
  // Stage k's curvature, z = (x_0, x_1, u): the states' state_weight times a random one in
  // [1, 2] (0: none), the control's in [1, 1.5].
  void curvature(int k, double state_weight, unsigned* state) {
    both(k, 0, 0, state_weight * (1.0 + uniform(state)));
    both(k, 1, 1, state_weight * (1.0 + uniform(state)));
    both(k, 2, 2, 1.0 + 0.5 * uniform(state));
  }
  // The largest difference of the two solutions of a random system, relative to the dense's.
  double solve_difference(unsigned* state) {
    double x_dense[N], x_stage[N];
    for (int i = 0; i < N; ++i) x_dense[i] = x_stage[i] = uniform(state);
    dense.solve(x_dense);
    stage.solve(x_stage);
    double diff = 0.0, size = 0.0;
    for (int i = 0; i < N; ++i) {
      diff = std::fmax(diff, std::fabs(x_dense[i] - x_stage[i]));
      size = std::fmax(size, std::fabs(x_dense[i]));
    }
    return diff / size;
  }

 private:
  // Entries (i, j) and (j, i) of the dense matrix (its upper triangle, row-major, is read).
  void add_dense(int i, int j, double v) { dense.a[(i < j ? i : j) * N + (i < j ? j : i)] += v; }
};

// A multistage KKT matrix (nx = 2 states, nu = 1 control, S stages): stage k owns z_k =
// (x, u) and its rows: the initial state's (k = 0) or the dynamics x_k - A x_{k-1} - B u_{k-1}
// (k > 0), and, with `terminal`, x_{S-1} = target, rows that pin states the dynamics
// already fix (the factorisation must delay them to earlier stages). The stage factorisation
// must agree with the dense one: inertia and solution. With `Pad`, the factorisation is
// sized for stages Pad unknowns wider than these (a wide stage's scratch lives off the stack).
// With `Usual`, the fronts of the usual stages (two rows: not the widest) are compiled for
// its pattern.
template <bool Terminal, int Pad = 0, class Usual = anvil_ipm::NoCompiledFront>
void stage_kkt(unsigned seed, double state_weight) {
  constexpr int S = 6, NZ = 3, Rows = 2 + (Terminal ? 2 : 0), Own = NZ + Rows + Pad;
  constexpr int N = S * NZ + 2 * S + (Terminal ? 2 : 0);
  static anvil_ipm::StageLdl<S, Own, NZ, Own, N, Usual> ldl;
  static AssembledStages<S, Own, NZ, Own, N, Usual> stage{ldl};
  anvil_ipm::DenseLdl<N> dense;
  for (int k = 0; k < N * N; ++k) dense.a[k] = 0.0;
  stage.clear();
  // Unknowns: z_k at 3k, the rows of stage k from 3S + 2k, the terminal rows last.
  for (int k = 0; k < S; ++k) {
    stage.count[k] = NZ + 2 + (Terminal && k == S - 1 ? 2 : 0);
    for (int j = 0; j < NZ; ++j) stage.index[k * Own + j] = NZ * k + j;
    for (int r = 0; r < 2; ++r) stage.index[k * Own + NZ + r] = NZ * S + 2 * k + r;
    if (Terminal && k == S - 1) {
      for (int r = 0; r < 2; ++r) stage.index[k * Own + NZ + 2 + r] = NZ * S + 2 * S + r;
    }
  }
  StageAndDense<decltype(stage), Own, N> kkt{stage, dense};
  unsigned state = seed;
  for (int k = 0; k < S; ++k) {
    kkt.curvature(k, state_weight, &state);
    for (int r = 0; r < 2; ++r) {
      kkt.both(k, NZ + r, r, 1.0);  // x_k in its defining rows
      if (k > 0) {
        for (int c = 0; c < NZ; ++c) kkt.linked(k, NZ + r, c, -(c == r ? 1.0 : 0.0) - 0.3 * uniform(&state));
      }
    }
    if (Terminal && k == S - 1) {
      for (int r = 0; r < 2; ++r) kkt.both(k, NZ + 2 + r, r, 1.0);
    }
  }
  const anvil_ipm::Inertia want = dense.factorize(1e-14);
  const anvil_ipm::Inertia got = stage.factorize(1e-14);
  check(got.positive == want.positive && got.negative == want.negative && got.zero == want.zero,
        Terminal ? "stage inertia (terminal rows)" : "stage inertia");
  check(got.positive == S * NZ && got.negative == N - S * NZ && got.zero == 0, "stage inertia is the KKT one");
  // In a Riccati recursion's order every usual stage's front is the compiled code's, with
  // curvature on the states or without.
  check(!std::is_same<Usual, RiccatiStage>::value || Terminal || stage.compiled_stages() == S - 1,
        "the compiled code pivots every usual front in a Riccati recursion's order");
  // In place, in order, a state without curvature of its own fails as a 1x1 pivot.
  check(!std::is_same<Usual, UsualStage>::value || Terminal || state_weight != 0.0 || stage.compiled_stages() == 0,
        "in place, no usual front without curvature on its states is the compiled code's");
  // Asked to stop where the inertia proves wrong, a factorisation whose inertia is right
  // runs to the end, with the same inertia.
  const anvil_ipm::Inertia whole = stage.factorize(1e-14, true);
  check(whole.positive == got.positive && whole.negative == got.negative && whole.zero == 0,
        "a right inertia is never stopped");
  check(kkt.solve_difference(&state) <= 1e-10, Terminal ? "stage solve (terminal rows)" : "stage solve");
  // A control with negative curvature: the inertia says so.
  stage.add(2, 2, 2, -30.0);
  const anvil_ipm::Inertia bent = stage.factorize(1e-14);
  check(bent.positive < S * NZ && bent.zero == 0, "stage inertia (negative curvature)");
  // Stopped at the stage that shows it: an inertia as wrong (too many negative eigenvalues).
  const anvil_ipm::Inertia stopped = stage.factorize(1e-14, true);
  check(stopped.negative > N - S * NZ && stopped.zero == 0 && stopped.positive + stopped.negative == N &&
            stopped.positive < bent.positive,
        "a wrong inertia stops early (the first stages not pivoted) with a wrong inertia");
  // A zero matrix: zero eigenvalues, never a division by zero.
  stage.clear();
  const anvil_ipm::Inertia zero = stage.factorize(1e-14);
  check(zero.zero == N, "stage zero matrix");
}

// A row that no control reaches, handed from stage to stage (a minimum-time problem's
// terminal row near its optimum, which only the final time moves): states x = (p, c), one
// control u; p_k = p_{k-1} + 0.1 c_{k-1} + 0.3 u_{k-1}, c_k = c_{k-1} (nothing reaches c),
// p_0 given, c_{S-1} given (the terminal row, pivoted at the first stage only, where c_0 is
// free). Every usual stage receives the row and hands it on; its front is still the
// compiled code's (WithDelayed), with the dense factorisation's inertia and solution.
template <class Usual>
void a_row_no_control_reaches_is_handed_on(unsigned seed, double state_weight) {
  constexpr int S = 6, NZ = 3, Own = NZ + 3;
  constexpr int N = S * NZ + 1 + 2 * (S - 1) + 1;
  static anvil_ipm::StageLdl<S, Own, NZ, Own, N, Usual> ldl;
  static AssembledStages<S, Own, NZ, Own, N, Usual> stage{ldl};
  anvil_ipm::DenseLdl<N> dense;
  for (int k = 0; k < N * N; ++k) dense.a[k] = 0.0;
  stage.clear();
  // Unknowns: z_k at 3k, then each stage's rows in order (the first stage's one, two for
  // each other, the terminal row last).
  int next = S * NZ;
  for (int k = 0; k < S; ++k) {
    const int rows = k == 0 ? 1 : k == S - 1 ? 3 : 2;
    stage.count[k] = NZ + rows;
    for (int j = 0; j < NZ; ++j) stage.index[k * Own + j] = NZ * k + j;
    for (int r = 0; r < rows; ++r) stage.index[k * Own + NZ + r] = next++;
  }
  StageAndDense<decltype(stage), Own, N> kkt{stage, dense};
  unsigned state = seed;
  for (int k = 0; k < S; ++k) {
    kkt.curvature(k, state_weight, &state);
    kkt.both(k, NZ, 0, 1.0);  // p_k in its row (the first stage's: p_0 given)
    if (k == 0) continue;
    kkt.linked(k, NZ, 0, -1.0 - 0.1 * uniform(&state));
    kkt.linked(k, NZ, 1, -0.1 - 0.1 * uniform(&state));
    kkt.linked(k, NZ, 2, -0.3 - 0.1 * uniform(&state));
    kkt.both(k, NZ + 1, 1, 1.0);  // c_k = c_{k-1}
    kkt.linked(k, NZ + 1, 1, -1.0);
    if (k == S - 1) kkt.both(k, NZ + 2, 1, 1.0);  // c_{S-1} given
  }
  const anvil_ipm::Inertia want = dense.factorize(1e-14);
  const anvil_ipm::Inertia got = stage.factorize(1e-14);
  check(got.positive == want.positive && got.negative == want.negative && got.zero == 0 && want.zero == 0,
        "a row handed on: the dense inertia");
  check(stage.compiled_stages() == S - 2, "a usual front that receives a row is the compiled code's");
  check(kkt.solve_difference(&state) <= 1e-10, "a row handed on: the dense solution");
}
}  // namespace

int main() {
  const double definite[6] = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0};
  known_inertia<6>(1, definite, anvil_ipm::Inertia{6, 0, 0});
  const double kkt_like[6] = {3.0, 1e-3, 7.0, -2.0, -1e-6, -40.0};
  known_inertia<6>(2, kkt_like, anvil_ipm::Inertia{3, 3, 0});
  // Eigenvalues over nine orders of magnitude (the rotation spreads the largest over every
  // row: an eigenvalue below about 1e-14 of it would be numerically zero).
  const double wide[7] = {1e6, -1e-3, 1.0, -1.0, 1e4, -1e4, 1e-2};
  known_inertia<7>(3, wide, anvil_ipm::Inertia{4, 3, 0});
  const double singular[5] = {1.0, -1.0, 0.0, 2.0, -3.0};
  known_inertia<5>(4, singular, anvil_ipm::Inertia{2, 2, 1});
  toy_problem();
  sparse_arrow();
  sparse_delays_a_zero_diagonal();
  zero_pivots_are_cancellations();
  solves_report_their_residual();
  all_finite_finds_any_nonfinite_entry();
  stage_kkt<false>(5, 1.0);
  stage_kkt<false>(6, 0.0);
  stage_kkt<true>(7, 1.0);
  stage_kkt<true>(8, 0.0);
  stage_kkt<true, 130>(9, 1.0);
  stage_kkt<false, 0, UsualStage>(6, 0.0);
  stage_kkt<true, 0, UsualStage>(7, 1.0);
  stage_kkt<true, 0, UsualStage>(8, 0.0);
  stage_kkt<false, 0, Dense<8, 5>>(5, 1.0);
  stage_kkt<true, 0, Dense<8, 5>>(8, 0.0);
  a_row_no_control_reaches_is_handed_on<UsualStage>(12, 1.0);
  a_row_no_control_reaches_is_handed_on<RiccatiStage>(13, 1.0);
  a_row_no_control_reaches_is_handed_on<RiccatiStage>(14, 0.0);
  compiled_front_is_front<UsualStage>(10, -1);
  compiled_front_is_front<UsualStage>(11, 2);
  compiled_front_is_front<Dense<8, 5>>(12, -1);
  compiled_front_is_front<Dense<8, 5>>(13, 4);
  compiled_front_stops_at_a_nan();
  compiled_front_is_front<UsualStage, 1>(20, -1);
  compiled_front_is_front<UsualStage, 3>(21, -1);
  compiled_front_is_front<UsualStage, 2>(22, 2);
  compiled_front_is_front<Dense<8, 5>, 4>(23, -1);
  compiled_front_is_front<Dense<8, 5>, 2>(24, 4);
  compiled_front_is_front<RiccatiStage, 1>(25, -1);
  compiled_front_is_front<RiccatiStage, 3>(26, -1);
  reordered_front_stops_at_a_nan();
  reordered_front_is_front(14, 0.0);
  reordered_front_is_front(15, 1.0);
  reordered_front_is_front(16, 1e-9);
  stage_kkt<false, 0, RiccatiStage>(5, 1.0);
  stage_kkt<false, 0, RiccatiStage>(6, 0.0);
  stage_kkt<true, 0, RiccatiStage>(7, 1.0);
  stage_kkt<true, 0, RiccatiStage>(8, 0.0);
  if (failures == 0) std::printf("ok\n");
  return failures == 0 ? 0 : 1;
}

// anvil's optimisation runtime: the numerical kernels generated SQP solvers call (PIQP's QP
// solvers on fixed patterns, a sparse LDL' in a fill-reducing order), behind a small
// interface that needs neither PIQP's nor Eigen's headers.
//
// The definitions are compiled apart, once per program: from anvil_opti.cpp, which a module
// holding a PIQP-backed solver writes beside itself, or as the library the JIT builds
// (anvil::opti::runtime_library()). A module's own translation unit then includes no
// third-party header, and modules compiled with different flags (-march) share one runtime:
// nothing crosses this interface but pointers, ints and doubles. Two copies of the runtime in
// one program are a duplicate-symbol error at link time, never a silent mix.
#ifndef ANVIL_OPTI_RUNTIME_DECLARED
#define ANVIL_OPTI_RUNTIME_DECLARED

#define ANVIL_OPTI_API

namespace anvil_opti {
inline namespace v1 {

/// A sparsity pattern in compressed sparse column form (arrays borrowed, not copied).
struct Pattern {
  int rows;
  int cols;
  const int* outer;  // cols + 1 column starts
  const int* inner;  // row of each stored entry
};

/// PIQP's statuses.
enum QpStatus : int {
  QP_SOLVED = 1,
  QP_MAX_ITER = -1,
  QP_PRIMAL_INFEASIBLE = -2,
  QP_DUAL_INFEASIBLE = -3,
  QP_NUMERICS = -8,
  QP_UNSOLVED = -9,
  QP_INVALID_SETTINGS = -10,
};

/// The QP  min 1/2 x'Px + c'x  s.t.  Ax = b,  h_l <= Gx <= h_u,  x_l <= x <= x_u, solved by
/// PIQP on fixed patterns: dense (column-major n x n, p x n, m x n arrays) or sparse (CSC
/// values of the given patterns; P's upper triangle). Infinite bounds are absent bounds.
/// `setup` allocates; `update` and `solve` do not.
class Qp {
 public:
  struct Impl;
  /// A dense QP with n variables, p equalities and m inequalities.
  ANVIL_OPTI_API static Qp* dense(int n, int p, int m);
  /// A sparse QP on these patterns (P: the upper triangle, diagonal included).
  ANVIL_OPTI_API static Qp* sparse(Pattern P, Pattern A, Pattern G);
  ANVIL_OPTI_API ~Qp();
  Qp(const Qp&) = delete;
  Qp& operator=(const Qp&) = delete;
  /// PIQP's setup (allocation, symbolic factorisation) with these values.
  ANVIL_OPTI_API void setup(const double* P, const double* c, const double* A, const double* b, const double* G,
                            const double* h_l, const double* h_u, const double* x_l, const double* x_u);
  /// New values on the same patterns.
  ANVIL_OPTI_API void update(const double* P, const double* c, const double* A, const double* b, const double* G,
                             const double* h_l, const double* h_u, const double* x_l, const double* x_u);
  /// Solves; returns a QpStatus.
  ANVIL_OPTI_API int solve(double eps_abs, double eps_rel, int max_iter);
  /// Interior-point iterations of the last solve.
  ANVIL_OPTI_API int iterations() const;
  /// The solution: primal x; multipliers y (equalities), z_l, z_u (inequality rows), z_bl,
  /// z_bu (bounds), all non-negative except y.
  ANVIL_OPTI_API const double* x() const;
  ANVIL_OPTI_API const double* y() const;
  ANVIL_OPTI_API const double* z_l() const;
  ANVIL_OPTI_API const double* z_u() const;
  ANVIL_OPTI_API const double* z_bl() const;
  ANVIL_OPTI_API const double* z_bu() const;

 private:
  explicit Qp(Impl* impl) : impl_(impl) {}
  Impl* impl_;
};

/// LDL' of a symmetric matrix of fixed pattern (its upper triangle, CSC), in a fill-reducing
/// (AMD) order chosen once: the constructor orders and factorises symbolically (allocates),
/// `factor` and `solve` do not allocate.
class Ldlt {
 public:
  struct Impl;
  ANVIL_OPTI_API explicit Ldlt(Pattern upper);
  ANVIL_OPTI_API ~Ldlt();
  Ldlt(const Ldlt&) = delete;
  Ldlt& operator=(const Ldlt&) = delete;
  /// Factorises the matrix with these values (in the pattern's order); false on a zero or
  /// non-finite pivot. Otherwise `positive` and `negative` count the pivots' signs: the
  /// matrix's inertia.
  ANVIL_OPTI_API bool factor(const double* values, int* positive, int* negative);
  /// Solves A x = rhs in place with the last factorisation.
  ANVIL_OPTI_API void solve(double* rhs);

 private:
  Impl* impl_;
};

}  // namespace v1
}  // namespace anvil_opti

#endif  // ANVIL_OPTI_RUNTIME_DECLARED

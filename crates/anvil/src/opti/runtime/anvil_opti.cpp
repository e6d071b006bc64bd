// Definitions of anvil's optimisation runtime (see anvil_opti.hpp): PIQP and Eigen behind
// the Qp and Ldlt interfaces. Compiled whole (a module's anvil_opti.cpp), or one part at a
// time with ANVIL_OPTI_PART (the JIT's libraries: the common part, and the dense or the
// sparse QP, each with only its own PIQP instantiations).
#ifndef ANVIL_OPTI_RUNTIME_DEFINED
#define ANVIL_OPTI_RUNTIME_DEFINED
#define ANVIL_OPTI_PART_COMMON 1
#define ANVIL_OPTI_PART_DENSE 2
#define ANVIL_OPTI_PART_SPARSE 3

// GCC 12 reports its own AVX-512 intrinsics (_mm256_undefined_pd in Eigen's packet code) as
// maybe-uninitialized when compiling for AVX-512; the warning is false and not ours to fix.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <Eigen/Dense>
#include <Eigen/OrderingMethods>
#include <Eigen/Sparse>
#include <cmath>
#include <piqp/piqp.hpp>
#include <piqp/sparse/ldlt.hpp>

namespace anvil_opti {
inline namespace v1 {
namespace detail {

using Vec = Eigen::VectorXd;
using SpMat = piqp::SparseMat<double, int>;
using ConstSpMap = Eigen::Map<const SpMat>;
using ConstMatMap = Eigen::Map<const Eigen::MatrixXd>;
using ConstVecMap = Eigen::Map<const Vec>;

inline ConstSpMap map(const Pattern& p, const double* values) {
  return ConstSpMap(p.rows, p.cols, p.outer[p.cols], p.outer, p.inner, values);
}

// PIQP's optional arguments: absent for empty blocks.
template <class Ref, class Map>
piqp::optional<Ref> block(const Map& m, bool present) {
  piqp::optional<Ref> out;
  if (present) out.emplace(m);
  return out;
}

}  // namespace detail

// A QP solver of one kind (dense or sparse): each kind is defined in its own part, so that
// a program (or the JIT's library for one backend) compiles only the PIQP it uses.
struct Qp::Impl {
  virtual ~Impl() = default;
  virtual void apply(bool setup, const double* P, const double* c, const double* A, const double* b,
                     const double* G, const double* h_l, const double* h_u, const double* x_l, const double* x_u) = 0;
  virtual piqp::Settings<double>& settings() = 0;
  virtual int solve() = 0;
  virtual const piqp::Result<double>& result() const = 0;
};

namespace detail {

// PIQP's solver, its update() made to forget the QPs before: update() unscales the stored
// data with the last equilibration and rescales it with a new one. It overwrites every value
// it is given, but the bounds' scaling x_b_scaling (1 until equilibrated) it unscales and
// rescales in place, so that its rounding accumulates from update to update and enters the
// next equilibration and every KKT system: a QP's solution depended (in the last bits,
// ~1e-12 after an SQP solve) on all the QPs solved before it. Reset to 1, with the identity
// equilibration (update's unscaling then changes nothing), an update is a setup with the same
// values. No allocation: init() resizes to the sizes it has.
template <class Solver>
struct Stateless : Solver {
  void forget_scaling() {
    this->m_data.x_b_scaling.setConstant(1.0);
    this->m_preconditioner.init(this->m_data);
  }
};

// PIQP's setup or update with the given values; empty blocks are absent.
template <class Solver, class MatRef, class PMap, class AMap, class GMap>
void call(Solver& s, bool setup, int n, int p, int m, const PMap& P_, const double* c, const AMap& A_, const double* b,
          const GMap& G_, const double* h_l, const double* h_u, const double* x_l, const double* x_u) {
  using VecRef = piqp::CVecRef<double>;
  const ConstVecMap c_(c, n), x_l_(x_l, n), x_u_(x_u, n);
  const ConstVecMap b_(b, p), h_l_(h_l, m), h_u_(h_u, m);
  const auto a = block<MatRef>(A_, p > 0);
  const auto g = block<MatRef>(G_, m > 0);
  const auto bb = block<VecRef>(b_, p > 0);
  const auto hl = block<VecRef>(h_l_, m > 0);
  const auto hu = block<VecRef>(h_u_, m > 0);
  if (setup) {
    s.setup(P_, c_, a, bb, g, hl, hu, x_l_, x_u_);
  } else {
    s.forget_scaling();
    s.update(P_, c_, a, bb, g, hl, hu, x_l_, x_u_);
  }
}

// The parts of one kind's Impl that do not depend on the kind.
template <class Solver>
struct Kind : Qp::Impl {
  Stateless<Solver> solver;
  int n = 0, p = 0, m = 0;
  piqp::Settings<double>& settings() override { return solver.settings(); }
  int solve() override { return static_cast<int>(solver.solve()); }
  const piqp::Result<double>& result() const override { return solver.result(); }
};

}  // namespace detail

#if !defined(ANVIL_OPTI_PART) || ANVIL_OPTI_PART == ANVIL_OPTI_PART_DENSE
namespace detail {
struct DenseQp : Kind<piqp::DenseSolver<double>> {
  void apply(bool setup, const double* P_, const double* c, const double* A_, const double* b, const double* G_,
             const double* h_l, const double* h_u, const double* x_l, const double* x_u) override {
    call<Stateless<piqp::DenseSolver<double>>, piqp::CMatRef<double>>(solver, setup, n, p, m, ConstMatMap(P_, n, n), c,
                                                            ConstMatMap(A_, p, n), b, ConstMatMap(G_, m, n), h_l,
                                                            h_u, x_l, x_u);
  }
};
}  // namespace detail

ANVIL_OPTI_API Qp* Qp::dense(int n, int p, int m) {
  auto* impl = new detail::DenseQp();
  impl->n = n;
  impl->p = p;
  impl->m = m;
  impl->solver.settings().verbose = false;
  return new Qp(impl);
}
#endif

#if !defined(ANVIL_OPTI_PART) || ANVIL_OPTI_PART == ANVIL_OPTI_PART_SPARSE
namespace detail {
struct SparseQp : Kind<piqp::SparseSolver<double, int>> {
  Pattern P{}, A{}, G{};
  void apply(bool setup, const double* P_, const double* c, const double* A_, const double* b, const double* G_,
             const double* h_l, const double* h_u, const double* x_l, const double* x_u) override {
    call<Stateless<piqp::SparseSolver<double, int>>, piqp::CSparseMatRef<double, int>>(
        solver, setup, n, p, m, map(P, P_), c, map(A, A_), b, map(G, G_), h_l, h_u, x_l, x_u);
  }
};
}  // namespace detail

ANVIL_OPTI_API Qp* Qp::sparse(Pattern P, Pattern A, Pattern G) {
  auto* impl = new detail::SparseQp();
  impl->n = P.cols;
  impl->p = A.rows;
  impl->m = G.rows;
  impl->P = P;
  impl->A = A;
  impl->G = G;
  impl->solver.settings().verbose = false;
  return new Qp(impl);
}
#endif

#if !defined(ANVIL_OPTI_PART) || ANVIL_OPTI_PART == ANVIL_OPTI_PART_COMMON
ANVIL_OPTI_API Qp::~Qp() { delete impl_; }

ANVIL_OPTI_API void Qp::setup(const double* P, const double* c, const double* A, const double* b, const double* G,
                              const double* h_l, const double* h_u, const double* x_l, const double* x_u) {
  impl_->apply(true, P, c, A, b, G, h_l, h_u, x_l, x_u);
}

ANVIL_OPTI_API void Qp::update(const double* P, const double* c, const double* A, const double* b, const double* G,
                               const double* h_l, const double* h_u, const double* x_l, const double* x_u) {
  impl_->apply(false, P, c, A, b, G, h_l, h_u, x_l, x_u);
}

ANVIL_OPTI_API int Qp::solve(double eps_abs, double eps_rel, int max_iter) {
  piqp::Settings<double>& s = impl_->settings();
  s.eps_abs = eps_abs;
  s.eps_rel = eps_rel;
  s.max_iter = max_iter;
  s.verbose = false;
  return impl_->solve();
}

ANVIL_OPTI_API int Qp::iterations() const { return static_cast<int>(impl_->result().info.iter); }
ANVIL_OPTI_API const double* Qp::x() const { return impl_->result().x.data(); }
ANVIL_OPTI_API const double* Qp::y() const { return impl_->result().y.data(); }
ANVIL_OPTI_API const double* Qp::z_l() const { return impl_->result().z_l.data(); }
ANVIL_OPTI_API const double* Qp::z_u() const { return impl_->result().z_u.data(); }
ANVIL_OPTI_API const double* Qp::z_bl() const { return impl_->result().z_bl.data(); }
ANVIL_OPTI_API const double* Qp::z_bu() const { return impl_->result().z_bu.data(); }

struct Ldlt::Impl {
  int n = 0;
  // The matrix in the fill-reducing order, and where each of its values is in the caller's.
  detail::SpMat permuted;
  Eigen::VectorXi source;
  // Position of each original row in the permuted order (for solves).
  Eigen::VectorXi position;
  detail::Vec work;
  piqp::sparse::LDLt<double, int> ldlt;
};

ANVIL_OPTI_API Ldlt::Ldlt(Pattern upper) : impl_(new Impl()) {
  Impl& d = *impl_;
  d.n = upper.cols;
  const int nnz = upper.outer[upper.cols];
  // The pattern with each value its own index, permuted: the values say where they came from.
  detail::Vec index(nnz);
  for (int k = 0; k < nnz; ++k) index[k] = static_cast<double>(k);
  const detail::SpMat original = detail::map(upper, index.data());
  Eigen::AMDOrdering<int> amd;
  Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> inverse;
  amd(original.selfadjointView<Eigen::Upper>(), inverse);
  const Eigen::PermutationMatrix<Eigen::Dynamic, Eigen::Dynamic, int> permutation = inverse.inverse();
  d.permuted.resize(d.n, d.n);
  d.permuted.selfadjointView<Eigen::Upper>() = original.selfadjointView<Eigen::Upper>().twistedBy(permutation);
  d.permuted.makeCompressed();
  d.source.resize(d.permuted.nonZeros());
  for (int p = 0; p < d.permuted.nonZeros(); ++p) d.source[p] = static_cast<int>(d.permuted.valuePtr()[p]);
  d.position = permutation.indices();
  d.work.setZero(d.n);
  d.ldlt.factorize_symbolic_upper_triangular(d.permuted);
}

ANVIL_OPTI_API Ldlt::~Ldlt() { delete impl_; }

ANVIL_OPTI_API bool Ldlt::factor(const double* values, int* positive, int* negative) {
  Impl& d = *impl_;
  double* permuted = d.permuted.valuePtr();
  const int nnz = static_cast<int>(d.permuted.nonZeros());
  for (int p = 0; p < nnz; ++p) permuted[p] = values[d.source[p]];
  if (d.ldlt.factorize_numeric_upper_triangular(d.permuted) != d.n) return false;
  *positive = 0;
  *negative = 0;
  for (int k = 0; k < d.n; ++k) {
    const double pivot = d.ldlt.D[k];
    if (!std::isfinite(pivot)) return false;
    *positive += pivot > 0.0;
    *negative += pivot < 0.0;
  }
  return true;
}

ANVIL_OPTI_API void Ldlt::solve(double* rhs) {
  Impl& d = *impl_;
  for (int i = 0; i < d.n; ++i) d.work[d.position[i]] = rhs[i];
  d.ldlt.solve_inplace(d.work);
  for (int i = 0; i < d.n; ++i) rhs[i] = d.work[d.position[i]];
}

#endif  // ANVIL_OPTI_PART_COMMON

}  // namespace v1
}  // namespace anvil_opti

#endif  // ANVIL_OPTI_RUNTIME_DEFINED

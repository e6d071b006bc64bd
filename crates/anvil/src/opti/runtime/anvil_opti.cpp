// Definitions of anvil's optimisation runtime (see anvil_opti.hpp): PIQP and Eigen behind
// the Qp and Ldlt interfaces.
#ifndef ANVIL_OPTI_RUNTIME_DEFINED
#define ANVIL_OPTI_RUNTIME_DEFINED

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

struct Qp::Impl {
  int n = 0, p = 0, m = 0;
  bool sparse = false;
  Pattern P{}, A{}, G{};
  piqp::DenseSolver<double> dense;
  piqp::SparseSolver<double, int> sparse_solver;

  template <class Solver, class MatRef, class PMap, class AMap, class GMap>
  void call(Solver& s, bool setup, const PMap& P_, const double* c, const AMap& A_, const double* b, const GMap& G_,
            const double* h_l, const double* h_u, const double* x_l, const double* x_u) {
    using VecRef = piqp::CVecRef<double>;
    const detail::ConstVecMap c_(c, n), x_l_(x_l, n), x_u_(x_u, n);
    const detail::ConstVecMap b_(b, p), h_l_(h_l, m), h_u_(h_u, m);
    const auto a = detail::block<MatRef>(A_, p > 0);
    const auto g = detail::block<MatRef>(G_, m > 0);
    const auto bb = detail::block<VecRef>(b_, p > 0);
    const auto hl = detail::block<VecRef>(h_l_, m > 0);
    const auto hu = detail::block<VecRef>(h_u_, m > 0);
    if (setup) {
      s.setup(P_, c_, a, bb, g, hl, hu, x_l_, x_u_);
    } else {
      s.update(P_, c_, a, bb, g, hl, hu, x_l_, x_u_);
    }
  }

  void apply(bool setup, const double* P_, const double* c, const double* A_, const double* b, const double* G_,
             const double* h_l, const double* h_u, const double* x_l, const double* x_u) {
    if (sparse) {
      call<piqp::SparseSolver<double, int>, piqp::CSparseMatRef<double, int>>(
          sparse_solver, setup, detail::map(P, P_), c, detail::map(A, A_), b, detail::map(G, G_), h_l, h_u, x_l, x_u);
    } else {
      call<piqp::DenseSolver<double>, piqp::CMatRef<double>>(
          dense, setup, detail::ConstMatMap(P_, n, n), c, detail::ConstMatMap(A_, p, n), b,
          detail::ConstMatMap(G_, m, n), h_l, h_u, x_l, x_u);
    }
  }

  const piqp::Result<double>& result() const { return sparse ? sparse_solver.result() : dense.result(); }
};

ANVIL_OPTI_API Qp* Qp::dense(int n, int p, int m) {
  Impl* impl = new Impl();
  impl->n = n;
  impl->p = p;
  impl->m = m;
  impl->dense.settings().verbose = false;
  return new Qp(impl);
}

ANVIL_OPTI_API Qp* Qp::sparse(Pattern P, Pattern A, Pattern G) {
  Impl* impl = new Impl();
  impl->n = P.cols;
  impl->p = A.rows;
  impl->m = G.rows;
  impl->sparse = true;
  impl->P = P;
  impl->A = A;
  impl->G = G;
  impl->sparse_solver.settings().verbose = false;
  return new Qp(impl);
}

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
  piqp::Settings<double>& s = impl_->sparse ? impl_->sparse_solver.settings() : impl_->dense.settings();
  s.eps_abs = eps_abs;
  s.eps_rel = eps_rel;
  s.max_iter = max_iter;
  s.verbose = false;
  return static_cast<int>(impl_->sparse ? impl_->sparse_solver.solve() : impl_->dense.solve());
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

}  // namespace v1
}  // namespace anvil_opti

#endif  // ANVIL_OPTI_RUNTIME_DEFINED

// A primal-dual interior-point method for nonlinear programs with a filter line search
// (Waechter & Biegler, "On the implementation of an interior-point filter line-search
// algorithm for large-scale nonlinear programming", Math. Program. 106, 2006: the method of
// Ipopt; equation numbers in interior_point.cpp are the paper's):
//
//   min f(x)  s.t.  c(x) = 0,  d(x) - s = 0,  x_L <= x <= x_U,  d_L <= s <= d_U
//
// This is its interface; the method itself (interior_point.cpp) is compiled apart, once per
// program: from the anvil_ipm.cpp a module holding an interior-point solver writes beside
// itself, or as the library the JIT builds once per compiler and flags. A generated module
// then compiles only its problem's glue and KKT factorisation (each solver compiles in a
// fraction of the time), and modules compiled with different flags share one method: nothing
// crosses this interface but pointers, ints, doubles and virtual calls, and nothing here is
// an inline function whose code could differ between them.
//
// The problem (the generated glue, a Problem) evaluates the scaled functions and owns the KKT
// matrix [H + diag(diag_x), J'; J, diag(diag_y)] (H omitted when with_hessian is false),
// J = [J_c; J_d]. With the Hessian (the inertia correction's factorisations) a factorisation
// whose inertia is not (nx, neq + nq, 0) is never solved with: it may stop as soon as it
// knows, reporting any wrong inertia. Without, the method solves with it whatever its inertia.
#ifndef ANVIL_IPM_RUNTIME_DECLARED
#define ANVIL_IPM_RUNTIME_DECLARED

namespace anvil_ipm {
inline namespace v1 {

// The counts of positive, negative and (numerically) zero eigenvalues.
struct Inertia {
  int positive, negative, zero;
};

struct IpmOptions {
  int max_iter;
  double tol, acceptable_tol;
  int acceptable_iter;
  double constr_viol_tol, dual_inf_tol, compl_inf_tol;
  double mu_init;
  bool adaptive_mu;
  double bound_push, bound_frac, bound_relax_factor, nlp_scaling_max_gradient;
  int max_soc;
  bool warm_start;
  double warm_start_bound_push;
  int verbose;
};

// Returned: the restoration phase's own solve ended because the outer method accepts its point.
// TinyStep: the step became too small to change the iterate while the barrier parameter is
// already at its smallest (Ipopt's "search direction becomes too small").
enum class IpmOutcome { Solved, MaxIter, Infeasible, NonFinite, RestorationFailed, Returned, TinyStep };

struct IpmReport {
  IpmOutcome outcome;
  int iterations;
  // Unscaled, at the returned point: objective, stationarity, equality violation, inequality
  // and bound violation, complementarity (as the SQP solvers define them).
  double objective, stat, eq, ineq, comp;
};

// Signed multipliers (positive: the upper bound is active), unscaled: L = f + lam_eq'c +
// lam_q'd + lam_box'x.
struct IpmMultipliers {
  const double *lam_eq, *lam_q, *lam_box;
};

// What the method asks of a problem: the sizes of x, c and d (fixed at construction), the
// scaling, and the functions below, all on the scaled problem.
class Problem {
 public:
  const int nx, neq, nq;
  // The scaling of f and of the neq + nq rows, set by choose_scaling(); the method sets them
  // to 1 before it.
  double obj_scale = 1.0;
  double* const row_scale;

  Problem(int nx_, int neq_, int nq_);
  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
  virtual ~Problem();

  // The largest violation of the rows (c, d), given scaled, in the problem's own units:
  // |c| and d outside its own bounds (Ipopt's inf_pr, 3.14: not d - s).
  double row_violation(const double* c, const double* d) const;

  // Unscaled bounds (+-inf: none).
  virtual double x_lb(int j) const = 0;
  virtual double x_ub(int j) const = 0;
  virtual double q_lb(int i) const = 0;
  virtual double q_ub(int i) const = 0;
  // The variable x_j stands for: j itself, or for a copy of a shared variable (a copy per
  // stage), the index of its first copy (by default j). The method measures and regularises
  // the problem as written, with one variable where it has copies: the dual residual of a
  // shared variable is the sum of its copies' (the copies' rows' multipliers cancel in it),
  // the inertia correction shifts each of its N + 1 copies by delta_w / (N + 1), and the
  // restoration phase's proximity term weighs each by 1 / (N + 1).
  virtual int stands_for(int j) const;
  // Whether equality row i ties two copies of one shared variable (s_{k+1} - s_k = 0): the
  // restoration problem keeps such rows exact, as the problem with one variable has no row
  // to relax, and their multipliers count in no measure of the multipliers' size (by
  // default none).
  virtual bool ties_copies(int i) const;
  // After a linearize() with unit scaling.
  virtual void choose_scaling(const double* grad, double max_gradient) = 0;
  virtual bool values(const double* x, double* f, double* c, double* d) = 0;
  // Also keeps J for add_jacobian_transpose_times() and factorize().
  virtual bool linearize(const double* x, double* f, double* grad, double* c, double* d) = 0;
  // out += J'y.
  virtual void add_jacobian_transpose_times(const double* yc, const double* yd, double* out) = 0;
  // The Hessian of f + yc'c + yd'd, or of yc'c + yd'd alone, for factorize().
  virtual bool hessian(const double* x, const double* yc, const double* yd) = 0;
  virtual bool constraint_hessian(const double* x, const double* yc, const double* yd) = 0;
  virtual Inertia factorize(bool with_hessian, const double* diag_x, const double* diag_y) = 0;
  // Solves with the last factorisation (rhs of nx + neq + nq entries, overwritten); returns
  // the residual ratio reached (dense_ldl.hpp: refine()).
  virtual double solve(double* rhs) = 0;
  // A stabler factorisation from now on (false if none is); back to the fastest, at each
  // solve's start.
  virtual bool increase_quality() = 0;
  virtual void reset_quality() = 0;
  // Whether a solve without a restoration phase of its own may stop at (x, with d's slacks
  // s): a restoration problem's, once the outer method accepts the point; by default never.
  virtual bool done(const double* x, const double* s);
  // The objective and primal infeasibility (unscaled) an iteration's log line reports at x,
  // where they are not this problem's own: false (the default) for the problem's own.
  virtual bool reported(const double* x, double* f, double* inf_pr);
};

// The method on a problem of fixed sizes. Its arrays are allocated at construction (a solve
// allocates nothing); an outer method (one with a restoration phase) also holds the
// restoration problem and the method that solves it.
class InteriorPoint {
 public:
  // The method's state and code (interior_point.cpp).
  class Method;

  // For problems of p's sizes.
  explicit InteriorPoint(const Problem& p, bool outer = true);
  InteriorPoint(const InteriorPoint&) = delete;
  InteriorPoint& operator=(const InteriorPoint&) = delete;
  ~InteriorPoint();

  // Solves from x0 (and, with warm.lam_* non-null, those multipliers). `warm` entries may be
  // null. Writes x, the unscaled signed multipliers and the report.
  IpmReport run(Problem& p, const double* x0, IpmMultipliers warm, const IpmOptions& o, double* x_out, double* lam_eq,
                double* lam_q, double* lam_box);

 private:
  Method* method_;
};

// P with its rows relaxed by penalised slacks, as a problem of its own:
//   min  w f(x) + rho sum(p + n) + zeta/2 ||D_R (x - x_R)||^2
//   s.t. c(x) - p_c + n_c = 0,  d_L <= d(x) - p_d + n_d <= d_U,  x_L <= x <= x_U,  p, n >= 0
// Its variables are (x, p, n); its KKT systems are P's with p and n eliminated (their blocks
// are diagonal), so P's factorisation serves it. Two problems are of this form:
// - the restoration problem of the (scaled) problem P at the point x_R where the restoration
//   phase starts (section 3.3, Ipopt's form): w = 0, rho = 1000, zeta = sqrt(mu_R) with mu_R
//   the barrier parameter the phase starts at, D_R = diag(min(1, 1 / |x_R|)). The
//   restoration phase solves it with a second method (one without a restoration phase of its
//   own) until the outer method accepts the point;
// - the elastic form of a QP (Fletcher's Sl1QP, for an SQP step whose QP is infeasible):
//   w = 1, zeta = 0, no outer method: solved to optimality by an InteriorPoint without a
//   restoration phase (the elastic form is always feasible).
class RestorationNlp final : public Problem {
 public:
  static constexpr double kRho = 1000.0;
  // The relaxed problem of one with outer_nx variables, rows_eq equality and rows_q
  // inequality rows.
  RestorationNlp(int outer_nx, int rows_eq, int rows_q);
  ~RestorationNlp() override;

  // The relaxed problem: its rows relaxed but those that tie copies (Problem::ties_copies).
  void relax_rows_of(Problem* problem);
  InteriorPoint::Method* outer = nullptr;
  // Whether P's own objective is kept (w = 1: the elastic form; else w = 0), and the slacks'
  // weight.
  bool keep_objective = false;
  double rho = kRho;
  double zeta = 0.0, *xr, *dr;
  // The outer problem's (scaled, relaxed) bounds of d.
  double *q_lower, *q_upper;

  double x_lb(int j) const override;
  double x_ub(int j) const override;
  double q_lb(int i) const override;
  double q_ub(int i) const override;
  int stands_for(int j) const override;
  bool ties_copies(int i) const override;
  // Whether row i of P has its p and n (1), or is kept exact (0; its p and n then enter
  // nothing but their barrier and weight).
  double relaxed(int i) const { return relaxed_[i]; }
  void choose_scaling(const double* grad, double max_gradient) override;
  bool values(const double* x, double* f, double* c, double* d) override;
  bool linearize(const double* x, double* f, double* grad, double* c, double* d) override;
  void add_jacobian_transpose_times(const double* yc, const double* yd, double* out) override;
  // The proximity term's curvature is added in factorize(); P's objective's is P's.
  bool hessian(const double* x, const double* yc, const double* yd) override;
  // The slacks enter linearly: the rows' curvature is P's (for this problem's own
  // restoration phase, which the elastic form has).
  bool constraint_hessian(const double* x, const double* yc, const double* yd) override;
  Inertia factorize(bool with_hessian, const double* diag_x, const double* diag_y) override;
  // rhs = (r_x, r_p, r_n, r_y): the rows of p and n are diag_p dp - dy = r_p and
  // diag_n dn + dy = r_n.
  double solve(double* rhs) override;
  bool increase_quality() override;
  void reset_quality() override;
  // Whether the outer method takes the point (x, with d's slacks s) back; never without one
  // (the elastic form, solved to its own optimum).
  bool done(const double* x, const double* s) override;
  // The outer problem's objective and violation at x's first outer_nx entries (Ipopt's
  // restoration lines report them); false for the elastic form (no outer method).
  bool reported(const double* x, double* f, double* inf_pr) override;

 private:
  // The relaxed problem (relax_rows_of()), and its sizes.
  Problem* p = nullptr;
  const int NXO, NY;
  double* buffer_;
  double f_outer_ = 0.0, *grad_outer_;
  double *diag_outer_x_, *diag_outer_y_, *diag_p_, *diag_n_;
  double *rhs_outer_, *r_p_, *r_n_, *relaxed_;
  // The outer problem's rows at a reported point.
  double *c_reported_, *d_reported_;

  double objective(const double* x) const;
  // c - p + n, d - p + n.
  void relax(const double* x, double* c, double* d) const;
};

}  // namespace v1
}  // namespace anvil_ipm
#endif  // ANVIL_IPM_RUNTIME_DECLARED

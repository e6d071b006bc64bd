// The interior-point method of interior_point.hpp: its definitions, compiled apart (once per
// program, or per compiler and flags as the JIT's library). Equation numbers are the paper's
// (Waechter & Biegler 2006).
#include "interior_point.hpp"

#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <limits>
#include <memory>

namespace anvil_ipm {
namespace {
#include "common.hpp"
}  // namespace

inline namespace v1 {

Problem::Problem(int nx_, int neq_, int nq_)
    : nx(nx_), neq(neq_), nq(nq_), row_scale(new double[ipm_storage(neq_ + nq_)]) {
  for (int i = 0; i < neq + nq; ++i) row_scale[i] = 1.0;
}

Problem::~Problem() { delete[] row_scale; }

int Problem::stands_for(int j) const { return j; }
bool Problem::ties_copies(int) const { return false; }

bool Problem::done(const double*, const double*) { return false; }

bool Problem::reported(const double*, double*, double*) { return false; }

double Problem::row_violation(const double* c, const double* d) const {
  const auto max2 = [](double a, double b) { return a > b ? a : b; };
  double largest = 0.0;
  for (int i = 0; i < neq; ++i) largest = max2(largest, std::fabs(c[i]) / row_scale[i]);
  for (int i = 0; i < nq; ++i) {
    const double di = d[i] / row_scale[neq + i];
    largest = max2(largest, max2(q_lb(i) - di, di - q_ub(i)));
  }
  return largest;
}

// The method's state, its arrays sized at construction, and its steps (Algorithm A).
class InteriorPoint::Method {
 public:
  // For problems of p's sizes; an outer method (one with a restoration phase) also holds the
  // restoration problem and the method that solves it.
  Method(const Problem& p, bool outer)
      : NX(p.nx), NEQ(p.neq), NQ(p.nq), NY(p.neq + p.nq), NK(p.nx + p.neq + p.nq), Outer(outer) {
    int doubles = 0;
    each_array([&](double*&, int n) { doubles += n; });
    doubles_.reset(new double[doubles]);
    double* next = doubles_.get();
    each_array([&](double*& a, int n) {
      a = next;
      next += n;
    });
    const int q = ipm_storage(NQ);
    flags_.reset(new bool[2 * NX + 2 * q + NEQ + 1]);
    hl_ = flags_.get(), hu_ = hl_ + NX, hdl_ = hu_ + NX, hdu_ = hdl_ + q, ties_copies_ = hdu_ + q;
    stands_for_.reset(new int[NX > 0 ? NX : 1]);
    if (Outer) {
      resto_nlp_.reset(new RestorationNlp(NX, NEQ, NQ));
      resto_.reset(new Method(*resto_nlp_, false));
    }
  }
  Method(const Method&) = delete;
  Method& operator=(const Method&) = delete;

 private:
  // The sizes, fixed at construction (named as constants: the arithmetic below reads as it
  // did when they were): x's, c's, d's, the rows', the KKT matrix's. Whether this method has
  // a restoration phase.
  const int NX, NEQ, NQ, NY, NK;
  const bool Outer;

 public:
  // The iterate (scaled problem); the outer method takes its restoration phase's.
  double *x, *s, *yc, *yd;
  double *zl, *zu, *vl, *vu;

  // Solves from x0 (and, with warm.lam_* non-null, those multipliers). `warm` entries may be
  // null. Writes x, the unscaled signed multipliers and the report.
  IpmReport run(Problem& p, const double* x0, IpmMultipliers warm, const IpmOptions& o, double* x_out, double* lam_eq,
                double* lam_q, double* lam_box) {
    IpmReport report{IpmOutcome::MaxIter, 0, nan(), nan(), nan(), nan(), nan()};
    restoration_phase_ = false;
    p.reset_quality();
    const IpmOutcome start = initialize(p, x0, warm, o);
    if (start != IpmOutcome::Solved) {
      report.outcome = start;
    } else {
      report.outcome = iterate(p, o, &report.iterations);
    }
    unscale(p, x_out, lam_eq, lam_q, lam_box);
    measure(p, x_out, lam_q, lam_box, &report);
    return report;
  }

  // The restoration phase's solve (of a RestorationNlp) from x0, until the outer method
  // accepts a point (Returned) or it ends otherwise. Its bound multipliers are given per side
  // (x's in zl0, zu0; d's slacks' in vl0, vu0) and its equality multipliers start at 0, as
  // Ipopt's restoration phase starts (its constr_mult_init_max is 0 there): with
  // least-squares ones, signed bound multipliers and a smaller proximity weight, the race
  // car's first restoration step was 37 times Ipopt's.
  IpmOutcome restoration_run(Problem& p, const double* x0, const double* zl0, const double* zu0, const double* vl0,
                             const double* vu0, const IpmOptions& o, int offset, int* iterations) {
    iteration_offset_ = offset;
    restoration_phase_ = true;
    *iterations = 0;
    const IpmOutcome start = initialize(p, x0, IpmMultipliers{nullptr, nullptr, nullptr}, o, /*least_squares=*/false);
    if (start != IpmOutcome::Solved) return start;
    for (int j = 0; j < NX; ++j) {
      zl[j] = hl_[j] ? zl0[j] : 0.0;
      zu[j] = hu_[j] ? zu0[j] : 0.0;
    }
    for (int i = 0; i < NQ; ++i) {
      vl[i] = hdl_[i] ? vl0[i] : 0.0;
      vu[i] = hdu_[i] ? vu0[i] : 0.0;
    }
    return iterate(p, o, iterations);
  }

  // Whether the restoration phase's point (x, with d's slacks s_in) goes back to this method:
  // its largest row violation is 10 % below where restoration started (or within the
  // tolerances) and the filter accepts it (Ipopt's test: measured by the sum of the
  // violations instead, the race car's restoration went on after Ipopt's had returned).
  bool restoration_accepts(Problem& p, const double* x_in, const double* s_in) {
    double f = 0.0;
    if (!p.values(x_in, &f, ct_, dt_)) return false;
    for (int i = 0; i < NQ; ++i) st_[i] = inside(s_in[i], dl_[i], du_[i], hdl_[i], hdu_[i]);
    const double largest = max2(kKappaResto * inf_pr_resto_start_, resto_inf_pr_floor_);
    if (!(largest_violation(ct_, dt_, st_) <= largest)) return false;
    const double phi = barrier(f, x_in, st_);
    return std::isfinite(phi) && filter_accepts(constraint_violation(ct_, dt_, st_), phi);
  }


 private:
  // Constants of the method (the paper's and Ipopt's defaults).
  static constexpr double kKappaEps = 10.0, kKappaMu = 0.2, kThetaMu = 1.5, kTauMin = 0.99;
  static constexpr double kKappaSigma = 1e10, kKappaD = 1e-5, kSMax = 100.0;
  static constexpr double kGammaTheta = 1e-5, kGammaPhi = 1e-8, kDelta = 1.0, kSTheta = 1.1, kSPhi = 2.3;
  static constexpr double kEta = 1e-8, kGammaAlpha = 0.05, kKappaSoc = 0.99;
  static constexpr double kDeltaW0 = 1e-4, kDeltaWMin = 1e-20, kDeltaWMax = 1e40, kKappaWMinus = 1.0 / 3.0;
  static constexpr double kKappaWPlus = 8.0, kKappaWPlusBar = 100.0, kDeltaCBar = 1e-8, kKappaC = 0.25;
  static constexpr double kMultInitMax = 1e3, kTinyStepViolation = 1e-4;
  // A solve whose residual ratio stays above this after refinement is treated as the solve of
  // a singular matrix (Ipopt's residual_ratio_singular).
  static constexpr double kResidualRatioSingular = 1e-5;
  static constexpr int kFilterCapacity = 256, kMaxBacktracks = 40, kMaxRestoration = 100;
  // Soft restoration (Ipopt's): consecutive steps at most, and the reduction of the
  // barrier problem's optimality error each must achieve.
  static constexpr int kMaxSoftSteps = 10;
  static constexpr double kSoftReduction = 0.9999;
  // The watchdog (Ipopt's): after this many consecutive shortened steps, full steps are
  // taken for up to kWatchdogTrials iterations unless one is acceptable to the point where
  // they started.
  static constexpr int kWatchdogTrigger = 10, kWatchdogTrials = 3;
  static constexpr int kMaxFilterResets = 5, kFilterResetTrigger = 5;

  // The arrays, carved out of doubles_ and flags_ (sizes: NX, NQ, NEQ, NY, NK).
  std::unique_ptr<double[]> doubles_;
  std::unique_ptr<bool[]> flags_;
  // Relaxed, scaled bounds of x and s; whether each is finite.
  double *xl_, *xu_, *dl_, *du_;
  bool *hl_, *hu_, *hdl_, *hdu_;
  // The problem as written (Problem::stands_for, ties_copies): the variable each x_j stands
  // for, whether any stands for another, and which equality rows tie copies.
  std::unique_ptr<int[]> stands_for_;
  bool has_copies_ = false;
  bool* ties_copies_;
  // Values at the iterate.
  double f_, *grad_, *c_, *d_;
  // The search direction.
  double *dx_, *ds_, *dyc_, *dyd_;
  double *dzl_, *dzu_, *dvl_, *dvu_;
  // A trial point.
  double *xt_, *st_, ft_, *ct_, *dt_;
  // The KKT system's diagonals and right-hand side; the s-rows' eliminated parts.
  double *diag_x_, *diag_y_, *rhs_, *rs_, *ds_diag_;
  // How many variables stand for the one each x_j stands for (a shared variable's copies:
  // N + 1; else 1). The inertia correction shifts each by delta_w / copies, so that the copies
  // are regularised as the one variable (each shifted by delta_w, they shift it by
  // (N + 1) delta_w: an inertia Ipopt corrects on the problem as written passed uncorrected),
  // and the restoration phase's proximity term weighs each by 1 / copies.
  double* copies_;
  // The dual residual of the problem as written (dual_residual_as_written()).
  double* rx_written_;
  // The barrier gradient, the dual residual; the second-order correction's constraint values.
  double *gphi_x_, *gphi_s_, *rx_;
  double *csoc_, *dsoc_;
  // Where the restoration phase started.
  double *xr_, *sr_;
  // The iterate before a soft restoration step (restored if the step does not help).
  double *xb_, *sb_, *ycb_, *ydb_;
  double *zlb_, *zub_, *vlb_, *vub_;
  int soft_steps_;
  // Whether the multipliers were started again by least squares since the last step taken.
  bool multipliers_restarted_;
  // The watchdog: consecutive shortened steps; whether it runs, its full steps so far; the
  // point, direction and line-search references (theta, phi, slope) where it started.
  int shortened_, watchdog_steps_;
  bool in_watchdog_;
  double watchdog_theta_, watchdog_phi_, watchdog_slope_;
  double *xw_, *sw_, *ycw_, *ydw_;
  double *zlw_, *zuw_, *vlw_, *vuw_;
  double *dxw_, *dsw_, *dycw_, *dydw_;
  double *dzlw_, *dzuw_, *dvlw_, *dvuw_;
  // The restoration phase: its problem and solver (none in the restoration phase's own
  // solver), the violation where it started, and where its iterations are numbered from.
  std::unique_ptr<RestorationNlp> resto_nlp_;
  std::unique_ptr<Method> resto_;
  // Its starting point and bound multipliers (x's, then p's and n's), d's slacks' multipliers.
  double *resto_x0_, *resto_zl_, *resto_zu_;
  double *resto_vl_, *resto_vu_;
  // The violation where the restoration phase started (sum and largest row), and the
  // largest row violation it may always return with.
  double theta_resto_start_ = 0.0, inf_pr_resto_start_ = 0.0, resto_inf_pr_floor_ = 0.0;
  int iteration_offset_ = 0;
  // Whether this solve is a restoration phase's (restoration_run), whose first iteration
  // keeps the barrier parameter it starts with.
  bool restoration_phase_ = false;
  static constexpr double kKappaResto = 0.9, kBoundMultResetThreshold = 1000.0;
  // The adaptive barrier update: whether mu is free (LOQO's rule) and the optimality errors
  // of recent iterations it must keep improving on.
  static constexpr int kReferences = 4;
  bool free_mode_;
  double references_[kReferences];
  int reference_len_, reference_next_;
  // The filter: pairs (theta, phi) a trial point must improve on.
  double filter_theta_[kFilterCapacity], filter_phi_[kFilterCapacity];
  int filter_len_, filter_rejections_ = 0, filter_resets_ = 0;
  bool last_rejection_by_filter_ = false;
  // measure_residuals(): the larger of the scaled dual and the primal residual, and s_c.
  struct Residuals {
    double dual_and_primal = 0.0, sc = 1.0;
  } residuals_;
  double mu_, tau_, delta_w_last_, delta_w_, delta_c_ = 0.0, solve_ratio_ = 0.0, theta_min_, theta_max_;
  int acceptable_count_;
  // How the last step was accepted, as Ipopt prints it: 'f' an f-type step (switching and
  // Armijo conditions), 'h' one the filter took, upper case after a second-order correction,
  // 't' a tiny step, 'w' a watchdog step.
  char step_kind_;
  // Whether the last step was a tiny one (the line search's tiny-step rule).
  bool tiny_step_ = false;
  bool debug_ = false;

  // Calls visit(array, length) for each of the arrays of doubles (lengths of at least 1).
  template <class Visit>
  void each_array(Visit visit) {
    const int q = ipm_storage(NQ), e = ipm_storage(NEQ), y = ipm_storage(NY);
    const int resto = Outer ? NX + 2 * NY : 1;
    for (double** a : {&x, &zl, &zu, &xl_, &xu_, &grad_, &dx_, &dzl_, &dzu_, &xt_, &diag_x_, &copies_,
                       &rx_written_, &gphi_x_, &rx_, &xr_, &xb_, &zlb_, &zub_, &xw_, &zlw_, &zuw_, &dxw_, &dzlw_,
                       &dzuw_}) {
      visit(*a, NX);
    }
    for (double** a : {&s, &yd, &vl, &vu, &dl_, &du_, &d_, &ds_, &dyd_, &dvl_, &dvu_, &st_, &dt_, &rs_, &ds_diag_,
                       &gphi_s_, &dsoc_, &sr_, &sb_, &ydb_, &vlb_, &vub_, &sw_, &ydw_, &vlw_, &vuw_, &dsw_, &dydw_,
                       &dvlw_, &dvuw_, &resto_vl_, &resto_vu_}) {
      visit(*a, q);
    }
    for (double** a : {&yc, &c_, &dyc_, &ct_, &csoc_, &ycb_, &ycw_, &dycw_}) visit(*a, e);
    visit(diag_y_, y);
    visit(rhs_, NK);
    visit(resto_x0_, resto);
    visit(resto_zl_, resto);
    visit(resto_zu_, resto);
  }

  static double nan() { return std::numeric_limits<double>::quiet_NaN(); }
  static double inf() { return std::numeric_limits<double>::infinity(); }
  static double max2(double a, double b) { return a > b ? a : b; }
  static double min2(double a, double b) { return a < b ? a : b; }
  // |v|, NaN counting as infinite (overflowed multipliers give inf - inf: an error measure
  // that dropped the NaN would read as small).
  static double magnitude(double v) { return v == v ? std::fabs(v) : inf(); }
  static double norm_inf(const double* v, int n) {
    double m = 0.0;
    for (int i = 0; i < n; ++i) m = max2(m, magnitude(v[i]));
    return m;
  }

  // The relaxed bounds (Ipopt's bound_relax_factor): strictly feasible interiors exist for
  // equal bounds, and rounding cannot make a bound unreachable. A bound moves by factor *
  // max(1, |v|), at most `most` (constr_viol_tol), in the problem's own units before any
  // scaling (as Ipopt relaxes: relaxed after scaling, a row scaled down by 1e-5 would be
  // relaxed 1e5 times as much in its own units).
  static double relaxation(double v, double factor, double most) { return min2(most, factor * max2(1.0, std::fabs(v))); }
  static double relax_down(double v, double factor, double most) { return v - relaxation(v, factor, most); }
  static double relax_up(double v, double factor, double most) { return v + relaxation(v, factor, most); }

  // v pushed into the interior of [lo, hi] (section 3.6).
  static double push(double v, double lo, double hi, bool has_lo, bool has_hi, double k1, double k2) {
    double pl = k1 * max2(1.0, std::fabs(lo)), pu = k1 * max2(1.0, std::fabs(hi));
    if (has_lo && has_hi) {
      pl = min2(pl, k2 * (hi - lo));
      pu = min2(pu, k2 * (hi - lo));
    }
    if (has_lo) v = max2(v, lo + pl);
    if (has_hi) v = min2(v, hi - pu);
    if (has_lo && has_hi && !(v > lo && v < hi)) v = 0.5 * (lo + hi);
    return v;
  }

  // `least_squares`: a cold start's equality multipliers by least squares (else 0).
  IpmOutcome initialize(Problem& p, const double* x0, IpmMultipliers warm, const IpmOptions& o,
                        bool least_squares = true) {
    for (int j = 0; j < NX; ++j) {
      x[j] = x0[j];
      zl[j] = zu[j] = 0.0;
    }
    for (int i = 0; i < NEQ; ++i) yc[i] = 0.0;
    for (int i = 0; i < NQ; ++i) s[i] = yd[i] = vl[i] = vu[i] = 0.0;
    // Scaling by the gradients at the starting point (section 3.8).
    for (int j = 0; j < NX; ++j) {
      hl_[j] = std::isfinite(p.x_lb(j));
      hu_[j] = std::isfinite(p.x_ub(j));
      xl_[j] = hl_[j] ? relax_down(p.x_lb(j), o.bound_relax_factor, o.constr_viol_tol) : -inf();
      xu_[j] = hu_[j] ? relax_up(p.x_ub(j), o.bound_relax_factor, o.constr_viol_tol) : inf();
    }
    has_copies_ = false;
    for (int j = 0; j < NX; ++j) {
      stands_for_[j] = p.stands_for(j);
      has_copies_ = has_copies_ || stands_for_[j] != j;
      rx_written_[j] = 0.0;
    }
    // (rx_written_ as scratch: the count per variable stood for.)
    for (int j = 0; j < NX; ++j) rx_written_[stands_for_[j]] += 1.0;
    for (int j = 0; j < NX; ++j) copies_[j] = rx_written_[stands_for_[j]];
    for (int i = 0; i < NEQ; ++i) ties_copies_[i] = p.ties_copies(i);
    const double k1 = o.warm_start ? o.warm_start_bound_push : o.bound_push;
    const double k2 = o.warm_start ? o.warm_start_bound_push : o.bound_frac;
    p.obj_scale = 1.0;
    for (int i = 0; i < NY; ++i) p.row_scale[i] = 1.0;
    // The gradients are taken at the user's point as given, as Ipopt takes them (before the
    // bound push), or at the pushed point where they cannot be evaluated there.
    const bool scale_at_x0 = o.nlp_scaling_max_gradient > 0.0 && p.linearize(x, &f_, grad_, c_, d_);
    for (int j = 0; j < NX; ++j) x[j] = push(x[j], xl_[j], xu_[j], hl_[j], hu_[j], k1, k2);
    if (scale_at_x0) p.choose_scaling(grad_, o.nlp_scaling_max_gradient);
    if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
    if (o.nlp_scaling_max_gradient > 0.0 && !scale_at_x0) {
      p.choose_scaling(grad_, o.nlp_scaling_max_gradient);
      if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
    }
    for (int i = 0; i < NQ; ++i) {
      const double scale = p.row_scale[NEQ + i];
      hdl_[i] = std::isfinite(p.q_lb(i));
      hdu_[i] = std::isfinite(p.q_ub(i));
      dl_[i] = hdl_[i] ? scale * relax_down(p.q_lb(i), o.bound_relax_factor, o.constr_viol_tol) : -inf();
      du_[i] = hdu_[i] ? scale * relax_up(p.q_ub(i), o.bound_relax_factor, o.constr_viol_tol) : inf();
      s[i] = push(d_[i], dl_[i], du_[i], hdl_[i], hdu_[i], k1, k2);
    }
    mu_ = o.mu_init;
    tau_ = max2(kTauMin, 1.0 - mu_);
    delta_w_last_ = 0.0;
    delta_w_ = delta_c_ = 0.0;
    acceptable_count_ = 0;
    tiny_step_ = false;
    soft_steps_ = 0;
    multipliers_restarted_ = false;
    shortened_ = 0;
    in_watchdog_ = false;
    free_mode_ = o.adaptive_mu;
    reference_len_ = reference_next_ = 0;
    step_kind_ = ' ';
    const double theta = constraint_violation(c_, d_, s);
    theta_max_ = 1e4 * max2(1.0, theta);
    theta_min_ = 1e-4 * max2(1.0, theta);
    reset_filter();
    filter_resets_ = 0;
    if (warm.lam_box != nullptr || warm.lam_eq != nullptr || warm.lam_q != nullptr) {
      warm_multipliers(p, warm, o);
      // Without equality multipliers, y as for a cold start.
      if (warm.lam_eq == nullptr) least_squares_multipliers(p);
    } else {
      for (int j = 0; j < NX; ++j) {
        zl[j] = hl_[j] ? 1.0 : 0.0;
        zu[j] = hu_[j] ? 1.0 : 0.0;
      }
      for (int i = 0; i < NQ; ++i) {
        vl[i] = hdl_[i] ? 1.0 : 0.0;
        vu[i] = hdu_[i] ? 1.0 : 0.0;
      }
      if (least_squares) least_squares_multipliers(p);
    }
    return IpmOutcome::Solved;
  }

  // Multipliers of a warm start, scaled, the bound multipliers kept off zero.
  void warm_multipliers(Problem& p, IpmMultipliers warm, const IpmOptions& o) {
    const double floor = o.warm_start_bound_push;
    for (int j = 0; j < NX; ++j) {
      const double lam = warm.lam_box != nullptr ? warm.lam_box[j] * p.obj_scale : 0.0;
      zl[j] = hl_[j] ? max2(-lam, floor) : 0.0;
      zu[j] = hu_[j] ? max2(lam, floor) : 0.0;
    }
    for (int i = 0; i < NEQ; ++i) yc[i] = warm.lam_eq != nullptr ? warm.lam_eq[i] * p.obj_scale / p.row_scale[i] : 0.0;
    for (int i = 0; i < NQ; ++i) {
      yd[i] = warm.lam_q != nullptr ? warm.lam_q[i] * p.obj_scale / p.row_scale[NEQ + i] : 0.0;
      vl[i] = hdl_[i] ? max2(-yd[i], floor) : 0.0;
      vu[i] = hdu_[i] ? max2(yd[i], floor) : 0.0;
    }
  }

  // y minimising the dual residual ||grad f + J'y - z|| (section 3.6), or 0 if that is large
  // or J is rank deficient. The equality rows are not regularised (Ipopt's D_c = 0): where J
  // has singular values near 1e-4, a shift of 1e-8 would move y by as much as y itself.
  // (A shared variable's copies weigh once each here, so that its residual R counts
  // R^2 / (N + 1) where the problem as written counts R^2: weighed N + 1 times each, as
  // written, CasADi's race car by stages took a median 106 iterations from nine starts
  // within 1e-9 of its guess, against 39 weighed once and Ipopt's 38.)
  void least_squares_multipliers(Problem& p) {
    for (int i = 0; i < NEQ; ++i) yc[i] = 0.0;
    for (int i = 0; i < NQ; ++i) yd[i] = 0.0;
    if (NY == 0) return;
    for (int j = 0; j < NX; ++j) diag_x_[j] = 1.0;
    for (int i = 0; i < NEQ; ++i) diag_y_[i] = 0.0;
    for (int i = 0; i < NQ; ++i) diag_y_[NEQ + i] = -1.0;
    Inertia inertia = p.factorize(false, diag_x_, diag_y_);
    while (inertia.zero > 0 && p.increase_quality()) inertia = p.factorize(false, diag_x_, diag_y_);
    if (inertia.zero > 0) return;
    for (int j = 0; j < NX; ++j) rhs_[j] = -(grad_[j] - zl[j] + zu[j]);
    for (int i = 0; i < NEQ; ++i) rhs_[NX + i] = 0.0;
    for (int i = 0; i < NQ; ++i) rhs_[NX + NEQ + i] = vl[i] - vu[i];
    p.solve(rhs_);
    if (!all_finite(rhs_ + NX, NY) || largest_multiplier(rhs_ + NX) > kMultInitMax) return;
    for (int i = 0; i < NEQ; ++i) yc[i] = rhs_[NX + i];
    for (int i = 0; i < NQ; ++i) yd[i] = rhs_[NX + NEQ + i];
  }

  // ||c||_1 + ||d - s||_1 (scaled): the filter's constraint violation theta.
  double constraint_violation(const double* c, const double* d, const double* sv) const {
    double t = 0.0;
    for (int i = 0; i < NEQ; ++i) t += std::fabs(c[i]);
    for (int i = 0; i < NQ; ++i) t += std::fabs(d[i] - sv[i]);
    return t;
  }

  // max(||c||_inf, ||d - s||_inf) (scaled): Ipopt's primal infeasibility.
  double largest_violation(const double* c, const double* d, const double* sv) const {
    double t = 0.0;
    for (int i = 0; i < NEQ; ++i) t = max2(t, std::fabs(c[i]));
    for (int i = 0; i < NQ; ++i) t = max2(t, std::fabs(d[i] - sv[i]));
    return t;
  }

  // The barrier function phi_mu (with Ipopt's damping of one-sided bounds) at (f, xv, sv).
  double barrier(double f, const double* xv, const double* sv) const {
    double phi = f;
    for (int j = 0; j < NX; ++j) {
      if (hl_[j]) phi -= mu_ * std::log(xv[j] - xl_[j]) - (hu_[j] ? 0.0 : kKappaD * mu_ * (xv[j] - xl_[j]));
      if (hu_[j]) phi -= mu_ * std::log(xu_[j] - xv[j]) - (hl_[j] ? 0.0 : kKappaD * mu_ * (xu_[j] - xv[j]));
    }
    for (int i = 0; i < NQ; ++i) {
      if (hdl_[i]) phi -= mu_ * std::log(sv[i] - dl_[i]) - (hdu_[i] ? 0.0 : kKappaD * mu_ * (sv[i] - dl_[i]));
      if (hdu_[i]) phi -= mu_ * std::log(du_[i] - sv[i]) - (hdl_[i] ? 0.0 : kKappaD * mu_ * (du_[i] - sv[i]));
    }
    return phi;
  }

  // The barrier gradient at the iterate, and the dual residual of the barrier problem without
  // its bound multipliers: rx = grad phi_x + J'y.
  void barrier_gradient(Problem& p) {
    for (int j = 0; j < NX; ++j) {
      double g = grad_[j];
      if (hl_[j]) g -= mu_ / (x[j] - xl_[j]) - (hu_[j] ? 0.0 : kKappaD * mu_);
      if (hu_[j]) g += mu_ / (xu_[j] - x[j]) - (hl_[j] ? 0.0 : kKappaD * mu_);
      gphi_x_[j] = g;
      rx_[j] = g;
    }
    p.add_jacobian_transpose_times(yc, yd, rx_);
    for (int i = 0; i < NQ; ++i) {
      double g = 0.0;
      if (hdl_[i]) g -= mu_ / (s[i] - dl_[i]) - (hdu_[i] ? 0.0 : kKappaD * mu_);
      if (hdu_[i]) g += mu_ / (du_[i] - s[i]) - (hdl_[i] ? 0.0 : kKappaD * mu_);
      gphi_s_[i] = g;
    }
  }

  // The optimality error of the barrier problem for mu (0: the NLP's), scaled (eq. 5).
  double optimality_error(Problem& p, double mu) {
    measure_residuals(p);
    return error_at(mu);
  }

  // The optimality error's parts that do not depend on mu, at the current iterate: the dual
  // residual rx_ (also the Newton step's right-hand side), its and the primal's norms, the
  // multipliers' scalings (Ipopt's s_d, s_c).
  void measure_residuals(Problem& p) {
    for (int j = 0; j < NX; ++j) rx_[j] = grad_[j] - zl[j] + zu[j];
    p.add_jacobian_transpose_times(yc, yd, rx_);
    double dual = dual_residual_norm(), primal = norm_inf(c_, NEQ);
    double multipliers = 0.0, bound_multipliers = 0.0;
    int bound_count = 0, copy_rows = 0;
    for (int i = 0; i < NQ; ++i) {
      dual = max2(dual, magnitude(slack_dual(i)));
      primal = max2(primal, magnitude(d_[i] - s[i]));
    }
    for (int j = 0; j < NX; ++j) {
      bound_multipliers += std::fabs(zl[j]) + std::fabs(zu[j]);
      bound_count += (hl_[j] ? 1 : 0) + (hu_[j] ? 1 : 0);
    }
    for (int i = 0; i < NQ; ++i) {
      bound_multipliers += std::fabs(vl[i]) + std::fabs(vu[i]);
      bound_count += (hdl_[i] ? 1 : 0) + (hdu_[i] ? 1 : 0);
    }
    for (int i = 0; i < NEQ; ++i) {
      // (A copies' row's multiplier is the sum of the earlier copies' stationarity terms: the
      // problem as written has no such row.)
      if (ties_copies_[i]) ++copy_rows;
      else multipliers += std::fabs(yc[i]);
    }
    for (int i = 0; i < NQ; ++i) multipliers += std::fabs(yd[i]);
    const int count = NY - copy_rows + bound_count;
    const double sd = count > 0 ? max2(kSMax, (multipliers + bound_multipliers) / count) / kSMax : 1.0;
    residuals_.dual_and_primal = max2(dual / sd, primal);
    residuals_.sc = bound_count > 0 ? max2(kSMax, bound_multipliers / bound_count) / kSMax : 1.0;
  }

  // The dual residual of d's slack i (the Lagrangian's derivative in s_i).
  double slack_dual(int i) const { return -yd[i] - vl[i] + vu[i]; }

  // rx_ as the problem as written has it: a shared variable's, the sum of its copies', at
  // its first copy (0 at the others). rx_ itself stays the Newton step's right-hand side.
  const double* dual_residual_as_written() {
    if (!has_copies_) return rx_;
    for (int j = 0; j < NX; ++j) rx_written_[j] = 0.0;
    for (int j = 0; j < NX; ++j) rx_written_[stands_for_[j]] += rx_[j];
    return rx_written_;
  }
  double dual_residual_norm() { return norm_inf(dual_residual_as_written(), NX); }
  // The largest |y_i| of the rows the problem as written has (not those that tie copies).
  double largest_multiplier(const double* y) const {
    double largest = 0.0;
    for (int i = 0; i < NY; ++i) {
      if (i >= NEQ || !ties_copies_[i]) largest = max2(largest, magnitude(y[i]));
    }
    return largest;
  }

  // Calls visit(distance, multiplier) for every bound of x and of d's slacks, in one order.
  template <class Visit>
  void each_bound(Visit visit) const {
    for (int j = 0; j < NX; ++j) {
      if (hl_[j]) visit(x[j] - xl_[j], zl[j]);
      if (hu_[j]) visit(xu_[j] - x[j], zu[j]);
    }
    for (int i = 0; i < NQ; ++i) {
      if (hdl_[i]) visit(s[i] - dl_[i], vl[i]);
      if (hdu_[i]) visit(du_[i] - s[i], vu[i]);
    }
  }

  // Ipopt's primal-dual system error (curr_primal_dual_system_error) at mu: the mean
  // absolute dual residual, primal residual and complementarity's deviation from mu, summed.
  // Unlike the optimality error it is not divided by the multipliers' size, so a step that
  // only grows the multipliers does not pass as progress (COPS cam shape: soft steps of
  // length 1e-13 accepted while the multipliers grew a hundredfold each).
  double system_error(Problem& p, double mu) {
    measure_residuals(p);
    double dual = 0.0, primal = 0.0, compl_ = 0.0;
    int pairs = 0;
    const double* rx = dual_residual_as_written();
    for (int j = 0; j < NX; ++j) dual += std::fabs(rx[j]);
    for (int i = 0; i < NQ; ++i) dual += std::fabs(slack_dual(i));
    for (int i = 0; i < NEQ; ++i) primal += std::fabs(c_[i]);
    for (int i = 0; i < NQ; ++i) primal += std::fabs(d_[i] - s[i]);
    each_bound([&](double dist, double z) {
      compl_ += std::fabs(dist * z - mu);
      ++pairs;
    });
    const auto mean = [](double sum, int n) { return n > 0 ? sum / n : 0.0; };
    return mean(dual, NX + NQ) + mean(primal, NY) + mean(compl_, pairs);
  }

  // The optimality error at mu of the iterate measure_residuals() last measured (the
  // barrier update tries several mu at one iterate).
  double error_at(double mu) const {
    double compl_ = 0.0;
    each_bound([&](double dist, double z) { compl_ = max2(compl_, std::fabs(dist * z - mu)); });
    return max2(residuals_.dual_and_primal, compl_ / residuals_.sc);
  }

  // Whether the unscaled residuals also meet their tolerances (Ipopt's dual_inf_tol, ...).
  bool unscaled_ok(Problem& p, double dual_tol, double viol_tol, double compl_tol) {
    double dual = dual_residual_norm() / p.obj_scale, viol = 0.0, compl_ = 0.0;
    for (int i = 0; i < NEQ; ++i) viol = max2(viol, std::fabs(c_[i]) / p.row_scale[i]);
    for (int i = 0; i < NQ; ++i) {
      dual = max2(dual, std::fabs(slack_dual(i)) / p.obj_scale);
      viol = max2(viol, std::fabs(d_[i] - s[i]) / p.row_scale[NEQ + i]);
      if (hdl_[i]) compl_ = max2(compl_, (s[i] - dl_[i]) * vl[i] / p.obj_scale);
      if (hdu_[i]) compl_ = max2(compl_, (du_[i] - s[i]) * vu[i] / p.obj_scale);
    }
    for (int j = 0; j < NX; ++j) {
      if (hl_[j]) compl_ = max2(compl_, (x[j] - xl_[j]) * zl[j] / p.obj_scale);
      if (hu_[j]) compl_ = max2(compl_, (xu_[j] - x[j]) * zu[j] / p.obj_scale);
    }
    return dual <= dual_tol && viol <= viol_tol && compl_ <= compl_tol;
  }

  // The diagonals of the KKT matrix with the regularisation (delta_w, delta_c); s is
  // eliminated (its rows' diagonal is -(1 / (Sigma_s + delta_w) + delta_c)).
  void kkt_diagonals(double delta_w, double delta_c) {
    for (int j = 0; j < NX; ++j) {
      double sigma = delta_w * (1.0 / copies_[j]);
      if (hl_[j]) sigma += zl[j] / (x[j] - xl_[j]);
      if (hu_[j]) sigma += zu[j] / (xu_[j] - x[j]);
      diag_x_[j] = sigma;
    }
    for (int i = 0; i < NEQ; ++i) diag_y_[i] = -delta_c;
    for (int i = 0; i < NQ; ++i) {
      double sigma = delta_w;
      if (hdl_[i]) sigma += vl[i] / (s[i] - dl_[i]);
      if (hdu_[i]) sigma += vu[i] / (du_[i] - s[i]);
      ds_diag_[i] = sigma;
      diag_y_[NEQ + i] = -(1.0 / sigma + delta_c);
    }
  }

  // Factorises the KKT matrix with inertia correction (Algorithm IC); false if no
  // regularisation gives the right inertia. `singular`: the matrix is known to be (nearly)
  // singular, so the correction starts as for a zero eigenvalue.
  bool factorize_corrected(Problem& p, bool singular = false) {
    double delta_w = 0.0, delta_c = 0.0;
    if (singular) {
      if (NY > 0) delta_c = kDeltaCBar * std::pow(mu_, kKappaC);
      if (NY == 0 || delta_c_ > 0.0) delta_w = delta_w_last_ == 0.0 ? kDeltaW0 : max2(kDeltaWMin, kKappaWMinus * delta_w_last_);
    }
    for (;;) {
      kkt_diagonals(delta_w, delta_c);
      const Inertia inertia = p.factorize(true, diag_x_, diag_y_);
      if (debug_) std::printf("    inertia %d %d %d dw %g dc %g\n", inertia.positive, inertia.negative, inertia.zero, delta_w, delta_c);
      if (inertia.zero == 0 && inertia.positive == NX && inertia.negative == NY) break;
      // A zero pivot may be an unstable pivot's cancellation rather than a singular matrix:
      // a stabler factorisation, where there is one, tells them apart.
      if (inertia.zero > 0 && p.increase_quality()) continue;
      // Too few negative eigenvalues (or zero ones) mean the constraint Jacobian is (nearly)
      // rank deficient: no delta_w repairs that (it only adds positive curvature), delta_c does.
      if ((inertia.zero > 0 || inertia.negative < NY) && delta_c == 0.0 && NY > 0) {
        delta_c = kDeltaCBar * std::pow(mu_, kKappaC);
        continue;
      }
      if (delta_w == 0.0) {
        delta_w = delta_w_last_ == 0.0 ? kDeltaW0 : max2(kDeltaWMin, kKappaWMinus * delta_w_last_);
      } else {
        delta_w *= delta_w_last_ == 0.0 ? kKappaWPlusBar : kKappaWPlus;
      }
      if (delta_w > kDeltaWMax) return false;
    }
    delta_w_ = delta_w;
    delta_c_ = delta_c;
    if (delta_w > 0.0) delta_w_last_ = delta_w;
    return true;
  }

  // The Newton direction (of the barrier problem) with inertia correction. A solve that
  // refinement leaves inaccurate is done again with a stabler factorisation while there is
  // one (a larger pivot threshold, kept from then on), then once more with the matrix
  // regularised as a singular one (Ipopt's "increase quality" and "pretend singular").
  bool newton_direction(Problem& p) {
    if (!factorize_corrected(p)) return false;
    direction(p, c_, dtheta_rows());
    while (!(solve_ratio_ <= kResidualRatioSingular) && p.increase_quality()) {
      if (!factorize_corrected(p)) return false;
      direction(p, c_, dtheta_rows());
    }
    if (!(solve_ratio_ <= kResidualRatioSingular)) {
      if (!factorize_corrected(p, true)) return false;
      direction(p, c_, dtheta_rows());
    }
    return all_finite(dx_, NX) && all_finite(ds_, NQ);
  }

  // Solves for the direction with the factorised matrix; `cv`, `dv`: the constraint values
  // the step must zero (c and d - s, or the second-order correction's).
  void direction(Problem& p, const double* cv, const double* dv) {
    for (int j = 0; j < NX; ++j) rhs_[j] = -rx_[j];
    for (int i = 0; i < NEQ; ++i) rhs_[NX + i] = -cv[i];
    for (int i = 0; i < NQ; ++i) {
      rs_[i] = -(gphi_s_[i] - yd[i]);
      rhs_[NX + NEQ + i] = -dv[i] + rs_[i] / ds_diag_[i];
    }
    solve_ratio_ = p.solve(rhs_);
    for (int j = 0; j < NX; ++j) dx_[j] = rhs_[j];
    for (int i = 0; i < NEQ; ++i) dyc_[i] = rhs_[NX + i];
    for (int i = 0; i < NQ; ++i) {
      dyd_[i] = rhs_[NX + NEQ + i];
      ds_[i] = (rs_[i] + dyd_[i]) / ds_diag_[i];
    }
    for (int j = 0; j < NX; ++j) {
      dzl_[j] = hl_[j] ? (mu_ - zl[j] * (x[j] - xl_[j]) - zl[j] * dx_[j]) / (x[j] - xl_[j]) : 0.0;
      dzu_[j] = hu_[j] ? (mu_ - zu[j] * (xu_[j] - x[j]) + zu[j] * dx_[j]) / (xu_[j] - x[j]) : 0.0;
    }
    for (int i = 0; i < NQ; ++i) {
      dvl_[i] = hdl_[i] ? (mu_ - vl[i] * (s[i] - dl_[i]) - vl[i] * ds_[i]) / (s[i] - dl_[i]) : 0.0;
      dvu_[i] = hdu_[i] ? (mu_ - vu[i] * (du_[i] - s[i]) + vu[i] * ds_[i]) / (du_[i] - s[i]) : 0.0;
    }
  }

  // The largest step in (0, 1] that keeps each distance to a bound above (1 - tau) of itself
  // (the fraction-to-the-boundary rule, eq. 15).
  double primal_step_limit() const {
    double alpha = 1.0;
    for (int j = 0; j < NX; ++j) {
      if (hl_[j] && dx_[j] < 0.0) alpha = min2(alpha, -tau_ * (x[j] - xl_[j]) / dx_[j]);
      if (hu_[j] && dx_[j] > 0.0) alpha = min2(alpha, tau_ * (xu_[j] - x[j]) / dx_[j]);
    }
    for (int i = 0; i < NQ; ++i) {
      if (hdl_[i] && ds_[i] < 0.0) alpha = min2(alpha, -tau_ * (s[i] - dl_[i]) / ds_[i]);
      if (hdu_[i] && ds_[i] > 0.0) alpha = min2(alpha, tau_ * (du_[i] - s[i]) / ds_[i]);
    }
    return alpha;
  }

  double dual_step_limit() const {
    double alpha = 1.0;
    const auto limit = [&](double z, double dz, bool has) {
      if (has && dz < 0.0) alpha = min2(alpha, -tau_ * z / dz);
    };
    for (int j = 0; j < NX; ++j) {
      limit(zl[j], dzl_[j], hl_[j]);
      limit(zu[j], dzu_[j], hu_[j]);
    }
    for (int i = 0; i < NQ; ++i) {
      limit(vl[i], dvl_[i], hdl_[i]);
      limit(vu[i], dvu_[i], hdu_[i]);
    }
    return alpha;
  }

  bool filter_accepts(double theta, double phi) const {
    for (int k = 0; k < filter_len_; ++k) {
      if (theta >= filter_theta_[k] && phi >= filter_phi_[k]) return false;
    }
    return true;
  }

  // Adds the margin pair of (theta, phi) (eq. 22), dropping the entries it dominates.
  void augment_filter(double theta, double phi) {
    const double t = (1.0 - kGammaTheta) * theta, f = phi - kGammaPhi * theta;
    int kept = 0;
    for (int k = 0; k < filter_len_; ++k) {
      if (filter_theta_[k] >= t && filter_phi_[k] >= f) continue;
      filter_theta_[kept] = filter_theta_[k];
      filter_phi_[kept] = filter_phi_[k];
      ++kept;
    }
    filter_len_ = kept;
    if (filter_len_ == kFilterCapacity) {
      // Full: the oldest entry goes (the filter only has to prevent cycling among recent points).
      for (int k = 1; k < filter_len_; ++k) {
        filter_theta_[k - 1] = filter_theta_[k];
        filter_phi_[k - 1] = filter_phi_[k];
      }
      --filter_len_;
    }
    filter_theta_[filter_len_] = t;
    filter_phi_[filter_len_] = f;
    ++filter_len_;
  }

  // Whether the trial point (evaluated: xt_, st_, ft_, ct_, dt_; its violation in *theta_t)
  // is acceptable after a step of length alpha from the reference (theta, phi, slope). If so,
  // the filter is augmented after a step that is not an f-type one, and the step's kind is
  // recorded: `f_kind` for an f-type step, else `h_kind`.
  bool take_trial(double theta, double phi, double slope, double alpha, char f_kind, char h_kind, double* theta_t) {
    *theta_t = constraint_violation(ct_, dt_, st_);
    const double phi_t = barrier(ft_, xt_, st_);
    bool ftype = false;
    if (!acceptable(theta, phi, slope, *theta_t, phi_t, alpha, &ftype)) return false;
    if (!ftype) augment_filter(theta, phi);
    step_kind_ = ftype ? f_kind : h_kind;
    return true;
  }

  // Evaluates the trial point x + alpha dx, s + alpha ds; false if not finite.
  bool evaluate_trial(Problem& p, double alpha) {
    for (int j = 0; j < NX; ++j) xt_[j] = x[j] + alpha * dx_[j];
    for (int i = 0; i < NQ; ++i) st_[i] = s[i] + alpha * ds_[i];
    return p.values(xt_, &ft_, ct_, dt_) && std::isfinite(ft_) && all_finite(ct_, NEQ) && all_finite(dt_, NQ);
  }

  // Whether a trial point with (theta_t, phi_t) is acceptable after a step of length alpha
  // (eqs. 18-21). `ftype`: whether the step is an f-type one, the switching condition and
  // the Armijo condition both holding, whichever test accepted it; only other steps augment
  // the filter (as Ipopt decides, also where the violation is above theta_min).
  //
  // Ipopt's filter reset heuristic: where the last trial point an iteration rejected was
  // rejected by the filter alone, in kFilterResetTrigger iterations in a row, the filter is
  // cleared once the iteration's step is accepted (at most kMaxFilterResets times a solve):
  // old entries must not block the way forever.
  bool acceptable(double theta, double phi, double slope, double theta_t, double phi_t, double alpha,
                  bool* ftype) {
    if (!sufficient_decrease(theta, phi, slope, theta_t, phi_t, alpha, ftype)) {
      if (std::isfinite(phi_t) && theta_t <= theta_max_) last_rejection_by_filter_ = false;
      return false;
    }
    if (!filter_accepts(theta_t, phi_t)) {
      last_rejection_by_filter_ = true;
      return false;
    }
    if (filter_resets_ < kMaxFilterResets) {
      filter_rejections_ = last_rejection_by_filter_ ? filter_rejections_ + 1 : 0;
      if (filter_rejections_ >= kFilterResetTrigger) {
        reset_filter();
        ++filter_resets_;
      }
    }
    last_rejection_by_filter_ = false;
    return true;
  }

  void reset_filter() {
    filter_len_ = 0;
    filter_rejections_ = 0;
    last_rejection_by_filter_ = false;
  }

  // The trial point's tests but the filter's (eqs. 18-20).
  bool sufficient_decrease(double theta, double phi, double slope, double theta_t, double phi_t, double alpha,
                           bool* ftype) const {
    *ftype = false;
    if (!(theta_t <= theta_max_) || !std::isfinite(phi_t)) return false;
    const double slack = 10.0 * std::numeric_limits<double>::epsilon() * std::fabs(phi);
    const bool switching =
        slope < 0.0 && alpha * std::pow(-slope, kSPhi) > kDelta * std::pow(theta, kSTheta);
    const bool armijo = phi_t <= phi + kEta * alpha * slope + slack;
    *ftype = switching && armijo;
    bool ok;
    if (switching && theta <= theta_min_) {
      ok = armijo;
    } else {
      ok = theta_t <= (1.0 - kGammaTheta) * theta || phi_t <= phi - kGammaPhi * theta + slack;
    }
    return ok;
  }

  // The smallest step length before restoration takes over (eq. 23).
  double min_step(double theta, double slope) const {
    double m = kGammaTheta;
    if (slope < 0.0) {
      m = min2(m, kGammaPhi * theta / -slope);
      if (theta <= theta_min_) m = min2(m, kDelta * std::pow(theta, kSTheta) / std::pow(-slope, kSPhi));
    }
    return kGammaAlpha * m;
  }

  // The backtracking filter line search with second-order corrections (Algorithm A, steps
  // A-5); on success the trial point in xt_/st_ (values in ft_, ct_, dt_) and its step
  // length; false if the step length fell below its minimum.
  double barrier_slope() const {
    double slope = 0.0;
    for (int j = 0; j < NX; ++j) slope += gphi_x_[j] * dx_[j];
    for (int i = 0; i < NQ; ++i) slope += gphi_s_[i] * ds_[i];
    return slope;
  }

  // The line search of an iteration: the watchdog's full step while it runs (or from the
  // shortened step that starts it), else the backtracking search. Counts shortened steps.
  bool search(Problem& p, const IpmOptions& o, double* alpha_out, int* backtracks) {
    if (!in_watchdog_ && shortened_ >= kWatchdogTrigger) start_watchdog();
    if (in_watchdog_) return watchdog_step(p, o, alpha_out, backtracks);
    const bool found = line_search(p, o, alpha_out, backtracks, false);
    shortened_ = found && *backtracks > 0 ? shortened_ + 1 : 0;
    return found;
  }

  void start_watchdog() {
    const auto copy = [](double* to, const double* from, int n) {
      for (int i = 0; i < n; ++i) to[i] = from[i];
    };
    in_watchdog_ = true;
    watchdog_steps_ = 0;
    watchdog_theta_ = constraint_violation(c_, d_, s);
    watchdog_phi_ = barrier(f_, x, s);
    watchdog_slope_ = barrier_slope();
    copy(xw_, x, NX), copy(sw_, s, NQ), copy(ycw_, yc, NEQ), copy(ydw_, yd, NQ);
    copy(zlw_, zl, NX), copy(zuw_, zu, NX), copy(vlw_, vl, NQ), copy(vuw_, vu, NQ);
    copy(dxw_, dx_, NX), copy(dsw_, ds_, NQ), copy(dycw_, dyc_, NEQ), copy(dydw_, dyd_, NQ);
    copy(dzlw_, dzl_, NX), copy(dzuw_, dzu_, NX), copy(dvlw_, dvl_, NQ), copy(dvuw_, dvu_, NQ);
  }

  // One watchdog iteration: the full step, accepted as a regular step if the point where the
  // watchdog started would accept it, else taken anyway up to kWatchdogTrials times; then
  // back to that point and its direction, and a backtracking search from half its step.
  bool watchdog_step(Problem& p, const IpmOptions& o, double* alpha_out, int* backtracks) {
    *backtracks = 0;
    const double alpha = primal_step_limit();
    if (evaluate_trial(p, alpha)) {
      double theta_t = 0.0;
      if (take_trial(watchdog_theta_, watchdog_phi_, watchdog_slope_, alpha, 'f', 'h', &theta_t)) {
        in_watchdog_ = false;
        shortened_ = 0;
        *alpha_out = alpha;
        return true;
      }
      if (++watchdog_steps_ <= kWatchdogTrials) {
        *alpha_out = alpha;
        step_kind_ = 'w';
        return true;
      }
    }
    stop_watchdog(p);
    const bool found = line_search(p, o, alpha_out, backtracks, true);
    shortened_ = 0;
    return found;
  }

  // Back to the point where the watchdog started, with its direction and values.
  void stop_watchdog(Problem& p) {
    const auto copy = [](double* to, const double* from, int n) {
      for (int i = 0; i < n; ++i) to[i] = from[i];
    };
    in_watchdog_ = false;
    copy(x, xw_, NX), copy(s, sw_, NQ), copy(yc, ycw_, NEQ), copy(yd, ydw_, NQ);
    copy(zl, zlw_, NX), copy(zu, zuw_, NX), copy(vl, vlw_, NQ), copy(vu, vuw_, NQ);
    copy(dx_, dxw_, NX), copy(ds_, dsw_, NQ), copy(dyc_, dycw_, NEQ), copy(dyd_, dydw_, NQ);
    copy(dzl_, dzlw_, NX), copy(dzu_, dzuw_, NX), copy(dvl_, dvlw_, NQ), copy(dvu_, dvuw_, NQ);
    p.linearize(x, &f_, grad_, c_, d_);
    barrier_gradient(p);
  }

  // The backtracking filter line search (`skip_first`: from half the largest step, which
  // the watchdog already tried).
  bool line_search(Problem& p, const IpmOptions& o, double* alpha_out, int* backtracks, bool skip_first) {
    const double theta = constraint_violation(c_, d_, s), phi = barrier(f_, x, s);
    const double slope = barrier_slope();
    const double alpha_max = primal_step_limit();
    const double alpha_min = min_step(theta, slope);
    double alpha = alpha_max;
    *backtracks = 0;
    if (skip_first) {
      alpha *= 0.5;
      *backtracks = 1;
    }
    // A step that changes nothing measurable, at a (nearly) feasible point, is taken
    // (Ipopt's tiny-step rule; infeasible points go on to the restoration phase instead).
    bool tiny = theta <= kTinyStepViolation;
    for (int j = 0; j < NX && tiny; ++j) tiny = std::fabs(dx_[j]) <= 10.0 * 2.2e-16 * (1.0 + std::fabs(x[j]));
    if (tiny && evaluate_trial(p, alpha)) {
      *alpha_out = alpha;
      step_kind_ = 't';
      tiny_step_ = true;
      return true;
    }
    if (debug_) std::printf("    ls alpha_max %g alpha_min %g theta %g slope %g\n", alpha_max, alpha_min, theta, slope);
    for (int k = skip_first ? 1 : 0; k < kMaxBacktracks; ++k, alpha *= 0.5, ++*backtracks) {
      if (alpha < alpha_min) return false;
      if (!evaluate_trial(p, alpha)) continue;
      double theta_t = 0.0;
      if (take_trial(theta, phi, slope, alpha, 'f', 'h', &theta_t)) {
        *alpha_out = alpha;
        return true;
      }
      if (k == 0 && theta_t >= theta && o.max_soc > 0) {
        if (second_order_correction(p, o, theta, phi, slope, alpha, alpha_out)) return true;
        // The corrections overwrote the direction: back to the Newton step.
        direction(p, c_, dtheta_rows());
      }
    }
    return false;
  }

  // Second-order corrections after the full step was rejected (section 2.4): the step that
  // zeroes c(x_k) alpha + c(x_trial) (accumulated), up to max_soc times while the
  // violation keeps falling. On success the corrected direction is in dx_ and its step
  // length (by which the duals move too) in *taken.
  bool second_order_correction(Problem& p, const IpmOptions& o, double theta, double phi, double slope, double alpha,
                               double* taken) {
    for (int i = 0; i < NEQ; ++i) csoc_[i] = alpha * c_[i] + ct_[i];
    for (int i = 0; i < NQ; ++i) dsoc_[i] = alpha * (d_[i] - s[i]) + (dt_[i] - st_[i]);
    double theta_old = constraint_violation(ct_, dt_, st_);
    for (int k = 0; k < o.max_soc; ++k) {
      direction(p, csoc_, dsoc_);
      const double a = primal_step_limit();
      if (!evaluate_trial(p, a)) return false;
      double theta_t = 0.0;
      if (take_trial(theta, phi, slope, alpha, 'F', 'H', &theta_t)) {
        *taken = a;
        return true;
      }
      if (theta_t > kKappaSoc * theta_old) break;
      theta_old = theta_t;
      for (int i = 0; i < NEQ; ++i) csoc_[i] = a * csoc_[i] + ct_[i];
      for (int i = 0; i < NQ; ++i) dsoc_[i] = a * dsoc_[i] + (dt_[i] - st_[i]);
    }
    return false;
  }

  // Takes the trial point with duals moved by alpha (y) and alpha_z (z, v), then keeps the
  // bound multipliers within kKappaSigma of mu over their distances (eq. 16).
  void accept(double alpha, double alpha_z) {
    take_step(alpha, alpha_z);
    reset_bound_multipliers();
  }

  // The trial point and the multipliers' step, the bound multipliers not yet reset.
  void take_step(double alpha, double alpha_z) {
    for (int j = 0; j < NX; ++j) x[j] = xt_[j];
    for (int i = 0; i < NQ; ++i) s[i] = st_[i];
    for (int i = 0; i < NEQ; ++i) yc[i] += alpha * dyc_[i];
    for (int i = 0; i < NQ; ++i) yd[i] += alpha * dyd_[i];
    for (int j = 0; j < NX; ++j) {
      zl[j] += alpha_z * dzl_[j];
      zu[j] += alpha_z * dzu_[j];
    }
    for (int i = 0; i < NQ; ++i) {
      vl[i] += alpha_z * dvl_[i];
      vu[i] += alpha_z * dvu_[i];
    }
  }

  static double reset(double z, double dist, double mu) {
    return max2(min2(z, kKappaSigma * mu / dist), mu / (kKappaSigma * dist));
  }

  void reset_bound_multipliers() {
    for (int j = 0; j < NX; ++j) {
      if (hl_[j]) zl[j] = reset(zl[j], x[j] - xl_[j], mu_);
      if (hu_[j]) zu[j] = reset(zu[j], xu_[j] - x[j], mu_);
    }
    for (int i = 0; i < NQ; ++i) {
      if (hdl_[i]) vl[i] = reset(vl[i], s[i] - dl_[i], mu_);
      if (hdu_[i]) vu[i] = reset(vu[i], du_[i] - s[i], mu_);
    }
  }

  // The average complementarity and its smallest term over the average (for the adaptive
  // barrier update).
  double average_complementarity(double* centrality) const {
    double sum = 0.0, smallest = inf();
    int n = 0;
    each_bound([&](double dist, double z) {
      sum += dist * z;
      smallest = min2(smallest, dist * z);
      ++n;
    });
    if (n == 0) {
      *centrality = 1.0;
      return 0.0;
    }
    *centrality = sum > 0.0 ? smallest / (sum / n) : 1.0;
    return sum / n;
  }

  // The barrier parameter for this iteration: the monotone (Fiacco-McCormick) rule of
  // section 2.1; or with adaptive_mu, LOQO's rule from the current complementarity (never
  // increasing, so that the filter stays valid between resets) while the optimality error
  // keeps falling, and the monotone rule from 0.8 times the average complementarity when it
  // does not (Ipopt's safeguard), until that barrier problem is solved.
  // The barrier parameter for the next step. A tiny step decreases it whether or not the
  // barrier problem is solved, and ends the solve (false) where it cannot (Ipopt's rule).
  bool update_barrier(Problem& p, const IpmOptions& o, double error) {
    bool tiny = tiny_step_;
    tiny_step_ = false;
    // The smallest barrier parameter: the tolerance the scaled problem is solved to, with the
    // complementarity tolerance in the scaled objective's units (Ipopt's).
    const double mu_min = min2(o.tol, p.obj_scale * o.compl_inf_tol) / (kKappaEps + 1.0);
    if (o.adaptive_mu && free_mode_) {
      double reference = 0.0;
      for (int k = 0; k < reference_len_; ++k) reference = max2(reference, references_[k]);
      double xi = 1.0;
      const double average = average_complementarity(&xi);
      if (reference_len_ > 0 && error > kSoftReduction * reference) {
        free_mode_ = false;
        reference_len_ = 0;
        set_mu(min2(mu_, max2(mu_min, 0.8 * average)));
      } else {
        references_[reference_next_] = error;
        reference_next_ = (reference_next_ + 1) % kReferences;
        reference_len_ = reference_len_ < kReferences ? reference_len_ + 1 : kReferences;
        const double sigma = 0.1 * std::pow(min2(0.05 * (1.0 - xi) / max2(xi, 1e-20), 2.0), 3.0);
        const double candidate = max2(mu_min, sigma * average);
        if (candidate < mu_) set_mu(candidate);
        return true;
      }
    }
    // As long as the barrier problem of the new mu is solved too (Ipopt's default,
    // mu_allow_fast_monotone_decrease; the paper repeats only in the first iteration).
    if (tiny && !(mu_ > mu_min)) return false;
    // (The iterate is the one iterate() measured: only the complementarity changes with mu.)
    while (mu_ > mu_min && (tiny || error_at(mu_) <= kKappaEps * mu_)) {
      set_mu(max2(mu_min, min2(kKappaMu * mu_, std::pow(mu_, kThetaMu))));
      free_mode_ = o.adaptive_mu;
      tiny = false;
    }
    return true;
  }

  // A new barrier problem: a new filter, and no watchdog (its references were the old
  // barrier function's).
  void set_mu(double mu) {
    mu_ = mu;
    tau_ = max2(kTauMin, 1.0 - mu_);
    reset_filter();
    in_watchdog_ = false;
    shortened_ = 0;
  }

  void print_header() const {
    std::printf("iter    objective    inf_pr   inf_du lg(mu)  ||d||  lg(rg) alpha_du alpha_pr  ls\n");
  }

  // The objective and inf_pr are the problem's own, or what it reports instead (a restoration
  // phase's lines: the outer problem's, as Ipopt prints them).
  void print_line(Problem& p, int k, char mark, char kind, double alpha_du, double alpha_pr, int ls) {
    double f = f_ / p.obj_scale, inf_pr = 0.0;
    if (!p.reported(x, &f, &inf_pr)) inf_pr = p.row_violation(c_, d_);
    double inf_du = dual_residual_norm();
    for (int i = 0; i < NQ; ++i) inf_du = max2(inf_du, std::fabs(slack_dual(i)));
    char rg[8] = "   - ";
    if (delta_w_ > 0.0) std::snprintf(rg, sizeof rg, "%5.1f", std::log10(delta_w_));
    // (No step before the first iteration: the direction's arrays hold the start's scratch.)
    const double step = ls > 0 ? max2(norm_inf(dx_, NX), norm_inf(ds_, NQ)) : 0.0;
    std::printf("%4d%c%14.7e %7.2e %7.2e %5.1f %7.2e %s %7.2e %7.2e%c %2d\n", k, mark, f, inf_pr,
                inf_du, std::log10(mu_), step, rg, alpha_du, alpha_pr, kind, ls);
    std::fflush(stdout);
  }

  // The main loop (Algorithm A).
  IpmOutcome iterate(Problem& p, const IpmOptions& o, int* iterations) {
    if (Outer && o.verbose > 0) print_header();
    debug_ = o.verbose > 1;
    double alpha_pr = 0.0, alpha_du = 0.0;
    int ls = 0;
    char mark = Outer ? ' ' : 'r';
    for (int k = 0;; ++k) {
      *iterations = k;
      if (!Outer && k > 0 && p.done(x, s)) return IpmOutcome::Returned;
      const double error = optimality_error(p, 0.0);
      if (o.verbose > 0 && (Outer || k > 0)) {
        // ls: the trial points the line search evaluated (Ipopt's column), backtracks + 1.
        print_line(p, k + iteration_offset_, mark, k == 0 ? ' ' : step_kind_, alpha_du, alpha_pr, k == 0 ? 0 : ls + 1);
      }
      mark = Outer ? ' ' : 'r';
      if (error <= o.tol && unscaled_ok(p, o.dual_inf_tol, o.constr_viol_tol, o.compl_inf_tol)) {
        return IpmOutcome::Solved;
      }
      acceptable_count_ = error <= o.acceptable_tol && unscaled_ok(p, 1e10, 1e-2, 1e-2) ? acceptable_count_ + 1 : 0;
      if (o.acceptable_iter > 0 && acceptable_count_ >= o.acceptable_iter) return IpmOutcome::Solved;
      if (k >= o.max_iter) return IpmOutcome::MaxIter;
      // The restoration phase starts at the barrier parameter its problem was centred for:
      // lowered before its first step, the point it returns differs from Ipopt's (HS 114).
      const bool keep_mu = restoration_phase_ && k == 0;
      if (!keep_mu && !update_barrier(p, o, error)) return IpmOutcome::TinyStep;
      if (!p.hessian(x, yc, yd)) return IpmOutcome::NonFinite;
      barrier_gradient(p);
      bool searched = newton_direction(p);
      double alpha = 0.0;
      if (searched) searched = search(p, o, &alpha, &ls);
      if (searched) {
        alpha_pr = alpha;
        alpha_du = dual_step_limit();
        accept(alpha, alpha_du);
        soft_steps_ = 0;
        if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
        // A step that changes nothing only because the Hessian's regularisation is huge is
        // no sign of a solution.
        if (!tiny_step_) {
          multipliers_restarted_ = false;
        } else if (delta_w_ > 0.0 && restart_multipliers(p)) {
          tiny_step_ = false;
        }
        continue;
      }
      if (soft_steps_ < kMaxSoftSteps && all_finite(dx_, NX) && soft_restoration(p, &alpha_pr)) {
        ++soft_steps_;
        alpha_du = alpha_pr;
        step_kind_ = 's';
        continue;
      }
      soft_steps_ = 0;
      free_mode_ = false;
      // No acceptable step from a point that is already acceptable: done (as Ipopt).
      if (error <= o.acceptable_tol && optimality_error(p, 0.0) <= o.acceptable_tol &&
          unscaled_ok(p, 1e10, 1e-2, 1e-2)) {
        return IpmOutcome::Solved;
      }
      if (restart_multipliers(p)) continue;
      const IpmOutcome restored = restore(p, o, &k);
      if (restored != IpmOutcome::Solved) {
        *iterations = k;
        return restored;
      }
      mark = 'r';
      step_kind_ = 'r';
      alpha_pr = alpha_du = 1.0;
      ls = 0;
    }
  }

  // The multipliers started again by least squares at a (nearly) feasible point where no
  // step makes progress (none is found, or only a tiny one under the Hessian's
  // regularisation), once until a step is taken; false if not. The restoration phase cannot
  // reduce a violation that is nearly zero already: what went wrong are the multipliers,
  // equality multipliers grown with the regularisation (y ~ delta_w c), each making the
  // other larger until the direction is rounding (the COPS chain from a plain guess).
  bool restart_multipliers(Problem& p) {
    if (!Outer || multipliers_restarted_ || constraint_violation(c_, d_, s) > kTinyStepViolation) return false;
    multipliers_restarted_ = true;
    least_squares_multipliers(p);
    delta_w_last_ = 0.0;
    step_kind_ = 'y';
    return true;
  }

  // Ipopt's soft restoration, tried when the line search fails: the primal-dual step with
  // one step length for primal and dual variables, kept if it reduces the primal-dual
  // system error (measured before the bound multipliers are reset, as Ipopt; its trial point
  // need not satisfy the filter). Ends with the iterate linearised; false (the iterate
  // unchanged) if the step does not help.
  bool soft_restoration(Problem& p, double* alpha_out) {
    const double error = system_error(p, mu_);
    const double alpha = min2(primal_step_limit(), dual_step_limit());
    if (!evaluate_trial(p, alpha)) return false;
    const auto copy = [](double* to, const double* from, int n) {
      for (int i = 0; i < n; ++i) to[i] = from[i];
    };
    copy(xb_, x, NX), copy(sb_, s, NQ), copy(ycb_, yc, NEQ), copy(ydb_, yd, NQ);
    copy(zlb_, zl, NX), copy(zub_, zu, NX), copy(vlb_, vl, NQ), copy(vub_, vu, NQ);
    take_step(alpha, alpha);
    if (p.linearize(x, &f_, grad_, c_, d_) && system_error(p, mu_) <= kSoftReduction * error) {
      reset_bound_multipliers();
      *alpha_out = alpha;
      return true;
    }
    copy(x, xb_, NX), copy(s, sb_, NQ), copy(yc, ycb_, NEQ), copy(yd, ydb_, NQ);
    copy(zl, zlb_, NX), copy(zu, zub_, NX), copy(vl, vlb_, NQ), copy(vu, vub_, NQ);
    p.linearize(x, &f_, grad_, c_, d_);
    barrier_gradient(p);
    return false;
  }

  // d - s at the iterate (scratch in dsoc_).
  const double* dtheta_rows() {
    for (int i = 0; i < NQ; ++i) dsoc_[i] = d_[i] - s[i];
    return dsoc_;
  }

  // The feasibility restoration phase (section 3.3): the restoration problem (RestorationNlp)
  // solved by this method until the filter accepts its point with the violation reduced by
  // 10 %; where that fails, Gauss-Newton steps on the violation. Ends Infeasible at a
  // stationary point of the violation that is not feasible.
  IpmOutcome restore(Problem& p, const IpmOptions& o, int* k) {
    if (!Outer) return IpmOutcome::RestorationFailed;
    theta_resto_start_ = constraint_violation(c_, d_, s);
    inf_pr_resto_start_ = largest_violation(c_, d_, s);
    resto_inf_pr_floor_ = min2(o.tol, o.constr_viol_tol);
    augment_filter(theta_resto_start_, barrier(f_, x, s));
    const IpmOutcome outcome = solve_restoration(p, o, k);
    if (outcome != IpmOutcome::RestorationFailed) return outcome;
    return gauss_newton_restoration(p, o, k);
  }

  // The restoration problem at the iterate, solved by the restoration phase's own solver.
  IpmOutcome solve_restoration(Problem& p, const IpmOptions& o, int* k) {
    RestorationNlp& r = *resto_nlp_;
    constexpr double rho = RestorationNlp::kRho;
    r.relax_rows_of(&p);
    r.outer = this;
    const double mu_r = max2(mu_, largest_violation(c_, d_, s));
    // The proximity weight of the barrier parameter the restoration phase starts at, as
    // Ipopt's first step (with the outer sqrt(mu) instead, the race car's first restoration
    // step was 3.6 times Ipopt's). Ipopt lowers it with the phase's barrier parameter; kept,
    // it keeps the curvature the phase started with: lowered, the hang glider by stages from
    // the report's plain guess (N = 100) stalled in its restoration phase for 3,000
    // iterations of steps of 1e-4 under a regularisation of 1e4 (kept: 448, Ipopt's 794).
    r.zeta = std::sqrt(mu_r);
    for (int j = 0; j < NX; ++j) {
      r.xr[j] = x[j];
      const double w = min2(1.0, 1.0 / max2(std::fabs(x[j]), 1e-300));
      // A shared variable's N + 1 copies weigh as much as the one variable they stand for:
      // weighed each in full, they pulled the robot arm's final time back towards a point
      // whose restoration ends at a local minimum of the violation.
      r.dr[j] = w * w / copies_[j];
      resto_x0_[j] = x[j];
      resto_zl_[j] = min2(zl[j], rho);
      resto_zu_[j] = min2(zu[j], rho);
    }
    for (int i = 0; i < NQ; ++i) {
      r.q_lower[i] = hdl_[i] ? dl_[i] : -inf();
      r.q_upper[i] = hdu_[i] ? du_[i] : inf();
      resto_vl_[i] = min2(vl[i], rho);
      resto_vu_[i] = min2(vu[i], rho);
    }
    // p and n that satisfy the constraints at x_R and are centred for mu_r (eq. 33).
    for (int i = 0; i < NY; ++i) {
      r.row_scale[i] = 1.0;
      // (A row kept exact has p = n, centred: they enter nothing else.)
      const double v = r.relaxed(i) * (i < NEQ ? c_[i] : d_[i - NEQ] - s[i - NEQ]);
      const double a = (mu_r - rho * v) / (2.0 * rho);
      const double n = a + std::sqrt(a * a + mu_r * v / (2.0 * rho));
      resto_x0_[NX + i] = v + n;
      resto_x0_[NX + NY + i] = n;
      resto_zl_[NX + i] = mu_r / (v + n);
      resto_zl_[NX + NY + i] = mu_r / n;
      resto_zu_[NX + i] = resto_zu_[NX + NY + i] = 0.0;
    }
    IpmOptions ro = o;
    ro.mu_init = mu_r;
    ro.adaptive_mu = false;
    ro.warm_start = true;
    ro.nlp_scaling_max_gradient = 0.0;
    ro.max_iter = o.max_iter - *k;
    int inner = 0;
    const IpmOutcome outcome =
        resto_->restoration_run(r, resto_x0_, resto_zl_, resto_zu_, resto_vl_, resto_vu_, ro, *k, &inner);
    *k += inner;
    if (outcome == IpmOutcome::Returned) return take_restored_point(p);
    if (outcome == IpmOutcome::MaxIter) return outcome;
    // The problem's derivatives are the restoration phase's last point's: back to the iterate.
    if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
    if (outcome == IpmOutcome::Solved) {
      // The restoration problem's optimum: the least violation near here. Feasible or not?
      double f = 0.0;
      if (p.values(resto_->x, &f, ct_, dt_) && p.row_violation(ct_, dt_) > o.constr_viol_tol) {
        return IpmOutcome::Infeasible;
      }
    }
    return IpmOutcome::RestorationFailed;
  }

  // Takes the restoration phase's point (x, d's slacks) as Ipopt does: the bound multipliers
  // as if the phase's whole move had been one primal-dual Newton step from this iterate
  // (each z's step from its slack's change, z + dz = (mu + z (slack - trial slack)) / slack),
  // kept positive by the fraction to the boundary, all 1 if one comes out above
  // kBoundMultResetThreshold; the constraint multipliers from zero (Ipopt's default
  // constr_mult_reset_threshold of 0).
  IpmOutcome take_restored_point(Problem& p) {
    const Method& r = *resto_;
    double alpha = 1.0;
    const auto step = [&](bool has, double z, double slack, double trial, double* dz) {
      *dz = has ? (mu_ + z * (slack - trial)) / slack - z : 0.0;
      if (has && *dz < 0.0) alpha = min2(alpha, -tau_ * z / *dz);
    };
    for (int j = 0; j < NX; ++j) {
      step(hl_[j], zl[j], x[j] - xl_[j], r.x[j] - xl_[j], &dzl_[j]);
      step(hu_[j], zu[j], xu_[j] - x[j], xu_[j] - r.x[j], &dzu_[j]);
    }
    for (int i = 0; i < NQ; ++i) {
      const double trial = inside(r.s[i], dl_[i], du_[i], hdl_[i], hdu_[i]);
      step(hdl_[i], vl[i], s[i] - dl_[i], trial - dl_[i], &dvl_[i]);
      step(hdu_[i], vu[i], du_[i] - s[i], du_[i] - trial, &dvu_[i]);
      s[i] = trial;
    }
    double largest = 0.0;
    for (int j = 0; j < NX; ++j) {
      x[j] = r.x[j];
      zl[j] += alpha * dzl_[j];
      zu[j] += alpha * dzu_[j];
      largest = max2(largest, max2(zl[j], zu[j]));
    }
    for (int i = 0; i < NQ; ++i) {
      vl[i] += alpha * dvl_[i];
      vu[i] += alpha * dvu_[i];
      largest = max2(largest, max2(vl[i], vu[i]));
    }
    if (largest > kBoundMultResetThreshold) {
      for (int j = 0; j < NX; ++j) zl[j] = hl_[j] ? 1.0 : 0.0, zu[j] = hu_[j] ? 1.0 : 0.0;
      for (int i = 0; i < NQ; ++i) vl[i] = hdl_[i] ? 1.0 : 0.0, vu[i] = hdu_[i] ? 1.0 : 0.0;
    }
    if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
    reset_bound_multipliers();
    for (int i = 0; i < NEQ; ++i) yc[i] = 0.0;
    for (int i = 0; i < NQ; ++i) yd[i] = 0.0;
    return IpmOutcome::Solved;
  }

  // v kept strictly inside (lo, hi) (the restoration phase's bounds are relaxed once more).
  static double inside(double v, double lo, double hi, bool has_lo, bool has_hi) {
    const double eps = 1e-14;
    if (has_lo) v = max2(v, lo + eps * max2(1.0, std::fabs(lo)));
    if (has_hi) v = min2(v, hi - eps * max2(1.0, std::fabs(hi)));
    return v;
  }

  // The simpler restoration phase where the restoration problem's solve fails: Gauss-Newton
  // steps on the constraint violation that stay near the point x_R where it started (the
  // proximity term zeta ||D_R (x - x_R)||^2), each kept inside the bounds, until the filter
  // accepts the iterate with its violation reduced.
  IpmOutcome gauss_newton_restoration(Problem& p, const IpmOptions& o, int* k) {
    const double theta_start = theta_resto_start_;
    const double zeta = max2(std::sqrt(mu_), 1e-8);
    for (int j = 0; j < NX; ++j) xr_[j] = x[j];
    for (int i = 0; i < NQ; ++i) sr_[i] = s[i];
    const auto weight = [](double v) { return std::fabs(v) > 1.0 ? 1.0 / (v * v) : 1.0; };
    for (int r = 0; r < kMaxRestoration; ++r) {
      if (*k >= o.max_iter) return IpmOutcome::MaxIter;
      ++*k;
      const double theta = constraint_violation(c_, d_, s);
      kkt_diagonals(0.0, kDeltaCBar);
      for (int j = 0; j < NX; ++j) diag_x_[j] += zeta * weight(xr_[j]);
      for (int i = 0; i < NQ; ++i) {
        ds_diag_[i] += zeta * weight(sr_[i]);
        diag_y_[NEQ + i] = -(1.0 / ds_diag_[i] + kDeltaCBar);
      }
      p.factorize(false, diag_x_, diag_y_);
      for (int j = 0; j < NX; ++j) {
        rhs_[j] = -zeta * weight(xr_[j]) * (x[j] - xr_[j]);
        if (hl_[j]) rhs_[j] += mu_ / (x[j] - xl_[j]);
        if (hu_[j]) rhs_[j] -= mu_ / (xu_[j] - x[j]);
      }
      for (int i = 0; i < NEQ; ++i) rhs_[NX + i] = -c_[i];
      for (int i = 0; i < NQ; ++i) {
        rs_[i] = -zeta * weight(sr_[i]) * (s[i] - sr_[i]);
        if (hdl_[i]) rs_[i] += mu_ / (s[i] - dl_[i]);
        if (hdu_[i]) rs_[i] -= mu_ / (du_[i] - s[i]);
        rhs_[NX + NEQ + i] = -(d_[i] - s[i]) + rs_[i] / ds_diag_[i];
      }
      p.solve(rhs_);
      for (int j = 0; j < NX; ++j) dx_[j] = rhs_[j];
      for (int i = 0; i < NQ; ++i) ds_[i] = (rs_[i] + rhs_[NX + NEQ + i]) / ds_diag_[i];
      if (!all_finite(dx_, NX) || !all_finite(ds_, NQ)) return IpmOutcome::RestorationFailed;
      double alpha = primal_step_limit();
      bool moved = false;
      for (int b = 0; b < kMaxBacktracks && alpha > 1e-12; ++b, alpha *= 0.5) {
        if (!evaluate_trial(p, alpha)) continue;
        if (constraint_violation(ct_, dt_, st_) <= (1.0 - 1e-4 * alpha) * theta) {
          moved = true;
          break;
        }
      }
      if (!moved) return locally_infeasible(p, o) ? IpmOutcome::Infeasible : IpmOutcome::RestorationFailed;
      for (int j = 0; j < NX; ++j) x[j] = xt_[j];
      for (int i = 0; i < NQ; ++i) s[i] = st_[i];
      reset_bound_multipliers();
      if (!p.linearize(x, &f_, grad_, c_, d_)) return IpmOutcome::NonFinite;
      const double theta_new = constraint_violation(c_, d_, s);
      if (theta_new <= 0.9 * theta_start && filter_accepts(theta_new, barrier(f_, x, s))) {
        least_squares_multipliers(p);
        return IpmOutcome::Solved;
      }
      if (locally_infeasible(p, o)) return IpmOutcome::Infeasible;
    }
    return IpmOutcome::RestorationFailed;
  }

  // Whether the iterate is (to first order) a stationary point of the constraint violation
  // ||c||^2 + ||d - s||^2 that violates the constraints: its gradient, with the components
  // that point into an active bound removed, vanishes.
  bool locally_infeasible(Problem& p, const IpmOptions& o) {
    double viol = 0.0;
    for (int i = 0; i < NEQ; ++i) viol = max2(viol, std::fabs(c_[i]) / p.row_scale[i]);
    for (int i = 0; i < NQ; ++i) viol = max2(viol, std::fabs(d_[i] - s[i]) / p.row_scale[NEQ + i]);
    if (viol <= o.constr_viol_tol) return false;
    for (int i = 0; i < NQ; ++i) dsoc_[i] = d_[i] - s[i];
    for (int j = 0; j < NX; ++j) rx_[j] = 0.0;
    p.add_jacobian_transpose_times(c_, dsoc_, rx_);
    double g = 0.0;
    for (int j = 0; j < NX; ++j) {
      // Scaled by the distance to the bound the descent direction -g moves toward.
      double room = 1.0;
      if (rx_[j] > 0.0 && hl_[j]) room = min2(1.0, x[j] - xl_[j]);
      if (rx_[j] < 0.0 && hu_[j]) room = min2(1.0, xu_[j] - x[j]);
      g = max2(g, std::fabs(rx_[j]) * room);
    }
    for (int i = 0; i < NQ; ++i) {
      const double gs = -dsoc_[i];
      double room = 1.0;
      if (gs > 0.0 && hdl_[i]) room = min2(1.0, s[i] - dl_[i]);
      if (gs < 0.0 && hdu_[i]) room = min2(1.0, du_[i] - s[i]);
      g = max2(g, std::fabs(gs) * room);
    }
    return g <= 1e-6 * max2(1.0, constraint_violation(c_, d_, s));
  }

  // The unscaled point and signed multipliers. The point is the iterate itself, which may
  // cross a bound by its relaxation (bound_relax_factor, at most constr_viol_tol): projecting it back would
  // move the constraints by as much times their gradients (Ipopt 3.14 no longer projects by
  // default: honor_original_bounds = no).
  void unscale(Problem& p, double* x_out, double* lam_eq, double* lam_q, double* lam_box) const {
    for (int j = 0; j < NX; ++j) {
      x_out[j] = x[j];
      lam_box[j] = (zu[j] - zl[j]) / p.obj_scale;
    }
    for (int i = 0; i < NEQ; ++i) lam_eq[i] = yc[i] * p.row_scale[i] / p.obj_scale;
    for (int i = 0; i < NQ; ++i) lam_q[i] = yd[i] * p.row_scale[NEQ + i] / p.obj_scale;
  }

  static double violation(double v, double lb, double ub) { return max2(0.0, max2(lb - v, v - ub)); }
  static double complementarity(double lam, double v, double lb, double ub) {
    if (lam > 0.0) return std::isfinite(ub) ? lam * std::fabs(ub - v) : lam;
    if (lam < 0.0) return std::isfinite(lb) ? -lam * std::fabs(v - lb) : -lam;
    return 0.0;
  }

  // The report's residuals at the returned point, unscaled, with the problem's own bounds.
  void measure(Problem& p, const double* xv, const double* lam_q, const double* lam_box, IpmReport* r) {
    r->objective = f_ / p.obj_scale;
    r->eq = 0.0;
    for (int i = 0; i < NEQ; ++i) r->eq = max2(r->eq, std::fabs(c_[i]) / p.row_scale[i]);
    r->ineq = 0.0;
    r->comp = 0.0;
    for (int i = 0; i < NQ; ++i) {
      const double d = d_[i] / p.row_scale[NEQ + i];
      r->ineq = max2(r->ineq, violation(d, p.q_lb(i), p.q_ub(i)));
      r->comp = max2(r->comp, complementarity(lam_q[i], d, p.q_lb(i), p.q_ub(i)));
    }
    for (int j = 0; j < NX; ++j) {
      r->ineq = max2(r->ineq, violation(xv[j], p.x_lb(j), p.x_ub(j)));
      r->comp = max2(r->comp, complementarity(lam_box[j], xv[j], p.x_lb(j), p.x_ub(j)));
    }
    for (int j = 0; j < NX; ++j) rx_[j] = grad_[j] + zu[j] - zl[j];
    p.add_jacobian_transpose_times(yc, yd, rx_);
    r->stat = dual_residual_norm() / p.obj_scale;
    if (!std::isfinite(r->objective)) r->objective = nan();
  }
};

RestorationNlp::RestorationNlp(int outer_nx, int rows_eq, int rows_q)
    : Problem(outer_nx + 2 * (rows_eq + rows_q), rows_eq, rows_q), NXO(outer_nx), NY(rows_eq + rows_q),
      buffer_(new double[5 * outer_nx + 8 * (rows_eq + rows_q) + 2 * rows_q + 16]) {
  double* next = buffer_;
  const auto take = [&](int n) {
    double* a = next;
    next += ipm_storage(n);
    return a;
  };
  xr = take(NXO), dr = take(NXO), q_lower = take(nq), q_upper = take(nq);
  grad_outer_ = take(NXO), diag_outer_x_ = take(NXO), diag_outer_y_ = take(NY), diag_p_ = take(NY);
  diag_n_ = take(NY), rhs_outer_ = take(NXO + NY), r_p_ = take(NY), r_n_ = take(NY), relaxed_ = take(NY);
  c_reported_ = take(neq), d_reported_ = take(nq);
  for (int i = 0; i < NY; ++i) relaxed_[i] = 1.0;
}

RestorationNlp::~RestorationNlp() { delete[] buffer_; }

void RestorationNlp::relax_rows_of(Problem* problem) {
  p = problem;
  for (int i = 0; i < NY; ++i) relaxed_[i] = i < neq && p->ties_copies(i) ? 0.0 : 1.0;
}

double RestorationNlp::x_lb(int j) const { return j < NXO ? p->x_lb(j) : 0.0; }
double RestorationNlp::x_ub(int j) const { return j < NXO ? p->x_ub(j) : std::numeric_limits<double>::infinity(); }
double RestorationNlp::q_lb(int i) const { return q_lower[i]; }
double RestorationNlp::q_ub(int i) const { return q_upper[i]; }
int RestorationNlp::stands_for(int j) const { return j < NXO ? p->stands_for(j) : j; }
bool RestorationNlp::ties_copies(int i) const { return p->ties_copies(i); }
void RestorationNlp::choose_scaling(const double*, double) {}

bool RestorationNlp::values(const double* x, double* f, double* c, double* d) {
  double f_outer = 0.0;
  if (!p->values(x, &f_outer, c, d)) return false;
  relax(x, c, d);
  *f = objective(x) + (keep_objective ? f_outer : 0.0);
  return std::isfinite(*f);
}

bool RestorationNlp::linearize(const double* x, double* f, double* grad, double* c, double* d) {
  if (!p->linearize(x, &f_outer_, grad_outer_, c, d)) return false;
  relax(x, c, d);
  *f = objective(x) + (keep_objective ? f_outer_ : 0.0);
  for (int j = 0; j < NXO; ++j) grad[j] = zeta * dr[j] * (x[j] - xr[j]) + (keep_objective ? grad_outer_[j] : 0.0);
  for (int i = 0; i < 2 * NY; ++i) grad[NXO + i] = rho;
  return std::isfinite(*f);
}

void RestorationNlp::add_jacobian_transpose_times(const double* yc, const double* yd, double* out) {
  p->add_jacobian_transpose_times(yc, yd, out);
  for (int i = 0; i < neq; ++i) {
    out[NXO + i] -= relaxed_[i] * yc[i];
    out[NXO + NY + i] += relaxed_[i] * yc[i];
  }
  for (int i = 0; i < nq; ++i) {
    out[NXO + neq + i] -= yd[i];
    out[NXO + NY + neq + i] += yd[i];
  }
}

bool RestorationNlp::hessian(const double* x, const double* yc, const double* yd) {
  return keep_objective ? p->hessian(x, yc, yd) : p->constraint_hessian(x, yc, yd);
}

bool RestorationNlp::constraint_hessian(const double* x, const double* yc, const double* yd) {
  return p->constraint_hessian(x, yc, yd);
}

Inertia RestorationNlp::factorize(bool with_hessian, const double* diag_x, const double* diag_y) {
  for (int j = 0; j < NXO; ++j) diag_outer_x_[j] = diag_x[j] + zeta * dr[j];
  for (int i = 0; i < NY; ++i) {
    diag_p_[i] = diag_x[NXO + i];
    diag_n_[i] = diag_x[NXO + NY + i];
    diag_outer_y_[i] = relaxed_[i] != 0.0 ? diag_y[i] - 1.0 / diag_p_[i] - 1.0 / diag_n_[i] : diag_y[i];
  }
  Inertia inertia = p->factorize(with_hessian, diag_outer_x_, diag_outer_y_);
  // The eliminated p and n blocks are positive definite.
  inertia.positive += 2 * NY;
  return inertia;
}

double RestorationNlp::solve(double* rhs) {
  for (int j = 0; j < NXO; ++j) rhs_outer_[j] = rhs[j];
  for (int i = 0; i < NY; ++i) {
    r_p_[i] = rhs[NXO + i];
    r_n_[i] = rhs[NXO + NY + i];
    rhs_outer_[NXO + i] = relaxed_[i] != 0.0 ? rhs[NXO + 2 * NY + i] + r_p_[i] / diag_p_[i] - r_n_[i] / diag_n_[i]
                                             : rhs[NXO + 2 * NY + i];
  }
  const double ratio = p->solve(rhs_outer_);
  for (int j = 0; j < NXO; ++j) rhs[j] = rhs_outer_[j];
  for (int i = 0; i < NY; ++i) {
    const double dy = rhs_outer_[NXO + i];
    rhs[NXO + i] = (r_p_[i] + relaxed_[i] * dy) / diag_p_[i];
    rhs[NXO + NY + i] = (r_n_[i] - relaxed_[i] * dy) / diag_n_[i];
    rhs[NXO + 2 * NY + i] = dy;
  }
  return ratio;
}

bool RestorationNlp::increase_quality() { return p->increase_quality(); }
void RestorationNlp::reset_quality() { p->reset_quality(); }

bool RestorationNlp::done(const double* x, const double* s) {
  return outer != nullptr && outer->restoration_accepts(*p, x, s);
}

bool RestorationNlp::reported(const double* x, double* f, double* inf_pr) {
  if (outer == nullptr || !p->values(x, f, c_reported_, d_reported_)) return false;
  *f /= p->obj_scale;
  *inf_pr = p->row_violation(c_reported_, d_reported_);
  return true;
}


double RestorationNlp::objective(const double* x) const {
  double f = 0.0;
  for (int i = 0; i < 2 * NY; ++i) f += rho * x[NXO + i];
  for (int j = 0; j < NXO; ++j) f += 0.5 * zeta * dr[j] * (x[j] - xr[j]) * (x[j] - xr[j]);
  return f;
}

void RestorationNlp::relax(const double* x, double* c, double* d) const {
  for (int i = 0; i < neq; ++i) {
    if (relaxed_[i] != 0.0) c[i] += -x[NXO + i] + x[NXO + NY + i];
  }
  for (int i = 0; i < nq; ++i) d[i] += -x[NXO + neq + i] + x[NXO + NY + neq + i];
}

InteriorPoint::InteriorPoint(const Problem& p, bool outer) : method_(new Method(p, outer)) {}

InteriorPoint::~InteriorPoint() { delete method_; }

IpmReport InteriorPoint::run(Problem& p, const double* x0, IpmMultipliers warm, const IpmOptions& o, double* x_out,
                             double* lam_eq, double* lam_q, double* lam_box) {
  return method_->run(p, x0, warm, o, x_out, lam_eq, lam_q, lam_box);
}

}  // namespace v1
}  // namespace anvil_ipm

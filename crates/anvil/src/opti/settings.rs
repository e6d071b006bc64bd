//! Solver settings, statuses and per-solve information.

use crate::error::{Error, Result};

/// How the SQP method models the curvature of the problem.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum HessianApproximation {
    /// The exact Hessian of the Lagrangian, convexified where it is not positive definite
    /// (eigenvalues clipped with the dense backend, a diagonal shift with the sparse one).
    #[default]
    Exact,
    /// `JᵀJ` of the residual `r` of a least-squares cost `½‖r‖²` (the cost function returns
    /// the vector `r`): positive semi-definite by construction, no second derivatives.
    GaussNewton,
}

impl HessianApproximation {
    /// The name the Python API uses (`EXACT`, `GAUSS_NEWTON`).
    pub fn python_name(self) -> &'static str {
        match self {
            HessianApproximation::Exact => "EXACT",
            HessianApproximation::GaussNewton => "GAUSS_NEWTON",
        }
    }
}

/// Settings of an SQP solver. All but [`hessian_approximation`](Self::hessian_approximation)
/// can change from one solve to the next; the values a solver is built with are also the
/// defaults of its generated C++ `Settings` struct.
///
/// The residuals are ∞-norms: stationarity `‖∇f + J_eqᵀλ_eq + J_ineqᵀλ_ineq + λ_box‖∞`,
/// equality violation `‖g_eq − eq_rhs‖∞`, inequality violation (of the constraint and variable
/// bounds), and complementarity (each multiplier times the distance to the bound its sign says
/// is active). They are compared with the tolerances on the problem scaled as Ipopt scales it:
/// the objective and each constraint row divided so that their largest derivative at the
/// current iterate is at most 100 (problems of gradients ~1e6 cannot meet 1e-8 unscaled; Ipopt
/// measures at the start). Stationarity and complementarity are divided further by the scaled
/// multipliers' mean magnitude over 100 where that exceeds 1 (Ipopt's `s_d` and `s_c`): large
/// multipliers carry rounding errors of their size into `∇f + Jᵀλ`. A solved point also meets
/// Ipopt's unscaled limits (violation and complementarity ≤ 1e-4, stationarity ≤ 1). [`Info`]
/// reports the residuals unscaled. Where the line search finds no step from a point within 100
/// times the tolerances, the solve ends `Solved` there (Ipopt's acceptable level): rounding in
/// long sums of merit values can hide the last steps' decrease.
///
/// ```
/// use anvil::opti::SqpSettings;
/// let settings = SqpSettings { max_iter: 50, verbose: 1, ..SqpSettings::default() };
/// assert_eq!(settings.tol_stat, 1e-8);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct SqpSettings {
    /// Most SQP iterations (QP solves).
    pub max_iter: usize,
    /// Tolerance on the stationarity residual.
    pub tol_stat: f64,
    /// Tolerance on the equality violation.
    pub tol_eq: f64,
    /// Tolerance on the inequality and bound violation.
    pub tol_ineq: f64,
    /// Tolerance on complementarity.
    pub tol_comp: f64,
    /// Curvature model; fixed when the solver is built.
    pub hessian_approximation: HessianApproximation,
    /// The smallest eigenvalue the convexified Hessian may have (a margin that keeps each QP
    /// strictly convex).
    pub hessian_regularization: f64,
    /// The Riccati QP's Hessian (multistage problems, exact Hessian): shifted as a whole
    /// (`false`, the default), by the least of a growing sequence of multiples of the identity
    /// that makes the QP convex, which the QP's stage recursion detects (Ipopt's and fatrop's
    /// inertia correction), with the bounds estimated active credited near a solution as a
    /// barrier term would credit them: Newton steps where stage blocks are indefinite and the
    /// problem is not (COPS particle steering: 6 iterations instead of 75) and where the
    /// Hessian is negative only along saturated controls (the COPS rocket: 25-29 iterations
    /// instead of `MaxIter`; 19 of the 24 COPS optimal-control runs solved instead of 9); or
    /// (`true`) convexified stage by stage, each diagonal block positive definite, which
    /// needs no test but is no Newton step where a block is indefinite (the cart-pole
    /// swing-up at N = 200 ends `MaxIter` far from Ipopt's optimum). A Gauss-Newton Hessian is
    /// always convexified stage by stage; the PIQP backends ignore it.
    pub convexify_by_stage: bool,
    /// A backtracking line search (`false`: full steps).
    pub line_search: bool,
    /// The line search's test: sufficient decrease of the ℓ1 merit function f + ρ‖c‖₁
    /// against the largest of the last `merit_memory` values (`false`, the default); or
    /// (`true`) a filter on (constraint violation, objective) pairs (Wächter & Biegler's
    /// filter SQP), where a step is taken if it reduces either enough, which takes the long
    /// steps a large penalty ρ blocks (COPS gas oil) but also wanders where the merit
    /// function would not (the cart-pole from a moved initial state, COPS robot arm). Where
    /// the filter finds no step, the merit function's search is tried from the same point.
    pub filter: bool,
    /// Where the full step fails the line search's test and raises the infeasibility, the
    /// QP again with the constraint values at the trial point less their linear part
    /// (second-order corrections, against the Maratos effect), up to four times while the
    /// violation keeps falling; the first corrected step that passes the test is taken.
    /// Each correction costs a QP.
    pub second_order_correction: bool,
    /// Sufficient-decrease (Armijo) constant of the line search, in (0, 1).
    pub armijo: f64,
    /// Step reduction per backtracking step, in (0, 1).
    pub backtrack: f64,
    /// Most backtracking steps per iteration.
    pub max_line_search_steps: usize,
    /// Merit values remembered by the non-monotone line search (1: monotone). A step is
    /// accepted against the largest of them, which lets full steps through near the solution.
    pub merit_memory: usize,
    /// The QPs' absolute tolerance. PIQP and the interior-point QP backends solve every QP to
    /// it (the latter, where roundoff stalls them, to a millionth of the QP's data). The
    /// multistage solvers' Riccati backend reaches it near the solution; farther away it
    /// solves each QP only to 1e-4 times the current KKT error (at most 1e-3, never tighter
    /// than this): an inexact step there costs fewer QP iterations and few if any extra SQP
    /// iterations. A step that is no descent direction is recomputed to this tolerance before
    /// anything else changes.
    pub qp_eps_abs: f64,
    /// The QPs' relative tolerance (loosened far from the solution as `qp_eps_abs`).
    pub qp_eps_rel: f64,
    /// The QP solver's iteration limit.
    pub qp_max_iter: usize,
    /// 0: silent; 1: one line per iteration on stdout; 2 (or more): also, per iteration,
    /// the step's merit penalty, directional derivative (slope) and largest entry, and the
    /// iterations of each QP solved by the interior-point backends
    /// ([`QpBackend::IpmDense`], [`QpBackend::IpmSparse`]).
    ///
    /// [`QpBackend::IpmDense`]: super::QpBackend::IpmDense
    /// [`QpBackend::IpmSparse`]: super::QpBackend::IpmSparse
    pub verbose: u32,
    /// When the iteration limit ends a solve after a step, evaluate the derivatives at the
    /// returned point too, so that [`Info::stat_res`] is its stationarity (`true`); or only
    /// its objective and constraints (`false`: `stat_res` is NaN, and each iteration
    /// evaluates the derivatives once, which is what a real-time iteration wants).
    pub final_stationarity: bool,
}

impl Default for SqpSettings {
    fn default() -> Self {
        SqpSettings {
            max_iter: 100,
            tol_stat: 1e-8,
            tol_eq: 1e-8,
            tol_ineq: 1e-8,
            tol_comp: 1e-8,
            hessian_approximation: HessianApproximation::Exact,
            hessian_regularization: 1e-8,
            convexify_by_stage: false,
            line_search: true,
            filter: false,
            second_order_correction: true,
            armijo: 1e-4,
            backtrack: 0.5,
            max_line_search_steps: 30,
            merit_memory: 4,
            qp_eps_abs: 1e-10,
            qp_eps_rel: 1e-10,
            qp_max_iter: 250,
            verbose: 0,
            final_stationarity: true,
        }
    }
}

/// The most iterations of any kind a setting may ask for (the generated code counts in `int`).
const MAX_COUNT: usize = i32::MAX as usize;

impl SqpSettings {
    /// Real-time iteration (RTI), the MPC mode: each solve is one SQP step — linearise at the
    /// warm start, solve one QP, take the full step (no line search) — with the Gauss-Newton
    /// Hessian, the QP solved to 1e-6 (the step is an approximation of the optimum anyway; the
    /// looser tolerance saves interior-point iterations). A solve reports `Status::MaxIter`
    /// unless the warm start already was optimal; that is the expected outcome, the step is
    /// the answer. The derivatives are evaluated once, at the warm start
    /// (`final_stationarity` is off): the returned point's objective and constraint residuals
    /// are reported, its `stat_res` is NaN.
    ///
    /// ```
    /// use anvil::opti::{HessianApproximation, SqpSettings};
    /// let rti = SqpSettings::real_time_iteration();
    /// assert_eq!((rti.max_iter, rti.line_search, rti.final_stationarity), (1, false, false));
    /// assert_eq!(rti.hessian_approximation, HessianApproximation::GaussNewton);
    /// ```
    pub fn real_time_iteration() -> SqpSettings {
        SqpSettings {
            max_iter: 1,
            line_search: false,
            hessian_approximation: HessianApproximation::GaussNewton,
            qp_eps_abs: 1e-6,
            qp_eps_rel: 1e-6,
            final_stationarity: false,
            ..SqpSettings::default()
        }
    }

    /// Checks every value; the error names the setting and what it must be.
    pub fn validate(&self) -> Result<()> {
        let bad = |setting: &str, must: &str, value: String| Err(invalid_setting(setting, must, value));
        for (name, value) in [
            ("tol_stat", self.tol_stat),
            ("tol_eq", self.tol_eq),
            ("tol_ineq", self.tol_ineq),
            ("tol_comp", self.tol_comp),
            ("qp_eps_abs", self.qp_eps_abs),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return bad(name, "a positive finite number", value.to_string());
            }
        }
        for (name, value) in [("hessian_regularization", self.hessian_regularization), ("qp_eps_rel", self.qp_eps_rel)]
        {
            if !(value.is_finite() && value >= 0.0) {
                return bad(name, "a finite number ≥ 0", value.to_string());
            }
        }
        for (name, value) in [("armijo", self.armijo), ("backtrack", self.backtrack)] {
            if !(value > 0.0 && value < 1.0) {
                return bad(name, "in (0, 1)", value.to_string());
            }
        }
        for (name, value, least) in [
            ("max_iter", self.max_iter, 0),
            ("max_line_search_steps", self.max_line_search_steps, 1),
            ("merit_memory", self.merit_memory, 1),
            ("qp_max_iter", self.qp_max_iter, 1),
        ] {
            if value < least || value > MAX_COUNT {
                return bad(name, &format!("an integer in [{least}, {MAX_COUNT}]"), value.to_string());
            }
        }
        if self.verbose as usize > MAX_COUNT {
            return bad("verbose", &format!("an integer in [0, {MAX_COUNT}]"), self.verbose.to_string());
        }
        if self.merit_memory > MAX_MERIT_MEMORY {
            return bad("merit_memory", &format!("at most {MAX_MERIT_MEMORY}"), self.merit_memory.to_string());
        }
        Ok(())
    }

    /// The runtime settings as the generated code declares them, in the order the JIT passes
    /// them to native code (as plain scalars).
    pub(crate) fn fields(&self) -> [SettingField; SQP_SETTINGS] {
        use SettingField as F;
        [
            F::int("max_iter", self.max_iter, ""),
            F::double("tol_stat", self.tol_stat, ""),
            F::double("tol_eq", self.tol_eq, ""),
            F::double("tol_ineq", self.tol_ineq, ""),
            F::double("tol_comp", self.tol_comp, ""),
            F::double(
                "hessian_regularization",
                self.hessian_regularization,
                "Smallest eigenvalue of the convexified Hessian.",
            ),
            F::bool(
                "convexify_by_stage",
                self.convexify_by_stage,
                "Riccati QP: each stage block of the Hessian positive definite (false: the whole Hessian shifted where the QP finds it indefinite).",
            ),
            F::bool("line_search", self.line_search, "A backtracking line search (false: full steps)."),
            F::bool(
                "filter",
                self.filter,
                "The line search's test: the filter (true) or the l1 merit function (false).",
            ),
            F::bool(
                "second_order_correction",
                self.second_order_correction,
                "QPs with the trial point's constraint values where the full step fails the line search's test and raises the infeasibility.",
            ),
            F::double("armijo", self.armijo, ""),
            F::double("backtrack", self.backtrack, ""),
            F::int("max_line_search_steps", self.max_line_search_steps, ""),
            F::int(
                "merit_memory",
                self.merit_memory,
                "Merit values the non-monotone line search compares with (1 to 16).",
            ),
            F::double("qp_eps_abs", self.qp_eps_abs, ""),
            F::double("qp_eps_rel", self.qp_eps_rel, ""),
            F::int("qp_max_iter", self.qp_max_iter, ""),
            F::int(
                "verbose",
                self.verbose as usize,
                "0: silent; 1: one line per iteration on stdout; 2: also the interior-point QP backend's iterations.",
            ),
            F::bool(
                "final_stationarity",
                self.final_stationarity,
                "At the iteration limit, also evaluate the derivatives at the returned point (false: \
                 only values; Info::stat_res is then NaN).",
            ),
        ]
    }
}

/// One runtime setting of a generated solver: a member of its C++ `Settings` struct (with
/// the solver's value as its default) and one scalar of the JIT's flat settings array.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SettingField {
    pub name: &'static str,
    kind: FieldKind,
    /// The value as the JIT passes it.
    pub scalar: f64,
    pub doc: &'static str,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum FieldKind {
    Int,
    Double,
    Bool,
}

impl SettingField {
    pub(crate) fn int(name: &'static str, value: usize, doc: &'static str) -> Self {
        SettingField { name, kind: FieldKind::Int, scalar: value as f64, doc }
    }

    pub(crate) fn double(name: &'static str, value: f64, doc: &'static str) -> Self {
        SettingField { name, kind: FieldKind::Double, scalar: value, doc }
    }

    pub(crate) fn bool(name: &'static str, value: bool, doc: &'static str) -> Self {
        SettingField { name, kind: FieldKind::Bool, scalar: f64::from(u8::from(value)), doc }
    }
}

/// What the templates read: `name`, `cpp_type`, `default` (a C++ literal) and `doc`.
impl serde::Serialize for SettingField {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let (cpp_type, default) = match self.kind {
            FieldKind::Int => ("int", (self.scalar as i64).to_string()),
            FieldKind::Double => ("double", super::codegen::cpp_f64(self.scalar)),
            FieldKind::Bool => ("bool", (self.scalar != 0.0).to_string()),
        };
        let mut map = serializer.serialize_map(Some(4))?;
        map.serialize_entry("name", self.name)?;
        map.serialize_entry("cpp_type", cpp_type)?;
        map.serialize_entry("default", &default)?;
        map.serialize_entry("doc", self.doc)?;
        map.end()
    }
}

/// The most settings a solver has (the JIT's settings array is this long).
pub(crate) const MAX_SETTINGS: usize = 32;

const SQP_SETTINGS: usize = 19;
const _: () = assert!(SQP_SETTINGS <= MAX_SETTINGS);

/// The error of a setting out of its range: names the setting and what it must be.
pub(crate) fn invalid_setting(setting: &str, must: &str, value: String) -> Error {
    Error::Problem { what: "settings", name: setting.into(), message: format!("must be {must}, got {value}") }
}

/// The scalars the JIT passes for `fields` (no allocation: solves call this).
pub(crate) fn scalars(fields: &[SettingField]) -> [f64; MAX_SETTINGS] {
    let mut out = [0.0; MAX_SETTINGS];
    for (slot, field) in out.iter_mut().zip(fields) {
        *slot = field.scalar;
    }
    out
}

/// The generated code keeps this many merit values (the array is sized at compile time).
pub(crate) const MAX_MERIT_MEMORY: usize = 16;

/// How a solve ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(i32)]
pub enum Status {
    /// Every residual is within its tolerance.
    Solved = 0,
    /// `max_iter` iterations without convergence.
    MaxIter = 1,
    /// The QP solver failed (iteration limit, numerical trouble).
    QpFailed = 2,
    /// No step length gave enough decrease of the merit function (SQP), or the line search
    /// and the restoration phase found no acceptable point, or steps stopped changing the
    /// iterate at the smallest barrier parameter (interior point: Ipopt's "search direction
    /// becomes too small", where the tolerances are tighter than the problem's roundoff).
    LineSearchFailed = 3,
    /// A callback returned NaN or infinity at an accepted iterate.
    NanDetected = 4,
    /// The linearised constraints have no solution (the QP is infeasible).
    Infeasible = 5,
    /// An input (initial guess, parameter, multiplier, setting) is not finite or not valid.
    InvalidInput = 6,
}

impl Status {
    /// Every status, in code order.
    pub const ALL: [Status; 7] = [
        Status::Solved,
        Status::MaxIter,
        Status::QpFailed,
        Status::LineSearchFailed,
        Status::NanDetected,
        Status::Infeasible,
        Status::InvalidInput,
    ];

    /// The status with code `code` (as the generated code returns it).
    pub fn from_code(code: i32) -> Option<Status> {
        Status::ALL.into_iter().find(|s| *s as i32 == code)
    }

    /// The name the Python API uses (`SOLVED`, `MAX_ITER`, ...).
    pub fn python_name(self) -> &'static str {
        match self {
            Status::Solved => "SOLVED",
            Status::MaxIter => "MAX_ITER",
            Status::QpFailed => "QP_FAILED",
            Status::LineSearchFailed => "LINESEARCH_FAILED",
            Status::NanDetected => "NAN_DETECTED",
            Status::Infeasible => "INFEASIBLE",
            Status::InvalidInput => "INVALID_INPUT",
        }
    }

    /// The enumerator's name in the generated C++ (`Solved`, `MaxIter`, ...).
    pub(crate) fn cpp_name(self) -> &'static str {
        match self {
            Status::Solved => "Solved",
            Status::MaxIter => "MaxIter",
            Status::QpFailed => "QpFailed",
            Status::LineSearchFailed => "LineSearchFailed",
            Status::NanDetected => "NanDetected",
            Status::Infeasible => "Infeasible",
            Status::InvalidInput => "InvalidInput",
        }
    }
}

/// What a solve reports besides the solution.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Info {
    /// How it ended.
    pub status: Status,
    /// SQP iterations (QPs solved).
    pub iterations: usize,
    /// QP solver iterations, summed over the SQP iterations.
    pub qp_iterations: usize,
    /// The cost at the returned point.
    pub objective: f64,
    /// Stationarity residual at the returned point (NaN if the iteration limit ended the
    /// solve with [`SqpSettings::final_stationarity`] off).
    pub stat_res: f64,
    /// Equality violation.
    pub eq_res: f64,
    /// Inequality and bound violation.
    pub ineq_res: f64,
    /// Complementarity residual.
    pub comp_res: f64,
    /// Wall-clock time of the native solve, in seconds.
    pub solve_time: f64,
    /// With [`Status::InvalidInput`]: the argument at fault (`"x0"`, `"p"`, `"lam_eq0"`,
    /// `"lam_ineq0"`, `"lam_box0"`, `"settings"`, `"ws"` or `"outputs"`, as the generated
    /// C++ `Info::invalid_input` names it); `None` otherwise.
    pub invalid_input: Option<&'static str>,
}

/// The arguments a solve can find invalid, in the order of the generated code's
/// `kInvalidArguments` (the JIT reports an index into it).
const INVALID_ARGUMENTS: [&str; 8] = ["x0", "p", "lam_eq0", "lam_ineq0", "lam_box0", "settings", "ws", "outputs"];

/// Number of doubles the generated code reports per solve (status and counts as doubles).
pub(crate) const INFO_LEN: usize = 9;

impl Info {
    /// The report of a solve that has not run (status `InvalidInput`, no iterations, NaN
    /// residuals): for a [`Solution`](super::Solution) put together by hand.
    pub fn unsolved() -> Info {
        Info::from_scalars(
            &[Status::InvalidInput as i32 as f64, 0.0, 0.0, f64::NAN, f64::NAN, f64::NAN, f64::NAN, f64::NAN, -1.0],
            0.0,
        )
    }

    /// From the generated code's flat report.
    pub(crate) fn from_scalars(values: &[f64; INFO_LEN], solve_time: f64) -> Info {
        Info {
            status: Status::from_code(values[0] as i32).unwrap_or(Status::InvalidInput),
            iterations: values[1] as usize,
            qp_iterations: values[2] as usize,
            objective: values[3],
            stat_res: values[4],
            eq_res: values[5],
            ineq_res: values[6],
            comp_res: values[7],
            solve_time,
            invalid_input: usize::try_from(values[8] as i64).ok().and_then(|k| INVALID_ARGUMENTS.get(k).copied()),
        }
    }
}

//! Settings of the interior-point solver (named as Ipopt's options, with Ipopt's defaults).

use crate::error::Result;
use crate::opti::settings::{invalid_setting, HessianApproximation, SettingField, MAX_SETTINGS};

const IPM_SETTINGS: usize = 17;
const _: () = assert!(IPM_SETTINGS <= MAX_SETTINGS);

/// How the barrier parameter μ decreases.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MuStrategy {
    /// Fiacco–McCormick: μ is fixed until the barrier problem is solved to `10 μ`, then
    /// decreases superlinearly (`min(0.2 μ, μ^1.5)`). Robust; Ipopt's default.
    #[default]
    Monotone,
    /// μ follows the current complementarity each iteration (LOQO's rule: a fraction of the
    /// average that shrinks as the iterate is well centred), never increasing, with the
    /// monotone rule as a floor on progress. Fewer iterations on many problems.
    Adaptive,
}

impl MuStrategy {
    /// The name the Python API uses (`"monotone"`, `"adaptive"`, as Ipopt's `mu_strategy`).
    pub fn python_name(self) -> &'static str {
        match self {
            MuStrategy::Monotone => "monotone",
            MuStrategy::Adaptive => "adaptive",
        }
    }
}

/// Settings of an [`IpmFunction`](super::IpmFunction). The names and defaults are Ipopt's
/// options of the same names; all but
/// [`hessian_approximation`](Self::hessian_approximation) can change between solves.
///
/// A solve ends `Solved` when the scaled optimality error (Wächter & Biegler, eq. 5) is at
/// most `tol` and the unscaled dual infeasibility, constraint violation and
/// complementarity are within `dual_inf_tol`, `constr_viol_tol` and `compl_inf_tol`, or
/// when the error stayed below `acceptable_tol` for `acceptable_iter` iterations in a row
/// (Ipopt's "solved to an acceptable level"; `acceptable_iter = 0` turns that off).
///
/// ```
/// use anvil::opti::{IpmSettings, MuStrategy};
/// let settings = IpmSettings { mu_strategy: MuStrategy::Adaptive, verbose: 1, ..IpmSettings::default() };
/// assert_eq!((settings.tol, settings.max_iter), (1e-8, 3000));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct IpmSettings {
    /// Most iterations (restoration iterations included).
    pub max_iter: usize,
    /// Tolerance on the scaled optimality error.
    pub tol: f64,
    /// The "acceptable" level of the optimality error.
    pub acceptable_tol: f64,
    /// Consecutive acceptable iterations that end a solve (0: never).
    pub acceptable_iter: usize,
    /// Tolerance on the unscaled constraint violation.
    pub constr_viol_tol: f64,
    /// Tolerance on the unscaled dual infeasibility.
    pub dual_inf_tol: f64,
    /// Tolerance on the unscaled complementarity.
    pub compl_inf_tol: f64,
    /// The initial barrier parameter.
    pub mu_init: f64,
    /// How μ decreases.
    pub mu_strategy: MuStrategy,
    /// How far the initial point is pushed from its bounds (relative to the bound, at least 1).
    pub bound_push: f64,
    /// How far, at most, as a fraction of the distance between two bounds.
    pub bound_frac: f64,
    /// The bounds are relaxed by this (relative) amount, at most `constr_viol_tol` (in the
    /// problem's own units): equal bounds keep an interior.
    pub bound_relax_factor: f64,
    /// The cost and each constraint are scaled down so that their gradients at the initial
    /// point (as given, before the bound push, as Ipopt scales) are at most this large (0: no
    /// scaling).
    pub nlp_scaling_max_gradient: f64,
    /// Most second-order corrections per iteration.
    pub max_soc: usize,
    /// Warm start (MPC): the initial point is pushed from its bounds by only
    /// `warm_start_bound_push`, and given multipliers are kept (bound multipliers at least that
    /// large; equality multipliers by least squares when none are given). Set `mu_init` small
    /// (e.g. 1e-4) with it.
    pub warm_start_init_point: bool,
    /// The bound push of a warm start.
    pub warm_start_bound_push: f64,
    /// 0: silent; 1 (or more): one line per iteration on stdout, in Ipopt's columns.
    pub verbose: u32,
    /// Curvature model; fixed when the solver is built.
    pub hessian_approximation: HessianApproximation,
}

impl Default for IpmSettings {
    fn default() -> Self {
        IpmSettings {
            max_iter: 3000,
            tol: 1e-8,
            acceptable_tol: 1e-6,
            acceptable_iter: 15,
            constr_viol_tol: 1e-4,
            dual_inf_tol: 1.0,
            compl_inf_tol: 1e-4,
            mu_init: 0.1,
            mu_strategy: MuStrategy::Monotone,
            bound_push: 1e-2,
            bound_frac: 1e-2,
            bound_relax_factor: 1e-8,
            nlp_scaling_max_gradient: 100.0,
            max_soc: 4,
            warm_start_init_point: false,
            warm_start_bound_push: 1e-9,
            verbose: 0,
            hessian_approximation: HessianApproximation::Exact,
        }
    }
}

/// The most iterations of any kind a setting may ask for (the generated code counts in `int`).
const MAX_COUNT: usize = i32::MAX as usize;

impl IpmSettings {
    /// Checks every value; the error names the setting and what it must be.
    pub fn validate(&self) -> Result<()> {
        let bad = |setting: &str, must: &str, value: String| Err(invalid_setting(setting, must, value));
        for (name, value) in [
            ("tol", self.tol),
            ("acceptable_tol", self.acceptable_tol),
            ("constr_viol_tol", self.constr_viol_tol),
            ("dual_inf_tol", self.dual_inf_tol),
            ("compl_inf_tol", self.compl_inf_tol),
            ("mu_init", self.mu_init),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return bad(name, "a positive finite number", value.to_string());
            }
        }
        for (name, value) in [
            ("bound_push", self.bound_push),
            ("bound_frac", self.bound_frac),
            ("warm_start_bound_push", self.warm_start_bound_push),
        ] {
            if !(value > 0.0 && value < 0.5) {
                return bad(name, "in (0, 0.5)", value.to_string());
            }
        }
        if !(self.bound_relax_factor >= 0.0 && self.bound_relax_factor < 1.0) {
            return bad("bound_relax_factor", "in [0, 1)", self.bound_relax_factor.to_string());
        }
        if !(self.nlp_scaling_max_gradient.is_finite() && self.nlp_scaling_max_gradient >= 0.0) {
            return bad("nlp_scaling_max_gradient", "a finite number ≥ 0", self.nlp_scaling_max_gradient.to_string());
        }
        for (name, value) in [
            ("max_iter", self.max_iter),
            ("acceptable_iter", self.acceptable_iter),
            ("max_soc", self.max_soc),
            ("verbose", self.verbose as usize),
        ] {
            if value > MAX_COUNT {
                return bad(name, &format!("an integer in [0, {MAX_COUNT}]"), value.to_string());
            }
        }
        Ok(())
    }

    /// The runtime settings as the generated code declares them, in the JIT's order.
    pub(crate) fn fields(&self) -> [SettingField; IPM_SETTINGS] {
        use SettingField as F;
        [
            F::int("max_iter", self.max_iter, "Most iterations (restoration iterations included)."),
            F::double("tol", self.tol, "Tolerance on the scaled optimality error."),
            F::double("acceptable_tol", self.acceptable_tol, ""),
            F::int(
                "acceptable_iter",
                self.acceptable_iter,
                "Consecutive acceptable iterations that end a solve (0: never).",
            ),
            F::double("constr_viol_tol", self.constr_viol_tol, ""),
            F::double("dual_inf_tol", self.dual_inf_tol, ""),
            F::double("compl_inf_tol", self.compl_inf_tol, ""),
            F::double("mu_init", self.mu_init, ""),
            F::bool(
                "adaptive_mu",
                self.mu_strategy == MuStrategy::Adaptive,
                "The adaptive barrier update (false: monotone).",
            ),
            F::double("bound_push", self.bound_push, ""),
            F::double("bound_frac", self.bound_frac, ""),
            F::double("bound_relax_factor", self.bound_relax_factor, ""),
            F::double("nlp_scaling_max_gradient", self.nlp_scaling_max_gradient, ""),
            F::int("max_soc", self.max_soc, ""),
            F::bool("warm_start_init_point", self.warm_start_init_point, ""),
            F::double("warm_start_bound_push", self.warm_start_bound_push, ""),
            F::int(
                "verbose",
                self.verbose as usize,
                "0: silent; 1: one line per iteration on stdout (Ipopt's columns).",
            ),
        ]
    }
}

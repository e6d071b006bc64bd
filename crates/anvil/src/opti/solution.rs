//! What a solve takes besides the guess and the parameter, and what it gives back: initial
//! multipliers, the solution (owned, or written into the caller's storage).

use super::settings::Info;

/// Initial multipliers (`None`: zeros).
#[derive(Clone, Copy, Debug, Default)]
pub struct WarmStart<'a> {
    /// One per equality constraint.
    pub lam_eq: Option<&'a [f64]>,
    /// One per inequality constraint.
    pub lam_ineq: Option<&'a [f64]>,
    /// One per variable.
    pub lam_box: Option<&'a [f64]>,
}

/// A solve's result: the last iterate, its multipliers, and what happened.
#[derive(Clone, Debug, PartialEq)]
pub struct Solution {
    /// The variables.
    pub x: Vec<f64>,
    /// Multipliers of the equality constraints.
    pub lam_eq: Vec<f64>,
    /// Multipliers of the inequality constraints (positive: upper bound active).
    pub lam_ineq: Vec<f64>,
    /// Multipliers of the variable bounds (positive: upper bound active).
    pub lam_box: Vec<f64>,
    /// Status, iteration counts, residuals, time.
    pub info: Info,
}

/// Where [`SqpFunction::solve_into`](super::SqpFunction::solve_into) writes (each of exactly the problem's size).
#[derive(Debug)]
pub struct SolutionMut<'a> {
    /// The variables.
    pub x: &'a mut [f64],
    /// Multipliers of the equality constraints.
    pub lam_eq: &'a mut [f64],
    /// Multipliers of the inequality constraints.
    pub lam_ineq: &'a mut [f64],
    /// Multipliers of the variable bounds.
    pub lam_box: &'a mut [f64],
}

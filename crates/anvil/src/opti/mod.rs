//! SQP solvers for nonlinear programs, generated as allocation-free C++ that calls PIQP.
//!
//! A [`Problem`] names the cost, constraint functions and bounds; an [`SqpFunction`] derives
//! what the SQP method needs from it (values, the linearisation, the Hessian of the
//! Lagrangian, dense or sparse), and generates the whole loop — evaluation, convexification,
//! QP solve, line search, multiplier update — as C++. It runs through the JIT
//! ([`SqpFunction::solve`]) or is written into a module with [`crate::generate_module`]; both
//! compile against PIQP and Eigen ([`include_dirs`]).
//!
//! Multipliers are signed, one per constraint row and per variable, for the Lagrangian
//! `L = f + λ_eqᵀ g_eq + λ_ineqᵀ g_ineq + λ_boxᵀ x`: a positive entry says the upper bound is
//! active, a negative one the lower (CasADi's `lam_g`/`lam_x` convention).

mod codegen;
mod deps;
mod derive;
mod layout;
mod multistage;
mod problem;
mod runtime;
mod settings;
mod solver;
mod stagewise;

pub use deps::{include_dirs, set_bundled_dirs, PIQP_VERSION};
pub use multistage::{ControlProblem, MultistageProblem, StateControl};
pub use problem::{Bound, Problem, INFINITE_BOUND};
pub use settings::{HessianApproximation, Info, SqpSettings, Status};
pub use solver::{JitSolver, QpBackend, Solution, SolutionMut, SqpFunction, WarmStart};

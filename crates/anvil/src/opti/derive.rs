//! The functions an SQP solver calls, derived from the problem's callbacks: values for the
//! line search, the linearisation (cost gradient, constraint Jacobians) and the Hessian.

use super::problem::Problem;
use super::settings::HessianApproximation;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::function::{derived_name, Arg, NumericalFunction};
use crate::pattern::SparsityPattern;
use crate::tensor::Tensor;
use crate::transform::derivatives::{self, SparseDerivative};
use ndarray::Array1;

/// How derivative matrices are stored for the QP solver.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Storage {
    /// Column-major dense matrices.
    Dense,
    /// CSC non-zeros of fixed patterns (the Hessian's upper triangle, diagonal included).
    Sparse,
}

/// A derivative matrix's layout: column-major dense, or a fixed CSC pattern.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Matrix {
    Dense { rows: usize, cols: usize },
    Sparse(SparsityPattern),
}

/// The derived functions and the layouts of what they return.
///
/// * `<solver>_values(x, p) -> (f, c_eq, g_q)`: what the line search needs at a trial point;
/// * `<solver>_linearize(x, p) -> (f, ∇f, c_eq, J_eq, g_q, J_q)`: the QP's linear data;
/// * `<solver>_hessian(x, p, λ_eq, λ_q) -> H`: the Lagrangian's Hessian (or `JᵀJ`).
///
/// `c_eq = g_eq − eq_rhs`; `g_q` are the inequality rows that have a finite bound (the
/// others constrain nothing and never reach the QP); matrices are laid out as `Matrix` says.
pub(crate) struct Derived {
    pub values: NumericalFunction,
    pub linearize: NumericalFunction,
    pub hessian: NumericalFunction,
    pub jac_eq: Matrix,
    pub jac_q: Matrix,
    pub hess: Matrix,
    /// Whether the Hessian's structure has each diagonal entry (a sparse layout stores them
    /// all, zeros included).
    pub hess_diagonal: Vec<bool>,
    /// The inequality rows passed to the QP, in order.
    pub q_rows: Vec<usize>,
}

/// The model of the problem the derived functions share: cost, constraint residuals.
struct Model {
    f: Tensor,
    residual: Option<Tensor>,
    c_eq: Tensor,
    g_q: Tensor,
}

impl Derived {
    pub fn new(solver: &str, problem: &Problem, approximation: HessianApproximation, storage: Storage) -> Result<Self> {
        check_cost(solver, problem, approximation)?;
        let q_rows: Vec<usize> = (0..problem.nineq())
            .filter(|&i| problem.ineq_lb[i].is_finite() || problem.ineq_ub[i].is_finite())
            .collect();
        let xp = problem.cost.inputs().to_vec();
        let values = NumericalFunction::trace(&derived_name(solver, "values"), xp.clone(), |s| {
            let m = model(problem, approximation, &q_rows, &s[0], &s[1])?;
            Ok(vec![m.f, m.c_eq, m.g_q])
        })?;
        let (mut jac_eq, mut jac_q) = (None, None);
        let linearize = NumericalFunction::trace(&derived_name(solver, "linearize"), xp.clone(), |s| {
            let x = &s[0];
            let m = model(problem, approximation, &q_rows, x, &s[1])?;
            let grad = derivatives::gradient(&m.f, x)?;
            let (je, le) = jacobian(&m.c_eq, x, storage)?;
            let (jq, lq) = jacobian(&m.g_q, x, storage)?;
            (jac_eq, jac_q) = (Some(le), Some(lq));
            Ok(vec![m.f, grad, m.c_eq, je, m.g_q, jq])
        })?;
        let (mut hess, mut hess_diagonal) = (None, None);
        let mut inputs = xp;
        inputs.extend([Arg::new(problem.neq()), Arg::new(q_rows.len())]);
        let hessian = NumericalFunction::trace(&derived_name(solver, "hessian"), inputs, |s| {
            let (x, lam_eq, lam_q) = (&s[0], &s[2], &s[3]);
            let m = model(problem, approximation, &q_rows, x, &s[1])?;
            let (h, layout, diagonal) = match (approximation, m.residual) {
                (HessianApproximation::GaussNewton, Some(r)) => gauss_newton(&r, x, storage)?,
                _ => {
                    let lagrangian = &m.f + (lam_eq * &m.c_eq).sum() + (lam_q * &m.g_q).sum();
                    exact_hessian(&lagrangian, x, storage)?
                }
            };
            (hess, hess_diagonal) = (Some(layout), Some(diagonal));
            Ok(h)
        })?;
        let missing = || Error::Problem { what: "solver", name: solver.into(), message: "tracing failed".into() };
        Ok(Derived {
            values,
            linearize,
            hessian,
            jac_eq: jac_eq.ok_or_else(missing)?,
            jac_q: jac_q.ok_or_else(missing)?,
            hess: hess.ok_or_else(missing)?,
            hess_diagonal: hess_diagonal.ok_or_else(missing)?,
            q_rows,
        })
    }
}

/// The cost must be a scalar, or a residual vector with Gauss-Newton.
fn check_cost(solver: &str, problem: &Problem, approximation: HessianApproximation) -> Result<()> {
    let out = &problem.cost.outputs()[0];
    match approximation {
        HessianApproximation::Exact if out.numel() != 1 => Err(Error::Problem {
            what: "solver",
            name: solver.into(),
            message: format!(
                "the cost function `{}` returns an array of shape {:?}; it must return a scalar \
                 (for a least-squares cost ½‖r‖² returning the residual r, use HessianApproximation::GaussNewton)",
                problem.cost.name(),
                out.shape
            ),
        }),
        HessianApproximation::GaussNewton if out.numel() == 0 => Err(Error::Problem {
            what: "solver",
            name: solver.into(),
            message: format!("the residual returned by the cost function `{}` is empty", problem.cost.name()),
        }),
        _ => Ok(()),
    }
}

/// Cost (with the least-squares residual for Gauss-Newton) and constraint residuals of
/// `problem` at the symbols `x`, `p`.
fn model(
    problem: &Problem,
    approximation: HessianApproximation,
    q_rows: &[usize],
    x: &Tensor,
    p: &Tensor,
) -> Result<Model> {
    let xp = [x.clone(), p.clone()];
    let first = |f: &NumericalFunction| -> Result<Tensor> { Ok(f.apply(&xp)?.remove(0).cast(DType::F64).flatten()) };
    let out = first(&problem.cost)?;
    let (f, residual) = match approximation {
        HessianApproximation::Exact => (out.reshape(()), None),
        HessianApproximation::GaussNewton => ((&out * &out).sum() * 0.5, Some(out)),
    };
    let c_eq = match &problem.eq {
        Some(g) => first(g)? - Tensor::from_array(&Array1::from(problem.eq_rhs.clone())),
        None => Tensor::zeros([0]),
    };
    let g_q = match &problem.ineq {
        Some(h) if q_rows.len() == problem.nineq() => first(h)?,
        Some(h) => {
            let rows: Vec<i64> = q_rows.iter().map(|&i| i as i64).collect();
            first(h)?.take(&Tensor::from_array(&Array1::from(rows)))
        }
        None => Tensor::zeros([0]),
    };
    Ok(Model { f, residual, c_eq, g_q })
}

/// The Jacobian of `y` with respect to `x`: its stored values and layout.
fn jacobian(y: &Tensor, x: &Tensor, storage: Storage) -> Result<(Tensor, Matrix)> {
    let (m, n) = (y.numel(), x.numel());
    match storage {
        // Column-major: the transpose, row-major.
        Storage::Dense if m == 0 => Ok((Tensor::zeros([0]), Matrix::Dense { rows: 0, cols: n })),
        Storage::Dense => Ok((derivatives::jacobian(y, x)?.transpose(), Matrix::Dense { rows: m, cols: n })),
        Storage::Sparse if m == 0 => {
            let empty = SparsityPattern::new(0, n, []).expect("an empty pattern");
            Ok((Tensor::zeros([0]), Matrix::Sparse(empty)))
        }
        Storage::Sparse => {
            let d = derivatives::sparse_jacobian(y, x)?;
            Ok((d.values, Matrix::Sparse(d.pattern)))
        }
    }
}

/// A Hessian's values, layout, and which diagonal entries its structure has.
type Hessian = (Tensor, Matrix, Vec<bool>);

/// The exact Hessian of the scalar `lagrangian` with respect to `x`.
fn exact_hessian(lagrangian: &Tensor, x: &Tensor, storage: Storage) -> Result<Hessian> {
    let n = x.numel();
    match storage {
        Storage::Dense => Ok((derivatives::hessian(lagrangian, x)?, Matrix::Dense { rows: n, cols: n }, vec![true; n])),
        Storage::Sparse => with_diagonal(derivatives::sparse_hessian(lagrangian, x)?),
    }
}

/// `JᵀJ`, `J` the Jacobian of the residual `r`.
fn gauss_newton(r: &Tensor, x: &Tensor, storage: Storage) -> Result<Hessian> {
    let n = x.numel();
    match storage {
        Storage::Dense => {
            let j = derivatives::jacobian(r, x)?;
            Ok((j.transpose().matmul(&j), Matrix::Dense { rows: n, cols: n }, vec![true; n]))
        }
        Storage::Sparse => with_diagonal(derivatives::sparse_gauss_newton(r, x)?),
    }
}

/// A sparse upper triangle with its whole diagonal stored (zeros where the structure has
/// none): regularisation adds to the diagonal, and the QP solver's pattern stays fixed.
fn with_diagonal(d: SparseDerivative) -> Result<Hessian> {
    let n = d.pattern.shape().1;
    let diagonal: Vec<bool> = (0..n).map(|j| d.pattern.contains(j, j)).collect();
    let full = d.pattern.with_diagonal();
    if full.nnz() == d.pattern.nnz() {
        return Ok((d.values, Matrix::Sparse(full), diagonal));
    }
    let old = d.pattern.csc_entries();
    let zero_slot = old.len() as i64;
    let index: Vec<i64> = full
        .csc_entries()
        .iter()
        .map(|e| old.binary_search_by(|o| (o.1, o.0).cmp(&(e.1, e.0))).map_or(zero_slot, |k| k as i64))
        .collect();
    let padded = Tensor::cat(&[d.values, Tensor::zeros([1])], 0);
    Ok((padded.take(&Tensor::from_array(&Array1::from(index))), Matrix::Sparse(full), diagonal))
}

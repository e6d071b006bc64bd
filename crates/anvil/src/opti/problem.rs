//! The nonlinear program: callbacks and bounds, checked as they are given.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::function::{Arg, NumericalFunction};

/// Bounds at or beyond this magnitude mean "no bound" (as ±∞ do).
pub const INFINITE_BOUND: f64 = 1e20;

/// Bound values: one for every entry, or one per entry.
///
/// ```
/// use anvil::opti::Bound;
/// assert_eq!(Bound::from(1.5).resolve(2, "x_ub").unwrap(), vec![1.5, 1.5]);
/// assert_eq!(Bound::from(vec![0.0, 1e21]).resolve(2, "x_ub").unwrap(), vec![0.0, f64::INFINITY]);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum Bound {
    /// The same value everywhere.
    Scalar(f64),
    /// One value per entry.
    Vector(Vec<f64>),
}

impl From<f64> for Bound {
    fn from(v: f64) -> Self {
        Bound::Scalar(v)
    }
}

impl From<Vec<f64>> for Bound {
    fn from(v: Vec<f64>) -> Self {
        Bound::Vector(v)
    }
}

impl From<&[f64]> for Bound {
    fn from(v: &[f64]) -> Self {
        Bound::Vector(v.to_vec())
    }
}

impl<const N: usize> From<[f64; N]> for Bound {
    fn from(v: [f64; N]) -> Self {
        Bound::Vector(v.to_vec())
    }
}

impl Bound {
    /// The `n` values, with magnitudes ≥ [`INFINITE_BOUND`] made infinite; `what` names the
    /// bound in the error for a wrong length or a NaN.
    pub fn resolve(&self, n: usize, what: &str) -> Result<Vec<f64>> {
        let values = match self {
            Bound::Scalar(v) => vec![*v; n],
            Bound::Vector(v) if v.len() == n => v.clone(),
            Bound::Vector(v) => {
                return Err(problem_error(what, format!("has {} entries, expected {n} (or one scalar)", v.len())))
            }
        };
        if let Some(i) = values.iter().position(|v| v.is_nan()) {
            return Err(problem_error(what, format!("entry {i} is NaN")));
        }
        Ok(values.into_iter().map(|v| if v.abs() >= INFINITE_BOUND { v.signum() * f64::INFINITY } else { v }).collect())
    }
}

pub(crate) fn problem_error(what: &str, message: String) -> Error {
    Error::Problem { what: "problem", name: what.into(), message }
}

/// A nonlinear program in `x` with parameter `p`:
///
/// ```text
/// min f(x, p)  s.t.  g_eq(x, p) = eq_rhs,  ineq_lb ≤ g_ineq(x, p) ≤ ineq_ub,  x_lb ≤ x ≤ x_ub
/// ```
///
/// Every callback is a [`NumericalFunction`] of `(x, p)`: `x` a vector of `f64`, `p` an
/// `f64` array of any shape (`Arg::new(0)`: no parameter), the same two inputs for all.
/// Constraint functions return arrays of any shape, read as vectors. The cost returns a
/// scalar, or, for [`HessianApproximation::GaussNewton`](super::HessianApproximation), the
/// residual `r` of the least-squares cost `½‖r‖²`. Bounds of magnitude ≥ 1e20 are no bounds.
///
/// ```
/// use anvil::{Arg, NumericalFunction, opti::Problem};
/// # fn main() -> anvil::Result<()> {
/// let args = || [Arg::new(2), Arg::new(0)];
/// let f = NumericalFunction::new("f", |[x, _p]| (&x * &x).sum(), args())?;
/// let g = NumericalFunction::new("g", |[x, _p]| x.sum(), args())?;
/// let problem = Problem::new(&f)?.eq_constraints(&g, 1.0)?.bounds(0.0, f64::INFINITY)?;
/// assert_eq!((problem.nx(), problem.neq(), problem.nineq()), (2, 1, 0));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct Problem {
    pub(crate) cost: NumericalFunction,
    pub(crate) eq: Option<NumericalFunction>,
    pub(crate) ineq: Option<NumericalFunction>,
    pub(crate) eq_rhs: Vec<f64>,
    pub(crate) ineq_lb: Vec<f64>,
    pub(crate) ineq_ub: Vec<f64>,
    pub(crate) x_lb: Vec<f64>,
    pub(crate) x_ub: Vec<f64>,
}

impl Problem {
    /// The unconstrained problem of minimising `cost`.
    pub fn new(cost: &NumericalFunction) -> Result<Problem> {
        check_inputs(cost, "the cost function")?;
        let nx = cost.inputs()[0].shape[0];
        check_output(cost, "the cost function")?;
        Ok(Problem {
            cost: cost.renamed(cost.name())?,
            eq: None,
            ineq: None,
            eq_rhs: Vec::new(),
            ineq_lb: Vec::new(),
            ineq_ub: Vec::new(),
            x_lb: vec![f64::NEG_INFINITY; nx],
            x_ub: vec![f64::INFINITY; nx],
        })
    }

    /// Adds the equality constraints `g(x, p) = rhs`.
    pub fn eq_constraints(mut self, g: &NumericalFunction, rhs: impl Into<Bound>) -> Result<Problem> {
        let m = self.constraint_rows(g, "the equality constraint function")?;
        self.eq_rhs = rhs.into().resolve(m, "eq_rhs")?;
        if let Some(i) = self.eq_rhs.iter().position(|v| v.is_infinite()) {
            return Err(problem_error("eq_rhs", format!("entry {i} is infinite; an equality needs a finite value")));
        }
        self.eq = (m > 0).then(|| g.renamed(g.name())).transpose()?;
        Ok(self)
    }

    /// Adds the inequality constraints `lb ≤ h(x, p) ≤ ub` (use ±∞ where a side is open).
    pub fn ineq_constraints(
        mut self,
        h: &NumericalFunction,
        lb: impl Into<Bound>,
        ub: impl Into<Bound>,
    ) -> Result<Problem> {
        let m = self.constraint_rows(h, "the inequality constraint function")?;
        let (lb, ub) = (lb.into().resolve(m, "ineq_lb")?, ub.into().resolve(m, "ineq_ub")?);
        check_ordered(&lb, &ub, "ineq_lb", "ineq_ub")?;
        (self.ineq_lb, self.ineq_ub) = (lb, ub);
        self.ineq = (m > 0).then(|| h.renamed(h.name())).transpose()?;
        Ok(self)
    }

    /// Sets the bounds `lb ≤ x ≤ ub` on the variables.
    pub fn bounds(mut self, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Problem> {
        let (lb, ub) = (lb.into().resolve(self.nx(), "x_lb")?, ub.into().resolve(self.nx(), "x_ub")?);
        check_ordered(&lb, &ub, "x_lb", "x_ub")?;
        (self.x_lb, self.x_ub) = (lb, ub);
        Ok(self)
    }

    /// Number of variables.
    pub fn nx(&self) -> usize {
        self.x_lb.len()
    }

    /// Number of parameter entries.
    pub fn np(&self) -> usize {
        self.cost.inputs()[1].shape.iter().product()
    }

    /// Number of equality constraints.
    pub fn neq(&self) -> usize {
        self.eq_rhs.len()
    }

    /// Number of inequality constraints.
    pub fn nineq(&self) -> usize {
        self.ineq_lb.len()
    }

    /// The parameter's declared shape.
    pub fn param(&self) -> &Arg {
        &self.cost.inputs()[1]
    }

    /// The cost function.
    pub fn cost(&self) -> &NumericalFunction {
        &self.cost
    }

    /// The bounds on the variables, `(x_lb, x_ub)`.
    pub fn x_bounds(&self) -> (&[f64], &[f64]) {
        (&self.x_lb, &self.x_ub)
    }

    /// The bounds on the inequality constraints, `(ineq_lb, ineq_ub)`.
    pub fn ineq_bounds(&self) -> (&[f64], &[f64]) {
        (&self.ineq_lb, &self.ineq_ub)
    }

    /// The right-hand side of the equality constraints.
    pub fn eq_rhs(&self) -> &[f64] {
        &self.eq_rhs
    }

    /// Checks a constraint function against the cost's inputs; returns its number of rows.
    fn constraint_rows(&self, g: &NumericalFunction, what: &str) -> Result<usize> {
        check_inputs(g, what)?;
        check_output(g, what)?;
        if g.inputs() != self.cost.inputs() {
            return Err(problem_error(
                g.name(),
                format!(
                    "{what} takes ({}, {}) but the cost function takes ({}, {}); every callback takes the same (x, p)",
                    g.inputs()[0],
                    g.inputs()[1],
                    self.cost.inputs()[0],
                    self.cost.inputs()[1]
                ),
            ));
        }
        Ok(g.outputs()[0].shape.iter().product())
    }
}

/// A callback takes `(x, p)`: `x` a non-empty `f64` vector, `p` an `f64` array.
fn check_inputs(f: &NumericalFunction, what: &str) -> Result<()> {
    let inputs = f.inputs();
    let ok = inputs.len() == 2
        && inputs[0].shape.len() == 1
        && inputs[0].shape[0] > 0
        && inputs.iter().all(|a| a.dtype == DType::F64);
    if !ok {
        let got: Vec<String> = inputs.iter().map(|a| a.to_string()).collect();
        return Err(problem_error(
            f.name(),
            format!(
                "{what} must take (x, p): x a non-empty f64 vector, p an f64 array (Arg(0) for none); it takes ({})",
                got.join(", ")
            ),
        ));
    }
    Ok(())
}

/// A callback returns one floating-point array.
fn check_output(f: &NumericalFunction, what: &str) -> Result<()> {
    let outputs = f.outputs();
    if outputs.len() != 1 || !outputs[0].dtype.is_float() {
        let got: Vec<String> = outputs.iter().map(|a| a.to_string()).collect();
        return Err(problem_error(
            f.name(),
            format!("{what} must return one floating-point array; it returns ({})", got.join(", ")),
        ));
    }
    Ok(())
}

pub(crate) fn check_ordered(lb: &[f64], ub: &[f64], lb_name: &str, ub_name: &str) -> Result<()> {
    match lb.iter().zip(ub).position(|(l, u)| l > u || (l.is_infinite() && l == u)) {
        Some(i) => Err(problem_error(
            lb_name,
            format!("entry {i} is {} but {ub_name}[{i}] is {}: no value satisfies both", lb[i], ub[i]),
        )),
        None => Ok(()),
    }
}

//! The native side of `anvil.opti`: SQP solvers built from traced functions, solved on
//! numpy arrays without the GIL.

use crate::errors::IntoPyResult;
use crate::function::PyFunction;
use anvil::opti::{
    Bound as BoundValues, HessianApproximation, Problem, QpBackend, SqpFunction, SqpSettings, WarmStart,
};
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

/// The native side of `DenseSQPFunction` / `SparseSQPFunction`.
#[pyclass(name = "_SqpSolver", module = "anvil._anvil", frozen)]
pub struct PySqpSolver {
    pub solver: Arc<SqpFunction>,
    settings: Mutex<SqpSettings>,
}

/// A bound given as a float (every entry) or a list of floats.
fn bound(value: &Bound<'_, PyAny>) -> PyResult<BoundValues> {
    if let Ok(v) = value.extract::<f64>() {
        return Ok(BoundValues::Scalar(v));
    }
    Ok(BoundValues::Vector(value.extract::<Vec<f64>>()?))
}

/// `SqpSettings` from a dict of the Python dataclass's fields.
fn settings_from(d: &Bound<'_, PyDict>) -> PyResult<SqpSettings> {
    let mut s = SqpSettings::default();
    for (key, value) in d.iter() {
        let key: String = key.extract()?;
        let count = |v: &Bound<'_, PyAny>| -> PyResult<usize> {
            v.extract::<usize>()
                .map_err(|_| PyValueError::new_err(format!("SQPSettings.{key} must be a non-negative integer")))
        };
        match key.as_str() {
            "max_iter" => s.max_iter = count(&value)?,
            "tol_stat" => s.tol_stat = value.extract()?,
            "tol_eq" => s.tol_eq = value.extract()?,
            "tol_ineq" => s.tol_ineq = value.extract()?,
            "tol_comp" => s.tol_comp = value.extract()?,
            "hessian_approximation" => {
                s.hessian_approximation = match value.extract::<String>()?.as_str() {
                    "EXACT" => HessianApproximation::Exact,
                    "GAUSS_NEWTON" => HessianApproximation::GaussNewton,
                    other => return Err(PyValueError::new_err(format!("unknown Hessian approximation {other}"))),
                }
            }
            "hessian_regularization" => s.hessian_regularization = value.extract()?,
            "line_search" => s.line_search = value.extract()?,
            "armijo" => s.armijo = value.extract()?,
            "backtrack" => s.backtrack = value.extract()?,
            "max_line_search_steps" => s.max_line_search_steps = count(&value)?,
            "merit_memory" => s.merit_memory = count(&value)?,
            "qp_eps_abs" => s.qp_eps_abs = value.extract()?,
            "qp_eps_rel" => s.qp_eps_rel = value.extract()?,
            "qp_max_iter" => s.qp_max_iter = count(&value)?,
            "verbose" => s.verbose = value.extract()?,
            other => return Err(PyTypeError::new_err(format!("SQPSettings has no field `{other}`"))),
        }
    }
    s.validate().py()?;
    Ok(s)
}

/// Builds a solver: `backend` is "dense" or "sparse"; functions are the problem's callbacks;
/// bounds are floats or lists of floats (already defaulted by the Python side).
#[pyfunction]
#[pyo3(signature = (name, backend, cost, eq, ineq, x_lb, x_ub, eq_rhs, ineq_lb, ineq_ub, settings))]
#[allow(clippy::too_many_arguments)]
pub fn sqp_solver(
    py: Python<'_>,
    name: &str,
    backend: &str,
    cost: &PyFunction,
    eq: Option<PyRef<'_, PyFunction>>,
    ineq: Option<PyRef<'_, PyFunction>>,
    x_lb: &Bound<'_, PyAny>,
    x_ub: &Bound<'_, PyAny>,
    eq_rhs: &Bound<'_, PyAny>,
    ineq_lb: &Bound<'_, PyAny>,
    ineq_ub: &Bound<'_, PyAny>,
    settings: &Bound<'_, PyDict>,
) -> PyResult<PySqpSolver> {
    let backend = match backend {
        "dense" => QpBackend::PiqpDense,
        "sparse" => QpBackend::PiqpSparse,
        other => return Err(PyValueError::new_err(format!("unknown backend {other}"))),
    };
    let settings = settings_from(settings)?;
    let mut problem = Problem::new(cost.0.function()).py()?;
    if let Some(g) = eq {
        problem = problem.eq_constraints(g.0.function(), bound(eq_rhs)?).py()?;
    }
    if let Some(h) = ineq {
        problem = problem.ineq_constraints(h.0.function(), bound(ineq_lb)?, bound(ineq_ub)?).py()?;
    }
    problem = problem.bounds(bound(x_lb)?, bound(x_ub)?).py()?;
    // Deriving sparse Hessians of large problems takes a while: let other threads run.
    let solver = py.detach(|| SqpFunction::new(name, &problem, settings.clone(), backend)).py()?;
    Ok(PySqpSolver { solver: Arc::new(solver), settings: Mutex::new(settings) })
}

type Arrays<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    (i32, usize, usize, f64, f64, f64, f64, f64, f64),
);

#[pymethods]
impl PySqpSolver {
    /// The solver's name.
    #[getter]
    fn name(&self) -> &str {
        self.solver.name()
    }

    /// `(nx, neq, nineq)`.
    #[getter]
    fn dims(&self) -> (usize, usize, usize) {
        (self.solver.nx(), self.solver.neq(), self.solver.nineq())
    }

    /// The parameter's shape.
    #[getter]
    fn param_shape(&self) -> Vec<usize> {
        self.solver.param().shape.clone()
    }

    /// Replaces the settings (a dict of `SQPSettings` fields).
    fn set_settings(&self, settings: &Bound<'_, PyDict>) -> PyResult<()> {
        let s = settings_from(settings)?;
        if s.hessian_approximation != self.solver.settings().hessian_approximation {
            return Err(PyValueError::new_err(format!(
                "the Hessian approximation of solver `{}` is fixed when it is built ({}); build a new solver for {}",
                self.solver.name(),
                self.solver.settings().hessian_approximation.python_name(),
                s.hessian_approximation.python_name()
            )));
        }
        *self.settings.lock().unwrap_or_else(|e| e.into_inner()) = s;
        Ok(())
    }

    /// The functions the solver calls (values, linearisation, Hessian).
    fn functions(&self) -> PyResult<Vec<PyFunction>> {
        self.solver.functions().iter().map(|f| Ok(PyFunction::dense(f.renamed(f.name()).py()?))).collect()
    }

    /// Compiles (or loads from the cache) the native solver.
    fn compile(&self, py: Python<'_>) -> PyResult<()> {
        let solver = self.solver.clone();
        py.detach(move || solver.compile().map(|_| ())).py()
    }

    /// The solver's C++ declarations (its part of a module's header).
    fn header_code(&self) -> PyResult<String> {
        Ok(anvil::ModuleItem::source(&*self.solver).py()?.header)
    }

    /// The solver's C++ definitions (its part of a module's source).
    fn source_code(&self) -> PyResult<String> {
        Ok(anvil::ModuleItem::source(&*self.solver).py()?.source)
    }

    /// Solves; arrays are flat float64 (lengths checked natively), `None` multipliers are
    /// zeros. Returns `(x, lam_eq, lam_ineq, lam_box, (status, iterations, qp_iterations,
    /// objective, stat_res, eq_res, ineq_res, comp_res, solve_time))`.
    #[pyo3(signature = (x0, p, lam_eq0=None, lam_ineq0=None, lam_box0=None))]
    fn solve<'py>(
        &self,
        py: Python<'py>,
        x0: PyReadonlyArray1<'py, f64>,
        p: PyReadonlyArray1<'py, f64>,
        lam_eq0: Option<PyReadonlyArray1<'py, f64>>,
        lam_ineq0: Option<PyReadonlyArray1<'py, f64>>,
        lam_box0: Option<PyReadonlyArray1<'py, f64>>,
    ) -> PyResult<Arrays<'py>> {
        let settings = self.settings.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let slice = |a: &PyReadonlyArray1<'py, f64>| -> PyResult<Vec<f64>> { Ok(a.as_array().to_vec()) };
        let (x0, p) = (slice(&x0)?, slice(&p)?);
        let (le, li, lb) = (
            lam_eq0.as_ref().map(slice).transpose()?,
            lam_ineq0.as_ref().map(slice).transpose()?,
            lam_box0.as_ref().map(slice).transpose()?,
        );
        let solver = self.solver.clone();
        let solution = py
            .detach(move || {
                let warm = WarmStart { lam_eq: le.as_deref(), lam_ineq: li.as_deref(), lam_box: lb.as_deref() };
                solver.solve_with(&x0, &p, &warm, &settings)
            })
            .py()?;
        let i = solution.info;
        Ok((
            solution.x.into_pyarray(py).into_any(),
            solution.lam_eq.into_pyarray(py).into_any(),
            solution.lam_ineq.into_pyarray(py).into_any(),
            solution.lam_box.into_pyarray(py).into_any(),
            (
                i.status as i32,
                i.iterations,
                i.qp_iterations,
                i.objective,
                i.stat_res,
                i.eq_res,
                i.ineq_res,
                i.comp_res,
                i.solve_time,
            ),
        ))
    }
}

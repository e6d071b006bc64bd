//! The native side of `anvil.opti`: SQP solvers built from traced functions, solved on
//! numpy arrays without the GIL.

use crate::constant::PyConstant;
use crate::errors::IntoPyResult;
use crate::function::PyFunction;
use anvil::opti::{
    Bound as BoundValues, ControlProblem, HessianApproximation, Info, IpmFunction, IpmSettings, MuStrategy,
    MultistageProblem, Problem, QpBackend, Solution, SqpFunction, SqpSettings, WarmStart,
};
use numpy::{IntoPyArray, PyReadonlyArray1};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Arc, Mutex};

/// A generated solver: SQP or interior-point.
pub enum Method {
    Sqp(SqpFunction),
    Ipm(IpmFunction),
}

/// The settings of a [`Method`]'s solves.
#[derive(Clone)]
enum MethodSettings {
    Sqp(SqpSettings),
    Ipm(IpmSettings),
}

impl Method {
    /// The solver as an item of a module.
    pub fn module_item(&self) -> &dyn anvil::ModuleItem {
        match self {
            Method::Sqp(s) => s,
            Method::Ipm(s) => s,
        }
    }

    fn name(&self) -> &str {
        match self {
            Method::Sqp(s) => s.name(),
            Method::Ipm(s) => s.name(),
        }
    }

    fn dims(&self) -> (usize, usize, usize) {
        match self {
            Method::Sqp(s) => (s.nx(), s.neq(), s.nineq()),
            Method::Ipm(s) => (s.nx(), s.neq(), s.nineq()),
        }
    }

    fn param(&self) -> &anvil::Arg {
        match self {
            Method::Sqp(s) => s.param(),
            Method::Ipm(s) => s.param(),
        }
    }

    fn functions(&self) -> [&anvil::NumericalFunction; 3] {
        match self {
            Method::Sqp(s) => s.functions(),
            Method::Ipm(s) => s.functions(),
        }
    }

    fn compile(&self) -> anvil::Result<()> {
        match self {
            Method::Sqp(s) => s.compile().map(|_| ()),
            Method::Ipm(s) => s.compile().map(|_| ()),
        }
    }

    fn warnings(&self) -> &[String] {
        match self {
            Method::Sqp(s) => s.warnings(),
            Method::Ipm(s) => s.warnings(),
        }
    }

    fn hessian_approximation(&self) -> HessianApproximation {
        match self {
            Method::Sqp(s) => s.settings().hessian_approximation,
            Method::Ipm(s) => s.settings().hessian_approximation,
        }
    }

    /// Settings of this method from a dict of the Python dataclass's fields.
    fn settings_from(&self, d: &Bound<'_, PyDict>) -> PyResult<MethodSettings> {
        Ok(match self {
            Method::Sqp(_) => MethodSettings::Sqp(settings_from(d)?),
            Method::Ipm(_) => MethodSettings::Ipm(ipm_settings_from(d)?),
        })
    }

    fn solve(&self, x0: &[f64], p: &[f64], warm: &WarmStart, settings: &MethodSettings) -> anvil::Result<Solution> {
        match (self, settings) {
            (Method::Sqp(s), MethodSettings::Sqp(settings)) => s.solve_with(x0, p, warm, settings),
            (Method::Ipm(s), MethodSettings::Ipm(settings)) => s.solve_with(x0, p, warm, settings),
            _ => unreachable!("a solver's settings are of its own method (set_settings parses them so)"),
        }
    }
}

impl MethodSettings {
    fn hessian_approximation(&self) -> HessianApproximation {
        match self {
            MethodSettings::Sqp(s) => s.hessian_approximation,
            MethodSettings::Ipm(s) => s.hessian_approximation,
        }
    }
}

/// The native side of the solver classes (`DenseSQPFunction`, `SparseSQPFunction`,
/// `DenseIPMFunction`).
#[pyclass(name = "_Solver", module = "anvil._anvil", frozen)]
pub struct PySolver {
    pub solver: Arc<Method>,
    settings: Mutex<MethodSettings>,
    /// The `qp_backend` name an SQP solver was built with (`None` for the others).
    qp_backend: Option<&'static str>,
}

/// The QP backends of an SQP solver by their Python `qp_backend` name, for each kind of
/// problem; the first is the default (`qp_backend=None`). A new backend is one more line.
const MULTISTAGE_QP_BACKENDS: &[(&str, QpBackend)] =
    &[("riccati", QpBackend::Riccati), ("piqp", QpBackend::PiqpSparse), ("ipm", QpBackend::IpmSparse)];
const DENSE_QP_BACKENDS: &[(&str, QpBackend)] = &[("piqp", QpBackend::PiqpDense), ("ipm", QpBackend::IpmDense)];
const SPARSE_QP_BACKENDS: &[(&str, QpBackend)] = &[("piqp", QpBackend::PiqpSparse), ("ipm", QpBackend::IpmSparse)];

/// The QP backend `qp_backend` names among `backends` (`None`: the default, the first), with
/// its name; an unknown name is a `ValueError` listing the choices for `what`.
fn qp_backend_named(
    backends: &[(&'static str, QpBackend)],
    what: &str,
    name: Option<&str>,
) -> PyResult<(&'static str, QpBackend)> {
    let name = name.unwrap_or(backends[0].0);
    backends.iter().find(|(n, _)| *n == name).copied().ok_or_else(|| {
        let choices: Vec<String> = backends.iter().map(|(n, _)| format!("{n:?}")).collect();
        PyValueError::new_err(format!(
            "unknown qp_backend {name:?} for {what}; choose one of {} (None: {:?})",
            choices.join(", "),
            backends[0].0
        ))
    })
}

/// A bound given as a float (every entry) or a list of floats.
fn bound(value: &Bound<'_, PyAny>) -> PyResult<BoundValues> {
    if let Ok(v) = value.extract::<f64>() {
        return Ok(BoundValues::Scalar(v));
    }
    Ok(BoundValues::Vector(value.extract::<Vec<f64>>()?))
}

/// One field of a settings dict (`class` names the dataclass), read with an error that names it.
struct Field<'py> {
    class: &'static str,
    key: String,
    value: Bound<'py, PyAny>,
}

impl Field<'_> {
    fn wrong(&self, must: &str) -> PyErr {
        PyValueError::new_err(format!("{}.{} must be {must}, got {}", self.class, self.key, self.value))
    }

    fn count(&self) -> PyResult<usize> {
        self.value.extract::<usize>().map_err(|_| self.wrong("a non-negative integer below 2**31"))
    }

    fn number(&self) -> PyResult<f64> {
        self.value.extract::<f64>().map_err(|_| self.wrong("a number"))
    }

    fn flag(&self) -> PyResult<bool> {
        self.value.extract::<bool>().map_err(|_| self.wrong("a bool"))
    }

    fn verbose(&self) -> PyResult<u32> {
        self.value
            .extract::<u32>()
            .map_err(|_| self.wrong("a non-negative integer below 2**31 (0: silent, 1: a line per iteration)"))
    }

    /// One of `choices`, by its name.
    fn choice<T: Copy>(&self, choices: &[(&str, T)]) -> PyResult<T> {
        let name = self.value.extract::<String>().map_err(|_| self.wrong("a str"))?;
        choices.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).ok_or_else(|| {
            let names: Vec<String> = choices.iter().map(|(n, _)| format!("{n:?}")).collect();
            self.wrong(&names.join(" or "))
        })
    }

    fn hessian(&self) -> PyResult<HessianApproximation> {
        self.choice(&[("EXACT", HessianApproximation::Exact), ("GAUSS_NEWTON", HessianApproximation::GaussNewton)])
    }

    fn unknown(&self) -> PyErr {
        PyTypeError::new_err(format!("{} has no field `{}`", self.class, self.key))
    }
}

/// The fields of the settings dict `d` of the dataclass `class`.
fn fields<'py>(d: &Bound<'py, PyDict>, class: &'static str) -> PyResult<Vec<Field<'py>>> {
    d.iter().map(|(key, value)| Ok(Field { class, key: key.extract()?, value })).collect()
}

/// `SqpSettings` from a dict of the Python dataclass's fields; an error names the field.
fn settings_from(d: &Bound<'_, PyDict>) -> PyResult<SqpSettings> {
    let mut s = SqpSettings::default();
    for f in fields(d, "SQPSettings")? {
        match f.key.as_str() {
            "max_iter" => s.max_iter = f.count()?,
            "tol_stat" => s.tol_stat = f.number()?,
            "tol_eq" => s.tol_eq = f.number()?,
            "tol_ineq" => s.tol_ineq = f.number()?,
            "tol_comp" => s.tol_comp = f.number()?,
            "hessian_approximation" => s.hessian_approximation = f.hessian()?,
            "hessian_regularization" => s.hessian_regularization = f.number()?,
            "convexify_by_stage" => s.convexify_by_stage = f.flag()?,
            "line_search" => s.line_search = f.flag()?,
            "filter" => s.filter = f.flag()?,
            "second_order_correction" => s.second_order_correction = f.flag()?,
            "armijo" => s.armijo = f.number()?,
            "backtrack" => s.backtrack = f.number()?,
            "max_line_search_steps" => s.max_line_search_steps = f.count()?,
            "merit_memory" => s.merit_memory = f.count()?,
            "qp_eps_abs" => s.qp_eps_abs = f.number()?,
            "qp_eps_rel" => s.qp_eps_rel = f.number()?,
            "qp_max_iter" => s.qp_max_iter = f.count()?,
            "verbose" => s.verbose = f.verbose()?,
            "final_stationarity" => s.final_stationarity = f.flag()?,
            _ => return Err(f.unknown()),
        }
    }
    s.validate().py()?;
    Ok(s)
}

/// `IpmSettings` from a dict of the Python dataclass's fields; an error names the field.
fn ipm_settings_from(d: &Bound<'_, PyDict>) -> PyResult<IpmSettings> {
    let mut s = IpmSettings::default();
    for f in fields(d, "IPMSettings")? {
        match f.key.as_str() {
            "max_iter" => s.max_iter = f.count()?,
            "tol" => s.tol = f.number()?,
            "acceptable_tol" => s.acceptable_tol = f.number()?,
            "acceptable_iter" => s.acceptable_iter = f.count()?,
            "constr_viol_tol" => s.constr_viol_tol = f.number()?,
            "dual_inf_tol" => s.dual_inf_tol = f.number()?,
            "compl_inf_tol" => s.compl_inf_tol = f.number()?,
            "mu_init" => s.mu_init = f.number()?,
            "mu_strategy" => {
                s.mu_strategy = f.choice(&[("monotone", MuStrategy::Monotone), ("adaptive", MuStrategy::Adaptive)])?
            }
            "bound_push" => s.bound_push = f.number()?,
            "bound_frac" => s.bound_frac = f.number()?,
            "bound_relax_factor" => s.bound_relax_factor = f.number()?,
            "nlp_scaling_max_gradient" => s.nlp_scaling_max_gradient = f.number()?,
            "max_soc" => s.max_soc = f.count()?,
            "warm_start_init_point" => s.warm_start_init_point = f.flag()?,
            "warm_start_bound_push" => s.warm_start_bound_push = f.number()?,
            "verbose" => s.verbose = f.verbose()?,
            "hessian_approximation" => s.hessian_approximation = f.hessian()?,
            _ => return Err(f.unknown()),
        }
    }
    s.validate().py()?;
    Ok(s)
}

/// The problem a `DenseProblem`'s callbacks and bounds describe.
#[allow(clippy::too_many_arguments)]
fn problem_of(
    cost: &PyFunction,
    eq: Option<PyRef<'_, PyFunction>>,
    ineq: Option<PyRef<'_, PyFunction>>,
    x_lb: &Bound<'_, PyAny>,
    x_ub: &Bound<'_, PyAny>,
    eq_rhs: &Bound<'_, PyAny>,
    ineq_lb: &Bound<'_, PyAny>,
    ineq_ub: &Bound<'_, PyAny>,
) -> PyResult<Problem> {
    let mut problem = Problem::new(cost.0.function()).py()?;
    if let Some(g) = eq {
        problem = problem.eq_constraints(g.0.function(), bound(eq_rhs)?).py()?;
    }
    if let Some(h) = ineq {
        problem = problem.ineq_constraints(h.0.function(), bound(ineq_lb)?, bound(ineq_ub)?).py()?;
    }
    problem.bounds(bound(x_lb)?, bound(x_ub)?).py()
}

/// Builds an interior-point solver (`kkt`: "dense" or "sparse"); arguments as `sqp_solver`'s.
#[pyfunction]
#[pyo3(signature = (name, kkt, cost, eq, ineq, x_lb, x_ub, eq_rhs, ineq_lb, ineq_ub, settings))]
#[allow(clippy::too_many_arguments)]
pub fn ipm_solver(
    py: Python<'_>,
    name: &str,
    kkt: &str,
    cost: &PyFunction,
    eq: Option<PyRef<'_, PyFunction>>,
    ineq: Option<PyRef<'_, PyFunction>>,
    x_lb: &Bound<'_, PyAny>,
    x_ub: &Bound<'_, PyAny>,
    eq_rhs: &Bound<'_, PyAny>,
    ineq_lb: &Bound<'_, PyAny>,
    ineq_ub: &Bound<'_, PyAny>,
    settings: &Bound<'_, PyDict>,
) -> PyResult<PySolver> {
    let build = match kkt {
        "dense" => IpmFunction::dense,
        "sparse" => IpmFunction::sparse,
        other => return Err(PyValueError::new_err(format!("unknown KKT solver {other}"))),
    };
    let settings = ipm_settings_from(settings)?;
    let problem = problem_of(cost, eq, ineq, x_lb, x_ub, eq_rhs, ineq_lb, ineq_ub)?;
    // Sparse derivatives and the KKT matrix's ordering take a while on large problems.
    let solver = py.detach(|| build(name, &problem, settings.clone())).py()?;
    Ok(PySolver {
        solver: Arc::new(Method::Ipm(solver)),
        settings: Mutex::new(MethodSettings::Ipm(settings)),
        qp_backend: None,
    })
}

/// Builds a solver: `backend` is "dense" or "sparse", `qp_backend` names the QP solver
/// (`None`: the default); functions are the problem's callbacks; bounds are floats or lists
/// of floats (already defaulted by the Python side).
#[pyfunction]
#[pyo3(signature = (name, backend, qp_backend, cost, eq, ineq, x_lb, x_ub, eq_rhs, ineq_lb, ineq_ub, settings))]
#[allow(clippy::too_many_arguments)]
pub fn sqp_solver(
    py: Python<'_>,
    name: &str,
    backend: &str,
    qp_backend: Option<&str>,
    cost: &PyFunction,
    eq: Option<PyRef<'_, PyFunction>>,
    ineq: Option<PyRef<'_, PyFunction>>,
    x_lb: &Bound<'_, PyAny>,
    x_ub: &Bound<'_, PyAny>,
    eq_rhs: &Bound<'_, PyAny>,
    ineq_lb: &Bound<'_, PyAny>,
    ineq_ub: &Bound<'_, PyAny>,
    settings: &Bound<'_, PyDict>,
) -> PyResult<PySolver> {
    let (backend_name, backend) = match backend {
        "dense" => qp_backend_named(DENSE_QP_BACKENDS, "a DenseSQPFunction", qp_backend)?,
        "sparse" => qp_backend_named(SPARSE_QP_BACKENDS, "a SparseSQPFunction", qp_backend)?,
        other => return Err(PyValueError::new_err(format!("unknown backend {other}"))),
    };
    let settings = settings_from(settings)?;
    let problem = problem_of(cost, eq, ineq, x_lb, x_ub, eq_rhs, ineq_lb, ineq_ub)?;
    // Deriving sparse Hessians of large problems takes a while: let other threads run.
    let solver = py.detach(|| SqpFunction::new(name, &problem, settings.clone(), backend)).py()?;
    Ok(PySolver {
        solver: Arc::new(Method::Sqp(solver)),
        settings: Mutex::new(MethodSettings::Sqp(settings)),
        qp_backend: Some(backend_name),
    })
}

/// The native side of `anvil.opti.MultistageProblem`: a checked multistage problem (every
/// stage function's signature and the bounds' lengths are checked when it is built).
#[pyclass(name = "_MultistageProblem", module = "anvil._anvil", frozen)]
pub struct PyMultistageProblem(MultistageProblem);

/// The horizon `N`: a count of stage transitions, or a `CodegenIntConstant` naming it.
enum Horizon {
    Steps(usize),
    Named(anvil::CodegenIntConstant),
}

fn horizon(value: &Bound<'_, PyAny>) -> PyResult<Horizon> {
    if let Ok(c) = value.extract::<PyConstant>() {
        return Ok(Horizon::Named(c.0));
    }
    let n: i64 =
        value.extract().map_err(|_| PyTypeError::new_err("N must be an int or a CodegenIntConstant".to_string()))?;
    usize::try_from(n).map(Horizon::Steps).map_err(|_| PyValueError::new_err(format!("N must be >= 1, got {n}")))
}

type Function<'py> = Option<PyRef<'py, PyFunction>>;

/// A `MultistageProblem` in the z-form: functions of `(z, p_global, p_i)` (the interstage
/// one of `(z, z_next, p_global, p_i)`; with `shared_dim > 0` both take `s` before
/// `p_global`), any of them absent; bounds are floats or lists of floats (already defaulted
/// by the Python side).
#[pyfunction]
#[pyo3(signature = (
    n, nz, global_param_dim, param_dim, cost_initial, cost_stage, cost_terminal, eq_initial, eq_interstage,
    eq_stage, eq_terminal, ineq_stage, ineq_lb, ineq_ub, z_lb, z_ub, shared_dim=0, shared_lb=None, shared_ub=None,
    ineq_initial=None, ineq_initial_bounds=None, ineq_terminal=None, ineq_terminal_bounds=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn multistage_problem(
    n: &Bound<'_, PyAny>,
    nz: usize,
    global_param_dim: usize,
    param_dim: usize,
    cost_initial: Function<'_>,
    cost_stage: Function<'_>,
    cost_terminal: Function<'_>,
    eq_initial: Function<'_>,
    eq_interstage: Function<'_>,
    eq_stage: Function<'_>,
    eq_terminal: Function<'_>,
    ineq_stage: Function<'_>,
    ineq_lb: &Bound<'_, PyAny>,
    ineq_ub: &Bound<'_, PyAny>,
    z_lb: &Bound<'_, PyAny>,
    z_ub: &Bound<'_, PyAny>,
    shared_dim: usize,
    shared_lb: Option<&Bound<'_, PyAny>>,
    shared_ub: Option<&Bound<'_, PyAny>>,
    ineq_initial: Function<'_>,
    ineq_initial_bounds: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
    ineq_terminal: Function<'_>,
    ineq_terminal_bounds: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
) -> PyResult<PyMultistageProblem> {
    let mut problem = match horizon(n)? {
        Horizon::Steps(n) => MultistageProblem::new(n, nz, global_param_dim, param_dim),
        Horizon::Named(c) => MultistageProblem::with_horizon(&c, nz, global_param_dim, param_dim),
    }
    .py()?;
    if shared_dim > 0 {
        let (lb, ub) = shared_bounds(shared_lb, shared_ub)?;
        problem = problem.shared(shared_dim, lb, ub).py()?;
    }
    type Setter = fn(MultistageProblem, &anvil::NumericalFunction) -> anvil::Result<MultistageProblem>;
    let setters: [(Function<'_>, Setter); 7] = [
        (cost_initial, MultistageProblem::cost_initial),
        (cost_stage, MultistageProblem::cost_stage),
        (cost_terminal, MultistageProblem::cost_terminal),
        (eq_initial, MultistageProblem::eq_initial),
        (eq_interstage, MultistageProblem::eq_interstage),
        (eq_stage, MultistageProblem::eq_stage),
        (eq_terminal, MultistageProblem::eq_terminal),
    ];
    for (f, set) in setters {
        if let Some(f) = f {
            problem = set(problem, f.0.function()).py()?;
        }
    }
    if let Some(h) = ineq_stage {
        problem = problem.ineq_stage(h.0.function(), bound(ineq_lb)?, bound(ineq_ub)?).py()?;
    }
    if let Some((h, (lb, ub))) = ineq_initial.zip(ineq_initial_bounds) {
        problem = problem.ineq_initial(h.0.function(), bound(&lb)?, bound(&ub)?).py()?;
    }
    if let Some((h, (lb, ub))) = ineq_terminal.zip(ineq_terminal_bounds) {
        problem = problem.ineq_terminal(h.0.function(), bound(&lb)?, bound(&ub)?).py()?;
    }
    Ok(PyMultistageProblem(problem.bounds(bound(z_lb)?, bound(z_ub)?).py()?))
}

/// The bounds of shared variables (None: none).
fn shared_bounds(lb: Option<&Bound<'_, PyAny>>, ub: Option<&Bound<'_, PyAny>>) -> PyResult<(BoundValues, BoundValues)> {
    let or = |b: Option<&Bound<'_, PyAny>>, default: f64| b.map_or(Ok(BoundValues::Scalar(default)), bound);
    Ok((or(lb, f64::NEG_INFINITY)?, or(ub, f64::INFINITY)?))
}

/// A `MultistageProblem` from an optimal control problem in states and controls
/// (`MultistageProblem.from_dynamics`): callbacks of `(x, u, p)` (terminal cost and terminal
/// constraints: `(x, p)`), with `shared_dim > 0` of `(x, u, s, p)` and `(x, s, p)`.
#[pyfunction]
#[pyo3(signature = (
    n, nx, nu, param_dim, dynamics, stage_cost, terminal_cost, path, path_lb, path_ub, x_lb, x_ub, u_lb, u_ub,
    terminal=None, shared_dim=0, shared_lb=None, shared_ub=None, initial=None, terminal_ineq=None,
    terminal_ineq_bounds=None,
))]
#[allow(clippy::too_many_arguments)]
pub fn control_problem(
    n: &Bound<'_, PyAny>,
    nx: usize,
    nu: usize,
    param_dim: usize,
    dynamics: &PyFunction,
    stage_cost: Function<'_>,
    terminal_cost: Function<'_>,
    path: Function<'_>,
    path_lb: &Bound<'_, PyAny>,
    path_ub: &Bound<'_, PyAny>,
    x_lb: &Bound<'_, PyAny>,
    x_ub: &Bound<'_, PyAny>,
    u_lb: &Bound<'_, PyAny>,
    u_ub: &Bound<'_, PyAny>,
    terminal: Function<'_>,
    shared_dim: usize,
    shared_lb: Option<&Bound<'_, PyAny>>,
    shared_ub: Option<&Bound<'_, PyAny>>,
    initial: Function<'_>,
    terminal_ineq: Function<'_>,
    terminal_ineq_bounds: Option<(Bound<'_, PyAny>, Bound<'_, PyAny>)>,
) -> PyResult<PyMultistageProblem> {
    let f = dynamics.0.function();
    let mut ocp = match horizon(n)? {
        Horizon::Steps(n) => ControlProblem::new(n, nx, nu, param_dim, f),
        Horizon::Named(c) => ControlProblem::with_horizon(&c, nx, nu, param_dim, f),
    }
    .py()?;
    if ocp.shared_count() != shared_dim {
        let takes = f.inputs().iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
        return Err(PyValueError::new_err(format!(
            "problem `{}`: shared_dim = {shared_dim}, but dynamics_fn takes ({takes}); with shared variables s it \
             takes (x, u, s, p), s of shared_dim entries, and without them (x, u, p)",
            f.name()
        )));
    }
    if shared_dim > 0 {
        let (lb, ub) = shared_bounds(shared_lb, shared_ub)?;
        ocp = ocp.shared_bounds(lb, ub).py()?;
    } else if shared_lb.is_some() || shared_ub.is_some() {
        return Err(PyValueError::new_err("shared_lb/shared_ub are given but shared_dim is 0".to_string()));
    }
    if let Some(l) = stage_cost {
        ocp = ocp.stage_cost(l.0.function()).py()?;
        scalar_cost(l.0.function(), "stage_cost_fn")?;
    }
    if let Some(l) = terminal_cost {
        ocp = ocp.terminal_cost(l.0.function()).py()?;
        scalar_cost(l.0.function(), "terminal_cost_fn")?;
    }
    if let Some(h) = path {
        ocp = ocp.path_constraints(h.0.function(), bound(path_lb)?, bound(path_ub)?).py()?;
    }
    if let Some(r) = terminal {
        ocp = ocp.terminal_constraints(r.0.function()).py()?;
    }
    if let Some(r) = initial {
        ocp = ocp.initial_constraints(r.0.function()).py()?;
    }
    if let Some((h, (lb, ub))) = terminal_ineq.zip(terminal_ineq_bounds) {
        ocp = ocp.terminal_inequalities(h.0.function(), bound(&lb)?, bound(&ub)?).py()?;
    }
    ocp = ocp.state_bounds(bound(x_lb)?, bound(x_ub)?).py()?.control_bounds(bound(u_lb)?, bound(u_ub)?).py()?;
    Ok(PyMultistageProblem(MultistageProblem::from_dynamics(&ocp).py()?))
}

/// A cost of a `ControlProblem` returns a scalar (checked here: the Rust builder leaves it
/// to the lowering, whose error is a reshape's).
fn scalar_cost(f: &anvil::NumericalFunction, what: &str) -> PyResult<()> {
    match f.outputs().first() {
        Some(out) if out.numel() != 1 => Err(PyValueError::new_err(format!(
            "problem `{}`: {what} must return a scalar; it returns an array of shape {:?}",
            f.name(),
            out.shape
        ))),
        _ => Ok(()),
    }
}

#[pymethods]
impl PyMultistageProblem {
    /// Stage transitions `N`.
    #[getter]
    fn horizon(&self) -> usize {
        self.0.horizon()
    }

    /// Variables per stage.
    #[getter]
    fn nz(&self) -> usize {
        self.0.nz()
    }

    /// `(nvars, neq, nineq, np)`: all variables, equality and inequality rows, parameter
    /// entries.
    #[getter]
    fn dims(&self) -> (usize, usize, usize, usize) {
        (self.0.nvars(), self.0.neq(), self.0.nineq(), self.0.np())
    }

    /// Variables shared by every stage (the end of the solver's variables).
    #[getter]
    fn shared_dim(&self) -> usize {
        self.0.shared_count()
    }

    /// `(nx, nu)` of a problem built from dynamics, else `None`.
    #[getter]
    fn state_control(&self) -> Option<(usize, usize)> {
        self.0.state_control().map(|s| (s.nx, s.nu))
    }

    /// A solution's variables and multipliers moved one stage earlier (the next MPC step's
    /// warm start): `(x, lam_eq, lam_ineq, lam_box)`.
    fn shift<'py>(
        &self,
        py: Python<'py>,
        x: PyReadonlyArray1<'py, f64>,
        lam_eq: PyReadonlyArray1<'py, f64>,
        lam_ineq: PyReadonlyArray1<'py, f64>,
        lam_box: PyReadonlyArray1<'py, f64>,
    ) -> PyResult<[Bound<'py, PyAny>; 4]> {
        let vec = |a: &PyReadonlyArray1<'py, f64>| a.as_array().to_vec();
        let solution = Solution {
            x: vec(&x),
            lam_eq: vec(&lam_eq),
            lam_ineq: vec(&lam_ineq),
            lam_box: vec(&lam_box),
            info: Info::unsolved(),
        };
        let s = self.0.shift(&solution).py()?;
        Ok([s.x, s.lam_eq, s.lam_ineq, s.lam_box].map(|v| v.into_pyarray(py).into_any()))
    }
}

/// A solver for a multistage problem with the QP backend `qp_backend` names (`None`: the
/// default).
#[pyfunction]
#[pyo3(signature = (name, problem, qp_backend, settings))]
pub fn multistage_sqp_solver(
    py: Python<'_>,
    name: &str,
    problem: &PyMultistageProblem,
    qp_backend: Option<&str>,
    settings: &Bound<'_, PyDict>,
) -> PyResult<PySolver> {
    let (backend_name, backend) = qp_backend_named(MULTISTAGE_QP_BACKENDS, "a MultistageProblem", qp_backend)?;
    let settings = settings_from(settings)?;
    let problem = &problem.0;
    let solver = py.detach(|| SqpFunction::multistage(name, problem, settings.clone(), backend)).py()?;
    Ok(PySolver {
        solver: Arc::new(Method::Sqp(solver)),
        settings: Mutex::new(MethodSettings::Sqp(settings)),
        qp_backend: Some(backend_name),
    })
}

/// An interior-point solver for a multistage problem (its KKT systems factorised by stages).
#[pyfunction]
#[pyo3(signature = (name, problem, settings))]
pub fn multistage_ipm_solver(
    py: Python<'_>,
    name: &str,
    problem: &PyMultistageProblem,
    settings: &Bound<'_, PyDict>,
) -> PyResult<PySolver> {
    let settings = ipm_settings_from(settings)?;
    let problem = &problem.0;
    let solver = py.detach(|| IpmFunction::multistage(name, problem, settings.clone())).py()?;
    Ok(PySolver {
        solver: Arc::new(Method::Ipm(solver)),
        settings: Mutex::new(MethodSettings::Ipm(settings)),
        qp_backend: None,
    })
}

type Arrays<'py> = (
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    Bound<'py, PyAny>,
    (i32, usize, usize, f64, f64, f64, f64, f64, f64, Option<&'static str>),
);

#[pymethods]
impl PySolver {
    /// The solver's name.
    #[getter]
    fn name(&self) -> &str {
        self.solver.name()
    }

    /// The `qp_backend` name of a multistage solver (`None` for the others).
    #[getter]
    fn qp_backend(&self) -> Option<&'static str> {
        self.qp_backend
    }

    /// `(nx, neq, nineq)`.
    #[getter]
    fn dims(&self) -> (usize, usize, usize) {
        self.solver.dims()
    }

    /// The parameter's shape.
    #[getter]
    fn param_shape(&self) -> Vec<usize> {
        self.solver.param().shape.clone()
    }

    /// What the solver is likely to do badly, found when it was built.
    #[getter]
    fn warnings(&self) -> Vec<String> {
        self.solver.warnings().to_vec()
    }

    /// Replaces the settings (a dict of the method's settings fields).
    fn set_settings(&self, settings: &Bound<'_, PyDict>) -> PyResult<()> {
        let s = self.solver.settings_from(settings)?;
        let built = self.solver.hessian_approximation();
        if s.hessian_approximation() != built {
            return Err(PyValueError::new_err(format!(
                "the Hessian approximation of solver `{}` is fixed when it is built ({}); build a new solver for {}",
                self.solver.name(),
                built.python_name(),
                s.hessian_approximation().python_name()
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
        py.detach(move || solver.compile()).py()
    }

    /// The solver's C++ declarations (its part of a module's header).
    fn header_code(&self) -> PyResult<String> {
        Ok(self.solver.module_item().source().py()?.header)
    }

    /// The solver's C++ definitions (its part of a module's source).
    fn source_code(&self) -> PyResult<String> {
        Ok(self.solver.module_item().source().py()?.source)
    }

    /// Solves; arrays are flat float64 (lengths checked natively), `None` multipliers are
    /// zeros. Returns `(x, lam_eq, lam_ineq, lam_box, (status, iterations, qp_iterations,
    /// objective, stat_res, eq_res, ineq_res, comp_res, solve_time, invalid_input))`.
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
                solver.solve(&x0, &p, &warm, &settings)
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
                i.invalid_input,
            ),
        ))
    }
}

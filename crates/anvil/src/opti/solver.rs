//! `SqpFunction`: a generated SQP solver, callable through the JIT and emittable as C++.

use super::codegen::{self, GeneralQp, SolverLayout, StageLayout};
use super::deps;
use super::derive::{Derived, Storage};
use super::ipm::{self, analyse_kkt, IpmRuntime, SparseKkt};
use super::multistage::MultistageProblem;
use super::native::{check_lengths, check_solver_name, load_once, solve_to_new, Dims, JitSolver};
use super::problem::Problem;
use super::runtime::Runtime;
use super::settings::{self as settings_table, HessianApproximation, Info, SqpSettings};
use super::shared::{self, SharedLayout};
use super::solution::{Solution, SolutionMut, WarmStart};
use super::stagewise::{self, StageDerived};
use crate::error::{Error, Result};
use crate::function::{module_text, Arg, CodegenIntConstant, Includes, ModuleItem, NumericalFunction};
use crate::jit::{CompilerOptions, Unit};
use crate::render::ItemSource;
use std::sync::{Arc, Mutex};

/// The QP solver a generated SQP solver calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum QpBackend {
    /// PIQP's dense backend: dense derivatives, for small problems with dense structure.
    PiqpDense,
    /// PIQP's sparse backend: sparse derivatives on fixed patterns (coloured, as
    /// [`crate::ad::spjacobian`]), for larger problems.
    PiqpSparse,
    /// anvil's own interior-point QP for multistage problems, generated with the stage
    /// sizes as compile-time constants: dense stage blocks, and a block-tridiagonal
    /// (Riccati) factorisation over the stages, so that a QP iteration costs time linear
    /// in the horizon; with explicit dynamics ([`MultistageProblem::from_dynamics`]) a
    /// Riccati recursion over states and controls that keeps the dynamics exact. The
    /// default for [`MultistageProblem`]s.
    Riccati,
    /// anvil's interior-point method (that of [`IpmFunction`](super::IpmFunction), a QP being
    /// the NLP with a quadratic cost and linear constraints) on each QP, its KKT systems
    /// factorised as dense matrices (Bunch–Kaufman LDLᵀ, which also tells the
    /// convexification's inertia): dense derivatives. Needs neither PIQP nor Eigen; the elastic
    /// form of an infeasible QP is solved by the same method.
    IpmDense,
    /// As [`IpmDense`](Self::IpmDense) with sparse derivatives and a sparse (multifrontal)
    /// LDLᵀ whose ordering and symbolic analysis are computed when the solver is built: for
    /// larger problems, and multistage problems stamped into global patterns.
    IpmSparse,
}

impl QpBackend {
    /// How the derivatives are stored for this backend's whole-problem QPs (`None` for the
    /// Riccati backend's stage blocks).
    fn storage(self) -> Option<Storage> {
        match self {
            QpBackend::PiqpDense | QpBackend::IpmDense => Some(Storage::Dense),
            QpBackend::PiqpSparse | QpBackend::IpmSparse => Some(Storage::Sparse),
            QpBackend::Riccati => None,
        }
    }

    /// Whether the QPs are PIQP's (the runtime library, PIQP and Eigen needed).
    fn is_piqp(self) -> bool {
        matches!(self, QpBackend::PiqpDense | QpBackend::PiqpSparse)
    }

    /// Whether the QPs are solved by the interior-point method (its library needed).
    fn is_ipm(self) -> bool {
        matches!(self, QpBackend::IpmDense | QpBackend::IpmSparse)
    }
}

/// An SQP solver for a [`Problem`], generated as allocation-free C++: the loop (function and
/// derivative evaluation, convexification, QP solve, line search, multiplier update) runs in
/// native code. [`solve`](Self::solve) runs it through the JIT; [`crate::generate_module`]
/// writes it (with the functions it calls) into a C++ module.
///
/// ```
/// use anvil::{Arg, NumericalFunction, opti::{Problem, SqpFunction, SqpSettings, Status, WarmStart}};
/// # fn main() -> anvil::Result<()> {
/// let args = || [Arg::new(2), Arg::new(0)];
/// let f = NumericalFunction::new("rosen", |[x, _p]| {
///     let (a, b) = (x.get(0), x.get(1));
///     (1.0 - &a).square() + (&b - a.square()).square() * 100.0
/// }, args())?;
/// let problem = Problem::new(&f)?.bounds(-2.0, 0.5)?;
/// let solver = SqpFunction::dense("rosen_sqp", &problem, SqpSettings::default())?;
/// let solution = solver.solve(&[-1.0, 1.0], &[], &WarmStart::default())?;
/// assert_eq!(solution.info.status, Status::Solved);
/// // The optimum (0.5, 0.25) has x0 at its upper bound: a positive multiplier, 1.
/// assert!((solution.x[0] - 0.5).abs() < 1e-9 && (solution.x[1] - 0.25).abs() < 1e-9);
/// assert!((solution.lam_box[0] - 1.0).abs() < 1e-6);
/// # Ok(()) }
/// ```
pub struct SqpFunction {
    name: String,
    backend: QpBackend,
    settings: SqpSettings,
    derived: Derivation,
    dims: Dims,
    x_lb: Vec<f64>,
    x_ub: Vec<f64>,
    q_lb: Vec<f64>,
    q_ub: Vec<f64>,
    /// Named constants the generated code declares (a multistage problem's horizon).
    constants: Vec<CodegenIntConstant>,
    compiler: CompilerOptions,
    jit: Mutex<Option<Arc<JitSolver>>>,
    /// What the solver is likely to do badly, said when it was built.
    warnings: Vec<String>,
    /// With variables shared by every stage: the lifted problem's layout behind the user's.
    shared: Option<SharedLayout>,
}

/// The derived functions, and what the generated code needs to know about them.
enum Derivation {
    /// Whole-problem derivatives, dense or on sparse patterns (PIQP and interior-point
    /// backends); with [`QpBackend::IpmSparse`] the sparse KKT matrix's analysed structure.
    General(Box<Derived>, Option<Box<SparseKkt>>),
    /// Dense stage blocks of a multistage problem (the Riccati backend).
    Stages(Box<StageSolver>),
}

/// A multistage problem's block derivatives and stage sizes.
pub(crate) struct StageSolver {
    pub derived: StageDerived,
    pub nz: usize,
    /// Entries of the global parameter and of each stage's.
    pub global_param: usize,
    pub stage_param: usize,
    /// The horizon N as the C++ spells it: its constant's name, or its value.
    pub horizon: String,
    pub z_lb: Vec<f64>,
    pub z_ub: Vec<f64>,
    /// Each stage's last variables that copy variables shared by every stage.
    pub shared_copies: usize,
}

impl StageSolver {
    /// Derives `problem`'s dense stage blocks for solver `name`.
    pub(crate) fn new(name: &str, problem: &MultistageProblem, approximation: HessianApproximation) -> Result<Self> {
        Ok(StageSolver {
            derived: stagewise::derive_blocks(name, problem, approximation)?,
            nz: problem.nz,
            global_param: problem.global_param,
            stage_param: problem.stage_param,
            horizon: problem.horizon.as_ref().map_or(problem.n.to_string(), |c| codegen::global(c.name())),
            z_lb: problem.z_lb.clone(),
            z_ub: problem.z_ub.clone(),
            shared_copies: 0,
        })
    }
}

impl Derivation {
    fn functions(&self) -> [&NumericalFunction; 3] {
        match self {
            Derivation::General(d, _) => [&d.values, &d.linearize, &d.hessian],
            Derivation::Stages(s) => [&s.derived.values, &s.derived.linearize, &s.derived.hessian],
        }
    }

    fn q_rows(&self) -> &[usize] {
        match self {
            Derivation::General(d, _) => &d.q_rows,
            Derivation::Stages(s) => &s.derived.q_rows,
        }
    }
}

/// Bounds of the variables and of the QP's inequality rows.
pub(crate) struct Bounds {
    pub x_lb: Vec<f64>,
    pub x_ub: Vec<f64>,
    pub q_lb: Vec<f64>,
    pub q_ub: Vec<f64>,
}

impl Bounds {
    /// A multistage problem's bounds, every stage's repeated; `q_rows`: its inequality rows
    /// with a finite bound.
    pub(crate) fn multistage(problem: &MultistageProblem, q_rows: &[usize]) -> Self {
        let (lb, ub) = problem.ineq_bounds();
        let (q_lb, q_ub) = q_rows.iter().map(|&i| (lb[i], ub[i])).unzip();
        let repeat = |v: &[f64]| v.iter().copied().cycle().take(problem.nvars()).collect::<Vec<f64>>();
        Bounds { x_lb: repeat(&problem.z_lb), x_ub: repeat(&problem.z_ub), q_lb, q_ub }
    }
}

/// Checks that a dense KKT matrix of `size` rows fits in memory; the error suggests `instead`.
pub(crate) fn check_dense_kkt_size(name: &str, size: usize, instead: &str) -> Result<()> {
    crate::array::check_alloc(
        || format!("the dense KKT matrix of solver `{name}` ({size} rows; use {instead} for large problems)"),
        size.saturating_mul(size),
        8,
    )
}

/// The sparse KKT matrix's structure of an [`QpBackend::IpmSparse`] solver (`None` for the
/// other backends). As for the interior-point solvers, a variable's diagonal counts as
/// non-zero with curvature or a bound (a barrier term); the convexification's shift is too
/// small to pivot on (ordered as non-zero, such diagonals cost the pinene QPs delayed pivots).
fn sparse_kkt(
    name: &str,
    backend: QpBackend,
    derived: &Derived,
    x_lb: &[f64],
    x_ub: &[f64],
) -> Result<Option<Box<SparseKkt>>> {
    if backend != QpBackend::IpmSparse {
        return Ok(None);
    }
    let curved: Vec<bool> = (derived.hess_diagonal.iter().zip(x_lb.iter().cycle().zip(x_ub.iter().cycle())))
        .map(|(&diagonal, (lb, ub))| diagonal || lb.is_finite() || ub.is_finite())
        .collect();
    let kkt = analyse_kkt(name, derived, &curved)?;
    Ok(Some(Box::new(kkt)))
}

/// A solver's name leaves room for its functions' suffixes; its settings are valid.
fn check_solver(name: &str, settings: &SqpSettings) -> Result<()> {
    check_solver_name(name)?;
    settings.validate()
}

/// The warning for Gauss-Newton on a multistage problem whose stage costs are all linear in
/// `z` (their Hessians are structurally zero): the approximation keeps the costs' curvature
/// alone, so every step would have none but the regularisation's (both methods say it).
pub(crate) fn gauss_newton_without_curvature(
    name: &str,
    problem: &MultistageProblem,
    approximation: HessianApproximation,
) -> Result<Option<String>> {
    if approximation != HessianApproximation::GaussNewton {
        return Ok(None);
    }
    for term in problem.cost_terms() {
        if crate::function::ad::hessian_sparsity_wrt(&term.f, 0)?.nnz() > 0 {
            return Ok(None);
        }
    }
    Ok(Some(format!(
        "solver `{name}`: Gauss-Newton keeps only the Hessian of the stage costs, and they are linear in z \
         (their Hessian is structurally zero): the steps get no curvature but the regularisation, so they \
         are poor; use HessianApproximation::Exact for this problem"
    )))
}

/// Checks, before anything proportional to the horizon is built, that a solver of `problem`
/// fits in memory: the host's per-variable lists (bounds, rows), and with the Riccati backend
/// the workspace's dense stage blocks (about eight `nz × nz` blocks per stage).
pub(crate) fn check_multistage_size(name: &str, problem: &MultistageProblem, backend: QpBackend) -> Result<()> {
    let (n, nz) = (problem.n, problem.nz);
    let what = |kind: &'static str| {
        move || format!("{kind} of solver `{name}` (N = {n} stage transitions of nz = {nz} variables)")
    };
    let stages = problem.n.saturating_add(1);
    // Bounds, multipliers, steps and iterates: a few dozen doubles per variable.
    crate::array::check_alloc(what("the per-variable arrays"), problem.nvars().saturating_mul(32), 8)?;
    if backend == QpBackend::Riccati {
        let per_stage = problem.nz.saturating_mul(problem.nz).saturating_mul(8);
        crate::array::check_alloc(what("the stage blocks"), stages.saturating_mul(per_stage), 8)?;
    }
    Ok(())
}

impl SqpFunction {
    /// A solver with PIQP's dense backend.
    pub fn dense(name: &str, problem: &Problem, settings: SqpSettings) -> Result<Self> {
        SqpFunction::new(name, problem, settings, QpBackend::PiqpDense)
    }

    /// A solver with PIQP's sparse backend.
    pub fn sparse(name: &str, problem: &Problem, settings: SqpSettings) -> Result<Self> {
        SqpFunction::new(name, problem, settings, QpBackend::PiqpSparse)
    }

    /// A solver for `problem` named `name` (its C++ namespace; the functions it derives are
    /// named `<name>_values`, `<name>_linearize` and `<name>_hessian`).
    pub fn new(name: &str, problem: &Problem, settings: SqpSettings, backend: QpBackend) -> Result<Self> {
        check_solver(name, &settings)?;
        let Some(storage) = backend.storage() else {
            return Err(Error::Problem {
                what: "solver",
                name: name.into(),
                message: "QpBackend::Riccati solves multistage problems (SqpFunction::multistage); \
                          use PiqpDense, PiqpSparse, IpmDense or IpmSparse for a Problem"
                    .into(),
            });
        };
        if backend == QpBackend::IpmDense {
            check_dense_kkt_size(name, problem.nx() + problem.neq() + problem.nineq(), "QpBackend::IpmSparse")?;
        }
        let derived = Derived::new(name, problem, settings.hessian_approximation, storage)?;
        let kkt = sparse_kkt(name, backend, &derived, &problem.x_lb, &problem.x_ub)?;
        let (q_lb, q_ub) =
            derived.q_rows.iter().map(|&i| (problem.ineq_lb[i], problem.ineq_ub[i])).unzip::<_, _, Vec<_>, Vec<_>>();
        let dims =
            Dims { nx: problem.nx(), neq: problem.neq(), nineq: problem.nineq(), param: problem.param().clone() };
        let bounds = Bounds { x_lb: problem.x_lb.clone(), x_ub: problem.x_ub.clone(), q_lb, q_ub };
        Ok(SqpFunction::from_parts(
            name,
            backend,
            settings,
            Derivation::General(Box::new(derived), kkt),
            dims,
            bounds,
            Vec::new(),
        ))
    }

    /// A solver for a multistage problem: derivatives stage by stage (each stage function
    /// traced and differentiated once). [`QpBackend::Riccati`] keeps them as dense stage
    /// blocks for anvil's structured QP, its generated code calling each stage function in a
    /// loop over the stages (the loop keeps one stage's code and data in cache: on the
    /// cart-pole about 7× faster than the batched kernels of the vmapped evaluation);
    /// [`QpBackend::PiqpSparse`] evaluates them vmapped over the stages and stamps them into
    /// global sparse patterns for PIQP.
    pub fn multistage(
        name: &str,
        problem: &MultistageProblem,
        settings: SqpSettings,
        backend: QpBackend,
    ) -> Result<Self> {
        check_solver(name, &settings)?;
        let user = problem;
        let lifted = user.lifted()?;
        let problem = lifted.as_ref().unwrap_or(user);
        check_multistage_size(name, problem, backend)?;
        let approximation = settings.hessian_approximation;
        let derivation = match backend {
            QpBackend::PiqpSparse | QpBackend::IpmSparse => {
                let derived = stagewise::derive(name, problem, approximation)?;
                let kkt = sparse_kkt(name, backend, &derived, &problem.z_lb, &problem.z_ub)?;
                Derivation::General(Box::new(derived), kkt)
            }
            QpBackend::Riccati => Derivation::Stages(Box::new(StageSolver::new(name, problem, approximation)?)),
            QpBackend::PiqpDense | QpBackend::IpmDense => {
                return Err(Error::Problem {
                    what: "solver",
                    name: name.into(),
                    message: format!(
                        "a multistage problem is solved with QpBackend::Riccati (the default), PiqpSparse or \
                         IpmSparse, not {backend:?}"
                    ),
                })
            }
        };
        let dims = Dims::multistage(user);
        let bounds = Bounds::multistage(problem, derivation.q_rows());
        let constants = problem.horizon.iter().cloned().collect();
        let mut solver = SqpFunction::from_parts(name, backend, settings, derivation, dims, bounds, constants);
        solver.warnings.extend(gauss_newton_without_curvature(name, problem, approximation)?);
        solver.shared = SharedLayout::of(user, problem);
        Ok(solver)
    }

    fn from_parts(
        name: &str,
        backend: QpBackend,
        settings: SqpSettings,
        derived: Derivation,
        dims: Dims,
        bounds: Bounds,
        constants: Vec<CodegenIntConstant>,
    ) -> Self {
        SqpFunction {
            name: name.into(),
            backend,
            settings,
            dims,
            x_lb: bounds.x_lb,
            x_ub: bounds.x_ub,
            q_lb: bounds.q_lb,
            q_ub: bounds.q_ub,
            derived,
            constants,
            compiler: CompilerOptions::default(),
            jit: Mutex::new(None),
            warnings: Vec::new(),
            shared: None,
        }
    }

    /// What the solver is likely to do badly, found when it was built (the Python package
    /// issues each as a `UserWarning`): with [`HessianApproximation::GaussNewton`] on a
    /// multistage problem whose stage costs are linear, the Hessian the QPs get is empty.
    ///
    /// [`HessianApproximation::GaussNewton`]: super::HessianApproximation::GaussNewton
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The solver's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The QP backend.
    pub fn backend(&self) -> QpBackend {
        self.backend
    }

    /// The settings solves use (and the generated `Settings` struct's defaults).
    pub fn settings(&self) -> &SqpSettings {
        &self.settings
    }

    /// Changes the settings of later solves. The Hessian approximation is part of the
    /// generated code: changing it is an error (build another solver).
    pub fn set_settings(&mut self, settings: SqpSettings) -> Result<()> {
        settings.validate()?;
        if settings.hessian_approximation != self.settings.hessian_approximation {
            return Err(Error::Problem {
                what: "solver",
                name: self.name.clone(),
                message: format!(
                    "the Hessian approximation is fixed when a solver is built ({:?}); build a new solver for {:?}",
                    self.settings.hessian_approximation, settings.hessian_approximation
                ),
            });
        }
        self.settings = settings;
        Ok(())
    }

    /// The same solver with other JIT compiler options (before the first solve).
    pub fn with_compiler(mut self, options: CompilerOptions) -> Self {
        self.compiler = options;
        self.jit = Mutex::new(None);
        self
    }

    /// Number of variables.
    pub fn nx(&self) -> usize {
        self.dims.nx
    }

    /// Number of equality constraints.
    pub fn neq(&self) -> usize {
        self.dims.neq
    }

    /// Number of inequality constraints.
    pub fn nineq(&self) -> usize {
        self.dims.nineq
    }

    /// The parameter's shape and dtype.
    pub fn param(&self) -> &Arg {
        &self.dims.param
    }

    /// The functions the solver evaluates: values at a trial point, the linearisation, the
    /// Hessian, as whole-problem functions. (The Riccati backend's generated code evaluates
    /// the last two stage by stage, through the stage functions they are vmapped from.)
    pub fn functions(&self) -> [&NumericalFunction; 3] {
        self.derived.functions()
    }

    fn render(&self) -> ItemSource {
        let dims = [self.dims.nx, self.dims.neq, self.dims.nineq, self.dims.param.numel()];
        shared::render_solver(self.shared.as_ref(), &self.name, dims, |name, dims| self.render_as(name, dims))
    }

    /// The solver in namespace `name`, of the sizes `[nx, neq, nineq, np]`.
    fn render_as(&self, name: &str, [nx, neq, nineq, np]: [usize; 4]) -> ItemSource {
        let settings = &self.settings;
        match &self.derived {
            Derivation::General(derived, kkt) => codegen::render_solver(&SolverLayout {
                name,
                storage: self.backend.storage().unwrap_or(Storage::Sparse),
                qp: if self.backend.is_piqp() { GeneralQp::Piqp } else { GeneralQp::Ipm { kkt: kkt.as_deref() } },
                settings,
                derived,
                nx,
                neq,
                nineq,
                np,
                x_lb: &self.x_lb,
                x_ub: &self.x_ub,
                q_lb: self.q_lb.clone(),
                q_ub: self.q_ub.clone(),
            }),
            Derivation::Stages(stages) => codegen::render_multistage(&StageLayout {
                name,
                settings,
                derived: &stages.derived,
                nx,
                neq,
                nineq,
                np,
                nz: stages.nz,
                global_param: stages.global_param,
                stage_param: stages.stage_param,
                horizon: &stages.horizon,
                z_lb: &stages.z_lb,
                z_ub: &stages.z_ub,
                q_lb: &self.q_lb,
                q_ub: &self.q_ub,
            }),
        }
    }

    /// The translation unit the JIT compiles: the solver's module and its entry points.
    pub fn jit_source(&self) -> Result<String> {
        let text = module_text(&self.name, &[self as &dyn ModuleItem], &[])?;
        Ok(text.single_unit(&codegen::render_jit_shim(&self.name, &self.settings.fields())))
    }

    /// Compiles (or finds in the cache) and loads the native solver; `solve` does this on
    /// first use. The first solver on a machine also builds PIQP's template library (once
    /// per compiler and flags).
    pub fn compile(&self) -> Result<Arc<JitSolver>> {
        load_once(&self.jit, &self.name, &self.dims, &self.compiler, || {
            // Only PIQP's backends need PIQP's library (and its fingerprint in the cache key).
            // The elastic QP (a recovery from infeasible linearisations) is sparse with either
            // backend: a dense solver needs both of PIQP's kinds, a sparse one only the sparse.
            let parts = match self.backend {
                QpBackend::PiqpDense => Some(deps::RuntimeParts::All),
                QpBackend::PiqpSparse => Some(deps::RuntimeParts::Sparse),
                QpBackend::Riccati | QpBackend::IpmDense | QpBackend::IpmSparse => None,
            };
            let (link, fingerprint) = match parts {
                Some(parts) => (vec![deps::runtime_library_of(parts, &self.compiler)?], deps::fingerprint()?),
                // The interior-point QPs call the interior-point method, compiled apart.
                None if self.backend.is_ipm() => (vec![ipm::runtime_library(&self.compiler)?], String::new()),
                None => (Vec::new(), String::new()),
            };
            Ok(Unit {
                name: self.name.clone(),
                source: self.jit_source()?,
                include_dirs: Vec::new(),
                defines: Vec::new(),
                link,
                fingerprint,
            })
        })
    }

    /// Solves from `x0` with parameter `p` (`&[]` when the problem has none; any shape, in
    /// row-major order) and the multipliers of `warm`.
    pub fn solve(&self, x0: &[f64], p: &[f64], warm: &WarmStart) -> Result<Solution> {
        self.solve_with(x0, p, warm, &self.settings)
    }

    /// [`solve`](Self::solve) with other settings (of the same Hessian approximation).
    pub fn solve_with(&self, x0: &[f64], p: &[f64], warm: &WarmStart, settings: &SqpSettings) -> Result<Solution> {
        solve_to_new(&self.dims, |out| self.solve_into(x0, p, warm, out, settings))
    }

    /// [`solve`](Self::solve) into caller-provided storage, with `settings`: no allocation
    /// once the solver is compiled and a workspace is free (each concurrent solve needs one).
    pub fn solve_into(
        &self,
        x0: &[f64],
        p: &[f64],
        warm: &WarmStart,
        out: SolutionMut,
        settings: &SqpSettings,
    ) -> Result<Info> {
        check_lengths(&self.name, &self.dims, x0, p, warm, &out)?;
        if settings.hessian_approximation != self.settings.hessian_approximation {
            return Err(Error::Problem {
                what: "solve",
                name: self.name.clone(),
                message: "the settings ask for another Hessian approximation than the solver was built with".into(),
            });
        }
        settings.validate()?;
        let jit = self.compile()?;
        jit.solve(x0, p, warm, out, &settings_table::scalars(&settings.fields()))
    }
}

impl ModuleItem for SqpFunction {
    fn item_name(&self) -> &str {
        &self.name
    }

    fn dependencies(&self) -> Vec<&dyn ModuleItem> {
        match &self.derived {
            Derivation::General(d, _) if self.backend.is_piqp() => vec![&Runtime, &d.values, &d.linearize, &d.hessian],
            Derivation::General(d, _) => vec![&IpmRuntime, &d.values, &d.linearize, &d.hessian],
            // The generated code calls the stage functions, not the whole-problem ones.
            Derivation::Stages(s) => s.derived.calls.iter().map(|c| &c.f as &dyn ModuleItem).collect(),
        }
    }

    fn includes(&self) -> Includes {
        Includes { header: Vec::new(), source: codegen::source_includes() }
    }

    fn constants(&self) -> Vec<CodegenIntConstant> {
        self.constants.clone()
    }

    fn source(&self) -> Result<ItemSource> {
        Ok(self.render())
    }
}

impl std::fmt::Debug for SqpFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqpFunction")
            .field("name", &self.name)
            .field("backend", &self.backend)
            .field("nx", &self.dims.nx)
            .field("neq", &self.dims.neq)
            .field("nineq", &self.dims.nineq)
            .finish_non_exhaustive()
    }
}

/// Solvers are called from several threads at once.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<SqpFunction>()
};

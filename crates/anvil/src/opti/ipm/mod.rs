//! `IpmFunction`: a generated primal-dual interior-point solver for nonlinear programs, with
//! a filter line search (Wächter & Biegler 2006, the method of Ipopt).
//!
//! The method is real C++ compiled apart, its sizes at run time (`interior_point.hpp` and
//! `.cpp`: the JIT links it as a library built once per compiler and flags, a generated
//! module writes it beside itself; [`runtime`]). A module holds, as the `anvil_ipm` item, the
//! method's interface and the LDLᵀ factorisations of its KKT systems, templated on the sizes:
//! dense, `dense_ldl.hpp`, or sparse on a structure analysed at generation, `sparse_ldl.hpp`
//! and [`sparse_kkt`], or by stages, `stage_ldl.hpp`, its usual stage's front compiled for the
//! nonzeros [`stage_kkt`] finds (`compiled_front.hpp`). The generated glue
//! (`templates/ipm_source.j2`) adapts a problem's derived functions to the interface: scaled
//! values, derivatives and the KKT matrix. It needs neither PIQP nor Eigen, and compiles in
//! about a second.

mod runtime;
mod settings;
mod sparse_kkt;
pub(crate) mod stage_kkt;

pub(crate) use runtime::{library as runtime_library, IpmRuntime};
pub use settings::{IpmSettings, MuStrategy};
pub(crate) use sparse_kkt::SparseKkt;

use super::codegen::{self, IpmLayout};
use super::derive::{Derived, Matrix, Storage};
use super::multistage::MultistageProblem;
use super::native::{check_lengths, check_solver_name, load_once, solve_to_new, Dims, JitSolver};
use super::problem::Problem;
use super::settings::{self as settings_table, Info};
use super::shared::{self, SharedLayout};
use super::solution::{Solution, SolutionMut, WarmStart};
use super::solver::{
    check_dense_kkt_size, check_multistage_size, gauss_newton_without_curvature, Bounds, QpBackend, StageSolver,
};
use crate::error::{Error, Result};
use crate::function::{module_text, Arg, CodegenIntConstant, Includes, ModuleItem, NumericalFunction};
use crate::jit::{CompilerOptions, Unit};
use crate::render::ItemSource;
use std::sync::{Arc, Mutex};

/// An interior-point solver for a [`Problem`], generated as allocation-free C++: each
/// iteration evaluates the derivatives, factorises one KKT system (correcting its inertia),
/// and searches along the Newton step with a filter, second-order corrections and, where
/// no step is acceptable, a feasibility restoration phase. [`solve`](Self::solve) runs it
/// through the JIT; [`crate::generate_module`] writes it into a C++ module (no third-party
/// headers or libraries needed).
///
/// The result has the SQP solvers' fields and multiplier convention (signed multipliers for
/// `L = f + λ_eqᵀ g_eq + λ_ineqᵀ g_ineq + λ_boxᵀ x`); `Info::qp_iterations` is 0.
///
/// ```
/// use anvil::{Arg, NumericalFunction, opti::{IpmFunction, IpmSettings, Problem, Status, WarmStart}};
/// # fn main() -> anvil::Result<()> {
/// let args = || [Arg::new(2), Arg::new(0)];
/// let f = NumericalFunction::new("rosen", |[x, _p]| {
///     let (a, b) = (x.get(0), x.get(1));
///     (1.0 - &a).square() + (&b - a.square()).square() * 100.0
/// }, args())?;
/// let problem = Problem::new(&f)?.bounds(-2.0, 0.5)?;
/// let solver = IpmFunction::dense("rosen_ipm", &problem, IpmSettings::default())?;
/// let solution = solver.solve(&[-1.0, 1.0], &[], &WarmStart::default())?;
/// assert_eq!(solution.info.status, Status::Solved);
/// // The optimum (0.5, 0.25) has x0 at its upper bound: a positive multiplier, 1.
/// assert!((solution.x[0] - 0.5).abs() < 1e-7 && (solution.x[1] - 0.25).abs() < 1e-7);
/// assert!((solution.lam_box[0] - 1.0).abs() < 1e-6);
/// # Ok(()) }
/// ```
pub struct IpmFunction {
    name: String,
    settings: IpmSettings,
    form: IpmForm,
    dims: Dims,
    bounds: Bounds,
    /// Named constants the generated code declares (a multistage problem's horizon).
    constants: Vec<CodegenIntConstant>,
    compiler: CompilerOptions,
    jit: Mutex<Option<Arc<JitSolver>>>,
    /// What the solver is likely to do badly, said when it was built.
    warnings: Vec<String>,
    /// With variables shared by every stage: the lifted problem's layout behind the user's.
    shared: Option<SharedLayout>,
}

/// The derived functions, and how the KKT systems are factorised.
pub(crate) enum IpmForm {
    /// Whole-problem derivatives; the KKT matrix dense (`kkt` None) or sparse on the structure
    /// `kkt` analysed.
    Whole { derived: Box<Derived>, kkt: Option<Box<SparseKkt>> },
    /// A multistage problem's dense stage blocks; the KKT matrix factorised stage by stage.
    Stages(Box<StageSolver>),
}

/// Checks that the stage-wise KKT factorisation's workspace fits in memory: per stage, a dense
/// front of its own unknowns (its variables and at most every term's rows), as many delayed
/// from the next stage and the previous stage's variables, and the assembled entries.
fn check_stage_kkt_size(name: &str, problem: &MultistageProblem) -> Result<()> {
    let nz = problem.nz;
    let rows: usize = problem.eq_terms().chain(problem.ineq_terms()).map(|t| t.rows).fold(0, usize::saturating_add);
    let own = nz.saturating_add(rows);
    let front = own.saturating_mul(2).saturating_add(nz);
    let per_stage = front.saturating_mul(front).saturating_add(own.saturating_mul(own.saturating_add(nz)));
    let n = problem.n;
    crate::array::check_alloc(
        || {
            format!("the stage-wise KKT factorisation of solver `{name}` (N = {n} stage transitions of nz = {nz} variables)")
        },
        problem.n.saturating_add(1).saturating_mul(per_stage),
        8,
    )
}

/// The sparse KKT matrix's structure of a solver `name` with sparse derivatives `derived`,
/// where the variables marked `curved` have a structurally non-zero diagonal.
pub(crate) fn analyse_kkt(name: &str, derived: &Derived, curved: &[bool]) -> Result<SparseKkt> {
    let pattern = |m: &Matrix| match m {
        Matrix::Sparse(p) => Ok(p.clone()),
        Matrix::Dense { .. } => Err(Error::Problem {
            what: "solver",
            name: name.into(),
            message: "a sparse solver's derivatives are sparse".into(),
        }),
    };
    SparseKkt::new(&pattern(&derived.hess)?, &pattern(&derived.jac_eq)?, &pattern(&derived.jac_q)?, curved)
}

/// A solver's name leaves room for its functions' suffixes; its settings are valid.
fn check_solver(name: &str, settings: &IpmSettings) -> Result<()> {
    check_solver_name(name)?;
    settings.validate()
}

impl IpmFunction {
    /// A solver whose KKT systems are factorised as dense matrices (Bunch–Kaufman LDLᵀ), with
    /// dense derivatives: for problems of up to a few hundred variables and constraints.
    pub fn dense(name: &str, problem: &Problem, settings: IpmSettings) -> Result<Self> {
        check_solver(name, &settings)?;
        check_dense_kkt_size(name, problem.nx() + problem.neq() + problem.nineq(), "IpmFunction::sparse")?;
        let derived = Derived::new(name, problem, settings.hessian_approximation, Storage::Dense)?;
        Ok(IpmFunction::whole(name, problem, settings, derived, None))
    }

    /// A solver with sparse derivatives (on fixed patterns, by colouring) whose KKT systems
    /// are factorised as sparse matrices: a minimum-degree ordering and the symbolic
    /// factorisation are computed when the solver is built, the generated code runs only the
    /// numeric LDLᵀ (no pivoting: the ordering never pivots on a structurally zero diagonal
    /// before it is filled in, the inertia correction regularises where a pivot still
    /// vanishes; solves refine iteratively). For large sparse problems.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, ndarray::s, opti::{IpmFunction, IpmSettings, Problem, Status, WarmStart}};
    /// # fn main() -> anvil::Result<()> {
    /// // A chain of 50 coupled quadratics, min Σ (x_i − x_{i+1})² + (x_0 − 1)² s.t. Σ x = 10.
    /// let args = || [Arg::new(50), Arg::new(0)];
    /// let f = NumericalFunction::new("chain_f", |[x, _p]| {
    ///     let d = x.slice(s![..49]) - x.slice(s![1..]);
    ///     (&d * &d).sum() + (x.get(0) - 1.0).square()
    /// }, args())?;
    /// let g = NumericalFunction::new("chain_g", |[x, _p]| x.sum().reshape([1]), args())?;
    /// let problem = Problem::new(&f)?.eq_constraints(&g, 10.0)?;
    /// let solver = IpmFunction::sparse("chain_ipm", &problem, IpmSettings::default())?;
    /// let solution = solver.solve(&[0.0; 50], &[], &WarmStart::default())?;
    /// assert_eq!(solution.info.status, Status::Solved);
    /// assert!((solution.x.iter().sum::<f64>() - 10.0).abs() < 1e-8);
    /// # Ok(()) }
    /// ```
    pub fn sparse(name: &str, problem: &Problem, settings: IpmSettings) -> Result<Self> {
        check_solver(name, &settings)?;
        let derived = Derived::new(name, problem, settings.hessian_approximation, Storage::Sparse)?;
        // A variable's diagonal is structurally non-zero with curvature or a barrier term.
        let curved: Vec<bool> = (problem.x_lb.iter().zip(&problem.x_ub).zip(&derived.hess_diagonal))
            .map(|((lb, ub), &diagonal)| diagonal || lb.is_finite() || ub.is_finite())
            .collect();
        let kkt = analyse_kkt(name, &derived, &curved)?;
        Ok(IpmFunction::whole(name, problem, settings, derived, Some(Box::new(kkt))))
    }

    /// A solver for a multistage problem that keeps its stage structure: each stage function
    /// traced and differentiated once, evaluated in a loop over its stages (generated code
    /// whose size does not grow with the horizon), and each iteration's KKT system factorised
    /// stage by stage, from the last stage to the first, with the stage sizes compiled in
    /// (time linear in the horizon). Inside a stage the pivots are chosen for stability and
    /// what cannot be pivoted there is passed to the stage before (terminal and point
    /// constraints); the factorisation's inertia drives the inertia correction of the whole
    /// KKT matrix, as Ipopt's does, not of each stage's Hessian block.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, Tensor, opti::{IpmFunction, IpmSettings, MultistageProblem, Status, WarmStart}};
    /// # fn main() -> anvil::Result<()> {
    /// // A double integrator z = (position, velocity, force) from rest at 0 to rest at 0.5 in
    /// // N = 20 steps with the least effort, |force| <= 1.
    /// let stage = || [Arg::new(3), Arg::new(0), Arg::new(0)];
    /// let effort = NumericalFunction::new("di_effort", |[z, _g, _p]| z.get(2).square(), stage())?;
    /// let start = NumericalFunction::new("di_start", |[z, _g, _p]| z.shrink(&[(0, 2)]), stage())?;
    /// let end = NumericalFunction::new("di_end", |[z, _g, _p]| {
    ///     Tensor::stack(&[z.get(0) - 0.5, z.get(1)], 0)
    /// }, stage())?;
    /// let dynamics = NumericalFunction::new("di_dyn", |[z, zn, _g, _p]| {
    ///     let (x, v, f) = (z.get(0), z.get(1), z.get(2));
    ///     zn.shrink(&[(0, 2)]) - Tensor::stack(&[&x + &v * 0.1, &v + &f * 0.1], 0)
    /// }, [Arg::new(3), Arg::new(3), Arg::new(0), Arg::new(0)])?;
    /// let problem = MultistageProblem::new(20, 3, 0, 0)?
    ///     .cost_initial(&effort)?.cost_stage(&effort)?
    ///     .eq_initial(&start)?.eq_interstage(&dynamics)?.eq_terminal(&end)?
    ///     .bounds([-1e20, -1e20, -1.0], [1e20, 1e20, 1.0])?;
    /// let solver = IpmFunction::multistage("di_ipm", &problem, IpmSettings::default())?;
    /// let solution = solver.solve(&vec![0.0; problem.nvars()], &[], &WarmStart::default())?;
    /// assert_eq!(solution.info.status, Status::Solved);
    /// // The last stage is at rest at 0.5: the terminal rows hold.
    /// let last = &solution.x[20 * 3..20 * 3 + 2];
    /// assert!((last[0] - 0.5).abs() < 1e-8 && last[1].abs() < 1e-8);
    /// # Ok(()) }
    /// ```
    pub fn multistage(name: &str, problem: &MultistageProblem, settings: IpmSettings) -> Result<Self> {
        check_solver(name, &settings)?;
        let user = problem;
        let lifted = user.lifted()?;
        let problem = lifted.as_ref().unwrap_or(user);
        check_multistage_size(name, problem, QpBackend::Riccati)?;
        check_stage_kkt_size(name, problem)?;
        let mut stages = StageSolver::new(name, problem, settings.hessian_approximation)?;
        stages.shared_copies = user.shared_count();
        let bounds = Bounds::multistage(problem, &stages.derived.q_rows);
        let warnings = gauss_newton_without_curvature(name, problem, settings.hessian_approximation)?;
        Ok(IpmFunction {
            name: name.into(),
            settings,
            form: IpmForm::Stages(Box::new(stages)),
            dims: Dims::multistage(user),
            bounds,
            constants: problem.horizon.iter().cloned().collect(),
            compiler: CompilerOptions::default(),
            jit: Mutex::new(None),
            warnings: warnings.into_iter().collect(),
            shared: SharedLayout::of(user, problem),
        })
    }

    fn whole(
        name: &str,
        problem: &Problem,
        settings: IpmSettings,
        derived: Derived,
        kkt: Option<Box<SparseKkt>>,
    ) -> Self {
        let (q_lb, q_ub) = derived.q_rows.iter().map(|&i| (problem.ineq_lb[i], problem.ineq_ub[i])).unzip();
        IpmFunction {
            name: name.into(),
            settings,
            form: IpmForm::Whole { derived: Box::new(derived), kkt },
            dims: Dims { nx: problem.nx(), neq: problem.neq(), nineq: problem.nineq(), param: problem.param().clone() },
            bounds: Bounds { x_lb: problem.x_lb.clone(), x_ub: problem.x_ub.clone(), q_lb, q_ub },
            constants: Vec::new(),
            compiler: CompilerOptions::default(),
            jit: Mutex::new(None),
            warnings: Vec::new(),
            shared: None,
        }
    }

    /// The solver's name (its C++ namespace).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the solver is likely to do badly, found when it was built (the Python package
    /// issues each as a `UserWarning`): with Gauss-Newton on a multistage problem whose stage
    /// costs are linear, the Hessian is empty.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// The settings solves use (and the generated `Settings` struct's defaults).
    pub fn settings(&self) -> &IpmSettings {
        &self.settings
    }

    /// Changes the settings of later solves; the Hessian approximation is fixed.
    pub fn set_settings(&mut self, settings: IpmSettings) -> Result<()> {
        self.check_settings(&settings)?;
        self.settings = settings;
        Ok(())
    }

    fn check_settings(&self, settings: &IpmSettings) -> Result<()> {
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
    /// Hessian of the Lagrangian.
    pub fn functions(&self) -> [&NumericalFunction; 3] {
        match &self.form {
            IpmForm::Whole { derived: d, .. } => [&d.values, &d.linearize, &d.hessian],
            IpmForm::Stages(s) => [&s.derived.values, &s.derived.linearize, &s.derived.hessian],
        }
    }

    /// The translation unit the JIT compiles: the solver's module and its entry points.
    pub fn jit_source(&self) -> Result<String> {
        let text = module_text(&self.name, &[self as &dyn ModuleItem], &[])?;
        Ok(text.single_unit(&codegen::render_jit_shim(&self.name, &self.settings.fields())))
    }

    /// Compiles (or finds in the cache) and loads the native solver; `solve` does this on
    /// first use.
    pub fn compile(&self) -> Result<Arc<JitSolver>> {
        load_once(&self.jit, &self.name, &self.dims, &self.compiler, || {
            Ok(Unit {
                name: self.name.clone(),
                source: self.jit_source()?,
                include_dirs: Vec::new(),
                defines: Vec::new(),
                link: vec![runtime_library(&self.compiler)?],
                fingerprint: String::new(),
            })
        })
    }

    /// Solves from `x0` with parameter `p` (`&[]` when the problem has none) and, if `warm`
    /// has any, those multipliers as the initial ones.
    pub fn solve(&self, x0: &[f64], p: &[f64], warm: &WarmStart) -> Result<Solution> {
        self.solve_with(x0, p, warm, &self.settings)
    }

    /// [`solve`](Self::solve) with other settings (of the same Hessian approximation).
    pub fn solve_with(&self, x0: &[f64], p: &[f64], warm: &WarmStart, settings: &IpmSettings) -> Result<Solution> {
        solve_to_new(&self.dims, |out| self.solve_into(x0, p, warm, out, settings))
    }

    /// [`solve`](Self::solve) into caller-provided storage: no allocation once the solver is
    /// compiled and a workspace is free (each concurrent solve needs one).
    pub fn solve_into(
        &self,
        x0: &[f64],
        p: &[f64],
        warm: &WarmStart,
        out: SolutionMut,
        settings: &IpmSettings,
    ) -> Result<Info> {
        check_lengths(&self.name, &self.dims, x0, p, warm, &out)?;
        self.check_settings(settings)?;
        let jit = self.compile()?;
        jit.solve(x0, p, warm, out, &settings_table::scalars(&settings.fields()))
    }
}

impl ModuleItem for IpmFunction {
    fn item_name(&self) -> &str {
        &self.name
    }

    fn dependencies(&self) -> Vec<&dyn ModuleItem> {
        match &self.form {
            IpmForm::Whole { derived: d, .. } => vec![&IpmRuntime, &d.values, &d.linearize, &d.hessian],
            // The generated code calls the stage functions, not the whole-problem ones.
            IpmForm::Stages(s) => {
                let mut items: Vec<&dyn ModuleItem> = vec![&IpmRuntime];
                items.extend(s.derived.calls.iter().map(|c| &c.f as &dyn ModuleItem));
                items
            }
        }
    }

    fn constants(&self) -> Vec<CodegenIntConstant> {
        self.constants.clone()
    }

    fn includes(&self) -> Includes {
        Includes { header: Vec::new(), source: codegen::source_includes() }
    }

    fn source(&self) -> Result<ItemSource> {
        let dims = [self.dims.nx, self.dims.neq, self.dims.nineq, self.dims.param.numel()];
        Ok(shared::render_solver(self.shared.as_ref(), &self.name, dims, |name, dims| self.render_as(name, dims)))
    }
}

impl IpmFunction {
    /// The solver in namespace `name`, of the sizes `[nx, neq, nineq, np]`.
    fn render_as(&self, name: &str, [nx, neq, nineq, np]: [usize; 4]) -> ItemSource {
        codegen::render_ipm(&IpmLayout {
            name,
            settings: &self.settings.fields(),
            form: &self.form,
            nx,
            neq,
            nineq,
            np,
            bounds: &self.bounds,
        })
    }
}

impl std::fmt::Debug for IpmFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpmFunction")
            .field("name", &self.name)
            .field(
                "kkt",
                &match &self.form {
                    IpmForm::Whole { kkt: None, .. } => "dense",
                    IpmForm::Whole { kkt: Some(_), .. } => "sparse",
                    IpmForm::Stages(_) => "stages",
                },
            )
            .field("nx", &self.dims.nx)
            .field("neq", &self.dims.neq)
            .field("nineq", &self.dims.nineq)
            .finish_non_exhaustive()
    }
}

/// Solvers are called from several threads at once.
const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<IpmFunction>()
};

//! Multistage (optimal-control) problems: one variable block `z_i` per stage, functions that
//! act on one stage or couple a stage with the next, so that every derivative matrix is
//! block-banded and each stage function is traced once.

use super::problem::{problem_error, Bound};
use super::shared::{self, Shared};
use super::solution::Solution;
use crate::dtype::DType;
use crate::error::Result;
use crate::function::{derived_name, Arg, CodegenIntConstant, NumericalFunction};
use crate::tensor::Tensor;

/// A function applied at consecutive stages `first .. first + count`: of `(z_i, p_global,
/// p_i)`, or of `(z_i, z_{i+1}, p_global, p_i)` when it couples a stage with the next.
#[derive(Debug)]
pub(crate) struct Term {
    pub f: NumericalFunction,
    pub first: usize,
    pub count: usize,
    pub coupled: bool,
    /// Rows of the function's output (its elements).
    pub rows: usize,
}

impl Term {
    /// Variables a stage's function reads: one block, or two when coupled.
    pub fn width(&self, nz: usize) -> usize {
        if self.coupled {
            2 * nz
        } else {
            nz
        }
    }
}

/// An inequality term with its rows' bounds: one stage's (`rows` entries, holding at every
/// stage) or every stage's (`count·rows`, stage by stage).
#[derive(Debug)]
pub(crate) struct Inequality {
    pub term: Term,
    pub lb: Vec<f64>,
    pub ub: Vec<f64>,
}

impl Inequality {
    /// The bounds `(lb, ub)` of row `r` at the term's `k`-th stage.
    pub fn bounds(&self, k: usize, r: usize) -> (f64, f64) {
        let rows = self.term.rows;
        let i = if self.lb.len() == rows { r } else { k * rows + r };
        (self.lb[i], self.ub[i])
    }

    /// Whether row `r` has a finite bound at some stage (the other rows constrain nothing).
    pub fn bounded(&self, r: usize) -> bool {
        (0..self.term.count).any(|k| {
            let (lb, ub) = self.bounds(k, r);
            lb.is_finite() || ub.is_finite()
        })
    }
}

/// How stage variables split into states and controls (problems from
/// [`MultistageProblem::from_dynamics`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StateControl {
    /// States per stage: `z_i[..nx]`.
    pub nx: usize,
    /// Controls per stage: `z_i[nx..]`.
    pub nu: usize,
}

/// A multistage problem over the stacked stage variables `z = (z_0, z_1, …, z_N)`, each of
/// `nz` entries, with a global parameter `p_global` and one parameter `p_i` per stage:
///
/// ```text
/// min  ℓ_0(z_0) + Σ_{i=1}^{N-1} ℓ(z_i) + ℓ_N(z_N)
/// s.t. e_0(z_0) = 0,  c(z_i, z_{i+1}) = 0 (i < N),  e(z_i) = 0 and lb ≤ h(z_i) ≤ ub (0 < i < N),
///      e_N(z_N) = 0,  lb_0 ≤ h_0(z_0) ≤ ub_0,  lb_N ≤ h_N(z_N) ≤ ub_N,
///      z_lb,i ≤ z_i ≤ z_ub,i (every i; the same at every stage, or not)
/// ```
///
/// Stage functions take `(z_i, p_global, p_i)` and the interstage function
/// `(z_i, z_{i+1}, p_global, p_i)` (with the source stage's parameter); `Arg::new(0)` where a
/// parameter is absent. The solver's parameter vector is `[p_global, p_0, …, p_N]`; its
/// equality multipliers are ordered initial, interstage (stage by stage), stage, terminal, and
/// its inequality multipliers initial, stage (stage by stage), terminal.
///
/// ```
/// use anvil::{Arg, NumericalFunction, opti::MultistageProblem};
/// # fn main() -> anvil::Result<()> {
/// // A double integrator z = (position, velocity, force), N = 10 stages.
/// let stage = || [Arg::new(3), Arg::new(2), Arg::new(0)];
/// let cost = NumericalFunction::new("cost", |[z, _g, _p]| (&z * &z).sum(), stage())?;
/// let start = NumericalFunction::new("start", |[z, g, _p]| z.shrink(&[(0, 2)]) - g, stage())?;
/// let dynamics = NumericalFunction::new("dyn", |[z, zn, _g, _p]| {
///     let (x, v, f) = (z.get(0), z.get(1), z.get(2));
///     zn.shrink(&[(0, 2)]) - anvil::Tensor::stack(&[&x + &v * 0.1, &v + &f * 0.1], 0)
/// }, [Arg::new(3), Arg::new(3), Arg::new(2), Arg::new(0)])?;
/// let problem = MultistageProblem::new(10, 3, 2, 0)?
///     .cost_initial(&cost)?.cost_stage(&cost)?.cost_terminal(&cost)?
///     .eq_initial(&start)?.eq_interstage(&dynamics)?
///     .bounds([-1e20, -1e20, -1.0], [1e20, 1e20, 1.0])?;
/// assert_eq!((problem.nvars(), problem.neq(), problem.np()), (33, 2 + 10 * 2, 2));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MultistageProblem {
    pub(crate) n: usize,
    pub(crate) nz: usize,
    pub(crate) global_param: usize,
    pub(crate) stage_param: usize,
    pub(crate) horizon: Option<CodegenIntConstant>,
    cost_initial: Option<Term>,
    cost_stage: Option<Term>,
    cost_terminal: Option<Term>,
    eq_initial: Option<Term>,
    eq_interstage: Option<Term>,
    eq_stage: Option<Term>,
    eq_terminal: Option<Term>,
    ineq_initial: Option<Inequality>,
    ineq_stage: Option<Inequality>,
    ineq_terminal: Option<Inequality>,
    pub(crate) z_lb: Vec<f64>,
    pub(crate) z_ub: Vec<f64>,
    pub(crate) state_control: Option<StateControl>,
    /// Variables shared by every stage (None: none).
    pub(crate) shared: Option<Shared>,
    /// The equality terms are those `from_dynamics` made (no setter replaced or added one).
    dynamics_terms: bool,
}

/// The kinds of stage function, with the stages each acts on.
#[derive(Clone, Copy)]
enum Kind {
    Initial,
    Stage,
    Terminal,
    Interstage,
}

/// The shape of bounds that hold at every stage or differ by stage: `each` entries per stage,
/// `stages` stages (named in errors).
struct ByStage {
    each: usize,
    stages: usize,
    each_name: &'static str,
    stages_name: &'static str,
}

impl ByStage {
    /// `(lb, ub)` as one stage's `each` values, or every stage's `stages·each` when either
    /// differs by stage (stage-identical arrays collapse to one stage's); ordered.
    fn resolve(&self, lb: Bound, ub: Bound, names: [&str; 2]) -> Result<(Vec<f64>, Vec<f64>)> {
        let (lb, ub) = (self.values(lb, names[0])?, self.values(ub, names[1])?);
        let every_stage = |v: Vec<f64>| v.iter().copied().cycle().take(self.stages * self.each).collect();
        let (lb, ub) = match (lb.len() == self.each, ub.len() == self.each) {
            (true, false) => (every_stage(lb), ub),
            (false, true) => (lb, every_stage(ub)),
            _ => (lb, ub),
        };
        super::problem::check_ordered(&lb, &ub, names[0], names[1])?;
        Ok((lb, ub))
    }

    fn values(&self, bound: Bound, what: &str) -> Result<Vec<f64>> {
        let all = self.stages * self.each;
        let values = match &bound {
            Bound::Vector(v) if v.len() == all && all > self.each => bound.resolve(all, what)?,
            Bound::Vector(v) if v.len() != self.each => {
                let (each, stages) = (self.each_name, self.stages_name);
                let by_stage = if all > self.each {
                    format!(" or ({stages})·{each} = {all} (stage by stage)")
                } else {
                    String::new()
                };
                return Err(problem_error(
                    what,
                    format!(
                        "has {} entries, expected {each} = {} (every stage's){by_stage}, or one scalar",
                        v.len(),
                        self.each
                    ),
                ));
            }
            _ => return bound.resolve(self.each, what),
        };
        let first = &values[..self.each];
        let uniform =
            values.chunks(self.each).all(|stage| stage.iter().zip(first).all(|(a, b)| a.to_bits() == b.to_bits()));
        Ok(if uniform { first.to_vec() } else { values })
    }
}

impl MultistageProblem {
    /// A problem with `n` stage transitions (`n + 1` stages of `nz` variables), a global
    /// parameter of `global_param_dim` entries and `param_dim` per stage; no cost, no
    /// constraints, no bounds yet.
    pub fn new(n: usize, nz: usize, global_param_dim: usize, param_dim: usize) -> Result<Self> {
        if n == 0 || nz == 0 {
            return Err(problem_error(
                "multistage",
                format!("needs N ≥ 1 stage transitions and nz ≥ 1 variables per stage (got N = {n}, nz = {nz})"),
            ));
        }
        // The generated C++ sizes its arrays with `int` constants.
        let fits = |v: Option<usize>| v.is_some_and(|v| v <= i32::MAX as usize);
        let stages = n.checked_add(1);
        if !fits(stages.and_then(|s| s.checked_mul(nz)))
            || !fits(stages.and_then(|s| s.checked_mul(param_dim)).and_then(|p| p.checked_add(global_param_dim)))
        {
            return Err(problem_error(
                "multistage",
                format!(
                    "N = {n} stages of nz = {nz} variables (and {global_param_dim} + (N + 1)·{param_dim} parameters) \
                     exceed the {} entries a generated solver can index; use a shorter horizon",
                    i32::MAX
                ),
            ));
        }
        Ok(MultistageProblem {
            n,
            nz,
            global_param: global_param_dim,
            stage_param: param_dim,
            horizon: None,
            cost_initial: None,
            cost_stage: None,
            cost_terminal: None,
            eq_initial: None,
            eq_interstage: None,
            eq_stage: None,
            eq_terminal: None,
            ineq_initial: None,
            ineq_stage: None,
            ineq_terminal: None,
            z_lb: vec![f64::NEG_INFINITY; nz],
            z_ub: vec![f64::INFINITY; nz],
            state_control: None,
            shared: None,
            dynamics_terms: false,
        })
    }

    /// [`new`](Self::new) with the horizon named by a [`CodegenIntConstant`]: the generated
    /// C++ declares it (`constexpr int N = …`) and sizes its stage loops with it.
    pub fn with_horizon(
        horizon: &CodegenIntConstant,
        nz: usize,
        global_param_dim: usize,
        param_dim: usize,
    ) -> Result<Self> {
        let n = horizon.value()?;
        let n = usize::try_from(n)
            .map_err(|_| problem_error("multistage", format!("the horizon `{horizon}` is {n}; it must be ≥ 1")))?;
        let mut problem = MultistageProblem::new(n, nz, global_param_dim, param_dim)?;
        problem.horizon = Some(horizon.clone());
        Ok(problem)
    }

    /// Adds `count` decision variables `s` shared by every stage (a free final time, a design
    /// parameter), with bounds `lb ≤ s ≤ ub` (`count` entries, or scalars): every function
    /// then takes `s` after the stage variables, `(z, s, p_global, p_i)` and
    /// `(z, z_next, s, p_global, p_i)`, so this comes before the functions are set.
    ///
    /// The solver's variables become `[z_0, …, z_N, s]`. Solvers carry a copy of `s` in each
    /// stage, tied to the next stage's by equality rows, so their stage-wise factorisations
    /// eliminate it as they eliminate states; results report `s` and the sum of its copies'
    /// bound multipliers, and equality multipliers of the problem's own rows only.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::MultistageProblem};
    /// # fn main() -> anvil::Result<()> {
    /// // z = (x, u); the step length s is chosen by the solver: x_{i+1} = x_i + s·u_i.
    /// let step = NumericalFunction::new("step", |[z, zn, s, _g, _p]| {
    ///     zn.shrink(&[(0, 1)]) - z.shrink(&[(0, 1)]) - &s * z.shrink(&[(1, 2)])
    /// }, [Arg::new(2), Arg::new(2), Arg::new(1), Arg::new(0), Arg::new(0)])?;
    /// let problem = MultistageProblem::new(10, 2, 0, 0)?.shared(1, 0.0, 2.0)?.eq_interstage(&step)?;
    /// assert_eq!((problem.nvars(), problem.neq()), (11 * 2 + 1, 10));
    /// # Ok(()) }
    /// ```
    pub fn shared(mut self, count: usize, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        if self.cost_terms().chain(self.eq_terms()).chain(self.ineq_terms()).next().is_some() {
            return Err(problem_error(
                "multistage",
                "set the shared variables before the functions: their signatures take s after z".into(),
            ));
        }
        let lifted = (self.n + 1).checked_mul(self.nz.saturating_add(count).saturating_add(count));
        if lifted.is_none_or(|v| v > i32::MAX as usize) {
            return Err(problem_error(
                "multistage",
                format!("{count} shared variables copied into each of the N + 1 = {} stages are too many", self.n + 1),
            ));
        }
        let (lb, ub) = (lb.into().resolve(count, "shared_lb")?, ub.into().resolve(count, "shared_ub")?);
        super::problem::check_ordered(&lb, &ub, "shared_lb", "shared_ub")?;
        self.shared = (count > 0).then_some(Shared { count, lb, ub });
        Ok(self)
    }

    /// Variables shared by every stage.
    pub fn shared_count(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.count)
    }

    /// The problem a solver solves: with shared variables, the problem over the stages
    /// `(z_i, s_i)` with the copies' rows `s_{i+1} − s_i = 0`; None without.
    pub(crate) fn lifted(&self) -> Result<Option<MultistageProblem>> {
        let Some(s) = &self.shared else { return Ok(None) };
        let (nz, ns, params) = (self.nz, s.count, [self.global_param, self.stage_param]);
        let mut lifted = MultistageProblem::new(self.n, nz + ns, self.global_param, self.stage_param)?;
        lifted.horizon = self.horizon.clone();
        let lift = |t: &Option<Term>| t.as_ref().map(|t| shared::lift_term(t, nz, ns, params)).transpose();
        lifted.cost_initial = lift(&self.cost_initial)?;
        lifted.cost_stage = lift(&self.cost_stage)?;
        lifted.cost_terminal = lift(&self.cost_terminal)?;
        lifted.eq_initial = lift(&self.eq_initial)?;
        lifted.eq_interstage = match lift(&self.eq_interstage)? {
            Some(term) => Some(term),
            None => Some(shared::copies_term("multistage", nz, ns, params, self.n)?),
        };
        lifted.eq_stage = lift(&self.eq_stage)?;
        lifted.eq_terminal = lift(&self.eq_terminal)?;
        let lift_ineq = |q: &Option<Inequality>| -> Result<Option<Inequality>> {
            let Some(q) = q else { return Ok(None) };
            let term = shared::lift_term(&q.term, nz, ns, params)?;
            Ok(Some(Inequality { term, lb: q.lb.clone(), ub: q.ub.clone() }))
        };
        lifted.ineq_initial = lift_ineq(&self.ineq_initial)?;
        lifted.ineq_stage = lift_ineq(&self.ineq_stage)?;
        lifted.ineq_terminal = lift_ineq(&self.ineq_terminal)?;
        let stages = self.horizon.is_none().then_some(self.n + 1);
        (lifted.z_lb, lifted.z_ub) = shared::lift_bounds([&self.z_lb, &self.z_ub], nz, s, stages);
        Ok(Some(lifted))
    }

    /// Rows of the initial equality term.
    pub(crate) fn initial_eq_rows(&self) -> usize {
        self.eq_initial.as_ref().map_or(0, |t| t.rows)
    }

    /// Rows of each interstage equality block.
    pub(crate) fn interstage_rows(&self) -> usize {
        self.eq_interstage.as_ref().map_or(0, |t| t.rows)
    }

    /// The cost `ℓ_0(z_0, p_global, p_0)` of the first stage (a scalar).
    pub fn cost_initial(mut self, f: &NumericalFunction) -> Result<Self> {
        self.cost_initial = Some(self.term(f, Kind::Initial, "cost_initial_fn", true)?);
        Ok(self)
    }

    /// The cost `ℓ(z_i, p_global, p_i)` of each stage `0 < i < N` (a scalar).
    pub fn cost_stage(mut self, f: &NumericalFunction) -> Result<Self> {
        self.cost_stage = Some(self.term(f, Kind::Stage, "cost_stage_fn", true)?);
        Ok(self)
    }

    /// The cost `ℓ_N(z_N, p_global, p_N)` of the last stage (a scalar).
    pub fn cost_terminal(mut self, f: &NumericalFunction) -> Result<Self> {
        self.cost_terminal = Some(self.term(f, Kind::Terminal, "cost_terminal_fn", true)?);
        Ok(self)
    }

    /// The equality constraints `e_0(z_0, p_global, p_0) = 0`.
    pub fn eq_initial(mut self, f: &NumericalFunction) -> Result<Self> {
        self.eq_initial = self.equality(f, Kind::Initial, "eq_initial_fn")?;
        Ok(self)
    }

    /// The equality constraints `c(z_i, z_{i+1}, p_global, p_i) = 0` for `i < N`.
    pub fn eq_interstage(mut self, f: &NumericalFunction) -> Result<Self> {
        self.eq_interstage = self.equality(f, Kind::Interstage, "eq_interstage_fn")?;
        Ok(self)
    }

    /// The equality constraints `e(z_i, p_global, p_i) = 0` for `0 < i < N`.
    pub fn eq_stage(mut self, f: &NumericalFunction) -> Result<Self> {
        self.eq_stage = self.equality(f, Kind::Stage, "eq_stage_fn")?;
        Ok(self)
    }

    /// The equality constraints `e_N(z_N, p_global, p_N) = 0`.
    pub fn eq_terminal(mut self, f: &NumericalFunction) -> Result<Self> {
        self.eq_terminal = self.equality(f, Kind::Terminal, "eq_terminal_fn")?;
        Ok(self)
    }

    /// The inequality constraints `lb_0 ≤ h_0(z_0, p_global, p_0) ≤ ub_0` on the first stage
    /// (`lb`, `ub`: one entry per row of `h_0`, or scalars); their multipliers come first.
    pub fn ineq_initial(mut self, f: &NumericalFunction, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let term = self.term(f, Kind::Initial, "ineq_initial_fn", false)?;
        self.ineq_initial = inequality(term, lb.into(), ub.into(), ["ineq_initial_lb", "ineq_initial_ub"])?;
        Ok(self)
    }

    /// The inequality constraints `lb ≤ h(z_i, p_global, p_i) ≤ ub` for `0 < i < N`; `lb`
    /// and `ub` have one entry per row of `h` (or are scalars) and hold at every stage, or
    /// `(N − 1)·rows` entries, each stage's (stacked by stage).
    pub fn ineq_stage(mut self, f: &NumericalFunction, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let term = self.term(f, Kind::Stage, "ineq_stage_fn", false)?;
        self.ineq_stage = inequality(term, lb.into(), ub.into(), ["ineq_lb", "ineq_ub"])?;
        Ok(self)
    }

    /// The inequality constraints `lb_N ≤ h_N(z_N, p_global, p_N) ≤ ub_N` on the last stage (a
    /// terminal set: `|x_N − x_target|² ≤ r²`); their multipliers come last.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::MultistageProblem};
    /// # fn main() -> anvil::Result<()> {
    /// let stage = || [Arg::new(2), Arg::new(0), Arg::new(0)];
    /// let speed = NumericalFunction::new("speed", |[z, _g, _p]| z.shrink(&[(1, 2)]), stage())?;
    /// let disk = NumericalFunction::new("disk", |[z, _g, _p]| (&z * &z).sum().reshape([1]), stage())?;
    /// // |v_0| ≤ 2 at the first stage, |z_N|² ≤ 1 at the last.
    /// let problem = MultistageProblem::new(10, 2, 0, 0)?
    ///     .ineq_initial(&speed, -2.0, 2.0)?
    ///     .ineq_terminal(&disk, f64::NEG_INFINITY, 1.0)?;
    /// assert_eq!(problem.nineq(), 2);
    /// assert!(MultistageProblem::new(10, 2, 0, 0)?.ineq_terminal(&disk, [0.0, 0.0], 1.0).is_err());
    /// # Ok(()) }
    /// ```
    pub fn ineq_terminal(mut self, f: &NumericalFunction, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let term = self.term(f, Kind::Terminal, "ineq_terminal_fn", false)?;
        self.ineq_terminal = inequality(term, lb.into(), ub.into(), ["ineq_terminal_lb", "ineq_terminal_ub"])?;
        Ok(self)
    }

    /// The bounds `z_lb ≤ z_i ≤ z_ub`: the same at every stage (`nz` entries, or scalars), or
    /// stage by stage (`(N + 1)·nz` entries, stacked as `z` is), such as a free final time
    /// bounded at one stage only, or a state held at the last.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::MultistageProblem};
    /// # fn main() -> anvil::Result<()> {
    /// let cost = NumericalFunction::new("bounded_cost", |[z, _g, _p]| (&z * &z).sum(), [Arg::new(2), Arg::new(0), Arg::new(0)])?;
    /// // z = (x, u) at 3 stages: |u| ≤ 1 everywhere, and x ≥ 0.5 at the last stage only.
    /// let lb = [f64::NEG_INFINITY, -1.0, f64::NEG_INFINITY, -1.0, 0.5, -1.0];
    /// let ub = [f64::INFINITY, 1.0, f64::INFINITY, 1.0, f64::INFINITY, 1.0];
    /// let problem = MultistageProblem::new(2, 2, 0, 0)?.cost_stage(&cost)?.bounds(lb, ub)?;
    /// assert!(MultistageProblem::new(2, 2, 0, 0)?.bounds(vec![0.0; 4], 1.0).is_err());
    /// # Ok(()) }
    /// ```
    pub fn bounds(mut self, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let shape = ByStage { each: self.nz, stages: self.n + 1, each_name: "nz", stages_name: "N + 1" };
        let (lb, ub) = shape.resolve(lb.into(), ub.into(), ["z_lb", "z_ub"])?;
        if lb.len() > self.nz && self.horizon.is_some() {
            return Err(problem_error(
                "multistage",
                "bounds that differ by stage fix the number of stages; give the horizon N as a number, not a \
                 named constant"
                    .into(),
            ));
        }
        (self.z_lb, self.z_ub) = (lb, ub);
        Ok(self)
    }

    /// Stage transitions `N`.
    pub fn horizon(&self) -> usize {
        self.n
    }

    /// Variables per stage.
    pub fn nz(&self) -> usize {
        self.nz
    }

    /// All variables, `(N + 1)·nz` and the shared ones.
    pub fn nvars(&self) -> usize {
        (self.n + 1) * self.nz + self.shared_count()
    }

    /// The solver's parameter entries: `global_param_dim + (N + 1)·param_dim`.
    pub fn np(&self) -> usize {
        self.global_param + (self.n + 1) * self.stage_param
    }

    /// Equality constraint rows.
    pub fn neq(&self) -> usize {
        self.eq_terms().map(|t| t.count * t.rows).sum()
    }

    /// Inequality constraint rows.
    pub fn nineq(&self) -> usize {
        self.ineq_terms().map(|t| t.count * t.rows).sum()
    }

    /// The state/control split of a problem built with [`from_dynamics`](Self::from_dynamics).
    pub fn state_control(&self) -> Option<StateControl> {
        self.state_control
    }

    /// The state/control split when the equality constraints are exactly those of
    /// [`from_dynamics`](Self::from_dynamics): `x_0 − x_init = 0` and
    /// `x_{k+1} − F(x_k, u_k) = 0`, both `[I 0]` in the stage whose states they fix (no
    /// equality term set afterwards). The Riccati QP then eliminates the states exactly.
    pub(crate) fn explicit_dynamics(&self) -> Option<StateControl> {
        self.state_control.filter(|_| self.dynamics_terms)
    }

    /// The warm start of the next step of a receding-horizon (MPC) loop: `solution` moved
    /// one stage earlier. Stage `i` takes stage `i + 1`'s variables, and each term's
    /// multipliers move the same way; the last stage keeps its own (the best guess at hand).
    ///
    /// ```
    /// # use anvil::opti::{Info, MultistageProblem, Solution};
    /// # fn main() -> anvil::Result<()> {
    /// // Three stages of one variable; no constraints.
    /// let problem = MultistageProblem::new(2, 1, 0, 0)?;
    /// let x = vec![1.0, 2.0, 3.0];
    /// let solved = Solution { x: x.clone(), lam_eq: vec![], lam_ineq: vec![], lam_box: x, info: Info::unsolved() };
    /// let next = problem.shift(&solved)?;
    /// assert_eq!((next.x, next.lam_box), (vec![2.0, 3.0, 3.0], vec![2.0, 3.0, 3.0]));
    /// # Ok(()) }
    /// ```
    pub fn shift(&self, solution: &Solution) -> Result<Solution> {
        let check = |v: &[f64], expected: usize, what: &str| -> Result<()> {
            if v.len() == expected {
                return Ok(());
            }
            Err(problem_error(
                "shift",
                format!(
                    "the solution's `{what}` has {} entries, expected {expected} (a solution of another problem?)",
                    v.len()
                ),
            ))
        };
        check(&solution.x, self.nvars(), "x")?;
        check(&solution.lam_eq, self.neq(), "lam_eq")?;
        check(&solution.lam_ineq, self.nineq(), "lam_ineq")?;
        check(&solution.lam_box, self.nvars(), "lam_box")?;
        let by_terms = |v: &[f64], terms: &mut dyn Iterator<Item = &Term>| {
            let mut out = Vec::with_capacity(v.len());
            for t in terms {
                let start = out.len();
                out.extend(shift_stages(&v[start..start + t.count * t.rows], t.rows));
            }
            out
        };
        let stages = (self.n + 1) * self.nz;
        let shift_z = |v: &[f64]| {
            let mut out = shift_stages(&v[..stages], self.nz);
            out.extend_from_slice(&v[stages..]);
            out
        };
        Ok(Solution {
            x: shift_z(&solution.x),
            lam_eq: by_terms(&solution.lam_eq, &mut self.eq_terms()),
            lam_ineq: by_terms(&solution.lam_ineq, &mut self.ineq_terms()),
            lam_box: shift_z(&solution.lam_box),
            info: solution.info,
        })
    }

    /// The cost terms (initial, stage, terminal).
    pub(crate) fn cost_terms(&self) -> impl Iterator<Item = &Term> {
        [&self.cost_initial, &self.cost_stage, &self.cost_terminal].into_iter().flatten()
    }

    /// The equality terms in the order of their multipliers.
    pub(crate) fn eq_terms(&self) -> impl Iterator<Item = &Term> {
        [&self.eq_initial, &self.eq_interstage, &self.eq_stage, &self.eq_terminal].into_iter().flatten()
    }

    /// The inequality terms with their bounds, in the order of their multipliers (initial,
    /// stage, terminal).
    pub(crate) fn inequalities(&self) -> impl Iterator<Item = &Inequality> {
        [&self.ineq_initial, &self.ineq_stage, &self.ineq_terminal].into_iter().flatten()
    }

    /// The inequality terms.
    pub(crate) fn ineq_terms(&self) -> impl Iterator<Item = &Term> {
        self.inequalities().map(|q| &q.term)
    }

    /// Every inequality row's bounds `(lb, ub)`, in the order of the multipliers.
    pub(crate) fn ineq_bounds(&self) -> (Vec<f64>, Vec<f64>) {
        self.inequalities()
            .flat_map(|q| {
                let rows = q.term.rows;
                (0..q.term.count * rows).map(move |i| q.bounds(i / rows, i % rows))
            })
            .unzip()
    }

    /// Where a kind of function acts: `(first stage, stages)`.
    fn stages(&self, kind: Kind) -> (usize, usize) {
        match kind {
            Kind::Initial => (0, 1),
            Kind::Stage => (1, self.n - 1),
            Kind::Terminal => (self.n, 1),
            Kind::Interstage => (0, self.n),
        }
    }

    /// A constraint term (`None` when it has no rows or acts on no stage).
    fn constraint(&self, f: &NumericalFunction, kind: Kind, what: &str) -> Result<Option<Term>> {
        let term = self.term(f, kind, what, false)?;
        Ok((term.rows > 0 && term.count > 0).then_some(term))
    }

    /// An equality term set by the user: the equality rows are no longer (only) those
    /// `from_dynamics` made.
    fn equality(&mut self, f: &NumericalFunction, kind: Kind, what: &str) -> Result<Option<Term>> {
        self.dynamics_terms = false;
        self.constraint(f, kind, what)
    }

    /// Checks `f`'s signature for `kind` and makes it a term.
    fn term(&self, f: &NumericalFunction, kind: Kind, what: &str, cost: bool) -> Result<Term> {
        let coupled = matches!(kind, Kind::Interstage);
        let mut expected = vec![Arg::new(self.nz)];
        if coupled {
            expected.push(Arg::new(self.nz));
        }
        let ns = self.shared_count();
        if ns > 0 {
            expected.push(Arg::new(ns));
        }
        expected.extend([Arg::new(self.global_param), Arg::new(self.stage_param)]);
        let takes = |args: &[Arg]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
        if f.inputs() != expected.as_slice() {
            let form = match (coupled, ns > 0) {
                (true, true) => "(z, z_next, s, p_global, p_i)",
                (true, false) => "(z, z_next, p_global, p_i)",
                (false, true) => "(z, s, p_global, p_i)",
                (false, false) => "(z, p_global, p_i)",
            };
            return Err(problem_error(
                f.name(),
                format!(
                    "{what} must take {form} = ({}) (Arg(0) for an absent parameter); it takes ({})",
                    takes(&expected),
                    takes(f.inputs())
                ),
            ));
        }
        let outputs = f.outputs();
        if outputs.len() != 1 || !outputs[0].dtype.is_float() {
            return Err(problem_error(
                f.name(),
                format!("{what} must return one floating-point array; it returns ({})", takes(outputs)),
            ));
        }
        let rows = outputs[0].numel();
        if cost && rows != 1 {
            return Err(problem_error(
                f.name(),
                format!("{what} must return a scalar; it returns an array of shape {:?}", outputs[0].shape),
            ));
        }
        let (first, count) = self.stages(kind);
        Ok(Term { f: f.renamed(f.name())?, first, count, coupled, rows })
    }

    /// The problem of an optimal control problem in states and controls (see
    /// [`ControlProblem`]), with `z_k = (x_k, u_k)`: the initial state is the global
    /// parameter, `z_N`'s control is unused (bounded as every control, costed nowhere).
    pub fn from_dynamics(ocp: &ControlProblem) -> Result<Self> {
        let (n, nx, nu, np) = (ocp.n, ocp.nx, ocp.nu, ocp.param_dim);
        // Saturated: a sum that overflows is rejected as too large by `new`.
        let nz = nx.saturating_add(nu);
        // The global parameter is x_init, unless initial constraints replace x_0 = x_init.
        let global = if ocp.initial.is_some() { 0 } else { nx };
        let mut problem = MultistageProblem::new(n, nz, global, np)?;
        problem.horizon = ocp.horizon.clone();
        if let Some(s) = &ocp.shared {
            problem = problem.shared(s.count, s.lb.clone(), s.ub.clone())?;
        }
        problem.state_control = Some(StateControl { nx, nu });
        // With shared variables the stages' states are not fixed by the rows alone (each
        // stage's copy of s is free at the first), nor with initial constraints.
        problem.dynamics_terms = ocp.shared.is_none() && ocp.initial.is_none();
        let ns = ocp.shared.as_ref().map_or(0, |s| s.count);
        // The z-form's arguments: (z, [s,] x_init, p) and the interstage (z, z_next, [s,] x_init, p).
        let with_shared = |mut args: Vec<Arg>| {
            if ns > 0 {
                args.push(Arg::new(ns));
            }
            args.extend([Arg::new(global), Arg::new(np)]);
            args
        };
        let stage = || with_shared(vec![Arg::new(nz)]);
        let split = |z: &Tensor| (z.shrink(&[(0, nx)]), z.shrink(&[(nx, nz)]));
        // A callback's arguments: `head`, then s and p from the z-form's trailing arguments.
        let tail = |head: Vec<Tensor>, s: &[Tensor]| {
            let mut args = head;
            if ns > 0 {
                args.push(s[s.len() - 3].clone());
            }
            args.push(s[s.len() - 1].clone());
            args
        };
        let first = |f: &NumericalFunction, args: &[Tensor]| -> Result<Tensor> { Ok(f.apply(args)?.remove(0)) };
        let lower = |name: &str, inputs: Vec<Arg>, body: &dyn Fn(&[Tensor]) -> Result<Tensor>| {
            NumericalFunction::trace(name, inputs, |s| body(&s))
        };
        let start = match &ocp.initial {
            None => lower("initial_state", stage(), &|s| Ok(split(&s[0]).0 - &s[s.len() - 2]))?,
            Some(r) => lower(&derived_name(r.name(), "z"), stage(), &|s| {
                let (x, u) = split(&s[0]);
                Ok(first(r, &tail(vec![x, u], s))?.cast(DType::F64).flatten())
            })?,
        };
        problem.eq_initial = problem.constraint(&start, Kind::Initial, "initial state")?;
        let dynamics = &ocp.dynamics;
        let defects =
            lower(&derived_name(dynamics.name(), "defect"), with_shared(vec![Arg::new(nz), Arg::new(nz)]), &|s| {
                let (x, u) = split(&s[0]);
                let next = first(dynamics, &tail(vec![x, u], s))?.cast(DType::F64).flatten();
                Ok(split(&s[1]).0 - next)
            })?;
        problem.eq_interstage = problem.constraint(&defects, Kind::Interstage, "dynamics_fn")?;
        if let Some(l) = &ocp.stage_cost {
            let cost = lower(&derived_name(l.name(), "z"), stage(), &|s| {
                let (x, u) = split(&s[0]);
                Ok(first(l, &tail(vec![x, u], s))?.reshape(()))
            })?;
            let mut term = problem.term(&cost, Kind::Stage, "stage_cost_fn", true)?;
            (term.first, term.count) = (0, n);
            problem.cost_stage = Some(term);
        }
        if let Some(l) = &ocp.terminal_cost {
            let cost = lower(&derived_name(l.name(), "z"), stage(), &|s| {
                Ok(first(l, &tail(vec![split(&s[0]).0], s))?.reshape(()))
            })?;
            problem.cost_terminal = Some(problem.term(&cost, Kind::Terminal, "terminal_cost_fn", true)?);
        }
        if let Some(r) = &ocp.terminal {
            let rows = lower(&derived_name(r.name(), "z"), stage(), &|s| {
                Ok(first(r, &tail(vec![split(&s[0]).0], s))?.cast(DType::F64).flatten())
            })?;
            problem.eq_terminal = problem.constraint(&rows, Kind::Terminal, "terminal_constraints_fn")?;
            // The Riccati recursion over (x, u) keeps the dynamics alone as exact rows.
            problem.dynamics_terms &= problem.eq_terminal.is_none();
        }
        if let Some((h, lb, ub)) = &ocp.path {
            let path = lower(&derived_name(h.name(), "z"), stage(), &|s| {
                let (x, u) = split(&s[0]);
                Ok(first(h, &tail(vec![x, u], s))?.flatten())
            })?;
            let mut term = problem.term(&path, Kind::Stage, "path_constraints_fn", false)?;
            (term.first, term.count) = (0, n);
            problem.ineq_stage = inequality(term, lb.clone(), ub.clone(), ["path_lb", "path_ub"])?;
        }
        if let Some((h, lb, ub)) = &ocp.terminal_ineq {
            let rows = lower(&derived_name(h.name(), "z"), stage(), &|s| {
                Ok(first(h, &tail(vec![split(&s[0]).0], s))?.flatten())
            })?;
            let term = problem.term(&rows, Kind::Terminal, "terminal_ineq_fn", false)?;
            problem.ineq_terminal = inequality(term, lb.clone(), ub.clone(), ["terminal_ineq_lb", "terminal_ineq_ub"])?;
        }
        // Each stage's (x, u) bounds: the states' of stage k, the controls' of step k (the last
        // stage's unused control bounded as the last step's).
        fn at(v: &[f64], each: usize, k: usize) -> &[f64] {
            if v.len() > each {
                &v[k * each..(k + 1) * each]
            } else {
                v
            }
        }
        let join = |x: &[f64], u: &[f64]| -> Vec<f64> {
            let stages = if x.len() > nx || u.len() > nu { n + 1 } else { 1 };
            (0..stages).flat_map(|k| [at(x, nx, k), at(u, nu, k.min(n - 1))].concat()).collect()
        };
        problem.bounds(join(&ocp.x_lb, &ocp.u_lb), join(&ocp.x_ub, &ocp.u_ub))
    }
}

/// An optimal control problem in states `x` (`nx`) and controls `u` (`nu`) over `N` steps:
///
/// ```text
/// min  Σ_{k<N} ℓ(x_k, u_k, p_k) + ℓ_N(x_N, p_N)
/// s.t. x_0 = x_init,  x_{k+1} = F(x_k, u_k, p_k),  lb ≤ h(x_k, u_k, p_k) ≤ ub (k < N),
///      r(x_N, p_N) = 0,  lb_N ≤ h_N(x_N, p_N) ≤ ub_N,  x_lb ≤ x_k ≤ x_ub,  u_lb ≤ u_k ≤ u_ub
/// ```
///
/// (or `r_0(x_0, u_0, p_0) = 0` in place of `x_0 = x_init`:
/// [`initial_constraints`](Self::initial_constraints)).
///
/// Callbacks take `(x, u, p)` (terminal cost: `(x, p)`), `p` the stage's parameter
/// (`Arg::new(0)` for none). [`MultistageProblem::from_dynamics`] lowers it to the z-form.
///
/// ```
/// use anvil::{Arg, NumericalFunction, opti::{ControlProblem, MultistageProblem}};
/// # fn main() -> anvil::Result<()> {
/// let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
/// let f = NumericalFunction::new("f", |[x, u, _p]| {
///     anvil::Tensor::stack(&[x.get(0) + x.get(1) * 0.1, x.get(1) + u.get(0) * 0.1], 0)
/// }, xup())?;
/// let l = NumericalFunction::new("l", |[x, u, _p]| (&x * &x).sum() + (&u * &u).sum(), xup())?;
/// let ocp = ControlProblem::new(20, 2, 1, 0, &f)?.stage_cost(&l)?.control_bounds(-1.0, 1.0)?;
/// let problem = MultistageProblem::from_dynamics(&ocp)?;
/// assert_eq!((problem.nz(), problem.nvars(), problem.np()), (3, 63, 2));
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ControlProblem {
    n: usize,
    nx: usize,
    nu: usize,
    param_dim: usize,
    horizon: Option<CodegenIntConstant>,
    dynamics: NumericalFunction,
    stage_cost: Option<NumericalFunction>,
    terminal_cost: Option<NumericalFunction>,
    terminal: Option<NumericalFunction>,
    initial: Option<NumericalFunction>,
    path: Option<(NumericalFunction, Bound, Bound)>,
    terminal_ineq: Option<(NumericalFunction, Bound, Bound)>,
    /// Variables shared by every step, declared by a dynamics function of `(x, u, s, p)`.
    shared: Option<Shared>,
    x_lb: Vec<f64>,
    x_ub: Vec<f64>,
    u_lb: Vec<f64>,
    u_ub: Vec<f64>,
}

impl ControlProblem {
    /// `N` steps of the dynamics `x_next = F(x, u, p)`; no cost and no bounds yet. A dynamics
    /// function of `(x, u, s, p)` declares variables `s` shared by every step (a free final
    /// time: `F = x + s/N·f(x, u)`), chosen by the solver: every callback then takes `s`
    /// before `p`, and the solver's variables end with `s` (see
    /// [`MultistageProblem::shared`]; bounds: [`shared_bounds`](Self::shared_bounds)).
    pub fn new(n: usize, nx: usize, nu: usize, param_dim: usize, dynamics: &NumericalFunction) -> Result<Self> {
        if n == 0 || nx == 0 {
            return Err(problem_error(
                dynamics.name(),
                format!("an optimal control problem needs N ≥ 1 steps and nx ≥ 1 states (got N = {n}, nx = {nx})"),
            ));
        }
        let mut ocp = ControlProblem {
            n,
            nx,
            nu,
            param_dim,
            horizon: None,
            dynamics: dynamics.renamed(dynamics.name())?,
            stage_cost: None,
            terminal_cost: None,
            terminal: None,
            initial: None,
            path: None,
            terminal_ineq: None,
            x_lb: vec![f64::NEG_INFINITY; nx],
            x_ub: vec![f64::INFINITY; nx],
            u_lb: vec![f64::NEG_INFINITY; nu],
            u_ub: vec![f64::INFINITY; nu],
            shared: None,
        };
        if let [_, _, s, _] = dynamics.inputs() {
            let count = s.numel();
            ocp.shared = (count > 0).then(|| Shared {
                count,
                lb: vec![f64::NEG_INFINITY; count],
                ub: vec![f64::INFINITY; count],
            });
        }
        ocp.check(dynamics, &ocp.xup(), "dynamics_fn")?;
        let out = &dynamics.outputs()[0];
        if out.numel() != nx {
            return Err(problem_error(
                dynamics.name(),
                format!("dynamics_fn must return the next state ({nx} entries); it returns shape {:?}", out.shape),
            ));
        }
        Ok(ocp)
    }

    /// [`new`](Self::new) with the horizon named by a [`CodegenIntConstant`].
    pub fn with_horizon(
        horizon: &CodegenIntConstant,
        nx: usize,
        nu: usize,
        param_dim: usize,
        dynamics: &NumericalFunction,
    ) -> Result<Self> {
        let n = horizon.value()?;
        let n = usize::try_from(n)
            .map_err(|_| problem_error(dynamics.name(), format!("the horizon `{horizon}` is {n}; it must be ≥ 1")))?;
        let mut ocp = ControlProblem::new(n, nx, nu, param_dim, dynamics)?;
        ocp.horizon = Some(horizon.clone());
        Ok(ocp)
    }

    /// A callback's arguments: `head`, the shared variables (if any) and the parameter.
    fn args(&self, head: &[usize]) -> Vec<Arg> {
        let mut args: Vec<Arg> = head.iter().map(|&n| Arg::new(n)).collect();
        args.extend(self.shared.as_ref().map(|s| Arg::new(s.count)));
        args.push(Arg::new(self.param_dim));
        args
    }

    fn xup(&self) -> Vec<Arg> {
        self.args(&[self.nx, self.nu])
    }

    fn xp(&self) -> Vec<Arg> {
        self.args(&[self.nx])
    }

    /// Variables shared by every step (the entries of the dynamics' `s`; 0 without).
    pub fn shared_count(&self) -> usize {
        self.shared.as_ref().map_or(0, |s| s.count)
    }

    /// Bounds on the shared variables (`shared_count` entries each, or scalars).
    pub fn shared_bounds(mut self, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let count = self.shared_count();
        if count == 0 {
            return Err(problem_error(
                self.dynamics.name(),
                "shared_bounds: there are no shared variables (a dynamics function of (x, u, s, p) declares them)"
                    .into(),
            ));
        }
        let (lb, ub) = (lb.into().resolve(count, "shared_lb")?, ub.into().resolve(count, "shared_ub")?);
        super::problem::check_ordered(&lb, &ub, "shared_lb", "shared_ub")?;
        self.shared = Some(Shared { count, lb, ub });
        Ok(self)
    }

    fn check(&self, f: &NumericalFunction, expected: &[Arg], what: &str) -> Result<()> {
        let takes = |args: &[Arg]| args.iter().map(|a| a.to_string()).collect::<Vec<_>>().join(", ");
        if f.inputs() != expected {
            return Err(problem_error(
                f.name(),
                format!(
                    "{what} must take ({}) (Arg(0) for no parameter); it takes ({})",
                    takes(expected),
                    takes(f.inputs())
                ),
            ));
        }
        let outputs = f.outputs();
        if outputs.len() != 1 || !outputs[0].dtype.is_float() {
            return Err(problem_error(
                f.name(),
                format!("{what} must return one floating-point array; it returns ({})", takes(outputs)),
            ));
        }
        Ok(())
    }

    /// The cost `ℓ(x_k, u_k, p_k)` of each step `k < N` (a scalar).
    pub fn stage_cost(mut self, f: &NumericalFunction) -> Result<Self> {
        self.check(f, &self.xup(), "stage_cost_fn")?;
        check_scalar(f, "stage_cost_fn")?;
        self.stage_cost = Some(f.renamed(f.name())?);
        Ok(self)
    }

    /// The cost `ℓ_N(x_N, p_N)` of the final state (a scalar).
    pub fn terminal_cost(mut self, f: &NumericalFunction) -> Result<Self> {
        self.check(f, &self.xp(), "terminal_cost_fn")?;
        check_scalar(f, "terminal_cost_fn")?;
        self.terminal_cost = Some(f.renamed(f.name())?);
        Ok(self)
    }

    /// The terminal constraints `r(x_N, p_N) = 0` (a point-to-point problem: `x_N − x_target`).
    /// The final state is then fixed twice, by the dynamics and by these rows: the SQP
    /// solver's Riccati QP takes its general (z-form) recursion, the interior-point solver
    /// pivots them in earlier stages.
    pub fn terminal_constraints(mut self, f: &NumericalFunction) -> Result<Self> {
        self.check(f, &self.xp(), "terminal_constraints_fn")?;
        self.terminal = Some(f.renamed(f.name())?);
        Ok(self)
    }

    /// The initial constraints `r_0(x_0, u_0, p_0) = 0` in place of `x_0 = x_init`: the first
    /// stage is then pinned by these rows alone (e.g. some states free, `x[:2] − a`), and
    /// there is no `x_init` (the solver's parameter is `[p_0, …, p_N]`). Their multipliers
    /// come first, as `x_0 = x_init`'s would.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::{ControlProblem, MultistageProblem}};
    /// # fn main() -> anvil::Result<()> {
    /// let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    /// let f = NumericalFunction::new("free_v_f", |[x, u, _p]| &x + &u, xup())?;
    /// // The position starts at 1; the velocity is the solver's to choose.
    /// let start = NumericalFunction::new("free_v_start", |[x, _u, _p]| x.shrink(&[(0, 1)]) - 1.0, xup())?;
    /// let ocp = ControlProblem::new(10, 2, 1, 0, &f)?.initial_constraints(&start)?;
    /// let problem = MultistageProblem::from_dynamics(&ocp)?;
    /// assert_eq!((problem.np(), problem.neq()), (0, 1 + 10 * 2));
    /// # Ok(()) }
    /// ```
    pub fn initial_constraints(mut self, f: &NumericalFunction) -> Result<Self> {
        self.check(f, &self.xup(), "initial_constraints_fn")?;
        self.initial = Some(f.renamed(f.name())?);
        Ok(self)
    }

    /// The path constraints `lb ≤ h(x_k, u_k, p_k) ≤ ub` at each step `k < N`.
    pub fn path_constraints(
        mut self,
        f: &NumericalFunction,
        lb: impl Into<Bound>,
        ub: impl Into<Bound>,
    ) -> Result<Self> {
        self.check(f, &self.xup(), "path_constraints_fn")?;
        self.path = Some((f.renamed(f.name())?, lb.into(), ub.into()));
        Ok(self)
    }

    /// The terminal inequality constraints `lb_N ≤ h_N(x_N, p_N) ≤ ub_N` on the final state (a
    /// terminal set, or a path constraint that holds at the end too); their multipliers follow
    /// the path constraints'.
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::{ControlProblem, MultistageProblem}};
    /// # fn main() -> anvil::Result<()> {
    /// let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    /// let f = NumericalFunction::new("end_f", |[x, u, _p]| &x + &u, xup())?;
    /// // The final state within the unit disk.
    /// let disk = NumericalFunction::new("end_disk", |[x, _p]| (&x * &x).sum(), [Arg::new(2), Arg::new(0)])?;
    /// let ocp = ControlProblem::new(10, 2, 1, 0, &f)?.terminal_inequalities(&disk, f64::NEG_INFINITY, 1.0)?;
    /// assert_eq!(MultistageProblem::from_dynamics(&ocp)?.nineq(), 1);
    /// # Ok(()) }
    /// ```
    pub fn terminal_inequalities(
        mut self,
        f: &NumericalFunction,
        lb: impl Into<Bound>,
        ub: impl Into<Bound>,
    ) -> Result<Self> {
        self.check(f, &self.xp(), "terminal_ineq_fn")?;
        self.terminal_ineq = Some((f.renamed(f.name())?, lb.into(), ub.into()));
        Ok(self)
    }

    /// Bounds on the states: the same at every stage (`nx` entries each, or scalars), or
    /// stage by stage (`(N + 1)·nx` entries, stacked by stage: a state held at the last stage).
    ///
    /// ```
    /// use anvil::{Arg, NumericalFunction, opti::{ControlProblem, MultistageProblem}};
    /// # fn main() -> anvil::Result<()> {
    /// let xup = || [Arg::new(1), Arg::new(1), Arg::new(0)];
    /// let f = NumericalFunction::new("held_f", |[x, u, _p]| &x + &u, xup())?;
    /// // x ≤ 1 throughout, and 0.5 ≤ x at the last of 3 stages.
    /// let lb = [f64::NEG_INFINITY, f64::NEG_INFINITY, 0.5];
    /// let ocp = ControlProblem::new(2, 1, 1, 0, &f)?.state_bounds(lb, 1.0)?;
    /// assert!(ControlProblem::new(2, 1, 1, 0, &f)?.state_bounds([0.0, 0.0], 1.0).is_err());
    /// # Ok(()) }
    /// ```
    pub fn state_bounds(mut self, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let shape = ByStage { each: self.nx, stages: self.n + 1, each_name: "nx", stages_name: "N + 1" };
        (self.x_lb, self.x_ub) = shape.resolve(lb.into(), ub.into(), ["x_lb", "x_ub"])?;
        Ok(self)
    }

    /// Bounds on the controls: the same at every step (`nu` entries each, or scalars), or step
    /// by step (`N·nu` entries, stacked by step).
    pub fn control_bounds(mut self, lb: impl Into<Bound>, ub: impl Into<Bound>) -> Result<Self> {
        let shape = ByStage { each: self.nu, stages: self.n, each_name: "nu", stages_name: "N" };
        (self.u_lb, self.u_ub) = shape.resolve(lb.into(), ub.into(), ["u_lb", "u_ub"])?;
        Ok(self)
    }
}

/// The inequality `term` with its bounds (its rows', the same at every stage or each stage's,
/// named `names` in errors), checked even where the term has no rows or acts on no stage (and
/// is then dropped).
fn inequality(term: Term, lb: Bound, ub: Bound, names: [&str; 2]) -> Result<Option<Inequality>> {
    let shape = ByStage { each: term.rows, stages: term.count, each_name: "rows", stages_name: "stages" };
    let (lb, ub) = shape.resolve(lb, ub, names)?;
    Ok((term.rows > 0 && term.count > 0).then_some(Inequality { term, lb, ub }))
}

/// A cost returns a scalar.
fn check_scalar(f: &NumericalFunction, what: &str) -> Result<()> {
    let out = &f.outputs()[0];
    if out.numel() == 1 {
        return Ok(());
    }
    Err(problem_error(f.name(), format!("{what} must return a scalar; it returns an array of shape {:?}", out.shape)))
}

/// Stage-major blocks of `width` entries moved one block earlier, the last block repeated.
fn shift_stages(v: &[f64], width: usize) -> Vec<f64> {
    if v.len() <= width {
        return v.to_vec();
    }
    let mut out = v[width..].to_vec();
    out.extend_from_slice(&v[v.len() - width..]);
    out
}

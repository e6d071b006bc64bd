//! The derived functions of a multistage problem, stage by stage: each stage function is
//! traced once, its value and derivative blocks (gradient, sparse Jacobian, sparse
//! Lagrangian Hessian) come from one evaluation vmapped over the stages it covers, and the
//! blocks are stamped into the global CSC patterns by one scatter-add per matrix. The
//! result has the shape of [`Derived`], so any QP backend of the SQP method takes it.

use super::derive::{Derived, Matrix};
use super::multistage::{MultistageProblem, StateControl, Term};
use super::settings::HessianApproximation;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::function::ad::vmap;
use crate::function::{derived_name, Arg, NumericalFunction};
use crate::pattern::SparsityPattern;
use crate::tensor::Tensor;
use crate::transform::derivatives;
use ndarray::Array1;

/// A term's stage function restricted to the rows the QP sees, with its derivative blocks'
/// patterns (over the term's stage variables `w`: `z_i`, or `(z_i, z_{i+1})`).
struct StageTerm<'a> {
    term: &'a Term,
    /// Rows kept (all but inequality rows without a finite bound).
    rows: Vec<usize>,
    /// Offset of the term's first row among its kind's rows.
    row_offset: usize,
}

/// The symbols every global function starts from: the stage variables `(N + 1, nz)`, the
/// global parameter and the stage parameters `(N + 1, np)`.
struct Symbols {
    zs: Tensor,
    global: Tensor,
    stages: Tensor,
}

impl Symbols {
    fn new(problem: &MultistageProblem, z: &Tensor, p: &Tensor) -> Symbols {
        let (n1, ng, np) = (problem.n + 1, problem.global_param, problem.stage_param);
        Symbols {
            zs: z.reshape([n1, problem.nz]),
            global: p.shrink(&[(0, ng)]),
            stages: p.shrink(&[(ng, ng + n1 * np)]).reshape([n1, np]),
        }
    }

    /// The arguments of a term's stage function, batched over its stages: `(w, p_global,
    /// p_i)` with `w` of shape `(count, width)`.
    fn batch(&self, term: &Term, nz: usize) -> [Tensor; 3] {
        let (a, b) = (term.first, term.first + term.count);
        let z = self.zs.shrink(&[(a, b), (0, nz)]);
        let w = if term.coupled { Tensor::cat(&[z, self.zs.shrink(&[(a + 1, b + 1), (0, nz)])], 1) } else { z };
        let np = self.stages.shape()[1];
        [w, self.global.clone(), self.stages.shrink(&[(a, b), (0, np)])]
    }
}

/// Applies the stage function `f` of `(w, p_global, p_i[, extra])` to every stage of
/// `term`: one vmapped evaluation; every output gets a leading stage axis.
fn per_stage(
    f: &NumericalFunction,
    term: &Term,
    symbols: &Symbols,
    nz: usize,
    extra: Option<Tensor>,
) -> Result<Vec<Tensor>> {
    let mut axes = vec![Some(0), None, Some(0)];
    let mut args = symbols.batch(term, nz).to_vec();
    if let Some(e) = extra {
        axes.push(Some(0));
        args.push(e);
    }
    vmap(f, term.count, &axes)?.apply(&args)
}

/// The inputs of a term's stage function over its stage variables `w`.
fn stage_args(problem: &MultistageProblem, term: &Term) -> Vec<Arg> {
    vec![Arg::new(term.width(problem.nz)), Arg::new(problem.global_param), Arg::new(problem.stage_param)]
}

/// The term's function at the symbols `(w, p_global, p_i)`, as a flat `f64` vector of the
/// kept `rows` (all rows when `rows` is `None`).
fn stage_value(term: &Term, nz: usize, s: &[Tensor], rows: Option<&[usize]>) -> Result<Tensor> {
    let w = &s[0];
    let mut args = vec![w.shrink(&[(0, nz)])];
    if term.coupled {
        args.push(w.shrink(&[(nz, 2 * nz)]));
    }
    args.extend([s[1].clone(), s[2].clone()]);
    let y = term.f.apply(&args)?.remove(0).cast(DType::F64).flatten();
    Ok(match rows {
        Some(rows) if rows.len() < y.numel() => {
            let index: Vec<i64> = rows.iter().map(|&r| r as i64).collect();
            y.take(&Tensor::from_array(&Array1::from(index)))
        }
        _ => y,
    })
}

/// Derivative blocks of every stage and where they go in a global matrix.
#[derive(Default)]
struct Stamps {
    /// Per term: the blocks' values, `(stages · block nnz)`, stage-major.
    values: Vec<Tensor>,
    /// The global (row, column) of each value, in the same order.
    entries: Vec<(usize, usize)>,
}

impl Stamps {
    /// Adds `count` blocks of `pattern` (values `(count, nnz)`), block `k` at
    /// `(row0 + k·row_step, col0 + k·col_step)`.
    fn add(
        &mut self,
        values: Tensor,
        pattern: &SparsityPattern,
        at: (usize, usize),
        step: (usize, usize),
        count: usize,
    ) {
        let block = pattern.csc_entries();
        for k in 0..count {
            let (r0, c0) = (at.0 + k * step.0, at.1 + k * step.1);
            self.entries.extend(block.iter().map(|&(i, j)| (r0 + i, c0 + j)));
        }
        self.values.push(values.flatten());
    }

    /// The global row vector of `len` entries (blocks stamped in row 0), dense.
    fn assemble_row(self, len: usize) -> Tensor {
        if self.entries.is_empty() {
            return Tensor::zeros([len]);
        }
        let index: Vec<i64> = self.entries.iter().map(|&(_, j)| j as i64).collect();
        Tensor::scatter_add(&Tensor::cat(&self.values, 0), &Tensor::from_array(&Array1::from(index)), len)
    }

    /// The global matrix: its pattern (plus the diagonal when `diagonal`) and its CSC values,
    /// summing blocks that overlap.
    fn assemble(self, rows: usize, cols: usize, diagonal: bool) -> (Tensor, SparsityPattern) {
        let mut pattern =
            SparsityPattern::new(rows, cols, self.entries.iter().copied()).expect("blocks fit the matrix");
        if diagonal {
            pattern = pattern.with_diagonal();
        }
        let csc = pattern.csc_entries();
        let index: Vec<i64> = self
            .entries
            .iter()
            .map(|&(i, j)| csc.binary_search_by(|e| (e.1, e.0).cmp(&(j, i))).expect("a stamped entry") as i64)
            .collect();
        if index.is_empty() {
            return (Tensor::zeros([csc.len()]), pattern);
        }
        let values = Tensor::cat(&self.values, 0);
        (Tensor::scatter_add(&values, &Tensor::from_array(&Array1::from(index)), csc.len()), pattern)
    }
}

/// A stage function and its derivative blocks' patterns, traced once.
struct Traced {
    f: NumericalFunction,
    pattern: SparsityPattern,
}

/// `(y, J)` of a constraint term's kept rows: value and sparse Jacobian over `w`.
fn constraint_blocks(name: &str, problem: &MultistageProblem, t: &StageTerm) -> Result<Traced> {
    let mut pattern = None;
    let f = NumericalFunction::trace(name, stage_args(problem, t.term), |s| -> Result<Vec<Tensor>> {
        let y = stage_value(t.term, problem.nz, &s, Some(&t.rows))?;
        let d = derivatives::sparse_jacobian(&y, &s[0])?;
        pattern = Some(d.pattern);
        Ok(vec![y, d.values])
    })?;
    Ok(Traced { f, pattern: pattern.ok_or_else(|| tracing_failed(name))? })
}

/// The upper triangle of the Hessian over `w` of a cost term, or of `λᵀ y` for a
/// constraint term (`λ` the extra input).
fn hessian_blocks(name: &str, problem: &MultistageProblem, t: &StageTerm, cost: bool) -> Result<Traced> {
    let mut inputs = stage_args(problem, t.term);
    if !cost {
        inputs.push(Arg::new(t.rows.len()));
    }
    let mut pattern = None;
    let f = NumericalFunction::trace(name, inputs, |s| -> Result<Tensor> {
        let y = stage_value(t.term, problem.nz, &s, Some(&t.rows))?;
        let scalar = if cost { y.sum() } else { (&s[3] * &y).sum() };
        let d = derivatives::sparse_hessian(&scalar, &s[0])?;
        pattern = Some(d.pattern);
        Ok(d.values)
    })?;
    Ok(Traced { f, pattern: pattern.ok_or_else(|| tracing_failed(name))? })
}

/// `(ℓ, ∇ℓ)` of a cost term over `w`.
fn cost_blocks(name: &str, problem: &MultistageProblem, t: &StageTerm) -> Result<NumericalFunction> {
    NumericalFunction::trace(name, stage_args(problem, t.term), |s| -> Result<Vec<Tensor>> {
        let y = stage_value(t.term, problem.nz, &s, None)?.sum();
        let g = derivatives::gradient(&y, &s[0])?;
        Ok(vec![y, g])
    })
}

/// A term's values alone: the cost's, or the kept constraint rows (`cost` false).
fn values_only(name: &str, problem: &MultistageProblem, t: &StageTerm, cost: bool) -> Result<NumericalFunction> {
    NumericalFunction::trace(name, stage_args(problem, t.term), |s| -> Result<Tensor> {
        let rows = (!cost).then_some(t.rows.as_slice());
        let y = stage_value(t.term, problem.nz, &s, rows)?;
        Ok(if cost { y.sum() } else { y })
    })
}

fn tracing_failed(name: &str) -> Error {
    Error::Problem { what: "solver", name: name.into(), message: "tracing failed".into() }
}

/// Stage terms of one kind, each with the rows it passes on.
fn stage_terms<'a, R: Iterator<Item = usize>>(terms: impl Iterator<Item = (&'a Term, R)>) -> Vec<StageTerm<'a>> {
    let mut offset = 0;
    let mut out = Vec::new();
    for (term, rows) in terms.filter(|(t, _)| t.count > 0) {
        let rows: Vec<usize> = rows.collect();
        let kept = rows.len();
        if kept > 0 {
            out.push(StageTerm { term, rows, row_offset: offset });
        }
        offset += term.count * kept;
    }
    out
}

/// A problem's stage terms by kind, with the rows each passes on, and the global inequality
/// rows the QP sees.
struct StageTerms<'a> {
    costs: Vec<StageTerm<'a>>,
    eqs: Vec<StageTerm<'a>>,
    ineqs: Vec<StageTerm<'a>>,
    q_rows: Vec<usize>,
}

impl<'a> StageTerms<'a> {
    fn new(problem: &'a MultistageProblem) -> Self {
        // A row is kept where it has a finite bound at any stage (bounds may differ by stage).
        let ineqs = stage_terms(problem.inequalities().map(|q| (&q.term, (0..q.term.rows).filter(|&r| q.bounded(r)))));
        let every_row = |t: &'a Term| (t, 0..t.rows);
        StageTerms {
            costs: stage_terms(problem.cost_terms().map(every_row)),
            eqs: stage_terms(problem.eq_terms().map(every_row)),
            q_rows: q_rows(problem, &ineqs),
            ineqs,
        }
    }
}

/// One traced function per term, named `<solver>_<kind><index>`.
fn per_term<T>(
    solver: &str,
    kind: &str,
    terms: &[StageTerm],
    trace: impl Fn(&str, &StageTerm) -> Result<T>,
) -> Result<Vec<T>> {
    terms.iter().enumerate().map(|(i, t)| trace(&derived_name(solver, &format!("{kind}{i}")), t)).collect()
}

/// The cost terms at the symbols: their sum, and their gradients stamped stage by stage.
fn summed_costs(costs: &[StageTerm], fns: &[NumericalFunction], s: &Symbols, nz: usize) -> Result<(Tensor, Stamps)> {
    let mut f = Tensor::zeros(());
    let mut grad = Stamps::default();
    let row = SparsityPattern::new(1, nz, (0..nz).map(|j| (0, j))).expect("a row");
    for (t, cf) in costs.iter().zip(fns) {
        let out = per_stage(cf, t.term, s, nz, None)?;
        f = f + out[0].sum();
        grad.add(out[1].clone(), &row, (0, t.term.first * nz), (0, nz), t.term.count);
    }
    Ok((f, grad))
}

/// Flat tensors one after another (an empty vector for none).
fn stacked(parts: Vec<Tensor>) -> Tensor {
    if parts.is_empty() {
        Tensor::zeros([0])
    } else {
        Tensor::cat(&parts, 0)
    }
}

/// `<solver>_values` and `<solver>_linearize` from `evaluate(symbols, derivatives)`.
fn trace_values_and_linearize(
    solver: &str,
    problem: &MultistageProblem,
    evaluate: &dyn Fn(&Symbols, bool) -> Result<Vec<Tensor>>,
) -> Result<(NumericalFunction, NumericalFunction)> {
    let xp = vec![Arg::new(problem.nvars()), Arg::new(problem.np())];
    let trace = |suffix: &str, derivatives: bool| {
        NumericalFunction::trace(&derived_name(solver, suffix), xp.clone(), |s| {
            evaluate(&Symbols::new(problem, &s[0], &s[1]), derivatives)
        })
    };
    Ok((trace("values", false)?, trace("linearize", true)?))
}

/// Derives `<solver>_values`, `<solver>_linearize` and `<solver>_hessian` of a multistage
/// problem (sparse storage).
pub(crate) fn derive(
    solver: &str,
    problem: &MultistageProblem,
    approximation: HessianApproximation,
) -> Result<Derived> {
    let (nz, nv) = (problem.nz, problem.nvars());
    let StageTerms { costs, eqs, ineqs, q_rows } = StageTerms::new(problem);
    let (neq, nq) = (problem.neq(), q_rows.len());
    let cost_fns = per_term(solver, "cost", &costs, |n, t| cost_blocks(n, problem, t))?;
    let eq_fns = per_term(solver, "eq", &eqs, |n, t| constraint_blocks(n, problem, t))?;
    let q_fns = per_term(solver, "ineq", &ineqs, |n, t| constraint_blocks(n, problem, t))?;

    let xp = vec![Arg::new(nv), Arg::new(problem.np())];
    let patterns = std::cell::RefCell::new(Vec::new());
    // Cost, constraint values and (with `derivatives`) their blocks at the symbols.
    let evaluate = |s: &Symbols, derivatives: bool| -> Result<Vec<Tensor>> {
        let (f, grad) = summed_costs(&costs, &cost_fns, s, nz)?;
        let mut out = vec![f];
        for (terms, fns, rows) in [(&eqs, &eq_fns, neq), (&ineqs, &q_fns, nq)] {
            let mut values = Vec::new();
            let mut jac = Stamps::default();
            for (t, tf) in terms.iter().zip(fns) {
                let blocks = per_stage(&tf.f, t.term, s, nz, None)?;
                values.push(blocks[0].flatten());
                let step = (t.rows.len(), nz);
                jac.add(blocks[1].clone(), &tf.pattern, (t.row_offset, t.term.first * nz), step, t.term.count);
            }
            out.push(stacked(values));
            if derivatives {
                let (j, pattern) = jac.assemble(rows, nv, false);
                out.push(j);
                patterns.borrow_mut().push(pattern);
            }
        }
        if derivatives {
            out.insert(1, grad.assemble_row(nv));
        }
        Ok(out)
    };
    let (values, linearize) = trace_values_and_linearize(solver, problem, &evaluate)?;
    let mut patterns = patterns.into_inner();
    let (jac_q, jac_eq) = match (patterns.pop(), patterns.pop()) {
        (Some(q), Some(e)) => (q, e),
        _ => return Err(tracing_failed(solver)),
    };

    let exact = approximation == HessianApproximation::Exact;
    let hess_cost = per_term(solver, "cost_hess", &costs, |n, t| hessian_blocks(n, problem, t, true))?;
    let constraint_hess = |terms: &[StageTerm], kind: &str| -> Result<Vec<Traced>> {
        if !exact {
            return Ok(Vec::new());
        }
        per_term(solver, kind, terms, |n, t| hessian_blocks(n, problem, t, false))
    };
    let (hess_eq, hess_q) = (constraint_hess(&eqs, "eq_hess")?, constraint_hess(&ineqs, "ineq_hess")?);
    let (mut hess_pattern, mut hess_diagonal) = (None, None);
    let mut inputs = xp;
    inputs.extend([Arg::new(neq), Arg::new(nq)]);
    let hessian = NumericalFunction::trace(&derived_name(solver, "hessian"), inputs, |s| -> Result<Tensor> {
        let symbols = Symbols::new(problem, &s[0], &s[1]);
        let mut stamps = Stamps::default();
        let mut stamp = |t: &StageTerm, traced: &Traced, lam: Option<&Tensor>| -> Result<()> {
            let lam = lam.map(|l| {
                let (a, m) = (t.row_offset, t.rows.len());
                l.shrink(&[(a, a + t.term.count * m)]).reshape([t.term.count, m])
            });
            let values = per_stage(&traced.f, t.term, &symbols, nz, lam)?.remove(0);
            let at = t.term.first * nz;
            stamps.add(values, &traced.pattern, (at, at), (nz, nz), t.term.count);
            Ok(())
        };
        for (t, h) in costs.iter().zip(&hess_cost) {
            stamp(t, h, None)?;
        }
        for (t, h) in eqs.iter().zip(&hess_eq) {
            stamp(t, h, Some(&s[2]))?;
        }
        for (t, h) in ineqs.iter().zip(&hess_q) {
            stamp(t, h, Some(&s[3]))?;
        }
        let mut diagonal = vec![false; nv];
        for &(i, j) in &stamps.entries {
            diagonal[i] |= i == j;
        }
        hess_diagonal = Some(diagonal);
        let (values, pattern) = stamps.assemble(nv, nv, true);
        hess_pattern = Some(pattern);
        Ok(values)
    })?;
    Ok(Derived {
        values,
        linearize,
        hessian,
        jac_eq: Matrix::Sparse(jac_eq),
        jac_q: Matrix::Sparse(jac_q),
        hess: Matrix::Sparse(hess_pattern.ok_or_else(|| tracing_failed(solver))?),
        hess_diagonal: hess_diagonal.ok_or_else(|| tracing_failed(solver))?,
        q_rows,
    })
}

/// The global inequality rows the QP sees (rows with a finite bound), stage-major.
fn q_rows(problem: &MultistageProblem, kept: &[StageTerm]) -> Vec<usize> {
    let mut rows = Vec::new();
    let mut offset = 0;
    for term in problem.ineq_terms() {
        if let Some(t) = kept.iter().find(|t| std::ptr::eq(t.term, term)) {
            for k in 0..term.count {
                rows.extend(t.rows.iter().map(|r| offset + k * term.rows + r));
            }
        }
        offset += term.count * term.rows;
    }
    rows
}

/// Where a constraint term's rows and dense Jacobian blocks lie in the block-storage
/// outputs: rows `row_offset + k·rows + r` of stage `first + k`, the block of stage `k` at
/// `jac_offset + k·rows·width` (row-major, `width` = `nz`, or `2·nz` when coupled).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TermLayout {
    pub first: usize,
    pub count: usize,
    pub rows: usize,
    pub coupled: bool,
    pub row_offset: usize,
    pub jac_offset: usize,
}

/// What a stage function evaluates, and so where the generated solver puts its outputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StageRole {
    /// A cost term's `(ℓ, ∇ℓ)`: summed into `f` and the gradient.
    Cost,
    /// An equality term's `(y, J)`: rows of `c_eq` and Jacobian blocks.
    Eq,
    /// An inequality term's `(y, J)` (rows with a finite bound).
    Ineq,
    /// A cost term's `ℓ` alone (trial points of the line search).
    CostValue,
    /// An equality term's `y` alone.
    EqValue,
    /// An inequality term's `y` alone (rows with a finite bound).
    IneqValue,
    /// A term's dense Hessian block over its stage variables: of a cost (`lambda` None), or of
    /// `λᵀ y` with the equality (`Some(Eq)`) or inequality (`Some(Ineq)`) multipliers;
    /// `couples`: its off-diagonal part between two stages is not zero.
    Hessian { lambda: Option<StageMultipliers>, couples: bool },
}

/// Which multipliers a constraint term's Hessian block weighs its rows with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StageMultipliers {
    Eq,
    Ineq,
}

/// One traced stage function `(w, p_global, p_i[, λ_i])` and the stages it is evaluated at:
/// the generated solver calls it in a loop over `layout`'s stages, with `w = z_i` (or
/// `(z_i, z_{i+1})`, contiguous in the interleaved variables).
pub(crate) struct StageCall {
    pub f: NumericalFunction,
    pub role: StageRole,
    pub layout: TermLayout,
}

impl StageCall {
    /// A stage function the generated solver evaluates on all its stages at once (through
    /// its batched entry point).
    fn new(f: NumericalFunction, role: StageRole, layout: TermLayout) -> Self {
        StageCall { f: f.with_batch_entry(), role, layout }
    }
}

/// The derived functions of a multistage problem with dense stage blocks, for a QP that
/// works stage by stage:
///
/// * `<solver>_values(z, p) -> (f, c_eq, g_q)`;
/// * `<solver>_linearize(z, p) -> (f, ∇f, c_eq, J_eq blocks, g_q, J_q blocks)`;
/// * `<solver>_hessian(z, p, λ_eq, λ_q) -> (H_ii (N+1, nz, nz), H_{i,i+1} (N, nz, nz))`,
///   the block-tridiagonal Hessian of the Lagrangian (or of the cost alone, Gauss-Newton);
/// * `calls`: the stage functions the last two are made of, vmapped over their stages. The
///   generated solver evaluates linearisation and Hessian through these functions' batched
///   entry points (one loop over the stages around each stage's straight-line code,
///   vectorised across stages; several times faster than the vmapped graphs' loop kernels);
///   `linearize` and `hessian` are the same functions as whole-problem graphs.
pub(crate) struct StageDerived {
    pub values: NumericalFunction,
    pub linearize: NumericalFunction,
    pub hessian: NumericalFunction,
    pub calls: Vec<StageCall>,
    pub eq: Vec<TermLayout>,
    pub q: Vec<TermLayout>,
    pub q_rows: Vec<usize>,
    /// Whether any term couples the curvature of neighbouring stages (`H_{i,i+1} ≠ 0`).
    pub coupled_hessian: bool,
    /// The structural patterns of `eq`'s and `q`'s Jacobian blocks over their `w` (kept rows
    /// × width), and of `H_{i,i+1}` (`nz × nz`: a variable of stage `i` with one of stage
    /// `i + 1`): which entries of the KKT matrix by stages may be nonzero.
    pub eq_patterns: Vec<SparsityPattern>,
    pub q_patterns: Vec<SparsityPattern>,
    pub coupling: SparsityPattern,
    /// Per variable of a stage, whether some term's Hessian may have its diagonal entry
    /// (its curvature of its own, in the Hessian the solver uses).
    pub curved: Vec<bool>,
    /// The explicit dynamics, when the QP may eliminate the states (see [`Dynamics`]).
    pub dynamics: Option<Dynamics>,
}

/// A problem whose equality rows are its initial state and its dynamics (`eq[0]` and `eq[1]`,
/// `[I 0]` in the states they fix) and whose Hessian does not couple stages: the QP's
/// Newton systems are then solved by a Riccati recursion over states and controls, with the
/// dynamics as exact constraints (one `nu × nu` factorisation per stage instead of `nz × nz`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dynamics {
    pub nx: usize,
    pub nu: usize,
}

/// Where a term's rows lie, its Jacobian blocks from `jac_offset`.
fn term_layout(t: &StageTerm, jac_offset: usize) -> TermLayout {
    TermLayout {
        first: t.term.first,
        count: t.term.count,
        rows: t.rows.len(),
        coupled: t.term.coupled,
        row_offset: t.row_offset,
        jac_offset,
    }
}

/// A constraint term's `(y, J)`: kept rows and their dense Jacobian over `w`, and the
/// Jacobian's structural pattern.
fn dense_constraint_blocks(
    name: &str,
    problem: &MultistageProblem,
    t: &StageTerm,
) -> Result<(NumericalFunction, SparsityPattern)> {
    let mut pattern = None;
    let f = NumericalFunction::trace(name, stage_args(problem, t.term), |s| -> Result<Vec<Tensor>> {
        let y = stage_value(t.term, problem.nz, &s, Some(&t.rows))?;
        pattern = Some(crate::transform::sparsity::dependency_pattern(y.node()?, s[0].node()?)?);
        let j = derivatives::jacobian(&y, &s[0])?.reshape([t.rows.len(), t.term.width(problem.nz)]);
        Ok(vec![y, j])
    })?;
    Ok((f, pattern.ok_or_else(|| tracing_failed(name))?))
}

/// Which entries of the stages' Hessian blocks a term may make nonzero.
#[derive(Default)]
struct HessianEntries {
    /// `(i, j)` of the block between the two stages of a coupled term (a variable of the
    /// first with one of the second).
    coupling: Vec<(usize, usize)>,
    /// The variables (of a stage) whose diagonal entry it may make nonzero.
    curved: Vec<usize>,
}

/// The dense Hessian over `w` of a cost term, or of `λᵀ y` for a constraint term, and the
/// entries of the stages' blocks it may make nonzero.
fn dense_hessian_blocks(
    name: &str,
    problem: &MultistageProblem,
    t: &StageTerm,
    cost: bool,
) -> Result<(NumericalFunction, HessianEntries)> {
    let mut inputs = stage_args(problem, t.term);
    if !cost {
        inputs.push(Arg::new(t.rows.len()));
    }
    let nz = problem.nz;
    let mut entries = HessianEntries::default();
    let f = NumericalFunction::trace(name, inputs, |s| -> Result<Tensor> {
        let y = stage_value(t.term, nz, &s, Some(&t.rows))?;
        let scalar = if cost { y.sum() } else { (&s[3] * &y).sum() };
        let g = derivatives::gradient(&scalar, &s[0])?;
        let pattern = crate::transform::sparsity::dependency_pattern(g.node()?, s[0].node()?)?;
        if t.term.coupled {
            entries.coupling =
                (0..nz).flat_map(|i| pattern.row(i).iter().filter(|&&j| j >= nz).map(move |&j| (i, j - nz))).collect();
        }
        let width = pattern.shape().0;
        entries.curved = (0..width).filter(|&i| pattern.row(i).contains(&i)).map(|i| i % nz).collect();
        derivatives::hessian(&scalar, &s[0])
    })?;
    Ok((f, entries))
}

/// Derives the block-storage functions of a multistage problem.
pub(crate) fn derive_blocks(
    solver: &str,
    problem: &MultistageProblem,
    approximation: HessianApproximation,
) -> Result<StageDerived> {
    let (nz, n) = (problem.nz, problem.n);
    let StageTerms { costs, eqs, ineqs, q_rows } = StageTerms::new(problem);
    let layouts = |terms: &[StageTerm]| -> Vec<TermLayout> {
        let mut jac_offset = 0;
        terms
            .iter()
            .map(|t| {
                let l = term_layout(t, jac_offset);
                jac_offset += t.term.count * t.rows.len() * t.term.width(nz);
                l
            })
            .collect()
    };
    let cost_fns = per_term(solver, "cost", &costs, |n, t| cost_blocks(n, problem, t))?;
    let (eq_fns, eq_patterns): (Vec<_>, Vec<_>) =
        per_term(solver, "eq", &eqs, |n, t| dense_constraint_blocks(n, problem, t))?.into_iter().unzip();
    let (q_fns, q_patterns): (Vec<_>, Vec<_>) =
        per_term(solver, "ineq", &ineqs, |n, t| dense_constraint_blocks(n, problem, t))?.into_iter().unzip();
    let xp = vec![Arg::new(problem.nvars()), Arg::new(problem.np())];
    let evaluate = |s: &Symbols, derivatives: bool| -> Result<Vec<Tensor>> {
        let (f, grad) = summed_costs(&costs, &cost_fns, s, nz)?;
        let mut out = vec![f];
        if derivatives {
            out.push(grad.assemble_row(problem.nvars()));
        }
        for (terms, fns) in [(&eqs, &eq_fns), (&ineqs, &q_fns)] {
            let (mut values, mut jacobians) = (Vec::new(), Vec::new());
            for (t, tf) in terms.iter().zip(fns) {
                let blocks = per_stage(tf, t.term, s, nz, None)?;
                values.push(blocks[0].flatten());
                jacobians.push(blocks[1].flatten());
            }
            out.push(stacked(values));
            if derivatives {
                out.push(stacked(jacobians));
            }
        }
        Ok(out)
    };
    let (values, linearize) = trace_values_and_linearize(solver, problem, &evaluate)?;

    let exact = approximation == HessianApproximation::Exact;
    let mut blocks: Vec<(&StageTerm, NumericalFunction, bool, Option<usize>)> = Vec::new();
    let (mut coupling, mut curved) = (Vec::new(), vec![false; nz]);
    let mut add = |entries: HessianEntries| {
        let couples = !entries.coupling.is_empty();
        coupling.extend(entries.coupling);
        entries.curved.into_iter().for_each(|j| curved[j] = true);
        couples
    };
    let hess_cost = per_term(solver, "cost_hess", &costs, |n, t| dense_hessian_blocks(n, problem, t, true))?;
    for (t, (f, entries)) in costs.iter().zip(hess_cost) {
        blocks.push((t, f, add(entries), None));
    }
    if exact {
        for (k, (kind, terms)) in [("eq_hess", &eqs), ("ineq_hess", &ineqs)].into_iter().enumerate() {
            let hess = per_term(solver, kind, terms, |n, t| dense_hessian_blocks(n, problem, t, false))?;
            for (t, (f, entries)) in terms.iter().zip(hess) {
                blocks.push((t, f, add(entries), Some(2 + k)));
            }
        }
    }
    let coupled_hessian = blocks.iter().any(|b| b.2);
    let coupling = SparsityPattern::new(nz, nz, coupling).ok_or_else(|| tracing_failed(solver))?;
    let (eq_layouts, q_layouts) = (layouts(&eqs), layouts(&ineqs));
    let mut inputs = xp;
    inputs.extend([Arg::new(problem.neq()), Arg::new(q_rows.len())]);
    let hessian = NumericalFunction::trace(&derived_name(solver, "hessian"), inputs, |s| -> Result<Vec<Tensor>> {
        let symbols = Symbols::new(problem, &s[0], &s[1]);
        let mut diag = Tensor::zeros([n + 1, nz, nz]);
        let mut off = Tensor::zeros([n, nz, nz]);
        for (t, f, couples, lam) in &blocks {
            let lam = lam.map(|input| {
                let (a, m) = (t.row_offset, t.rows.len());
                s[input].shrink(&[(a, a + t.term.count * m)]).reshape([t.term.count, m])
            });
            let h = per_stage(f, t.term, &symbols, nz, lam)?.remove(0);
            let (a, c) = (t.term.first, t.term.count);
            let sub = |r: usize, col: usize| h.shrink(&[(0, c), (r, r + nz), (col, col + nz)]);
            let place = |block: Tensor, at: usize, stages: usize| block.pad(&[(at, stages - at - c), (0, 0), (0, 0)]);
            diag = diag + place(sub(0, 0), a, n + 1);
            if t.term.coupled {
                diag = diag + place(sub(nz, nz), a + 1, n + 1);
                if *couples {
                    off = off + place(sub(0, nz), a, n);
                }
            }
        }
        Ok(vec![diag, off])
    })?;
    let mut calls: Vec<StageCall> = Vec::new();
    for (t, f) in costs.iter().zip(cost_fns) {
        calls.push(StageCall::new(f, StageRole::Cost, term_layout(t, 0)));
    }
    for (role, fns, ls) in [(StageRole::Eq, eq_fns, &eq_layouts), (StageRole::Ineq, q_fns, &q_layouts)] {
        calls.extend(fns.into_iter().zip(ls).map(|(f, l)| StageCall::new(f, role, l.clone())));
    }
    for (t, f, couples, lam) in blocks {
        let lambda = lam.map(|input| if input == 2 { StageMultipliers::Eq } else { StageMultipliers::Ineq });
        let role = StageRole::Hessian { lambda, couples };
        calls.push(StageCall::new(f, role, term_layout(t, 0)));
    }
    // The values alone, for trial points.
    let cost_values = per_term(solver, "cost_value", &costs, |n, t| values_only(n, problem, t, true))?;
    for (t, f) in costs.iter().zip(cost_values) {
        calls.push(StageCall::new(f, StageRole::CostValue, term_layout(t, 0)));
    }
    let constraint_values =
        [(StageRole::EqValue, "eq_value", &eqs, &eq_layouts), (StageRole::IneqValue, "ineq_value", &ineqs, &q_layouts)];
    for (role, kind, terms, ls) in constraint_values {
        let fns = per_term(solver, kind, terms, |n, t| values_only(n, problem, t, false))?;
        calls.extend(fns.into_iter().zip(ls).map(|(f, l)| StageCall::new(f, role, l.clone())));
    }
    let dynamics =
        problem.explicit_dynamics().filter(|_| !coupled_hessian).map(|StateControl { nx, nu }| Dynamics { nx, nu });
    Ok(StageDerived {
        values,
        linearize,
        hessian,
        calls,
        eq: eq_layouts,
        q: q_layouts,
        q_rows,
        coupled_hessian,
        eq_patterns,
        q_patterns,
        coupling,
        curved,
        dynamics,
    })
}

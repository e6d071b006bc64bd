//! Decision variables shared by every stage of a multistage problem (a free final time, a
//! design parameter): lowered to a copy in each stage, tied by interstage equalities, so that
//! every structured backend eliminates them stage by stage as it eliminates the states; and
//! the generated wrapper that keeps the user's layout `[z_0, …, z_N, s]` outside.
//!
//! A problem with `ns` shared variables `s` is solved as the problem over `z̃_i = (z_i, s_i)`
//! with the rows `s_{i+1} − s_i = 0` appended to each interstage block. The copies keep the
//! derivative matrices block-banded (a column of `s` in every stage would not), at the price
//! of `ns` variables and rows per stage. Bounds on `s` hold at the first copy (at every copy
//! when the horizon is a named constant, whose tables cannot differ by stage); the
//! multipliers of `s`'s bounds are the sum of its copies' (each copy's bound enters the
//! stationarity of `s`).

use super::codegen;
use super::multistage::{MultistageProblem, Term};
use crate::dtype::DType;
use crate::error::Result;
use crate::function::{derived_name, Arg, NumericalFunction};
use crate::render::ItemSource;
use crate::tensor::Tensor;
use minijinja::context;

/// The shared variables of a problem: their count and bounds.
#[derive(Clone, Debug)]
pub(crate) struct Shared {
    pub count: usize,
    pub lb: Vec<f64>,
    pub ub: Vec<f64>,
}

/// `term` of `(z, [z_next,] s, p_global, p_i)` as a term of the lifted stage variables
/// `(z̃, [z̃_next,] p_global, p_i)`, `z̃ = (z, s)`; a coupled term gains the rows
/// `s_next − s` after its own.
pub(crate) fn lift_term(term: &Term, nz: usize, ns: usize, params: [usize; 2]) -> Result<Term> {
    let width = nz + ns;
    let f = &term.f;
    let coupled = term.coupled;
    let f = NumericalFunction::trace(&derived_name(f.name(), "lifted"), lifted_inputs(width, coupled, params), |a| {
        let own = |z: &Tensor| z.shrink(&[(0, nz)]);
        let copy = |z: &Tensor| z.shrink(&[(nz, width)]);
        let mut args = vec![own(&a[0])];
        if coupled {
            args.push(own(&a[1]));
        }
        args.push(copy(&a[0]));
        args.extend(a[a.len() - 2..].iter().cloned());
        let out = f.apply(&args)?.remove(0);
        if !coupled {
            return Ok(out);
        }
        Ok(Tensor::cat(&[out.cast(DType::F64).flatten(), copy(&a[1]) - copy(&a[0])], 0))
    })?;
    let rows = term.rows + if coupled { ns } else { 0 };
    Ok(Term { f, first: term.first, count: term.count, coupled, rows })
}

/// The interstage term of a problem that has none: the copies' rows `s_next − s` alone.
pub(crate) fn copies_term(name: &str, nz: usize, ns: usize, params: [usize; 2], steps: usize) -> Result<Term> {
    let width = nz + ns;
    let f = NumericalFunction::trace(&derived_name(name, "shared_copies"), lifted_inputs(width, true, params), |a| {
        Ok::<_, crate::error::Error>(a[1].shrink(&[(nz, width)]) - a[0].shrink(&[(nz, width)]))
    })?;
    Ok(Term { f, first: 0, count: steps, coupled: true, rows: ns })
}

fn lifted_inputs(width: usize, coupled: bool, [global, stage]: [usize; 2]) -> Vec<Arg> {
    let mut inputs = vec![Arg::new(width)];
    if coupled {
        inputs.push(Arg::new(width));
    }
    inputs.extend([Arg::new(global), Arg::new(stage)]);
    inputs
}

/// The lifted stages' bounds `(lb, ub)`: each stage's `z` bounds (`nz` entries, or every
/// stage's) followed by the shared variables'. With `stages` (the count, when the horizon is
/// a number) and any finite bound on `s`, both are every stage's and `s`'s bounds hold at the
/// first copy only (±∞ at the others): one barrier or one active set entry per bound, as the
/// problem has, rather than one per copy. Otherwise (a named horizon) `s`'s bounds hold at
/// every copy.
pub(crate) fn lift_bounds(
    [z_lb, z_ub]: [&[f64]; 2],
    nz: usize,
    s: &Shared,
    stages: Option<usize>,
) -> (Vec<f64>, Vec<f64>) {
    let bounded = s.lb.iter().chain(&s.ub).any(|v| v.abs() < super::problem::INFINITE_BOUND);
    let stages = stages.filter(|_| bounded);
    let lift = |z: &[f64], s: &[f64], none: f64| -> Vec<f64> {
        let Some(stages) = stages else {
            return z.chunks(nz).flat_map(|stage| stage.iter().chain(s)).copied().collect();
        };
        let free = vec![none; s.len()];
        let by_stage = z.iter().copied().cycle().take(stages * nz).collect::<Vec<f64>>();
        let copy = |i: usize| if i == 0 { s } else { &free[..] };
        by_stage.chunks(nz).enumerate().flat_map(|(i, stage)| stage.iter().chain(copy(i))).copied().collect()
    };
    (lift(z_lb, &s.lb, f64::NEG_INFINITY), lift(z_ub, &s.ub, f64::INFINITY))
}

/// How the user's layout maps onto the lifted problem's, for the generated wrapper.
#[derive(Clone, Debug)]
pub(crate) struct SharedLayout {
    /// Stages `N + 1`, variables per stage and shared variables.
    pub stages: usize,
    pub nz: usize,
    pub ns: usize,
    /// Equality rows before the interstage blocks (the initial stage's), rows of each
    /// interstage block in the user's problem.
    pub head_rows: usize,
    pub interstage_rows: usize,
    /// The lifted problem's variables and equality rows.
    pub lifted_nx: usize,
    pub lifted_neq: usize,
}

impl SharedLayout {
    /// The layout of `problem`, whose lifted problem is `lifted`.
    pub(crate) fn of(problem: &MultistageProblem, lifted: &MultistageProblem) -> Option<Self> {
        let shared = problem.shared.as_ref()?;
        Some(SharedLayout {
            lifted_nx: lifted.nvars(),
            lifted_neq: lifted.neq(),
            stages: problem.n + 1,
            nz: problem.nz,
            ns: shared.count,
            head_rows: problem.initial_eq_rows(),
            interstage_rows: problem.interstage_rows(),
        })
    }

    /// The lifted solver's sizes `[nx, neq, nineq, np]` of a solver whose are `dims`.
    fn lifted_dims(&self, [_, _, nineq, np]: [usize; 4]) -> [usize; 4] {
        [self.lifted_nx, self.lifted_neq, nineq, np]
    }

    /// The generated solver of the lifted problem, `inner` (rendered in the namespace
    /// `<name>::lifted`), behind the user's interface in namespace `name`.
    fn wrap(&self, name: &str, inner: ItemSource, dims: [usize; 4]) -> ItemSource {
        let [nx, neq, nineq, np] = dims;
        let ctx = context! {
            name, nx, neq, nineq, np,
            stages => self.stages, nz => self.nz, ns => self.ns,
            head_rows => self.head_rows, interstage_rows => self.interstage_rows,
        };
        ItemSource {
            header: format!("{}\n{}", inner.header, codegen::render("shared_header.j2", ctx.clone())),
            source: format!("{}\n{}", inner.source, codegen::render("shared_source.j2", ctx)),
        }
    }
}

/// A solver's source: `render_as(name, dims)` itself, or with shared variables the lifted
/// solver (rendered in `<name>::lifted` with the lifted sizes) behind the wrapper.
pub(crate) fn render_solver(
    shared: Option<&SharedLayout>,
    name: &str,
    dims: [usize; 4],
    render_as: impl Fn(&str, [usize; 4]) -> ItemSource,
) -> ItemSource {
    let Some(shared) = shared else { return render_as(name, dims) };
    let inner = render_as(&format!("{name}::lifted"), shared.lifted_dims(dims));
    shared.wrap(name, inner, dims)
}

//! [`Form::Grid`](super::Form::Grid): a kernel's loop nest run by a grid of threads together
//! (a GPU's), decided at the top level of the nest:
//!
//! - a loop whose iterations store at indices of its variable (so apart), add into no element
//!   and fold into no accumulator outside them spreads its iterations over the threads
//!   ([`Hint::Grid`]); a short one holding one such loop spreads the inner one instead (a few
//!   long rows);
//! - a thread's own values (temporaries, accumulators, loops folding into them) are computed
//!   by every thread;
//! - what writes shared memory otherwise (scalar stores, scatter-adds, zeroing, calls) runs on
//!   the first thread alone ([`Stmt::OnThreads`]).
//!
//! A kernel where every thread would run a loop whole is worth one thread, so that it runs
//! once; else as many as its most spread iterations. One long reduction to few values is split
//! over many threads instead ([`split_reductions`]).
//!
//! A batched function whose work per item is mostly long reductions runs each item on a warp
//! ([`warp_per_item`]): the lanes deal out each such reduction's iterations and combine their
//! partials by shuffles, and run the rest of the program alike, each on its own copy.

use super::{statements, Extent, Hint, Nest, Operand, Stmt, Value};
use crate::dtype::DType;
use crate::lower::kernel::ExprId;

/// Loops spread over a grid's threads unless they run fewer iterations than this and hold
/// one loop that can be spread instead.
const SPREAD_MIN: usize = 1024;

/// What a top-level statement is to the grid's threads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    /// Its iterations spread over the threads (the count).
    Spread(usize),
    /// Every thread runs it, and spreads its one inner loop's iterations (the count).
    SpreadInner(usize),
    /// Every thread computes it (its own values).
    EveryThread,
    /// Every thread runs the loop whole (folding into its own accumulators).
    Whole,
    /// The first thread alone runs it.
    FirstThread,
}

/// The nest `body` (of [`Form::Loops`](super::Form::Loops)) for a grid, and how many threads
/// it is worth.
pub(super) fn spread(body: Vec<Stmt>) -> (Vec<Stmt>, usize) {
    let roles: Vec<Role> = body.iter().map(role).collect();
    let threads = if roles.contains(&Role::Whole) {
        1
    } else {
        roles
            .iter()
            .map(|r| match r {
                Role::Spread(n) | Role::SpreadInner(n) => *n,
                _ => 1,
            })
            .max()
            .unwrap_or(1)
    };
    (body.into_iter().map(placed).collect(), threads)
}

/// `statement` as its role places it.
fn placed(statement: Stmt) -> Stmt {
    match (role(&statement), statement) {
        (Role::Spread(_), Stmt::Loop { var, extent, body, .. }) => Stmt::Loop { var, extent, hint: Hint::Grid, body },
        (Role::SpreadInner(_), Stmt::Loop { var, extent, hint, body }) => {
            Stmt::Loop { var, extent, hint, body: body.into_iter().map(placed).collect() }
        }
        (Role::FirstThread, statement) => Stmt::OnThreads(1, vec![statement]),
        (_, statement) => statement,
    }
}

fn role(statement: &Stmt) -> Role {
    match statement {
        Stmt::Let { .. }
        | Stmt::CheckFar(_)
        | Stmt::Accumulator { .. }
        | Stmt::LocalArray { .. }
        | Stmt::Accumulate { .. } => Role::EveryThread,
        &Stmt::Loop { var, extent: Extent::Range(lo, hi), ref body, .. } if independent(var, body) => {
            let count = (hi - lo).max(0) as usize;
            match body.as_slice() {
                [inner @ Stmt::Loop { .. }] if count < SPREAD_MIN => match role(inner) {
                    Role::Spread(n) | Role::SpreadInner(n) => Role::SpreadInner(n),
                    _ => Role::Spread(count),
                },
                _ => Role::Spread(count),
            }
        }
        Stmt::Loop { body, .. } if only_thread_state(body) => Role::Whole,
        _ => Role::FirstThread,
    }
}

/// Whether the iterations of a loop over `var` with this body may run on different threads.
fn independent(var: usize, body: &[Stmt]) -> bool {
    let mut declared = Vec::new();
    body.iter().all(|s| iteration_local(var, s, &mut declared))
}

fn iteration_local(var: usize, statement: &Stmt, declared: &mut Vec<usize>) -> bool {
    match statement {
        Stmt::Stores(stores) => stores.iter().all(|(_, index, _)| {
            let mut vars = Vec::new();
            index.vars(&mut vars);
            vars.contains(&var)
        }),
        Stmt::ScatterAdd { .. } | Stmt::Zero { .. } | Stmt::OnThreads(..) | Stmt::StorePartial { .. } => false,
        &Stmt::Accumulator { id, .. } | &Stmt::LocalArray { id, .. } => {
            declared.push(id);
            true
        }
        Stmt::Accumulate { acc, .. } => match *acc {
            Operand::Temp(e) | Operand::Element { array: e, .. } => declared.contains(&e),
            Operand::Literal(..) => false,
        },
        Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } => {
            body.iter().all(|s| iteration_local(var, s, declared))
        }
        _ => true,
    }
}

/// Whether a loop with this body only computes a thread's own values (no stores, calls).
fn only_thread_state(body: &[Stmt]) -> bool {
    body.iter().all(|s| match s {
        Stmt::Stores(_)
        | Stmt::ScatterAdd { .. }
        | Stmt::Zero { .. }
        | Stmt::Call(_)
        | Stmt::OnThreads(..)
        | Stmt::StorePartial { .. } => false,
        Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } => only_thread_state(body),
        _ => true,
    })
}

/// How many partials a split reduction leaves: one per warp of the `LANES * WARP` threads
/// that share it, each thread folding every `LANES * WARP`-th element.
pub const LANES: usize = 4096;

/// The fewest elements of a reduction loop worth splitting over [`LANES`] threads.
const SPLIT_MIN: usize = 4 * LANES;

/// `nest` (of [`Form::Grid`](super::Form::Grid)) as the launches it takes: a kernel whose
/// every thread would run one long reduction loop whole (a sum of many elements into few
/// values) as two, `LANES * WARP` threads folding every `LANES * WARP`-th element each and
/// each warp combining its lanes' into a partial, then a warp combining the [`LANES`]
/// partials (each lane every 32nd, then the lanes') and going on; any other, as itself.
pub fn split_reductions(nest: Nest) -> Vec<Nest> {
    let Some(split) = Split::of(&nest.body, SPLIT_MIN) else { return vec![nest] };
    let partial_bytes = 8 * LANES * split.accumulators.len();
    let (pre, rest) = nest.body.split_at(split.at);
    let (whole, post) = (&rest[0], &rest[1..]);
    let Stmt::Loop { var, extent, body, .. } = whole else { unreachable!("Split::of found a loop") };
    let threads = LANES * WARP;
    let mut partial = pre.to_vec();
    partial.push(Stmt::Loop { var: *var, extent: *extent, hint: Hint::Lanes(threads), body: body.clone() });
    partial.extend(split.accumulators.iter().map(|&(acc, dtype, op)| Stmt::CombineWarp { acc, op, dtype }));
    for (slot, &(acc, dtype, _)) in split.accumulators.iter().enumerate() {
        partial.push(Stmt::StorePartial { acc, dtype, slot });
    }
    let mut combine: Vec<Stmt> = split
        .accumulators
        .iter()
        .enumerate()
        .flat_map(|(slot, &(acc, dtype, op))| {
            [Stmt::CombinePartials { acc, op, dtype, slot, lanes: LANES }, Stmt::CombineWarp { acc, op, dtype }]
        })
        .collect();
    combine.extend(post.iter().cloned());
    let launch = |body: Vec<Stmt>, threads: usize, exact_threads: bool| Nest {
        body,
        threads,
        exact_threads,
        partial_bytes,
        parts: nest.parts.clone(),
        outputs: nest.outputs.clone(),
        inputs: nest.inputs.clone(),
        ..nest
    };
    vec![launch(vec![Stmt::OnThreads(threads, partial)], threads, true), launch(combine, 1, false)]
}

/// The threads of a warp.
pub const WARP: usize = 32;

/// The fewest iterations of a reduction loop worth dealing over a warp's lanes.
const WARP_SPLIT_MIN: usize = 256;

/// The kernels' nests (of [`Form::Loops`](super::Form::Loops), one item's program) run by a
/// warp per item, if the reductions that can be dealt over its lanes are at least half the
/// item's work; else `None` (a thread per item serves better). A kernel with such a
/// reduction becomes [`Form::Warp`](super::Form::Warp) (see [`split_over_warp`]); the others
/// stay as they are, every lane running them whole on its own copy of their results.
pub fn warp_per_item(nests: &[Nest]) -> Option<Vec<Nest>> {
    // The lanes write the same bits to the same places, which only plain stores may do: an
    // update of memory (a scatter-add) would be made by each lane in turn.
    let updates = |body: &[Stmt]| !only_plain_stores(body);
    if nests.iter().any(|n| updates(&n.body) || n.parts.iter().any(|p| updates(&p.body))) {
        return None;
    }
    let split: Vec<Option<Nest>> = nests.iter().map(split_over_warp).collect();
    let dealt: usize = nests.iter().zip(&split).filter(|(_, s)| s.is_some()).map(|(n, _)| statements(&n.body)).sum();
    let all: usize = nests.iter().map(|n| statements(&n.body)).sum();
    if dealt == 0 || 2 * dealt < all {
        return None;
    }
    Some(nests.iter().zip(split).map(|(nest, split)| split.unwrap_or_else(|| nest.clone())).collect())
}

/// `nest` (of [`Form::Loops`](super::Form::Loops)) as [`Form::Warp`](super::Form::Warp): each
/// long reduction loop dealt over the lanes (lane `l` folds iterations `lo + l`, `lo + l + 32`,
/// ...), then the accumulators it folds combined across them by shuffles; `None` if it has no
/// such loop. Every lane runs the rest alike (loop bounds are constants), so such loops may
/// sit in others. A loop folding into an array, or a type shuffles do not carry, stays whole.
pub fn split_over_warp(nest: &Nest) -> Option<Nest> {
    let (body, dealt) = deal(&nest.body);
    dealt.then(|| Nest { form: super::Form::Warp, body, ..nest.clone() })
}

/// `body` with its long reduction loops, at any depth, dealt over a warp's lanes; and whether
/// there was one.
fn deal(body: &[Stmt]) -> (Vec<Stmt>, bool) {
    let mut out = Vec::with_capacity(body.len());
    let mut dealt = false;
    for statement in body {
        if let Some(combine) = dealt_combine(statement, body) {
            let Stmt::Loop { var, extent, body: inner, .. } = statement.clone() else { unreachable!("a loop") };
            out.push(Stmt::Loop { var, extent, hint: Hint::Lanes(WARP), body: inner });
            out.extend(combine);
            dealt = true;
            continue;
        }
        match statement.clone() {
            Stmt::Loop { var, extent, hint, body: inner } => {
                let (inner, any) = deal(&inner);
                out.push(Stmt::Loop { var, extent, hint, body: inner });
                dealt |= any;
            }
            Stmt::Fixed { var, value, body: inner } => {
                let (inner, any) = deal(&inner);
                out.push(Stmt::Fixed { var, value, body: inner });
                dealt |= any;
            }
            statement => out.push(statement),
        }
    }
    (out, dealt)
}

/// If `statement` (in `body`) is a long reduction loop a warp's lanes can deal, the
/// combining of its accumulators that follows it.
fn dealt_combine(statement: &Stmt, body: &[Stmt]) -> Option<Vec<Stmt>> {
    match statement {
        Stmt::Loop { extent: Extent::Range(lo, hi), body: inner, .. }
            if (hi - lo).max(0) as usize >= WARP_SPLIT_MIN && role(statement) == Role::Whole =>
        {
            folded_scalars(inner, body)
        }
        _ => None,
    }
}

/// The combining of each accumulator that `loop_body` folds into, if all are scalars that
/// `top` (the body holding the loop) declares and shuffles carry.
fn folded_scalars(loop_body: &[Stmt], top: &[Stmt]) -> Option<Vec<Stmt>> {
    let (mut accs, mut own) = (Vec::new(), Vec::new());
    folds(loop_body, &mut accs, &mut own)?;
    accs.retain(|acc| !own.contains(acc));
    accs.sort_unstable();
    accs.dedup();
    let shuffled = |dtype| matches!(dtype, DType::F64 | DType::F32 | DType::I64 | DType::I32);
    let combine = |acc: ExprId| {
        top.iter().find_map(|s| match *s {
            Stmt::Accumulator { id, op, dtype } if id == acc && shuffled(dtype) => {
                Some(Stmt::CombineWarp { acc, op, dtype })
            }
            _ => None,
        })
    };
    accs.into_iter().map(combine).collect()
}

/// Collects the scalar accumulators `body` folds into, and those it declares itself; `None`
/// if it folds into an array.
fn folds(body: &[Stmt], out: &mut Vec<ExprId>, own: &mut Vec<ExprId>) -> Option<()> {
    for statement in body {
        match statement {
            Stmt::Accumulate { acc: Operand::Temp(id), .. } => out.push(*id),
            Stmt::Accumulate { .. } => return None,
            Stmt::Accumulator { id, .. } => own.push(*id),
            Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } => folds(body, out, own)?,
            _ => {}
        }
    }
    Some(())
}

/// Whether `body` writes memory by plain stores only (no scatter-add, clearing or partials).
fn only_plain_stores(body: &[Stmt]) -> bool {
    body.iter().all(|s| match s {
        Stmt::ScatterAdd { .. } | Stmt::Zero { .. } | Stmt::StorePartial { .. } => false,
        Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } | Stmt::OnThreads(_, body) => {
            only_plain_stores(body)
        }
        _ => true,
    })
}

/// Where a nest's one long reduction loop is, and the accumulators it folds.
struct Split {
    at: usize,
    /// Each accumulator's id, type and op.
    accumulators: Vec<(ExprId, crate::dtype::DType, crate::graph::ReduceOp)>,
}

impl Split {
    /// The split of `body`: before its one loop run whole, only temporaries and that loop's
    /// accumulators; after it, nothing reading those temporaries (the launch that goes on
    /// does not compute them).
    fn of(body: &[Stmt], min: usize) -> Option<Split> {
        let wholes: Vec<usize> = (0..body.len()).filter(|&i| role(&body[i]) == Role::Whole).collect();
        let &[at] = wholes.as_slice() else { return None };
        let Stmt::Loop { extent: Extent::Range(lo, hi), .. } = body[at] else { return None };
        if ((hi - lo).max(0) as usize) < min {
            return None;
        }
        let mut accumulators = Vec::new();
        let mut temps = Vec::new();
        for statement in &body[..at] {
            match *statement {
                Stmt::Accumulator { id, op, dtype } => accumulators.push((id, dtype, op)),
                Stmt::Let { id, .. } => temps.push(id),
                _ => return None,
            }
        }
        let mut read = Vec::new();
        let post = &body[at + 1..];
        reads(post, &mut read);
        if accumulators.is_empty() || calls(post) || read.iter().any(|t| temps.contains(t)) {
            return None;
        }
        Some(Split { at, accumulators })
    }
}

/// The temporaries `body` reads.
fn reads(body: &[Stmt], out: &mut Vec<ExprId>) {
    let operand = |x: &Operand, out: &mut Vec<ExprId>| {
        if let Operand::Temp(e) | Operand::Element { array: e, .. } = *x {
            out.push(e);
        }
    };
    for statement in body {
        match statement {
            Stmt::Let { value, .. } => match value {
                Value::Gather { index, .. } => operand(index, out),
                Value::Unary(_, x, ..) | Value::Cast(x, ..) => operand(x, out),
                Value::Binary(_, a, b, _) => [a, b].into_iter().for_each(|x| operand(x, out)),
                Value::Where(c, a, b) => [c, a, b].into_iter().for_each(|x| operand(x, out)),
                Value::Load { .. } | Value::InBounds(_) => {}
            },
            Stmt::CheckFar(x) => operand(x, out),
            Stmt::Stores(stores) => stores.iter().for_each(|(_, _, x)| operand(x, out)),
            Stmt::ScatterAdd { index, value, .. } => [index, value].into_iter().for_each(|x| operand(x, out)),
            Stmt::Accumulate { acc, value, .. } => [acc, value].into_iter().for_each(|x| operand(x, out)),
            Stmt::StorePartial { acc, .. } => out.push(*acc),
            Stmt::Loop { body, .. }
            | Stmt::Fixed { body, .. }
            | Stmt::Tiles { body, .. }
            | Stmt::OnThreads(_, body) => reads(body, out),
            Stmt::Call(_)
            | Stmt::Accumulator { .. }
            | Stmt::LocalArray { .. }
            | Stmt::Zero { .. }
            | Stmt::CombinePartials { .. } => {}
            Stmt::CombineWarp { acc, .. } => out.push(*acc),
        }
    }
}

/// Whether `body` calls an outlined part (which may read any temporary it is passed).
fn calls(body: &[Stmt]) -> bool {
    body.iter().any(|s| match s {
        Stmt::Call(_) => true,
        Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } | Stmt::OnThreads(_, body) => {
            calls(body)
        }
        _ => false,
    })
}

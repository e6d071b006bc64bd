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
//!   the first thread alone ([`Stmt::FirstThread`]).
//!
//! A kernel where every thread would run a loop whole is worth one thread, so that it runs
//! once; else as many as its most spread iterations ([`spread`]'s count).

use super::{Extent, Hint, Operand, Stmt};

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
        (Role::FirstThread, statement) => Stmt::FirstThread(vec![statement]),
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
        Stmt::ScatterAdd { .. } | Stmt::Zero { .. } | Stmt::FirstThread(_) => false,
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
        Stmt::Stores(_) | Stmt::ScatterAdd { .. } | Stmt::Zero { .. } | Stmt::Call(_) | Stmt::FirstThread(_) => false,
        Stmt::Loop { body, .. } | Stmt::Fixed { body, .. } | Stmt::Tiles { body, .. } => only_thread_state(body),
        _ => true,
    })
}

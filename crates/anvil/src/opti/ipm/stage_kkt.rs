//! The structure of a multistage problem's KKT matrix by stages (`stage_ldl.hpp`): which rows
//! each stage owns, and which entries of the usual stage's front may be nonzero, for which
//! the generated module compiles that front's factorisation (`compiled_front.hpp`).
//!
//! Stage `k` owns its variables `z_k` and the rows of its stage terms and of the coupled
//! terms that lead to it (the dynamics that define `z_k`), in the order of the terms,
//! equalities first. Its front holds its variables, its rows, then its link: the previous
//! stage's variables.

use crate::opti::stagewise::{StageDerived, TermLayout};
use crate::pattern::SparsityPattern;

/// The rows each stage owns (a coupled term's rows are the next stage's).
pub(crate) fn stage_rows(d: &StageDerived, stages: usize) -> Vec<usize> {
    let mut rows = vec![0; stages];
    for t in d.eq.iter().chain(&d.q) {
        for s in 0..t.count {
            rows[t.first + s + usize::from(t.coupled)] += t.rows;
        }
    }
    rows
}

/// The most rows a stage owns.
pub(crate) fn max_stage_rows(d: &StageDerived, stages: usize) -> usize {
    stage_rows(d, stages).into_iter().max().unwrap_or(0)
}

/// The rows most stages own (the more of two as common): the usual stages.
pub(crate) fn usual_stage_rows(d: &StageDerived, stages: usize) -> usize {
    let mut counts: std::collections::BTreeMap<usize, usize> = std::collections::BTreeMap::new();
    for r in stage_rows(d, stages) {
        *counts.entry(r).or_default() += 1;
    }
    counts.into_iter().max_by_key(|&(rows, count)| (count, rows)).map_or(0, |(rows, _)| rows)
}

/// The widest usual front whose factorisation is compiled (`compiled_front.hpp`'s
/// `kMaxSize`: the pattern's fill is computed when the module compiles).
pub(crate) const MAX_COMPILED_FRONT: usize = 64;

/// The front of a usual stage (one that owns the usual rows, after the first) with nothing
/// delayed into it: `size` positions (its `nz` variables, its rows, the previous stage's
/// `nz` variables), the first `pivots` its own; `entries[i * size + j]` (`i ≥ j`) whether
/// entry `(i, j)` may be nonzero once assembled, in any usual stage; `partners[v]`, for a
/// variable without curvature of its own (whose diagonal only the later stages' Schur
/// complement fills, which may be zero), the position of the row that defines it (the
/// `v`-th row of the stage's dynamics: the first coupled equality term), which the
/// reordered elimination takes right after it, as a Riccati recursion does
/// (`compiled_front.hpp`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct UsualFront {
    pub size: usize,
    pub pivots: usize,
    pub entries: Vec<bool>,
    pub partners: Vec<Option<usize>>,
}

/// The usual front of `d`'s KKT matrix by `stages` stages of `nz` variables (none if it is
/// wider than [`MAX_COMPILED_FRONT`]). Its variables' block is taken as dense (the later
/// stages' Schur complement fills it), each row's diagonal as nonzero (the regularisation,
/// or an inequality's barrier term); the rows' entries are their Jacobians' structural
/// nonzeros, and the link's entries with the variables the coupling Hessian's.
pub(crate) fn usual_front(d: &StageDerived, stages: usize, nz: usize) -> Option<UsualFront> {
    let rows = usual_stage_rows(d, stages);
    let (pivots, size) = (nz + rows, 2 * nz + rows);
    if size > MAX_COMPILED_FRONT {
        return None;
    }
    let mut entries = vec![false; size * size];
    let mut set = |i: usize, j: usize| entries[i.max(j) * size + i.min(j)] = true;
    for i in 0..nz {
        for j in 0..=i {
            set(i, j);
        }
    }
    for (r, c) in coupled_entries(&d.coupling) {
        set(pivots + r, c);
    }
    let counts = stage_rows(d, stages);
    for k in (1..stages).filter(|&k| counts[k] == rows) {
        for (p, (t, pattern, r, _)) in owned_rows(d, k).into_iter().enumerate() {
            let row = nz + p;
            set(row, row);
            for &c in pattern.row(r) {
                match (t.coupled, c < nz) {
                    (true, true) => set(pivots + c, row),
                    (true, false) => set(row, c - nz),
                    (false, _) => set(row, c),
                }
            }
        }
    }
    let owned = (1..stages).find(|&k| counts[k] == rows).map(|k| owned_rows(d, k)).unwrap_or_default();
    let partners = (0..pivots)
        .map(|v| {
            if v >= nz || d.curved[v] {
                return None;
            }
            let row = nz + defining_row(&owned, v, nz)?;
            entries[row * size + v].then_some(row)
        })
        .collect();
    Some(UsualFront { size, pivots, entries, partners })
}

/// Among a stage's rows (`owned_rows`), the one that defines its variable `v`: an equality
/// of a coupled term that meets `v` and no other of the stage's own `nz` variables (explicit
/// dynamics `x_{k+1} - F(x_k, u_k)`, a shared variable's copy `s_{k+1} - s_k`), else the
/// `v`-th row of the first coupled equality term (implicit dynamics), if it has that many.
fn defining_row(owned: &[(&TermLayout, &SparsityPattern, usize, bool)], v: usize, nz: usize) -> Option<usize> {
    let explicit = owned
        .iter()
        .position(|&(t, pattern, r, eq)| eq && t.coupled && pattern.row(r).iter().filter(|&&c| c >= nz).eq(&[nz + v]));
    explicit.or_else(|| {
        let first = owned.iter().position(|(t, _, _, eq)| *eq && t.coupled)?;
        (v < owned[first].0.rows).then_some(first + v)
    })
}

/// The entries `(r, c)` of `H_{k-1,k}`: variable `r` of the previous stage with variable `c`.
fn coupled_entries(coupling: &SparsityPattern) -> Vec<(usize, usize)> {
    let (rows, _) = coupling.shape();
    (0..rows).flat_map(|r| coupling.row(r).iter().map(move |&c| (r, c))).collect()
}

/// Stage `k`'s rows in the order it owns them: each its term, the term's Jacobian pattern,
/// its row there and whether it is an equality.
fn owned_rows(d: &StageDerived, k: usize) -> Vec<(&TermLayout, &SparsityPattern, usize, bool)> {
    let eq = d.eq.iter().zip(&d.eq_patterns).map(|(t, p)| (t, p, true));
    let q = d.q.iter().zip(&d.q_patterns).map(|(t, p)| (t, p, false));
    eq.chain(q)
        .filter(|(t, _, _)| {
            let first = t.first + usize::from(t.coupled);
            (first..first + t.count).contains(&k)
        })
        .flat_map(|(t, pattern, is_eq)| (0..t.rows).map(move |r| (t, pattern, r, is_eq)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::opti::settings::HessianApproximation;
    use crate::opti::stagewise::derive_blocks;
    use crate::opti::{ControlProblem, MultistageProblem};
    use crate::{Arg, NumericalFunction, Tensor};

    /// x+ = (p + dt v, v + dt u) with (x, u) = z and the stages' bounds on u: from_dynamics.
    /// Its stage cost is |x|² + u², or u² alone (`state_cost` false: no state has curvature).
    fn double_integrator(n: usize, state_cost: bool) -> MultistageProblem {
        let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
        let f = NumericalFunction::new(
            "sk_di_f",
            |[x, u, _p]| Tensor::stack(&[x.get(0) + x.get(1) * 0.1, x.get(1) + u.get(0) * 0.1], 0),
            xup(),
        )
        .unwrap();
        let weight = if state_cost { 1.0 } else { 0.0 };
        let l = NumericalFunction::new(
            if state_cost { "sk_di_l" } else { "sk_di_lu" },
            move |[x, u, _p]| x.square().sum() * weight + u.square().sum(),
            xup(),
        )
        .unwrap();
        let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap().stage_cost(&l).unwrap();
        MultistageProblem::from_dynamics(&ocp).unwrap()
    }

    /// The lower triangle's entries of `front` that may be nonzero, as (row, column).
    fn nonzeros(front: &UsualFront) -> Vec<(usize, usize)> {
        let n = front.size;
        (0..n).flat_map(|i| (0..=i).map(move |j| (i, j))).filter(|&(i, j)| front.entries[i * n + j]).collect()
    }

    #[test]
    fn the_usual_front_holds_the_jacobians_structural_nonzeros() {
        let problem = double_integrator(5, true);
        let d = derive_blocks("sk_di", &problem, HessianApproximation::Exact).unwrap();
        let front = usual_front(&d, 6, problem.nz).unwrap();
        // Positions: z_k = (p, v, u) 0..3, its dynamics rows 3..5, z_{k-1} 5..8.
        assert_eq!((front.size, front.pivots), (8, 5));
        let variables = (0..3).flat_map(|i| (0..=i).map(move |j| (i, j)));
        // Each row: its state (the identity), its diagonal, and the previous stage's
        // (p, v) for the position's row and (v, u) for the velocity's.
        let rows = [(3, 0), (3, 3), (4, 1), (4, 4), (5, 3), (6, 3), (6, 4), (7, 4)];
        let mut want: Vec<(usize, usize)> = variables.chain(rows).collect();
        want.sort_unstable();
        assert_eq!(nonzeros(&front), want);
        // Every variable has curvature of its own: none is paired with its row.
        assert_eq!(d.curved, [true, true, true]);
        assert_eq!(front.partners, [None; 5]);
    }

    #[test]
    fn states_without_curvature_are_paired_with_the_rows_that_define_them() {
        let problem = double_integrator(5, false);
        let d = derive_blocks("sk_du", &problem, HessianApproximation::Exact).unwrap();
        let front = usual_front(&d, 6, problem.nz).unwrap();
        // p and v: no curvature, each defined by its row of the dynamics (3, 4); u: curved.
        assert_eq!(d.curved, [false, false, true]);
        assert_eq!(front.partners, [Some(3), Some(4), None, None, None]);
    }

    #[test]
    fn a_shared_variables_copy_is_paired_with_the_row_that_copies_it() {
        // A free final time T: p+ = p + T v, v+ = v + T u, cost u². Lifted, each stage is
        // z = (p, v, u, T) with the rows (p+, v+, T+ - T): T's row is the third, not T's
        // index in z, and the dynamics' rows each meet one variable of the next stage.
        let dynamics = NumericalFunction::new(
            "sk_t_f",
            |[z, zn, t, _g, _p]| {
                let next = Tensor::stack(&[z.get(0) + z.get(1) * t.get(0), z.get(1) + z.get(2) * t.get(0)], 0);
                zn.shrink(&[(0, 2)]) - next
            },
            [Arg::new(3), Arg::new(3), Arg::new(1), Arg::new(0), Arg::new(0)],
        )
        .unwrap();
        let cost = NumericalFunction::new(
            "sk_t_l",
            |[z, _t, _g, _p]| z.get(2).square(),
            [Arg::new(3), Arg::new(1), Arg::new(0), Arg::new(0)],
        )
        .unwrap();
        let problem = MultistageProblem::new(4, 3, 0, 0).unwrap().shared(1, 0.1, 10.0).unwrap();
        let problem = problem.cost_stage(&cost).unwrap().eq_interstage(&dynamics).unwrap();
        let lifted = problem.lifted().unwrap().unwrap();
        let d = derive_blocks("sk_t", &lifted, HessianApproximation::Exact).unwrap();
        let front = usual_front(&d, 5, lifted.nz).unwrap();
        assert_eq!(d.curved, [false, false, true, false]);
        // Positions: z = (p, v, u, T) 0..4, the rows (p+, v+, T+ - T) 4..7.
        assert_eq!(front.partners, [Some(4), Some(5), None, Some(6), None, None, None]);
    }

    #[test]
    fn a_hessian_that_couples_stages_reaches_the_link() {
        // The z-form, its velocity row implicit in the controls: v+ = v + dt u u+ couples u_k
        // with u_{k+1} through the row's curvature.
        let stage = || [Arg::new(3), Arg::new(0), Arg::new(0)];
        let dynamics = NumericalFunction::new(
            "sk_z_dyn",
            |[z, zn, _g, _p]| {
                let v = z.get(1) + z.get(2) * zn.get(2) * 0.1;
                zn.shrink(&[(0, 2)]) - Tensor::stack(&[z.get(0) + z.get(1) * 0.1, v], 0)
            },
            [Arg::new(3), Arg::new(3), Arg::new(0), Arg::new(0)],
        )
        .unwrap();
        let cost = NumericalFunction::new("sk_z_l", |[z, _g, _p]| z.square().sum(), stage()).unwrap();
        let problem = MultistageProblem::new(4, 3, 0, 0).unwrap().cost_stage(&cost).unwrap();
        let problem = problem.eq_interstage(&dynamics).unwrap();
        let d = derive_blocks("sk_z", &problem, HessianApproximation::Exact).unwrap();
        assert!(d.coupled_hessian);
        let front = usual_front(&d, 5, problem.nz).unwrap();
        let (n, link) = (front.size, front.pivots);
        assert!(front.entries[(link + 2) * n + 2], "the link's u meets this stage's u");
        assert!((0..3).all(|j| !front.entries[link * n + j]), "the link's p meets no variable of this stage");
        // The velocity row reads this stage's u too.
        assert!(front.entries[4 * n + 2]);
    }
}

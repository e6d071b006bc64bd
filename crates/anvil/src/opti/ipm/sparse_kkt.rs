//! The sparse KKT matrix's structure, decided when a solver is generated: the pattern of
//! `[H + Σ_x, Jᵀ; J, D_y]` from the derivatives' fixed patterns, a minimum-degree ordering
//! (postordered), the permuted upper triangle (CSC), and the multifrontal tree that
//! `sparse_ldl.hpp` factorises: supernodes (fronts), each front's rows, where each value of
//! the matrix is assembled, where each front's update goes in its parent, and the sizes the
//! numeric factorisation may reach with delayed pivots.

use crate::error::{Error, Result};
use crate::pattern::SparsityPattern;
use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

/// The symbolic factorisation of a solver's KKT matrix of size `n = nx + neq + nq`.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct SparseKkt {
    pub n: usize,
    /// `perm[k]`: the original index (x, then equality rows, then inequality rows) at
    /// position `k` of the factorised order.
    pub perm: Vec<usize>,
    /// The permuted matrix's upper triangle, CSC.
    pub a_outer: Vec<usize>,
    pub a_inner: Vec<usize>,
    /// Where each stored value of the Hessian (upper triangle), of the two Jacobians, and of
    /// the two diagonals lands among the permuted upper triangle's values.
    pub hess_dest: Vec<usize>,
    pub jac_eq_dest: Vec<usize>,
    pub jac_q_dest: Vec<usize>,
    pub diag_x_dest: Vec<usize>,
    pub diag_y_dest: Vec<usize>,
    /// The fronts, children before parents.
    pub fronts: Fronts,
}

/// The multifrontal tree of a symmetric matrix (permuted order; fronts in postorder).
///
/// Front `s` eliminates its own columns `cols[s]..cols[s + 1]`; its symbolic front is those
/// columns followed by its `rows` (the later unknowns its columns couple to). Positions in a
/// symbolic front ("local" positions) are what the numeric factorisation maps onto its
/// actual front, which also holds the pivots its children delayed.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Fronts {
    pub cols: Vec<usize>,
    /// The parent front (`-1` at a root).
    pub parent: Vec<i64>,
    /// Front `s`'s rows: `rows[row_start[s]..row_start[s + 1]]`, ascending.
    pub row_start: Vec<usize>,
    pub rows: Vec<usize>,
    /// For each entry of `rows`, its local position in the parent's front.
    pub relative: Vec<usize>,
    /// The matrix's stored values that front `s` assembles, `asm_start[s]..asm_start[s + 1]`:
    /// the value's index and its local (row, column), row ≥ column.
    pub asm_start: Vec<usize>,
    pub asm_src: Vec<usize>,
    pub asm_row: Vec<usize>,
    pub asm_col: Vec<usize>,
    /// Bounds for the numeric factorisation's storage: the largest front (delayed pivots
    /// included), the most delays (an unknown delayed through k fronts counts k times), the
    /// factors' values (and how many of them delays may add), the update stack's values (and
    /// how many delays may add) and indices, and the fronts' unknowns.
    pub max_front: usize,
    pub max_delays: usize,
    pub factor_capacity: usize,
    pub factor_slack: usize,
    pub stack_capacity: usize,
    pub stack_slack: usize,
    pub stack_index_capacity: usize,
    pub unknown_capacity: usize,
    /// Entries of `L` below its diagonal without delays (the symbolic factor's size).
    pub l_nnz: usize,
}

/// Fronts eliminating fewer columns than this merge with their parent when it does too
/// (MA57's default): dense kernels on larger fronts outrun the explicit zeros they add.
const NEMIN: usize = 16;

/// The storage delayed pivots may add to the factors (and half of it to the update stack),
/// in values, unless twice the symbolic sizes are more: a delay that would exceed it is
/// pivoted in place instead (sparse_ldl.hpp).
const DELAY_STORAGE: usize = 1 << 18;

impl SparseKkt {
    /// The structure for the Hessian's upper triangle `hess` (its diagonal stored) and the
    /// Jacobians `jac_eq` and `jac_q` (CSC, as the derived functions store them); `curved[j]`:
    /// whether variable j's diagonal is structurally non-zero (curvature or a barrier term).
    pub fn new(
        hess: &SparsityPattern,
        jac_eq: &SparsityPattern,
        jac_q: &SparsityPattern,
        curved: &[bool],
    ) -> Result<Self> {
        Self::with_nemin(hess, jac_eq, jac_q, curved, NEMIN)
    }

    /// [`SparseKkt::new`] with fronts merged below `nemin` eliminations.
    fn with_nemin(
        hess: &SparsityPattern,
        jac_eq: &SparsityPattern,
        jac_q: &SparsityPattern,
        curved: &[bool],
        nemin: usize,
    ) -> Result<Self> {
        let nx = hess.shape().1;
        let (neq, nq) = (jac_eq.shape().0, jac_q.shape().0);
        let n = nx + neq + nq;
        // Each source value's (row, column) in the original order, upper triangle.
        let upper = |i: usize, j: usize| (i.min(j), i.max(j));
        let hess_at: Vec<(usize, usize)> = hess.csc_entries().iter().map(|&(i, j)| upper(i, j)).collect();
        let jac_at = |p: &SparsityPattern, offset: usize| -> Vec<(usize, usize)> {
            p.csc_entries().iter().map(|&(r, j)| (j, offset + r)).collect()
        };
        let (jac_eq_at, jac_q_at) = (jac_at(jac_eq, nx), jac_at(jac_q, nx + neq));
        let diag_x_at: Vec<(usize, usize)> = (0..nx).map(|j| (j, j)).collect();
        let diag_y_at: Vec<(usize, usize)> = (nx..n).map(|i| (i, i)).collect();
        let all = || hess_at.iter().chain(&jac_eq_at).chain(&jac_q_at).chain(&diag_x_at).chain(&diag_y_at);
        let edges: Vec<(usize, usize)> = all().copied().filter(|(i, j)| i != j).collect();
        // An equality row's diagonal is zero until regularised, and so is a variable's with
        // neither curvature nor bounds: ordering one after a neighbour (whose elimination
        // fills its diagonal in) spares the numeric factorisation a delayed pivot. Where
        // nearly every diagonal is zero (a collocation's coefficients, coupled by a few
        // parameters) that constraint can multiply the fill; the free order is taken when
        // its factorisation costs less than half as much.
        let zero_diagonal: Vec<bool> = (0..n).map(|v| if v < nx { !curved[v] } else { v < nx + neq }).collect();
        let waiting = minimum_degree(n, &edges, &zero_diagonal);
        let free = minimum_degree(n, &edges, &vec![false; n]);
        let cost = |order: &[usize]| {
            let (outer, inner) = upper_csc(&inverse(order), all().copied());
            factorisation_work(&elimination_tree(n, &outer, &inner).1)
        };
        let order = if 2 * cost(&free) < cost(&waiting) { free } else { waiting };
        // Postordering the elimination tree keeps the fill and makes each front's children
        // the last updates on the numeric factorisation's stack.
        let (outer, inner) = upper_csc(&inverse(&order), all().copied());
        let (parent, _) = elimination_tree(n, &outer, &inner);
        let perm: Vec<usize> = postorder(&parent).into_iter().map(|k| order[k]).collect();
        let pinv = inverse(&perm);
        let (a_outer, a_inner) = upper_csc(&pinv, all().copied());
        if a_inner.len() > i32::MAX as usize {
            return Err(too_large(a_inner.len()));
        }
        let dest = |at: &[(usize, usize)]| -> Vec<usize> {
            at.iter()
                .map(|&(i, j)| {
                    let (i, j) = upper(pinv[i], pinv[j]);
                    a_outer[j] + a_inner[a_outer[j]..a_outer[j + 1]].binary_search(&i).expect("every source is stored")
                })
                .collect()
        };
        let fronts = Fronts::new(n, &a_outer, &a_inner, nemin)?;
        Ok(SparseKkt {
            n,
            perm,
            hess_dest: dest(&hess_at),
            jac_eq_dest: dest(&jac_eq_at),
            jac_q_dest: dest(&jac_q_at),
            diag_x_dest: dest(&diag_x_at),
            diag_y_dest: dest(&diag_y_at),
            a_outer,
            a_inner,
            fronts,
        })
    }

    /// Stored entries of the permuted upper triangle.
    pub fn nnz(&self) -> usize {
        self.a_inner.len()
    }
}

fn too_large(entries: usize) -> Error {
    Error::Problem {
        what: "solver",
        name: "KKT matrix".into(),
        message: format!("its factorisation needs {entries} entries, more than the generated code indexes"),
    }
}

/// The inverse of the permutation `order` (`order[k]`: the original index at position k).
fn inverse(order: &[usize]) -> Vec<usize> {
    let mut pinv = vec![0; order.len()];
    for (k, &orig) in order.iter().enumerate() {
        pinv[orig] = k;
    }
    pinv
}

/// The upper triangle, CSC, of the symmetric pattern `entries` (original indices, any
/// triangle) permuted: original index i goes to position `pinv[i]`.
fn upper_csc(pinv: &[usize], entries: impl Iterator<Item = (usize, usize)>) -> (Vec<usize>, Vec<usize>) {
    let n = pinv.len();
    let mut permuted: Vec<(usize, usize)> = entries
        .map(|(i, j)| {
            let (i, j) = (pinv[i], pinv[j]);
            (i.min(j), i.max(j))
        })
        .collect();
    // CSC order: by column, then row.
    permuted.sort_by_key(|&(i, j)| (j, i));
    permuted.dedup();
    let mut outer = vec![0; n + 1];
    for &(_, j) in &permuted {
        outer[j + 1] += 1;
    }
    for j in 0..n {
        outer[j + 1] += outer[j];
    }
    (outer, permuted.into_iter().map(|(i, _)| i).collect())
}

/// A postorder of the forest `parent` (`-1` at roots): `post[k]` is the node at position k;
/// children in increasing order, each subtree contiguous.
fn postorder(parent: &[i64]) -> Vec<usize> {
    let n = parent.len();
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (v, &p) in parent.iter().enumerate() {
        if p >= 0 {
            children[p as usize].push(v);
        }
    }
    let mut post = Vec::with_capacity(n);
    let mut stack: Vec<(usize, usize)> = Vec::new();
    for root in (0..n).filter(|&v| parent[v] < 0) {
        stack.push((root, 0));
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if let Some(&c) = children[v].get(*next) {
                *next += 1;
                stack.push((c, 0));
            } else {
                post.push(v);
                stack.pop();
            }
        }
    }
    post
}

impl Fronts {
    /// The fronts of the upper triangle (`outer`, `inner`) of a postordered matrix: its
    /// fundamental supernodes, a child merged into its parent while both eliminate fewer
    /// than `nemin` columns; and what the numeric factorisation needs of them.
    fn new(n: usize, outer: &[usize], inner: &[usize], nemin: usize) -> Result<Self> {
        let (parent, counts) = elimination_tree(n, outer, inner);
        let l_nnz: usize = counts.iter().sum();
        crate::array::check_alloc(|| format!("the sparse KKT factor ({n} rows)"), l_nnz.max(1), 16)?;
        let structure = column_structure(n, outer, inner, &parent, &counts);
        let cols = amalgamate(&fundamental_supernodes(&parent, &counts), &parent, nemin);
        let fronts = cols.len() - 1;
        let mut front_of = vec![0; n];
        for s in 0..fronts {
            front_of[cols[s]..cols[s + 1]].fill(s);
        }
        let mut row_start = vec![0];
        let mut rows = Vec::new();
        let mut front_parent = Vec::with_capacity(fronts);
        for s in 0..fronts {
            let last = cols[s + 1];
            let mut front_rows: Vec<usize> =
                (cols[s]..last).flat_map(|j| structure[j].iter().copied().filter(|&r| r >= last)).collect();
            front_rows.sort_unstable();
            front_rows.dedup();
            rows.extend(front_rows);
            row_start.push(rows.len());
            let p = parent[last - 1];
            front_parent.push(if p < 0 { -1 } else { front_of[p as usize] as i64 });
        }
        // Where a front's row lands in its parent's front: among the parent's own columns or
        // its rows.
        let local = |s: usize, v: usize| -> usize {
            if v < cols[s + 1] {
                v - cols[s]
            } else {
                let own = cols[s + 1] - cols[s];
                own + rows[row_start[s]..row_start[s + 1]].binary_search(&v).expect("a child's rows are its parent's")
            }
        };
        let mut relative = Vec::with_capacity(rows.len());
        for s in 0..fronts {
            for &r in &rows[row_start[s]..row_start[s + 1]] {
                relative.push(local(front_parent[s] as usize, r));
            }
        }
        // Each stored value is assembled by the front of its column in the lower triangle.
        let mut by_front: Vec<Vec<(usize, usize, usize)>> = vec![Vec::new(); fronts];
        for j in 0..n {
            for (p, &i) in inner.iter().enumerate().take(outer[j + 1]).skip(outer[j]) {
                let s = front_of[i];
                let (row, col) = (local(s, j), local(s, i));
                by_front[s].push((p, row.max(col), row.min(col)));
            }
        }
        let mut asm_start = vec![0];
        let (mut asm_src, mut asm_row, mut asm_col) = (Vec::new(), Vec::new(), Vec::new());
        for entries in by_front {
            for (p, r, c) in entries {
                asm_src.push(p);
                asm_row.push(r);
                asm_col.push(c);
            }
            asm_start.push(asm_src.len());
        }
        let mut fronts = Fronts {
            cols,
            parent: front_parent,
            row_start,
            rows,
            relative,
            asm_start,
            asm_src,
            asm_row,
            asm_col,
            max_front: 0,
            max_delays: 0,
            factor_capacity: 0,
            factor_slack: 0,
            stack_capacity: 0,
            stack_slack: 0,
            stack_index_capacity: 0,
            unknown_capacity: 0,
            l_nnz,
        };
        fronts.size_storage(n)?;
        Ok(fronts)
    }

    fn len(&self) -> usize {
        self.parent.len()
    }
    fn own(&self, s: usize) -> usize {
        self.cols[s + 1] - self.cols[s]
    }
    fn row_count(&self, s: usize) -> usize {
        self.row_start[s + 1] - self.row_start[s]
    }
    /// Front s's size without delayed pivots.
    fn symbolic(&self, s: usize) -> usize {
        self.own(s) + self.row_count(s)
    }

    /// The storage bounds (see the fields): the symbolic sizes and room for delayed pivots.
    fn size_storage(&mut self, n: usize) -> Result<()> {
        let largest = (0..self.len()).map(|s| self.symbolic(s)).max().unwrap_or(0);
        let symbolic_factor: usize = (0..self.len()).map(|s| self.own(s) * self.symbolic(s)).sum();
        // A front may grow by delays to twice its symbolic size (by at least 32), within a
        // working area no larger than the factors' storage: beyond, pivoting the fully summed
        // block in place by Bunch and Kaufman's rule costs less than dense fronts of delays.
        let area = 4 * (symbolic_factor + DELAY_STORAGE);
        let bound = (largest + largest.max(32)).min(largest.max(area.isqrt()));
        self.max_front = bound.min(n).max(1);
        self.max_delays = 8 * n + 64;
        let room = |symbolic: usize, per_unknown: usize| {
            (2 * symbolic).max(DELAY_STORAGE.min(per_unknown * n * self.max_front))
        };
        self.factor_slack = room(symbolic_factor, 4);
        self.factor_capacity = symbolic_factor + self.factor_slack + self.max_front * self.max_front;
        // The update stack at its fullest without delays: children's updates wait on it
        // until their parent is assembled.
        let (mut values, mut indices, mut peak_values, mut peak_indices) = (0usize, 0usize, 0usize, 0usize);
        let mut waiting: Vec<usize> = Vec::new();
        for s in 0..self.len() {
            while let Some(&c) = waiting.last() {
                if self.parent[c] != s as i64 {
                    break;
                }
                let m = self.row_count(c);
                values -= m * (m + 1) / 2;
                indices -= m + 3;
                waiting.pop();
            }
            if self.parent[s] >= 0 {
                let m = self.row_count(s);
                values += m * (m + 1) / 2;
                indices += m + 3;
                waiting.push(s);
            }
            peak_values = peak_values.max(values);
            peak_indices = peak_indices.max(indices);
        }
        self.stack_slack = room(peak_values, 2);
        self.stack_capacity = peak_values + self.stack_slack;
        self.stack_index_capacity = peak_indices + self.max_delays;
        self.unknown_capacity = (0..self.len()).map(|s| self.symbolic(s)).sum::<usize>() + self.max_delays;
        let most = self.factor_capacity.max(self.stack_capacity).max(self.unknown_capacity);
        crate::array::check_alloc(|| format!("the sparse KKT factor ({n} rows)"), most.max(1), 8)?;
        if most > i32::MAX as usize {
            return Err(too_large(most));
        }
        Ok(())
    }
}

/// The first column of each fundamental supernode (and `n`): column j + 1 joins j's when j is
/// its only child and their columns of `L` (`counts`) match.
fn fundamental_supernodes(parent: &[i64], counts: &[usize]) -> Vec<usize> {
    let n = parent.len();
    let mut child_count = vec![0usize; n];
    for &p in parent {
        if p >= 0 {
            child_count[p as usize] += 1;
        }
    }
    let mut cols = vec![0];
    for j in 1..n {
        let merges = parent[j - 1] == j as i64 && child_count[j] == 1 && counts[j - 1] == counts[j] + 1;
        if !merges {
            cols.push(j);
        }
    }
    if n > 0 {
        cols.push(n);
    }
    cols
}

/// Supernodes `cols` merged into their parent (the next one, whose first column is the
/// tree parent of their last) while both eliminate fewer than `nemin` columns.
fn amalgamate(cols: &[usize], parent: &[i64], nemin: usize) -> Vec<usize> {
    let fronts = cols.len().saturating_sub(1);
    let mut merged = vec![0];
    let mut group = 0;
    for s in 0..fronts {
        group += cols[s + 1] - cols[s];
        let next_is_parent = parent[cols[s + 1] - 1] == cols[s + 1] as i64;
        let next_own = if s + 1 < fronts { cols[s + 2] - cols[s + 1] } else { usize::MAX };
        if next_is_parent && group < nemin && next_own < nemin {
            continue;
        }
        merged.push(cols[s + 1]);
        group = 0;
    }
    merged
}

/// Each column's rows in `L` (ascending) of the upper triangle (`outer`, `inner`) with
/// elimination tree `parent` and column counts `counts`: row k of `L` is the set of nodes
/// reached from column k's entries climbing the tree towards k.
fn column_structure(n: usize, outer: &[usize], inner: &[usize], parent: &[i64], counts: &[usize]) -> Vec<Vec<usize>> {
    let mut structure: Vec<Vec<usize>> = counts.iter().map(|&c| Vec::with_capacity(c)).collect();
    let mut flag = vec![usize::MAX; n];
    for k in 0..n {
        flag[k] = k;
        for &row in &inner[outer[k]..outer[k + 1]] {
            let mut i = row;
            while i < k && flag[i] != k {
                structure[i].push(k);
                flag[i] = k;
                i = parent[i] as usize;
            }
        }
    }
    structure
}

/// A minimum-degree elimination order of the graph on `n` nodes with `edges` (each
/// elimination joins the node's neighbours into a clique; ties go to the lower index, so the
/// order is deterministic). A node with a `zero_diagonal` waits until one of its neighbours
/// has been eliminated, which fills its diagonal in, so that the numeric factorisation (which
/// does not pivot) meets no structurally zero pivot; only when nothing else is left (a
/// structurally singular matrix) do waiting nodes go as they are.
fn minimum_degree(n: usize, edges: &[(usize, usize)], zero_diagonal: &[bool]) -> Vec<usize> {
    let mut adjacent: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for &(i, j) in edges {
        adjacent[i].insert(j);
        adjacent[j].insert(i);
    }
    let mut filled: Vec<bool> = zero_diagonal.iter().map(|zero| !zero).collect();
    let mut heap: BinaryHeap<Reverse<(usize, usize)>> = (0..n).map(|v| Reverse((adjacent[v].len(), v))).collect();
    let mut eliminated = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let mut waiting: Vec<usize> = Vec::new();
    while order.len() < n {
        let Some(Reverse((degree, v))) = heap.pop() else {
            if waiting.is_empty() {
                break;
            }
            // Only waiting nodes are left: they go as they are.
            for v in waiting.drain(..) {
                filled[v] = true;
                heap.push(Reverse((adjacent[v].len(), v)));
            }
            continue;
        };
        if eliminated[v] || degree != adjacent[v].len() {
            continue;
        }
        if !filled[v] {
            // A neighbour's elimination pushes it again.
            waiting.push(v);
            continue;
        }
        eliminated[v] = true;
        order.push(v);
        let neighbours: Vec<usize> = std::mem::take(&mut adjacent[v]).into_iter().collect();
        for &u in &neighbours {
            filled[u] = true;
            adjacent[u].remove(&v);
            for &w in &neighbours {
                if w != u {
                    adjacent[u].insert(w);
                }
            }
        }
        for &u in &neighbours {
            heap.push(Reverse((adjacent[u].len(), u)));
        }
    }
    debug_assert_eq!(order.len(), n, "every node is ordered");
    order
}

/// The multiply-adds of a factorisation with `L`'s column `counts`: eliminating a column
/// of `c` entries below the diagonal updates `c (c + 1) / 2` entries of the rest.
fn factorisation_work(counts: &[usize]) -> u128 {
    counts.iter().map(|&c| c as u128 * (c as u128 + 1) / 2).sum()
}

/// The elimination tree and the column counts of `L` of the upper triangle (`outer`,
/// `inner`) (Davis's `ldl_symbolic`).
fn elimination_tree(n: usize, outer: &[usize], inner: &[usize]) -> (Vec<i64>, Vec<usize>) {
    let mut parent = vec![-1i64; n];
    let mut flag = vec![usize::MAX; n];
    let mut counts = vec![0; n];
    for k in 0..n {
        flag[k] = k;
        for &row in &inner[outer[k]..outer[k + 1]] {
            let mut i = row;
            while i < k && flag[i] != k {
                if parent[i] == -1 {
                    parent[i] = k as i64;
                }
                counts[i] += 1;
                flag[i] = k;
                i = parent[i] as usize;
            }
        }
    }
    (parent, counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Dense LDL' of the pattern's matrix with generic values shows every fill entry: each
    /// column's must lie in its front, every value must be assembled once, and each front's
    /// rows must land in its parent's front.
    #[test]
    #[allow(clippy::needless_range_loop)] // the elimination reads best with indices
    fn fronts_cover_the_numeric_fill() {
        // A KKT pattern: a tridiagonal Hessian of 6, two equality rows, one inequality row.
        let hess = SparsityPattern::new(6, 6, (0..6).flat_map(|i| [(i, i), (i, (i + 1).min(5))])).unwrap();
        let jac_eq = SparsityPattern::new(2, 6, [(0, 0), (0, 5), (1, 2), (1, 3)]).unwrap();
        let jac_q = SparsityPattern::new(1, 6, [(0, 1), (0, 4)]).unwrap();
        let kkt = SparseKkt::new(&hess.upper_triangle(), &jac_eq, &jac_q, &[true; 6]).unwrap();
        let (n, f) = (kkt.n, &kkt.fronts);
        assert_eq!(n, 9);
        let mut seen = kkt.perm.clone();
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        for (s, &p) in f.parent.iter().enumerate() {
            assert!(p == -1 || p as usize > s, "children before parents");
        }
        // Numeric fill of a generic symmetric matrix with the pattern (diagonally dominant
        // so that no pivot vanishes).
        let mut a = vec![vec![0.0; n]; n];
        for j in 0..n {
            for p in kkt.a_outer[j]..kkt.a_outer[j + 1] {
                let i = kkt.a_inner[p];
                let v = if i == j { 10.0 + j as f64 } else { 1.0 + 0.1 * (i + j) as f64 };
                a[i][j] = v;
                a[j][i] = v;
            }
        }
        let front_of = |k: usize| f.cols.partition_point(|&c| c <= k) - 1;
        let mut fill = 0;
        for k in 0..n {
            let s = front_of(k);
            let d = a[k][k];
            for i in k + 1..n {
                if a[i][k] != 0.0 {
                    fill += 1;
                    let in_front = i < f.cols[s + 1] || f.rows[f.row_start[s]..f.row_start[s + 1]].contains(&i);
                    assert!(in_front, "L({i}, {k}) lies outside front {s}");
                    let l = a[i][k] / d;
                    for j in k + 1..n {
                        a[i][j] -= l * a[k][j];
                    }
                }
            }
        }
        assert_eq!(fill, f.l_nnz);
        let mut assembled = f.asm_src.clone();
        assembled.sort_unstable();
        assert_eq!(assembled, (0..kkt.nnz()).collect::<Vec<_>>(), "each value assembled once");
        for s in 0..f.parent.len() {
            for q in f.row_start[s]..f.row_start[s + 1] {
                let p = f.parent[s] as usize;
                let size = f.cols[p + 1] - f.cols[p] + f.row_start[p + 1] - f.row_start[p];
                assert!(f.relative[q] < size);
            }
        }
        assert_eq!(kkt.jac_eq_dest.len(), 4);
        assert_eq!(kkt.hess_dest.len(), hess.upper_triangle().nnz());
    }

    /// The hand-written tables of tests/cpp/ipm_headers.cpp are what the generator makes
    /// of fundamental supernodes (without amalgamation, which makes one front of each).
    #[test]
    fn fronts_match_the_header_tests_tables() {
        let arrow = Fronts::new(4, &[0, 1, 2, 3, 7], &[0, 1, 2, 0, 1, 2, 3], 1).unwrap();
        assert_eq!(arrow.cols, [0, 1, 2, 3, 4]);
        assert_eq!(arrow.parent, [3, 3, 3, -1]);
        assert_eq!((arrow.row_start.as_slice(), arrow.rows.as_slice()), (&[0, 1, 2, 3, 3][..], &[3, 3, 3][..]));
        assert_eq!(arrow.relative, [0, 0, 0]);
        assert_eq!(arrow.asm_start, [0, 2, 4, 6, 7]);
        assert_eq!(arrow.asm_src, [0, 3, 1, 4, 2, 5, 6]);
        assert_eq!(arrow.asm_row, [0, 1, 0, 1, 0, 1, 0]);
        assert_eq!(arrow.asm_col, [0; 7]);
        let sizes = |f: &Fronts| {
            [
                f.max_front,
                f.max_delays,
                f.factor_capacity,
                f.factor_slack,
                f.stack_capacity,
                f.stack_slack,
                f.stack_index_capacity,
                f.unknown_capacity,
            ]
        };
        assert_eq!(sizes(&arrow), [4, 96, 87, 64, 35, 32, 108, 103]);
        let pair = Fronts::new(2, &[0, 1, 3], &[0, 0, 1], 1).unwrap();
        assert_eq!((pair.cols.as_slice(), pair.parent.as_slice()), (&[0, 2][..], &[-1][..]));
        assert_eq!((pair.asm_row.as_slice(), pair.asm_col.as_slice()), (&[0, 1, 1][..], &[0, 0, 1][..]));
        assert_eq!(sizes(&pair), [2, 80, 24, 16, 8, 8, 80, 82]);
        let delayed = Fronts::new(3, &[0, 1, 3, 5], &[0, 0, 1, 1, 2], 1).unwrap();
        assert_eq!((delayed.cols.as_slice(), delayed.parent.as_slice()), (&[0, 1, 3][..], &[1, -1][..]));
        assert_eq!((delayed.rows.as_slice(), delayed.relative.as_slice()), (&[1][..], &[0][..]));
        assert_eq!(delayed.asm_start, [0, 2, 5]);
        assert_eq!(
            (delayed.asm_row.as_slice(), delayed.asm_col.as_slice()),
            (&[0, 1, 0, 1, 1][..], &[0, 0, 0, 0, 1][..])
        );
        assert_eq!(sizes(&delayed), [3, 88, 51, 36, 19, 18, 92, 92]);
    }

    #[test]
    fn postorder_keeps_subtrees_contiguous() {
        // 0 -> 2, 1 -> 3, 2 -> 4, 3 -> 4: children in increasing order, each subtree together.
        assert_eq!(postorder(&[2, 3, 4, 4, -1]), [0, 2, 1, 3, 4]);
    }

    /// The multifrontal factorisation agrees with the dense Bunch-Kaufman one (inertia, and
    /// solves to Ipopt's residual) on random KKT matrices: equality rows' zero diagonals,
    /// variables without curvature, a Hessian that is numerically zero (the first iterate of
    /// a problem with linear constraints), rows scaled apart — every pattern needs delayed
    /// pivots, several children per front, or a forest. Compiled with the sanitizers.
    #[test]
    fn sparse_factorisation_agrees_with_the_dense_one_on_random_kkt_matrices() {
        let mut state = 12345u64;
        let mut next = move |m: usize| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as usize) % m
        };
        let mut programs = String::new();
        let mut calls = String::new();
        for case in 0..16 {
            let nx = 4 + next(20);
            let (neq, nq) = (next(nx.min(8) + 1), next(4));
            let mut hess: Vec<(usize, usize)> = (0..nx).filter(|_| next(3) > 0).map(|j| (j, j)).collect();
            for _ in 0..next(2 * nx) {
                let (i, j) = (next(nx), next(nx));
                hess.push((i.min(j), i.max(j)));
            }
            let jac = |rows: usize, next: &mut dyn FnMut(usize) -> usize| {
                let entries: Vec<(usize, usize)> =
                    (0..rows).flat_map(|r| (0..1 + next(4)).map(|_| (r, next(nx))).collect::<Vec<_>>()).collect();
                SparsityPattern::new(rows, nx, entries).unwrap()
            };
            let jac_eq = jac(neq, &mut next);
            let jac_q = jac(nq, &mut next);
            let hess = SparsityPattern::new(nx, nx, hess).unwrap();
            let curved: Vec<bool> = (0..nx).map(|j| hess.csc_entries().contains(&(j, j))).collect();
            // Fundamental supernodes (more fronts, more delays) and merged ones.
            let nemin = if case % 2 == 0 { 1 } else { NEMIN };
            let kkt = SparseKkt::with_nemin(&hess, &jac_eq, &jac_q, &curved, nemin).unwrap();
            programs.push_str(&cpp_case(case, &kkt, nx, neq));
            calls.push_str(&format!("  check_case{case}();\n"));
        }
        let source = format!(
            "{}{programs}int main() {{\n{calls}  std::printf(failures == 0 ? \"ok\\n\" : \"\");\n}}\n",
            CPP_PRELUDE
        );
        let dir = std::env::temp_dir().join(format!("anvil_sparse_ldl_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("check.cpp"), source).unwrap();
        let headers = concat!(env!("CARGO_MANIFEST_DIR"), "/src/opti/ipm");
        let checks = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cpp");
        let out = std::process::Command::new("g++")
            .args(["-std=c++17", "-O1", "-g", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined"])
            .args(["-fno-sanitize-recover=all", "-I", headers, "-I", checks, "check.cpp", "-o", "check"])
            .current_dir(&dir)
            .output()
            .expect("run g++");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let run = std::process::Command::new(dir.join("check")).output().unwrap();
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(run.status.success() && stdout.trim() == "ok", "{stdout}{}", String::from_utf8_lossy(&run.stderr));
        std::fs::remove_dir_all(dir).unwrap();
    }

    const CPP_PRELUDE: &str = "#include \"ipm_check.hpp\"\n";

    /// One random case's C++: its structure and a check over several value sets.
    fn cpp_case(case: usize, kkt: &SparseKkt, nx: usize, neq: usize) -> String {
        let f = &kkt.fronts;
        let j = |v: &[usize]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", ");
        let at_least_one = |v: &[usize]| if v.is_empty() { "0".to_string() } else { j(v) };
        let parent: Vec<String> = f.parent.iter().map(|p| p.to_string()).collect();
        // Per stored value: 0 a coupling, 1 a variable's diagonal, 2 an equality row's, 3 an
        // inequality row's.
        let kind: Vec<usize> = (0..kkt.n)
            .flat_map(|col| {
                (kkt.a_outer[col]..kkt.a_outer[col + 1]).map(move |p| {
                    let (row, orig) = (kkt.a_inner[p], kkt.perm[col]);
                    if row != col {
                        0
                    } else if orig < nx {
                        1
                    } else if orig < nx + neq {
                        2
                    } else {
                        3
                    }
                })
            })
            .collect();
        let rows_len = f.rows.len().max(1);
        format!(
            r#"struct Case{case} {{
  static constexpr int kSize = {n}, kNnz = {nnz}, kFronts = {fronts};
  static constexpr int kPerm[{n}] = {{ {perm} }};
  static constexpr int kOuter[{n1}] = {{ {outer} }};
  static constexpr int kInner[{nnz}] = {{ {inner} }};
  static constexpr int kCols[{fronts} + 1] = {{ {cols} }};
  static constexpr int kParent[{fronts}] = {{ {parent} }};
  static constexpr int kRowStart[{fronts} + 1] = {{ {row_start} }};
  static constexpr int kRows[{rows_len}] = {{ {rows} }};
  static constexpr int kRelative[{rows_len}] = {{ {relative} }};
  static constexpr int kAsmStart[{fronts} + 1] = {{ {asm_start} }};
  static constexpr int kAsmSrc[{nnz}] = {{ {asm_src} }};
  static constexpr int kAsmRow[{nnz}] = {{ {asm_row} }};
  static constexpr int kAsmCol[{nnz}] = {{ {asm_col} }};
  static constexpr int kMaxFront = {max_front}, kMaxDelays = {max_delays};
  static constexpr int kFactorCapacity = {factor}, kStackCapacity = {stack};
  static constexpr int kFactorSlack = {factor_slack}, kStackSlack = {stack_slack};
  static constexpr int kStackIndexCapacity = {stack_index}, kUnknownCapacity = {unknown};
  static constexpr int kKind[{nnz}] = {{ {kind} }};
}};
void check_case{case}() {{
  static anvil_ipm::DenseLdl<{n}> dense;
  static anvil_ipm::SparseLdl<Case{case}> sparse;
  double values[{nnz}];
  for (unsigned trial = 0; trial < 6; ++trial) {{
    unsigned state = 1000u * {case}u + trial;
    for (int p = 0; p < {nnz}; ++p) {{
      const int kind = Case{case}::kKind[p];
      double v = uniform(&state);
      if (kind == 2 || (kind == 1 && trial % 3 == 0)) v = 0.0;  // zero diagonals
      if (kind == 3) v = -std::fabs(v) - 0.1;                   // slacks' -1/sigma
      if (trial == 4) v *= std::pow(10.0, 3.0 * uniform(&state));  // scaled apart
      values[p] = v;
    }}
    char what[32];
    std::snprintf(what, sizeof what, "case {case} trial %u", trial);
    compare_sparse_with_dense(what, values, dense, sparse);
  }}
}}
"#,
            n = kkt.n,
            n1 = kkt.n + 1,
            nnz = kkt.nnz(),
            fronts = f.parent.len(),
            perm = j(&kkt.perm),
            outer = j(&kkt.a_outer),
            inner = j(&kkt.a_inner),
            cols = j(&f.cols),
            parent = parent.join(", "),
            row_start = j(&f.row_start),
            rows = at_least_one(&f.rows),
            relative = at_least_one(&f.relative),
            asm_start = j(&f.asm_start),
            asm_src = j(&f.asm_src),
            asm_row = j(&f.asm_row),
            asm_col = j(&f.asm_col),
            max_front = f.max_front,
            max_delays = f.max_delays,
            factor = f.factor_capacity,
            factor_slack = f.factor_slack,
            stack_slack = f.stack_slack,
            stack = f.stack_capacity,
            stack_index = f.stack_index_capacity,
            unknown = f.unknown_capacity,
            kind = j(&kind),
        )
    }

    #[test]
    fn minimum_degree_eliminates_leaves_of_a_star_first() {
        // A star: the centre (0) has degree 4, the leaves 1; the centre goes last but one
        // (after three leaves its degree is 1).
        let order = minimum_degree(5, &[(0, 1), (0, 2), (0, 3), (0, 4)], &[false; 5]);
        assert_eq!(order[..3], [1, 2, 3]);
    }

    #[test]
    fn equality_rows_wait_until_a_neighbour_fills_their_diagonal() {
        // Variables 0..3 coupled in a triangle, one equality row (3) on variable 0: the row
        // has the least degree, but its zero diagonal cannot be the first pivot; it follows
        // the elimination of variable 0 (its only neighbour), which fills its diagonal in.
        let edges = [(0, 1), (1, 2), (2, 0), (0, 3)];
        let free = minimum_degree(4, &edges, &[false; 4]);
        assert_eq!(free[0], 3);
        let order = minimum_degree(4, &edges, &[false, false, false, true]);
        let position = |v: usize| order.iter().position(|&u| u == v).unwrap();
        assert!(position(0) < position(3), "{order:?}");
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2, 3]);
    }

    #[test]
    fn zero_diagonals_stop_waiting_where_waiting_multiplies_the_work() {
        // A collocation fit in miniature (COPS α-pinene's pattern): on each of m intervals a
        // value v_i and a slope w_i (neither curved nor bounded), the collocation row
        // w_i − θ v_i and the continuity row v_i + h w_i − v_{i+1}; the bounded parameter θ
        // in every collocation row, its product with v_i in the Hessian. Almost every
        // diagonal is zero, and waiting for them to fill in eliminates outwards from the few
        // that are not, the fill growing with each interval.
        let m = 40;
        let (theta, v, w) = (0, |i: usize| 1 + i, |i: usize| 1 + m + i);
        let nx = 1 + 2 * m;
        let hess = SparsityPattern::new(nx, nx, (0..m).map(|i| (theta, v(i)))).unwrap();
        let rows = (0..m)
            .flat_map(|i| [(i, theta), (i, v(i)), (i, w(i))])
            .chain((0..m - 1).flat_map(|i| [(m + i, v(i)), (m + i, w(i)), (m + i, v(i + 1))]));
        let jac_eq = SparsityPattern::new(2 * m - 1, nx, rows).unwrap();
        let jac_q = SparsityPattern::new(0, nx, []).unwrap();
        let curved: Vec<bool> = (0..nx).map(|j| j == theta).collect();
        let kkt = SparseKkt::new(&hess.upper_triangle(), &jac_eq, &jac_q, &curved).unwrap();
        let n = kkt.n;
        // The two orders' work on the same matrix.
        let perm = &kkt.perm;
        let entries: Vec<(usize, usize)> = (0..n)
            .flat_map(|j| kkt.a_inner[kkt.a_outer[j]..kkt.a_outer[j + 1]].iter().map(move |&i| (perm[i], perm[j])))
            .collect();
        let edges: Vec<(usize, usize)> = entries.iter().copied().filter(|(i, j)| i != j).collect();
        let work = |order: &[usize]| {
            let upper = entries.iter().map(|&(i, j)| (i.min(j), i.max(j)));
            let (outer, inner) = upper_csc(&inverse(order), upper);
            factorisation_work(&elimination_tree(n, &outer, &inner).1)
        };
        let zero_diagonal: Vec<bool> = (0..n).map(|k| k >= nx || !curved[k]).collect();
        let (waiting, free) =
            (work(&minimum_degree(n, &edges, &zero_diagonal)), work(&minimum_degree(n, &edges, &vec![false; n])));
        assert!(waiting > 2 * free, "the premise: waiting {waiting}, free {free} multiply-adds");
        let taken = factorisation_work(&elimination_tree(n, &kkt.a_outer, &kkt.a_inner).1);
        assert_eq!(taken, free);
    }

    #[test]
    fn a_structurally_singular_matrix_is_still_ordered_whole() {
        // A linear program's KKT matrix: no diagonal anywhere, so every node waits; they go
        // as they are (the numeric factorisation reports the zero pivots).
        let order = minimum_degree(3, &[(0, 2), (1, 2)], &[true; 3]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2]);
    }
}

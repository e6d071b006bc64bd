//! The sparse KKT matrix's structure, decided when a solver is generated: the pattern of
//! `[H + Σ_x, Jᵀ; J, D_y]` from the derivatives' fixed patterns, a minimum-degree ordering,
//! the permuted upper triangle (CSC), its elimination tree and the column pointers of `L`,
//! and where each value the glue assembles lands. `sparse_ldl.hpp` does the numeric work.

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
    /// The elimination tree (`-1` at roots) and the column pointers of `L`.
    pub parent: Vec<i64>,
    pub l_outer: Vec<usize>,
    /// Where each stored value of the Hessian (upper triangle), of the two Jacobians, and of
    /// the two diagonals lands among the permuted upper triangle's values.
    pub hess_dest: Vec<usize>,
    pub jac_eq_dest: Vec<usize>,
    pub jac_q_dest: Vec<usize>,
    pub diag_x_dest: Vec<usize>,
    pub diag_y_dest: Vec<usize>,
}

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
        // neither curvature nor bounds: the unpivoted factorisation may take one as a pivot
        // only once a neighbour's elimination has filled it in.
        let zero_diagonal: Vec<bool> = (0..n).map(|v| if v < nx { !curved[v] } else { v < nx + neq }).collect();
        let perm = minimum_degree(n, &edges, &zero_diagonal);
        let mut pinv = vec![0; n];
        for (k, &orig) in perm.iter().enumerate() {
            pinv[orig] = k;
        }
        let permuted = |&(i, j): &(usize, usize)| upper(pinv[i], pinv[j]);
        let mut entries: Vec<(usize, usize)> = all().map(permuted).collect();
        // CSC order: by column, then row.
        entries.sort_by_key(|&(i, j)| (j, i));
        entries.dedup();
        let mut a_outer = vec![0; n + 1];
        for &(_, j) in &entries {
            a_outer[j + 1] += 1;
        }
        for j in 0..n {
            a_outer[j + 1] += a_outer[j];
        }
        let a_inner: Vec<usize> = entries.iter().map(|&(i, _)| i).collect();
        let dest = |at: &[(usize, usize)]| -> Vec<usize> {
            at.iter()
                .map(|e| {
                    let (i, j) = permuted(e);
                    a_outer[j] + a_inner[a_outer[j]..a_outer[j + 1]].binary_search(&i).expect("every source is stored")
                })
                .collect()
        };
        let (parent, counts) = elimination_tree(n, &a_outer, &a_inner);
        let mut l_outer = vec![0; n + 1];
        for k in 0..n {
            l_outer[k + 1] = l_outer[k] + counts[k];
        }
        crate::array::check_alloc(|| format!("the sparse KKT factor ({n} rows)"), l_outer[n].max(1), 16)?;
        if l_outer[n] > i32::MAX as usize || entries.len() > i32::MAX as usize {
            return Err(Error::Problem {
                what: "solver",
                name: "KKT matrix".into(),
                message: format!("its factor has {} entries, more than the generated code indexes", l_outer[n]),
            });
        }
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
            parent,
            l_outer,
        })
    }

    /// Stored entries of the permuted upper triangle.
    pub fn nnz(&self) -> usize {
        self.a_inner.len()
    }

    /// Entries of `L` below its diagonal.
    pub fn l_nnz(&self) -> usize {
        self.l_outer[self.n]
    }
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

    /// Dense LDL' of the pattern's matrix with generic values shows every fill entry: the
    /// symbolic counts must cover it, and the tree must be a forest pointing upward.
    #[test]
    #[allow(clippy::needless_range_loop)] // the elimination reads best with indices
    fn symbolic_factorisation_covers_the_numeric_fill() {
        // A KKT pattern: a tridiagonal Hessian of 6, two equality rows, one inequality row.
        let hess = SparsityPattern::new(6, 6, (0..6).flat_map(|i| [(i, i), (i, (i + 1).min(5))])).unwrap();
        let jac_eq = SparsityPattern::new(2, 6, [(0, 0), (0, 5), (1, 2), (1, 3)]).unwrap();
        let jac_q = SparsityPattern::new(1, 6, [(0, 1), (0, 4)]).unwrap();
        let kkt = SparseKkt::new(&hess.upper_triangle(), &jac_eq, &jac_q, &[true; 6]).unwrap();
        let n = kkt.n;
        assert_eq!(n, 9);
        let mut seen = kkt.perm.clone();
        seen.sort();
        assert_eq!(seen, (0..n).collect::<Vec<_>>());
        for (k, &p) in kkt.parent.iter().enumerate() {
            assert!(p == -1 || p as usize > k, "the tree points upward");
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
        let mut fill = vec![0usize; n];
        for k in 0..n {
            let d = a[k][k];
            for i in k + 1..n {
                if a[i][k] != 0.0 {
                    fill[k] += 1;
                    let l = a[i][k] / d;
                    for j in k + 1..n {
                        a[i][j] -= l * a[k][j];
                    }
                }
            }
        }
        for k in 0..n {
            assert_eq!(kkt.l_outer[k + 1] - kkt.l_outer[k], fill[k], "column {k} of L");
        }
        // Every source lands on a stored entry, the diagonals on diagonals.
        for (j, &d) in kkt.diag_x_dest.iter().enumerate() {
            let col = kkt.a_outer.partition_point(|&o| o <= d) - 1;
            assert_eq!((kkt.a_inner[d], col), (kkt.perm.iter().position(|&p| p == j).unwrap(), col));
            assert_eq!(kkt.a_inner[d], col);
        }
        assert_eq!(kkt.jac_eq_dest.len(), 4);
        assert_eq!(kkt.hess_dest.len(), hess.upper_triangle().nnz());
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
    fn a_structurally_singular_matrix_is_still_ordered_whole() {
        // A linear program's KKT matrix: no diagonal anywhere, so every node waits; they go
        // as they are (the numeric factorisation reports the zero pivots).
        let order = minimum_degree(3, &[(0, 2), (1, 2)], &[true; 3]);
        let mut sorted = order.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, [0, 1, 2]);
    }
}

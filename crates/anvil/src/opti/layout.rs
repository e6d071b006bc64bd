//! The symbolic side of a solver, worked out once at generation time: the patterns of the
//! matrices the runtime factorises (the KKT matrix of the convexity test, the elastic QP)
//! and, for each stored value, which of the solver's values it is.
//!
//! The solver keeps one flat array of *sources*: the Hessian's stored values, the equality
//! Jacobian's, the inequality Jacobian's, one diagonal entry per constraint row (the KKT
//! matrix's lower-right block), then the constants −1 and +1 (the elastic slacks). A gathered
//! matrix is a CSC pattern plus, per stored value, its index among the sources.

use super::derive::Matrix;
use crate::pattern::SparsityPattern;

/// A CSC pattern whose values are gathered from the sources.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Gathered {
    pub rows: usize,
    pub cols: usize,
    pub outer: Vec<usize>,
    pub inner: Vec<usize>,
    /// Per stored value, its source index.
    pub source: Vec<usize>,
}

impl Gathered {
    /// The pattern of `entries` (row, column, source), in CSC order; no entry repeats.
    fn new(rows: usize, cols: usize, entries: &[(usize, usize, usize)]) -> Gathered {
        let mut sorted = entries.to_vec();
        sorted.sort_by_key(|&(i, j, _)| (j, i));
        let pattern = SparsityPattern::new(rows, cols, sorted.iter().map(|&(i, j, _)| (i, j)))
            .expect("entries lie inside the matrix");
        let (outer, inner) = pattern.csc();
        Gathered { rows, cols, outer, inner, source: sorted.iter().map(|e| e.2).collect() }
    }

    /// Number of stored values.
    pub fn nnz(&self) -> usize {
        self.inner.len()
    }
}

/// Where each block of sources starts.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Sources {
    pub jac_eq: usize,
    pub jac_q: usize,
    pub diagonal: usize,
    pub minus_one: usize,
    pub plus_one: usize,
    pub len: usize,
}

/// The patterns of a solver with Jacobians `jac_eq` (NEQ × NX), `jac_q` (NQ × NX) and
/// Hessian `hess` (NX × NX).
pub(crate) struct Layout {
    pub sources: Sources,
    /// `[H, J_aᵀ; J_a, −D]`, upper triangle, of size NX + NEQ + NQ.
    pub kkt: Gathered,
    /// The elastic QP's Hessian (upper triangle), equality and inequality matrices, over
    /// NX + 2 (NEQ + NQ) variables.
    pub elastic_p: Gathered,
    pub elastic_a: Gathered,
    pub elastic_g: Gathered,
}

/// `(row, column, position)` of every stored entry of `m` (column-major for dense storage).
fn entries(m: &Matrix) -> Vec<(usize, usize, usize)> {
    match m {
        Matrix::Dense { rows, cols } => {
            (0..*cols).flat_map(|j| (0..*rows).map(move |i| (i, j, j * rows + i))).collect()
        }
        Matrix::Sparse(p) => p.csc_entries().into_iter().enumerate().map(|(k, (i, j))| (i, j, k)).collect(),
    }
}

fn stored(m: &Matrix) -> usize {
    match m {
        Matrix::Dense { rows, cols } => rows * cols,
        Matrix::Sparse(p) => p.nnz(),
    }
}

impl Layout {
    pub fn new(nx: usize, jac_eq: &Matrix, jac_q: &Matrix, hess: &Matrix) -> Layout {
        let (neq, nq) = (rows(jac_eq), rows(jac_q));
        let h = stored(hess);
        let jac_eq_start = h;
        let jac_q_start = jac_eq_start + stored(jac_eq);
        let diagonal = jac_q_start + stored(jac_q);
        let minus_one = diagonal + neq + nq;
        let sources = Sources {
            jac_eq: jac_eq_start,
            jac_q: jac_q_start,
            diagonal,
            minus_one,
            plus_one: minus_one + 1,
            len: minus_one + 2,
        };
        let upper: Vec<(usize, usize, usize)> = entries(hess).into_iter().filter(|&(i, j, _)| i <= j).collect();
        let eq = entries(jac_eq);
        let q = entries(jac_q);
        let mut kkt = upper.clone();
        kkt.extend(eq.iter().map(|&(i, j, k)| (j, nx + i, jac_eq_start + k)));
        kkt.extend(q.iter().map(|&(i, j, k)| (j, nx + neq + i, jac_q_start + k)));
        kkt.extend((0..neq + nq).map(|r| (nx + r, nx + r, diagonal + r)));
        let size = nx + neq + nq;
        let m = neq + nq;
        let elastic = nx + 2 * m;
        let mut a: Vec<_> = eq.iter().map(|&(i, j, k)| (i, j, jac_eq_start + k)).collect();
        for i in 0..neq {
            a.extend([(i, nx + i, minus_one), (i, nx + m + i, minus_one + 1)]);
        }
        let mut g: Vec<_> = q.iter().map(|&(i, j, k)| (i, j, jac_q_start + k)).collect();
        for i in 0..nq {
            g.extend([(i, nx + neq + i, minus_one), (i, nx + m + neq + i, minus_one + 1)]);
        }
        Layout {
            sources,
            kkt: Gathered::new(size, size, &kkt),
            elastic_p: Gathered::new(elastic, elastic, &upper),
            elastic_a: Gathered::new(neq, elastic, &a),
            elastic_g: Gathered::new(nq, elastic, &g),
        }
    }
}

fn rows(m: &Matrix) -> usize {
    match m {
        Matrix::Dense { rows, .. } => *rows,
        Matrix::Sparse(p) => p.shape().0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kkt_of_a_dense_problem_keeps_the_upper_triangle_and_every_jacobian_entry() {
        let layout = Layout::new(
            2,
            &Matrix::Dense { rows: 1, cols: 2 },
            &Matrix::Dense { rows: 0, cols: 2 },
            &Matrix::Dense { rows: 2, cols: 2 },
        );
        // H upper: (0,0) (0,1) (1,1); J_eq: (0,2) (1,2); diagonal (2,2).
        assert_eq!(layout.kkt.nnz(), 6);
        assert_eq!(layout.kkt.outer, vec![0, 1, 3, 6]);
        assert_eq!(layout.kkt.inner, vec![0, 0, 1, 0, 1, 2]);
        // H(0,1) is stored at column-major position 2; J_eq follows H's 4 values.
        assert_eq!(layout.kkt.source, vec![0, 2, 3, 4, 5, 6]);
        assert_eq!(layout.sources.minus_one, 7);
        // Elastic: the equality row gains −u + v.
        assert_eq!(layout.elastic_a.cols, 4);
        assert_eq!(layout.elastic_a.source, vec![4, 5, 7, 8]);
    }
}

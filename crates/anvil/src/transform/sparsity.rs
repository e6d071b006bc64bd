//! Structural sparsity of Jacobians and Hessians: which output elements depend on which
//! input elements, found by propagating dependency bit-sets (64 inputs per word) through
//! the graph, one rule per primitive. No derivative is evaluated.

use super::ad::{check_wrt, gradient_tensor, input_tensors, transform_error};
use crate::dtype::DType;
use crate::error::Result;
use crate::function::NumericalFunction;
use crate::graph::{eval_nodes, toposort, InputRef, Node, NodeRef, Op, TraceId, UnaryOp};
use crate::HostArray;
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;

/// The positions of the structural non-zeros of a `rows × cols` matrix.
///
/// ```
/// use anvil::ad::SparsityPattern;
/// let p = SparsityPattern::new(3, 3, [(0, 0), (1, 1), (2, 1), (2, 2)]).unwrap();
/// assert_eq!(p.nnz(), 4);
/// let (indptr, indices) = p.csc();
/// assert_eq!(indptr, vec![0, 1, 3, 4]);
/// assert_eq!(indices, vec![0, 1, 2, 2]);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SparsityPattern {
    rows: usize,
    cols: usize,
    /// For each row, its non-zero columns in increasing order.
    row_cols: Vec<Vec<usize>>,
}

impl SparsityPattern {
    /// A pattern from `(row, col)` entries (duplicates are merged); `None` if one is out
    /// of range.
    pub fn new(rows: usize, cols: usize, entries: impl IntoIterator<Item = (usize, usize)>) -> Option<Self> {
        let mut row_cols = vec![Vec::new(); rows];
        for (i, j) in entries {
            if i >= rows || j >= cols {
                return None;
            }
            row_cols[i].push(j);
        }
        for r in &mut row_cols {
            r.sort_unstable();
            r.dedup();
        }
        Some(SparsityPattern { rows, cols, row_cols })
    }

    /// `(rows, cols)`.
    pub fn shape(&self) -> (usize, usize) {
        (self.rows, self.cols)
    }

    /// Number of structural non-zeros.
    pub fn nnz(&self) -> usize {
        self.row_cols.iter().map(Vec::len).sum()
    }

    /// The non-zero columns of row `i`, increasing.
    pub fn row(&self, i: usize) -> &[usize] {
        &self.row_cols[i]
    }

    /// True if `(i, j)` is a structural non-zero.
    pub fn contains(&self, i: usize, j: usize) -> bool {
        self.row_cols.get(i).is_some_and(|r| r.binary_search(&j).is_ok())
    }

    /// The non-zero rows of each column: `cols` lists of increasing rows.
    pub fn columns(&self) -> Vec<Vec<usize>> {
        let mut cols = vec![Vec::new(); self.cols];
        for (i, r) in self.row_cols.iter().enumerate() {
            for &j in r {
                cols[j].push(i);
            }
        }
        cols
    }

    /// Compressed sparse column form: `(indptr, indices)` (column starts, row indices).
    pub fn csc(&self) -> (Vec<usize>, Vec<usize>) {
        let mut indptr = vec![0];
        let mut indices = Vec::with_capacity(self.nnz());
        for col in self.columns() {
            indices.extend(&col);
            indptr.push(indices.len());
        }
        (indptr, indices)
    }

    /// The transposed pattern.
    pub fn transpose(&self) -> Self {
        let entries = self.row_cols.iter().enumerate().flat_map(|(i, r)| r.iter().map(move |&j| (j, i)));
        SparsityPattern::new(self.cols, self.rows, entries).expect("a transpose fits the swapped shape")
    }

    /// The entries on and above the diagonal.
    pub fn upper_triangle(&self) -> Self {
        let row_cols =
            self.row_cols.iter().enumerate().map(|(i, r)| r.iter().copied().filter(|&j| j >= i).collect()).collect();
        SparsityPattern { rows: self.rows, cols: self.cols, row_cols }
    }

    /// The pattern together with its transpose (square patterns).
    pub fn symmetrized(&self) -> Self {
        let mut entries: Vec<(usize, usize)> = Vec::new();
        for (i, r) in self.row_cols.iter().enumerate() {
            for &j in r {
                entries.push((i, j));
                entries.push((j, i));
            }
        }
        SparsityPattern::new(self.rows, self.cols, entries).expect("a square pattern's transpose fits")
    }
}

/// The Jacobian sparsity of `f`'s first output with respect to its first input.
///
/// ```
/// use anvil::{ad, Arg, NumericalFunction};
/// # fn main() -> anvil::Result<()> {
/// // r_i = x_{i-1} - 2 x_i + x_{i+1}: tridiagonal
/// let f = NumericalFunction::new("lap", |[x]| {
///     let padded = x.pad(&[(1, 1)]);
///     padded.shrink(&[(0, 5)]) - &x * 2.0 + padded.shrink(&[(2, 7)])
/// }, [Arg::new(5)])?;
/// let p = ad::jacobian_sparsity(&f)?;
/// assert_eq!(p.nnz(), 13);
/// assert_eq!(p.row(2), &[1, 2, 3]);
/// # Ok(()) }
/// ```
pub fn jacobian_sparsity(f: &NumericalFunction) -> Result<SparsityPattern> {
    jacobian_sparsity_wrt(f, 0)
}

/// [`jacobian_sparsity`] with respect to input `wrt`.
pub fn jacobian_sparsity_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparsityPattern> {
    check_wrt("jacobian_sparsity", f, wrt)?;
    let y = f.output_tensors()[0].node()?.clone();
    let x = input_tensors(f)[wrt].node()?.clone();
    dependency_pattern(&y, &x)
}

/// The (symmetric) Hessian sparsity of `f`'s scalar first output with respect to its first
/// input: the Jacobian sparsity of its gradient graph, symmetrized.
pub fn hessian_sparsity(f: &NumericalFunction) -> Result<SparsityPattern> {
    hessian_sparsity_wrt(f, 0)
}

/// [`hessian_sparsity`] with respect to input `wrt`.
pub fn hessian_sparsity_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparsityPattern> {
    let g = gradient_tensor(f, wrt)?;
    let x = input_tensors(f)[wrt].node()?.clone();
    if g.node()?.numel() != x.numel() {
        return Err(transform_error("hessian_sparsity", f, "gradient and input sizes differ"));
    }
    Ok(dependency_pattern(g.node()?, &x)?.symmetrized())
}

/// Per element of a node: the input elements it depends on (`None`: on nothing).
type Deps = Option<Vec<BitSet>>;

/// A set of input elements, 64 per word.
#[derive(Clone, Debug, PartialEq, Eq)]
struct BitSet(Vec<u64>);

impl BitSet {
    fn empty(words: usize) -> Self {
        BitSet(vec![0; words])
    }
    fn single(words: usize, e: usize) -> Self {
        let mut s = Self::empty(words);
        s.0[e / 64] |= 1 << (e % 64);
        s
    }
    fn union_with(&mut self, other: &BitSet) {
        for (a, b) in self.0.iter_mut().zip(&other.0) {
            *a |= b;
        }
    }
    fn members(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for (w, &word) in self.0.iter().enumerate() {
            let mut bits = word;
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        out
    }
}

/// The structural Jacobian pattern of `y` with respect to `x` (flattened, row-major).
pub(crate) fn dependency_pattern(y: &NodeRef, x: &NodeRef) -> Result<SparsityPattern> {
    let words = x.numel().div_ceil(64).max(1);
    let order = toposort(std::slice::from_ref(y));
    let mut uses: HashMap<u64, usize> = HashMap::new();
    for node in &order {
        for s in &node.srcs {
            *uses.entry(s.id()).or_default() += 1;
        }
    }
    let mut deps: HashMap<u64, Deps> = HashMap::new();
    for node in &order {
        let what = || format!("sparsity detection (a {}-bit set for each of {} elements)", words * 64, node.numel());
        crate::array::check_alloc(what, node.numel().saturating_mul(words), 8)?;
        let value = if node.id() == x.id() {
            Some((0..x.numel()).map(|e| BitSet::single(words, e)).collect())
        } else {
            let srcs: Vec<&Deps> = node.srcs.iter().map(|s| &deps[&s.id()]).collect();
            if srcs.iter().all(|d| d.is_none()) {
                None
            } else {
                dependency_rule(node, &srcs, words)
            }
        };
        // Free what no later node reads: patterns of big graphs stay within memory.
        for s in &node.srcs {
            let left = uses.get_mut(&s.id()).expect("counted");
            *left -= 1;
            if *left == 0 && s.id() != y.id() {
                deps.remove(&s.id());
            }
        }
        deps.insert(node.id(), value);
    }
    let rows = deps.remove(&y.id()).flatten();
    let entries = rows.iter().flatten().enumerate().flat_map(|(i, set)| set.members().into_iter().map(move |j| (i, j)));
    Ok(SparsityPattern::new(y.numel(), x.numel(), entries).expect("members are input elements"))
}

/// Element dependencies of `node` from its sources' (at least one is not `None`).
fn dependency_rule(node: &NodeRef, srcs: &[&Deps], words: usize) -> Deps {
    let n = node.numel();
    let union_of = |parts: &[&Deps]| -> Deps {
        let mut out = vec![BitSet::empty(words); n];
        for d in parts.iter().copied().flatten() {
            for (o, s) in out.iter_mut().zip(d) {
                o.union_with(s);
            }
        }
        Some(out)
    };
    match &node.op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => None,
        Op::Unary(UnaryOp::Floor | UnaryOp::Ceil) => None,
        Op::Unary(_) => srcs[0].clone(),
        Op::Binary(op) if op.is_comparison() => None,
        Op::Binary(_) => union_of(srcs),
        Op::Where => union_of(&srcs[1..]),
        Op::Cast if node.dtype.is_float() && node.srcs[0].dtype.is_float() => srcs[0].clone(),
        Op::Cast => None,
        Op::Reduce(_, axes) => {
            let src = srcs[0].as_ref()?;
            let out_strides = crate::shape::strides(&node.shape);
            let mut out = vec![BitSet::empty(words); n];
            let shape = &node.srcs[0].shape;
            for (e, set) in src.iter().enumerate() {
                out[reduced_position(e, shape, axes, &out_strides)].union_with(set);
            }
            Some(out)
        }
        Op::Reshape | Op::Permute(_) | Op::Expand | Op::Pad(_) | Op::Shrink(_) | Op::Flip(_) => {
            let src = srcs[0].as_ref()?;
            let map = element_map(node);
            Some(map.iter().map(|m| m.map_or_else(|| BitSet::empty(words), |e| src[e].clone())).collect())
        }
        Op::Gather => {
            let table = srcs[0].as_ref()?;
            match constant_indices(&node.srcs[1]) {
                Some(index) => Some(index.iter().map(|&i| table[clamp(i, table.len())].clone()).collect()),
                None => union_all(table, n, words),
            }
        }
        Op::ScatterAdd => {
            let values = srcs[0].as_ref()?;
            match constant_indices(&node.srcs[1]) {
                Some(index) if n > 0 => {
                    let mut out = vec![BitSet::empty(words); n];
                    for (set, &i) in values.iter().zip(&index) {
                        out[clamp(i, n)].union_with(set);
                    }
                    Some(out)
                }
                _ => union_all(values, n, words),
            }
        }
    }
}

fn clamp(i: i64, len: usize) -> usize {
    crate::graph::clamp_index(i, len)
}

/// Every element depends on everything any source element depends on (data-dependent
/// positions: the conservative answer).
fn union_all(parts: &[BitSet], n: usize, words: usize) -> Deps {
    let mut all = BitSet::empty(words);
    parts.iter().for_each(|s| all.union_with(s));
    Some(vec![all; n])
}

/// The output position of source element `e` of a reduction over `axes`.
fn reduced_position(e: usize, shape: &[usize], axes: &[usize], out_strides: &[usize]) -> usize {
    let mut rest = e;
    let mut pos = 0;
    for d in (0..shape.len()).rev() {
        let i = rest % shape[d];
        rest /= shape[d];
        if !axes.contains(&d) {
            pos += i * out_strides[d];
        }
    }
    pos
}

/// For each element of a movement node, the source element it reads (`None`: padding).
/// Computed by the interpreter itself on element numbers, so it follows the very same
/// semantics as evaluation.
fn element_map(node: &NodeRef) -> Vec<Option<usize>> {
    let src = &node.srcs[0];
    let numbers =
        Node::make(Op::Input(InputRef { index: 0, trace: TraceId::FREE }), DType::I64, src.shape.clone(), Vec::new());
    let moved = Node::make(node.op.clone(), DType::I64, node.shape.clone(), vec![numbers]);
    let ids = ArrayD::from_shape_vec(IxDyn(&src.shape), (1..=src.numel() as i64).collect()).expect("numel elements");
    let out = eval_nodes(&[moved], &[HostArray::I64(ids)]).expect("a movement of a well-shaped input evaluates");
    out[0].to_f64_vec().into_iter().map(|v| (v >= 1.0).then(|| v as usize - 1)).collect()
}

/// The values of an index tensor that depends on no input, or `None`.
fn constant_indices(index: &NodeRef) -> Option<Vec<i64>> {
    if toposort(std::slice::from_ref(index)).iter().any(|n| matches!(n.op, Op::Input(_))) {
        return None;
    }
    let values = eval_nodes(std::slice::from_ref(index), &[]).ok()?;
    Some(values[0].to_f64_vec().into_iter().map(|v| v as i64).collect())
}

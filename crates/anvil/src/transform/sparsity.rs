//! Structural sparsity of Jacobians: which output elements depend on which input elements,
//! found by propagating dependency bit-sets (64 inputs per word) through the graph, one rule
//! per primitive. No derivative is evaluated.

use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{eval_nodes, toposort, InputRef, Node, NodeRef, Op, TraceId, UnaryOp};
use crate::pattern::SparsityPattern;
use ndarray::{ArrayD, IxDyn};
use std::collections::HashMap;

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
pub fn dependency_pattern(y: &NodeRef, x: &NodeRef) -> Result<SparsityPattern> {
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

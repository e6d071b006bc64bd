//! Structural sparsity of Jacobians: which output elements depend on which input elements,
//! found by propagating per-element dependency sets through the graph, one rule per
//! primitive. No derivative is evaluated. The sets are sorted index lists (all of a node's in
//! one flat array), so time and memory grow with the number of dependencies, not with the
//! number of inputs times the number of elements.

use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::Result;
use crate::graph::{eval_nodes, map_graph, toposort, InputRef, Node, NodeRef, Op, TraceId, UnaryOp};
use crate::pattern::SparsityPattern;
use ndarray::{ArrayD, IxDyn};

/// Per element of a node: the input elements it depends on (`None`: on nothing).
type Deps = Option<ElementSets>;

/// One sorted set of input elements per element of a node: element `e`'s is
/// `members[starts[e]..starts[e + 1]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct ElementSets {
    starts: Vec<usize>,
    members: Vec<u32>,
}

impl ElementSets {
    /// Element `e` depends on input element `e` alone.
    fn identity(n: usize) -> Self {
        ElementSets { starts: (0..=n).collect(), members: (0..n as u32).collect() }
    }

    /// `n` sets, element `e`'s the union of `parts(e)`'s sets (checked against the memory
    /// first: `what` names the work).
    fn unions<'a, I>(n: usize, what: &dyn Fn() -> String, mut parts: impl FnMut(usize) -> I) -> Result<Self>
    where
        I: Iterator<Item = &'a [u32]>,
    {
        let total = (0..n).map(|e| parts(e).map(<[u32]>::len).sum::<usize>()).fold(0usize, usize::saturating_add);
        crate::array::check_alloc(what, total, 4)?;
        let mut starts = Vec::with_capacity(n + 1);
        let mut members = Vec::with_capacity(total);
        let mut union = Vec::new();
        starts.push(0);
        for e in 0..n {
            union.clear();
            let mut sources = 0;
            for set in parts(e) {
                union.extend_from_slice(set);
                sources += 1;
            }
            if sources > 1 {
                union.sort_unstable();
                union.dedup();
            }
            members.extend_from_slice(&union);
            starts.push(members.len());
        }
        Ok(ElementSets { starts, members })
    }

    fn len(&self) -> usize {
        self.starts.len() - 1
    }

    fn get(&self, e: usize) -> &[u32] {
        &self.members[self.starts[e]..self.starts[e + 1]]
    }
}

/// The structural Jacobian pattern of `y` with respect to `x` (flattened, row-major).
pub fn dependency_pattern(y: &NodeRef, x: &NodeRef) -> Result<SparsityPattern> {
    if x.numel() > u32::MAX as usize {
        return Err(crate::error::Error::Transform {
            transform: "sparsity detection",
            function: "the traced graph".into(),
            message: format!("{} input elements; at most {} are numbered", x.numel(), u32::MAX),
        });
    }
    let mut deps = map_graph(std::slice::from_ref(y), |node, srcs: &[&Deps]| {
        if node.id() == x.id() {
            Ok(Some(ElementSets::identity(x.numel())))
        } else if srcs.iter().all(|d| d.is_none()) {
            Ok(None)
        } else {
            dependency_rule(node, srcs)
        }
    })?;
    let entries: Vec<(usize, usize)> = match deps.remove(0) {
        Some(rows) => (0..rows.len()).flat_map(|i| rows.get(i).iter().map(move |&j| (i, j as usize))).collect(),
        None => Vec::new(),
    };
    Ok(SparsityPattern::new(y.numel(), x.numel(), entries).expect("members are input elements"))
}

/// Element dependencies of `node` from its sources' (at least one is not `None`).
fn dependency_rule(node: &NodeRef, srcs: &[&Deps]) -> Result<Deps> {
    let n = node.numel();
    let what = || format!("sparsity detection (the dependencies of {} elements of a {:?} node)", n, node.op);
    // Element e of the output: the union over `sources(e)` of (source, element) sets.
    let union_of = |parts: &[&Deps]| -> Result<Deps> {
        let present: Vec<&ElementSets> = parts.iter().copied().flatten().collect();
        ElementSets::unions(n, &what, |e| present.iter().map(move |d| d.get(e))).map(Some)
    };
    // Elements of `src` grouped by the output element they flow into (`target`).
    let grouped = |src: &ElementSets, target: &dyn Fn(usize) -> usize| -> Result<Deps> {
        let mut count = vec![0usize; n + 1];
        for e in 0..src.len() {
            count[target(e) + 1] += 1;
        }
        for i in 0..n {
            count[i + 1] += count[i];
        }
        let mut order = vec![0usize; src.len()];
        let mut next = count.clone();
        for e in 0..src.len() {
            let t = target(e);
            order[next[t]] = e;
            next[t] += 1;
        }
        ElementSets::unions(n, &what, |o| order[count[o]..count[o + 1]].iter().map(|&e| src.get(e))).map(Some)
    };
    Ok(match &node.op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => None,
        Op::Unary(UnaryOp::Floor | UnaryOp::Ceil) => None,
        Op::Unary(_) => srcs[0].clone(),
        Op::Binary(op) if op.is_comparison() => None,
        Op::Binary(_) => union_of(srcs)?,
        Op::Where => union_of(&srcs[1..])?,
        Op::Cast if node.dtype.is_float() && node.srcs[0].dtype.is_float() => srcs[0].clone(),
        Op::Cast => None,
        Op::Reduce(_, axes) => {
            let Some(src) = srcs[0].as_ref() else { return Ok(None) };
            let out_strides = crate::shape::strides(&node.shape);
            let shape = &node.srcs[0].shape;
            grouped(src, &|e| reduced_position(e, shape, axes, &out_strides))?
        }
        Op::Reshape | Op::Permute(_) | Op::Expand | Op::Pad(_) | Op::Shrink(_) | Op::Flip(_) => {
            let Some(src) = srcs[0].as_ref() else { return Ok(None) };
            let map = element_map(node);
            Some(ElementSets::unions(n, &what, |e| map[e].map(|s| src.get(s)).into_iter())?)
        }
        Op::Gather => {
            let Some(table) = srcs[0].as_ref() else { return Ok(None) };
            match constant_indices(&node.srcs[1]) {
                Some(index) => {
                    Some(ElementSets::unions(n, &what, |e| std::iter::once(table.get(clamp(index[e], table.len()))))?)
                }
                None => union_all(table, n, &what)?,
            }
        }
        Op::ScatterAdd => {
            let Some(values) = srcs[0].as_ref() else { return Ok(None) };
            match constant_indices(&node.srcs[1]) {
                Some(index) if n > 0 => grouped(values, &|e| clamp(index[e], n))?,
                _ => union_all(values, n, &what)?,
            }
        }
    })
}

fn clamp(i: i64, len: usize) -> usize {
    crate::graph::clamp_index(i, len)
}

/// Every element depends on everything any source element depends on (data-dependent
/// positions: the conservative answer).
fn union_all(parts: &ElementSets, n: usize, what: &dyn Fn() -> String) -> Result<Deps> {
    let all = ElementSets::unions(1, what, |_| (0..parts.len()).map(|e| parts.get(e)))?;
    Ok(Some(ElementSets::unions(n, what, |_| std::iter::once(all.get(0)))?))
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

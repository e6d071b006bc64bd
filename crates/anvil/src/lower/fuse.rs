//! Builds one kernel: pushes index expressions from a realized node down through inlined
//! elementwise, movement and reduction nodes until they reach buffers.
//!
//! A loop kernel builds each node once, at the loop variables' index. A straight-line
//! kernel builds each element at its constant index, reductions folded out in the loop's
//! order: a node read twice at one element is one expression, so nothing is stored
//! between kernels.

use super::fold::{fold, Folded};
use super::index::IndexExpr;
use super::kernel::{Bound, BufferId, Expr, ExprId, Kernel, Scatter, Store};
use crate::dtype::DType;
use crate::graph::{reduce_identity, scalar, BinaryOp, NodeRef, Op, ReduceOp, UnaryOp};
use std::collections::HashMap;

/// Builds the kernel that computes each `(node, buffer)` of `stores` (all of one shape)
/// into its buffer; `buffer_of` maps realized nodes to their buffers.
pub fn build_kernel(stores: &[(NodeRef, BufferId)], buffer_of: &HashMap<u64, BufferId>) -> Kernel {
    if let [(node, buffer)] = stores {
        if matches!(node.op, Op::ScatterAdd) {
            return build_scatter_kernel(node, *buffer, buffer_of);
        }
    }
    let shape = stores[0].0.shape.clone();
    let mut builder = KernelBuilder::new(buffer_of, stores.iter().map(|(n, _)| n.id()).collect(), shape.clone());
    let index = IndexExpr::loop_point(&shape);
    let linear = IndexExpr::linearize(&index, &shape);
    let stores = stores
        .iter()
        .map(|(node, buffer)| Store {
            buffer: *buffer,
            index: linear.clone(),
            value: builder.build(node, &index, true),
        })
        .collect();
    finish(builder, stores, shape, None)
}

/// Builds one straight-line kernel storing every element of each `(node, buffer)` of
/// `stores`: everything not in `buffer_of` (for a whole program, only inputs and constants
/// are) is computed in it, once per element.
pub fn build_straight_line_kernel(stores: &[(NodeRef, BufferId)], buffer_of: &HashMap<u64, BufferId>) -> Kernel {
    let mut builder = KernelBuilder::new(buffer_of, stores.iter().map(|(n, _)| n.id()).collect(), Vec::new());
    let out = builder.write_out(stores, false);
    finish(builder, out, Vec::new(), None)
}

/// Builds one kernel looping over the leading axis (of extent `batch`) of each `(node,
/// buffer)` of `stores`, storing every element of the item in straight-line code (see
/// [`super::batch`]): each node is built at the loop variable along that axis and at
/// constant indices along the others.
pub fn build_batched_kernel(
    stores: &[(NodeRef, BufferId)],
    buffer_of: &HashMap<u64, BufferId>,
    batch: usize,
) -> Kernel {
    let mut builder = KernelBuilder::new(buffer_of, stores.iter().map(|(n, _)| n.id()).collect(), vec![batch]);
    let out = builder.write_out(stores, true);
    let mut kernel = finish(builder, out, vec![batch], None);
    kernel.items = true;
    kernel
}

/// Kernels storing the elements `start..start + len` of the matrix `source` (in row-major
/// order) at `0..len` of `output`: one loop nest over each block of the matrix the run
/// covers (the rest of its first row, its whole rows, the start of its last row), each
/// element built at its row and column (see [`super::schedule::Window`]).
pub fn build_window_kernels(
    source: &NodeRef,
    start: usize,
    len: usize,
    output: BufferId,
    buffer_of: &HashMap<u64, BufferId>,
) -> Vec<Kernel> {
    let columns = source.shape[1];
    let end = start + len;
    let (first_row, last_row) = (start / columns, end / columns);
    let (mut blocks, mut row) = (Vec::new(), first_row);
    if start % columns != 0 {
        let to = if last_row == first_row { end % columns } else { columns };
        blocks.push((row, row + 1, start % columns, to));
        row += 1;
    }
    blocks.push((row, last_row, 0, columns));
    if last_row >= row {
        blocks.push((last_row, last_row + 1, 0, end % columns));
    }
    let mut kernels = Vec::new();
    for (r0, r1, c0, c1) in blocks.into_iter().filter(|&(r0, r1, c0, c1)| r0 < r1 && c0 < c1) {
        let shape = vec![r1 - r0, c1 - c0];
        let mut builder = KernelBuilder::new(buffer_of, vec![source.id()], shape.clone());
        let origin = [r0 as i64, c0 as i64];
        let point: Vec<IndexExpr> =
            IndexExpr::loop_point(&shape).iter().zip(origin).map(|(i, o)| i.add_const(o)).collect();
        let index = IndexExpr::linearize(&point, &source.shape).add_const(-(start as i64));
        let value = builder.build(source, &point, true);
        kernels.push(finish(builder, vec![Store { buffer: output, index, value }], shape, None));
    }
    kernels
}

/// Every multi-index of `shape` as constants, in row-major order.
fn constant_points(shape: &[usize]) -> Vec<Vec<IndexExpr>> {
    let mut points = vec![Vec::new()];
    for &n in shape {
        points = points
            .into_iter()
            .flat_map(|p: Vec<IndexExpr>| {
                (0..n).map(move |i| {
                    let mut q = p.clone();
                    q.push(IndexExpr::constant(i as i64));
                    q
                })
            })
            .collect();
    }
    points
}

/// The kernel of `stores`, keeping only the expressions they use (folding leaves some
/// behind).
fn finish(builder: KernelBuilder, mut stores: Vec<Store>, shape: Vec<usize>, mut scatter: Option<Scatter>) -> Kernel {
    let outputs = Store::buffers(&stores);
    let exprs = builder.exprs;
    let mut used = vec![false; exprs.len()];
    let mut pending: Vec<ExprId> = stores.iter().map(|s| s.value).chain(scatter.as_ref().map(|s| s.index)).collect();
    while let Some(id) = pending.pop() {
        if !std::mem::replace(&mut used[id], true) {
            pending.extend(exprs[id].operands());
        }
    }
    let mut new_id = vec![usize::MAX; exprs.len()];
    let mut kept = Vec::new();
    for (id, expr) in exprs.into_iter().enumerate() {
        if used[id] {
            new_id[id] = kept.len();
            kept.push(expr.renumbered(&new_id));
        }
    }
    for s in &mut stores {
        s.value = new_id[s.value];
    }
    if let Some(s) = &mut scatter {
        s.index = new_id[s.index];
    }
    Kernel {
        outputs,
        stores,
        shape,
        extents: builder.extents,
        exprs: kept,
        scatter,
        items: false,
        accumulate_across: None,
    }
}

/// A scatter-add: loops over the values, adding each into the output at its index.
fn build_scatter_kernel(node: &NodeRef, output: BufferId, buffer_of: &HashMap<u64, BufferId>) -> Kernel {
    let (values, indices) = (&node.srcs[0], &node.srcs[1]);
    let shape = values.shape.clone();
    let mut builder = KernelBuilder::new(buffer_of, Vec::new(), shape.clone());
    let index = IndexExpr::loop_point(&shape);
    let value = builder.build(values, &index, false);
    let target = builder.build(indices, &index, false);
    let scatter = Some(Scatter { index: target, len: node.numel() });
    let store = Store { buffer: output, index: IndexExpr::linearize(&index, &shape), value };
    finish(builder, vec![store], shape, scatter)
}

/// How to finish the expression of a node once its operands' expressions exist.
enum Combine {
    Unary(UnaryOp, DType),
    /// Binary op on operands of the given dtype.
    Binary(BinaryOp, DType),
    Where(DType),
    Cast(DType, DType),
    Reduce {
        op: ReduceOp,
        vars: Vec<usize>,
        dtype: DType,
    },
    /// A reduction written out: the operands folded into the identity in order.
    Fold {
        op: ReduceOp,
        dtype: DType,
    },
    /// A movement op: the operand's expression at the moved index is the value.
    Forward,
    /// Padding: the value where every bound holds, zero elsewhere.
    Pad {
        bounds: Vec<Bound>,
        dtype: DType,
    },
    Gather {
        buffer: BufferId,
        len: usize,
        dtype: DType,
        in_range: bool,
    },
}

/// Nodes to build, each at an index.
type Operands = Vec<(NodeRef, Vec<IndexExpr>)>;

/// The first step of building a node at an index: either its expression directly (a
/// literal, a load), or the operands to build first and how to combine them.
enum Step {
    Done(ExprId),
    Needs(Operands, Combine),
}

/// A node being built, with its operands still to build.
struct Frame {
    node: NodeRef,
    index: Vec<IndexExpr>,
    is_root: bool,
    step: Option<(Operands, Combine)>,
}

struct KernelBuilder<'a> {
    buffer_of: &'a HashMap<u64, BufferId>,
    roots: Vec<u64>,
    extents: Vec<usize>,
    exprs: Vec<Expr>,
    dedup: HashMap<Expr, ExprId>,
    memo: HashMap<(u64, Vec<IndexExpr>), ExprId>,
    /// Reductions are folded out at constant indices instead of looped.
    straight_line: bool,
}

impl<'a> KernelBuilder<'a> {
    fn new(buffer_of: &'a HashMap<u64, BufferId>, roots: Vec<u64>, extents: Vec<usize>) -> Self {
        KernelBuilder {
            buffer_of,
            roots,
            extents,
            exprs: Vec::new(),
            dedup: HashMap::new(),
            memo: HashMap::new(),
            straight_line: false,
        }
    }

    /// Straight-line stores of every element of each `(node, buffer)` of `stores`, at
    /// constant indices, reductions written out. With `batched`, of every element of one
    /// item: the leading axis is loop variable 0, and each node is a root of the kernel (its
    /// own buffer, in `buffer_of`, is written here, not read).
    fn write_out(&mut self, stores: &[(NodeRef, BufferId)], batched: bool) -> Vec<Store> {
        self.straight_line = true;
        let mut out = Vec::new();
        for (node, buffer) in stores {
            let item_shape = if batched { &node.shape[1..] } else { &node.shape[..] };
            for mut point in constant_points(item_shape) {
                if batched {
                    point.insert(0, IndexExpr::var(0));
                }
                let value = self.build(node, &point, true);
                out.push(Store { buffer: *buffer, index: IndexExpr::linearize(&point, &node.shape), value });
            }
        }
        out
    }

    /// The id of `expr`, folded (see [`fold`]) and stored once.
    fn push(&mut self, expr: Expr) -> ExprId {
        let expr = match fold(&expr, &self.exprs) {
            Some(Folded::To(id)) => return id,
            Some(Folded::Const(value, dtype)) => Expr::Const(value, dtype),
            Some(Folded::Zero(dtype)) => Expr::Zero(dtype),
            None => expr,
        };
        if let Some(&id) = self.dedup.get(&expr) {
            return id;
        }
        let id = self.exprs.len();
        self.exprs.push(expr.clone());
        self.dedup.insert(expr, id);
        id
    }

    fn zero(&mut self, dtype: DType) -> ExprId {
        self.push(Expr::Const(scalar::literal(dtype, 0.0, 0), dtype))
    }

    /// The value of `node` at multi-index `index`.
    ///
    /// A depth-first walk with an explicit stack (graphs can be a million nodes deep):
    /// each frame plans its node once, builds its operands left to right, then combines.
    fn build(&mut self, node: &NodeRef, index: &[IndexExpr], is_root: bool) -> ExprId {
        let mut stack = vec![Frame { node: node.clone(), index: index.to_vec(), is_root, step: None }];
        while let Some(top) = stack.last_mut() {
            let key = (top.node.id(), top.index.clone());
            if top.step.is_none() {
                if self.memo.contains_key(&key) {
                    stack.pop();
                    continue;
                }
                let (node, index, is_root) = (top.node.clone(), top.index.clone(), top.is_root);
                match self.plan(&node, &index, is_root) {
                    Step::Done(id) => {
                        self.memo.insert(key, id);
                        stack.pop();
                        continue;
                    }
                    Step::Needs(operands, combine) => {
                        stack.last_mut().expect("the frame planned").step = Some((operands, combine));
                    }
                }
            }
            let top = stack.last().expect("a frame is on the stack");
            let (operands, _) = top.step.as_ref().expect("planned above");
            let missing = operands.iter().find(|(n, i)| !self.memo.contains_key(&(n.id(), i.clone())));
            if let Some((n, i)) = missing {
                let frame = Frame { node: n.clone(), index: i.clone(), is_root: false, step: None };
                stack.push(frame);
                continue;
            }
            let frame = stack.pop().expect("a frame is on the stack");
            let (operands, combine) = frame.step.expect("planned above");
            let ids: Vec<ExprId> = operands.iter().map(|(n, i)| self.memo[&(n.id(), i.clone())]).collect();
            let id = self.combine(combine, &ids);
            self.memo.insert(key, id);
        }
        self.memo[&(node.id(), index.to_vec())]
    }

    /// What building `node` at `index` needs (no recursion: operands are listed, not built).
    fn plan(&mut self, node: &NodeRef, index: &[IndexExpr], is_root: bool) -> Step {
        let dtype = node.dtype;
        let leaf = matches!(node.op, Op::Input(_) | Op::Array(_));
        if leaf || !is_root || !self.roots.contains(&node.id()) {
            if let Some(&buffer) = self.buffer_of.get(&node.id()) {
                return Step::Done(self.load(buffer, node, index));
            }
        }
        let src = |i: usize| node.srcs[i].clone();
        let at = |i: usize, index: Vec<IndexExpr>| (node.srcs[i].clone(), index);
        let same = |n: usize| (0..n).map(|i| (src(i), index.to_vec())).collect::<Vec<_>>();
        match &node.op {
            Op::Input(_) | Op::Array(_) => unreachable!("inputs and constants are always realized"),
            Op::Const(v) => Step::Done(self.push(Expr::Const(*v, dtype))),
            Op::Unary(op) => Step::Needs(same(1), Combine::Unary(*op, dtype)),
            Op::Binary(op) => Step::Needs(same(2), Combine::Binary(*op, src(0).dtype)),
            Op::Where => Step::Needs(same(3), Combine::Where(dtype)),
            Op::Cast => Step::Needs(same(1), Combine::Cast(src(0).dtype, dtype)),
            Op::Reduce(op, axes) if self.straight_line => {
                let points = constant_points(&axes.iter().map(|&a| src(0).shape[a]).collect::<Vec<_>>());
                let operands = points
                    .into_iter()
                    .map(|point| {
                        let mut inner = index.to_vec();
                        for (&a, i) in axes.iter().zip(point) {
                            inner[a] = i;
                        }
                        at(0, inner)
                    })
                    .collect();
                Step::Needs(operands, Combine::Fold { op: *op, dtype })
            }
            Op::Reduce(op, axes) => {
                let mut inner = index.to_vec();
                let mut vars = Vec::new();
                for &a in axes {
                    if src(0).shape[a] == 1 {
                        inner[a] = IndexExpr::constant(0);
                        continue;
                    }
                    let v = self.extents.len();
                    self.extents.push(src(0).shape[a]);
                    inner[a] = IndexExpr::var(v);
                    vars.push(v);
                }
                Step::Needs(vec![at(0, inner)], Combine::Reduce { op: *op, vars, dtype })
            }
            Op::Reshape => {
                let lin = IndexExpr::linearize(index, &node.shape);
                Step::Needs(vec![at(0, IndexExpr::delinearize(&lin, &src(0).shape, &self.extents))], Combine::Forward)
            }
            Op::Permute(perm) => {
                let mut inner = vec![IndexExpr::constant(0); perm.len()];
                for (d, &p) in perm.iter().enumerate() {
                    inner[p] = index[d].clone();
                }
                Step::Needs(vec![at(0, inner)], Combine::Forward)
            }
            Op::Expand => {
                let inner = (0..index.len())
                    .map(|d| if src(0).shape[d] == 1 { IndexExpr::constant(0) } else { index[d].clone() })
                    .collect();
                Step::Needs(vec![at(0, inner)], Combine::Forward)
            }
            Op::Shrink(ranges) => {
                let inner = index.iter().zip(ranges).map(|(i, &(s, _))| i.add_const(s as i64)).collect();
                Step::Needs(vec![at(0, inner)], Combine::Forward)
            }
            Op::Flip(axes) => {
                let inner = (0..index.len())
                    .map(|d| {
                        if axes.contains(&d) {
                            index[d].scale(-1).add_const(node.shape[d] as i64 - 1)
                        } else {
                            index[d].clone()
                        }
                    })
                    .collect();
                Step::Needs(vec![at(0, inner)], Combine::Forward)
            }
            Op::Pad(pads) => self.plan_pad(node, pads, index),
            Op::Gather if self.straight_line && !self.buffer_of.contains_key(&src(0).id()) => {
                // Straight-line code gathers only at captured positions (see
                // `schedule::is_straight_line`): the table is built at each.
                let Op::Array(positions) = &src(1).op else {
                    unreachable!("straight-line gathers read captured positions")
                };
                let k = IndexExpr::linearize(index, &node.shape)
                    .as_constant()
                    .expect("straight-line indices are constants");
                let position = scalar::literal_at(&positions.data, k as usize).expect("the position is in the table");
                let flat = crate::graph::clamp_index(scalar::literal_int(position), src(0).numel());
                let point = IndexExpr::delinearize(&IndexExpr::constant(flat as i64), &src(0).shape, &self.extents);
                Step::Needs(vec![at(0, point)], Combine::Forward)
            }
            Op::Gather => {
                let table = src(0);
                let buffer = *self.buffer_of.get(&table.id()).expect("gather sources are always realized");
                let len = table.numel();
                let in_range = matches!(&src(1).op, Op::Array(positions) if positions.data.indices_within(len));
                Step::Needs(vec![at(1, index.to_vec())], Combine::Gather { buffer, len, dtype, in_range })
            }
            Op::ScatterAdd => unreachable!("scatter-add nodes are always realized"),
        }
    }

    fn plan_pad(&mut self, node: &NodeRef, pads: &[(usize, usize)], index: &[IndexExpr]) -> Step {
        let src = &node.srcs[0];
        let mut bounds = Vec::new();
        let mut inner = Vec::with_capacity(index.len());
        for (d, (i, &(before, _))) in index.iter().zip(pads).enumerate() {
            let lo = before as i64;
            let bound = Bound { expr: i.clone(), lo, hi: lo + src.shape[d] as i64 };
            match self.decide(&bound) {
                Some(true) => {}
                Some(false) => return Step::Done(self.zero(node.dtype)),
                None => bounds.push(bound),
            }
            inner.push(i.add_const(-lo));
        }
        let combine = if bounds.is_empty() { Combine::Forward } else { Combine::Pad { bounds, dtype: node.dtype } };
        Step::Needs(vec![(src.clone(), inner)], combine)
    }

    /// The expression of a node from its operands' expressions.
    fn combine(&mut self, combine: Combine, operands: &[ExprId]) -> ExprId {
        match combine {
            Combine::Unary(op, dtype) => self.push(Expr::Unary(op, operands[0], dtype)),
            Combine::Binary(op, dtype) => self.push(Expr::Binary(op, operands[0], operands[1], dtype)),
            Combine::Where(dtype) => self.push(Expr::Where(operands[0], operands[1], operands[2], dtype)),
            Combine::Cast(from, to) => self.push(Expr::Cast(operands[0], from, to)),
            Combine::Reduce { op, vars, dtype } => self.push(Expr::Reduce { op, vars, body: operands[0], dtype }),
            // From the first element on: `identity op x0` is `x0` (a sum of one -0 aside, as
            // the graph's `x + 0`).
            Combine::Fold { op, dtype } => match operands.split_first() {
                None => self.push(Expr::Const(reduce_identity(op, dtype), dtype)),
                Some((&first, rest)) => {
                    rest.iter().fold(first, |acc, &x| self.push(Expr::Binary(op.into(), acc, x, dtype)))
                }
            },
            Combine::Forward => operands[0],
            Combine::Pad { bounds, dtype } => {
                let cond = self.push(Expr::InBounds(bounds));
                let zero = self.zero(dtype);
                self.push(Expr::Where(cond, operands[0], zero, dtype))
            }
            Combine::Gather { buffer, len, dtype, in_range } => {
                self.push(Expr::Gather { buffer, index: operands[0], len, dtype, in_range })
            }
        }
    }

    /// `Some(true)` if the bound always holds, `Some(false)` if never, `None` if it depends.
    fn decide(&self, bound: &Bound) -> Option<bool> {
        let (lo, hi) = bound.expr.bounds(&self.extents);
        if lo >= bound.lo && hi < bound.hi {
            Some(true)
        } else if hi < bound.lo || lo >= bound.hi {
            Some(false)
        } else {
            None
        }
    }

    /// `buffer[index]`; a captured constant's element at a constant index is a literal.
    fn load(&mut self, buffer: BufferId, node: &NodeRef, index: &[IndexExpr]) -> ExprId {
        let index = IndexExpr::linearize(index, &node.shape);
        if let (Op::Array(array), Some(k)) = (&node.op, index.as_constant()) {
            if let Some(value) = usize::try_from(k).ok().and_then(|k| scalar::literal_at(&array.data, k)) {
                let structural_zero = array.structural && value.is(0.0);
                return self.push(if structural_zero {
                    Expr::Zero(node.dtype)
                } else {
                    Expr::Const(value, node.dtype)
                });
            }
        }
        self.push(Expr::Load { buffer, index, len: node.numel(), dtype: node.dtype })
    }
}

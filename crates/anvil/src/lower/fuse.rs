//! Builds one kernel: pushes index expressions from a realized node down through inlined
//! elementwise, movement and reduction nodes until they reach buffers.

use super::index::IndexExpr;
use super::kernel::{Bound, BufferId, Expr, ExprId, Kernel, Scatter};
use crate::dtype::DType;
use crate::graph::{scalar, NodeRef, Op};
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
    // Axes of extent 1 need no loop: their index is the constant 0.
    let index: Vec<IndexExpr> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { IndexExpr::constant(0) } else { IndexExpr::var(d) })
        .collect();
    let roots = stores.iter().map(|(node, _)| builder.build(node, &index, true)).collect();
    let outputs = stores.iter().map(|&(_, b)| b).collect();
    Kernel { outputs, roots, shape, extents: builder.extents, exprs: builder.exprs, scatter: None }
}

/// A scatter-add: loops over the values, adding each into the output at its index.
fn build_scatter_kernel(node: &NodeRef, output: BufferId, buffer_of: &HashMap<u64, BufferId>) -> Kernel {
    let (values, indices) = (&node.srcs[0], &node.srcs[1]);
    let shape = values.shape.clone();
    let mut builder = KernelBuilder::new(buffer_of, Vec::new(), shape.clone());
    let index: Vec<IndexExpr> = shape
        .iter()
        .enumerate()
        .map(|(d, &n)| if n == 1 { IndexExpr::constant(0) } else { IndexExpr::var(d) })
        .collect();
    let value = builder.build(values, &index, false);
    let target = builder.build(indices, &index, false);
    let scatter = Some(Scatter { index: target, len: node.numel() });
    Kernel { outputs: vec![output], roots: vec![value], shape, extents: builder.extents, exprs: builder.exprs, scatter }
}

/// Stack left before growing, and the size of each new stack segment.
pub(crate) const STACK_RED_ZONE: usize = 128 * 1024;
pub(crate) const STACK_GROWTH: usize = 8 * 1024 * 1024;

struct KernelBuilder<'a> {
    buffer_of: &'a HashMap<u64, BufferId>,
    roots: Vec<u64>,
    extents: Vec<usize>,
    exprs: Vec<Expr>,
    dedup: HashMap<Expr, ExprId>,
    memo: HashMap<(u64, Vec<IndexExpr>), ExprId>,
}

impl<'a> KernelBuilder<'a> {
    fn new(buffer_of: &'a HashMap<u64, BufferId>, roots: Vec<u64>, extents: Vec<usize>) -> Self {
        KernelBuilder { buffer_of, roots, extents, exprs: Vec::new(), dedup: HashMap::new(), memo: HashMap::new() }
    }

    fn push(&mut self, expr: Expr) -> ExprId {
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
    fn build(&mut self, node: &NodeRef, index: &[IndexExpr], is_root: bool) -> ExprId {
        let key = (node.id(), index.to_vec());
        if let Some(&id) = self.memo.get(&key) {
            return id;
        }
        // Deep graphs (long unrolled rollouts) recurse deeply: grow the stack on demand.
        let id = stacker::maybe_grow(STACK_RED_ZONE, STACK_GROWTH, || self.build_uncached(node, index, is_root));
        self.memo.insert(key, id);
        id
    }

    fn build_uncached(&mut self, node: &NodeRef, index: &[IndexExpr], is_root: bool) -> ExprId {
        let dtype = node.dtype;
        if !is_root || !self.roots.contains(&node.id()) {
            if let Some(&buffer) = self.buffer_of.get(&node.id()) {
                return self.load(buffer, node, index);
            }
        }
        let src = |i: usize| &node.srcs[i];
        match &node.op {
            Op::Input(_) | Op::Array(_) => unreachable!("inputs and constants are always realized"),
            Op::Const(v) => self.push(Expr::Const(*v, dtype)),
            Op::Unary(op) => {
                let x = self.build(src(0), index, false);
                self.push(Expr::Unary(*op, x, dtype))
            }
            Op::Binary(op) => {
                let a = self.build(src(0), index, false);
                let b = self.build(src(1), index, false);
                self.push(Expr::Binary(*op, a, b, src(0).dtype))
            }
            Op::Where => {
                let c = self.build(src(0), index, false);
                let a = self.build(src(1), index, false);
                let b = self.build(src(2), index, false);
                self.push(Expr::Where(c, a, b, dtype))
            }
            Op::Cast => {
                let x = self.build(src(0), index, false);
                self.push(Expr::Cast(x, src(0).dtype, dtype))
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
                let body = self.build(src(0), &inner, false);
                self.push(Expr::Reduce { op: *op, vars, body, dtype })
            }
            Op::Reshape => {
                let lin = IndexExpr::linearize(index, &node.shape);
                let inner = IndexExpr::delinearize(&lin, &src(0).shape, &self.extents);
                self.build(src(0), &inner, false)
            }
            Op::Permute(perm) => {
                let mut inner = vec![IndexExpr::constant(0); perm.len()];
                for (d, &p) in perm.iter().enumerate() {
                    inner[p] = index[d].clone();
                }
                self.build(src(0), &inner, false)
            }
            Op::Expand => {
                let inner: Vec<IndexExpr> = (0..index.len())
                    .map(|d| if src(0).shape[d] == 1 { IndexExpr::constant(0) } else { index[d].clone() })
                    .collect();
                self.build(src(0), &inner, false)
            }
            Op::Shrink(ranges) => {
                let inner: Vec<IndexExpr> =
                    index.iter().zip(ranges).map(|(i, &(s, _))| i.add_const(s as i64)).collect();
                self.build(src(0), &inner, false)
            }
            Op::Flip(axes) => {
                let inner: Vec<IndexExpr> = (0..index.len())
                    .map(|d| {
                        if axes.contains(&d) {
                            index[d].scale(-1).add_const(node.shape[d] as i64 - 1)
                        } else {
                            index[d].clone()
                        }
                    })
                    .collect();
                self.build(src(0), &inner, false)
            }
            Op::Pad(pads) => self.pad(node, pads, index),
            Op::Gather => {
                let (table, positions) = (src(0), src(1));
                let buffer = *self.buffer_of.get(&table.id()).expect("gather sources are always realized");
                let at = self.build(positions, index, false);
                self.push(Expr::Gather { buffer, index: at, len: table.numel(), dtype })
            }
            Op::ScatterAdd => unreachable!("scatter-add nodes are always realized"),
        }
    }

    fn pad(&mut self, node: &NodeRef, pads: &[(usize, usize)], index: &[IndexExpr]) -> ExprId {
        let src = &node.srcs[0];
        let mut bounds = Vec::new();
        let mut inner = Vec::with_capacity(index.len());
        for (d, (i, &(before, _))) in index.iter().zip(pads).enumerate() {
            let lo = before as i64;
            let bound = Bound { expr: i.clone(), lo, hi: lo + src.shape[d] as i64 };
            match self.decide(&bound) {
                Some(true) => {}
                Some(false) => return self.zero(node.dtype),
                None => bounds.push(bound),
            }
            inner.push(i.add_const(-lo));
        }
        let value = self.build(src, &inner, false);
        if bounds.is_empty() {
            return value;
        }
        let cond = self.push(Expr::InBounds(bounds));
        let zero = self.zero(node.dtype);
        self.push(Expr::Where(cond, value, zero, node.dtype))
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

    fn load(&mut self, buffer: BufferId, node: &NodeRef, index: &[IndexExpr]) -> ExprId {
        let index = IndexExpr::linearize(index, &node.shape);
        self.push(Expr::Load { buffer, index, len: node.numel(), dtype: node.dtype })
    }
}

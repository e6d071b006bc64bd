//! Forward mode: the tangent of every node from the tangents of the inputs, one rule per
//! primitive. Tangents are `Option`s: `None` is a structural zero, which keeps the graphs
//! of derivatives small.

use crate::error::Result;
use crate::graph::{map_graph, BinaryOp, NodeRef, Op, ReduceOp, UnaryOp};
use crate::tensor::Tensor;
use std::collections::HashMap;

/// A tangent: `None` is a structural zero.
pub type Tangent = Option<Tensor>;

/// The tangents of `outputs`, given the tangents of some nodes (usually the inputs).
pub fn jvp_nodes(outputs: &[NodeRef], seeds: &HashMap<u64, Tensor>) -> Result<Vec<Tangent>> {
    map_graph(outputs, |node, srcs: &[&Tangent]| {
        let tangent = match seeds.get(&node.id()) {
            Some(seed) => Some(seed.clone()),
            None if !node.dtype.is_float() || srcs.iter().all(|t| t.is_none()) => None,
            None => tangent_rule(node, &srcs.iter().map(|&t| t.clone()).collect::<Vec<_>>()),
        };
        if let Some(t) = &tangent {
            t.check()?;
        }
        Ok(tangent)
    })
}

fn t(node: &NodeRef) -> Tensor {
    Tensor::from_node(node.clone())
}

/// `a + b` where either may be a structural zero.
pub(crate) fn add(a: Tangent, b: Tangent) -> Tangent {
    match (a, b) {
        (Some(a), Some(b)) => Some(a + b),
        (a, None) => a,
        (None, b) => b,
    }
}

fn scale(t: &Tangent, by: impl FnOnce() -> Tensor) -> Tangent {
    t.as_ref().map(|t| t * by())
}

/// The tangent of `node` from its sources' tangents (at least one is non-zero).
pub(crate) fn tangent_rule(node: &NodeRef, ts: &[Tangent]) -> Tangent {
    let x = || t(&node.srcs[0]);
    let y = || t(node);
    match &node.op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => None,
        Op::Unary(op) => unary_rule(*op, &ts[0], x(), y()),
        Op::Binary(op) => binary_rule(*op, node, &ts[0], &ts[1]),
        Op::Where => {
            let c = t(&node.srcs[0]);
            let zero = || Tensor::full(node.shape.clone(), 0.0, node.dtype);
            Some(c.where_(ts[1].clone().unwrap_or_else(zero), ts[2].clone().unwrap_or_else(zero)))
        }
        Op::Cast => ts[0].as_ref().filter(|_| node.srcs[0].dtype.is_float()).map(|t| t.cast(node.dtype)),
        Op::Reduce(op, axes) => ts[0].as_ref().map(|tx| reduce_rule(*op, axes, node, tx)),
        Op::Reshape => ts[0].as_ref().map(|tx| tx.reshape(node.shape.clone())),
        Op::Permute(perm) => ts[0].as_ref().map(|tx| tx.permute(perm.clone())),
        Op::Expand => ts[0].as_ref().map(|tx| tx.expand(node.shape.clone())),
        Op::Pad(pads) => ts[0].as_ref().map(|tx| tx.pad(pads)),
        Op::Shrink(ranges) => ts[0].as_ref().map(|tx| tx.shrink(ranges)),
        Op::Flip(axes) => ts[0].as_ref().map(|tx| tx.flip(axes.clone())),
        Op::Gather => ts[0].as_ref().map(|tx| tx.take(&t(&node.srcs[1]))),
        Op::ScatterAdd => ts[0].as_ref().map(|tv| Tensor::scatter_add(tv, &t(&node.srcs[1]), node.shape.clone())),
    }
}

/// `t · f'(x)` for `y = f(x)`. Non-smooth points take the usual conventions: `|x|'` and
/// `sign`'s derivative at 0 are 0, `floor` and `ceil` have derivative 0 everywhere.
fn unary_rule(op: UnaryOp, tx: &Tangent, x: Tensor, y: Tensor) -> Tangent {
    let one = 1.0;
    match op {
        UnaryOp::Neg => tx.as_ref().map(|t| -t),
        UnaryOp::Recip => scale(tx, || -(&y * &y)),
        UnaryOp::Sqrt => scale(tx, || 0.5 / &y),
        UnaryOp::Exp => scale(tx, || y.clone()),
        UnaryOp::Log => scale(tx, || x.recip()),
        UnaryOp::Sin => scale(tx, || x.cos()),
        UnaryOp::Cos => scale(tx, || -x.sin()),
        UnaryOp::Tan => scale(tx, || y.square() + one),
        UnaryOp::Asin => scale(tx, || (one - x.square()).rsqrt()),
        UnaryOp::Acos => scale(tx, || -(one - x.square()).rsqrt()),
        UnaryOp::Atan => scale(tx, || (x.square() + one).recip()),
        UnaryOp::Sinh => scale(tx, || x.cosh()),
        UnaryOp::Cosh => scale(tx, || x.sinh()),
        UnaryOp::Tanh => scale(tx, || one - y.square()),
        UnaryOp::Abs => scale(tx, || x.sign()),
        UnaryOp::Floor | UnaryOp::Ceil => None,
    }
}

/// Tangent of a binary op. `maximum`/`minimum` split ties evenly between the operands
/// (deterministic, and the mean of the one-sided derivatives).
fn binary_rule(op: BinaryOp, node: &NodeRef, ta: &Tangent, tb: &Tangent) -> Tangent {
    let (a, b, y) = (t(&node.srcs[0]), t(&node.srcs[1]), t(node));
    let zero = || Tensor::full(node.shape.clone(), 0.0, node.dtype);
    match op {
        BinaryOp::Add => add(ta.clone(), tb.clone()),
        BinaryOp::Sub => add(ta.clone(), tb.as_ref().map(|t| -t)),
        BinaryOp::Mul => add(scale(ta, || b.clone()), scale(tb, || a.clone())),
        BinaryOp::Div => add(scale(ta, || b.recip()), scale(tb, || -(&y / &b))),
        BinaryOp::Pow => add(scale(ta, || &b * a.pow(&b - 1.0)), scale(tb, || &y * a.log())),
        BinaryOp::Max | BinaryOp::Min => {
            let (ta, tb) = (ta.clone().unwrap_or_else(zero), tb.clone().unwrap_or_else(zero));
            let (first, second) = if op == BinaryOp::Max { (a.gt(&b), a.lt(&b)) } else { (a.lt(&b), a.gt(&b)) };
            Some(first.where_(&ta, second.where_(&tb, (&ta + &tb) * 0.5)))
        }
        BinaryOp::Atan2 => {
            let r2 = a.square() + b.square();
            add(scale(ta, || &b / &r2), scale(tb, || -(&a / &r2)))
        }
        BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne => None,
    }
}

/// Tangent of a reduction (kept axes of extent 1). `max`/`min` share the tangent evenly
/// among tied extrema; `prod` uses the exact product of the other factors (no division,
/// so zeros are handled).
fn reduce_rule(op: ReduceOp, axes: &[usize], node: &NodeRef, tx: &Tensor) -> Tensor {
    let x = t(&node.srcs[0]);
    let y = t(node);
    match op {
        ReduceOp::Sum => tx.sum_axes(axes.to_vec(), true),
        ReduceOp::Max | ReduceOp::Min => {
            let mask = x.eq(y.expand(x.shape().to_vec())).cast(node.dtype);
            (tx * &mask).sum_axes(axes.to_vec(), true) / mask.sum_axes(axes.to_vec(), true)
        }
        ReduceOp::Prod => (tx * product_of_others(&x, axes)).sum_axes(axes.to_vec(), true),
    }
}

/// For each element of `x`, the product of the other elements of its reduction group
/// (the axes `axes`), with `x`'s shape.
pub(crate) fn product_of_others(x: &Tensor, axes: &[usize]) -> Tensor {
    let rank = x.ndim();
    let shape = x.shape().to_vec();
    // Move the reduced axes last and flatten them into one axis of length n.
    let kept: Vec<usize> = (0..rank).filter(|d| !axes.contains(d)).collect();
    let perm: Vec<usize> = kept.iter().chain(axes.iter()).copied().collect();
    let n: usize = axes.iter().map(|&a| shape[a]).product();
    let mut flat_shape: Vec<usize> = kept.iter().map(|&d| shape[d]).collect();
    flat_shape.push(n);
    let flat = x.permute(perm.clone()).reshape(flat_shape.clone());
    // others[..., i] = prod_j (i == j ? 1 : x[..., j])
    let eye = Tensor::eye(n).cast(crate::dtype::DType::Bool);
    let rows = flat.unsqueeze(-2);
    let others = eye.where_(1.0, &rows).prod_axes(-1, false).cast(x.dtype());
    let mut inverse = vec![0; rank];
    for (i, &p) in perm.iter().enumerate() {
        inverse[p] = i;
    }
    let permuted_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    others.reshape(permuted_shape).permute(inverse)
}

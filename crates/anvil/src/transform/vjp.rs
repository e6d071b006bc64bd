//! Reverse mode: the cotangents of chosen nodes from the cotangents of the outputs, one
//! transpose rule per primitive. Elementwise ops reuse their forward rules: their
//! Jacobians are diagonal, so the transpose is the same product.

use super::jvp::{add, product_of_others, tangent_rule, Tangent};
use crate::error::Result;
use crate::graph::{toposort, NodeRef, Op, ReduceOp};
use crate::tensor::Tensor;
use std::collections::{HashMap, HashSet};

/// The cotangents of `wrt`, given a cotangent for each of `outputs` (`None` if a node
/// does not influence the outputs).
pub fn vjp_nodes(outputs: &[NodeRef], cotangents: &[Tensor], wrt: &[NodeRef]) -> Result<Vec<Tangent>> {
    let order = toposort(outputs);
    // Only nodes that depend on `wrt` need cotangents.
    let mut needed: HashSet<u64> = wrt.iter().map(|n| n.id()).collect();
    for node in &order {
        if node.srcs.iter().any(|s| needed.contains(&s.id())) && node.dtype.is_float() {
            needed.insert(node.id());
        }
    }
    let mut adjoint: HashMap<u64, Tangent> = HashMap::new();
    for (out, ct) in outputs.iter().zip(cotangents) {
        let entry = adjoint.entry(out.id()).or_default();
        *entry = add(entry.take(), Some(ct.clone()));
    }
    for node in order.iter().rev() {
        let Some(ct) = adjoint.get(&node.id()).cloned().flatten() else { continue };
        if !needed.contains(&node.id()) || node.srcs.is_empty() {
            continue;
        }
        for (i, contribution) in transpose_rule(node, &ct).into_iter().enumerate() {
            let src = &node.srcs[i];
            if let Some(c) = contribution.filter(|_| needed.contains(&src.id()) && src.dtype.is_float()) {
                c.check()?;
                let entry = adjoint.entry(src.id()).or_default();
                *entry = add(entry.take(), Some(c));
            }
        }
    }
    Ok(wrt.iter().map(|w| adjoint.get(&w.id()).cloned().flatten()).collect())
}

fn t(node: &NodeRef) -> Tensor {
    Tensor::from_node(node.clone())
}

/// The cotangent contribution to each source of `node`, given the node's cotangent.
fn transpose_rule(node: &NodeRef, ct: &Tensor) -> Vec<Tangent> {
    let src = &node.srcs[0];
    let only = |x: Tensor| vec![Some(x)];
    // An elementwise op's Jacobian is diagonal: its transpose is its forward rule applied
    // to the cotangent, one operand at a time.
    let diagonal = |i: usize| {
        let mut seeds: Vec<Tangent> = vec![None; node.srcs.len()];
        seeds[i] = Some(ct.clone());
        tangent_rule(node, &seeds)
    };
    match &node.op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => vec![],
        Op::Unary(_) => vec![diagonal(0)],
        Op::Binary(_) => vec![diagonal(0), diagonal(1)],
        Op::Where => vec![None, diagonal(1), diagonal(2)],
        Op::Cast => only(ct.cast(src.dtype)),
        Op::Reduce(op, axes) => {
            let spread = ct.expand(src.shape.clone());
            let x = t(src);
            only(match op {
                ReduceOp::Sum => spread,
                ReduceOp::Max | ReduceOp::Min => {
                    let mask = x.eq(t(node).expand(src.shape.clone())).cast(node.dtype);
                    let count = mask.sum_axes(axes.clone(), true);
                    spread * mask / count.expand(src.shape.clone())
                }
                ReduceOp::Prod => spread * product_of_others(&x, axes),
            })
        }
        Op::Reshape => only(ct.reshape(src.shape.clone())),
        Op::Permute(perm) => {
            let mut inverse = vec![0; perm.len()];
            for (i, &p) in perm.iter().enumerate() {
                inverse[p] = i;
            }
            only(ct.permute(inverse))
        }
        Op::Expand => {
            let axes: Vec<usize> = (0..src.shape.len()).filter(|&d| src.shape[d] != node.shape[d]).collect();
            only(ct.sum_axes(axes, true))
        }
        Op::Pad(pads) => {
            let ranges: Vec<(usize, usize)> = pads.iter().zip(&src.shape).map(|(&(b, _), &n)| (b, b + n)).collect();
            only(ct.shrink(&ranges))
        }
        Op::Shrink(ranges) => {
            let pads: Vec<(usize, usize)> = ranges.iter().zip(&src.shape).map(|(&(s, e), &n)| (s, n - e)).collect();
            only(ct.pad(&pads))
        }
        Op::Flip(axes) => only(ct.flip(axes.clone())),
        Op::Gather => vec![Some(Tensor::scatter_add(ct, &t(&node.srcs[1]), src.shape.clone())), None],
        Op::ScatterAdd => vec![Some(ct.take(&t(&node.srcs[1]))), None],
    }
}

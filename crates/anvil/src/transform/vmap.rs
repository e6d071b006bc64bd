//! Batching: add a leading batch axis to a graph, one rule per primitive.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::graph::{map_graph, Node, NodeRef, Op};
use crate::tensor::Tensor;
use std::collections::HashMap;

/// A node's value after batching: the original node (the same for every batch element), or
/// a tensor with a leading batch axis.
#[derive(Clone)]
enum Value {
    Same(NodeRef),
    Batched(NodeRef),
}

/// Batches the graph computing `outputs`. `batched` replaces some nodes (usually inputs)
/// by values with a leading batch axis of extent `batch`. Every output comes back with that
/// leading axis (outputs that do not depend on the batch are broadcast).
pub fn vmap_nodes(outputs: &[NodeRef], batched: &HashMap<u64, Tensor>, batch: usize) -> Result<Vec<Tensor>> {
    let values = map_graph(outputs, |node, srcs: &[&Value]| {
        Ok(match batched.get(&node.id()) {
            Some(t) => Value::Batched(t.node()?.clone()),
            None if srcs.iter().all(|v| matches!(v, Value::Same(_))) => Value::Same(node.clone()),
            None => {
                check_batched_shape(node, batch)?;
                let srcs: Vec<Value> = srcs.iter().map(|&v| v.clone()).collect();
                Value::Batched(batching_rule(node, &srcs, batch)?)
            }
        })
    })?;
    values.iter().map(|v| lift(v, batch)).map(|n| n.map(Tensor::from_node)).collect()
}

/// The value with a leading batch axis (broadcasting an unbatched one).
fn lift(value: &Value, batch: usize) -> Result<NodeRef> {
    match value {
        Value::Batched(n) => Ok(n.clone()),
        Value::Same(n) => {
            let mut shape = vec![batch];
            shape.extend_from_slice(&n.shape);
            Ok(Tensor::from_node(n.clone()).unsqueeze(0).expand(shape).node()?.clone())
        }
    }
}

/// A batch of `node`s must still be a tensor anvil supports.
fn check_batched_shape(node: &NodeRef, batch: usize) -> Result<()> {
    let shape = batched_shape(batch, &node.shape);
    match crate::shape::checked_numel(&shape) {
        Some(_) => Ok(()),
        None => Err(Error::Transform {
            transform: "vmap",
            function: "<graph>".into(),
            message: format!("a batch of {batch} `{}` results: {}", node.op.name(), crate::shape::too_large(&shape)),
        }),
    }
}

fn batched_shape(batch: usize, shape: &[usize]) -> Vec<usize> {
    let mut s = vec![batch];
    s.extend_from_slice(shape);
    s
}

/// The batched version of `node` (at least one source is batched).
fn batching_rule(node: &NodeRef, srcs: &[Value], batch: usize) -> Result<NodeRef> {
    let shape = batched_shape(batch, &node.shape);
    let lifted = || srcs.iter().map(|v| lift(v, batch)).collect::<Result<Vec<_>>>();
    let shift = |axes: &[usize]| axes.iter().map(|a| a + 1).collect::<Vec<_>>();
    let make = |op: Op, srcs: Vec<NodeRef>| Node::make(op, node.dtype, shape.clone(), srcs);
    Ok(match &node.op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => unreachable!("leaves have no sources"),
        Op::Unary(_) | Op::Binary(_) | Op::Where | Op::Cast | Op::Reshape | Op::Expand => {
            make(node.op.clone(), lifted()?)
        }
        Op::Reduce(op, axes) => make(Op::Reduce(*op, shift(axes)), lifted()?),
        Op::Permute(perm) => {
            let perm = std::iter::once(0).chain(perm.iter().map(|p| p + 1)).collect();
            make(Op::Permute(perm), lifted()?)
        }
        Op::Pad(pads) => make(Op::Pad(std::iter::once((0, 0)).chain(pads.iter().copied()).collect()), lifted()?),
        Op::Shrink(ranges) => {
            make(Op::Shrink(std::iter::once((0, batch)).chain(ranges.iter().copied()).collect()), lifted()?)
        }
        Op::Flip(axes) => make(Op::Flip(shift(axes)), lifted()?),
        Op::Gather => match (&srcs[0], &srcs[1]) {
            (Value::Same(table), Value::Batched(index)) => make(Op::Gather, vec![table.clone(), index.clone()]),
            _ => {
                let [table, index] = [lift(&srcs[0], batch)?, lift(&srcs[1], batch)?];
                let flat = per_batch_positions(&index, node.srcs[0].numel(), batch)?;
                make(Op::Gather, vec![table, flat])
            }
        },
        Op::ScatterAdd => {
            let [values, index] = [lift(&srcs[0], batch)?, lift(&srcs[1], batch)?];
            let flat = per_batch_positions(&index, node.numel(), batch)?;
            make(Op::ScatterAdd, vec![values, flat])
        }
    })
}

/// Positions into a batched buffer of `per_batch` elements each: the per-element index,
/// clamped as the unbatched op would, plus the offset of its batch element.
fn per_batch_positions(index: &NodeRef, per_batch: usize, batch: usize) -> Result<NodeRef> {
    let mut offset_shape = vec![1; index.shape.len()];
    offset_shape[0] = batch;
    let what = || format!("the offsets of a batch of {batch} gathers");
    let offsets = crate::array::try_from_shape_fn(what, &offset_shape, |p| (p[0] * per_batch) as i64)?;
    let clamped = Tensor::from_node(index.clone()).cast(DType::I64).clip(0.0, per_batch.saturating_sub(1) as f64);
    Ok((clamped + Tensor::from_array(&offsets)).node()?.clone())
}

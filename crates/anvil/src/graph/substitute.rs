//! Substitution: the same graph with some nodes replaced (function composition).

use super::node::{map_graph, Node, NodeRef};
use std::collections::HashMap;

/// `outputs` rebuilt with each node in `replacements` (keyed by node id) replaced by a node
/// of the same shape and dtype. A replacement of another shape or dtype is refused: the
/// error is the `(replaced, replacement)` pair.
pub fn substitute(
    outputs: &[NodeRef],
    replacements: &HashMap<u64, NodeRef>,
) -> Result<Vec<NodeRef>, (NodeRef, NodeRef)> {
    map_graph(outputs, |node, srcs: &[&NodeRef]| {
        Ok(match replacements.get(&node.id()) {
            Some(r) if r.shape != node.shape || r.dtype != node.dtype => return Err((node.clone(), r.clone())),
            Some(r) => r.clone(),
            None if node.srcs.iter().zip(srcs).all(|(s, new)| new.id() == s.id()) => node.clone(),
            None => {
                let srcs = srcs.iter().map(|&s| s.clone()).collect();
                Node::make(node.op.clone(), node.dtype, node.shape.clone(), srcs)
            }
        })
    })
}

//! Substitution: the same graph with some nodes replaced (function composition).

use super::node::{toposort, Node, NodeRef};
use std::collections::HashMap;

/// `outputs` rebuilt with each node in `replacements` (keyed by node id) replaced by a node
/// of the same shape and dtype. A replacement of another shape or dtype is refused: the
/// error is the `(replaced, replacement)` pair.
pub fn substitute(
    outputs: &[NodeRef],
    replacements: &HashMap<u64, NodeRef>,
) -> Result<Vec<NodeRef>, (NodeRef, NodeRef)> {
    let mut new: HashMap<u64, NodeRef> = HashMap::new();
    for node in toposort(outputs) {
        let rebuilt = match replacements.get(&node.id()) {
            Some(r) if r.shape != node.shape || r.dtype != node.dtype => return Err((node.clone(), r.clone())),
            Some(r) => r.clone(),
            None if node.srcs.iter().all(|s| new[&s.id()].id() == s.id()) => node.clone(),
            None => {
                let srcs = node.srcs.iter().map(|s| new[&s.id()].clone()).collect();
                Node::make(node.op.clone(), node.dtype, node.shape.clone(), srcs)
            }
        };
        new.insert(node.id(), rebuilt);
    }
    Ok(outputs.iter().map(|o| new[&o.id()].clone()).collect())
}

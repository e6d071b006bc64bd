//! Substitution: the same graph with some nodes replaced (function composition).

use crate::error::{Error, Result};
use crate::graph::{toposort, Node, NodeRef};
use crate::shape::fmt_shape;
use crate::tensor::Tensor;
use std::collections::HashMap;

/// `outputs` rebuilt with each node in `replacements` (keyed by node id) replaced by a
/// tensor of the same shape and dtype; a mismatch is an error at the user's `location`.
pub fn substitute(
    outputs: &[NodeRef],
    replacements: &HashMap<u64, Tensor>,
    location: crate::SourceLocation,
) -> Result<Vec<Tensor>> {
    let mut new: HashMap<u64, NodeRef> = HashMap::new();
    for node in toposort(outputs) {
        let rebuilt = match replacements.get(&node.id()) {
            Some(t) => {
                let r = t.node()?;
                if r.shape != node.shape || r.dtype != node.dtype {
                    return Err(Error::Op {
                        op: "apply",
                        message: format!(
                            "an argument of shape {} ({}) replaces an input of shape {} ({})",
                            fmt_shape(&r.shape),
                            r.dtype,
                            fmt_shape(&node.shape),
                            node.dtype
                        ),
                        location,
                    });
                }
                r.clone()
            }
            None if node.srcs.iter().all(|s| new[&s.id()].id() == s.id()) => node.clone(),
            None => {
                let srcs = node.srcs.iter().map(|s| new[&s.id()].clone()).collect();
                Node::make(node.op.clone(), node.dtype, node.shape.clone(), srcs)
            }
        };
        new.insert(node.id(), rebuilt);
    }
    Ok(outputs.iter().map(|o| Tensor::from_node(new[&o.id()].clone())).collect())
}

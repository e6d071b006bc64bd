//! Batched straight-line regions: nodes computed by one loop over their leading (batch)
//! axis around straight-line code, with nothing stored in between.
//!
//! `vmap` of a small function (a model's step, a rollout) and the directional derivatives
//! of a sparse Jacobian (one per colour) give graphs whose nodes carry a leading batch axis
//! that no operation mixes: per item they are small straight-line programs. As loop kernels
//! most of their nodes would be stored (stacked scalars are read through many movement
//! paths) and run as hundreds of short loops. Instead such a node's whole cone becomes one
//! kernel looping over the items, its body the item's straight-line code; what does not
//! depend on the item (the primal values of a directional derivative) is computed once,
//! before the loop.
//!
//! Which nodes count as batched only decides whether a cone is accepted: the kernel itself
//! is built by the general index rules ([`super::fuse`]), so its values do not depend on it.

use super::schedule::Readers;
use super::LowerOptions;
use crate::graph::{NodeRef, Op};
use std::collections::HashSet;

/// A batched straight-line region: its roots are computed by one kernel.
pub struct Region {
    /// The extent of the leading axis the kernel loops over.
    pub batch: usize,
    /// The nodes computed inside the kernel besides the roots (never stored).
    pub interior: Vec<u64>,
}

/// The region computing `roots` (all of one leading extent) in one kernel, if their cone,
/// down to the nodes in `stops` (buffers that exist anyway) and constants, is small per item
/// and keeps the leading axis apart, and if no node inside it is read outside it (except
/// cheap ones, which cost nothing to recompute).
pub fn batched_region(
    roots: &[NodeRef],
    stops: &HashSet<u64>,
    readers: &Readers,
    options: &LowerOptions,
) -> Option<Region> {
    let batch = *roots.first()?.shape.first()?;
    let empty = roots.iter().any(|r| r.numel() == 0);
    if batch < 2 || empty || roots.iter().any(|r| r.shape.first() != Some(&batch)) {
        return None;
    }
    let order = cone(roots, stops);
    let mut batched: HashSet<u64> = HashSet::new();
    // The code grows with the work: a store per element of an item, and an operation per
    // element of each node that computes (elements no one reads are not even built).
    let mut work: usize = roots.iter().map(|r| r.numel() / batch).sum();
    for node in &order {
        let from_batched = node.srcs.iter().any(|s| batched.contains(&s.id()) || is_batched_stop(s, stops, batch));
        let is_batched = match node.op {
            Op::Expand if !from_batched => node.srcs[0].shape.first() == Some(&1) && node.shape.first() == Some(&batch),
            _ => from_batched,
        };
        let per_item = if is_batched {
            if !keeps_batch_axis(node, batch) {
                return None;
            }
            batched.insert(node.id());
            node.numel() / batch
        } else {
            node.numel()
        };
        // Items are small tensors: large ones are a loop nest's job. (Movement makes no code
        // of its own: only the elements read are built.)
        let too_large = !node.op.is_movement() && per_item > options.batched_max_numel;
        let gathers_computed = matches!(node.op, Op::Gather) && !stops.contains(&node.srcs[0].id());
        // Straight-line code writes a reduction out term by term: a large one is a loop's job
        // (a matrix product's).
        let large_reduction = matches!(node.op, Op::Reduce(..))
            && node.srcs[0].numel() / if is_batched { batch } else { 1 } > options.batched_max_numel;
        if matches!(node.op, Op::ScatterAdd) || too_large || gathers_computed || large_reduction {
            return None;
        }
        work += match node.op {
            Op::Reduce(..) => per_item * (node.srcs[0].numel() / node.numel().max(1)),
            _ if node.op.is_movement() => 0,
            _ => per_item,
        };
        if work > options.batched_max_work {
            return None;
        }
    }
    if !roots.iter().all(|r| batched.contains(&r.id())) {
        return None;
    }
    let root_ids: HashSet<u64> = roots.iter().map(|r| r.id()).collect();
    let inside: HashSet<u64> = order.iter().map(|n| n.id()).collect();
    let private = order
        .iter()
        .filter(|n| !root_ids.contains(&n.id()) && !readers.cheap.contains(&n.id()))
        .all(|n| readers.users.get(&n.id()).is_none_or(|us| us.iter().all(|u| inside.contains(&u.id()))));
    private
        .then(|| Region { batch, interior: order.iter().map(|n| n.id()).filter(|id| !root_ids.contains(id)).collect() })
}

/// A buffer that exists anyway, read as batched when its leading axis is the batch.
fn is_batched_stop(node: &NodeRef, stops: &HashSet<u64>, batch: usize) -> bool {
    stops.contains(&node.id()) && node.shape.first() == Some(&batch)
}

/// True if `node` (batched, as is one of its operands) computes item `b` from item `b`
/// of its batched operands only.
fn keeps_batch_axis(node: &NodeRef, batch: usize) -> bool {
    if node.shape.first() != Some(&batch) {
        return false;
    }
    match &node.op {
        Op::Reduce(_, axes) | Op::Flip(axes) => !axes.contains(&0),
        Op::Reshape => node.srcs[0].shape.first() == Some(&batch),
        Op::Permute(perm) => perm[0] == 0,
        Op::Pad(pads) => pads[0] == (0, 0),
        Op::Shrink(ranges) => ranges[0] == (0, batch),
        _ => true,
    }
}

/// The nodes `roots` are computed from, down to `stops` and constants (excluded), operands
/// before their users (an iterative post-order walk: graphs can be deep).
fn cone(roots: &[NodeRef], stops: &HashSet<u64>) -> Vec<NodeRef> {
    let mut order = Vec::new();
    let mut seen: HashSet<u64> = HashSet::new();
    let mut stack: Vec<(NodeRef, bool)> = roots.iter().rev().map(|r| (r.clone(), false)).collect();
    while let Some((node, expanded)) = stack.pop() {
        if expanded {
            order.push(node);
            continue;
        }
        if !seen.insert(node.id()) {
            continue;
        }
        stack.push((node.clone(), true));
        for src in node.srcs.iter().rev() {
            let is_leaf = matches!(src.op, Op::Const(_) | Op::Input(_) | Op::Array(_));
            if !is_leaf && !stops.contains(&src.id()) && !seen.contains(&src.id()) {
                stack.push((src.clone(), false));
            }
        }
    }
    order
}

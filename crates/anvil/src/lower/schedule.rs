//! Which nodes become buffers (the realize set) and in what order kernels run.
//!
//! A node is realized when it is an input, a captured constant or an output, or when
//! inlining it into its consumers would compute it more than once per element: it feeds
//! more than one kernel, it is broadcast (reached through an `expand`), or it is read at
//! two different indices (through two different movement paths). Constants and loads
//! (with casts and movement on top) are cheap and always inlined.

use crate::graph::{NodeRef, Op};
use std::collections::{HashMap, HashSet};

/// How a not-yet-realized node is used by the kernels that will inline it.
#[derive(Clone, Default)]
struct Uses {
    /// The realized nodes whose kernels read this node (at most two are kept: two means many).
    owners: Vec<u64>,
    /// Reached through an `expand` that enlarges it.
    broadcast: bool,
    /// Number of distinct index paths it is read through.
    paths: usize,
}

/// The ids of the nodes that get their own buffer, given all nodes in topological order.
pub fn realize_set(order: &[NodeRef], outputs: &[NodeRef]) -> HashSet<u64> {
    let mut users: HashMap<u64, Vec<&NodeRef>> = HashMap::new();
    for node in order {
        for src in &node.srcs {
            users.entry(src.id()).or_default().push(node);
        }
    }
    let cheap = cheap_nodes(order);
    let mut realized: HashSet<u64> = outputs.iter().map(|o| o.id()).collect();
    let mut uses: HashMap<u64, Uses> = HashMap::new();
    for node in order.iter().rev() {
        let id = node.id();
        if matches!(node.op, Op::Input(_) | Op::Array(_)) {
            realized.insert(id);
        }
        if realized.contains(&id) {
            continue;
        }
        let mut u = Uses::default();
        let mut same_index_use = false;
        for user in users.get(&id).map(Vec::as_slice).unwrap_or_default() {
            if realized.contains(&user.id()) {
                u.owners.push(user.id());
                same_index_use = true;
                continue;
            }
            let user_uses = &uses[&user.id()];
            u.owners.extend(&user_uses.owners);
            if user.op.is_movement() {
                u.broadcast |= user_uses.broadcast
                    || (matches!(user.op, Op::Expand) && user.numel() > node.numel());
                u.paths += user_uses.paths;
            } else {
                same_index_use = true;
            }
        }
        u.paths += same_index_use as usize;
        u.owners.sort_unstable();
        u.owners.dedup();
        u.owners.truncate(2);
        let duplicated = u.owners.len() > 1 || u.broadcast || u.paths > 1;
        if duplicated && !cheap.contains(&id) && !node.op.is_movement() {
            realized.insert(id);
        } else {
            if !node.op.is_movement() {
                u.broadcast = false;
                u.paths = 1;
            }
            uses.insert(id, u);
        }
    }
    realized
}

/// Nodes that cost no more to recompute than to load: constants, loads, and casts and
/// movement of those.
fn cheap_nodes(order: &[NodeRef]) -> HashSet<u64> {
    let mut cheap = HashSet::new();
    for node in order {
        let is_cheap = match node.op {
            Op::Const(_) | Op::Input(_) | Op::Array(_) => true,
            Op::Cast => cheap.contains(&node.srcs[0].id()),
            _ => node.op.is_movement() && cheap.contains(&node.srcs[0].id()),
        };
        if is_cheap {
            cheap.insert(node.id());
        }
    }
    cheap
}

//! Hash-consed graph nodes.

use super::op::Op;
use super::simplify;
use crate::dtype::DType;
use crate::shape::Shape;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

/// A shared reference to a node. Structurally equal nodes are the same allocation.
pub type NodeRef = Arc<Node>;

/// One node of the graph: an op applied to source nodes, with its result's dtype and shape.
pub struct Node {
    id: u64,
    /// The primitive op.
    pub op: Op,
    /// Element type of the result.
    pub dtype: DType,
    /// Shape of the result.
    pub shape: Shape,
    /// Operands.
    pub srcs: Vec<NodeRef>,
}

impl Node {
    /// A process-unique id; equal ids mean the same node.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Builds (or finds) the node `op(srcs)`, applying the local simplification rules first.
    ///
    /// Callers (the tensor layer and the transforms) have checked shapes and dtypes.
    pub fn make(op: Op, dtype: DType, shape: Shape, srcs: Vec<NodeRef>) -> NodeRef {
        if let Some(simpler) = simplify::simplify(&op, dtype, &shape, &srcs) {
            return simpler;
        }
        intern(op, dtype, shape, srcs)
    }

    /// Builds the node `op(srcs)` exactly as given (no simplification).
    pub fn make_unsimplified(op: Op, dtype: DType, shape: Shape, srcs: Vec<NodeRef>) -> NodeRef {
        intern(op, dtype, shape, srcs)
    }

    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// The scalar operations computing this node from its sources: none for inputs,
    /// captured arrays and movement, the source's elements for a reduction, else one per
    /// element.
    pub fn work(&self) -> usize {
        match self.op {
            Op::Input(_) | Op::Array(_) => 0,
            Op::Reduce(..) => self.srcs[0].numel(),
            _ if self.op.is_movement() => 0,
            _ => self.numel(),
        }
    }
}

/// Shows the node and its sources' ids, not the sources themselves: printing a graph must
/// not recurse on its depth.
impl std::fmt::Debug for Node {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let srcs: Vec<u64> = self.srcs.iter().map(|s| s.id).collect();
        write!(f, "#{} = {:?} {} {:?} <- {:?}", self.id, self.op, self.dtype, self.shape, srcs)
    }
}

/// Dropping the last handle to a long chain would otherwise drop each source from inside its
/// user's destructor, one stack frame per node: release the sources from an explicit stack.
impl Drop for Node {
    fn drop(&mut self) {
        let mut pending = std::mem::take(&mut self.srcs);
        while let Some(src) = pending.pop() {
            if let Some(mut last) = Arc::into_inner(src) {
                pending.append(&mut last.srcs);
            }
        }
    }
}

type Key = (Op, DType, Shape, Vec<u64>);

struct Interner {
    nodes: HashMap<Key, Weak<Node>>,
    prune_at: usize,
}

fn interner() -> &'static Mutex<Interner> {
    static INTERNER: OnceLock<Mutex<Interner>> = OnceLock::new();
    INTERNER.get_or_init(|| Mutex::new(Interner { nodes: HashMap::new(), prune_at: 1024 }))
}

/// Returns the existing node with this structure, or creates it.
pub(crate) fn intern(op: Op, dtype: DType, shape: Shape, srcs: Vec<NodeRef>) -> NodeRef {
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let key: Key = (op, dtype, shape, srcs.iter().map(|s| s.id).collect());
    // A poisoned lock only means another thread panicked mid-insert; the map is still valid.
    let mut table = interner().lock().unwrap_or_else(|e| e.into_inner());
    if let Some(node) = table.nodes.get(&key).and_then(Weak::upgrade) {
        return node;
    }
    if table.nodes.len() >= table.prune_at {
        table.nodes.retain(|_, w| w.strong_count() > 0);
        table.prune_at = (table.nodes.len() * 2).max(1024);
    }
    let (op, dtype, shape, _) = key.clone();
    let node = Arc::new(Node { id: NEXT_ID.fetch_add(1, Ordering::Relaxed), op, dtype, shape, srcs });
    table.nodes.insert(key, Arc::downgrade(&node));
    node
}

/// The one forward traversal of a graph: visits every node reachable from `outputs`,
/// sources first, computing its value from the node and its sources' values (`visit`), and
/// returns the outputs' values. A value is dropped as soon as no node left to visit reads
/// it. Evaluation, substitution, forward mode, batching, sparsity detection and banded
/// derivatives are each one `visit`.
///
/// ```
/// use anvil::{internals::graph::map_graph, DType, Tensor};
/// let x = Tensor::input(0, 3, DType::F64);
/// let y = (&x + &x).sin();
/// // Depth of each node: inputs 0, then one more than the deepest source.
/// let depth = map_graph(&[y.node().unwrap().clone()], |_, srcs: &[&usize]| -> Result<usize, ()> {
///     Ok(srcs.iter().map(|d| **d + 1).max().unwrap_or(0))
/// });
/// assert_eq!(depth, Ok(vec![2]));
/// ```
pub fn map_graph<V, E>(outputs: &[NodeRef], mut visit: impl FnMut(&NodeRef, &[&V]) -> Result<V, E>) -> Result<Vec<V>, E>
where
    V: Clone,
{
    use std::collections::{HashMap, HashSet};
    let order = toposort(outputs);
    // Readers left per node: a value no later node reads is dropped at once (the graphs of
    // big sparse derivatives hold one value per node, each as large as the node).
    let mut readers: HashMap<u64, usize> = HashMap::new();
    for node in &order {
        for s in &node.srcs {
            *readers.entry(s.id).or_default() += 1;
        }
    }
    let kept: HashSet<u64> = outputs.iter().map(|o| o.id).collect();
    let mut values: HashMap<u64, V> = HashMap::new();
    for node in &order {
        let srcs: Vec<&V> = node.srcs.iter().map(|s| &values[&s.id]).collect();
        let value = visit(node, &srcs)?;
        for s in &node.srcs {
            let left = readers.get_mut(&s.id).expect("counted");
            *left -= 1;
            if *left == 0 && !kept.contains(&s.id) {
                values.remove(&s.id);
            }
        }
        values.insert(node.id, value);
    }
    // Each output's value, moved out at its last occurrence (cloned only for repeats).
    let last: HashMap<u64, usize> = outputs.iter().enumerate().map(|(k, o)| (o.id, k)).collect();
    Ok(outputs
        .iter()
        .enumerate()
        .map(|(k, o)| if last[&o.id] == k { values.remove(&o.id) } else { values.get(&o.id).cloned() })
        .map(|v| v.expect("every output was visited"))
        .collect())
}

/// All nodes reachable from `roots`, sources before their users.
pub fn toposort(roots: &[NodeRef]) -> Vec<NodeRef> {
    let mut order = Vec::new();
    let mut seen = std::collections::HashSet::new();
    // Iterative post-order DFS: graphs from AD can be deep enough to overflow a recursive one.
    let mut stack: Vec<(NodeRef, usize)> = Vec::new();
    for root in roots {
        if !seen.insert(root.id) {
            continue;
        }
        stack.push((root.clone(), 0));
        while let Some((node, next)) = stack.pop() {
            if next < node.srcs.len() {
                let child = node.srcs[next].clone();
                stack.push((node, next + 1));
                if seen.insert(child.id) {
                    stack.push((child, 0));
                }
            } else {
                order.push(node);
            }
        }
    }
    order
}

//! Which nodes become buffers (the realize set) and in what order kernels run.
//!
//! A small graph (every node small, few scalar operations in all, as [`LowerOptions`]
//! says: a robot model, a cost and their derivative blocks) is one straight-line kernel,
//! and nothing but its outputs is stored. Otherwise:
//! A node is realized when it is an input, a captured constant or an output, or when
//! inlining it into its consumers would compute it more than once per element: it feeds
//! more than one kernel, it is broadcast (reached through an `expand`), or it is read at
//! two different indices (through two different movement paths), or when its kernel
//! would compute it with a reduction and vectorisable math reads it (the math then runs in
//! a loop of its own). Constants and loads (with casts and movement on top), and selections
//! among constants, are cheap and always inlined.

use super::index::IndexExpr;
use super::kernel::Kernel;
use super::LowerOptions;
use crate::graph::{toposort, NodeRef, Op};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

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

/// True if the graph of `order` runs as one straight-line kernel: every node small, the
/// work in all small, and every gathered table a leaf (a buffer before the kernel runs).
pub fn is_straight_line(order: &[NodeRef], options: &LowerOptions) -> bool {
    let leaf = |n: &NodeRef| matches!(n.op, Op::Input(_) | Op::Array(_));
    let mut work = 0;
    for node in order {
        if leaf(node) {
            continue;
        }
        // A gather from a computed table needs the table stored, unless its positions are
        // captured: then each is known, and the table is built at it.
        let gathers_computed =
            matches!(node.op, Op::Gather) && !leaf(&node.srcs[0]) && !matches!(node.srcs[1].op, Op::Array(_));
        if matches!(node.op, Op::ScatterAdd) || gathers_computed || node.numel() > options.straight_line_max_numel {
            return false;
        }
        work += node.work();
        if work > options.straight_line_max_work {
            return false;
        }
    }
    true
}

/// Splits the outputs that kernels compute into groups that one kernel can compute
/// together: same shape, and none reachable from another. Returns indices into `outputs`.
///
/// One loop nest for several outputs shares their common subexpressions instead of
/// realizing them (think of the state of a simulation that all outputs depend on).
pub fn output_groups(outputs: &[NodeRef], computed: &[usize]) -> Vec<Vec<usize>> {
    let reach: HashMap<usize, HashSet<u64>> =
        computed.iter().map(|&k| (k, toposort(&outputs[k..=k]).iter().map(|n| n.id()).collect())).collect();
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for &k in computed {
        let fits = |g: &Vec<usize>| {
            // A scatter-add loops over its values, not its output: it shares no loop nest.
            let scatter = |i: usize| matches!(outputs[i].op, Op::ScatterAdd);
            !scatter(k)
                && g.iter().all(|&m| {
                    !scatter(m)
                        && outputs[m].shape == outputs[k].shape
                        && !reach[&k].contains(&outputs[m].id())
                        && !reach[&m].contains(&outputs[k].id())
                })
        };
        match groups.iter_mut().find(|g| fits(g)) {
            Some(g) => g.push(k),
            None => groups.push(vec![k]),
        }
    }
    groups
}

/// The nodes that get a buffer, and the reshapes that share their source's buffer.
pub struct Realization {
    /// Ids of the nodes computed into their own buffer.
    pub realized: HashSet<u64>,
    /// A reshape read through its buffer (by a gather) → the node whose buffer it shares
    /// (a reshape keeps the row-major layout, so no copy is needed).
    pub aliases: HashMap<u64, u64>,
}

/// The ids of the nodes that get their own buffer, given all nodes in topological order.
/// `kernel_of` maps outputs computed together to one representative id; `inlined` maps the
/// nodes computed inside a batched region's kernel to the region's root (never stored).
///
/// `windows` are the sources of output windows (see [`window_of`]).
///
/// An elementwise epilogue is split from its reduction: a node computed in a reduction's
/// kernel and read by vectorisable math (`tanh(W x + b)`) is realized, so that the math runs
/// in a loop of its own, vectorised, instead of once per output element after the
/// reduction's loop, scalar (about 14 ns per `tanh` against 1.3 ns).
pub fn realize_set(
    order: &[NodeRef],
    outputs: &[NodeRef],
    kernel_of: &HashMap<u64, u64>,
    inlined: &HashMap<u64, u64>,
    readers: &Readers,
    windows: &HashSet<u64>,
) -> Realization {
    let first = realize_walk(order, outputs, kernel_of, inlined, readers, &HashSet::new(), windows);
    let epilogues = epilogue_inputs(order, &first.realized, inlined, readers);
    if epilogues.is_empty() {
        first
    } else {
        realize_walk(order, outputs, kernel_of, inlined, readers, &epilogues, windows)
    }
}

/// The operands of vectorisable math that a kernel would compute together with a
/// reduction (see [`realize_set`]), given a realize set without them.
fn epilogue_inputs(
    order: &[NodeRef],
    realized: &HashSet<u64>,
    inlined: &HashMap<u64, u64>,
    readers: &Readers,
) -> HashSet<u64> {
    // Whether a node's kernel computes a reduction inline to produce it.
    let mut reduces: HashSet<u64> = HashSet::new();
    for node in order {
        let inline = |s: &NodeRef| !realized.contains(&s.id()) && reduces.contains(&s.id());
        if matches!(node.op, Op::Reduce(..)) || node.srcs.iter().any(inline) {
            reduces.insert(node.id());
        }
    }
    let mut forced = HashSet::new();
    for node in order.iter().filter(|n| is_vector_math(&n.op) && !inlined.contains_key(&n.id())) {
        for mut src in &node.srcs {
            // Movement is index arithmetic: store what it reads (a reduction behind the
            // reshape of `sum_axes`).
            while src.op.is_movement() && !realized.contains(&src.id()) {
                src = &src.srcs[0];
            }
            let computed_here = !realized.contains(&src.id()) && !readers.cheap.contains(&src.id());
            if computed_here && reduces.contains(&src.id()) {
                forced.insert(src.id());
            }
        }
    }
    forced
}

/// Math that a loop of its own vectorises (vector libm) and that costs many times a
/// store and a load when scalar.
fn is_vector_math(op: &Op) -> bool {
    use crate::graph::{BinaryOp, UnaryOp};
    match op {
        Op::Unary(u) => {
            !matches!(u, UnaryOp::Neg | UnaryOp::Recip | UnaryOp::Sqrt | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil)
        }
        Op::Binary(b) => matches!(b, BinaryOp::Pow | BinaryOp::Atan2),
        _ => false,
    }
}

/// One walk of the realize set (see [`realize_set`]), with `forced` nodes realized besides
/// the outputs, and the sources of output `windows` computed in their output's kernels.
fn realize_walk(
    order: &[NodeRef],
    outputs: &[NodeRef],
    kernel_of: &HashMap<u64, u64>,
    inlined: &HashMap<u64, u64>,
    readers: &Readers,
    forced: &HashSet<u64>,
    windows: &HashSet<u64>,
) -> Realization {
    let (users, cheap) = (&readers.users, &readers.cheap);
    let mut realized: HashSet<u64> = outputs.iter().map(|o| o.id()).chain(forced.iter().copied()).collect();
    let mut aliases: HashMap<u64, u64> = HashMap::new();
    let mut uses: HashMap<u64, Uses> = HashMap::new();
    for node in order.iter().rev() {
        let id = node.id();
        // Inputs and constants are buffers; a scatter-add is its own kind of kernel; a
        // gather reads its source at computed positions, so the source must be a buffer.
        let gathered =
            users.get(&id).is_some_and(|us| us.iter().any(|u| matches!(u.op, Op::Gather) && u.srcs[0].id() == id));
        // Read through a reshape that merges axes, a computation would be inlined under a
        // division and remainder of the reader's index (no vectorising, no splitting at
        // its conditions): it is computed in a loop nest of its own shape instead.
        let merged = users.get(&id).is_some_and(|us| us.iter().any(|u| merges_axes(u)))
            && !cheap.contains(&id)
            && !node.op.is_movement()
            && !windows.contains(&id);
        let is_output = realized.contains(&id);
        if gathered && !is_output && matches!(node.op, Op::Reshape) {
            // Gather straight from the source's buffer: same elements, same order.
            aliases.insert(id, node.srcs[0].id());
        } else if matches!(node.op, Op::Input(_) | Op::Array(_) | Op::ScatterAdd)
            || gathered
            || merged
            || aliases.values().any(|&target| target == id)
        {
            realized.insert(id);
        }
        if realized.contains(&id) {
            continue;
        }
        if let Some(&root) = inlined.get(&id) {
            // Read by its region's kernel alone (cheap nodes may be read elsewhere too).
            uses.insert(id, Uses { owners: vec![root], broadcast: false, paths: 1 });
            continue;
        }
        let mut u = Uses::default();
        let mut same_index_use = false;
        for user in users.get(&id).map(Vec::as_slice).unwrap_or_default() {
            if realized.contains(&user.id()) {
                u.owners.push(kernel_of.get(&user.id()).copied().unwrap_or(user.id()));
                same_index_use = true;
                continue;
            }
            let user_uses = &uses[&user.id()];
            u.owners.extend(&user_uses.owners);
            if user.op.is_movement() {
                u.broadcast |= user_uses.broadcast || (matches!(user.op, Op::Expand) && user.numel() > node.numel());
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
    Realization { realized, aliases }
}

/// An output that is a run of a matrix's elements in row-major order (the bands of a banded
/// derivative side by side, flattened and sliced to its CSC values): the kernels computing
/// the matrix store the run straight into the output (see [`super::fuse::build_window_kernels`]),
/// with no buffer for the matrix and no copy.
pub struct Window {
    /// The matrix.
    pub source: NodeRef,
    /// Where in its row-major order the output starts.
    pub start: usize,
}

/// `output`'s [`Window`], if it is a slice of the flattened `source` (or the whole of it),
/// `source` a computed matrix read by nothing else.
pub fn window_of(output: &NodeRef, readers: &Readers) -> Option<Window> {
    let only_reader = |node: &NodeRef, reader: &NodeRef| {
        readers.users.get(&node.id()).is_some_and(|us| us.len() == 1 && us[0].id() == reader.id())
    };
    let (flat, start) = match &output.op {
        Op::Shrink(ranges) if only_reader(&output.srcs[0], output) => (&output.srcs[0], ranges[0].0),
        _ => (output, 0),
    };
    let source = flat.srcs.first()?;
    let computed = !source.op.is_movement()
        && !readers.cheap.contains(&source.id())
        && !matches!(source.op, Op::Input(_) | Op::Array(_) | Op::ScatterAdd);
    (output.shape.len() == 1
        && flat.shape.len() == 1
        && merges_axes(flat)
        && source.shape.len() == 2
        && source.shape[1] > 0
        && computed
        && only_reader(source, flat))
    .then(|| Window { source: source.clone(), start })
}

/// True if `node` is a reshape reading its source at a division or remainder of its own
/// index (it merges axes of the source, as `flatten` of a matrix does).
fn merges_axes(node: &NodeRef) -> bool {
    if !matches!(node.op, Op::Reshape) {
        return false;
    }
    let point = IndexExpr::loop_point(&node.shape);
    let linear = IndexExpr::linearize(&point, &node.shape);
    IndexExpr::delinearize(&linear, &node.srcs[0].shape, &node.shape).iter().any(|ix| !ix.is_affine())
}

/// Who reads each node, and which nodes cost nothing to recompute: what the realize set and
/// the batched regions both consult, computed once.
pub struct Readers<'g> {
    /// The nodes reading each node (keyed by its id), in topological order.
    pub users: HashMap<u64, Vec<&'g NodeRef>>,
    /// Nodes that cost no more to recompute than to load.
    pub cheap: HashSet<u64>,
}

impl<'g> Readers<'g> {
    /// The readers within `order` (all nodes, in topological order).
    pub fn of(order: &'g [NodeRef]) -> Self {
        let mut users: HashMap<u64, Vec<&'g NodeRef>> = HashMap::new();
        for node in order {
            for src in &node.srcs {
                users.entry(src.id()).or_default().push(node);
            }
        }
        Readers { users, cheap: cheap_nodes(order) }
    }
}

/// Nodes that cost no more to recompute than to load: constants, loads, and casts and
/// movement of those; and selections among constants by constant conditions (a mask joined
/// from runs), which code generation decides wherever the loop is split at their bounds.
fn cheap_nodes(order: &[NodeRef]) -> HashSet<u64> {
    let mut cheap = HashSet::new();
    let mut constant = HashSet::new();
    for node in order {
        let from = |set: &HashSet<u64>| node.srcs.iter().all(|s| set.contains(&s.id()));
        let is_constant = match node.op {
            Op::Const(_) => true,
            Op::Cast | Op::Where => from(&constant),
            _ => node.op.is_movement() && from(&constant),
        };
        let is_cheap = is_constant
            || match node.op {
                Op::Input(_) | Op::Array(_) => true,
                Op::Cast => cheap.contains(&node.srcs[0].id()),
                _ => node.op.is_movement() && cheap.contains(&node.srcs[0].id()),
            };
        if is_constant {
            constant.insert(node.id());
        }
        if is_cheap {
            cheap.insert(node.id());
        }
    }
    cheap
}

/// Orders kernels so that each runs after the kernels writing the buffers it reads,
/// keeping the given order where dependencies allow (it is close to topological already;
/// output groups may need to move). Kahn's algorithm, always taking the earliest ready
/// kernel.
pub fn order_kernels(kernels: Vec<Kernel>) -> Vec<Kernel> {
    let writer: HashMap<usize, usize> =
        kernels.iter().enumerate().flat_map(|(k, kernel)| kernel.outputs.iter().map(move |&b| (b, k))).collect();
    let mut waiting_on = vec![0usize; kernels.len()];
    let mut readers: Vec<Vec<usize>> = vec![Vec::new(); kernels.len()];
    for (k, kernel) in kernels.iter().enumerate() {
        let mut deps: Vec<usize> =
            kernel.inputs().iter().filter_map(|b| writer.get(b).copied()).filter(|&w| w != k).collect();
        deps.sort_unstable();
        deps.dedup();
        waiting_on[k] = deps.len();
        for d in deps {
            readers[d].push(k);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..kernels.len()).filter(|&k| waiting_on[k] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(kernels.len());
    while let Some(Reverse(k)) = ready.pop() {
        order.push(k);
        for &r in &readers[k] {
            waiting_on[r] -= 1;
            if waiting_on[r] == 0 {
                ready.push(Reverse(r));
            }
        }
    }
    assert_eq!(order.len(), kernels.len(), "kernel dependencies are acyclic: grouped outputs never reach each other");
    let mut slots: Vec<Option<Kernel>> = kernels.into_iter().map(Some).collect();
    order.into_iter().map(|k| slots[k].take().expect("each kernel placed once")).collect()
}

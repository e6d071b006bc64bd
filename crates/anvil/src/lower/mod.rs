//! Lowering: graph → kernels (straight-line code for small graphs, fused loop nests for the
//! rest) over buffers, with a planned workspace.
//!
//! Input: the output nodes of a traced function and its input specs. Output: a
//! [`Program`]. Stages: [`schedule`] picks straight-line code or loops and, for loops, the
//! realize set, in which [`batch`] finds the regions computed by one loop over their items
//! around straight-line code (or written out item by item, when the items are a
//! derivative's seed directions and that folds most of them away), and the outputs that
//! are a run of a matrix's elements (written by the matrix's own kernels, see
//! [`schedule::Window`]); [`fuse`] builds each
//! kernel (pushing [`index`] expressions through movement ops, simplifying each scalar
//! expression with [`fold`], a seed's zeros included); [`split`] cuts long kernel bodies
//! into parts; [`layout`] stores transposed the constants a batch of outputs reads
//! down their columns; [`interchange`] picks the loop order of reductions; [`workspace`]
//! plans memory. In debug builds the [`verify`]er checks the program after each stage.
//!
//! The renderer then asks [`nest::schedule`] for each kernel's loop nest: the statements,
//! loops and parts a printer spells, with every scheduling decision taken (checked by
//! [`nest::verify`] in debug builds).

pub mod batch;
pub mod fold;
pub mod fuse;
pub mod index;
pub mod interchange;
pub mod kernel;
pub mod layout;
pub mod nest;
pub mod schedule;
pub mod split;
pub mod verify;
pub mod workspace;

pub use index::IndexExpr;
pub use kernel::{Bound, Buffer, BufferId, BufferKind, Expr, ExprId, Kernel, Program, Scatter, Store};

use crate::dtype::DType;
use crate::graph::{toposort, NodeRef, Op};
use std::collections::{HashMap, HashSet};

/// Choices of the lowering that trade code size and compile time for speed.
///
/// ```
/// use anvil::{Arg, NumericalFunction, LowerOptions};
/// # fn main() -> anvil::Result<()> {
/// let f = NumericalFunction::new("product", |[x]| { let s = x.sin(); s.get(0) * s.get(1) }, [Arg::new(2)])?;
/// assert_eq!(f.program().kernels.len(), 1); // small: straight-line code
/// let looped = f.with_lowering(LowerOptions::loops_only());
/// assert_eq!(looped.program().kernels.len(), 2); // the sines are stored, then read
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LowerOptions {
    /// Most elements of any node of a straight-line program.
    pub straight_line_max_numel: usize,
    /// Most scalar operations of a straight-line program (its code grows with them); 0:
    /// loops always.
    pub straight_line_max_work: usize,
    /// Most elements per item of any node of a batched straight-line region (see
    /// [`batch`]), and of any reduction's operand: larger items are a loop nest's job.
    pub batched_max_numel: usize,
    /// Most scalar operations of a batched straight-line region: those of one item plus
    /// those that do not depend on the item; 0: never.
    pub batched_max_work: usize,
    /// Most operations in one loop kernel's body: a longer one is split into several
    /// kernels (see [`split`]), since compile time grows faster than linearly with a body's
    /// length; `usize::MAX`: never split.
    pub max_body: usize,
}

impl Default for LowerOptions {
    fn default() -> Self {
        LowerOptions {
            straight_line_max_numel: 128,
            straight_line_max_work: 8192,
            batched_max_numel: 256,
            batched_max_work: 65536,
            max_body: 1024,
        }
    }
}

impl LowerOptions {
    /// Loop kernels for every graph, however small.
    pub fn loops_only() -> Self {
        LowerOptions { straight_line_max_work: 0, batched_max_work: 0, ..LowerOptions::default() }
    }
}

/// Lowers the graph computing `outputs` from inputs of the given dtypes and shapes, with
/// the default [`LowerOptions`].
///
/// ```
/// use anvil::{Tensor, DType, internals::lower::lower};
/// let x = Tensor::input(0, 1024, DType::F64);
/// let y = (x.square() * 0.5 + x.sin()).sum();
/// let program = lower(&[y.node().unwrap().clone()], &[(DType::F64, vec![1024])]);
/// assert_eq!(program.kernels.len(), 1); // the whole chain fuses into the reduction
/// ```
pub fn lower(outputs: &[NodeRef], inputs: &[(DType, Vec<usize>)]) -> Program {
    lower_with(outputs, inputs, &LowerOptions::default())
}

/// [`lower`] with the given options.
pub fn lower_with(outputs: &[NodeRef], inputs: &[(DType, Vec<usize>)], options: &LowerOptions) -> Program {
    let order = toposort(outputs);
    let mut plan = BufferPlan::new(inputs, outputs);
    plan.add_leaves(&order);
    let kernels = if schedule::is_straight_line(&order, options) {
        straight_line_kernels(outputs, &plan)
    } else {
        loop_kernels(&order, outputs, &mut plan, options)
    };
    let kernels = schedule::order_kernels(kernels);
    debug_verify("fusion", || verify::verify_kernels(&plan.buffers, &kernels));
    let kernels = split::split_long_bodies(kernels, &mut plan.buffers, options.max_body);
    debug_verify("splitting", || verify::verify_kernels(&plan.buffers, &kernels));
    let kernels = layout::transpose_constants(kernels, &mut plan.buffers);
    debug_verify("constant layout", || verify::verify_kernels(&plan.buffers, &kernels));
    let kernels = interchange::order_reductions(kernels);
    let (offsets, workspace_size) = workspace::workspace_layout(&plan.buffers, &kernels);
    let program = Program { buffers: plan.buffers, kernels, offsets, workspace_size };
    debug_verify("workspace planning", || verify::verify(&program));
    program
}

/// In debug builds (and so in every test), runs a verifier after a stage (the [`verify`]er,
/// or [`nest::verify`] after scheduling): an invalid program there is a bug in anvil,
/// caught before it becomes wrong native code.
pub(crate) fn debug_verify(stage: &str, check: impl FnOnce() -> Result<(), String>) {
    if cfg!(debug_assertions) {
        if let Err(message) = check() {
            panic!("anvil bug: {stage} produced an invalid program: {message}");
        }
    }
}

/// One kernel computing every element of every output from the leaves (none if there is
/// nothing to store).
fn straight_line_kernels(outputs: &[NodeRef], plan: &BufferPlan) -> Vec<Kernel> {
    let stores: Vec<_> = outputs.iter().enumerate().map(|(k, o)| (o.clone(), plan.output(k))).collect();
    let kernel = fuse::build_straight_line_kernel(&stores, &plan.buffer_of);
    if kernel.stores.is_empty() {
        Vec::new()
    } else {
        vec![kernel]
    }
}

/// Loop kernels: one per realized node or output group, and copies of the outputs that
/// are inputs, constants or repeats. An output group or gathered table whose cone is a
/// batched straight-line region is one kernel looping over its items.
fn loop_kernels(order: &[NodeRef], outputs: &[NodeRef], plan: &mut BufferPlan, options: &LowerOptions) -> Vec<Kernel> {
    let (computed, copies) = plan.add_outputs(outputs);
    let groups = schedule::output_groups(outputs, &computed);
    let readers = schedule::Readers::of(order);
    let regions = batched_regions(order, outputs, &groups, &readers, options);
    let inlined: HashMap<u64, u64> =
        regions.iter().flat_map(|(&root, r)| r.interior.iter().map(move |&id| (id, root))).collect();
    let kernel_of = group_representatives(outputs, &groups);
    // Outputs that are a run of a matrix no one else reads, alone in their group and not a
    // batched region: the matrix's kernels store straight into them.
    let windows: HashMap<u64, schedule::Window> = groups
        .iter()
        .filter_map(|g| match g.as_slice() {
            [k] if !regions.contains_key(&outputs[*k].id()) => {
                schedule::window_of(&outputs[*k], &readers).map(|w| (outputs[*k].id(), w))
            }
            _ => None,
        })
        .collect();
    let window_sources: HashSet<u64> = windows.values().map(|w| w.source.id()).collect();
    let realization = schedule::realize_set(order, outputs, &kernel_of, &inlined, &readers, &window_sources);
    plan.add_intermediates(order, &realization);

    let seeds: HashSet<BufferId> = order
        .iter()
        .filter(|n| matches!(&n.op, Op::Array(a) if a.structural))
        .map(|n| plan.buffer_of[&n.id()])
        .collect();
    let mut kernels = Vec::new();
    let mut emitted_group = vec![false; groups.len()];
    let group_of: HashMap<u64, usize> =
        groups.iter().enumerate().flat_map(|(g, members)| members.iter().map(move |&k| (outputs[k].id(), g))).collect();
    for node in order {
        if !realization.realized.contains(&node.id()) || matches!(node.op, Op::Input(_) | Op::Array(_)) {
            continue;
        }
        match group_of.get(&node.id()) {
            // An output group is one kernel, built once.
            Some(&g) if std::mem::replace(&mut emitted_group[g], true) => {}
            Some(&g) if windows.contains_key(&node.id()) => {
                let (window, buffer) = (&windows[&node.id()], plan.output(groups[g][0]));
                kernels.extend(fuse::build_window_kernels(
                    &window.source,
                    window.start,
                    node.numel(),
                    buffer,
                    &plan.buffer_of,
                ));
            }
            Some(&g) => {
                let stores: Vec<_> = groups[g].iter().map(|&k| (outputs[k].clone(), plan.output(k))).collect();
                kernels.push(build_kernel_for(
                    &stores,
                    &plan.buffer_of,
                    regions.get(&stores[0].0.id()),
                    &seeds,
                    options,
                ));
            }
            None => {
                let stores = [(node.clone(), plan.buffer_of[&node.id()])];
                kernels.push(build_kernel_for(&stores, &plan.buffer_of, regions.get(&node.id()), &seeds, options));
            }
        }
    }
    for (k, node) in copies {
        kernels.push(fuse::build_kernel(&[(copy_of(&node), plan.output(k))], &plan.buffer_of));
    }
    kernels
}

/// The kernel of `stores`: for a region, its items written out or one loop over them (see
/// [`written_out`]); else a loop nest.
fn build_kernel_for(
    stores: &[(NodeRef, BufferId)],
    buffer_of: &HashMap<u64, BufferId>,
    region: Option<&batch::Region>,
    seeds: &HashSet<BufferId>,
    options: &LowerOptions,
) -> Kernel {
    match region {
        Some(region) => {
            let looped = fuse::build_batched_kernel(stores, buffer_of, region.batch);
            let reads_seed =
                looped.exprs.iter().any(|e| matches!(e, Expr::Load { buffer, .. } if seeds.contains(buffer)));
            let written = reads_seed.then(|| written_out(stores, buffer_of, region.batch, &looped, options)).flatten();
            written.unwrap_or(looped)
        }
        None => fuse::build_kernel(stores, buffer_of),
    }
}

/// A region's `batch` items (which read a seed) written out as one straight-line kernel, if
/// that takes at most `options.straight_line_max_work` operations and at most 3/4 of what
/// the loop over them (`looped`) does. The items are then a derivative's seed directions,
/// and each one's copy keeps only what its seed's non-zeros reach (see [`fold`]): the
/// columns of one colour touch a fraction of the function.
fn written_out(
    stores: &[(NodeRef, BufferId)],
    buffer_of: &HashMap<u64, BufferId>,
    batch: usize,
    looped: &Kernel,
    options: &LowerOptions,
) -> Option<Kernel> {
    let looped_work = looped.exprs.len() * batch;
    if looped_work > 4 * options.straight_line_max_work {
        return None; // not worth building: too large written out, even folded to a quarter
    }
    let unrolled = fuse::build_straight_line_kernel(stores, buffer_of);
    let work = unrolled.exprs.len();
    (work <= options.straight_line_max_work && 4 * work <= 3 * looped_work).then_some(unrolled)
}

/// The batched straight-line regions (see [`batch`]) among the nodes stored anyway: output
/// groups and gathered tables; keyed by the group's first output or the table.
fn batched_regions(
    order: &[NodeRef],
    outputs: &[NodeRef],
    groups: &[Vec<usize>],
    readers: &schedule::Readers,
    options: &LowerOptions,
) -> HashMap<u64, batch::Region> {
    let mut stops: HashSet<u64> = outputs.iter().map(|o| o.id()).collect();
    let mut tables = Vec::new();
    for node in order {
        if matches!(node.op, Op::Input(_) | Op::Array(_) | Op::ScatterAdd) {
            stops.insert(node.id());
        }
        if let Op::Gather = node.op {
            // A gathered reshape is read from its source's buffer (see `realize_set`).
            let table = &node.srcs[0];
            let table =
                if matches!(table.op, Op::Reshape) && !stops.contains(&table.id()) { &table.srcs[0] } else { table };
            stops.insert(table.id());
            tables.push(table.clone());
        }
    }
    let candidates = groups
        .iter()
        .map(|g| g.iter().map(|&k| outputs[k].clone()).collect::<Vec<_>>())
        .chain(tables.into_iter().filter(|t| !matches!(t.op, Op::Input(_) | Op::Array(_))).map(|t| vec![t]));
    let mut regions = HashMap::new();
    for roots in candidates {
        if regions.contains_key(&roots[0].id()) {
            continue;
        }
        if let Some(region) = batch::batched_region(&roots, &stops, readers, options) {
            regions.insert(roots[0].id(), region);
        }
    }
    regions
}

/// The buffers of a program and which node lives in which.
struct BufferPlan {
    buffers: Vec<Buffer>,
    buffer_of: HashMap<u64, BufferId>,
    inputs: usize,
}

impl BufferPlan {
    /// Inputs first (buffer `i` is input `i`), then outputs.
    fn new(inputs: &[(DType, Vec<usize>)], outputs: &[NodeRef]) -> Self {
        let mut buffers: Vec<Buffer> = inputs
            .iter()
            .enumerate()
            .map(|(i, (dtype, shape))| Buffer { kind: BufferKind::Input(i), dtype: *dtype, shape: shape.clone() })
            .collect();
        buffers.extend(outputs.iter().enumerate().map(|(k, o)| Buffer {
            kind: BufferKind::Output(k),
            dtype: o.dtype,
            shape: o.shape.clone(),
        }));
        BufferPlan { buffers, buffer_of: HashMap::new(), inputs: inputs.len() }
    }

    /// The buffer of output `k`.
    fn output(&self, k: usize) -> BufferId {
        self.inputs + k
    }

    fn push(&mut self, node: &NodeRef, kind: BufferKind) -> BufferId {
        self.buffers.push(Buffer { kind, dtype: node.dtype, shape: node.shape.clone() });
        self.buffer_of.insert(node.id(), self.buffers.len() - 1);
        self.buffers.len() - 1
    }

    /// Input nodes map to their buffers; captured constants get theirs.
    fn add_leaves(&mut self, order: &[NodeRef]) {
        for node in order {
            match &node.op {
                Op::Input(input) => {
                    self.buffer_of.insert(node.id(), input.index);
                }
                Op::Array(a) => {
                    self.push(node, BufferKind::Constant(a.data.clone()));
                }
                _ => {}
            }
        }
    }

    /// An output computed by a kernel is written straight into the caller's buffer; outputs
    /// that are inputs, constants or repeats of an earlier output are copied. Returns the
    /// computed outputs and the copied ones.
    fn add_outputs(&mut self, outputs: &[NodeRef]) -> (Vec<usize>, Vec<(usize, NodeRef)>) {
        let (mut computed, mut copies) = (Vec::new(), Vec::new());
        for (k, o) in outputs.iter().enumerate() {
            if self.buffer_of.contains_key(&o.id()) {
                copies.push((k, o.clone()));
            } else {
                self.buffer_of.insert(o.id(), self.output(k));
                computed.push(k);
            }
        }
        (computed, copies)
    }

    /// Every other realized node gets a buffer, and reshapes read in place share their
    /// source's. All before any kernel is built: a kernel (an output group's especially)
    /// may read buffers of nodes that come later in topological order.
    fn add_intermediates(&mut self, order: &[NodeRef], realization: &schedule::Realization) {
        for node in order {
            if realization.realized.contains(&node.id()) && !self.buffer_of.contains_key(&node.id()) {
                self.push(node, BufferKind::Intermediate);
            }
        }
        for (&alias, target) in &realization.aliases {
            if let Some(&buffer) = self.buffer_of.get(target) {
                self.buffer_of.insert(alias, buffer);
            }
        }
    }
}

/// Maps each grouped output to the first output of its group (the kernel that owns it).
fn group_representatives(outputs: &[NodeRef], groups: &[Vec<usize>]) -> HashMap<u64, u64> {
    groups
        .iter()
        .flat_map(|members| members.iter().map(move |&k| (outputs[k].id(), outputs[members[0]].id())))
        .collect()
}

/// A node that reads `node` elementwise: a reshape to its own shape, built without the
/// simplifier (which would fold it away), so that the kernel root differs from `node`.
fn copy_of(node: &NodeRef) -> NodeRef {
    crate::graph::Node::make_unsimplified(Op::Reshape, node.dtype, node.shape.clone(), vec![node.clone()])
}

//! Lowering: graph → fused loop kernels over buffers, with a planned workspace.
//!
//! Input: the output nodes of a traced function and its input specs. Output: a
//! [`Program`]. Stages: [`schedule`] picks the realize set, [`fuse`] builds each kernel
//! (pushing [`index`] expressions through movement ops), [`workspace`] plans memory.

pub mod fuse;
pub mod index;
pub mod kernel;
pub mod schedule;
pub mod workspace;

pub use index::IndexExpr;
pub use kernel::{Bound, Buffer, BufferId, BufferKind, Expr, ExprId, Kernel, Program, Scatter};

use crate::dtype::DType;
use crate::graph::{toposort, NodeRef, Op};
use std::collections::HashMap;

/// Lowers the graph computing `outputs` from inputs of the given dtypes and shapes.
///
/// ```
/// use anvil::{Tensor, DType, lower::lower};
/// let x = Tensor::input(0, 1024, DType::F64);
/// let y = (x.square() * 0.5 + x.sin()).sum();
/// let program = lower(&[y.node().unwrap().clone()], &[(DType::F64, vec![1024])]);
/// assert_eq!(program.kernels.len(), 1); // the whole chain fuses into the reduction
/// ```
pub fn lower(outputs: &[NodeRef], inputs: &[(DType, Vec<usize>)]) -> Program {
    let order = toposort(outputs);
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

    let mut buffer_of: HashMap<u64, BufferId> = HashMap::new();
    for node in &order {
        match &node.op {
            Op::Input(i) => {
                buffer_of.insert(node.id(), *i);
            }
            Op::Array(a) => {
                buffer_of.insert(node.id(), buffers.len());
                buffers.push(Buffer {
                    kind: BufferKind::Constant(a.0.clone()),
                    dtype: node.dtype,
                    shape: node.shape.clone(),
                });
            }
            _ => {}
        }
    }
    // An output computed by a kernel is written straight into the caller's buffer; outputs
    // that are inputs, constants or repeats of an earlier output are copied.
    let mut copies = Vec::new();
    let mut computed = Vec::new();
    for (k, o) in outputs.iter().enumerate() {
        match buffer_of.get(&o.id()) {
            Some(_) => copies.push((k, o.clone())),
            None => {
                buffer_of.insert(o.id(), inputs.len() + k);
                computed.push(k);
            }
        }
    }
    let groups = schedule::output_groups(outputs, &computed);
    let mut group_of: HashMap<u64, usize> = HashMap::new();
    let mut kernel_of: HashMap<u64, u64> = HashMap::new();
    for (g, members) in groups.iter().enumerate() {
        for &k in members {
            group_of.insert(outputs[k].id(), g);
            kernel_of.insert(outputs[k].id(), outputs[members[0]].id());
        }
    }
    let schedule::Realization { realized, aliases } = schedule::realize_set(&order, outputs, &kernel_of);
    let alias_of = |buffer_of: &mut HashMap<u64, BufferId>, target: u64| {
        let buffer = buffer_of[&target];
        for (&alias, _) in aliases.iter().filter(|&(_, &t)| t == target) {
            buffer_of.insert(alias, buffer);
        }
    };

    // Every realized node gets its buffer before any kernel is built: a kernel (an output
    // group's especially) may read buffers of nodes that come later in topological order.
    for node in &order {
        if realized.contains(&node.id()) && !buffer_of.contains_key(&node.id()) {
            buffers.push(Buffer { kind: BufferKind::Intermediate, dtype: node.dtype, shape: node.shape.clone() });
            buffer_of.insert(node.id(), buffers.len() - 1);
        }
    }
    for node in &order {
        if buffer_of.contains_key(&node.id()) {
            alias_of(&mut buffer_of, node.id());
        }
    }
    let mut kernels = Vec::new();
    let mut emitted_group = vec![false; groups.len()];
    for node in &order {
        if !realized.contains(&node.id()) || matches!(node.op, Op::Input(_) | Op::Array(_)) {
            continue;
        }
        if let Some(&g) = group_of.get(&node.id()) {
            if !std::mem::replace(&mut emitted_group[g], true) {
                let stores: Vec<_> = groups[g].iter().map(|&k| (outputs[k].clone(), inputs.len() + k)).collect();
                kernels.push(fuse::build_kernel(&stores, &buffer_of));
            }
            continue;
        }
        kernels.push(fuse::build_kernel(&[(node.clone(), buffer_of[&node.id()])], &buffer_of));
    }
    for (k, node) in copies {
        kernels.push(fuse::build_kernel(&[(copy_of(&node), inputs.len() + k)], &buffer_of));
    }
    let kernels = schedule::order_kernels(kernels);
    let (offsets, workspace_size) = workspace::workspace_layout(&buffers, &kernels);
    Program { buffers, kernels, offsets, workspace_size }
}

/// A node that reads `node` elementwise: a reshape to its own shape, built without the
/// simplifier (which would fold it away), so that the kernel root differs from `node`.
fn copy_of(node: &NodeRef) -> NodeRef {
    crate::graph::Node::make_unsimplified(Op::Reshape, node.dtype, node.shape.clone(), vec![node.clone()])
}

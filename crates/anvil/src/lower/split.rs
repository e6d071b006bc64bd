//! Splitting of long kernel bodies, so that compile time stays linear in graph size.
//!
//! A C++ compiler's time grows faster than linearly with the length of one loop body: g++
//! spends most of it allocating registers over the whole block (a rollout body of 9k
//! operations compiles in about 3 s, one of 27k in about 17 s). A loop kernel whose body
//! holds more than [`LowerOptions::max_body`] operations therefore becomes a sequence of
//! kernels over the same loop nest, each computing a consecutive slice of the body. The
//! body's order is the builder's depth-first order, so a slice is a stretch of the
//! computation (some stages of a rollout) and hands little to the next.
//!
//! A value that one part computes and a later part reads passes through a scratch buffer
//! (one per part and dtype), one element per value and loop point, so that the parts keep
//! the kernel's loops and vectorise as it did. Leaves (constants, loads, bounds tests) are
//! repeated in each part that reads them instead. Each part computes exactly the operations
//! of its slice, so the results are the unsplit kernel's, bit for bit.
//!
//! Left whole:
//! - straight-line programs (no loops): their size has its own limit
//!   ([`LowerOptions::straight_line_max_work`]), and one kernel without workspace is what
//!   lets `call_batch` run them as one loop over items;
//! - kernels with an inner reduction loop or a scatter: their bodies are bounded by the loop
//!   they run, not by the graph's length;
//! - loops with bounds tests: the renderer splits those loops where the tests change (a
//!   concatenation of k pieces is k segments, each computing its piece), so what one point
//!   computes is short however long the body.
//!
//! [`LowerOptions::max_body`]: super::LowerOptions::max_body
//! [`LowerOptions::straight_line_max_work`]: super::LowerOptions::straight_line_max_work

use super::index::IndexExpr;
use super::kernel::{Buffer, BufferId, BufferKind, Expr, ExprId, Kernel, Store};
use crate::dtype::DType;

/// The kernels with each body longer than `max_body` operations split into parts (see the
/// module documentation), adding their scratch buffers to `buffers`.
pub fn split_long_bodies(kernels: Vec<Kernel>, buffers: &mut Vec<Buffer>, max_body: usize) -> Vec<Kernel> {
    let max_body = max_body.max(1);
    let mut out = Vec::with_capacity(kernels.len());
    for kernel in kernels {
        if is_splittable(&kernel) && body_len(&kernel) > max_body {
            out.extend(split(&kernel, buffers, max_body));
        } else {
            out.push(kernel);
        }
    }
    out
}

/// Whether the kernel is a loop nest computing its whole body at every point: no scatter,
/// no reduction, no bounds tests.
fn is_splittable(kernel: &Kernel) -> bool {
    !kernel.shape.is_empty()
        && kernel.scatter.is_none()
        && !kernel.exprs.iter().any(|e| matches!(e, Expr::Reduce { .. } | Expr::InBounds(_)))
}

/// Leaves are cheap to repeat and read nothing computed.
fn is_leaf(expr: &Expr) -> bool {
    expr.operands().is_empty()
}

/// The number of operations (non-leaf expressions) of the body.
fn body_len(kernel: &Kernel) -> usize {
    kernel.exprs.iter().filter(|e| !is_leaf(e)).count()
}

/// Where a value crossing from one part to a later one is kept.
#[derive(Clone, Copy)]
struct Slot {
    buffer: BufferId,
    /// The value's element offset in the buffer (its index times the points of the nest).
    offset: i64,
    len: usize,
}

/// `kernel` as a sequence of parts of at most `max_body` operations each, balanced.
fn split(kernel: &Kernel, buffers: &mut Vec<Buffer>, max_body: usize) -> Vec<Kernel> {
    let n = kernel.exprs.len();
    let body: Vec<ExprId> = (0..n).filter(|&e| !is_leaf(&kernel.exprs[e])).collect();
    let parts = body.len().div_ceil(max_body);
    let per_part = body.len().div_ceil(parts);
    let mut part_of = vec![None; n];
    for (i, &e) in body.iter().enumerate() {
        part_of[e] = Some(i / per_part);
    }
    let slots = crossing_slots(kernel, &part_of, buffers);
    let point = IndexExpr::linearize(&IndexExpr::loop_point(&kernel.shape), &kernel.shape);
    let plan = Plan { kernel, body, part_of, slots, point };
    (0..parts).map(|p| plan.part(p)).collect()
}

/// Which part computes each operation, and where values cross between parts.
struct Plan<'k> {
    kernel: &'k Kernel,
    /// The operations, in the body's order.
    body: Vec<ExprId>,
    /// The part of each operation (`None` for leaves).
    part_of: Vec<Option<usize>>,
    slots: Vec<Option<Slot>>,
    /// The linear index of the current point of the loop nest.
    point: IndexExpr,
}

impl Plan<'_> {
    /// Part `p`: its operations, the slots of those a later part reads, and the kernel's
    /// stores of its values (those of leaves go to the first part).
    fn part(&self, p: usize) -> Kernel {
        let kernel = self.kernel;
        let mut part =
            PartBuilder { kernel, exprs: Vec::new(), new_id: vec![usize::MAX; kernel.exprs.len()], slots: &self.slots };
        let mut stores = Vec::new();
        for &e in self.body.iter().filter(|&&e| self.part_of[e] == Some(p)) {
            let value = part.define(e, &self.point);
            if let Some(slot) = self.slots[e] {
                stores.push(Store { buffer: slot.buffer, index: self.point.add_const(slot.offset), value });
            }
        }
        for s in kernel.stores.iter().filter(|s| self.part_of[s.value].unwrap_or(0) == p) {
            let value = part.operand(s.value, &self.point);
            stores.push(Store { buffer: s.buffer, index: s.index.clone(), value });
        }
        Kernel {
            outputs: Store::buffers(&stores),
            stores,
            shape: kernel.shape.clone(),
            extents: kernel.extents.clone(),
            exprs: part.exprs,
            scatter: None,
            items: kernel.items,
            accumulate_across: None,
        }
    }
}

/// A slot for every operation read by a later part than its own, in scratch buffers added
/// to `buffers`: one per part and dtype, so that no part reads the buffer it writes.
fn crossing_slots(kernel: &Kernel, part_of: &[Option<usize>], buffers: &mut Vec<Buffer>) -> Vec<Option<Slot>> {
    let mut last_reader = vec![0; kernel.exprs.len()];
    for (e, expr) in kernel.exprs.iter().enumerate() {
        for o in expr.operands() {
            last_reader[o] = last_reader[o].max(part_of[e].unwrap_or(0));
        }
    }
    let mut groups: Vec<((usize, DType), Vec<ExprId>)> = Vec::new();
    for (e, expr) in kernel.exprs.iter().enumerate() {
        let Some(part) = part_of[e].filter(|&p| last_reader[e] > p) else { continue };
        let key = (part, expr.dtype());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, values)) => values.push(e),
            None => groups.push((key, vec![e])),
        }
    }
    let points: usize = kernel.shape.iter().product();
    let mut slots = vec![None; kernel.exprs.len()];
    for ((_, dtype), values) in groups {
        let (buffer, len) = (buffers.len(), values.len() * points);
        buffers.push(Buffer { kind: BufferKind::Intermediate, dtype, shape: vec![len] });
        for (j, e) in values.into_iter().enumerate() {
            slots[e] = Some(Slot { buffer, offset: (j * points) as i64, len });
        }
    }
    slots
}

/// One part's expressions, renumbered from the whole kernel's.
struct PartBuilder<'k> {
    kernel: &'k Kernel,
    exprs: Vec<Expr>,
    new_id: Vec<ExprId>,
    slots: &'k [Option<Slot>],
}

impl PartBuilder<'_> {
    /// Adds operation `e` of this part, its operands first.
    fn define(&mut self, e: ExprId, point: &IndexExpr) -> ExprId {
        for o in self.kernel.exprs[e].operands() {
            self.operand(o, point);
        }
        let expr = self.kernel.exprs[e].clone().renumbered(&self.new_id);
        self.push(e, expr)
    }

    /// The part's id of `e`: defined in this part already, or a leaf repeated here, or a
    /// value of an earlier part loaded from its slot.
    fn operand(&mut self, e: ExprId, point: &IndexExpr) -> ExprId {
        if self.new_id[e] != usize::MAX {
            return self.new_id[e];
        }
        let expr = match self.slots[e] {
            Some(slot) => Expr::Load {
                buffer: slot.buffer,
                index: point.add_const(slot.offset),
                len: slot.len,
                dtype: self.kernel.exprs[e].dtype(),
            },
            None => {
                debug_assert!(is_leaf(&self.kernel.exprs[e]), "operations of earlier parts have slots");
                self.kernel.exprs[e].clone()
            }
        };
        self.push(e, expr)
    }

    fn push(&mut self, e: ExprId, expr: Expr) -> ExprId {
        self.exprs.push(expr);
        self.new_id[e] = self.exprs.len() - 1;
        self.new_id[e]
    }
}

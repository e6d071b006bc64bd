//! The kernel IR: one loop nest over an output shape with a scalar expression DAG as body,
//! or (no loops) straight-line code storing each element of small outputs.

use super::index::IndexExpr;
use crate::array::HostArray;
use crate::dtype::DType;
use crate::graph::{BinaryOp, Literal, ReduceOp, UnaryOp};
use std::sync::Arc;

/// Index of an expression in [`Kernel::exprs`].
pub type ExprId = usize;
/// Index of a buffer in [`Program::buffers`].
pub type BufferId = usize;

/// `lo <= expr < hi`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Bound {
    /// The index expression tested.
    pub expr: IndexExpr,
    /// Inclusive lower limit.
    pub lo: i64,
    /// Exclusive upper limit.
    pub hi: i64,
}

/// One scalar operation of a kernel body. Operands precede their users in
/// [`Kernel::exprs`], and equal expressions are stored once.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Expr {
    /// A literal of the given dtype.
    Const(Literal, DType),
    /// A structural zero: an element of a derivative's seed that is zero (see
    /// [`crate::graph::ConstArray::structural`]). It is 0, and a product with it is itself,
    /// whatever the other factor (an infinite partial included), so the products a seed's
    /// zero takes part in fold away.
    Zero(DType),
    /// `buffer[index]`. Under padding the index can leave `0..len` where the value is
    /// masked anyway: such loads are rendered with the index clamped into the buffer, so
    /// that every load is safe to execute unconditionally (and to vectorise).
    Load {
        /// The buffer read.
        buffer: BufferId,
        /// Linear element index.
        index: IndexExpr,
        /// Number of elements of the buffer.
        len: usize,
        /// Element type.
        dtype: DType,
    },
    /// `buffer[index]` with a computed (integer) index, clamped into `0..len`.
    Gather {
        /// The buffer read.
        buffer: BufferId,
        /// The element index (an integer expression).
        index: ExprId,
        /// Number of elements of the buffer.
        len: usize,
        /// Element type.
        dtype: DType,
        /// The index is known to lie in `0..len` (captured positions, checked when lowering):
        /// nothing to clamp.
        in_range: bool,
    },
    /// `true` where all bounds hold.
    InBounds(Vec<Bound>),
    /// Elementwise unary math in the given dtype.
    Unary(UnaryOp, ExprId, DType),
    /// Elementwise binary math on operands of the given dtype.
    Binary(BinaryOp, ExprId, ExprId, DType),
    /// `cond ? a : b` with result dtype.
    Where(ExprId, ExprId, ExprId, DType),
    /// Conversion `from` → `to`.
    Cast(ExprId, DType, DType),
    /// A reduction of `body` over the loop variables `vars`, an inner loop nest.
    Reduce {
        /// The combining op.
        op: ReduceOp,
        /// The loop variables reduced over (their extents are in [`Kernel::extents`]).
        vars: Vec<usize>,
        /// The value folded in at each point.
        body: ExprId,
        /// Accumulator dtype.
        dtype: DType,
    },
}

impl Expr {
    /// The expressions this one reads, in order.
    pub fn operands(&self) -> Vec<ExprId> {
        match self {
            Expr::Unary(_, x, _) | Expr::Cast(x, _, _) => vec![*x],
            Expr::Binary(_, a, b, _) => vec![*a, *b],
            Expr::Where(c, a, b, _) => vec![*c, *a, *b],
            Expr::Reduce { body, .. } => vec![*body],
            Expr::Gather { index, .. } => vec![*index],
            Expr::Const(..) | Expr::Zero(_) | Expr::Load { .. } | Expr::InBounds(_) => vec![],
        }
    }

    /// The type of the value: a comparison's or a bounds test's is `Bool`.
    pub fn dtype(&self) -> DType {
        match self {
            Expr::Const(_, d)
            | Expr::Zero(d)
            | Expr::Load { dtype: d, .. }
            | Expr::Gather { dtype: d, .. }
            | Expr::Unary(_, _, d)
            | Expr::Where(_, _, _, d)
            | Expr::Reduce { dtype: d, .. } => *d,
            Expr::Cast(_, _, to) => *to,
            Expr::InBounds(_) => DType::Bool,
            Expr::Binary(op, _, _, d) => {
                if op.is_comparison() {
                    DType::Bool
                } else {
                    *d
                }
            }
        }
    }

    /// The same expression with each operand `x` replaced by `new_id[x]`.
    pub fn renumbered(self, new_id: &[ExprId]) -> Expr {
        match self {
            Expr::Unary(op, x, dtype) => Expr::Unary(op, new_id[x], dtype),
            Expr::Cast(x, from, to) => Expr::Cast(new_id[x], from, to),
            Expr::Binary(op, a, b, dtype) => Expr::Binary(op, new_id[a], new_id[b], dtype),
            Expr::Where(c, a, b, dtype) => Expr::Where(new_id[c], new_id[a], new_id[b], dtype),
            Expr::Reduce { op, vars, body, dtype } => Expr::Reduce { op, vars, body: new_id[body], dtype },
            Expr::Gather { buffer, index, len, dtype, in_range } => {
                Expr::Gather { buffer, index: new_id[index], len, dtype, in_range }
            }
            leaf @ (Expr::Const(..) | Expr::Zero(_) | Expr::Load { .. } | Expr::InBounds(_)) => leaf,
        }
    }
}

/// `buffer[index] = value`, once per point of the kernel's loop nest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Store {
    /// The buffer written.
    pub buffer: BufferId,
    /// The element written (over the output loop variables; a constant in straight-line
    /// kernels). A scatter-add kernel adds at [`Scatter::index`] instead.
    pub index: IndexExpr,
    /// The value stored.
    pub value: ExprId,
}

impl Store {
    /// The buffers `stores` write, in first-store order (a kernel's
    /// [`outputs`](Kernel::outputs)).
    pub fn buffers(stores: &[Store]) -> Vec<BufferId> {
        let mut buffers: Vec<BufferId> = Vec::new();
        for s in stores {
            if !buffers.contains(&s.buffer) {
                buffers.push(s.buffer);
            }
        }
        buffers
    }
}

/// A loop nest computing every element of one or more buffers of the same shape, or, with
/// an empty shape, straight-line code computing each element of its outputs once.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// The buffers written, in first-store order. A buffer may be written by several
    /// kernels, each storing some of its elements (the parts of a split body).
    pub outputs: Vec<BufferId>,
    /// What is stored at each point of the loop nest.
    pub stores: Vec<Store>,
    /// The loop nest's shape: loop variables `0..shape.len()` index it.
    pub shape: Vec<usize>,
    /// Extent of every loop variable (output variables first, then reduction variables).
    pub extents: Vec<usize>,
    /// The expression DAG, operands first.
    pub exprs: Vec<Expr>,
    /// For a scatter-add kernel: the loops run over the *values*, and each adds its root
    /// into `output[index]` (the output is zeroed first).
    pub scatter: Option<Scatter>,
    /// The kernel's one loop runs over independent items, each straight-line code (a
    /// batched region, see [`super::batch`]): it is rendered to vectorise across them.
    pub items: bool,
    /// The output loop variable the kernel's reductions accumulate across (see
    /// [`super::interchange`]): each reduction that depends on it sums into a local array
    /// along it with its own loops outside, and the stores follow in a loop of their own.
    pub accumulate_across: Option<usize>,
}

/// Where a scatter-add kernel adds each value.
#[derive(Clone, Debug)]
pub struct Scatter {
    /// The target element (an integer expression), clamped into `0..len`.
    pub index: ExprId,
    /// Number of elements of the output.
    pub len: usize,
}

impl Kernel {
    /// The innermost loop over the output (the last axis of extent above 1), if any.
    pub fn innermost_loop(&self) -> Option<usize> {
        (0..self.shape.len()).rev().find(|&d| self.shape[d] != 1)
    }

    /// The expressions `root` is computed from, itself included, each once.
    pub fn cone(&self, root: ExprId) -> Vec<ExprId> {
        let mut cone = Vec::new();
        let mut seen = vec![false; self.exprs.len()];
        let mut stack = vec![root];
        while let Some(e) = stack.pop() {
            if !std::mem::replace(&mut seen[e], true) {
                cone.push(e);
                stack.extend(self.exprs[e].operands());
            }
        }
        cone
    }

    /// The buffers the kernel reads, in first-use order.
    pub fn inputs(&self) -> Vec<BufferId> {
        let mut out = Vec::new();
        for e in &self.exprs {
            if let Expr::Load { buffer, .. } | Expr::Gather { buffer, .. } = e {
                if !out.contains(buffer) {
                    out.push(*buffer);
                }
            }
        }
        out
    }
}

/// What a buffer holds and who provides its memory.
#[derive(Clone, Debug)]
pub enum BufferKind {
    /// The function's `n`-th input (caller memory).
    Input(usize),
    /// The function's `n`-th output (caller memory).
    Output(usize),
    /// A captured constant (in the workspace, filled once by `init_ws`).
    Constant(Arc<HostArray>),
    /// A temporary between kernels (in the workspace).
    Intermediate,
}

/// A buffer of the lowered program.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// Its role.
    pub kind: BufferKind,
    /// Element type.
    pub dtype: DType,
    /// Shape (row-major, contiguous).
    pub shape: Vec<usize>,
}

impl Buffer {
    /// Number of elements.
    pub fn numel(&self) -> usize {
        self.shape.iter().product()
    }

    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }

    /// True for buffers that live in the workspace.
    pub fn in_workspace(&self) -> bool {
        matches!(self.kind, BufferKind::Constant(_) | BufferKind::Intermediate)
    }
}

/// A lowered function: buffers, kernels in execution order, and the workspace layout.
#[derive(Clone, Debug)]
pub struct Program {
    /// All buffers; inputs first (in order), then outputs (in order), then the rest.
    pub buffers: Vec<Buffer>,
    /// Kernels in execution order.
    pub kernels: Vec<Kernel>,
    /// Byte offset in the workspace of each workspace buffer (`None` for caller buffers and
    /// for constants that no kernel reads).
    pub offsets: Vec<Option<usize>>,
    /// Workspace size in bytes.
    pub workspace_size: usize,
}

impl Program {
    /// The input buffers, in order.
    pub fn inputs(&self) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.buffers.iter().enumerate().filter(|(_, b)| matches!(b.kind, BufferKind::Input(_)))
    }

    /// The output buffers, in order.
    pub fn outputs(&self) -> impl Iterator<Item = (BufferId, &Buffer)> {
        self.buffers.iter().enumerate().filter(|(_, b)| matches!(b.kind, BufferKind::Output(_)))
    }

    /// The captured constants that kernels read, with their data and workspace offset
    /// (empty ones included).
    pub fn constants(&self) -> impl Iterator<Item = (BufferId, &Arc<HostArray>, usize)> {
        self.buffers.iter().enumerate().filter_map(|(b, buffer)| match (&buffer.kind, self.offsets[b]) {
            (BufferKind::Constant(data), Some(offset)) => Some((b, data, offset)),
            _ => None,
        })
    }
}

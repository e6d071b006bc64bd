//! The primitive ops. Everything a user can write is composed from these in `tensor`.

use crate::array::HostArray;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

/// Elementwise ops with one operand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum UnaryOp {
    Neg,
    Recip,
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Abs,
    Floor,
    Ceil,
}

/// Elementwise ops with two operands of the same dtype and shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
    Pow,
    Max,
    Min,
    Atan2,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl BinaryOp {
    /// True for the comparisons, whose result is `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(self, BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge | BinaryOp::Eq | BinaryOp::Ne)
    }
}

/// Reductions over a set of axes (the reduced axes are kept with extent 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum ReduceOp {
    Sum,
    Prod,
    Max,
    Min,
}

impl From<ReduceOp> for BinaryOp {
    /// The binary op that folds one element into a reduction's accumulator.
    fn from(op: ReduceOp) -> Self {
        match op {
            ReduceOp::Sum => BinaryOp::Add,
            ReduceOp::Prod => BinaryOp::Mul,
            ReduceOp::Max => BinaryOp::Max,
            ReduceOp::Min => BinaryOp::Min,
        }
    }
}

/// A scalar value stored in a `Const` node, in the node's dtype domain.
#[derive(Clone, Copy, Debug)]
pub enum Literal {
    /// Value of a float node (`F32` values are exactly representable in `f32`).
    Float(f64),
    /// Value of an integer node.
    Int(i64),
    /// Value of a `bool` node.
    Bool(bool),
}

impl Literal {
    /// The value as `f64`.
    pub fn as_f64(self) -> f64 {
        match self {
            Literal::Float(v) => v,
            Literal::Int(v) => v as f64,
            Literal::Bool(v) => v as u8 as f64,
        }
    }

    /// True if this is exactly the number `v` (`false`/`true` count as 0/1).
    pub fn is(self, v: f64) -> bool {
        self.as_f64() == v
    }

    fn bits(self) -> (u8, u64) {
        match self {
            Literal::Float(v) => (0, v.to_bits()),
            Literal::Int(v) => (1, v as u64),
            Literal::Bool(v) => (2, v as u64),
        }
    }
}

impl PartialEq for Literal {
    fn eq(&self, other: &Self) -> bool {
        self.bits() == other.bits()
    }
}
impl Eq for Literal {}
impl Hash for Literal {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.bits().hash(state)
    }
}

/// A captured host array. Two constants are the same only if they are the same capture.
#[derive(Clone, Debug)]
pub struct ConstArray {
    /// The elements.
    pub data: Arc<HostArray>,
    /// True for the seed directions of a derivative: their zeros are structural, like a
    /// `Const` zero's (a product with one is zero, whatever the other factor), so native
    /// code folds the products a seed's zero would take part in.
    pub structural: bool,
}

impl ConstArray {
    /// A captured array whose elements are data.
    pub fn data(data: Arc<HostArray>) -> ConstArray {
        ConstArray { data, structural: false }
    }
}

impl PartialEq for ConstArray {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.data, &other.data) && self.structural == other.structural
    }
}
impl Eq for ConstArray {}
impl Hash for ConstArray {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.data) as usize, self.structural).hash(state)
    }
}

/// The trace a function input belongs to. Inputs of different traces are different nodes,
/// so a tensor that leaks out of one traced function into another is detected rather than
/// silently taken for the second function's input.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TraceId(pub u64);

impl TraceId {
    /// The trace of inputs made with [`crate::Tensor::input`] (graphs built by hand).
    pub const FREE: TraceId = TraceId(0);

    /// A trace no other has used in this process.
    pub fn fresh() -> TraceId {
        use std::sync::atomic::{AtomicU64, Ordering};
        static NEXT: AtomicU64 = AtomicU64::new(1);
        TraceId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Which input of which trace a leaf is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct InputRef {
    /// Position among the function's inputs.
    pub index: usize,
    /// The trace it belongs to.
    pub trace: TraceId,
}

/// A primitive op. The node's dtype and shape complete its meaning (the target of `Cast`,
/// `Reshape` and `Expand`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// An input of a traced function.
    Input(InputRef),
    /// A scalar filling the node's whole shape.
    Const(Literal),
    /// A captured constant array.
    Array(ConstArray),
    /// Elementwise unary math.
    Unary(UnaryOp),
    /// Elementwise binary math (sources already broadcast and promoted).
    Binary(BinaryOp),
    /// `where(cond, a, b)`: sources `[cond (bool), a, b]`.
    Where,
    /// Conversion to the node's dtype.
    Cast,
    /// Reduction over the given axes, which keep extent 1.
    Reduce(ReduceOp, Vec<usize>),
    /// Same elements in row-major order, the node's shape.
    Reshape,
    /// Axes reordered: output axis `d` is source axis `perm[d]`.
    Permute(Vec<usize>),
    /// Axes of extent 1 broadcast to the node's shape.
    Expand,
    /// Zero padding `(before, after)` per axis.
    Pad(Vec<(usize, usize)>),
    /// The sub-range `start..end` per axis.
    Shrink(Vec<(usize, usize)>),
    /// The listed axes reversed.
    Flip(Vec<usize>),
    /// `out[p] = src.flat[index[p]]`: sources `[src, index (integer)]`, the node has the
    /// index's shape. Indices are clamped into the source (no out-of-bounds reads).
    Gather,
    /// `out = zeros(shape); out.flat[index[p]] += values[p]`, in row-major order of `p`:
    /// sources `[values, index (integer, same shape)]`. Indices are clamped into `out`.
    ScatterAdd,
}

impl Op {
    /// The op's name, as messages and dumps show it.
    pub fn name(&self) -> &'static str {
        match self {
            Op::Input(_) => "input",
            Op::Const(_) => "const",
            Op::Array(_) => "array",
            Op::Unary(_) => "unary",
            Op::Binary(_) => "binary",
            Op::Where => "where",
            Op::Cast => "cast",
            Op::Reduce(..) => "reduce",
            Op::Reshape => "reshape",
            Op::Permute(_) => "permute",
            Op::Expand => "expand",
            Op::Pad(_) => "pad",
            Op::Shrink(_) => "shrink",
            Op::Flip(_) => "flip",
            Op::Gather => "gather",
            Op::ScatterAdd => "scatter_add",
        }
    }

    /// True for the ops that only move elements (lowering turns them into index arithmetic).
    pub fn is_movement(&self) -> bool {
        matches!(self, Op::Reshape | Op::Permute(_) | Op::Expand | Op::Pad(_) | Op::Shrink(_) | Op::Flip(_))
    }
}

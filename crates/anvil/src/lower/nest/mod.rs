//! The loop-nest IR: a kernel scheduled into loops and statements. Every scheduling
//! decision is taken here, so that a renderer only spells the [`Nest`] it is given.
//!
//! Input: a [`Kernel`] and the [`Form`] of the function it becomes. Output: a [`Nest`].
//! The decisions:
//!
//! - **Placement (hoisting).** Every expression becomes one [`Stmt::Let`], placed in the
//!   outermost loop where all the loop variables it uses are bound: loop-invariant code
//!   is computed before the loops that do not change it.
//! - **Loop order.** The output loops of an elementwise loop nest run in the kernel's order
//!   unless another order does at most half its work (counting each expression once per
//!   iteration of the loops around its placement): a dense Hessian derived one direction per
//!   column computes the direction's terms outside the loop over its rows.
//! - **Index-set splitting.** A loop is split where padding conditions change. In each
//!   segment the conditions it decides are resolved: a `where` on a decided bound is its
//!   chosen branch (an [`Operand`] naming that branch), and the other branch is not
//!   computed at all. A loop is split at every breakpoint when that does not grow the
//!   code much (a concatenation of k pieces becomes k short segments, each computing one
//!   piece) or when it cuts the work (each point's expressions, summed over the points)
//!   fourfold for at most four times the code; else at the breakpoints of the conditions
//!   that hold over at least 2, 4, 8, … points, the narrower ones staying tests in the
//!   segments (a gradient that concatenates slices and picks out single elements); else
//!   into a clamp-free interior and its edges (stencils: the interior vectorises). A
//!   one-iteration segment is a [`Stmt::Fixed`] block.
//! - **Clamping.** A load is clamped on the sides where its index can leave its buffer in
//!   the segment it is computed in (padded reads, masked anyway).
//! - **Interchange.** A kernel that [accumulates across](Kernel::accumulate_across) its
//!   innermost output loop gets local arrays and the reduction loops outside (in tiles of
//!   [`ACROSS_TILE`] elements).
//! - **Outlining.** The segments of a split loop are grouped into [`Part`]s of at most
//!   [`PART_STATEMENTS`] statements; when a loop needs more than one, each becomes a
//!   function of its own (the C++ compiler's time grows faster than linearly with a
//!   function's length).
//! - **Vector math.** Each math operation is marked with how it is computed ([`Math`]):
//!   in scalar code, in a vectorised loop (the innermost loop, or the loop around it when
//!   the innermost is unrolled into one-iteration blocks), or (sine and cosine of doubles, where the
//!   target has them, in loops of at least [`FAST_MATH_MIN_TRIPS`] iterations) with the
//!   target's fast in-loop functions, whose far arguments [`Stmt::CheckFar`] flags.
//!
//! In debug builds (and so in every test) [`schedule()`] checks its result with [`verify()`].
//!
//! ```
//! use anvil::{Tensor, DType, internals::lower::{lower, nest::{schedule, Form, Stmt}}};
//! let x = Tensor::input(0, 1000, DType::F64);
//! let program = lower(&[x.pad(&[(1, 1)]).sin().node().unwrap().clone()], &[(DType::F64, vec![1000])]);
//! let nest = schedule(&program.kernels[0], Form::Loops, |_, _| false);
//! // The padded loop is split: two edges (one iteration each) and the interior.
//! assert!(matches!(nest.body[..], [Stmt::Fixed { .. }, Stmt::Loop { .. }, Stmt::Fixed { .. }]));
//! ```

//!
//! The IR is here; [`schedule()`] (in `schedule.rs`) builds it, [`verify()`] (in `verify.rs`)
//! checks it.

pub mod grid;
mod schedule;
mod verify;

pub use schedule::{batchable, schedule, FAST_MATH_MIN_TRIPS, PART_STATEMENTS};
pub use verify::verify;

use super::index::IndexExpr;
use super::kernel::{Bound, BufferId, ExprId};
#[cfg(doc)]
use super::{interchange::ACROSS_TILE, kernel::Kernel};
use crate::dtype::DType;
use crate::graph::{BinaryOp, Literal, ReduceOp, UnaryOp};

/// A scheduled kernel: the statements of its function and of the parts it calls.
#[derive(Clone, Debug)]
pub struct Nest {
    /// The function's shape.
    pub form: Form,
    /// The buffers written, then those read (the function's pointer parameters, in order).
    pub outputs: Vec<BufferId>,
    /// The buffers read.
    pub inputs: Vec<BufferId>,
    /// The function's statements.
    pub body: Vec<Stmt>,
    /// Outlined parts, each defined before any part that calls it.
    pub parts: Vec<Part>,
    /// Whether some statement computes with [`Math::Fast`].
    pub uses_fast_math: bool,
    /// Whether the kernel narrows `f64` to `f32` (the target may compile such code with
    /// other options).
    pub narrows: bool,
    /// How many threads of a grid the nest is worth ([`Form::Grid`]; 1 otherwise).
    pub threads: usize,
    /// Whether it needs exactly that many threads (no fewer: a split reduction's partials).
    pub exact_threads: bool,
    /// Bytes of the partials region it writes or reads (0: none; see
    /// [`grid::split_reductions`]).
    pub partial_bytes: usize,
}

/// The shape of a kernel's function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The kernel's loop nest, called once.
    Loops,
    /// Straight-line code run for each of a batch of items in a loop the renderer wraps
    /// around it (see [`super::batch`]): all of its math is in a vectorised loop.
    Items,
    /// The kernel's loop nest run by a grid of threads together (see [`grid`]).
    Grid,
    /// The kernel's loop nest run on one item by the threads of a warp together, its one
    /// long reduction dealt over them (see [`grid::split_over_warp`]).
    Warp,
}

/// One statement of a nest.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// `t<id> = value`: expression `id` of the kernel.
    Let {
        /// The expression computed.
        id: ExprId,
        /// Its type.
        dtype: DType,
        /// Its value, operands resolved.
        value: Value,
    },
    /// Raise the flag of a function with fast math if the argument is beyond the range of
    /// the fast functions (see [`Math::Fast`]).
    CheckFar(Operand),
    /// `t<id> = identity of op`: the accumulator of reduction `id`.
    Accumulator {
        /// The reduction.
        id: ExprId,
        /// Its combining op.
        op: ReduceOp,
        /// Its type.
        dtype: DType,
    },
    /// A local array `t<id>` of `length` elements accumulating reduction `id` along loop
    /// variable `var`, and a loop over `var` setting each element to the identity.
    LocalArray {
        /// The reduction.
        id: ExprId,
        /// Its combining op.
        op: ReduceOp,
        /// Its type.
        dtype: DType,
        /// The number of elements.
        length: usize,
        /// The loop variable indexing it.
        var: usize,
        /// The values `var` takes.
        extent: Extent,
    },
    /// A loop over `var`.
    Loop {
        /// The loop variable.
        var: usize,
        /// The values it takes.
        extent: Extent,
        /// How the target should vectorise it.
        hint: Hint,
        /// Its statements.
        body: Vec<Stmt>,
    },
    /// A block in which loop variable `var` is `value`: a one-iteration segment.
    Fixed {
        /// The loop variable.
        var: usize,
        /// Its value.
        value: i64,
        /// The block's statements.
        body: Vec<Stmt>,
    },
    /// A loop over the tiles of `var`'s `0..extent`, `tile` values each: the loops over
    /// `var` inside it take [`Extent::Tile`].
    Tiles {
        /// The loop variable tiled.
        var: usize,
        /// Its number of values.
        extent: usize,
        /// The values of one tile.
        tile: usize,
        /// The statements run for each tile.
        body: Vec<Stmt>,
    },
    /// `buffer[index] = value` for each store, in order.
    Stores(Vec<(BufferId, IndexExpr, Operand)>),
    /// `out[clamp(index)] += value` (a scatter-add kernel).
    ScatterAdd {
        /// The buffer added to.
        out: BufferId,
        /// The element, clamped into `0..len`.
        index: Operand,
        /// The buffer's length.
        len: usize,
        /// The value added.
        value: Operand,
        /// The buffer's type.
        dtype: DType,
    },
    /// `acc = acc ⊕ value`.
    Accumulate {
        /// The accumulator: a reduction's temporary, or its array's element.
        acc: Operand,
        /// The combining op.
        op: ReduceOp,
        /// The accumulator's type.
        dtype: DType,
        /// The value folded in.
        value: Operand,
    },
    /// `buffer[0..len] = 0`.
    Zero {
        /// The buffer cleared.
        buffer: BufferId,
        /// Its length.
        len: usize,
        /// Its type.
        dtype: DType,
    },
    /// A call of [`Nest::parts`]`[part]`.
    Call(usize),
    /// Statements only the first `count` threads of a grid run ([`Form::Grid`]).
    OnThreads(usize, Vec<Stmt>),
    /// `partials[slot][thread / 32] = t<acc>`: this thread's warp's part of reduction `acc`
    /// (every lane's after [`Stmt::CombineWarp`]), for a later launch to combine
    /// ([`grid::split_reductions`]).
    StorePartial {
        /// The reduction.
        acc: ExprId,
        /// Its type.
        dtype: DType,
        /// Which of the kernel's split reductions.
        slot: usize,
    },
    /// `t<acc>` = every 32nd of the `lanes` partials of reduction `acc` (stored in `slot` by
    /// the launch before), from the thread's lane on, combined by `op` in order (a
    /// [`Stmt::CombineWarp`] then combines the lanes').
    CombinePartials {
        /// The reduction.
        acc: ExprId,
        /// Its combining op.
        op: ReduceOp,
        /// Its type.
        dtype: DType,
        /// Which of the kernel's split reductions.
        slot: usize,
        /// How many partials.
        lanes: usize,
    },
    /// `t<acc>` combined by `op` across the lanes of a warp ([`Form::Warp`]): each lane
    /// then holds the whole reduction, folded in the same order on every lane.
    CombineWarp {
        /// The reduction.
        acc: ExprId,
        /// Its combining op.
        op: ReduceOp,
        /// Its type.
        dtype: DType,
    },
}

/// The statements `body` amounts to, those of its loops' bodies once per iteration (a
/// tile's once).
pub fn statements(body: &[Stmt]) -> usize {
    body.iter()
        .map(|s| match s {
            Stmt::Loop { extent: Extent::Range(lo, hi), body, .. } => (hi - lo).max(0) as usize * statements(body),
            Stmt::Loop { body, .. }
            | Stmt::Fixed { body, .. }
            | Stmt::Tiles { body, .. }
            | Stmt::OnThreads(_, body) => statements(body),
            _ => 1,
        })
        .sum()
}

/// The values a loop variable takes in a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Extent {
    /// `lo..hi`.
    Range(i64, i64),
    /// The values of the enclosing [`Stmt::Tiles`]' current tile.
    Tile,
}

/// How the target should vectorise a loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hint {
    /// As it sees fit.
    None,
    /// Across the independent items of a batched kernel.
    Items,
    /// As a reduction of the given accumulator by `op`.
    Reduction(ReduceOp, ExprId),
    /// Spread over the threads of a grid ([`Form::Grid`]): each runs some iterations.
    Grid,
    /// Dealt to the first `lanes` threads of a grid: thread `t` runs iterations `lo + t`,
    /// `lo + t + lanes`, ... (a split reduction's partial loop).
    Lanes(usize),
}

/// How a math operation is computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    /// In scalar code.
    Scalar,
    /// In a loop the compiler vectorises: with functions that have vector forms.
    Vector,
    /// In a vectorised loop, with the target's fast functions, accurate only for the
    /// arguments [`Stmt::CheckFar`] does not flag (the kernel is then run again with
    /// [`Math::Vector`]).
    Fast,
}

/// A value a statement reads.
#[derive(Clone, Copy, Debug)]
pub enum Operand {
    /// A literal.
    Literal(Literal, DType),
    /// The temporary of an expression computed before (in this scope or one enclosing it,
    /// or passed to the part).
    Temp(ExprId),
    /// The element of reduction `array`'s local array at the current value of `var`.
    Element {
        /// The reduction.
        array: ExprId,
        /// The loop variable indexing it.
        var: usize,
    },
}

/// What a [`Stmt::Let`] computes.
#[derive(Clone, Debug)]
pub enum Value {
    /// `buffer[index]`, with the index clamped into `0..len` on the sides flagged.
    Load {
        /// The buffer read.
        buffer: BufferId,
        /// The element.
        index: IndexExpr,
        /// The buffer's length.
        len: usize,
        /// Clamp the index at 0.
        clamp_below: bool,
        /// Clamp the index at `len - 1`.
        clamp_above: bool,
    },
    /// `buffer[index]` with a computed index, clamped into `0..len` unless `in_range`.
    Gather {
        /// The buffer read.
        buffer: BufferId,
        /// The element.
        index: Operand,
        /// The buffer's length.
        len: usize,
        /// Its type.
        dtype: DType,
        /// The index is known to lie in `0..len`.
        in_range: bool,
    },
    /// True where all of these bounds hold (none: true).
    InBounds(Vec<Bound>),
    /// Unary math.
    Unary(UnaryOp, Operand, DType, Math),
    /// Binary math.
    Binary(BinaryOp, Operand, Operand, DType),
    /// `cond ? a : b`.
    Where(Operand, Operand, Operand),
    /// A conversion.
    Cast(Operand, DType, DType),
}

/// Segments of a split loop outlined into a function of their own.
#[derive(Clone, Debug)]
pub struct Part {
    /// The loop variables bound where it is called (passed to it).
    pub vars: Vec<usize>,
    /// The temporaries computed outside it that it reads (passed to it).
    pub temps: Vec<(ExprId, DType)>,
    /// Its statements.
    pub body: Vec<Stmt>,
}

//! Kernel IR → a C++ function: a loop nest whose body is straight-line scalar code.
//!
//! Every expression becomes one `const` temporary, placed in the outermost loop where all
//! the loop variables it uses are bound (loop-invariant code is hoisted for free). Math
//! goes through compiler builtins so that the JIT translation unit needs no headers.
//!
//! Loops are split where padding conditions change (index-set splitting). In each segment
//! the conditions it decides are resolved: a `where` on a decided bound is its chosen
//! branch, and the other branch is not emitted at all. A loop is split at every breakpoint
//! when that does not grow the code much (a concatenation of k pieces becomes k short
//! segments, each computing one piece), else into a clamp-free interior and its edges
//! (stencils: the interior vectorises).
//!
//! A kernel whose vectorised loops take sines or cosines of doubles is rendered twice: with
//! the prelude's inline `anvil_fast_sin`/`anvil_fast_cos`, raising a flag when an argument is
//! beyond their range, and with the exact functions under `<name>_exact`; the kernel's
//! function runs the second only when the first raised the flag.

use super::dialect::CPP;
use crate::dtype::DType;
use crate::graph::{reduce_identity, scalar, BinaryOp, Literal, ReduceOp, UnaryOp};
use crate::lower::interchange::ACROSS_TILE;
use crate::lower::{Bound, BufferId, Expr, ExprId, IndexExpr, Kernel};
use std::fmt::Write;

/// Renders `kernel` as a C++ function named `name` taking `(output, inputs...)` pointers
/// in the order of [`Kernel::inputs`]; `dtypes` gives each buffer's element type.
pub fn render_kernel(kernel: &Kernel, name: &str, dtypes: &[DType]) -> String {
    with_exact_rerun(kernel, name, |name, trig| render_nest(kernel, name, dtypes, trig))
}

/// How a kernel function computes the sines and cosines of doubles in its vectorised loops.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Trig {
    /// With the exact functions: the kernel as it is called.
    Exact,
    /// With the fast functions: returns whether it met an argument beyond their range.
    Fast,
    /// With the exact functions, rarely: the rerun of a fast kernel.
    Rerun,
}

/// Renders a kernel with the fast sine and cosine of doubles in its vectorised loops
/// and, if it uses them, again with the exact ones: the function `name` runs the fast one,
/// and the exact one when the fast one met an argument beyond their range (see the
/// prelude's `anvil_fast_sin`). Rerunning is sound: a kernel's outputs never alias its
/// inputs (its pointers are `restrict`).
fn with_exact_rerun(kernel: &Kernel, name: &str, render: impl Fn(&str, Trig) -> Rendered) -> String {
    let may_use_fast_trig = kernel
        .exprs
        .iter()
        .any(|e| matches!(e, Expr::Unary(op, _, dtype) if CPP.fast_unary(*op, *dtype, "").is_some()));
    if !may_use_fast_trig {
        return render(name, Trig::Exact).code;
    }
    let (fast_name, rerun_name) = (format!("{name}_fast"), format!("{name}_exact"));
    let fast = render(&fast_name, Trig::Fast);
    if !fast.uses_fast_trig {
        return render(name, Trig::Exact).code;
    }
    let rerun = render(&rerun_name, Trig::Rerun);
    let body = CPP.only_if(&CPP.call_value(&fast_name, &fast.args), &CPP.call(&rerun_name, &fast.args));
    fast.code + &rerun.code + &CPP.function(&fast.attribute, name, &fast.params, &format!("  {body}\n"))
}

/// A rendered kernel function, and how it is declared and called.
struct Rendered {
    /// The function (and the parts it calls).
    code: String,
    /// Whether it computes sines or cosines with the fast functions (it then returns
    /// whether it met an argument beyond their range).
    uses_fast_trig: bool,
    params: Vec<String>,
    args: Vec<String>,
    /// The kernel's own attributes (without those of its flavour).
    attribute: String,
}

/// The flag a kernel rendered with fast sines and cosines raises when an argument is beyond
/// their range.
const FAR: &str = "anvil_far";

/// [`render_kernel`] with sines and cosines computed as `trig` says.
fn render_nest(kernel: &Kernel, name: &str, dtypes: &[DType], trig: Trig) -> Rendered {
    let mut params: Vec<String> =
        kernel.outputs.iter().map(|&b| CPP.pointer_param(dtypes[b], true, &format!("b{b}"))).collect();
    let mut args: Vec<String> = kernel.outputs.iter().map(|&b| format!("b{b}")).collect();
    // Index-set splitting may decide away every read of an input (the padded branches of a
    // `where`): an input may go unused.
    for b in kernel.inputs() {
        params.push(format!("{} {}", CPP.maybe_unused, CPP.pointer_param(dtypes[b], false, &format!("b{b}"))));
        args.push(format!("b{b}"));
    }
    let attribute = function_attribute(kernel);
    let mut r = Renderer::new(kernel, name, params.clone(), args.clone(), attribute);
    r.trig = trig;
    let pragma = kernel.items.then_some(CPP.annotations.items_loop);
    let out_vars: Vec<usize> = (0..kernel.shape.len()).filter(|&d| kernel.shape[d] != 1).collect();
    let mut bound = Vec::new();
    match &kernel.scatter {
        None => {
            let stores = kernel.stores.iter().map(|s| (s.buffer, s.index.to_string(), s.value)).collect();
            r.loop_nest(&out_vars, &mut bound, 1, &Body::Stores(stores), pragma, true);
        }
        Some(scatter) => {
            let (out, value) = (kernel.stores[0].buffer, kernel.stores[0].value);
            let dtype = dtypes[out];
            let zero = CPP.literal(Literal::Int(0), dtype);
            let head = CPP.loop_head("i", "0", &scatter.len.to_string());
            let _ = writeln!(r.code, "  {head} {}", CPP.assign(&CPP.element(&format!("b{out}"), "i"), &zero));
            if scatter.len > 0 {
                let body = Body::ScatterAdd { out, index: scatter.index, len: scatter.len, value, dtype };
                r.loop_nest(&out_vars, &mut bound, 1, &body, None, false);
            }
        }
    }
    let body = std::mem::take(&mut r.code);
    r.finish(attribute.to_string(), params, args, body)
}

/// What a kernel's function is declared with: kernels that narrow `f64` to `f32` opt out of
/// SLP vectorisation (see the prelude's `ANVIL_NO_SLP`).
fn function_attribute(kernel: &Kernel) -> &'static str {
    let narrows = kernel.exprs.iter().any(|e| matches!(e, Expr::Cast(_, DType::F64, DType::F32)));
    if narrows {
        CPP.annotations.narrowing_kernel
    } else {
        ""
    }
}

/// True if `kernel` can be rendered by [`render_batched_kernel`]: straight-line code (no
/// loops, not even a reduction's).
pub fn is_batchable(kernel: &Kernel) -> bool {
    kernel.shape.is_empty()
        && kernel.scatter.is_none()
        && !kernel.exprs.iter().any(|e| matches!(e, Expr::Reduce { .. }))
}

/// Renders straight-line `kernel` as a loop over `count` items, named `name` and taking
/// `(count, output, stride, inputs and strides...)`: item `k` reads and writes buffer `b`
/// at `b + k * stride` (a stride of 0 shares one buffer among the items; the outputs' must
/// keep the items apart). The body is the kernel's own code, so each item's results are the
/// kernel's, except that sines and cosines come from vector math where the loop vectorises.
///
/// # Panics
/// If the kernel is not [`is_batchable`] (a bug in the caller).
pub fn render_batched_kernel(kernel: &Kernel, name: &str, dtypes: &[DType]) -> String {
    assert!(is_batchable(kernel), "only straight-line kernels are batched");
    with_exact_rerun(kernel, name, |name, trig| render_batched_nest(kernel, name, dtypes, trig))
}

/// [`render_batched_kernel`] with sines and cosines computed as `trig` says.
fn render_batched_nest(kernel: &Kernel, name: &str, dtypes: &[DType], trig: Trig) -> Rendered {
    let index = CPP.type_name(DType::I64);
    let mut params = vec![format!("{index} count")];
    let mut args = vec!["count".to_string()];
    let mut pointers = String::new();
    let buffers = kernel.outputs.iter().map(|&b| (b, true)).chain(kernel.inputs().into_iter().map(|b| (b, false)));
    for (b, mutable) in buffers {
        params.push(format!("{}, {index} stride{b}", CPP.pointer_param(dtypes[b], mutable, &format!("items{b}"))));
        args.push(format!("items{b}, stride{b}"));
        let pointee = CPP.pointee(dtypes[b], mutable);
        let pointer = CPP.pointer_binding(&pointee, &format!("b{b}"), &format!("items{b} + item * stride{b}"));
        let _ = writeln!(pointers, "    {} {pointer}", CPP.maybe_unused);
    }
    let attribute = function_attribute(kernel);
    let mut r = Renderer::new(kernel, name, Vec::new(), Vec::new(), attribute);
    r.loop_math = true;
    r.trig = trig;
    let stores = kernel.stores.iter().map(|s| (s.buffer, s.index.to_string(), s.value)).collect();
    r.loop_nest(&[], &mut Vec::new(), 2, &Body::Stores(stores), None, true);
    let [open, close] = CPP.statements.block;
    let items = CPP.loop_head("item", "0", "count");
    let body = format!("  {}\n  {items} {open}\n{pointers}{}  {close}\n", CPP.annotations.items_loop, r.code);
    r.finish(format!("{attribute}{}", CPP.annotations.runtime_strides), params, args, body)
}

/// The statement in the innermost loop of a nest.
enum Body {
    /// `b<buffer>[<index>] = <value>` for each output of the kernel.
    Stores(Vec<(BufferId, String, ExprId)>),
    /// `b<out>[clamp(index)] += value` (a scatter-add kernel).
    ScatterAdd { out: BufferId, index: ExprId, len: usize, value: ExprId, dtype: DType },
    /// `acc = acc ⊕ value` (a reduction's loop).
    Accumulate { acc: ExprId, op: ReduceOp, dtype: DType, value: ExprId },
}

impl Body {
    /// The expressions the statement uses.
    fn roots(&self) -> Vec<ExprId> {
        match self {
            Body::Stores(stores) => stores.iter().map(|&(_, _, e)| e).collect(),
            Body::ScatterAdd { index, value, .. } => vec![*value, *index],
            Body::Accumulate { value, .. } => vec![*value],
        }
    }
}

/// What an expression amounts to in the code being emitted: an expression to compute
/// (itself, or the branch a decided `where` picks), or a literal.
#[derive(Clone)]
enum Resolved {
    Expr(ExprId),
    Literal(String),
}

/// The most segments one loop is split into: beyond that, splitting only multiplies code.
const MAX_SEGMENTS: usize = 1 << 16;

struct Renderer<'k> {
    kernel: &'k Kernel,
    deps: Vec<Vec<usize>>,
    /// Expressions computed in an enclosing scope, and the log to undo a segment's.
    emitted: Vec<bool>,
    emit_log: Vec<ExprId>,
    /// The range (inclusive) each loop variable takes in the code being emitted.
    ranges: Vec<(i64, i64)>,
    /// Resolutions under the current ranges, valid while their stamp is `generation`.
    resolved: Vec<(u64, Resolved)>,
    generation: u64,
    /// Marks of one graph walk (`walk` is the current walk's stamp).
    marks: Vec<u64>,
    walk: u64,
    /// Where in `emit_log` each emitted expression was logged.
    emit_pos: Vec<usize>,
    /// Outlined parts: the temporaries from outside the current part it refers to, and the
    /// `emit_log` length when it began (expressions logged before are outside).
    part_refs: std::collections::BTreeSet<ExprId>,
    part_start: usize,
    /// The functions outlined so far, and what they are named after and called with.
    parts: Vec<String>,
    name: String,
    params: Vec<String>,
    args: Vec<String>,
    attribute: &'static str,
    /// Spell sine and cosine for a loop that must vectorise (see `anvil_loop_sin`)
    /// everywhere: the whole body runs in a loop over items the nest does not show.
    loop_math: bool,
    /// How the sines and cosines of doubles in vectorised loops are computed, and whether
    /// any was computed with the fast functions.
    trig: Trig,
    uses_fast_trig: bool,
    /// The sines and cosines of each argument.
    trig_of: std::collections::HashMap<ExprId, Vec<ExprId>>,
    /// The variable of the innermost loop being emitted, if one is open: what depends on
    /// it is computed in a loop the compiler vectorises.
    vector_loop: Option<usize>,
    /// The reductions accumulated into local arrays (see [`Kernel::accumulate_across`]),
    /// each with the loop variable indexing its array.
    arrays: Vec<Option<usize>>,
    /// Set while the loops of an interchanged nest are emitted (they are not interchanged
    /// again).
    interchanging: bool,
    /// The tile of the output loop being accumulated across, when it is tiled: its loops
    /// run over the tile, and the arrays are indexed from the tile's start.
    tile: Option<Tile>,
    code: String,
}

/// A tile of loop variable `var`: it runs from `start` (a variable) to `end` (exclusive).
struct Tile {
    var: usize,
    start: String,
    end: String,
}

/// Segments rendered apart from the code around them (to become a function if the loop
/// is large): what to restore when the part ends.
struct Part {
    enclosing_code: String,
    enclosing_refs: std::collections::BTreeSet<ExprId>,
    enclosing_start: usize,
}

/// The most C++ one part of a split loop holds before the rest goes into another.
const PART_BYTES: usize = 16 * 1024;

impl<'k> Renderer<'k> {
    fn new(kernel: &'k Kernel, name: &str, params: Vec<String>, args: Vec<String>, attribute: &'static str) -> Self {
        let n = kernel.exprs.len();
        Renderer {
            emit_pos: vec![0; n],
            part_refs: Default::default(),
            part_start: 0,
            parts: Vec::new(),
            name: name.to_string(),
            params,
            args,
            attribute,
            loop_math: false,
            trig: Trig::Exact,
            uses_fast_trig: false,
            trig_of: trig_by_argument(kernel),
            vector_loop: None,
            arrays: vec![None; n],
            interchanging: false,
            tile: None,
            kernel,
            deps: dependencies(kernel),
            emitted: vec![false; n],
            emit_log: Vec::new(),
            ranges: kernel.extents.iter().map(|&n| (0, n as i64 - 1)).collect(),
            resolved: vec![(0, Resolved::Literal(String::new())); n],
            generation: 1,
            marks: vec![0; n],
            walk: 0,
            code: String::new(),
        }
    }

    /// Narrows (or restores) the range of loop variable `v`: resolutions change with it.
    fn set_range(&mut self, v: usize, range: (i64, i64)) {
        self.ranges[v] = range;
        self.generation += 1;
    }

    /// Whether `bound` always holds (`Some(true)`), never holds, or depends, in the current
    /// ranges.
    fn decide(&self, bound: &Bound) -> Option<bool> {
        let (lo, hi) = bound.expr.bounds_in(&self.ranges);
        if hi < bound.lo || lo >= bound.hi {
            Some(false)
        } else if lo >= bound.lo && hi < bound.hi {
            Some(true)
        } else {
            None
        }
    }

    /// What `e` amounts to in the current ranges: a decided bound is a literal, a `where`
    /// with a decided condition is its chosen branch (followed in a loop along chains).
    fn resolve(&mut self, e: ExprId) -> Resolved {
        self.resolve_within(e, 0)
    }

    /// [`resolve`](Self::resolve), where resolving conditions of conditions stops at a
    /// fixed depth (beyond it a condition counts as undecided): no recursion on graph depth.
    fn resolve_within(&mut self, e: ExprId, depth: usize) -> Resolved {
        const MAX_CONDITION_DEPTH: usize = 32;
        if self.resolved[e].0 == self.generation {
            return self.resolved[e].1.clone();
        }
        let mut at = e;
        let result = loop {
            match &self.kernel.exprs[at] {
                Expr::Const(v, dtype) => break Resolved::Literal(CPP.literal(*v, *dtype)),
                Expr::Zero(dtype) => break Resolved::Literal(CPP.literal(scalar::literal(*dtype, 0.0, 0), *dtype)),
                Expr::InBounds(bounds) => {
                    let decisions: Vec<Option<bool>> = bounds.iter().map(|b| self.decide(b)).collect();
                    if decisions.contains(&Some(false)) {
                        break Resolved::Literal(CPP.literal(Literal::Bool(false), DType::Bool));
                    } else if decisions.iter().all(|d| *d == Some(true)) {
                        break Resolved::Literal(CPP.literal(Literal::Bool(true), DType::Bool));
                    } else {
                        break Resolved::Expr(at);
                    }
                }
                &Expr::Where(c, a, b, _) if depth < MAX_CONDITION_DEPTH => match self.resolve_within(c, depth + 1) {
                    Resolved::Literal(text) if *text == CPP.literal(Literal::Bool(false), DType::Bool) => at = b,
                    Resolved::Literal(_) => at = a,
                    Resolved::Expr(_) => break Resolved::Expr(at),
                },
                _ => break Resolved::Expr(at),
            }
        };
        self.resolved[e] = (self.generation, result.clone());
        result
    }

    /// How expression `e` is referred to: a literal or the temporary it resolves to.
    fn name(&mut self, e: ExprId) -> String {
        match self.resolve(e) {
            Resolved::Literal(text) => text,
            Resolved::Expr(x) => {
                if let Some(v) = self.arrays[x] {
                    return CPP.element(&format!("t{x}"), &self.array_index(v));
                }
                if self.emitted[x] && self.emit_pos[x] < self.part_start {
                    self.part_refs.insert(x);
                }
                format!("t{x}")
            }
        }
    }

    /// The expressions the code under `roots` needs in the current ranges (not yet emitted
    /// in an enclosing scope), operands first.
    fn live(&mut self, roots: &[ExprId]) -> Vec<ExprId> {
        self.walk += 1;
        let mut order = Vec::new();
        let mut stack: Vec<(ExprId, bool)> = roots.iter().rev().map(|&e| (e, false)).collect();
        while let Some((e, operands_done)) = stack.pop() {
            let Resolved::Expr(e) = self.resolve(e) else { continue };
            if operands_done {
                order.push(e);
                continue;
            }
            if self.emitted[e] || self.marks[e] == self.walk {
                continue;
            }
            self.marks[e] = self.walk;
            stack.push((e, true));
            stack.extend(self.kernel.exprs[e].operands().into_iter().rev().map(|c| (c, false)));
        }
        order
    }

    /// Emits every live expression under `roots` whose loop variables are all bound.
    fn visit(&mut self, roots: &[ExprId], bound: &[usize], depth: usize) {
        for e in self.live(roots) {
            if !self.emitted[e] && self.deps[e].iter().all(|v| bound.contains(v)) {
                self.emit(e, bound, depth);
            }
        }
    }

    /// Opens one loop per variable in `vars` (splitting it into segments where that
    /// pays), emitting at each level what that level can compute, and `body` innermost.
    fn loop_nest(
        &mut self,
        vars: &[usize],
        bound: &mut Vec<usize>,
        depth: usize,
        body: &Body,
        pragma: Option<&str>,
        split: bool,
    ) {
        if let ([v], false, Body::Stores(_)) = (vars, self.interchanging, body) {
            if self.kernel.accumulate_across == Some(*v) {
                return self.accumulate_across(*v, bound, depth, body);
            }
        }
        let roots = body.roots();
        let Some((&v, inner)) = vars.split_first() else {
            self.visit(&roots, bound, depth);
            let statement = self.statement(body);
            let _ = writeln!(self.code, "{}{statement}", "  ".repeat(depth));
            return;
        };
        let full = self.ranges[v];
        let segments = if split { self.segments(v, &roots, inner.is_empty()) } else { vec![full] };
        // Before the loop, compute what every segment needs (loop-invariant code hoisted);
        // what only some segments need is computed in them.
        let common = self.common_to(v, &segments, &roots);
        for e in common {
            if !self.emitted[e] && self.deps[e].iter().all(|d| bound.contains(d)) {
                self.emit(e, bound, depth);
            }
        }
        // Segments are rendered into parts of bounded size; if the loop needs more than
        // one, each part becomes a function of its own (the C++ compiler's time grows
        // faster than linearly with a function's size).
        let mut part = (segments.len() > 1).then(|| self.begin_part());
        let mut outlined = false;
        for (lo, hi) in segments {
            self.set_range(v, (lo, hi));
            let mark = self.emit_log.len();
            let depth = if part.is_some() { 1 } else { depth };
            let pad = "  ".repeat(depth);
            // A pragma must precede a `for`: a one-iteration segment is a block without it.
            if let Some(p) = pragma.filter(|_| inner.is_empty() && lo != hi) {
                let _ = writeln!(self.code, "{pad}{p}");
            }
            let [open, close] = CPP.statements.block;
            let var = format!("i{v}");
            if lo == hi {
                // One iteration: a block (cheaper for the C++ compiler than a one-trip loop).
                let _ = writeln!(self.code, "{pad}{open}\n{pad}  {}", CPP.fixed_index(&var, &lo.to_string()));
            } else {
                let (first, end) = self.loop_bounds(v);
                let _ = writeln!(self.code, "{pad}{} {open}", CPP.loop_head(&var, &first, &end));
            }
            bound.push(v);
            let enclosing = self.vector_loop;
            if inner.is_empty() {
                self.vector_loop = Some(v);
            }
            self.loop_nest(inner, bound, depth + 1, body, pragma, split);
            self.vector_loop = enclosing;
            bound.pop();
            let _ = writeln!(self.code, "{pad}{close}");
            // The next segment emits its own copies of what depends on this variable.
            for e in self.emit_log.drain(mark..) {
                self.emitted[e] = false;
            }
            if part.is_some() && self.code.len() > PART_BYTES {
                self.outline(part.take().expect("checked"), bound, depth);
                outlined = true;
                part = Some(self.begin_part());
            }
        }
        if let Some(last) = part {
            if outlined {
                self.outline(last, bound, depth);
            } else {
                self.inline(last, depth);
            }
        }
        self.set_range(v, full);
    }

    /// The innermost output loop over `v` with the reductions interchanged (see
    /// [`Kernel::accumulate_across`]): each reduction that depends on `v` accumulates into a
    /// local array in a nest of its own loops around a loop over `v`; then one loop over `v`
    /// computes the stores from the arrays.
    fn accumulate_across(&mut self, v: usize, bound: &mut Vec<usize>, depth: usize, body: &Body) {
        let roots = body.roots();
        self.visit(&roots, bound, depth);
        self.interchanging = true;
        let (var, [open, close]) = (format!("i{v}"), CPP.statements.block);
        let extent = self.kernel.extents[v];
        let (mut depth, mark) = (depth, self.emit_log.len());
        if extent > ACROSS_TILE {
            let start = format!("{var}_tile");
            let (step, extent) = (ACROSS_TILE.to_string(), extent.to_string());
            let head = CPP.tile_head(&start, "0", &extent, &step);
            let _ = writeln!(self.code, "{}{head} {open}", "  ".repeat(depth));
            let end = format!("({})", CPP.binary(BinaryOp::Min, DType::I64, &format!("{start} + {step}"), &extent));
            self.tile = Some(Tile { var: v, start, end });
            depth += 1;
        }
        let (pad, length) = ("  ".repeat(depth), extent.min(ACROSS_TILE).to_string());
        let (first, end) = self.loop_bounds(v);
        for e in self.live(&roots) {
            let Expr::Reduce { op, ref vars, body: value, dtype } = self.kernel.exprs[e] else { continue };
            if self.emitted[e] || !self.deps[e].contains(&v) {
                continue;
            }
            let array = format!("t{e}");
            let init = CPP.literal(reduce_identity(op, dtype), dtype);
            let _ = writeln!(self.code, "{pad}{}", CPP.local_array(CPP.type_name(dtype), &array, &length));
            self.arrays[e] = Some(v);
            let head = CPP.loop_head(&var, &first, &end);
            let slot = CPP.element(&array, &self.array_index(v));
            let _ = writeln!(self.code, "{pad}{head} {open} {} {close}", CPP.assign(&slot, &init));
            let nest: Vec<usize> = vars.iter().copied().chain([v]).collect();
            let accumulate = Body::Accumulate { acc: e, op, dtype, value };
            self.loop_nest(&nest, bound, depth, &accumulate, None, false);
            self.mark_emitted(e);
        }
        self.loop_nest(&[v], bound, depth, body, None, false);
        self.interchanging = false;
        if self.tile.take().is_some() {
            let _ = writeln!(self.code, "{}{close}", "  ".repeat(depth - 1));
            // What the tile's block computed is out of scope after it.
            for e in self.emit_log.drain(mark..) {
                self.emitted[e] = false;
            }
        }
    }

    /// The first value and the end (exclusive) of loop `v` as emitted: its tile's, or its
    /// current range's.
    fn loop_bounds(&self, v: usize) -> (String, String) {
        match &self.tile {
            Some(tile) if tile.var == v => (tile.start.clone(), tile.end.clone()),
            _ => (self.ranges[v].0.to_string(), (self.ranges[v].1 + 1).to_string()),
        }
    }

    /// Records `e` as computed in the current scope (its temporary can be named).
    fn mark_emitted(&mut self, e: ExprId) {
        self.emitted[e] = true;
        self.emit_pos[e] = self.emit_log.len();
        self.emit_log.push(e);
    }

    /// The element of an interchanged reduction's array at the current point of loop `v`.
    fn array_index(&self, v: usize) -> String {
        match &self.tile {
            // Spelled like the index expressions (`lower::IndexExpr`'s display).
            Some(tile) if tile.var == v => format!("i{v} - {}", tile.start),
            _ => format!("i{v}"),
        }
    }

    /// Starts rendering segments into a part of their own (see [`Part`]).
    fn begin_part(&mut self) -> Part {
        Part {
            enclosing_code: std::mem::take(&mut self.code),
            enclosing_refs: std::mem::take(&mut self.part_refs),
            enclosing_start: std::mem::replace(&mut self.part_start, self.emit_log.len()),
        }
    }

    /// Ends a part, returning its code and the outer temporaries it used (recorded as used
    /// by the enclosing part too, when they come from outside that one as well).
    fn end_part(&mut self, part: Part) -> (String, std::collections::BTreeSet<ExprId>) {
        let code = std::mem::replace(&mut self.code, part.enclosing_code);
        let refs = std::mem::replace(&mut self.part_refs, part.enclosing_refs);
        self.part_start = part.enclosing_start;
        for &e in &refs {
            if self.emit_pos[e] < self.part_start {
                self.part_refs.insert(e);
            }
        }
        (code, refs)
    }

    /// Ends a part by pasting its code here (it was rendered at depth 1).
    fn inline(&mut self, part: Part, depth: usize) {
        let (code, _) = self.end_part(part);
        let indent = "  ".repeat(depth - 1);
        for line in code.lines() {
            let _ = writeln!(self.code, "{indent}{line}");
        }
    }

    /// Ends a part by making it a function, called here with the kernel's buffers, the
    /// bound loop variables and the outer temporaries it uses.
    fn outline(&mut self, part: Part, bound: &[usize], depth: usize) {
        let (code, refs) = self.end_part(part);
        let name = format!("{}_part{}", self.name, self.parts.len());
        // A part may not use every buffer or loop variable: no unused-parameter warnings.
        let mut params: Vec<String> = self
            .params
            .iter()
            .map(|p| if p.starts_with(CPP.maybe_unused) { p.clone() } else { format!("{} {p}", CPP.maybe_unused) })
            .collect();
        let mut args = self.args.clone();
        for &v in bound {
            params.push(format!("{} {} i{v}", CPP.maybe_unused, CPP.type_name(DType::I64)));
            args.push(format!("i{v}"));
        }
        for e in refs {
            params.push(format!("{} t{e}", CPP.pointee(self.kernel.exprs[e].dtype(), false)));
            args.push(format!("t{e}"));
        }
        let attributes = match self.trig {
            Trig::Exact => format!("{}{}", self.attribute, CPP.annotations.internal),
            _ => self.flavour_attributes(self.attribute),
        };
        let call = if self.trig == Trig::Fast {
            self.parts.push(CPP.flag_function(&attributes, &name, &params, &flagged(&code)));
            CPP.raise(FAR, &CPP.call_value(&name, &args))
        } else {
            self.parts.push(CPP.function(&attributes, &name, &params, &code));
            CPP.call(&name, &args)
        };
        let _ = writeln!(self.code, "{}{call}", "  ".repeat(depth));
    }

    /// The live expressions every one of `segments` of `v`'s range needs, operands first.
    fn common_to(&mut self, v: usize, segments: &[(i64, i64)], roots: &[ExprId]) -> Vec<ExprId> {
        let full = self.ranges[v];
        let mut order = self.live(roots);
        if segments.len() > 1 {
            let mut count: std::collections::HashMap<ExprId, usize> = std::collections::HashMap::new();
            for &piece in segments {
                self.set_range(v, piece);
                for e in self.live(roots) {
                    *count.entry(e).or_default() += 1;
                }
            }
            self.set_range(v, full);
            order.retain(|e| count.get(e) == Some(&segments.len()));
        }
        order
    }

    /// The innermost statement, with the names its expressions resolve to.
    fn statement(&mut self, body: &Body) -> String {
        match body {
            Body::Stores(stores) => {
                let parts: Vec<String> = stores
                    .iter()
                    .map(|(b, index, e)| CPP.assign(&CPP.element(&format!("b{b}"), index), &self.name(*e)))
                    .collect();
                parts.join(" ")
            }
            Body::ScatterAdd { out, index, len, value, dtype } => {
                let slot = CPP.element(&format!("b{out}"), &clamped(&self.name(*index), *len));
                let add = CPP.binary(BinaryOp::Add, *dtype, &slot, &self.name(*value));
                CPP.assign(&slot, &add)
            }
            Body::Accumulate { acc, op, dtype, value } => {
                let acc = self.name(*acc);
                CPP.assign(&acc, &CPP.combine(*op, *dtype, &acc, &self.name(*value)))
            }
        }
    }

    /// How to split the loop over `v`: at every breakpoint of the live conditions when the
    /// segments' code stays within twice the unsplit code, else (innermost loops) into a
    /// clamp-free interior and its edges, else not at all.
    fn segments(&mut self, v: usize, roots: &[ExprId], innermost: bool) -> Vec<(i64, i64)> {
        let full = self.ranges[v];
        let live = self.live(roots);
        let conditions = self.conditions(&live);
        let mut cuts: Vec<i64> = Vec::new();
        for (expr, lo, hi) in &conditions {
            if let Some((a, b)) = self.holds_for(v, expr, *lo, *hi) {
                cuts.extend([a, b + 1]);
            }
        }
        cuts.retain(|&c| c > full.0 && c <= full.1);
        cuts.sort_unstable();
        cuts.dedup();
        if !cuts.is_empty() && cuts.len() < MAX_SEGMENTS {
            let mut bounds = vec![full.0];
            bounds.extend(&cuts);
            bounds.push(full.1 + 1);
            let pieces: Vec<(i64, i64)> = bounds.windows(2).map(|w| (w[0], w[1] - 1)).collect();
            if self.splitting_pays(v, &pieces, roots, live.len()) {
                return pieces;
            }
        }
        if innermost {
            if let Some((a, b)) = self.interior(v, &conditions) {
                return [(full.0, a - 1), (a, b), (b + 1, full.1)].into_iter().filter(|(l, h)| l <= h).collect();
            }
        }
        vec![full]
    }

    /// True if emitting the code for each of `pieces` of `v`'s range takes at most about
    /// twice the code of the unsplit loop (`unsplit` live expressions).
    fn splitting_pays(&mut self, v: usize, pieces: &[(i64, i64)], roots: &[ExprId], unsplit: usize) -> bool {
        let full = self.ranges[v];
        let budget = 2 * unsplit + 8;
        let mut total = 0;
        for &piece in pieces {
            self.set_range(v, piece);
            total += self.live(roots).len().max(1);
            if total > budget {
                break;
            }
        }
        self.set_range(v, full);
        total <= budget
    }

    /// Every `lo <= expr < hi` the live code tests, or needs for a load to stay in bounds.
    fn conditions(&self, live: &[ExprId]) -> Vec<(IndexExpr, i64, i64)> {
        let mut out = Vec::new();
        for &e in live {
            match &self.kernel.exprs[e] {
                Expr::InBounds(bounds) => out.extend(bounds.iter().map(|b| (b.expr.clone(), b.lo, b.hi))),
                Expr::Load { index, len, .. } => out.push((index.clone(), 0, *len as i64)),
                _ => {}
            }
        }
        out
    }

    /// The values of `v` (within its current range's span of interest) for which
    /// `lo <= expr < hi` holds, if `expr` is `c·v + r` with `r` fixed by the other
    /// variables' current ranges.
    fn holds_for(&self, v: usize, expr: &IndexExpr, lo: i64, hi: i64) -> Option<(i64, i64)> {
        let (c, rest) = expr.split_var(v)?;
        let (rlo, rhi) = rest.bounds_in(&self.ranges);
        if c == 0 || rlo != rhi {
            return None;
        }
        let (l, h) = (lo - rlo, hi - 1 - rlo);
        Some(if c > 0 { (ceil_div(l, c), floor_div(h, c)) } else { (ceil_div(h, c), floor_div(l, c)) })
    }

    /// The values of variable `v` for which every condition that depends on `v` linearly
    /// holds (whatever the other variables), if that is a proper, non-empty part of its
    /// range.
    fn interior(&self, v: usize, conditions: &[(IndexExpr, i64, i64)]) -> Option<(i64, i64)> {
        let (mut a, mut b) = self.ranges[v];
        let full = (a, b);
        for (expr, lo, hi) in conditions {
            let (elo, ehi) = expr.bounds_in(&self.ranges);
            if elo >= *lo && ehi < *hi {
                continue; // always holds
            }
            let Some((c, rest)) = expr.split_var(v) else { continue };
            if c == 0 {
                continue;
            }
            let (rlo, rhi) = rest.bounds_in(&self.ranges);
            // lo <= c·v + r < hi for every r in [rlo, rhi]  ⇔  c·v ∈ [lo - rlo, hi - 1 - rhi]
            let (l, h) = (lo - rlo, hi - 1 - rhi);
            let (vmin, vmax) =
                if c > 0 { (ceil_div(l, c), floor_div(h, c)) } else { (ceil_div(h, c), floor_div(l, c)) };
            a = a.max(vmin);
            b = b.min(vmax);
        }
        (a <= b && (a, b) != full).then_some((a, b))
    }

    fn emit(&mut self, e: ExprId, bound: &[usize], depth: usize) {
        self.mark_emitted(e);
        let expr = self.kernel.exprs[e].clone();
        let pad = "  ".repeat(depth);
        match expr {
            Expr::Const(..) | Expr::Zero(_) => {} // literals are written inline
            Expr::Reduce { op, vars, body, dtype } => {
                let init = CPP.literal(reduce_identity(op, dtype), dtype);
                let _ = writeln!(self.code, "{pad}{}", CPP.variable(CPP.type_name(dtype), &format!("t{e}"), &init));
                let pragma = match op {
                    ReduceOp::Sum if !self.contains_reduce(body) => {
                        Some(CPP.annotate(CPP.annotations.sum_loop, &[&format!("t{e}")]))
                    }
                    ReduceOp::Prod if !self.contains_reduce(body) => {
                        Some(CPP.annotate(CPP.annotations.prod_loop, &[&format!("t{e}")]))
                    }
                    _ => None,
                };
                let mut inner = bound.to_vec();
                let accumulate = Body::Accumulate { acc: e, op, dtype, value: body };
                self.loop_nest(&vars, &mut inner, depth, &accumulate, pragma.as_deref(), false);
            }
            Expr::Unary(op, x, dtype) if self.trig == Trig::Fast && self.in_vector_loop(e) => {
                let arg = self.name(x);
                let value = match CPP.fast_unary(op, dtype, &arg) {
                    Some(fast) => {
                        self.uses_fast_trig = true;
                        if !self.argument_checked(e, x) {
                            let _ = writeln!(self.code, "{pad}{}", CPP.raise(FAR, &CPP.trig_far(&arg)));
                        }
                        fast
                    }
                    None => CPP.unary(op, dtype, &arg, true),
                };
                let _ = writeln!(self.code, "{pad}{}", CPP.binding(CPP.type_name(dtype), &format!("t{e}"), &value));
            }
            _ => {
                let in_loop = self.in_vector_loop(e);
                let value = self.value(&expr, in_loop);
                let _ =
                    writeln!(self.code, "{pad}{}", CPP.binding(CPP.type_name(expr.dtype()), &format!("t{e}"), &value));
            }
        }
    }

    /// True if another sine or cosine of `x` than `e` is computed in this scope (or one
    /// enclosing it): its argument was checked there.
    fn argument_checked(&self, e: ExprId, x: ExprId) -> bool {
        self.trig_of.get(&x).is_some_and(|ts| ts.iter().any(|&t| t != e && self.emitted[t]))
    }

    /// True if `e` is computed in a loop the compiler vectorises.
    fn in_vector_loop(&self, e: ExprId) -> bool {
        self.loop_math || self.vector_loop.is_some_and(|v| self.deps[e].contains(&v))
    }

    /// The function of this kernel (named as the renderer is, with `body` and the parts
    /// rendered before it), declared as its [`Trig`] flavour needs: with fast sines and
    /// cosines it returns whether an argument was beyond their range.
    fn finish(self, attribute: String, params: Vec<String>, args: Vec<String>, body: String) -> Rendered {
        let attributes = self.flavour_attributes(&attribute);
        let function = if self.trig == Trig::Fast {
            CPP.flag_function(&attributes, &self.name, &params, &flagged(&body))
        } else {
            CPP.function(&attributes, &self.name, &params, &body)
        };
        Rendered { code: self.parts.concat() + &function, uses_fast_trig: self.uses_fast_trig, params, args, attribute }
    }

    /// `attribute` and those of the renderer's [`Trig`] flavour: the fast and rerun
    /// functions are called only from the kernel's function, the rerun rarely.
    fn flavour_attributes(&self, attribute: &str) -> String {
        match self.trig {
            Trig::Exact => attribute.to_string(),
            Trig::Fast => format!("{attribute}{}", CPP.annotations.internal),
            Trig::Rerun => format!("{attribute}{}{}", CPP.annotations.cold, CPP.annotations.internal),
        }
    }

    /// True if a reduction is nested under `e` (an `omp simd` loop must stay innermost).
    fn contains_reduce(&self, e: ExprId) -> bool {
        self.kernel.cone(e).into_iter().any(|x| matches!(self.kernel.exprs[x], Expr::Reduce { .. }))
    }

    /// The bounds tests that are not decided by the current variable ranges.
    fn in_bounds(&self, bounds: &[Bound]) -> String {
        let open: Vec<Bound> = bounds.iter().filter(|b| self.decide(b).is_none()).cloned().collect();
        if open.is_empty() {
            CPP.literal(Literal::Bool(true), DType::Bool)
        } else {
            in_bounds(&open)
        }
    }

    /// The C++ expression of `expr`, spelled for a vectorised loop if `in_loop`.
    fn value(&mut self, expr: &Expr, in_loop: bool) -> String {
        match expr {
            Expr::Const(v, dtype) => CPP.literal(*v, *dtype),
            Expr::Zero(dtype) => CPP.literal(scalar::literal(*dtype, 0.0, 0), *dtype),
            Expr::Load { buffer, index, len, .. } => {
                let (lo, hi) = index.bounds_in(&self.ranges);
                load(*buffer, &index.to_string(), lo < 0, hi >= *len as i64, *len)
            }
            Expr::Gather { buffer, index, len, dtype, in_range } => {
                if *len == 0 {
                    CPP.literal(Literal::Int(0), *dtype)
                } else if *in_range {
                    CPP.element(&format!("b{buffer}"), &self.name(*index))
                } else {
                    CPP.element(&format!("b{buffer}"), &clamped(&self.name(*index), *len))
                }
            }
            Expr::InBounds(bounds) => self.in_bounds(bounds),
            Expr::Unary(op, x, dtype) => CPP.unary(*op, *dtype, &self.name(*x), in_loop),
            Expr::Binary(op, a, b, dtype) => {
                let (a, b) = (self.name(*a), self.name(*b));
                CPP.binary(*op, *dtype, &a, &b)
            }
            Expr::Where(c, a, b, _) => {
                let (c, a, b) = (self.name(*c), self.name(*a), self.name(*b));
                CPP.select(&c, &a, &b)
            }
            Expr::Cast(x, from, to) => CPP.cast(*from, *to, &self.name(*x)),
            Expr::Reduce { .. } => unreachable!("reductions are emitted as loops"),
        }
    }
}

/// The sines and cosines of `kernel`, by argument.
fn trig_by_argument(kernel: &Kernel) -> std::collections::HashMap<ExprId, Vec<ExprId>> {
    let mut by_argument: std::collections::HashMap<ExprId, Vec<ExprId>> = Default::default();
    for (e, expr) in kernel.exprs.iter().enumerate() {
        if let Expr::Unary(UnaryOp::Sin | UnaryOp::Cos, x, _) = expr {
            by_argument.entry(*x).or_default().push(e);
        }
    }
    by_argument
}

/// A function body `body` that raises the flag [`FAR`] and returns it.
fn flagged(body: &str) -> String {
    // As wide as a double: a narrower flag would make GCC vectorise with twice the lanes
    // (two vectors per double), doubling code and compile time.
    let flag = CPP.variable(CPP.type_name(DType::I64), FAR, &CPP.literal(Literal::Int(0), DType::I64));
    format!("  {flag}\n{body}  {}\n", CPP.return_value(FAR))
}

/// The loop variables each expression depends on (a reduction binds its own).
fn dependencies(kernel: &Kernel) -> Vec<Vec<usize>> {
    let mut deps: Vec<Vec<usize>> = Vec::with_capacity(kernel.exprs.len());
    for expr in &kernel.exprs {
        let mut d = Vec::new();
        match expr {
            Expr::Const(..) | Expr::Zero(_) => {}
            Expr::Load { index, .. } => index.vars(&mut d),
            Expr::Gather { index, .. } => d.extend(&deps[*index]),
            Expr::InBounds(bounds) => bounds.iter().for_each(|b| b.expr.vars(&mut d)),
            Expr::Unary(_, x, _) | Expr::Cast(x, _, _) => d.extend(&deps[*x]),
            Expr::Binary(_, a, b, _) => {
                d.extend(&deps[*a]);
                d.extend(&deps[*b]);
            }
            Expr::Where(c, a, b, _) => {
                for x in [c, a, b] {
                    d.extend(&deps[*x]);
                }
            }
            Expr::Reduce { vars, body, .. } => d.extend(deps[*body].iter().filter(|v| !vars.contains(v))),
        }
        d.sort_unstable();
        d.dedup();
        deps.push(d);
    }
    deps
}

/// `b<buffer>[index]`, with the index clamped into `0..len` on the sides where it can
/// leave it (padded reads, whose value is masked by the caller).
fn load(buffer: BufferId, index: &str, below: bool, above: bool, len: usize) -> String {
    let mut i = index.to_string();
    if above {
        let last = len.saturating_sub(1).to_string();
        i = CPP.select(&format!("({i}) > {last}"), &last, &format!("({i})"));
    }
    if below {
        i = CPP.select(&format!("({index}) < 0"), "0", &i);
    }
    CPP.element(&format!("b{buffer}"), &i)
}

/// A computed index clamped into `0..len` (the interpreter clamps the same way).
fn clamped(index: &str, len: usize) -> String {
    let last = (len - 1).to_string();
    let below_end = CPP.select(&format!("{index} > {last}"), &last, index);
    CPP.select(&format!("{index} < 0"), "0", &format!("({below_end})"))
}

fn floor_div(a: i64, b: i64) -> i64 {
    let q = a / b;
    if (a % b != 0) && ((a < 0) != (b < 0)) {
        q - 1
    } else {
        q
    }
}

fn ceil_div(a: i64, b: i64) -> i64 {
    -floor_div(-a, b)
}

fn in_bounds(bounds: &[Bound]) -> String {
    let tests: Vec<String> =
        bounds.iter().map(|b| CPP.in_range(&b.expr.to_string(), &b.lo.to_string(), &b.hi.to_string())).collect();
    format!("({})", tests.join(CPP.statements.and))
}

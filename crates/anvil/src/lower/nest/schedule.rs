//! The scheduler: a [`Kernel`] into a [`Nest`], every decision the module documents.

use super::*;
use crate::graph::scalar;
use crate::lower::index::IndexExpr;
use crate::lower::interchange::ACROSS_TILE;
use crate::lower::kernel::{Bound, BufferId, Expr, ExprId, Kernel};
use std::collections::{BTreeSet, HashMap, HashSet};

/// Schedules `kernel` as a function of the given form; `fast(op, dtype)` says whether the
/// target has fast in-loop functions for that math (see [`Math::Fast`]).
///
/// # Panics
/// With [`Form::Items`], if the kernel is not [`batchable`] (a bug in the caller).
pub fn schedule(kernel: &Kernel, form: Form, fast: impl Fn(UnaryOp, DType) -> bool) -> Nest {
    assert!(form != Form::Items || batchable(kernel), "only straight-line kernels are scheduled for items");
    let mut s = Scheduler::new(kernel, form, &fast);
    let out_vars = loop_order(kernel, form, &s.deps);
    match &kernel.scatter {
        None => {
            let stores = kernel.stores.iter().map(|st| (st.buffer, st.index.clone(), st.value)).collect();
            let hint = if kernel.items { Hint::Items } else { Hint::None };
            s.loop_nest(&out_vars, &mut Vec::new(), &Body::Stores(stores), hint, true);
        }
        Some(scatter) => {
            let (out, value) = (kernel.stores[0].buffer, kernel.stores[0].value);
            let dtype = kernel.exprs[value].dtype();
            s.push(Stmt::Zero { buffer: out, len: scatter.len, dtype });
            if scatter.len > 0 {
                let body = Body::ScatterAdd { out, index: scatter.index, len: scatter.len, value, dtype };
                s.loop_nest(&out_vars, &mut Vec::new(), &body, Hint::None, false);
            }
        }
    }
    let narrows = kernel.exprs.iter().any(|e| matches!(e, Expr::Cast(_, DType::F64, DType::F32)));
    let (body, threads) = match form {
        Form::Grid => super::grid::spread(std::mem::take(&mut s.out)),
        _ => (std::mem::take(&mut s.out), 1),
    };
    let nest = Nest {
        form,
        outputs: kernel.outputs.clone(),
        inputs: kernel.inputs(),
        body,
        parts: std::mem::take(&mut s.parts),
        uses_fast_math: s.uses_fast_math,
        narrows,
        threads,
        exact_threads: false,
        partial_bytes: 0,
    };
    crate::lower::debug_verify("scheduling", || verify(&nest, kernel));
    nest
}

/// True if `kernel` can be scheduled as [`Form::Items`]: straight-line code (no loops, not
/// even a reduction's).
pub fn batchable(kernel: &Kernel) -> bool {
    kernel.shape.is_empty()
        && kernel.scatter.is_none()
        && !kernel.exprs.iter().any(|e| matches!(e, Expr::Reduce { .. }))
}

/// The most statements of one part of a split loop before the rest goes into another.
pub const PART_STATEMENTS: usize = 480;

/// The fewest iterations of a vectorised loop for which its math is [`Math::Fast`]: the
/// fast functions save a fraction of a nanosecond per element, but their kernel is compiled
/// twice (with the exact functions for the rerun) and inline, so in short loops (a
/// 90k-node rollout over 8 lanes: 14.2 s of compilation instead of 1.5) they cost more than
/// they save.
pub const FAST_MATH_MIN_TRIPS: i64 = 64;

/// The most segments one loop is split into: beyond that, splitting only multiplies code.
const MAX_SEGMENTS: usize = 1 << 16;

/// The most iterations of a nest of loops that may be unrolled completely (see
/// [`Scheduler::unrolling_pays`]).
const MAX_UNROLLED_POINTS: i64 = 1024;

/// The statement in the innermost loop of a nest.
enum Body {
    /// `buffer[index] = value` for each output of the kernel.
    Stores(Vec<(BufferId, IndexExpr, ExprId)>),
    /// `out[clamp(index)] += value`.
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

/// What an expression amounts to in the code being scheduled: an expression to compute
/// (itself, or the branch a decided `where` picks), or a literal.
#[derive(Clone, Copy)]
enum Resolved {
    Expr(ExprId),
    Literal(Literal, DType),
}

/// Segments scheduled apart from the statements around them (to become a [`Part`] if the
/// loop needs several): what to restore when the part ends.
struct OpenPart {
    enclosing_out: Vec<Stmt>,
    enclosing_size: usize,
    enclosing_refs: BTreeSet<ExprId>,
    enclosing_start: usize,
}

struct Scheduler<'k> {
    kernel: &'k Kernel,
    fast: &'k dyn Fn(UnaryOp, DType) -> bool,
    deps: Vec<Vec<usize>>,
    /// Expressions computed in an enclosing scope, and the log to undo a segment's.
    emitted: Vec<bool>,
    emit_log: Vec<ExprId>,
    /// Where in `emit_log` each emitted expression was logged.
    emit_pos: Vec<usize>,
    /// The range (inclusive) each loop variable takes in the code being scheduled.
    ranges: Vec<(i64, i64)>,
    /// Resolutions under the current ranges, valid while their stamp is `generation`.
    resolved: Vec<(u64, Resolved)>,
    generation: u64,
    /// Marks of one graph walk (`walk` is the current walk's stamp).
    marks: Vec<u64>,
    walk: u64,
    /// The temporaries from outside the current part it refers to, and the `emit_log`
    /// length when it began (expressions logged before are outside).
    part_refs: BTreeSet<ExprId>,
    part_start: usize,
    /// The statements of the current part (or function), nested ones included.
    size: usize,
    parts: Vec<Part>,
    /// All math runs in a vectorised loop ([`Form::Items`]).
    all_vector: bool,
    uses_fast_math: bool,
    /// The sines and cosines of each argument.
    trig_of: HashMap<ExprId, Vec<ExprId>>,
    /// The variable of the innermost loop being scheduled, if one is open: what depends on
    /// it is computed in a loop the compiler vectorises.
    vector_loop: Option<usize>,
    /// The variable of the innermost open [`Stmt::Loop`] (one-iteration blocks are not
    /// loops).
    open_loop: Option<usize>,
    /// The reductions accumulated into local arrays, each with the loop variable indexing
    /// its array.
    arrays: Vec<Option<usize>>,
    /// Set while the loops of an interchanged nest are scheduled (they are not
    /// interchanged again).
    interchanging: bool,
    /// The loop variable being tiled, if any: its loops run over the current tile.
    tiled: Option<usize>,
    /// Whether small nests may be unrolled completely (not on a grid, whose threads share a
    /// loop's iterations), and the variables of the one being unrolled while its loops are
    /// scheduled (see [`Scheduler::unrolling_pays`]).
    may_unroll: bool,
    unrolling: Vec<usize>,
    /// The statements of the scope being scheduled.
    out: Vec<Stmt>,
}

impl<'k> Scheduler<'k> {
    fn new(kernel: &'k Kernel, form: Form, fast: &'k dyn Fn(UnaryOp, DType) -> bool) -> Self {
        let n = kernel.exprs.len();
        Scheduler {
            kernel,
            fast,
            deps: dependencies(kernel),
            emitted: vec![false; n],
            emit_log: Vec::new(),
            emit_pos: vec![0; n],
            ranges: kernel.extents.iter().map(|&n| (0, n as i64 - 1)).collect(),
            resolved: vec![(0, Resolved::Literal(Literal::Bool(false), DType::Bool)); n],
            generation: 1,
            marks: vec![0; n],
            walk: 0,
            part_refs: BTreeSet::new(),
            part_start: 0,
            size: 0,
            parts: Vec::new(),
            all_vector: form == Form::Items,
            uses_fast_math: false,
            trig_of: trig_by_argument(kernel),
            vector_loop: None,
            open_loop: None,
            arrays: vec![None; n],
            interchanging: false,
            tiled: None,
            may_unroll: form == Form::Loops,
            unrolling: Vec::new(),
            out: Vec::new(),
        }
    }

    fn push(&mut self, stmt: Stmt) {
        self.size += 1;
        self.out.push(stmt);
    }

    /// Schedules `fill` into a scope of its own, returning its statements.
    fn scope(&mut self, fill: impl FnOnce(&mut Self)) -> Vec<Stmt> {
        let enclosing = std::mem::take(&mut self.out);
        fill(self);
        std::mem::replace(&mut self.out, enclosing)
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
            return self.resolved[e].1;
        }
        let mut at = e;
        let result = loop {
            match &self.kernel.exprs[at] {
                Expr::Const(v, dtype) => break Resolved::Literal(*v, *dtype),
                Expr::Zero(dtype) => break Resolved::Literal(scalar::literal(*dtype, 0.0, 0), *dtype),
                Expr::InBounds(bounds) => {
                    let decisions: Vec<Option<bool>> = bounds.iter().map(|b| self.decide(b)).collect();
                    if decisions.contains(&Some(false)) {
                        break Resolved::Literal(Literal::Bool(false), DType::Bool);
                    } else if decisions.iter().all(|d| *d == Some(true)) {
                        break Resolved::Literal(Literal::Bool(true), DType::Bool);
                    } else {
                        break Resolved::Expr(at);
                    }
                }
                &Expr::Where(c, a, b, _) if depth < MAX_CONDITION_DEPTH => match self.resolve_within(c, depth + 1) {
                    Resolved::Literal(Literal::Bool(false), _) => at = b,
                    Resolved::Literal(..) => at = a,
                    Resolved::Expr(_) => break Resolved::Expr(at),
                },
                &Expr::Binary(BinaryOp::Add, a, b, dtype) if depth < MAX_CONDITION_DEPTH => {
                    self.resolve_sums_below(a, depth + 1);
                    let (a, b) = (self.resolve_within(a, depth + 1), self.resolve_within(b, depth + 1));
                    break self.sum(at, a, b, dtype);
                }
                _ => break Resolved::Expr(at),
            }
        };
        self.resolved[e] = (self.generation, result);
        result
    }

    /// Resolves the chain of sums that `e` heads (through their first operands), from its
    /// end, at `depth`: a sum of k padded pieces is a chain of k additions, which resolving
    /// from the top would follow k calls deep. Sums nested in second operands count towards
    /// the depth limit (`y ← a + (y + b)` nests one per round).
    fn resolve_sums_below(&mut self, e: ExprId, depth: usize) {
        let mut chain = Vec::new();
        let mut at = e;
        while let Expr::Binary(BinaryOp::Add, a, _, _) = self.kernel.exprs[at] {
            if self.resolved[at].0 == self.generation {
                break;
            }
            chain.push(at);
            at = a;
        }
        for &e in chain.iter().rev() {
            self.resolve_within(e, depth);
        }
    }

    /// What `a + b` (expression `at`, its operands resolved to `a` and `b`) amounts to: a sum
    /// of zeros is zero, an integer plus zero is itself, and a float plus zero is itself where
    /// it is a sum with zero already (`(x + 0) + 0` is `x + 0`, −0 included; `x + 0` alone is
    /// not `x` for x = −0). The padded pieces of a concatenation by sums (a gradient of
    /// slices) are zeros outside their segments: the sum is then short in each segment.
    fn sum(&self, at: ExprId, a: Resolved, b: Resolved, dtype: DType) -> Resolved {
        let zero = |r: Resolved| match r {
            Resolved::Literal(Literal::Float(v), _) => v == 0.0 && v.is_sign_positive(),
            Resolved::Literal(Literal::Int(v), _) => v == 0,
            _ => false,
        };
        let adds_zero = |x: ExprId| match self.kernel.exprs[x] {
            Expr::Binary(BinaryOp::Add, p, q, _) => [p, q].into_iter().any(|o| {
                let resolved = self.resolved[o];
                resolved.0 == self.generation && zero(resolved.1)
            }),
            _ => false,
        };
        match (a, b) {
            (a, b) if zero(a) && zero(b) => a,
            (Resolved::Expr(x), z) | (z, Resolved::Expr(x)) if zero(z) && (dtype.is_int() || adds_zero(x)) => {
                Resolved::Expr(x)
            }
            _ => Resolved::Expr(at),
        }
    }

    /// How expression `e` is read here: a literal, the temporary it resolves to, or its
    /// array's element.
    fn operand(&mut self, e: ExprId) -> Operand {
        match self.resolve(e) {
            Resolved::Literal(v, dtype) => Operand::Literal(v, dtype),
            Resolved::Expr(x) => {
                if let Some(var) = self.arrays[x] {
                    return Operand::Element { array: x, var };
                }
                if self.emitted[x] && self.emit_pos[x] < self.part_start {
                    self.part_refs.insert(x);
                }
                Operand::Temp(x)
            }
        }
    }

    /// The expressions the code under `roots` needs in the current ranges (not yet computed
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

    /// Computes every live expression under `roots` whose loop variables are all bound.
    fn visit(&mut self, roots: &[ExprId], bound: &[usize]) {
        for e in self.live(roots) {
            if !self.emitted[e] && self.deps[e].iter().all(|v| bound.contains(v)) {
                self.emit(e, bound);
            }
        }
    }

    /// Opens one loop per variable in `vars` (splitting it into segments where that
    /// pays), computing at each level what that level can, and `body` innermost.
    fn loop_nest(&mut self, vars: &[usize], bound: &mut Vec<usize>, body: &Body, hint: Hint, split: bool) {
        if let ([v], false, Body::Stores(_)) = (vars, self.interchanging, body) {
            if self.kernel.accumulate_across == Some(*v) {
                return self.accumulate_across(*v, bound, body);
            }
        }
        let roots = body.roots();
        let Some((&v, inner)) = vars.split_first() else {
            self.visit(&roots, bound);
            let statement = self.statement(body);
            self.push(statement);
            return;
        };
        let full = self.ranges[v];
        let unroll_from_here =
            split && self.may_unroll && self.unrolling.is_empty() && self.unrolling_pays(vars, &roots);
        if unroll_from_here {
            self.unrolling = vars.to_vec();
        }
        let segments = if self.unrolling.contains(&v) {
            (full.0..=full.1).map(|x| (x, x)).collect()
        } else if split {
            self.segments(v, &roots, inner.is_empty(), bound)
        } else {
            vec![full]
        };
        // An innermost loop split into one-iteration blocks is unrolled: its blocks are
        // straight-line code in the body of the loop around them, which is the loop the
        // compiler vectorises.
        let unrolled = inner.is_empty() && segments.iter().all(|(lo, hi)| lo == hi);
        let enclosing_vector_loop = self.vector_loop;
        if unrolled && self.open_loop.is_some() {
            self.vector_loop = self.open_loop;
        }
        let body_vector_loop = self.vector_loop;
        // Before the loop, compute what more than one segment needs (loop-invariant code
        // hoisted); what a single segment needs is computed in it.
        for e in self.hoisted(v, &segments, &roots, bound) {
            if !self.emitted[e] {
                self.emit(e, bound);
            }
        }
        let mut part = (segments.len() > 1).then(|| self.begin_part());
        let mut outlined = false;
        for (lo, hi) in segments {
            self.set_range(v, (lo, hi));
            let mark = self.emit_log.len();
            bound.push(v);
            let enclosing_open_loop = self.open_loop;
            if lo != hi {
                self.open_loop = Some(v);
            }
            if inner.is_empty() && !(unrolled && self.open_loop.is_some()) {
                self.vector_loop = Some(v);
            }
            let body = self.scope(|s| s.loop_nest(inner, bound, body, hint, split));
            self.vector_loop = body_vector_loop;
            self.open_loop = enclosing_open_loop;
            bound.pop();
            self.push(if lo == hi {
                Stmt::Fixed { var: v, value: lo, body }
            } else {
                let extent = if self.tiled == Some(v) { Extent::Tile } else { Extent::Range(lo, hi + 1) };
                let hint = if inner.is_empty() { hint } else { Hint::None };
                Stmt::Loop { var: v, extent, hint, body }
            });
            // The next segment computes its own copies of what depends on this variable.
            for e in self.emit_log.drain(mark..) {
                self.emitted[e] = false;
            }
            if part.is_some() && self.size > PART_STATEMENTS {
                self.outline(part.take().expect("checked"), bound);
                outlined = true;
                part = Some(self.begin_part());
            }
        }
        if let Some(last) = part {
            if outlined {
                self.outline(last, bound);
            } else {
                self.inline(last);
            }
        }
        self.vector_loop = enclosing_vector_loop;
        self.set_range(v, full);
        if unroll_from_here {
            self.unrolling.clear();
        }
    }

    /// True if the nest of loops over `vars` (outermost first) is small and, unrolled
    /// completely, takes at most about twice the code of its loops: a nest whose elements
    /// each select their own values (a small dense derivative joined from its columns).
    /// Splitting loop by loop cannot see that: the outer loop's pieces repeat the inner
    /// loop's selections until the inner loop is split too.
    fn unrolling_pays(&mut self, vars: &[usize], roots: &[ExprId]) -> bool {
        let extents: Vec<i64> = vars.iter().map(|&v| self.ranges[v].1 - self.ranges[v].0 + 1).collect();
        let points = extents.iter().try_fold(1i64, |p, &e| p.checked_mul(e)).unwrap_or(i64::MAX);
        if !(2..=MAX_UNROLLED_POINTS).contains(&points) {
            return false;
        }
        let live = self.live(roots);
        let decided_by = |expr: &IndexExpr| vars.iter().any(|&v| expr.split_var(v).is_some_and(|(c, _)| c != 0));
        if !self.conditions(&live).iter().any(|(expr, _, _)| decided_by(expr)) {
            return false;
        }
        let budget = 2 * live.len() + 8;
        self.unrolled_code(vars, &extents, roots, budget).is_some_and(|code| code.max(points as usize) <= budget)
    }

    /// The statements of the nest over `vars` unrolled completely, if at most `limit`: each
    /// expression once per value of the loop variables up to the innermost it depends on
    /// (what several points need is computed before the points that share it).
    fn unrolled_code(&mut self, vars: &[usize], extents: &[i64], roots: &[ExprId], limit: usize) -> Option<usize> {
        let starts: Vec<i64> = vars.iter().map(|&v| self.ranges[v].0).collect();
        let depth = |deps: &[usize]| vars.iter().rposition(|v| deps.contains(v)).map_or(0, |p| p + 1);
        let mut copies: HashSet<(ExprId, usize)> = HashSet::new();
        let mut point = vec![0i64; vars.len()];
        let mut within = true;
        'points: loop {
            for (k, &v) in vars.iter().enumerate() {
                self.set_range(v, (starts[k] + point[k], starts[k] + point[k]));
            }
            // The point's position among the points that share its first d values, per d.
            let mut prefix = vec![0usize; vars.len() + 1];
            for k in 0..vars.len() {
                prefix[k + 1] = prefix[k] * extents[k] as usize + point[k] as usize;
            }
            for e in self.live(roots) {
                let d = depth(&self.deps[e]);
                copies.insert((e, prefix[d] * (vars.len() + 1) + d));
            }
            if copies.len() > limit {
                within = false;
                break;
            }
            for k in (0..vars.len()).rev() {
                point[k] += 1;
                if point[k] < extents[k] {
                    continue 'points;
                }
                point[k] = 0;
            }
            break;
        }
        for (k, &v) in vars.iter().enumerate() {
            self.set_range(v, (starts[k], starts[k] + extents[k] - 1));
        }
        within.then_some(copies.len())
    }

    /// The innermost output loop over `v` with the reductions interchanged (see
    /// [`Kernel::accumulate_across`]): each reduction that depends on `v` accumulates into a
    /// local array in a nest of its own loops around a loop over `v`; then one loop over `v`
    /// computes the stores from the arrays.
    fn accumulate_across(&mut self, v: usize, bound: &mut Vec<usize>, body: &Body) {
        let roots = body.roots();
        self.visit(&roots, bound);
        self.interchanging = true;
        let extent = self.kernel.extents[v];
        let mark = self.emit_log.len();
        let tiled = extent > ACROSS_TILE;
        if tiled {
            self.tiled = Some(v);
        }
        let statements = self.scope(|s| {
            let loop_extent = if tiled { Extent::Tile } else { Extent::Range(s.ranges[v].0, s.ranges[v].1 + 1) };
            let kernel = s.kernel;
            for e in s.live(&roots) {
                let Expr::Reduce { op, ref vars, body: value, dtype } = kernel.exprs[e] else { continue };
                if s.emitted[e] || !s.deps[e].contains(&v) {
                    continue;
                }
                let length = extent.min(ACROSS_TILE);
                s.push(Stmt::LocalArray { id: e, op, dtype, length, var: v, extent: loop_extent });
                s.arrays[e] = Some(v);
                let nest: Vec<usize> = vars.iter().copied().chain([v]).collect();
                let accumulate = Body::Accumulate { acc: e, op, dtype, value };
                s.loop_nest(&nest, bound, &accumulate, Hint::None, false);
                s.mark_emitted(e);
            }
            s.loop_nest(&[v], bound, body, Hint::None, false);
        });
        self.interchanging = false;
        if tiled {
            self.tiled = None;
            self.push(Stmt::Tiles { var: v, extent, tile: ACROSS_TILE, body: statements });
            // What the tile's block computed is out of scope after it.
            for e in self.emit_log.drain(mark..) {
                self.emitted[e] = false;
            }
        } else {
            self.out.extend(statements); // counted in `size` as they were scheduled
        }
    }

    /// Records `e` as computed in the current scope (its temporary can be read).
    fn mark_emitted(&mut self, e: ExprId) {
        self.emitted[e] = true;
        self.emit_pos[e] = self.emit_log.len();
        self.emit_log.push(e);
    }

    /// Starts scheduling segments into a part of their own (see [`OpenPart`]).
    fn begin_part(&mut self) -> OpenPart {
        OpenPart {
            enclosing_out: std::mem::take(&mut self.out),
            enclosing_size: std::mem::replace(&mut self.size, 0),
            enclosing_refs: std::mem::take(&mut self.part_refs),
            enclosing_start: std::mem::replace(&mut self.part_start, self.emit_log.len()),
        }
    }

    /// Ends a part, returning its statements and the outer temporaries it reads (recorded
    /// as read by the enclosing part too, when they come from outside that one as well).
    fn end_part(&mut self, part: OpenPart) -> (Vec<Stmt>, usize, BTreeSet<ExprId>) {
        let statements = std::mem::replace(&mut self.out, part.enclosing_out);
        let size = std::mem::replace(&mut self.size, part.enclosing_size);
        let refs = std::mem::replace(&mut self.part_refs, part.enclosing_refs);
        self.part_start = part.enclosing_start;
        for &e in &refs {
            if self.emit_pos[e] < self.part_start {
                self.part_refs.insert(e);
            }
        }
        (statements, size, refs)
    }

    /// Ends a part by splicing its statements in here.
    fn inline(&mut self, part: OpenPart) {
        let (statements, size, _) = self.end_part(part);
        self.out.extend(statements);
        self.size += size;
    }

    /// Ends a part by making it a [`Part`], called here.
    fn outline(&mut self, part: OpenPart, bound: &[usize]) {
        let (body, _, refs) = self.end_part(part);
        let temps = refs.into_iter().map(|e| (e, self.kernel.exprs[e].dtype())).collect();
        self.parts.push(Part { vars: bound.to_vec(), temps, body });
        self.push(Stmt::Call(self.parts.len() - 1));
    }

    /// The live expressions computed once before the loop over `v` split into `segments`
    /// (with `bound` the enclosing loops' variables), operands first: those whose variables
    /// are bound and that more than one segment needs (all of them if there is one segment).
    /// What a single segment needs is computed in it.
    fn hoisted(&mut self, v: usize, segments: &[(i64, i64)], roots: &[ExprId], bound: &[usize]) -> Vec<ExprId> {
        let mut order = self.live(roots);
        if segments.len() > 1 {
            let (needs, _, _) = self.segment_needs(v, segments, roots, usize::MAX);
            order.retain(|e| needs.get(e).is_some_and(|&n| n > 1));
        }
        order.retain(|&e| self.deps[e].iter().all(|d| bound.contains(d)));
        order
    }

    /// How many of `pieces` of `v`'s range need each live expression under `roots`, whether
    /// their distinct expressions stayed within `limit` (the count stops there), and the
    /// pieces' work: each piece's live expressions times its points.
    fn segment_needs(
        &mut self,
        v: usize,
        pieces: &[(i64, i64)],
        roots: &[ExprId],
        limit: usize,
    ) -> (HashMap<ExprId, usize>, bool, u128) {
        let full = self.ranges[v];
        let mut needs: HashMap<ExprId, usize> = HashMap::new();
        let mut within = true;
        let mut work = 0u128;
        for &piece in pieces {
            self.set_range(v, piece);
            let live = self.live(roots);
            work += live.len() as u128 * (piece.1 - piece.0 + 1) as u128;
            for e in live {
                *needs.entry(e).or_default() += 1;
            }
            if needs.len() > limit {
                within = false;
                break;
            }
        }
        self.set_range(v, full);
        (needs, within, work)
    }

    /// The innermost statement, with its operands resolved.
    fn statement(&mut self, body: &Body) -> Stmt {
        match body {
            Body::Stores(stores) => {
                Stmt::Stores(stores.iter().map(|(b, index, e)| (*b, index.clone(), self.operand(*e))).collect())
            }
            &Body::ScatterAdd { out, index, len, value, dtype } => {
                Stmt::ScatterAdd { out, index: self.operand(index), len, value: self.operand(value), dtype }
            }
            &Body::Accumulate { acc, op, dtype, value } => {
                Stmt::Accumulate { acc: self.operand(acc), op, dtype, value: self.operand(value) }
            }
        }
    }

    /// How to split the loop over `v`: at every breakpoint of the live conditions when the
    /// segments' code stays within twice the unsplit code; else at the breakpoints of the
    /// conditions that hold over at least 2, 4, 8, … values (the first width whose segments
    /// fit), the narrower ones staying tests within the segments; else (innermost loops) into
    /// a clamp-free interior and its edges; else not at all. The widths matter where a loop
    /// both concatenates a few long pieces and picks out many single points (the gradient of
    /// a function reading both slices and elements of its argument): split at every point,
    /// its code would grow with the points; unsplit, every point tests every piece.
    fn segments(&mut self, v: usize, roots: &[ExprId], innermost: bool, bound: &[usize]) -> Vec<(i64, i64)> {
        let full = self.ranges[v];
        let live = self.live(roots);
        let conditions = self.conditions(&live);
        let holds: Vec<(i64, i64)> = conditions
            .iter()
            .filter_map(|(expr, lo, hi)| self.holds_for(v, expr, *lo, *hi))
            .map(|(a, b)| (a.max(full.0), b.min(full.1)))
            .filter(|(a, b)| a <= b)
            .collect();
        let mut width = 1;
        while width <= full.1 - full.0 {
            let mut cuts: Vec<i64> = Vec::new();
            for &(a, b) in holds.iter().filter(|(a, b)| b - a + 1 >= width) {
                cuts.extend([a, b + 1]);
            }
            cuts.retain(|&c| c > full.0 && c <= full.1);
            cuts.sort_unstable();
            cuts.dedup();
            if cuts.is_empty() {
                break;
            }
            if cuts.len() < MAX_SEGMENTS {
                let mut bounds = vec![full.0];
                bounds.extend(&cuts);
                bounds.push(full.1 + 1);
                let pieces: Vec<(i64, i64)> = bounds.windows(2).map(|w| (w[0], w[1] - 1)).collect();
                if self.splitting_pays(v, &pieces, roots, live.len(), bound) {
                    return pieces;
                }
            }
            width *= 2;
        }
        if innermost {
            if let Some((a, b)) = self.interior(v, &conditions) {
                return [(full.0, a - 1), (a, b), (b + 1, full.1)].into_iter().filter(|(l, h)| l <= h).collect();
            }
        }
        vec![full]
    }

    /// True if the loop split into `pieces` takes at most about twice the code of the
    /// unsplit loop (`unsplit` live expressions) — each piece's own expressions, and once
    /// those that several pieces share and that are computed before the loop (`hoisted`) —
    /// or at most four times its code for at most a quarter of its work (the expressions
    /// each point computes, summed over the points): a loop whose points each test hundreds
    /// of pieces that hold over a few points each.
    fn splitting_pays(
        &mut self,
        v: usize,
        pieces: &[(i64, i64)],
        roots: &[ExprId],
        unsplit: usize,
        bound: &[usize],
    ) -> bool {
        let (cheap, dear) = (2 * unsplit + 8, 4 * unsplit + 8);
        let (needs, within, work) = self.segment_needs(v, pieces, roots, dear);
        if !within {
            return false;
        }
        let shared = |e: &ExprId, n: usize| n > 1 && self.deps[*e].iter().all(|d| bound.contains(d));
        let code = needs.iter().map(|(e, &n)| if shared(e, n) { 1 } else { n }).sum::<usize>().max(pieces.len());
        let (lo, hi) = self.ranges[v];
        let unsplit_work = unsplit as u128 * (hi - lo + 1) as u128;
        code <= cheap || (code <= dear && 4 * work <= unsplit_work)
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

    /// The values of `v` for which `lo <= expr < hi` holds, if `expr` is `c·v + r` with `r`
    /// fixed by the other variables' current ranges.
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

    /// Computes expression `e` here.
    fn emit(&mut self, e: ExprId, bound: &[usize]) {
        self.mark_emitted(e);
        let kernel = self.kernel;
        let value = match kernel.exprs[e] {
            Expr::Const(..) | Expr::Zero(_) => return, // literals are read inline
            Expr::Reduce { op, ref vars, body, dtype } => {
                self.push(Stmt::Accumulator { id: e, op, dtype });
                let hint = match op {
                    ReduceOp::Sum | ReduceOp::Prod if !self.contains_reduce(body) => Hint::Reduction(op, e),
                    _ => Hint::None,
                };
                let mut inner = bound.to_vec();
                let accumulate = Body::Accumulate { acc: e, op, dtype, value: body };
                return self.loop_nest(vars, &mut inner, &accumulate, hint, false);
            }
            Expr::Unary(op, x, dtype) => {
                let math = match self.in_vector_loop(e) {
                    false => Math::Scalar,
                    true if (self.fast)(op, dtype) && self.vector_trips() >= FAST_MATH_MIN_TRIPS => Math::Fast,
                    true => Math::Vector,
                };
                let arg = self.operand(x);
                if math == Math::Fast {
                    self.uses_fast_math = true;
                    if !self.argument_checked(e, x) {
                        self.push(Stmt::CheckFar(arg));
                    }
                }
                Value::Unary(op, arg, dtype, math)
            }
            Expr::Load { buffer, ref index, len, .. } => {
                let (lo, hi) = index.bounds_in(&self.ranges);
                Value::Load { buffer, index: index.clone(), len, clamp_below: lo < 0, clamp_above: hi >= len as i64 }
            }
            Expr::Gather { buffer, index, len, dtype, in_range } => {
                Value::Gather { buffer, index: self.operand(index), len, dtype, in_range }
            }
            Expr::InBounds(ref bounds) => {
                Value::InBounds(bounds.iter().filter(|b| self.decide(b).is_none()).cloned().collect())
            }
            Expr::Binary(op, a, b, dtype) => Value::Binary(op, self.operand(a), self.operand(b), dtype),
            Expr::Where(c, a, b, _) => Value::Where(self.operand(c), self.operand(a), self.operand(b)),
            Expr::Cast(x, from, to) => Value::Cast(self.operand(x), from, to),
        };
        let dtype = kernel.exprs[e].dtype();
        self.push(Stmt::Let { id: e, dtype, value });
    }

    /// True if another sine or cosine of `x` than `e` is computed in this scope (or one
    /// enclosing it): its argument was checked there.
    fn argument_checked(&self, e: ExprId, x: ExprId) -> bool {
        self.trig_of.get(&x).is_some_and(|ts| ts.iter().any(|&t| t != e && self.emitted[t]))
    }

    /// How many times the vectorised loop being scheduled runs (unbounded for
    /// [`Form::Items`], whose items are counted at run time).
    fn vector_trips(&self) -> i64 {
        match self.vector_loop {
            _ if self.all_vector => i64::MAX,
            Some(v) => self.ranges[v].1 - self.ranges[v].0 + 1,
            None => 0,
        }
    }

    /// True if `e` is computed in a loop the compiler vectorises.
    fn in_vector_loop(&self, e: ExprId) -> bool {
        self.all_vector || self.vector_loop.is_some_and(|v| self.deps[e].contains(&v))
    }

    /// True if a reduction is nested under `e` (a reduction's vectorised loop must stay
    /// innermost).
    fn contains_reduce(&self, e: ExprId) -> bool {
        self.kernel.cone(e).into_iter().any(|x| matches!(self.kernel.exprs[x], Expr::Reduce { .. }))
    }
}

/// The sines and cosines of `kernel`, by argument.
fn trig_by_argument(kernel: &Kernel) -> HashMap<ExprId, Vec<ExprId>> {
    let mut by_argument: HashMap<ExprId, Vec<ExprId>> = HashMap::new();
    for (e, expr) in kernel.exprs.iter().enumerate() {
        if let Expr::Unary(UnaryOp::Sin | UnaryOp::Cos, x, _) = expr {
            by_argument.entry(*x).or_default().push(e);
        }
    }
    by_argument
}

/// The order of the output loops, outermost first: the kernel's, unless another order does
/// at most half the work. Each expression is computed in the loop of the last of its
/// variables in the order (what an inner loop does not change is hoisted out of it), so the
/// variables most of the work depends on alone belong outside: a dense Hessian derived one
/// direction per column, whose terms depend on the direction alone, recomputes them for
/// every row when the rows' loop is outside. Only plain loop nests of elementwise code are
/// reordered (each element is computed by the same expressions in any order; reductions,
/// scatters and the GPU's forms keep the kernel's order).
fn loop_order(kernel: &Kernel, form: Form, deps: &[Vec<usize>]) -> Vec<usize> {
    let vars: Vec<usize> = (0..kernel.shape.len()).filter(|&d| kernel.shape[d] != 1).collect();
    let elementwise = !kernel.exprs.iter().any(|e| matches!(e, Expr::Reduce { .. }));
    if form != Form::Loops
        || kernel.scatter.is_some()
        || kernel.items
        || kernel.accumulate_across.is_some()
        || !elementwise
        || !(2..=4).contains(&vars.len())
    {
        return vars;
    }
    // Expressions computed under `order`, each counted once per iteration of the loops
    // around it.
    let work = |order: &[usize]| -> f64 {
        deps.iter()
            .map(|d| match d.iter().filter_map(|v| order.iter().position(|o| o == v)).max() {
                Some(depth) => order[..=depth].iter().map(|&v| kernel.shape[v] as f64).product(),
                None => 1.0,
            })
            .sum()
    };
    let mut best = (work(&vars), vars.clone());
    let kernel_order = best.0;
    for order in permutations(&vars) {
        let w = work(&order);
        if w < best.0 {
            best = (w, order);
        }
    }
    if best.0 <= 0.5 * kernel_order {
        best.1
    } else {
        vars
    }
}

/// Every order of `items`.
fn permutations(items: &[usize]) -> Vec<Vec<usize>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut all = Vec::new();
    for (k, &first) in items.iter().enumerate() {
        let rest: Vec<usize> = items.iter().enumerate().filter(|&(j, _)| j != k).map(|(_, &v)| v).collect();
        for mut tail in permutations(&rest) {
            tail.insert(0, first);
            all.push(tail);
        }
    }
    all
}

/// The loop variables each expression depends on (a reduction binds its own).
fn dependencies(kernel: &Kernel) -> Vec<Vec<usize>> {
    let mut deps: Vec<Vec<usize>> = Vec::with_capacity(kernel.exprs.len());
    for expr in &kernel.exprs {
        let mut d = Vec::new();
        match expr {
            Expr::Load { index, .. } => index.vars(&mut d),
            Expr::InBounds(bounds) => bounds.iter().for_each(|b| b.expr.vars(&mut d)),
            Expr::Reduce { vars, body, .. } => d.extend(deps[*body].iter().filter(|v| !vars.contains(v))),
            _ => expr.operands().into_iter().for_each(|x| d.extend(&deps[x])),
        }
        d.sort_unstable();
        d.dedup();
        deps.push(d);
    }
    deps
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

//! Kernel IR → a C++ function: a loop nest whose body is straight-line scalar code.
//!
//! Every expression becomes one `const` temporary, placed in the outermost loop where all
//! the loop variables it uses are bound (loop-invariant code is hoisted for free). Math
//! goes through compiler builtins so that the JIT translation unit needs no headers.

use crate::dtype::DType;
use crate::graph::{reduce_identity, BinaryOp, Literal, ReduceOp, UnaryOp};
use crate::lower::{Bound, BufferId, Expr, ExprId, Kernel};
use std::fmt::Write;

/// Renders `kernel` as a C++ function named `name` taking `(output, inputs...)` pointers
/// in the order of [`Kernel::inputs`]; `dtypes` gives each buffer's element type.
pub fn render_kernel(kernel: &Kernel, name: &str, dtypes: &[DType]) -> String {
    let mut params: Vec<String> =
        kernel.outputs.iter().map(|&b| format!("{}* __restrict b{b}", dtypes[b].cpp_name())).collect();
    for b in kernel.inputs() {
        params.push(format!("const {}* __restrict b{}", dtypes[b].cpp_name(), b));
    }
    let mut r = Renderer::new(kernel);
    let out_vars: Vec<usize> = (0..kernel.shape.len()).filter(|&d| kernel.shape[d] != 1).collect();
    let mut bound = Vec::new();
    let pad = "  ".repeat(1 + out_vars.len());
    match &kernel.scatter {
        None => {
            let index = linear_output_index(&kernel.shape);
            let stores: Vec<String> = kernel
                .outputs
                .iter()
                .zip(&kernel.roots)
                .map(|(b, &e)| format!("b{b}[{index}] = {};", r.name(e)))
                .collect();
            r.loop_nest(&out_vars, &kernel.roots, &mut bound, 1, &stores.join(&format!("\n{pad}")), None, true);
        }
        Some(scatter) => {
            let (out, value) = (kernel.outputs[0], kernel.roots[0]);
            let dtype = dtypes[out];
            let zero = literal(Literal::Int(0), dtype);
            let _ = writeln!(r.code, "  for (long long i = 0; i < {}; ++i) b{out}[i] = {zero};", scatter.len);
            if scatter.len > 0 {
                let slot = format!("b{out}[{}]", clamped(&r.name(scatter.index), scatter.len));
                let add = binary(BinaryOp::Add, dtype, &slot, &r.name(value));
                r.loop_nest(
                    &out_vars,
                    &[value, scatter.index],
                    &mut bound,
                    1,
                    &format!("{slot} = {add};"),
                    None,
                    false,
                );
            }
        }
    }
    let narrows = kernel.exprs.iter().any(|e| matches!(e, Expr::Cast(_, DType::F64, DType::F32)));
    let attribute = if narrows { "ANVIL_NO_SLP " } else { "" };
    format!("{attribute}void {name}({}) {{\n{}}}\n", params.join(", "), r.code)
}

/// Definitions every translation unit with kernels starts with (macros that let one
/// source serve every compiler; see each comment).
pub const PRELUDE: &str = r#"#ifndef ANVIL_PRELUDE
#define ANVIL_PRELUDE
// GCC 12 miscompiles double -> float -> double when it SLP-vectorizes the round trip (the
// rounding is dropped in some lanes): kernels that narrow floats opt out of SLP under GCC.
#if defined(__GNUC__) && !defined(__clang__)
#define ANVIL_NO_SLP __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define ANVIL_NO_SLP
#endif
// Sums and products over a loop may be vectorised (their summation order is unspecified)
// when compiled with -fopenmp-simd -DANVIL_OMP_SIMD; otherwise they run in order.
#define ANVIL_PRAGMA(x) _Pragma(#x)
#if defined(ANVIL_OMP_SIMD)
#define ANVIL_SIMD_SUM(acc) ANVIL_PRAGMA(omp simd reduction(+ : acc))
#define ANVIL_SIMD_PROD(acc) ANVIL_PRAGMA(omp simd reduction(* : acc))
#else
#define ANVIL_SIMD_SUM(acc)
#define ANVIL_SIMD_PROD(acc)
#endif
// With -DANVIL_LIBMVEC (and -lmvec), GCC calls glibc's vector math (libmvec) in vectorised
// loops instead of the scalar functions.
#if defined(ANVIL_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
#define ANVIL_VECTOR_MATH __attribute__((simd("notinbranch")))
extern "C" {
double sin(double) noexcept ANVIL_VECTOR_MATH;
double cos(double) noexcept ANVIL_VECTOR_MATH;
double tan(double) noexcept ANVIL_VECTOR_MATH;
double asin(double) noexcept ANVIL_VECTOR_MATH;
double acos(double) noexcept ANVIL_VECTOR_MATH;
double atan(double) noexcept ANVIL_VECTOR_MATH;
double sinh(double) noexcept ANVIL_VECTOR_MATH;
double cosh(double) noexcept ANVIL_VECTOR_MATH;
double tanh(double) noexcept ANVIL_VECTOR_MATH;
double exp(double) noexcept ANVIL_VECTOR_MATH;
double log(double) noexcept ANVIL_VECTOR_MATH;
double pow(double, double) noexcept ANVIL_VECTOR_MATH;
double atan2(double, double) noexcept ANVIL_VECTOR_MATH;
float sinf(float) noexcept ANVIL_VECTOR_MATH;
float cosf(float) noexcept ANVIL_VECTOR_MATH;
float tanf(float) noexcept ANVIL_VECTOR_MATH;
float asinf(float) noexcept ANVIL_VECTOR_MATH;
float acosf(float) noexcept ANVIL_VECTOR_MATH;
float atanf(float) noexcept ANVIL_VECTOR_MATH;
float sinhf(float) noexcept ANVIL_VECTOR_MATH;
float coshf(float) noexcept ANVIL_VECTOR_MATH;
float tanhf(float) noexcept ANVIL_VECTOR_MATH;
float expf(float) noexcept ANVIL_VECTOR_MATH;
float logf(float) noexcept ANVIL_VECTOR_MATH;
float powf(float, float) noexcept ANVIL_VECTOR_MATH;
float atan2f(float, float) noexcept ANVIL_VECTOR_MATH;
}
#endif
#endif
"#;

fn linear_output_index(shape: &[usize]) -> String {
    let idx: Vec<crate::lower::IndexExpr> = (0..shape.len()).map(crate::lower::IndexExpr::var).collect();
    crate::lower::IndexExpr::linearize(&idx, shape).to_string()
}

struct Renderer<'k> {
    kernel: &'k Kernel,
    deps: Vec<Vec<usize>>,
    emitted: Vec<bool>,
    /// The range (inclusive) each loop variable takes in the code being emitted.
    ranges: Vec<(i64, i64)>,
    code: String,
}

impl<'k> Renderer<'k> {
    fn new(kernel: &'k Kernel) -> Self {
        let deps = dependencies(kernel);
        let ranges = kernel.extents.iter().map(|&n| (0, n as i64 - 1)).collect();
        Renderer { kernel, deps, emitted: vec![false; kernel.exprs.len()], ranges, code: String::new() }
    }

    /// Opens one loop per variable in `vars`, emitting at each level every part of `root`
    /// that level can compute, then `innermost` inside the last loop.
    ///
    /// With `split_innermost`, the innermost loop is split where padding conditions change
    /// (index set splitting): the interior copy has no bounds tests and no clamped loads,
    /// so it vectorises; the edges keep them.
    #[allow(clippy::too_many_arguments)]
    fn loop_nest(
        &mut self,
        vars: &[usize],
        roots: &[ExprId],
        bound: &mut Vec<usize>,
        depth: usize,
        innermost: &str,
        pragma: Option<String>,
        split_innermost: bool,
    ) {
        self.visit(roots, bound, depth);
        let Some((&last, outer)) = vars.split_last() else {
            let _ = writeln!(self.code, "{}{innermost}", "  ".repeat(depth));
            return;
        };
        for (level, &v) in outer.iter().enumerate() {
            let pad = "  ".repeat(depth + level);
            let _ = writeln!(self.code, "{pad}for (long long i{v} = 0; i{v} < {}; ++i{v}) {{", self.kernel.extents[v]);
            bound.push(v);
            self.visit(roots, bound, depth + level + 1);
        }
        let level = outer.len();
        let pad = "  ".repeat(depth + level);
        let full = self.ranges[last];
        let segments = match self.interior(last).filter(|_| split_innermost) {
            Some((a, b)) => vec![(full.0, a - 1), (a, b), (b + 1, full.1)],
            None => vec![full],
        };
        let before = self.emitted.clone();
        for (lo, hi) in segments.into_iter().filter(|(lo, hi)| lo <= hi) {
            if let Some(p) = &pragma {
                let _ = writeln!(self.code, "{pad}{p}");
            }
            let _ = writeln!(self.code, "{pad}for (long long i{last} = {lo}; i{last} < {}; ++i{last}) {{", hi + 1);
            self.ranges[last] = (lo, hi);
            bound.push(last);
            self.visit(roots, bound, depth + level + 1);
            let _ = writeln!(self.code, "{pad}  {innermost}");
            bound.pop();
            let _ = writeln!(self.code, "{pad}}}");
            // The next segment emits its own copies of what depends on this variable.
            self.emitted.clone_from(&before);
        }
        self.ranges[last] = full;
        for level in (0..outer.len()).rev() {
            bound.pop();
            let _ = writeln!(self.code, "{}}}", "  ".repeat(depth + level));
        }
    }

    /// The values of variable `v` for which every bounds test and every load that depends
    /// on `v` linearly is in range, if that is a proper, non-empty part of its range.
    fn interior(&self, v: usize) -> Option<(i64, i64)> {
        let (mut a, mut b) = self.ranges[v];
        let full = (a, b);
        for (expr, lo, hi) in self.range_conditions() {
            let (elo, ehi) = expr.bounds_in(&self.ranges);
            if elo >= lo && ehi < hi {
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

    /// Every `lo <= expr < hi` the kernel tests or needs for a load to stay in bounds.
    fn range_conditions(&self) -> Vec<(crate::lower::IndexExpr, i64, i64)> {
        let mut out = Vec::new();
        for e in &self.kernel.exprs {
            match e {
                Expr::InBounds(bounds) => out.extend(bounds.iter().map(|b| (b.expr.clone(), b.lo, b.hi))),
                Expr::Load { index, len, .. } => out.push((index.clone(), 0, *len as i64)),
                _ => {}
            }
        }
        out
    }

    /// Emits every not-yet-emitted expression under `roots` whose variables are all bound,
    /// operands first (a post-order walk with an explicit stack: bodies can be a million
    /// expressions deep).
    fn visit(&mut self, roots: &[ExprId], bound: &[usize], depth: usize) {
        let mut visited = vec![false; self.kernel.exprs.len()];
        let mut stack: Vec<(ExprId, bool)> = roots.iter().rev().map(|&e| (e, false)).collect();
        while let Some((e, operands_done)) = stack.pop() {
            if operands_done {
                if self.deps[e].iter().all(|v| bound.contains(v)) {
                    self.emit(e, bound, depth);
                }
                continue;
            }
            if self.emitted[e] || std::mem::replace(&mut visited[e], true) {
                continue;
            }
            stack.push((e, true));
            stack.extend(self.kernel.exprs[e].operands().into_iter().rev().map(|c| (c, false)));
        }
    }

    fn emit(&mut self, e: ExprId, bound: &[usize], depth: usize) {
        self.emitted[e] = true;
        let expr = self.kernel.exprs[e].clone();
        let pad = "  ".repeat(depth);
        match expr {
            Expr::Const(..) => {} // literals are written inline
            Expr::Reduce { op, vars, body, dtype } => {
                let init = literal(reduce_identity(op, dtype), dtype);
                let _ = writeln!(self.code, "{pad}{} t{e} = {init};", dtype.cpp_name());
                let combine = combine(op, dtype, &format!("t{e}"), &self.name(body));
                let mut inner = bound.to_vec();
                let pragma = match op {
                    ReduceOp::Sum if !self.contains_reduce(body) => Some(format!("ANVIL_SIMD_SUM(t{e})")),
                    ReduceOp::Prod if !self.contains_reduce(body) => Some(format!("ANVIL_SIMD_PROD(t{e})")),
                    _ => None,
                };
                self.loop_nest(&vars, &[body], &mut inner, depth, &format!("t{e} = {combine};"), pragma, false);
            }
            _ => {
                let value = self.value(&expr);
                let _ = writeln!(self.code, "{pad}const {} t{e} = {value};", expr_dtype(&expr).cpp_name());
            }
        }
    }

    /// True if a reduction is nested under `e` (an `omp simd` loop must stay innermost).
    fn contains_reduce(&self, e: ExprId) -> bool {
        let mut stack = vec![e];
        let mut seen = vec![false; self.kernel.exprs.len()];
        while let Some(x) = stack.pop() {
            if std::mem::replace(&mut seen[x], true) {
                continue;
            }
            match &self.kernel.exprs[x] {
                Expr::Reduce { .. } => return true,
                other => stack.extend(other.operands()),
            }
        }
        false
    }

    /// The bounds tests that are not decided by the current variable ranges.
    fn in_bounds(&self, bounds: &[Bound]) -> String {
        let mut open = Vec::new();
        for b in bounds {
            let (lo, hi) = b.expr.bounds_in(&self.ranges);
            if hi < b.lo || lo >= b.hi {
                return "false".into();
            }
            if !(lo >= b.lo && hi < b.hi) {
                open.push(b.clone());
            }
        }
        if open.is_empty() {
            "true".into()
        } else {
            in_bounds(&open)
        }
    }

    /// How expression `e` is referred to: a literal or its temporary.
    fn name(&self, e: ExprId) -> String {
        match &self.kernel.exprs[e] {
            Expr::Const(v, dtype) => literal(*v, *dtype),
            _ => format!("t{e}"),
        }
    }

    fn value(&self, expr: &Expr) -> String {
        match expr {
            Expr::Const(v, dtype) => literal(*v, *dtype),
            Expr::Load { buffer, index, len, .. } => {
                let (lo, hi) = index.bounds_in(&self.ranges);
                load(*buffer, &index.to_string(), lo < 0, hi >= *len as i64, *len)
            }
            Expr::Gather { buffer, index, len, dtype } => {
                if *len == 0 {
                    literal(Literal::Int(0), *dtype)
                } else {
                    format!("b{buffer}[{}]", clamped(&self.name(*index), *len))
                }
            }
            Expr::InBounds(bounds) => self.in_bounds(bounds),
            Expr::Unary(op, x, dtype) => unary(*op, *dtype, &self.name(*x)),
            Expr::Binary(op, a, b, dtype) => binary(*op, *dtype, &self.name(*a), &self.name(*b)),
            Expr::Where(c, a, b, _) => {
                format!("{} ? {} : {}", self.name(*c), self.name(*a), self.name(*b))
            }
            Expr::Cast(x, from, to) => cast(*from, *to, &self.name(*x)),
            Expr::Reduce { .. } => unreachable!("reductions are emitted as loops"),
        }
    }
}

/// The loop variables each expression depends on (a reduction binds its own).
fn dependencies(kernel: &Kernel) -> Vec<Vec<usize>> {
    let mut deps: Vec<Vec<usize>> = Vec::with_capacity(kernel.exprs.len());
    for expr in &kernel.exprs {
        let mut d = Vec::new();
        match expr {
            Expr::Const(..) => {}
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

fn expr_dtype(expr: &Expr) -> DType {
    match expr {
        Expr::Const(_, d)
        | Expr::Load { dtype: d, .. }
        | Expr::Gather { dtype: d, .. }
        | Expr::Unary(_, _, d)
        | Expr::Where(_, _, _, d) => *d,
        Expr::Cast(_, _, to) => *to,
        Expr::InBounds(_) => DType::Bool,
        Expr::Binary(op, _, _, d) => {
            if op.is_comparison() {
                DType::Bool
            } else {
                *d
            }
        }
        Expr::Reduce { dtype, .. } => *dtype,
    }
}

/// `b<buffer>[index]`, with the index clamped into `0..len` on the sides where it can
/// leave it (padded reads, whose value is masked by the caller).
fn load(buffer: BufferId, index: &str, below: bool, above: bool, len: usize) -> String {
    let mut i = index.to_string();
    if above {
        let last = len.saturating_sub(1);
        i = format!("({i}) > {last} ? {last} : ({i})");
    }
    if below {
        i = format!("({index}) < 0 ? 0 : {i}");
    }
    format!("b{buffer}[{i}]")
}

/// A computed index clamped into `0..len` (the interpreter clamps the same way).
fn clamped(index: &str, len: usize) -> String {
    format!("{index} < 0 ? 0 : ({index} > {last} ? {last} : {index})", last = len - 1)
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
        bounds.iter().map(|b| format!("({lo} <= {e} && {e} < {hi})", lo = b.lo, hi = b.hi, e = b.expr)).collect();
    format!("({})", tests.join(" && "))
}

/// A C++ literal of dtype `dtype` (exact: Rust prints the shortest round-tripping decimal).
pub fn literal(v: Literal, dtype: DType) -> String {
    match dtype {
        DType::Bool => (v.as_f64() != 0.0).to_string(),
        DType::I32 => {
            let i = crate::graph::scalar::literal_int(v) as i32;
            if i == i32::MIN {
                "(-2147483647 - 1)".into()
            } else {
                i.to_string()
            }
        }
        DType::I64 => {
            let i = crate::graph::scalar::literal_int(v);
            if i == i64::MIN {
                "(-9223372036854775807LL - 1)".into()
            } else {
                format!("{i}LL")
            }
        }
        DType::F32 => float_literal(v.as_f64() as f32 as f64, format!("{:?}", v.as_f64() as f32), "f"),
        DType::F64 => float_literal(v.as_f64(), format!("{:?}", v.as_f64()), ""),
    }
}

fn float_literal(v: f64, repr: String, suffix: &str) -> String {
    if v.is_nan() {
        format!("__builtin_nan{suffix}(\"\")")
    } else if v.is_infinite() {
        let sign = if v < 0.0 { "-" } else { "" };
        format!("({sign}__builtin_inf{suffix}())")
    } else if v < 0.0 || repr.starts_with('-') {
        format!("({repr}{suffix})")
    } else {
        format!("{repr}{suffix}")
    }
}

fn builtin(name: &str, dtype: DType, args: &str) -> String {
    let suffix = if dtype == DType::F32 { "f" } else { "" };
    format!("__builtin_{name}{suffix}({args})")
}

fn unary(op: UnaryOp, dtype: DType, x: &str) -> String {
    if !dtype.is_float() {
        return match op {
            UnaryOp::Neg => wrapping(dtype, "0", "-", x),
            UnaryOp::Abs => format!("{x} < 0 ? {} : {x}", wrapping(dtype, "0", "-", x)),
            UnaryOp::Floor | UnaryOp::Ceil => x.to_string(),
            _ => format!(
                "static_cast<{}>({})",
                dtype.cpp_name(),
                unary(op, DType::F64, &format!("static_cast<double>({x})"))
            ),
        };
    }
    let one = literal(Literal::Float(1.0), dtype);
    let f = |name: &str| builtin(name, dtype, x);
    match op {
        UnaryOp::Neg => format!("-{x}"),
        UnaryOp::Recip => format!("{one} / {x}"),
        UnaryOp::Sqrt => f("sqrt"),
        UnaryOp::Exp => f("exp"),
        UnaryOp::Log => f("log"),
        UnaryOp::Sin => f("sin"),
        UnaryOp::Cos => f("cos"),
        UnaryOp::Tan => f("tan"),
        UnaryOp::Asin => f("asin"),
        UnaryOp::Acos => f("acos"),
        UnaryOp::Atan => f("atan"),
        UnaryOp::Sinh => f("sinh"),
        UnaryOp::Cosh => f("cosh"),
        UnaryOp::Tanh => f("tanh"),
        UnaryOp::Abs => f("fabs"),
        UnaryOp::Floor => f("floor"),
        UnaryOp::Ceil => f("ceil"),
    }
}

/// Integer `a sym b` in unsigned arithmetic: wraps like the interpreter instead of
/// overflowing (undefined behaviour in C++).
fn wrapping(dtype: DType, a: &str, sym: &str, b: &str) -> String {
    let (signed, unsigned) = match dtype {
        DType::I32 => ("int", "unsigned int"),
        _ => ("long long", "unsigned long long"),
    };
    format!("static_cast<{signed}>(static_cast<{unsigned}>({a}) {sym} static_cast<{unsigned}>({b}))")
}

fn binary(op: BinaryOp, dtype: DType, a: &str, b: &str) -> String {
    let float = dtype.is_float();
    match op {
        BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => {
            let sym = match op {
                BinaryOp::Add => "+",
                BinaryOp::Sub => "-",
                _ => "*",
            };
            if float {
                format!("{a} {sym} {b}")
            } else {
                wrapping(dtype, a, sym, b)
            }
        }
        BinaryOp::Div if float => format!("{a} / {b}"),
        // Integer division by zero gives 0, and MIN / -1 wraps to MIN, as in the interpreter
        // (C++ leaves both undefined; x86 traps on them).
        BinaryOp::Div => format!("{b} == 0 ? 0 : ({b} == -1 ? {} : {a} / {b})", wrapping(dtype, "0", "-", a)),
        BinaryOp::Pow | BinaryOp::Atan2 if !float => {
            let f = binary(op, DType::F64, &format!("static_cast<double>({a})"), &format!("static_cast<double>({b})"));
            format!("static_cast<{}>({f})", dtype.cpp_name())
        }
        BinaryOp::Pow => builtin("pow", dtype, &format!("{a}, {b}")),
        BinaryOp::Atan2 => builtin("atan2", dtype, &format!("{a}, {b}")),
        BinaryOp::Max if float => format!("({a} > {b} || {a} != {a}) ? {a} : {b}"),
        BinaryOp::Min if float => format!("({a} < {b} || {a} != {a}) ? {a} : {b}"),
        BinaryOp::Max => format!("{a} > {b} ? {a} : {b}"),
        BinaryOp::Min => format!("{a} < {b} ? {a} : {b}"),
        BinaryOp::Lt => format!("{a} < {b}"),
        BinaryOp::Le => format!("{a} <= {b}"),
        BinaryOp::Gt => format!("{a} > {b}"),
        BinaryOp::Ge => format!("{a} >= {b}"),
        BinaryOp::Eq => format!("{a} == {b}"),
        BinaryOp::Ne => format!("{a} != {b}"),
    }
}

fn combine(op: ReduceOp, dtype: DType, acc: &str, x: &str) -> String {
    binary(BinaryOp::from(op), dtype, acc, x)
}

fn cast(from: DType, to: DType, x: &str) -> String {
    if to == DType::Bool {
        format!("{x} != 0")
    } else if from == to {
        x.to_string()
    } else if from.is_float() && to.is_int() {
        saturating_cast(from, to, x)
    } else {
        format!("static_cast<{}>({x})", to.cpp_name())
    }
}

/// Float to integer as [`crate::graph::scalar::cast`] defines it (C++ leaves out-of-range
/// values undefined): truncate inside the range, saturate outside, NaN gives 0. The bounds
/// are powers of two, exact in every float type.
fn saturating_cast(from: DType, to: DType, x: &str) -> String {
    let bits = 8 * to.size() as i32;
    let bound = |v: f64| literal(Literal::Float(v), from);
    let (lo, hi) = (bound(-(2f64.powi(bits - 1))), bound(2f64.powi(bits - 1)));
    let (min, max) = match to {
        DType::I32 => (literal(Literal::Int(i32::MIN as i64), to), literal(Literal::Int(i32::MAX as i64), to)),
        _ => (literal(Literal::Int(i64::MIN), to), literal(Literal::Int(i64::MAX), to)),
    };
    let zero = literal(Literal::Int(0), to);
    let t = to.cpp_name();
    format!("({x} >= {lo} && {x} < {hi}) ? static_cast<{t}>({x}) : ({x} != {x} ? {zero} : ({x} < 0 ? {min} : {max}))")
}

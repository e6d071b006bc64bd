//! The target language's spellings, in one table.
//!
//! The loop nest ([`crate::lower::nest`]) says what code to write: which temporaries, loops
//! and stores; the kernel printer ([`super::kernel`]) writes it. How each thing is spelled
//! comes from a [`Dialect`]: types, literals, math functions, conversions, qualifiers, index
//! arithmetic, statements (loops, blocks, bindings, stores, calls, function definitions;
//! see [`Statements`]), annotations for the compiler ([`Annotations`]) and the prelude that
//! defines them, and the keywords and library names our identifiers must avoid. The methods below spell the scalar
//! operations from the table, with the reference interpreter's semantics wherever the
//! language leaves a case undefined: integer arithmetic wraps, integer division by zero gives 0, a float converted
//! to an integer saturates (NaN gives 0), and `max`/`min` propagate NaN.
//!
//! C++, which the JIT and the AOT module compile, is [`CPP`]. Another C-like target (CUDA,
//! Metal) is another table with its own prelude, not another printer.
//!
//! ```
//! use anvil::{DType, internals::render::dialect::CPP};
//! assert_eq!(CPP.type_name(DType::I64), "long long");
//! assert_eq!(CPP.literal(anvil::internals::graph::Literal::Float(f64::INFINITY), DType::F32), "(__builtin_inff())");
//! assert_eq!(CPP.math("exp", DType::F32, "x"), "__builtin_expf(x)");
//! ```

use crate::dtype::DType;
use crate::graph::{scalar, BinaryOp, Literal, ReduceOp, UnaryOp};
use crate::lower::index::IndexSpelling;

/// C++'s keywords and the names anvil's generated code uses.
const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "Buffer",
    "std",
];

/// Names the standard headers of a generated module declare at global scope, or define as
/// macros, with g++ and clang++ on glibc (one per line; `scripts/find_reserved_names.sh`
/// derives the list by compiling every candidate).
const CPP_LIBRARY_NAMES: &str = include_str!("reserved_names.txt");

/// Every spelling of a target language that the kernel printer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The scalar type of `bool`, `i32`, `i64`, `f32` and `f64`, in that order.
    pub types: [&'static str; 5],
    /// The language's keywords (and names the generated code uses): not names of ours.
    pub keywords: &'static [&'static str],
    /// Names the headers of a generated module declare at global scope or define as
    /// macros, one per line: not names of ours either.
    pub library_names: &'static str,
    /// The unsigned types that `i32` and `i64` arithmetic wraps in.
    pub unsigned: [&'static str; 2],
    /// The qualifier of a pointer no other pointer aliases.
    pub restrict: &'static str,
    /// The attribute of a parameter or variable that may go unused.
    pub maybe_unused: &'static str,
    /// The suffix of `i64` literals.
    pub i64_suffix: &'static str,
    /// The smallest `i32` and `i64`, which have no literal of their own.
    pub int_min: [&'static str; 2],
    /// The suffix of `f32` literals and of `f32` math functions.
    pub f32_suffix: &'static str,
    /// The prefix of math functions (`sqrt` is spelled `{math}sqrt`).
    pub math: &'static str,
    /// The prefix of the sine and cosine that a vectorised loop calls (see the prelude).
    pub loop_math: &'static str,
    /// The prefix of the math of doubles that a vectorised loop computes inline: sine and
    /// cosine when their arguments are near zero (see the prelude's `anvil_fast_sin`), tanh.
    /// Empty: the dialect has no fast math of its own (its math functions are fast).
    pub fast_math: &'static str,
    /// The test that an argument is too far from zero for the fast sine and cosine.
    pub trig_far: &'static str,
    /// NaN of a float type: before and after its suffix.
    pub nan: [&'static str; 2],
    /// Positive infinity of a float type: before and after its suffix.
    pub inf: [&'static str; 2],
    /// A conversion: before the type, between type and value, after the value.
    pub cast: [&'static str; 3],
    /// The statements and declarations of a kernel, as templates whose `{0}`, `{1}`, ...
    /// the methods below fill.
    pub statements: Statements,
    /// What every translation unit with kernels starts with: the definitions of the
    /// annotations below, and what one source needs to serve every compiler.
    pub prelude: &'static str,
    /// Annotations of loops and functions, defined by the prelude.
    pub annotations: Annotations,
    /// The most statements a loop unrolled completely may amount to (its extent times its
    /// body's statements): 0 unrolls nothing. A GPU thread keeps an array in registers only
    /// where every index into it is known, which unrolled loops make so.
    pub unroll_budget: usize,
}

/// How a dialect marks loops and functions for its compilers (macros of its prelude).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Annotations {
    /// Before a loop over a batch's items, which may run in vector lanes.
    pub items_loop: &'static str,
    /// Before a loop summing into the accumulator `{0}`, which may be reordered.
    pub sum_loop: &'static str,
    /// Before a loop multiplying into the accumulator `{0}`, which may be reordered.
    pub prod_loop: &'static str,
    /// On a kernel that narrows `f64` to `f32` (see the prelude).
    pub narrowing_kernel: &'static str,
    /// On a batched kernel, whose strides must stay run-time values (see the prelude).
    pub runtime_strides: &'static str,
    /// On a function private to its translation unit.
    pub internal: &'static str,
    /// On a function rarely called (the exact rerun of a kernel).
    pub cold: &'static str,
    /// Before a loop to unroll completely (see [`Dialect::unroll_budget`]).
    pub unrolled_loop: &'static str,
}

/// How a dialect spells the statements and declarations of a kernel. Each is a template:
/// `{0}`, `{1}`, ... stand for the pieces the [`Dialect`] method of the same name passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Statements {
    /// A counted loop's head: variable, first value, end (exclusive).
    pub loop_head: &'static str,
    /// A loop's head stepping by more than one: variable, first value, end (exclusive),
    /// step.
    pub tile_head: &'static str,
    /// Opens and closes a block.
    pub block: [&'static str; 2],
    /// A loop variable bound to one value (a one-iteration loop): name, value.
    pub fixed_index: &'static str,
    /// An immutable temporary: type, name, value.
    pub binding: &'static str,
    /// A mutable variable (an accumulator): type, name, initial value.
    pub variable: &'static str,
    /// An uninitialised local array: element type, name, length.
    pub local_array: &'static str,
    /// An assignment: target, value.
    pub assign: &'static str,
    /// An element of an array: pointer, index.
    pub element: &'static str,
    /// A conditional value: condition, value if true, value if false.
    pub select: &'static str,
    /// `lo <= e < hi`: expression, lo, hi.
    pub in_range: &'static str,
    /// Joins conditions that must all hold.
    pub and: &'static str,
    /// A pointer parameter: pointee type, the dialect's `restrict`, name.
    pub pointer_param: &'static str,
    /// A pointer bound once (`double* const b = ...`): type, name, value.
    pub pointer_binding: &'static str,
    /// A read-only type: type.
    pub read_only: &'static str,
    /// A function definition: attributes, name, parameters, body.
    pub function: &'static str,
    /// A call statement: function, arguments.
    pub call: &'static str,
    /// A call whose value is used: function, arguments.
    pub call_value: &'static str,
    /// Sets a flag if a condition holds: flag, condition.
    pub raise: &'static str,
    /// A function returning a flag: attributes, name, parameters, body.
    pub flag_function: &'static str,
    /// Returns a value: value.
    pub return_value: &'static str,
    /// A statement run only if a condition holds: condition, statement.
    pub only_if: &'static str,
    /// A parameter: type, name.
    pub parameter: &'static str,
    /// The name of a loop variable: its number.
    pub loop_var: &'static str,
    /// Index arithmetic: a product (expression, constant), a truncating quotient and a
    /// remainder (expression, positive constant), a sum and a difference (two expressions),
    /// a negation (expression), in that order.
    pub index_arithmetic: [&'static str; 6],
    /// Of a function run by a grid of threads (empty where the language has none): what
    /// its body starts with, defining the thread's index and the number of threads.
    pub grid_preamble: &'static str,
    /// A loop spread over the grid's threads: variable, first value, end (exclusive).
    pub grid_loop_head: &'static str,
    /// A loop dealt to the grid's first threads, one iteration in every `{3}` to each:
    /// variable, first value, end (exclusive), the number of threads.
    pub lanes_loop_head: &'static str,
    /// Before statements only the grid's first `{0}` threads run.
    pub on_threads: &'static str,
    /// The parameter of a split reduction's partials (bytes).
    pub partials_param: &'static str,
    /// The partials of one split reduction, as an array of `{0}` starting `{1}` bytes in.
    pub partials: &'static str,
    /// A loop over `p`, the `{0}` partials of a split reduction, dealt over a warp's lanes.
    pub partials_loop_head: &'static str,
    /// Of a function a warp runs on one item (empty where the language has none): what its
    /// body starts with, defining the lane as the thread's index.
    pub warp_preamble: &'static str,
    /// Accumulator `{1}` combined across a warp's lanes, given `{0}`, the statement folding
    /// into it the value of the lane `{2}` apart, then made every lane's.
    pub warp_combine: &'static str,
    /// Value `{0}` of the lane `{1}` lanes up.
    pub warp_shuffle: &'static str,
}

/// `template` with each `{k}` (one digit) replaced by `args[k]`, in one pass.
pub(crate) fn fill(template: &str, args: &[&str]) -> String {
    let mut out = String::with_capacity(template.len() + args.iter().map(|a| a.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let slot = rest[start + 1..].chars().next().and_then(|c| c.to_digit(10)).map(|k| k as usize);
        match slot {
            Some(k) if rest[start + 2..].starts_with('}') && k < args.len() => {
                out += &rest[..start];
                out += args[k];
                rest = &rest[start + 3..];
            }
            _ => {
                out += &rest[..=start];
                rest = &rest[start + 1..];
            }
        }
    }
    out + rest
}

/// C++17 as g++ and clang++ compile it, with compiler builtins for math (the JIT's
/// translation unit includes no header).
pub const CPP: Dialect = Dialect {
    types: ["bool", "int", "long long", "float", "double"],
    keywords: CPP_KEYWORDS,
    library_names: CPP_LIBRARY_NAMES,
    unsigned: ["unsigned int", "unsigned long long"],
    restrict: "__restrict",
    maybe_unused: "[[maybe_unused]]",
    i64_suffix: "LL",
    int_min: ["(-2147483647 - 1)", "(-9223372036854775807LL - 1)"],
    f32_suffix: "f",
    math: "__builtin_",
    loop_math: "anvil_loop_",
    fast_math: "anvil_fast_",
    trig_far: "anvil_trig_far",
    nan: ["__builtin_nan", "(\"\")"],
    inf: ["__builtin_inf", "()"],
    cast: ["static_cast<", ">(", ")"],
    statements: Statements {
        loop_head: "for (long long {0} = {1}; {0} < {2}; ++{0})",
        tile_head: "for (long long {0} = {1}; {0} < {2}; {0} += {3})",
        block: ["{", "}"],
        fixed_index: "[[maybe_unused]] const long long {0} = {1};",
        binding: "const {0} {1} = {2};",
        variable: "{0} {1} = {2};",
        local_array: "{0} {1}[{2}];",
        assign: "{0} = {1};",
        element: "{0}[{1}]",
        select: "{0} ? {1} : {2}",
        in_range: "({1} <= {0} && {0} < {2})",
        and: " && ",
        pointer_param: "{0}* {1} {2}",
        pointer_binding: "{0}* const {1} = {2};",
        read_only: "const {0}",
        function: "{0}void {1}({2}) {\n{3}}\n",
        call: "{0}({1});",
        call_value: "{0}({1})",
        raise: "{0} |= {1};",
        flag_function: "{0}bool {1}({2}) {\n{3}}\n",
        return_value: "return {0};",
        only_if: "if ({0}) {1}",
        parameter: "{0} {1}",
        loop_var: "i{0}",
        index_arithmetic: ["{0}*{1}", "({0})/{1}", "({0})%{1}", "{0} + {1}", "{0} - {1}", "-{0}"],
        grid_preamble: "",
        grid_loop_head: "",
        lanes_loop_head: "",
        on_threads: "",
        partials_param: "",
        partials: "",
        partials_loop_head: "",
        warp_preamble: "",
        warp_combine: "",
        warp_shuffle: "",
    },
    prelude: CPP_PRELUDE,
    annotations: Annotations {
        items_loop: "ANVIL_SIMD_ITEMS",
        sum_loop: "ANVIL_SIMD_SUM({0})",
        prod_loop: "ANVIL_SIMD_PROD({0})",
        narrowing_kernel: "ANVIL_NO_SLP ",
        runtime_strides: "ANVIL_RUNTIME_STRIDES ",
        internal: "static ",
        cold: "ANVIL_COLD ",
        unrolled_loop: "",
    },
    unroll_budget: 0,
};

/// Index expressions in the dialect's arithmetic, loop variables named by its `loop_var`.
impl IndexSpelling for Dialect {
    fn var(&self, v: usize) -> String {
        fill(self.statements.loop_var, &[&v.to_string()])
    }
    fn product(&self, x: &str, k: u64) -> String {
        fill(self.statements.index_arithmetic[0], &[x, &k.to_string()])
    }
    fn quotient(&self, x: &str, d: i64) -> String {
        fill(self.statements.index_arithmetic[1], &[x, &d.to_string()])
    }
    fn remainder(&self, x: &str, d: i64) -> String {
        fill(self.statements.index_arithmetic[2], &[x, &d.to_string()])
    }
    fn sum(&self, x: &str, y: &str, negative: bool) -> String {
        fill(self.statements.index_arithmetic[if negative { 4 } else { 3 }], &[x, y])
    }
    fn negative(&self, x: &str) -> String {
        fill(self.statements.index_arithmetic[5], &[x])
    }
}

impl Dialect {
    /// A parameter of the given type.
    pub fn parameter(&self, type_name: &str, name: &str) -> String {
        fill(self.statements.parameter, &[type_name, name])
    }

    /// A loop dealt to a grid's first `lanes` threads (see [`Statements::lanes_loop_head`]).
    pub fn lanes_loop_head(&self, var: &str, first: &str, end: &str, lanes: usize) -> String {
        fill(self.statements.lanes_loop_head, &[var, first, end, &lanes.to_string()])
    }

    /// A loop spread over a grid's threads (see [`Statements::grid_loop_head`]).
    pub fn grid_loop_head(&self, var: &str, first: &str, end: &str) -> String {
        fill(self.statements.grid_loop_head, &[var, first, end])
    }

    /// A counted loop's head (`for` variable `var` from `first` while below `end`).
    pub fn loop_head(&self, var: &str, first: &str, end: &str) -> String {
        fill(self.statements.loop_head, &[var, first, end])
    }

    /// A loop's head (`for` variable `var` from `first` while below `end`, by `step`).
    pub fn tile_head(&self, var: &str, first: &str, end: &str, step: &str) -> String {
        fill(self.statements.tile_head, &[var, first, end, step])
    }

    /// The loop variable `var` bound to `value`, in a block of its own.
    pub fn fixed_index(&self, var: &str, value: &str) -> String {
        fill(self.statements.fixed_index, &[var, value])
    }

    /// `const type name = value;`
    pub fn binding(&self, type_name: &str, name: &str, value: &str) -> String {
        fill(self.statements.binding, &[type_name, name, value])
    }

    /// `type name = value;` (mutable)
    pub fn variable(&self, type_name: &str, name: &str, value: &str) -> String {
        fill(self.statements.variable, &[type_name, name, value])
    }

    /// `type name[len];` (uninitialised)
    pub fn local_array(&self, type_name: &str, name: &str, len: &str) -> String {
        fill(self.statements.local_array, &[type_name, name, len])
    }

    /// `target = value;`
    pub fn assign(&self, target: &str, value: &str) -> String {
        fill(self.statements.assign, &[target, value])
    }

    /// `pointer[index]`
    pub fn element(&self, pointer: &str, index: &str) -> String {
        fill(self.statements.element, &[pointer, index])
    }

    /// `condition ? if_true : if_false`
    pub fn select(&self, condition: &str, if_true: &str, if_false: &str) -> String {
        fill(self.statements.select, &[condition, if_true, if_false])
    }

    /// `lo <= e < hi`
    pub fn in_range(&self, e: &str, lo: &str, hi: &str) -> String {
        fill(self.statements.in_range, &[e, lo, hi])
    }

    /// A pointer parameter to `dtype` elements (read-only unless `mutable`) that no other
    /// pointer aliases.
    pub fn pointer_param(&self, dtype: DType, mutable: bool, name: &str) -> String {
        let pointee = self.pointee(dtype, mutable);
        fill(self.statements.pointer_param, &[&pointee, self.restrict, name])
    }

    /// The type of `dtype` elements behind a pointer, read-only unless `mutable`.
    pub fn pointee(&self, dtype: DType, mutable: bool) -> String {
        if mutable {
            self.type_name(dtype).to_string()
        } else {
            fill(self.statements.read_only, &[self.type_name(dtype)])
        }
    }

    /// An annotation template (see [`Annotations`]) filled with `args`.
    pub fn annotate(&self, annotation: &str, args: &[&str]) -> String {
        fill(annotation, args)
    }

    /// `type* const name = value;`
    pub fn pointer_binding(&self, pointee: &str, name: &str, value: &str) -> String {
        fill(self.statements.pointer_binding, &[pointee, name, value])
    }

    /// A function definition.
    pub fn function(&self, attributes: &str, name: &str, params: &[String], body: &str) -> String {
        fill(self.statements.function, &[attributes, name, &params.join(", "), body])
    }

    /// A call statement.
    pub fn call(&self, function: &str, args: &[String]) -> String {
        fill(self.statements.call, &[function, &args.join(", ")])
    }

    /// A call whose value is used.
    pub fn call_value(&self, function: &str, args: &[String]) -> String {
        fill(self.statements.call_value, &[function, &args.join(", ")])
    }

    /// `flag |= condition;`
    pub fn raise(&self, flag: &str, condition: &str) -> String {
        fill(self.statements.raise, &[flag, condition])
    }

    /// A function definition returning a flag.
    pub fn flag_function(&self, attributes: &str, name: &str, params: &[String], body: &str) -> String {
        fill(self.statements.flag_function, &[attributes, name, &params.join(", "), body])
    }

    /// `return value;`
    pub fn return_value(&self, value: &str) -> String {
        fill(self.statements.return_value, &[value])
    }

    /// `statement`, run only if `condition` holds.
    pub fn only_if(&self, condition: &str, statement: &str) -> String {
        fill(self.statements.only_if, &[condition, statement])
    }

    /// The fast sine or cosine of a double `x` in a vectorised loop (`None` for other
    /// operations and types), valid where [`trig_far`](Self::trig_far) does not hold.
    pub fn fast_unary(&self, op: UnaryOp, dtype: DType, x: &str) -> Option<String> {
        if self.fast_math.is_empty() {
            return None;
        }
        let name = match op {
            UnaryOp::Sin => "sin",
            UnaryOp::Cos => "cos",
            _ => return None,
        };
        (dtype == DType::F64).then(|| format!("{}{name}({x})", self.fast_math))
    }

    /// True if [`fast_unary`](Self::fast_unary) has a form for `op` on `dtype` (what the
    /// scheduler marks [`Math::Fast`](crate::lower::nest::Math::Fast)).
    pub fn has_fast_unary(&self, op: UnaryOp, dtype: DType) -> bool {
        self.fast_unary(op, dtype, "").is_some()
    }

    /// True (in the target language) if `x` is too far from zero for
    /// [`fast_unary`](Self::fast_unary), or not finite.
    pub fn trig_far(&self, x: &str) -> String {
        format!("{}({x})", self.trig_far)
    }

    /// The scalar type of `dtype`.
    pub fn type_name(&self, dtype: DType) -> &'static str {
        self.types[match dtype {
            DType::Bool => 0,
            DType::I32 => 1,
            DType::I64 => 2,
            DType::F32 => 3,
            DType::F64 => 4,
        }]
    }

    /// The suffix of `dtype`'s float literals and math functions.
    fn float_suffix(&self, dtype: DType) -> &'static str {
        if dtype == DType::F32 {
            self.f32_suffix
        } else {
            ""
        }
    }

    /// The literal `v` of type `dtype`, parenthesised where a sign could bind to what precedes.
    pub fn literal(&self, v: Literal, dtype: DType) -> String {
        match dtype {
            DType::Bool => (v.as_f64() != 0.0).to_string(),
            DType::I32 => match scalar::literal_int(v) as i32 {
                i32::MIN => self.int_min[0].into(),
                i => i.to_string(),
            },
            DType::I64 => match scalar::literal_int(v) {
                i64::MIN => self.int_min[1].into(),
                i => format!("{i}{}", self.i64_suffix),
            },
            DType::F32 => self.float_literal(v.as_f64() as f32 as f64, format!("{:?}", v.as_f64() as f32), dtype),
            DType::F64 => self.float_literal(v.as_f64(), format!("{:?}", v.as_f64()), dtype),
        }
    }

    fn float_literal(&self, v: f64, repr: String, dtype: DType) -> String {
        let suffix = self.float_suffix(dtype);
        if v.is_nan() {
            format!("{}{suffix}{}", self.nan[0], self.nan[1])
        } else if v.is_infinite() {
            let sign = if v < 0.0 { "-" } else { "" };
            format!("({sign}{}{suffix}{})", self.inf[0], self.inf[1])
        } else if v < 0.0 || repr.starts_with('-') {
            format!("({repr}{suffix})")
        } else {
            format!("{repr}{suffix}")
        }
    }

    /// The math function `name` of `dtype` applied to `args`.
    pub fn math(&self, name: &str, dtype: DType, args: &str) -> String {
        format!("{}{name}{}({args})", self.math, self.float_suffix(dtype))
    }

    /// `x` converted to the type spelled `type_name`.
    fn convert(&self, type_name: &str, x: &str) -> String {
        format!("{}{type_name}{}{x}{}", self.cast[0], self.cast[1], self.cast[2])
    }

    /// `op(x)`; `in_loop` spells sine and cosine so that a loop computing both can vectorise
    /// (see the prelude's `anvil_loop_sin`). Only loops known to vectorise use it: in a
    /// scalar loop, sin and cos of one argument are cheaper merged.
    pub fn unary(&self, op: UnaryOp, dtype: DType, x: &str, in_loop: bool) -> String {
        if !dtype.is_float() {
            return match op {
                UnaryOp::Neg => self.wrapping(dtype, "0", "-", x),
                UnaryOp::Abs => format!("{x} < 0 ? {} : {x}", self.wrapping(dtype, "0", "-", x)),
                UnaryOp::Floor | UnaryOp::Ceil => x.to_string(),
                _ => {
                    let float = self.unary(op, DType::F64, &self.convert(self.type_name(DType::F64), x), in_loop);
                    self.convert(self.type_name(dtype), &float)
                }
            };
        }
        let f = |name: &str| self.math(name, dtype, x);
        match op {
            UnaryOp::Neg => format!("-{x}"),
            UnaryOp::Recip => format!("{} / {x}", self.literal(Literal::Float(1.0), dtype)),
            UnaryOp::Tanh if in_loop && dtype == DType::F64 => format!("{}tanh({x})", self.fast_math),
            UnaryOp::Sin | UnaryOp::Cos if in_loop => {
                let name = if op == UnaryOp::Sin { "sin" } else { "cos" };
                format!("{}{name}{}({x})", self.loop_math, self.float_suffix(dtype))
            }
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
    fn wrapping(&self, dtype: DType, a: &str, sym: &str, b: &str) -> String {
        let unsigned = self.unsigned[usize::from(dtype != DType::I32)];
        let signed = self.type_name(if dtype == DType::I32 { DType::I32 } else { DType::I64 });
        let sum = format!("{} {sym} {}", self.convert(unsigned, a), self.convert(unsigned, b));
        self.convert(signed, &sum)
    }

    /// `a op b` for operands of type `dtype`.
    pub fn binary(&self, op: BinaryOp, dtype: DType, a: &str, b: &str) -> String {
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
                    self.wrapping(dtype, a, sym, b)
                }
            }
            BinaryOp::Div if float => format!("{a} / {b}"),
            // Integer division by zero gives 0, and MIN / -1 wraps to MIN, as in the
            // interpreter (C++ leaves both undefined; x86 traps on them).
            BinaryOp::Div => format!("{b} == 0 ? 0 : ({b} == -1 ? {} : {a} / {b})", self.wrapping(dtype, "0", "-", a)),
            BinaryOp::Pow | BinaryOp::Atan2 if !float => {
                let double = self.type_name(DType::F64);
                let f = self.binary(op, DType::F64, &self.convert(double, a), &self.convert(double, b));
                self.convert(self.type_name(dtype), &f)
            }
            BinaryOp::Pow => self.math("pow", dtype, &format!("{a}, {b}")),
            BinaryOp::Atan2 => self.math("atan2", dtype, &format!("{a}, {b}")),
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

    /// The accumulator `acc` combined with `x` by a reduction's op.
    pub fn combine(&self, op: ReduceOp, dtype: DType, acc: &str, x: &str) -> String {
        self.binary(BinaryOp::from(op), dtype, acc, x)
    }

    /// `x` converted from `from` to `to` as [`scalar::cast`] defines it.
    pub fn cast(&self, from: DType, to: DType, x: &str) -> String {
        if to == DType::Bool {
            format!("{x} != 0")
        } else if from == to {
            x.to_string()
        } else if from.is_float() && to.is_int() {
            self.saturating_cast(from, to, x)
        } else {
            self.convert(self.type_name(to), x)
        }
    }

    /// Float to integer (C++ leaves out-of-range values undefined): truncate inside the
    /// range, saturate outside, NaN gives 0. The bounds are powers of two, exact in every
    /// float type.
    fn saturating_cast(&self, from: DType, to: DType, x: &str) -> String {
        let bits = 8 * to.size() as i32;
        let bound = |v: f64| self.literal(Literal::Float(v), from);
        let (lo, hi) = (bound(-(2f64.powi(bits - 1))), bound(2f64.powi(bits - 1)));
        let (min, max) = match to {
            DType::I32 => (i32::MIN as i64, i32::MAX as i64),
            _ => (i64::MIN, i64::MAX),
        };
        let (min, max) = (self.literal(Literal::Int(min), to), self.literal(Literal::Int(max), to));
        let zero = self.literal(Literal::Int(0), to);
        let truncated = self.convert(self.type_name(to), x);
        format!("({x} >= {lo} && {x} < {hi}) ? {truncated} : ({x} != {x} ? {zero} : ({x} < 0 ? {min} : {max}))")
    }
}

/// CUDA C++ as NVRTC compiles it: the C++ table with CUDA's math library (libdevice: `sin`,
/// `sinf`, no builtins), `__restrict__`, device functions, and no fast math or vector-loop
/// annotations of its own (a thread runs scalar code; the prelude defines the annotations
/// empty). The same printer writes both: only this table and its prelude differ.
///
/// ```
/// use anvil::{DType, internals::render::dialect::CUDA};
/// assert_eq!(CUDA.math("exp", DType::F32, "x"), "expf(x)");
/// assert_eq!(CUDA.pointer_param(DType::F64, false, "b1"), "const double* __restrict__ b1");
/// ```
pub const CUDA: Dialect = Dialect {
    keywords: CUDA_KEYWORDS,
    restrict: "__restrict__",
    math: "",
    loop_math: "",
    fast_math: "",
    trig_far: "",
    nan: ["nan", "(\"\")"],
    inf: ["anvil_inf", "()"],
    statements: Statements {
        function: "{0}__device__ ANVIL_KERNEL inline void {1}({2}) {\n{3}}\n",
        flag_function: "{0}__device__ bool {1}({2}) {\n{3}}\n",
        grid_preamble:
            "[[maybe_unused]] const long long anvil_thread = \
                        static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n  \
                        [[maybe_unused]] const long long anvil_threads = static_cast<long long>(gridDim.x) * blockDim.x;",
        grid_loop_head: "for (long long {0} = {1} + anvil_thread; {0} < {2}; {0} += anvil_threads)",
        lanes_loop_head: "for (long long {0} = {1} + anvil_thread; {0} < {2}; {0} += {3})",
        on_threads: "if (anvil_thread < {0})",
        partials_param: "char* __restrict__ partials",
        partials: "reinterpret_cast<{0}*>(partials + {1})",
        partials_loop_head: "for (long long p = anvil_thread % 32; p < {0}; p += 32)",
        // A tree towards lane 0 (the same order whatever the values), then lane 0's result
        // broadcast, so that every lane stores the same bits.
        warp_preamble: "[[maybe_unused]] const long long anvil_thread = threadIdx.x % 32;",
        warp_combine: "for (int {2} = 16; {2} > 0; {2} /= 2) { {0} }\n  {1} = __shfl_sync(0xffffffffu, {1}, 0);",
        warp_shuffle: "__shfl_down_sync(0xffffffffu, {0}, {1})",
        ..CPP.statements
    },
    prelude: CUDA_PRELUDE,
    annotations: Annotations { unrolled_loop: "ANVIL_UNROLL", ..CPP.annotations },
    unroll_budget: 512,
    ..CPP
};

/// C++'s keywords, CUDA's and the names its built-in variables take.
const CUDA_KEYWORDS: &[&str] = &{
    const EXTRA: [&str; 6] = ["threadIdx", "blockIdx", "blockDim", "gridDim", "warpSize", "anvil_args"];
    let mut all = [""; CPP_KEYWORDS.len() + EXTRA.len()];
    let mut i = 0;
    while i < all.len() {
        all[i] = if i < CPP_KEYWORDS.len() { CPP_KEYWORDS[i] } else { EXTRA[i - CPP_KEYWORDS.len()] };
        i += 1;
    }
    all
};

/// What every CUDA translation unit starts with: the annotations of the C++ table, empty (a
/// thread's loops are scalar), and the infinities (NVRTC has no `__builtin_inf`).
pub const CUDA_PRELUDE: &str = r#"#ifdef ANVIL_NOINLINE_KERNELS
#define ANVIL_KERNEL __noinline__
#else
#define ANVIL_KERNEL
#endif
#ifndef ANVIL_UNROLL
#define ANVIL_UNROLL _Pragma("unroll")
#endif
#define ANVIL_SIMD_ITEMS
#define ANVIL_SIMD_SUM(acc)
#define ANVIL_SIMD_PROD(acc)
#define ANVIL_NO_SLP
#define ANVIL_RUNTIME_STRIDES
#define ANVIL_COLD
[[maybe_unused]] static __device__ __forceinline__ double anvil_inf() { return __longlong_as_double(0x7ff0000000000000LL); }
[[maybe_unused]] static __device__ __forceinline__ float anvil_inff() { return __int_as_float(0x7f800000); }
"#;

/// Definitions every translation unit with kernels starts with (macros that let one
/// source serve every compiler; see each comment).
pub const CPP_PRELUDE: &str = r#"#ifndef ANVIL_PRELUDE
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
// The pragmas permit vectorisation; a loop clang cannot vectorise runs in order, no warning.
#if defined(__clang__)
#pragma clang diagnostic ignored "-Wpass-failed"
#endif
#define ANVIL_SIMD_SUM(acc) ANVIL_PRAGMA(omp simd reduction(+ : acc))
#define ANVIL_SIMD_PROD(acc) ANVIL_PRAGMA(omp simd reduction(* : acc))
#define ANVIL_SIMD_MAX(acc) ANVIL_PRAGMA(omp simd reduction(max : acc))
#else
#define ANVIL_SIMD_SUM(acc)
#define ANVIL_SIMD_PROD(acc)
#define ANVIL_SIMD_MAX(acc)
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
// Inside loops, sine and cosine are called by these names. GCC merges the builtins sin(x) and
// cos(x) of one argument into sincos, which has no vector version, and the loop stays
// scalar; these names are not builtins, so nothing merges them. With libmvec they are glibc's
// sin and cos themselves (assembler names), vector versions included.
#if defined(ANVIL_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
#define ANVIL_LOOP_MATH(name, type) \
  extern "C" type anvil_loop_##name(type) noexcept __asm__(#name) __attribute__((const)) ANVIL_VECTOR_MATH;
#else
#define ANVIL_LOOP_MATH(name, type) \
  [[maybe_unused]] static inline type anvil_loop_##name(type x) { return __builtin_##name(x); }
#endif
ANVIL_LOOP_MATH(sin, double)
ANVIL_LOOP_MATH(cos, double)
ANVIL_LOOP_MATH(sinf, float)
ANVIL_LOOP_MATH(cosf, float)
// Sine and cosine of doubles in loops that vectorise, inlined so that sin(x) and cos(x) share
// one range reduction: x = n π/2 + r with π/2 in three parts (exact first step, fused
// multiply-adds), Taylor polynomials of sin and cos on |r| <= π/4 truncated below 1e-19,
// polynomial and sign picked by bit operations (no branch in the loop). Within 1 ulp of
// glibc's sin and cos for |x| <= ANVIL_TRIG_NEAR (tests/trig_accuracy). A kernel whose loops
// meet a larger argument, an infinity or NaN (anvil_trig_far) runs again with the functions
// above (render_kernel). Without fused multiply-add these are those functions.
#define ANVIL_TRIG_NEAR 1.0e6
#if defined(__GNUC__)
#define ANVIL_INLINE __attribute__((always_inline)) inline
#define ANVIL_COLD __attribute__((cold))
#else
#define ANVIL_INLINE inline
#define ANVIL_COLD
#endif
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA)
[[maybe_unused]] static ANVIL_INLINE unsigned long long anvil_bits(double x) {
  unsigned long long u;
  __builtin_memcpy(&u, &x, sizeof u);
  return u;
}
[[maybe_unused]] static ANVIL_INLINE double anvil_from_bits(unsigned long long u) {
  double x;
  __builtin_memcpy(&x, &u, sizeof x);
  return x;
}
// x - n π/2 for the integer n nearest x 2/π; the quadrant n mod 4 is in the low bits of t.
[[maybe_unused]] static ANVIL_INLINE double anvil_reduce_half_pi(double x, unsigned long long* quadrant) {
  const double shift = 0x1.8p52;
  const double t = x * 0x1.45f306dc9c883p-1 + shift;
  const double n = t - shift;
  double r = __builtin_fma(-n, 0x1.921fb54442d18p+0, x);
  r = __builtin_fma(-n, 0x1.1a62633145c07p-54, r);
  *quadrant = anvil_bits(t);
  return __builtin_fma(-n, -0x1.f1976b7ed8fbcp-110, r);
}
// The polynomials are written out step by step: a Horner helper looping over a coefficient
// array (the same arithmetic) kept GCC 12 from vectorising the loops around them, 7x slower.
[[maybe_unused]] static ANVIL_INLINE double anvil_sin_taylor(double r) {
  const double z = r * r;
  double p = 2.8114572543455206e-15;
  p = __builtin_fma(p, z, -7.647163731819816e-13);
  p = __builtin_fma(p, z, 1.6059043836821613e-10);
  p = __builtin_fma(p, z, -2.505210838544172e-08);
  p = __builtin_fma(p, z, 2.7557319223985893e-06);
  p = __builtin_fma(p, z, -0.0001984126984126984);
  p = __builtin_fma(p, z, 0.008333333333333333);
  p = __builtin_fma(p, z, -0.16666666666666666);
  return r + (r * z) * p;
}
[[maybe_unused]] static ANVIL_INLINE double anvil_cos_taylor(double r) {
  const double z = r * r;
  double p = -1.5619206968586225e-16;
  p = __builtin_fma(p, z, 4.779477332387385e-14);
  p = __builtin_fma(p, z, -1.1470745597729725e-11);
  p = __builtin_fma(p, z, 2.08767569878681e-09);
  p = __builtin_fma(p, z, -2.755731922398589e-07);
  p = __builtin_fma(p, z, 2.48015873015873e-05);
  p = __builtin_fma(p, z, -0.001388888888888889);
  p = __builtin_fma(p, z, 0.041666666666666664);
  // 1 - z/2 rounded, plus what its rounding lost.
  const double half = 0.5 * z;
  const double w = 1.0 - half;
  return w + (((1.0 - w) - half) + (z * z) * p);
}
// sin of the reduced argument r in quadrant q (cos: quadrant q + 1).
[[maybe_unused]] static ANVIL_INLINE double anvil_quadrant(double r, unsigned long long q) {
  const unsigned long long s = anvil_bits(anvil_sin_taylor(r)), c = anvil_bits(anvil_cos_taylor(r));
  const unsigned long long odd = 0 - (q & 1);
  return anvil_from_bits(((s & ~odd) | (c & odd)) ^ ((q & 2) << 62));
}
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_sin(double x) {
  unsigned long long q;
  const double r = anvil_reduce_half_pi(x, &q);
  // Below 2^-27 sin x rounds to x: this also keeps the sign of -0.0.
  return __builtin_fabs(x) < 0x1p-27 ? x : anvil_quadrant(r, q);
}
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_cos(double x) {
  unsigned long long q;
  const double r = anvil_reduce_half_pi(x, &q);
  return anvil_quadrant(r, q + 1);
}
[[maybe_unused]] static ANVIL_INLINE bool anvil_trig_far(double x) { return !(__builtin_fabs(x) <= ANVIL_TRIG_NEAR); }
// tanh of doubles in loops that vectorise: -expm1(-2|x|) / (2 + expm1(-2|x|)) with the sign of
// x, expm1 by a reduction by ln 2 in two parts and its Taylor polynomial on |r| <= ln 2 / 2
// (terms below 1e-17 dropped), 2^n built from bits. |x| is clamped at 20, where tanh rounds
// to 1; NaN propagates. Within 3 ulp of glibc's tanh (as libmvec's), everywhere: no rerun.
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_tanh(double x) {
  const double a = __builtin_fabs(x);
  const double y = -2.0 * (a > 20.0 ? 20.0 : a);
  const double shift = 0x1.8p52;
  const double t = y * 0x1.71547652b82fep0 + shift;
  const double n = t - shift;
  double r = __builtin_fma(-n, 0x1.62e42fefa39efp-1, y);
  r = __builtin_fma(-n, 0x1.abc9e3b39803fp-56, r);
  double p = 1.0 / 87178291200.0;
  p = __builtin_fma(p, r, 1.0 / 6227020800.0);
  p = __builtin_fma(p, r, 1.0 / 479001600.0);
  p = __builtin_fma(p, r, 1.0 / 39916800.0);
  p = __builtin_fma(p, r, 1.0 / 3628800.0);
  p = __builtin_fma(p, r, 1.0 / 362880.0);
  p = __builtin_fma(p, r, 1.0 / 40320.0);
  p = __builtin_fma(p, r, 1.0 / 5040.0);
  p = __builtin_fma(p, r, 1.0 / 720.0);
  p = __builtin_fma(p, r, 1.0 / 120.0);
  p = __builtin_fma(p, r, 1.0 / 24.0);
  p = __builtin_fma(p, r, 1.0 / 6.0);
  p = __builtin_fma(p, r, 0.5);
  const double m = __builtin_fma(r * r, p, r);
  // n >= -58: 2^n is normal, its exponent field n + 1023 from the low bits of t.
  const double s = anvil_from_bits((anvil_bits(t) + 1023) << 52);
  const double e = __builtin_fma(s, m, s - 1.0);
  return __builtin_copysign(-e / (2.0 + e), x);
}
#else
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_sin(double x) { return anvil_loop_sin(x); }
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_cos(double x) { return anvil_loop_cos(x); }
[[maybe_unused]] static ANVIL_INLINE bool anvil_trig_far(double) { return false; }
[[maybe_unused]] static ANVIL_INLINE double anvil_fast_tanh(double x) { return __builtin_tanh(x); }
#endif
// A batched kernel's loop over items (see render_batched_kernel): vectorised across items
// when compiled with -fopenmp-simd -DANVIL_OMP_SIMD. Its strides stay run-time values (no
// interprocedural constant propagation): GCC 12 does not vectorise interleaved accesses
// whose group size is no power of two (a stage of 5 variables, read with stride 5), but
// does vectorise strided accesses of unknown stride.
#if defined(ANVIL_OMP_SIMD)
#define ANVIL_SIMD_ITEMS ANVIL_PRAGMA(omp simd)
#else
#define ANVIL_SIMD_ITEMS
#endif
#if defined(__GNUC__) && !defined(__clang__)
#define ANVIL_RUNTIME_STRIDES __attribute__((noipa))
#else
#define ANVIL_RUNTIME_STRIDES __attribute__((noinline))
#endif
#endif
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_arithmetic_is_spelled_by_the_table() {
        use crate::lower::IndexExpr;
        let ext = [7, 5, 100];
        let (i0, i1, i2) = (IndexExpr::var(0), IndexExpr::var(1), IndexExpr::var(2));
        let quotient = i2.div(3, &ext);
        let remainder = i2.modulo(3, &ext);
        let e = quotient.scale(-4).add(&remainder).add(&i0.scale(5)).add(&i1.scale(-1)).add_const(-2);
        // C++ reads it as the IR writes it.
        assert_eq!(e.spell(&CPP), e.to_string());
        for part in ["i0*5", "- i1", "(i2)/3", "(i2)%3", "- 2"] {
            assert!(e.spell(&CPP).contains(part), "{part} in {}", e.spell(&CPP));
        }
        assert_eq!(i1.scale(-1).spell(&CPP), "-i1");
        assert_eq!(IndexExpr::constant(-3).spell(&CPP), "-3");
        // Another language's table, another spelling.
        let statements = Statements {
            loop_var: "idx[{0}]",
            index_arithmetic: ["mul({0}, {1})", "div({0}, {1})", "rem({0}, {1})", "{0} + {1}", "{0} - {1}", "neg({0})"],
            ..CPP.statements
        };
        let other = Dialect { statements, ..CPP };
        assert_eq!(i0.scale(-2).add(&i2.modulo(3, &ext)).spell(&other), "neg(mul(idx[0], 2)) + rem(idx[2], 3)");
    }

    #[test]
    fn another_table_is_another_language() {
        // A C dialect with libm names and C casts: only the table changes.
        let c = Dialect { math: "", cast: ["((", ")(", "))"], int_min: ["INT_MIN", "LLONG_MIN"], ..CPP };
        assert_eq!(c.unary(UnaryOp::Sqrt, DType::F32, "x", false), "sqrtf(x)");
        assert_eq!(c.cast(DType::I32, DType::F64, "i"), "((double)(i))");
        assert_eq!(c.literal(Literal::Int(i64::MIN), DType::I64), "LLONG_MIN");
        assert_eq!(CPP.unary(UnaryOp::Sin, DType::F64, "x", true), "anvil_loop_sin(x)");
        assert_eq!(
            CPP.binary(BinaryOp::Add, DType::I32, "a", "b"),
            "static_cast<int>(static_cast<unsigned int>(a) + static_cast<unsigned int>(b))"
        );
        assert_eq!(CPP.literal(Literal::Float(f64::NAN), DType::F64), "__builtin_nan(\"\")");
        assert_eq!(CPP.literal(Literal::Float(-0.0), DType::F64), "(-0.0)");
        // Fast sine and cosine exist for doubles only; floats keep the loop functions.
        assert_eq!(CPP.fast_unary(UnaryOp::Cos, DType::F64, "x").as_deref(), Some("anvil_fast_cos(x)"));
        assert_eq!(CPP.fast_unary(UnaryOp::Sin, DType::F32, "x"), None);
        assert_eq!(CPP.fast_unary(UnaryOp::Tan, DType::F64, "x"), None);
        assert_eq!(CPP.raise("f", &CPP.trig_far("x")), "f |= anvil_trig_far(x);");
    }

    #[test]
    fn statements_come_from_templates() {
        assert_eq!(CPP.loop_head("i0", "1", "999"), "for (long long i0 = 1; i0 < 999; ++i0)");
        assert_eq!(CPP.pointer_param(DType::F32, false, "b2"), "const float* __restrict b2");
        assert_eq!(CPP.select("c", "a", "b"), "c ? a : b");
        assert_eq!(CPP.only_if(&CPP.call_value("f", &["a".into()]), &CPP.call("g", &["a".into()])), "if (f(a)) g(a);");
        // Braces in the pieces are text, not slots (a function body is full of them).
        let body = "  { x[0] = 1; } // {0}\n";
        assert_eq!(CPP.function("", "f", &["int* x".into()], body), format!("void f(int* x) {{\n{body}}}\n"));
        // CUDA's spellings: another table.
        let cuda = Dialect {
            restrict: "__restrict__",
            statements: Statements { function: "__global__ {0}void {1}({2}) {\n{3}}\n", ..CPP.statements },
            ..CPP
        };
        assert_eq!(cuda.pointer_param(DType::F64, true, "out"), "double* __restrict__ out");
        assert!(cuda.function("", "k", &[], "").starts_with("__global__ void k()"));
    }
}

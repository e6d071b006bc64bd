//! The target language's spellings, in one table.
//!
//! The kernel printer ([`super::kernel`]) decides what code to write: which temporaries,
//! loops and stores. How a type, a literal, a math function, a conversion or a qualifier is
//! spelled comes from a [`Dialect`]. The methods below spell the scalar operations from
//! the table, with the reference interpreter's semantics wherever the language leaves a case
//! undefined: integer arithmetic wraps, integer division by zero gives 0, a float converted
//! to an integer saturates (NaN gives 0), and `max`/`min` propagate NaN.
//!
//! C++, which the JIT and the AOT module compile, is [`CPP`]. Another C-like target (CUDA,
//! Metal) is another table with its own prelude, not another printer.
//!
//! ```
//! use anvil::{DType, render::dialect::CPP};
//! assert_eq!(CPP.type_name(DType::I64), "long long");
//! assert_eq!(CPP.literal(anvil::graph::Literal::Float(f64::INFINITY), DType::F32), "(__builtin_inff())");
//! assert_eq!(CPP.math("exp", DType::F32, "x"), "__builtin_expf(x)");
//! ```

use crate::dtype::DType;
use crate::graph::{scalar, BinaryOp, Literal, ReduceOp, UnaryOp};

/// Every spelling of a target language that the kernel printer uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dialect {
    /// The scalar type of `bool`, `i32`, `i64`, `f32` and `f64`, in that order.
    pub types: [&'static str; 5],
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
    /// NaN of a float type: before and after its suffix.
    pub nan: [&'static str; 2],
    /// Positive infinity of a float type: before and after its suffix.
    pub inf: [&'static str; 2],
    /// A conversion: before the type, between type and value, after the value.
    pub cast: [&'static str; 3],
}

/// C++17 as g++ and clang++ compile it, with compiler builtins for math (the JIT's
/// translation unit includes no header).
pub const CPP: Dialect = Dialect {
    types: ["bool", "int", "long long", "float", "double"],
    unsigned: ["unsigned int", "unsigned long long"],
    restrict: "__restrict",
    maybe_unused: "[[maybe_unused]]",
    i64_suffix: "LL",
    int_min: ["(-2147483647 - 1)", "(-9223372036854775807LL - 1)"],
    f32_suffix: "f",
    math: "__builtin_",
    loop_math: "anvil_loop_",
    nan: ["__builtin_nan", "(\"\")"],
    inf: ["__builtin_inf", "()"],
    cast: ["static_cast<", ">(", ")"],
};

impl Dialect {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}

//! The meaning of each elementwise primitive on one element.
//!
//! The interpreter and constant folding use these functions; the C++ renderer emits code
//! with the same semantics (same libm functions, same NaN rules, guarded integer division).
//! Float values are carried as `f64`; `F32` results are computed in `f32` and are exactly
//! representable. Integer values are carried as `i64` and wrapped to the node's width;
//! `bool` is 0 or 1.

use super::op::{BinaryOp, Literal, UnaryOp};
use crate::array::HostArray;
use crate::dtype::DType;

macro_rules! float_unary {
    ($op:expr, $x:expr) => {
        match $op {
            UnaryOp::Neg => -$x,
            UnaryOp::Recip => 1.0 / $x,
            UnaryOp::Sqrt => $x.sqrt(),
            UnaryOp::Exp => $x.exp(),
            UnaryOp::Log => $x.ln(),
            UnaryOp::Sin => $x.sin(),
            UnaryOp::Cos => $x.cos(),
            UnaryOp::Tan => $x.tan(),
            UnaryOp::Asin => $x.asin(),
            UnaryOp::Acos => $x.acos(),
            UnaryOp::Atan => $x.atan(),
            UnaryOp::Sinh => $x.sinh(),
            UnaryOp::Cosh => $x.cosh(),
            UnaryOp::Tanh => $x.tanh(),
            UnaryOp::Abs => $x.abs(),
            UnaryOp::Floor => $x.floor(),
            UnaryOp::Ceil => $x.ceil(),
        }
    };
}

macro_rules! float_binary {
    ($op:expr, $a:expr, $b:expr) => {{
        let (a, b) = ($a, $b);
        match $op {
            BinaryOp::Add => a + b,
            BinaryOp::Sub => a - b,
            BinaryOp::Mul => a * b,
            BinaryOp::Div => a / b,
            BinaryOp::Pow => a.powf(b),
            // NaN-propagating, as numpy's maximum/minimum: `(a > b || a != a) ? a : b`.
            BinaryOp::Max => {
                if a > b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Min => {
                if a < b || a.is_nan() {
                    a
                } else {
                    b
                }
            }
            BinaryOp::Atan2 => a.atan2(b),
            BinaryOp::Lt => (a < b) as u8 as _,
            BinaryOp::Le => (a <= b) as u8 as _,
            BinaryOp::Gt => (a > b) as u8 as _,
            BinaryOp::Ge => (a >= b) as u8 as _,
            BinaryOp::Eq => (a == b) as u8 as _,
            BinaryOp::Ne => (a != b) as u8 as _,
        }
    }};
}

/// `op(x)` for a float node of dtype `dtype`.
pub fn unary_float(op: UnaryOp, dtype: DType, x: f64) -> f64 {
    if dtype == DType::F32 {
        let x = x as f32;
        float_unary!(op, x) as f64
    } else {
        float_unary!(op, x)
    }
}

/// `op(x)` for an integer or bool node; float-only math goes through `f64`.
pub fn unary_int(op: UnaryOp, dtype: DType, x: i64) -> i64 {
    let r = match op {
        UnaryOp::Neg => x.wrapping_neg(),
        UnaryOp::Abs => x.wrapping_abs(),
        UnaryOp::Floor | UnaryOp::Ceil => x,
        _ => unary_float(op, DType::F64, x as f64) as i64,
    };
    wrap_int(dtype, r)
}

/// `op(a, b)` on float operands of dtype `dtype` (comparisons give 0 or 1).
pub fn binary_float(op: BinaryOp, dtype: DType, a: f64, b: f64) -> f64 {
    if dtype == DType::F32 {
        let r: f32 = float_binary!(op, a as f32, b as f32);
        r as f64
    } else {
        float_binary!(op, a, b)
    }
}

/// `op(a, b)` on integer or bool operands of dtype `dtype` (comparisons give 0 or 1).
///
/// Division truncates toward zero; division by zero gives 0 (defined here, unlike in C).
pub fn binary_int(op: BinaryOp, dtype: DType, a: i64, b: i64) -> i64 {
    let r = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => {
            if b == 0 {
                0
            } else {
                a.wrapping_div(b)
            }
        }
        BinaryOp::Max => a.max(b),
        BinaryOp::Min => a.min(b),
        BinaryOp::Pow | BinaryOp::Atan2 => binary_float(op, DType::F64, a as f64, b as f64) as i64,
        BinaryOp::Lt => (a < b) as i64,
        BinaryOp::Le => (a <= b) as i64,
        BinaryOp::Gt => (a > b) as i64,
        BinaryOp::Ge => (a >= b) as i64,
        BinaryOp::Eq => (a == b) as i64,
        BinaryOp::Ne => (a != b) as i64,
    };
    if op.is_comparison() {
        r
    } else {
        wrap_int(dtype, r)
    }
}

/// Wraps an integer to the width of `dtype` (`bool`: nonzero is 1).
pub fn wrap_int(dtype: DType, v: i64) -> i64 {
    match dtype {
        DType::I32 => v as i32 as i64,
        DType::Bool => (v != 0) as i64,
        _ => v,
    }
}

/// Rounds a float to `dtype` (`F32` or `F64`).
pub fn round_float(dtype: DType, v: f64) -> f64 {
    if dtype == DType::F32 {
        v as f32 as f64
    } else {
        v
    }
}

/// `v` converted to dtype `to`. Float to integer truncates toward zero and saturates:
/// values beyond the integer range give its minimum or maximum, NaN gives 0 (C++ leaves
/// these undefined; generated code follows this definition). Integer to integer wraps;
/// anything to `bool` is `!= 0`.
pub fn cast(to: DType, v: Literal) -> Literal {
    match v {
        Literal::Float(x) => match to {
            DType::Bool => Literal::Bool(x != 0.0),
            DType::I32 => Literal::Int(x as i32 as i64),
            DType::I64 => Literal::Int(x as i64),
            DType::F32 | DType::F64 => Literal::Float(round_float(to, x)),
        },
        Literal::Int(_) | Literal::Bool(_) => {
            let i = literal_int(v);
            literal(to, i as f64, i)
        }
    }
}

/// The literal of dtype `dtype` holding the float `f` (for float dtypes) or the integer `i`.
pub fn literal(dtype: DType, f: f64, i: i64) -> Literal {
    match dtype {
        DType::Bool => Literal::Bool(i != 0),
        DType::I32 | DType::I64 => Literal::Int(wrap_int(dtype, i)),
        DType::F32 | DType::F64 => Literal::Float(round_float(dtype, f)),
    }
}

/// The element at row-major position `k` of `a` as a literal of its dtype, or `None` past
/// the end.
///
/// ```
/// use anvil::HostArray;
/// use anvil::internals::graph::{scalar::literal_at, Literal};
/// let a = HostArray::I64(ndarray::arr2(&[[1i64, 2], [3, 4]]).into_dyn());
/// assert_eq!(literal_at(&a, 2), Some(Literal::Int(3)));
/// assert_eq!(literal_at(&a, 4), None);
/// ```
pub fn literal_at(a: &HostArray, k: usize) -> Option<Literal> {
    match a {
        HostArray::I64(_) => a.i64_at(k).map(Literal::Int),
        _ => a.f64_at(k).map(|v| literal_from_f64(a.dtype(), v)),
    }
}

/// The literal `v` converted to dtype `dtype` (as a weakly typed Rust number would be).
pub fn literal_from_f64(dtype: DType, v: f64) -> Literal {
    literal(dtype, v, v as i64)
}

/// The value of a literal as an integer (floats truncate).
pub fn literal_int(v: Literal) -> i64 {
    match v {
        Literal::Float(x) => x as i64,
        Literal::Int(x) => x,
        Literal::Bool(b) => b as i64,
    }
}

/// `op(v)` for a node of dtype `dtype`, as a literal.
pub fn unary_literal(op: UnaryOp, dtype: DType, v: Literal) -> Literal {
    if dtype.is_float() {
        Literal::Float(unary_float(op, dtype, v.as_f64()))
    } else {
        literal(dtype, 0.0, unary_int(op, dtype, literal_int(v)))
    }
}

/// `op(a, b)` for operands of dtype `operand`, as a literal (`bool` for comparisons).
pub fn binary_literal(op: BinaryOp, operand: DType, a: Literal, b: Literal) -> Literal {
    if operand.is_float() {
        let r = binary_float(op, operand, a.as_f64(), b.as_f64());
        if op.is_comparison() {
            Literal::Bool(r != 0.0)
        } else {
            Literal::Float(r)
        }
    } else {
        let r = binary_int(op, operand, literal_int(a), literal_int(b));
        let dtype = if op.is_comparison() { DType::Bool } else { operand };
        literal(dtype, 0.0, r)
    }
}

//! Elementwise ops: unary math, binary math with broadcasting and promotion, `where`.

use super::Tensor;
use crate::dtype::DType;
use crate::error::SourceLocation;
use crate::error::{Error, Result};
use crate::graph::{BinaryOp, Literal, Node, NodeRef, Op, UnaryOp};
use crate::shape::{broadcast, fmt_shape};

/// The dtype two operands meet at. A weak scalar adopts the other operand's dtype, unless
/// that would lose its value: a fractional number meeting an integer tensor gives `f64`,
/// and an integer that does not fit the integer dtype is an error (numpy's NEP 50 rule)
/// rather than a silent wrap.
fn meet(a: &Tensor, b: &Tensor) -> std::result::Result<DType, String> {
    let adopt = |lit: Literal, other: DType| {
        let integral = lit.as_f64().fract() == 0.0;
        let dtype = match other {
            d if d.is_float() => d,
            d if d.is_int() && integral => d,
            DType::Bool if integral => DType::I64,
            _ => DType::F64,
        };
        if dtype.is_int() && !fits(lit, dtype) {
            let value = match lit {
                Literal::Int(v) => v.to_string(),
                other => format!("{}", other.as_f64()),
            };
            return Err(format!(
                "the number {value} does not fit {dtype}, the other operand's dtype (cast one of them first)"
            ));
        }
        Ok(dtype)
    };
    match (a.weak_literal(), b.weak_literal()) {
        (Some(lit), None) => adopt(lit, b.dtype()),
        (None, Some(lit)) => adopt(lit, a.dtype()),
        _ => Ok(a.dtype().promote(b.dtype())),
    }
}

/// True if the integral literal `lit` is in the range of the integer dtype `dtype`.
fn fits(lit: Literal, dtype: DType) -> bool {
    let bits = 8 * dtype.size() as i32 - 1;
    match lit {
        Literal::Int(v) => dtype == DType::I64 || i32::try_from(v).is_ok(),
        Literal::Float(v) => v >= -(2f64.powi(bits)) && v < 2f64.powi(bits),
        Literal::Bool(_) => true,
    }
}

/// `node` cast to `dtype` and broadcast to `shape` (already checked compatible).
pub(super) fn to_operand(node: &NodeRef, dtype: DType, shape: &[usize]) -> NodeRef {
    let node = Node::make(Op::Cast, dtype, node.shape.clone(), vec![node.clone()]);
    expand_to(&node, shape)
}

/// Broadcasts `node` to `shape` (left-padding its shape with ones).
pub(super) fn expand_to(node: &NodeRef, shape: &[usize]) -> NodeRef {
    if node.shape == shape {
        return node.clone();
    }
    let mut padded = vec![1; shape.len() - node.shape.len()];
    padded.extend_from_slice(&node.shape);
    let reshaped = Node::make(Op::Reshape, node.dtype, padded, vec![node.clone()]);
    Node::make(Op::Expand, node.dtype, shape.to_vec(), vec![reshaped])
}

/// The ops that always compute in floating point (integer operands become `f64`).
fn float_only(op: UnaryOp) -> bool {
    !matches!(op, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil)
}

impl Tensor {
    #[track_caller]
    pub(crate) fn unary(&self, op: UnaryOp) -> Tensor {
        self.map_node(|n| {
            let dtype = if float_only(op) && !n.dtype.is_float() { DType::F64 } else { n.dtype };
            let x = Node::make(Op::Cast, dtype, n.shape.clone(), vec![n.clone()]);
            Ok(Node::make(Op::Unary(op), dtype, n.shape.clone(), vec![x]))
        })
    }

    /// `op(self, other)` with numpy broadcasting and dtype promotion.
    #[track_caller]
    pub(crate) fn binary(&self, other: &Tensor, op: BinaryOp, name: &'static str) -> Tensor {
        let mut dtype = match meet(self, other) {
            Ok(d) => d,
            Err(message) => return Tensor::from_error(Error::op_at(SourceLocation::caller(), name, message)),
        };
        if dtype == DType::Bool && matches!(op, BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul) {
            dtype = DType::I64;
        }
        if matches!(op, BinaryOp::Div | BinaryOp::Pow | BinaryOp::Atan2) && !dtype.is_float() {
            dtype = DType::F64;
        }
        self.binary_in(other, op, name, dtype)
    }

    /// `op(self, other)` computed in `dtype`, with numpy broadcasting.
    #[track_caller]
    fn binary_in(&self, other: &Tensor, op: BinaryOp, name: &'static str, dtype: DType) -> Tensor {
        let loc = SourceLocation::caller();
        let result = (|| -> Result<NodeRef> {
            let (a, b) = (self.node()?, other.node()?);
            let shape = broadcast(&a.shape, &b.shape).ok_or_else(|| {
                let (sa, sb) = (fmt_shape(&a.shape), fmt_shape(&b.shape));
                Error::op_at(loc, name, format!("shapes {sa} and {sb} cannot be broadcast together"))
            })?;
            super::check_shape(loc, name, &shape)?;
            let out_dtype = if op.is_comparison() { DType::Bool } else { dtype };
            let srcs = vec![to_operand(a, dtype, &shape), to_operand(b, dtype, &shape)];
            Ok(Node::make(Op::Binary(op), out_dtype, shape, srcs))
        })();
        result.map_or_else(Tensor::from_error, Tensor::from_node)
    }

    /// `-self`.
    #[track_caller]
    pub fn neg(&self) -> Tensor {
        if self.dtype() == DType::Bool {
            return self.cast(DType::I64).neg();
        }
        self.unary(UnaryOp::Neg)
    }
    /// `1 / self`.
    #[track_caller]
    pub fn recip(&self) -> Tensor {
        self.unary(UnaryOp::Recip)
    }
    /// `self * self`.
    #[track_caller]
    pub fn square(&self) -> Tensor {
        self.binary(self, BinaryOp::Mul, "square")
    }
    /// Square root.
    #[track_caller]
    pub fn sqrt(&self) -> Tensor {
        self.unary(UnaryOp::Sqrt)
    }
    /// `1 / sqrt(self)`.
    #[track_caller]
    pub fn rsqrt(&self) -> Tensor {
        self.sqrt().recip()
    }
    /// `e^self`.
    #[track_caller]
    pub fn exp(&self) -> Tensor {
        self.unary(UnaryOp::Exp)
    }
    /// Natural logarithm.
    #[track_caller]
    pub fn log(&self) -> Tensor {
        self.unary(UnaryOp::Log)
    }
    /// Sine.
    #[track_caller]
    pub fn sin(&self) -> Tensor {
        self.unary(UnaryOp::Sin)
    }
    /// Cosine.
    #[track_caller]
    pub fn cos(&self) -> Tensor {
        self.unary(UnaryOp::Cos)
    }
    /// Tangent.
    #[track_caller]
    pub fn tan(&self) -> Tensor {
        self.unary(UnaryOp::Tan)
    }
    /// Arc sine.
    #[track_caller]
    pub fn asin(&self) -> Tensor {
        self.unary(UnaryOp::Asin)
    }
    /// Arc cosine.
    #[track_caller]
    pub fn acos(&self) -> Tensor {
        self.unary(UnaryOp::Acos)
    }
    /// Arc tangent.
    #[track_caller]
    pub fn atan(&self) -> Tensor {
        self.unary(UnaryOp::Atan)
    }
    /// Hyperbolic sine.
    #[track_caller]
    pub fn sinh(&self) -> Tensor {
        self.unary(UnaryOp::Sinh)
    }
    /// Hyperbolic cosine.
    #[track_caller]
    pub fn cosh(&self) -> Tensor {
        self.unary(UnaryOp::Cosh)
    }
    /// Hyperbolic tangent.
    #[track_caller]
    pub fn tanh(&self) -> Tensor {
        self.unary(UnaryOp::Tanh)
    }
    /// `1 / (1 + e^-self)`.
    #[track_caller]
    pub fn sigmoid(&self) -> Tensor {
        (self.neg().exp() + 1.0).recip()
    }
    /// `self` where positive, else 0 (`where(x > 0, x, 0)`: its derivative at 0 is 0).
    #[track_caller]
    pub fn relu(&self) -> Tensor {
        self.gt(0.0).where_(self, 0.0)
    }
    /// Absolute value.
    #[track_caller]
    pub fn abs(&self) -> Tensor {
        self.unary(UnaryOp::Abs)
    }
    /// `-1`, `0` or `1` (in the tensor's dtype) by the sign of each element.
    #[track_caller]
    pub fn sign(&self) -> Tensor {
        let dtype = self.dtype();
        self.gt(0.0).cast(dtype) - self.lt(0.0).cast(dtype)
    }
    /// Round toward minus infinity.
    #[track_caller]
    pub fn floor(&self) -> Tensor {
        self.unary(UnaryOp::Floor)
    }
    /// Round toward plus infinity.
    #[track_caller]
    pub fn ceil(&self) -> Tensor {
        self.unary(UnaryOp::Ceil)
    }
    /// `self ^ exponent` (computed in floating point).
    #[track_caller]
    pub fn pow(&self, exponent: impl Into<Tensor>) -> Tensor {
        self.binary(&exponent.into(), BinaryOp::Pow, "pow")
    }
    /// `atan2(self, x)`: the angle of the point `(x, self)`.
    #[track_caller]
    pub fn atan2(&self, x: impl Into<Tensor>) -> Tensor {
        self.binary(&x.into(), BinaryOp::Atan2, "atan2")
    }
    /// Elementwise maximum (NaN wins, as numpy's `maximum`).
    #[track_caller]
    pub fn maximum(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Max, "maximum")
    }
    /// Elementwise minimum (NaN wins, as numpy's `minimum`).
    #[track_caller]
    pub fn minimum(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Min, "minimum")
    }
    /// Limits each element to `[lo, hi]`.
    #[track_caller]
    pub fn clip(&self, lo: impl Into<Tensor>, hi: impl Into<Tensor>) -> Tensor {
        self.maximum(lo).minimum(hi)
    }
    /// [`clip`](Self::clip) under tinygrad's name.
    #[track_caller]
    pub fn clamp(&self, lo: impl Into<Tensor>, hi: impl Into<Tensor>) -> Tensor {
        self.clip(lo, hi)
    }
    /// Integer division truncating toward zero (division by zero gives 0).
    #[track_caller]
    pub fn idiv(&self, other: impl Into<Tensor>) -> Tensor {
        let other = other.into();
        let dtype = match meet(self, &other) {
            Ok(d) => d,
            Err(message) => return Tensor::from_error(Error::op_at(SourceLocation::caller(), "idiv", message)),
        };
        if !dtype.is_int() && self.error().is_none() && other.error().is_none() {
            let message = format!("needs integer operands, got {} and {}", self.dtype(), other.dtype());
            return Tensor::from_error(Error::op_at(SourceLocation::caller(), "idiv", message));
        }
        self.binary_in(&other, BinaryOp::Div, "idiv", dtype)
    }

    /// Division rounding toward minus infinity, Python's `//`: integers stay integers (exact
    /// at any size; division by zero gives 0), floats give `floor(self / other)`.
    ///
    /// ```
    /// use anvil::{Tensor, ndarray::array};
    /// let a = Tensor::from_array(&array![7i64, -7, 7, -7]);
    /// let b = Tensor::from_array(&array![2i64, 2, -2, -2]);
    /// let q = anvil::eval(&[a.floor_div(&b)], &[]).unwrap().remove(0);
    /// assert_eq!(q.to_f64_vec(), vec![3.0, -4.0, -4.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn floor_div(&self, other: impl Into<Tensor>) -> Tensor {
        let other = other.into();
        let dtype = match meet(self, &other) {
            Ok(d) => d,
            Err(message) => return Tensor::from_error(Error::op_at(SourceLocation::caller(), "floor_div", message)),
        };
        if dtype.is_float() {
            return (self / &other).floor();
        }
        let dtype = if dtype == DType::Bool { DType::I64 } else { dtype };
        let (a, b) = (self.cast(dtype), other.cast(dtype));
        let q = a.idiv(&b);
        // Truncation rounds toward zero: step down where the remainder's sign differs from b's.
        let r = &a - &q * &b;
        let no = Tensor::full((), 0.0, DType::Bool);
        let step_down = b.ne(0.0).where_(r.ne(0.0).where_(r.lt(0.0).ne(b.lt(0.0)), &no), &no);
        step_down.where_(&q - 1.0, &q)
    }

    /// `self < other` (`bool`).
    #[track_caller]
    pub fn lt(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Lt, "lt")
    }
    /// `self <= other` (`bool`).
    #[track_caller]
    pub fn le(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Le, "le")
    }
    /// `self > other` (`bool`).
    #[track_caller]
    pub fn gt(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Gt, "gt")
    }
    /// `self >= other` (`bool`).
    #[track_caller]
    pub fn ge(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Ge, "ge")
    }
    /// `self == other` (`bool`).
    #[track_caller]
    pub fn eq(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Eq, "eq")
    }
    /// `self != other` (`bool`).
    #[track_caller]
    pub fn ne(&self, other: impl Into<Tensor>) -> Tensor {
        self.binary(&other.into(), BinaryOp::Ne, "ne")
    }

    /// `if self { a } else { b }` elementwise; `self` is the condition (any dtype: nonzero
    /// is true). All three broadcast together.
    ///
    /// ```
    /// use anvil::{Tensor, DType};
    /// let x = Tensor::input(0, 4, DType::F64);
    /// let relu = x.gt(0.0).where_(&x, 0.0);
    /// assert_eq!(relu.shape(), &[4]);
    /// ```
    #[track_caller]
    pub fn where_(&self, a: impl Into<Tensor>, b: impl Into<Tensor>) -> Tensor {
        let loc = SourceLocation::caller();
        let (a, b) = (a.into(), b.into());
        let result = (|| -> Result<NodeRef> {
            let (c, x, y) = (self.node()?, a.node()?, b.node()?);
            let shape = broadcast(&c.shape, &x.shape).and_then(|s| broadcast(&s, &y.shape)).ok_or_else(|| {
                Error::op_at(
                    loc,
                    "where",
                    format!(
                        "condition {}, and branches {} and {} cannot be broadcast together",
                        fmt_shape(&c.shape),
                        fmt_shape(&x.shape),
                        fmt_shape(&y.shape)
                    ),
                )
            })?;
            super::check_shape(loc, "where", &shape)?;
            let dtype = meet(&a, &b).map_err(|message| Error::op_at(loc, "where", message))?;
            let srcs =
                vec![to_operand(c, DType::Bool, &shape), to_operand(x, dtype, &shape), to_operand(y, dtype, &shape)];
            Ok(Node::make(Op::Where, dtype, shape, srcs))
        })();
        result.map_or_else(Tensor::from_error, Tensor::from_node)
    }
}

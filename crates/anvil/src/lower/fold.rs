//! Folding of kernel expressions as they are built: the kernel-level twin of the graph's
//! rewrite rules, for what only shows at one element.
//!
//! A straight-line kernel reads captured constants at constant indices (the identity seeds
//! of a Jacobian, masks of a stacked Hessian), so their elements are known while building:
//! `x * 1`, `x + 0`, `mask ? x : 0` with a known mask and operations on known values fold
//! away here. The rules are those of the graph's simplifier with the same semantics
//! (`x + 0` is `x`, as there); `x * 0` is *not* folded, because a captured zero is data,
//! not a structural zero, and the reference interpreter multiplies by it.
//!
//! The zeros of a derivative's seed are structural ([`Expr::Zero`]): a product or quotient
//! with one is that zero, adding one changes nothing, its negation and conversion stay
//! structural, and a sum over one is one (the interpreter's rules, `graph::eval`). So a
//! seed's zero removes every product it takes part in, as the graph's `x * 0` rule does for
//! a `Const` zero. Padding around a seed is not structural: it is data in the interpreter.

use super::kernel::{Expr, ExprId};
use crate::dtype::DType;
use crate::graph::{identity_operand, scalar, BinaryOp, Literal, ReduceOp, UnaryOp};

/// What an expression simplifies to.
#[derive(Debug, PartialEq)]
pub enum Folded {
    /// An expression already built.
    To(ExprId),
    /// A literal.
    Const(Literal, DType),
    /// A structural zero of the dtype.
    Zero(DType),
}

/// The simpler equivalent of `expr` (whose operands are in `exprs`), if a rule applies.
pub fn fold(expr: &Expr, exprs: &[Expr]) -> Option<Folded> {
    structural_zeros(expr, exprs).or_else(|| fold_constants(expr, exprs)).or_else(|| identities(expr, exprs))
}

/// The value of a literal; a structural zero is the literal 0 where no rule of its own
/// applies (`exp` of it is 1).
fn literal(exprs: &[Expr], id: ExprId) -> Option<Literal> {
    match exprs[id] {
        Expr::Const(v, _) => Some(v),
        Expr::Zero(dtype) => Some(scalar::literal(dtype, 0.0, 0)),
        _ => None,
    }
}

/// Products, quotients and sums that a structural zero decides.
fn structural_zeros(expr: &Expr, exprs: &[Expr]) -> Option<Folded> {
    let is_zero = |id: ExprId| matches!(exprs[id], Expr::Zero(_));
    match *expr {
        Expr::Binary(BinaryOp::Mul, a, b, _) if is_zero(a) || is_zero(b) => {
            Some(Folded::To(if is_zero(a) { a } else { b }))
        }
        Expr::Binary(BinaryOp::Div, a, _, _) if is_zero(a) => Some(Folded::To(a)),
        Expr::Binary(BinaryOp::Add, a, b, _) if is_zero(a) => Some(Folded::To(b)),
        Expr::Binary(BinaryOp::Add | BinaryOp::Sub, a, b, _) if is_zero(b) => Some(Folded::To(a)),
        Expr::Unary(UnaryOp::Neg, x, _) if is_zero(x) => Some(Folded::To(x)),
        Expr::Cast(x, _, to) if is_zero(x) => Some(Folded::Zero(to)),
        Expr::Reduce { op: ReduceOp::Sum, body, dtype, .. } if is_zero(body) => Some(Folded::Zero(dtype)),
        _ => None,
    }
}

/// Operations on literals are literals; a `where` with a known condition is one branch.
fn fold_constants(expr: &Expr, exprs: &[Expr]) -> Option<Folded> {
    let value = |id| literal(exprs, id);
    match *expr {
        Expr::Unary(op, x, dtype) => Some(Folded::Const(scalar::unary_literal(op, dtype, value(x)?), dtype)),
        Expr::Binary(op, a, b, dtype) => {
            let result = if op.is_comparison() { DType::Bool } else { dtype };
            Some(Folded::Const(scalar::binary_literal(op, dtype, value(a)?, value(b)?), result))
        }
        Expr::Cast(x, _, to) => Some(Folded::Const(scalar::cast(to, value(x)?), to)),
        Expr::Where(cond, a, b, _) => Some(Folded::To(if value(cond)?.is(0.0) { b } else { a })),
        _ => None,
    }
}

/// The graph's identities ([`identity_operand`]: `x + 0`, `x * 1`, ...) and `c ? x : x`.
fn identities(expr: &Expr, exprs: &[Expr]) -> Option<Folded> {
    match *expr {
        Expr::Binary(op, x, y, _) => {
            identity_operand(op, literal(exprs, x), literal(exprs, y)).map(|i| Folded::To([x, y][i]))
        }
        Expr::Where(_, a, b, _) if a == b => Some(Folded::To(a)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::graph::{BinaryOp, UnaryOp};

    fn f64_const(v: f64) -> Expr {
        Expr::Const(Literal::Float(v), DType::F64)
    }

    #[test]
    fn literals_fold_and_identities_drop() {
        let x = Expr::Unary(UnaryOp::Sin, 0, DType::F64);
        let exprs = vec![f64_const(2.0), f64_const(0.0), f64_const(1.0), x];
        let sqrt = Expr::Unary(UnaryOp::Sqrt, 0, DType::F64);
        assert_eq!(fold(&sqrt, &exprs), Some(Folded::Const(Literal::Float(2f64.sqrt()), DType::F64)));
        let less = Expr::Binary(BinaryOp::Lt, 1, 0, DType::F64);
        assert_eq!(fold(&less, &exprs), Some(Folded::Const(Literal::Bool(true), DType::Bool)));
        assert_eq!(fold(&Expr::Binary(BinaryOp::Add, 1, 3, DType::F64), &exprs), Some(Folded::To(3)));
        assert_eq!(fold(&Expr::Binary(BinaryOp::Mul, 3, 2, DType::F64), &exprs), Some(Folded::To(3)));
        assert_eq!(fold(&Expr::Where(1, 0, 3, DType::F64), &exprs), Some(Folded::To(3)));
    }

    #[test]
    fn a_captured_zero_still_multiplies() {
        // NaN * 0 is NaN in the reference interpreter: the product must stay.
        let exprs = vec![f64_const(0.0), Expr::Unary(UnaryOp::Log, 0, DType::F64)];
        assert_eq!(fold(&Expr::Binary(BinaryOp::Mul, 1, 0, DType::F64), &exprs), None);
    }

    #[test]
    fn structural_zeros_remove_what_they_take_part_in() {
        let x = Expr::Unary(UnaryOp::Log, 1, DType::F64);
        let exprs = vec![Expr::Zero(DType::F64), f64_const(2.0), x];
        let binary = |op, a, b| fold(&Expr::Binary(op, a, b, DType::F64), &exprs);
        assert_eq!(binary(BinaryOp::Mul, 2, 0), Some(Folded::To(0)));
        assert_eq!(binary(BinaryOp::Div, 0, 2), Some(Folded::To(0)));
        assert_eq!(binary(BinaryOp::Add, 0, 2), Some(Folded::To(2)));
        assert_eq!(binary(BinaryOp::Sub, 2, 0), Some(Folded::To(2)));
        // 0 - x is -x, not a zero; max(0, x) is computed.
        assert_eq!(binary(BinaryOp::Sub, 0, 2), None);
        assert_eq!(binary(BinaryOp::Max, 0, 2), None);
        // Elsewhere it is the literal 0.
        assert_eq!(binary(BinaryOp::Mul, 0, 1), Some(Folded::To(0)));
        assert_eq!(binary(BinaryOp::Add, 1, 0), Some(Folded::To(1)));
        let exp = fold(&Expr::Unary(UnaryOp::Exp, 0, DType::F64), &exprs);
        assert_eq!(exp, Some(Folded::Const(Literal::Float(1.0), DType::F64)));
        assert_eq!(fold(&Expr::Cast(0, DType::F64, DType::F32), &exprs), Some(Folded::Zero(DType::F32)));
        assert_eq!(fold(&Expr::Unary(UnaryOp::Neg, 0, DType::F64), &exprs), Some(Folded::To(0)));
    }
}

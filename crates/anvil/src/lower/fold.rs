//! Folding of kernel expressions as they are built: the kernel-level twin of the graph's
//! rewrite rules, for what only shows at one element.
//!
//! A straight-line kernel reads captured constants at constant indices (the identity seeds
//! of a Jacobian, masks of a stacked Hessian), so their elements are known while building:
//! `x * 1`, `x + 0`, `mask ? x : 0` with a known mask and operations on known values fold
//! away here. The rules are those of the graph's simplifier with the same semantics
//! (`x + 0` is `x`, as there); `x * 0` is *not* folded, because a captured zero is data,
//! not a structural zero, and the reference interpreter multiplies by it.

use super::kernel::{Expr, ExprId};
use crate::dtype::DType;
use crate::graph::{identity_operand, scalar, Literal};

/// What an expression simplifies to.
#[derive(Debug, PartialEq)]
pub enum Folded {
    /// An expression already built.
    To(ExprId),
    /// A literal.
    Const(Literal, DType),
}

/// The simpler equivalent of `expr` (whose operands are in `exprs`), if a rule applies.
pub fn fold(expr: &Expr, exprs: &[Expr]) -> Option<Folded> {
    fold_constants(expr, exprs).or_else(|| identities(expr, exprs))
}

fn literal(exprs: &[Expr], id: ExprId) -> Option<Literal> {
    match exprs[id] {
        Expr::Const(v, _) => Some(v),
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
}

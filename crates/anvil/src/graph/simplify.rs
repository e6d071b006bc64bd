//! Local rewrite rules applied whenever a node is built.
//!
//! One mechanism: an ordered list of rules, each looking at a would-be node `op(srcs)` and
//! returning a simpler equivalent node, or `None`. Because every node passes through here,
//! graphs from tracing and from transforms (whose derivatives are full of structural zeros)
//! stay small.
//!
//! Note: `x * 0` folds to `0` when the zero is a structural constant, as in the original;
//! this drops the NaN/inf that `x` could carry, on purpose.

use super::node::{intern, NodeRef};
use super::op::{BinaryOp, Literal, Op, ReduceOp, UnaryOp};
use super::scalar;
use crate::dtype::DType;

type Rule = fn(&Op, DType, &[usize], &[NodeRef]) -> Option<NodeRef>;

const RULES: &[Rule] =
    &[drop_identity_ops, fold_constants, merge_movement, algebraic_identities, absorb_negations, special_powers];

/// The simplest equivalent of `op(srcs)`, if a rule applies.
pub fn simplify(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    RULES.iter().find_map(|rule| rule(op, dtype, shape, srcs))
}

/// A constant node of the given dtype and shape.
pub fn constant(value: Literal, dtype: DType, shape: &[usize]) -> NodeRef {
    intern(Op::Const(value), dtype, shape.to_vec(), Vec::new())
}

fn literal_of(node: &NodeRef) -> Option<Literal> {
    match node.op {
        Op::Const(v) => Some(v),
        _ => None,
    }
}

fn is_const(node: &NodeRef, v: f64) -> bool {
    literal_of(node).is_some_and(|l| l.is(v))
}

fn same(node: &NodeRef, dtype: DType, shape: &[usize]) -> Option<NodeRef> {
    (node.dtype == dtype && node.shape == shape).then(|| node.clone())
}

/// Ops that do nothing: reshape to the same shape, cast to the same dtype, empty pads, ...
fn drop_identity_ops(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    let src = srcs.first()?;
    let identity = match op {
        Op::Reshape | Op::Expand | Op::Cast => true,
        Op::Permute(perm) => perm.iter().enumerate().all(|(i, &p)| i == p),
        Op::Pad(pads) => pads.iter().all(|&p| p == (0, 0)),
        Op::Shrink(ranges) => ranges.iter().zip(&src.shape).all(|(&r, &n)| r == (0, n)),
        Op::Flip(axes) => axes.is_empty() || axes.iter().all(|&a| src.shape[a] <= 1),
        Op::Reduce(_, axes) => axes.iter().all(|&a| src.shape[a] == 1),
        _ => false,
    };
    if identity {
        same(src, dtype, shape)
    } else {
        None
    }
}

/// Ops whose operands are all constants become constants; so does a gather from an empty
/// source (every position clamps to nothing: 0, as the interpreter defines it).
fn fold_constants(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    if matches!(op, Op::Gather) && srcs[0].numel() == 0 {
        return Some(constant(scalar::literal(dtype, 0.0, 0), dtype, shape));
    }
    if let Op::Where = op {
        let cond = literal_of(&srcs[0])?;
        return same(&srcs[if cond.is(0.0) { 2 } else { 1 }], dtype, shape);
    }
    let values: Vec<Literal> = srcs.iter().map(literal_of).collect::<Option<_>>()?;
    let folded = match op {
        Op::Unary(u) => Some(scalar::unary_literal(*u, dtype, values[0])),
        Op::Binary(b) => Some(scalar::binary_literal(*b, srcs[0].dtype, values[0], values[1])),
        Op::Cast => Some(scalar::cast(dtype, values[0])),
        Op::Reshape | Op::Permute(_) | Op::Expand | Op::Shrink(_) | Op::Flip(_) => Some(values[0]),
        Op::Pad(_) if values[0].is(0.0) => Some(values[0]),
        Op::Reduce(ReduceOp::Max | ReduceOp::Min, _) if shape.iter().product::<usize>() > 0 => {
            let count: usize = srcs[0].shape.iter().product();
            (count > 0).then_some(values[0])
        }
        Op::Reduce(ReduceOp::Sum, _) if values[0].is(0.0) => Some(values[0]),
        _ => None,
    }?;
    Some(constant(folded, dtype, shape))
}

/// Chains of the same movement op collapse into one.
fn merge_movement(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    let src = srcs.first()?;
    match (op, &src.op) {
        (Op::Reshape, Op::Reshape) | (Op::Expand, Op::Expand) => {
            let inner = &src.srcs[0];
            Some(intern_simplified(op.clone(), dtype, shape, vec![inner.clone()]))
        }
        (Op::Permute(outer), Op::Permute(inner)) => {
            let perm = outer.iter().map(|&p| inner[p]).collect();
            Some(intern_simplified(Op::Permute(perm), dtype, shape, vec![src.srcs[0].clone()]))
        }
        (Op::Unary(UnaryOp::Neg), Op::Unary(UnaryOp::Neg)) => same(&src.srcs[0], dtype, shape),
        (Op::Shrink(ranges), Op::Pad(pads)) => shrink_of_pad(ranges, pads, &src.srcs[0], dtype, shape),
        _ => None,
    }
}

/// A window of a zero-padded tensor that lies wholly in the padding is zeros, and one that
/// lies wholly inside the tensor is a window of the tensor: the element picked from a unit
/// direction (a one-hot tangent, padded around its 1) is then a constant, which the rules
/// above fold into every product and sum it meets.
fn shrink_of_pad(
    ranges: &[(usize, usize)],
    pads: &[(usize, usize)],
    inner: &NodeRef,
    dtype: DType,
    shape: &[usize],
) -> Option<NodeRef> {
    let axes = || ranges.iter().zip(pads).zip(&inner.shape);
    if axes().any(|((&(a, b), &(before, _)), &n)| a < b && (b <= before || a >= before + n)) {
        return Some(constant(scalar::literal(dtype, 0.0, 0), dtype, shape));
    }
    if axes().all(|((&(a, b), &(before, _)), &n)| a >= before && b <= before + n) {
        let inside = axes().map(|((&(a, b), &(before, _)), _)| (a - before, b - before)).collect();
        return Some(intern_simplified(Op::Shrink(inside), dtype, shape, vec![inner.clone()]));
    }
    None
}

fn intern_simplified(op: Op, dtype: DType, shape: &[usize], srcs: Vec<NodeRef>) -> NodeRef {
    simplify(&op, dtype, shape, &srcs).unwrap_or_else(|| intern(op, dtype, shape.to_vec(), srcs))
}

/// Which operand `op(a, b)` equals when `a` or `b` is a known literal: `x + 0`, `0 + x`,
/// `x - 0`, `x * 1`, `1 * x`, `x / 1`. The graph's simplifier and the kernels' folding
/// (`lower::fold`) share this rule.
///
/// ```
/// use anvil::internals::graph::{identity_operand, BinaryOp, Literal};
/// assert_eq!(identity_operand(BinaryOp::Mul, Some(Literal::Float(1.0)), None), Some(1));
/// assert_eq!(identity_operand(BinaryOp::Sub, Some(Literal::Float(0.0)), None), None); // 0 - x
/// ```
pub fn identity_operand(op: BinaryOp, a: Option<Literal>, b: Option<Literal>) -> Option<usize> {
    let is = |v: Option<Literal>, c: f64| v.is_some_and(|l| l.is(c));
    match op {
        BinaryOp::Add if is(b, 0.0) => Some(0),
        BinaryOp::Add if is(a, 0.0) => Some(1),
        BinaryOp::Sub if is(b, 0.0) => Some(0),
        BinaryOp::Mul if is(b, 1.0) => Some(0),
        BinaryOp::Mul if is(a, 1.0) => Some(1),
        BinaryOp::Div if is(b, 1.0) => Some(0),
        _ => None,
    }
}

/// The identities above, and `x * 0` with a structural zero.
fn algebraic_identities(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    let Op::Binary(b) = op else { return None };
    let (x, y) = (&srcs[0], &srcs[1]);
    if let Some(i) = identity_operand(*b, literal_of(x), literal_of(y)) {
        return same(&srcs[i], dtype, shape);
    }
    match b {
        BinaryOp::Mul if is_const(x, 0.0) || is_const(y, 0.0) => {
            Some(constant(scalar::literal(dtype, 0.0, 0), dtype, shape))
        }
        _ => None,
    }
}

/// Negations absorbed by the operation that reads them: `a + (-b) = a - b`,
/// `(-a) + b = b - a`, `a - (-b) = a + b`, `(-a)(-b) = ab` and `(-a)c = a(-c)` for a constant
/// `c`. Each is exact: IEEE arithmetic rounds symmetrically (and defines `a - b` as
/// `a + (-b)`), and wrapping integer arithmetic is a ring. Derivatives are full of such
/// negations (the Rosenbrock Hessian's diagonal: 17 operations, 15 with them absorbed).
fn absorb_negations(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    let Op::Binary(binary) = op else { return None };
    let negated = |n: &NodeRef| matches!(n.op, Op::Unary(UnaryOp::Neg)).then(|| n.srcs[0].clone());
    let negative = |c: &NodeRef| {
        let value = scalar::unary_literal(UnaryOp::Neg, c.dtype, literal_of(c)?);
        Some(constant(value, c.dtype, &c.shape))
    };
    let make = |op: BinaryOp, a: NodeRef, b: NodeRef| Some(intern_simplified(Op::Binary(op), dtype, shape, vec![a, b]));
    let (x, y) = (&srcs[0], &srcs[1]);
    match (binary, negated(x), negated(y)) {
        (BinaryOp::Add, _, Some(b)) => make(BinaryOp::Sub, x.clone(), b),
        (BinaryOp::Add, Some(a), None) => make(BinaryOp::Sub, y.clone(), a),
        (BinaryOp::Sub, _, Some(b)) => make(BinaryOp::Add, x.clone(), b),
        (BinaryOp::Mul, Some(a), Some(b)) => make(BinaryOp::Mul, a, b),
        (BinaryOp::Mul, Some(a), None) => make(BinaryOp::Mul, a, negative(y)?),
        (BinaryOp::Mul, None, Some(b)) => make(BinaryOp::Mul, negative(x)?, b),
        _ => None,
    }
}

/// `pow(x, c)` for the constant exponents whose power has an exact, cheaper form. Besides
/// the speed, `pow(x, 0.5)` must not stay a `pow`: GCC vectorises it as `sqrt` (which
/// differs at `-inf` and `-0`) but calls `pow` in scalar loop tails, so one program would
/// disagree with itself. Its replacement keeps `pow`'s values there: `pow(-inf, 0.5) = inf`,
/// `pow(-0, 0.5) = +0`.
fn special_powers(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Option<NodeRef> {
    let Op::Binary(BinaryOp::Pow) = op else { return None };
    let exponent = literal_of(&srcs[1])?.as_f64();
    let x = &srcs[0];
    let make = |op: Op, dtype: DType, srcs: Vec<NodeRef>| intern_simplified(op, dtype, shape, srcs);
    let float = |v: f64| constant(scalar::literal_from_f64(dtype, v), dtype, shape);
    if exponent == 0.0 {
        Some(float(1.0))
    } else if exponent == 1.0 {
        same(x, dtype, shape)
    } else if exponent == 2.0 {
        Some(make(Op::Binary(BinaryOp::Mul), dtype, vec![x.clone(), x.clone()]))
    } else if exponent == -1.0 {
        Some(make(Op::Unary(UnaryOp::Recip), dtype, vec![x.clone()]))
    } else if exponent == 0.5 {
        let root = make(Op::Unary(UnaryOp::Sqrt), dtype, vec![x.clone()]);
        let positive_root = make(Op::Unary(UnaryOp::Abs), dtype, vec![root]);
        let minus_inf = make(Op::Binary(BinaryOp::Eq), DType::Bool, vec![x.clone(), float(f64::NEG_INFINITY)]);
        Some(make(Op::Where, dtype, vec![minus_inf, float(f64::INFINITY), positive_root]))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Tensor;

    /// Equal values: the same bits, or both NaN.
    fn same(x: Literal, y: Literal) -> bool {
        match (x, y) {
            (Literal::Float(a), Literal::Float(b)) => a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
            (Literal::Int(a), Literal::Int(b)) => a == b,
            _ => false,
        }
    }

    #[test]
    fn absorbed_negations_are_exact_for_every_dtype_and_special_value() {
        let floats = [
            0.0,
            -0.0,
            1.0,
            -1.5,
            0.1,
            3.0,
            1e-310,
            -3e-320,
            1e308,
            -1.7e308,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
        ];
        let ints = [0, 1, -1, 7, i32::MIN as i64, i32::MAX as i64, i64::MIN, i64::MAX];
        for dtype in [DType::F64, DType::F32, DType::I32, DType::I64] {
            let values: Vec<Literal> = if dtype.is_float() {
                floats.iter().map(|&v| scalar::cast(dtype, Literal::Float(v))).collect()
            } else {
                ints.iter().map(|&v| scalar::cast(dtype, Literal::Int(v))).collect()
            };
            let neg = |v| scalar::unary_literal(UnaryOp::Neg, dtype, v);
            let op = |op, a, b| scalar::binary_literal(op, dtype, a, b);
            for &a in &values {
                for &b in &values {
                    let cases = [
                        (op(BinaryOp::Add, a, neg(b)), op(BinaryOp::Sub, a, b)),
                        (op(BinaryOp::Add, neg(a), b), op(BinaryOp::Sub, b, a)),
                        (op(BinaryOp::Sub, a, neg(b)), op(BinaryOp::Add, a, b)),
                        (op(BinaryOp::Mul, neg(a), neg(b)), op(BinaryOp::Mul, a, b)),
                        (op(BinaryOp::Mul, neg(a), b), op(BinaryOp::Mul, a, neg(b))),
                    ];
                    for (k, (before, after)) in cases.into_iter().enumerate() {
                        assert!(same(before, after), "{dtype:?} rule {k}: {a:?}, {b:?}: {before:?} != {after:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn negations_are_absorbed_when_nodes_are_built() {
        let (x, y) = (Tensor::input(0, 3, DType::F64), Tensor::input(1, 3, DType::F64));
        let op = |t: Tensor| t.node().unwrap().op.clone();
        assert_eq!(op(&x + &(-&y)), Op::Binary(BinaryOp::Sub));
        assert_eq!(op(&(-&x) + &y), Op::Binary(BinaryOp::Sub));
        assert_eq!(op(&x - &(-&y)), Op::Binary(BinaryOp::Add));
        let product = (-&x) * 3.0;
        let node = product.node().unwrap();
        assert_eq!(node.op, Op::Binary(BinaryOp::Mul));
        assert!(node.srcs.iter().any(|s| literal_of(s).is_some_and(|v| v.is(-3.0))), "{node:?}");
        let both = (-&x) * (-&y);
        assert!(both.node().unwrap().srcs.iter().all(|s| !matches!(s.op, Op::Unary(UnaryOp::Neg))));
        // A negation read by anything else stays.
        assert_eq!(op((-&x).sin()), Op::Unary(UnaryOp::Sin));
        assert!(matches!((-&x).node().unwrap().op, Op::Unary(UnaryOp::Neg)));
    }

    #[test]
    fn a_window_of_the_padding_is_zeros_and_one_inside_the_padded_tensor_is_its_window() {
        let x = Tensor::input(0, 3, DType::F64);
        let padded = x.pad(&[(2, 4)]); // 0 0 x0 x1 x2 0 0 0 0
        let node = |t: Tensor| t.node().unwrap().clone();
        for window in [(0, 2), (5, 9), (6, 7)] {
            let zeros = node(padded.shrink(&[window]));
            assert!(literal_of(&zeros).is_some_and(|v| v.is(0.0)), "{window:?}: {zeros:?}");
            assert_eq!(zeros.shape, vec![window.1 - window.0]);
        }
        let inside = node(padded.shrink(&[(3, 5)]));
        assert_eq!(inside.op, Op::Shrink(vec![(1, 3)]));
        assert_eq!(inside.srcs[0].id(), node(x.clone()).id());
        assert_eq!(node(padded.shrink(&[(2, 5)])).id(), node(x.clone()).id());
        // A window across the edge stays a window of the padded tensor.
        assert!(matches!(node(padded.shrink(&[(1, 3)])).op, Op::Shrink(_)));
        // An element of a unit direction is a constant: 1 at its position, 0 elsewhere.
        let unit = Tensor::full([1], 1.0, DType::F64).pad(&[(2, 3)]);
        for k in 0..6 {
            let element = node(unit.shrink(&[(k, k + 1)]));
            assert!(literal_of(&element).is_some_and(|v| v.is(if k == 2 { 1.0 } else { 0.0 })), "{k}: {element:?}");
        }
        // In two dimensions, one axis in the padding suffices.
        let m = Tensor::input(1, [2, 2], DType::F64).pad(&[(1, 0), (0, 2)]);
        assert!(literal_of(&node(m.shrink(&[(1, 3), (2, 4)]))).is_some());
        assert!(matches!(node(m.shrink(&[(1, 3), (0, 2)])).op, Op::Input(_)));
    }
}

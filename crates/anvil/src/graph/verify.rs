//! The graph verifier: whether a node is well formed (its operands' dtypes and shapes fit
//! its op), one rule per primitive. The tensor layer only ever builds well-formed nodes;
//! graphs from elsewhere (a loaded file) are checked node by node before use.

use super::node::NodeRef;
use super::op::{Literal, Op, UnaryOp};
use crate::dtype::DType;
use crate::shape::{checked_numel, fmt_shape};

/// `Ok(())` if `op` applied to `srcs` can produce a node of `dtype` and `shape`, else why not.
///
/// ```
/// use anvil::internals::graph::{verify, Op, UnaryOp};
/// use anvil::{DType, Tensor};
/// let x = Tensor::input(0, [3], DType::F64);
/// let srcs = [x.node().unwrap().clone()];
/// assert!(verify::check_node(&Op::Unary(UnaryOp::Sin), DType::F64, &[3], &srcs).is_ok());
/// assert!(verify::check_node(&Op::Unary(UnaryOp::Sin), DType::F64, &[4], &srcs).is_err());
/// ```
pub fn check_node(op: &Op, dtype: DType, shape: &[usize], srcs: &[NodeRef]) -> Result<(), String> {
    if checked_numel(shape).is_none() {
        return Err(crate::shape::too_large(shape));
    }
    let arity = match op {
        Op::Input(_) | Op::Const(_) | Op::Array(_) => 0,
        Op::Unary(_) | Op::Cast | Op::Reduce(..) | Op::Reshape | Op::Permute(_) | Op::Expand => 1,
        Op::Pad(_) | Op::Shrink(_) | Op::Flip(_) => 1,
        Op::Binary(_) | Op::Gather | Op::ScatterAdd => 2,
        Op::Where => 3,
    };
    if srcs.len() != arity {
        return Err(format!("`{}` takes {arity} operand(s), {} given", op.name(), srcs.len()));
    }
    let src = |i: usize| &srcs[i];
    let same_shape = |i: usize| expect(src(i).shape == shape, || shapes("operand", &src(i).shape, shape));
    let same_dtype =
        |i: usize| expect(src(i).dtype == dtype, || format!("operand {} is {}, not {dtype}", i, src(i).dtype));
    match op {
        Op::Input(_) => Ok(()),
        Op::Const(value) => expect(literal_fits(*value, dtype), || format!("the literal {value:?} is not a {dtype}")),
        Op::Array(a) => expect(a.data.dtype() == dtype && a.data.shape() == shape, || {
            format!("the array is {} of shape {}", a.data.dtype(), fmt_shape(a.data.shape()))
        }),
        Op::Unary(u) => {
            same_shape(0)?;
            same_dtype(0)?;
            let integer_op = matches!(u, UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Floor | UnaryOp::Ceil);
            expect(dtype.is_float() || integer_op, || format!("`{u:?}` needs a float operand, got {dtype}"))
        }
        Op::Binary(b) => {
            same_shape(0)?;
            same_shape(1)?;
            expect(src(0).dtype == src(1).dtype, || {
                format!("operands of `{b:?}` differ: {} and {}", src(0).dtype, src(1).dtype)
            })?;
            let result = if b.is_comparison() { DType::Bool } else { src(0).dtype };
            expect(dtype == result, || format!("`{b:?}` of {} gives {result}, not {dtype}", src(0).dtype))
        }
        Op::Where => {
            (0..3).try_for_each(same_shape)?;
            expect(src(0).dtype == DType::Bool, || "the condition must be bool".into())?;
            same_dtype(1)?;
            same_dtype(2)
        }
        Op::Cast => same_shape(0),
        Op::Reduce(_, axes) => {
            same_dtype(0)?;
            let rank = src(0).shape.len();
            let sorted = axes.windows(2).all(|w| w[0] < w[1]) && axes.iter().all(|&a| a < rank);
            expect(sorted, || format!("axes {axes:?} are not increasing axes of rank {rank}"))?;
            let kept: Vec<usize> =
                src(0).shape.iter().enumerate().map(|(d, &n)| if axes.contains(&d) { 1 } else { n }).collect();
            expect(kept == shape, || shapes("the result", shape, &kept))
        }
        Op::Reshape => {
            same_dtype(0)?;
            expect(src(0).numel() == shape.iter().product::<usize>(), || shapes("a reshape", &src(0).shape, shape))
        }
        Op::Permute(perm) => {
            same_dtype(0)?;
            let mut seen = perm.clone();
            seen.sort_unstable();
            let valid = seen == (0..src(0).shape.len()).collect::<Vec<_>>();
            expect(valid, || format!("{perm:?} is not a permutation of {} axes", src(0).shape.len()))?;
            let permuted: Vec<usize> = perm.iter().map(|&p| src(0).shape[p]).collect();
            expect(permuted == shape, || shapes("the result", shape, &permuted))
        }
        Op::Expand => {
            same_dtype(0)?;
            let fits =
                src(0).shape.len() == shape.len() && src(0).shape.iter().zip(shape).all(|(&s, &t)| s == t || s == 1);
            expect(fits, || shapes("an expand", &src(0).shape, shape))
        }
        Op::Pad(pads) => {
            same_dtype(0)?;
            let padded: Option<Vec<usize>> = (pads.len() == src(0).shape.len())
                .then(|| src(0).shape.iter().zip(pads).map(|(&n, &(b, a))| n.checked_add(b)?.checked_add(a)).collect())
                .flatten();
            expect(padded.as_deref() == Some(shape), || {
                format!("padding {pads:?} of {} does not give {}", fmt_shape(&src(0).shape), fmt_shape(shape))
            })
        }
        Op::Shrink(ranges) => {
            same_dtype(0)?;
            let fits = ranges.len() == src(0).shape.len()
                && ranges.iter().zip(&src(0).shape).all(|(&(s, e), &n)| s <= e && e <= n)
                && ranges.iter().map(|&(s, e)| e - s).eq(shape.iter().copied());
            expect(fits, || {
                format!("ranges {ranges:?} of {} do not give {}", fmt_shape(&src(0).shape), fmt_shape(shape))
            })
        }
        Op::Flip(axes) => {
            same_dtype(0)?;
            same_shape(0)?;
            expect(axes.iter().all(|&a| a < shape.len()), || format!("axes {axes:?} are out of range"))
        }
        Op::Gather => {
            same_dtype(0)?;
            expect(src(1).dtype.is_int(), || "indices must be integers".into())?;
            expect(src(1).shape == shape, || shapes("the indices", &src(1).shape, shape))
        }
        Op::ScatterAdd => {
            same_dtype(0)?;
            expect(src(1).dtype.is_int() && dtype != DType::Bool, || {
                "indices must be integers, values numbers".into()
            })?;
            expect(src(0).shape == src(1).shape, || shapes("values and indices", &src(0).shape, &src(1).shape))
        }
    }
}

fn expect(ok: bool, why: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(why())
    }
}

fn shapes(what: &str, got: &[usize], want: &[usize]) -> String {
    format!("{what} has shape {}, not {}", fmt_shape(got), fmt_shape(want))
}

/// True if `value` is a literal of a node of `dtype` (as the tensor layer makes them).
fn literal_fits(value: Literal, dtype: DType) -> bool {
    match value {
        Literal::Float(v) => dtype.is_float() && (dtype == DType::F64 || v.is_nan() || (v as f32) as f64 == v),
        Literal::Int(v) => dtype == DType::I64 || (dtype == DType::I32 && i32::try_from(v).is_ok()),
        Literal::Bool(_) => dtype == DType::Bool,
    }
}

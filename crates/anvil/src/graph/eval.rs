//! The reference interpreter: evaluates any graph on host arrays.
//!
//! It is deliberately simple (one array per node, ndarray for movement) and independent of
//! lowering, so that it can serve as the oracle every other stage is tested against.
//!
//! It follows the structural zeros of derivative seeds ([`super::ConstArray::structural`])
//! element by element, with the rules generated code folds them by (`lower::fold`): a
//! product or quotient of one is zero, adding one changes nothing, negating or converting
//! one gives one, a sum of only such zeros is one. Every other operation sees the value 0.

use super::node::{map_graph, NodeRef};
use super::op::{BinaryOp, Literal, Op, ReduceOp, UnaryOp};
use super::scalar;
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::{Error, Result};
use ndarray::{ArrayD, Axis, IxDyn, Slice, Zip};

/// Evaluates `outputs` for the given values of the graph's inputs (`inputs[n]` is input
/// `n`); [`crate::tensor::eval`] does the same for tensors.
pub fn eval_nodes(outputs: &[NodeRef], inputs: &[HostArray]) -> Result<Vec<HostArray>> {
    // Each node's value, with the mask of its structural zeros (if it has any).
    let values = map_graph(outputs, |node, srcs: &[&(Value, Option<Mask>)]| -> Result<(Value, Option<Mask>)> {
        // The interpreter holds every value as 64-bit numbers.
        let what = || format!("evaluating `{}` of shape {:?} with the interpreter", node.op.name(), node.shape);
        crate::array::check_alloc(what, node.numel(), 8)?;
        let src_values: Vec<&Value> = srcs.iter().map(|s| &s.0).collect();
        let value = eval_node(node, &src_values, inputs)?;
        let src_zeros: Vec<Option<&Mask>> = srcs.iter().map(|s| s.1.as_ref()).collect();
        let (value, mask) = structural_zeros(node, &src_values, &src_zeros, value)?;
        Ok((value, mask.filter(|m| m.iter().any(|&z| z))))
    })?;
    Ok(values.iter().zip(outputs).map(|(v, o)| v.0.to_host(o.dtype)).collect())
}

/// A node's value: floats as `f64`, integers and bools as `i64`.
#[derive(Clone, Debug)]
enum Value {
    F(ArrayD<f64>),
    I(ArrayD<i64>),
}

macro_rules! map_value {
    ($value:expr, $a:ident => $body:expr) => {
        match $value {
            Value::F($a) => Value::F($body),
            Value::I($a) => Value::I($body),
        }
    };
}

impl Value {
    fn from_host(host: &HostArray) -> Self {
        match host {
            HostArray::F64(a) => Value::F(a.clone()),
            HostArray::F32(a) => Value::F(a.mapv(|v| v as f64)),
            HostArray::I64(a) => Value::I(a.clone()),
            HostArray::I32(a) => Value::I(a.mapv(|v| v as i64)),
            HostArray::Bool(a) => Value::I(a.mapv(|v| v as i64)),
        }
    }

    fn to_host(&self, dtype: DType) -> HostArray {
        let f = |a: &ArrayD<f64>| a.as_standard_layout().into_owned();
        let i = |a: &ArrayD<i64>| a.as_standard_layout().into_owned();
        match (self, dtype) {
            (Value::F(a), DType::F64) => HostArray::F64(f(a)),
            (Value::F(a), DType::F32) => HostArray::F32(f(a).mapv(|v| v as f32)),
            (Value::I(a), DType::I64) => HostArray::I64(i(a)),
            (Value::I(a), DType::I32) => HostArray::I32(i(a).mapv(|v| v as i32)),
            (Value::I(a), DType::Bool) => HostArray::Bool(i(a).mapv(|v| v != 0)),
            (Value::F(a), _) => Value::I(a.mapv(|v| v as i64)).to_host(dtype),
            (Value::I(a), _) => Value::F(a.mapv(|v| v as f64)).to_host(dtype),
        }
    }

    fn filled(value: Literal, dtype: DType, shape: &[usize]) -> Self {
        if dtype.is_float() {
            Value::F(ArrayD::from_elem(IxDyn(shape), value.as_f64()))
        } else {
            Value::I(ArrayD::from_elem(IxDyn(shape), scalar::literal_int(value)))
        }
    }

    /// The value as floats (integers convert).
    fn floats(&self) -> ArrayD<f64> {
        match self {
            Value::F(a) => a.clone(),
            Value::I(a) => a.mapv(|v| v as f64),
        }
    }
}

fn eval_node(node: &NodeRef, srcs: &[&Value], inputs: &[HostArray]) -> Result<Value> {
    let (dtype, shape) = (node.dtype, node.shape.as_slice());
    Ok(match &node.op {
        Op::Input(input) => {
            let n = &input.index;
            let host = inputs.get(*n).ok_or_else(|| Error::ArgumentCount {
                function: "<graph>".into(),
                expected: n + 1,
                got: inputs.len(),
            })?;
            if host.shape() != shape || host.dtype() != dtype {
                return Err(Error::InputMismatch {
                    function: "<graph>".into(),
                    index: *n,
                    expected: format!("{dtype} array of shape {shape:?}"),
                    got: format!("{} array of shape {:?}", host.dtype(), host.shape()),
                });
            }
            Value::from_host(host)
        }
        Op::Const(v) => Value::filled(*v, dtype, shape),
        Op::Array(a) => Value::from_host(&a.data),
        Op::Unary(op) => match srcs[0] {
            Value::F(a) => Value::F(a.mapv(|x| scalar::unary_float(*op, dtype, x))),
            Value::I(a) => Value::I(a.mapv(|x| scalar::unary_int(*op, dtype, x))),
        },
        Op::Binary(op) => {
            let operand = node.srcs[0].dtype;
            match (srcs[0], srcs[1]) {
                (Value::F(a), Value::F(b)) => {
                    let r = Zip::from(a).and(b).map_collect(|&x, &y| scalar::binary_float(*op, operand, x, y));
                    if op.is_comparison() {
                        Value::I(r.mapv(|v| v as i64))
                    } else {
                        Value::F(r)
                    }
                }
                (Value::I(a), Value::I(b)) => {
                    Value::I(Zip::from(a).and(b).map_collect(|&x, &y| scalar::binary_int(*op, operand, x, y)))
                }
                _ => unreachable!("binary operands are promoted to one dtype when traced"),
            }
        }
        Op::Where => {
            let Value::I(cond) = srcs[0] else { unreachable!("where's condition is bool") };
            match (srcs[1], srcs[2]) {
                (Value::F(a), Value::F(b)) => {
                    Value::F(Zip::from(cond).and(a).and(b).map_collect(|&c, &x, &y| if c != 0 { x } else { y }))
                }
                (Value::I(a), Value::I(b)) => {
                    Value::I(Zip::from(cond).and(a).and(b).map_collect(|&c, &x, &y| if c != 0 { x } else { y }))
                }
                _ => unreachable!("where's branches are promoted to one dtype when traced"),
            }
        }
        Op::Cast => cast(srcs[0], dtype),
        Op::Reduce(op, axes) => reduce(*op, dtype, srcs[0], axes),
        Op::Reshape => map_value!(srcs[0], a => a
            .as_standard_layout()
            .into_owned()
            .into_shape_with_order(IxDyn(shape))
            .expect("reshape keeps the element count")),
        Op::Permute(perm) => map_value!(srcs[0], a => a.clone().permuted_axes(IxDyn(perm))),
        Op::Expand => {
            map_value!(srcs[0], a => a.broadcast(IxDyn(shape)).expect("expand of extent-1 axes").to_owned())
        }
        Op::Pad(pads) => map_value!(srcs[0], a => pad(a, pads, shape)),
        Op::Shrink(ranges) => map_value!(srcs[0], a => a
            .slice_each_axis(|ax| Slice::from(ranges[ax.axis.index()].0..ranges[ax.axis.index()].1))
            .to_owned()),
        Op::Gather => {
            let index = int_values(srcs[1]);
            map_value!(srcs[0], a => {
                let flat: Vec<_> = a.iter().cloned().collect();
                let pick = |i: i64| flat.get(clamp_index(i, flat.len())).cloned().unwrap_or_default();
                ArrayD::from_shape_vec(IxDyn(shape), index.iter().map(|&i| pick(i)).collect()).expect("index shape")
            })
        }
        Op::ScatterAdd => {
            let index = int_values(srcs[1]);
            let len: usize = shape.iter().product();
            match srcs[0] {
                Value::F(v) => {
                    let mut out = vec![0.0; len];
                    for (x, &i) in v.iter().zip(&index) {
                        if len > 0 {
                            let k = clamp_index(i, len);
                            out[k] = scalar::binary_float(super::op::BinaryOp::Add, dtype, out[k], *x);
                        }
                    }
                    Value::F(ArrayD::from_shape_vec(IxDyn(shape), out).expect("scatter shape"))
                }
                Value::I(v) => {
                    let mut out = vec![0i64; len];
                    for (x, &i) in v.iter().zip(&index) {
                        if len > 0 {
                            let k = clamp_index(i, len);
                            out[k] = scalar::binary_int(super::op::BinaryOp::Add, dtype, out[k], *x);
                        }
                    }
                    Value::I(ArrayD::from_shape_vec(IxDyn(shape), out).expect("scatter shape"))
                }
            }
        }
        Op::Flip(axes) => map_value!(srcs[0], a => {
            let mut a = a.clone();
            for &ax in axes {
                a.invert_axis(Axis(ax));
            }
            a
        }),
    })
}

/// Where a node's elements are structural zeros.
type Mask = ArrayD<bool>;

/// The node's value with the rules of structural zeros applied, and where it has them
/// (`src_zeros`: its operands'; `value`: as computed from the operands' values).
fn structural_zeros(
    node: &NodeRef,
    srcs: &[&Value],
    src_zeros: &[Option<&Mask>],
    value: Value,
) -> Result<(Value, Option<Mask>)> {
    let seed = matches!(&node.op, Op::Array(a) if a.structural);
    if !seed && src_zeros.iter().all(Option::is_none) {
        return Ok((value, None));
    }
    let none = || ArrayD::from_elem(IxDyn(&node.shape), false);
    let of = |k: usize| src_zeros[k].cloned().unwrap_or_else(|| ArrayD::from_elem(IxDyn(&node.srcs[k].shape), false));
    let both = |a: Mask, b: &Mask| Zip::from(&a).and(b).map_collect(|&x, &y| x && y);
    let either = |a: Mask, b: &Mask| Zip::from(&a).and(b).map_collect(|&x, &y| x || y);
    Ok(match &node.op {
        Op::Array(_) => (value.clone(), Some(value.floats().mapv(|v| v == 0.0))),
        op if op.is_movement() || matches!(op, Op::Gather) => {
            let Some(mask) = src_zeros[0] else { return Ok((value, None)) };
            let as_ints = Value::I(mask.mapv(|z| z as i64));
            let mut moved_srcs = srcs.to_vec();
            moved_srcs[0] = &as_ints;
            let moved = int_values(&eval_node(node, &moved_srcs, &[])?);
            let mask = ArrayD::from_shape_vec(IxDyn(&node.shape), moved.iter().map(|&z| z != 0).collect());
            (value, Some(mask.expect("a moved mask has the node's shape")))
        }
        Op::Binary(BinaryOp::Mul) => {
            let mask = either(of(0), &of(1));
            (zero_where(value, &mask), Some(mask))
        }
        Op::Binary(BinaryOp::Div) | Op::Unary(UnaryOp::Neg) | Op::Cast => {
            let mask = of(0);
            (zero_where(value, &mask), Some(mask))
        }
        Op::Binary(BinaryOp::Add) => {
            let (a, b) = (of(0), of(1));
            // Adding a structural zero changes nothing: the other operand, exactly.
            let value = select(&a, srcs[1], &select(&b, srcs[0], &value));
            (value, Some(both(a, &b)))
        }
        Op::Binary(BinaryOp::Sub) => {
            let (a, b) = (of(0), of(1));
            let value = select(&b, srcs[0], &value);
            (value, Some(both(a, &b)))
        }
        Op::Where => (value, Some(both(of(1), &of(2)))),
        Op::Reduce(ReduceOp::Sum, axes) => {
            // Its zeros add nothing (a sum starts at +0, which adding +0 keeps); it is one
            // if all its elements are.
            let all = reduce(ReduceOp::Min, DType::I64, &Value::I(of(0).mapv(|z| z as i64)), axes);
            let mask = int_values(&all).iter().map(|&z| z != 0).collect();
            (value, Some(ArrayD::from_shape_vec(IxDyn(&node.shape), mask).expect("reduced shape")))
        }
        _ => (value, Some(none())),
    })
}

/// `value` with its masked elements 0.
fn zero_where(value: Value, mask: &Mask) -> Value {
    map_value!(value, a => Zip::from(&a).and(mask).map_collect(|&x, &z| if z { Default::default() } else { x }))
}

/// `if mask { a } else { b }`, element by element.
fn select(mask: &Mask, a: &Value, b: &Value) -> Value {
    match (a, b) {
        (Value::F(a), Value::F(b)) => {
            Value::F(Zip::from(mask).and(a).and(b).map_collect(|&z, &x, &y| if z { x } else { y }))
        }
        (Value::I(a), Value::I(b)) => {
            Value::I(Zip::from(mask).and(a).and(b).map_collect(|&z, &x, &y| if z { x } else { y }))
        }
        _ => unreachable!("the operands of an addition have one dtype"),
    }
}

/// The integer values of an index operand, in row-major order.
fn int_values(v: &Value) -> Vec<i64> {
    match v {
        Value::I(a) => a.iter().copied().collect(),
        Value::F(a) => a.iter().map(|&x| x as i64).collect(),
    }
}

/// An index clamped into `0..len` (the rule generated code follows too).
pub fn clamp_index(i: i64, len: usize) -> usize {
    i.clamp(0, len.saturating_sub(1) as i64) as usize
}

fn cast(value: &Value, to: DType) -> Value {
    if to.is_float() {
        Value::F(value.floats().mapv(|v| scalar::round_float(to, v)))
    } else {
        match value {
            Value::F(a) => Value::I(a.mapv(|v| scalar::literal_int(scalar::cast(to, Literal::Float(v))))),
            Value::I(a) => Value::I(a.mapv(|v| scalar::wrap_int(to, v))),
        }
    }
}

fn pad<T: Clone + Default>(a: &ArrayD<T>, pads: &[(usize, usize)], shape: &[usize]) -> ArrayD<T> {
    let mut out = ArrayD::from_elem(IxDyn(shape), T::default());
    out.slice_each_axis_mut(|ax| {
        let (before, _) = pads[ax.axis.index()];
        Slice::from(before..before + a.shape()[ax.axis.index()])
    })
    .assign(a);
    out
}

fn reduce(op: ReduceOp, dtype: DType, src: &Value, axes: &[usize]) -> Value {
    let mut shape = src_shape(src);
    for &a in axes {
        shape[a] = 1;
    }
    let identity = reduce_identity(op, dtype);
    let mut out = Value::filled(identity, dtype, &shape);
    let combine = super::op::BinaryOp::from(op);
    // Visit source elements in row-major order, folding each into its output slot.
    let src_shape = src_shape(src);
    let mut index = vec![0usize; src_shape.len()];
    let total: usize = src_shape.iter().product();
    for _ in 0..total {
        let mut out_index = index.clone();
        for &a in axes {
            out_index[a] = 0;
        }
        match (&mut out, src) {
            (Value::F(o), Value::F(s)) => {
                o[out_index.as_slice()] =
                    scalar::binary_float(combine, dtype, o[out_index.as_slice()], s[index.as_slice()])
            }
            (Value::I(o), Value::I(s)) => {
                o[out_index.as_slice()] =
                    scalar::binary_int(combine, dtype, o[out_index.as_slice()], s[index.as_slice()])
            }
            _ => unreachable!("a reduction keeps its source's dtype"),
        }
        for d in (0..index.len()).rev() {
            index[d] += 1;
            if index[d] < src_shape[d] {
                break;
            }
            index[d] = 0;
        }
    }
    out
}

fn src_shape(v: &Value) -> Vec<usize> {
    match v {
        Value::F(a) => a.shape().to_vec(),
        Value::I(a) => a.shape().to_vec(),
    }
}

/// The value a reduction starts from (the result for an empty reduction).
pub fn reduce_identity(op: ReduceOp, dtype: DType) -> Literal {
    let (f, i) = match (op, dtype) {
        (ReduceOp::Sum, _) => (0.0, 0),
        (ReduceOp::Prod, _) => (1.0, 1),
        (ReduceOp::Max, DType::I32) => (0.0, i32::MIN as i64),
        (ReduceOp::Min, DType::I32) => (0.0, i32::MAX as i64),
        (ReduceOp::Max, DType::Bool) => (0.0, 0),
        (ReduceOp::Min, DType::Bool) => (0.0, 1),
        (ReduceOp::Max, _) => (f64::NEG_INFINITY, i64::MIN),
        (ReduceOp::Min, _) => (f64::INFINITY, i64::MAX),
    };
    scalar::literal(dtype, f, i)
}

//! Graphs as data: the `graph` part of anvil's function and tensor files (see
//! `docs/function-format.md`). Decoding treats its input as untrusted: every node is
//! checked by [`super::verify`] before it is built.

use super::node::{toposort, Node, NodeRef};
use super::op::{BinaryOp, ConstArray, InputRef, Literal, Op, ReduceOp, TraceId, UnaryOp};
use super::verify;
use crate::array::HostArray;
use crate::dtype::DType;
use crate::error::{Error, Result};
use base64::Engine;
use ndarray::{ArrayD, IxDyn};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;

/// A graph: its nodes (operands before users), the captured arrays they refer to, and which
/// nodes are its outputs.
#[derive(Serialize, Deserialize)]
pub struct GraphDoc {
    /// The nodes, each referring to earlier nodes by position.
    pub nodes: Vec<NodeDoc>,
    /// Captured constant arrays, referred to by `array` nodes.
    pub arrays: Vec<ArrayDoc>,
    /// Positions of the output nodes.
    pub outputs: Vec<usize>,
}

/// One node: op, result dtype and shape, operands.
#[derive(Serialize, Deserialize)]
pub struct NodeDoc {
    /// The primitive and its parameters.
    #[serde(flatten)]
    pub op: OpDoc,
    /// Result dtype (`bool`, `i32`, `i64`, `f32`, `f64`).
    pub dtype: String,
    /// Result shape.
    pub shape: Vec<usize>,
    /// Positions of the operands (earlier nodes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub srcs: Vec<usize>,
}

/// A primitive op with its parameters.
#[derive(Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum OpDoc {
    Input {
        index: usize,
    },
    Const {
        literal: LiteralDoc,
    },
    Array {
        array: usize,
        /// A derivative's seed (see [`ConstArray`]); absent in files of earlier versions.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        structural: bool,
    },
    Unary {
        function: String,
    },
    Binary {
        function: String,
    },
    Where,
    Cast,
    Reduce {
        function: String,
        axes: Vec<usize>,
    },
    Reshape,
    Permute {
        perm: Vec<usize>,
    },
    Expand,
    Pad {
        pads: Vec<(usize, usize)>,
    },
    Shrink {
        ranges: Vec<(usize, usize)>,
    },
    Flip {
        axes: Vec<usize>,
    },
    Gather,
    ScatterAdd,
}

/// A scalar constant, exactly (floats by their IEEE-754 bits).
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[allow(missing_docs)]
pub enum LiteralDoc {
    Float { bits: u64 },
    Int { value: i64 },
    Bool { value: bool },
}

/// A captured array: dtype, shape, and its elements in row-major order as little-endian
/// bytes, base64-encoded.
#[derive(Serialize, Deserialize)]
pub struct ArrayDoc {
    /// Element dtype.
    pub dtype: String,
    /// Shape.
    pub shape: Vec<usize>,
    /// Base64 of the little-endian element bytes.
    pub data: String,
}

const UNARY: [(UnaryOp, &str); 17] = [
    (UnaryOp::Neg, "neg"),
    (UnaryOp::Recip, "recip"),
    (UnaryOp::Sqrt, "sqrt"),
    (UnaryOp::Exp, "exp"),
    (UnaryOp::Log, "log"),
    (UnaryOp::Sin, "sin"),
    (UnaryOp::Cos, "cos"),
    (UnaryOp::Tan, "tan"),
    (UnaryOp::Asin, "asin"),
    (UnaryOp::Acos, "acos"),
    (UnaryOp::Atan, "atan"),
    (UnaryOp::Sinh, "sinh"),
    (UnaryOp::Cosh, "cosh"),
    (UnaryOp::Tanh, "tanh"),
    (UnaryOp::Abs, "abs"),
    (UnaryOp::Floor, "floor"),
    (UnaryOp::Ceil, "ceil"),
];

const BINARY: [(BinaryOp, &str); 14] = [
    (BinaryOp::Add, "add"),
    (BinaryOp::Sub, "sub"),
    (BinaryOp::Mul, "mul"),
    (BinaryOp::Div, "div"),
    (BinaryOp::Pow, "pow"),
    (BinaryOp::Max, "max"),
    (BinaryOp::Min, "min"),
    (BinaryOp::Atan2, "atan2"),
    (BinaryOp::Lt, "lt"),
    (BinaryOp::Le, "le"),
    (BinaryOp::Gt, "gt"),
    (BinaryOp::Ge, "ge"),
    (BinaryOp::Eq, "eq"),
    (BinaryOp::Ne, "ne"),
];

const REDUCE: [(ReduceOp, &str); 4] =
    [(ReduceOp::Sum, "sum"), (ReduceOp::Prod, "prod"), (ReduceOp::Max, "max"), (ReduceOp::Min, "min")];

const DTYPES: [DType; 5] = [DType::Bool, DType::I32, DType::I64, DType::F32, DType::F64];

fn name_of<T: PartialEq + Copy>(table: &[(T, &'static str)], value: T) -> String {
    table.iter().find(|(v, _)| *v == value).map(|(_, n)| n.to_string()).expect("every op is in its table")
}

fn lookup<T: Copy>(table: &[(T, &'static str)], name: &str, what: &str) -> Result<T> {
    table.iter().find(|(_, n)| *n == name).map(|(v, _)| *v).ok_or_else(|| invalid(format!("unknown {what} `{name}`")))
}

/// The dtype named `name` (as [`DType::name`] spells it).
pub fn parse_dtype(name: &str) -> Result<DType> {
    DTYPES.into_iter().find(|d| d.name() == name).ok_or_else(|| invalid(format!("unknown dtype `{name}`")))
}

/// An [`Error::Deserialize`].
pub fn invalid(message: impl Into<String>) -> Error {
    Error::Deserialize { message: message.into() }
}

/// The graph computing `outputs`, as data. Returns it and the inputs it reads (`index`,
/// dtype, shape), in order of first appearance.
pub fn encode(outputs: &[NodeRef]) -> (GraphDoc, Vec<(usize, DType, Vec<usize>)>) {
    let order = toposort(outputs);
    let position: HashMap<u64, usize> = order.iter().enumerate().map(|(i, n)| (n.id(), i)).collect();
    let mut arrays: Vec<ArrayDoc> = Vec::new();
    let mut array_index: HashMap<*const HostArray, usize> = HashMap::new();
    let mut inputs = Vec::new();
    let nodes = order
        .iter()
        .map(|node| {
            let op = match &node.op {
                Op::Input(input) => {
                    inputs.push((input.index, node.dtype, node.shape.clone()));
                    OpDoc::Input { index: input.index }
                }
                Op::Const(v) => OpDoc::Const { literal: literal_doc(*v) },
                Op::Array(a) => {
                    let next = arrays.len();
                    let index = *array_index.entry(Arc::as_ptr(&a.data)).or_insert_with(|| {
                        arrays.push(array_doc(&a.data));
                        next
                    });
                    OpDoc::Array { array: index, structural: a.structural }
                }
                Op::Unary(u) => OpDoc::Unary { function: name_of(&UNARY, *u) },
                Op::Binary(b) => OpDoc::Binary { function: name_of(&BINARY, *b) },
                Op::Where => OpDoc::Where,
                Op::Cast => OpDoc::Cast,
                Op::Reduce(r, axes) => OpDoc::Reduce { function: name_of(&REDUCE, *r), axes: axes.clone() },
                Op::Reshape => OpDoc::Reshape,
                Op::Permute(perm) => OpDoc::Permute { perm: perm.clone() },
                Op::Expand => OpDoc::Expand,
                Op::Pad(pads) => OpDoc::Pad { pads: pads.clone() },
                Op::Shrink(ranges) => OpDoc::Shrink { ranges: ranges.clone() },
                Op::Flip(axes) => OpDoc::Flip { axes: axes.clone() },
                Op::Gather => OpDoc::Gather,
                Op::ScatterAdd => OpDoc::ScatterAdd,
            };
            let srcs = node.srcs.iter().map(|s| position[&s.id()]).collect();
            NodeDoc { op, dtype: node.dtype.name().into(), shape: node.shape.clone(), srcs }
        })
        .collect();
    let outputs = outputs.iter().map(|o| position[&o.id()]).collect();
    (GraphDoc { nodes, arrays, outputs }, inputs)
}

fn literal_doc(v: Literal) -> LiteralDoc {
    match v {
        Literal::Float(x) => LiteralDoc::Float { bits: x.to_bits() },
        Literal::Int(value) => LiteralDoc::Int { value },
        Literal::Bool(value) => LiteralDoc::Bool { value },
    }
}

fn array_doc(a: &HostArray) -> ArrayDoc {
    let bytes: Vec<u8> = match a {
        HostArray::Bool(x) => x.iter().map(|&v| v as u8).collect(),
        HostArray::I32(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        HostArray::I64(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        HostArray::F32(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
        HostArray::F64(x) => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
    };
    ArrayDoc {
        dtype: a.dtype().name().into(),
        shape: a.shape().to_vec(),
        data: base64::engine::general_purpose::STANDARD.encode(bytes),
    }
}

/// The graph `doc` describes, its inputs made part of the trace `trace`. Every node is
/// verified; a malformed document is an [`Error::Deserialize`] saying where.
pub fn decode(doc: &GraphDoc, trace: TraceId) -> Result<Vec<NodeRef>> {
    let arrays: Vec<Arc<HostArray>> =
        doc.arrays.iter().map(|a| decode_array(a).map(Arc::new)).collect::<Result<_>>()?;
    let mut nodes: Vec<NodeRef> = Vec::with_capacity(doc.nodes.len());
    for (i, n) in doc.nodes.iter().enumerate() {
        let at = |message: String| invalid(format!("node {i}: {message}"));
        let srcs = n
            .srcs
            .iter()
            .map(|&s| nodes.get(s).cloned().ok_or_else(|| at(format!("operand {s} is not an earlier node"))))
            .collect::<Result<Vec<_>>>()?;
        let dtype = parse_dtype(&n.dtype).map_err(|e| at(e.to_string()))?;
        let op = decode_op(&n.op, &arrays, trace).map_err(|e| at(e.to_string()))?;
        verify::check_node(&op, dtype, &n.shape, &srcs).map_err(|m| at(format!("`{}`: {m}", op.name())))?;
        nodes.push(Node::make(op, dtype, n.shape.clone(), srcs));
    }
    doc.outputs
        .iter()
        .map(|&o| nodes.get(o).cloned().ok_or_else(|| invalid(format!("output {o} is not a node"))))
        .collect()
}

fn decode_op(op: &OpDoc, arrays: &[Arc<HostArray>], trace: TraceId) -> Result<Op> {
    Ok(match op {
        OpDoc::Input { index } => Op::Input(InputRef { index: *index, trace }),
        OpDoc::Const { literal } => Op::Const(match literal {
            LiteralDoc::Float { bits } => Literal::Float(f64::from_bits(*bits)),
            LiteralDoc::Int { value } => Literal::Int(*value),
            LiteralDoc::Bool { value } => Literal::Bool(*value),
        }),
        OpDoc::Array { array, structural } => {
            let a = arrays.get(*array).ok_or_else(|| invalid(format!("array {array} does not exist")))?;
            Op::Array(ConstArray { data: a.clone(), structural: *structural })
        }
        OpDoc::Unary { function } => Op::Unary(lookup(&UNARY, function, "unary function")?),
        OpDoc::Binary { function } => Op::Binary(lookup(&BINARY, function, "binary function")?),
        OpDoc::Where => Op::Where,
        OpDoc::Cast => Op::Cast,
        OpDoc::Reduce { function, axes } => Op::Reduce(lookup(&REDUCE, function, "reduction")?, axes.clone()),
        OpDoc::Reshape => Op::Reshape,
        OpDoc::Permute { perm } => Op::Permute(perm.clone()),
        OpDoc::Expand => Op::Expand,
        OpDoc::Pad { pads } => Op::Pad(pads.clone()),
        OpDoc::Shrink { ranges } => Op::Shrink(ranges.clone()),
        OpDoc::Flip { axes } => Op::Flip(axes.clone()),
        OpDoc::Gather => Op::Gather,
        OpDoc::ScatterAdd => Op::ScatterAdd,
    })
}

fn decode_array(a: &ArrayDoc) -> Result<HostArray> {
    let dtype = parse_dtype(&a.dtype)?;
    let count = crate::shape::checked_numel(&a.shape).ok_or_else(|| invalid(crate::shape::too_large(&a.shape)))?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(&a.data)
        .map_err(|e| invalid(format!("array data is not base64: {e}")))?;
    if bytes.len() != count * dtype.size() {
        return Err(invalid(format!(
            "an array of {count} {dtype} elements needs {} bytes, the file has {}",
            count * dtype.size(),
            bytes.len()
        )));
    }
    let shape = &a.shape;
    Ok(match dtype {
        DType::Bool => HostArray::Bool(shaped(shape, bytes.iter().map(|&b| b != 0).collect())),
        DType::I32 => HostArray::I32(shaped(shape, words(&bytes, i32::from_le_bytes))),
        DType::I64 => HostArray::I64(shaped(shape, words(&bytes, i64::from_le_bytes))),
        DType::F32 => HostArray::F32(shaped(shape, words(&bytes, f32::from_le_bytes))),
        DType::F64 => HostArray::F64(shaped(shape, words(&bytes, f64::from_le_bytes))),
    })
}

/// Little-endian words of `N` bytes each (the length is a multiple of `N`).
fn words<T, const N: usize>(bytes: &[u8], from_le: fn([u8; N]) -> T) -> Vec<T> {
    bytes.chunks_exact(N).map(|c| from_le(c.try_into().expect("chunks of N bytes"))).collect()
}

fn shaped<T>(shape: &[usize], values: Vec<T>) -> ArrayD<T> {
    ArrayD::from_shape_vec(IxDyn(shape), values).expect("the length was checked against the shape")
}

//! The tensor DSL users write functions in.
//!
//! A [`Tensor`] is a cheap, immutable handle to a node of the graph. Ops never panic on bad
//! operands: they return a tensor that carries the error (the op, the shapes and the
//! caller's source line), every op on it passes the error on, and it surfaces as
//! `Err` when the function is built ([`crate::NumericalFunction::new`]) or when
//! [`Tensor::check`] is called.

mod elementwise;
mod indexing;
mod linalg;
mod movement;
mod operators;
mod reduce;

use crate::array::{Element, HostArray};
use crate::dtype::DType;
use crate::error::{Error, Result, SourceLocation};
use crate::graph::{self, scalar, ConstArray, InputRef, Literal, Node, NodeRef, Op, TraceId};
use crate::shape::{fmt_shape, Shape};
use std::fmt;
use std::sync::Arc;

/// A symbolic n-dimensional array: a handle to a node of the traced graph.
///
/// ```
/// use anvil::{Tensor, DType};
/// let x = Tensor::input(0, [2, 3], DType::F64);
/// let y = (x.square() * 0.5 + x.sin()).sum_axes(-1, false);
/// assert_eq!(y.shape(), &[2]);
/// // Shape errors are values, not panics:
/// let bad = &x + &Tensor::input(1, [4], DType::F64);
/// assert!(bad.check().unwrap_err().to_string().contains("cannot be broadcast"));
/// ```
#[derive(Clone)]
pub struct Tensor {
    repr: Repr,
    /// True for scalars made from Rust numbers: they adopt the other operand's dtype.
    weak: bool,
}

#[derive(Clone)]
enum Repr {
    Node(NodeRef),
    Error(Arc<Error>),
}

impl Tensor {
    /// Wraps a graph node.
    pub fn from_node(node: NodeRef) -> Self {
        Tensor { repr: Repr::Node(node), weak: false }
    }

    /// A tensor that carries `error`; every op on it passes the error on.
    pub fn from_error(error: Error) -> Self {
        Tensor { repr: Repr::Error(Arc::new(error)), weak: false }
    }

    /// The symbolic `index`-th input of a graph built by hand (for
    /// [`crate::NumericalFunction::from_tensors`]). Tracing with
    /// [`crate::NumericalFunction::new`] makes inputs of its own trace instead.
    #[track_caller]
    pub fn input(index: usize, shape: impl crate::shape::IntoShape, dtype: DType) -> Self {
        Self::traced_input(TraceId::FREE, index, shape, dtype)
    }

    /// The symbolic `index`-th input of the trace `trace`.
    #[track_caller]
    pub fn traced_input(trace: TraceId, index: usize, shape: impl crate::shape::IntoShape, dtype: DType) -> Self {
        let shape = shape.into_shape();
        if let Err(e) = check_shape(SourceLocation::caller(), "input", &shape) {
            return Self::from_error(e);
        }
        Self::from_node(Node::make(Op::Input(InputRef { index, trace }), dtype, shape, Vec::new()))
    }

    /// A scalar constant of dtype `f64`; in binary ops it adopts the other operand's dtype.
    ///
    /// ```
    /// use anvil::{Tensor, DType};
    /// let x = Tensor::input(0, 3, DType::F32);
    /// assert_eq!((x * Tensor::scalar(2.0)).dtype(), DType::F32);
    /// ```
    pub fn scalar(value: f64) -> Self {
        let mut t = Self::full((), value, DType::F64);
        t.weak = true;
        t
    }

    /// A weakly typed integer scalar (like [`Tensor::scalar`], exact for every `i64`): it
    /// adopts the other operand's dtype, and is an error if its value does not fit there.
    pub fn scalar_int(value: i64) -> Self {
        let node = graph::constant(Literal::Int(value), DType::I64, &[]);
        Tensor { repr: Repr::Node(node), weak: true }
    }

    /// A tensor of the given shape and dtype filled with `value`.
    #[track_caller]
    pub fn full(shape: impl crate::shape::IntoShape, value: f64, dtype: DType) -> Self {
        let shape = shape.into_shape();
        if let Err(e) = check_shape(SourceLocation::caller(), "full", &shape) {
            return Self::from_error(e);
        }
        let lit = scalar::literal_from_f64(dtype, value);
        Self::from_node(graph::constant(lit, dtype, &shape))
    }

    /// Zeros of the given shape (`f64`).
    #[track_caller]
    pub fn zeros(shape: impl crate::shape::IntoShape) -> Self {
        Self::full(shape, 0.0, DType::F64)
    }

    /// Ones of the given shape (`f64`).
    #[track_caller]
    pub fn ones(shape: impl crate::shape::IntoShape) -> Self {
        Self::full(shape, 1.0, DType::F64)
    }

    /// The `n × n` identity matrix (`f64`), a captured constant: an array, so one too large
    /// for this machine is an [`Error::OutOfMemory`].
    pub fn eye(n: usize) -> Self {
        let what = || format!("the identity matrix `eye({n})`");
        let eye = crate::array::try_from_shape_fn(what, &[n, n], |p| if p[0] == p[1] { 1.0f64 } else { 0.0 });
        eye.map_or_else(Self::from_error, |a| Self::from_host(HostArray::F64(a)))
    }

    /// A captured constant: the array is embedded in generated code.
    ///
    /// ```
    /// use anvil::{Tensor, ndarray::array};
    /// let a = Tensor::from_array(&array![[1.0, 2.0], [3.0, 4.0]]);
    /// assert_eq!(a.shape(), &[2, 2]);
    /// ```
    pub fn from_array<T, S, D>(array: &ndarray::ArrayBase<S, D>) -> Self
    where
        T: Element,
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        Self::from_host(T::wrap(array.to_owned().into_dyn()))
    }

    /// A captured constant from a [`HostArray`].
    pub fn from_host(array: HostArray) -> Self {
        Self::captured(ConstArray::data(Arc::new(array)))
    }

    /// The seed directions of a derivative: a captured constant whose zeros are structural
    /// (see [`ConstArray::structural`]).
    pub(crate) fn seed(array: HostArray) -> Self {
        Self::captured(ConstArray { data: Arc::new(array), structural: true })
    }

    fn captured(array: ConstArray) -> Self {
        let (dtype, shape) = (array.data.dtype(), array.data.shape().to_vec());
        Self::from_node(Node::make(Op::Array(array), dtype, shape, Vec::new()))
    }

    /// The graph node, or the error this tensor carries.
    pub fn node(&self) -> Result<&NodeRef> {
        match &self.repr {
            Repr::Node(n) => Ok(n),
            Repr::Error(e) => Err((**e).clone()),
        }
    }

    /// The error this tensor carries, if an op that produced it failed.
    pub fn error(&self) -> Option<&Error> {
        match &self.repr {
            Repr::Node(_) => None,
            Repr::Error(e) => Some(e),
        }
    }

    /// `Ok(self)` if no op on the way to this tensor failed, else that op's error.
    pub fn check(&self) -> Result<&Self> {
        self.node().map(|_| self)
    }

    /// The shape (`[]` for a tensor that carries an error).
    pub fn shape(&self) -> &[usize] {
        match &self.repr {
            Repr::Node(n) => &n.shape,
            Repr::Error(_) => &[],
        }
    }

    /// The element type (`F64` for a tensor that carries an error).
    pub fn dtype(&self) -> DType {
        match &self.repr {
            Repr::Node(n) => n.dtype,
            Repr::Error(_) => DType::F64,
        }
    }

    /// The number of dimensions.
    pub fn ndim(&self) -> usize {
        self.shape().len()
    }

    /// The number of elements.
    pub fn numel(&self) -> usize {
        self.shape().iter().product()
    }

    /// Converts to another dtype (float to int truncates, to `bool` is `!= 0`).
    #[track_caller]
    pub fn cast(&self, dtype: DType) -> Tensor {
        self.map_node(|n| Ok(Node::make(Op::Cast, dtype, n.shape.clone(), vec![n.clone()])))
    }

    /// Applies `f` to this tensor's node, passing an error on.
    #[track_caller]
    fn map_node(&self, f: impl FnOnce(&NodeRef) -> Result<NodeRef>) -> Tensor {
        match self.node().and_then(f) {
            Ok(node) => Tensor::from_node(node),
            Err(e) => Tensor::from_error(e),
        }
    }

    /// The literal of a weak scalar.
    fn weak_literal(&self) -> Option<Literal> {
        match (&self.repr, self.weak) {
            (Repr::Node(n), true) => match n.op {
                Op::Const(v) => Some(v),
                _ => None,
            },
            _ => None,
        }
    }
}

impl From<f64> for Tensor {
    fn from(value: f64) -> Self {
        Tensor::scalar(value)
    }
}

impl From<&Tensor> for Tensor {
    fn from(t: &Tensor) -> Self {
        t.clone()
    }
}

impl fmt::Debug for Tensor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Node(n) => write!(f, "Tensor({} {}, {} #{})", n.dtype, fmt_shape(&n.shape), n.op.name(), n.id()),
            Repr::Error(e) => write!(f, "Tensor(error: {e})"),
        }
    }
}

/// `Ok(())` if a tensor of `shape` is within anvil's limits ([`crate::shape::checked_numel`]),
/// else an error for `op` at the user's line.
pub(crate) fn check_shape(loc: SourceLocation, op: &'static str, shape: &[usize]) -> Result<()> {
    match crate::shape::checked_numel(shape) {
        Some(_) => Ok(()),
        None => Err(Error::op_at(loc, op, crate::shape::too_large(shape))),
    }
}

/// Evaluates `outputs` with the reference interpreter, for the given values of the graph's
/// inputs (`inputs[n]` is input `n`).
///
/// ```
/// use anvil::{eval, Tensor, DType, HostArray, ndarray::arr1};
/// let x = Tensor::input(0, [3], DType::F64);
/// let y = (&x * 2.0).sum();
/// let out = eval(&[y], &[HostArray::from(arr1(&[1.0, 2.0, 3.0]).into_dyn())]).unwrap();
/// assert_eq!(out[0].to_f64_vec(), vec![12.0]);
/// ```
pub fn eval(outputs: &[Tensor], inputs: &[HostArray]) -> Result<Vec<HostArray>> {
    graph::eval_nodes(&nodes_of(outputs)?, inputs)
}

/// Checks every tensor and returns the nodes, or the first error.
pub(crate) fn nodes_of(tensors: &[Tensor]) -> Result<Vec<NodeRef>> {
    tensors.iter().map(|t| t.node().cloned()).collect()
}

/// The shape `shape` with the axis `axis` removed.
pub(crate) fn without_axis(shape: &[usize], axis: usize) -> Shape {
    shape.iter().enumerate().filter(|&(d, _)| d != axis).map(|(_, &n)| n).collect()
}

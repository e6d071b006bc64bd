//! Derivatives of whole functions: `jvp`, `vjp`, `gradient`, `jacobian`, `hessian`, and
//! their sparse versions. Each returns an ordinary [`NumericalFunction`]: call it through
//! the JIT, evaluate it with the interpreter, differentiate it again, or emit it as C++.
//!
//! ```
//! use anvil::{ad, Arg, NumericalFunction, ndarray::array};
//! # fn main() -> anvil::Result<()> {
//! let f = NumericalFunction::new("f", |[x]| (x.square() * x.sin()).sum(), [Arg::new(3)])?;
//! let g = ad::gradient(&f)?;
//! let x = array![0.1, 0.2, 0.3].into_dyn();
//! let grad = &g.eval(&[x.view()])?[0];
//! let want = x.mapv(|v: f64| 2.0 * v * v.sin() + v * v * v.cos());
//! assert!((grad - &want).iter().all(|d| d.abs() < 1e-12));
//! # Ok(()) }
//! ```
//!
//! Conventions at non-smooth points: `abs`, `sign`, `floor`, `ceil` and comparisons have
//! derivative 0 where they jump; `relu` (`where(x > 0, x, 0)`) has derivative 0 at 0;
//! `maximum`/`minimum` (and so `clip`) split the derivative evenly between tied operands;
//! `max`/`min` reductions share it evenly among tied extrema.

use super::jvp::jvp_nodes;
use super::vjp::vjp_nodes;
use super::vmap::vmap_nodes;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::function::{Arg, NumericalFunction};
use crate::graph::NodeRef;
use crate::tensor::Tensor;
use std::collections::HashMap;

pub use super::coloring::{column_coloring, is_column_coloring, star_coloring, Coloring};
pub use super::sparse::{
    sparse_numerical_function, sphessian, sphessian_wrt, spjacobian, spjacobian_symmetric_wrt, spjacobian_wrt,
    CscMatrix, SparseNumericalFunction,
};
pub use super::sparsity::{
    hessian_sparsity, hessian_sparsity_wrt, jacobian_sparsity, jacobian_sparsity_wrt, SparsityPattern,
};

/// The symbolic input tensors of `f`.
pub(crate) fn input_tensors(f: &NumericalFunction) -> Vec<Tensor> {
    (0..f.inputs().len()).map(|i| f.input_tensor(i)).collect()
}

/// The dtype a derivative with respect to (or of) a value of dtype `d` has.
fn float_of(d: DType) -> DType {
    if d.is_float() {
        d
    } else {
        DType::F64
    }
}

fn zeros(shape: &[usize], dtype: DType) -> Tensor {
    Tensor::full(shape.to_vec(), 0.0, float_of(dtype))
}

pub(crate) fn transform_error(transform: &'static str, f: &NumericalFunction, message: impl Into<String>) -> Error {
    Error::Transform { transform, function: f.name().to_string(), message: message.into() }
}

/// Checks that input `wrt` exists and is a float.
pub(crate) fn check_wrt(transform: &'static str, f: &NumericalFunction, wrt: usize) -> Result<()> {
    match f.inputs().get(wrt) {
        None => Err(transform_error(transform, f, format!("there is no input {wrt} ({} inputs)", f.inputs().len()))),
        Some(a) if !a.dtype.is_float() => {
            Err(transform_error(transform, f, format!("input {wrt} is {}, derivatives need a float input", a.dtype)))
        }
        Some(_) => Ok(()),
    }
}

/// Forward mode: a function of `(x1…xk, t1…tk)` returning `(y…, ẏ…)`, where `ẏ` is the
/// derivative of `y` along the tangents `t` (integer inputs have no tangent; theirs are
/// ignored).
pub fn jvp(f: &NumericalFunction) -> Result<NumericalFunction> {
    let k = f.inputs().len();
    let xs = input_tensors(f);
    let mut seeds = HashMap::new();
    for (i, (x, a)) in xs.iter().zip(f.inputs()).enumerate() {
        if a.dtype.is_float() {
            seeds.insert(x.node()?.id(), Tensor::traced_input(f.trace_id(), k + i, a.shape.clone(), a.dtype));
        }
    }
    let outputs: Vec<NodeRef> = f.output_tensors().iter().map(|t| t.node().cloned()).collect::<Result<_>>()?;
    let tangents = jvp_nodes(&outputs, &seeds)?;
    let mut results = f.output_tensors();
    for (t, o) in tangents.into_iter().zip(&outputs) {
        results.push(t.unwrap_or_else(|| zeros(&o.shape, o.dtype)));
    }
    let mut args = f.inputs().to_vec();
    args.extend(f.inputs().iter().cloned());
    NumericalFunction::from_tensors(&format!("{}_jvp", f.name()), args, &results)
}

/// Reverse mode: a function of `(x1…xk, ȳ1…ȳm)` (one cotangent per output) returning
/// `(x̄1…x̄k)`, the cotangents of the inputs (zeros for integer inputs).
pub fn vjp(f: &NumericalFunction) -> Result<NumericalFunction> {
    let k = f.inputs().len();
    let xs = input_tensors(f);
    let outputs: Vec<NodeRef> = f.output_tensors().iter().map(|t| t.node().cloned()).collect::<Result<_>>()?;
    let cotangent_args: Vec<Arg> =
        f.outputs().iter().map(|o| Arg::with_dtype(o.shape.clone(), float_of(o.dtype))).collect();
    let cotangents: Vec<Tensor> = cotangent_args
        .iter()
        .enumerate()
        .map(|(j, a)| Tensor::traced_input(f.trace_id(), k + j, a.shape.clone(), a.dtype))
        .collect();
    let wrt: Vec<NodeRef> = xs.iter().map(|x| x.node().cloned()).collect::<Result<_>>()?;
    let bars = vjp_nodes(&outputs, &cotangents, &wrt)?;
    let results: Vec<Tensor> =
        bars.into_iter().zip(f.inputs()).map(|(b, a)| b.unwrap_or_else(|| zeros(&a.shape, a.dtype))).collect();
    let mut args = f.inputs().to_vec();
    args.extend(cotangent_args);
    NumericalFunction::from_tensors(&format!("{}_vjp", f.name()), args, &results)
}

/// The gradient of `f`'s first output (a scalar) with respect to its first input.
pub fn gradient(f: &NumericalFunction) -> Result<NumericalFunction> {
    gradient_wrt(f, 0)
}

/// The gradient of `f`'s first output (a scalar) with respect to input `wrt`.
pub fn gradient_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    let g = gradient_tensor(f, wrt)?;
    NumericalFunction::from_tensors(&format!("{}_grad", f.name()), f.inputs().to_vec(), &[g])
}

/// The gradient graph of the first output with respect to input `wrt`.
pub(crate) fn gradient_tensor(f: &NumericalFunction, wrt: usize) -> Result<Tensor> {
    check_wrt("gradient", f, wrt)?;
    let y = f.output_tensors()[0].node()?.clone();
    if y.numel() != 1 {
        let message = format!("output 0 has shape {:?}; a gradient needs a scalar output (use `jacobian`)", y.shape);
        return Err(transform_error("gradient", f, message));
    }
    let x = input_tensors(f)[wrt].node()?.clone();
    let seed = Tensor::full(y.shape.clone(), 1.0, float_of(y.dtype));
    let g = vjp_nodes(&[y], &[seed], std::slice::from_ref(&x))?.remove(0);
    Ok(g.unwrap_or_else(|| zeros(&x.shape, x.dtype)))
}

/// The dense Jacobian of `f`'s first output with respect to its first input: an
/// `(outputs × inputs)` matrix over the flattened (row-major) output and input.
pub fn jacobian(f: &NumericalFunction) -> Result<NumericalFunction> {
    jacobian_wrt(f, 0)
}

/// [`jacobian`] with respect to input `wrt`. Uses forward mode (one batched directional
/// derivative per input element) when the input is smaller than the output, reverse mode
/// otherwise.
pub fn jacobian_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    check_wrt("jacobian", f, wrt)?;
    let y = f.output_tensors()[0].clone();
    let x = input_tensors(f)[wrt].clone();
    let pattern = super::sparsity::dependency_pattern(y.node()?, x.node()?)?;
    let j = structural_zeros(&pattern, dense_jacobian(f, &y, &x)?)?;
    NumericalFunction::from_tensors(&format!("{}_jac", f.name()), f.inputs().to_vec(), &[j])
}

/// `dense` with exact zeros where `pattern` has none. A unit direction multiplies partial
/// derivatives that are not structurally zero by 0, which gives NaN where such a partial
/// is infinite (`sqrt` at 0); the sparse derivatives never form those products, and the
/// dense ones must agree with them.
fn structural_zeros(pattern: &SparsityPattern, dense: Tensor) -> Result<Tensor> {
    let (rows, cols) = pattern.shape();
    if pattern.nnz() == rows * cols {
        return Ok(dense);
    }
    let what = || format!("the structural pattern of a {rows}×{cols} derivative");
    let mask = crate::array::try_from_shape_fn(what, &[rows, cols], |p| pattern.contains(p[0], p[1]))?;
    Ok(Tensor::from_array(&mask).where_(dense, 0.0))
}

/// The dense Hessian of `f`'s first output (a scalar) with respect to its first input:
/// forward mode over the reverse-mode gradient.
pub fn hessian(f: &NumericalFunction) -> Result<NumericalFunction> {
    hessian_wrt(f, 0)
}

/// [`hessian`] with respect to input `wrt`.
pub fn hessian_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    let g = gradient_tensor(f, wrt)?;
    let x = input_tensors(f)[wrt].clone();
    let pattern = super::sparsity::dependency_pattern(g.node()?, x.node()?)?.symmetrized();
    let h = structural_zeros(&pattern, forward_jacobian(f, &g, &x)?)?;
    NumericalFunction::from_tensors(&format!("{}_hess", f.name()), f.inputs().to_vec(), &[h])
}

/// `d y / d x` as an `(numel y × numel x)` matrix, in the cheaper mode.
fn dense_jacobian(f: &NumericalFunction, y: &Tensor, x: &Tensor) -> Result<Tensor> {
    if x.numel() <= y.numel() {
        forward_jacobian(f, y, x)
    } else {
        reverse_jacobian(f, y, x)
    }
}

/// A placeholder input beyond `f`'s inputs, replaced before any function is built.
fn placeholder(f: &NumericalFunction, shape: &[usize], dtype: DType) -> Tensor {
    Tensor::traced_input(f.trace_id(), f.inputs().len(), shape.to_vec(), dtype)
}

/// The identity as a batch of `n` unit tensors of shape `shape`.
fn unit_batch(shape: &[usize], dtype: DType) -> Tensor {
    let n: usize = shape.iter().product();
    let mut batched = vec![n];
    batched.extend_from_slice(shape);
    Tensor::eye(n).cast(dtype).reshape(batched)
}

/// Forward mode, all directions at once: the JVP along a placeholder tangent, batched over
/// the unit directions.
pub(crate) fn forward_jacobian(f: &NumericalFunction, y: &Tensor, x: &Tensor) -> Result<Tensor> {
    forward_directions(f, y, x, &unit_batch(x.shape(), float_of(x.dtype()))).map(|d| d.transpose())
}

/// The derivatives of `y` (flattened) along each direction in `directions` (shape
/// `[c] + x.shape`): a `(c × numel y)` matrix, computed as one batched JVP.
pub(crate) fn forward_directions(f: &NumericalFunction, y: &Tensor, x: &Tensor, directions: &Tensor) -> Result<Tensor> {
    let (m, c) = (y.numel(), directions.check()?.shape()[0]);
    let tangent = placeholder(f, x.shape(), float_of(x.dtype()));
    let seeds = HashMap::from([(x.node()?.id(), tangent.clone())]);
    let ty = jvp_nodes(&[y.node()?.clone()], &seeds)?.remove(0);
    let Some(ty) = ty else { return Ok(Tensor::full([c, m], 0.0, float_of(y.dtype()))) };
    let batched = HashMap::from([(tangent.node()?.id(), directions.clone())]);
    let d = vmap_nodes(&[ty.node()?.clone()], &batched, c)?.remove(0);
    Ok(d.reshape([c, m]))
}

/// Reverse mode, all output elements at once: the VJP along a placeholder cotangent,
/// batched over the unit cotangents.
fn reverse_jacobian(f: &NumericalFunction, y: &Tensor, x: &Tensor) -> Result<Tensor> {
    reverse_directions(f, y, x, &unit_batch(y.shape(), float_of(y.dtype())))
}

/// The cotangents of `x` (flattened) for each cotangent of `y` in `directions` (shape
/// `[c] + y.shape`): a `(c × numel x)` matrix, computed as one batched VJP.
pub(crate) fn reverse_directions(f: &NumericalFunction, y: &Tensor, x: &Tensor, directions: &Tensor) -> Result<Tensor> {
    let (n, c) = (x.numel(), directions.check()?.shape()[0]);
    let cotangent = placeholder(f, y.shape(), float_of(y.dtype()));
    let bar = vjp_nodes(&[y.node()?.clone()], std::slice::from_ref(&cotangent), &[x.node()?.clone()])?.remove(0);
    let Some(bar) = bar else { return Ok(Tensor::full([c, n], 0.0, float_of(x.dtype()))) };
    let batched = HashMap::from([(cotangent.node()?.id(), directions.clone())]);
    let rows = vmap_nodes(&[bar.node()?.clone()], &batched, c)?.remove(0);
    Ok(rows.reshape([c, n]))
}

/// Adds a batch axis: a function of batched inputs (`in_axes[i]`: where input `i` gets
/// the batch axis of extent `batch`, or `None` to share it unbatched across the batch;
/// an empty `in_axes` batches every input at axis 0). Every output gets a leading batch
/// axis.
///
/// ```
/// use anvil::{vmap, Arg, NumericalFunction};
/// # fn main() -> anvil::Result<()> {
/// let f = NumericalFunction::new("f", |[x, w]| x.dot(&w).tanh(), [Arg::new(3), Arg::new(3)])?;
/// let batched = vmap(&f, 8, &[Some(1), None])?; // x: (3, 8), w shared
/// assert_eq!(batched.inputs()[0].shape, vec![3, 8]);
/// assert_eq!(batched.outputs()[0].shape, vec![8]);
/// # Ok(()) }
/// ```
pub fn vmap(f: &NumericalFunction, batch: usize, in_axes: &[Option<usize>]) -> Result<NumericalFunction> {
    vmap_out(f, batch, in_axes, 0)
}

/// [`vmap`] with the batch axis of every output at position `out_axis` (0: leading).
///
/// ```
/// use anvil::{ad, Arg, NumericalFunction};
/// # fn main() -> anvil::Result<()> {
/// let f = NumericalFunction::new("f", |[x]| x.exp(), [Arg::new(3)])?;
/// assert_eq!(ad::vmap_out(&f, 8, &[], 1)?.outputs()[0].shape, vec![3, 8]);
/// # Ok(()) }
/// ```
pub fn vmap_out(
    f: &NumericalFunction,
    batch: usize,
    in_axes: &[Option<usize>],
    out_axis: usize,
) -> Result<NumericalFunction> {
    let k = f.inputs().len();
    let in_axes: Vec<Option<usize>> = if in_axes.is_empty() { vec![Some(0); k] } else { in_axes.to_vec() };
    if in_axes.len() != k {
        return Err(transform_error("vmap", f, format!("{} in_axes given for {k} inputs", in_axes.len())));
    }
    let mut args = Vec::with_capacity(k);
    let mut batched = HashMap::new();
    for (i, (a, axis)) in f.inputs().iter().zip(&in_axes).enumerate() {
        let Some(axis) = *axis else {
            args.push(a.clone());
            continue;
        };
        if axis > a.shape.len() {
            let message = format!("batch axis {axis} is out of range for input {i} of shape {:?}", a.shape);
            return Err(transform_error("vmap", f, message));
        }
        let mut shape = a.shape.clone();
        shape.insert(axis, batch);
        let input = Tensor::traced_input(f.trace_id(), i, shape.clone(), a.dtype);
        // Move the batch axis to the front, where the batching rules expect it.
        let mut perm: Vec<usize> = (0..shape.len()).collect();
        perm.remove(axis);
        perm.insert(0, axis);
        batched.insert(f.input_tensor(i).node()?.id(), input.permute(perm));
        args.push(Arg::with_dtype(shape, a.dtype));
    }
    let outputs: Vec<NodeRef> = f.output_tensors().iter().map(|t| t.node().cloned()).collect::<Result<_>>()?;
    let results = vmap_nodes(&outputs, &batched, batch).map_err(|e| match e {
        Error::Transform { transform, message, .. } => transform_error(transform, f, message),
        other => other,
    })?;
    let mut moved = Vec::with_capacity(results.len());
    for (k, r) in results.into_iter().enumerate() {
        let rank = r.ndim();
        if out_axis >= rank {
            let message = format!("out_axis {out_axis} is out of range for output {k}, of rank {} once batched", rank);
            return Err(transform_error("vmap", f, message));
        }
        let mut perm: Vec<usize> = (1..rank).collect();
        perm.insert(out_axis, 0);
        moved.push(r.permute(perm));
    }
    NumericalFunction::from_tensors(&format!("{}_vmap", f.name()), args, &moved)
}

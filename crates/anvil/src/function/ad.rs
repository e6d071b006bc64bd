//! Derivatives of whole functions: `jvp`, `vjp`, `gradient`, `jacobian`, `hessian`, and
//! their sparse versions, and batching (`vmap`). Each returns an ordinary
//! [`NumericalFunction`]: call it through the JIT, evaluate it with the interpreter,
//! differentiate it again, or emit it as C++. (The graph rewrites behind them are in
//! [`crate::transform`].)
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
//! `gradient`, `jacobian`, `hessian` and their sparse versions differentiate a function's
//! one output; of a function with several, pick one with [`NumericalFunction::output`]
//! (a derivative never picks one silently).
//!
//! Conventions at non-smooth points: `abs`, `sign`, `floor`, `ceil` and comparisons have
//! derivative 0 where they jump; `relu` (`where(x > 0, x, 0)`) has derivative 0 at 0;
//! `maximum`/`minimum` (and so `clip`) split the derivative evenly between tied operands;
//! `max`/`min` reductions share it evenly among tied extrema.

use super::arg::Arg;
use super::names::derived_name;
use super::numerical::{Mapped, NumericalFunction};
use crate::error::{Error, Result};
use crate::graph::NodeRef;
use crate::tensor::Tensor;
use crate::transform::derivatives::{self, float_of, zeros, SparseDerivative};
use crate::transform::jvp::jvp_nodes;
use crate::transform::sparsity::dependency_pattern;
use crate::transform::vjp::vjp_nodes;
use crate::transform::vmap::vmap_nodes;
use std::collections::HashMap;

pub use super::sparse::{sparse_numerical_function, SparseNumericalFunction};
pub use crate::pattern::{CscMatrix, SparsityPattern};
pub use crate::transform::coloring::{column_coloring, is_column_coloring, star_coloring, Coloring};

/// The error of `transform` applied to `f`.
fn transform_error(transform: &'static str, f: &NumericalFunction, message: impl Into<String>) -> Error {
    Error::Transform { transform, function: f.name().to_string(), message: message.into() }
}

/// Checks that input `wrt` exists and is a float.
fn check_wrt(transform: &'static str, f: &NumericalFunction, wrt: usize) -> Result<()> {
    match f.inputs().get(wrt) {
        None => Err(transform_error(transform, f, format!("there is no input {wrt} ({} inputs)", f.inputs().len()))),
        Some(a) if !a.dtype.is_float() => {
            Err(transform_error(transform, f, format!("input {wrt} is {}, derivatives need a float input", a.dtype)))
        }
        Some(_) => Ok(()),
    }
}

/// The output of `f` (it must have one: a derivative never picks one silently) and its
/// input `wrt`, for a derivative called `transform`.
fn output_and_input(transform: &'static str, f: &NumericalFunction, wrt: usize) -> Result<(Tensor, Tensor)> {
    check_wrt(transform, f, wrt)?;
    let outputs = f.output_tensors();
    if outputs.len() != 1 {
        let message = format!(
            "it has {} outputs; differentiate one of them: `{transform}` of `f.output(k)` in Rust, \
             `{transform}(f, output=k)` in Python",
            outputs.len()
        );
        return Err(transform_error(transform, f, message));
    }
    Ok((outputs[0].clone(), f.input_tensor(wrt)))
}

/// The output of `f`, which must be a scalar, and its input `wrt`.
fn scalar_output_and_input(transform: &'static str, f: &NumericalFunction, wrt: usize) -> Result<(Tensor, Tensor)> {
    let (y, x) = output_and_input(transform, f, wrt)?;
    if y.numel() != 1 {
        let message =
            format!("its output has shape {:?}; {transform} needs a scalar output (use `jacobian`)", y.shape());
        return Err(transform_error(transform, f, message));
    }
    Ok((y, x))
}

/// A function of `f`'s inputs computing `output`, named `<f>_<suffix>`.
fn derived(f: &NumericalFunction, suffix: &str, output: Tensor) -> Result<NumericalFunction> {
    Ok(NumericalFunction::from_tensors(&derived_name(f.name(), suffix), f.inputs().to_vec(), &[output])?
        .with_backend(f.backend().clone()))
}

/// A sparse function of `f`'s inputs, named `<f>_<suffix>`.
fn derived_sparse(f: &NumericalFunction, suffix: &str, d: SparseDerivative) -> Result<SparseNumericalFunction> {
    SparseNumericalFunction::new(derived(f, suffix, d.values)?, d.pattern, d.colors)
}

/// Forward mode: a function of `(x1…xk, t1…tk)` returning `(y…, ẏ…)`, where `ẏ` is the
/// derivative of `y` along the tangents `t` (integer inputs have no tangent; theirs are
/// ignored).
pub fn jvp(f: &NumericalFunction) -> Result<NumericalFunction> {
    let k = f.inputs().len();
    let mut seeds = HashMap::new();
    for (i, a) in f.inputs().iter().enumerate() {
        if a.dtype.is_float() {
            let tangent = Tensor::traced_input(f.trace_id(), k + i, a.shape.clone(), a.dtype);
            seeds.insert(f.input_tensor(i).node()?.id(), tangent);
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
    Ok(NumericalFunction::from_tensors(&derived_name(f.name(), "jvp"), args, &results)?
        .with_backend(f.backend().clone()))
}

/// Reverse mode: a function of `(x1…xk, ȳ1…ȳm)` (one cotangent per output) returning
/// `(x̄1…x̄k)`, the cotangents of the inputs (zeros for integer inputs).
pub fn vjp(f: &NumericalFunction) -> Result<NumericalFunction> {
    let k = f.inputs().len();
    let outputs: Vec<NodeRef> = f.output_tensors().iter().map(|t| t.node().cloned()).collect::<Result<_>>()?;
    let cotangent_args: Vec<Arg> =
        f.outputs().iter().map(|o| Arg::with_dtype(o.shape.clone(), float_of(o.dtype))).collect();
    let cotangents: Vec<Tensor> = cotangent_args
        .iter()
        .enumerate()
        .map(|(j, a)| Tensor::traced_input(f.trace_id(), k + j, a.shape.clone(), a.dtype))
        .collect();
    let wrt: Vec<NodeRef> = (0..k).map(|i| f.input_tensor(i).node().cloned()).collect::<Result<_>>()?;
    let bars = vjp_nodes(&outputs, &cotangents, &wrt)?;
    let results: Vec<Tensor> =
        bars.into_iter().zip(f.inputs()).map(|(b, a)| b.unwrap_or_else(|| zeros(&a.shape, a.dtype))).collect();
    let mut args = f.inputs().to_vec();
    args.extend(cotangent_args);
    Ok(NumericalFunction::from_tensors(&derived_name(f.name(), "vjp"), args, &results)?
        .with_backend(f.backend().clone()))
}

/// The gradient of `f`'s output (a scalar) with respect to its first input.
pub fn gradient(f: &NumericalFunction) -> Result<NumericalFunction> {
    gradient_wrt(f, 0)
}

/// The gradient of `f`'s output (a scalar) with respect to input `wrt`.
pub fn gradient_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    let (y, x) = scalar_output_and_input("gradient", f, wrt)?;
    derived(f, "grad", derivatives::gradient(&y, &x)?)
}

/// The dense Jacobian of `f`'s output with respect to its first input: an
/// `(outputs × inputs)` matrix over the flattened (row-major) output and input, with exact
/// zeros wherever the structure has them.
pub fn jacobian(f: &NumericalFunction) -> Result<NumericalFunction> {
    jacobian_wrt(f, 0)
}

/// [`jacobian`] with respect to input `wrt`. Forward mode (one batched directional
/// derivative per input element) or reverse mode (one batched sweep per output element),
/// whichever is less work: both are built and compared up to 256 elements on either side,
/// beyond that forward mode when the input is the smaller.
pub fn jacobian_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    let (y, x) = output_and_input("jacobian", f, wrt)?;
    derived(f, "jac", derivatives::jacobian(&y, &x)?)
}

/// The dense Hessian of `f`'s output (a scalar) with respect to its first input:
/// forward mode over the reverse-mode gradient.
pub fn hessian(f: &NumericalFunction) -> Result<NumericalFunction> {
    hessian_wrt(f, 0)
}

/// [`hessian`] with respect to input `wrt`.
pub fn hessian_wrt(f: &NumericalFunction, wrt: usize) -> Result<NumericalFunction> {
    let (y, x) = scalar_output_and_input("hessian", f, wrt)?;
    derived(f, "hess", derivatives::hessian(&y, &x)?)
}

/// The Jacobian of `f`'s output with respect to its first input, as a sparse
/// function: sparsity detection, colouring, one batched directional derivative per colour,
/// and a gather of the non-zeros into CSC order. Columns are coloured (forward mode, JVPs)
/// unless colouring the rows needs fewer colours (reverse mode, VJPs), as for a Jacobian
/// with a dense row.
///
/// ```
/// use anvil::{ad, Arg, NumericalFunction, ndarray::Array1};
/// # fn main() -> anvil::Result<()> {
/// let n = 100;
/// let f = NumericalFunction::new("r", |[x]| {
///     let p = x.pad(&[(1, 1)]);
///     p.shrink(&[(0, n)]) - &x * 2.0 + p.shrink(&[(2, n + 2)]) + x.exp() * 1e-4
/// }, [Arg::new(n)])?;
/// let jac = ad::spjacobian(&f)?;
/// assert_eq!((jac.nnz(), jac.colors()), (3 * n - 2, 3));
/// let x = Array1::linspace(0.0, 1.0, n).into_dyn();
/// let values = jac.eval(&[x.view()])?; // or `jac.call` through the JIT
/// assert_eq!(values.len(), 3 * n - 2);
/// # Ok(()) }
/// ```
pub fn spjacobian(f: &NumericalFunction) -> Result<SparseNumericalFunction> {
    spjacobian_wrt(f, 0)
}

/// [`spjacobian`] with respect to input `wrt`.
pub fn spjacobian_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    let (y, x) = output_and_input("spjacobian", f, wrt)?;
    derived_sparse(f, "spjac", derivatives::sparse_jacobian(&y, &x)?)
}

/// The Jacobian of `f`'s output with respect to input `wrt`, known to be symmetric
/// (the Jacobian of a gradient, say): star colouring, which needs fewer directional
/// derivatives than colouring columns, reads each entry once. The whole pattern is returned
/// (both triangles). The output must have as many elements as the input; that the
/// Jacobian is symmetric is the caller's promise (otherwise the values are wrong).
pub fn spjacobian_symmetric_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    let (y, x) = output_and_input("spjacobian", f, wrt)?;
    if y.numel() != x.numel() {
        let message = format!(
            "a symmetric Jacobian is square, but the output has {} elements and input {wrt} has {}",
            y.numel(),
            x.numel()
        );
        return Err(transform_error("spjacobian", f, message));
    }
    derived_sparse(f, "spjac", derivatives::symmetric_jacobian(&y, &x)?)
}

/// The upper triangle of the Hessian of `f`'s scalar output with respect to its
/// first input, as a sparse function (star colouring, forward over reverse).
pub fn sphessian(f: &NumericalFunction) -> Result<SparseNumericalFunction> {
    sphessian_wrt(f, 0)
}

/// [`sphessian`] with respect to input `wrt`.
pub fn sphessian_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparseNumericalFunction> {
    let (y, x) = scalar_output_and_input("sphessian", f, wrt)?;
    derived_sparse(f, "sphess", derivatives::sparse_hessian(&y, &x)?)
}

/// The Jacobian sparsity of `f`'s output with respect to its first input.
///
/// ```
/// use anvil::{ad, Arg, NumericalFunction};
/// # fn main() -> anvil::Result<()> {
/// // r_i = x_{i-1} - 2 x_i + x_{i+1}: tridiagonal
/// let f = NumericalFunction::new("lap", |[x]| {
///     let padded = x.pad(&[(1, 1)]);
///     padded.shrink(&[(0, 5)]) - &x * 2.0 + padded.shrink(&[(2, 7)])
/// }, [Arg::new(5)])?;
/// let p = ad::jacobian_sparsity(&f)?;
/// assert_eq!(p.nnz(), 13);
/// assert_eq!(p.row(2), &[1, 2, 3]);
/// # Ok(()) }
/// ```
pub fn jacobian_sparsity(f: &NumericalFunction) -> Result<SparsityPattern> {
    jacobian_sparsity_wrt(f, 0)
}

/// [`jacobian_sparsity`] with respect to input `wrt`.
pub fn jacobian_sparsity_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparsityPattern> {
    let (y, x) = output_and_input("jacobian_sparsity", f, wrt)?;
    dependency_pattern(y.node()?, x.node()?)
}

/// The (symmetric) Hessian sparsity of `f`'s scalar output with respect to its first
/// input: the Jacobian sparsity of its gradient graph, symmetrized.
pub fn hessian_sparsity(f: &NumericalFunction) -> Result<SparsityPattern> {
    hessian_sparsity_wrt(f, 0)
}

/// [`hessian_sparsity`] with respect to input `wrt`.
pub fn hessian_sparsity_wrt(f: &NumericalFunction, wrt: usize) -> Result<SparsityPattern> {
    let (y, x) = scalar_output_and_input("hessian_sparsity", f, wrt)?;
    let g = derivatives::gradient(&y, &x)?;
    Ok(dependency_pattern(g.node()?, x.node()?)?.symmetrized())
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
    let mapped = Mapped { item: f.renamed(f.name())?, in_axes, out_axis, batch };
    Ok(NumericalFunction::from_tensors(&derived_name(f.name(), "vmap"), args, &moved)?
        .with_backend(f.backend().clone())
        .with_mapped(mapped))
}

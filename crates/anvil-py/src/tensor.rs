//! `anvil.Tensor`: the tensor DSL from Python, with tinygrad's method names.

use crate::convert::{host_from_py, host_to_py};
use crate::dtype::{dtype_from, PyDType};
use crate::errors::{to_py, IntoPyResult};
use anvil::ndarray::{ArrayD, IxDyn, SliceInfoElem};
use anvil::{DType, HostArray, Tensor};
use pyo3::exceptions::{PyIndexError, PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyEllipsis, PyInt, PyList, PySlice, PyTuple};

/// A symbolic tensor: inside a traced function it is a node of the graph; outside, use it
/// to capture constants: `Tensor([[1.0, 2.0], [3.0, 4.0]])`, `Tensor(numpy_array)`.
#[pyclass(name = "Tensor", module = "anvil", frozen, from_py_object)]
#[derive(Clone)]
pub struct PyTensor(pub Tensor);

/// A tensor result, or the op's error as a Python exception.
fn ok(t: Tensor) -> PyResult<PyTensor> {
    match t.error() {
        Some(e) => Err(to_py(e.clone())),
        None => Ok(PyTensor(t)),
    }
}

/// A Python operand as a tensor: a `Tensor`, a number (weakly typed: it adopts the other
/// operand's dtype) or array-like data (a captured constant).
pub fn operand(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Ok(t) = obj.cast::<PyTensor>() {
        return Ok(t.get().0.clone());
    }
    if obj.is_instance_of::<PyBool>() {
        return Ok(Tensor::scalar(obj.extract::<bool>()? as u8 as f64));
    }
    if obj.is_instance_of::<PyInt>() || is_numpy_integer(obj)? {
        // Exact (an f64 would round above 2^53); one beyond int64 is an error, not a wrap.
        return match obj.extract::<i64>() {
            Ok(v) => Ok(Tensor::scalar_int(v)),
            Err(_) => Err(PyOverflowError::new_err(format!("Python integer {obj} out of bounds for int64"))),
        };
    }
    if let Ok(v) = obj.extract::<f64>() {
        if !obj.hasattr("shape")? || obj.getattr("shape")?.len()? == 0 {
            return Ok(Tensor::scalar(v));
        }
    }
    Ok(Tensor::from_host(host_from_py(obj)?))
}

/// True for numpy's integer scalars (`np.int32(3)`, `np.uint8(7)`, ...).
fn is_numpy_integer(obj: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !obj.hasattr("dtype")? || obj.hasattr("shape")? && obj.getattr("shape")?.len()? != 0 {
        return Ok(false);
    }
    let kind: String = obj.getattr("dtype")?.getattr("kind")?.extract()?;
    Ok(kind == "i" || kind == "u")
}

/// Axes from `None` (all), an int, or a sequence of ints.
fn axes_arg(axis: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Vec<isize>>> {
    match axis {
        None => Ok(None),
        Some(a) if a.is_none() => Ok(None),
        Some(a) => match a.extract::<isize>() {
            Ok(i) => Ok(Some(vec![i])),
            Err(_) => Ok(Some(a.extract::<Vec<isize>>()?)),
        },
    }
}

/// A shape given as varargs (`reshape(2, 3)`) or as one sequence (`reshape((2, 3))`).
fn shape_args(args: &Bound<'_, PyTuple>) -> PyResult<Vec<isize>> {
    if args.len() == 1 {
        let first = args.get_item(0)?;
        if first.is_instance_of::<PyTuple>() || first.is_instance_of::<PyList>() {
            return first.extract();
        }
    }
    args.extract()
}

fn to_usize(dims: &[isize], what: &str) -> PyResult<Vec<usize>> {
    dims.iter()
        .map(|&d| {
            usize::try_from(d)
                .map_err(|_| PyValueError::new_err(format!("{what}: extents must be non-negative, got {d}")))
        })
        .collect()
}

impl PyTensor {
    fn reduce(
        &self,
        axis: Option<&Bound<'_, PyAny>>,
        keepdim: bool,
        all: fn(&Tensor) -> Tensor,
        some: fn(&Tensor, Vec<isize>, bool) -> Tensor,
    ) -> PyResult<PyTensor> {
        match axes_arg(axis)? {
            None if !keepdim => ok(all(&self.0)),
            None => ok(some(&self.0, (0..self.0.ndim() as isize).collect(), true)),
            Some(axes) => ok(some(&self.0, axes, keepdim)),
        }
    }

    fn index(&self, key: &Bound<'_, PyAny>) -> PyResult<Vec<SliceInfoElem>> {
        let items: Vec<Bound<'_, PyAny>> =
            if key.is_instance_of::<PyTuple>() { key.extract()? } else { vec![key.clone()] };
        if items.iter().filter(|k| k.is_instance_of::<PyEllipsis>()).count() > 1 {
            return Err(PyIndexError::new_err("an index can only have a single ellipsis ('...')"));
        }
        let explicit = items.iter().filter(|k| !k.is_none() && !k.is_instance_of::<PyEllipsis>()).count();
        let rank = self.0.ndim();
        if explicit > rank {
            return Err(PyIndexError::new_err(format!(
                "too many indices ({explicit}) for a tensor of shape {:?}",
                self.0.shape()
            )));
        }
        let mut out = Vec::new();
        let mut axis = 0;
        for k in &items {
            if k.is_none() {
                out.push(SliceInfoElem::NewAxis);
            } else if k.is_instance_of::<PyEllipsis>() {
                for _ in 0..rank - explicit {
                    out.push(SliceInfoElem::from(..));
                    axis += 1;
                }
            } else if let Ok(s) = k.cast::<PySlice>() {
                let n = self.0.shape()[axis] as isize;
                let ind = s.indices(n)?;
                let (start, stop, step) = (ind.start, ind.stop, ind.step);
                out.push(if step > 0 {
                    SliceInfoElem::Slice { start, end: Some(stop.max(start)), step }
                } else {
                    // Python walks start, start+step, ... > stop; ndarray walks a range from its end.
                    SliceInfoElem::Slice { start: (stop + 1).min(start + 1), end: Some(start + 1), step }
                });
                axis += 1;
            } else if let Ok(i) = k.extract::<isize>() {
                let n = self.0.shape()[axis] as isize;
                if i < -n || i >= n {
                    return Err(PyIndexError::new_err(format!(
                        "index {i} is out of bounds for axis {axis} with size {n}"
                    )));
                }
                out.push(SliceInfoElem::Index(i));
                axis += 1;
            } else {
                return Err(PyTypeError::new_err(format!(
                    "tensor indices must be ints, slices, None or Ellipsis (or one integer Tensor), got {}",
                    k.get_type().name()?
                )));
            }
        }
        Ok(out)
    }
}

#[pymethods]
impl PyTensor {
    /// A captured constant from array-like `data`, optionally cast to `dtype`.
    #[new]
    #[pyo3(signature = (data, dtype = None))]
    fn new(data: &Bound<'_, PyAny>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let t = match data.cast::<PyTensor>() {
            Ok(t) => t.get().0.clone(),
            Err(_) => Tensor::from_host(host_from_py(data)?),
        };
        match dtype {
            Some(d) => ok(t.cast(dtype_from(d)?)),
            None => Ok(PyTensor(t)),
        }
    }

    /// Pickling: the tensor's graph in anvil's tensor format (inputs it depends on come
    /// back as inputs of a new trace).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, pyo3::types::PyBytes>,))> {
        let py = slf.py();
        let bytes = slf.get().0.to_bytes().py()?;
        let restore = py.get_type::<PyTensor>().getattr("_from_bytes")?;
        Ok((restore, (pyo3::types::PyBytes::new(py, &bytes),)))
    }

    /// A tensor from its pickled bytes.
    #[staticmethod]
    fn _from_bytes(data: &[u8]) -> PyResult<Self> {
        Ok(PyTensor(Tensor::from_bytes(data).py()?))
    }

    /// The shape, a tuple.
    #[getter]
    fn shape<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.0.shape())
    }

    /// The element type.
    #[getter]
    fn dtype(&self) -> PyDType {
        PyDType(self.0.dtype())
    }

    /// Number of dimensions.
    #[getter]
    fn ndim(&self) -> usize {
        self.0.ndim()
    }

    /// Number of elements.
    fn numel(&self) -> usize {
        self.0.numel()
    }

    fn __len__(&self) -> PyResult<usize> {
        self.0.shape().first().copied().ok_or_else(|| PyTypeError::new_err("len() of a 0-d tensor"))
    }

    /// Iterates over the first axis: `p, v = x` unpacks a 2-vector into two scalars.
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, pyo3::types::PyIterator>> {
        let t = &slf.get().0;
        let n = *t.shape().first().ok_or_else(|| PyTypeError::new_err("iteration over a 0-d tensor"))?;
        let items = (0..n).map(|i| ok(t.get(i as isize))).collect::<PyResult<Vec<_>>>()?;
        PyList::new(slf.py(), items)?.try_iter()
    }

    // ----- numpy's protocols: numpy functions on Tensors work or raise a clear TypeError -----
    #[pyo3(signature = (ufunc, method, *inputs, **kwargs))]
    fn __array_ufunc__<'py>(
        slf: &Bound<'py, Self>,
        ufunc: &Bound<'py, PyAny>,
        method: &Bound<'py, PyAny>,
        inputs: &Bound<'py, PyTuple>,
        kwargs: Option<&Bound<'py, pyo3::types::PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let protocol = slf.py().import("anvil._numpy")?;
        protocol.call_method1("array_ufunc", (ufunc, method, inputs, kwargs))
    }

    fn __array_function__<'py>(
        slf: &Bound<'py, Self>,
        func: &Bound<'py, PyAny>,
        types: &Bound<'py, PyAny>,
        args: &Bound<'py, PyAny>,
        kwargs: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let protocol = slf.py().import("anvil._numpy")?;
        protocol.call_method1("array_function", (func, types, args, kwargs))
    }

    #[pyo3(signature = (dtype = None, copy = None))]
    fn __array__<'py>(
        slf: &Bound<'py, Self>,
        dtype: Option<&Bound<'py, PyAny>>,
        copy: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let protocol = slf.py().import("anvil._numpy")?;
        protocol.call_method1("to_array", (slf, dtype, copy))
    }

    fn __repr__(&self) -> String {
        format!("<Tensor shape={:?} dtype={}>", self.0.shape(), crate::dtype::numpy_name(self.0.dtype()))
    }

    fn __bool__(&self) -> PyResult<bool> {
        Err(PyTypeError::new_err(
            "a traced Tensor has no truth value: use `cond.where(a, b)` for data-dependent choices",
        ))
    }

    /// The value of a tensor that depends on no function input (captured constants and
    /// arithmetic on them), as a numpy array.
    fn numpy(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let node = self.0.node().py()?.clone();
        if anvil::internals::graph::toposort(std::slice::from_ref(&node))
            .iter()
            .any(|n| matches!(n.op, anvil::internals::graph::Op::Input(_)))
        {
            return Err(PyValueError::new_err(
                "this tensor depends on function inputs; call the NumericalFunction instead",
            ));
        }
        let mut out = anvil::internals::graph::eval_nodes(&[node], &[]).py()?;
        Ok(host_to_py(py, out.remove(0)))
    }

    // ----- arithmetic -----
    fn __add__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(&self.0 + operand(o)?)
    }
    fn __radd__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)? + &self.0)
    }
    fn __sub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(&self.0 - operand(o)?)
    }
    fn __rsub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)? - &self.0)
    }
    fn __mul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(&self.0 * operand(o)?)
    }
    fn __rmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)? * &self.0)
    }
    fn __truediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(&self.0 / operand(o)?)
    }
    fn __rtruediv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)? / &self.0)
    }
    /// `self // o` with Python's semantics: rounds toward minus infinity; integers stay
    /// integers (exact; division by zero gives 0).
    fn __floordiv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.floor_div(operand(o)?))
    }
    fn __rfloordiv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)?.floor_div(&self.0))
    }
    /// `self % o` with Python's semantics: `self - (self // o) * o`, the sign of `o`.
    fn __mod__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = operand(o)?;
        ok(&self.0 - self.0.floor_div(&o) * &o)
    }
    fn __rmod__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        let o = operand(o)?;
        ok(&o - o.floor_div(&self.0) * &self.0)
    }
    fn __pow__(&self, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        ok(self.0.pow(operand(o)?))
    }
    fn __rpow__(&self, o: &Bound<'_, PyAny>, _modulo: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        ok(operand(o)?.pow(&self.0))
    }
    fn __matmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.matmul(&operand(o)?))
    }
    fn __rmatmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(operand(o)?.matmul(&self.0))
    }
    fn __neg__(&self) -> PyResult<Self> {
        ok(-&self.0)
    }
    fn __pos__(&self) -> Self {
        self.clone()
    }
    fn __abs__(&self) -> PyResult<Self> {
        ok(self.0.abs())
    }
    fn __lt__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.lt(operand(o)?))
    }
    fn __le__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.le(operand(o)?))
    }
    fn __gt__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.gt(operand(o)?))
    }
    fn __ge__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.ge(operand(o)?))
    }
    fn __eq__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.eq(operand(o)?))
    }
    fn __ne__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.ne(operand(o)?))
    }

    // ----- elementwise math -----
    /// `self * self`.
    fn square(&self) -> PyResult<Self> {
        ok(self.0.square())
    }
    /// Square root.
    fn sqrt(&self) -> PyResult<Self> {
        ok(self.0.sqrt())
    }
    /// `1 / sqrt(self)`.
    fn rsqrt(&self) -> PyResult<Self> {
        ok(self.0.rsqrt())
    }
    /// `e ** self`.
    fn exp(&self) -> PyResult<Self> {
        ok(self.0.exp())
    }
    /// `2 ** self`.
    fn exp2(&self) -> PyResult<Self> {
        ok((&self.0 * std::f64::consts::LN_2).exp())
    }
    /// Natural logarithm.
    fn log(&self) -> PyResult<Self> {
        ok(self.0.log())
    }
    /// Base-2 logarithm.
    fn log2(&self) -> PyResult<Self> {
        ok(self.0.log() / std::f64::consts::LN_2)
    }
    /// Sine.
    fn sin(&self) -> PyResult<Self> {
        ok(self.0.sin())
    }
    /// Cosine.
    fn cos(&self) -> PyResult<Self> {
        ok(self.0.cos())
    }
    /// Tangent.
    fn tan(&self) -> PyResult<Self> {
        ok(self.0.tan())
    }
    /// Arc sine.
    fn asin(&self) -> PyResult<Self> {
        ok(self.0.asin())
    }
    /// Arc cosine.
    fn acos(&self) -> PyResult<Self> {
        ok(self.0.acos())
    }
    /// Arc tangent.
    fn atan(&self) -> PyResult<Self> {
        ok(self.0.atan())
    }
    /// `atan2(self, x)`.
    fn atan2(&self, x: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.atan2(operand(x)?))
    }
    /// Hyperbolic sine.
    fn sinh(&self) -> PyResult<Self> {
        ok(self.0.sinh())
    }
    /// Hyperbolic cosine.
    fn cosh(&self) -> PyResult<Self> {
        ok(self.0.cosh())
    }
    /// Hyperbolic tangent.
    fn tanh(&self) -> PyResult<Self> {
        ok(self.0.tanh())
    }
    /// Logistic sigmoid.
    fn sigmoid(&self) -> PyResult<Self> {
        ok(self.0.sigmoid())
    }
    /// `where(self > 0, self, 0)`.
    fn relu(&self) -> PyResult<Self> {
        ok(self.0.relu())
    }
    /// Absolute value.
    fn abs(&self) -> PyResult<Self> {
        ok(self.0.abs())
    }
    /// -1, 0 or 1.
    fn sign(&self) -> PyResult<Self> {
        ok(self.0.sign())
    }
    /// Round down.
    fn floor(&self) -> PyResult<Self> {
        ok(self.0.floor())
    }
    /// Round up.
    fn ceil(&self) -> PyResult<Self> {
        ok(self.0.ceil())
    }
    /// `1 / self`.
    fn reciprocal(&self) -> PyResult<Self> {
        ok(self.0.recip())
    }
    /// `-self`.
    fn neg(&self) -> PyResult<Self> {
        ok(-&self.0)
    }
    /// `self ** x`.
    fn pow(&self, x: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.pow(operand(x)?))
    }
    /// Elementwise maximum.
    fn maximum(&self, x: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.maximum(operand(x)?))
    }
    /// Elementwise minimum.
    fn minimum(&self, x: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.minimum(operand(x)?))
    }
    /// Limits to `[min_, max_]`.
    #[pyo3(signature = (min_ = None, max_ = None))]
    fn clip(&self, min_: Option<&Bound<'_, PyAny>>, max_: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let mut t = self.0.clone();
        if let Some(lo) = min_.filter(|v| !v.is_none()) {
            t = t.maximum(operand(lo)?);
        }
        if let Some(hi) = max_.filter(|v| !v.is_none()) {
            t = t.minimum(operand(hi)?);
        }
        ok(t)
    }
    /// Limits to `[min_, max_]` (tinygrad's name for `clip`).
    #[pyo3(signature = (min_ = None, max_ = None))]
    fn clamp(&self, min_: Option<&Bound<'_, PyAny>>, max_: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        self.clip(min_, max_)
    }
    /// `self ? x : y` elementwise (`self` is the condition).
    #[pyo3(name = "where")]
    fn where_(&self, x: &Bound<'_, PyAny>, y: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.where_(operand(x)?, operand(y)?))
    }
    /// Conversion to `dtype`.
    fn cast(&self, dtype: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.cast(dtype_from(dtype)?))
    }
    /// The tensor itself (anvil buffers are always contiguous).
    fn contiguous(&self) -> Self {
        self.clone()
    }

    // ----- reductions -----
    /// Sum over `axis` (`None`: all).
    #[pyo3(signature = (axis = None, keepdim = false))]
    fn sum(&self, axis: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Self> {
        self.reduce(axis, keepdim, Tensor::sum, |t, a, k| t.sum_axes(a, k))
    }
    /// Mean over `axis`.
    #[pyo3(signature = (axis = None, keepdim = false))]
    fn mean(&self, axis: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Self> {
        self.reduce(axis, keepdim, Tensor::mean, |t, a, k| t.mean_axes(a, k))
    }
    /// Maximum over `axis`.
    #[pyo3(signature = (axis = None, keepdim = false))]
    fn max(&self, axis: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Self> {
        self.reduce(axis, keepdim, Tensor::max, |t, a, k| t.max_axes(a, k))
    }
    /// Minimum over `axis`.
    #[pyo3(signature = (axis = None, keepdim = false))]
    fn min(&self, axis: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Self> {
        self.reduce(axis, keepdim, Tensor::min, |t, a, k| t.min_axes(a, k))
    }
    /// Product over `axis`.
    #[pyo3(signature = (axis = None, keepdim = false))]
    fn prod(&self, axis: Option<&Bound<'_, PyAny>>, keepdim: bool) -> PyResult<Self> {
        self.reduce(axis, keepdim, Tensor::prod, |t, a, k| t.prod_axes(a, k))
    }

    // ----- movement -----
    /// The same elements in a new shape (one extent may be -1).
    #[pyo3(signature = (*shape))]
    fn reshape(&self, shape: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let dims = shape_args(shape)?;
        let known: isize = dims.iter().filter(|&&d| d != -1).product();
        let dims: Vec<isize> = match dims.iter().filter(|&&d| d == -1).count() {
            0 => dims,
            1 if known > 0 => dims.iter().map(|&d| if d == -1 { self.0.numel() as isize / known } else { d }).collect(),
            _ => return Err(PyValueError::new_err(format!("reshape: cannot infer the shape {dims:?}"))),
        };
        ok(self.0.reshape(to_usize(&dims, "reshape")?))
    }
    /// Reorders the axes.
    #[pyo3(signature = (*order))]
    fn permute(&self, order: &Bound<'_, PyTuple>) -> PyResult<Self> {
        ok(self.0.permute(shape_args(order)?))
    }
    /// Swaps two axes.
    #[pyo3(signature = (dim0 = 1, dim1 = 0))]
    fn transpose(&self, dim0: isize, dim1: isize) -> PyResult<Self> {
        ok(self.0.swap_axes(dim0, dim1))
    }
    /// The matrix transpose (last two axes swapped).
    #[getter(T)]
    fn t(&self) -> PyResult<Self> {
        ok(self.0.transpose())
    }
    /// Broadcasts to `shape` (-1 keeps an extent).
    #[pyo3(signature = (*shape))]
    fn expand(&self, shape: &Bound<'_, PyTuple>) -> PyResult<Self> {
        let dims = shape_args(shape)?;
        let offset = dims.len().saturating_sub(self.0.ndim());
        let dims: Vec<isize> = dims
            .iter()
            .enumerate()
            .map(|(i, &d)| if d == -1 && i >= offset { self.0.shape()[i - offset] as isize } else { d })
            .collect();
        ok(self.0.expand(to_usize(&dims, "expand")?))
    }
    /// Zero padding: one `(before, after)` pair (or `None`) per axis.
    fn pad(&self, padding: Vec<Option<(usize, usize)>>) -> PyResult<Self> {
        let pads: Vec<(usize, usize)> = padding.into_iter().map(|p| p.unwrap_or((0, 0))).collect();
        ok(self.0.pad(&pads))
    }
    /// The sub-block: one `(start, end)` pair (or `None`) per axis.
    fn shrink(&self, arg: Vec<Option<(usize, usize)>>) -> PyResult<Self> {
        let ranges: Vec<(usize, usize)> = arg
            .iter()
            .enumerate()
            .map(|(d, r)| r.unwrap_or((0, self.0.shape().get(d).copied().unwrap_or(0))))
            .collect();
        ok(self.0.shrink(&ranges))
    }
    /// Reverses the order along `axis` (an int or a sequence).
    fn flip(&self, axis: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.flip(axes_arg(Some(axis))?.unwrap_or_default()))
    }
    /// Inserts an axis of extent 1.
    fn unsqueeze(&self, dim: isize) -> PyResult<Self> {
        ok(self.0.unsqueeze(dim))
    }
    /// Removes axis `dim` (extent 1), or every axis of extent 1.
    #[pyo3(signature = (dim = None))]
    fn squeeze(&self, dim: Option<isize>) -> PyResult<Self> {
        match dim {
            Some(d) => ok(self.0.squeeze(d)),
            None => ok(self.0.reshape(self.0.shape().iter().copied().filter(|&n| n != 1).collect::<Vec<_>>())),
        }
    }
    /// All elements as one axis.
    fn flatten(&self) -> PyResult<Self> {
        ok(self.0.flatten())
    }
    fn __getitem__(&self, key: &Bound<'_, PyAny>) -> PyResult<Self> {
        if let Ok(index) = key.cast::<PyTensor>() {
            return self.take_rows(&index.get().0);
        }
        let info = self.index(key)?;
        ok(self.0.slice(info))
    }
    /// Joins `self` and `others` along `dim`.
    #[pyo3(signature = (*others, dim = 0))]
    fn cat(&self, others: &Bound<'_, PyTuple>, dim: isize) -> PyResult<Self> {
        let mut all = vec![self.0.clone()];
        for o in others.iter() {
            all.push(operand(&o)?);
        }
        ok(Tensor::cat(&all, dim))
    }
    /// Joins tensors of one shape along a new axis `dim`.
    #[staticmethod]
    #[pyo3(signature = (*tensors, dim = 0))]
    fn stack(tensors: &Bound<'_, PyTuple>, dim: isize) -> PyResult<Self> {
        let items: Vec<Bound<'_, PyAny>> = if tensors.len() == 1 && !tensors.get_item(0)?.is_instance_of::<PyTensor>() {
            tensors.get_item(0)?.extract()?
        } else {
            tensors.iter().collect()
        };
        let ts = items.iter().map(operand).collect::<PyResult<Vec<_>>>()?;
        ok(Tensor::stack(&ts, dim))
    }

    // ----- products and indexing -----
    /// Matrix product (numpy rules).
    fn matmul(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.matmul(&operand(o)?))
    }
    /// Inner product.
    fn dot(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.dot(&operand(o)?))
    }
    /// `out[..., p, ...] = self[..., index[..., p, ...], ...]` along `dim`.
    fn gather(&self, dim: isize, index: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.gather(dim, &operand(index)?))
    }
    /// Elements by flat position (row-major).
    fn take(&self, index: &Bound<'_, PyAny>) -> PyResult<Self> {
        ok(self.0.take(&operand(index)?))
    }
    /// `out = zeros(shape); out.flat[index] += self`.
    fn scatter_add(&self, index: &Bound<'_, PyAny>, shape: Vec<usize>) -> PyResult<Self> {
        ok(Tensor::scatter_add(&self.0, &operand(index)?, shape))
    }

    // ----- constructors -----
    /// Zeros of the given shape.
    #[staticmethod]
    #[pyo3(signature = (*shape, dtype = None))]
    fn zeros(shape: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Self::full_of(shape, 0.0, dtype)
    }
    /// Ones of the given shape.
    #[staticmethod]
    #[pyo3(signature = (*shape, dtype = None))]
    fn ones(shape: &Bound<'_, PyTuple>, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        Self::full_of(shape, 1.0, dtype)
    }
    /// `value` everywhere in `shape`.
    #[staticmethod]
    #[pyo3(signature = (shape, value, dtype = None))]
    fn full(shape: &Bound<'_, PyAny>, value: f64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let dims: Vec<isize> = match shape.extract::<isize>() {
            Ok(n) => vec![n],
            Err(_) => shape.extract()?,
        };
        let dtype = dtype.map(dtype_from).transpose()?.unwrap_or(DType::F64);
        ok(Tensor::full(to_usize(&dims, "full")?, value, dtype))
    }
    /// The identity matrix.
    #[staticmethod]
    fn eye(n: usize) -> PyResult<Self> {
        ok(Tensor::eye(n))
    }
    /// `start, start + step, ...` below `stop` (a captured constant).
    #[staticmethod]
    #[pyo3(signature = (start, stop = None, step = 1.0, dtype = None))]
    fn arange(start: f64, stop: Option<f64>, step: f64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let (start, stop) = match stop {
            Some(s) => (start, s),
            None => (0.0, start),
        };
        if step == 0.0 {
            return Err(PyValueError::new_err("arange: step must not be zero"));
        }
        if !(start.is_finite() && stop.is_finite() && step.is_finite()) {
            return Err(PyValueError::new_err(format!(
                "arange: start, stop and step must be finite, got {start}, {stop}, {step}"
            )));
        }
        let count = ((stop - start) / step).ceil().max(0.0);
        if count > anvil::internals::shape::MAX_ELEMENTS as f64 {
            return Err(PyValueError::new_err(format!("arange: {count} elements is more than anvil supports (2^48)")));
        }
        let what = || format!("arange({start}, {stop}, {step})");
        let values =
            anvil::internals::array::try_from_shape_fn(what, &[count as usize], |i| start + step * i[0] as f64).py()?;
        let integral = start.fract() == 0.0 && step.fract() == 0.0;
        let default = if integral { DType::I64 } else { DType::F64 };
        let dtype = dtype.map(dtype_from).transpose()?.unwrap_or(default);
        ok(Tensor::from_host(HostArray::F64(values)).cast(dtype))
    }
}

impl PyTensor {
    fn full_of(shape: &Bound<'_, PyTuple>, value: f64, dtype: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let dims = shape_args(shape)?;
        let dtype = dtype.map(dtype_from).transpose()?.unwrap_or(DType::F64);
        ok(Tensor::full(to_usize(&dims, "shape")?, value, dtype))
    }

    /// `self[index]` for an integer index tensor: rows of the first axis.
    fn take_rows(&self, index: &Tensor) -> PyResult<Self> {
        if !index.dtype().is_int() {
            return Err(PyIndexError::new_err(format!(
                "tensors used as indices must be of integer type, got {} (boolean masks select a \
                 data-dependent number of elements: use `mask.where(x, 0)` instead)",
                crate::dtype::numpy_name(index.dtype())
            )));
        }
        let shape = self.0.shape().to_vec();
        let Some(&rows) = shape.first() else { return Err(PyIndexError::new_err("cannot index a 0-d tensor")) };
        let row: usize = shape[1..].iter().product();
        let within = Tensor::from_host(HostArray::I64(ArrayD::from_shape_fn(IxDyn(&[row]), |i| i[0] as i64)));
        let index = index.cast(DType::I64).clip(0.0, rows.saturating_sub(1) as f64);
        let flat = index.unsqueeze(-1) * row as f64 + within;
        let mut out_shape = index.shape().to_vec();
        out_shape.extend_from_slice(&shape[1..]);
        ok(self.0.take(&flat).reshape(out_shape))
    }
}

//! Traced functions from Python: tracing a Python callable, calling the native code on
//! numpy arrays (without the GIL), and their C++.

use crate::convert::{host_from_py, host_to_py};
use crate::dtype::{dtype_from, PyDType};
use crate::errors::IntoPyResult;
use crate::tensor::PyTensor;
use anvil::ad::SparseNumericalFunction;
use anvil::{Arg, DType, NumericalFunction, Tensor};
use numpy::{Element, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use std::ffi::c_void;
use std::sync::Arc;

/// A traced function, dense or sparse.
pub enum Traced {
    /// An ordinary function.
    Dense(NumericalFunction),
    /// A function returning the non-zeros of a sparse matrix.
    Sparse(SparseNumericalFunction),
}

impl Traced {
    /// The function (for a sparse one, the one returning its values).
    pub fn function(&self) -> &NumericalFunction {
        match self {
            Traced::Dense(f) => f,
            Traced::Sparse(s) => s,
        }
    }
}

/// `(rows, cols, nnz, indices, indptr, colors)` of a sparse function.
type SparseInfo = (usize, usize, usize, Vec<usize>, Vec<usize>, usize);

/// The native side of `anvil.NumericalFunction`.
#[pyclass(name = "_Function", module = "anvil._anvil", frozen)]
pub struct PyFunction(pub Arc<Traced>);

impl PyFunction {
    /// Wraps a dense function.
    pub fn dense(f: NumericalFunction) -> Self {
        PyFunction(Arc::new(Traced::Dense(f)))
    }
    /// Wraps a sparse function.
    pub fn sparse(s: SparseNumericalFunction) -> Self {
        PyFunction(Arc::new(Traced::Sparse(s)))
    }
    fn f(&self) -> &NumericalFunction {
        self.0.function()
    }
}

/// `(shape, dtype)` pairs as `Arg`s.
pub fn args_from(inputs: &Bound<'_, PyAny>) -> PyResult<Vec<Arg>> {
    let mut args = Vec::new();
    for item in inputs.try_iter()? {
        let item = item?;
        let (shape, dtype): (Vec<usize>, Bound<'_, PyAny>) = item.extract()?;
        args.push(Arg::with_dtype(shape, dtype_from(&dtype)?));
    }
    Ok(args)
}

/// Traces the Python callable `fn_` on symbolic inputs described by `inputs`
/// (`(shape, dtype)` pairs). It must return a `Tensor` or a tuple/list of them.
#[pyfunction]
pub fn trace(name: &str, fn_: &Bound<'_, PyAny>, inputs: &Bound<'_, PyAny>) -> PyResult<PyFunction> {
    let args = args_from(inputs)?;
    let py = fn_.py();
    let trace = anvil::internals::graph::TraceId::fresh();
    let symbols: Vec<PyTensor> = args
        .iter()
        .enumerate()
        .map(|(i, a)| PyTensor(Tensor::traced_input(trace, i, a.shape.clone(), a.dtype)))
        .collect();
    let result = fn_.call1(PyTuple::new(py, symbols)?)?;
    let outputs = output_tensors(name, &result)?;
    Ok(PyFunction::dense(NumericalFunction::from_trace(name, args, &outputs, trace).py()?))
}

fn output_tensors(name: &str, result: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    let not_tensor = |got: &Bound<'_, PyAny>| -> PyErr {
        let type_name = got.get_type().name().map(|n| n.to_string()).unwrap_or_default();
        PyTypeError::new_err(format!("function `{name}` must return a Tensor or a tuple of Tensors, got {type_name}"))
    };
    if let Ok(t) = result.cast::<PyTensor>() {
        return Ok(vec![t.get().0.clone()]);
    }
    if result.is_instance_of::<PyTuple>() || result.is_instance_of::<PyList>() {
        let mut out = Vec::new();
        for item in result.try_iter()? {
            let item = item?;
            match item.cast::<PyTensor>() {
                Ok(t) => out.push(t.get().0.clone()),
                Err(_) => return Err(not_tensor(&item)),
            }
        }
        return Ok(out);
    }
    Err(not_tensor(result))
}

/// Raw pointers handed to native code while the GIL is released.
struct Pointers(Vec<*mut c_void>, Vec<*mut c_void>);
// SAFETY: the arrays they point to are kept alive (and the outputs exclusively owned) by
// the caller for the duration of the call; nothing else touches them meanwhile.
unsafe impl Send for Pointers {}

/// A shape as Python prints a tuple: `(3,)`, `(2, 3)`, `()`.
fn py_shape(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!("({})", shape.iter().map(|n| n.to_string()).collect::<Vec<_>>().join(", ")),
    }
}

fn fits<T: Element>(a: &Bound<'_, PyAny>, shape: &[usize]) -> bool {
    a.cast::<PyArrayDyn<T>>().is_ok_and(|arr| arr.is_c_contiguous() && arr.shape() == shape)
}

/// Argument `i` as a C-contiguous numpy array of the declared dtype and shape.
///
/// The casting rule is numpy's `same_kind` (bool → int → float widen, floats narrow to
/// float32; float → int, anything → bool, complex, strings, dates and objects are refused),
/// and integers must be in the declared integer type's range: a call never truncates or
/// wraps a value silently.
fn fitted_array<'py>(
    py: Python<'py>,
    name: &str,
    i: usize,
    a: Bound<'py, PyAny>,
    arg: &Arg,
) -> PyResult<Bound<'py, PyAny>> {
    let ready = match arg.dtype {
        DType::F64 => fits::<f64>(&a, &arg.shape),
        DType::F32 => fits::<f32>(&a, &arg.shape),
        DType::I64 => fits::<i64>(&a, &arg.shape),
        DType::I32 => fits::<i32>(&a, &arg.shape),
        DType::Bool => fits::<bool>(&a, &arg.shape),
    };
    if ready {
        return if arg.dtype == DType::Bool { canonical_bools(py, a) } else { Ok(a) };
    }
    if a.is_none() {
        return Err(PyTypeError::new_err(format!(
            "{name}(): argument {i} is None; pass an array of shape {}",
            py_shape(&arg.shape)
        )));
    }
    let a = match a.cast::<PyTensor>() {
        Ok(t) => t.call_method0("numpy")?,
        Err(_) => a,
    };
    let np = py.import("numpy")?;
    let target = crate::dtype::numpy_name(arg.dtype);
    let given = np.call_method1("asarray", (a,))?;
    let source = given.getattr("dtype")?;
    if !np.call_method1("can_cast", (&source, target, "same_kind"))?.extract::<bool>()? {
        return Err(PyTypeError::new_err(format!(
            "{name}(): argument {i} of dtype {} cannot be cast to {target} (numpy's same_kind rule); \
             convert it explicitly, e.g. with .astype(np.{target})",
            source.str()?
        )));
    }
    check_integer_range(&np, name, i, &given, arg.dtype)?;
    let mut arr = np.call_method1("asarray", (given, target))?;
    if !arr.getattr("flags")?.getattr("c_contiguous")?.extract::<bool>()? {
        arr = arr.call_method1("copy", ("C",))?;
    }
    let shape: Vec<usize> = arr.getattr("shape")?.extract()?;
    if shape != arg.shape {
        return Err(PyValueError::new_err(format!(
            "{name}(): argument {i} must have shape {}, got {}",
            py_shape(&arg.shape),
            py_shape(&shape)
        )));
    }
    if arg.dtype == DType::Bool {
        return canonical_bools(py, arr);
    }
    Ok(arr)
}

/// A bool array whose bytes are all 0 or 1. numpy lets a bool array hold any byte (a view of
/// other data); native code reads a `bool` as its byte, so each non-zero byte becomes 1, as
/// the interpreter reads it.
fn canonical_bools<'py>(py: Python<'py>, a: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let bytes = a.call_method1("view", ("uint8",))?;
    let np = py.import("numpy")?;
    if np.call_method1("any", (bytes.call_method1("__gt__", (1u8,))?,))?.extract::<bool>()? {
        return bytes.call_method1("astype", ("bool",));
    }
    Ok(a)
}

/// Integers going into a narrower (or signed) integer type must be in its range.
fn check_integer_range(
    np: &Bound<'_, PyAny>,
    name: &str,
    i: usize,
    given: &Bound<'_, PyAny>,
    to: DType,
) -> PyResult<()> {
    let dtype = given.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let size: usize = dtype.getattr("itemsize")?.extract()?;
    let narrows = match to {
        DType::I32 => (kind == "i" && size > 4) || (kind == "u" && size >= 4),
        DType::I64 => kind == "u" && size >= 8,
        _ => false,
    };
    if !narrows || given.getattr("size")?.extract::<usize>()? == 0 {
        return Ok(());
    }
    let (lo, hi): (i128, i128) = match to {
        DType::I32 => (i32::MIN.into(), i32::MAX.into()),
        _ => (i64::MIN.into(), i64::MAX.into()),
    };
    for (extreme, bad) in [("min", lo), ("max", hi)] {
        let v: i128 = np.call_method1(extreme, (given,))?.call_method0("__int__")?.extract()?;
        if (extreme == "min" && v < bad) || (extreme == "max" && v > bad) {
            return Err(pyo3::exceptions::PyOverflowError::new_err(format!(
                "{name}(): argument {i} holds {v}, out of range for {}",
                crate::dtype::numpy_name(to)
            )));
        }
    }
    Ok(())
}

/// A `TypeError` unless `count` arguments were given to `f`.
fn check_count(f: &NumericalFunction, count: usize) -> PyResult<()> {
    if count == f.inputs().len() {
        return Ok(());
    }
    let shapes: Vec<String> = f.inputs().iter().map(|a| py_shape(&a.shape)).collect();
    Err(PyTypeError::new_err(format!(
        "{}() takes {} arguments (shapes {}) but {count} were given",
        f.name(),
        f.inputs().len(),
        shapes.join(", ")
    )))
}

/// The data pointer of a C-contiguous array of element type `T` and shape `shape`.
fn input_pointer<T: Element>(
    a: &Bound<'_, PyAny>,
    shape: &[usize],
    what: impl Fn() -> String,
) -> PyResult<*mut c_void> {
    let arr = a.cast::<PyArrayDyn<T>>().map_err(|_| {
        PyTypeError::new_err(format!("{}: expected a numpy array of {}", what(), std::any::type_name::<T>()))
    })?;
    if arr.shape() != shape {
        return Err(PyValueError::new_err(format!("{} must have shape {shape:?}, got {:?}", what(), arr.shape())));
    }
    if !arr.is_c_contiguous() {
        return Err(PyValueError::new_err(format!("{}: the array must be C-contiguous", what())));
    }
    Ok(arr.data() as *mut c_void)
}

fn output_array<'py>(py: Python<'py>, arg: &Arg) -> (Bound<'py, PyAny>, *mut c_void) {
    fn make<'py, T: Element>(py: Python<'py>, shape: &[usize]) -> (Bound<'py, PyAny>, *mut c_void) {
        // SAFETY: uninitialised memory is fine: the kernels write every output element
        // before anyone reads it.
        let a = unsafe { PyArrayDyn::<T>::new(py, shape, false) };
        let ptr = a.data() as *mut c_void;
        (a.into_any(), ptr)
    }
    match arg.dtype {
        DType::F64 => make::<f64>(py, &arg.shape),
        DType::F32 => make::<f32>(py, &arg.shape),
        DType::I64 => make::<i64>(py, &arg.shape),
        DType::I32 => make::<i32>(py, &arg.shape),
        DType::Bool => make::<bool>(py, &arg.shape),
    }
}

#[pymethods]
impl PyFunction {
    /// The function's name.
    #[getter]
    fn name(&self) -> &str {
        self.f().name()
    }

    /// Input specs as `(shape, dtype)` pairs.
    #[getter]
    fn inputs(&self) -> Vec<(Vec<usize>, PyDType)> {
        self.f().inputs().iter().map(|a| (a.shape.clone(), PyDType(a.dtype))).collect()
    }

    /// Output specs as `(shape, dtype)` pairs.
    #[getter]
    fn outputs(&self) -> Vec<(Vec<usize>, PyDType)> {
        self.f().outputs().iter().map(|a| (a.shape.clone(), PyDType(a.dtype))).collect()
    }

    /// Runs the native code (compiled on first use). `arrays` must be C-contiguous numpy
    /// arrays of exactly the declared dtypes and shapes (the Python wrapper ensures it).
    /// The GIL is released while the native code runs.
    fn call<'py>(&self, py: Python<'py>, arrays: Vec<Bound<'py, PyAny>>) -> PyResult<Vec<Bound<'py, PyAny>>> {
        let f = self.f();
        if arrays.len() != f.inputs().len() {
            return Err(PyTypeError::new_err(format!(
                "{}() takes {} arguments but {} were given",
                f.name(),
                f.inputs().len(),
                arrays.len()
            )));
        }
        let mut ins = Vec::with_capacity(arrays.len());
        for (i, (a, arg)) in arrays.iter().zip(f.inputs()).enumerate() {
            let what = || format!("{}(): argument {i}", f.name());
            ins.push(match arg.dtype {
                DType::F64 => input_pointer::<f64>(a, &arg.shape, what),
                DType::F32 => input_pointer::<f32>(a, &arg.shape, what),
                DType::I64 => input_pointer::<i64>(a, &arg.shape, what),
                DType::I32 => input_pointer::<i32>(a, &arg.shape, what),
                DType::Bool => input_pointer::<bool>(a, &arg.shape, what),
            }?);
        }
        for o in f.outputs() {
            let what = || format!("an output of `{}` of shape {:?}", f.name(), o.shape);
            anvil::internals::array::check_alloc(what, o.numel(), o.dtype.size()).py()?;
        }
        let (outputs, outs): (Vec<_>, Vec<_>) = f.outputs().iter().map(|o| output_array(py, o)).unzip();
        let pointers = Pointers(ins, outs);
        let traced = self.0.clone();
        // SAFETY: the pointers come from C-contiguous arrays of the declared dtypes and
        // shapes (checked above), alive for this call; the outputs are fresh. Compiling on
        // first use can take a while: other Python threads run meanwhile.
        py.detach(move || {
            let p = pointers;
            unsafe { traced.function().call_pointers(&p.0, &p.1) }
        })
        .py()?;
        Ok(outputs)
    }

    /// The CUDA translation unit the function runs as on `device="CUDA"` (for a vmapped
    /// function: its function of one item, one thread per item).
    #[getter]
    fn cuda_source(&self) -> String {
        self.f().cuda_source().text
    }

    /// The device the function runs on (`"CPU"`, `"CUDA"`).
    #[getter]
    fn device(&self) -> String {
        self.f().backend().name()
    }

    /// The same function on `device` (`"CPU"`, `"CUDA"`).
    fn with_device(&self, device: &str) -> PyResult<PyFunction> {
        let backend = anvil::Backend::parse(device).map_err(|e| PyValueError::new_err(e.to_string()))?;
        Ok(match &*self.0 {
            Traced::Dense(f) => PyFunction::dense(f.renamed(f.name()).py()?.with_backend(backend)),
            Traced::Sparse(s) => PyFunction::sparse(s.renamed(s.name()).py()?.with_backend(backend)),
        })
    }

    /// Runs the CUDA code on device memory: a device address per input, then per output
    /// (C-contiguous arrays of the declared dtypes and shapes; the Python wrapper checks
    /// them). With `synchronize`, waits for the device first (an input was written on
    /// another stream).
    fn call_device(&self, py: Python<'_>, addresses: Vec<u64>, synchronize: bool) -> PyResult<()> {
        let traced = self.0.clone();
        py.detach(move || {
            let f = traced.function();
            if synchronize {
                f.compile_cuda()?.synchronize()?;
            }
            // SAFETY: the wrapper passes the addresses of device arrays of the declared
            // dtypes and shapes, alive for the call.
            unsafe { f.call_device(&addresses) }
        })
        .py()
    }

    /// `fn(*args)` from Python: array-likes in (cast to the declared dtypes and made
    /// C-contiguous when they are not already), numpy out (one array, a tuple for several
    /// outputs, a numpy scalar for a 0-d output). Arrays that already fit are used in place.
    ///
    /// If any argument is a `Tensor` (inside another traced function), the function is
    /// applied symbolically instead: its graph is inlined and Tensors come back.
    #[pyo3(signature = (*args))]
    fn call_numpy<'py>(&self, py: Python<'py>, args: &Bound<'py, PyTuple>) -> PyResult<Bound<'py, PyAny>> {
        let f = self.f();
        if args.iter().any(|a| a.is_instance_of::<PyTensor>()) {
            let tensors = args.iter().map(|a| crate::tensor::operand(&a)).collect::<PyResult<Vec<_>>>()?;
            let mut outs: Vec<Bound<'py, PyAny>> = Vec::new();
            for t in f.apply(&tensors).py()? {
                outs.push(Bound::new(py, PyTensor(t))?.into_any());
            }
            return if outs.len() == 1 { Ok(outs.remove(0)) } else { Ok(PyTuple::new(py, outs)?.into_any()) };
        }
        check_count(f, args.len())?;
        let mut arrays = Vec::with_capacity(args.len());
        for (i, (a, arg)) in args.iter().zip(f.inputs()).enumerate() {
            arrays.push(fitted_array(py, f.name(), i, a, arg)?);
        }
        let outputs = self.call(py, arrays)?;
        let mut results = Vec::with_capacity(outputs.len());
        for o in outputs {
            let zero_d = o.getattr("ndim")?.extract::<usize>()? == 0;
            results.push(if zero_d { o.get_item(PyTuple::empty(py))? } else { o });
        }
        if results.len() == 1 {
            Ok(results.remove(0))
        } else {
            Ok(PyTuple::new(py, results)?.into_any())
        }
    }

    /// Evaluates with the reference interpreter; arguments are converted as for a call.
    fn eval(&self, py: Python<'_>, args: Vec<Bound<'_, PyAny>>) -> PyResult<Vec<Py<PyAny>>> {
        let f = self.f();
        check_count(f, args.len())?;
        let mut hosts = Vec::with_capacity(args.len());
        for (i, (a, arg)) in args.into_iter().zip(f.inputs()).enumerate() {
            hosts.push(host_from_py(&fitted_array(py, f.name(), i, a, arg)?)?);
        }
        let out = f.eval_dyn(&hosts).py()?;
        Ok(out.into_iter().map(|a| host_to_py(py, a)).collect())
    }

    /// This function's declarations in a module's `.hpp`.
    #[getter]
    fn header_code(&self) -> String {
        self.f().module_source().header
    }

    /// This function's definitions in a module's `.cpp`.
    #[getter]
    fn source_code(&self) -> String {
        self.f().module_source().source
    }

    /// The translation unit the JIT compiles.
    #[getter]
    fn jit_source(&self) -> String {
        self.f().jit_source()
    }

    /// The same function under another name.
    pub fn renamed(&self, name: &str) -> PyResult<PyFunction> {
        Ok(match &*self.0 {
            Traced::Dense(f) => PyFunction::dense(f.renamed(name).py()?),
            Traced::Sparse(s) => PyFunction::sparse(s.renamed(name).py()?),
        })
    }

    /// The function in anvil's function format (graph, inputs, name, sparsity).
    fn to_bytes<'py>(&self, py: Python<'py>) -> Bound<'py, pyo3::types::PyBytes> {
        let bytes = match &*self.0 {
            Traced::Dense(f) => f.to_bytes(),
            Traced::Sparse(s) => s.to_bytes(),
        };
        pyo3::types::PyBytes::new(py, &bytes)
    }

    /// True for sparse functions.
    #[getter]
    fn is_sparse(&self) -> bool {
        matches!(*self.0, Traced::Sparse(_))
    }

    /// `(rows, cols, nnz, indices, indptr, colors)` of a sparse function.
    fn sparse_info(&self) -> PyResult<SparseInfo> {
        match &*self.0 {
            Traced::Sparse(s) => {
                let (rows, cols) = s.shape();
                Ok((rows, cols, s.nnz(), s.indices(), s.indptr(), s.colors()))
            }
            Traced::Dense(_) => Err(PyTypeError::new_err("not a sparse function")),
        }
    }
}

/// A sparse function from a traced one and a user-given CSC pattern.
#[pyfunction]
pub fn sparse_from_pattern(
    f: &PyFunction,
    shape: (usize, usize),
    indices: Vec<usize>,
    indptr: Vec<usize>,
) -> PyResult<PyFunction> {
    let function = match &*f.0 {
        // A fresh function over the same graph (nothing is traced again).
        Traced::Dense(f) => NumericalFunction::from_tensors(f.name(), f.inputs().to_vec(), &f.output_tensors()).py()?,
        Traced::Sparse(_) => return Err(PyTypeError::new_err("the function is already sparse")),
    };
    Ok(PyFunction::sparse(SparseNumericalFunction::from_function(function, shape, &indices, &indptr).py()?))
}

/// A function from anvil's function format: sparse if the bytes carry a pattern.
#[pyfunction]
pub fn function_from_bytes(data: &[u8]) -> PyResult<PyFunction> {
    let function = NumericalFunction::from_bytes(data).py()?;
    if function.sparsity().is_some() {
        Ok(PyFunction::sparse(SparseNumericalFunction::from_bytes(data).py()?))
    } else {
        Ok(PyFunction::dense(function))
    }
}

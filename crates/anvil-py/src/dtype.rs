//! `anvil.dtypes`: element types.

use anvil::DType;
use pyo3::prelude::*;

/// An element type (`anvil.dtypes.float64`, ...).
#[pyclass(name = "DType", module = "anvil", frozen, eq, hash, from_py_object)]
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PyDType(pub DType);

#[pymethods]
impl PyDType {
    /// The short name (`float64`, `float32`, `int64`, `int32`, `bool`).
    #[getter]
    fn name(&self) -> &'static str {
        numpy_name(self.0)
    }

    /// Size of one element in bytes.
    #[getter]
    fn itemsize(&self) -> usize {
        self.0.size()
    }

    fn __repr__(&self) -> String {
        format!("dtypes.{}", numpy_name(self.0))
    }

    /// Pickling: by name.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, (&'static str,))> {
        Ok((py.import("anvil._anvil")?.getattr("as_dtype")?, (numpy_name(self.0),)))
    }

    #[classattr]
    fn float64() -> Self {
        PyDType(DType::F64)
    }
    #[classattr]
    fn float32() -> Self {
        PyDType(DType::F32)
    }
    #[classattr]
    fn int64() -> Self {
        PyDType(DType::I64)
    }
    #[classattr]
    fn int32() -> Self {
        PyDType(DType::I32)
    }
    #[classattr]
    fn bool() -> Self {
        PyDType(DType::Bool)
    }
}

/// numpy's name for a dtype.
pub fn numpy_name(d: DType) -> &'static str {
    match d {
        DType::F64 => "float64",
        DType::F32 => "float32",
        DType::I64 => "int64",
        DType::I32 => "int32",
        DType::Bool => "bool",
    }
}

/// A dtype from an `anvil.dtypes` value, a numpy dtype or a name.
pub fn dtype_from(obj: &Bound<'_, PyAny>) -> PyResult<DType> {
    if let Ok(d) = obj.extract::<PyDType>() {
        return Ok(d.0);
    }
    if obj.is_none() {
        // numpy reads None as float64; a dtype left None is more likely a mistake.
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "dtype is None: give one of anvil.dtypes.float64, float32, int64, int32, bool (or leave it out: float64)",
        ));
    }
    let name: String = match obj.extract::<String>() {
        Ok(name) => name,
        // numpy dtypes and scalar types (`np.float32`, `np.dtype("i4")`), Python's `float`...
        Err(_) => match obj.py().import("numpy")?.call_method1("dtype", (obj,)) {
            Ok(d) => d.getattr("name")?.extract()?,
            Err(_) => obj.str()?.extract()?,
        },
    };
    match name.as_str() {
        "float64" | "double" | "f64" => Ok(DType::F64),
        "float32" | "f32" | "single" => Ok(DType::F32),
        "int64" | "i64" | "long" => Ok(DType::I64),
        "int32" | "i32" => Ok(DType::I32),
        // numpy reads these names as float64 and int64, tinygrad's `dtypes.float` and
        // `dtypes.int` (anvil.dtypes too) are float32 and int32: neither reading is safe.
        "float" | "int" => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "dtype {name:?} is ambiguous: numpy reads it as {}64, anvil.dtypes.{name} (tinygrad's naming) is {}32; \
             write \"{}64\" or \"{}32\"",
            name, name, name, name
        ))),
        "bool" | "bool_" => Ok(DType::Bool),
        other => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "unsupported dtype {other:?}: use anvil.dtypes.float64, float32, int64, int32 or bool"
        ))),
    }
}

/// `anvil.dtypes` member for `obj` (an `anvil.dtypes` member, a numpy dtype or type, or a
/// name such as `"float32"`).
#[pyfunction]
pub fn as_dtype(obj: &Bound<'_, PyAny>) -> PyResult<PyDType> {
    dtype_from(obj).map(PyDType)
}

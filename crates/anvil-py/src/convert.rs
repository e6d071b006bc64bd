//! numpy arrays ↔ anvil host arrays.

use anvil::HostArray;
use numpy::{IntoPyArray, PyReadonlyArrayDyn};
use pyo3::prelude::*;

/// Any array-like (numpy array, nested lists, scalar) as a host array: floats become `f64`
/// (`float32` stays), integers `int64` (`int32` stays), booleans `bool`.
pub fn host_from_py(obj: &Bound<'_, PyAny>) -> PyResult<HostArray> {
    let py = obj.py();
    let np = py.import("numpy")?;
    let mut arr = np.call_method1("asarray", (obj,))?;
    if !arr.getattr("dtype")?.getattr("isnative")?.extract::<bool>()? {
        // Big-endian (or other non-native) data: the same values in native byte order.
        let native = arr.getattr("dtype")?.call_method1("newbyteorder", ("=",))?;
        arr = arr.call_method1("astype", (native,))?;
    }
    let dtype = arr.getattr("dtype")?;
    let kind: String = dtype.getattr("kind")?.extract()?;
    let size: usize = dtype.getattr("itemsize")?.extract()?;
    let cast = |name: &str| -> PyResult<Bound<'_, PyAny>> { arr.call_method1("astype", (name,)) };
    if kind == "u" && size == 8 && arr.getattr("size")?.extract::<usize>()? > 0 {
        let max: u64 = arr.call_method0("max")?.extract()?;
        if max > i64::MAX as u64 {
            return Err(pyo3::exceptions::PyOverflowError::new_err(format!(
                "uint64 value {max} does not fit int64, anvil's widest integer dtype"
            )));
        }
    }
    Ok(match (kind.as_str(), size) {
        ("f", 4) => HostArray::F32(arr.extract::<PyReadonlyArrayDyn<f32>>()?.as_array().to_owned()),
        ("f", 8) => HostArray::F64(arr.extract::<PyReadonlyArrayDyn<f64>>()?.as_array().to_owned()),
        ("f", _) => HostArray::F64(cast("float64")?.extract::<PyReadonlyArrayDyn<f64>>()?.as_array().to_owned()),
        ("i", 4) => HostArray::I32(arr.extract::<PyReadonlyArrayDyn<i32>>()?.as_array().to_owned()),
        ("i" | "u", _) => HostArray::I64(cast("int64")?.extract::<PyReadonlyArrayDyn<i64>>()?.as_array().to_owned()),
        // Read as bytes: numpy lets a bool array hold any byte (a view of other data), which
        // as a Rust `bool` would be undefined behaviour; any non-zero byte is true.
        ("b", _) => HostArray::Bool(
            arr.call_method1("view", ("uint8",))?.extract::<PyReadonlyArrayDyn<u8>>()?.as_array().mapv(|b| b != 0),
        ),
        _ => {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "cannot make a tensor from data of numpy dtype {}",
                dtype.str()?
            )))
        }
    })
}

/// A host array as a numpy array.
pub fn host_to_py(py: Python<'_>, a: HostArray) -> Py<PyAny> {
    match a {
        HostArray::F64(x) => x.into_pyarray(py).into_any().unbind(),
        HostArray::F32(x) => x.into_pyarray(py).into_any().unbind(),
        HostArray::I64(x) => x.into_pyarray(py).into_any().unbind(),
        HostArray::I32(x) => x.into_pyarray(py).into_any().unbind(),
        HostArray::Bool(x) => x.into_pyarray(py).into_any().unbind(),
    }
}

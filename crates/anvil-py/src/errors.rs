//! anvil errors as Python exceptions.

use pyo3::exceptions::{
    PyMemoryError, PyOSError, PyOverflowError, PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError,
    PyZeroDivisionError,
};
use pyo3::PyErr;

/// The Python exception for an anvil error: `TypeError` for a wrong number of arguments,
/// `ValueError` for bad shapes, names and patterns, `MemoryError` for arrays that cannot
/// fit, `OSError` for files, `RuntimeError` for the compiler and CUDA. Op errors drop the Rust source line (Python's traceback has the user's).
pub fn to_py(e: anvil::Error) -> PyErr {
    use anvil::Error as E;
    match e {
        E::Op { op, message, .. } => PyValueError::new_err(format!("{op}: {message}")),
        E::ArgumentCount { .. } => PyTypeError::new_err(e.to_string()),
        E::InputMismatch { .. }
        | E::InvalidName { .. }
        | E::Transform { .. }
        | E::LeakedTensor { .. }
        | E::Deserialize { .. }
        | E::Problem { .. }
        | E::Device { .. } => PyValueError::new_err(e.to_string()),
        E::Constant { kind: anvil::ConstantError::DivisionByZero, .. } => PyZeroDivisionError::new_err(e.to_string()),
        E::Constant { kind: anvil::ConstantError::Overflow, .. } => PyOverflowError::new_err(e.to_string()),
        E::Constant { .. } => PyValueError::new_err(e.to_string()),
        E::Io { .. } => PyOSError::new_err(e.to_string()),
        E::OutOfMemory { .. } => PyMemoryError::new_err(e.to_string()),
        E::CompileTimeout { .. } => PyTimeoutError::new_err(e.to_string()),
        E::UntrustedCache { .. } => PyOSError::new_err(e.to_string()),
        E::CompilerNotFound { .. }
        | E::InvalidCompiler { .. }
        | E::Compile { .. }
        | E::Load { .. }
        | E::MissingDependency { .. }
        | E::CudaUnavailable { .. }
        | E::Cuda { .. }
        | E::CudaCompile { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}

/// `Result<T, anvil::Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    /// Converts the error.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPyResult<T> for anvil::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}

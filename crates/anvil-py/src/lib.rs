//! The native core of the Python package `anvil` (`anvil._anvil`): PyO3 bindings over the
//! Rust crate. The Python-facing API (`anvil.NumericalFunction`, the decorators, `anvil.ad`)
//! is written in Python on top of these.

mod constant;
mod convert;
mod dtype;
mod errors;
mod function;
mod tensor;

use crate::errors::IntoPyResult;
use anvil::ad;
use function::PyFunction;
use pyo3::prelude::*;

fn dense(f: &PyFunction) -> &anvil::NumericalFunction {
    f.0.function()
}

macro_rules! transform {
    ($name:ident, $rust:path, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (f, wrt = 0))]
        fn $name(f: &PyFunction, wrt: usize) -> PyResult<PyFunction> {
            Ok(PyFunction::dense($rust(dense(f), wrt).py()?))
        }
    };
}

transform!(gradient, ad::gradient_wrt, "Gradient of the scalar first output with respect to input `wrt`.");
transform!(jacobian, ad::jacobian_wrt, "Dense Jacobian of the first output with respect to input `wrt`.");
transform!(hessian, ad::hessian_wrt, "Dense Hessian of the scalar first output with respect to input `wrt`.");

/// Forward mode: `(x..., t...) -> (y..., ydot...)`.
#[pyfunction]
fn jvp(f: &PyFunction) -> PyResult<PyFunction> {
    Ok(PyFunction::dense(ad::jvp(dense(f)).py()?))
}

/// Reverse mode: `(x..., ybar...) -> (xbar...)`.
#[pyfunction]
fn vjp(f: &PyFunction) -> PyResult<PyFunction> {
    Ok(PyFunction::dense(ad::vjp(dense(f)).py()?))
}

/// Sparse Jacobian (CSC non-zeros) by column colouring.
#[pyfunction]
#[pyo3(signature = (f, wrt = 0))]
fn spjacobian(f: &PyFunction, wrt: usize) -> PyResult<PyFunction> {
    Ok(PyFunction::sparse(ad::spjacobian_wrt(dense(f), wrt).py()?))
}

/// Sparse Hessian (upper triangle, CSC non-zeros) by star colouring.
#[pyfunction]
#[pyo3(signature = (f, wrt = 0))]
fn sphessian(f: &PyFunction, wrt: usize) -> PyResult<PyFunction> {
    Ok(PyFunction::sparse(ad::sphessian_wrt(dense(f), wrt).py()?))
}

/// Adds a batch axis (`in_axes[i]`: where input `i` is batched, `None`: shared).
#[pyfunction]
fn vmap(f: &PyFunction, batch: usize, in_axes: Vec<Option<usize>>) -> PyResult<PyFunction> {
    Ok(PyFunction::dense(anvil::vmap(dense(f), batch, &in_axes).py()?))
}

/// Writes `<module_name>.hpp` and `.cpp` into `directory`; returns their paths.
#[pyfunction]
fn generate_module(
    module_name: &str,
    fns: Vec<PyRef<'_, PyFunction>>,
    constants: Vec<constant::PyConstant>,
    directory: std::path::PathBuf,
) -> PyResult<(String, String)> {
    let functions: Vec<&anvil::NumericalFunction> = fns.iter().map(|f| f.0.function()).collect();
    let constants: Vec<anvil::CodegenIntConstant> = constants.into_iter().map(|c| c.0).collect();
    let (h, c) = anvil::generate_module_with_constants(module_name, &functions, &constants, directory).py()?;
    Ok((h.display().to_string(), c.display().to_string()))
}

#[pymodule]
fn _anvil(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<PyFunction>()?;
    m.add_class::<constant::PyConstant>()?;
    m.add_function(wrap_pyfunction!(function::trace, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::as_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(function::sparse_from_pattern, m)?)?;
    m.add_function(wrap_pyfunction!(generate_module, m)?)?;
    for f in [
        wrap_pyfunction!(jvp, m)?,
        wrap_pyfunction!(vjp, m)?,
        wrap_pyfunction!(gradient, m)?,
        wrap_pyfunction!(jacobian, m)?,
        wrap_pyfunction!(hessian, m)?,
        wrap_pyfunction!(spjacobian, m)?,
        wrap_pyfunction!(sphessian, m)?,
        wrap_pyfunction!(vmap, m)?,
    ] {
        m.add_function(f)?;
    }
    Ok(())
}

//! The native core of the Python package `anvil` (`anvil._anvil`): PyO3 bindings over the
//! Rust crate. The Python-facing API (`anvil.NumericalFunction`, the decorators, `anvil.ad`)
//! is written in Python on top of these.

mod constant;
mod convert;
mod dtype;
mod errors;
mod function;
mod opti;
mod tensor;

use crate::errors::IntoPyResult;
use anvil::ad;
use function::PyFunction;
use pyo3::prelude::*;

fn dense(f: &PyFunction) -> &anvil::NumericalFunction {
    f.0.function()
}

/// `f` under the name `name`, if one is given.
fn named(f: PyFunction, name: Option<&str>) -> PyResult<PyFunction> {
    match name {
        Some(n) => f.renamed(n),
        None => Ok(f),
    }
}

/// `then` applied to `f` itself, or to the function computing only its output `output`.
fn of_output<T>(
    f: &PyFunction,
    output: Option<usize>,
    then: impl FnOnce(&anvil::NumericalFunction) -> anvil::Result<T>,
) -> PyResult<T> {
    match output {
        None => then(dense(f)).py(),
        Some(k) => then(&dense(f).output(k).py()?).py(),
    }
}

macro_rules! transform {
    ($name:ident, $rust:path, $doc:literal) => {
        #[doc = $doc]
        #[pyfunction]
        #[pyo3(signature = (f, argnum = 0, output = None, name = None))]
        fn $name(f: &PyFunction, argnum: usize, output: Option<usize>, name: Option<&str>) -> PyResult<PyFunction> {
            named(PyFunction::dense(of_output(f, output, |g| $rust(g, argnum))?), name)
        }
    };
}

transform!(gradient, ad::gradient_wrt, "Gradient of the scalar output (`output`) with respect to input `argnum`.");
transform!(jacobian, ad::jacobian_wrt, "Dense Jacobian of the output (`output`) with respect to input `argnum`.");
transform!(hessian, ad::hessian_wrt, "Dense Hessian of the scalar output (`output`) with respect to input `argnum`.");

/// Forward mode: `(x..., t...) -> (y..., ydot...)`.
#[pyfunction]
#[pyo3(signature = (f, name = None))]
fn jvp(f: &PyFunction, name: Option<&str>) -> PyResult<PyFunction> {
    named(PyFunction::dense(ad::jvp(dense(f)).py()?), name)
}

/// Reverse mode: `(x..., ybar...) -> (xbar...)`.
#[pyfunction]
#[pyo3(signature = (f, name = None))]
fn vjp(f: &PyFunction, name: Option<&str>) -> PyResult<PyFunction> {
    named(PyFunction::dense(ad::vjp(dense(f)).py()?), name)
}

/// Sparse Jacobian (CSC non-zeros): column (or row) colouring, or star colouring for a
/// Jacobian known to be `symmetric`.
#[pyfunction]
#[pyo3(signature = (f, argnum = 0, symmetric = false, output = None, name = None))]
fn spjacobian(
    f: &PyFunction,
    argnum: usize,
    symmetric: bool,
    output: Option<usize>,
    name: Option<&str>,
) -> PyResult<PyFunction> {
    let sparse = of_output(f, output, |g| {
        if symmetric {
            ad::spjacobian_symmetric_wrt(g, argnum)
        } else {
            ad::spjacobian_wrt(g, argnum)
        }
    })?;
    named(PyFunction::sparse(sparse), name)
}

/// Sparse Hessian (upper triangle, CSC non-zeros) by star colouring.
#[pyfunction]
#[pyo3(signature = (f, argnum = 0, output = None, name = None))]
fn sphessian(f: &PyFunction, argnum: usize, output: Option<usize>, name: Option<&str>) -> PyResult<PyFunction> {
    named(PyFunction::sparse(of_output(f, output, |g| ad::sphessian_wrt(g, argnum))?), name)
}

/// Adds a batch axis (`in_axes[i]`: where input `i` is batched, `None`: shared; every
/// output gets it at `out_axis`).
#[pyfunction]
#[pyo3(signature = (f, batch, in_axes, out_axis = 0, name = None))]
fn vmap(
    f: &PyFunction,
    batch: usize,
    in_axes: Vec<Option<usize>>,
    out_axis: usize,
    name: Option<&str>,
) -> PyResult<PyFunction> {
    named(PyFunction::dense(ad::vmap_out(dense(f), batch, &in_axes, out_axis).py()?), name)
}

/// Raises `ValueError` unless `name` can name a function (a C++ identifier anvil accepts).
/// The GPU `ordinal` as `(name, (major, minor), multiprocessors)`, or an error saying why
/// there is none (no driver, no device).
#[pyfunction]
fn cuda_device(ordinal: usize) -> PyResult<(String, (i32, i32), i32)> {
    let context = anvil::jit::cuda::Context::open(ordinal).py()?;
    Ok((context.device_name().to_string(), context.compute_capability(), context.multiprocessors()))
}

#[pyfunction]
fn check_name(name: &str) -> PyResult<()> {
    anvil::check_identifier(name, "function").py()
}

/// Writes `<module_name>.hpp` and `.cpp` into `directory`; returns their paths. `items`
/// are native functions and solvers.
#[pyfunction]
fn generate_module(
    module_name: &str,
    items: Vec<Bound<'_, PyAny>>,
    constants: Vec<constant::PyConstant>,
    directory: std::path::PathBuf,
) -> PyResult<(String, String)> {
    let mut functions = Vec::new();
    let mut solvers = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if let Ok(f) = item.cast::<PyFunction>() {
            functions.push((i, f.get().0.clone()));
        } else if let Ok(s) = item.cast::<opti::PySolver>() {
            solvers.push((i, s.get().solver.clone()));
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "generate_module: item {i} is not a function or solver"
            )));
        }
    }
    let mut ordered: Vec<(usize, &dyn anvil::ModuleItem)> = functions
        .iter()
        .map(|(i, f)| (*i, f.function() as &dyn anvil::ModuleItem))
        .chain(solvers.iter().map(|(i, s)| (*i, s.module_item())))
        .collect();
    ordered.sort_by_key(|(i, _)| *i);
    let refs: Vec<&dyn anvil::ModuleItem> = ordered.into_iter().map(|(_, item)| item).collect();
    let constants: Vec<anvil::CodegenIntConstant> = constants.into_iter().map(|c| c.0).collect();
    let (h, c) = anvil::generate_module_with_constants(module_name, &refs, &constants, directory).py()?;
    Ok((h.display().to_string(), c.display().to_string()))
}

/// The include directories a solver module needs (PIQP's, Eigen's).
#[pyfunction]
fn opti_include_dirs() -> PyResult<Vec<String>> {
    Ok(anvil::opti::include_dirs().py()?.iter().map(|d| d.display().to_string()).collect())
}

/// The solver runtime as a static library for the JIT's compiler and flags (built once into
/// the cache): what a program links in place of a module's `anvil_opti.cpp`.
#[pyfunction]
fn opti_runtime_library(py: Python<'_>) -> PyResult<String> {
    let options = anvil::jit::CompilerOptions::default();
    Ok(py.detach(|| anvil::opti::runtime_library(&options)).py()?.display().to_string())
}

/// Where the Python package found PIQP's sources and Eigen's headers (searched after
/// `$ANVIL_PIQP_DIR` / `$ANVIL_EIGEN_DIR`).
#[pyfunction]
#[pyo3(signature = (piqp, eigen))]
fn opti_set_bundled_dirs(piqp: Option<std::path::PathBuf>, eigen: Option<std::path::PathBuf>) {
    anvil::opti::set_bundled_dirs(piqp, eigen);
}

#[pymodule]
fn _anvil(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<dtype::PyDType>()?;
    m.add_class::<tensor::PyTensor>()?;
    m.add_class::<PyFunction>()?;
    m.add_class::<constant::PyConstant>()?;
    m.add_class::<opti::PySolver>()?;
    m.add_function(wrap_pyfunction!(opti::sqp_solver, m)?)?;
    m.add_function(wrap_pyfunction!(opti::ipm_solver, m)?)?;
    m.add_class::<opti::PyMultistageProblem>()?;
    m.add_function(wrap_pyfunction!(opti::multistage_problem, m)?)?;
    m.add_function(wrap_pyfunction!(opti::control_problem, m)?)?;
    m.add_function(wrap_pyfunction!(opti::multistage_sqp_solver, m)?)?;
    m.add_function(wrap_pyfunction!(opti::multistage_ipm_solver, m)?)?;
    m.add_function(wrap_pyfunction!(opti_include_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(opti_runtime_library, m)?)?;
    m.add_function(wrap_pyfunction!(opti_set_bundled_dirs, m)?)?;
    m.add_function(wrap_pyfunction!(function::trace, m)?)?;
    m.add_function(wrap_pyfunction!(dtype::as_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(function::function_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(check_name, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device, m)?)?;
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

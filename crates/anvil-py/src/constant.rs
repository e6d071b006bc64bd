//! `anvil.CodegenIntConstant`.

use crate::errors::IntoPyResult;
use anvil::CodegenIntConstant;
use anvil::IntType;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// A compile-time integer constant, emitted as `constexpr` in generated C++. Supports
/// `+ - * //` with integers and other constants, tracking dependencies so that
/// declarations come in dependency order.
#[pyclass(name = "CodegenIntConstant", module = "anvil", frozen, eq, hash, from_py_object)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyConstant(pub CodegenIntConstant);

fn int_type(name: &str) -> PyResult<IntType> {
    match name {
        "int" => Ok(IntType::Int),
        "int32_t" => Ok(IntType::Int32),
        "int64_t" => Ok(IntType::Int64),
        other => Err(PyValueError::new_err(format!("type must be 'int', 'int32_t' or 'int64_t', got {other:?}"))),
    }
}

enum Operand {
    Constant(CodegenIntConstant),
    Int(i64),
}

fn operand(o: &Bound<'_, PyAny>) -> PyResult<Operand> {
    if let Ok(c) = o.extract::<PyConstant>() {
        return Ok(Operand::Constant(c.0));
    }
    match o.extract::<i64>() {
        Ok(i) => Ok(Operand::Int(i)),
        Err(_) => Err(PyTypeError::new_err("CodegenIntConstant arithmetic takes ints and CodegenIntConstants")),
    }
}

/// What `__reduce__` returns: the class and its constructor's arguments (name, value, type).
type Reduced<'py> = (Bound<'py, PyAny>, (String, i64, &'static str));

/// The constant, or its error as the Python exception for it.
fn checked(c: CodegenIntConstant) -> PyResult<PyConstant> {
    c.check().py()?;
    Ok(PyConstant(c))
}

#[pymethods]
impl PyConstant {
    #[new]
    #[pyo3(signature = (name, value, r#type = "int"))]
    fn new(name: &str, value: i64, r#type: &str) -> PyResult<Self> {
        Ok(PyConstant(CodegenIntConstant::with_type(name, value, int_type(r#type)?).py()?))
    }

    /// Names the expression `expr`.
    #[staticmethod]
    fn from_expr(name: &str, expr: &PyConstant) -> PyResult<Self> {
        Ok(PyConstant(CodegenIntConstant::from_expr(name, &expr.0).py()?))
    }

    /// The identifier (or, for an unnamed expression, its C++ text).
    #[getter]
    fn name(&self) -> &str {
        self.0.name()
    }

    /// The value.
    #[getter]
    fn value(&self) -> PyResult<i64> {
        self.0.value().py()
    }

    /// The C++ type.
    #[getter]
    fn r#type(&self) -> &'static str {
        self.0.int_type().cpp_name()
    }

    /// Pickling (and `copy`): a constant named with a value is rebuilt from its name, value
    /// and type; one defined by an expression cannot be yet (a clear error, not a wrong copy).
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<Reduced<'py>> {
        let c = &slf.get().0;
        if c.definition() != c.value().py()?.to_string() || !c.dependencies().is_empty() {
            return Err(PyTypeError::new_err(format!(
                "cannot pickle the CodegenIntConstant `{}`: it is defined by an expression ({}); \
                 pickle a constant named with its value instead (CodegenIntConstant(name, value))",
                c.name(),
                c.definition()
            )));
        }
        Ok((slf.get_type().into_any(), (c.name().to_string(), c.value().py()?, c.int_type().cpp_name())))
    }

    /// Immediate dependencies.
    fn dependencies(&self) -> Vec<PyConstant> {
        self.0.dependencies().iter().cloned().map(PyConstant).collect()
    }

    /// All named constants this one needs, itself included, dependencies first.
    fn all_dependencies(&self) -> PyResult<Vec<PyConstant>> {
        let order = CodegenIntConstant::declaration_order(std::slice::from_ref(&self.0)).py()?;
        Ok(order.into_iter().map(PyConstant).collect())
    }

    fn __int__(&self) -> PyResult<i64> {
        self.value()
    }
    fn __index__(&self) -> PyResult<i64> {
        self.value()
    }
    fn __repr__(&self) -> String {
        self.0.name().to_string()
    }
    fn __add__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(match operand(o)? {
            Operand::Constant(c) => &self.0 + &c,
            Operand::Int(i) => &self.0 + i,
        })
    }
    fn __radd__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__add__(o)
    }
    fn __sub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(match operand(o)? {
            Operand::Constant(c) => &self.0 - &c,
            Operand::Int(i) => &self.0 - i,
        })
    }
    fn __rsub__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(match operand(o)? {
            Operand::Int(i) => i - &self.0,
            Operand::Constant(c) => &c - &self.0,
        })
    }
    fn __mul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(match operand(o)? {
            Operand::Constant(c) => &self.0 * &c,
            Operand::Int(i) => &self.0 * i,
        })
    }
    fn __rmul__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        self.__mul__(o)
    }
    /// Python's floor division: the value and the emitted C++ both round toward minus
    /// infinity.
    fn __floordiv__(&self, o: &Bound<'_, PyAny>) -> PyResult<Self> {
        checked(match operand(o)? {
            Operand::Constant(c) => self.0.floor_div(&c),
            Operand::Int(i) => self.0.floor_div(i),
        })
    }
}

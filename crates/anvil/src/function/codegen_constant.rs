//! `CodegenIntConstant`: named integer constants emitted as `constexpr` in the header.

use super::names::check_identifier;
use crate::error::Result;
use std::collections::BTreeMap;
use std::fmt;
use std::ops::{Add, Div, Mul, Sub};
use std::sync::Arc;

/// The C++ type of a [`CodegenIntConstant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IntType {
    /// `int`.
    #[default]
    Int,
    /// `int32_t`.
    Int32,
    /// `int64_t`.
    Int64,
}

impl IntType {
    /// The C++ spelling.
    pub fn cpp_name(self) -> &'static str {
        match self {
            IntType::Int => "int",
            IntType::Int32 => "int32_t",
            IntType::Int64 => "int64_t",
        }
    }
}

/// A compile-time integer constant, emitted as `static constexpr` in a module's header.
///
/// Arithmetic (`+ - * /` with constants or integers) builds expressions that keep their
/// value and their dependencies; [`CodegenIntConstant::from_expr`] names one.
/// Declarations are emitted in dependency order.
///
/// ```
/// use anvil::CodegenIntConstant;
/// # fn main() -> anvil::Result<()> {
/// let n = CodegenIntConstant::new("N", 10)?;
/// let nx = CodegenIntConstant::new("NX", 4)?;
/// let total = CodegenIntConstant::from_expr("TOTAL", &(&n * &nx + 2))?;
/// assert_eq!(total.value(), 42);
/// assert_eq!(total.definition(), "((N * NX) + 2)");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CodegenIntConstant(Arc<Inner>);

#[derive(Debug, PartialEq, Eq, Hash)]
struct Inner {
    /// Identifier for named constants, the C++ expression for unnamed ones.
    name: String,
    /// For named constants defined by an expression: that expression.
    definition: Option<String>,
    value: i64,
    ty: IntType,
    named: bool,
    dependencies: Vec<CodegenIntConstant>,
}

impl CodegenIntConstant {
    /// A named constant of type `int`.
    pub fn new(name: &str, value: i64) -> Result<Self> {
        Self::with_type(name, value, IntType::Int)
    }

    /// A named constant of the given C++ type.
    pub fn with_type(name: &str, value: i64, ty: IntType) -> Result<Self> {
        check_identifier(name, "constant")?;
        Ok(CodegenIntConstant(Arc::new(Inner {
            name: name.into(),
            definition: None,
            value,
            ty,
            named: true,
            dependencies: Vec::new(),
        })))
    }

    /// Names the expression `expr`; its declaration refers to the named constants it uses.
    pub fn from_expr(name: &str, expr: &CodegenIntConstant) -> Result<Self> {
        check_identifier(name, "constant")?;
        let dependencies = if expr.0.named { vec![expr.clone()] } else { expr.0.dependencies.clone() };
        Ok(CodegenIntConstant(Arc::new(Inner {
            name: name.into(),
            definition: Some(expr.0.name.clone()),
            value: expr.0.value,
            ty: expr.0.ty,
            named: true,
            dependencies,
        })))
    }

    /// The value.
    pub fn value(&self) -> i64 {
        self.0.value
    }

    /// The identifier (named constants) or C++ expression (unnamed ones).
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The C++ type.
    pub fn int_type(&self) -> IntType {
        self.0.ty
    }

    /// The right-hand side of the declaration: the defining expression or the value.
    pub fn definition(&self) -> String {
        self.0.definition.clone().unwrap_or_else(|| self.0.value.to_string())
    }

    /// The named constants this one refers to directly.
    pub fn dependencies(&self) -> &[CodegenIntConstant] {
        &self.0.dependencies
    }

    /// All named constants needed to declare `roots`, dependencies first, each once.
    pub fn declaration_order(roots: &[CodegenIntConstant]) -> Vec<CodegenIntConstant> {
        fn visit(c: &CodegenIntConstant, seen: &mut BTreeMap<String, ()>, out: &mut Vec<CodegenIntConstant>) {
            if !c.0.named {
                c.0.dependencies.iter().for_each(|d| visit(d, seen, out));
                return;
            }
            if seen.insert(c.0.name.clone(), ()).is_some() {
                return;
            }
            c.0.dependencies.iter().for_each(|d| visit(d, seen, out));
            out.push(c.clone());
        }
        let (mut seen, mut out) = (BTreeMap::new(), Vec::new());
        roots.iter().for_each(|c| visit(c, &mut seen, &mut out));
        out
    }

    fn combine(&self, sym: &str, other_name: String, value: i64, other: Option<&CodegenIntConstant>) -> Self {
        let mut dependencies = vec![self.clone()];
        dependencies.extend(other.cloned());
        CodegenIntConstant(Arc::new(Inner {
            name: format!("({} {sym} {other_name})", self.0.name),
            definition: None,
            value,
            ty: self.0.ty,
            named: false,
            dependencies,
        }))
    }
}

impl fmt::Display for CodegenIntConstant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

macro_rules! constant_arithmetic {
    ($trait:ident, $method:ident, $sym:literal, $op:expr) => {
        impl $trait<&CodegenIntConstant> for &CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: &CodegenIntConstant) -> CodegenIntConstant {
                self.combine($sym, rhs.0.name.clone(), $op(self.0.value, rhs.0.value), Some(rhs))
            }
        }
        impl $trait<i64> for &CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: i64) -> CodegenIntConstant {
                self.combine($sym, rhs.to_string(), $op(self.0.value, rhs), None)
            }
        }
        impl $trait<i64> for CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: i64) -> CodegenIntConstant {
                (&self).$method(rhs)
            }
        }
        impl $trait<&CodegenIntConstant> for CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: &CodegenIntConstant) -> CodegenIntConstant {
                (&self).$method(rhs)
            }
        }
    };
}

impl Sub<&CodegenIntConstant> for i64 {
    type Output = CodegenIntConstant;
    /// `k - c`, declared as `(k - c)`.
    fn sub(self, rhs: &CodegenIntConstant) -> CodegenIntConstant {
        CodegenIntConstant(Arc::new(Inner {
            name: format!("({self} - {})", rhs.0.name),
            definition: None,
            value: self.wrapping_sub(rhs.0.value),
            ty: rhs.0.ty,
            named: false,
            dependencies: vec![rhs.clone()],
        }))
    }
}

constant_arithmetic!(Add, add, "+", |a: i64, b: i64| a.wrapping_add(b));
constant_arithmetic!(Sub, sub, "-", |a: i64, b: i64| a.wrapping_sub(b));
constant_arithmetic!(Mul, mul, "*", |a: i64, b: i64| a.wrapping_mul(b));
// C++ `/` truncates toward zero; so does this (division by zero gives 0 rather than UB).
constant_arithmetic!(Div, div, "/", |a: i64, b: i64| if b == 0 { 0 } else { a.wrapping_div(b) });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declarations_come_in_dependency_order() {
        let n = CodegenIntConstant::new("N", 3).unwrap();
        let m = CodegenIntConstant::from_expr("M", &(&n * 2)).unwrap();
        let k = CodegenIntConstant::from_expr("K", &(&m - &n)).unwrap();
        let names: Vec<String> = CodegenIntConstant::declaration_order(&[k.clone(), n.clone()])
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(names, ["N", "M", "K"]);
        assert_eq!(k.value(), 3);
        assert_eq!(k.definition(), "(M - N)");
        assert_eq!((&n / 2).value(), 1);
        let r = 10 - &n;
        assert_eq!((r.value(), r.name()), (7, "(10 - N)"));
    }
}

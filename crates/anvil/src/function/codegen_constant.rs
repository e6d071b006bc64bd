//! `CodegenIntConstant`: named integer constants emitted as `constexpr` in the header.

use super::names::check_identifier;
use crate::error::{ConstantError, Error, Result};
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Add, Div, Mul, Sub};
use std::sync::Arc;

/// The C++ type of a [`CodegenIntConstant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum IntType {
    /// `int` (32 bits on every platform anvil targets).
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

    /// True if `value` is representable in this type.
    pub fn holds(self, value: i64) -> bool {
        match self {
            IntType::Int | IntType::Int32 => i32::try_from(value).is_ok(),
            IntType::Int64 => true,
        }
    }

    /// The type of an operation on constants of types `self` and `other`.
    fn common(self, other: IntType) -> IntType {
        if self == IntType::Int64 || other == IntType::Int64 {
            IntType::Int64
        } else {
            self
        }
    }
}

/// A compile-time integer constant, emitted as `static constexpr` in a module's header.
///
/// Arithmetic (`+ - * /` with constants or integers, and [`floor_div`](Self::floor_div))
/// builds expressions that keep their value and their dependencies;
/// [`CodegenIntConstant::from_expr`] names one. Declarations are emitted in dependency order,
/// and the C++ evaluates every expression to the value anvil computed.
///
/// Like a [`crate::Tensor`], an expression that goes wrong (overflow of its C++ type,
/// division by zero) carries the error: [`value`](Self::value) and [`check`](Self::check)
/// return it, and naming or emitting the expression fails with it.
///
/// ```
/// use anvil::CodegenIntConstant;
/// # fn main() -> anvil::Result<()> {
/// let n = CodegenIntConstant::new("N", 10)?;
/// let nx = CodegenIntConstant::new("NX", 4)?;
/// let total = CodegenIntConstant::from_expr("TOTAL", &(&n * &nx + 2))?;
/// assert_eq!(total.value()?, 42);
/// assert_eq!(total.definition(), "((N * NX) + 2)");
/// assert!((&n / 0).value().is_err()); // division by zero
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct CodegenIntConstant(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// Identifier for named constants, the C++ expression for unnamed ones.
    name: String,
    /// For named constants defined by an expression: that expression.
    definition: Option<String>,
    value: i64,
    ty: IntType,
    named: bool,
    dependencies: Vec<CodegenIntConstant>,
    error: Option<Error>,
}

/// Two constants are equal if they declare the same thing: name, type, value, definition.
impl PartialEq for CodegenIntConstant {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for CodegenIntConstant {}
impl Hash for CodegenIntConstant {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.key().hash(state)
    }
}

/// The arithmetic of constant expressions.
#[derive(Clone, Copy)]
enum Arith {
    Add,
    Sub,
    Mul,
    /// C++ `/`: truncates toward zero.
    Div,
    /// Python's `//`: rounds toward minus infinity.
    FloorDiv,
}

impl Arith {
    fn apply(self, a: i64, b: i64) -> std::result::Result<i64, ConstantError> {
        let value = match self {
            Arith::Add => a.checked_add(b),
            Arith::Sub => a.checked_sub(b),
            Arith::Mul => a.checked_mul(b),
            Arith::Div | Arith::FloorDiv if b == 0 => return Err(ConstantError::DivisionByZero),
            Arith::Div => a.checked_div(b),
            Arith::FloorDiv => a.checked_div(b).map(|q| if a % b != 0 && (a < 0) != (b < 0) { q - 1 } else { q }),
        };
        value.ok_or(ConstantError::Overflow)
    }

    /// The C++ text of `a op b`, which evaluates to what [`apply`](Self::apply) computes.
    fn text(self, a: &str, b: &str) -> String {
        match self {
            Arith::Add => format!("({a} + {b})"),
            Arith::Sub => format!("({a} - {b})"),
            Arith::Mul => format!("({a} * {b})"),
            Arith::Div => format!("({a} / {b})"),
            // C++ `/` truncates: step down where the remainder is non-zero and the signs differ.
            Arith::FloorDiv => format!("({a} / {b} - (({a} % {b} != 0) && (({a} < 0) != ({b} < 0))))"),
        }
    }
}

impl CodegenIntConstant {
    /// A named constant of type `int`.
    pub fn new(name: &str, value: i64) -> Result<Self> {
        Self::with_type(name, value, IntType::Int)
    }

    /// A named constant of the given C++ type; the value must fit it.
    pub fn with_type(name: &str, value: i64, ty: IntType) -> Result<Self> {
        check_identifier(name, "constant")?;
        if !ty.holds(value) {
            return Err(constant_error(
                name,
                ConstantError::Overflow,
                format!("{value} does not fit `{}`", ty.cpp_name()),
            ));
        }
        Ok(CodegenIntConstant(Arc::new(Inner {
            name: name.into(),
            definition: None,
            value,
            ty,
            named: true,
            dependencies: Vec::new(),
            error: None,
        })))
    }

    /// Names the expression `expr`; its declaration refers to the named constants it uses.
    /// An expression that carries an error, or one that uses a constant called `name`
    /// (which would define `name` in terms of itself), is an error.
    pub fn from_expr(name: &str, expr: &CodegenIntConstant) -> Result<Self> {
        check_identifier(name, "constant")?;
        expr.check()?;
        if Self::declaration_order(std::slice::from_ref(expr))?.iter().any(|c| c.0.name == name) {
            let message = format!("`{name} = {}` defines `{name}` in terms of itself", expr.0.name);
            return Err(constant_error(name, ConstantError::SelfReference, message));
        }
        let dependencies = if expr.0.named { vec![expr.clone()] } else { expr.0.dependencies.clone() };
        Ok(CodegenIntConstant(Arc::new(Inner {
            name: name.into(),
            definition: Some(expr.0.name.clone()),
            value: expr.0.value,
            ty: expr.0.ty,
            named: true,
            dependencies,
            error: None,
        })))
    }

    /// The value, or the error of an expression that went wrong.
    pub fn value(&self) -> Result<i64> {
        self.check().map(|c| c.0.value)
    }

    /// `Ok(self)` unless the expression went wrong (overflow, division by zero).
    pub fn check(&self) -> Result<&Self> {
        match &self.0.error {
            Some(e) => Err(e.clone()),
            None => Ok(self),
        }
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

    /// `self // other` with Python's semantics (rounds toward minus infinity); the C++
    /// expression computes the same.
    pub fn floor_div(&self, other: impl Into<Operand>) -> CodegenIntConstant {
        self.combine(Arith::FloorDiv, other.into())
    }

    /// All named constants needed to declare `roots`, dependencies first, each once. Two
    /// different constants with one name, or an expression that went wrong, are errors.
    pub fn declaration_order(roots: &[CodegenIntConstant]) -> Result<Vec<CodegenIntConstant>> {
        let mut seen: BTreeMap<String, CodegenIntConstant> = BTreeMap::new();
        let mut out = Vec::new();
        // Post-order with an explicit stack: (constant, dependencies already pushed).
        let mut stack: Vec<(CodegenIntConstant, bool)> = roots.iter().rev().map(|c| (c.clone(), false)).collect();
        while let Some((c, expanded)) = stack.pop() {
            c.check()?;
            if expanded {
                if c.0.named && !seen.contains_key(&c.0.name) {
                    seen.insert(c.0.name.clone(), c.clone());
                    out.push(c);
                }
                continue;
            }
            if c.0.named {
                if let Some(known) = seen.get(&c.0.name) {
                    if known.key() != c.key() {
                        let message = format!(
                            "two different constants are named `{}`: `{}` and `{}`",
                            c.0.name,
                            known.declaration(),
                            c.declaration()
                        );
                        return Err(constant_error(&c.0.name, ConstantError::Conflict, message));
                    }
                    continue;
                }
            }
            stack.push((c.clone(), true));
            stack.extend(c.0.dependencies.iter().rev().map(|d| (d.clone(), false)));
        }
        Ok(out)
    }

    /// `static constexpr <type> <name> = <definition>`, as the header declares it.
    fn declaration(&self) -> String {
        format!("{} {} = {}", self.0.ty.cpp_name(), self.0.name, self.definition())
    }

    fn key(&self) -> (&str, Option<&str>, i64, IntType, bool) {
        (&self.0.name, self.0.definition.as_deref(), self.0.value, self.0.ty, self.0.named)
    }

    fn combine(&self, op: Arith, other: Operand) -> Self {
        let (other_text, other_value, other_type, other_constant) = match &other {
            Operand::Constant(c) => (c.0.name.clone(), c.0.value, c.0.ty, Some(c.clone())),
            Operand::Int(i) => (i.to_string(), *i, self.0.ty, None),
        };
        let name = op.text(&self.0.name, &other_text);
        let ty = self.0.ty.common(other_type);
        let error = self.0.error.clone().or_else(|| other_constant.as_ref().and_then(|c| c.0.error.clone())).or_else(
            || match op.apply(self.0.value, other_value) {
                Ok(v) if ty.holds(v) => None,
                Ok(v) => Some(constant_error(
                    &name,
                    ConstantError::Overflow,
                    format!("{v} does not fit `{}`", ty.cpp_name()),
                )),
                Err(kind) => {
                    let message = match kind {
                        ConstantError::DivisionByZero => "division by zero".to_string(),
                        _ => format!("the value overflows 64 bits ({} and {other_value})", self.0.value),
                    };
                    Some(constant_error(&name, kind, message))
                }
            },
        );
        let value = op.apply(self.0.value, other_value).unwrap_or(0);
        let mut dependencies = vec![self.clone()];
        dependencies.extend(other_constant);
        CodegenIntConstant(Arc::new(Inner { name, definition: None, value, ty, named: false, dependencies, error }))
    }
}

fn constant_error(name: &str, kind: ConstantError, message: String) -> Error {
    Error::Constant { name: name.to_string(), kind, message }
}

/// The right operand of constant arithmetic: another constant or an integer.
pub enum Operand {
    /// A constant (or constant expression).
    Constant(CodegenIntConstant),
    /// A plain integer.
    Int(i64),
}

impl From<i64> for Operand {
    fn from(i: i64) -> Self {
        Operand::Int(i)
    }
}
impl From<&CodegenIntConstant> for Operand {
    fn from(c: &CodegenIntConstant) -> Self {
        Operand::Constant(c.clone())
    }
}
impl From<CodegenIntConstant> for Operand {
    fn from(c: CodegenIntConstant) -> Self {
        Operand::Constant(c)
    }
}

impl fmt::Display for CodegenIntConstant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.name)
    }
}

macro_rules! constant_arithmetic {
    ($trait:ident, $method:ident, $op:expr) => {
        impl $trait<&CodegenIntConstant> for &CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: &CodegenIntConstant) -> CodegenIntConstant {
                self.combine($op, Operand::Constant(rhs.clone()))
            }
        }
        impl $trait<i64> for &CodegenIntConstant {
            type Output = CodegenIntConstant;
            fn $method(self, rhs: i64) -> CodegenIntConstant {
                self.combine($op, Operand::Int(rhs))
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

constant_arithmetic!(Add, add, Arith::Add);
constant_arithmetic!(Sub, sub, Arith::Sub);
constant_arithmetic!(Mul, mul, Arith::Mul);
// C++ `/` truncates toward zero; so does this. Python's `//` is `floor_div`.
constant_arithmetic!(Div, div, Arith::Div);

impl CodegenIntConstant {
    /// `k - self`, declared as `(k - self)` (for an integer on the left).
    pub fn rsub(&self, k: i64) -> CodegenIntConstant {
        let constant = CodegenIntConstant(Arc::new(Inner {
            name: k.to_string(),
            definition: None,
            value: k,
            ty: self.0.ty,
            named: false,
            dependencies: Vec::new(),
            error: None,
        }));
        constant.combine(Arith::Sub, Operand::Constant(self.clone()))
    }
}

impl Sub<&CodegenIntConstant> for i64 {
    type Output = CodegenIntConstant;
    /// `k - c`, declared as `(k - c)`.
    fn sub(self, rhs: &CodegenIntConstant) -> CodegenIntConstant {
        rhs.rsub(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(order: &[CodegenIntConstant]) -> Vec<&str> {
        order.iter().map(|c| c.name()).collect()
    }

    #[test]
    fn declarations_come_in_dependency_order() {
        let n = CodegenIntConstant::new("N", 3).unwrap();
        let m = CodegenIntConstant::from_expr("M", &(&n * 2)).unwrap();
        let k = CodegenIntConstant::from_expr("K", &(&m - &n)).unwrap();
        let order = CodegenIntConstant::declaration_order(&[k.clone(), n.clone()]).unwrap();
        assert_eq!(names(&order), ["N", "M", "K"]);
        assert_eq!(k.value().unwrap(), 3);
        assert_eq!(k.definition(), "(M - N)");
        assert_eq!((&n / 2).value().unwrap(), 1);
        let r = 10 - &n;
        assert_eq!((r.value().unwrap(), r.name()), (7, "(10 - N)"));
    }

    #[test]
    fn arithmetic_that_cannot_be_declared_is_an_error() {
        let n = CodegenIntConstant::new("N", 3).unwrap();
        assert!(matches!((&n / 0).value(), Err(Error::Constant { kind: ConstantError::DivisionByZero, .. })));
        assert!(matches!((&n * 1_000_000_000).value(), Err(Error::Constant { kind: ConstantError::Overflow, .. })));
        assert!(CodegenIntConstant::new("BIG", 1 << 40).is_err());
        let big = CodegenIntConstant::with_type("BIG", 1 << 40, IntType::Int64).unwrap();
        assert_eq!((&big * 4).value().unwrap(), 1 << 42);
        assert!((&big * (1 << 40)).value().is_err(), "i64 overflow");
        // Errors stick to everything built on them.
        assert!(((&n / 0) + 1).value().is_err());
        assert!(CodegenIntConstant::from_expr("X", &(&n / 0)).is_err());
    }

    #[test]
    fn floor_division_rounds_toward_minus_infinity() {
        let minus7 = CodegenIntConstant::new("M7", -7).unwrap();
        assert_eq!(minus7.floor_div(2).value().unwrap(), -4);
        assert_eq!((&minus7 / 2).value().unwrap(), -3);
        assert_eq!(minus7.floor_div(-2).value().unwrap(), 3);
    }

    #[test]
    fn self_references_and_conflicting_names_are_errors() {
        let n = CodegenIntConstant::new("N", 3).unwrap();
        let err = CodegenIntConstant::from_expr("N", &(&n + 1)).unwrap_err();
        assert!(matches!(err, Error::Constant { kind: ConstantError::SelfReference, .. }), "{err}");
        let other = CodegenIntConstant::new("N", 4).unwrap();
        let err = CodegenIntConstant::declaration_order(&[n.clone(), other]).unwrap_err();
        assert!(matches!(err, Error::Constant { kind: ConstantError::Conflict, .. }), "{err}");
        let same = CodegenIntConstant::new("N", 3).unwrap();
        assert_eq!(CodegenIntConstant::declaration_order(&[n, same]).unwrap().len(), 1);
    }
}

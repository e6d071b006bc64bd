//! Names that end up as C++ identifiers.

use crate::error::{Error, Result};

const CPP_KEYWORDS: &[&str] = &[
    "alignas",
    "alignof",
    "and",
    "and_eq",
    "asm",
    "auto",
    "bitand",
    "bitor",
    "bool",
    "break",
    "case",
    "catch",
    "char",
    "char16_t",
    "char32_t",
    "char8_t",
    "class",
    "compl",
    "concept",
    "const",
    "consteval",
    "constexpr",
    "constinit",
    "const_cast",
    "continue",
    "co_await",
    "co_return",
    "co_yield",
    "decltype",
    "default",
    "delete",
    "do",
    "double",
    "dynamic_cast",
    "else",
    "enum",
    "explicit",
    "export",
    "extern",
    "false",
    "float",
    "for",
    "friend",
    "goto",
    "if",
    "inline",
    "int",
    "long",
    "mutable",
    "namespace",
    "new",
    "noexcept",
    "not",
    "not_eq",
    "nullptr",
    "operator",
    "or",
    "or_eq",
    "private",
    "protected",
    "public",
    "register",
    "reinterpret_cast",
    "requires",
    "return",
    "short",
    "signed",
    "sizeof",
    "static",
    "static_assert",
    "static_cast",
    "struct",
    "switch",
    "template",
    "this",
    "thread_local",
    "throw",
    "true",
    "try",
    "typedef",
    "typeid",
    "typename",
    "union",
    "unsigned",
    "using",
    "virtual",
    "void",
    "volatile",
    "wchar_t",
    "while",
    "xor",
    "xor_eq",
    "Buffer",
    "std",
];

/// Checks that `name` can be a C++ identifier of ours: `[A-Za-z_][A-Za-z0-9_]*`, not a
/// keyword, not reserved (`__x`, `_X`).
pub fn check_identifier(name: &str, what: &str) -> Result<()> {
    let invalid = |reason: String| Err(Error::InvalidName { name: name.to_string(), reason });
    let mut chars = name.chars();
    match chars.next() {
        None => return invalid(format!("a {what} name must not be empty")),
        Some(c) if !(c.is_ascii_alphabetic() || c == '_') => {
            return invalid(format!("a {what} name must start with a letter or `_`"));
        }
        _ => {}
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return invalid(format!("a {what} name may only contain ASCII letters, digits and `_` (found {c:?})"));
    }
    if CPP_KEYWORDS.contains(&name) {
        return invalid(format!("`{name}` is a C++ keyword or a name anvil's generated code uses"));
    }
    let b = name.as_bytes();
    if name.starts_with("__") || (b[0] == b'_' && b.len() > 1 && b[1].is_ascii_uppercase()) {
        return invalid("names starting with `__` or `_` and a capital letter are reserved in C++".into());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_checked() {
        assert!(check_identifier("my_fn2", "function").is_ok());
        for bad in ["", "2fn", "my-fn", "class", "__x", "_X", "a b"] {
            assert!(check_identifier(bad, "function").is_err(), "{bad:?} should be rejected");
        }
    }
}

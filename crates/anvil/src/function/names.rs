//! Names that end up as C++ identifiers (the keywords and library names they must avoid
//! are the dialect's, [`CPP`]).

use crate::error::{Error, Result};
use crate::render::dialect::CPP;
use std::collections::HashSet;
use std::sync::OnceLock;

/// The longest name accepted: names become file names (the JIT cache adds about 70
/// characters, and file systems allow 255).
pub const MAX_NAME_LEN: usize = 128;

fn is_library_name(name: &str) -> bool {
    static NAMES: OnceLock<HashSet<&'static str>> = OnceLock::new();
    NAMES.get_or_init(|| CPP.library_names.lines().map(str::trim).filter(|l| !l.is_empty()).collect()).contains(name)
}

/// Checks that `name` can be a C++ identifier of ours: `[A-Za-z][A-Za-z0-9_]*`, at most
/// [`MAX_NAME_LEN`] characters, not a keyword, not reserved by C++ (a leading `_`, or `__`
/// anywhere), not a name the C/C++ standard library declares or defines as a macro (`sin`,
/// `free`, `size_t`, `NULL`, `y0`, ...), not one of anvil's own (`Buffer`, `ANVIL_...`).
///
/// ```
/// use anvil::check_identifier;
/// assert!(check_identifier("dynamics", "function").is_ok());
/// let err = check_identifier("sin", "function").unwrap_err();
/// assert!(err.to_string().contains("C/C++ standard library"));
/// ```
pub fn check_identifier(name: &str, what: &str) -> Result<()> {
    let invalid = |reason: String| Err(Error::InvalidName { name: name.to_string(), reason });
    let mut chars = name.chars();
    match chars.next() {
        None => return invalid(format!("a {what} name must not be empty")),
        Some('_') => {
            return invalid("names starting with `_` are reserved for the C++ implementation at global scope".into());
        }
        Some(c) if !c.is_ascii_alphabetic() => {
            return invalid(format!("a {what} name must start with a letter"));
        }
        _ => {}
    }
    if let Some(c) = name.chars().find(|c| !(c.is_ascii_alphanumeric() || *c == '_')) {
        return invalid(format!("a {what} name may only contain ASCII letters, digits and `_` (found {c:?})"));
    }
    if name.len() > MAX_NAME_LEN {
        return invalid(format!(
            "a {what} name may have at most {MAX_NAME_LEN} characters (it names files), this one has {}",
            name.len()
        ));
    }
    if name.contains("__") {
        return invalid("names containing `__` are reserved for the C++ implementation".into());
    }
    if CPP.keywords.contains(&name) {
        return invalid(format!("`{name}` is a C++ keyword or a name anvil's generated code uses"));
    }
    if let Some(prefix) = MACRO_PREFIXES.iter().find(|p| name.starts_with(**p)) {
        return invalid(format!("names starting with `{prefix}` are macros of anvil or of the solver runtime"));
    }
    if MODULE_NAMES.contains(&name) {
        return invalid(format!(
            "a generated module (or the program including it) declares `{name}` at global scope; choose another name"
        ));
    }
    if is_library_name(name) {
        return invalid(format!(
            "the C/C++ standard library declares `{name}` at global scope (or defines it as a macro), so the \
             generated C++ module would not compile; choose another name"
        ));
    }
    Ok(())
}

/// Global names a generated module declares besides the user's: the program's entry point
/// (every program including the header defines `main`), and the namespaces of the solver
/// runtimes (anvil_opti, anvil_ipm) and the libraries they compile (PIQP, Eigen).
const MODULE_NAMES: &[&str] = &["main", "anvil_opti", "anvil_ipm", "piqp", "Eigen"];

/// Macro prefixes of the solver runtime's libraries.
const MACRO_PREFIXES: &[&str] = &["ANVIL_", "EIGEN_", "PIQP_"];

/// The name of something derived from `base` (`f` → `f_grad`): `base`, `_`, `suffix`, with
/// no `__` where `base` ends in `_` (a legal name must give a legal derived name).
///
/// ```
/// use anvil::derived_name;
/// assert_eq!(derived_name("step", "defect"), "step_defect");
/// assert_eq!(derived_name("step_", "defect"), "step_defect");
/// ```
pub fn derived_name(base: &str, suffix: &str) -> String {
    format!("{}_{suffix}", base.trim_end_matches('_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_checked() {
        assert!(check_identifier("my_fn2", "function").is_ok());
        for bad in [
            "",
            "2fn",
            "my-fn",
            "class",
            "__x",
            "_X",
            "_x",
            "a__b",
            "a b",
            "Buffer",
            "std",
            "ANVIL_PRELUDE",
            "main",
            "piqp",
            "anvil_opti",
            "anvil_ipm",
            "Eigen",
            "EIGEN_ASM_COMMENT",
            "PIQP_INF",
        ] {
            assert!(check_identifier(bad, "function").is_err(), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn library_names_are_rejected_and_plausible_names_are_not() {
        let library = [
            "sin", "malloc", "free", "exit", "abort", "system", "abs", "memcpy", "size_t", "int64_t", "NULL",
            "SIZE_MAX", "RAND_MAX", "powf", "y0", "j1", "index", "random", "M_PI", "INFINITY", "linux", "unix",
            "round", "gamma", "select", "offsetof", "INT64_C", "remove", "rename", "printf", "FILE", "EOF",
        ];
        for name in library {
            let err = check_identifier(name, "function").expect_err(name).to_string();
            assert!(err.contains("standard library"), "{name}: {err}");
        }
        for name in ["f", "cost", "dynamics", "rk4", "step", "energy", "mlp", "residual", "time", "beta", "model"] {
            assert!(check_identifier(name, "function").is_ok(), "{name} should be accepted");
        }
    }

    #[test]
    fn names_fit_in_file_names() {
        assert!(check_identifier(&"a".repeat(MAX_NAME_LEN), "function").is_ok());
        let err = check_identifier(&"a".repeat(220), "function").unwrap_err().to_string();
        assert!(err.contains("at most 128 characters"), "{err}");
    }
}

//! anvil's optimisation runtime (`runtime/anvil_opti.{hpp,cpp}`): PIQP's QP solvers and a
//! sparse LDLᵀ behind an interface that needs neither PIQP's nor Eigen's headers.
//!
//! A generated module carries the runtime as a module item (its definitions inline, so
//! that several modules link into one program, and compiled unless
//! `ANVIL_OPTI_RUNTIME_EXTERN` is defined). The JIT defines that macro and links the runtime
//! from a library built once per compiler and flags together with PIQP's template
//! instantiations: a solver's translation unit then includes no third-party header at all.

use crate::error::Result;
use crate::function::ModuleItem;
use crate::render::ItemSource;

/// The runtime's declarations.
pub(crate) const HEADER: &str = include_str!("runtime/anvil_opti.hpp");
/// The runtime's definitions (they include PIQP and Eigen).
pub(crate) const SOURCE: &str = include_str!("runtime/anvil_opti.cpp");
/// Defined in a translation unit that links the runtime instead of compiling it.
pub(crate) const EXTERN_DEFINE: &str = "ANVIL_OPTI_RUNTIME_EXTERN";

/// The runtime as a module item (every solver depends on it; a module holds it once).
pub(crate) struct Runtime;

impl ModuleItem for Runtime {
    fn item_name(&self) -> &str {
        "anvil_opti"
    }

    fn source(&self) -> Result<ItemSource> {
        Ok(ItemSource {
            header: String::new(),
            source: format!("{HEADER}\n#ifndef {EXTERN_DEFINE}\n{SOURCE}#endif  // {EXTERN_DEFINE}\n"),
        })
    }
}

/// The runtime as the source of a library (non-inline definitions).
pub(crate) fn library_source() -> String {
    format!("#define ANVIL_OPTI_RUNTIME_LIBRARY\n{HEADER}\n{SOURCE}")
}

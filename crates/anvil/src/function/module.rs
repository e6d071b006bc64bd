//! `generate_module`: several functions into one C++ module (`.hpp` + `.cpp`).

use super::codegen_constant::CodegenIntConstant;
use super::names::check_identifier;
use super::numerical::NumericalFunction;
use crate::error::{Error, Result};
use crate::render::{self, ConstantDecl};
use std::path::{Path, PathBuf};

/// Writes `<module_name>.hpp` and `<module_name>.cpp` into `out_dir` (created if needed)
/// and returns their paths.
///
/// ```
/// use anvil::{Arg, NumericalFunction, generate_module};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let f = NumericalFunction::new("scale", |[x]| x * 2.0, [Arg::new(4)])?;
/// let dir = std::env::temp_dir().join("anvil_doc_generate_module");
/// let (hpp, cpp) = generate_module("demo", &[&f], &dir)?;
/// assert!(std::fs::read_to_string(hpp)?.contains("namespace scale"));
/// assert!(std::fs::read_to_string(cpp)?.contains("void call(IN0_t in0, OUT0_t out0, WS_t ws)"));
/// # Ok(()) }
/// ```
pub fn generate_module(
    module_name: &str,
    functions: &[&NumericalFunction],
    out_dir: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    generate_module_with_constants(module_name, functions, &[], out_dir)
}

/// [`generate_module`] that also declares codegen integer constants (and the constants
/// they depend on) in the header.
pub fn generate_module_with_constants(
    module_name: &str,
    functions: &[&NumericalFunction],
    constants: &[CodegenIntConstant],
    out_dir: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    check_identifier(module_name, "module")?;
    if functions.is_empty() {
        return Err(Error::InvalidName {
            name: module_name.into(),
            reason: "a module needs at least one function".into(),
        });
    }
    for (i, f) in functions.iter().enumerate() {
        if functions[..i].iter().any(|g| g.name() == f.name()) {
            return Err(Error::InvalidName {
                name: f.name().into(),
                reason: format!(
                    "two functions of module `{module_name}` have this name; names must be unique in a module"
                ),
            });
        }
    }
    let decls: Vec<ConstantDecl> = CodegenIntConstant::declaration_order(constants)?
        .iter()
        .map(|c| ConstantDecl { r#type: c.int_type().cpp_name().into(), name: c.name().into(), expr: c.definition() })
        .collect();
    if let Some(clash) = decls.iter().find(|d| functions.iter().any(|f| f.name() == d.name)) {
        return Err(Error::InvalidName {
            name: clash.name.clone(),
            reason: "a constant and a function share this name".into(),
        });
    }
    let sources: Vec<_> = functions.iter().map(|f| f.module_source()).collect();
    let (hpp, cpp) = render::render_module(module_name, &sources, &decls);
    let dir = out_dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create the output directory", dir, e))?;
    let hpp_path = dir.join(format!("{module_name}.hpp"));
    let cpp_path = dir.join(format!("{module_name}.cpp"));
    std::fs::write(&hpp_path, hpp).map_err(|e| Error::io("write", &hpp_path, e))?;
    std::fs::write(&cpp_path, cpp).map_err(|e| Error::io("write", &cpp_path, e))?;
    Ok((hpp_path, cpp_path))
}

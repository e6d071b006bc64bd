//! Module items and `generate_module`: functions, sparse functions and solvers into one C++
//! module (`.hpp` + `.cpp`), each item once, dependencies first.

use super::codegen_constant::CodegenIntConstant;
use super::names::check_identifier;
use super::numerical::NumericalFunction;
use super::sparse::SparseNumericalFunction;
use crate::error::{Error, Result};
use crate::render::{self, ConstantDecl, ItemSource, ModuleText};
use std::path::{Path, PathBuf};

/// Something a C++ module is made of: a function, a sparse function, a solver.
///
/// An item names the items its code calls ([`dependencies`](Self::dependencies), emitted
/// before it), the codegen constants it uses, the headers its declarations and definitions
/// include, and its own code: declarations for the `.hpp` and definitions for the `.cpp`,
/// inside the namespace [`item_name`](Self::item_name).
pub trait ModuleItem {
    /// The item's name: its C++ namespace, unique in a module.
    fn item_name(&self) -> &str;

    /// Items this one's code calls (emitted before it, each once per module).
    fn dependencies(&self) -> Vec<&dyn ModuleItem> {
        Vec::new()
    }

    /// Codegen constants this item's code uses (declared in the header, in dependency order).
    fn constants(&self) -> Vec<CodegenIntConstant> {
        Vec::new()
    }

    /// Headers included by the module, as written between `#include <` and `>`.
    fn includes(&self) -> Includes {
        Includes::default()
    }

    /// The item's declarations and definitions.
    fn source(&self) -> Result<ItemSource>;

    /// Files the module needs beside its `.hpp` and `.cpp`, as `(file name, text)`, written
    /// into the same directory (the solver runtime's definitions, compiled apart).
    fn files(&self) -> Vec<(String, String)> {
        Vec::new()
    }
}

/// The headers an item needs: in the `.hpp` (its declarations use them) or only in the `.cpp`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Includes {
    /// Included by the module's header.
    pub header: Vec<String>,
    /// Included by the module's source only.
    pub source: Vec<String>,
}

impl ModuleItem for NumericalFunction {
    fn item_name(&self) -> &str {
        self.name()
    }

    fn source(&self) -> Result<ItemSource> {
        Ok(self.module_source())
    }
}

impl ModuleItem for SparseNumericalFunction {
    fn item_name(&self) -> &str {
        self.name()
    }

    fn source(&self) -> Result<ItemSource> {
        Ok(self.module_source())
    }
}

/// Writes `<module_name>.hpp` and `<module_name>.cpp` into `out_dir` (created if needed)
/// and returns their paths. A module holding a PIQP-backed solver also writes the solver
/// runtime's definitions, `anvil_opti.cpp`, to compile once and link (see
/// [`crate::opti::runtime_library`] for a prebuilt one); one holding an interior-point solver
/// (or an SQP solver with interior-point QPs) writes the method's, `anvil_ipm.cpp`.
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
    items: &[&dyn ModuleItem],
    out_dir: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    generate_module_with_constants(module_name, items, &[], out_dir)
}

/// [`generate_module`] that also declares codegen integer constants (and the constants
/// they depend on) in the header.
pub fn generate_module_with_constants(
    module_name: &str,
    items: &[&dyn ModuleItem],
    constants: &[CodegenIntConstant],
    out_dir: impl AsRef<Path>,
) -> Result<(PathBuf, PathBuf)> {
    let text = module_text(module_name, items, constants)?;
    let dir = out_dir.as_ref();
    std::fs::create_dir_all(dir).map_err(|e| Error::io("create the output directory", dir, e))?;
    let hpp_path = dir.join(format!("{module_name}.hpp"));
    let cpp_path = dir.join(format!("{module_name}.cpp"));
    std::fs::write(&hpp_path, &text.header).map_err(|e| Error::io("write", &hpp_path, e))?;
    std::fs::write(&cpp_path, &text.source).map_err(|e| Error::io("write", &cpp_path, e))?;
    for (name, contents) in module_files(items)? {
        let path = dir.join(name);
        std::fs::write(&path, contents).map_err(|e| Error::io("write", &path, e))?;
    }
    Ok((hpp_path, cpp_path))
}

/// The files `items` (and what they depend on) need beside the module, each once.
fn module_files(items: &[&dyn ModuleItem]) -> Result<Vec<(String, String)>> {
    let mut files: Vec<(String, String)> = Vec::new();
    for item in dependency_order(items)? {
        for file in item.files() {
            if !files.iter().any(|f| f.0 == file.0) {
                files.push(file);
            }
        }
    }
    Ok(files)
}

/// The text of module `module_name` holding `items` (and what they depend on) and
/// `constants`: what [`generate_module`] writes.
pub fn module_text(
    module_name: &str,
    items: &[&dyn ModuleItem],
    constants: &[CodegenIntConstant],
) -> Result<ModuleText> {
    check_identifier(module_name, "module")?;
    if items.is_empty() {
        return Err(Error::InvalidName {
            name: module_name.into(),
            reason: "a module needs at least one function".into(),
        });
    }
    check_unique_names(module_name, items)?;
    let ordered = dependency_order(items)?;
    let mut all_constants = constants.to_vec();
    let mut includes = Includes::default();
    for item in &ordered {
        all_constants.extend(item.constants());
        let more = item.includes();
        includes.header.extend(more.header);
        includes.source.extend(more.source);
    }
    for list in [&mut includes.header, &mut includes.source] {
        list.sort();
        list.dedup();
    }
    includes.source.retain(|h| !includes.header.contains(h));
    let decls: Vec<ConstantDecl> = CodegenIntConstant::declaration_order(&all_constants)?
        .iter()
        .map(|c| ConstantDecl { r#type: c.int_type().cpp_name().into(), name: c.name().into(), expr: c.definition() })
        .collect();
    if let Some(clash) = decls.iter().find(|d| ordered.iter().any(|item| item.item_name() == d.name)) {
        return Err(Error::InvalidName {
            name: clash.name.clone(),
            reason: "a constant and a function share this name".into(),
        });
    }
    let sources: Vec<ItemSource> = ordered.iter().map(|item| item.source()).collect::<Result<_>>()?;
    Ok(render::render_module(module_name, &sources, &decls, &includes.header, &includes.source))
}

/// The items the caller listed must have distinct names.
fn check_unique_names(module_name: &str, items: &[&dyn ModuleItem]) -> Result<()> {
    for (i, item) in items.iter().enumerate() {
        if items[..i].iter().any(|other| other.item_name() == item.item_name()) {
            return Err(Error::InvalidName {
                name: item.item_name().into(),
                reason: format!(
                    "two functions of module `{module_name}` have this name; names must be unique in a module"
                ),
            });
        }
    }
    Ok(())
}

/// `items` and their dependencies, each before whatever depends on it, each once. Two
/// different items under one name are an error; the same code reached twice is emitted once.
fn dependency_order<'a>(items: &[&'a dyn ModuleItem]) -> Result<Vec<&'a dyn ModuleItem>> {
    let mut ordered: Vec<&'a dyn ModuleItem> = Vec::new();
    // An explicit stack (item, whether its dependencies are already pushed): no recursion.
    let mut stack: Vec<(&'a dyn ModuleItem, bool)> = items.iter().rev().map(|&item| (item, false)).collect();
    let mut in_progress: Vec<&str> = Vec::new();
    while let Some((item, expanded)) = stack.pop() {
        let name = item.item_name();
        if expanded {
            in_progress.retain(|n| *n != name);
            if let Some(seen) = ordered.iter().find(|o| o.item_name() == name) {
                if seen.source()? != item.source()? {
                    return Err(Error::InvalidName {
                        name: name.into(),
                        reason: "two different items of the module have this name (rename one)".into(),
                    });
                }
                continue;
            }
            ordered.push(item);
            continue;
        }
        if in_progress.contains(&name) {
            return Err(Error::InvalidName { name: name.into(), reason: "this item depends on itself".into() });
        }
        in_progress.push(name);
        stack.push((item, true));
        stack.extend(item.dependencies().into_iter().rev().map(|d| (d, false)));
    }
    Ok(ordered)
}

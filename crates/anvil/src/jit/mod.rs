//! JIT: compile generated C++ into a shared library, cache it by content, load it.
//!
//! Libraries are named by a hash of source, compiler and flags, and written atomically
//! (compile to a unique temporary name, then rename), so concurrent processes can share
//! the cache and two different libraries never share a path (the dynamic loader would
//! return the first one loaded from a path).

mod compiler;
mod library;

pub use compiler::{cache_dir, Compiler, CompilerOptions};
pub use library::{JitFunction, Workspace};

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::path::PathBuf;

/// Compiles `source` (unless the cache has it) and returns the library's path.
pub fn compile_cached(name: &str, source: &str, options: &CompilerOptions) -> Result<PathBuf> {
    let compiler = Compiler::find(options)?;
    let mut hasher = Sha256::new();
    for part in [source, &compiler.command, &compiler.version, &options.flags.join(" ")] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let hash: String = hasher.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect();
    let dir = cache_dir();
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create the JIT cache directory", &dir, e))?;
    let stem = format!("{name}-{hash}");
    let library = dir.join(format!("lib{stem}.so"));
    if library.exists() {
        return Ok(library);
    }
    let unique = format!("{}-{}", std::process::id(), unique_suffix());
    let source_path = dir.join(format!("{stem}.cpp"));
    let source_tmp = dir.join(format!("{stem}.cpp.{unique}.tmp"));
    std::fs::write(&source_tmp, source).map_err(|e| Error::io("write", &source_tmp, e))?;
    std::fs::rename(&source_tmp, &source_path).map_err(|e| Error::io("rename into", &source_path, e))?;
    let library_tmp = dir.join(format!("lib{stem}.{unique}.so.tmp"));
    let compiled = compiler.compile_shared(&source_path, &library_tmp, &options.flags);
    if let Err(e) = compiled {
        let _ = std::fs::remove_file(&library_tmp);
        return Err(e);
    }
    std::fs::rename(&library_tmp, &library).map_err(|e| Error::io("rename into", &library, e))?;
    Ok(library)
}

fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    (COUNTER.fetch_add(1, Ordering::Relaxed) << 32) ^ nanos as u64
}

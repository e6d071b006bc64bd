//! Finding and running the system C++ compiler.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// How the JIT compiles: which compiler, with which flags.
///
/// The default compiler is `$CXX`, else the first of `c++`, `g++`, `clang++` that runs.
/// The default flags are `-O3 -march=native -fno-math-errno -ffp-contract=off`, or the
/// whitespace-separated contents of `$ANVIL_CXXFLAGS` if set. `-fno-math-errno` only stops
/// libm calls from setting `errno` (nobody reads it here), which lets loops with `sqrt`
/// vectorize; it does not change results. `-ffp-contract=off` keeps `a*b + c` from being
/// fused into one FMA, so native results are bit-for-bit those of the interpreter (pass
/// `-ffp-contract=fast` for the last bit of speed).
///
/// With `vector_math` (the default), loops may also use SIMD reductions for sums and
/// products (`-fopenmp-simd`), and glibc's vector math library (libmvec, ≤ 4 ulp) where
/// the compiler and system support it: `sum(0.5 x² + sin x)` runs several times faster.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompilerOptions {
    /// The compiler command (`None`: found as described above).
    pub compiler: Option<String>,
    /// Optimisation and target flags (`-std=c++17 -shared -fPIC` are always added).
    pub flags: Vec<String>,
    /// Vectorised reductions and vector math (see above).
    pub vector_math: bool,
}

impl Default for CompilerOptions {
    fn default() -> Self {
        let flags = match std::env::var("ANVIL_CXXFLAGS") {
            Ok(f) => f.split_whitespace().map(String::from).collect(),
            Err(_) => ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off"].map(String::from).to_vec(),
        };
        CompilerOptions { compiler: None, flags, vector_math: true }
    }
}

/// A C++ compiler that answered `--version`.
#[derive(Clone, Debug)]
pub struct Compiler {
    /// The command that runs it.
    pub command: String,
    /// First line of its `--version` output (part of the cache key).
    pub version: String,
}

impl Compiler {
    /// The compiler named by `options`, or the system default.
    pub fn find(options: &CompilerOptions) -> Result<Compiler> {
        match &options.compiler {
            Some(cmd) => probe(cmd).ok_or_else(|| Error::CompilerNotFound { tried: format!("`{cmd}`") }),
            None => {
                static DEFAULT: OnceLock<Result<Compiler>> = OnceLock::new();
                DEFAULT.get_or_init(find_default).clone()
            }
        }
    }

    /// Compiles `source` into the shared library `output` (written by the compiler
    /// directly; the caller renames it into place), linking `libs` after the source.
    pub fn compile_shared(&self, source: &Path, output: &Path, flags: &[String], libs: &[String]) -> Result<()> {
        let mut cmd = Command::new(&self.command);
        cmd.args(["-std=c++17", "-shared", "-fPIC"]).args(flags).arg(source).arg("-o").arg(output).args(libs);
        let shown = format!("{cmd:?}").replace('"', "");
        let result = cmd.output().map_err(|e| Error::Compile {
            source_path: source.to_path_buf(),
            command: shown.clone(),
            message: e.to_string(),
        })?;
        if !result.status.success() {
            return Err(Error::Compile {
                source_path: source.to_path_buf(),
                command: shown,
                message: String::from_utf8_lossy(&result.stderr).into_owned(),
            });
        }
        Ok(())
    }
}

fn find_default() -> Result<Compiler> {
    let mut tried = Vec::new();
    let env = std::env::var("CXX").ok().filter(|s| !s.trim().is_empty());
    for cmd in env.iter().map(String::as_str).chain(["c++", "g++", "clang++"]) {
        tried.push(format!("`{cmd}`"));
        if let Some(c) = probe(cmd) {
            return Ok(c);
        }
    }
    Err(Error::CompilerNotFound { tried: tried.join(", ") })
}

fn probe(cmd: &str) -> Option<Compiler> {
    let out = Command::new(cmd).arg("--version").output().ok()?;
    if !out.status.success() {
        return None;
    }
    let version = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
    Some(Compiler { command: cmd.to_string(), version })
}

/// The directory compiled libraries are cached in: `$ANVIL_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/anvil`, else `~/.cache/anvil`, else the temp dir.
pub fn cache_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("ANVIL_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("anvil");
    }
    if let Some(home) = std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(home).join(".cache").join("anvil");
    }
    std::env::temp_dir().join("anvil")
}

//! JIT: build a generated translation unit into a shared library, cache it by content, load
//! it.
//!
//! Three parts, each its own module: the target's [`Toolchain`] (today [`CppToolchain`]:
//! compiler discovery, flags, the libmvec probe), the content-addressed [`cache`]
//! ([`build_cached`] serves any toolchain), and the loaded [`Library`] with a function's
//! entry points and workspaces ([`JitFunction`]).
//!
//! Set `ANVIL_VERBOSE=1` to see each compilation (size, compiler, time) on stderr: large
//! functions can take seconds to compile the first time.
//!
//! Libraries are named by a hash of source, compiler, flags and host CPU, and written
//! atomically (compile to a unique temporary name, then rename), so concurrent processes
//! can share the cache and two different libraries never share a path (the dynamic loader
//! would return the first one loaded from a path). The cache is code this process runs:
//! see [`cache`] for what is checked before a library is loaded.

pub mod cache;
mod compiler;
pub mod cuda;
mod library;
mod toolchain;

pub use cache::cache_dir;
pub use compiler::{split_command, Compiler, CompilerOptions, DEFAULT_CXXFLAGS};
pub use library::{JitFunction, Library, Workspace, WorkspaceConstant, WorkspacePool};
pub use toolchain::{CppToolchain, Toolchain};

use crate::error::{Error, Result};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Files removed when dropped, whatever happened meanwhile.
pub(crate) struct TemporaryFiles(pub(crate) Vec<PathBuf>);

impl Drop for TemporaryFiles {
    fn drop(&mut self) {
        for f in &self.0 {
            let _ = std::fs::remove_file(f);
        }
    }
}

/// The hex SHA-256 (first 12 bytes) of the parts, separated.
pub(crate) fn digest(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    hasher.finalize().iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// Compiles `source` (unless the cache holds a trusted copy) and returns the library's path.
pub fn compile_cached(name: &str, source: &str, options: &CompilerOptions) -> Result<PathBuf> {
    compile_unit(&Unit::new(name, source), options)
}

/// A translation unit for the JIT: generated source, the headers it includes from outside
/// (include directories, macros) and what it links (static libraries, objects).
///
/// A function's unit includes no header at all (it compiles fastest that way); a solver's
/// includes only the standard library's and links the solver runtime's library.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Unit {
    /// Names the library in the cache (with a hash of everything else).
    pub name: String,
    /// The C++ source.
    pub source: String,
    /// Directories of third-party headers (passed as `-isystem`: their warnings are theirs).
    pub include_dirs: Vec<PathBuf>,
    /// Macros, as `NAME` or `NAME=VALUE`.
    pub defines: Vec<String>,
    /// Static libraries and objects to link.
    pub link: Vec<PathBuf>,
    /// What else the result depends on (versions of the included headers): part of the key.
    pub fingerprint: String,
}

impl Unit {
    /// A unit of `source` with no outside headers or libraries.
    pub fn new(name: &str, source: &str) -> Unit {
        Unit { name: name.into(), source: source.into(), ..Unit::default() }
    }

    pub(crate) fn header_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        for dir in &self.include_dirs {
            flags.extend(["-isystem".to_string(), dir.display().to_string()]);
        }
        flags.extend(self.defines.iter().map(|d| format!("-D{d}")));
        flags
    }
}

/// Compiles `unit` with the C++ toolchain `options` describe (unless the cache holds a
/// trusted copy) and returns the library's path.
pub fn compile_unit(unit: &Unit, options: &CompilerOptions) -> Result<PathBuf> {
    let root = options.cache_dir.clone().unwrap_or_else(cache_dir);
    let dir = cache::private_dir(&root)?;
    let toolchain = CppToolchain::new(options, &dir)?;
    build_cached(unit, &toolchain, &dir)
}

/// Builds `unit` with `toolchain` into the cache directory `dir` (unless it holds a trusted
/// copy) and returns the library's path: the cache and its trust checks serve every
/// toolchain alike.
pub fn build_cached(unit: &Unit, toolchain: &dyn Toolchain, dir: &Path) -> Result<PathBuf> {
    // The CPU is part of the key: `-march=native` code from a shared cache must not run on
    // a machine without the same instructions.
    let mut key = vec![unit.source.clone()];
    key.extend(toolchain.key(unit));
    key.extend([unit.fingerprint.clone(), host_cpu()]);
    let hash = digest(&key.iter().map(String::as_str).collect::<Vec<_>>());
    let name = &unit.name;
    let stem = format!("{name}-{hash}");
    let extension = toolchain.output_extension();
    let library = dir.join(format!("lib{stem}.{extension}"));
    let cached = || cache::is_trusted(&library) && unit.link.iter().all(|l| cache::is_trusted(l));
    let Some(_turn) = cache::BuildTurn::unless_built(&library, cached, || {
        if verbose() {
            eprintln!("anvil: waiting for another build of `{name}`");
        }
    }) else {
        return Ok(library);
    };
    let unique = format!("{}-{}", std::process::id(), unique_suffix());
    let source_path = dir.join(format!("{stem}.{}", toolchain.source_extension()));
    write_atomically(&source_path, &unit.source)?;
    let library_tmp = dir.join(format!("lib{stem}.{unique}.{extension}.tmp"));
    let guard = TemporaryFiles(vec![library_tmp.clone()]);
    let start = std::time::Instant::now();
    if verbose() {
        eprintln!(
            "anvil: compiling `{name}` ({} kB of source) with {}",
            unit.source.len() / 1024,
            toolchain.describe()
        );
    }
    toolchain.build(unit, &source_path, &library_tmp)?;
    if verbose() {
        eprintln!("anvil: compiled `{name}` in {:.2} s -> {}", start.elapsed().as_secs_f64(), library.display());
    }
    install(&library_tmp, &library)?;
    drop(guard);
    Ok(library)
}

/// Moves a freshly built file into the cache, its digest recorded first: a reader never
/// finds a new file with no digest (at worst a mismatch, after which it builds again).
fn install(built: &Path, destination: &Path) -> Result<()> {
    let digest = cache::file_digest(built).map_err(|e| Error::io("read", built, e))?;
    write_atomically(&cache::digest_path(destination), &digest)?;
    std::fs::rename(built, destination).map_err(|e| Error::io("rename into", destination, e))
}

fn verbose() -> bool {
    std::env::var_os("ANVIL_VERBOSE").is_some_and(|v| !v.is_empty() && v != "0")
}

/// A static library built from C++ sources once per compiler, flags and CPU, and kept in the
/// cache (the solver runtime, PIQP and Eigen compiled in: every solver links it instead of compiling
/// them again).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StaticLibrary {
    /// Names the archive in the cache (with a hash of everything else).
    pub name: String,
    /// The source files.
    pub sources: Vec<PathBuf>,
    /// Sources given as text, `(name, text)`: written into the cache and compiled with the others.
    pub texts: Vec<(String, String)>,
    /// Directories of the headers they include.
    pub include_dirs: Vec<PathBuf>,
    /// Macros, as `NAME` or `NAME=VALUE`.
    pub defines: Vec<String>,
    /// What else the result depends on (versions of the included headers): part of the key.
    pub fingerprint: String,
}

/// Builds `library` (unless the cache holds a trusted copy; sources compile in parallel) and
/// returns the archive's path. Building says so on stderr: it can take tens of seconds.
pub fn build_static_library(library: &StaticLibrary, options: &CompilerOptions) -> Result<PathBuf> {
    let compiler = Compiler::find(options)?;
    let root = options.cache_dir.clone().unwrap_or_else(cache_dir);
    let dir = cache::private_dir(&root)?;
    let header_flags =
        Unit { include_dirs: library.include_dirs.clone(), defines: library.defines.clone(), ..Unit::default() }
            .header_flags();
    let mut flags = toolchain::correct_flags(&compiler, options, &dir);
    flags.extend(header_flags);
    let mut contents = Vec::new();
    for source in &library.sources {
        contents.push(cache::file_digest(source).map_err(|e| Error::io("read", source, e))?);
    }
    let mut sources = library.sources.clone();
    for (name, text) in &library.texts {
        let path = dir.join(format!("{name}-{}.cpp", digest(&[text])));
        write_atomically(&path, text)?;
        contents.push(digest(&[text]));
        sources.push(path);
    }
    let hash = digest(&[
        &contents.join(" "),
        &compiler.command_line(),
        &compiler.version,
        &flags.join(" "),
        &library.fingerprint,
        &host_cpu(),
    ]);
    let archive = dir.join(format!("lib{}-{hash}.a", library.name));
    let Some(_turn) = cache::BuildTurn::unless_built(
        &archive,
        || cache::is_trusted(&archive),
        || eprintln!("anvil: waiting for the {} library, which another thread or process is building...", library.name),
    ) else {
        return Ok(archive);
    };
    let unique = format!("{}-{}", std::process::id(), unique_suffix());
    let objects: Vec<PathBuf> =
        (0..sources.len()).map(|i| dir.join(format!("{}-{hash}.{unique}.{i}.o", library.name))).collect();
    let archive_tmp = dir.join(format!("lib{}-{hash}.{unique}.a.tmp", library.name));
    let _guard = TemporaryFiles(objects.iter().cloned().chain([archive_tmp.clone()]).collect());
    let start = std::time::Instant::now();
    eprintln!(
        "anvil: building the {} library with {} (once per compiler and flags; {} files)...",
        library.name,
        compiler.command_line(),
        sources.len()
    );
    compile_in_parallel(&compiler, &sources, &objects, &flags, options)?;
    archive_objects(&archive_tmp, &objects, options)?;
    eprintln!("anvil: built the {} library in {:.1} s", library.name, start.elapsed().as_secs_f64());
    install(&archive_tmp, &archive)?;
    Ok(archive)
}

/// Compiles `sources[i]` into `objects[i]`, as many at once as there are cores.
fn compile_in_parallel(
    compiler: &Compiler,
    sources: &[PathBuf],
    objects: &[PathBuf],
    flags: &[String],
    options: &CompilerOptions,
) -> Result<()> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(sources.len()).max(1);
    let results: Vec<Result<()>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= sources.len() {
                        return Ok(());
                    }
                    compiler.compile_object(&sources[i], &objects[i], flags, options.timeout)?;
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    results.into_iter().collect()
}

/// `ar rcs archive objects...` (`$AR` names another archiver).
fn archive_objects(archive: &Path, objects: &[PathBuf], options: &CompilerOptions) -> Result<()> {
    let ar = std::env::var("AR").ok().filter(|a| !a.trim().is_empty()).unwrap_or_else(|| "ar".into());
    let words = split_command(&ar).ok().filter(|w| !w.is_empty()).ok_or_else(|| Error::InvalidCompiler {
        command: ar.clone(),
        origin: "$AR".into(),
        message: "it is not a command line".into(),
    })?;
    let mut cmd = std::process::Command::new(&words[0]);
    cmd.args(&words[1..]).arg("rcs").arg(archive).args(objects);
    compiler::run_tool(cmd, archive, options.timeout)
}

/// Writes `text` to `path` through a unique temporary file and a rename.
pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}-{}.tmp", std::process::id(), unique_suffix()));
    let tmp = PathBuf::from(tmp);
    std::fs::write(&tmp, text).map_err(|e| Error::io("write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io("rename into", path, e)
    })
}

/// The host CPU's model and feature flags (Linux), or the architecture elsewhere.
pub(crate) fn host_cpu() -> String {
    static CPU: OnceLock<String> = OnceLock::new();
    CPU.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
        };
        let model = field("model name").or_else(|| field("CPU part")).unwrap_or_default();
        let features = field("flags").or_else(|| field("Features")).unwrap_or_default();
        format!("{} {model} {features}", std::env::consts::ARCH)
    })
    .clone()
}

pub(crate) fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    (COUNTER.fetch_add(1, Ordering::Relaxed) << 32) ^ nanos as u64
}

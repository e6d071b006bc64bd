//! Where the headers the solver runtime includes are (PIQP, Eigen), and the runtime's
//! library, built once per compiler and flags into the JIT cache.
//!
//! PIQP is found in `$ANVIL_PIQP_DIR`, else in the directory a package bundled it in
//! ([`set_bundled_dirs`]: the Python wheel carries it), else in this source tree's `.deps/`
//! (where `scripts/setup.sh` puts it), else in anvil's cache directory; if it is in none of
//! them and this crate's source tree has `scripts/fetch_piqp.py` (a path or git dependency
//! of a Rust program), that script fetches PIQP's pinned, digest-checked sdist into the cache
//! directory the first time a solver needs it (with `python3`; say so on stderr). Eigen is
//! found in `$ANVIL_EIGEN_DIR`, else in the bundled directory (the `cmeel-eigen` package, for
//! Python), else in the system's `/usr/include/eigen3` or `/usr/local/include/eigen3`.

use crate::error::{Error, Result};
use crate::jit::{self, CompilerOptions, StaticLibrary};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The PIQP release anvil's solvers are written against.
pub const PIQP_VERSION: &str = "0.7.0";

static BUNDLED: Mutex<(Option<PathBuf>, Option<PathBuf>)> = Mutex::new((None, None));

/// Tells anvil where a package bundled PIQP's sources (the directory holding `include/` and
/// `src/`) and Eigen's headers (the directory holding `Eigen/`): searched after the
/// environment variables and before the system. The Python package calls this on import.
pub fn set_bundled_dirs(piqp: Option<PathBuf>, eigen: Option<PathBuf>) {
    *BUNDLED.lock().unwrap_or_else(|e| e.into_inner()) = (piqp, eigen);
}

/// The include directories a generated solver module needs, PIQP's then Eigen's: compile a
/// module holding a solver with `-I` (or `-isystem`) for each.
///
/// ```no_run
/// let dirs = anvil::opti::include_dirs()?;
/// let flags: Vec<String> = dirs.iter().map(|d| format!("-isystem{}", d.display())).collect();
/// println!("g++ -std=c++17 -O2 {} -c solver.cpp", flags.join(" "));
/// # Ok::<(), anvil::Error>(())
/// ```
pub fn include_dirs() -> Result<Vec<PathBuf>> {
    Ok(vec![piqp_dir()?.join("include"), eigen_dir()?])
}

/// The directory holding PIQP's `include/` and `src/` (fetched into the cache directory
/// if need be, see the module's documentation).
pub(crate) fn piqp_dir() -> Result<PathBuf> {
    let bundled = BUNDLED.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
    // The source tree's root, two levels above this crate, named without `..`.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap_or(Path::new("/"));
    let in_tree = root.join(format!(".deps/piqp-{PIQP_VERSION}"));
    let cache = jit::cache_dir().join("deps");
    let in_cache = cache.join(format!("piqp-{PIQP_VERSION}"));
    // A copy this crate fetched counts once its stamp is written (last, by the script).
    let fetched = |d: &Path| d != in_cache || d.join(".complete").is_file();
    let found = find(
        "ANVIL_PIQP_DIR",
        bundled.into_iter().chain([in_tree, in_cache.clone()]),
        |d| d.join("include/piqp/piqp.hpp").is_file() && fetched(d),
        &format!("PIQP {PIQP_VERSION} (its include/piqp/piqp.hpp)"),
        &format!(
            "run `scripts/setup.sh` in anvil's source tree, or `python3 scripts/fetch_piqp.py DIR` \
             and set ANVIL_PIQP_DIR=DIR/piqp-{PIQP_VERSION} (the Python package carries PIQP)"
        ),
    );
    match found {
        Err(Error::MissingDependency { .. }) if std::env::var_os("ANVIL_PIQP_DIR").is_none() => {
            let script = root.join("scripts/fetch_piqp.py");
            if !script.is_file() {
                return found;
            }
            fetch_piqp(&script, &cache).map_err(|why| match found.unwrap_err() {
                Error::MissingDependency { what, looked, fix } => {
                    Error::MissingDependency { what, looked, fix: format!("{fix}; fetching it failed: {why}") }
                }
                other => other,
            })
        }
        found => found,
    }
}

/// Runs `script` (anvil's `scripts/fetch_piqp.py`) to fetch PIQP into `dest`; returns the
/// unpacked directory, or why it could not.
fn fetch_piqp(script: &Path, dest: &Path) -> std::result::Result<PathBuf, String> {
    eprintln!("anvil: fetching PIQP {PIQP_VERSION}'s sources into {} (once)...", dest.display());
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(dest)
        .output()
        .map_err(|e| format!("could not run python3 {}: {e}", script.display()))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let unpacked = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if out.status.success() && unpacked.join("include/piqp/piqp.hpp").is_file() {
        Ok(unpacked)
    } else {
        Err(stderr.trim().lines().last().unwrap_or("python3 failed without a message").to_string())
    }
}

/// The directory holding Eigen's `Eigen/`.
pub(crate) fn eigen_dir() -> Result<PathBuf> {
    let bundled = BUNDLED.lock().unwrap_or_else(|e| e.into_inner()).1.clone();
    let system =
        ["/usr/include/eigen3", "/usr/local/include/eigen3", "/opt/homebrew/include/eigen3"].map(PathBuf::from);
    find(
        "ANVIL_EIGEN_DIR",
        bundled.into_iter().chain(system),
        |d| d.join("Eigen/Core").is_file(),
        "Eigen 3.4 (its Eigen/Core)",
        "install it (`apt install libeigen3-dev`, `brew install eigen` or `pip install cmeel-eigen`) \
         or set ANVIL_EIGEN_DIR to the directory holding Eigen/",
    )
}

/// The first directory that `is_valid`: `$variable` if set (then it must be valid), else
/// the first of `candidates`.
fn find(
    variable: &str,
    candidates: impl IntoIterator<Item = PathBuf>,
    is_valid: impl Fn(&Path) -> bool,
    what: &str,
    fix: &str,
) -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(variable).filter(|v| !v.is_empty()).map(PathBuf::from) {
        if is_valid(&dir) {
            return Ok(dir);
        }
        return Err(Error::MissingDependency {
            what: what.into(),
            looked: format!("${variable} = {}", dir.display()),
            fix: format!("point ${variable} at the right directory, or unset it; {fix}"),
        });
    }
    let mut looked = vec![format!("${variable} (unset)")];
    for dir in candidates {
        if is_valid(&dir) {
            return Ok(dir);
        }
        looked.push(dir.display().to_string());
    }
    Err(Error::MissingDependency { what: what.into(), looked: looked.join(", "), fix: fix.into() })
}

/// What the compiled solver depends on besides its own source: PIQP's and Eigen's versions
/// and places (part of the JIT cache key).
pub(crate) fn fingerprint() -> Result<String> {
    let piqp = piqp_dir()?;
    let eigen = eigen_dir()?;
    let stamp = std::fs::read_to_string(piqp.join(".complete")).unwrap_or_default();
    let macros = std::fs::read_to_string(eigen.join("Eigen/src/Core/util/Macros.h")).unwrap_or_default();
    let eigen_version: Vec<&str> =
        macros.lines().filter(|l| l.contains("#define EIGEN_") && l.contains("_VERSION")).collect();
    Ok(format!(
        "piqp {PIQP_VERSION} {} {} eigen {} {}",
        piqp.display(),
        stamp.trim(),
        eigen.display(),
        eigen_version.join(";")
    ))
}

/// The solver runtime as a static library: what a module's `anvil_opti.cpp` holds, with
/// PIQP's dense and sparse QP solvers and the LDLᵀ compiled in parallel parts, built with these compiler
/// options on first use (tens of seconds, with progress on stderr) and kept in the JIT
/// cache. JIT-compiled solvers link it; so can a program holding generated modules, in place
/// of compiling their `anvil_opti.cpp` (any module's flags: nothing but plain pointers and
/// numbers crosses the runtime's interface).
///
/// ```no_run
/// let archive = anvil::opti::runtime_library(&anvil::jit::CompilerOptions::default())?;
/// println!("g++ main.o rosen_disk.o {}", archive.display());
/// # Ok::<(), anvil::Error>(())
/// ```
pub fn runtime_library(options: &CompilerOptions) -> Result<PathBuf> {
    runtime_library_of(RuntimeParts::All, options)
}

/// Which of PIQP's QP solvers a runtime library holds (besides the common part: the LDLᵀ):
/// the sparse one (which every solver's elastic QP uses), or both.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RuntimeParts {
    Sparse,
    All,
}

/// The runtime library with only `parts`: the runtime's parts compiled apart (PIQP
/// header-only: each part instantiates just what it uses), in parallel. The first solver a
/// machine builds waits for the largest part, about 10 s, not for all of PIQP.
pub(crate) fn runtime_library_of(parts: RuntimeParts, options: &CompilerOptions) -> Result<PathBuf> {
    let runtime = |part: &str, number: u8| {
        (
            format!("anvil-opti-runtime-{part}"),
            format!("#define ANVIL_OPTI_PART {number}\n{}", super::runtime::definitions()),
        )
    };
    // The largest first: the parts compile in parallel.
    let mut texts = Vec::new();
    if parts == RuntimeParts::All {
        texts.push(runtime("dense", 2));
    }
    texts.extend([runtime("sparse", 3), runtime("common", 1)]);
    let kind = match parts {
        RuntimeParts::Sparse => "sparse",
        RuntimeParts::All => "all",
    };
    let library = StaticLibrary {
        name: format!("anvil-opti-piqp-{PIQP_VERSION}-{kind}"),
        sources: Vec::new(),
        texts,
        include_dirs: include_dirs()?,
        defines: Vec::new(),
        fingerprint: fingerprint()?,
    };
    jit::build_static_library(&library, options)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fetch step runs the script with the destination and takes the directory it
    /// prints; a failing script's last line is the reason given.
    #[test]
    fn fetching_piqp_takes_what_the_script_unpacked_or_says_why_not() {
        let dir = std::env::temp_dir().join(format!("anvil_fetch_piqp_{}", std::process::id()));
        let unpacked = dir.join("dest/piqp-x");
        std::fs::create_dir_all(unpacked.join("include/piqp")).unwrap();
        std::fs::write(unpacked.join("include/piqp/piqp.hpp"), "").unwrap();
        let good = dir.join("good.py");
        std::fs::write(&good, "import sys\nprint(sys.argv[1] + '/piqp-x')\n").unwrap();
        assert_eq!(fetch_piqp(&good, &dir.join("dest")), Ok(unpacked));
        let bad = dir.join("bad.py");
        std::fs::write(&bad, "import sys\nsys.exit('urlopen error: no network')\n").unwrap();
        assert_eq!(fetch_piqp(&bad, &dir.join("dest")), Err("urlopen error: no network".to_string()));
        std::fs::remove_dir_all(dir).unwrap();
    }
}

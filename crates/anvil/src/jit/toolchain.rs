//! The target as a trait: a [`Toolchain`] builds a translation unit into a library the
//! loader opens. [`CppToolchain`] (the system C++ compiler, with what this system supports
//! probed once) is the only one today; another backend (CUDA, Metal: the original's
//! `device=` values) is another implementation, served by the same cache
//! ([`super::build_cached`]) and loader ([`super::Library`]).

use super::compiler::{Compiler, CompilerOptions};
use super::{digest, host_cpu, unique_suffix, write_atomically, TemporaryFiles, Unit};
use crate::error::Result;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

/// What turns a translation unit into a loadable library.
pub trait Toolchain {
    /// Everything about the toolchain that changes what it builds from `unit` (the command,
    /// its version, flags, link inputs), as text: part of the cache key, with the source.
    fn key(&self, unit: &Unit) -> Vec<String>;
    /// The extension of source files (without the dot).
    fn source_extension(&self) -> &'static str;
    /// The extension of what it builds (without the dot): a shared library by default.
    fn output_extension(&self) -> &'static str {
        "so"
    }
    /// Builds the unit, whose text is in `source`, into the library `output` (written
    /// directly; the cache renames it into place). A build that fails or runs too long is
    /// an error saying why.
    fn build(&self, unit: &Unit, source: &Path, output: &Path) -> Result<()>;
    /// The toolchain in words, for progress messages.
    fn describe(&self) -> String;
}

/// The system C++ compiler with the flags [`CompilerOptions`] and this system amount to:
/// with `vector_math`, `-fopenmp-simd`, and libmvec where code using it compiles and links
/// (probed once per compiler and flags, the answer kept in the cache directory).
#[derive(Clone, Debug)]
pub struct CppToolchain {
    compiler: Compiler,
    flags: Vec<String>,
    libs: Vec<String>,
    timeout: Duration,
}

impl CppToolchain {
    /// Finds the compiler `options` name (see [`CompilerOptions`]) and probes what it
    /// supports here, keeping the probes' answers in `probe_dir`.
    pub fn new(options: &CompilerOptions, probe_dir: &Path) -> Result<CppToolchain> {
        let compiler = Compiler::find(options)?;
        let (flags, libs) = effective_flags(&compiler, options, probe_dir);
        Ok(CppToolchain { compiler, flags, libs, timeout: options.timeout })
    }

    /// The flags of a unit's compilation (its header directories and macros included).
    fn flags(&self, unit: &Unit) -> Vec<String> {
        let mut flags = self.flags.clone();
        flags.extend(unit.header_flags());
        flags
    }

    /// What is linked after the source: the unit's own inputs, then the toolchain's.
    fn libs(&self, unit: &Unit) -> Vec<String> {
        unit.link.iter().map(|p| p.display().to_string()).chain(self.libs.iter().cloned()).collect()
    }
}

impl Toolchain for CppToolchain {
    fn key(&self, unit: &Unit) -> Vec<String> {
        vec![
            self.compiler.command_line(),
            self.compiler.version.clone(),
            self.flags(unit).join(" "),
            self.libs(unit).join(" "),
        ]
    }

    fn source_extension(&self) -> &'static str {
        "cpp"
    }

    fn build(&self, unit: &Unit, source: &Path, output: &Path) -> Result<()> {
        self.compiler.compile_shared(source, output, &self.flags(unit), &self.libs(unit), self.timeout)
    }

    fn describe(&self) -> String {
        self.compiler.command_line()
    }
}

/// The GCC flag that turns off the expansion of constant copies GCC 12 gets wrong with
/// AVX-512 (PR target/108599): vector constants are then built through memory.
pub(crate) const CONSTANT_COPY_WORKAROUND: &str = "-mtune-ctrl=^inter_unit_moves_to_vec";

/// The flags and libraries `options` amount to with this compiler on this system.
fn effective_flags(compiler: &Compiler, options: &CompilerOptions, dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut flags = correct_flags(compiler, options, dir);
    let mut libs = Vec::new();
    if options.vector_math {
        flags.extend(["-fopenmp-simd", "-DANVIL_OMP_SIMD"].map(String::from));
        if probed("libmvec", compiler, &flags, dir, || Some(probe_libmvec(compiler, &flags, options, dir)))
            == Some(true)
        {
            flags.push("-DANVIL_LIBMVEC".into());
            libs.push("-lmvec".into());
        }
    }
    (flags, libs)
}

/// `options.flags`, and what this compiler needs with them to compile correctly: the
/// workaround for GCC 12's wrong constant copies where the probe finds them.
pub(crate) fn correct_flags(compiler: &Compiler, options: &CompilerOptions, dir: &Path) -> Vec<String> {
    let mut flags = options.flags.clone();
    if !probed("copies", compiler, &flags, dir, || constant_copies_are_right(compiler, &flags, options, dir))
        .unwrap_or(true)
    {
        flags.push(CONSTANT_COPY_WORKAROUND.into());
    }
    flags
}

/// The answer of the probe `what` with this compiler and flags: asked once, and kept in the
/// cache directory `dir` for later processes; `None` (the probe could not tell) is asked
/// again next time.
fn probed(
    what: &str,
    compiler: &Compiler,
    flags: &[String],
    dir: &Path,
    probe: impl FnOnce() -> Option<bool>,
) -> Option<bool> {
    static CHECKED: OnceLock<Mutex<HashMap<String, bool>>> = OnceLock::new();
    let key = digest(&[what, &compiler.command_line(), &compiler.version, &flags.join(" "), &host_cpu()]);
    let checked = CHECKED.get_or_init(Default::default);
    if let Some(&ok) = checked.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Some(ok);
    }
    let answer = dir.join(format!("probe-{what}-{key}"));
    let ok = match std::fs::read_to_string(&answer).map(|s| s.trim().to_string()) {
        Ok(known) if known == "yes" || known == "no" => known == "yes",
        _ => {
            let ok = probe()?;
            let _ = write_atomically(&answer, if ok { "yes" } else { "no" });
            ok
        }
    };
    checked.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ok);
    Some(ok)
}

/// Whether this compiler with these flags copies constant tables correctly: GCC 12 targeting
/// AVX-512 (`-march=native` on such a host, `-march=x86-64-v4`) folds a `memcpy` of a
/// constant table into vector constants and builds some wrongly (GCC PR target/108599).
/// The probe is built and run here; `None` if it cannot be built or loaded (the compile of
/// real code will report the problem; the probe is asked again next time).
fn constant_copies_are_right(
    compiler: &Compiler,
    flags: &[String],
    options: &CompilerOptions,
    dir: &Path,
) -> Option<bool> {
    let stem = format!("probe-{}-{}", std::process::id(), unique_suffix());
    let files = TemporaryFiles(vec![dir.join(format!("{stem}.cpp")), dir.join(format!("lib{stem}.so"))]);
    let (source, library) = (&files.0[0], &files.0[1]);
    std::fs::write(source, CONSTANT_COPY_PROBE).ok()?;
    compiler.compile_shared(source, library, flags, &[], options.timeout).ok()?;
    let loaded = super::Library::load(library).ok()?;
    // SAFETY: the probe defines `anvil_probe_copies` as `int()`; the library outlives the call.
    let run = unsafe { loaded.symbol::<unsafe extern "C" fn() -> i32>("anvil_probe_copies") }.ok()?;
    Some(unsafe { run() } == 0)
}

/// Copies constant tables whose 32- and 64-byte chunks GCC 12 expands wrongly (repeated
/// values followed by zeros); returns how many entries arrived wrong.
const CONSTANT_COPY_PROBE: &str = r#"static constexpr double probe_a[5] = {1, 1, 0, 0, 0};
static constexpr double probe_b[13] = {1, 1, 0, 0, 0, 0, 0, 0, 1, 1, 0, 0, 0};
static void probe_copy(double* a, double* b) {
  __builtin_memcpy(a, probe_a, sizeof probe_a);
  __builtin_memcpy(b, probe_b, sizeof probe_b);
}
// Called through a volatile pointer: the copy is compiled on its own, as in a real init_ws.
static void (*volatile probe_fn)(double*, double*) = probe_copy;
extern "C" int anvil_probe_copies() {
  double a[5], b[13];
  probe_fn(a, b);
  const volatile double* ea = probe_a;
  const volatile double* eb = probe_b;
  int wrong = 0;
  for (int i = 0; i < 5; ++i) wrong += a[i] != ea[i];
  for (int i = 0; i < 13; ++i) wrong += b[i] != eb[i];
  return wrong;
}
"#;

fn probe_libmvec(compiler: &Compiler, flags: &[String], options: &CompilerOptions, dir: &Path) -> bool {
    let stem = format!("probe-{}-{}", std::process::id(), unique_suffix());
    let files = TemporaryFiles(vec![dir.join(format!("{stem}.cpp")), dir.join(format!("lib{stem}.so"))]);
    let (source, library) = (&files.0[0], &files.0[1]);
    let mut probe_flags = flags.to_vec();
    probe_flags.extend(["-DANVIL_LIBMVEC", "-Wl,--no-undefined"].map(String::from));
    std::fs::write(source, LIBMVEC_PROBE.replace("PRELUDE", crate::render::dialect::CPP.prelude)).is_ok()
        && compiler.compile_shared(source, library, &probe_flags, &["-lmvec".into()], options.timeout).is_ok()
}

/// Calls every function the prelude declares with vector variants, in vectorisable loops.
const LIBMVEC_PROBE: &str = r#"PRELUDE
extern "C" void anvil_probe(double* __restrict o, const double* __restrict x, float* __restrict p, const float* __restrict y) {
  for (int i = 0; i < 64; ++i) {
    const double a = x[i];
    o[i] = __builtin_sin(a) + __builtin_cos(a) + __builtin_tan(a) + __builtin_asin(a) + __builtin_acos(a) +
           __builtin_atan(a) + __builtin_sinh(a) + __builtin_cosh(a) + __builtin_tanh(a) + __builtin_exp(a) +
           __builtin_log(a) + __builtin_pow(a, a) + __builtin_atan2(a, a);
  }
  for (int i = 0; i < 64; ++i) {
    const float a = y[i];
    p[i] = __builtin_sinf(a) + __builtin_cosf(a) + __builtin_tanf(a) + __builtin_asinf(a) + __builtin_acosf(a) +
           __builtin_atanf(a) + __builtin_sinhf(a) + __builtin_coshf(a) + __builtin_tanhf(a) + __builtin_expf(a) +
           __builtin_logf(a) + __builtin_powf(a, a) + __builtin_atan2f(a, a);
  }
}
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_of_a_toolchain_copy_constant_tables_correctly() {
        let options = CompilerOptions::default();
        let dir = std::env::temp_dir().join(format!("anvil_probe_test_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let compiler = Compiler::find(&options).unwrap();
        let flags = correct_flags(&compiler, &options, &dir);
        assert_eq!(constant_copies_are_right(&compiler, &flags, &options, &dir), Some(true), "{flags:?}");
        // On an affected host (g++ 12 with AVX-512, -march=native) the plain flags copy
        // wrongly, and the workaround is what makes them right.
        let plain_right = constant_copies_are_right(&compiler, &options.flags, &options, &dir).unwrap();
        assert_eq!(flags.iter().any(|f| f == CONSTANT_COPY_WORKAROUND), !plain_right, "{flags:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}

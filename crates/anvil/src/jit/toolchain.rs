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

/// The flags and libraries `options` amount to with this compiler on this system.
fn effective_flags(compiler: &Compiler, options: &CompilerOptions, dir: &Path) -> (Vec<String>, Vec<String>) {
    let mut flags = options.flags.clone();
    let mut libs = Vec::new();
    if options.vector_math {
        flags.extend(["-fopenmp-simd", "-DANVIL_OMP_SIMD"].map(String::from));
        if libmvec_works(compiler, &flags, options, dir) {
            flags.push("-DANVIL_LIBMVEC".into());
            libs.push("-lmvec".into());
        }
    }
    (flags, libs)
}

/// Whether code using libmvec compiles and links here: probed once per compiler and flags,
/// and the answer kept in the cache directory for later processes.
fn libmvec_works(compiler: &Compiler, flags: &[String], options: &CompilerOptions, dir: &Path) -> bool {
    static CHECKED: OnceLock<Mutex<HashMap<String, bool>>> = OnceLock::new();
    let key = digest(&[&compiler.command_line(), &compiler.version, &flags.join(" "), &host_cpu()]);
    let checked = CHECKED.get_or_init(Default::default);
    if let Some(&ok) = checked.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return ok;
    }
    let answer = dir.join(format!("probe-libmvec-{key}"));
    let ok = match std::fs::read_to_string(&answer).map(|s| s.trim().to_string()) {
        Ok(known) if known == "yes" || known == "no" => known == "yes",
        _ => {
            let ok = probe_libmvec(compiler, flags, options, dir);
            let _ = write_atomically(&answer, if ok { "yes" } else { "no" });
            ok
        }
    };
    checked.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ok);
    ok
}

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

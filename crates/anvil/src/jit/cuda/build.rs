//! From CUDA source to a loaded [`Engine`]: NVRTC to a CUBIN for the device's own
//! architecture (cached like the CPU libraries), or the C++ compiler to the CPU emulation.

use super::check_versions;
use super::driver::{driver_version, Context};
use super::function::Engine;
use super::nvrtc::{nvrtc, Nvrtc};
use crate::backend::CudaOptions;
use crate::error::{Error, Result};
use crate::jit::{build_cached, cache, compile_unit, CompilerOptions, Library, Toolchain, Unit};
use std::path::Path;

/// The header that compiles anvil's CUDA as C++ for the emulation (see the file).
pub const EMULATION_HEADER: &str = include_str!("emulation.hpp");
/// What follows the translation unit in the emulation: the serial launcher.
pub const EMULATION_LAUNCHER: &str = include_str!("emulation_launcher.cpp");

/// NVRTC compiling for one architecture, as a [`Toolchain`] of the JIT cache.
struct NvrtcToolchain {
    nvrtc: &'static Nvrtc,
    arch: String,
    options: Vec<String>,
}

impl Toolchain for NvrtcToolchain {
    fn key(&self, _unit: &Unit) -> Vec<String> {
        let (major, minor) = self.nvrtc.version();
        vec![format!("nvrtc {major}.{minor}"), self.arch.clone(), self.options.join(" ")]
    }

    fn source_extension(&self) -> &'static str {
        "cu"
    }

    fn output_extension(&self) -> &'static str {
        "cubin"
    }

    fn build(&self, unit: &Unit, _source: &Path, output: &Path) -> Result<()> {
        let cubin = self.nvrtc.compile_cubin(&unit.name, &unit.source, &self.arch, &self.options)?;
        if !cubin.log.trim().is_empty() {
            // anvil's code compiles without a word: a warning is a bug of ours to report.
            eprintln!("anvil: NVRTC warned on `{}` (please report): {}", unit.name, cubin.log.trim());
        }
        std::fs::write(output, &cubin.image).map_err(|e| Error::io("write", output, e))
    }

    fn describe(&self) -> String {
        let (major, minor) = self.nvrtc.version();
        format!("NVRTC {major}.{minor} for {}", self.arch)
    }
}

/// Source beyond which NVRTC compiles in its fast-compile mode (`--Ofast-compile=mid`).
/// Measured on an H200 with the 50-step cart-pole rollout (1 MB of straight-line CUDA): the
/// default mode took 70 s and ran in 0.454 ms, the fast mode 8.5 s and 0.300 ms (kernels
/// not inlined: 20.8 s and 0.415 ms; both: 5.1 s and 0.510 ms; `max`: 3.9 s and 4.4 ms).
pub const FAST_COMPILE_BYTES: usize = 256 * 1024;

/// The NVRTC options of a CUDA translation unit of `source_bytes`: C++17, fused
/// multiply-adds or not (see [`CudaOptions::fused_multiply_add`]), never fast math
/// (libdevice's accurate math), the fast-compile mode for large sources
/// ([`FAST_COMPILE_BYTES`]), then those of `$ANVIL_NVRTC_FLAGS` (whitespace-separated).
pub fn nvrtc_options(fused_multiply_add: bool, source_bytes: usize) -> Vec<String> {
    let mut options = vec!["--std=c++17".into(), format!("--fmad={fused_multiply_add}")];
    if source_bytes > FAST_COMPILE_BYTES {
        options.push("--Ofast-compile=mid".into());
    }
    if let Ok(extra) = std::env::var("ANVIL_NVRTC_FLAGS") {
        options.extend(extra.split_whitespace().map(String::from));
    }
    options
}

/// Compiles `source` for `arch` (`sm_90`) as `options` say unless the cache holds it, and
/// returns the CUBIN.
pub fn compile_cubin_cached(name: &str, source: &str, arch: &str, options: &CudaOptions) -> Result<Vec<u8>> {
    let toolchain = NvrtcToolchain {
        nvrtc: nvrtc()?,
        arch: arch.into(),
        options: nvrtc_options(options.fused_multiply_add, source.len()),
    };
    let root = options.cache_dir.clone().unwrap_or_else(cache::cache_dir);
    let dir = cache::private_dir(&root)?;
    let path = build_cached(&Unit::new(name, source), &toolchain, &dir)?;
    std::fs::read(&path).map_err(|e| Error::io("read", path, e))
}

/// Loads `source` on the GPU `options` name (compiled for its architecture), with its
/// entry points `entries`.
pub(crate) fn load_gpu(name: &str, source: &str, entries: &[&str], options: &CudaOptions) -> Result<Engine> {
    let nvrtc = nvrtc()?;
    let context = Context::open(options.device)?;
    check_versions(nvrtc.version(), driver_version()?)?;
    let cubin = compile_cubin_cached(name, source, &context.arch(), options)?;
    let module = context.load_module(&cubin)?;
    let kernels = entries.iter().map(|entry| module.function(entry)).collect::<Result<_>>()?;
    Ok(Engine::Gpu { context, module, kernels })
}

/// The emulation's translation unit of `source`.
pub fn emulation_source(source: &str) -> String {
    format!("{EMULATION_HEADER}\n{source}\n{EMULATION_LAUNCHER}")
}

/// Loads `source` on the CPU's emulation of a GPU, compiled by the C++ compiler `options`
/// name.
pub(crate) fn load_emulated(name: &str, source: &str, options: &CompilerOptions) -> Result<Engine> {
    let path = compile_unit(&Unit::new(&format!("{name}_cuda_emulation"), &emulation_source(source)), options)?;
    let library = Library::load(&path)?;
    // SAFETY: the launcher's signature in emulation_launcher.cpp.
    let launch =
        unsafe { library.symbol::<unsafe extern "C" fn(u32, u32, u32, *const std::ffi::c_void)>("anvil_emulate")? };
    Ok(Engine::Emulated { _library: library, launch })
}

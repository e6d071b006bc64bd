//! The target as a value: where a function's code runs and what makes it ([`Backend`]).
//!
//! A [`NumericalFunction`](crate::NumericalFunction) holds its backend; rendering takes the
//! backend's [`Dialect`], and compilation its toolchain: the C++ compiler for the CPU,
//! NVRTC (or, on machines without a GPU, the C++ compiler and an emulation) for CUDA.
//!
//! ```
//! use anvil::{Backend, CudaOptions};
//! assert_eq!(Backend::parse("CUDA")?.name(), "CUDA");
//! assert_eq!(Backend::default().name(), "CPU");
//! let emulated = Backend::Cuda(CudaOptions { emulate: true, ..CudaOptions::default() });
//! assert!(emulated.dialect().prelude.contains("anvil_inf"));
//! assert_eq!(Backend::parse("CUDA:1")?.name(), "CUDA:1");
//! assert!(Backend::parse("METAL").is_err());
//! # Ok::<(), anvil::Error>(())
//! ```

use crate::error::{Error, Result};
use crate::jit::CompilerOptions;
use crate::render::dialect::{Dialect, CPP, CUDA};
use std::path::PathBuf;

/// Where a function runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// The host's CPU: C++ compiled by the system compiler into a shared library.
    Cpu(CompilerOptions),
    /// An NVIDIA GPU: CUDA C++ compiled by NVRTC into a CUBIN for the device's architecture.
    Cuda(CudaOptions),
}

/// How CUDA code is built and where it runs.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CudaOptions {
    /// The GPU (the driver's device ordinal).
    pub device: usize,
    /// Runs the CUDA code on the CPU instead, each thread of the grid after another (what
    /// tests use on machines without a GPU; the default when `$ANVIL_CUDA_EMULATE=1`).
    pub emulate: bool,
    /// The C++ compiler of the emulation.
    pub compiler: CompilerOptions,
    /// Where CUBINs are cached (`None`: the JIT cache, [`crate::jit::cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// Lets the GPU fuse `a * b + c` into one rounding (the default, as in every CUDA
    /// build: faster, and as accurate or more). Results then differ from the CPU backend's
    /// and the interpreter's in the last bits, and at the edge of overflow; `false` gives
    /// their results exactly wherever the math library agrees.
    pub fused_multiply_add: bool,
}

impl Default for CudaOptions {
    fn default() -> Self {
        let emulate = std::env::var("ANVIL_CUDA_EMULATE").is_ok_and(|v| v == "1");
        CudaOptions {
            device: 0,
            emulate,
            compiler: CompilerOptions::default(),
            cache_dir: None,
            fused_multiply_add: true,
        }
    }
}

impl Default for Backend {
    fn default() -> Self {
        Backend::Cpu(CompilerOptions::default())
    }
}

/// The devices [`Backend::parse`] knows.
pub const DEVICES: [&str; 2] = ["CPU", "CUDA"];

impl Backend {
    /// The backend of a device name as the original's `device=` takes it (`"CPU"`,
    /// `"CUDA"`, `"CUDA:1"` for the second GPU), with default options.
    pub fn parse(device: &str) -> Result<Backend> {
        let gpu = device.strip_prefix("CUDA").and_then(|rest| match rest {
            "" => Some(0),
            _ => rest.strip_prefix(':').and_then(|n| n.parse::<usize>().ok()),
        });
        match (device, gpu) {
            ("CPU", _) => Ok(Backend::default()),
            (_, Some(device)) => Ok(Backend::Cuda(CudaOptions { device, ..CudaOptions::default() })),
            (other, None) => Err(Error::InvalidName {
                name: other.into(),
                reason: format!(
                    "unknown device: anvil runs on {DEVICES:?} or \"CUDA:<n>\" for the n-th GPU (METAL is not implemented)"
                ),
            }),
        }
    }

    /// The device's name (`"CPU"`, `"CUDA"`, `"CUDA:1"`), as [`parse`](Self::parse) reads it.
    pub fn name(&self) -> String {
        match self {
            Backend::Cpu(_) => "CPU".into(),
            Backend::Cuda(CudaOptions { device: 0, .. }) => "CUDA".into(),
            Backend::Cuda(options) => format!("CUDA:{}", options.device),
        }
    }

    /// How the backend's source language is spelled.
    pub fn dialect(&self) -> &'static Dialect {
        match self {
            Backend::Cpu(_) => &CPP,
            Backend::Cuda(_) => &CUDA,
        }
    }

    /// The C++ compiler this backend uses (the CPU's, or the CUDA emulation's).
    pub fn compiler(&self) -> &CompilerOptions {
        match self {
            Backend::Cpu(options) => options,
            Backend::Cuda(options) => &options.compiler,
        }
    }

    /// The backend with its C++ compiler replaced by `options`.
    pub fn with_compiler(mut self, options: CompilerOptions) -> Backend {
        match &mut self {
            Backend::Cpu(o) => *o = options,
            Backend::Cuda(o) => o.compiler = options,
        }
        self
    }
}

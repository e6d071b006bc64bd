//! CUDA through NVIDIA's own libraries, loaded when first used: NVRTC compiles CUDA C++ to
//! a CUBIN ([`Nvrtc`]), the driver API loads it on a GPU and runs it ([`Context`]).
//!
//! Both are opened with `dlopen` at run time rather than linked, so anvil builds and runs
//! on machines without CUDA: only a function asking for a GPU needs them, and their absence
//! is an [`Error::CudaUnavailable`] saying what to install.
//!
//! - NVRTC (`libnvrtc.so.13`, `.12`, or `libnvrtc.so`) is looked for in each directory of
//!   `$ANVIL_CUDA_LIB_DIRS` (colon-separated), `$CUDA_HOME/lib64`, `$CUDA_PATH/lib64`,
//!   `/usr/local/cuda/lib64`, then by soname through the system loader. The PyPI wheel
//!   `nvidia-cuda-nvrtc` unpacks it to `site-packages/nvidia/cu13/lib`: point
//!   `$ANVIL_CUDA_LIB_DIRS` there.
//! - The driver (`libcuda.so.1`, then `libcuda.so`) comes with the NVIDIA driver, and only
//!   through the system loader: it must match the kernel module, so no other copy will do.
//!
//! NVRTC emits code for the driver it ships with: a newer NVRTC than the driver makes
//! CUBINs the driver cannot load, which [`check_versions`] tells before anything is
//! compiled.

mod build;
mod driver;
mod function;
mod nvrtc;

pub use build::{
    compile_cubin_cached, emulation_source, nvrtc_options, EMULATION_HEADER, EMULATION_LAUNCHER, FAST_COMPILE_BYTES,
};
pub(crate) use build::{load_emulated, load_gpu};
pub use driver::{driver_version, Context, DeviceBuffer, Kernel, Module};
pub use function::{CudaFunction, ItemArg};
pub use nvrtc::{nvrtc, Cubin, Nvrtc};

use crate::error::{Error, Result};
use std::ffi::c_void;
use std::path::{Path, PathBuf};

/// Fails when NVRTC (`(major, minor)`) is newer than the driver (`cuDriverGetVersion`'s
/// `major * 1000 + minor * 10`): the driver would reject every CUBIN it compiles.
pub fn check_versions(nvrtc: (i32, i32), driver: i32) -> Result<()> {
    let (major, minor) = nvrtc;
    if major * 1000 + minor * 10 <= driver {
        return Ok(());
    }
    let (driver_major, driver_minor) = (driver / 1000, driver % 1000 / 10);
    Err(Error::CudaUnavailable {
        what: format!("a CUDA driver for NVRTC {major}.{minor} (the driver is CUDA {driver_major}.{driver_minor})"),
        looked: "cuDriverGetVersion".into(),
        fix: format!(
            "NVRTC {major}.{minor} compiles code the CUDA {driver_major}.{driver_minor} driver cannot load: install \
             an NVRTC matching the driver (`pip install nvidia-cuda-nvrtc=={driver_major}.{driver_minor}.*`) or \
             update the NVIDIA driver"
        ),
    })
}

/// Copies the function pointer `name` out of `library`, or says which library lacks it.
///
/// # Safety
/// `T` must be the C type of the symbol `name`, and the pointer must not outlive `library`.
unsafe fn symbol<T: Copy>(library: &libloading::Library, path: &Path, name: &str, fix: &str) -> Result<T> {
    // SAFETY: the caller vouches for the type; the copy lives no longer than the library.
    let found = unsafe { library.get::<T>(name.as_bytes()) };
    found.map(|s| *s).map_err(|e| Error::CudaUnavailable {
        what: format!("symbol `{name}` in {}", path.display()),
        looked: e.to_string(),
        fix: fix.into(),
    })
}

/// The file the loader mapped `function` from: a library found by soname only names the
/// soname, and an error should say which copy was used.
fn loaded_from(function: *const c_void, fallback: &Path) -> PathBuf {
    let mut info = std::mem::MaybeUninit::<libc::Dl_info>::zeroed();
    // SAFETY: dladdr only reads the address and fills `info`; it does not call `function`.
    let found = unsafe { libc::dladdr(function, info.as_mut_ptr()) } != 0;
    // SAFETY: zero-initialised, and filled by dladdr when it succeeds.
    let info = unsafe { info.assume_init() };
    if !found || info.dli_fname.is_null() {
        return fallback.to_path_buf();
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the loader while the library is
    // loaded, which it is (the caller holds it).
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    PathBuf::from(name.to_string_lossy().into_owned())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A grid-stride kernel using the math library, a NaN and a bit cast, as generated code
    /// does: `out[i] = sin(in[i]) + offset`, NaN for a negative input.
    pub(crate) const KERNEL: &str = r#"
__constant__ double offset;

extern "C" __global__ void k(double* __restrict__ out, const double* __restrict__ in, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += stride) {
        double x = in[i];
        out[i] = x < 0.0 ? nan("") : sin(x) + offset + __longlong_as_double(0LL);
    }
}
"#;

    /// NVRTC, which these tests need: its absence fails them unless
    /// `ANVIL_TEST_NO_NVRTC=1` says this machine has none (then `None`).
    pub(crate) fn needed_nvrtc() -> Option<&'static Nvrtc> {
        match nvrtc() {
            Ok(nvrtc) => Some(nvrtc),
            Err(e) if std::env::var_os("ANVIL_TEST_NO_NVRTC").is_some_and(|v| v == "1") => {
                eprintln!("ANVIL_TEST_NO_NVRTC=1: not testing NVRTC ({e})");
                None
            }
            Err(e) => panic!("{e}\n(set ANVIL_TEST_NO_NVRTC=1 to skip the tests needing NVRTC on this machine)"),
        }
    }

    #[test]
    fn an_nvrtc_newer_than_the_driver_is_refused() {
        let err = check_versions((13, 0), 12080).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, Error::CudaUnavailable { .. }), "{text}");
        assert!(text.contains("13.0") && text.contains("12.8"), "{text}");
        assert!(text.contains("pip install nvidia-cuda-nvrtc==12.8.*"), "{text}");
    }

    #[test]
    fn an_nvrtc_older_than_the_driver_is_accepted() {
        check_versions((12, 8), 13000).unwrap();
        check_versions((13, 0), 13000).unwrap();
    }
}

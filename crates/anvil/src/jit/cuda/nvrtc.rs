//! NVRTC, NVIDIA's runtime compiler from CUDA C++ to a GPU's machine code (CUBIN).

use super::{loaded_from, symbol};
use crate::error::{Error, Result};
use libloading::os::unix::{Library as UnixLibrary, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// `nvrtcResult`.
type Status = c_int;
/// `nvrtcProgram`.
type Program = *mut c_void;

const NVRTC_SUCCESS: Status = 0;
/// The source did not compile: the log says why.
const NVRTC_ERROR_COMPILATION: Status = 6;

/// Library file names, newest first.
const SONAMES: [&str; 3] = ["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"];

const FIX: &str = "install it with `pip install nvidia-cuda-nvrtc==13.0.*` (or the CUDA toolkit), or set \
                   ANVIL_CUDA_LIB_DIRS to the directory holding libnvrtc.so";

/// The NVRTC entry points anvil uses, resolved once when the library is loaded.
struct Api {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    get_error_string: unsafe extern "C" fn(Status) -> *const c_char,
    create_program: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    compile_program: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    get_program_log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    get_program_log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    get_cubin_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    get_cubin: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    destroy_program: unsafe extern "C" fn(*mut Program) -> Status,
}

impl Api {
    /// Resolves every entry point in `library`.
    fn resolve(library: &libloading::Library, path: &Path) -> Result<Api> {
        // SAFETY: each type is the prototype of that name in NVIDIA's nvrtc.h; the pointers
        // are kept with the library in `Nvrtc`, which is never unloaded.
        unsafe {
            Ok(Api {
                version: symbol(library, path, "nvrtcVersion", FIX)?,
                get_error_string: symbol(library, path, "nvrtcGetErrorString", FIX)?,
                create_program: symbol(library, path, "nvrtcCreateProgram", FIX)?,
                compile_program: symbol(library, path, "nvrtcCompileProgram", FIX)?,
                get_program_log_size: symbol(library, path, "nvrtcGetProgramLogSize", FIX)?,
                get_program_log: symbol(library, path, "nvrtcGetProgramLog", FIX)?,
                get_cubin_size: symbol(library, path, "nvrtcGetCUBINSize", FIX)?,
                get_cubin: symbol(library, path, "nvrtcGetCUBIN", FIX)?,
                destroy_program: symbol(library, path, "nvrtcDestroyProgram", FIX)?,
            })
        }
    }
}

/// NVRTC, loaded: see the [module](super) for where it is looked for.
pub struct Nvrtc {
    api: Api,
    path: PathBuf,
    version: (i32, i32),
    /// Keeps the entry points in `api` valid.
    _library: libloading::Library,
    /// NVRTC opens its builtins by soname when compiling; kept loaded so that finds them.
    _builtins: Vec<UnixLibrary>,
}

/// A GPU's machine code, with NVRTC's warnings.
#[derive(Clone, Debug)]
pub struct Cubin {
    /// The ELF image, for `cuModuleLoadData`.
    pub image: Vec<u8>,
    /// NVRTC's log: empty when the source compiled without a warning.
    pub log: String,
}

/// NVRTC, loaded on first use; a failure to load is returned to every caller.
pub fn nvrtc() -> Result<&'static Nvrtc> {
    static NVRTC: OnceLock<Result<Nvrtc>> = OnceLock::new();
    NVRTC.get_or_init(Nvrtc::load).as_ref().map_err(Clone::clone)
}

impl Nvrtc {
    /// The first NVRTC that loads, in the module's search order.
    fn load() -> Result<Nvrtc> {
        let mut looked = Vec::new();
        for dir in search_dirs() {
            let Some(file) = SONAMES.iter().map(|name| dir.join(name)).find(|f| f.is_file()) else {
                looked.push(format!("{} (no libnvrtc)", dir.display()));
                continue;
            };
            match open_in(&dir, &file) {
                Ok(loaded) => return Nvrtc::resolve(loaded.0, &file, loaded.1),
                Err(why) => looked.push(format!("{} ({why})", file.display())),
            }
        }
        for name in SONAMES {
            // SAFETY: NVRTC's initialisers only set up its own state.
            match unsafe { libloading::Library::new(name) } {
                Ok(library) => return Nvrtc::resolve(library, Path::new(name), Vec::new()),
                Err(why) => looked.push(format!("{name} ({why})")),
            }
        }
        Err(Error::CudaUnavailable { what: "NVRTC (libnvrtc.so)".into(), looked: looked.join(", "), fix: FIX.into() })
    }

    /// Resolves the entry points of the loaded `library` and asks its version.
    fn resolve(library: libloading::Library, path: &Path, builtins: Vec<UnixLibrary>) -> Result<Nvrtc> {
        let api = Api::resolve(&library, path)?;
        let path = loaded_from(api.version as *const c_void, path);
        let mut nvrtc = Nvrtc { api, path, version: (0, 0), _library: library, _builtins: builtins };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: nvrtcVersion writes two ints.
        nvrtc.check("nvrtcVersion", unsafe { (nvrtc.api.version)(&mut major, &mut minor) })?;
        nvrtc.version = (major, minor);
        Ok(nvrtc)
    }

    /// NVRTC's `(major, minor)` version.
    pub fn version(&self) -> (i32, i32) {
        self.version
    }

    /// The library file in use (the soname when the loader cannot tell).
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Compiles the CUDA C++ `source` (C++17, `name` naming it in the log) to a CUBIN for
    /// `arch` (`sm_90`, ...), with NVRTC's `options` after anvil's.
    pub fn compile_cubin(&self, name: &str, source: &str, arch: &str, options: &[String]) -> Result<Cubin> {
        let refused = |what: String| Error::CudaCompile { name: name.into(), arch: arch.into(), log: what };
        let c_name = CString::new(name).map_err(|_| refused("the program name contains a NUL byte".into()))?;
        let c_source = CString::new(source).map_err(|_| refused("the source contains a NUL byte".into()))?;
        let mut all = vec![format!("--gpu-architecture={arch}"), "-std=c++17".into()];
        all.extend(options.iter().cloned());
        let c_options = all
            .into_iter()
            .map(|o| CString::new(o.clone()).map_err(|_| refused(format!("option `{o}` contains a NUL byte"))))
            .collect::<Result<Vec<_>>>()?;
        let program = ProgramGuard::create(self, &c_name, &c_source)?;
        let pointers: Vec<*const c_char> = c_options.iter().map(|o| o.as_ptr()).collect();
        let count = c_int::try_from(pointers.len()).map_err(|_| refused("too many options".into()))?;
        // SAFETY: the program is live; `pointers` holds `count` NUL-terminated strings that
        // outlive the call.
        let status = unsafe { (self.api.compile_program)(program.0, count, pointers.as_ptr()) };
        let log = program.log()?;
        if status == NVRTC_ERROR_COMPILATION {
            return Err(Error::CudaCompile { name: name.into(), arch: arch.into(), log });
        }
        self.check("nvrtcCompileProgram", status)?;
        Ok(Cubin { image: program.cubin()?, log })
    }

    /// `Ok` for `NVRTC_SUCCESS`, else an [`Error::Cuda`] with NVRTC's description.
    fn check(&self, call: &'static str, status: Status) -> Result<()> {
        if status == NVRTC_SUCCESS {
            return Ok(());
        }
        // SAFETY: nvrtcGetErrorString returns a static string (or null for codes it does
        // not know, which newer versions may add).
        let text = unsafe { (self.api.get_error_string)(status) };
        let message = if text.is_null() {
            "unknown NVRTC error".into()
        } else {
            // SAFETY: non-null, NUL-terminated and static.
            unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned()
        };
        Err(Error::Cuda { call, code: status, message })
    }
}

impl std::fmt::Debug for Nvrtc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Nvrtc").field("path", &self.path).field("version", &self.version).finish_non_exhaustive()
    }
}

/// The directories looked in before the system loader's search, in order.
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("ANVIL_CUDA_LIB_DIRS")
        .map(|v| std::env::split_paths(&v).filter(|d| !d.as_os_str().is_empty()).collect())
        .unwrap_or_default();
    for var in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(home) = std::env::var_os(var).filter(|h| !h.is_empty()) {
            dirs.push(PathBuf::from(home).join("lib64"));
        }
    }
    dirs.push(PathBuf::from("/usr/local/cuda/lib64"));
    dirs
}

/// Opens `dir`'s NVRTC builtins, then its NVRTC `file`: NVRTC finds its builtins by soname
/// only, which fails when `dir` is not on the loader's path unless they are loaded already.
fn open_in(dir: &Path, file: &Path) -> std::result::Result<(libloading::Library, Vec<UnixLibrary>), String> {
    let mut builtins = Vec::new();
    for path in builtins_in(dir) {
        // SAFETY: the builtins library only defines data and functions NVRTC calls; global
        // so NVRTC's later dlopen by soname returns this copy.
        let library = unsafe { UnixLibrary::open(Some(&path), RTLD_NOW | RTLD_GLOBAL) };
        builtins.push(library.map_err(|e| format!("{}: {e}", path.display()))?);
    }
    // SAFETY: NVRTC's initialisers only set up its own state.
    let library = unsafe { libloading::Library::new(file) }.map_err(|e| e.to_string())?;
    Ok((library, builtins))
}

/// `dir`'s `libnvrtc-builtins.so.*` (not the `.alt.` variant NVRTC does not ask for).
fn builtins_in(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut found: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("libnvrtc-builtins.so.")))
        .collect();
    found.sort();
    found
}

/// An NVRTC program, destroyed when dropped whatever happened to it.
struct ProgramGuard<'a>(Program, &'a Nvrtc);

impl<'a> ProgramGuard<'a> {
    /// A program of `source`, without headers.
    fn create(nvrtc: &'a Nvrtc, name: &CStr, source: &CStr) -> Result<Self> {
        let mut program: Program = std::ptr::null_mut();
        // SAFETY: both strings outlive the call (NVRTC copies them); no headers are given.
        let status = unsafe {
            (nvrtc.api.create_program)(
                &mut program,
                source.as_ptr(),
                name.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        nvrtc.check("nvrtcCreateProgram", status)?;
        Ok(ProgramGuard(program, nvrtc))
    }

    /// The compilation log, without its terminating NUL and trailing blank lines.
    fn log(&self) -> Result<String> {
        let calls = ["nvrtcGetProgramLogSize", "nvrtcGetProgramLog"];
        let bytes = self.read(calls, self.1.api.get_program_log_size, self.1.api.get_program_log)?;
        let text = String::from_utf8_lossy(&bytes);
        Ok(text.trim_end_matches(['\0', '\n', '\r', ' ']).to_string())
    }

    /// The compiled CUBIN.
    fn cubin(&self) -> Result<Vec<u8>> {
        self.read(["nvrtcGetCUBINSize", "nvrtcGetCUBIN"], self.1.api.get_cubin_size, self.1.api.get_cubin)
    }

    /// Asks `size` for a result's length, then `get` to fill it (`calls` names the two).
    fn read(
        &self,
        calls: [&'static str; 2],
        size: unsafe extern "C" fn(Program, *mut usize) -> Status,
        get: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ) -> Result<Vec<u8>> {
        let mut len = 0usize;
        // SAFETY: the program is live; the call writes one usize.
        self.1.check(calls[0], unsafe { size(self.0, &mut len) })?;
        let mut bytes = vec![0u8; len];
        // SAFETY: `bytes` has the `len` bytes NVRTC just said it writes.
        self.1.check(calls[1], unsafe { get(self.0, bytes.as_mut_ptr().cast()) })?;
        Ok(bytes)
    }
}

impl Drop for ProgramGuard<'_> {
    fn drop(&mut self) {
        // SAFETY: the program was created and is destroyed once, here.
        let _ = unsafe { (self.1.api.destroy_program)(&mut self.0) };
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{needed_nvrtc, KERNEL};
    use crate::error::Error;

    #[test]
    fn a_kernel_compiles_without_warnings() {
        let Some(nvrtc) = needed_nvrtc() else { return };
        assert!(nvrtc.version().0 >= 12, "{nvrtc:?}");
        for arch in ["sm_80", "sm_90"] {
            let cubin = nvrtc.compile_cubin("k.cu", KERNEL, arch, &[]).unwrap();
            assert_eq!(cubin.log, "", "{arch}");
            assert!(cubin.image.starts_with(b"\x7fELF"), "{arch}: {:?}", &cubin.image[..cubin.image.len().min(8)]);
        }
    }

    #[test]
    fn a_syntax_error_is_reported_with_its_line() {
        let Some(nvrtc) = needed_nvrtc() else { return };
        let source = "extern \"C\" __global__ void k(double* out) {\n    out[0] = 1.0\n}\n";
        let err = nvrtc.compile_cubin("bad.cu", source, "sm_90", &[]).unwrap_err();
        let Error::CudaCompile { name, arch, log } = &err else { panic!("{err}") };
        assert_eq!((name.as_str(), arch.as_str()), ("bad.cu", "sm_90"));
        assert!(log.contains("bad.cu(2)") || log.contains("bad.cu(3)"), "{log}");
    }

    #[test]
    fn options_are_passed_to_nvrtc() {
        let Some(nvrtc) = needed_nvrtc() else { return };
        let source = "#if !defined(ANVIL_OPTION)\n#error no option\n#endif\n";
        nvrtc.compile_cubin("opt.cu", source, "sm_90", &["-DANVIL_OPTION".into()]).unwrap();
        let err = nvrtc.compile_cubin("opt.cu", source, "sm_90", &[]).unwrap_err();
        assert!(matches!(&err, Error::CudaCompile { log, .. } if log.contains("no option")), "{err}");
    }
}

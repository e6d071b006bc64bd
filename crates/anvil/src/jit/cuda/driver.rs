//! The CUDA driver API: a GPU's primary context, its memory, and modules of compiled
//! kernels.
//!
//! Every call first makes the context current on the calling thread (the driver keeps the
//! current context per thread), so any thread may use any of these objects.

use super::{loaded_from, symbol};
use crate::error::{Error, Result};
use std::ffi::{c_char, c_int, c_uint, c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// `CUresult`.
type Status = c_int;
/// `CUdevice`.
type Device = c_int;
/// `CUcontext`.
type RawContext = *mut c_void;
/// `CUmodule`.
type RawModule = *mut c_void;
/// `CUfunction`.
type RawFunction = *mut c_void;
/// `CUdeviceptr`.
type DevicePtr = u64;

const CUDA_SUCCESS: Status = 0;
/// Returned for what anvil refuses itself, before calling the driver.
const CUDA_ERROR_INVALID_VALUE: Status = 1;
/// Returned for an image anvil refuses itself, before calling the driver.
const CUDA_ERROR_INVALID_IMAGE: Status = 200;
const CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: c_int = 16;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: c_int = 75;
const CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: c_int = 76;
const CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: c_int = 0;

/// Library file names, tried in order through the system loader.
const SONAMES: [&str; 2] = ["libcuda.so.1", "libcuda.so"];

const FIX: &str = "install the NVIDIA driver (it provides libcuda.so.1); a machine without an NVIDIA GPU cannot run \
                   device=\"CUDA\" functions";

/// The driver entry points anvil uses, resolved once when the library is loaded. The
/// `_v2` names are those cuda.h maps the plain names to (64-bit sizes and pointers).
struct Api {
    init: unsafe extern "C" fn(c_uint) -> Status,
    driver_get_version: unsafe extern "C" fn(*mut c_int) -> Status,
    get_error_name: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
    get_error_string: unsafe extern "C" fn(Status, *mut *const c_char) -> Status,
    device_get: unsafe extern "C" fn(*mut Device, c_int) -> Status,
    device_get_name: unsafe extern "C" fn(*mut c_char, c_int, Device) -> Status,
    device_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, Device) -> Status,
    primary_ctx_retain: unsafe extern "C" fn(*mut RawContext, Device) -> Status,
    primary_ctx_release: unsafe extern "C" fn(Device) -> Status,
    ctx_set_current: unsafe extern "C" fn(RawContext) -> Status,
    ctx_synchronize: unsafe extern "C" fn() -> Status,
    stream_synchronize: unsafe extern "C" fn(*mut c_void) -> Status,
    mem_alloc: unsafe extern "C" fn(*mut DevicePtr, usize) -> Status,
    mem_free: unsafe extern "C" fn(DevicePtr) -> Status,
    memcpy_htod: unsafe extern "C" fn(DevicePtr, *const c_void, usize) -> Status,
    memcpy_dtoh: unsafe extern "C" fn(*mut c_void, DevicePtr, usize) -> Status,
    module_load_data: unsafe extern "C" fn(*mut RawModule, *const c_void) -> Status,
    module_unload: unsafe extern "C" fn(RawModule) -> Status,
    module_get_function: unsafe extern "C" fn(*mut RawFunction, RawModule, *const c_char) -> Status,
    module_get_global: unsafe extern "C" fn(*mut DevicePtr, *mut usize, RawModule, *const c_char) -> Status,
    func_get_attribute: unsafe extern "C" fn(*mut c_int, c_int, RawFunction) -> Status,
    launch_kernel: unsafe extern "C" fn(
        RawFunction,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> Status,
}

impl Api {
    /// Resolves every entry point in `library`.
    fn resolve(library: &libloading::Library, path: &Path) -> Result<Api> {
        // SAFETY: each type is the prototype of that name in NVIDIA's cuda.h; the pointers
        // are kept with the library in `Driver`, which is never unloaded.
        unsafe {
            Ok(Api {
                init: symbol(library, path, "cuInit", FIX)?,
                driver_get_version: symbol(library, path, "cuDriverGetVersion", FIX)?,
                get_error_name: symbol(library, path, "cuGetErrorName", FIX)?,
                get_error_string: symbol(library, path, "cuGetErrorString", FIX)?,
                device_get: symbol(library, path, "cuDeviceGet", FIX)?,
                device_get_name: symbol(library, path, "cuDeviceGetName", FIX)?,
                device_get_attribute: symbol(library, path, "cuDeviceGetAttribute", FIX)?,
                primary_ctx_retain: symbol(library, path, "cuDevicePrimaryCtxRetain", FIX)?,
                primary_ctx_release: symbol(library, path, "cuDevicePrimaryCtxRelease_v2", FIX)?,
                ctx_set_current: symbol(library, path, "cuCtxSetCurrent", FIX)?,
                ctx_synchronize: symbol(library, path, "cuCtxSynchronize", FIX)?,
                stream_synchronize: symbol(library, path, "cuStreamSynchronize", FIX)?,
                mem_alloc: symbol(library, path, "cuMemAlloc_v2", FIX)?,
                mem_free: symbol(library, path, "cuMemFree_v2", FIX)?,
                memcpy_htod: symbol(library, path, "cuMemcpyHtoD_v2", FIX)?,
                memcpy_dtoh: symbol(library, path, "cuMemcpyDtoH_v2", FIX)?,
                module_load_data: symbol(library, path, "cuModuleLoadData", FIX)?,
                module_unload: symbol(library, path, "cuModuleUnload", FIX)?,
                module_get_function: symbol(library, path, "cuModuleGetFunction", FIX)?,
                module_get_global: symbol(library, path, "cuModuleGetGlobal_v2", FIX)?,
                func_get_attribute: symbol(library, path, "cuFuncGetAttribute", FIX)?,
                launch_kernel: symbol(library, path, "cuLaunchKernel", FIX)?,
            })
        }
    }
}

/// The driver library, loaded.
struct Driver {
    api: Api,
    path: PathBuf,
    /// Keeps the entry points in `api` valid.
    _library: libloading::Library,
}

/// The driver, loaded on first use; a failure to load is returned to every caller.
fn driver() -> Result<&'static Driver> {
    static DRIVER: OnceLock<Result<Driver>> = OnceLock::new();
    DRIVER.get_or_init(Driver::load).as_ref().map_err(Clone::clone)
}

impl Driver {
    /// The first of [`SONAMES`] the system loader finds: the driver must match the kernel
    /// module, so only the installed one will do.
    fn load() -> Result<Driver> {
        let mut looked = Vec::new();
        for name in SONAMES {
            // SAFETY: the driver's initialisers only set up its own state.
            match unsafe { libloading::Library::new(name) } {
                Ok(library) => {
                    let api = Api::resolve(&library, Path::new(name))?;
                    let path = loaded_from(api.init as *const c_void, Path::new(name));
                    return Ok(Driver { api, path, _library: library });
                }
                Err(why) => looked.push(format!("{name} ({why})")),
            }
        }
        Err(Error::CudaUnavailable {
            what: "the CUDA driver (libcuda.so.1)".into(),
            looked: format!("the system loader's path: {}", looked.join(", ")),
            fix: FIX.into(),
        })
    }

    /// `Ok` for `CUDA_SUCCESS`, else an [`Error::Cuda`] with the driver's name and
    /// description of `status`.
    fn check(&self, call: &'static str, status: Status) -> Result<()> {
        if status == CUDA_SUCCESS {
            return Ok(());
        }
        let describe = |get: unsafe extern "C" fn(Status, *mut *const c_char) -> Status| {
            let mut text: *const c_char = std::ptr::null();
            // SAFETY: the call writes a pointer to a static string, or fails for codes it
            // does not know.
            let known = unsafe { get(status, &mut text) } == CUDA_SUCCESS && !text.is_null();
            // SAFETY: non-null, NUL-terminated and static.
            known.then(|| unsafe { CStr::from_ptr(text) }.to_string_lossy().into_owned())
        };
        let message = match (describe(self.api.get_error_name), describe(self.api.get_error_string)) {
            (Some(name), Some(text)) => format!("{name}: {text}"),
            (name, text) => name.or(text).unwrap_or_else(|| "unknown CUDA error".into()),
        };
        Err(Error::Cuda { call, code: status, message })
    }
}

/// The installed driver's CUDA version, `major * 1000 + minor * 10` (13000 for 13.0).
pub fn driver_version() -> Result<i32> {
    let driver = driver()?;
    let mut version = 0;
    // SAFETY: the call writes one int; it needs no cuInit.
    driver.check("cuDriverGetVersion", unsafe { (driver.api.driver_get_version)(&mut version) })?;
    Ok(version)
}

/// The primary context of one GPU (the one the CUDA runtime would share), held while this
/// lives; what it allocates and loads holds it in turn.
pub struct Context {
    driver: &'static Driver,
    device: Device,
    context: RawContext,
    name: String,
    capability: (i32, i32),
    multiprocessors: i32,
}

// SAFETY: the driver API is thread-safe, and each call makes the context current on the
// calling thread first.
unsafe impl Send for Context {}
// SAFETY: as for Send; no method mutates the struct.
unsafe impl Sync for Context {}

impl Context {
    /// The primary context of GPU `ordinal` (0 for the first), its properties read.
    pub fn open(ordinal: usize) -> Result<Arc<Context>> {
        let driver = driver()?;
        // SAFETY: cuInit takes flags, which must be 0.
        driver.check("cuInit", unsafe { (driver.api.init)(0) })?;
        // An ordinal past c_int is no GPU: the driver says so, as for any other.
        let ordinal = c_int::try_from(ordinal).unwrap_or(c_int::MAX);
        let mut device = 0;
        // SAFETY: writes one CUdevice.
        driver.check("cuDeviceGet", unsafe { (driver.api.device_get)(&mut device, ordinal) })?;
        let mut context = std::ptr::null_mut();
        // SAFETY: writes one CUcontext; released in Drop.
        driver.check("cuDevicePrimaryCtxRetain", unsafe { (driver.api.primary_ctx_retain)(&mut context, device) })?;
        let mut opened =
            Context { driver, device, context, name: String::new(), capability: (0, 0), multiprocessors: 0 };
        opened.name = opened.read_name()?;
        opened.capability = (
            opened.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?,
            opened.attribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?,
        );
        opened.multiprocessors = opened.attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(Arc::new(opened))
    }

    /// The GPU's name (`NVIDIA H100 80GB HBM3`, ...).
    pub fn device_name(&self) -> &str {
        &self.name
    }

    /// The GPU's compute capability, `(9, 0)` for a Hopper.
    pub fn compute_capability(&self) -> (i32, i32) {
        self.capability
    }

    /// The GPU's number of streaming multiprocessors: how many blocks run at once, for
    /// sizing a grid.
    pub fn multiprocessors(&self) -> i32 {
        self.multiprocessors
    }

    /// The architecture to compile for (`sm_90`): NVRTC's `--gpu-architecture`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.capability.0, self.capability.1)
    }

    /// `bytes` of device memory; zero bytes allocate nothing (its pointer is 0).
    pub fn alloc(self: &Arc<Self>, bytes: usize) -> Result<DeviceBuffer> {
        let mut ptr = 0;
        if bytes > 0 {
            let api = self.make_current()?;
            // SAFETY: writes one CUdeviceptr; freed in DeviceBuffer's Drop.
            self.driver.check("cuMemAlloc_v2", unsafe { (api.mem_alloc)(&mut ptr, bytes) })?;
        }
        Ok(DeviceBuffer { ptr, bytes, context: Arc::clone(self) })
    }

    /// Loads a CUBIN (from [`super::Nvrtc::compile_cubin`]) into this context.
    ///
    /// The driver is given no length: it reads as far as the image's ELF headers say, so
    /// an image whose headers point past its end is refused before the call.
    pub fn load_module(self: &Arc<Self>, cubin: &[u8]) -> Result<Arc<Module>> {
        whole_elf(cubin).map_err(|why| Error::Cuda {
            call: "cuModuleLoadData",
            code: CUDA_ERROR_INVALID_IMAGE,
            message: format!("refused an image that is not a whole 64-bit ELF file (a CUBIN): {why}"),
        })?;
        let api = self.make_current()?;
        let mut module = std::ptr::null_mut();
        // SAFETY: the image is an ELF file whose headers and sections lie within the slice
        // (checked above), so the driver reads no further; it copies what it keeps.
        self.driver.check("cuModuleLoadData", unsafe { (api.module_load_data)(&mut module, cubin.as_ptr().cast()) })?;
        Ok(Arc::new(Module { module, context: Arc::clone(self) }))
    }

    /// Waits for what anvil launched (on the legacy default stream) to finish, not for other
    /// streams' work (another library's in the same context); a kernel's fault surfaces here.
    pub fn finish_launches(&self) -> Result<()> {
        let api = self.make_current()?;
        // SAFETY: the null stream is the context's legacy default stream.
        self.driver.check("cuStreamSynchronize", unsafe { (api.stream_synchronize)(std::ptr::null_mut()) })
    }

    /// Waits for everything launched in this context to finish, on every stream; a kernel's
    /// fault surfaces here.
    pub fn synchronize(&self) -> Result<()> {
        let api = self.make_current()?;
        // SAFETY: no arguments; the context is current.
        self.driver.check("cuCtxSynchronize", unsafe { (api.ctx_synchronize)() })
    }

    /// Makes this context the calling thread's current one, which every other call needs.
    fn make_current(&self) -> Result<&'static Api> {
        // SAFETY: the context is retained while `self` lives.
        self.driver.check("cuCtxSetCurrent", unsafe { (self.driver.api.ctx_set_current)(self.context) })?;
        Ok(&self.driver.api)
    }

    /// The device's name, as the driver reports it.
    fn read_name(&self) -> Result<String> {
        let mut buffer = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated.
        let status = unsafe { (self.driver.api.device_get_name)(buffer.as_mut_ptr(), 256, self.device) };
        self.driver.check("cuDeviceGetName", status)?;
        // SAFETY: NUL-terminated within the buffer, by the call's contract.
        Ok(unsafe { CStr::from_ptr(buffer.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// The device attribute `attribute` (a `CUdevice_attribute`).
    fn attribute(&self, attribute: c_int) -> Result<i32> {
        let mut value = 0;
        // SAFETY: writes one int.
        let status = unsafe { (self.driver.api.device_get_attribute)(&mut value, attribute, self.device) };
        self.driver.check("cuDeviceGetAttribute", status)?;
        Ok(value)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: retained once in `open`, released once here; everything allocated in it
        // holds an Arc to it, so is gone already.
        let _ = unsafe { (self.driver.api.primary_ctx_release)(self.device) };
    }
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("device", &self.device)
            .field("name", &self.name)
            .field("arch", &self.arch())
            .field("driver", &self.driver.path)
            .finish_non_exhaustive()
    }
}

/// Device memory, freed when dropped.
#[derive(Debug)]
pub struct DeviceBuffer {
    ptr: DevicePtr,
    bytes: usize,
    context: Arc<Context>,
}

impl DeviceBuffer {
    /// Copies `data` to the start of the buffer (no longer than it), waiting until done.
    pub fn copy_from_host(&self, data: &[u8]) -> Result<()> {
        self.fits("cuMemcpyHtoD_v2", data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let api = self.context.make_current()?;
        // SAFETY: `data.len()` bytes are read from `data` and written within the buffer.
        let status = unsafe { (api.memcpy_htod)(self.ptr, data.as_ptr().cast(), data.len()) };
        self.context.driver.check("cuMemcpyHtoD_v2", status)
    }

    /// Copies the start of the buffer into `data` (no longer than it), waiting for the
    /// kernels before it and for the copy.
    pub fn copy_to_host(&self, data: &mut [u8]) -> Result<()> {
        self.fits("cuMemcpyDtoH_v2", data.len())?;
        if data.is_empty() {
            return Ok(());
        }
        let api = self.context.make_current()?;
        // SAFETY: `data.len()` bytes are read within the buffer and written to `data`.
        let status = unsafe { (api.memcpy_dtoh)(data.as_mut_ptr().cast(), self.ptr, data.len()) };
        self.context.driver.check("cuMemcpyDtoH_v2", status)
    }

    /// The device address (a `CUdeviceptr`), for a kernel's parameter.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }

    /// The buffer's size in bytes.
    pub fn len(&self) -> usize {
        self.bytes
    }

    /// Whether the buffer has no bytes (and no memory).
    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// Refuses a copy of `len` bytes that would overrun the buffer.
    fn fits(&self, call: &'static str, len: usize) -> Result<()> {
        if len <= self.bytes {
            return Ok(());
        }
        Err(Error::Cuda {
            call,
            code: CUDA_ERROR_INVALID_VALUE,
            message: format!("refused to copy {len} bytes into or out of a device buffer of {} bytes", self.bytes),
        })
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        if self.ptr == 0 {
            return;
        }
        if let Ok(api) = self.context.make_current() {
            // SAFETY: allocated by cuMemAlloc_v2 and freed once, here.
            let _ = unsafe { (api.mem_free)(self.ptr) };
        }
    }
}

/// A loaded CUBIN, unloaded when dropped.
#[derive(Debug)]
pub struct Module {
    module: RawModule,
    context: Arc<Context>,
}

// SAFETY: the driver API is thread-safe; each call makes the module's context current.
unsafe impl Send for Module {}
// SAFETY: as for Send; no method mutates the struct.
unsafe impl Sync for Module {}

impl Module {
    /// The `extern "C" __global__` function `name`.
    pub fn function(self: &Arc<Self>, name: &str) -> Result<Kernel> {
        let c_name = c_name(name)?;
        let api = self.context.make_current()?;
        let mut function = std::ptr::null_mut();
        // SAFETY: the module is loaded; writes one CUfunction, valid while it stays loaded
        // (the Kernel holds the module).
        let status = unsafe { (api.module_get_function)(&mut function, self.module, c_name.as_ptr()) };
        self.context.driver.check("cuModuleGetFunction", status)?;
        let mut max_threads = 0;
        // SAFETY: writes one int.
        let status =
            unsafe { (api.func_get_attribute)(&mut max_threads, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function) };
        self.context.driver.check("cuFuncGetAttribute", status)?;
        Ok(Kernel { function, max_threads, name: name.into(), module: Arc::clone(self) })
    }

    /// The device address and size of the global (or `__constant__`) variable `name`.
    pub fn global(&self, name: &str) -> Result<(u64, usize)> {
        let c_name = c_name(name)?;
        let api = self.context.make_current()?;
        let (mut ptr, mut bytes) = (0, 0);
        // SAFETY: the module is loaded; writes one address and one size.
        let status = unsafe { (api.module_get_global)(&mut ptr, &mut bytes, self.module, c_name.as_ptr()) };
        self.context.driver.check("cuModuleGetGlobal_v2", status)?;
        Ok((ptr, bytes))
    }

    /// Copies `data` to the start of the global (or `__constant__`) variable `name`, no
    /// longer than it.
    pub fn write_global(&self, name: &str, data: &[u8]) -> Result<()> {
        let (ptr, bytes) = self.global(name)?;
        if data.len() > bytes {
            return Err(Error::Cuda {
                call: "cuMemcpyHtoD_v2",
                code: CUDA_ERROR_INVALID_VALUE,
                message: format!("refused to copy {} bytes into `{name}`, of {bytes} bytes", data.len()),
            });
        }
        let api = self.context.make_current()?;
        // SAFETY: `data.len()` bytes are read from `data` and written within the variable.
        let status = unsafe { (api.memcpy_htod)(ptr, data.as_ptr().cast(), data.len()) };
        self.context.driver.check("cuMemcpyHtoD_v2", status)
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        if let Ok(api) = self.context.make_current() {
            // SAFETY: loaded once and unloaded once, here; every Kernel of it holds it.
            let _ = unsafe { (api.module_unload)(self.module) };
        }
    }
}

/// A kernel of a loaded module.
#[derive(Debug)]
pub struct Kernel {
    function: RawFunction,
    max_threads: i32,
    name: String,
    module: Arc<Module>,
}

// SAFETY: the driver API is thread-safe; each call makes the module's context current.
unsafe impl Send for Kernel {}
// SAFETY: as for Send; no method mutates the struct.
unsafe impl Sync for Kernel {}

impl Kernel {
    /// Launches `grid` blocks of `block` threads on the default stream, without dynamic
    /// shared memory; returns once queued (see [`Context::synchronize`]).
    ///
    /// # Safety
    /// `params` must hold one pointer per kernel parameter, in order, each to a value of
    /// that parameter's type (for a `double*`, a `u64` holding a device address); the
    /// driver reads as many as the kernel declares. The kernel must only touch memory it
    /// is given, and the buffers must outlive its run.
    pub unsafe fn launch(&self, grid: u32, block: u32, params: &mut [*mut c_void]) -> Result<()> {
        let api = self.module.context.make_current()?;
        // SAFETY: the function is loaded (the module is held); `params` is as the caller
        // vouches; no extra options.
        let status = unsafe {
            (api.launch_kernel)(
                self.function,
                grid,
                1,
                1,
                block,
                1,
                1,
                0,
                std::ptr::null_mut(),
                params.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        self.module.context.driver.check("cuLaunchKernel", status)
    }

    /// The most threads a block of this kernel may have: fewer than 1024 when it needs
    /// many registers.
    pub fn max_threads_per_block(&self) -> i32 {
        self.max_threads
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Checks that `image` is a little-endian 64-bit ELF file whose header tables and
/// sections all lie within it: what the driver reads of a CUBIN.
fn whole_elf(image: &[u8]) -> std::result::Result<(), String> {
    if image.len() < 64 || !image.starts_with(b"\x7fELF\x02\x01") {
        return Err(format!("{} bytes without a 64-bit little-endian ELF header", image.len()));
    }
    let field = |at: usize, len: usize| image[at..at + len].iter().rev().fold(0u64, |v, b| v << 8 | u64::from(*b));
    let table = |offset: u64, entry: u64, count: u64| offset.checked_add(entry.checked_mul(count)?);
    let (shoff, shentsize, shnum) = (field(0x28, 8), field(0x3a, 2), field(0x3c, 2));
    let tables = [table(field(0x20, 8), field(0x36, 2), field(0x38, 2)), table(shoff, shentsize, shnum)];
    let within = |end: Option<u64>| end.is_some_and(|end| end <= image.len() as u64);
    if !tables.into_iter().all(within) || (shnum > 0 && shentsize < 64) {
        return Err("its header tables reach past its end".into());
    }
    for i in 0..shnum {
        let header = (shoff + i * shentsize) as usize;
        let (kind, offset, size) = (field(header + 4, 4), field(header + 0x18, 8), field(header + 0x20, 8));
        // SHT_NOBITS sections (.bss) take no room in the file.
        if kind != 8 && !within(offset.checked_add(size)) {
            return Err(format!("section {i} reaches past its end"));
        }
    }
    Ok(())
}

/// `name` as C wants it; a NUL inside cannot name a symbol.
fn c_name(name: &str) -> Result<CString> {
    CString::new(name).map_err(|_| Error::InvalidName {
        name: name.into(),
        reason: "a CUDA symbol name cannot contain a NUL byte".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::super::check_versions;
    use super::super::tests::{needed_nvrtc, KERNEL};
    use super::*;

    /// Whether the system loader finds a CUDA driver, asked without this module.
    fn driver_installed() -> bool {
        // SAFETY: as in Driver::load.
        SONAMES.iter().any(|name| unsafe { libloading::Library::new(name) }.is_ok())
    }

    #[test]
    fn a_missing_driver_is_an_error() {
        let opened = Context::open(0);
        if driver_installed() {
            // There may be no GPU: then the driver says so.
            assert!(matches!(opened, Ok(_) | Err(Error::Cuda { .. })), "{opened:?}");
            return;
        }
        let err = opened.unwrap_err();
        assert!(matches!(err, Error::CudaUnavailable { .. }), "{err}");
        assert!(err.to_string().contains("libcuda.so.1"), "{err}");
        assert!(matches!(driver_version(), Err(Error::CudaUnavailable { .. })));
    }

    /// The GPU's first context, or `None` (said on stderr) where there is none, unless
    /// `ANVIL_TEST_CUDA=1` says there must be.
    fn gpu() -> Option<Arc<Context>> {
        match Context::open(0) {
            Ok(context) => Some(context),
            Err(e) if std::env::var_os("ANVIL_TEST_CUDA").is_none_or(|v| v != "1") => {
                eprintln!("no GPU, not running kernels (set ANVIL_TEST_CUDA=1 to require one): {e}");
                None
            }
            Err(e) => panic!("ANVIL_TEST_CUDA=1 but no GPU: {e}"),
        }
    }

    #[test]
    fn a_compiled_kernel_runs_on_the_gpu() {
        let Some(context) = gpu() else { return };
        let Some(nvrtc) = needed_nvrtc() else { return };
        check_versions(nvrtc.version(), driver_version().unwrap()).unwrap();
        assert!(context.multiprocessors() > 0, "{context:?}");
        let cubin = nvrtc.compile_cubin("k.cu", KERNEL, &context.arch(), &[]).unwrap();
        let module = context.load_module(&cubin.image).unwrap();
        let kernel = module.function("k").unwrap();
        assert!(kernel.max_threads_per_block() >= 32, "{}", kernel.max_threads_per_block());
        module.write_global("offset", &0.5f64.to_ne_bytes()).unwrap();

        let n = 100_003usize;
        let input: Vec<f64> = (0..n).map(|i| i as f64 * 1e-3 - 1.0).collect();
        let bytes = n * size_of::<f64>();
        let (x, y) = (context.alloc(bytes).unwrap(), context.alloc(bytes).unwrap());
        x.copy_from_host(&to_bytes(&input)).unwrap();
        let (mut out_ptr, mut in_ptr, mut count) = (y.ptr(), x.ptr(), n as i64);
        let mut params: [*mut c_void; 3] =
            [(&raw mut out_ptr).cast(), (&raw mut in_ptr).cast(), (&raw mut count).cast()];
        let block = kernel.max_threads_per_block().min(256) as u32;
        // SAFETY: the kernel's three parameters, the buffers hold `n` doubles each and live
        // past the synchronisation.
        unsafe { kernel.launch(2 * context.multiprocessors() as u32, block, &mut params) }.unwrap();
        context.synchronize().unwrap();

        // Another thread reads the result: the context is made current there.
        let output = std::thread::scope(|s| s.spawn(|| read_f64(&y, n)).join().unwrap());
        for (x, y) in input.iter().zip(&output) {
            if *x < 0.0 {
                assert!(y.is_nan(), "{x} -> {y}");
            } else {
                assert!((y - (x.sin() + 0.5)).abs() <= 1e-15, "{x} -> {y}");
            }
        }
    }

    #[test]
    fn buffers_refuse_overruns_and_may_be_empty() {
        let Some(context) = gpu() else { return };
        let empty = context.alloc(0).unwrap();
        assert_eq!((empty.ptr(), empty.len(), empty.is_empty()), (0, 0, true));
        empty.copy_from_host(&[]).unwrap();
        let buffer = context.alloc(8).unwrap();
        buffer.copy_from_host(&[1, 2, 3, 4]).unwrap();
        let mut back = [0u8; 4];
        buffer.copy_to_host(&mut back).unwrap();
        assert_eq!(back, [1, 2, 3, 4]);
        assert!(matches!(buffer.copy_from_host(&[0; 9]), Err(Error::Cuda { .. })));
        assert!(matches!(buffer.copy_to_host(&mut [0; 9]), Err(Error::Cuda { .. })));
        assert!(matches!(context.load_module(b"not a cubin"), Err(Error::Cuda { .. })));
    }

    #[test]
    fn only_whole_elf_images_reach_the_driver() {
        assert!(whole_elf(b"not a cubin").is_err());
        let Some(nvrtc) = needed_nvrtc() else { return };
        let image = nvrtc.compile_cubin("k.cu", KERNEL, "sm_90", &[]).unwrap().image;
        whole_elf(&image).unwrap();
        for len in [4, 63, 64, image.len() / 2, image.len() - 1] {
            assert!(whole_elf(&image[..len]).is_err(), "{len} of {}", image.len());
        }
    }

    fn to_bytes(values: &[f64]) -> Vec<u8> {
        values.iter().flat_map(|v| v.to_ne_bytes()).collect()
    }

    fn read_f64(buffer: &DeviceBuffer, n: usize) -> Vec<f64> {
        let mut bytes = vec![0u8; n * size_of::<f64>()];
        buffer.copy_to_host(&mut bytes).unwrap();
        bytes.chunks_exact(8).map(|c| f64::from_ne_bytes(c.try_into().unwrap())).collect()
    }
}

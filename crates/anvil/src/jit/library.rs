//! A loaded JIT library and its entry points, with a pool of workspaces.

use crate::error::{Error, Result};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

type InitWs = unsafe extern "C" fn() -> *mut c_void;
type FreeWs = unsafe extern "C" fn(*mut c_void);
type Call = unsafe extern "C" fn(*const *mut c_void, *const *mut c_void, *mut c_void);

/// A workspace allocated by the library (constants copied in).
pub struct Workspace(*mut c_void);

// The workspace is plain memory owned by whoever holds it; it is only used by one call at
// a time (the pool hands it out exclusively).
unsafe impl Send for Workspace {}

/// The compiled entry points of one function.
pub struct JitFunction {
    init_ws: InitWs,
    free_ws: FreeWs,
    call: Call,
    pool: Mutex<Vec<Workspace>>,
    workspace_bytes: usize,
    path: PathBuf,
    // Declared last: dropped after the workspaces are freed through `free_ws`.
    _library: libloading::Library,
}

impl JitFunction {
    /// Loads the library at `path` and looks up `jit_<name>_{init_ws,free_ws,call}`; its
    /// workspaces take `workspace_bytes` each.
    pub fn load(path: &Path, name: &str, workspace_bytes: usize) -> Result<Self> {
        let err = |message: String| Error::Load { path: path.to_path_buf(), message };
        // SAFETY: the library is one anvil generated; loading runs no initialisers beyond
        // the C++ runtime's.
        let library = unsafe { libloading::Library::new(path) }.map_err(|e| err(e.to_string()))?;
        // SAFETY: the symbols have exactly these signatures in the generated source.
        unsafe {
            let init_ws =
                *library.get::<InitWs>(format!("jit_{name}_init_ws").as_bytes()).map_err(|e| err(e.to_string()))?;
            let free_ws =
                *library.get::<FreeWs>(format!("jit_{name}_free_ws").as_bytes()).map_err(|e| err(e.to_string()))?;
            let call = *library.get::<Call>(format!("jit_{name}_call").as_bytes()).map_err(|e| err(e.to_string()))?;
            Ok(JitFunction {
                init_ws,
                free_ws,
                call,
                pool: Mutex::new(Vec::new()),
                workspace_bytes,
                path: path.to_path_buf(),
                _library: library,
            })
        }
    }

    /// The library's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs the function.
    ///
    /// # Safety
    /// `inputs` and `outputs` must point to contiguous buffers of exactly the dtypes and
    /// sizes the function was generated for, and outputs must not overlap anything.
    pub unsafe fn call(&self, inputs: &[*mut c_void], outputs: &[*mut c_void]) -> Result<()> {
        let ws = self.take_workspace()?;
        (self.call)(inputs.as_ptr(), outputs.as_ptr(), ws.0);
        self.pool.lock().unwrap_or_else(|e| e.into_inner()).push(ws);
        Ok(())
    }

    /// A free workspace from the pool, or a new one: each concurrent call gets its own.
    fn take_workspace(&self) -> Result<Workspace> {
        if let Some(ws) = self.pool.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            return Ok(ws);
        }
        // SAFETY: init_ws takes no arguments and returns fresh memory or null.
        let ptr = unsafe { (self.init_ws)() };
        if ptr.is_null() {
            return Err(Error::OutOfMemory {
                what: format!("a workspace of `{}`", self.path.display()),
                bytes: Some(self.workspace_bytes as u64),
                available: crate::array::memory_limit(),
            });
        }
        Ok(Workspace(ptr))
    }
}

impl std::fmt::Debug for JitFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JitFunction")
            .field("path", &self.path)
            .field("workspace_bytes", &self.workspace_bytes)
            .finish_non_exhaustive()
    }
}

impl Drop for JitFunction {
    fn drop(&mut self) {
        let pool = std::mem::take(self.pool.get_mut().unwrap_or_else(|e| e.into_inner()));
        for ws in pool {
            // SAFETY: each workspace came from this library's init_ws and is not in use
            // (we have `&mut self`).
            unsafe { (self.free_ws)(ws.0) };
        }
    }
}

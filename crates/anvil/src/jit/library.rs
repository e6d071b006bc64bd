//! Loaded JIT libraries: any library's entry points ([`Library`]), and a function's, with a
//! pool of workspaces ([`JitFunction`]).

use crate::array::HostArray;
use crate::error::{Error, Result};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

type InitWs = unsafe extern "C" fn() -> *mut c_void;
type FreeWs = unsafe extern "C" fn(*mut c_void);
type Call = unsafe extern "C" fn(*const *mut c_void, *const *mut c_void, *mut c_void);

/// A shared library the JIT built, loaded.
pub struct Library {
    path: PathBuf,
    library: libloading::Library,
}

impl Library {
    /// Loads the library at `path`.
    pub fn load(path: &Path) -> Result<Library> {
        // SAFETY: the library is one anvil generated; loading runs no initialisers beyond
        // the C++ runtime's (and those of the static libraries it links, PIQP's).
        let library = unsafe { libloading::Library::new(path) }
            .map_err(|e| Error::Load { path: path.to_path_buf(), message: e.to_string() })?;
        Ok(Library { path: path.to_path_buf(), library })
    }

    /// The entry point `name`.
    ///
    /// # Safety
    /// `T` must be the function pointer type the symbol has in the generated source, and the
    /// pointer must not be used after the library is dropped.
    pub unsafe fn symbol<T: Copy>(&self, name: &str) -> Result<T> {
        self.library
            .get::<T>(name.as_bytes())
            .map(|s| *s)
            .map_err(|e| Error::Load { path: self.path.clone(), message: e.to_string() })
    }

    /// The library's path.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl std::fmt::Debug for Library {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Library").field("path", &self.path).finish_non_exhaustive()
    }
}

/// A workspace allocated by the library, the captured constants copied in.
pub struct Workspace(*mut c_void);

/// A captured constant of a JIT function and its byte offset in the workspace: the
/// generated code reads it there, and the host copies it in when it creates a workspace
/// (the JIT source does not contain it).
#[derive(Clone, Debug)]
pub struct WorkspaceConstant {
    /// The byte offset in the workspace.
    pub offset: usize,
    /// The elements.
    pub data: Arc<HostArray>,
}

// The workspace is plain memory owned by whoever holds it; it is only used by one call at
// a time (the pool hands it out exclusively).
unsafe impl Send for Workspace {}

/// The workspaces of a loaded library's function or solver: made by its `init_ws` (and
/// prepared, once each), lent to one call at a time (concurrent calls get one each), and
/// freed by its `free_ws` when the pool is dropped. Functions and solvers share it.
pub struct WorkspacePool {
    init_ws: InitWs,
    free_ws: FreeWs,
    free: Mutex<Vec<Workspace>>,
    /// What a workspace is of, for the out-of-memory error.
    what: String,
    bytes: Option<u64>,
}

impl WorkspacePool {
    /// The pool of the library's `jit_<name>_init_ws` and `jit_<name>_free_ws`; `what` and
    /// `bytes` describe a workspace for the error when one cannot be allocated.
    ///
    /// # Safety
    /// The symbols must have the signatures `void* ()` and `void (void*)`, and the pool
    /// must be dropped before `library`.
    pub unsafe fn new(library: &Library, name: &str, what: String, bytes: Option<u64>) -> Result<Self> {
        Ok(WorkspacePool {
            init_ws: unsafe { library.symbol(&format!("jit_{name}_init_ws"))? },
            free_ws: unsafe { library.symbol(&format!("jit_{name}_free_ws"))? },
            free: Mutex::new(Vec::new()),
            what,
            bytes,
        })
    }

    /// Runs `f` with a workspace of its own: a free one, or a new one on which `prepare`
    /// runs first.
    pub fn with<R>(&self, prepare: impl FnOnce(*mut c_void), f: impl FnOnce(*mut c_void) -> R) -> Result<R> {
        let ws = match self.free.lock().unwrap_or_else(|e| e.into_inner()).pop() {
            Some(ws) => ws,
            None => {
                // SAFETY: init_ws takes no arguments and returns fresh memory or null.
                let ptr = unsafe { (self.init_ws)() };
                if ptr.is_null() {
                    return Err(Error::OutOfMemory {
                        what: self.what.clone(),
                        bytes: self.bytes,
                        available: crate::array::memory_limit(),
                    });
                }
                prepare(ptr);
                Workspace(ptr)
            }
        };
        let result = f(ws.0);
        self.free.lock().unwrap_or_else(|e| e.into_inner()).push(ws);
        Ok(result)
    }
}

impl Drop for WorkspacePool {
    fn drop(&mut self) {
        for ws in std::mem::take(self.free.get_mut().unwrap_or_else(|e| e.into_inner())) {
            // SAFETY: each workspace came from this library's init_ws and is not in use
            // (we have `&mut self`).
            unsafe { (self.free_ws)(ws.0) };
        }
    }
}

/// The compiled entry points of one function.
pub struct JitFunction {
    call: Call,
    // Before the library: the workspaces are freed through it.
    pool: WorkspacePool,
    workspace_bytes: usize,
    constants: Vec<WorkspaceConstant>,
    path: PathBuf,
    _library: Library,
}

impl JitFunction {
    /// Loads the library at `path` and looks up `jit_<name>_{init_ws,free_ws,call}`; its
    /// workspaces take `workspace_bytes` each and hold `constants`.
    pub fn load(path: &Path, name: &str, workspace_bytes: usize, constants: Vec<WorkspaceConstant>) -> Result<Self> {
        let bytes = |c: &WorkspaceConstant| c.data.shape().iter().product::<usize>() * c.data.dtype().size();
        if let Some(c) = constants.iter().find(|c| c.offset + bytes(c) > workspace_bytes) {
            return Err(Error::Load {
                path: path.to_path_buf(),
                message: format!(
                    "a captured constant of {} bytes at offset {} does not fit the workspace of {workspace_bytes} bytes",
                    bytes(c),
                    c.offset
                ),
            });
        }
        let library = Library::load(path)?;
        // SAFETY: the symbols have exactly these signatures in the generated source; they
        // live as long as `library`, which is dropped last.
        unsafe {
            let what = format!("a workspace of `{}`", path.display());
            Ok(JitFunction {
                call: library.symbol(&format!("jit_{name}_call"))?,
                pool: WorkspacePool::new(&library, name, what, Some(workspace_bytes as u64))?,
                workspace_bytes,
                constants,
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
        // A new workspace gets the captured constants.
        let copy_constants = |ptr: *mut c_void| {
            for c in &self.constants {
                let bytes = c.data.bytes();
                // SAFETY: `load` checked that every constant lies inside the workspace,
                // which init_ws allocated with at least `workspace_bytes` bytes.
                unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), ptr.cast::<u8>().add(c.offset), bytes.len()) };
            }
        };
        self.pool.with(copy_constants, |ws| unsafe { (self.call)(inputs.as_ptr(), outputs.as_ptr(), ws) })
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

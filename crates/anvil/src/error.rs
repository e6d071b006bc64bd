//! The one error type of anvil.
//!
//! Every mistake a user can make (shapes that do not broadcast, an input array of the wrong
//! shape, an invalid function name, a missing C++ compiler, ...) surfaces as an [`Error`],
//! never as a panic.

use std::fmt;
use std::panic::Location;
use std::path::PathBuf;

/// `Result<T, anvil::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Where in the caller's code an op was written (from `#[track_caller]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SourceLocation {
    /// Source file of the caller.
    pub file: &'static str,
    /// Line in that file.
    pub line: u32,
    /// Column in that line.
    pub column: u32,
}

impl SourceLocation {
    /// The location of the caller of the current `#[track_caller]` function.
    #[track_caller]
    pub fn caller() -> Self {
        let loc = Location::caller();
        SourceLocation { file: loc.file(), line: loc.line(), column: loc.column() }
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// Everything that can go wrong in anvil.
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// An op was given operands it cannot work with (shapes, axes, dtypes).
    #[error("`{op}`: {message} (at {location})")]
    Op {
        /// The op, as the user wrote it (`add`, `matmul`, `reshape`, ...).
        op: &'static str,
        /// What was wrong, with the shapes involved.
        message: String,
        /// The user's source line.
        location: SourceLocation,
    },
    /// A transform (derivative, vmap, sparsity) cannot apply to this function as asked.
    #[error("{transform} of `{function}`: {message}")]
    Transform {
        /// The transform (`gradient`, `vmap`, ...).
        transform: &'static str,
        /// The function it was applied to.
        function: String,
        /// What does not fit.
        message: String,
    },
    /// A function was called or traced with the wrong number of arguments.
    #[error("function `{function}` takes {expected} input(s), but {got} were given")]
    ArgumentCount {
        /// The function's name.
        function: String,
        /// The number of inputs it was declared with.
        expected: usize,
        /// The number it was given.
        got: usize,
    },
    /// A traced function uses a tensor that belongs to another trace (kept from another
    /// function's body, say): it cannot be told from this function's own inputs.
    #[error(
        "function `{function}` uses a tensor from another traced function; a tensor lives only in the trace that \
         made it: pass the value as an input, or call the other function on this one's tensors"
    )]
    LeakedTensor {
        /// The function being traced.
        function: String,
    },
    /// An input array does not match its declared `Arg`.
    #[error("function `{function}`, input {index}: expected {expected}, got {got}")]
    InputMismatch {
        /// The function's name.
        function: String,
        /// Position of the input.
        index: usize,
        /// What the `Arg` declares (shape and dtype).
        expected: String,
        /// What was passed.
        got: String,
    },
    /// A function, module or constant name that cannot be used in generated C++.
    #[error("invalid name `{name}`: {reason}")]
    InvalidName {
        /// The offending name.
        name: String,
        /// Why it is rejected.
        reason: String,
    },
    /// A codegen integer constant that cannot be declared as written.
    #[error("codegen constant `{name}`: {message}")]
    Constant {
        /// The constant, or the expression's C++ text.
        name: String,
        /// What kind of problem.
        kind: ConstantError,
        /// What exactly, with the values.
        message: String,
    },
    /// Bytes that do not describe an anvil function or tensor (a corrupted file, another
    /// format, or a newer version of anvil's).
    #[error("cannot load the function: {message}")]
    Deserialize {
        /// What is wrong, and where.
        message: String,
    },
    /// A file or directory could not be read or written.
    #[error("{action} `{path}`: {message}")]
    Io {
        /// What anvil tried to do (`create directory`, `write`, ...).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
    /// No C++ compiler could be found for the JIT.
    #[error(
        "no C++ compiler found (tried {tried}). Install one (e.g. `apt-get install g++`) \
         or set $CXX to its path"
    )]
    CompilerNotFound {
        /// The commands that were tried.
        tried: String,
    },
    /// The configured C++ compiler (`$CXX` or [`crate::jit::CompilerOptions`]) does not work;
    /// anvil does not silently use another one.
    #[error("the C++ compiler `{command}` ({origin}) cannot be used: {message}. Set it to a working compiler command (e.g. `g++` or `ccache clang++`), or unset it to use the system's")]
    InvalidCompiler {
        /// The command line as given.
        command: String,
        /// Where it came from (`$CXX`, ...).
        origin: String,
        /// What failed.
        message: String,
    },
    /// The C++ compiler ran longer than the configured timeout and was stopped.
    #[error("C++ compilation of `{source_path}` did not finish within {seconds} s and was stopped ({command}); raise the limit with CompilerOptions::timeout or $ANVIL_COMPILE_TIMEOUT (seconds)")]
    CompileTimeout {
        /// The generated source file.
        source_path: PathBuf,
        /// The compiler command line.
        command: String,
        /// The timeout.
        seconds: f64,
    },
    /// The JIT cache directory cannot be trusted (another user could plant code in it).
    #[error("the JIT cache directory `{path}` cannot be trusted: {reason}")]
    UntrustedCache {
        /// The directory.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// The C++ compiler rejected generated code (a bug in anvil, or bad flags).
    #[error("C++ compilation of `{source_path}` failed ({command}):\n{message}")]
    Compile {
        /// The generated source file that failed.
        source_path: PathBuf,
        /// The compiler command line.
        command: String,
        /// The compiler's output.
        message: String,
    },
    /// An array would not fit in this machine's memory; nothing was allocated.
    #[error("{what} needs {}, more than this machine's memory ({} of RAM and swap)", bytes_text(*.bytes), bytes_text(Some(*.available)))]
    OutOfMemory {
        /// What was to be allocated.
        what: String,
        /// The bytes it needs (`None`: more than 64 bits can count).
        bytes: Option<u64>,
        /// The machine's RAM and swap, in bytes.
        available: u64,
    },
    /// A third-party library that generated code needs (PIQP, Eigen) is not installed.
    #[error("{what} not found (looked in {looked}); {fix}")]
    MissingDependency {
        /// The library, with its version.
        what: String,
        /// Where anvil looked.
        looked: String,
        /// How to install it or tell anvil where it is.
        fix: String,
    },
    /// An optimisation problem or solver that cannot be built as given (shapes, bounds).
    #[error("{what} `{name}`: {message}")]
    Problem {
        /// `problem`, `solver`, or `solve`.
        what: &'static str,
        /// The solver's (or problem's cost function's) name.
        name: String,
        /// What is wrong and how to fix it.
        message: String,
    },
    /// A function asked to run where it cannot as called: on a device it was not made for, or
    /// on device arrays laid out otherwise than it needs.
    #[error("function `{function}` on {device}: {message}")]
    Device {
        /// The function.
        function: String,
        /// Its device (`CPU`, `CUDA`).
        device: String,
        /// What does not fit, and what to do instead.
        message: String,
    },
    /// NVIDIA's runtime compiler (NVRTC) or CUDA driver is not installed where anvil looks,
    /// or lacks an entry point anvil needs.
    #[error("CUDA is unavailable: {what} not found (looked in {looked}); {fix}")]
    CudaUnavailable {
        /// The library (or the symbol and the library it was missing from).
        what: String,
        /// Where anvil looked, with why each candidate was not used.
        looked: String,
        /// How to install it or tell anvil where it is.
        fix: String,
    },
    /// A CUDA driver or NVRTC call failed.
    #[error("CUDA call `{call}` failed with error {code}: {message}")]
    Cuda {
        /// The API function (`cuMemAlloc_v2`, `nvrtcCompileProgram`, ...).
        call: &'static str,
        /// The `CUresult` or `nvrtcResult` it returned.
        code: i32,
        /// The driver's (or NVRTC's) name and description of the code, or what anvil
        /// refused before calling.
        message: String,
    },
    /// NVRTC rejected a CUDA source (a bug in anvil's generated code, or bad options).
    #[error("CUDA compilation of `{name}` for {arch} failed:\n{log}")]
    CudaCompile {
        /// The program's name, as the log refers to it.
        name: String,
        /// The GPU architecture it was compiled for (`sm_90`, ...).
        arch: String,
        /// NVRTC's log, naming the lines at fault.
        log: String,
    },
    /// A compiled library could not be loaded or lacks an entry point.
    #[error("loading `{path}`: {message}")]
    Load {
        /// The shared library.
        path: PathBuf,
        /// The loader's message.
        message: String,
    },
}

impl Error {
    /// An [`Error::Op`] for the user's line `location` (captured by the `#[track_caller]`
    /// tensor method the user called: closures inside it cannot see that line).
    pub(crate) fn op_at(location: SourceLocation, op: &'static str, message: impl Into<String>) -> Self {
        Error::Op { op, message: message.into(), location }
    }

    /// An [`Error::Io`] from a `std::io::Error`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, err: std::io::Error) -> Self {
        Error::Io { action, path: path.into(), message: err.to_string() }
    }
}

/// A byte count as people read it: `8.0 TiB (8796093022208 bytes)`.
fn bytes_text(bytes: Option<u64>) -> String {
    let Some(b) = bytes else { return "more than 2^64 bytes".into() };
    let units = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut value = b as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < units.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{b} bytes")
    } else {
        format!("{value:.1} {} ({b} bytes)", units[unit])
    }
}

/// What is wrong with a codegen integer constant ([`Error::Constant`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConstantError {
    /// A division by zero.
    DivisionByZero,
    /// The value does not fit the constant's C++ type (or 64 bits).
    Overflow,
    /// A constant defined in terms of itself.
    SelfReference,
    /// Two different constants with one name.
    Conflict,
}

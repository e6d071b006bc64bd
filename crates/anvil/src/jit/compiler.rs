//! Finding and running the system C++ compiler.

use crate::error::{Error, Result};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

/// How the JIT compiles: which compiler, with which flags, for how long, cached where.
///
/// The default compiler is `$CXX`, else the first of `c++`, `g++`, `clang++` that runs. A
/// compiler is a command line: `"ccache g++"` or `"/opt/gcc 13/bin/g++" -m64` (quotes group
/// words, as in a shell). A `$CXX` that does not work is an error, never silently replaced.
///
/// The default flags are [`DEFAULT_CXXFLAGS`] (`-O3 -march=native -fno-math-errno
/// -ffp-contract=off`), or the whitespace-separated contents of `$ANVIL_CXXFLAGS` if set. `-fno-math-errno` only stops
/// libm calls from setting `errno` (nobody reads it here), which lets loops with `sqrt`
/// vectorize; it does not change results. `-ffp-contract=off` keeps `a*b + c` from being
/// fused into one FMA, so native results are bit-for-bit those of the interpreter (pass
/// `-ffp-contract=fast` for the last bit of speed).
///
/// With `vector_math` (the default), loops may also use SIMD reductions for sums and
/// products (`-fopenmp-simd`), and glibc's vector math library (libmvec, ≤ 4 ulp) where
/// the compiler and system support it: `sum(0.5 x² + sin x)` runs several times faster.
///
/// A compilation that runs longer than `timeout` (default 600 s, or `$ANVIL_COMPILE_TIMEOUT`
/// seconds) is stopped with an error. Libraries are cached in `cache_dir` (default:
/// [`super::cache_dir`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CompilerOptions {
    /// The compiler command line (`None`: found as described above).
    pub compiler: Option<String>,
    /// Optimisation and target flags (`-std=c++17 -shared -fPIC` are always added).
    pub flags: Vec<String>,
    /// Vectorised reductions and vector math (see above).
    pub vector_math: bool,
    /// How long one compiler run may take.
    pub timeout: Duration,
    /// Where compiled libraries are cached (`None`: [`super::cache_dir`]).
    pub cache_dir: Option<PathBuf>,
}

/// The default flags, used unless `$ANVIL_CXXFLAGS` is set (see [`CompilerOptions`]).
///
/// ```
/// assert!(anvil::jit::DEFAULT_CXXFLAGS.contains(&"-O3"));
/// ```
pub const DEFAULT_CXXFLAGS: [&str; 4] = ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off"];

/// The default compile timeout, in seconds.
const DEFAULT_TIMEOUT_S: u64 = 600;

impl Default for CompilerOptions {
    fn default() -> Self {
        let flags = match std::env::var("ANVIL_CXXFLAGS") {
            Ok(f) => f.split_whitespace().map(String::from).collect(),
            Err(_) => DEFAULT_CXXFLAGS.map(String::from).to_vec(),
        };
        let seconds = std::env::var("ANVIL_COMPILE_TIMEOUT")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(DEFAULT_TIMEOUT_S as f64);
        CompilerOptions {
            compiler: None,
            flags,
            vector_math: true,
            timeout: Duration::from_secs_f64(seconds),
            cache_dir: None,
        }
    }
}

/// A C++ compiler that answered `--version`.
#[derive(Clone, Debug)]
pub struct Compiler {
    /// The command line that runs it: the program, then its own arguments.
    pub command: Vec<String>,
    /// First line of its `--version` output (part of the cache key).
    pub version: String,
}

/// How long `--version` may take: a compiler that cannot answer that is not usable.
const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

impl Compiler {
    /// The compiler named by `options`, else by `$CXX`, else the system default.
    pub fn find(options: &CompilerOptions) -> Result<Compiler> {
        match &options.compiler {
            Some(cmd) => {
                let origin = "the compiler given in CompilerOptions";
                Compiler::probe_line(cmd, origin, options.timeout.min(PROBE_TIMEOUT))
            }
            None => {
                static DEFAULT: OnceLock<Result<Compiler>> = OnceLock::new();
                DEFAULT.get_or_init(|| Compiler::from_env(std::env::var("CXX").ok())).clone()
            }
        }
    }

    /// The compiler `$CXX` names (`cxx`, its value), else the first system compiler that
    /// runs. A set, non-empty `$CXX` that does not work is an error.
    pub fn from_env(cxx: Option<String>) -> Result<Compiler> {
        if let Some(cmd) = cxx.filter(|c| !c.trim().is_empty()) {
            return Compiler::from_command_line(&cmd, "$CXX");
        }
        let mut tried = Vec::new();
        for cmd in ["c++", "g++", "clang++"] {
            tried.push(format!("`{cmd}`"));
            if let Ok(c) = Compiler::probe(vec![cmd.to_string()]) {
                return Ok(c);
            }
        }
        Err(Error::CompilerNotFound { tried: tried.join(", ") })
    }

    /// The compiler run by the command line `cmd`, which must answer `--version`; `origin`
    /// says where `cmd` came from, for the error.
    pub fn from_command_line(cmd: &str, origin: &str) -> Result<Compiler> {
        Compiler::probe_line(cmd, origin, PROBE_TIMEOUT)
    }

    fn probe_line(cmd: &str, origin: &str, timeout: Duration) -> Result<Compiler> {
        let invalid =
            |message: String| Error::InvalidCompiler { command: cmd.to_string(), origin: origin.into(), message };
        let words = split_command(cmd).map_err(invalid)?;
        if words.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        Compiler::probe_with(words, timeout).map_err(invalid)
    }

    fn probe(command: Vec<String>) -> std::result::Result<Compiler, String> {
        Compiler::probe_with(command, PROBE_TIMEOUT)
    }

    fn probe_with(command: Vec<String>, timeout: Duration) -> std::result::Result<Compiler, String> {
        let mut cmd = Command::new(&command[0]);
        cmd.args(&command[1..]).arg("--version");
        let out = match run(cmd, timeout) {
            Ok(out) => out,
            Err(Run::Spawn(e)) => return Err(format!("it cannot be run ({e})")),
            Err(Run::TimedOut) => return Err(format!("`--version` did not answer within {} s", timeout.as_secs_f64())),
        };
        if !out.status.success() {
            return Err(format!("`--version` failed ({})", out.status));
        }
        let version = String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string();
        Ok(Compiler { command, version })
    }

    /// The command line as one string, for messages and the cache key.
    pub fn command_line(&self) -> String {
        self.command.join(" ")
    }

    /// Compiles `source` into the shared library `output` (written by the compiler
    /// directly; the caller renames it into place), linking `libs` after the source. A run
    /// longer than `timeout` is stopped (with every process it started) and is an error.
    pub fn compile_shared(
        &self,
        source: &Path,
        output: &Path,
        flags: &[String],
        libs: &[String],
        timeout: Duration,
    ) -> Result<()> {
        self.compile(&["-shared", "-fPIC"], source, output, flags, libs, timeout)
    }

    /// Compiles `source` into the object file `output` (position-independent, so that it can
    /// be linked into shared libraries); as [`compile_shared`](Self::compile_shared) otherwise.
    pub fn compile_object(&self, source: &Path, output: &Path, flags: &[String], timeout: Duration) -> Result<()> {
        self.compile(&["-c", "-fPIC"], source, output, flags, &[], timeout)
    }

    fn compile(
        &self,
        mode: &[&str],
        source: &Path,
        output: &Path,
        flags: &[String],
        after: &[String],
        timeout: Duration,
    ) -> Result<()> {
        let mut cmd = Command::new(&self.command[0]);
        cmd.args(&self.command[1..]).arg("-std=c++17").args(mode).args(flags);
        cmd.arg(source).arg("-o").arg(output).args(after);
        run_tool(cmd, source, timeout)
    }
}

/// Runs a compiler or archiver on `source`; a failure carries its message, a run longer than
/// `timeout` is stopped.
pub(crate) fn run_tool(cmd: Command, source: &Path, timeout: Duration) -> Result<()> {
    let shown = format!("{cmd:?}").replace('"', "");
    let compile_error =
        |message: String| Error::Compile { source_path: source.to_path_buf(), command: shown.clone(), message };
    let result = match run(cmd, timeout) {
        Ok(out) => out,
        Err(Run::Spawn(e)) => return Err(compile_error(e.to_string())),
        Err(Run::TimedOut) => {
            return Err(Error::CompileTimeout {
                source_path: source.to_path_buf(),
                command: shown,
                seconds: timeout.as_secs_f64(),
            })
        }
    };
    if !result.status.success() {
        return Err(compile_error(String::from_utf8_lossy(&result.stderr).into_owned()));
    }
    Ok(())
}

/// Splits a command line into words: whitespace separates, single and double quotes group
/// (a shell's rules, without expansions), a backslash escapes the next character.
///
/// ```
/// use anvil::jit::split_command;
/// assert_eq!(split_command("ccache g++ -m64").unwrap(), ["ccache", "g++", "-m64"]);
/// assert_eq!(split_command(r#""/opt/my gcc/g++" -O2"#).unwrap(), ["/opt/my gcc/g++", "-O2"]);
/// assert!(split_command("g++ 'unclosed").is_err());
/// ```
pub fn split_command(line: &str) -> std::result::Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut chars = line.chars();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, c) if c.is_whitespace() => words.extend(word.take()),
            (None, '\'' | '"') => {
                quote = Some(c);
                word.get_or_insert_with(String::new);
            }
            (Some(q), c) if c == q => quote = None,
            (Some('\''), c) => word.get_or_insert_with(String::new).push(c),
            (_, '\\') => match chars.next() {
                Some(next) => word.get_or_insert_with(String::new).push(next),
                None => return Err("it ends with a lone backslash".into()),
            },
            (_, c) => word.get_or_insert_with(String::new).push(c),
        }
    }
    if let Some(q) = quote {
        return Err(format!("a {q} quote is not closed"));
    }
    words.extend(word);
    Ok(words)
}

/// Why a command did not produce output.
enum Run {
    Spawn(std::io::Error),
    TimedOut,
}

/// Runs `cmd` to completion with its output captured, unless it takes longer than
/// `timeout`: then it is killed, together with every process it started (a compiler driver
/// runs `cc1plus`, `as`, `ld` as children).
fn run(mut cmd: Command, timeout: Duration) -> std::result::Result<Output, Run> {
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    let mut child = cmd.spawn().map_err(Run::Spawn)?;
    let pid = child.id();
    // Read both pipes on their own threads: a full pipe would block the child forever.
    let read_all = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read_all(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = read_all(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let status = child.wait();
        let _ = done_tx.send(());
        status
    });
    let timed_out = done_rx.recv_timeout(timeout).is_err();
    if timed_out {
        kill_group(pid);
    }
    let status = waiter.join().expect("the waiter thread does not panic").map_err(Run::Spawn)?;
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    if timed_out {
        return Err(Run::TimedOut);
    }
    Ok(Output { status, stdout, stderr })
}

/// Kills the process group led by `pid` (the compiler and everything it started).
fn kill_group(pid: u32) {
    #[cfg(unix)]
    // SAFETY: kill(2) on a process group we created; no memory is involved.
    unsafe {
        libc::kill(-(pid as libc::pid_t), libc::SIGKILL);
    }
    #[cfg(not(unix))]
    let _ = pid;
}

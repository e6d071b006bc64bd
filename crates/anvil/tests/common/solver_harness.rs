//! A C++ harness for generated solver modules: solves each solver twice from a guess,
//! printing status, iterations, allocations during `solve` (with `-DCOUNT_MALLOC`) and x.

use anvil::opti::{IpmFunction, Solution, SqpFunction, WarmStart};
use std::fmt::Write;
use std::path::Path;
use std::process::Command;

/// A generated solver the harness runs (SQP or interior-point): its name, and its JIT solve
/// to compare with.
pub trait Solver {
    fn name(&self) -> &str;
    fn jit_solve(&self, x0: &[f64], p: &[f64]) -> Solution;
}

impl Solver for SqpFunction {
    fn name(&self) -> &str {
        SqpFunction::name(self)
    }

    fn jit_solve(&self, x0: &[f64], p: &[f64]) -> Solution {
        self.solve(x0, p, &WarmStart::default()).unwrap()
    }
}

impl Solver for IpmFunction {
    fn name(&self) -> &str {
        IpmFunction::name(self)
    }

    fn jit_solve(&self, x0: &[f64], p: &[f64]) -> Solution {
        self.solve(x0, p, &WarmStart::default()).unwrap()
    }
}

/// One solve the harness runs: (solver, x0, p).
pub type Run<'a> = (&'a dyn Solver, &'a [f64], &'a [f64]);

/// The harness's `main.cpp` for `runs` of (solver, x0, p).
pub fn harness(module: &str, runs: &[Run]) -> String {
    harness_of(&[module], runs)
}

/// The harness's `main.cpp` for `runs` of solvers of any of `modules`.
pub fn harness_of(modules: &[&str], runs: &[Run]) -> String {
    let includes: String = modules.iter().map(|m| format!("#include \"{m}.hpp\"\n")).collect();
    let mut s = format!(
        r#"{includes}#include <cstdio>
#include <cstdlib>
static long g_allocations = 0;
#ifdef COUNT_MALLOC
extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);
extern "C" void* __libc_memalign(std::size_t, std::size_t);
extern "C" void* malloc(std::size_t n) noexcept {{ ++g_allocations; return __libc_malloc(n); }}
extern "C" void* calloc(std::size_t n, std::size_t m) noexcept {{ ++g_allocations; return __libc_calloc(n, m); }}
extern "C" void* realloc(void* p, std::size_t n) noexcept {{ ++g_allocations; return __libc_realloc(p, n); }}
extern "C" void* aligned_alloc(std::size_t a, std::size_t n) noexcept {{ ++g_allocations; return __libc_memalign(a, n); }}
extern "C" int posix_memalign(void** p, std::size_t a, std::size_t n) noexcept {{
  ++g_allocations;
  *p = __libc_memalign(a, n);
  return *p != nullptr ? 0 : 12;
}}
#endif

int main() {{
"#
    );
    for (solver, x0, p) in runs {
        let n = solver.name();
        let list = |v: &[f64]| v.iter().map(|x| format!("{x:?}")).collect::<Vec<_>>().join(", ");
        let p_arg = if p.is_empty() { "nullptr".to_string() } else { "p".to_string() };
        let _ = write!(
            s,
            r#"  {{
    const double x0[] = {{{x0}}};
    const double p[] = {{{p}}};
    (void)p;
    double x[{n}::NX], lam_eq[{n}::NEQ + 1], lam_ineq[{n}::NINEQ + 1], lam_box[{n}::NX];
    {n}::WS_t ws = {n}::init_ws();
    if (ws == nullptr) return 2;
    const {n}::Settings settings;
    for (int k = 0; k < 2; ++k) {{
      const long before = g_allocations;
      const {n}::Info info = {n}::solve(x0, {p_arg}, nullptr, nullptr, nullptr, x, lam_eq, lam_ineq, lam_box, settings, ws);
      const long allocations = g_allocations - before;
      std::printf("{n} %d %d %ld", static_cast<int>(info.status), info.iterations, allocations);
      for (int j = 0; j < {n}::NX; ++j) std::printf(" %.17g", x[j]);
      std::printf("\n");
    }}
    {n}::free_ws(ws);
  }}
"#,
            x0 = list(x0),
            p = if p.is_empty() { "0.0".to_string() } else { list(p) },
        );
    }
    s + "  return 0;\n}\n"
}

/// Compiles the harness with the module (`-Wall -Wextra -Werror` and `flags`; no
/// third-party include directory: the module needs none) and the interior-point method's
/// `anvil_ipm.cpp` if it wrote one, links the prebuilt solver runtime if the module needs it,
/// runs it, returns its stdout.
pub fn build_and_run(compiler: &str, flags: &[&str], dir: &Path, module: &str, exe: &str) -> String {
    let mut cmd = Command::new(compiler);
    cmd.args(["-std=c++17", "-Wall", "-Wextra", "-Werror"]).args(flags);
    cmd.arg(dir.join("main.cpp")).arg(dir.join(format!("{module}.cpp")));
    // The interior-point method, compiled with the same flags (checked warning-free and under
    // the sanitisers with the module).
    if dir.join("anvil_ipm.cpp").exists() {
        cmd.arg(dir.join("anvil_ipm.cpp"));
    }
    if dir.join("anvil_opti.cpp").exists() {
        cmd.arg(anvil::opti::runtime_library(&anvil::jit::CompilerOptions::default()).unwrap());
    }
    let out = cmd.arg("-o").arg(dir.join(exe)).output().expect("run the C++ compiler");
    assert!(out.status.success(), "{compiler} rejected the module:\n{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(dir.join(exe)).env("ASAN_OPTIONS", "detect_leaks=1").output().expect("run the harness");
    assert!(run.status.success(), "{exe} failed:\n{}", String::from_utf8_lossy(&run.stderr));
    String::from_utf8(run.stdout).unwrap()
}

/// Builds the harness of `runs` with the generated `module` in `dir` twice at once — g++
/// under ASan and UBSan, and clang++ (g++ without it) with `malloc` interposed — and checks
/// every solve: solved, no allocation in `solve` (counted build), the JIT's iterations and x
/// (to `tol`). Returns the AOT x of every line (each run twice, per build).
pub fn check_module_against_jit(dir: &Path, module: &str, runs: &[Run], tol: f64) -> Vec<Vec<f64>> {
    std::fs::write(dir.join("main.cpp"), harness(module, runs)).unwrap();
    let clang = Command::new("clang++").arg("--version").output().is_ok_and(|o| o.status.success());
    let counting = if clang { "clang++" } else { "g++" };
    let (sanitized, counted) = std::thread::scope(|scope| {
        let a = scope.spawn(|| {
            // Line tables are all a sanitiser's report needs: full debug info made the module's
            // compile 30 s instead of 13 s.
            let flags = ["-O1", "-g1", "-fsanitize=address,undefined", "-fno-sanitize-recover=all"];
            build_and_run("g++", &flags, dir, module, "asan")
        });
        let b = scope.spawn(|| build_and_run(counting, &["-O2", "-DCOUNT_MALLOC"], dir, module, "counted"));
        (a.join().unwrap(), b.join().unwrap())
    });
    let mut xs = Vec::new();
    for (stdout, count) in [(sanitized, false), (counted, true)] {
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 2 * runs.len(), "{stdout}");
        for (line, (solver, x0, p)) in lines.iter().zip(runs.iter().flat_map(|r| [r, r])) {
            let words: Vec<&str> = line.split_whitespace().collect();
            assert_eq!(words[0], solver.name());
            assert_eq!(words[1], "0", "{line}: not solved");
            if count {
                assert_eq!(words[3], "0", "{line}: solve allocated");
            }
            let x: Vec<f64> = words[4..].iter().map(|v| v.parse().unwrap()).collect();
            let jit = solver.jit_solve(x0, p);
            assert_eq!(words[2], jit.info.iterations.to_string(), "{line}: iterations differ from the JIT's");
            assert_eq!(x.len(), jit.x.len(), "{line}");
            for (i, (a, b)) in x.iter().zip(&jit.x).enumerate() {
                assert!((a - b).abs() <= tol * (1.0 + b.abs()), "x[{i}] (AOT vs JIT): {a} vs {b}");
            }
            xs.push(x);
        }
    }
    xs
}

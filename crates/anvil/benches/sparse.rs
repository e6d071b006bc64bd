//! Sparse derivatives: colours, non-zeros, the cost of sparsity detection + colouring, and
//! the time per call of the generated sparse Jacobian / Hessian next to the function itself
//! and the dense derivative, measured in the same run; then at n = 10⁶ (and 10⁷ with
//! `--large`): build time and peak memory, compile time, the size of the generated C++, and
//! the cost per non-zero next to a hand-written C loop compiled by the same compiler with
//! the same flags, in one interleaved loop.
//!
//! Run with `cargo bench --bench sparse [-- --large]`.

use anvil::ad;
use anvil::ndarray::{Array1, ArrayD};
use anvil::{Arg, NumericalFunction};
mod common;

use common::median_time;
use std::time::{Duration, Instant};

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn residual(n: usize) -> NumericalFunction {
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    NumericalFunction::new(
        "bench_resid",
        move |[x]| {
            let p = x.pad(&[(1, 1)]);
            p.shrink(&[(0, n)]) - &x * 2.0 + p.shrink(&[(2, n + 2)]) + x.exp() * h2
        },
        [Arg::new(n)],
    )
    .unwrap()
}

fn rosenbrock(n: usize) -> NumericalFunction {
    NumericalFunction::new(
        "bench_rosen",
        move |[x]| {
            let (a, b) = (x.shrink(&[(0, n - 1)]), x.shrink(&[(1, n)]));
            ((&b - a.square()).square() * 100.0 + (1.0 - &a).square()).sum()
        },
        [Arg::new(n)],
    )
    .unwrap()
}

fn bench(label: &str, f: &NumericalFunction, hessian: bool, dense: bool) {
    let n = f.inputs()[0].numel();
    let x: ArrayD<f64> = Array1::linspace(-0.5, 0.8, n).into_dyn();
    let start = Instant::now();
    let pattern = if hessian { ad::hessian_sparsity(f).unwrap() } else { ad::jacobian_sparsity(f).unwrap() };
    let coloring = if hessian { ad::star_coloring(&pattern) } else { ad::column_coloring(&pattern) };
    let analysis = start.elapsed();
    let sparse = if hessian { ad::sphessian(f).unwrap() } else { ad::spjacobian(f).unwrap() };
    assert_eq!(sparse.colors(), coloring.count);
    f.compile().unwrap();
    sparse.compile().unwrap();
    let mut y = ArrayD::zeros(f.outputs()[0].shape.clone());
    let mut values = ArrayD::zeros(vec![sparse.nnz()]);
    let t_f = median_time(|| f.call_into(&[x.view()], &mut [y.view_mut()]).unwrap(), 200, 21);
    let t_sparse = median_time(|| sparse.call_into(&[x.view()], &mut [values.view_mut()]).unwrap(), 200, 21);
    println!(
        "{label:<34} n = {n:>5}: {} colours, nnz {:>5}, sparsity + colouring {:>7.2} ms; f {:>8.2} µs, sparse {:>8.2} µs (x{:.1} of f)",
        coloring.count,
        sparse.nnz(),
        analysis.as_secs_f64() * 1e3,
        us(t_f),
        us(t_sparse),
        us(t_sparse) / us(t_f),
    );
    if dense {
        let d = if hessian { ad::hessian(f).unwrap() } else { ad::jacobian(f).unwrap() };
        d.compile().unwrap();
        let mut dense = ArrayD::zeros(d.outputs()[0].shape.clone());
        let t_dense = median_time(|| d.call_into(&[x.view()], &mut [dense.view_mut()]).unwrap(), 5, 11);
        println!(
            "{:<34}   dense derivative {:>10.2} µs: sparse is {:.0}x faster",
            "",
            us(t_dense),
            us(t_dense) / us(t_sparse)
        );
    }
}

/// Sparsity detection, colouring and the sparse derivative's graph (no compilation) at
/// growing n: each should grow linearly.
fn analysis_scaling(label: &str, make: fn(usize) -> NumericalFunction, hessian: bool) {
    for n in [1_000, 10_000, 100_000, 1_000_000] {
        let f = make(n);
        let start = Instant::now();
        let pattern = if hessian { ad::hessian_sparsity(&f).unwrap() } else { ad::jacobian_sparsity(&f).unwrap() };
        let detected = start.elapsed();
        let coloring = if hessian { ad::star_coloring(&pattern) } else { ad::column_coloring(&pattern) };
        let colored = start.elapsed() - detected;
        let start = Instant::now();
        let sparse = if hessian { ad::sphessian(&f).unwrap() } else { ad::spjacobian(&f).unwrap() };
        let built = start.elapsed();
        println!(
            "{label:<34} n = {n:>7}: detection {:>8.1} ms, colouring {:>8.1} ms ({} colours), whole sparse derivative {:>8.1} ms (nnz {})",
            detected.as_secs_f64() * 1e3,
            colored.as_secs_f64() * 1e3,
            coloring.count,
            built.as_secs_f64() * 1e3,
            sparse.nnz(),
        );
    }
}

/// The hand-written loops: the non-zeros of the tridiagonal residual's Jacobian and of the
/// upper triangle of the extended Rosenbrock Hessian, in CSC order (no headers: the same
/// vector-math declaration as anvil's prelude).
const HAND_WRITTEN: &str = r#"
#if defined(ANVIL_LIBMVEC) && defined(__GNUC__) && !defined(__clang__)
extern "C" double exp(double) noexcept __attribute__((simd("notinbranch")));
#else
extern "C" double exp(double) noexcept;
#endif
extern "C" void hand_resid_jac(const double* __restrict x, double* __restrict v, double* __restrict d, long n, double h2) {
#pragma omp simd
  for (long j = 0; j < n; ++j) d[j] = -2.0 + h2 * exp(x[j]);
  v[0] = d[0];
  v[1] = 1.0;
  for (long j = 1; j < n - 1; ++j) {
    v[3 * j - 1] = 1.0;
    v[3 * j] = d[j];
    v[3 * j + 1] = 1.0;
  }
  v[3 * n - 4] = 1.0;
  v[3 * n - 3] = d[n - 1];
}
extern "C" void hand_rosen_hess(const double* __restrict x, double* __restrict v, double* __restrict, long n, double) {
  v[0] = 1200.0 * x[0] * x[0] - 400.0 * x[1] + 2.0;
  for (long j = 1; j < n - 1; ++j) {
    v[2 * j - 1] = -400.0 * x[j - 1];
    v[2 * j] = 1200.0 * x[j] * x[j] - 400.0 * x[j + 1] + 2.0 + 200.0;
  }
  v[2 * n - 3] = -400.0 * x[n - 2];
  v[2 * n - 2] = 200.0;
}
"#;

type HandLoop = unsafe extern "C" fn(*const f64, *mut f64, *mut f64, i64, f64);

/// At large n: the sparse derivative's build (detection, colouring, graph), its C++ and
/// compile time, and its time per non-zero next to the hand-written loop's.
fn at_scale(label: &str, f: &NumericalFunction, hessian: bool, hand: &anvil::jit::Library, symbol: &str) {
    let n = f.inputs()[0].numel();
    reset_peak_memory();
    let start = Instant::now();
    let sparse = if hessian { ad::sphessian(f).unwrap() } else { ad::spjacobian(f).unwrap() };
    let built = start.elapsed();
    let build_memory = peak_memory_mb().map_or_else(|| "peak memory unknown".to_string(), |mb| format!("peak {mb} MB"));
    let source = sparse.jit_source().len();
    let start = Instant::now();
    sparse.compile().unwrap();
    let compiled = start.elapsed();
    // SAFETY: the symbol has this signature in HAND_WRITTEN.
    let hand: HandLoop = unsafe { hand.symbol(symbol) }.unwrap();
    let x: ArrayD<f64> = Array1::linspace(-0.5, 0.8, n).into_dyn();
    let mut values = ArrayD::zeros(vec![sparse.nnz()]);
    let (mut by_hand, mut scratch) = (vec![0.0; sparse.nnz()], vec![0.0; n]);
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let mut call_hand = || unsafe { hand(x.as_ptr(), by_hand.as_mut_ptr(), scratch.as_mut_ptr(), n as i64, h2) };
    call_hand();
    sparse.call_into(&[x.view()], &mut [values.view_mut()]).unwrap();
    let (mut t_anvil, mut t_hand) = (Vec::new(), Vec::new());
    for _ in 0..15 {
        t_anvil.push(median_time(|| sparse.call_into(&[x.view()], &mut [values.view_mut()]).unwrap(), 3, 1));
        t_hand.push(median_time(&mut call_hand, 3, 1));
    }
    let agree = values.iter().zip(&by_hand).all(|(a, b)| (a - b).abs() <= 1e-9 * (1.0 + b.abs()));
    let (t_anvil, t_hand) = (median(t_anvil), median(t_hand));
    let per = |t: Duration| t.as_secs_f64() * 1e9 / sparse.nnz() as f64;
    println!(
        "{label:<34} n = {n:>8}: build {:.2} s ({build_memory}), {} kB of C++, compile {:.2} s; per non-zero {:.2} ns, hand-written C {:.2} ns (x{:.1}){}",
        built.as_secs_f64(),
        source / 1024,
        compiled.as_secs_f64(),
        per(t_anvil),
        per(t_hand),
        per(t_anvil) / per(t_hand),
        if agree { "" } else { "  VALUES DIFFER" },
    );
}

/// Restarts the process's peak resident memory count (Linux: `/proc/self/clear_refs`).
fn reset_peak_memory() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident memory since the last reset, in MB (Linux's `VmHWM`): the
/// build's peak, the process's own baseline included.
fn peak_memory_mb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let large = std::env::args().any(|a| a == "--large");
    let unit = anvil::jit::Unit::new("bench_hand_sparse", HAND_WRITTEN);
    let hand = anvil::jit::Library::load(&anvil::jit::compile_unit(&unit, &Default::default()).unwrap()).unwrap();
    for n in std::iter::once(1_000_000).chain(large.then_some(10_000_000)) {
        at_scale("tridiagonal residual, Jacobian", &residual(n), false, &hand, "hand_resid_jac");
        at_scale("extended Rosenbrock, Hessian", &rosenbrock(n), true, &hand, "hand_rosen_hess");
    }
    analysis_scaling("tridiagonal residual, Jacobian", residual, false);
    analysis_scaling("extended Rosenbrock, Hessian", rosenbrock, true);
    for n in [1000, 4000] {
        bench("tridiagonal residual, Jacobian", &residual(n), false, n == 1000);
    }
    for n in [1000, 4000] {
        bench("extended Rosenbrock, Hessian", &rosenbrock(n), true, n == 1000);
    }
}

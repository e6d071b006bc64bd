//! Sparse derivatives: colours, non-zeros, the cost of sparsity detection + colouring, and
//! the time per call of the generated sparse Jacobian / Hessian next to the function itself
//! and the dense derivative, measured in the same run.
//!
//! Run with `cargo bench --bench sparse`.

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

fn main() {
    analysis_scaling("tridiagonal residual, Jacobian", residual, false);
    analysis_scaling("extended Rosenbrock, Hessian", rosenbrock, true);
    for n in [1000, 4000] {
        bench("tridiagonal residual, Jacobian", &residual(n), false, n == 1000);
    }
    for n in [1000, 4000] {
        bench("extended Rosenbrock, Hessian", &rosenbrock(n), true, n == 1000);
    }
}

//! Benchmarks: native code from anvil against hand-written Rust baselines measured in the
//! same run, and the cost of tracing + lowering + rendering a large graph.
//!
//! Run with `cargo bench --bench codegen`. Prints the median time per call and the ratio
//! to the baseline (below 1 means anvil is faster).

use anvil::ndarray::{Array1, Array2, ArrayD};
use anvil::{Arg, NumericalFunction, Tensor};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
mod common;

use common::median_time;
use std::time::{Duration, Instant};

fn report(name: &str, anvil: Duration, baseline: Duration) {
    println!(
        "{name:<44} anvil {:>10.3} µs   hand-written Rust {:>10.3} µs   ratio {:.2}",
        anvil.as_secs_f64() * 1e6,
        baseline.as_secs_f64() * 1e6,
        anvil.as_secs_f64() / baseline.as_secs_f64()
    );
}

fn bench_energy() {
    let n = 1024;
    let f = NumericalFunction::new("bench_energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(n)]).unwrap();
    f.compile().unwrap();
    let x: ArrayD<f64> = Array1::linspace(-3.0, 3.0, n).into_dyn();
    let mut out = [ArrayD::zeros(vec![])];
    let native = median_time(|| f.call_into(&[x.view()], &mut [out[0].view_mut()]).unwrap(), 2000, 31);
    let xs = x.as_slice().unwrap();
    let baseline = median_time(
        || {
            let s: f64 = black_box(xs).iter().map(|&v| 0.5 * v * v + v.sin()).sum();
            black_box(s);
        },
        2000,
        31,
    );
    assert!((out[0].sum() - xs.iter().map(|&v| 0.5 * v * v + v.sin()).sum::<f64>()).abs() < 1e-9);
    report("(a) sum(0.5 x^2 + sin x), n = 1024", native, baseline);
    let with_alloc = median_time(|| drop(f.call(&[x.view()]).unwrap()), 2000, 31);
    report("    same, through `call` (allocates output)", with_alloc, baseline);
}

fn bench_mlp() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let mut rand_matrix = |r: usize, c: usize| Array2::from_shape_fn((r, c), |_| rng.gen_range(-0.5..0.5));
    let (w1, w2, w3) = (rand_matrix(64, 16), rand_matrix(64, 64), rand_matrix(4, 64));
    let (b1, b2, b3) = (
        rand_matrix(64, 1).into_shape_with_order(64).unwrap(),
        rand_matrix(64, 1).into_shape_with_order(64).unwrap(),
        rand_matrix(4, 1).into_shape_with_order(4).unwrap(),
    );
    let t = |a: &Array2<f64>| Tensor::from_array(a);
    let tv = |a: &Array1<f64>| Tensor::from_array(a);
    let (tw1, tw2, tw3, tb1, tb2, tb3) = (t(&w1), t(&w2), t(&w3), tv(&b1), tv(&b2), tv(&b3));
    let f = NumericalFunction::new(
        "bench_mlp",
        |[x]| {
            let h1 = (tw1.matmul(&x) + &tb1).tanh();
            let h2 = (tw2.matmul(&h1) + &tb2).tanh();
            tw3.matmul(&h2) + &tb3
        },
        [Arg::new(16)],
    )
    .unwrap();
    f.compile().unwrap();
    let x: ArrayD<f64> = Array1::linspace(-1.0, 1.0, 16).into_dyn();
    let mut out = [ArrayD::zeros(vec![4])];
    let native = median_time(|| f.call_into(&[x.view()], &mut [out[0].view_mut()]).unwrap(), 5000, 31);
    let layer = |w: &Array2<f64>, b: &Array1<f64>, x: &[f64], y: &mut [f64], act: bool| {
        for i in 0..w.nrows() {
            let row = w.row(i);
            let row = row.as_slice().unwrap();
            let mut acc = 0.0;
            for k in 0..x.len() {
                acc += row[k] * x[k];
            }
            y[i] = if act { (acc + b[i]).tanh() } else { acc + b[i] };
        }
    };
    let xs = x.as_slice().unwrap().to_vec();
    let (mut h1, mut h2, mut y) = (vec![0.0; 64], vec![0.0; 64], vec![0.0; 4]);
    let baseline = median_time(
        || {
            layer(&w1, &b1, black_box(&xs), &mut h1, true);
            layer(&w2, &b2, &h1, &mut h2, true);
            layer(&w3, &b3, &h2, &mut y, false);
            black_box(&y);
        },
        5000,
        31,
    );
    for (a, b) in out[0].iter().zip(&y) {
        assert!((a - b).abs() < 1e-12, "MLP results differ: {a} vs {b}");
    }
    report("(b) MLP 16-64-64-4, tanh", native, baseline);
}

fn bench_large_graph() {
    // An explicit-Euler rollout of a damped pendulum chain: ~10,000 graph nodes.
    let steps = 1000;
    let build = || {
        let start = Instant::now();
        let f = NumericalFunction::new(
            "bench_rollout",
            |[x0, k]| {
                let (mut q, mut v) = (x0.get(0), x0.get(1));
                for _ in 0..steps {
                    let a = -(&q.sin() * &k) - &v * 0.1;
                    q = &q + &v * 0.01;
                    v = &v + a * 0.01;
                }
                (q, v)
            },
            [Arg::new([2, 8]), Arg::new(8)],
        )
        .unwrap();
        let nodes = anvil::internals::graph::toposort(
            &f.output_tensors().iter().map(|t| t.node().unwrap().clone()).collect::<Vec<_>>(),
        )
        .len();
        let traced = start.elapsed();
        let program = f.program().kernels.len();
        let lowered = start.elapsed();
        let source = f.jit_source();
        let rendered = start.elapsed();
        (nodes, program, source.len(), traced, lowered - traced, rendered - lowered)
    };
    let (nodes, kernels, chars, trace, lower, render) = build();
    println!(
        "(c) {nodes} graph nodes -> {kernels} kernel(s), {chars} chars of C++: trace {:.1} ms, lower {:.1} ms, render {:.1} ms",
        trace.as_secs_f64() * 1e3,
        lower.as_secs_f64() * 1e3,
        render.as_secs_f64() * 1e3
    );
}

/// Time to first result: trace, lower, render, compile (cold cache), load and call.
fn bench_first_call() {
    let cold = std::env::temp_dir().join(format!("anvil_bench_cold_cache_{}", std::process::id()));
    std::env::set_var("ANVIL_CACHE_DIR", &cold);
    let x: ArrayD<f64> = Array1::linspace(-3.0, 3.0, 1024).into_dyn();
    let start = Instant::now();
    let f = NumericalFunction::new("cold_energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(1024)]).unwrap();
    f.call(&[x.view()]).unwrap();
    let cold_time = start.elapsed();
    let start = Instant::now();
    let g = NumericalFunction::new("cold_energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(1024)]).unwrap();
    g.call(&[x.view()]).unwrap();
    let warm_time = start.elapsed();
    println!(
        "(d) time to first result of (a): {:.0} ms with a cold cache (C++ compile), {:.2} ms from the cache",
        cold_time.as_secs_f64() * 1e3,
        warm_time.as_secs_f64() * 1e3
    );
    std::env::remove_var("ANVIL_CACHE_DIR");
    let _ = std::fs::remove_dir_all(cold);
}

/// `Tensor::cat` of k scalar pieces: generated code and compile time grow linearly in k.
fn bench_concatenation() {
    let cold = std::env::temp_dir().join(format!("anvil_bench_cat_cache_{}", std::process::id()));
    for k in [1000usize, 4000, 20000] {
        let start = Instant::now();
        let f = NumericalFunction::new(
            "bench_cat",
            |[x]| {
                let pieces: Vec<Tensor> =
                    (0..k).map(|i| (x.get((i % 4) as isize) * (i as f64 + 1.0)).unsqueeze(0)).collect();
                Tensor::cat(&pieces, 0)
            },
            [Arg::new(4)],
        )
        .unwrap()
        .with_compiler(anvil::jit::CompilerOptions { cache_dir: Some(cold.clone()), ..Default::default() });
        let chars = f.jit_source().len();
        let built = start.elapsed();
        let start = Instant::now();
        f.compile().unwrap();
        let compiled = start.elapsed();
        let x: ArrayD<f64> = Array1::linspace(1.0, 4.0, 4).into_dyn();
        assert_eq!(f.call(&[x.view()]).unwrap(), f.eval(&[x.view()]).unwrap());
        println!(
            "(e) cat of {k:>5} pieces: trace + lower + render {:>6.1} ms, {:>5} kB of C++, g++ -O3 {:.2} s",
            built.as_secs_f64() * 1e3,
            chars / 1024,
            compiled.as_secs_f64()
        );
    }
    let _ = std::fs::remove_dir_all(cold);
}

fn main() {
    bench_energy();
    bench_mlp();
    bench_large_graph();
    bench_first_call();
    bench_concatenation();
}

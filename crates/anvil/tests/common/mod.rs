//! Helpers shared by the integration tests: random inputs and oracle comparisons.
#![allow(dead_code)]

pub mod solver_harness;

use anvil::ndarray::{ArrayD, IxDyn};
use anvil::{DType, HostArray, NumericalFunction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// Counts this thread's Rust heap allocations (tests run on several threads).
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCATIONS.try_with(|n| n.set(n.get() + 1));
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// The Rust heap allocations this thread has made so far.
pub fn allocations() -> usize {
    ALLOCATIONS.with(Cell::get)
}

/// A deterministic random generator for a test.
pub fn rng(seed: u64) -> StdRng {
    StdRng::seed_from_u64(seed)
}

/// Random values in `[lo, hi)` of the given dtype (integers: rounded; bool: coin flips).
pub fn random(rng: &mut StdRng, shape: &[usize], dtype: DType, lo: f64, hi: f64) -> HostArray {
    let n: usize = shape.iter().product();
    let vals: Vec<f64> = (0..n).map(|_| rng.gen_range(lo..hi)).collect();
    let dim = IxDyn(shape);
    match dtype {
        DType::F64 => HostArray::F64(ArrayD::from_shape_vec(dim, vals).unwrap()),
        DType::F32 => HostArray::F32(ArrayD::from_shape_vec(dim, vals.iter().map(|&v| v as f32).collect()).unwrap()),
        DType::I32 => {
            HostArray::I32(ArrayD::from_shape_vec(dim, vals.iter().map(|&v| v.round() as i32).collect()).unwrap())
        }
        DType::I64 => {
            HostArray::I64(ArrayD::from_shape_vec(dim, vals.iter().map(|&v| v.round() as i64).collect()).unwrap())
        }
        DType::Bool => {
            HostArray::Bool(ArrayD::from_shape_vec(dim, vals.iter().map(|&v| v > (lo + hi) / 2.0).collect()).unwrap())
        }
    }
}

/// Asserts equal dtype and shape, and values equal within `rtol` (NaNs match NaNs).
pub fn assert_close(what: &str, got: &HostArray, want: &HostArray, rtol: f64) {
    assert_eq!(got.dtype(), want.dtype(), "{what}: dtype");
    assert_eq!(got.shape(), want.shape(), "{what}: shape");
    for (i, (g, w)) in got.to_f64_vec().iter().zip(want.to_f64_vec()).enumerate() {
        let ok = (g.is_nan() && w.is_nan()) || g == &w || (g - w).abs() <= rtol * (1.0 + w.abs());
        assert!(ok, "{what}: element {i}: native {g} vs interpreter {w}");
    }
}

/// `f` compiled at the JIT's default optimisation (`-O3`, vectorised loops and vector math),
/// whatever `$ANVIL_CXXFLAGS` says: for the tests whose subject is what the optimiser makes
/// of the generated code. `scripts/test.sh` compiles the other tests' code at `-O1`.
pub fn optimised(f: NumericalFunction) -> NumericalFunction {
    let flags = anvil::jit::DEFAULT_CXXFLAGS.map(String::from).to_vec();
    f.with_compiler(anvil::jit::CompilerOptions { flags, ..anvil::jit::CompilerOptions::default() })
}

/// Runs `f` through the JIT and the interpreter and compares every output.
///
/// Native code may differ in the last bits: vectorised sums run in another order, and
/// vector math (libmvec) is within 4 ulp of libm. Graphs that compute in `f32` anywhere
/// are compared at `f32` precision.
pub fn check_jit(f: &NumericalFunction, inputs: &[HostArray]) {
    let want = f.eval_dyn(inputs).expect("interpreter");
    let got = f.call_dyn(inputs).unwrap_or_else(|e| panic!("JIT of `{}` failed: {e}", f.name()));
    assert_eq!(got.len(), want.len());
    let nodes: Vec<_> = f.output_tensors().iter().map(|t| t.node().unwrap().clone()).collect();
    let any_f32 = anvil::internals::graph::toposort(&nodes).iter().any(|n| n.dtype == DType::F32);
    let rtol = if any_f32 { 2e-5 } else { 1e-10 };
    for (k, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_close(&format!("{} output {k}", f.name()), g, w, rtol);
    }
}

//! Nothing recurses on graph depth: a chain of a million nodes is built, evaluated,
//! differentiated, batched, lowered, rendered and dropped in a thread whose stack is far too
//! small for one stack frame per node.

use anvil::ndarray::array;
use anvil::{ad, vmap, Arg, NumericalFunction, Tensor};

/// Runs `f` in a thread with a 256 KiB stack (a frame per node would need hundreds of MiB).
fn on_small_stack(f: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new().stack_size(256 * 1024).spawn(f).expect("thread").join().expect("no overflow");
}

/// `steps` rounds of `x <- sin(x * 1.0000001) + 0.1`: three nodes per round.
fn chain(x: &Tensor, steps: usize) -> Tensor {
    let mut y = x.clone();
    for _ in 0..steps {
        y = (&y * 1.0000001).sin() + 0.1;
    }
    y
}

fn node_count(t: &Tensor) -> usize {
    anvil::internals::graph::toposort(&[t.node().unwrap().clone()]).len()
}

#[test]
fn a_million_node_chain_is_built_evaluated_and_dropped_without_recursion() {
    on_small_stack(|| {
        let f = NumericalFunction::new("deep", |[x]| chain(&x, 333_334), [Arg::new(2)]).unwrap();
        assert!(node_count(&f.output_tensors()[0]) > 1_000_000);
        let x = array![0.3, -0.2].into_dyn();
        let got = f.eval(&[x.view()]).unwrap().remove(0);
        let mut want = x.clone();
        for _ in 0..333_334 {
            want.mapv_inplace(|v| (v * 1.0000001).sin() + 0.1);
        }
        assert_eq!(got, want);
        drop(f);
    });
}

#[test]
fn deep_chains_are_differentiated_batched_and_lowered_without_recursion() {
    on_small_stack(|| {
        let f = NumericalFunction::new("deep", |[x]| chain(&x, 20_000).sum(), [Arg::new(2)]).unwrap();
        let g = ad::gradient(&f).unwrap();
        let j = ad::jvp(&f).unwrap();
        let v = vmap(&f, 3, &[]).unwrap();
        let pattern = ad::jacobian_sparsity(&g).unwrap();
        assert_eq!(pattern.nnz(), 2); // each gradient entry depends on its own element only
        let x = array![0.3, -0.2].into_dyn();
        let grad = g.eval(&[x.view()]).unwrap().remove(0);
        let tangent = j.eval(&[x.view(), array![1.0, 0.0].into_dyn().view()]).unwrap().remove(1);
        assert!((tangent[[]] - grad[0]).abs() < 1e-12, "jvp {tangent} vs gradient {grad}");
        for function in [&f, &g, &v] {
            let program = function.program();
            assert!(!program.kernels.is_empty());
            assert!(function.jit_source().len() > 100_000);
        }
    });
}

#[test]
fn deep_sums_nested_on_both_sides_are_scheduled_without_recursion() {
    // `y <- a + (y + b)`: each round's sum holds the last round's as the first operand of its
    // second operand, so resolving sums (zeros folded away) must not follow the nesting down.
    on_small_stack(|| {
        let f = NumericalFunction::new(
            "zigzag",
            |[x, a, b]| {
                let mut y = x.clone();
                for _ in 0..20_000 {
                    y = &a + &(&y + &b);
                }
                y
            },
            [Arg::new(2), Arg::new(2), Arg::new(2)],
        )
        .unwrap();
        assert!(f.jit_source().len() > 100_000);
    });
}

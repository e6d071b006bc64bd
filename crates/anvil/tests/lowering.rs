//! Lowering decisions: what fuses, what becomes a buffer, how the workspace is laid out.

mod common;

use anvil::lower::{BufferKind, Program};
use anvil::ndarray::{Array1, Array2};
use anvil::{Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, random, rng};

fn mlp(layers: usize, width: usize) -> NumericalFunction {
    let weights: Vec<Tensor> = (0..layers)
        .map(|l| {
            Tensor::from_array(&Array2::from_shape_fn((width, width), |(i, j)| {
                ((l * 7 + i * 3 + j) as f64).sin() * 0.3
            }))
        })
        .collect();
    NumericalFunction::new(
        "mlp",
        |[x]| {
            let mut h = x;
            for w in &weights {
                h = w.matmul(&h).tanh();
            }
            h
        },
        [Arg::new(width)],
    )
    .unwrap()
}

fn intermediates(p: &Program) -> Vec<usize> {
    p.buffers.iter().enumerate().filter(|(_, b)| matches!(b.kind, BufferKind::Intermediate)).map(|(i, _)| i).collect()
}

#[test]
fn an_elementwise_chain_fuses_into_its_reduction() {
    let f = NumericalFunction::new("energy", |[x]| (x.square() * 0.5 + x.sin()).sum(), [Arg::new(1024)]).unwrap();
    assert_eq!(f.program().kernels.len(), 1);
    assert!(intermediates(f.program()).is_empty());
    let mean = NumericalFunction::new("mean", |[x]| x.mean(), [Arg::new([4, 5])]).unwrap();
    assert_eq!(mean.program().kernels.len(), 1);
}

#[test]
fn broadcast_values_are_computed_once() {
    // Each layer's activation is broadcast into the next matmul: one kernel per layer.
    let f = mlp(3, 16);
    assert_eq!(f.program().kernels.len(), 3);
    assert_eq!(intermediates(f.program()).len(), 2);
    let mut r = rng(1);
    check_jit(&f, &[random(&mut r, &[16], DType::F64, -1.0, 1.0)]);
}

#[test]
fn workspace_reuses_dead_intermediates_at_aligned_offsets() {
    let f = mlp(6, 32);
    let p = f.program();
    let mids = intermediates(p);
    assert_eq!(mids.len(), 5);
    let constants: usize = p
        .buffers
        .iter()
        .filter(|b| matches!(b.kind, BufferKind::Constant(_)))
        .map(|b| b.nbytes().div_ceil(64) * 64)
        .sum();
    // Only two activations are alive at any time.
    assert!(p.workspace_size <= constants + 2 * 32 * 8, "workspace {} bytes", p.workspace_size);
    for (b, offset) in p.offsets.iter().enumerate() {
        if let Some(o) = offset {
            assert_eq!(o % 64, 0, "buffer {b} at offset {o}");
        }
    }
    // Buffers alive at the same time never share memory: a buffer lives from the kernel
    // writing it to the last kernel reading it.
    let live = |b: usize| {
        let first = p.kernels.iter().position(|k| k.outputs.contains(&b)).unwrap();
        let last = p.kernels.iter().rposition(|k| k.inputs().contains(&b)).unwrap_or(first);
        (first, last)
    };
    for (i, &a) in mids.iter().enumerate() {
        for &b in &mids[i + 1..] {
            let ((fa, la), (fb, lb)) = (live(a), live(b));
            let (oa, ob) = (p.offsets[a].unwrap(), p.offsets[b].unwrap());
            let disjoint = oa + p.buffers[a].nbytes() <= ob || ob + p.buffers[b].nbytes() <= oa;
            assert!(disjoint || la < fb || lb < fa, "buffers {a} and {b} share memory while both alive");
        }
    }
    let mut r = rng(2);
    check_jit(&f, &[random(&mut r, &[32], DType::F64, -1.0, 1.0)]);
}

#[test]
fn outputs_sharing_a_deep_history_are_computed_in_one_kernel() {
    // An unrolled simulation: ~2000 steps deep, two outputs sharing all the state.
    let f = NumericalFunction::new(
        "rollout",
        |[x0, k]| {
            let (mut q, mut v) = (x0.get(0), x0.get(1));
            for _ in 0..500 {
                let a = -(&q.sin() * &k) - &v * 0.1;
                q = &q + &v * 0.01;
                v = &v + a * 0.01;
            }
            (q, v)
        },
        [Arg::new([2, 4]), Arg::new(4)],
    )
    .unwrap();
    assert_eq!(f.program().kernels.len(), 1);
    let inputs = [
        HostArray::F64(Array2::from_shape_fn((2, 4), |(i, j)| (i + j) as f64 * 0.3).into_dyn()),
        HostArray::F64(Array1::from_shape_fn(4, |i| 1.0 + i as f64).into_dyn()),
    ];
    check_jit(&f, &inputs);
}

#[test]
fn an_output_read_by_another_output_is_computed_first() {
    let f = NumericalFunction::new("chain", |[x]| (x.exp(), x.exp().sum(), x.exp() * 2.0), [Arg::new(8)]).unwrap();
    let mut r = rng(3);
    check_jit(&f, &[random(&mut r, &[8], DType::F64, -1.0, 1.0)]);
}

#[test]
fn grouped_outputs_may_read_buffers_realized_later_in_the_graph() {
    // `atan(x)` and `sin(sum(g))` share one kernel, which reads the buffer of `sin(x)`
    // (gathered), a node that comes after `atan(x)` in topological order.
    let idx = Tensor::from_array(&anvil::ndarray::array![-1i64, 2, 1]);
    let f = NumericalFunction::new(
        "late_buffer",
        |[x]| {
            let g = x.sin().take(&idx);
            vec![x.atan(), g.sin(), g.sum().sin()]
        },
        [Arg::new(())],
    )
    .unwrap();
    check_jit(&f, &[HostArray::F64(anvil::ndarray::ArrayD::from_elem(vec![], 0.7))]);
}

#[test]
fn functions_compose_by_application() {
    let step = NumericalFunction::new("step", |[x, u]| &x + (x.sin() + &u) * 0.1, [Arg::new(3), Arg::new(3)]).unwrap();
    // Swapped arguments: the inner inputs are replaced, never the replacements.
    let f = NumericalFunction::new(
        "composed",
        |[x, u]| {
            let once = step.apply(&[x.clone(), u.clone()])?.remove(0);
            let swapped = step.apply(&[u.clone(), once.clone()])?.remove(0);
            Ok((once, swapped))
        },
        [Arg::new(3), Arg::new(3)],
    )
    .unwrap();
    let x = anvil::ndarray::array![0.1, 0.2, 0.3].into_dyn();
    let u = anvil::ndarray::array![1.0, -1.0, 0.5].into_dyn();
    let out = f.eval(&[x.view(), u.view()]).unwrap();
    let once = step.eval(&[x.view(), u.view()]).unwrap().remove(0);
    let swapped = step.eval(&[u.view(), once.view()]).unwrap().remove(0);
    assert_eq!(out[0], once);
    assert_eq!(out[1], swapped);
    // Applied graphs fuse like any other: one kernel per output (the second reads the first).
    assert_eq!(f.program().kernels.len(), 2);
    let bad = NumericalFunction::new("bad_apply", |[x]| step.apply(&[x.clone(), x.sum()]), [Arg::new(3)]).unwrap_err();
    assert!(bad.to_string().contains("replaces an input of shape [3]"), "{bad}");
    assert!(step.apply(&[Tensor::input(0, 3, DType::F64)]).is_err());
}

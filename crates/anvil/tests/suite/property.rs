//! Property tests: random graphs over random shapes (elementwise chains, long ones included,
//! movement chains, reductions with elementwise tails, broadcasting, stacks of scalars) lower to native code that agrees with the interpreter, both
//! as straight-line code and as loops, whole or with their bodies split into parts.

use crate::common;

use anvil::LowerOptions;
use anvil::{Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, optimised, random, rng};
use proptest::prelude::*;

/// One step of a random program: an op code and two operand choices.
pub(crate) type Step = (u8, u8, u8);

/// Applies step `(op, a, b)` to the pool of tensors built so far.
fn apply(pool: &[Tensor], (op, a, b): Step) -> Tensor {
    let x = &pool[a as usize % pool.len()];
    let y = &pool[b as usize % pool.len()];
    let rank = x.ndim();
    let axis = if rank == 0 { 0 } else { b as usize % rank };
    match op % 27 {
        0 => x.sin(),
        1 => x.tanh().exp(),
        2 => x.abs().sqrt() - 0.5,
        3 if x.shape() == y.shape() || y.ndim() == 0 => x * y,
        3 => x * 0.5,
        4 if x.shape() == y.shape() || y.ndim() == 0 => x.maximum(y) + y,
        4 => x + 1.0,
        5 if rank > 0 => x.sum_axes(axis as isize, b % 2 == 0),
        6 if rank > 0 => x.max_axes(axis as isize, b % 2 == 1),
        7 if rank > 1 => {
            let mut perm: Vec<usize> = (0..rank).collect();
            perm.rotate_left(1 + b as usize % (rank - 1));
            x.permute(perm)
        }
        8 => x.reshape(x.numel()),
        9 if rank > 0 => {
            let mut pads = vec![(0, 0); rank];
            pads[axis] = (b as usize % 2, (b as usize / 2) % 3);
            x.pad(&pads)
        }
        10 if rank > 0 && x.shape()[axis] > 1 => {
            let mut ranges: Vec<(usize, usize)> = x.shape().iter().map(|&n| (0, n)).collect();
            ranges[axis] = (1, x.shape()[axis]);
            x.shrink(&ranges)
        }
        11 if rank > 0 => x.flip(axis as isize),
        12 => {
            // Broadcast: a reduced copy expanded back against the original.
            if rank > 0 {
                x - x.sum_axes(axis as isize, true) * 0.25
            } else {
                x * 2.0
            }
        }
        13 if rank > 0 && x.shape()[axis] > 2 => {
            let mut info = vec![anvil::ndarray::SliceInfoElem::from(..); rank];
            info[axis] =
                anvil::ndarray::SliceInfoElem::Slice { start: 0, end: None, step: if b % 2 == 0 { 2 } else { -2 } };
            x.slice(info)
        }
        14 if rank == 2 && y.ndim() == 2 && x.shape()[1] == y.shape()[0] => x.matmul(y),
        14 if rank == 2 => x.matmul(&x.transpose()),
        15 => x.cast(DType::F32).cos().cast(DType::F64),
        16 if x.shape() == y.shape() || y.ndim() == 0 => x.gt(0.0).where_(x, y),
        16 => x.lt(0.25).where_(x.sin(), -1.0),
        17 if rank > 0 => Tensor::cat(&[x.clone(), x.flip(axis as isize) * 2.0], axis as isize),
        18 if x.numel() % 2 == 0 && x.numel() > 0 => x.reshape([2, x.numel() / 2]),
        19 => {
            let mut shape = vec![3];
            shape.extend_from_slice(x.shape());
            x.unsqueeze(0).expand(shape).sum_axes(0, false) * 0.5
        }
        20 => (x.cast(DType::F32) * 1.5 + 0.25).tanh().cast(DType::F64),
        21 if rank > 0 && b % 2 == 0 => x.min_axes(axis as isize, false),
        21 if rank > 0 => (x * 0.5).prod_axes(axis as isize, true),
        22 if x.numel() > 0 => {
            // Gather at data-dependent positions (clamped when out of range).
            let n = x.numel() as i64;
            let picks: Vec<i64> = (0..n + 2).map(|i| (i * 7 + b as i64) % (n + 3) - 1).collect();
            x.sin().take(&Tensor::from_array(&anvil::ndarray::Array1::from(picks)))
        }
        23 if x.numel() > 0 => {
            let n = x.numel();
            let slots: Vec<i64> = (0..n as i64).map(|i| (i * 3 + b as i64) % 4).collect();
            let index = Tensor::from_array(&anvil::ndarray::Array1::from(slots)).reshape(x.shape());
            Tensor::scatter_add(&x.exp(), &index, 4)
        }
        24 if x.numel() > 0 && y.numel() > 0 => {
            // A stack of scalars picked from two tensors (a robot model's state vector).
            let (fx, fy) = (x.reshape(x.numel()), y.reshape(y.numel()));
            let middle = (x.numel() / 2) as isize;
            Tensor::stack(&[fx.get(0) * fy.get(-1), fx.get(middle).sin(), fy.get(0) + 1.0, fx.get(-1)], 0)
        }
        25 => {
            // A long elementwise chain (one fused body of about a hundred operations).
            let mut t = x.clone();
            for k in 0..32 {
                t = (t * 0.75 + 0.01 * k as f64).sin();
            }
            t
        }
        26 if rank > 0 => {
            // A reduction followed by an elementwise tail (a layer: sum, bias, activation, its
            // derivative).
            let t = (x.sum_axes(axis as isize, false) + 0.5).tanh();
            t.clone() * (1.0 - t.clone() * t)
        }
        _ => x.atan(),
    }
}

pub(crate) fn build(shapes: &[Vec<usize>], steps: &[Step]) -> NumericalFunction {
    let args: Vec<Arg> = shapes.iter().map(|s| Arg::new(s.clone())).collect();
    let inputs: Vec<Tensor> =
        args.iter().enumerate().map(|(i, a)| Tensor::input(i, a.shape.clone(), DType::F64)).collect();
    let mut pool = inputs.clone();
    for &step in steps {
        let t = apply(&pool, step);
        t.check().expect("the generator only builds valid graphs");
        pool.push(t);
    }
    // The last three values are outputs; earlier ones are shared intermediates.
    let outputs: Vec<Tensor> = pool.iter().rev().take(3).cloned().collect();
    // At -O3: the vectoriser's view of random graphs is part of what is tested.
    optimised(NumericalFunction::from_tensors("random_graph", args, &outputs).unwrap())
}

pub(crate) fn shape() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(1usize..5, 0..4)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn random_graphs_agree_with_the_interpreter(
        shapes in prop::collection::vec(shape(), 1..3),
        steps in prop::collection::vec(any::<Step>(), 1..12),
        seed in any::<u64>(),
    ) {
        let f = build(&shapes, &steps);
        let inputs = host_inputs(&shapes, seed);
        check_jit(&f, &inputs);
        // These graphs are small enough for straight-line code: the loops too.
        check_jit(&f.with_lowering(LowerOptions::loops_only()), &inputs);
        // And as loops with every body split into parts of two operations.
        let split = LowerOptions { max_body: 2, ..LowerOptions::loops_only() };
        check_jit(&build(&shapes, &steps).with_lowering(split), &inputs);
    }
}

/// A failure the random graphs found: a batched region over a padded axis, whose loop over
/// items is split into one-item segments (rendered as blocks, which must carry no `omp simd`).
#[test]
fn a_batched_region_split_into_one_item_segments_compiles() {
    let shapes = [vec![], vec![1]];
    // Op codes as the generator reads them (`op % 27`): gather, sin, pad, slice, sin, sin,
    // broadcast, sin, matmul.
    let steps =
        [(22, 0, 0), (0, 115, 0), (9, 13, 1), (13, 24, 0), (0, 0, 0), (0, 0, 0), (12, 92, 0), (0, 33, 0), (14, 162, 0)];
    let inputs = host_inputs(&shapes, 0);
    // Straight-line code would build it whole (its gather reads captured positions).
    let f = build(&shapes, &steps).with_lowering(LowerOptions { straight_line_max_work: 0, ..LowerOptions::default() });
    assert!(f.program().kernels.iter().any(|k| k.items));
    check_jit(&f, &inputs);
    check_jit(
        &build(&shapes, &steps).with_lowering(LowerOptions { max_body: 2, ..LowerOptions::loops_only() }),
        &inputs,
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    /// vmap of a random graph over many items, compiled (as one loop over the items around
    /// straight-line code where the graph allows), agrees with the interpreter.
    #[test]
    fn random_graphs_vmapped_over_many_items_agree_with_the_interpreter(
        shapes in prop::collection::vec(shape(), 1..3),
        steps in prop::collection::vec(any::<Step>(), 1..12),
        seed in any::<u64>(),
    ) {
        let v = anvil::vmap(&build(&shapes, &steps), 40, &[]).unwrap();
        let mut r = rng(seed);
        let inputs: Vec<HostArray> = shapes
            .iter()
            .map(|s| random(&mut r, &std::iter::once(40).chain(s.iter().copied()).collect::<Vec<_>>(), DType::F64, -2.0, 2.0))
            .collect();
        check_jit(&v, &inputs);
        let split = LowerOptions { max_body: 3, ..LowerOptions::default() };
        check_jit(&anvil::vmap(&build(&shapes, &steps), 40, &[]).unwrap().with_lowering(split), &inputs);
    }
}

/// Random inputs in [-2, 2] of the given shapes.
pub(crate) fn host_inputs(shapes: &[Vec<usize>], seed: u64) -> Vec<HostArray> {
    let mut r = rng(seed);
    shapes.iter().map(|s| random(&mut r, s, DType::F64, -2.0, 2.0)).collect()
}

fn random_inputs(shapes: &[Vec<usize>], seed: u64) -> Vec<anvil::ndarray::ArrayD<f64>> {
    host_inputs(shapes, seed).iter().map(HostArray::to_f64).collect()
}

fn views(a: &[anvil::ndarray::ArrayD<f64>]) -> Vec<anvil::ndarray::ArrayViewD<'_, f64>> {
    a.iter().map(|x| x.view()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// Forward and reverse mode agree on random graphs: ⟨u, J t⟩ = ⟨Jᵀ u, t⟩.
    #[test]
    fn random_graphs_satisfy_the_adjoint_identity(
        shapes in prop::collection::vec(shape(), 1..3),
        steps in prop::collection::vec(any::<Step>(), 1..10),
        seed in any::<u64>(),
    ) {
        let f = build(&shapes, &steps);
        let xs = random_inputs(&shapes, seed);
        let ts = random_inputs(&shapes, seed ^ 1);
        let jf = anvil::ad::jvp(&f).unwrap();
        let vf = anvil::ad::vjp(&f).unwrap();
        let mut jin = xs.clone();
        jin.extend(ts.iter().cloned());
        let jout = jf.eval(&views(&jin)).unwrap();
        let m = f.outputs().len();
        let us: Vec<_> = f.outputs().iter().enumerate().map(|(k, o)| random_inputs(std::slice::from_ref(&o.shape), seed ^ (k as u64 + 7)).remove(0)).collect();
        let mut vin = xs.clone();
        vin.extend(us.iter().cloned());
        let bars = vf.eval(&views(&vin)).unwrap();
        let lhs: f64 = us.iter().zip(&jout[m..]).map(|(u, y)| (u * y).sum()).sum();
        let rhs: f64 = bars.iter().zip(&ts).map(|(b, t)| (b * t).sum()).sum();
        // Graphs that compute in f32 anywhere agree to f32 precision.
        let nodes: Vec<_> = f.output_tensors().iter().map(|t| t.node().unwrap().clone()).collect();
        let tol = if anvil::internals::graph::toposort(&nodes).iter().any(|n| n.dtype == DType::F32) { 1e-5 } else { 1e-9 };
        // Where a product overflows, the two sums meet infinities in different orders (inf
        // on one side can be inf - inf = NaN on the other): only finite sums are compared.
        prop_assert!(!lhs.is_finite() || (lhs - rhs).abs() <= tol * (1.0 + lhs.abs()), "<u, Jt> = {} vs <J^T u, t> = {}", lhs, rhs);
    }

    /// vmap of a random graph equals a loop over the batch.
    #[test]
    fn random_graphs_vmap_like_a_loop(
        shapes in prop::collection::vec(shape(), 1..3),
        steps in prop::collection::vec(any::<Step>(), 1..10),
        seed in any::<u64>(),
    ) {
        let f = build(&shapes, &steps);
        let batch = 3;
        let v = anvil::vmap(&f, batch, &[]).unwrap();
        let batched: Vec<Vec<usize>> = shapes.iter().map(|s| std::iter::once(batch).chain(s.iter().copied()).collect()).collect();
        let xs = random_inputs(&batched, seed);
        let got = v.eval(&views(&xs)).unwrap();
        for b in 0..batch {
            let single: Vec<_> = xs.iter().map(|x| x.index_axis(anvil::ndarray::Axis(0), b).to_owned()).collect();
            let want = f.eval(&views(&single)).unwrap();
            for (g, w) in got.iter().zip(&want) {
                let g = g.index_axis(anvil::ndarray::Axis(0), b);
                for (a, c) in g.iter().zip(w.iter()) {
                    prop_assert!((a.is_nan() && c.is_nan()) || a == c || (a - c).abs() <= 1e-12 * (1.0 + c.abs()), "{} vs {}", a, c);
                }
            }
        }
    }

    /// Sparsity detection is sound on random graphs: every entry of the dense Jacobian (first
    /// output, each input) that is not zero at a random point lies in the detected pattern.
    #[test]
    fn random_graphs_have_no_nonzero_outside_their_sparsity_pattern(
        shapes in prop::collection::vec(shape(), 1..3),
        steps in prop::collection::vec(any::<Step>(), 1..10),
        seed in any::<u64>(),
    ) {
        let f = build(&shapes, &steps).output(0).unwrap();
        let xs = random_inputs(&shapes, seed);
        for wrt in 0..shapes.len() {
            let pattern = anvil::ad::jacobian_sparsity_wrt(&f, wrt).unwrap();
            let jac = anvil::ad::jacobian_wrt(&f, wrt).unwrap().eval(&views(&xs)).unwrap().remove(0);
            let (rows, cols) = pattern.shape();
            let dense = jac.into_shape_with_order((rows, cols)).unwrap();
            for ((i, j), &v) in dense.indexed_iter() {
                prop_assert!(v == 0.0 || pattern.contains(i, j), "J[{}, {}] = {} outside the pattern (input {})", i, j, v, wrt);
            }
        }
    }
}

//! Lowering decisions: what fuses, what becomes a buffer, how the workspace is laid out.

use crate::common;

use anvil::internals::graph::UnaryOp;
use anvil::internals::lower::{BufferKind, LowerOptions, Program};
use anvil::ndarray::{Array1, Array2};
use anvil::{Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, optimised, random, rng};

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
fn sines_and_cosines_in_a_vectorised_loop_are_never_merged() {
    // GCC merges the builtins sin(x) and cos(x) into sincos, whose calls keep a loop scalar
    // (4.9x slower here): inside the innermost loop they are the inline anvil_fast_sin/cos
    // (one range reduction for both), and anvil_loop_sin/cos in the exact rerun;
    // straight-line code keeps the builtins, which it may merge.
    let f = optimised(NumericalFunction::new("energy", |[x]| (x.sin() * x.cos()).sum(), [Arg::new(4096)]).unwrap());
    let source = f.jit_source();
    assert!(source.contains("anvil_fast_sin(t0)") && source.contains("anvil_fast_cos(t0)"), "{source}");
    assert!(source.contains("anvil_loop_sin(t0)") && source.contains("anvil_loop_cos(t0)"), "{source}");
    assert!(!source.contains("__builtin_sin(t0)"), "{source}");
    let x = anvil::ndarray::Array1::linspace(-3.0, 3.0, 4096).into_dyn();
    let (got, want) = (f.call(&[x.view()]).unwrap(), f.eval(&[x.view()]).unwrap());
    assert!((got[0][[]] - want[0][[]]).abs() <= 1e-12 * 4096.0, "{got:?} vs {want:?}");
    let small = NumericalFunction::new("small", |[x]| x.sin() * x.cos(), [Arg::new(3)]).unwrap();
    let small = small.jit_source();
    assert!(
        small.contains("__builtin_sin(t") && !small.contains("anvil_loop_sin(t") && !small.contains("anvil_fast_sin(t")
    );
}

#[test]
fn broadcast_values_are_computed_once() {
    // Each layer's activation is broadcast into the next matmul: stored once, not
    // recomputed per row. Each layer is its product, then its tanh in a loop of its own.
    let f = mlp(3, 16);
    assert_eq!(f.program().kernels.len(), 6);
    assert_eq!(intermediates(f.program()).len(), 5);
    let mut r = rng(1);
    check_jit(&f, &[random(&mut r, &[16], DType::F64, -1.0, 1.0)]);
}

#[test]
fn workspace_reuses_dead_intermediates_at_aligned_offsets() {
    let f = mlp(6, 32);
    let p = f.program();
    let mids = intermediates(p);
    assert_eq!(mids.len(), 11); // 5 activations, 6 products
    let constants: usize = p
        .buffers
        .iter()
        .filter(|b| matches!(b.kind, BufferKind::Constant(_)))
        .map(|b| b.nbytes().div_ceil(64) * 64)
        .sum();
    // Only two of them (a product and an activation) are alive at any time.
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

/// An unrolled simulation: 500 steps deep, two outputs sharing all the state.
fn deep_rollout() -> NumericalFunction {
    NumericalFunction::new(
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
    .unwrap()
}

#[test]
fn outputs_sharing_a_deep_history_are_computed_in_one_kernel() {
    assert_eq!(whole(deep_rollout()).program().kernels.len(), 1);
    let f = deep_rollout();
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
    // Applied graphs fuse like any other: straight-line code for this small graph, or as
    // loops one kernel per output (the second reads the first).
    assert_eq!(f.program().kernels.len(), 1);
    let looped = f.with_lowering(LowerOptions::loops_only());
    assert_eq!(looped.program().kernels.len(), 2);
    assert_eq!(looped.eval(&[x.view(), u.view()]).unwrap(), looped.call(&[x.view(), u.view()]).unwrap());
    let bad = NumericalFunction::new("bad_apply", |[x]| step.apply(&[x.clone(), x.sum()]), [Arg::new(3)]).unwrap_err();
    assert!(bad.to_string().contains("replaces an input of shape [3]"), "{bad}");
    assert!(step.apply(&[Tensor::input(0, 3, DType::F64)]).is_err());
}

/// The cart-pole of the multistage benchmark: one RK4 step of its dynamics.
fn cartpole_step(x: &Tensor, u: &Tensor) -> Tensor {
    let f = |x: &Tensor| {
        let (theta, v, omega) = (x.get(1), x.get(2), x.get(3));
        let (s, c) = (theta.sin(), theta.cos());
        let den = s.square() * 0.1 + 1.0;
        let pdd = (u + &s * (omega.square() * 0.05 + &c * 9.81) * 0.1) / &den;
        let tdd = (-(u * &c) - omega.square() * &c * &s * 0.05 - &s * 10.791) / (den * 0.5);
        Tensor::stack(&[v, omega, pdd, tdd], 0)
    };
    let dt = 0.05;
    let k1 = f(x);
    let k2 = f(&(x + &k1 * (dt / 2.0)));
    let k3 = f(&(x + &k2 * (dt / 2.0)));
    let k4 = f(&(x + &k3 * dt));
    x + (k1 + (k2 + k3) * 2.0 + k4) * (dt / 6.0)
}

#[test]
fn small_scalar_heavy_functions_are_one_straight_line_kernel() {
    let step =
        NumericalFunction::new("cartpole_rk4", |[x, u]| cartpole_step(&x, &u), [Arg::new(4), Arg::new(())]).unwrap();
    let jac = anvil::ad::jacobian(&step).unwrap();
    let mut r = rng(4);
    let inputs = [random(&mut r, &[4], DType::F64, -1.0, 1.0), random(&mut r, &[], DType::F64, -1.0, 1.0)];
    for f in [&step, &jac] {
        let p = f.program();
        // Nothing between kernels: no intermediate buffer, no workspace beyond constants.
        assert_eq!(p.kernels.len(), 1, "{}", f.name());
        assert!(intermediates(p).is_empty(), "{}", f.name());
        assert!(p.kernels[0].extents.is_empty(), "{}: no loops", f.name());
        check_jit(f, &inputs);
        // As loops, the values that two paths read are stored between kernels.
        let looped = f.renamed(&format!("{}_looped", f.name())).unwrap().with_lowering(LowerOptions::loops_only());
        assert!(looped.program().kernels.len() > 1);
        check_jit(&looped, &inputs);
    }
}

/// The cart-pole step vmapped over 300 states (the control shared).
fn cartpole_states() -> NumericalFunction {
    let step =
        NumericalFunction::new("cartpole_rk4", |[x, u]| cartpole_step(&x, &u), [Arg::new(4), Arg::new(())]).unwrap();
    anvil::vmap(&step, 300, &[Some(0), None]).unwrap()
}

#[test]
fn vmapped_small_functions_are_one_loop_over_their_items() {
    // The cart-pole step over 300 states: one kernel looping over the states around the
    // step's straight-line code, nothing stored in between.
    let states = cartpole_states();
    let p = states.program();
    assert_eq!(p.kernels.len(), 1);
    assert!(p.kernels[0].items);
    assert_eq!(p.kernels[0].extents, vec![300]);
    assert!(intermediates(p).is_empty());
    let mut r = rng(6);
    let inputs = [random(&mut r, &[300, 4], DType::F64, -1.0, 1.0), random(&mut r, &[], DType::F64, -1.0, 1.0)];
    check_jit(&states, &inputs);
    // As loops: a kernel per stored value.
    let looped = states.renamed("cartpole_states_looped").unwrap().with_lowering(LowerOptions::loops_only());
    assert!(looped.program().kernels.len() > 1);
    check_jit(&looped, &inputs);
}

#[test]
fn batched_regions_follow_their_limit_and_carry_nan_and_inf_like_the_interpreter() {
    let states = cartpole_states();
    let mut r = rng(9);
    let HostArray::F64(mut x) = random(&mut r, &[300, 4], DType::F64, -1.0, 1.0) else { unreachable!() };
    // Non-finite states: NaN angles, infinite velocities, a huge rate.
    x[[3, 1]] = f64::NAN;
    x[[17, 2]] = f64::INFINITY;
    x[[29, 3]] = f64::NEG_INFINITY;
    x[[101, 3]] = 1e300;
    let inputs = [HostArray::F64(x), random(&mut r, &[], DType::F64, -1.0, 1.0)];
    check_jit(&states, &inputs);
    // Below the region's work (or with regions off) the same function is loop kernels.
    for limit in [0, 100] {
        let options = LowerOptions { batched_max_work: limit, ..LowerOptions::default() };
        let looped = states.renamed(&format!("cartpole_states_{limit}")).unwrap().with_lowering(options);
        assert!(looped.program().kernels.iter().all(|k| !k.items), "limit {limit}");
        check_jit(&looped, &inputs);
    }
}

#[test]
fn long_bodies_are_split_into_short_kernels_computing_the_same_bits() {
    let operations = |k: &anvil::internals::lower::Kernel| k.exprs.iter().filter(|e| !e.operands().is_empty()).count();
    let total = operations(&whole(deep_rollout()).program().kernels[0]);
    let split = deep_rollout().with_lowering(LowerOptions { max_body: 700, ..LowerOptions::default() });
    let p = split.program();
    assert_eq!(p.kernels.len(), total.div_ceil(700), "{total} operations in parts of at most 700");
    assert!(p.kernels.iter().all(|k| operations(k) <= 700 && k.items));
    // What one part hands to the next is the state of a step (a few values per item), not
    // the whole history.
    let handed: usize =
        p.buffers.iter().filter(|b| matches!(b.kind, BufferKind::Intermediate)).map(|b| b.numel()).sum();
    assert!(handed <= 4 * 4 * (p.kernels.len() - 1), "{handed} scratch elements");
    let inputs = [
        HostArray::F64(Array2::from_shape_fn((2, 4), |(i, j)| (i + j) as f64 * 0.3 - 0.2).into_dyn()),
        HostArray::F64(Array1::from_shape_fn(4, |i| 1.0 + i as f64).into_dyn()),
    ];
    let (got, want) = (split.call_dyn(&inputs).unwrap(), whole(deep_rollout()).call_dyn(&inputs).unwrap());
    assert_eq!(got, want, "a split body computes exactly the operations of the whole one");
    check_jit(&split, &inputs);
}

#[test]
fn split_loops_hand_over_values_of_every_dtype() {
    // Comparisons (bool), integer casts and floats all cross from one part to the next.
    let f = || {
        let item = NumericalFunction::new(
            "mixed",
            |[x]| {
                let mut acc = x.get(0);
                let mut outs = Vec::new();
                for i in 0..12isize {
                    let positive = acc.gt(0.0);
                    let steps = (&acc * 3.0).cast(DType::I64);
                    acc = positive.where_(&acc - 0.7, &acc + x.get(i % 3)) + steps.cast(DType::F64) * 0.01;
                    outs.push(acc.unsqueeze(0));
                }
                Tensor::cat(&outs, 0)
            },
            [Arg::new(3)],
        )
        .unwrap();
        anvil::vmap(&item, 64, &[]).unwrap()
    };
    let x =
        HostArray::F64(Array2::from_shape_fn((64, 3), |(i, j)| (i as f64 - 31.5) * 0.07 + j as f64 * 0.3).into_dyn());
    let want = whole(f()).call_dyn(std::slice::from_ref(&x)).unwrap();
    for max_body in [1, 2, 5, 17] {
        let split = f().with_lowering(LowerOptions { max_body, ..LowerOptions::default() });
        let p = split.program();
        assert!(p.kernels.len() > 2 && p.kernels.iter().all(|k| k.items));
        let scratch: Vec<DType> = p.buffers.iter().skip(2).map(|b| b.dtype).collect();
        for dtype in [DType::Bool, DType::I64, DType::F64] {
            assert!(scratch.contains(&dtype) || max_body > 1, "{scratch:?}");
        }
        assert_eq!(split.call_dyn(std::slice::from_ref(&x)).unwrap(), want);
        check_jit(&split, std::slice::from_ref(&x));
    }
    // Straight-line programs stay whole (`call_batch` runs them as one loop over items).
    let item = NumericalFunction::new("chain", |[x]| x.sin().cos().exp(), [Arg::new(3)]).unwrap();
    assert_eq!(item.with_lowering(LowerOptions { max_body: 1, ..LowerOptions::default() }).program().kernels.len(), 1);
}

#[test]
fn split_bodies_and_split_epilogues_carry_nan_inf_and_huge_values_like_the_interpreter() {
    // A rollout of sines over 200 items, split into parts of one operation (max_body 0 is
    // taken as 1), then tanh of a reduction in its own loop, on NaN, ±inf and 1e300 inputs.
    let item = NumericalFunction::new(
        "wild",
        |[x]| {
            let mut q = x.get(0);
            for i in 0..6isize {
                q = (&q * 1.5).sin() * &q + x.get(i % 4).cos();
            }
            q
        },
        [Arg::new(4)],
    )
    .unwrap();
    let f = || anvil::vmap(&item, 200, &[]).unwrap();
    let zero = f().with_lowering(LowerOptions { max_body: 0, ..LowerOptions::default() });
    let one = f().with_lowering(LowerOptions { max_body: 1, ..LowerOptions::default() });
    assert!(zero.program().kernels.len() > 10);
    assert_eq!(zero.program().kernels.len(), one.program().kernels.len());
    let specials = [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, -0.0, 0.5];
    let x = HostArray::F64(
        Array2::from_shape_fn((200, 4), |(i, j)| {
            // One item in three meets a special value; the others stay finite.
            if i % 3 == 0 {
                specials[(i / 3 + j) % specials.len()]
            } else {
                (i + j) as f64 * 0.01
            }
        })
        .into_dyn(),
    );
    check_jit(&zero, std::slice::from_ref(&x));
    let HostArray::F64(values) = &zero.call_dyn(std::slice::from_ref(&x)).unwrap()[0] else { unreachable!() };
    assert!(values.iter().any(|v| v.is_nan()) && values.iter().any(|v| v.is_finite()));

    let layer = NumericalFunction::new("layer", |[x]| x.sum_axes(1, false).tanh(), [Arg::new([64, 512])]).unwrap();
    assert_eq!(layer.program().kernels.len(), 2);
    let x = HostArray::F64(
        Array2::from_shape_fn((64, 512), |(i, j)| if j == 0 { specials[i % 6] } else { 0.25 }).into_dyn(),
    );
    check_jit(&layer, &[x]);
}

/// `f` with no kernel body split into parts (see `anvil::internals::lower::split`).
fn whole(f: NumericalFunction) -> NumericalFunction {
    f.with_lowering(unsplit())
}

fn unsplit() -> LowerOptions {
    LowerOptions { max_body: usize::MAX, ..LowerOptions::default() }
}

/// Multiple-shooting defects `x_{k+1} - F(x_k, u_k)` of the cart-pole written stage by
/// stage, as one writes them with CasADi: `w` stacks `(x_k, u_k)` for `stages + 1` stages.
fn defects(stages: usize) -> NumericalFunction {
    NumericalFunction::new(
        "defects",
        move |[w]| {
            let z = w.reshape([stages + 1, 5]);
            let gaps: Vec<Tensor> = (0..stages as isize)
                .map(|k| {
                    let (x, u) = (z.get(k).shrink(&[(0, 4)]), z.get(k).get(4));
                    z.get(k + 1).shrink(&[(0, 4)]) - cartpole_step(&x, &u)
                })
                .collect();
            Tensor::cat(&gaps, 0)
        },
        [Arg::new((stages + 1) * 5)],
    )
    .unwrap()
}

#[test]
fn the_directions_of_a_sparse_jacobian_of_scalar_code_are_one_kernel() {
    let f = defects(8);
    let jac = anvil::ad::spjacobian(&f).unwrap();
    // One kernel computes every colour's directional derivative, one gathers the non-zeros.
    // Written out colour by colour, the seed folds away (each colour keeps what its columns
    // reach): that is less work than one loop over the colours, which remains for larger
    // problems (here: a smaller limit on straight-line work).
    let seed_reads = |p: &Program| {
        let seed = |b: usize| matches!(&p.buffers[b].kind, BufferKind::Constant(d) if d.dtype() == DType::F64);
        p.kernels.iter().flat_map(|k| k.inputs()).filter(|&b| seed(b)).count()
    };
    let written = anvil::ad::spjacobian(&f).unwrap().with_lowering(unsplit());
    let p = written.program();
    assert_eq!(p.kernels.len(), 2);
    assert_eq!(seed_reads(p), 0);
    let looped = LowerOptions { straight_line_max_work: 1000, ..unsplit() };
    let looped = anvil::ad::spjacobian(&f).unwrap().renamed("defects_looped").unwrap().with_lowering(looped);
    let p = looped.program();
    assert_eq!(p.kernels.len(), 2);
    assert_eq!(p.kernels.iter().filter(|k| k.items).count(), 1);
    assert_eq!(seed_reads(p), 1);
    let mut r = rng(7);
    let w = random(&mut r, &[45], DType::F64, -1.0, 1.0);
    check_jit(&jac, std::slice::from_ref(&w));
    let dense = anvil::ad::jacobian(&f).unwrap().eval_dyn(std::slice::from_ref(&w)).unwrap().remove(0);
    let HostArray::F64(dense) = dense else { panic!("an f64 Jacobian") };
    let w = match &w {
        HostArray::F64(a) => a.view(),
        _ => unreachable!(),
    };
    for sparse in [jac.call_dense(std::slice::from_ref(&w)).unwrap(), looped.call_dense(&[w]).unwrap()] {
        for (a, b) in sparse.iter().zip(dense.iter()) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
}

#[test]
fn batched_functions_with_large_reductions_stay_loops() {
    // Written out, a matrix product of each item would be thousands of terms: loops.
    let batch = anvil::vmap(&mlp(2, 32), 64, &[]).unwrap();
    assert!(batch.program().kernels.iter().all(|k| !k.items));
    let mut r = rng(8);
    check_jit(&batch, &[random(&mut r, &[64, 32], DType::F64, -1.0, 1.0)]);
}

#[test]
fn math_after_a_reduction_runs_in_a_loop_of_its_own() {
    // tanh(W x + b): the pre-activation is stored, and tanh runs in its own loop (vectorised)
    // instead of once per output element after the product's loop.
    let w = Tensor::from_array(&Array2::from_shape_fn((64, 32), |(i, j)| ((i * 7 + j) % 11) as f64 * 0.05 - 0.25));
    let b = Tensor::from_array(&Array1::from_shape_fn(64, |i| i as f64 * 0.01));
    let layer = NumericalFunction::new("layer", move |[x]| (w.matmul(&x) + &b).tanh(), [Arg::new(32)]).unwrap();
    let batch = anvil::vmap(&layer, 100, &[]).unwrap();
    let p = batch.program();
    let has_reduce = |k: &anvil::internals::lower::Kernel| {
        k.exprs.iter().any(|e| matches!(e, anvil::internals::lower::Expr::Reduce { .. }))
    };
    let has_tanh = |k: &anvil::internals::lower::Kernel| {
        k.exprs.iter().any(|e| matches!(e, anvil::internals::lower::Expr::Unary(UnaryOp::Tanh, ..)))
    };
    assert_eq!(p.kernels.len(), 2);
    assert!(has_reduce(&p.kernels[0]) && !has_tanh(&p.kernels[0]));
    assert!(!has_reduce(&p.kernels[1]) && has_tanh(&p.kernels[1]));
    let mut r = rng(9);
    check_jit(&batch, &[random(&mut r, &[100, 32], DType::F64, -1.0, 1.0)]);
    // Through movement (sum_axes reshapes the reduction away): the reduction is stored.
    let mean_tanh = NumericalFunction::new("mt", |[x]| x.sum_axes(0, false).tanh(), [Arg::new([64, 200])]).unwrap();
    assert_eq!(mean_tanh.program().kernels.len(), 2);
    check_jit(&mean_tanh, &[random(&mut r, &[64, 200], DType::F64, -1.0, 1.0)]);
    // Math before the reduction stays in its loop; a stored reduction needs no new buffer.
    let inside = NumericalFunction::new("inside", |[x]| x.tanh().sum_axes(1, false), [Arg::new([50, 40])]).unwrap();
    assert_eq!(inside.program().kernels.len(), 1);
    let after = NumericalFunction::new(
        "after",
        |[x]| {
            let s = x.sum_axes(1, false);
            (s.clone(), s.tanh())
        },
        [Arg::new([50, 40])],
    )
    .unwrap();
    assert!(intermediates(after.program()).is_empty());
    check_jit(&after, &[random(&mut r, &[50, 40], DType::F64, -1.0, 1.0)]);
}

#[test]
fn reductions_written_out_keep_the_loop_order() {
    // Sums of values of mixed magnitudes: the written-out fold adds in the interpreter's
    // order, so the results are bitwise equal (vectorised loops may add in another).
    let f = NumericalFunction::new(
        "mixed_sums",
        |[x]| (x.sum_axes(0, false), x.max_axes(1, false), (&x * 1e16).sum() + x.sum()),
        [Arg::new([5, 7])],
    )
    .unwrap();
    assert_eq!(f.program().kernels.len(), 1);
    assert!(f.program().kernels[0].extents.is_empty());
    let mut r = rng(5);
    let inputs = [random(&mut r, &[5, 7], DType::F64, -1.0, 1.0)];
    assert_eq!(f.call_dyn(&inputs).unwrap(), f.eval_dyn(&inputs).unwrap());
}

#[test]
fn large_graphs_stay_loops() {
    let big = NumericalFunction::new("big", |[x]| x.sin().sum(), [Arg::new(1000)]).unwrap();
    assert_eq!(big.program().kernels[0].extents, vec![1000]);
    let long =
        NumericalFunction::new("long_chain", |[x]| (0..3000).fold(x, |acc, _| acc.sin()), [Arg::new(4)]).unwrap();
    assert!(long.program().kernels.iter().all(|k| k.extents == vec![4]));
}

#[test]
fn gathers_at_captured_positions_in_range_clamp_nothing() {
    let n = 300;
    let inside = Tensor::from_array(&Array1::from_shape_fn(n, |i| ((i * 7) % n) as i32));
    let outside = Tensor::from_array(&Array1::from_shape_fn(n, |i| i as i64 * 2 - 5));
    let f =
        NumericalFunction::new("gathers", move |[x]| (x.sin().take(&inside), x.cos().take(&outside)), [Arg::new(n)])
            .unwrap();
    // Only the gather whose positions leave the table (negative, past the end) clamps.
    assert_eq!(f.jit_source().matches("< 0 ? 0 :").count(), 1);
    check_jit(&f, &[random(&mut rng(11), &[n], DType::F64, -3.0, 3.0)]);
}

#[test]
fn reductions_down_columns_accumulate_across_the_output_loop() {
    // Wᵀ·x reads W down its columns: the sums run in local arrays along the output loop
    // (unit-stride, vectorised), each element still adding its terms in order, so the
    // results are the interpreter's bit for bit.
    let w = Tensor::from_array(&Array2::from_shape_fn((64, 48), |(i, j)| ((i * 5 + j * 3) % 13) as f64 * 0.1 - 0.6));
    let b = Tensor::from_array(&Array1::from_shape_fn(48, |i| (i as f64).sqrt()));
    let (wt, bt) = (w.clone(), b.clone());
    let columns = optimised(
        NumericalFunction::new("columns", move |[x]| wt.transpose().matmul(&(&x * 1e8)) + &bt, [Arg::new(64)]).unwrap(),
    )
    .with_lowering(LowerOptions::loops_only());
    assert_eq!(columns.program().kernels.last().unwrap().accumulate_across, Some(0));
    let source = columns.jit_source();
    assert!(source.contains("double t") && source.contains("[48];"), "{source}");
    let mut r = rng(12);
    let inputs = [random(&mut r, &[64], DType::F64, -1.0, 1.0)];
    assert_eq!(columns.call_dyn(&inputs).unwrap(), columns.eval_dyn(&inputs).unwrap());
    // W·x reads rows: the plain order, one accumulator per element.
    let rows = NumericalFunction::new("rows", move |[x]| w.matmul(&x), [Arg::new(48)])
        .unwrap()
        .with_lowering(LowerOptions::loops_only());
    assert_eq!(rows.program().kernels.len(), 1);
    assert!(rows.program().kernels.iter().all(|k| k.accumulate_across.is_none()));
    // Column maxima and products carry NaN and infinities like the interpreter; a batch of
    // column sums accumulates across its last axis under a loop over the first.
    let stats = NumericalFunction::new(
        "column_stats",
        |[x]| (x.max_axes(0, false), x.prod_axes(0, false), x.sum_axes(1, false).tanh()),
        [Arg::new([3, 40, 24])],
    )
    .unwrap();
    assert!(stats.program().kernels.iter().any(|k| k.accumulate_across == Some(1)));
    let mut x = random(&mut r, &[3, 40, 24], DType::F64, -2.0, 2.0);
    if let HostArray::F64(a) = &mut x {
        a[[1, 7, 3]] = f64::NAN;
        a[[2, 0, 5]] = f64::INFINITY;
        a[[0, 9, 9]] = f64::NEG_INFINITY;
    }
    check_jit(&stats, &[x]);
    // A reverse-mode Jacobian (the transposed products of back-propagation) agrees too.
    let w1 = Tensor::from_array(&Array2::from_shape_fn((64, 32), |(i, j)| ((i * 3 + j) as f64).sin() * 0.3));
    let w2 = Tensor::from_array(&Array2::from_shape_fn((4, 64), |(i, j)| ((i + j * 7) as f64).cos() * 0.3));
    let narrow = NumericalFunction::new("narrow", move |[x]| w2.matmul(&w1.matmul(&x).tanh()), [Arg::new(32)]).unwrap();
    let jac = anvil::ad::jacobian(&narrow).unwrap();
    assert!(jac.program().kernels.iter().any(|k| k.accumulate_across.is_some()));
    check_jit(&jac, &[random(&mut r, &[32], DType::F64, -1.0, 1.0)]);
    // A longer output loop is accumulated a tile at a time (the last tile partial).
    let wide = 2 * anvil::internals::lower::interchange::ACROSS_TILE + 7;
    let long = NumericalFunction::new("long_columns", |[x]| x.sum_axes(0, false), [Arg::new([3, wide])]).unwrap();
    assert!(long.program().kernels.iter().all(|k| k.accumulate_across == Some(0)));
    assert!(long.jit_source().contains("i0_tile += "));
    let inputs = [random(&mut r, &[3, wide], DType::F64, -1e6, 1e6)];
    assert_eq!(long.call_dyn(&inputs).unwrap(), long.eval_dyn(&inputs).unwrap());
}

#[test]
fn constants_a_batch_reads_down_their_columns_are_stored_transposed() {
    // X·Wᵀ over a batch of rows (a vmapped layer) reads W along its rows per output: W is
    // stored transposed, the sums accumulate across the output loop, and each element adds
    // its terms in the interpreter's order (bit for bit, with values of mixed magnitudes).
    let w = Tensor::from_array(&Array2::from_shape_fn((64, 24), |(j, k)| ((j * 7 + k * 3) % 11) as f64 * 0.1 - 0.5));
    let b = Tensor::from_array(&Array1::from_shape_fn(64, |j| (j as f64).cos()));
    let (w1, b1) = (w.clone(), b.clone());
    let layer = NumericalFunction::new("layer", move |[x]| x.matmul(&w1.transpose()) + &b1, [Arg::new([40, 24])])
        .unwrap()
        .with_lowering(LowerOptions::loops_only());
    let is_transposed =
        |p: &Program| p.buffers.iter().any(|buf| matches!(buf.kind, BufferKind::Constant(_)) && buf.shape == [24, 64]);
    assert!(is_transposed(layer.program()));
    assert!(layer.program().kernels.iter().any(|k| k.accumulate_across == Some(1)));
    let mut r = rng(31);
    let x = random(&mut r, &[40, 24], DType::F64, -1.0, 1.0).to_f64().mapv(|v| v * 10f64.powf(3.0 * v));
    let inputs = [HostArray::F64(x)];
    assert_eq!(layer.call_dyn(&inputs).unwrap(), layer.eval_dyn(&inputs).unwrap());
    // The same layer vmapped over single rows, and its copy kept for a plain product too.
    let w2 = w.clone();
    let single = NumericalFunction::new("single", move |[v]| w2.matmul(&v).tanh() + w2.sum(), [Arg::new(24)]).unwrap();
    let batched = anvil::ad::vmap(&single, 33, &[Some(0)]).unwrap();
    assert!(is_transposed(batched.program()));
    check_jit(&batched, &[random(&mut r, &[33, 24], DType::F64, -2.0, 2.0)]);
    // Not for a single product (each element read once), a short output loop, or an input
    // matrix (its layout is the caller's).
    let w3 = w.clone();
    let plain = NumericalFunction::new("plain", move |[v]| w3.matmul(&v), [Arg::new(24)]).unwrap();
    let narrow_w = Tensor::from_array(&Array2::from_shape_fn((8, 24), |(j, k)| (j + k) as f64));
    let narrow =
        NumericalFunction::new("narrow", move |[x]| x.matmul(&narrow_w.transpose()), [Arg::new([40, 24])]).unwrap();
    let input_w =
        NumericalFunction::new("input_w", |[x, m]| x.matmul(&m.transpose()), [Arg::new([40, 24]), Arg::new([64, 24])])
            .unwrap();
    for f in [&plain, &narrow, &input_w] {
        let constants = f.program().buffers.iter().filter(|buf| matches!(buf.kind, BufferKind::Constant(_))).count();
        assert!(constants <= 1, "{}: {constants} constants", f.name());
        assert!(f.program().kernels.iter().all(|k| k.accumulate_across.is_none()), "{}", f.name());
    }
}

#[test]
fn transposed_constants_carry_nan_and_infinities_and_padded_reads_keep_their_layout() {
    // NaN and ±inf in the constant reach the same elements as in the interpreter (the
    // copy moves values, the sums keep their order).
    let w = Array2::from_shape_fn((32, 8), |(j, k)| match (j, k) {
        (3, 2) => f64::NAN,
        (5, 0) => f64::INFINITY,
        (9, 7) => f64::NEG_INFINITY,
        _ => (j as f64 - k as f64) * 0.25,
    });
    let wt = Tensor::from_array(&w);
    let odd = NumericalFunction::new("odd", move |[x]| x.matmul(&wt.transpose()), [Arg::new([12, 8])])
        .unwrap()
        .with_lowering(LowerOptions::loops_only());
    assert!(odd.program().buffers.iter().any(|b| matches!(b.kind, BufferKind::Constant(_)) && b.shape == [8, 32]));
    let mut r = rng(32);
    let out = odd.call_dyn(&[random(&mut r, &[12, 8], DType::F64, -1.0, 1.0)]).unwrap();
    let out = out[0].to_f64().into_dimensionality::<anvil::ndarray::Ix2>().unwrap();
    assert!(out.column(3).iter().all(|v| v.is_nan()) && out.column(5).iter().any(|v| v.is_infinite()));
    check_jit(&odd, &[random(&mut r, &[12, 8], DType::F64, -1.0, 1.0)]);
    // A constant read through padding (some reads fall outside it, masked) is left as it is.
    let pw = Tensor::from_array(&Array2::from_shape_fn((32, 8), |(j, k)| (j * 8 + k) as f64));
    let padded = NumericalFunction::new(
        "padded",
        move |[x]| x.matmul(&pw.pad(&[(1, 1), (0, 0)]).transpose()),
        [Arg::new([12, 8])],
    )
    .unwrap();
    let constants = padded.program().buffers.iter().filter(|b| matches!(b.kind, BufferKind::Constant(_))).count();
    assert_eq!(constants, 1);
    check_jit(&padded, &[random(&mut r, &[12, 8], DType::F64, -1.0, 1.0)]);
}

#[test]
fn a_computed_matrix_read_flattened_is_computed_in_its_own_loop_nest() {
    // Interleaving two vectors: inlined under the flatten, each element would be computed
    // at a division and remainder of the output index (both vectors computed, one chosen).
    // Computed in loop nests over the matrix instead, each element once, with plain indices.
    let n = 500;
    let interleave = |x: &Tensor| Tensor::stack(&[x.sin(), x.cos() * 2.0], 1);
    let no_division = |f: &NumericalFunction| {
        let source = f.jit_source();
        assert!(!source.contains(")/2") && !source.contains(")%2"), "{source}");
    };
    let mut r = rng(13);
    // A slice of it as an output: stored straight into the output block by block (the rest
    // of the first row, then the whole rows), no buffer and no copy.
    let slice =
        NumericalFunction::new("interleave", move |[x]| interleave(&x).flatten().shrink(&[(1, 2 * n)]), [Arg::new(n)])
            .unwrap();
    let p = slice.program();
    assert!(intermediates(p).is_empty());
    assert_eq!(p.kernels.iter().map(|k| k.shape.clone()).collect::<Vec<_>>(), [vec![1, 1], vec![n - 1, 2]]);
    no_division(&slice);
    check_jit(&slice, &[random(&mut r, &[n], DType::F64, -3.0, 3.0)]);
    // Empty matrices have no elements to write.
    let empty = NumericalFunction::new("empty_rows", |[x]| x.sin().flatten(), [Arg::new([3, 0])]).unwrap();
    assert!(empty.program().kernels.is_empty());
    assert_eq!(empty.call_dyn(&[random(&mut r, &[3, 0], DType::F64, -1.0, 1.0)]).unwrap()[0].shape(), &[0]);
    // The whole of it, and a run inside one row.
    for (range, shapes) in [((0, 2 * n), vec![vec![n, 2]]), ((7, 8), vec![vec![1, 1]])] {
        let f = NumericalFunction::new(
            &format!("run_{}", range.0),
            move |[x]| interleave(&x).flatten().shrink(&[range]),
            [Arg::new(n)],
        )
        .unwrap();
        assert_eq!(f.program().kernels.iter().map(|k| k.shape.clone()).collect::<Vec<_>>(), shapes);
        check_jit(&f, &[random(&mut r, &[n], DType::F64, -3.0, 3.0)]);
    }
    // Read elsewhere too: stored in its own (n, 2) loop nest; the flattened read is a copy.
    let shared = NumericalFunction::new(
        "interleave_and_sum",
        move |[x]| {
            let m = interleave(&x);
            (m.flatten().shrink(&[(1, 2 * n)]), m.sum())
        },
        [Arg::new(n)],
    )
    .unwrap();
    assert_eq!(shared.program().kernels[0].shape, vec![n, 2]);
    no_division(&shared);
    check_jit(&shared, &[random(&mut r, &[n], DType::F64, -3.0, 3.0)]);
}

#[test]
fn a_dense_hessian_of_element_reads_is_straight_line_code_of_its_terms() {
    // Derived one direction at a time, each direction keeps only the terms its variable
    // reaches (its seed's zeros fold into the products), and the 20 x 20 matrix joined from
    // the columns is written element by element: no loop over entries or directions, and no
    // selection left (the robot arm's dynamics: most of its solve was its stage Hessians).
    let n = 20;
    let f = NumericalFunction::new(
        "arm_like",
        move |[z]| {
            let mut total = Tensor::scalar(0.0);
            for k in 0..n as isize - 5 {
                let rho = z.get(k);
                let inertia = (&rho * &rho * &rho + (5.0 - &rho) * (5.0 - &rho) * (5.0 - &rho)) / 3.0;
                let s = z.get(k + 2).sin();
                total = total
                    + z.get(k + 3) / (&inertia * &s * &s)
                    + z.get(k + 4) / &inertia
                    + z.get(k + 5).cos() * z.get(k + 1);
            }
            total
        },
        [Arg::new(n)],
    )
    .unwrap();
    let h = anvil::ad::hessian(&f).unwrap();
    let source = h.jit_source();
    assert!(!source.contains("for (long long i"), "{source}");
    let temporary = |l: &&str| ["const double t", "const bool t"].iter().any(|p| l.trim_start().starts_with(p));
    assert_eq!(source.lines().filter(temporary).filter(|l| l.contains(" ? ")).count(), 0, "{source}");
    assert_eq!(source.matches("[i0*20 + i1] = ").count(), n * n, "one store per entry: {source}");
    check_jit(&h, &[random(&mut rng(13), &[n], DType::F64, 1.0, 2.0)]);
}

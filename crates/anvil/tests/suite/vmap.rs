//! vmap(f) equals a loop over f, for every primitive; nested vmap and vmap of derivatives.

use crate::common;

use anvil::ndarray::{array, Array1, ArrayD, Axis, IxDyn};
use anvil::{ad, vmap, Arg, DType, HostArray, NumericalFunction, Tensor};
use rand::Rng;

/// A named test case: an op on two tensors.
pub(crate) type Case = (&'static str, Box<dyn Fn(&Tensor, &Tensor) -> Tensor>);

pub(crate) fn cases() -> Vec<Case> {
    let idx = Tensor::from_array(&array![5i64, 0, 7, 7, 11, -2]);
    let slots = Tensor::from_array(&Array1::from_shape_fn(12, |i| (i % 4) as i64));
    vec![
        ("unary", Box::new(|x, _| x.sin().exp().sqrt().tanh().abs().floor() + x.cos())),
        ("binary", Box::new(|x, y| (x + y) * x - y / (x.square() + 1.0) + x.maximum(y).pow(2.0) + x.atan2(y))),
        ("compare_where", Box::new(|x, y| x.lt(y).where_(x, y * 2.0) + x.ge(0.0).cast(DType::F64))),
        (
            "cast",
            Box::new(|x, y| {
                (x.cast(DType::F32) * y.cast(DType::F32)).cast(DType::F64) + x.cast(DType::I32).cast(DType::F64)
            }),
        ),
        ("reduce", Box::new(|x, y| x.sum_axes(0, true) * y.max_axes(1, true) + x.min() - x.prod_axes(1, true))),
        ("reshape_permute", Box::new(|x, y| x.reshape([4, 3]).transpose() * y)),
        ("expand", Box::new(|x, _| x.sum_axes(1, true).expand([3, 4]) + x.slice(anvil::ndarray::s![..1, ..]))),
        ("pad_shrink_flip", Box::new(|x, y| x.pad(&[(1, 0), (0, 2)]).shrink(&[(0, 3), (1, 5)]).flip(1) + y.flip(0))),
        ("matmul", Box::new(|x, y| x.matmul(&y.transpose()))),
        ("take", Box::new(move |x, y| x.take(&idx) * y.flatten().take(&idx))),
        ("gather", Box::new(|x, _| x.gather(1, &Tensor::from_array(&array![[3i64, 0], [1, 1], [2, 0]])))),
        ("gather_batched_index", Box::new(|x, y| y.take(&(x.abs() * 3.0).floor().cast(DType::I64)))),
        ("scatter", Box::new(move |x, y| Tensor::scatter_add(&(x * y).flatten(), &slots, 4))),
        (
            "scatter_batched_index",
            Box::new(|x, y| Tensor::scatter_add(y, &(x.abs() * 2.0).floor().cast(DType::I64), [2, 2])),
        ),
        ("constant_output", Box::new(|_, y| Tensor::full([2], 3.0, DType::F64) + y.sum() * 0.0)),
    ]
}

/// Element `b` of `a` along `axis`.
fn element(a: &ArrayD<f64>, axis: usize, b: usize) -> ArrayD<f64> {
    a.index_axis(Axis(axis), b).to_owned()
}

#[test]
fn vmap_equals_a_loop_for_every_primitive() {
    let mut r = common::rng(31);
    let batch = 3;
    for (name, op) in cases() {
        let f =
            NumericalFunction::new(&format!("op_{name}"), |[x, y]| op(&x, &y), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap();
        for in_axes in [[Some(0), None], [Some(2), Some(1)], [None, Some(0)]] {
            let v = vmap(&f, batch, &in_axes).unwrap();
            let inputs: Vec<ArrayD<f64>> =
                v.inputs().iter().map(|a| ArrayD::from_shape_fn(IxDyn(&a.shape), |_| r.gen_range(-1.5..1.5))).collect();
            let views: Vec<_> = inputs.iter().map(|a| a.view()).collect();
            let got = v.eval(&views).unwrap();
            for b in 0..batch {
                let single: Vec<ArrayD<f64>> = inputs
                    .iter()
                    .zip(&in_axes)
                    .map(|(a, axis)| axis.map_or_else(|| a.clone(), |ax| element(a, ax, b)))
                    .collect();
                let want = f.eval(&single.iter().map(|a| a.view()).collect::<Vec<_>>()).unwrap();
                for (o, w) in want.iter().enumerate() {
                    let g = element(&got[o], 0, b);
                    for (x, y) in g.iter().zip(w.iter()) {
                        assert!(
                            (x - y).abs() <= 1e-12 * (1.0 + y.abs()),
                            "{name} {in_axes:?} batch {b} output {o}: {x} vs {y}"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn nested_vmap_and_derivatives_of_vmap() {
    let f = NumericalFunction::new("f", |[x]| (x.square() * x.sin()).sum(), [Arg::new(4)]).unwrap();
    let g = ad::gradient(&f).unwrap();
    // vmap of a derivative, and a derivative of a vmap: both are the per-row gradient.
    let vg = vmap(&g, 5, &[]).unwrap();
    let vf = vmap(&f, 5, &[]).unwrap();
    let total =
        NumericalFunction::from_tensors("total", vf.inputs().to_vec(), &[vf.output_tensors()[0].sum()]).unwrap();
    let gv = ad::gradient(&total).unwrap();
    // Nested: vmap over a batch of batches.
    let vvg = vmap(&vg, 2, &[]).unwrap();
    let x = ArrayD::from_shape_fn(IxDyn(&[5, 4]), |p| (p[0] as f64 - p[1] as f64) * 0.3);
    let a = vg.eval(&[x.view()]).unwrap().remove(0);
    let b = gv.eval(&[x.view()]).unwrap().remove(0);
    assert!((&a - &b).iter().all(|d| d.abs() < 1e-12));
    let xx = ndarray_stack(&x);
    let c = vvg.eval(&[xx.view()]).unwrap().remove(0);
    for k in 0..2 {
        assert!((&element(&c, 0, k) - &a).iter().all(|d| d.abs() < 1e-12));
    }
    // Through the JIT too.
    common::check_jit(&vvg, &[HostArray::F64(xx)]);
}

fn ndarray_stack(x: &ArrayD<f64>) -> ArrayD<f64> {
    anvil::ndarray::stack(Axis(0), &[x.view(), x.view()]).unwrap()
}

#[test]
fn the_batch_axis_of_outputs_can_be_placed() {
    let f = NumericalFunction::new("outer", |[x]| x.outer(&x), [Arg::new(3)]).unwrap();
    let v = anvil::ad::vmap_out(&f, 4, &[], 1).unwrap();
    assert_eq!(v.outputs()[0].shape, vec![3, 4, 3]);
    let xs = anvil::ndarray::Array2::from_shape_fn((4, 3), |(b, i)| (b * 3 + i) as f64 * 0.1).into_dyn();
    let out = v.eval(&[xs.view()]).unwrap();
    for b in 0..4 {
        let single = f.eval(&[xs.index_axis(anvil::ndarray::Axis(0), b)]).unwrap();
        assert_eq!(out[0].index_axis(anvil::ndarray::Axis(1), b), single[0]);
    }
    let scalar_out = NumericalFunction::new("s", |[x]| x.sum(), [Arg::new(3)]).unwrap();
    assert!(anvil::ad::vmap_out(&scalar_out, 4, &[], 1).unwrap_err().to_string().contains("out_axis 1"));
}

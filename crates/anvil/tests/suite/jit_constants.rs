//! Captured constants reach JIT workspaces from the host, not through the source: the
//! translation unit does not grow with them, functions that differ only in their data share
//! one compiled library, and every dtype arrives intact in every workspace.

use crate::common;

use anvil::ndarray::{Array1, Array2, ArrayD, IxDyn};
use anvil::{Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, random, rng};

fn affine(weights: &Array2<f64>, bias: &Array1<f64>) -> NumericalFunction {
    let (w, b) = (Tensor::from_array(weights), Tensor::from_array(bias));
    NumericalFunction::new("affine_data", move |[x]| w.matmul(&x) + &b, [Arg::new(weights.ncols())]).unwrap()
}

#[test]
fn the_jit_source_does_not_grow_with_captured_data() {
    // Loops over the data (small constants read by straight-line code fold into it).
    let data = |n: usize| (Array2::from_shape_fn((n, n), |(i, j)| (i * n + j) as f64), Array1::from_elem(n, 0.5));
    let ((w1, b1), (w2, b2)) = (data(64), data(400));
    let (small, large) = (affine(&w1, &b1).jit_source(), affine(&w2, &b2).jit_source());
    // Only the extents' digits differ.
    assert!(large.len() < small.len() + 64, "{} vs {} bytes", large.len(), small.len());
    assert!(!large.contains("constexpr double"), "no constant array is printed");
}

#[test]
fn functions_differing_only_in_their_data_share_one_library() {
    let mut rng = rng(7);
    let (m, n) = (40, 30);
    let data = |rng: &mut _| {
        let w = random(rng, &[m, n], DType::F64, -1.0, 1.0).to_f64().into_dimensionality().unwrap();
        let b = random(rng, &[m], DType::F64, -1.0, 1.0).to_f64().into_dimensionality().unwrap();
        (w, b)
    };
    let ((w1, b1), (w2, b2)) = (data(&mut rng), data(&mut rng));
    let (f1, f2) = (affine(&w1, &b1), affine(&w2, &b2));
    let x = Array1::from_shape_fn(n, |i| (i as f64 * 0.7).cos());
    let y1 = f1.call(&[x.view().into_dyn()]).unwrap().remove(0);
    let y2 = f2.call(&[x.view().into_dyn()]).unwrap().remove(0);
    assert_eq!(f1.compiled().unwrap().path(), f2.compiled().unwrap().path());
    for (y, w, b) in [(y1, w1, b1), (y2, w2, b2)] {
        let want = w.dot(&x) + b;
        for (g, e) in y.iter().zip(&want) {
            assert!((g - e).abs() <= 1e-14 * (1.0 + e.abs()), "{g} vs {e}");
        }
    }
}

#[test]
fn constants_of_every_dtype_arrive_in_every_workspace() {
    let n = 37;
    let mask: ArrayD<bool> = ArrayD::from_shape_fn(IxDyn(&[n]), |p| p[0] % 3 == 1);
    let scale: ArrayD<f32> = ArrayD::from_shape_fn(IxDyn(&[n]), |p| 0.5 + p[0] as f32 / 8.0);
    let offset: ArrayD<i32> = ArrayD::from_shape_fn(IxDyn(&[n]), |p| 7 - 2 * p[0] as i32);
    let order: ArrayD<i64> = ArrayD::from_shape_fn(IxDyn(&[n]), |p| ((p[0] * 11) % n) as i64);
    let (mask, scale) = (Tensor::from_array(&mask), Tensor::from_array(&scale));
    let (offset, order) = (Tensor::from_array(&offset), Tensor::from_array(&order));
    let f = NumericalFunction::new(
        "every_dtype",
        move |[x]| {
            let shuffled = x.take(&order);
            let scaled = &shuffled * scale.cast(DType::F64) + offset.cast(DType::F64);
            (mask.where_(scaled.clone(), -1.0), scaled.cast(DType::F32), &order + &order)
        },
        [Arg::new(n)],
    )
    .unwrap();
    let inputs = [random(&mut rng(3), &[n], DType::F64, -2.0, 2.0)];
    check_jit(&f, &inputs);
    // Concurrent calls each take a workspace of their own: each must hold the constants.
    let want = f.call_dyn(&inputs).unwrap();
    std::thread::scope(|s| {
        let calls: Vec<_> =
            (0..4).map(|_| s.spawn(|| (0..50).map(|_| f.call_dyn(&inputs).unwrap()).collect::<Vec<_>>())).collect();
        for call in calls {
            for got in call.join().unwrap() {
                assert_eq!(got, want);
            }
        }
    });
    assert!(matches!(&want[2], HostArray::I64(_)));
}

#[test]
fn a_captured_array_in_column_major_order_arrives_in_row_major_order() {
    // A transposed copy keeps its column-major memory: the host must copy it element by
    // element in the order the generated code indexes it.
    let rows = Array2::from_shape_fn((30, 20), |(i, j)| (i * 20 + j) as f64);
    let transposed = rows.t().to_owned();
    assert!(transposed.as_slice().is_none(), "the copy is column-major");
    let w = Tensor::from_array(&transposed);
    let f = NumericalFunction::new("transposed", move |[x]| w.matmul(&x), [Arg::new(30)]).unwrap();
    check_jit(&f, &[random(&mut rng(5), &[30], DType::F64, -1.0, 1.0)]);
}

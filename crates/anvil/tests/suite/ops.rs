//! Every op: native code (JIT) agrees with the reference interpreter on random inputs,
//! for each dtype it supports; plus a few hand-computed results.

use crate::common;

use anvil::ndarray::{array, s, ArrayD, NewAxis};
use anvil::{Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, random, rng};

fn unary_suite(dtype: DType) {
    let shape = [3, 5];
    let f = NumericalFunction::new(
        &format!("unary_{}", dtype.name()),
        |[x, p, u]| {
            vec![
                x.neg(),
                p.recip(),
                x.square(),
                p.sqrt(),
                p.rsqrt(),
                x.exp(),
                p.log(),
                x.sin(),
                x.cos(),
                u.tan(),
                u.asin(),
                u.acos(),
                x.atan(),
                x.sinh(),
                x.cosh(),
                x.tanh(),
                x.sigmoid(),
                x.relu(),
                x.abs(),
                x.sign(),
                x.floor(),
                x.ceil(),
                -&x,
            ]
        },
        [Arg::with_dtype(shape, dtype), Arg::with_dtype(shape, dtype), Arg::with_dtype(shape, dtype)],
    )
    .unwrap();
    let mut r = rng(1);
    let inputs = [
        random(&mut r, &shape, dtype, -2.0, 2.0),
        random(&mut r, &shape, dtype, 0.1, 3.0),
        random(&mut r, &shape, dtype, -0.9, 0.9),
    ];
    check_jit(&f, &inputs);
}

#[test]
fn unary_ops_f64() {
    unary_suite(DType::F64);
}

#[test]
fn unary_ops_f32() {
    unary_suite(DType::F32);
}

fn binary_suite(dtype: DType) {
    let f = NumericalFunction::new(
        &format!("binary_{}", dtype.name()),
        |[x, y, p]| {
            vec![
                &x + &y,
                &x - &y,
                &x * &y,
                &x / &p,
                p.pow(&x),
                x.maximum(&y),
                x.minimum(&y),
                x.atan2(&y),
                x.lt(&y),
                x.le(&y),
                x.gt(&y),
                x.ge(&y),
                x.eq(&y),
                x.ne(&y),
                x.gt(0.0).where_(&x, &y),
                x.clip(-0.5, 0.5),
                &x * 2.0,
                1.0 - &x,
                3.0 / &p,
                &x + &y.get(0), // broadcasting a row
                x.maximum(f64::NAN).minimum(&y),
            ]
        },
        [Arg::with_dtype([4, 6], dtype), Arg::with_dtype([4, 6], dtype), Arg::with_dtype([4, 6], dtype)],
    )
    .unwrap();
    let mut r = rng(2);
    // Values on a coarse grid so that comparisons see equal elements too.
    let grid = |r: &mut rand::rngs::StdRng| {
        let a = random(r, &[4, 6], DType::F64, -4.0, 4.0).to_f64().mapv(|v| (v * 2.0).round() / 4.0);
        match dtype {
            DType::F32 => HostArray::F32(a.mapv(|v| v as f32)),
            _ => HostArray::F64(a),
        }
    };
    let inputs = [grid(&mut r), grid(&mut r), random(&mut r, &[4, 6], dtype, 0.5, 2.0)];
    check_jit(&f, &inputs);
}

#[test]
fn binary_ops_f64() {
    binary_suite(DType::F64);
}

#[test]
fn binary_ops_f32() {
    binary_suite(DType::F32);
}

fn integer_suite(dtype: DType) {
    let f = NumericalFunction::new(
        &format!("integer_{}", dtype.name()),
        |[a, b]| {
            vec![
                &a + &b,
                &a - &b,
                &a * &b,
                a.idiv(&b),
                a.maximum(&b),
                a.minimum(&b),
                a.neg(),
                a.abs(),
                a.lt(&b),
                a.eq(&b),
                a.sum(),
                a.max_axes(0, false),
                a.min_axes(1, true),
                a.prod_axes(1, false),
                &a * 3.0,
                &a / &b, // true division gives f64
                a.sqrt(),
                a.cast(DType::F32),
                a.cast(DType::Bool),
                a.gt(0.0).sum(),
                a.ge(&b).where_(&a, &b),
            ]
        },
        [Arg::with_dtype([3, 4], dtype), Arg::with_dtype([3, 4], dtype)],
    )
    .unwrap();
    assert_eq!(f.outputs()[3].dtype, dtype);
    assert_eq!(f.outputs()[15].dtype, DType::F64);
    let mut r = rng(3);
    let inputs = [random(&mut r, &[3, 4], dtype, -9.0, 9.0), random(&mut r, &[3, 4], dtype, -3.0, 3.0)];
    check_jit(&f, &inputs);
}

#[test]
fn integer_ops_i32() {
    integer_suite(DType::I32);
}

#[test]
fn integer_ops_i64() {
    integer_suite(DType::I64);
}

#[test]
fn bool_and_cast_ops() {
    let f = NumericalFunction::new(
        "bools",
        |[m, x]| {
            vec![
                m.where_(&x, -1.0),
                m.sum(),
                m.cast(DType::F64),
                x.cast(DType::I32),
                x.cast(DType::I64),
                x.cast(DType::Bool),
                x.cast(DType::F32).cast(DType::F64),
                m.maximum(x.gt(0.0)),
                m.eq(x.lt(0.5)),
                m.neg(),
                &m + &m,
            ]
        },
        [Arg::with_dtype([2, 5], DType::Bool), Arg::new([2, 5])],
    )
    .unwrap();
    let mut r = rng(4);
    check_jit(&f, &[random(&mut r, &[2, 5], DType::Bool, 0.0, 1.0), random(&mut r, &[2, 5], DType::F64, -3.0, 3.0)]);
}

fn reduction_suite(dtype: DType) {
    let f = NumericalFunction::new(
        &format!("reduce_{}", dtype.name()),
        |[x]| {
            vec![
                x.sum(),
                x.max(),
                x.min(),
                x.prod_axes(2, false),
                x.mean(),
                x.sum_axes(0, false),
                x.sum_axes([0, 2], true),
                x.max_axes(-1, false),
                x.min_axes([1, 2], false),
                x.mean_axes(1, true),
                x.sum_axes(1, false).max_axes(0, false),
                (&x - x.max_axes(-1, true)).exp().sum_axes(-1, false), // softmax denominator
            ]
        },
        [Arg::with_dtype([3, 4, 5], dtype)],
    )
    .unwrap();
    let mut r = rng(5);
    check_jit(&f, &[random(&mut r, &[3, 4, 5], dtype, -1.5, 1.5)]);
}

#[test]
fn reductions_f64() {
    reduction_suite(DType::F64);
}

#[test]
fn reductions_f32() {
    reduction_suite(DType::F32);
}

#[test]
fn movement_ops() {
    let f = NumericalFunction::new(
        "movement",
        |[x, v]| {
            vec![
                x.reshape([4, 6]),
                x.permute([2, 0, 1]),
                x.transpose(),
                v.expand([3, 4]),
                x.pad(&[(1, 0), (0, 2), (1, 1)]),
                x.shrink(&[(1, 2), (0, 3), (1, 2)]),
                x.flip([0, 2]),
                x.slice(s![.., 1..;2, ..;-1]),
                x.slice(s![-1, .., 0]),
                x.get(0),
                Tensor::cat(&[x.clone(), x.flip(0)], 1),
                Tensor::stack(&[v.clone(), &v * 2.0], 0),
                x.flatten(),
                v.unsqueeze(0).squeeze(0),
                x.permute([1, 0, 2]).reshape([3, 8]).pad(&[(0, 1), (2, 0)]).flip(1).slice(s![1.., ..;3]),
                x.reshape([6, 4]).transpose().sum_axes(0, false),
                x.slice(s![.., NewAxis, 1, ..]),
            ]
        },
        [Arg::new([2, 3, 4]), Arg::new([4])],
    )
    .unwrap();
    assert_eq!(f.outputs()[7].shape, vec![2, 1, 4]);
    let mut r = rng(6);
    check_jit(&f, &[random(&mut r, &[2, 3, 4], DType::F64, -1.0, 1.0), random(&mut r, &[4], DType::F64, -1.0, 1.0)]);
}

#[test]
fn linear_algebra() {
    let f = NumericalFunction::new(
        "linalg",
        |[a, b, v, w, batch]| {
            vec![v.dot(&w), a.matmul(&v), w.matmul(&b), a.matmul(&b), batch.matmul(&b), v.outer(&w), batch.matmul(&v)]
        },
        [Arg::new([3, 4]), Arg::new([4, 2]), Arg::new(4), Arg::new(4), Arg::new([5, 3, 4])],
    )
    .unwrap();
    let shapes: [&[usize]; 5] = [&[3, 4], &[4, 2], &[4], &[4], &[5, 3, 4]];
    let mut r = rng(7);
    let inputs: Vec<HostArray> = shapes.iter().map(|s| random(&mut r, s, DType::F64, -1.0, 1.0)).collect();
    check_jit(&f, &inputs);
}

#[test]
fn hand_computed_results() {
    let a = Tensor::from_array(&array![[1.0, 2.0], [3.0, 4.0]]);
    let f =
        NumericalFunction::new("hand", |[x, y]| (&x + &y, a.matmul(&x), (&x * &x).sum()), [Arg::new(2), Arg::new(2)])
            .unwrap();
    let out = f.call(&[array![1.0, 1.0].into_dyn().view(), array![4.0, 5.0].into_dyn().view()]).unwrap();
    assert_eq!(out[0], array![5.0, 6.0].into_dyn());
    assert_eq!(out[1], array![3.0, 7.0].into_dyn());
    assert_eq!(out[2], ArrayD::from_elem(vec![], 2.0));
}

#[test]
fn outputs_that_alias_inputs_and_constants_get_their_own_buffers() {
    let c = Tensor::from_array(&array![1.0, 2.0, 3.0]);
    let f = NumericalFunction::new(
        "alias",
        |[x]| (x.clone(), x.slice(s![..2]), c.clone(), x.clone(), Tensor::full([2], 7.0, DType::F64)),
        [Arg::new(3)],
    )
    .unwrap();
    let x = array![9.0, 8.0, 7.0].into_dyn();
    let out = f.call(&[x.view()]).unwrap();
    assert_eq!(out[0], x);
    assert_eq!(out[1], array![9.0, 8.0].into_dyn());
    assert_eq!(out[2], array![1.0, 2.0, 3.0].into_dyn());
    assert_eq!(out[3], x);
    assert_eq!(out[4], array![7.0, 7.0].into_dyn());
}

#[test]
fn non_contiguous_input_views_are_accepted() {
    let f = NumericalFunction::new("noncontig", |[x]| x * 1.0 + 1.0, [Arg::new([2, 3])]).unwrap();
    let base = array![[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]];
    let t = base.t().into_dyn();
    let out = f.call(&[t.view()]).unwrap();
    assert_eq!(out[0], (&t + 1.0).to_owned());
}

#[test]
fn zero_sized_inputs() {
    let f =
        NumericalFunction::new("empty_in", |[x, y]| (x.sum(), &y * 2.0, x.max()), [Arg::new(0), Arg::new(2)]).unwrap();
    let out = f.call(&[ArrayD::zeros(vec![0]).view(), array![1.0, 2.0].into_dyn().view()]).unwrap();
    assert_eq!(out[0].sum(), 0.0);
    assert_eq!(out[1], array![2.0, 4.0].into_dyn());
    assert_eq!(out[2].sum(), f64::NEG_INFINITY);
}

#[test]
fn gather_and_scatter_add() {
    let idx = Tensor::from_array(&array![5i64, 0, 2, 2, -3, 99]); // out of range clamps
    let rows = Tensor::from_array(&array![[2i32, 0, 1], [1, 1, 0]]);
    let f = NumericalFunction::new(
        "gather_scatter",
        |[x, v]| {
            let computed = x.sin() * 2.0; // a gathered source that must become a buffer
            vec![
                x.take(&idx),
                computed.take(&idx.reshape([2, 3])),
                x.gather(1, &rows),
                x.gather(0, &rows.slice(s![..1, ..])),
                Tensor::scatter_add(&v, &idx, 4),
                Tensor::scatter_add(&(&v * 2.0), &idx.reshape([3, 2]).reshape(6), [2, 2]).sum_axes(0, false) + 1.0,
                Tensor::scatter_add(&v.cast(DType::I32), &idx, 3),
            ]
        },
        [Arg::new([2, 3]), Arg::new(6)],
    )
    .unwrap();
    let mut r = rng(8);
    let inputs = [random(&mut r, &[2, 3], DType::F64, -1.0, 1.0), random(&mut r, &[6], DType::F64, -5.0, 5.0)];
    check_jit(&f, &inputs);
    let out = f.eval_dyn(&inputs).unwrap();
    let x = inputs[0].to_f64_vec();
    assert_eq!(out[0].to_f64_vec(), vec![x[5], x[0], x[2], x[2], x[0], x[5]]);
    let v = inputs[1].to_f64_vec();
    assert_eq!(out[4].to_f64_vec(), vec![v[1] + v[4], 0.0, v[2] + v[3], v[0] + v[5]]);
}

#[test]
fn index_misuse_is_an_error() {
    let x = Tensor::input(0, [2, 3], DType::F64);
    assert!(x.take(&x).check().is_err());
    let i = Tensor::from_array(&array![[0i64, 1, 2, 0]]);
    assert!(x.gather(0, &i).check().is_err());
    assert!(Tensor::scatter_add(&x, &i, 4).check().is_err());
}

#[test]
fn zero_sized_tensors_through_every_movement() {
    let f = NumericalFunction::new(
        "empty_moves",
        |[x]| {
            vec![
                x.reshape([3, 0]),
                x.permute([1, 0]),
                x.permute([1, 0]).reshape([0, 3]).pad(&[(0, 1), (0, 0)]),
                x.permute([1, 0]).reshape([0, 3]) * 2.0,
                x.pad(&[(1, 1), (0, 2)]),
                x.flip(0),
                x.sum_axes(0, false),
                x.sum_axes(1, false),
                x.expand([2, 0, 3]),
                x.reshape(0).take(&Tensor::from_array(&array![0i64, 1])),
                Tensor::scatter_add(&x.flatten(), &Tensor::from_array(&anvil::ndarray::Array1::<i64>::zeros(0)), 2),
            ]
        },
        [Arg::new([0, 3])],
    )
    .unwrap();
    let inputs = [HostArray::F64(ArrayD::zeros(vec![0, 3]))];
    check_jit(&f, &inputs);
    let out = f.eval_dyn(&inputs).unwrap();
    assert_eq!(out[4].to_f64_vec(), vec![0.0; 10]);
    assert_eq!(out[7].to_f64_vec(), vec![0.0; 0]);
    assert_eq!(out[6].to_f64_vec(), vec![0.0, 0.0, 0.0]);
}

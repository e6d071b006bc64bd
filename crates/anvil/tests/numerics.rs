//! Native code equals the interpreter, and both follow the documented definitions, where C++
//! would be undefined or the compiler would change results: integer `MIN / -1`, float to
//! integer casts out of range, `pow` special exponents in vectorised loops, floor division,
//! empty means, weak scalars that do not fit.

use anvil::ndarray::{Array1, ArrayD};
use anvil::{Arg, DType, Error, HostArray, NumericalFunction, Tensor};

/// Native and interpreted outputs, which must agree bit for bit (NaN payloads aside).
fn both(f: &NumericalFunction, inputs: &[HostArray]) -> Vec<HostArray> {
    let native = f.call_dyn(inputs).expect("native");
    let interpreted = f.eval_dyn(inputs).expect("interpreter");
    for (k, (n, i)) in native.iter().zip(&interpreted).enumerate() {
        let same = n
            .to_f64_vec()
            .iter()
            .zip(i.to_f64_vec())
            .all(|(a, b)| a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()));
        assert!(same, "`{}` output {k}: native {n:?} vs interpreter {i:?}", f.name());
    }
    native
}

fn f64s(v: &[f64]) -> HostArray {
    HostArray::F64(Array1::from(v.to_vec()).into_dyn())
}

#[test]
fn integer_division_of_min_by_minus_one_wraps_instead_of_trapping() {
    for dtype in [DType::I32, DType::I64] {
        let f = NumericalFunction::new(
            "int_div",
            |[a, b]| a.idiv(&b),
            [Arg::with_dtype(12, dtype), Arg::with_dtype(12, dtype)],
        )
        .unwrap();
        let (min, vals): (f64, Vec<f64>) = match dtype {
            DType::I32 => (i32::MIN as f64, vec![i32::MIN as f64; 12]),
            _ => (i64::MIN as f64, vec![i64::MIN as f64; 12]),
        };
        let to = |v: &[f64]| match dtype {
            DType::I32 => HostArray::I32(Array1::from_iter(v.iter().map(|&x| x as i32)).into_dyn()),
            _ => HostArray::I64(Array1::from_iter(v.iter().map(|&x| x as i64)).into_dyn()),
        };
        let mut divisors = vec![-1.0; 12];
        divisors[3] = 0.0;
        divisors[4] = 2.0;
        let out = both(&f, &[to(&vals), to(&divisors)]).remove(0).to_f64_vec();
        assert_eq!(out[0], min, "MIN / -1 wraps to MIN");
        assert_eq!(out[3], 0.0, "division by zero gives 0");
        assert_eq!(out[4], min / 2.0);
    }
}

#[test]
fn floor_division_follows_python_on_integers_exactly() {
    let a = [7i64, -7, 7, -7, 0, 6, -6, (1 << 62) + 1, -(1 << 62) - 1, 5, i64::MAX, i64::MIN + 1];
    let b = [2i64, 2, -2, -2, 3, 3, 3, 1, 2, 0, 7, -3];
    let f = NumericalFunction::new(
        "floordiv",
        |[a, b]| a.floor_div(&b),
        [Arg::with_dtype(12, DType::I64), Arg::with_dtype(12, DType::I64)],
    )
    .unwrap();
    assert_eq!(f.outputs()[0].dtype, DType::I64);
    let hosts =
        [HostArray::I64(Array1::from(a.to_vec()).into_dyn()), HostArray::I64(Array1::from(b.to_vec()).into_dyn())];
    let HostArray::I64(out) = both(&f, &hosts).remove(0) else { panic!("integer result") };
    let python =
        |x: i64, y: i64| if y == 0 { 0 } else { x.div_euclid(y) - if y < 0 && x.rem_euclid(y) != 0 { 1 } else { 0 } };
    for i in 0..12 {
        assert_eq!(out[i], python(a[i], b[i]), "{} // {}", a[i], b[i]);
    }
    // Floats: floor(a / b).
    let g = NumericalFunction::new("floordiv_f", |[a]| a.floor_div(2.0), [Arg::new(3)]).unwrap();
    assert_eq!(both(&g, &[f64s(&[-3.0, 3.0, 1.0])]).remove(0).to_f64_vec(), vec![-2.0, 1.0, 0.0]);
}

#[test]
fn pow_by_special_exponents_agrees_in_vector_lanes_and_scalar_tails() {
    // Nine elements: a vectorised body and a scalar tail both see -inf.
    let x = [f64::NEG_INFINITY, -0.0, 4.0, f64::NAN, f64::INFINITY, -4.0, 0.25, f64::NEG_INFINITY, f64::NEG_INFINITY];
    for (exponent, want) in [
        (0.5, [f64::INFINITY, 0.0, 2.0, f64::NAN, f64::INFINITY, f64::NAN, 0.5, f64::INFINITY, f64::INFINITY]),
        (2.0, x.map(|v| v * v)),
        (-1.0, x.map(|v| 1.0 / v)),
        (1.0, x),
        (0.0, [1.0; 9]),
        (3.0, x.map(|v| v.powf(3.0))),
    ] {
        let f = NumericalFunction::new("power", move |[x]| x.pow(exponent), [Arg::new(9)]).unwrap();
        let out = both(&f, &[f64s(&x)]).remove(0).to_f64_vec();
        for (i, (o, w)) in out.iter().zip(want).enumerate() {
            assert!(
                o.to_bits() == w.to_bits() || (o.is_nan() && w.is_nan()),
                "pow({}, {exponent}) = {o}, want {w} (element {i})",
                x[i]
            );
        }
    }
}

#[test]
fn float_to_integer_casts_truncate_and_saturate() {
    let x = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        1e300,
        -1e300,
        3e9,
        -3e9,
        2.7,
        -2.7,
        2147483647.5,
        -2147483648.9,
        -0.5,
    ];
    let want32 = [0, i32::MAX, i32::MIN, i32::MAX, i32::MIN, i32::MAX, i32::MIN, 2, -2, i32::MAX, i32::MIN, 0];
    let want64 =
        [0, i64::MAX, i64::MIN, i64::MAX, i64::MIN, 3_000_000_000, -3_000_000_000, 2, -2, 2147483647, -2147483648, 0];
    for source in [DType::F64, DType::F32] {
        let f = NumericalFunction::new(
            "casts",
            |[x]| (x.cast(DType::I32), x.cast(DType::I64)),
            [Arg::with_dtype(12, source)],
        )
        .unwrap();
        let input = match source {
            DType::F32 => HostArray::F32(Array1::from_iter(x.iter().map(|&v| v as f32)).into_dyn()),
            _ => f64s(&x),
        };
        let out = both(&f, &[input]);
        let (HostArray::I32(a), HostArray::I64(b)) = (&out[0], &out[1]) else { panic!("integer results") };
        for i in 0..12 {
            assert_eq!(a[i], want32[i], "{source}: {} as i32", x[i]);
            let w = if source == DType::F32 { (x[i] as f32) as i64 } else { want64[i] };
            assert_eq!(b[i], w, "{source}: {} as i64", x[i]);
        }
    }
}

#[test]
fn the_mean_of_nothing_is_nan() {
    let f = NumericalFunction::new("empty_mean", |[x]| (x.mean(), x.mean_axes(0, false)), [Arg::new([0, 2])]).unwrap();
    let out = both(&f, &[HostArray::F64(ArrayD::zeros(vec![0, 2]))]);
    assert!(out[0].to_f64_vec()[0].is_nan());
    assert!(out[1].to_f64_vec().iter().all(|v| v.is_nan()));
}

#[test]
fn weak_scalars_that_do_not_fit_the_integer_dtype_are_errors() {
    let i32s = Tensor::input(0, 3, DType::I32);
    let i64s = Tensor::input(1, 3, DType::I64);
    for (t, op) in
        [(&i32s + 1099511627776.0, "add"), (&i32s * 3e9, "mul"), (&i64s - 1e19, "sub"), (i32s.idiv(1e10), "idiv")]
    {
        match t.check() {
            Err(Error::Op { op: got, message, .. }) => {
                assert_eq!(got, op);
                assert!(message.contains("does not fit"), "{message}");
            }
            other => panic!("{op}: expected an error, got {other:?}"),
        }
    }
    // In range: the integer dtype is kept, and big integers stay exact.
    assert_eq!((&i32s + 2147483647.0).dtype(), DType::I32);
    let exact =
        NumericalFunction::new("exact", |[x]| x + Tensor::scalar_int((1 << 60) + 1), [Arg::with_dtype(1, DType::I64)])
            .unwrap();
    let out = both(&exact, &[HostArray::I64(Array1::from(vec![1i64]).into_dyn())]);
    let HostArray::I64(v) = &out[0] else { panic!("integer result") };
    assert_eq!(v[0], (1 << 60) + 2);
}

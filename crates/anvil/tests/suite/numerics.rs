//! Native code equals the interpreter, and both follow the documented definitions, where C++
//! would be undefined or the compiler would change results: integer `MIN / -1`, float to
//! integer casts out of range, `pow` special exponents in vectorised loops, floor division,
//! empty means, weak scalars that do not fit.

use crate::common::optimised;
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
        let f = optimised(
            NumericalFunction::new(
                "int_div",
                |[a, b]| a.idiv(&b),
                [Arg::with_dtype(12, dtype), Arg::with_dtype(12, dtype)],
            )
            .unwrap(),
        );
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
    let f = optimised(
        NumericalFunction::new(
            "floordiv",
            |[a, b]| a.floor_div(&b),
            [Arg::with_dtype(12, DType::I64), Arg::with_dtype(12, DType::I64)],
        )
        .unwrap(),
    );
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
    let g = optimised(NumericalFunction::new("floordiv_f", |[a]| a.floor_div(2.0), [Arg::new(3)]).unwrap());
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
        let f = optimised(NumericalFunction::new("power", move |[x]| x.pow(exponent), [Arg::new(9)]).unwrap());
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
        let f = optimised(
            NumericalFunction::new(
                "casts",
                |[x]| (x.cast(DType::I32), x.cast(DType::I64)),
                [Arg::with_dtype(12, source)],
            )
            .unwrap(),
        );
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
    let f = optimised(
        NumericalFunction::new("empty_mean", |[x]| (x.mean(), x.mean_axes(0, false)), [Arg::new([0, 2])]).unwrap(),
    );
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
    let exact = optimised(
        NumericalFunction::new("exact", |[x]| x + Tensor::scalar_int((1 << 60) + 1), [Arg::with_dtype(1, DType::I64)])
            .unwrap(),
    );
    let out = both(&exact, &[HostArray::I64(Array1::from(vec![1i64]).into_dyn())]);
    let HostArray::I64(v) = &out[0] else { panic!("integer result") };
    assert_eq!(v[0], (1 << 60) + 2);
}

/// How many units in the last place `got` is from `want` (0 for equal values, NaNs, or
/// infinities alike).
fn ulps(got: f64, want: f64) -> u64 {
    if got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()) {
        return 0;
    }
    let key = |x: f64| if x.is_sign_negative() { -((x.to_bits() & !(1 << 63)) as i128) } else { x.to_bits() as i128 };
    (key(got) - key(want)).unsigned_abs() as u64
}

/// Arguments spanning what the fast sine and cosine serve: every scale up to 10⁶, the
/// doubles next to multiples of π/2 (where the reduced argument is smallest), zeros and
/// subnormals.
fn near_trig_arguments() -> Vec<f64> {
    let mut xs = vec![0.0, -0.0, 5e-324, -5e-324, 1e-300, -2.2e-308, 1e-9, -3e-8, 1e6, -1e6];
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    for scale in [0.785, 1.6, 10.0, 1e3, 1e5, 1e6] {
        for _ in 0..1500 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            xs.push(scale * ((state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0));
        }
    }
    for k in [1.0, 2.0, 3.0, 7.0, 100.0, 12345.0, 636619.0] {
        let x = k * std::f64::consts::FRAC_PI_2;
        xs.extend([x, f64::from_bits(x.to_bits() + 1), f64::from_bits(x.to_bits() - 1), -x]);
    }
    xs
}

#[test]
fn vectorised_sines_and_cosines_are_within_one_ulp_of_the_interpreter() {
    let xs = near_trig_arguments();
    let f = optimised(
        NumericalFunction::new("trig", |[x]| [x.sin(), x.cos(), (&x * 0.5).sin() * x.cos()], [Arg::new(xs.len())])
            .unwrap(),
    );
    let source = f.jit_source();
    assert!(source.contains("anvil_fast_sin(") && source.contains("anvil_fast_cos("), "{source}");
    let native = f.call_dyn(&[f64s(&xs)]).unwrap();
    let interpreted = f.eval_dyn(&[f64s(&xs)]).unwrap();
    for (k, (n, i)) in native.iter().zip(&interpreted).enumerate() {
        for ((&x, a), b) in xs.iter().zip(n.to_f64_vec()).zip(i.to_f64_vec()) {
            // A product of two: their errors add, and so does its rounding.
            let most = if k == 2 { 3 } else { 1 };
            assert!(ulps(a, b) <= most, "output {k} at x = {x:e}: native {a:e}, interpreter {b:e}");
            assert_eq!(a.is_sign_negative(), b.is_sign_negative(), "output {k} at x = {x:e}: the sign of {b}");
        }
    }
}

#[test]
fn a_loop_meeting_a_far_argument_an_infinity_or_nan_reruns_with_the_exact_sine_and_cosine() {
    // Long enough to stay a loop (short ones are unrolled into scalar code).
    let len = 256;
    let f = optimised(NumericalFunction::new("far_trig", |[x]| [x.sin(), x.cos()], [Arg::new(len)]).unwrap());
    assert!(f.jit_source().contains("_exact("), "a rerun is rendered");
    let near: Vec<f64> = (0..len).map(|i| (i as f64 - 127.5) * 0.37).collect();
    for far in [1.000001e6, -3.5e7, 1e22, 1.7e308, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        for at in [0, 13, len - 1] {
            let mut xs = near.clone();
            xs[at] = far;
            let native = f.call_dyn(&[f64s(&xs)]).unwrap();
            let interpreted = f.eval_dyn(&[f64s(&xs)]).unwrap();
            for (k, (n, i)) in native.iter().zip(&interpreted).enumerate() {
                let (n, i) = (n.to_f64_vec(), i.to_f64_vec());
                // Far from zero, the exact functions: glibc's (within libmvec's 4 ulp in
                // vectorised loops); NaN where the interpreter has NaN.
                assert!(ulps(n[at], i[at]) <= 4, "output {k}, x = {far:e}: native {}, interpreter {}", n[at], i[at]);
                assert_eq!(n[at].is_nan(), i[at].is_nan(), "output {k}, x = {far:e}");
                for j in (0..len).filter(|&j| j != at) {
                    assert!(ulps(n[j], i[j]) <= 4, "output {k} at x = {}: {} vs {}", xs[j], n[j], i[j]);
                }
            }
        }
    }
}

#[test]
fn a_banded_jacobian_whose_unrolled_columns_meet_far_arguments_reruns_exactly() {
    // Each column's two non-zeros are one-iteration blocks in the loop over the columns,
    // which vectorises with the fast sine and cosine: far arguments, infinities and NaN
    // anywhere in x still give the interpreter's values.
    let len = 300;
    let f = optimised(
        NumericalFunction::new(
            "band",
            |[x]| {
                let (head, tail) = (x.shrink(&[(0, len - 1)]), x.shrink(&[(1, len)]));
                tail.sin() * head.cos() + tail.cos()
            },
            [Arg::new(len)],
        )
        .unwrap(),
    );
    let jacobian = anvil::ad::spjacobian(&f).unwrap();
    let source = jacobian.jit_source();
    assert!(source.contains("anvil_fast_sin(") && source.contains("_exact("), "the band is vector math");
    let near: Vec<f64> = (0..len).map(|i| (i as f64 - 150.5) * 0.41).collect();
    for far in [2.5e6, -3e9, 1.7e308, f64::INFINITY, f64::NEG_INFINITY, f64::NAN] {
        for at in [0, 77, len - 1] {
            let mut xs = near.clone();
            xs[at] = far;
            let native = jacobian.call_dyn(&[f64s(&xs)]).unwrap().remove(0).to_f64_vec();
            let interpreted = jacobian.eval_dyn(&[f64s(&xs)]).unwrap().remove(0).to_f64_vec();
            assert_eq!(native.len(), interpreted.len());
            for (k, (n, i)) in native.iter().zip(&interpreted).enumerate() {
                assert!(ulps(*n, *i) <= 4, "x[{at}] = {far:e}, value {k}: native {n}, interpreter {i}");
            }
        }
    }
}

#[test]
fn vectorised_tanh_is_within_three_ulp_of_the_interpreter_everywhere() {
    let mut xs = near_trig_arguments();
    xs.retain(|x| x.abs() <= 30.0);
    xs.extend([19.06, -19.07, 20.0, 20.5, 700.0, -1e308, f64::INFINITY, f64::NEG_INFINITY, f64::NAN, 0.55, -0.549]);
    let f = optimised(NumericalFunction::new("squash", |[x]| x.tanh(), [Arg::new(xs.len())]).unwrap());
    assert!(f.jit_source().contains("anvil_fast_tanh(t"), "tanh in a vectorised loop is inline");
    let native = f.call_dyn(&[f64s(&xs)]).unwrap().remove(0).to_f64_vec();
    let interpreted = f.eval_dyn(&[f64s(&xs)]).unwrap().remove(0).to_f64_vec();
    for ((&x, a), b) in xs.iter().zip(native).zip(interpreted) {
        assert!(ulps(a, b) <= 3, "x = {x:e}: native {a:e}, interpreter {b:e}");
        assert_eq!(a.is_sign_negative(), b.is_sign_negative(), "x = {x:e}: the sign of {b}");
        assert!(a.abs() <= 1.0 || a.is_nan(), "x = {x:e}: {a}");
    }
}

//! Derivatives against oracles: central finite differences for every JVP rule, the
//! identity ⟨u, J v⟩ = ⟨Jᵀ u, v⟩ for every VJP rule, dense derivatives against each other,
//! and higher orders.

use crate::common;

use anvil::ndarray::{array, Array1, ArrayD, IxDyn};
use anvil::{ad, Arg, DType, NumericalFunction, Tensor};
use rand::rngs::StdRng;
use rand::Rng;

fn random_array(r: &mut StdRng, shape: &[usize], lo: f64, hi: f64) -> ArrayD<f64> {
    ArrayD::from_shape_fn(IxDyn(shape), |_| r.gen_range(lo..hi))
}

fn views(arrays: &[ArrayD<f64>]) -> Vec<anvil::ndarray::ArrayViewD<'_, f64>> {
    arrays.iter().map(|a| a.view()).collect()
}

fn dot(a: &[ArrayD<f64>], b: &[ArrayD<f64>]) -> f64 {
    a.iter().zip(b).map(|(x, y)| (x * y).sum()).sum()
}

/// Checks `jvp(f)` against central differences and `vjp(f)` against `jvp(f)`.
fn check_rules(f: &NumericalFunction, xs: &[ArrayD<f64>], r: &mut StdRng) {
    let k = xs.len();
    let jf = ad::jvp(f).unwrap();
    let vf = ad::vjp(f).unwrap();
    let ts: Vec<ArrayD<f64>> = xs.iter().map(|x| random_array(r, x.shape(), -1.0, 1.0)).collect();
    let mut jin = xs.to_vec();
    jin.extend(ts.iter().cloned());
    let jout = jf.eval(&views(&jin)).unwrap();
    let m = f.outputs().len();
    let (ys, ydots) = jout.split_at(m);
    // Central differences.
    let h = 1e-6;
    let shifted = |s: f64| -> Vec<ArrayD<f64>> {
        let moved: Vec<ArrayD<f64>> = xs.iter().zip(&ts).map(|(x, t)| x + &(t * (s * h))).collect();
        f.eval(&views(&moved)).unwrap()
    };
    let (plus, minus) = (shifted(1.0), shifted(-1.0));
    for (o, ydot) in ydots.iter().enumerate() {
        let fd = (&plus[o] - &minus[o]) / (2.0 * h);
        for (a, b) in ydot.iter().zip(fd.iter()) {
            assert!(
                (a - b).abs() <= 1e-5 * (1.0 + b.abs()),
                "`{}` output {o}: jvp {a} vs finite difference {b}",
                f.name()
            );
        }
        assert_eq!(ys[o].shape(), ydot.shape());
    }
    // ⟨u, J t⟩ = ⟨Jᵀ u, t⟩
    let us: Vec<ArrayD<f64>> = ydots.iter().map(|y| random_array(r, y.shape(), -1.0, 1.0)).collect();
    let mut vin = xs.to_vec();
    vin.extend(us.iter().cloned());
    let bars = vf.eval(&views(&vin)).unwrap();
    assert_eq!(bars.len(), k);
    let (lhs, rhs) = (dot(&us, ydots), dot(&bars, &ts));
    assert!((lhs - rhs).abs() <= 1e-10 * (1.0 + lhs.abs()), "`{}`: <u, J t> = {lhs} but <J^T u, t> = {rhs}", f.name());
}

/// A named test case: an op on one tensor.
type UnaryCase = (&'static str, fn(&Tensor) -> Tensor, f64, f64);
/// A named test case: an op on two tensors.
type BinaryCase = (&'static str, fn(&Tensor, &Tensor) -> Tensor);
/// A named test case: any op on one tensor.
type AnyCase = (&'static str, Box<dyn Fn(&Tensor) -> Tensor>);

fn unary_fn(name: &str, op: fn(&Tensor) -> Tensor) -> NumericalFunction {
    NumericalFunction::new(&format!("op_{name}"), |[x]| op(&x), [Arg::new([2, 3])]).unwrap()
}

#[test]
fn every_unary_rule() {
    let mut r = common::rng(21);
    let cases: Vec<UnaryCase> = vec![
        ("neg", |x| -x, -2.0, 2.0),
        ("recip", |x| x.recip(), 0.5, 2.0),
        ("sqrt", |x| x.sqrt(), 0.5, 2.0),
        ("exp", |x| x.exp(), -2.0, 2.0),
        ("log", |x| x.log(), 0.5, 2.0),
        ("sin", |x| x.sin(), -2.0, 2.0),
        ("cos", |x| x.cos(), -2.0, 2.0),
        ("tan", |x| x.tan(), -1.0, 1.0),
        ("asin", |x| x.asin(), -0.8, 0.8),
        ("acos", |x| x.acos(), -0.8, 0.8),
        ("atan", |x| x.atan(), -2.0, 2.0),
        ("sinh", |x| x.sinh(), -2.0, 2.0),
        ("cosh", |x| x.cosh(), -2.0, 2.0),
        ("tanh", |x| x.tanh(), -2.0, 2.0),
        ("abs", |x| x.abs(), 0.1, 2.0),
        ("abs_neg", |x| x.abs(), -2.0, -0.1),
        ("floor", |x| x.floor() + x, 0.1, 0.9),
        ("ceil", |x| x.ceil() * x, 0.1, 0.9),
        ("sigmoid", |x| x.sigmoid(), -2.0, 2.0),
        ("relu", |x| x.relu(), 0.1, 2.0),
        ("sign", |x| x.sign() * x, -2.0, -0.1),
        ("square", |x| x.square(), -2.0, 2.0),
        ("rsqrt", |x| x.rsqrt(), 0.5, 2.0),
        ("cast", |x| x.cast(DType::F32).cast(DType::F64) * 0.0 + x * 3.0, -1.0, 1.0),
    ];
    for (name, op, lo, hi) in cases {
        let f = unary_fn(name, op);
        let x = random_array(&mut r, &[2, 3], lo, hi);
        check_rules(&f, &[x], &mut r);
    }
}

#[test]
fn every_binary_rule() {
    let mut r = common::rng(22);
    let cases: Vec<BinaryCase> = vec![
        ("add", |a, b| a + b),
        ("sub", |a, b| a - b),
        ("mul", |a, b| a * b),
        ("div", |a, b| a / b),
        ("pow", |a, b| a.pow(b)),
        ("maximum", |a, b| a.maximum(b)),
        ("minimum", |a, b| a.minimum(b)),
        ("atan2", |a, b| a.atan2(b)),
        ("where", |a, b| a.gt(b).where_(a.sin(), b.cos())),
        ("broadcast", |a, b| a * b.sum_axes(0, true)),
        ("clip", |a, b| (a * b).clip(0.3, 1.5)),
        ("compare", |a, b| a.lt(b).cast(DType::F64) + a),
    ];
    for (name, op) in cases {
        let f =
            NumericalFunction::new(&format!("op_{name}"), |[a, b]| op(&a, &b), [Arg::new([3, 4]), Arg::new([3, 4])])
                .unwrap();
        // Positive, distinct values: no ties, pow defined.
        let a = random_array(&mut r, &[3, 4], 0.5, 1.0);
        let b = random_array(&mut r, &[3, 4], 1.1, 2.0);
        check_rules(&f, &[a.clone(), b.clone()], &mut r);
        check_rules(&f, &[b, a], &mut r);
    }
}

#[test]
fn every_reduction_and_movement_rule() {
    let mut r = common::rng(23);
    let idx = Tensor::from_array(&array![3i64, 0, 0, 11, 7, 5]);
    let cases: Vec<AnyCase> = vec![
        ("sum", Box::new(|x| x.sum_axes(1, false))),
        ("sum_all", Box::new(|x| x.sum())),
        ("max", Box::new(|x| x.max_axes(0, true))),
        ("min", Box::new(|x| x.min_axes([0, 1], false))),
        ("prod", Box::new(|x| x.prod_axes(1, false))),
        ("prod_all", Box::new(|x| x.prod())),
        ("mean", Box::new(|x| x.mean_axes(0, false))),
        ("reshape", Box::new(|x| x.reshape([4, 3]).sin())),
        ("permute", Box::new(|x| x.transpose().exp())),
        ("expand", Box::new(|x| x.sum_axes(1, true).expand([3, 4]) * x)),
        ("pad", Box::new(|x| x.pad(&[(1, 0), (2, 1)]).square())),
        ("shrink", Box::new(|x| x.shrink(&[(1, 3), (0, 2)]).sin())),
        ("flip", Box::new(|x| x.flip([0, 1]) * x)),
        ("slice", Box::new(|x| x.slice(anvil::ndarray::s![..;2, 1..;-1]).exp())),
        ("cat", Box::new(|x| Tensor::cat(&[x.clone(), x.square()], 0))),
        ("stack", Box::new(|x| Tensor::stack(&[x.clone(), x.sin()], 1))),
        ("matmul", Box::new(|x| x.matmul(&x.transpose()))),
        ("take", Box::new(move |x| x.take(&idx).square())),
        ("gather", Box::new(|x| x.gather(1, &Tensor::from_array(&array![[3i64, 0], [1, 1], [2, 0]])) * 2.0)),
        (
            "scatter",
            Box::new(|x| {
                Tensor::scatter_add(
                    &x.flatten().exp(),
                    &Tensor::from_array(&Array1::from_shape_fn(12, |i| (i % 5) as i64)),
                    5,
                )
            }),
        ),
        (
            "softmax",
            Box::new(|x| {
                let e = (x - x.max_axes(-1, true)).exp();
                &e / e.sum_axes(-1, true)
            }),
        ),
    ];
    for (name, op) in cases {
        let f = NumericalFunction::new(&format!("op_{name}"), |[x]| op(&x), [Arg::new([3, 4])]).unwrap();
        let x = random_array(&mut r, &[3, 4], 0.2, 1.5);
        check_rules(&f, &[x], &mut r);
    }
}

#[test]
fn ties_split_evenly_and_kinks_follow_the_conventions() {
    let f = NumericalFunction::new("kinks", |[x]| (x.maximum(0.0), x.relu(), x.abs(), x.max()), [Arg::new(3)]).unwrap();
    let j = ad::jvp(&f).unwrap();
    let x = array![0.0, 1.0, 1.0].into_dyn();
    let t = array![1.0, 1.0, 1.0].into_dyn();
    let out = j.eval(&[x.view(), t.view()]).unwrap();
    assert_eq!(out[4], array![0.5, 1.0, 1.0].into_dyn()); // maximum(x, 0) at a tie
    assert_eq!(out[5], array![0.0, 1.0, 1.0].into_dyn()); // relu'(0) = 0
    assert_eq!(out[6], array![0.0, 1.0, 1.0].into_dyn()); // |x|'(0) = 0
    let g = ad::gradient(&NumericalFunction::new("tiedmax", |[x]| x.max(), [Arg::new(3)]).unwrap()).unwrap();
    assert_eq!(g.eval(&[x.view()]).unwrap()[0], array![0.0, 0.5, 0.5].into_dyn());
}

fn rosenbrock(n: usize) -> NumericalFunction {
    NumericalFunction::new(
        "rosen",
        move |[x]| {
            let a = x.shrink(&[(0, n - 1)]);
            let b = x.shrink(&[(1, n)]);
            ((&b - a.square()).square() * 100.0 + (1.0 - &a).square()).sum()
        },
        [Arg::new(n)],
    )
    .unwrap()
}

#[test]
fn gradient_jacobian_and_hessian_agree() {
    let n = 6;
    let f = rosenbrock(n);
    let x = Array1::linspace(-1.0, 1.5, n).into_dyn();
    let g = ad::gradient(&f).unwrap().eval(&[x.view()]).unwrap().remove(0);
    // Reference gradient of the Rosenbrock function.
    let xs: Vec<f64> = x.iter().copied().collect();
    for i in 0..n {
        let mut want = 0.0;
        if i + 1 < n {
            want += -400.0 * xs[i] * (xs[i + 1] - xs[i] * xs[i]) - 2.0 * (1.0 - xs[i]);
        }
        if i > 0 {
            want += 200.0 * (xs[i] - xs[i - 1] * xs[i - 1]);
        }
        assert!((g[i] - want).abs() < 1e-9, "gradient {i}: {} vs {want}", g[i]);
    }
    let h = ad::hessian(&f).unwrap().eval(&[x.view()]).unwrap().remove(0);
    assert_eq!(h.shape(), &[n, n]);
    let jg = ad::jacobian(&ad::gradient(&f).unwrap()).unwrap().eval(&[x.view()]).unwrap().remove(0);
    for i in 0..n {
        for j in 0..n {
            assert!((h[[i, j]] - h[[j, i]]).abs() < 1e-9, "hessian is symmetric");
            assert!((h[[i, j]] - jg[[i, j]]).abs() < 1e-9, "hessian = jacobian of gradient");
        }
    }
    // Forward (tall input) and reverse (wide input) Jacobians agree with each other.
    let wide = NumericalFunction::new("wide", |[x]| x.reshape([2, 3]).sin().sum_axes(1, false), [Arg::new(6)]).unwrap();
    let tall = NumericalFunction::new("tall", |[x]| x.outer(&x).exp().flatten(), [Arg::new(2)]).unwrap();
    for f in [&wide, &tall] {
        let x = Array1::linspace(0.1, 0.7, f.inputs()[0].numel()).into_dyn();
        let jac = ad::jacobian(f).unwrap().eval(&[x.view()]).unwrap().remove(0);
        let jf = ad::jvp(f).unwrap();
        for j in 0..x.len() {
            let mut e = ArrayD::zeros(x.shape());
            e[j] = 1.0;
            let col = jf.eval(&[x.view(), e.view()]).unwrap().remove(1);
            for (i, v) in col.iter().enumerate() {
                assert!((jac[[i, j]] - v).abs() < 1e-12);
            }
        }
    }
}

#[test]
fn higher_order_derivatives() {
    // Hessian of a Hessian-vector product, and jvp of a vjp, against finite differences.
    let f = NumericalFunction::new("cubic", |[x]| (x.square() * x.sin()).sum() + x.prod(), [Arg::new(3)]).unwrap();
    let hvp = NumericalFunction::new(
        "hvp",
        |[x]| {
            let h = ad::hessian(&f).unwrap();
            // h composed at this function's input, applied to a fixed vector.
            let hx = h.apply(std::slice::from_ref(&x)).unwrap().remove(0);
            hx.matmul(&Tensor::from_array(&array![1.0, -1.0, 0.5])).sum()
        },
        [Arg::new(3)],
    )
    .unwrap();
    let mut r = common::rng(24);
    let x = random_array(&mut r, &[3], 0.2, 1.0);
    check_rules(&hvp, std::slice::from_ref(&x), &mut r);
    let hh = ad::hessian(&hvp).unwrap().eval(&[x.view()]).unwrap().remove(0);
    assert_eq!(hh.shape(), &[3, 3]);
    check_rules(&ad::vjp(&f).unwrap(), &[x.clone(), ArrayD::from_elem(vec![], 1.3)], &mut r);
    check_rules(
        &ad::jvp(&ad::vjp(&f).unwrap()).unwrap(),
        &[x.clone(), ArrayD::from_elem(vec![], 0.7), x.clone(), ArrayD::from_elem(vec![], 0.2)],
        &mut r,
    );
}

#[test]
fn derivatives_run_natively() {
    let f = rosenbrock(8);
    let mut r = common::rng(25);
    let x = random_array(&mut r, &[8], -1.0, 1.0);
    for d in [ad::gradient(&f).unwrap(), ad::hessian(&f).unwrap(), ad::jvp(&f).unwrap()] {
        let inputs: Vec<anvil::HostArray> = d.inputs().iter().map(|_| anvil::HostArray::F64(x.clone())).collect();
        let inputs: Vec<anvil::HostArray> = inputs
            .into_iter()
            .zip(d.inputs())
            .map(|(h, a)| if a.shape.is_empty() { anvil::HostArray::F64(ArrayD::from_elem(vec![], 1.0)) } else { h })
            .collect();
        common::check_jit(&d, &inputs);
    }
}

#[test]
fn misuse_is_an_error() {
    let f = NumericalFunction::new(
        "vec",
        |[x, k]| (x.sin(), k.cast(DType::F64)),
        [Arg::new(3), Arg::with_dtype(2, DType::I32)],
    )
    .unwrap();
    // Two outputs: a derivative names the one it differentiates, never picks output 0.
    for err in [ad::gradient(&f), ad::jacobian(&f), ad::hessian(&f)].map(Result::unwrap_err) {
        assert!(err.to_string().contains("2 outputs") && err.to_string().contains("f.output(k)"), "{err}");
    }
    for err in [ad::spjacobian(&f).map(|_| ()), ad::sphessian(&f).map(|_| ())].map(Result::unwrap_err) {
        assert!(err.to_string().contains("2 outputs"), "{err}");
    }
    assert!(f.output(2).unwrap_err().to_string().contains("no output 2"));
    let err = ad::gradient(&f.output(0).unwrap()).unwrap_err();
    assert!(err.to_string().contains("scalar"), "{err}");
    // The selected output's Jacobian is that output's (here: cos x on the diagonal).
    let jac = ad::jacobian(&f.output(0).unwrap()).unwrap();
    let x = ndarray::array![0.1, 0.2, 0.3].into_dyn();
    let k = anvil::HostArray::I32(ndarray::array![1, 2].into_dyn());
    let got = jac.eval_dyn(&[anvil::HostArray::F64(x.clone()), k]).unwrap().remove(0);
    let want = ndarray::Array2::from_diag(&x.mapv(f64::cos).into_dimensionality::<ndarray::Ix1>().unwrap());
    assert_eq!(got, anvil::HostArray::F64(want.into_dyn()));
    assert!(ad::jacobian_wrt(&f, 1).unwrap_err().to_string().contains("float input"));
    assert!(ad::jacobian_wrt(&f, 2).unwrap_err().to_string().contains("no input 2"));
    assert!(ad::jacobian_wrt(&f.output(1).unwrap(), 1).unwrap_err().to_string().contains("float input"));
    assert!(anvil::vmap(&f, 4, &[Some(2), None]).unwrap_err().to_string().contains("out of range"));
    assert!(anvil::vmap(&f, 4, &[Some(0)]).unwrap_err().to_string().contains("in_axes"));
}

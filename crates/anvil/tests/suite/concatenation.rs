//! `Tensor::cat` costs linear work in its pieces: each element is computed from its own
//! piece (one loop segment per piece, no sum over all pieces), and large concatenations are
//! split into several C++ functions so that compile time stays linear too.

use crate::common;

use anvil::ndarray::s;
use anvil::{ad, Arg, DType, HostArray, NumericalFunction, Tensor};
use common::{check_jit, random, rng};

fn scalars(k: usize) -> NumericalFunction {
    NumericalFunction::new(
        "scalars",
        |[x]| {
            let pieces: Vec<Tensor> =
                (0..k).map(|i| (x.get((i % 4) as isize) * (i as f64 + 1.0)).unsqueeze(0)).collect();
            Tensor::cat(&pieces, 0)
        },
        [Arg::new(4)],
    )
    .unwrap()
}

#[test]
fn concatenations_of_every_layout_match_the_interpreter() {
    let mut r = rng(5);
    let x = [random(&mut r, &[4], DType::F64, -2.0, 2.0)];
    check_jit(&scalars(3), &x);
    check_jit(&scalars(2500), &x); // several outlined parts
    let m = [random(&mut r, &[6, 5], DType::F64, -2.0, 2.0), random(&mut r, &[5], DType::F64, -2.0, 2.0)];
    let layouts = NumericalFunction::new(
        "layouts",
        |[m, v]| {
            // Along the inner axis of a matrix: segments inside the outer loop.
            let columns: Vec<Tensor> = (0..300).map(|j| m.slice(s![.., j % 5..j % 5 + 1]).exp() * (j as f64)).collect();
            // Along the outer axis: one segment (an inner loop) per row.
            let rows: Vec<Tensor> = (0..200).map(|i| &m.slice(s![i % 6..i % 6 + 1, ..]) + &v).collect();
            // Long vector pieces of different lengths: vectorisable segments.
            let long = Tensor::cat(&[v.clone(), m.flatten().sin(), v.sqrt(), m.flatten()], 0);
            (Tensor::cat(&columns, 1), Tensor::cat(&rows, 0), long)
        },
        [Arg::new([6, 5]), Arg::new(5)],
    )
    .unwrap();
    let positive = [m[0].clone(), HostArray::F64(m[1].to_f64().mapv(f64::abs))];
    check_jit(&layouts, &positive);
    // Zero-length pieces and integer pieces.
    let mixed = NumericalFunction::new(
        "mixed_pieces",
        |[a, e]| Tensor::cat(&[a.clone(), e, a.clone() * 2.0], 0),
        [Arg::with_dtype(3, DType::I32), Arg::with_dtype(0, DType::I32)],
    )
    .unwrap();
    check_jit(&mixed, &[random(&mut r, &[3], DType::I32, -5.0, 5.0), random(&mut r, &[0], DType::I32, 0.0, 1.0)]);
}

#[test]
fn concatenation_values_keep_their_bits() {
    // A selection, not a sum of padded pieces: -0.0 stays -0.0.
    let f =
        NumericalFunction::new("signed_zero", |[x, y]| Tensor::cat(&[x, y], 0), [Arg::new(2), Arg::new(2)]).unwrap();
    let values = anvil::ndarray::array![-0.0, 1.0].into_dyn();
    for out in [f.eval(&[values.view(), values.view()]).unwrap(), f.call(&[values.view(), values.view()]).unwrap()] {
        assert!(out[0].iter().step_by(2).all(|v| v.to_bits() == (-0.0f64).to_bits()), "{out:?}");
    }
}

#[test]
fn generated_code_grows_linearly_with_the_pieces() {
    let size = |k: usize| scalars(k).jit_source().len();
    let (small, large) = (size(2000), size(8000));
    assert!(large < 4 * small + small / 5, "2000 pieces: {small} bytes, 8000 pieces: {large} bytes");
    let source = scalars(8000).jit_source();
    let parts = source.matches("static void kernel0_part").count();
    assert!(parts > 10, "a large concatenation is split into functions, got {parts}");
    // Every element is computed from its own piece: 8000 stores, none summing pieces.
    assert_eq!(source.matches("b1[i0] = ").count(), 8000);
}

#[test]
fn a_gradient_of_slices_and_elements_is_split_at_its_slices() {
    // The gradient of a collocation fit (COPS marine's pattern): each slice's pieces hold over
    // the slice, the measurements' over single elements. Split at every element, the code
    // would grow with the measurements; unsplit, every element tests every piece (marine's
    // Hessian took 56 % of its solve so). Split at the slices, each element computes the
    // pieces of its own slice and tests only its slice's measurements.
    let (slices, len, points) = (8usize, 100usize, 21usize);
    let fit = NumericalFunction::new(
        "collocation_fit",
        move |[x]| {
            let mut total = Tensor::scalar(0.0);
            for k in 0..slices {
                let (a, b) = (x.slice(s![k * len..(k + 1) * len - 1]), x.slice(s![k * len + 1..(k + 1) * len]));
                total = total + (&a * &b).sum();
                for j in 0..points {
                    let e = x.get((k * len + 4 * j + 1) as isize) - 1.0;
                    total = total + &e * &e;
                }
            }
            total
        },
        [Arg::new(slices * len)],
    )
    .unwrap();
    let gradient = ad::gradient(&fit).unwrap();
    check_jit(&gradient, &[random(&mut rng(7), &[slices * len], DType::F64, -2.0, 2.0)]);
    let source = gradient.jit_source();
    let loops = source.matches("for (long long").count();
    assert!((slices..4 * slices * points).contains(&loops), "{loops} loops: {source}");
    // In each segment the pieces of the other slices are zeros, and their sum is folded:
    // (x + 0) + 0 is x + 0, so a segment adds at most one zero to its own terms.
    let zeros = source.matches(" + 0.0;").count();
    assert!(zeros <= loops + slices * points, "{zeros} additions of zero in {loops} loops: {source}");
}

//! Sparse derivatives: exact structural patterns, optimal colourings on banded problems,
//! values equal to the dense derivatives (interpreter and JIT), valid CSC, and generated C++
//! that compiles and agrees with the JIT.

use crate::common;

use anvil::ad::{self, SparseNumericalFunction};
use anvil::ndarray::{Array1, Array2, ArrayD};
use anvil::{generate_module, Arg, NumericalFunction, Tensor};
use rand::Rng;
use std::process::Command;

fn tridiagonal_residual(n: usize) -> NumericalFunction {
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    NumericalFunction::new(
        "resid",
        move |[x]| {
            let p = x.pad(&[(1, 1)]);
            p.shrink(&[(0, n)]) - &x * 2.0 + p.shrink(&[(2, n + 2)]) + x.exp() * h2
        },
        [Arg::new(n)],
    )
    .unwrap()
}

fn extended_rosenbrock(n: usize) -> NumericalFunction {
    NumericalFunction::new(
        "rosen",
        move |[x]| {
            let (a, b) = (x.shrink(&[(0, n - 1)]), x.shrink(&[(1, n)]));
            ((&b - a.square()).square() * 100.0 + (1.0 - &a).square()).sum()
        },
        [Arg::new(n)],
    )
    .unwrap()
}

/// CSC arrays are well formed.
fn assert_valid_csc(s: &SparseNumericalFunction) {
    let (rows, cols) = s.shape();
    let (indptr, indices) = (s.indptr(), s.indices());
    assert_eq!(indptr.len(), cols + 1);
    assert_eq!(indptr[0], 0);
    assert_eq!(indptr[cols], s.nnz());
    assert!(indptr.windows(2).all(|w| w[0] <= w[1]), "indptr is monotone");
    for j in 0..cols {
        let col = &indices[indptr[j]..indptr[j + 1]];
        assert!(col.windows(2).all(|w| w[0] < w[1]), "rows sorted in column {j}");
        assert!(col.iter().all(|&i| i < rows));
    }
}

/// The sparse values scattered into a dense matrix.
fn densify(s: &SparseNumericalFunction, values: &Array1<f64>) -> Array2<f64> {
    let (rows, cols) = s.shape();
    let mut d = Array2::zeros((rows, cols));
    let (indptr, indices) = (s.indptr(), s.indices());
    for j in 0..cols {
        for k in indptr[j]..indptr[j + 1] {
            d[[indices[k], j]] = values[k];
        }
    }
    d
}

fn assert_matrices_close(a: &Array2<f64>, b: &ArrayD<f64>) {
    assert_eq!(a.shape(), b.shape());
    for (x, y) in a.iter().zip(b.iter()) {
        assert!((x - y).abs() <= 1e-9 * (1.0 + y.abs()), "{x} vs {y}");
    }
}

#[test]
fn tridiagonal_jacobian_uses_three_colours_and_matches_the_dense_one() {
    let n = 50;
    let f = tridiagonal_residual(n);
    let s = ad::spjacobian(&f).unwrap();
    assert_eq!(s.nnz(), 3 * n - 2);
    assert_eq!(s.colors(), 3);
    assert_valid_csc(&s);
    let x = Array1::linspace(-1.0, 1.0, n).into_dyn();
    let dense = ad::jacobian(&f).unwrap().eval(&[x.view()]).unwrap().remove(0);
    assert_matrices_close(&densify(&s, &s.eval(&[x.view()]).unwrap()), &dense);
    assert_matrices_close(&densify(&s, &s.call(&[x.view()]).unwrap()), &dense);
    assert_matrices_close(&s.call_dense(&[x.view()]).unwrap(), &dense);
    let diagonal = NumericalFunction::new("diag", |[x]| x.sin() * x, [Arg::new(n)]).unwrap();
    assert_eq!(ad::spjacobian(&diagonal).unwrap().colors(), 1);
}

#[test]
fn patterns_are_exactly_the_structural_ones() {
    let mut r = common::rng(41);
    for trial in 0..5 {
        let (m, n, k) = (12, 15, 3);
        let cols: Vec<Vec<usize>> = (0..m).map(|_| (0..k).map(|_| r.gen_range(0..n)).collect()).collect();
        let flat: Vec<i64> = cols.iter().flatten().map(|&j| j as i64).collect();
        let idx = Tensor::from_array(&Array1::from(flat));
        let w = Tensor::from_array(&Array2::from_shape_fn((m, k), |(i, j)| 0.5 + (i * k + j) as f64 * 0.01));
        let f = NumericalFunction::new(
            &format!("rand{trial}"),
            |[x]| (x.take(&idx).reshape([m, k]) * &w).sin().sum_axes(1, false),
            [Arg::new(n)],
        )
        .unwrap();
        let pattern = ad::jacobian_sparsity(&f).unwrap();
        for (i, c) in cols.iter().enumerate() {
            let mut want = c.clone();
            want.sort_unstable();
            want.dedup();
            assert_eq!(pattern.row(i), want.as_slice(), "row {i}");
        }
        let s = ad::spjacobian(&f).unwrap();
        assert!(ad::is_column_coloring(&pattern, &ad::column_coloring(&pattern)));
        assert_valid_csc(&s);
        let x = ArrayD::from_shape_fn(vec![n], |_| r.gen_range(-1.0..1.0));
        let dense = ad::jacobian(&f).unwrap().eval(&[x.view()]).unwrap().remove(0);
        assert_matrices_close(&densify(&s, &s.eval(&[x.view()]).unwrap()), &dense);
    }
}

#[test]
fn sparse_hessians_match_the_dense_upper_triangle() {
    let n = 30;
    let rosen = extended_rosenbrock(n);
    let arrow =
        NumericalFunction::new("arrow", |[x]| x.get(0) * x.square().sum() + (x.square() * &x).sum(), [Arg::new(8)])
            .unwrap();
    for (f, colors) in [(&rosen, 3), (&arrow, 2)] {
        let s = ad::sphessian(f).unwrap();
        assert_eq!(s.colors(), colors, "{}", f.name());
        assert_valid_csc(&s);
        let size = f.inputs()[0].numel();
        let x = Array1::linspace(-0.8, 1.3, size).into_dyn();
        let dense = ad::hessian(f).unwrap().eval(&[x.view()]).unwrap().remove(0);
        let upper = densify(&s, &s.call(&[x.view()]).unwrap());
        for i in 0..size {
            for j in 0..size {
                let want = if i <= j { dense[[i, j]] } else { 0.0 };
                assert!((upper[[i, j]] - want).abs() <= 1e-9 * (1.0 + want.abs()), "{} H[{i},{j}]", f.name());
            }
        }
    }
    assert_eq!(ad::sphessian(&rosen).unwrap().nnz(), 2 * n - 1);
}

#[test]
fn user_given_patterns_are_checked() {
    let d = ad::sparse_numerical_function("diag3", |[x]| x.exp(), [Arg::new(3)], (3, 3), &[0, 1, 2], &[0, 1, 2, 3])
        .unwrap();
    assert_eq!((d.shape(), d.nnz(), d.colors()), ((3, 3), 3, 0));
    let dense = d.call_dense(&[Array1::from(vec![0.0, 1.0, 2.0]).into_dyn().view()]).unwrap();
    assert!((dense[[2, 2]] - 2f64.exp()).abs() < 1e-12 && dense[[0, 1]] == 0.0);
    for (indices, indptr) in [
        (vec![0, 1], vec![0, 1, 2, 3]),
        (vec![1, 0, 2], vec![0, 2, 2, 3]),
        (vec![0, 1, 5], vec![0, 1, 2, 3]),
        (vec![0, 1, 2], vec![0, 1, 2]),
    ] {
        let err = ad::sparse_numerical_function("bad", |[x]| x * 1.0, [Arg::new(3)], (3, 3), &indices, &indptr)
            .map(|_| ())
            .unwrap_err();
        assert!(matches!(err, anvil::Error::Transform { .. }), "{err}");
    }
}

#[test]
fn generated_sparse_modules_compile_and_agree_with_the_jit() {
    let n = 12;
    let jac = ad::spjacobian(&tridiagonal_residual(n)).unwrap();
    let hess = ad::sphessian(&extended_rosenbrock(n)).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_sparse_module_{}", std::process::id()));
    let (hpp, cpp) = generate_module("sparsemod", &[&jac, &hess], &dir).unwrap();
    let header = std::fs::read_to_string(&hpp).unwrap();
    for needle in
        ["static constexpr int rows = 12;", "static constexpr int nnz = 34;", "innerIndices[34]", "outerStarts[13]"]
    {
        assert!(header.contains(needle), "header lacks `{needle}`");
    }
    let x = Array1::linspace(-0.5, 0.9, n);
    let values = x.iter().map(|v| format!("{v:?}")).collect::<Vec<_>>().join(", ");
    let main = format!(
        r#"#include "sparsemod.hpp"
#include <cstdio>
int main() {{
  double x[{n}] = {{{values}}};
  resid_spjac::OUT0_t j = resid_spjac::OUT0_t::alloc();
  rosen_sphess::OUT0_t h = rosen_sphess::OUT0_t::alloc();
  resid_spjac::WS_t wj = resid_spjac::init_ws();
  rosen_sphess::WS_t wh = rosen_sphess::init_ws();
  resid_spjac::call(resid_spjac::IN0_t{{x}}, j, wj);
  rosen_sphess::call(rosen_sphess::IN0_t{{x}}, h, wh);
  for (int k = 0; k < resid_spjac::nnz; ++k) std::printf("%.17g ", j[k]);
  std::printf("\n");
  for (int k = 0; k < rosen_sphess::nnz; ++k) std::printf("%.17g ", h[k]);
  std::printf("\n");
  resid_spjac::free_ws(wj); rosen_sphess::free_ws(wh); j.free(); h.free();
  return 0;
}}
"#
    );
    std::fs::write(dir.join("main.cpp"), main).unwrap();
    let exe = dir.join("sparse_demo");
    let out = Command::new("g++")
        .args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-fsanitize=address,undefined"])
        .arg(dir.join("main.cpp"))
        .arg(&cpp)
        .arg("-o")
        .arg(&exe)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(&exe).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let text = String::from_utf8(run.stdout).unwrap();
    let lines: Vec<Vec<f64>> =
        text.lines().map(|l| l.split_whitespace().map(|v| v.parse().unwrap()).collect()).collect();
    let xd = x.into_dyn();
    for (line, s) in lines.iter().zip([&jac, &hess]) {
        let jit = s.call(&[xd.view()]).unwrap();
        assert_eq!(line.len(), s.nnz());
        for (a, b) in line.iter().zip(jit.iter()) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_dense_row_switches_to_row_colouring() {
    // Row 0 couples every column: colouring columns would need n colours, rows need 3.
    let n = 40;
    let f = NumericalFunction::new(
        "dense_row",
        |[x]| Tensor::cat(&[x.square().sum().reshape(1), x.shrink(&[(1, n)]) * x.shrink(&[(0, n - 1)])], 0),
        [Arg::new(n)],
    )
    .unwrap();
    let s = ad::spjacobian(&f).unwrap();
    assert!(s.colors() <= 3, "{} colours", s.colors());
    assert_eq!(s.nnz(), n + 2 * (n - 1));
    assert_valid_csc(&s);
    let x = Array1::linspace(-1.0, 2.0, n).into_dyn();
    let dense = ad::jacobian(&f).unwrap().eval(&[x.view()]).unwrap().remove(0);
    assert_matrices_close(&densify(&s, &s.eval(&[x.view()]).unwrap()), &dense);
    assert_matrices_close(&densify(&s, &s.call(&[x.view()]).unwrap()), &dense);
}

#[test]
fn dense_and_sparse_derivatives_agree_where_partials_are_infinite() {
    // sqrt at 0: an infinite partial on the diagonal; the dense forms used to show NaN
    // (inf × 0 in a unit direction) where the structure, and the sparse forms, say 0.
    let f = NumericalFunction::new("roots", |[x]| x.sqrt() + x.get(0) * 0.5, [Arg::new(4)]).unwrap();
    let x = anvil::ndarray::array![0.0, 4.0, 0.0, 1.0].into_dyn();
    let sparse = ad::spjacobian(&f).unwrap();
    let from_sparse = densify(&sparse, &sparse.eval(&[x.view()]).unwrap());
    let jac = ad::jacobian(&f).unwrap();
    for dense in [jac.eval(&[x.view()]).unwrap().remove(0), jac.call(&[x.view()]).unwrap().remove(0)] {
        for ((i, j), want) in from_sparse.indexed_iter() {
            let got = dense[[i, j]];
            assert!(got == *want || (got.is_nan() && want.is_nan()), "({i}, {j}): dense {got}, sparse {want}");
        }
        assert_eq!(dense[[2, 1]], 0.0);
        assert!(dense[[2, 2]].is_infinite());
    }
    let g = NumericalFunction::new("root_sum", |[x]| x.sqrt().sum() + x.get(1) * x.get(3), [Arg::new(4)]).unwrap();
    let hess = ad::hessian(&g).unwrap().eval(&[x.view()]).unwrap().remove(0);
    let sparse = ad::sphessian(&g).unwrap();
    let upper = densify(&sparse, &sparse.eval(&[x.view()]).unwrap());
    for ((i, j), want) in upper.indexed_iter().filter(|((i, j), _)| i <= j) {
        let got = hess[[i, j]];
        assert!(got == *want || (got.is_nan() && want.is_nan()), "({i}, {j}): dense {got}, sparse {want}");
    }
    assert_eq!(hess[[0, 2]], 0.0);
}

#[test]
fn symmetric_jacobians_use_star_colouring_and_return_both_triangles() {
    // The Jacobian of a gradient is symmetric: an arrowhead needs 2 star colours, against n
    // column colours.
    let n = 10;
    let f = NumericalFunction::new("arrow", |[x]| (x.get(0) * x.sin().sum()).sum() + x.square().sum(), [Arg::new(n)])
        .unwrap();
    let g = ad::gradient(&f).unwrap();
    let star = ad::spjacobian_symmetric_wrt(&g, 0).unwrap();
    let columns = ad::spjacobian(&g).unwrap();
    assert!(star.colors() < columns.colors(), "{} star vs {} column colours", star.colors(), columns.colors());
    assert_eq!((star.nnz(), star.indices()), (columns.nnz(), columns.indices()));
    let x = Array1::linspace(0.1, 1.0, n).into_dyn();
    let want = ad::jacobian(&g).unwrap().eval(&[x.view()]).unwrap().remove(0);
    assert_matrices_close(&densify(&star, &star.eval(&[x.view()]).unwrap()), &want);
    assert_matrices_close(&star.call_dense(&[x.view()]).unwrap(), &want);
    let wide = NumericalFunction::new("wide", |[x]| x.sum(), [Arg::new(3)]).unwrap();
    assert!(ad::spjacobian_symmetric_wrt(&wide, 0).unwrap_err().to_string().contains("square"));
}

#[test]
fn large_sparse_jacobians_keep_a_small_source_and_exact_values() {
    // The Jacobian is computed from its bands: no seed matrix and no CSC positions, so the
    // translation unit is as small at n = 10⁵ as at 10².
    let source_len = |n: usize| ad::spjacobian(&tridiagonal_residual(n)).unwrap().jit_source().len();
    let (small, large) = (source_len(100), source_len(100_000));
    assert!(large < small + 256, "{large} vs {small} bytes");
    let n = 100_000;
    let jac = ad::spjacobian(&tridiagonal_residual(n)).unwrap();
    let x = Array1::from_shape_fn(n, |i| (i as f64 * 0.37).sin());
    let values = jac.call(&[x.view().into_dyn()]).unwrap();
    let h2 = 1.0 / ((n + 1) * (n + 1)) as f64;
    let (indptr, indices) = (jac.indptr(), jac.indices());
    for j in 0..n {
        for k in indptr[j]..indptr[j + 1] {
            let want = if indices[k] == j { -2.0 + h2 * x[j].exp() } else { 1.0 };
            assert!((values[k] - want).abs() <= 1e-15, "({}, {j}): {} vs {want}", indices[k], values[k]);
        }
    }
}

#[test]
fn seed_zeros_are_structural_in_the_interpreter_native_code_and_saved_functions() {
    // sqrt at 0: J[2, 2] is infinite. Columns 0 and 2 share row 2, so they have different
    // colours (and different unit directions): J[2, 0] = 0.5 must not become inf × 0 = NaN.
    let f = NumericalFunction::new("roots", |[x]| x.sqrt() + x.get(0) * 0.5, [Arg::new(4)]).unwrap();
    let x = anvil::ndarray::array![0.0, 4.0, 0.0, 1.0].into_dyn();
    let sparse = ad::spjacobian(&f).unwrap();
    let reloaded = SparseNumericalFunction::from_bytes(&sparse.to_bytes()).unwrap();
    for (how, values) in [
        ("interpreter", sparse.eval(&[x.view()]).unwrap()),
        ("native", sparse.call(&[x.view()]).unwrap()),
        ("reloaded", reloaded.eval(&[x.view()]).unwrap()),
    ] {
        let d = densify(&sparse, &values);
        assert_eq!(d[[2, 0]], 0.5, "{how}");
        assert!(d[[2, 2]].is_infinite() && d[[0, 0]].is_infinite(), "{how}");
        assert_eq!((d[[1, 1]], d[[3, 3]]), (0.25, 0.5), "{how}");
    }
    let jac = ad::jacobian(&f).unwrap();
    for dense in [jac.eval(&[x.view()]).unwrap().remove(0), jac.call(&[x.view()]).unwrap().remove(0)] {
        assert_eq!(dense[[2, 0]], 0.5);
    }
}

#[test]
fn a_captured_array_of_zeros_is_data_not_structure() {
    // The same product with a zero the user captured: the interpreter and native code
    // multiply by it (inf × 0 = NaN), as IEEE arithmetic says.
    let zeros = Tensor::from_array(&Array1::<f64>::zeros(3));
    let f = NumericalFunction::new("data_zero", move |[x]| x.sqrt().recip() * &zeros, [Arg::new(3)]).unwrap();
    let x = anvil::ndarray::array![0.0, 1.0, 4.0].into_dyn();
    for out in [f.eval(&[x.view()]).unwrap().remove(0), f.call(&[x.view()]).unwrap().remove(0)] {
        assert!(out[0].is_nan() && out[1] == 0.0 && out[2] == 0.0, "{out}");
    }
}

/// True if any kernel of `f` gathers (reads at positions from a table).
fn gathers(f: &NumericalFunction) -> bool {
    f.program()
        .kernels
        .iter()
        .any(|k| k.exprs.iter().any(|e| matches!(e, anvil::internals::lower::Expr::Gather { .. })))
}

/// The sparse values equal the dense derivative's entries bit for bit, interpreted and
/// native.
fn assert_exactly_dense(s: &SparseNumericalFunction, dense: &NumericalFunction, x: &ArrayD<f64>, upper: bool) {
    let want = dense.eval(&[x.view()]).unwrap().remove(0);
    for values in [s.eval(&[x.view()]).unwrap(), s.call(&[x.view()]).unwrap()] {
        let got = densify(s, &values);
        for ((i, j), w) in want.indexed_iter().map(|(p, w)| ((p[0], p[1]), *w)) {
            let w = if upper && i > j { 0.0 } else { w };
            assert_eq!(got[[i, j]].to_bits(), w.to_bits(), "{} ({i}, {j}): {} vs {w}", s.name(), got[[i, j]]);
        }
    }
}

#[test]
fn banded_derivatives_are_computed_from_their_bands_with_the_dense_values() {
    // Stencils and neighbour chains: values from the bands, laid out in CSC order by
    // slicing (no seed matrix, no position table), equal to the dense derivatives.
    let n = 37;
    let x = Array1::linspace(-0.9, 1.1, n).into_dyn();
    let resid = tridiagonal_residual(n);
    let jac = ad::spjacobian(&resid).unwrap();
    assert!(!gathers(&jac) && jac.colors() == 3);
    assert_exactly_dense(&jac, &ad::jacobian(&resid).unwrap(), &x, false);
    let rosen = extended_rosenbrock(n);
    let hess = ad::sphessian(&rosen).unwrap();
    assert!(!gathers(&hess) && hess.colors() == 3);
    assert_exactly_dense(&hess, &ad::hessian(&rosen).unwrap(), &x, true);
    // Not square, bands leaving the matrix at both ends, a band with no derivative (floor),
    // a cast and a select.
    let differences = NumericalFunction::new(
        "differences",
        move |[x]| {
            let (a, b) = (x.shrink(&[(0, n - 1)]), x.shrink(&[(2, n)]).pad(&[(0, 1)]));
            let step = (&b - &a * a.exp()) * a.floor()
                + a.gt(&b).where_(&b, a.cos()).cast(anvil::DType::F32).cast(anvil::DType::F64);
            step.pad(&[(2, 0)])
        },
        [Arg::new(n)],
    )
    .unwrap();
    let jac = ad::spjacobian(&differences).unwrap();
    assert!(!gathers(&jac) && jac.shape() == (n + 1, n));
    assert_valid_csc(&jac);
    assert_exactly_dense(&jac, &ad::jacobian(&differences).unwrap(), &x, false);
    // An infinite partial (sqrt at 0) stays in its own entry, and a NaN input makes NaN
    // only the entries it reaches, as in the dense Jacobian.
    let roots = NumericalFunction::new(
        "banded_roots",
        move |[x]| x.sqrt() + x.pad(&[(1, 0)]).shrink(&[(0, n)]) * 0.5,
        [Arg::new(n)],
    )
    .unwrap();
    let jac = ad::spjacobian(&roots).unwrap();
    assert!(!gathers(&jac));
    let mut y = Array1::linspace(0.0, 2.0, n);
    (y[0], y[5]) = (0.0, f64::NAN);
    let y = y.into_dyn();
    let want = ad::jacobian(&roots).unwrap().eval(&[y.view()]).unwrap().remove(0);
    for values in [jac.eval(&[y.view()]).unwrap(), jac.call(&[y.view()]).unwrap()] {
        let got = densify(&jac, &values);
        for ((i, j), w) in want.indexed_iter().map(|(p, w)| ((p[0], p[1]), *w)) {
            let g = got[[i, j]];
            assert!(g == w || (g.is_nan() && w.is_nan()), "({i}, {j}): {g} vs {w}");
        }
        assert!(got[[0, 0]].is_infinite() && got[[1, 0]] == 0.5 && got[[5, 5]].is_nan() && got[[6, 5]] == 0.5);
    }
    // A matrix input is not a banded vector (coloured instead): the same values.
    let grid = NumericalFunction::new("grid", |[x]| x.sin() * 2.0, [Arg::new([4, 5])]).unwrap();
    let s = ad::spjacobian(&grid).unwrap();
    assert_eq!(s.colors(), 1);
    let g = ArrayD::from_shape_fn(vec![4, 5], |p| (p[0] * 5 + p[1]) as f64 * 0.1);
    let dense =
        ad::jacobian(&grid).unwrap().eval(&[g.view()]).unwrap().remove(0).into_shape_with_order((20, 20)).unwrap();
    assert_matrices_close(&densify(&s, &s.call(&[g.view()]).unwrap()), &dense.into_dyn());
    // Outside the banded class (a sum of all of x feeds every element; a reversal; more
    // than MAX_BANDS bands): coloured and gathered, with the same values.
    let coupled = NumericalFunction::new("coupled", |[x]| &x * x.sum() + x.flip(0), [Arg::new(n)]).unwrap();
    let wide = NumericalFunction::new(
        "wide_stencil",
        move |[x]| {
            let p = x.pad(&[(40, 40)]);
            (0..81).map(|k| p.shrink(&[(k, k + n)]) * (k as f64)).reduce(|a, b| a + b).unwrap().sin()
        },
        [Arg::new(n)],
    )
    .unwrap();
    for f in [&coupled, &wide] {
        let s = ad::spjacobian(f).unwrap();
        assert!(gathers(&s), "{}", f.name());
        let dense = ad::jacobian(f).unwrap().eval(&[x.view()]).unwrap().remove(0);
        assert_matrices_close(&densify(&s, &s.call(&[x.view()]).unwrap()), &dense);
    }
    const { assert!(anvil::internals::transform::bands::MAX_BANDS < 81) };
}

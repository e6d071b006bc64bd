//! SQP solvers (anvil::opti): known optima and multipliers, dense against sparse, JIT
//! against the standalone module (compiled with `-Wall -Wextra -Werror`, run under ASan and
//! UBSan, and with `malloc` interposed to show that `solve` never allocates), and the errors
//! bad problems, settings and arguments get. (The Python tests compare a collection of
//! problems with Ipopt.)

use crate::common;
use anvil::opti::{
    Info, IpmFunction, IpmSettings, MuStrategy, Problem, QpBackend, SolutionMut, SqpFunction, SqpSettings, Status,
    WarmStart,
};
use anvil::{generate_module, Arg, Error, ModuleItem, NumericalFunction, Tensor};
use common::solver_harness::{check_module_against_jit, Run};

fn el(x: &Tensor, i: usize) -> Tensor {
    x.get(i as isize)
}

/// The original's guide example: x ∈ R⁴, cost (x1 − 2)² − x2 + x3, x0² + x1 = 1, bounds.
/// Optimum x = (0, 1, 1, −1), f = −1, λ_eq = 2, λ_box = (0, 0, 1, −1).
fn guide_problem() -> Problem {
    let args = [Arg::new(4), Arg::new(0)];
    let f =
        NumericalFunction::new("guide_f", |[x, _p]| (el(&x, 1) - 2.0).square() - el(&x, 2) + el(&x, 3), args.clone())
            .unwrap();
    let g =
        NumericalFunction::new("guide_g", |[x, _p]| (el(&x, 0).square() + el(&x, 1) - 1.0).reshape([1]), args).unwrap();
    Problem::new(&f)
        .unwrap()
        .eq_constraints(&g, 0.0)
        .unwrap()
        .bounds([-1.0, -1e20, -1.0, -1.0], [1.0, f64::INFINITY, 1.0, 1.0])
        .unwrap()
}

/// Hock-Schittkowski 71 with the product's bound as a parameter p = [25]:
/// min x0 x3 (x0 + x1 + x2) + x2  s.t.  Σ x² = 40,  x0 x1 x2 x3 − p ≥ 0,  1 ≤ x ≤ 5.
fn hs071() -> Problem {
    let args = [Arg::new(4), Arg::new(1)];
    let f = NumericalFunction::new(
        "hs071_f",
        |[x, _p]| el(&x, 0) * el(&x, 3) * (el(&x, 0) + el(&x, 1) + el(&x, 2)) + el(&x, 2),
        args.clone(),
    )
    .unwrap();
    let g = NumericalFunction::new("hs071_g", |[x, _p]| x.square().sum().reshape([1]), args.clone()).unwrap();
    let h = NumericalFunction::new(
        "hs071_h",
        |[x, p]| (el(&x, 0) * el(&x, 1) * el(&x, 2) * el(&x, 3) - el(&p, 0)).reshape([1]),
        args,
    )
    .unwrap();
    Problem::new(&f)
        .unwrap()
        .eq_constraints(&g, 40.0)
        .unwrap()
        .ineq_constraints(&h, 0.0, f64::INFINITY)
        .unwrap()
        .bounds(1.0, 5.0)
        .unwrap()
}

const HS071_X0: [f64; 4] = [1.0, 5.0, 5.0, 1.0];
const HS071_X: [f64; 4] = [1.0, 4.742_999_637_6, 3.821_149_979_9, 1.379_408_293_0];

fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len(), "{what}");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!((g - w).abs() <= tol * (1.0 + w.abs()), "{what}[{i}]: {g} vs {w}");
    }
}

#[test]
fn guide_example_has_the_known_optimum_and_signed_multipliers() {
    for solver in [
        SqpFunction::dense("guide_dense", &guide_problem(), SqpSettings::default()).unwrap(),
        SqpFunction::sparse("guide_sparse", &guide_problem(), SqpSettings::default()).unwrap(),
    ] {
        let sol = solver.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap();
        assert_eq!(sol.info.status, Status::Solved, "{}: {sol:?}", solver.name());
        assert_close("x", &sol.x, &[0.0, 1.0, 1.0, -1.0], 1e-8);
        assert_close("lam_eq", &sol.lam_eq, &[2.0], 1e-8);
        assert_close("lam_box", &sol.lam_box, &[0.0, 0.0, 1.0, -1.0], 1e-8);
        assert!((sol.info.objective + 1.0).abs() < 1e-8);
        assert!(sol.info.stat_res <= 1e-8 && sol.info.eq_res <= 1e-8 && sol.info.iterations >= 1);
    }
}

#[test]
fn hs071_dense_and_sparse_agree_with_the_literature_and_each_other() {
    let dense = SqpFunction::dense("hs071_dense", &hs071(), SqpSettings::default()).unwrap();
    let sparse = SqpFunction::sparse("hs071_sparse", &hs071(), SqpSettings::default()).unwrap();
    let a = dense.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    let b = sparse.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    for sol in [&a, &b] {
        assert_eq!(sol.info.status, Status::Solved, "{sol:?}");
        assert_close("x", &sol.x, &HS071_X, 1e-8);
        assert!((sol.info.objective - 17.014_017_29).abs() < 1e-7);
        // The product constraint is active at its lower bound: a negative multiplier.
        assert!(sol.lam_ineq[0] < 0.0 && sol.lam_box[0] < 0.0);
    }
    assert_close("lam_eq", &a.lam_eq, &b.lam_eq, 1e-7);
    assert_close("lam_ineq", &a.lam_ineq, &b.lam_ineq, 1e-7);
    assert_close("lam_box", &a.lam_box, &b.lam_box, 1e-7);
    // The parameter moves the optimum: a larger product needs a larger cost.
    let c = dense.solve(&HS071_X0, &[30.0], &WarmStart::default()).unwrap();
    assert_eq!(c.info.status, Status::Solved);
    assert!(c.info.objective > a.info.objective + 1e-3);
    // From the solution and its multipliers, it is solved at once.
    let warm = WarmStart { lam_eq: Some(&a.lam_eq), lam_ineq: Some(&a.lam_ineq), lam_box: Some(&a.lam_box) };
    let d = dense.solve(&a.x, &[25.0], &warm).unwrap();
    assert_eq!((d.info.status, d.info.iterations), (Status::Solved, 0));
}

/// Both line searches (the filter and the l1 merit function), with and without second-order
/// corrections, reach hs071's optimum; the test is a runtime setting.
#[test]
fn every_line_search_reaches_hs071s_optimum() {
    let mut solver = SqpFunction::dense("hs071_line_searches", &hs071(), SqpSettings::default()).unwrap();
    for filter in [false, true] {
        for second_order_correction in [false, true] {
            solver.set_settings(SqpSettings { filter, second_order_correction, ..SqpSettings::default() }).unwrap();
            let sol = solver.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
            assert_eq!(sol.info.status, Status::Solved, "filter {filter}, corrections {second_order_correction}");
            assert_close("x", &sol.x, &HS071_X, 1e-8);
        }
    }
}

/// The interior-point QP backends reach PIQP's solutions: the same point and multipliers on
/// the guide's problem and hs071, dense and sparse, and from a solution at once.
#[test]
fn ipm_qp_backends_agree_with_piqp() {
    let hs_piqp = SqpFunction::dense("ipmqp_ref_hs071", &hs071(), SqpSettings::default()).unwrap();
    let guide_piqp = SqpFunction::dense("ipmqp_ref_guide", &guide_problem(), SqpSettings::default()).unwrap();
    let want = hs_piqp.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    let want_guide = guide_piqp.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap();
    for (name, backend) in [("ipmqp_dense", QpBackend::IpmDense), ("ipmqp_sparse", QpBackend::IpmSparse)] {
        let hs = SqpFunction::new(&format!("{name}_hs071"), &hs071(), SqpSettings::default(), backend).unwrap();
        assert_eq!(hs.backend(), backend);
        let got = hs.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
        assert_eq!(got.info.status, Status::Solved, "{name}: {:?}", got.info);
        assert!(got.info.qp_iterations > 0);
        assert_close("x", &got.x, &HS071_X, 1e-8);
        assert_close("lam_eq", &got.lam_eq, &want.lam_eq, 1e-7);
        assert_close("lam_ineq", &got.lam_ineq, &want.lam_ineq, 1e-7);
        assert_close("lam_box", &got.lam_box, &want.lam_box, 1e-7);
        let warm = WarmStart { lam_eq: Some(&got.lam_eq), lam_ineq: Some(&got.lam_ineq), lam_box: Some(&got.lam_box) };
        let again = hs.solve(&got.x, &[25.0], &warm).unwrap();
        assert_eq!((again.info.status, again.info.iterations), (Status::Solved, 0));
        let guide =
            SqpFunction::new(&format!("{name}_guide"), &guide_problem(), SqpSettings::default(), backend).unwrap();
        let got = guide.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap();
        assert_eq!(got.info.status, Status::Solved, "{name}: {:?}", got.info);
        assert_close("guide x", &got.x, &want_guide.x, 1e-8);
        assert_close("guide lam_box", &got.lam_box, &want_guide.lam_box, 1e-7);
        assert_close("guide lam_ineq", &got.lam_ineq, &want_guide.lam_ineq, 1e-7);
    }
    // The Riccati backend is for multistage problems: an error that names the others.
    let e = SqpFunction::new("ipmqp_riccati", &hs071(), SqpSettings::default(), QpBackend::Riccati).unwrap_err();
    assert!(problem_message(e).contains("IpmDense"));
}

/// An SQP step whose linearised constraints are inconsistent is taken from the elastic QP,
/// which the interior-point backend solves too: the solve goes on to the optimum. Here
/// x0 + x1^2 = 1 and x0 + 2 x1^2 = 2 linearise at x1 = 0 to dx0 = 1 - x0 and dx0 = 2 - x0;
/// the feasible points are (0, 1) and (0, -1), the first the nearer to (0, 0.5).
#[test]
fn ipm_qp_backend_recovers_from_an_inconsistent_qp() {
    let args = || [Arg::new(2), Arg::new(0)];
    let f =
        NumericalFunction::new("incons_f", |[x, _p]| el(&x, 0).square() + (el(&x, 1) - 0.5).square(), args()).unwrap();
    let g = NumericalFunction::new(
        "incons_g",
        |[x, _p]| {
            let (a, b) = (el(&x, 0), el(&x, 1));
            Tensor::stack(&[&a + b.square() - 1.0, a + b.square() * 2.0 - 2.0], 0)
        },
        args(),
    )
    .unwrap();
    let problem = Problem::new(&f).unwrap().eq_constraints(&g, 0.0).unwrap();
    for (name, backend) in [("incons_ipm", QpBackend::IpmDense), ("incons_piqp", QpBackend::PiqpDense)] {
        let solver = SqpFunction::new(name, &problem, SqpSettings::default(), backend).unwrap();
        let solution = solver.solve(&[0.5, 0.0], &[], &WarmStart::default()).unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        assert_close(name, &solution.x, &[0.0, 1.0], 1e-8);
    }
}

/// Solves HS 71 twice into the same storage with `solve_into`: the first solve compiles the
/// solver and makes a workspace, the second must allocate nothing and reach the optimum.
fn second_solve_into_allocates_nothing(mut solve_into: impl FnMut(SolutionMut) -> Info, tol: f64) {
    let (mut x, mut lam_eq, mut lam_ineq, mut lam_box) = ([0.0; 4], [0.0; 1], [0.0; 1], [0.0; 4]);
    let mut solve =
        || solve_into(SolutionMut { x: &mut x, lam_eq: &mut lam_eq, lam_ineq: &mut lam_ineq, lam_box: &mut lam_box });
    assert_eq!(solve().status, Status::Solved);
    let before = common::allocations();
    let info = solve();
    assert_eq!(common::allocations() - before, 0, "solve_into allocated");
    assert_eq!(info.status, Status::Solved);
    assert_close("x", &x, &HS071_X, tol);
}

#[test]
fn solve_into_does_not_allocate() {
    let solver = SqpFunction::dense("no_alloc", &hs071(), SqpSettings::default()).unwrap();
    let settings = SqpSettings::default();
    second_solve_into_allocates_nothing(
        |out| solver.solve_into(&HS071_X0, &[25.0], &WarmStart::default(), out, &settings).unwrap(),
        1e-8,
    );
}

#[test]
fn statuses_end_with_the_last_iterate() {
    let solver =
        SqpFunction::dense("statuses", &hs071(), SqpSettings { max_iter: 1, ..SqpSettings::default() }).unwrap();
    let sol = solver.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    assert_eq!((sol.info.status, sol.info.iterations), (Status::MaxIter, 1));
    assert!(sol.x.iter().all(|v| v.is_finite()) && sol.x != HS071_X0);
    // Non-finite input is the solver's own verdict (the C++ API checks it too).
    let sol = solver.solve(&[f64::NAN, 1.0, 1.0, 1.0], &[25.0], &WarmStart::default()).unwrap();
    assert_eq!((sol.info.status, sol.info.iterations), (Status::InvalidInput, 0));
    let sol = solver
        .solve(&HS071_X0, &[25.0], &WarmStart { lam_eq: Some(&[f64::INFINITY]), ..WarmStart::default() })
        .unwrap();
    assert_eq!(sol.info.status, Status::InvalidInput);
    // A cost that is NaN where the solve starts.
    let args = [Arg::new(1), Arg::new(0)];
    let f =
        NumericalFunction::new("log_cost", |[x, _p]| (el(&x, 0) + 1.0).log().sum() + x.square().sum(), args).unwrap();
    let nan = SqpFunction::dense("nan_cost", &Problem::new(&f).unwrap(), SqpSettings::default()).unwrap();
    let sol = nan.solve(&[-3.0], &[], &WarmStart::default()).unwrap();
    assert_eq!(sol.info.status, Status::NanDetected);
    assert_eq!(sol.x, vec![-3.0]);
    // A full step into the cost's NaN region is reported as such whether or not the
    // derivatives are evaluated at the step's end.
    let args = [Arg::new(1), Arg::new(0)];
    let g = NumericalFunction::new(
        "log_step",
        |[x, _p]| (el(&x, 0) + 1.0).log().sum() * 1e-3 + (x + 5.0).square().sum(),
        args,
    )
    .unwrap();
    let one_step = SqpSettings { max_iter: 1, line_search: false, ..SqpSettings::default() };
    let step = SqpFunction::dense("log_step", &Problem::new(&g).unwrap(), one_step.clone()).unwrap();
    for final_stationarity in [false, true] {
        let settings = SqpSettings { final_stationarity, ..one_step.clone() };
        let sol = step.solve_with(&[0.0], &[], &WarmStart::default(), &settings).unwrap();
        assert_eq!((sol.info.status, sol.info.iterations), (Status::NanDetected, 1), "{final_stationarity}");
        assert!(sol.x[0] < -1.0, "{:?}", sol.x);
    }
}

fn problem_message(e: Error) -> String {
    match e {
        Error::Problem { .. } => e.to_string(),
        other => panic!("expected a problem error, got {other:?}"),
    }
}

#[test]
fn bad_problems_are_errors_that_say_what_is_wrong() {
    let args = [Arg::new(2), Arg::new(0)];
    let f = NumericalFunction::new("bp_f", |[x, _p]| x.square().sum(), args.clone()).unwrap();
    let v = NumericalFunction::new("bp_v", |[x, _p]| x * 2.0, args.clone()).unwrap();
    let other_x = NumericalFunction::new("bp_x3", |[x, _p]| x.sum().reshape([1]), [Arg::new(3), Arg::new(0)]).unwrap();
    let matrix_x = NumericalFunction::new("bp_m", |[x, _p]| x.sum(), [Arg::new([2, 2]), Arg::new(0)]).unwrap();
    let one_input = NumericalFunction::new("bp_1", |[x]| x.sum(), [Arg::new(2)]).unwrap();
    let p = || Problem::new(&f).unwrap();
    let cases: Vec<(Result<Problem, Error>, &str)> = vec![
        (p().bounds([0.0, 0.0, 0.0], 1.0), "x_lb"),
        (p().bounds(2.0, 1.0), "x_lb"),
        (p().bounds(f64::NAN, 1.0), "NaN"),
        (p().ineq_constraints(&v, [0.0], 1.0), "ineq_lb"),
        (p().eq_constraints(&v, [0.0, 1.0, 2.0]), "eq_rhs"),
        (p().eq_constraints(&other_x, 0.0), "bp_x3"),
        (Problem::new(&matrix_x), "non-empty f64 vector"),
        (Problem::new(&one_input), "(x, p)"),
    ];
    for (result, needle) in cases {
        let message = problem_message(result.expect_err(needle));
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
    // A vector cost is a Gauss-Newton residual, not an exact-Hessian cost.
    let message = problem_message(
        SqpFunction::dense("vec_cost", &Problem::new(&v).unwrap(), SqpSettings::default()).unwrap_err(),
    );
    assert!(message.contains("scalar"), "{message}");
    let e = SqpFunction::dense("not a name", &p(), SqpSettings::default()).unwrap_err();
    assert!(matches!(e, Error::InvalidName { .. }), "{e:?}");
}

#[test]
fn bad_settings_and_arguments_are_errors() {
    let mut solver = SqpFunction::dense("bad_args", &hs071(), SqpSettings::default()).unwrap();
    for (settings, needle) in [
        (SqpSettings { tol_stat: 0.0, ..SqpSettings::default() }, "tol_stat"),
        (SqpSettings { backtrack: 1.0, ..SqpSettings::default() }, "backtrack"),
        (SqpSettings { merit_memory: 17, ..SqpSettings::default() }, "merit_memory"),
        (SqpSettings { qp_eps_abs: f64::NAN, ..SqpSettings::default() }, "qp_eps_abs"),
        (
            SqpSettings {
                hessian_approximation: anvil::opti::HessianApproximation::GaussNewton,
                ..SqpSettings::default()
            },
            "Hessian",
        ),
    ] {
        let message = problem_message(solver.set_settings(settings).unwrap_err());
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
    assert_eq!(solver.settings(), &SqpSettings::default(), "a rejected setting changes nothing");
    let w = WarmStart::default();
    for (result, needle) in [
        (solver.solve(&[1.0; 3], &[25.0], &w), "`x0` has 3 entries, expected 4"),
        (solver.solve(&HS071_X0, &[], &w), "`p` has 0 entries, expected 1"),
        (solver.solve(&HS071_X0, &[25.0], &WarmStart { lam_box: Some(&[0.0]), ..w }), "`lam_box0` has 1"),
    ] {
        let message = problem_message(result.unwrap_err());
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
}

/// A `main` that solves with each solver of the module and prints
/// `name status iterations allocations x...`; with COUNT_MALLOC, `malloc` and its kin are
/// interposed and counted while `solve` runs.
#[test]
fn generated_module_compiles_cleanly_runs_under_sanitizers_and_never_allocates_in_solve() {
    let guide = SqpFunction::dense("aot_guide", &guide_problem(), SqpSettings::default()).unwrap();
    let hs = SqpFunction::sparse("aot_hs071", &hs071(), SqpSettings::default()).unwrap();
    let hs_dense = SqpFunction::dense("aot_hs071_dense", &hs071(), SqpSettings::default()).unwrap();
    let ipm = IpmFunction::dense("aot_ipm_hs071", &hs071(), IpmSettings::default()).unwrap();
    let ipm_guide = IpmFunction::dense("aot_ipm_guide", &guide_problem(), IpmSettings::default()).unwrap();
    let ipm_sparse = IpmFunction::sparse("aot_ipm_sparse", &hs071(), IpmSettings::default()).unwrap();
    let plain = NumericalFunction::new("plain", |[x]| x.sin(), [Arg::new(3)]).unwrap();
    let runs: Vec<Run> = vec![
        (&guide, &[0.5, 0.5, 0.0, 0.0], &[]),
        (&hs, &HS071_X0, &[25.0]),
        (&hs_dense, &HS071_X0, &[25.0]),
        (&ipm, &HS071_X0, &[25.0]),
        (&ipm_guide, &[0.5, 0.5, 0.0, 0.0], &[]),
        (&ipm_sparse, &HS071_X0, &[25.0]),
    ];
    let dir = std::env::temp_dir().join(format!("anvil_opti_module_{}", std::process::id()));
    let items: Vec<&dyn ModuleItem> = vec![&guide, &hs, &hs_dense, &ipm, &ipm_guide, &ipm_sparse, &plain];
    let (hpp, cpp) = generate_module("sqpmod", &items, &dir).unwrap();
    let header = std::fs::read_to_string(hpp).unwrap();
    let source = std::fs::read_to_string(cpp).unwrap();
    // The runtime (PIQP's glue) is declared once for all solvers, defined beside the module,
    // and the module includes no third-party header.
    assert_eq!(source.matches("#define ANVIL_OPTI_RUNTIME_DECLARED").count(), 1, "the runtime is declared once");
    assert!(!source.contains("#include <Eigen") && !source.contains("#include <piqp"));
    let runtime = std::fs::read_to_string(dir.join("anvil_opti.cpp")).unwrap();
    assert!(runtime.contains("#include <piqp/piqp.hpp>") && runtime.contains("Qp* Qp::dense(int n, int p, int m)"));
    assert!(header.contains("namespace aot_hs071 {") && header.contains("constexpr int NP = 1;"));
    // The interior-point method is declared in the module once, for both of its solvers (its
    // KKT factorisations too), and defined beside it.
    assert_eq!(source.matches("#define ANVIL_IPM_RUNTIME_DECLARED").count(), 1, "the method is declared once");
    assert_eq!(source.matches("class DenseLdl {").count(), 1, "the factorisations are emitted once");
    let method = std::fs::read_to_string(dir.join("anvil_ipm.cpp")).unwrap();
    assert!(method.contains("IpmReport InteriorPoint::run(") && !method.contains("#include \""));
    check_module_against_jit(&dir, "sqpmod", &runs, 1e-9);
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Two modules compiled with different `-march` link into one program with one solver
/// runtime (`anvil_opti.cpp`, compiled once, warning-free with the third-party headers as
/// system headers) and one interior-point method (`anvil_ipm.cpp`), and solve as the JIT
/// does; a second copy of either in the same program is a link error (duplicate symbols),
/// never a silent mix of two ABIs.
#[test]
fn modules_compiled_with_different_flags_share_one_runtime() {
    use std::process::Command;
    let guide = SqpFunction::dense("mix_guide", &guide_problem(), SqpSettings::default()).unwrap();
    let hs = SqpFunction::sparse("mix_hs071", &hs071(), SqpSettings::default()).unwrap();
    let ipm_guide = IpmFunction::dense("mix_ipm_guide", &guide_problem(), IpmSettings::default()).unwrap();
    let ipm_hs = IpmFunction::sparse("mix_ipm_hs071", &hs071(), IpmSettings::default()).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_opti_mix_{}", std::process::id()));
    generate_module("mix_a", &[&guide as &dyn ModuleItem, &ipm_guide], &dir).unwrap();
    generate_module("mix_b", &[&hs as &dyn ModuleItem, &ipm_hs], &dir).unwrap();
    let runs: Vec<Run> = vec![
        (&guide, &[0.5, 0.5, 0.0, 0.0], &[]),
        (&ipm_guide, &[0.5, 0.5, 0.0, 0.0], &[]),
        (&hs, &HS071_X0, &[25.0]),
        (&ipm_hs, &HS071_X0, &[25.0]),
    ];
    std::fs::write(dir.join("main.cpp"), common::solver_harness::harness_of(&["mix_a", "mix_b"], &runs)).unwrap();
    let compile = |source: &str, object: &str, flags: &[&str]| {
        let mut cmd = Command::new("g++");
        cmd.args(["-std=c++17", "-O2", "-Wall", "-Wextra", "-Werror", "-c"]).args(flags);
        for d in anvil::opti::include_dirs().unwrap() {
            cmd.arg(format!("-isystem{}", d.display()));
        }
        let out = cmd.arg(dir.join(source)).arg("-o").arg(dir.join(object)).output().unwrap();
        assert!(out.status.success(), "{source}: {}", String::from_utf8_lossy(&out.stderr));
    };
    // The runtime compiles in parallel with the modules (it is the slow one).
    std::thread::scope(|s| {
        s.spawn(|| compile("anvil_opti.cpp", "anvil_opti.o", &["-march=native"]));
        compile("anvil_ipm.cpp", "anvil_ipm.o", &["-march=native"]);
        compile("mix_a.cpp", "mix_a.o", &["-march=x86-64"]);
        compile("mix_b.cpp", "mix_b.o", &["-march=native"]);
        compile("main.cpp", "main.o", &[]);
    });
    let link = |objects: &[&str], exe: &str| {
        Command::new("g++").args(objects.iter().map(|o| dir.join(o))).arg("-o").arg(dir.join(exe)).output().unwrap()
    };
    let out = link(&["main.o", "mix_a.o", "mix_b.o", "anvil_opti.o", "anvil_ipm.o"], "mixed");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let run = Command::new(dir.join("mixed")).output().unwrap();
    assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
    let stdout = String::from_utf8(run.stdout).unwrap();
    for (line, (solver, x0, p)) in stdout.lines().zip(runs.iter().flat_map(|r| [r, r])) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((words[0], words[1]), (solver.name(), "0"), "{line}: not solved");
        let x: Vec<f64> = words[4..].iter().map(|v| v.parse().unwrap()).collect();
        assert_close(line, &x, &solver.jit_solve(x0, p).x, 1e-9);
    }
    assert_eq!(stdout.lines().count(), 8, "{stdout}");
    // Two runtimes (or two interior-point methods) in one program do not link.
    for runtime in ["anvil_opti", "anvil_ipm"] {
        let again = format!("{runtime}_again.o");
        std::fs::copy(dir.join(format!("{runtime}.o")), dir.join(&again)).unwrap();
        let out = link(&["main.o", "mix_a.o", "mix_b.o", "anvil_opti.o", "anvil_ipm.o", &again], "twice");
        assert!(!out.status.success(), "two copies of {runtime} linked");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("multiple definition"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// A call keeps no state: the same solve gives bit-identical results whatever was solved
/// before (PIQP's update kept the bounds' scaling from QP to QP, and its rounding reached
/// every later solution at ~1e-13).
#[test]
fn solves_do_not_depend_on_earlier_solves() {
    for (name, sparse) in [("stateless_dense", false), ("stateless_sparse", true)] {
        let solver = if sparse {
            SqpFunction::sparse(name, &hs071(), SqpSettings::default())
        } else {
            SqpFunction::dense(name, &hs071(), SqpSettings::default())
        }
        .unwrap();
        let solve = |x0: &[f64], p: f64| solver.solve(x0, &[p], &WarmStart::default()).unwrap();
        let first = solve(&HS071_X0, 25.0);
        assert_eq!(first.info.status, Status::Solved);
        for (x0, p) in [([2.0, 4.0, 4.0, 2.0], 26.0), (HS071_X0, 25.0), ([1.5, 3.0, 3.5, 1.2], 24.0)] {
            solve(&x0, p);
            let again = solve(&HS071_X0, 25.0);
            assert_eq!(
                (&again.x, &again.lam_eq, &again.lam_ineq, &again.lam_box),
                (&first.x, &first.lam_eq, &first.lam_ineq, &first.lam_box),
                "{name}"
            );
            assert_eq!(again.info.iterations, first.info.iterations);
        }
    }
}

// The interior-point solver (IpmFunction): the same problems, optima and multipliers as the
// SQP solvers; the Python tests compare it with Ipopt over the whole problem collection.

#[test]
fn ipm_reaches_the_known_optima_with_the_sqp_multipliers() {
    let sqp = SqpFunction::dense("ipm_ref_hs071", &hs071(), SqpSettings::default()).unwrap();
    let reference = sqp.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    let adaptive = IpmSettings { mu_strategy: MuStrategy::Adaptive, ..IpmSettings::default() };
    for ipm in [
        IpmFunction::dense("ipm_hs071", &hs071(), IpmSettings::default()).unwrap(),
        IpmFunction::dense("ipm_hs071_adaptive", &hs071(), adaptive).unwrap(),
        IpmFunction::sparse("ipm_hs071_sparse", &hs071(), IpmSettings::default()).unwrap(),
    ] {
        let sol = ipm.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
        assert_eq!(sol.info.status, Status::Solved, "{sol:?}");
        assert_close("x", &sol.x, &HS071_X, 1e-7);
        assert_close("lam_eq", &sol.lam_eq, &reference.lam_eq, 1e-6);
        assert_close("lam_ineq", &sol.lam_ineq, &reference.lam_ineq, 1e-6);
        assert_close("lam_box", &sol.lam_box, &reference.lam_box, 1e-6);
        assert!((sol.info.objective - 17.014_017_29).abs() < 1e-7);
        assert!(sol.info.stat_res <= 1e-7 && sol.info.eq_res <= 1e-8 && sol.info.ineq_res <= 1e-7);
        assert!(sol.info.iterations >= 5 && sol.info.qp_iterations == 0, "{:?}", sol.info);
    }
    let guide = IpmFunction::dense("ipm_guide", &guide_problem(), IpmSettings::default()).unwrap();
    let sol = guide.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap();
    assert_eq!(sol.info.status, Status::Solved, "{sol:?}");
    assert_close("x", &sol.x, &[0.0, 1.0, 1.0, -1.0], 1e-7);
    assert_close("lam_eq", &sol.lam_eq, &[2.0], 1e-7);
    assert_close("lam_box", &sol.lam_box, &[0.0, 0.0, 1.0, -1.0], 1e-7);
}

#[test]
fn ipm_warm_start_from_a_neighbouring_solution_takes_fewer_iterations() {
    let cold = IpmFunction::dense("ipm_cold", &hs071(), IpmSettings::default()).unwrap();
    let a = cold.solve(&HS071_X0, &[25.0], &WarmStart::default()).unwrap();
    let b = cold.solve(&HS071_X0, &[25.5], &WarmStart::default()).unwrap();
    let warm_settings = IpmSettings {
        warm_start_init_point: true,
        mu_init: 1e-6,
        warm_start_bound_push: 1e-6,
        ..IpmSettings::default()
    };
    let warm = IpmFunction::dense("ipm_warm", &hs071(), warm_settings).unwrap();
    let start = WarmStart { lam_eq: Some(&a.lam_eq), lam_ineq: Some(&a.lam_ineq), lam_box: Some(&a.lam_box) };
    let c = warm.solve(&a.x, &[25.5], &start).unwrap();
    assert_eq!((b.info.status, c.info.status), (Status::Solved, Status::Solved));
    assert_close("x", &c.x, &b.x, 1e-6);
    assert!(c.info.iterations < b.info.iterations, "warm {} vs cold {}", c.info.iterations, b.info.iterations);
}

#[test]
fn ipm_solve_into_does_not_allocate() {
    let solver = IpmFunction::dense("ipm_no_alloc", &hs071(), IpmSettings::default()).unwrap();
    let settings = IpmSettings::default();
    second_solve_into_allocates_nothing(
        |out| solver.solve_into(&HS071_X0, &[25.0], &WarmStart::default(), out, &settings).unwrap(),
        1e-7,
    );
}

#[test]
fn ipm_bad_settings_arguments_and_names_are_errors() {
    let mut solver = IpmFunction::dense("ipm_bad_args", &hs071(), IpmSettings::default()).unwrap();
    let d = IpmSettings::default;
    for (settings, needle) in [
        (IpmSettings { tol: 0.0, ..d() }, "tol"),
        (IpmSettings { mu_init: f64::NAN, ..d() }, "mu_init"),
        (IpmSettings { bound_push: 0.7, ..d() }, "bound_push"),
        (IpmSettings { bound_relax_factor: -1.0, ..d() }, "bound_relax_factor"),
        (IpmSettings { nlp_scaling_max_gradient: f64::INFINITY, ..d() }, "nlp_scaling_max_gradient"),
        (IpmSettings { max_iter: usize::MAX, ..d() }, "max_iter"),
        (IpmSettings { hessian_approximation: anvil::opti::HessianApproximation::GaussNewton, ..d() }, "Hessian"),
    ] {
        let message = problem_message(solver.set_settings(settings).unwrap_err());
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
    assert_eq!(solver.settings(), &d(), "a rejected setting changes nothing");
    let w = WarmStart::default();
    for (result, needle) in [
        (solver.solve(&[1.0; 3], &[25.0], &w), "`x0` has 3 entries, expected 4"),
        (solver.solve(&HS071_X0, &[], &w), "`p` has 0 entries, expected 1"),
        (solver.solve(&HS071_X0, &[25.0], &WarmStart { lam_eq: Some(&[0.0, 1.0]), ..w }), "`lam_eq0` has 2"),
    ] {
        let message = problem_message(result.unwrap_err());
        assert!(message.contains(needle), "`{needle}` not in: {message}");
    }
    // Non-finite input is the solver's verdict, naming the argument.
    let sol = solver.solve(&[1.0, f64::NAN, 1.0, 1.0], &[25.0], &w).unwrap();
    assert_eq!((sol.info.status, sol.info.invalid_input), (Status::InvalidInput, Some("x0")));
    let sol = solver.solve(&HS071_X0, &[f64::INFINITY], &w).unwrap();
    assert_eq!((sol.info.status, sol.info.invalid_input), (Status::InvalidInput, Some("p")));
    for name in ["anvil_ipm", "not a name", "main"] {
        let e = IpmFunction::dense(name, &hs071(), d()).unwrap_err();
        assert!(matches!(e, Error::InvalidName { .. }), "{name}: {e:?}");
    }
    let message =
        problem_message(IpmFunction::dense("ipm_bad", &hs071(), IpmSettings { tol: -1.0, ..d() }).unwrap_err());
    assert!(message.contains("tol"), "{message}");
}

/// The interior-point method's library is built with the solver's compiler options: a
/// compiler that cannot run, or that rejects the flags, is an error that says so (never a
/// panic), before any module is compiled.
#[test]
fn the_ipm_library_reports_a_missing_or_failing_compiler() {
    use anvil::jit::CompilerOptions;
    let missing = CompilerOptions { compiler: Some("no-such-compiler-anvil-ipm".into()), ..CompilerOptions::default() };
    let solver =
        IpmFunction::dense("ipm_no_compiler", &guide_problem(), IpmSettings::default()).unwrap().with_compiler(missing);
    let err = solver.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap_err();
    assert!(matches!(err, Error::InvalidCompiler { .. }), "{err}");
    assert!(err.to_string().contains("no-such-compiler-anvil-ipm"), "{err}");
    let bad_flags = CompilerOptions {
        flags: vec!["-include".into(), "/nonexistent/anvil_ipm.h".into()],
        ..CompilerOptions::default()
    };
    let solver =
        IpmFunction::dense("ipm_bad_flags", &guide_problem(), IpmSettings::default()).unwrap().with_compiler(bad_flags);
    let err = solver.solve(&[0.5, 0.5, 0.0, 0.0], &[], &WarmStart::default()).unwrap_err();
    assert!(err.to_string().contains("anvil_ipm.h"), "the compiler's message is kept: {err}");
}

/// A module holding only interior-point solvers needs no runtime library: it compiles with
/// the method's `anvil_ipm.cpp`, without PIQP or Eigen.
#[test]
fn ipm_module_needs_no_third_party_code() {
    let ipm = IpmFunction::dense("solo_ipm", &guide_problem(), IpmSettings::default()).unwrap();
    // SQP solvers whose QPs the interior-point method solves need no runtime either.
    let settings = SqpSettings::default();
    let sqp = SqpFunction::new("solo_sqp", &hs071(), settings.clone(), QpBackend::IpmDense).unwrap();
    let sqp_sparse = SqpFunction::new("solo_sqp_sparse", &hs071(), settings, QpBackend::IpmSparse).unwrap();
    let dir = std::env::temp_dir().join(format!("anvil_ipm_module_{}", std::process::id()));
    generate_module("ipmmod", &[&ipm as &dyn ModuleItem, &sqp, &sqp_sparse], &dir).unwrap();
    assert!(!dir.join("anvil_opti.cpp").exists(), "an interior-point module needs no solver runtime");
    assert!(dir.join("anvil_ipm.cpp").exists(), "the interior-point method is written beside the module");
    let runs: Vec<Run> =
        vec![(&ipm, &[0.5, 0.5, 0.0, 0.0], &[]), (&sqp, &HS071_X0, &[25.0]), (&sqp_sparse, &HS071_X0, &[25.0])];
    check_module_against_jit(&dir, "ipmmod", &runs, 1e-9);
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// The interior-point runtime's sources compile on their own, warning-free with g++ and
/// clang++ (-Wall -Wextra -Wshadow -Werror; clang++ checks the warnings only), also at -O3
/// (the JIT's level, where g++ analyses more paths and warns of more), and run clean under
/// ASan and UBSan: the dense LDL' against matrices of known inertia, the method on a problem
/// written against its interface by hand (tests/cpp/ipm_headers.cpp).
#[test]
fn ipm_headers_compile_on_their_own_and_pass_their_checks() {
    use std::process::Command;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let source = root.join("tests/cpp/ipm_headers.cpp");
    let headers = root.join("src/opti/ipm");
    let dir = std::env::temp_dir().join(format!("anvil_ipm_headers_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let clang = Command::new("clang++").arg("--version").output().is_ok_and(|o| o.status.success());
    let compilers: &[&str] = if clang { &["g++", "clang++"] } else { &["g++"] };
    let warnings = ["-Wall", "-Wextra", "-Wshadow", "-Werror"];
    // g++'s -O3 warnings, in parallel with the checks' build (it takes as long).
    let optimised = std::thread::spawn({
        let (source, headers, object) = (source.clone(), headers.clone(), dir.join("check_o3.o"));
        move || {
            let mut cmd = Command::new("g++");
            cmd.args(["-std=c++17", "-O3", "-march=native", "-c"]).args(warnings).arg("-I").arg(&headers);
            cmd.arg(&source).arg("-o").arg(&object).output().expect("run the C++ compiler")
        }
    });
    for compiler in compilers {
        let exe = dir.join(format!("check_{compiler}"));
        let mut cmd = Command::new(compiler);
        cmd.args(["-std=c++17", "-O1", "-g1"]).args(warnings).arg("-I").arg(&headers);
        if *compiler != "g++" {
            // A second compiler's warnings; running the checks twice would find nothing new.
            let out = cmd.arg("-fsyntax-only").arg(&source).output().expect("run the C++ compiler");
            assert!(out.status.success(), "{compiler}:\n{}", String::from_utf8_lossy(&out.stderr));
            continue;
        }
        cmd.args(["-fsanitize=address,undefined", "-fno-sanitize-recover=all"]);
        let out = cmd.arg(&source).arg("-o").arg(&exe).output().expect("run the C++ compiler");
        assert!(out.status.success(), "{compiler}:\n{}", String::from_utf8_lossy(&out.stderr));
        let run = Command::new(&exe).output().expect("run the header checks");
        let stdout = String::from_utf8_lossy(&run.stdout);
        assert!(
            run.status.success() && stdout.trim() == "ok",
            "{compiler}: {stdout}{}",
            String::from_utf8_lossy(&run.stderr)
        );
    }
    let out = optimised.join().unwrap();
    assert!(out.status.success(), "g++ -O3:\n{}", String::from_utf8_lossy(&out.stderr));
    std::fs::remove_dir_all(dir).unwrap();
}

/// A dense interior-point solver whose KKT matrix cannot fit in memory is refused when it is
/// built, with an error that says so and points to the sparse solver (nothing is allocated).
#[test]
fn ipm_dense_kkt_too_large_is_an_error() {
    let args = [Arg::new(3_000_000), Arg::new(0)];
    let f = NumericalFunction::new("huge_f", |[x, _p]| x.square().sum(), args).unwrap();
    let problem = Problem::new(&f).unwrap();
    let e = IpmFunction::dense("huge_ipm", &problem, IpmSettings::default()).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("dense KKT matrix") && message.contains("IpmFunction::sparse"), "{message}");
    // The SQP's dense interior-point QPs factorise the same matrix.
    let e = SqpFunction::new("huge_sqp", &problem, SqpSettings::default(), QpBackend::IpmDense).unwrap_err();
    let message = e.to_string();
    assert!(message.contains("dense KKT matrix") && message.contains("QpBackend::IpmSparse"), "{message}");
}

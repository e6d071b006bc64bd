//! Multistage problems (anvil::opti::MultistageProblem): the cart-pole swing-up of the
//! benchmark solved to its known optimum, the z-form against the dynamics form, the derived
//! functions against the problem written as one flat NLP, and the errors bad problems get.
//! (The Python tests compare the multipliers with Ipopt's.)

use crate::common;

use anvil::opti::{
    ControlProblem, HessianApproximation, Info, IpmFunction, IpmSettings, MultistageProblem, Problem, QpBackend,
    Solution, SqpFunction, SqpSettings, Status, WarmStart,
};
use anvil::{generate_module, Arg, CodegenIntConstant, Error, ModuleItem, NumericalFunction, Tensor};
use common::solver_harness::{check_module_against_jit, Run};
use ndarray::ArrayD;

const DT: f64 = 0.05;

/// The cart-pole's continuous dynamics: state (p, θ, v, ω), force u.
fn cartpole_ode(x: &Tensor, u: &Tensor) -> Tensor {
    let (m_cart, m, l, g) = (1.0, 0.1, 0.5, 9.81);
    let (theta, v, omega) = (x.get(1), x.get(2), x.get(3));
    let (s, c) = (theta.sin(), theta.cos());
    let force = u.get(0);
    let den = s.square() * m + m_cart;
    let pdd = (&force + (omega.square() * l + &c * g) * &s * m) / &den;
    let thdd = (-(&force * &c) - omega.square() * &c * &s * (m * l) - &s * ((m_cart + m) * g)) / (&den * l);
    Tensor::stack(&[v, omega, pdd, thdd], 0)
}

fn rk4(x: &Tensor, u: &Tensor) -> Tensor {
    let k1 = cartpole_ode(x, u);
    let k2 = cartpole_ode(&(x + &k1 * (DT / 2.0)), u);
    let k3 = cartpole_ode(&(x + &k2 * (DT / 2.0)), u);
    let k4 = cartpole_ode(&(x + &k3 * DT), u);
    x + (k1 + k2 * 2.0 + k3 * 2.0 + k4) * (DT / 6.0)
}

fn weighted_error(x: &Tensor, weights: [f64; 4]) -> Tensor {
    let target = Tensor::from_array(&ndarray::array![0.0, std::f64::consts::PI, 0.0, 0.0]);
    let w = Tensor::from_array(&ndarray::Array1::from(weights.to_vec()));
    ((x - target).square() * w).sum()
}

/// The benchmark's swing-up in the dynamics form.
fn cartpole(n: usize) -> ControlProblem {
    cartpole_with(|f| ControlProblem::new(n, 4, 1, 0, f).unwrap())
}

/// The swing-up with the dynamics given to `problem` (which sets the horizon).
fn cartpole_with(problem: impl FnOnce(&NumericalFunction) -> ControlProblem) -> ControlProblem {
    let xup = || [Arg::new(4), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("cartpole_rk4", |[x, u, _p]| rk4(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new(
        "cartpole_l",
        |[x, u, _p]| (weighted_error(&x, [1.0, 10.0, 0.1, 0.1]) + u.square().sum() * 0.01) * DT,
        xup(),
    )
    .unwrap();
    let lf = NumericalFunction::new(
        "cartpole_lf",
        |[x, _p]| weighted_error(&x, [10.0, 100.0, 10.0, 10.0]),
        [Arg::new(4), Arg::new(0)],
    )
    .unwrap();
    problem(&f).stage_cost(&l).unwrap().terminal_cost(&lf).unwrap().control_bounds(-20.0, 20.0).unwrap()
}

/// J* of the benchmark (Ipopt, fatrop and sqpmethod agree from the zero guess).
const CARTPOLE_OPTIMUM: f64 = 34.00324653;

/// Solves the swing-up from the benchmark's guess (all zeros) and checks what every
/// solution must satisfy; prints the solve's figures (`--nocapture`).
fn solve_cartpole(name: &str, backend: QpBackend, approximation: HessianApproximation) -> Solution {
    let problem = MultistageProblem::from_dynamics(&cartpole(50)).unwrap();
    assert_eq!((problem.nvars(), problem.neq(), problem.nineq(), problem.np()), (255, 204, 0, 4));
    let settings = SqpSettings { max_iter: 200, hessian_approximation: approximation, ..SqpSettings::default() };
    let solver = SqpFunction::multistage(name, &problem, settings, backend).unwrap();
    let solution = solver.solve(&[0.0; 255], &[0.0; 4], &WarmStart::default()).unwrap();
    eprintln!("{name}: {:?}", solution.info);
    assert_eq!(solution.info.status, Status::Solved, "{:?}", solution.info);
    assert!((solution.info.objective - CARTPOLE_OPTIMUM).abs() < 1e-6, "J = {}", solution.info.objective);
    // The pole ends upright, the first state is the initial one, the force within its bounds.
    let x_n = &solution.x[250..254];
    assert!((x_n[1] - std::f64::consts::PI).abs() < 0.1, "final state {x_n:?}");
    assert!(solution.x[..4].iter().all(|v| v.abs() < 1e-9));
    assert!(solution.x.chunks(5).all(|z| z[4].abs() <= 20.0 + 1e-9));
    solution
}

/// Each `got[i]` within `tol · (1 + |want[i]|)` of `want[i]` (over the shorter of the two).
fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) {
    for (i, (u, v)) in got.iter().zip(want).enumerate() {
        assert!((u - v).abs() <= tol * (1.0 + v.abs()), "{what}[{i}]: {u} vs {v}");
    }
}

#[test]
fn cartpole_swing_up_reaches_the_known_optimum_with_every_qp_backend() {
    let riccati = solve_cartpole("cartpole_riccati", QpBackend::Riccati, HessianApproximation::Exact);
    let piqp = solve_cartpole("cartpole_piqp", QpBackend::PiqpSparse, HessianApproximation::Exact);
    let ipm = solve_cartpole("cartpole_ipm_qp", QpBackend::IpmSparse, HessianApproximation::Exact);
    // z_N's control is free of cost: any value is optimal; the rest is unique.
    for other in [&piqp, &ipm] {
        assert_close("x", &riccati.x[..250], &other.x[..250], 1e-6);
        assert_close("lam_eq", &riccati.lam_eq, &other.lam_eq, 1e-5);
        assert_close("lam_box", &riccati.lam_box, &other.lam_box, 1e-5);
    }
}

#[test]
fn cartpole_swing_up_converges_with_the_cost_hessian_alone() {
    solve_cartpole("cartpole_gn", QpBackend::Riccati, HessianApproximation::GaussNewton);
}

/// At N = 1000 the swing-up's value Hessians P_k span many orders of magnitude (the upright
/// pole is unstable), and the QPs must keep converging in a few iterations each. (A Riccati
/// factor that stored P_k with rounding-different triangles made every QP from about the
/// 96th SQP iteration on fail and retry with raised Hessian floors, ~600 QP iterations per
/// SQP iteration.)
#[test]
fn long_horizon_qps_keep_converging() {
    let n = 1000;
    let problem = MultistageProblem::from_dynamics(&cartpole(n)).unwrap();
    let settings = SqpSettings {
        max_iter: 120,
        hessian_approximation: HessianApproximation::GaussNewton,
        ..SqpSettings::default()
    };
    let solver = SqpFunction::multistage("cartpole_long", &problem, settings, QpBackend::Riccati).unwrap();
    let solution = solver.solve(&vec![0.0; 5 * (n + 1)], &[0.0; 4], &WarmStart::default()).unwrap();
    let info = &solution.info;
    eprintln!("N = {n}: {info:?}");
    assert!(matches!(info.status, Status::MaxIter | Status::Solved), "{info:?}");
    assert!(
        info.qp_iterations < 30 * info.iterations,
        "{} QP iterations in {} SQP iterations",
        info.qp_iterations,
        info.iterations
    );
}

/// The same problem written by hand as one flat NLP: cost, constraints and their
/// derivatives agree with the stage-wise ones.
#[test]
fn stagewise_functions_equal_the_flat_problem() {
    let n = 6;
    let problem = MultistageProblem::from_dynamics(&cartpole(n)).unwrap();
    let nv = (n + 1) * 5;
    let args = || [Arg::new(nv), Arg::new(4)];
    let z = |x: &Tensor, k: usize| x.shrink(&[(5 * k, 5 * k + 5)]);
    let state = |x: &Tensor, k: usize| z(x, k).shrink(&[(0, 4)]);
    let control = |x: &Tensor, k: usize| z(x, k).shrink(&[(4, 5)]);
    let cost = NumericalFunction::new(
        "flat_f",
        |[x, _p]| {
            let mut f = weighted_error(&state(&x, n), [10.0, 100.0, 10.0, 10.0]);
            for k in 0..n {
                f = f
                    + (weighted_error(&state(&x, k), [1.0, 10.0, 0.1, 0.1]) + control(&x, k).square().sum() * 0.01)
                        * DT;
            }
            f
        },
        args(),
    )
    .unwrap();
    let eq = NumericalFunction::new(
        "flat_g",
        |[x, p]| {
            let mut rows = vec![state(&x, 0) - p];
            rows.extend((0..n).map(|k| state(&x, k + 1) - rk4(&state(&x, k), &control(&x, k))));
            Tensor::cat(&rows, 0)
        },
        args(),
    )
    .unwrap();
    let flat = Problem::new(&cost)
        .unwrap()
        .eq_constraints(&eq, 0.0)
        .unwrap()
        .bounds([-1e20, -1e20, -1e20, -1e20, -20.0].repeat(n + 1), [1e20, 1e20, 1e20, 1e20, 20.0].repeat(n + 1));
    let flat = flat.unwrap();
    let settings = SqpSettings::default();
    let staged = SqpFunction::multistage("staged", &problem, settings.clone(), QpBackend::PiqpSparse).unwrap();
    let reference = SqpFunction::sparse("flat", &flat, settings).unwrap();
    let x: Vec<f64> = (0..nv).map(|i| ((i * 7919) % 97) as f64 / 50.0 - 1.0).collect();
    let p = vec![0.3, -0.2, 0.1, 0.5];
    let lam: Vec<f64> = (0..problem.neq()).map(|i| ((i * 31) % 11) as f64 / 5.0 - 1.0).collect();
    let arr = |v: &[f64]| ArrayD::from_shape_vec(vec![v.len()], v.to_vec()).unwrap();
    let dense = |f: &NumericalFunction, inputs: &[ArrayD<f64>]| -> Vec<ArrayD<f64>> {
        let views: Vec<_> = inputs.iter().map(|a| a.view()).collect();
        f.eval(&views).unwrap()
    };
    let [_, s_lin, s_hess] = staged.functions();
    let [_, r_lin, r_hess] = reference.functions();
    let (a, b) = (dense(s_lin, &[arr(&x), arr(&p)]), dense(r_lin, &[arr(&x), arr(&p)]));
    let close = |u: &ArrayD<f64>, v: &ArrayD<f64>, what: &str| {
        assert_eq!(u.shape(), v.shape(), "{what}");
        for (s, t) in u.iter().zip(v) {
            assert!((s - t).abs() <= 1e-12 * (1.0 + t.abs()), "{what}: {s} vs {t}");
        }
    };
    // f, ∇f, c_eq, J_eq values (both in the CSC order of one pattern).
    for (k, what) in [(0, "f"), (1, "gradient"), (2, "c_eq"), (3, "J_eq")] {
        close(&a[k], &b[k], what);
    }
    let inputs = [arr(&x), arr(&p), arr(&lam), arr(&[])];
    close(&dense(s_hess, &inputs)[0], &dense(r_hess, &inputs)[0], "Hessian");
}

#[test]
fn bad_multistage_problems_get_errors_that_say_what_to_fix() {
    let stage = || [Arg::new(3), Arg::new(0), Arg::new(0)];
    let cost = NumericalFunction::new("c", |[z, _g, _p]| z.square().sum(), stage()).unwrap();
    let message = |e: Error| e.to_string();
    // A stage function of the wrong width.
    let wide = NumericalFunction::new("w", |[z, _g, _p]| z.sum(), [Arg::new(4), Arg::new(0), Arg::new(0)]).unwrap();
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().cost_stage(&wide).unwrap_err();
    assert!(message(e).contains("cost_stage_fn must take (z, p_global, p_i)"));
    // A vector cost.
    let vector = NumericalFunction::new("v", |[z, _g, _p]| z * 2.0, stage()).unwrap();
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().cost_initial(&vector).unwrap_err();
    assert!(message(e).contains("must return a scalar"));
    // The interstage function takes the next stage too.
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().eq_interstage(&cost).unwrap_err();
    assert!(message(e).contains("(z, z_next, p_global, p_i)"));
    // Bounds of the wrong length, crossed bounds, an empty horizon.
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().bounds(vec![0.0; 2], 1.0).unwrap_err();
    assert!(message(e).contains("has 2 entries, expected nz = 3 (every stage's) or (N + 1)·nz = 18"));
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().bounds(1.0, 0.0).unwrap_err();
    assert!(message(e).contains("no value satisfies both"));
    assert!(message(MultistageProblem::new(0, 3, 0, 0).unwrap_err()).contains("N ≥ 1"));
    // Sizes no generated solver can index, and NaN bounds.
    assert!(message(MultistageProblem::new(usize::MAX, 3, 0, 0).unwrap_err()).contains("use a shorter horizon"));
    assert!(message(MultistageProblem::new(1 << 30, 4, 0, 0).unwrap_err()).contains("use a shorter horizon"));
    assert!(message(MultistageProblem::new(10, 3, 0, usize::MAX).unwrap_err()).contains("use a shorter horizon"));
    let e = MultistageProblem::new(5, 3, 0, 0).unwrap().bounds(f64::NAN, 1.0).unwrap_err();
    assert!(message(e).contains("entry 0 is NaN"));
    // Dynamics returning the wrong number of states.
    let xup = [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("f", |[x, _u, _p]| x.sum().reshape([1]), xup).unwrap();
    assert!(message(ControlProblem::new(5, 2, 1, 0, &f).unwrap_err()).contains("next state (2 entries)"));
    // Solve arguments of the wrong length.
    let problem = MultistageProblem::new(3, 3, 0, 0).unwrap().cost_stage(&cost).unwrap();
    let solver = SqpFunction::multistage("ms_bad", &problem, SqpSettings::default(), QpBackend::PiqpSparse).unwrap();
    let e = solver.solve(&[0.0; 3], &[], &WarmStart::default()).unwrap_err();
    assert!(message(e).contains("`x0` has 3 entries, expected 12"));
    for dense in [QpBackend::PiqpDense, QpBackend::IpmDense] {
        let e = SqpFunction::multistage("ms_dense", &problem, SqpSettings::default(), dense).unwrap_err();
        assert!(message(e).contains("PiqpSparse or IpmSparse"), "{dense:?}");
    }
}

/// The MPC warm start: variables and each term's multipliers move one stage earlier, the
/// last stage keeps its own, single-stage terms (x_0 = x_init) keep theirs; a real-time
/// iteration from the shifted optimum of a moved initial state is one full step.
#[test]
fn shifted_solutions_warm_start_real_time_iterations() {
    let n = 4;
    let problem = MultistageProblem::from_dynamics(&cartpole(n)).unwrap();
    let (nv, neq) = (problem.nvars(), problem.neq());
    let ramp = |len: usize| (0..len).map(|i| i as f64).collect::<Vec<f64>>();
    let solution =
        Solution { x: ramp(nv), lam_eq: ramp(neq), lam_ineq: vec![], lam_box: ramp(nv), info: Info::unsolved() };
    let shifted = problem.shift(&solution).unwrap();
    let stage = |v: &[f64], i: usize| v[5 * i..5 * i + 5].to_vec();
    for i in 0..n {
        assert_eq!(stage(&shifted.x, i), stage(&solution.x, i + 1));
    }
    assert_eq!(stage(&shifted.x, n), stage(&solution.x, n));
    assert_eq!(shifted.lam_box, shifted.x);
    // lam_eq: x_0 = x_init (4 rows), then the n dynamics blocks of 4 rows.
    let mut expected: Vec<f64> = ramp(4);
    expected.extend((8..4 + 4 * n).map(|i| i as f64));
    expected.extend((4 * n..4 + 4 * n).map(|i| i as f64));
    assert_eq!(shifted.lam_eq, expected);
    let wrong = Solution { x: vec![0.0; 3], ..solution.clone() };
    let e = problem.shift(&wrong).unwrap_err().to_string();
    assert!(e.contains("`x` has 3 entries, expected 25"), "{e}");

    let problem = MultistageProblem::from_dynamics(&cartpole(20)).unwrap();
    let gn = SqpSettings { hessian_approximation: HessianApproximation::GaussNewton, ..SqpSettings::default() };
    let solver = SqpFunction::multistage("cartpole_rti", &problem, gn, QpBackend::Riccati).unwrap();
    let optimum = solver.solve(&[0.0; 105], &[0.0; 4], &WarmStart::default()).unwrap();
    assert_eq!(optimum.info.status, Status::Solved);
    let warm = problem.shift(&optimum).unwrap();
    let start = WarmStart { lam_eq: Some(&warm.lam_eq), lam_ineq: None, lam_box: Some(&warm.lam_box) };
    let x_next = &optimum.x[5..9];
    let rti = SqpSettings::real_time_iteration();
    let step = solver.solve_with(&warm.x, x_next, &start, &rti).unwrap();
    assert_eq!((step.info.status, step.info.iterations), (Status::MaxIter, 1));
    // One Gauss-Newton step lands on the new initial state exactly (a linear constraint) and
    // close to the shifted plan (the horizon's end is new).
    assert!(step.x[..4].iter().zip(x_next).all(|(a, b)| (a - b).abs() < 1e-9));
    assert!((step.x[4] - optimum.x[9]).abs() < 0.5, "first force {} vs {}", step.x[4], optimum.x[9]);
    // The step's end is reported from the values alone; with final_stationarity the same
    // step also evaluates the derivatives there.
    assert!(step.info.stat_res.is_nan());
    let full = SqpSettings { final_stationarity: true, ..rti };
    let checked = solver.solve_with(&warm.x, x_next, &start, &full).unwrap();
    assert_eq!(checked.x, step.x);
    assert!(checked.info.stat_res.is_finite());
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * (1.0 + a.abs());
    assert!(close(checked.info.objective, step.info.objective), "{:?} vs {:?}", checked.info, step.info);
    assert!(close(checked.info.eq_res, step.info.eq_res) && close(checked.info.comp_res, step.info.comp_res));
    assert!(step.info.eq_res < 0.05, "one step from the shifted optimum is nearly feasible: {:?}", step.info);
}

/// The Riccati solver written into a module with its horizon a named constant: the header
/// declares it, the stage loops use it; compiled with `-Wall -Wextra -Werror`, run under
/// ASan and UBSan and with `malloc` interposed (no allocation in `solve`), equal to the JIT.
/// A double integrator (position, velocity; force in [−1, 1]) over `n` steps of 0.1 s,
/// from the initial state given as the global parameter to rest at the origin.
const DI_DT: f64 = 0.1;

fn double_integrator_dynamics(x: &Tensor, u: &Tensor) -> Tensor {
    let (p, v) = (x.get(0), x.get(1));
    Tensor::stack(&[&p + &v * DI_DT, &v + &u.get(0) * DI_DT], 0)
}

/// The double integrator as `from_dynamics` builds it.
fn double_integrator(n: usize) -> MultistageProblem {
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("di_f", |[x, u, _p]| double_integrator_dynamics(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new("di_l", |[x, u, _p]| x.square().sum() + u.square().sum() * 0.1, xup()).unwrap();
    let lf = NumericalFunction::new("di_lf", |[x, _p]| x.square().sum() * 10.0, [Arg::new(2), Arg::new(0)]).unwrap();
    let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap();
    let ocp = ocp.stage_cost(&l).unwrap().terminal_cost(&lf).unwrap().control_bounds(-1.0, 1.0).unwrap();
    MultistageProblem::from_dynamics(&ocp).unwrap()
}

/// The same problem written in the z-form by hand, z = (position, velocity, force).
fn double_integrator_z_form(n: usize) -> MultistageProblem {
    let stage = || [Arg::new(3), Arg::new(2), Arg::new(0)];
    let states = |z: &Tensor| z.shrink(&[(0, 2)]);
    let cost =
        NumericalFunction::new("di_z_l", |[z, _g, _p]| states(&z).square().sum() + z.get(2).square() * 0.1, stage())
            .unwrap();
    let terminal = NumericalFunction::new("di_z_lf", |[z, _g, _p]| states(&z).square().sum() * 10.0, stage()).unwrap();
    let start = NumericalFunction::new("di_z_start", |[z, g, _p]| states(&z) - g, stage()).unwrap();
    let dynamics = NumericalFunction::new(
        "di_z_dyn",
        |[z, zn, _g, _p]| states(&zn) - double_integrator_dynamics(&states(&z), &z.shrink(&[(2, 3)])),
        [Arg::new(3), Arg::new(3), Arg::new(2), Arg::new(0)],
    )
    .unwrap();
    let problem = MultistageProblem::new(n, 3, 2, 0).unwrap();
    let problem = problem.cost_initial(&cost).unwrap().cost_stage(&cost).unwrap().cost_terminal(&terminal).unwrap();
    let problem = problem.eq_initial(&start).unwrap().eq_interstage(&dynamics).unwrap();
    problem.bounds([-1e20, -1e20, -1.0], [1e20, 1e20, 1.0]).unwrap()
}

/// The Riccati backend's two Newton-system solvers: with explicit dynamics (from
/// `from_dynamics`: states eliminated, a recursion over (x, u)) and without (the z-form's
/// block-tridiagonal recursion with penalised equality rows). They solve the same problem
/// to the same solution and multipliers; adding an equality term to a `from_dynamics`
/// problem falls back to the z-form recursion.
#[test]
fn explicit_dynamics_and_z_form_recursions_agree() {
    let n = 30;
    let x_init = [1.0, 0.5];
    let settings = SqpSettings { max_iter: 50, ..SqpSettings::default() };
    let solve = |name: &str, problem: &MultistageProblem| {
        let solver = SqpFunction::multistage(name, problem, settings.clone(), QpBackend::Riccati).unwrap();
        let source = solver.jit_source().unwrap();
        let solution = solver.solve(&vec![0.0; 3 * (n + 1)], &x_init, &WarmStart::default()).unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        (source.contains("constexpr bool kDynamics = true;"), solution)
    };
    let (explicit, dynamics) = solve("di_dynamics", &double_integrator(n));
    let (z_explicit, z_form) = solve("di_z_form", &double_integrator_z_form(n));
    assert!(explicit && !z_explicit, "from_dynamics eliminates the states, the z-form does not");
    // The force saturates early on: the bounds are active.
    assert!(dynamics.x.chunks(3).take(3).any(|z| (z[2].abs() - 1.0).abs() < 1e-7), "{:?}", &dynamics.x[..9]);
    // z_N's force is free of cost: any value is optimal; the rest is unique.
    assert_close("x", &dynamics.x[..3 * n + 2], &z_form.x[..3 * n + 2], 1e-7);
    assert_close("lam_eq", &dynamics.lam_eq, &z_form.lam_eq, 1e-7);
    assert_close("lam_box", &dynamics.lam_box[..3 * n], &z_form.lam_box[..3 * n], 1e-7);
    assert!((dynamics.info.objective - z_form.info.objective).abs() < 1e-9);

    let rest =
        NumericalFunction::new("di_rest", |[z, _g, _p]| z.get(1).reshape([1]), [Arg::new(3), Arg::new(2), Arg::new(0)])
            .unwrap();
    let (explicit, at_rest) = solve("di_rest", &double_integrator(n).eq_terminal(&rest).unwrap());
    assert!(!explicit, "an added equality term leaves the z-form recursion");
    assert!(at_rest.x[3 * n + 1].abs() < 1e-8, "the terminal velocity is zero");
}

/// Ipopt's iterations on the swing-up at N = 50 from the zero guess (CasADi 3.8, MUMPS;
/// test_ipm.py checks the figure against Ipopt itself).
const CARTPOLE_IPOPT_ITERATIONS: usize = 48;

/// The interior-point solver with the KKT systems factorised stage by stage: the swing-up
/// (negative curvature in every iteration: the inertia correction works on the whole KKT
/// matrix) to the known optimum in Ipopt's iterations, with the SQP solver's multipliers.
#[test]
fn interior_point_by_stages_solves_the_swing_up_like_ipopt() {
    let problem = MultistageProblem::from_dynamics(&cartpole(50)).unwrap();
    let ipm = IpmFunction::multistage("cartpole_ipm", &problem, IpmSettings::default()).unwrap();
    let source = ipm.jit_source().unwrap();
    assert!(source.contains("StageLdl<"), "the KKT matrix is factorised by stages");
    // The usual stage's front (z = (x, u), the four dynamics rows, the previous z) is
    // compiled for its nonzeros.
    assert!(source.contains("static constexpr int kSize = 14, kPivots = 9;"), "the usual front is compiled");
    let solution = ipm.solve(&[0.0; 255], &[0.0; 4], &WarmStart::default()).unwrap();
    assert_eq!(solution.info.status, Status::Solved, "{:?}", solution.info);
    assert!((solution.info.objective - CARTPOLE_OPTIMUM).abs() < 1e-6, "J = {}", solution.info.objective);
    let iterations = solution.info.iterations;
    assert!(
        iterations * 5 <= CARTPOLE_IPOPT_ITERATIONS * 6,
        "{iterations} iterations, Ipopt {CARTPOLE_IPOPT_ITERATIONS}"
    );
    let sqp = solve_cartpole("cartpole_ipm_reference", QpBackend::Riccati, HessianApproximation::Exact);
    // Both solved to their tolerances (1e-8 on the KKT conditions): the points agree to
    // about the square root of the problem's conditioning times that.
    assert_close("x", &solution.x[..250], &sqp.x[..250], 1e-5);
    assert_close("lam_eq", &solution.lam_eq, &sqp.lam_eq, 1e-4);
    assert_close("lam_box", &solution.lam_box, &sqp.lam_box, 1e-4);
}

/// Terminal rows that pin the states the dynamics already fix (the double integrator to rest
/// at the origin in 4 s, and with its last force fixed too): the stage factorisation
/// cannot pivot them in their own stage and passes them to earlier ones. The solutions are
/// the SQP solver's (PIQP), the terminal rows hold; an unreachable terminal state ends
/// `Infeasible`.
#[test]
fn interior_point_by_stages_meets_terminal_and_point_constraints() {
    let n = 40;
    let stage = || [Arg::new(3), Arg::new(2), Arg::new(0)];
    let rest = NumericalFunction::new("di_ipm_rest", |[z, _g, _p]| z.shrink(&[(0, 2)]), stage()).unwrap();
    let problem = double_integrator_z_form(n).eq_terminal(&rest).unwrap();
    // All of z_N: its force too (three rows against the two states the dynamics fix).
    let still = NumericalFunction::new("di_ipm_still", |[z, _g, _p]| z, stage()).unwrap();
    let pinned = double_integrator_z_form(n).eq_terminal(&still).unwrap();
    let x0 = vec![0.0; 3 * (n + 1)];
    let x_init = [1.0, 0.5];
    for (name, problem) in [("di_ipm_terminal", &problem), ("di_ipm_pinned", &pinned)] {
        let ipm = IpmFunction::multistage(name, problem, IpmSettings::default()).unwrap();
        let solution = ipm.solve(&x0, &x_init, &WarmStart::default()).unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        assert!(solution.info.eq_res < 1e-8, "{name}: {:?}", solution.info);
        assert!(solution.x[3 * n].abs() < 1e-8 && solution.x[3 * n + 1].abs() < 1e-8, "{name}: rest at the end");
        let sqp =
            SqpFunction::multistage(&format!("{name}_sqp"), problem, SqpSettings::default(), QpBackend::PiqpSparse)
                .unwrap();
        let reference = sqp.solve(&x0, &x_init, &WarmStart::default()).unwrap();
        assert_eq!(reference.info.status, Status::Solved, "{name}: {:?}", reference.info);
        assert!((solution.info.objective - reference.info.objective).abs() < 1e-7 * (1.0 + reference.info.objective));
        for (i, (u, v)) in solution.x[..3 * n].iter().zip(&reference.x).enumerate() {
            assert!((u - v).abs() < 1e-6, "{name}: x[{i}] {u} vs {v}");
        }
        assert_close(&format!("{name}: lam_eq"), &solution.lam_eq, &reference.lam_eq, 1e-5);
    }
    // The same terminal rows through ControlProblem::terminal_constraints: the same problem.
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("di_t_f", |[x, u, _p]| double_integrator_dynamics(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new("di_t_l", |[x, u, _p]| x.square().sum() + u.square().sum() * 0.1, xup()).unwrap();
    let lf = NumericalFunction::new("di_t_lf", |[x, _p]| x.square().sum() * 10.0, [Arg::new(2), Arg::new(0)]).unwrap();
    let at_rest = NumericalFunction::new("di_t_rest", |[x, _p]| x, [Arg::new(2), Arg::new(0)]).unwrap();
    let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap().stage_cost(&l).unwrap().terminal_cost(&lf).unwrap();
    let ocp = ocp.control_bounds(-1.0, 1.0).unwrap().terminal_constraints(&at_rest).unwrap();
    let from_dynamics = MultistageProblem::from_dynamics(&ocp).unwrap();
    assert_eq!(from_dynamics.neq(), problem.neq());
    let ipm = IpmFunction::multistage("di_ipm_ocp_terminal", &from_dynamics, IpmSettings::default()).unwrap();
    let by_dynamics = ipm.solve(&x0, &x_init, &WarmStart::default()).unwrap();
    let z_form = IpmFunction::multistage("di_ipm_z_terminal", &problem, IpmSettings::default())
        .unwrap()
        .solve(&x0, &x_init, &WarmStart::default())
        .unwrap();
    assert_eq!(by_dynamics.info.status, Status::Solved, "{:?}", by_dynamics.info);
    for (i, (u, v)) in by_dynamics.x[..3 * n].iter().zip(&z_form.x).enumerate() {
        assert!((u - v).abs() < 1e-9, "x[{i}] {u} vs {v}");
    }
    assert_close("lam_eq", &by_dynamics.lam_eq, &z_form.lam_eq, 1e-7);
    let wrong = ControlProblem::new(n, 2, 1, 0, &f).unwrap().terminal_constraints(&l).unwrap_err();
    assert!(wrong.to_string().contains("terminal_constraints_fn must take"), "{wrong}");
    // In 2 s the force (|f| <= 1) cannot stop the mass moving away at 0.5 and bring it back
    // from 1 to rest at 0: the restoration phase converges to a point that violates the
    // terminal rows, and the solve says so.
    let short = double_integrator_z_form(20).eq_terminal(&rest).unwrap();
    let ipm = IpmFunction::multistage("di_ipm_unreachable", &short, IpmSettings::default()).unwrap();
    let solution = ipm.solve(&vec![0.0; 63], &x_init, &WarmStart::default()).unwrap();
    assert_eq!(solution.info.status, Status::Infeasible, "{:?}", solution.info);
    assert!(solution.info.eq_res > 0.1, "{:?}", solution.info);
}

/// Bounds that differ by stage: the double integrator's position held above 0.3 from stage
/// 10 on and the first force free. The interior-point solver by stages and the SQP with
/// both QP backends reach the same solution, in which each bound binds where it holds.
#[test]
fn bounds_that_differ_by_stage_bind_where_they_hold_for_every_solver() {
    let n = 20;
    let (mut lb, mut ub) = (Vec::new(), Vec::new());
    for k in 0..=n {
        lb.extend([
            if k >= 10 { 0.3 } else { f64::NEG_INFINITY },
            f64::NEG_INFINITY,
            if k == 0 { -1e20 } else { -1.0 },
        ]);
        ub.extend([f64::INFINITY, f64::INFINITY, if k == 0 { 1e20 } else { 1.0 }]);
    }
    let problem = double_integrator_z_form(n).bounds(lb, ub).unwrap();
    let (x0, x_init) = (vec![0.0; 3 * (n + 1)], [1.0, 0.5]);
    let ipm =
        IpmFunction::multistage("di_by_stage_ipm", &problem, IpmSettings { tol: 1e-10, ..IpmSettings::default() })
            .unwrap()
            .solve(&x0, &x_init, &WarmStart::default())
            .unwrap();
    assert_eq!(ipm.info.status, Status::Solved, "{:?}", ipm.info);
    let position = |x: &[f64], k: usize| x[3 * k];
    assert!(
        (10..=n).any(|k| position(&ipm.x, k) < 0.3 + 1e-6 && ipm.lam_box[3 * k] < -1e-3),
        "the position bound binds"
    );
    assert!(ipm.x[2].abs() > 1.0, "the first force is free");
    for backend in [QpBackend::Riccati, QpBackend::PiqpSparse] {
        let name = format!("di_by_stage_{backend:?}").to_lowercase();
        let sqp = SqpFunction::multistage(&name, &problem, SqpSettings::default(), backend).unwrap();
        let solution = sqp.solve(&x0, &x_init, &WarmStart::default()).unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        assert_close(&format!("{name}: x"), &solution.x, &ipm.x, 1e-6);
        assert_close(&format!("{name}: lam_box"), &solution.lam_box, &ipm.lam_box, 1e-5);
    }
    // The tables are sized by the horizon: a named one cannot take them.
    let horizon = CodegenIntConstant::new("N_DI_BY_STAGE", 2).unwrap();
    let named = MultistageProblem::with_horizon(&horizon, 3, 2, 0).unwrap();
    let err = named.bounds((0..9).map(f64::from).collect::<Vec<f64>>(), 10.0).unwrap_err();
    assert!(err.to_string().contains("give the horizon N as a number"), "{err}");
}

/// Inequalities on the first and the last stage: the double integrator's first force within
/// ±0.3 and its final position at most 0.3 (it ends at 0.6 without), written as `ineq_initial` and `ineq_terminal`
/// rows, solve as the same limits written as bounds at those stages, with each row's
/// multiplier the bound's, by the interior-point solver by stages and the SQP with both QP
/// backends; the rows' multipliers come initial first, terminal last. An unreachable terminal
/// set ends `Infeasible`.
#[test]
fn first_and_last_stage_inequalities_bind_as_bounds_there_for_every_solver() {
    let n = 20;
    let rows = double_integrator_first_and_last_rows(n);
    assert_eq!(rows.nineq(), 2);
    let (mut lb, mut ub) = (Vec::new(), Vec::new());
    for k in 0..=n {
        let force_limit = if k == 0 { 0.3 } else { 1.0 };
        lb.extend([f64::NEG_INFINITY, f64::NEG_INFINITY, -force_limit]);
        ub.extend([if k == n { 0.3 } else { f64::INFINITY }, f64::INFINITY, force_limit]);
    }
    let bounds = double_integrator_z_form(n).bounds(lb, ub).unwrap();
    let (x0, x_init) = (vec![0.0; 3 * (n + 1)], [1.0, 0.5]);
    let settings = IpmSettings { tol: 1e-10, ..IpmSettings::default() };
    let solve_ipm = |name: &str, problem: &MultistageProblem| {
        let solution = IpmFunction::multistage(name, problem, settings.clone())
            .unwrap()
            .solve(&x0, &x_init, &WarmStart::default())
            .unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        solution
    };
    let want = solve_ipm("fl_bounds_ipm", &bounds);
    let (first_force, last_position) = (2, 3 * n);
    assert!(want.lam_box[first_force].abs() > 1e-3 && want.lam_box[last_position].abs() > 1e-3, "both limits bind");
    let check = |name: &str, got: &Solution| {
        assert_close(&format!("{name}: x"), &got.x, &want.x, 1e-6);
        let lam = [want.lam_box[first_force], want.lam_box[last_position]];
        assert_close(&format!("{name}: lam_ineq"), &got.lam_ineq, &lam, 1e-5);
    };
    check("fl_rows_ipm", &solve_ipm("fl_rows_ipm", &rows));
    for backend in [QpBackend::Riccati, QpBackend::PiqpSparse] {
        let name = format!("fl_rows_{backend:?}").to_lowercase();
        let sqp = SqpFunction::multistage(&name, &rows, SqpSettings::default(), backend).unwrap();
        let solution = sqp.solve(&x0, &x_init, &WarmStart::default()).unwrap();
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        check(&name, &solution);
    }
    // In half the time the final position cannot come below 0.3 (at least 1.0 with the
    // force at -1 throughout): an unreachable terminal set ends INFEASIBLE.
    let short = double_integrator_first_and_last_rows(10);
    let x0 = vec![0.0; 33];
    let ipm = IpmFunction::multistage("fl_short_ipm", &short, IpmSettings::default()).unwrap();
    let status = ipm.solve(&x0, &x_init, &WarmStart::default()).unwrap().info.status;
    assert_eq!(status, Status::Infeasible, "interior point");
    let sqp = SqpFunction::multistage("fl_short_sqp", &short, SqpSettings::default(), QpBackend::Riccati).unwrap();
    let status = sqp.solve(&x0, &x_init, &WarmStart::default()).unwrap().info.status;
    assert_eq!(status, Status::Infeasible, "SQP");
}

/// The z-form double integrator with its first force within ±0.3 and its final position at
/// most 0.3 as inequality rows on the first and the last stage.
fn double_integrator_first_and_last_rows(n: usize) -> MultistageProblem {
    let stage = || [Arg::new(3), Arg::new(2), Arg::new(0)];
    let force = NumericalFunction::new("fl_force", |[z, _g, _p]| z.shrink(&[(2, 3)]), stage()).unwrap();
    let position = NumericalFunction::new("fl_position", |[z, _g, _p]| z.shrink(&[(0, 1)]), stage()).unwrap();
    let rows = double_integrator_z_form(n).ineq_initial(&force, -0.3, 0.3).unwrap();
    rows.ineq_terminal(&position, f64::NEG_INFINITY, 0.3).unwrap()
}

/// The first and last stage's inequalities get the errors the stage inequalities get.
#[test]
fn first_and_last_stage_inequalities_get_errors_that_say_what_to_fix() {
    let stage = || [Arg::new(3), Arg::new(0), Arg::new(0)];
    let two = NumericalFunction::new("fle_two", |[z, _g, _p]| z.shrink(&[(0, 2)]), stage()).unwrap();
    let problem = || MultistageProblem::new(5, 3, 0, 0).unwrap();
    let e = problem().ineq_initial(&two, vec![0.0; 3], 1.0).unwrap_err().to_string();
    assert!(e.contains("`ineq_initial_lb`: has 3 entries, expected rows = 2"), "{e}");
    let e = problem().ineq_terminal(&two, 1.0, [0.0, 2.0]).unwrap_err().to_string();
    assert!(e.contains("ineq_terminal_lb") && e.contains("no value satisfies both"), "{e}");
    let coupled = NumericalFunction::new(
        "fle_coupled",
        |[z, zn, _g, _p]| &z - &zn,
        [Arg::new(3), Arg::new(3), Arg::new(0), Arg::new(0)],
    )
    .unwrap();
    let e = problem().ineq_terminal(&coupled, 0.0, 1.0).unwrap_err().to_string();
    assert!(e.contains("ineq_terminal_fn must take (z, p_global, p_i)"), "{e}");
    // The dynamics form's terminal rows take (x, p).
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("fle_f", |[x, u, _p]| &x + &u, xup()).unwrap();
    let ocp = || ControlProblem::new(5, 2, 1, 0, &f).unwrap();
    let e = ocp().terminal_inequalities(&f, 0.0, 1.0).unwrap_err().to_string();
    assert!(e.contains("terminal_ineq_fn must take (f64 array of shape [2], f64 array of shape [0])"), "{e}");
    let end = NumericalFunction::new("fle_end", |[x, _p]| x.clone(), [Arg::new(2), Arg::new(0)]).unwrap();
    let wrong = ocp().terminal_inequalities(&end, vec![0.0; 3], 1.0).unwrap();
    let e = MultistageProblem::from_dynamics(&wrong).unwrap_err().to_string();
    assert!(e.contains("`terminal_ineq_lb`: has 3 entries, expected rows = 2"), "{e}");
}

/// A QP whose solution touches no bound is solved without its inequalities (one
/// factorisation): from a small initial state the double integrator's force stays inside
/// [-1, 1], and one SQP step (the problem is a QP) is the solution. From a large one the
/// force saturates and the interior-point iterations run. Both recursions, checked against
/// PIQP on the same problems.
#[test]
fn qps_with_no_active_bound_take_one_factorisation_and_agree_with_piqp() {
    let n = 15;
    let settings = SqpSettings { max_iter: 30, ..SqpSettings::default() };
    for (what, problem) in [("di_inactive", double_integrator(n)), ("di_inactive_z", double_integrator_z_form(n))] {
        let solver = |name: &str, backend| SqpFunction::multistage(name, &problem, settings.clone(), backend).unwrap();
        let (riccati, piqp) =
            (solver(what, QpBackend::Riccati), solver(&format!("{what}_piqp"), QpBackend::PiqpSparse));
        for (x_init, saturates) in [([0.1, -0.05], false), ([5.0, 0.0], true)] {
            let guess = vec![0.0; 3 * (n + 1)];
            let a = riccati.solve(&guess, &x_init, &WarmStart::default()).unwrap();
            let b = piqp.solve(&guess, &x_init, &WarmStart::default()).unwrap();
            assert_eq!((a.info.status, b.info.status), (Status::Solved, Status::Solved), "{what}");
            let forces: Vec<f64> = a.x.chunks(3).take(n).map(|z| z[2]).collect();
            let at_bound = forces.iter().any(|u| (u.abs() - 1.0).abs() < 1e-6);
            assert_eq!(at_bound, saturates, "{what} from {x_init:?}: forces {forces:?}");
            if saturates {
                assert!(a.info.qp_iterations > 2 * a.info.iterations, "{what}: {:?}", a.info);
            } else if what == "di_inactive" {
                assert_eq!((a.info.iterations, a.info.qp_iterations), (1, 1), "{what}: {:?}", a.info);
                assert!(a.lam_box.iter().all(|&l| l == 0.0), "no bound multiplier");
                // The whole Hessian's inertia corrected: no shift where none is needed, so the
                // QP's step is its Newton step too (with the regularisation on every diagonal
                // it took two).
                let whole = SqpSettings { convexify_by_stage: false, ..settings.clone() };
                let whole = SqpFunction::multistage("di_inactive_whole", &problem, whole, QpBackend::Riccati).unwrap();
                let c = whole.solve(&guess, &x_init, &WarmStart::default()).unwrap();
                assert_eq!((c.info.status, c.info.iterations), (Status::Solved, 1), "{what}: {:?}", c.info);
                assert_close("x (whole Hessian)", &c.x, &a.x, 1e-9);
            }
            // (The z-form keeps z_N's force as a variable without curvature, held by its
            // bounds alone: without them its QP has no solution, and the interior point runs.)
            for (name, u, v) in
                [("x", &a.x, &b.x), ("lam_eq", &a.lam_eq, &b.lam_eq), ("lam_box", &a.lam_box, &b.lam_box)]
            {
                // z_N's force is free of cost and bounds alike: any value in [-1, 1] is optimal.
                let len = if name == "lam_eq" { u.len() } else { 3 * n + 2 };
                for i in 0..len {
                    assert!(
                        (u[i] - v[i]).abs() <= 1e-6 * (1.0 + v[i].abs()),
                        "{what} {name}[{i}]: {} vs {}",
                        u[i],
                        v[i]
                    );
                }
            }
        }
    }
}

/// Bad numbers through the batched stage functions: a stage cost that is not finite at the
/// guess (log 0) is reported as NaN detected, a NaN in the initial state or the guess as
/// invalid input; neither crashes nor returns a finite-looking answer.
#[test]
fn non_finite_stage_values_and_inputs_are_reported() {
    let n = 6;
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("nf_f", |[x, u, _p]| double_integrator_dynamics(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new("nf_l", |[x, u, _p]| x.get(0).square().log() + u.square().sum(), xup()).unwrap();
    let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap().stage_cost(&l).unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    let solver = SqpFunction::multistage("nf_solver", &problem, SqpSettings::default(), QpBackend::Riccati).unwrap();
    let guess = vec![0.0; 3 * (n + 1)];
    let at_log_zero = solver.solve(&guess, &[1.0, 0.0], &WarmStart::default()).unwrap();
    assert_eq!(at_log_zero.info.status, Status::NanDetected, "{:?}", at_log_zero.info);
    let good = solver.solve(&vec![0.5; 3 * (n + 1)], &[1.0, 0.0], &WarmStart::default()).unwrap();
    assert_ne!(good.info.status, Status::NanDetected, "{:?}", good.info);
    let nan_state = solver.solve(&vec![0.5; 3 * (n + 1)], &[f64::NAN, 0.0], &WarmStart::default()).unwrap();
    assert_eq!(nan_state.info.status, Status::InvalidInput);
    let mut nan_guess = vec![0.5; 3 * (n + 1)];
    nan_guess[4] = f64::NAN;
    let bad = solver.solve(&nan_guess, &[1.0, 0.0], &WarmStart::default()).unwrap();
    assert_eq!(bad.info.status, Status::InvalidInput);
    // The result names the argument at fault.
    assert_eq!((bad.info.invalid_input, nan_state.info.invalid_input), (Some("x0"), Some("p")));
    assert_eq!(good.info.invalid_input, None);
    let nan_multiplier = vec![f64::NAN; solver.nx()];
    let warm = WarmStart { lam_box: Some(&nan_multiplier), ..WarmStart::default() };
    let bad = solver.solve(&vec![0.5; 3 * (n + 1)], &[1.0, 0.0], &warm).unwrap();
    assert_eq!((bad.info.status, bad.info.invalid_input), (Status::InvalidInput, Some("lam_box0")));
}

/// With N = 1 the path constraints hold at the one step (they were dropped), and their
/// per-row bounds are checked against the constraint's rows.
#[test]
fn one_step_problems_keep_their_path_constraints() {
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("one_f", |[x, u, _p]| double_integrator_dynamics(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new("one_l", |[x, u, _p]| x.square().sum() + u.square().sum(), xup()).unwrap();
    // u_0 >= 0.5 and x_0[0] + u_0 <= 3 as two rows.
    let h = NumericalFunction::new(
        "one_h",
        |[x, u, _p]| Tensor::cat(&[u.clone(), x.slice(anvil::ndarray::s![0..1]) + &u], 0),
        xup(),
    )
    .unwrap();
    let ocp = ControlProblem::new(1, 2, 1, 0, &f)
        .unwrap()
        .stage_cost(&l)
        .unwrap()
        .path_constraints(&h, vec![0.5, f64::NEG_INFINITY], vec![f64::INFINITY, 3.0])
        .unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    assert_eq!(problem.nineq(), 2, "the path constraints act on step 0");
    let solver = SqpFunction::multistage("one_step", &problem, SqpSettings::default(), QpBackend::Riccati).unwrap();
    let solution = solver.solve(&[0.0; 6], &[1.0, 0.0], &WarmStart::default()).unwrap();
    assert_eq!(solution.info.status, Status::Solved, "{:?}", solution.info);
    assert!((solution.x[2] - 0.5).abs() < 1e-8, "u_0 sits on its path bound: {:?}", solution.x);
    // Bounds of the wrong length name the rows they must match.
    let wrong = ControlProblem::new(1, 2, 1, 0, &f).unwrap().path_constraints(&h, vec![0.0; 3], 1.0).unwrap();
    let e = MultistageProblem::from_dynamics(&wrong).unwrap_err().to_string();
    assert!(e.contains("has 3 entries, expected rows = 2"), "{e}");
}

/// Sizes are checked before anything proportional to them is built: a horizon of a
/// billion stages is an error naming the memory it needs, not an abort.
#[test]
fn huge_horizons_are_refused_before_they_are_built() {
    let cost =
        NumericalFunction::new("h_c", |[z, _g, _p]| z.square().sum(), [Arg::new(2), Arg::new(0), Arg::new(0)]).unwrap();
    let problem = MultistageProblem::new(1_000_000_000 - 1, 2, 0, 0).unwrap().cost_stage(&cost).unwrap();
    for backend in [QpBackend::Riccati, QpBackend::PiqpSparse] {
        let e = SqpFunction::multistage("h_solver", &problem, SqpSettings::default(), backend).unwrap_err();
        assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
        assert!(e.to_string().contains("N = 999999999"), "{e}");
    }
    let e = IpmFunction::multistage("h_ipm", &problem, IpmSettings::default()).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }) && e.to_string().contains("N = 999999999"), "{e}");
    // Few narrow stages, but so many path constraints per stage that their dense KKT fronts
    // would not fit.
    let stage = || [Arg::new(2), Arg::new(0), Arg::new(0)];
    let many = NumericalFunction::new("h_many", |[z, _g, _p]| Tensor::zeros([100_000]) + z.sum(), stage()).unwrap();
    let problem = MultistageProblem::new(2, 2, 0, 0).unwrap().cost_stage(&cost).unwrap();
    let problem = problem.ineq_stage(&many, -1.0, 1.0).unwrap();
    let e = IpmFunction::multistage("h_ipm_rows", &problem, IpmSettings::default()).unwrap_err();
    assert!(e.to_string().contains("stage-wise KKT factorisation"), "{e}");
}

#[test]
fn generated_multistage_module_compiles_cleanly_runs_under_sanitizers_and_never_allocates() {
    let horizon = CodegenIntConstant::new("N_CARTPOLE", 20).unwrap();
    let ocp = cartpole_with(|f| ControlProblem::with_horizon(&horizon, 4, 1, 0, f).unwrap());
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    let settings = SqpSettings { max_iter: 200, ..SqpSettings::default() };
    let exact = SqpFunction::multistage("aot_cartpole", &problem, settings.clone(), QpBackend::Riccati).unwrap();
    let gn_settings = SqpSettings { hessian_approximation: HessianApproximation::GaussNewton, ..settings };
    let gn = SqpFunction::multistage("aot_cartpole_gn", &problem, gn_settings, QpBackend::Riccati).unwrap();
    // The z-form's block-tridiagonal recursion (the cart-pole has explicit dynamics).
    let z_form =
        SqpFunction::multistage("aot_di_z_form", &double_integrator_z_form(10), settings.clone(), QpBackend::Riccati)
            .unwrap();
    let zeros = vec![0.0; 105];
    let x_init = [0.1, 0.0, 0.0, 0.0];
    let (di_zeros, di_init) = (vec![0.0; 33], [1.0, 0.5]);
    // The interior-point solver, its KKT systems factorised by stages.
    let ipm = IpmFunction::multistage("aot_cartpole_ipm", &problem, IpmSettings::default()).unwrap();
    // A free final time: the lifted solver behind the user's layout.
    let minimum_time = MultistageProblem::from_dynamics(&minimum_time(20)).unwrap();
    let shared = IpmFunction::multistage("aot_minimum_time", &minimum_time, IpmSettings::default()).unwrap();
    let shared_sqp =
        SqpFunction::multistage("aot_minimum_time_sqp", &minimum_time, settings.clone(), QpBackend::Riccati).unwrap();
    let (mt_guess, mt_init): (Vec<f64>, [f64; 2]) =
        ((0..64).map(|i| if i == 63 { 2.0 } else { 0.0 }).collect(), [0.0; 2]);
    // Inequality rows on the first and the last stage (terms at different stages).
    let rows = double_integrator_first_and_last_rows(20);
    let rows_zeros = vec![0.0; 63];
    let rows_ipm = IpmFunction::multistage("aot_di_rows_ipm", &rows, IpmSettings::default()).unwrap();
    let rows_sqp = SqpFunction::multistage("aot_di_rows_sqp", &rows, settings.clone(), QpBackend::Riccati).unwrap();
    let runs: Vec<Run> = vec![
        (&exact, &zeros, &x_init),
        (&gn, &zeros, &x_init),
        (&z_form, &di_zeros, &di_init),
        (&ipm, &zeros, &x_init),
        (&shared, &mt_guess, &mt_init),
        (&shared_sqp, &mt_guess, &mt_init),
        (&rows_ipm, &rows_zeros, &di_init),
        (&rows_sqp, &rows_zeros, &di_init),
    ];
    let dir = std::env::temp_dir().join(format!("anvil_multistage_module_{}", std::process::id()));
    let items: Vec<&dyn ModuleItem> = vec![&exact, &gn, &z_form, &ipm, &shared, &shared_sqp, &rows_ipm, &rows_sqp];
    let (hpp, cpp) = generate_module("ocpmod", &items, &dir).unwrap();
    let header = std::fs::read_to_string(hpp).unwrap();
    let source = std::fs::read_to_string(cpp).unwrap();
    assert!(header.contains("N_CARTPOLE = 20"), "the horizon is declared");
    assert!(source.contains("kStages = ::N_CARTPOLE + 1"), "the stage loops use the constant");
    assert!(!source.contains("piqp"), "the Riccati backend needs no PIQP");
    // Each run twice (sanitised, allocation-counted), in both builds.
    let parameters = runs.iter().flat_map(|r| [r.2, r.2]).cycle();
    for (x, p) in check_module_against_jit(&dir, "ocpmod", &runs, 1e-9).iter().zip(parameters) {
        assert!((x[0] - p[0]).abs() < 1e-9, "x_0 is the parameter");
    }
    if std::env::var_os("ANVIL_KEEP").is_none() {
        std::fs::remove_dir_all(dir).unwrap();
    }
}

/// Wide stages: the Riccati factorisation's per-stage scratch (a stage block's nz² doubles)
/// lives in the workspace, not on the stack (at nz = 1,100 it took 9.7 MB and overflowed an
/// 8 MB stack: SIGSEGV). Here 330 variables (871 KB of scratch) solve on a thread with a
/// 512 KB stack, with explicit dynamics and in the z-form.
#[test]
fn wide_stages_keep_their_scratch_off_the_stack() {
    let (nx, nu) = (300, 30);
    let nz = nx + nu;
    assert!(nz * nz * 8 > 512 * 1024, "a stage block would not fit on the stack");
    let xup = || [Arg::new(nx), Arg::new(nu), Arg::new(0)];
    let f = NumericalFunction::new("wide_f", |[x, u, _p]| &x * 0.5 + u.sum() * 0.01, xup()).unwrap();
    let l = NumericalFunction::new("wide_l", |[x, u, _p]| (&x - 1.0).square().sum() + u.square().sum(), xup()).unwrap();
    let ocp = ControlProblem::new(1, nx, nu, 0, &f).unwrap().stage_cost(&l).unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    let dynamics = SqpFunction::multistage("wide_dyn", &problem, SqpSettings::default(), QpBackend::Riccati).unwrap();
    dynamics.compile().unwrap();
    let stage = [Arg::new(nz), Arg::new(0), Arg::new(0)];
    let c = NumericalFunction::new("wide_c", |[z, _g, _p]| (&z - 1.0).square().sum(), stage).unwrap();
    let problem = MultistageProblem::new(1, nz, 0, 0).unwrap().cost_initial(&c).unwrap().cost_terminal(&c).unwrap();
    let z_form = SqpFunction::multistage("wide_z", &problem, SqpSettings::default(), QpBackend::Riccati).unwrap();
    z_form.compile().unwrap();
    let small_stack = std::thread::Builder::new().stack_size(512 * 1024);
    let solutions = small_stack
        .spawn(move || {
            let by_dynamics = dynamics.solve(&vec![0.0; 2 * nz], &vec![1.0; nx], &WarmStart::default()).unwrap();
            let by_stages = z_form.solve(&vec![0.0; 2 * nz], &[], &WarmStart::default()).unwrap();
            (by_dynamics, by_stages)
        })
        .unwrap()
        .join()
        .expect("the solves fit in a 512 KB stack");
    assert_eq!(solutions.0.info.status, Status::Solved, "{:?}", solutions.0.info);
    assert_eq!(solutions.1.info.status, Status::Solved, "{:?}", solutions.1.info);
    assert!(solutions.1.x.iter().all(|v| (v - 1.0).abs() < 1e-8));
}

/// A usual stage front wider than the compiled fronts' limit (here 98 positions: 34
/// variables, 30 dynamics rows, the previous stage's 34) is factorised by the run-time front:
/// the module compiles without expanding its pattern, and the interior-point solver agrees
/// with the SQP solver.
#[test]
fn a_usual_front_too_wide_to_compile_is_factorised_at_run_time() {
    let (nx, nu) = (30, 4);
    let xup = || [Arg::new(nx), Arg::new(nu), Arg::new(0)];
    let f =
        NumericalFunction::new("wide_ipm_f", |[x, u, _p]| &x * 0.9 + (x.sin() * 0.05) + u.sum() * 0.1, xup()).unwrap();
    let l =
        NumericalFunction::new("wide_ipm_l", |[x, u, _p]| (&x - 0.5).square().sum() + u.square().sum(), xup()).unwrap();
    let ocp = ControlProblem::new(3, nx, nu, 0, &f).unwrap().stage_cost(&l).unwrap().control_bounds(-1.0, 1.0).unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    let ipm = IpmFunction::multistage("wide_ipm", &problem, IpmSettings::default()).unwrap();
    assert!(ipm.jit_source().unwrap().contains("using UsualFront = anvil_ipm::NoCompiledFront;"));
    let sqp = SqpFunction::multistage("wide_ipm_sqp", &problem, SqpSettings::default(), QpBackend::Riccati).unwrap();
    let (nv, x_init) = (problem.nvars(), vec![0.3; nx]);
    let by_ipm = ipm.solve(&vec![0.0; nv], &x_init, &WarmStart::default()).unwrap();
    let by_sqp = sqp.solve(&vec![0.0; nv], &x_init, &WarmStart::default()).unwrap();
    assert_eq!(by_ipm.info.status, Status::Solved, "{:?}", by_ipm.info);
    assert_eq!(by_sqp.info.status, Status::Solved, "{:?}", by_sqp.info);
    assert_close("x", &by_ipm.x, &by_sqp.x, 1e-6);
}

/// Gauss-Newton keeps only the stage costs' Hessian: with linear costs that is nothing, and
/// the solver says so when it is built (not with curved costs, nor with the exact Hessian).
#[test]
fn gauss_newton_on_linear_costs_warns() {
    let stage = || [Arg::new(2), Arg::new(0), Arg::new(0)];
    let linear = NumericalFunction::new("gn_linear", |[z, _g, _p]| z.sum(), stage()).unwrap();
    let curved = NumericalFunction::new("gn_curved", |[z, _g, _p]| z.square().sum(), stage()).unwrap();
    let gn = SqpSettings { hessian_approximation: HessianApproximation::GaussNewton, ..SqpSettings::default() };
    let build = |cost: &NumericalFunction, settings: &SqpSettings, name: &str| {
        let problem = MultistageProblem::new(3, 2, 0, 0).unwrap().cost_stage(cost).unwrap().bounds(-1.0, 1.0).unwrap();
        SqpFunction::multistage(name, &problem, settings.clone(), QpBackend::Riccati).unwrap()
    };
    let warned = build(&linear, &gn, "gn_warned");
    assert_eq!(warned.warnings().len(), 1);
    assert!(warned.warnings()[0].contains("HessianApproximation::Exact"), "{:?}", warned.warnings());
    assert!(build(&curved, &gn, "gn_fine").warnings().is_empty());
    assert!(build(&linear, &SqpSettings::default(), "gn_exact").warnings().is_empty());
    // The interior-point solver says the same.
    let ipm_gn = IpmSettings { hessian_approximation: HessianApproximation::GaussNewton, ..IpmSettings::default() };
    let problem = MultistageProblem::new(3, 2, 0, 0).unwrap().cost_stage(&linear).unwrap().bounds(-1.0, 1.0).unwrap();
    let warned = IpmFunction::multistage("gn_ipm_warned", &problem, ipm_gn).unwrap();
    assert!(warned.warnings().len() == 1 && warned.warnings()[0].contains("Exact"), "{:?}", warned.warnings());
    let exact = IpmFunction::multistage("gn_ipm_exact", &problem, IpmSettings::default()).unwrap();
    assert!(exact.warnings().is_empty());
}

/// The double integrator from rest at 0 to rest at 1 in the least time `T` (a variable
/// shared by every stage: `x_{k+1} = x_k + T/N·f(x_k, u_k)`), |u| ≤ 1, with a small cost on
/// the force so that the optimum is unique.
fn minimum_time(n: usize) -> ControlProblem {
    let args = || [Arg::new(2), Arg::new(1), Arg::new(1), Arg::new(0)];
    let h = 1.0 / n as f64;
    let f = NumericalFunction::new(
        "mt_f",
        move |[x, u, t, _p]| {
            let dt = t.get(0) * h;
            Tensor::stack(&[x.get(0) + x.get(1) * &dt, x.get(1) + u.get(0) * &dt], 0)
        },
        args(),
    )
    .unwrap();
    let l = NumericalFunction::new("mt_l", |[_x, u, _t, _p]| u.square().sum() * 0.01, args()).unwrap();
    let xsp = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let lf = NumericalFunction::new("mt_lf", |[_x, t, _p]| t.get(0), xsp()).unwrap();
    let target =
        NumericalFunction::new("mt_target", |[x, _t, _p]| x - Tensor::from_array(&ndarray::array![1.0, 0.0]), xsp())
            .unwrap();
    let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap();
    assert_eq!(ocp.shared_count(), 1);
    let ocp = ocp.stage_cost(&l).unwrap().terminal_cost(&lf).unwrap().terminal_constraints(&target).unwrap();
    ocp.control_bounds(-1.0, 1.0).unwrap().shared_bounds(0.5, 10.0).unwrap()
}

/// The same problem with `T ≥ t_lb` carried by hand as a third state, held by the dynamics.
fn minimum_time_by_hand(n: usize, t_lb: f64) -> MultistageProblem {
    let args = || [Arg::new(3), Arg::new(1), Arg::new(0)];
    let h = 1.0 / n as f64;
    let f = NumericalFunction::new(
        "mth_f",
        move |[x, u, _p]| {
            let dt = x.get(2) * h;
            Tensor::stack(&[x.get(0) + x.get(1) * &dt, x.get(1) + u.get(0) * &dt, x.get(2)], 0)
        },
        args(),
    )
    .unwrap();
    let l = NumericalFunction::new("mth_l", |[_x, u, _p]| u.square().sum() * 0.01, args()).unwrap();
    let xp = || [Arg::new(3), Arg::new(0)];
    let lf = NumericalFunction::new("mth_lf", |[x, _p]| x.get(2), xp()).unwrap();
    let target = NumericalFunction::new(
        "mth_target",
        |[x, _p]| x.shrink(&[(0, 2)]) - Tensor::from_array(&ndarray::array![1.0, 0.0]),
        xp(),
    )
    .unwrap();
    let ocp = ControlProblem::new(n, 3, 1, 0, &f).unwrap();
    let ocp = ocp.stage_cost(&l).unwrap().terminal_cost(&lf).unwrap().terminal_constraints(&target).unwrap();
    let ocp = ocp.control_bounds(-1.0, 1.0).unwrap();
    let ocp = ocp.state_bounds([-1e20, -1e20, t_lb], [1e20, 1e20, 10.0]).unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    // The initial time is free: the initial rows fix position and velocity only.
    let start = NumericalFunction::new(
        "mth_start",
        |[z, g, _p]| z.shrink(&[(0, 2)]) - g.shrink(&[(0, 2)]),
        [Arg::new(4), Arg::new(3), Arg::new(0)],
    )
    .unwrap();
    problem.eq_initial(&start).unwrap()
}

/// A free final time as a shared variable: every solver reaches the optimum of the problem
/// with the time carried by hand as a state (x, T and the multipliers of the user's rows),
/// from the user's layout `[z_0, …, z_N, T]`; where T's bound binds, its multiplier is the
/// sum of the hand-written problem's (one per stage's T).
#[test]
fn a_shared_free_final_time_solves_as_the_time_carried_by_hand() {
    let n = 20;
    let problem = MultistageProblem::from_dynamics(&minimum_time(n)).unwrap();
    assert_eq!((problem.nvars(), problem.neq()), (3 * (n + 1) + 1, 2 * (n + 1) + 2));
    let by_hand = minimum_time_by_hand(n, 0.5);
    let settings = IpmSettings { tol: 1e-10, ..IpmSettings::default() };
    let guess: Vec<f64> = (0..=n).flat_map(|_| [0.0, 0.0, 0.0]).chain([2.0]).collect();
    let hand_guess: Vec<f64> = (0..=n).flat_map(|_| [0.0, 0.0, 2.0, 0.0]).collect();
    let x_init = [0.0, 0.0];
    let solve_by_hand = |name: &str, problem: &MultistageProblem| {
        IpmFunction::multistage(name, problem, settings.clone())
            .unwrap()
            .solve(&hand_guess, &[0.0, 0.0, 0.0], &WarmStart::default())
            .unwrap()
    };
    let reference = solve_by_hand("mt_by_hand", &by_hand);
    assert_eq!(reference.info.status, Status::Solved, "{:?}", reference.info);
    let time = reference.x[2];
    assert!(time > 1.9 && time < 2.5, "T = {time}");
    // The reference in the user's layout: (p, v, u) by stage, then T.
    let expected: Vec<f64> = reference.x.chunks(4).flat_map(|z| [z[0], z[1], z[3]]).chain([time]).collect::<Vec<f64>>();
    let check = |name: &str, solution: &Solution| {
        assert_eq!(solution.info.status, Status::Solved, "{name}: {:?}", solution.info);
        assert_close(&format!("{name}: x"), &solution.x, &expected, 1e-6);
        // The dynamics' multipliers: the hand-written rows of p and v at each step.
        let dynamics = |lam: &[f64], rows: usize| {
            lam[2..2 + n * rows].chunks(rows).flat_map(|r| [r[0], r[1]]).collect::<Vec<f64>>()
        };
        assert_close(&format!("{name}: lam_eq"), &dynamics(&solution.lam_eq, 2), &dynamics(&reference.lam_eq, 3), 1e-5);
        assert!(solution.lam_box[3 * (n + 1)].abs() < 1e-8, "{name}: T's bounds are inactive");
    };
    let ipm = IpmFunction::multistage("mt_ipm", &problem, settings.clone()).unwrap();
    check("ipm", &ipm.solve(&guess, &x_init, &WarmStart::default()).unwrap());
    for backend in [QpBackend::Riccati, QpBackend::PiqpSparse] {
        let name = format!("mt_sqp_{backend:?}").to_lowercase();
        let sqp =
            SqpFunction::multistage(&name, &problem, SqpSettings { max_iter: 200, ..SqpSettings::default() }, backend)
                .unwrap();
        check(&name, &sqp.solve(&guess, &x_init, &WarmStart::default()).unwrap());
    }
    // A bound that binds: T ≥ 2.5 holds with T = 2.5 and a negative multiplier.
    let slow = MultistageProblem::from_dynamics(&minimum_time(n).shared_bounds(2.5, 10.0).unwrap()).unwrap();
    let solution = IpmFunction::multistage("mt_ipm_slow", &slow, settings.clone())
        .unwrap()
        .solve(&guess, &x_init, &WarmStart::default())
        .unwrap();
    assert_eq!(solution.info.status, Status::Solved, "{:?}", solution.info);
    let t = 3 * (n + 1);
    assert!((solution.x[t] - 2.5).abs() < 1e-6 && solution.lam_box[t] < -1e-3, "{:?}", &solution.x[t..]);
    let slow_by_hand = solve_by_hand("mt_by_hand_slow", &minimum_time_by_hand(n, 2.5));
    let summed: f64 = slow_by_hand.lam_box.chunks(4).map(|z| z[2]).sum();
    assert!((solution.lam_box[t] - summed).abs() < 1e-6 * summed.abs().max(1.0), "{} vs {summed}", solution.lam_box[t]);
}

/// Shared variables come before the functions that take them, with bounds of their size;
/// functions without `s` are refused with the signature they need.
#[test]
fn shared_variables_get_errors_that_say_what_to_fix() {
    let stage =
        NumericalFunction::new("sv_cost", |[z, _g, _p]| z.square().sum(), [Arg::new(2), Arg::new(0), Arg::new(0)])
            .unwrap();
    let late = MultistageProblem::new(5, 2, 0, 0).unwrap().cost_stage(&stage).unwrap().shared(1, 0.0, 1.0).unwrap_err();
    assert!(late.to_string().contains("before the functions"), "{late}");
    let shared = || MultistageProblem::new(5, 2, 0, 0).unwrap().shared(2, 0.0, 1.0).unwrap();
    let without_s = shared().cost_stage(&stage).unwrap_err();
    assert!(without_s.to_string().contains("(z, s, p_global, p_i)"), "{without_s}");
    let lengths = MultistageProblem::new(5, 2, 0, 0).unwrap().shared(2, vec![0.0; 3], 1.0).unwrap_err();
    assert!(lengths.to_string().contains("shared_lb") && lengths.to_string().contains("expected 2"), "{lengths}");
    let crossed = MultistageProblem::new(5, 2, 0, 0).unwrap().shared(1, 2.0, 1.0).unwrap_err();
    assert!(crossed.to_string().contains("shared_lb"), "{crossed}");
    assert_eq!(shared().nvars(), 6 * 2 + 2);
    let f = NumericalFunction::new("sv_f", |[x, u, _p]| &x + &u, [Arg::new(1), Arg::new(1), Arg::new(0)]).unwrap();
    let no_shared = ControlProblem::new(5, 1, 1, 0, &f).unwrap().shared_bounds(0.0, 1.0).unwrap_err();
    assert!(no_shared.to_string().contains("no shared variables"), "{no_shared}");
    let huge = MultistageProblem::new(1000, 2, 0, 0).unwrap().shared(usize::MAX / 4, 0.0, 1.0);
    assert!(huge.is_err());
}

/// `initial_constraints`: rows on the first stage in place of `x_0 = x_init` (the position
/// starts at 1, the velocity is free). Both solvers reach the optimum of the same problem
/// written with a z-form initial term, multipliers included; there is no x_init parameter.
#[test]
fn initial_constraints_replace_the_initial_state() {
    let n = 20;
    let xup = || [Arg::new(2), Arg::new(1), Arg::new(0)];
    let f = NumericalFunction::new("ic_f", |[x, u, _p]| double_integrator_dynamics(&x, &u), xup()).unwrap();
    let l = NumericalFunction::new("ic_l", |[x, u, _p]| x.square().sum() + u.square().sum() * 0.1, xup()).unwrap();
    let start = NumericalFunction::new("ic_start", |[x, _u, _p]| x.shrink(&[(0, 1)]) - 1.0, xup()).unwrap();
    let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap().stage_cost(&l).unwrap().control_bounds(-1.0, 1.0).unwrap();
    let ocp = ocp.initial_constraints(&start).unwrap();
    let problem = MultistageProblem::from_dynamics(&ocp).unwrap();
    assert_eq!((problem.np(), problem.neq()), (0, 1 + 2 * n));
    // By hand: the dynamics form with x_init, its initial rows replaced by the position's.
    let by_hand = {
        let ocp = ControlProblem::new(n, 2, 1, 0, &f).unwrap().stage_cost(&l).unwrap();
        let start = NumericalFunction::new(
            "ic_hand_start",
            |[z, _g, _p]| z.shrink(&[(0, 1)]) - 1.0,
            [Arg::new(3), Arg::new(2), Arg::new(0)],
        )
        .unwrap();
        let problem = MultistageProblem::from_dynamics(&ocp.control_bounds(-1.0, 1.0).unwrap()).unwrap();
        problem.eq_initial(&start).unwrap()
    };
    let x0 = vec![0.0; 3 * (n + 1)];
    let settings = IpmSettings { tol: 1e-10, ..IpmSettings::default() };
    let want = IpmFunction::multistage("ic_hand", &by_hand, settings.clone())
        .unwrap()
        .solve(&x0, &[0.0, 0.0], &WarmStart::default())
        .unwrap();
    assert_eq!(want.info.status, Status::Solved);
    assert!((want.x[0] - 1.0).abs() < 1e-9 && want.x[1].abs() > 0.1, "the velocity moves: {:?}", &want.x[..3]);
    let ipm =
        IpmFunction::multistage("ic_ipm", &problem, settings).unwrap().solve(&x0, &[], &WarmStart::default()).unwrap();
    let sqp = SqpFunction::multistage("ic_sqp", &problem, SqpSettings::default(), QpBackend::Riccati)
        .unwrap()
        .solve(&x0, &[], &WarmStart::default())
        .unwrap();
    for (name, got) in [("ipm", &ipm), ("sqp", &sqp)] {
        assert_eq!(got.info.status, Status::Solved, "{name}: {:?}", got.info);
        assert_close(&format!("{name}: x"), &got.x, &want.x, 1e-6);
        assert_close(&format!("{name}: lam_eq"), &got.lam_eq, &want.lam_eq, 1e-5);
    }
    let wrong = NumericalFunction::new("ic_wrong", |[x, _p]| x.sum(), [Arg::new(2), Arg::new(0)]).unwrap();
    let err = ControlProblem::new(n, 2, 1, 0, &f).unwrap().initial_constraints(&wrong).unwrap_err();
    assert!(err.to_string().contains("initial_constraints_fn must take"), "{err}");
}

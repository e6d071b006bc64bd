"""anvil.opti.MultistageProblem: the cart-pole swing-up against its known optimum and Ipopt,
the z-form against the dynamics form, parameters against a KKT solve, stage inequalities and
path constraints against Ipopt, Gauss-Newton, a named horizon, generated modules, bad input.

The oracles are Ipopt (through CasADi) solved to 1e-10 on the same formulas
(multistage_problems.py, and the small problems below), and numpy's solve of the KKT system
of an equality-constrained QP. Solvers are shared between tests (module fixtures): each
distinct solver is compiled once (the cart-pole's take ~10 s on a cold JIT cache).
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import sys

import casadi as cs
import numpy as np
import pytest

import anvil as av
from anvil.opti import (
    DenseProblem,
    DenseSQPFunction,
    HessianApproximation,
    IPMSettings,
    MultistageProblem,
    SparseProblem,
    SparseIPMFunction,
    SparseSQPFunction,
    SQPSettings,
    SQPStatus,
)

sys.path.insert(0, os.path.dirname(__file__))
import multistage_problems as cp  # noqa: E402
from opti_problems import AnvilMath, CasadiMath  # noqa: E402
from test_opti import assert_compiles, close  # noqa: E402

SETTINGS = SQPSettings(max_iter=200)


def ipopt(nlp, bounds, x0=0.0):
    """Ipopt's solution to 1e-10: x, f, lam_g, lam_x (CasADi's signs, as anvil's)."""
    opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.tol": 1e-10, "ipopt.sb": "yes"}
    solver = cs.nlpsol("ipopt_ms", "ipopt", nlp, opts)
    r = solver(x0=x0, **bounds)
    assert solver.stats()["success"], "Ipopt failed"
    flat = lambda key: np.asarray(r[key]).ravel()  # noqa: E731
    return {"x": flat("x"), "f": float(r["f"]), "lam_g": flat("lam_g"), "lam_x": flat("lam_x")}


def solved(res):
    assert res.status == SQPStatus.SOLVED, res
    for r in (res.stat_res, res.eq_res, res.ineq_res, res.comp_res):
        assert r <= 1e-8
    return res


# The cart-pole swing-up (multistage_problems.py): N = 50, nz = 5, 204 equality rows.


@pytest.fixture(scope="module")
def cartpole():
    return SparseSQPFunction(name="ms_cartpole", problem=cp.cartpole_from_dynamics(), settings=SETTINGS)


@pytest.fixture(scope="module")
def cartpole_solution(cartpole):
    return solved(cartpole(np.zeros(cartpole.nx), p=np.zeros(4)))


def test_cartpole_from_dynamics_reaches_the_known_optimum(cartpole, cartpole_solution):
    res = cartpole_solution
    assert (cartpole.nx, cartpole.neq, cartpole.nineq) == (255, 204, 0)
    assert cartpole.qp_backend == "riccati"
    assert abs(res.objective - cp.J_STAR) < 1e-6, res.objective
    assert res.X is not None and res.U is not None
    assert res.X.shape == (51, 4) and res.U.shape == (50, 1)
    z = res.x.reshape(51, 5)
    np.testing.assert_array_equal(res.X, z[:, :4])
    np.testing.assert_array_equal(res.U, z[:50, 4:])
    np.testing.assert_allclose(res.X[0], np.zeros(4), atol=1e-12)
    assert abs(res.X[-1, 1] - np.pi) < 0.1, "the pole ends upright"
    assert np.all(np.abs(res.U) <= cp.U_MAX + 1e-9) and np.max(np.abs(res.U)) > cp.U_MAX - 1e-6
    # Another initial state: the first state is the one given (p = x_init).
    x_init = np.array([0.1, -0.2, 0.05, 0.3])
    other = solved(cartpole(np.zeros(255), p=x_init))
    assert other.X is not None
    np.testing.assert_allclose(other.X[0], x_init, atol=1e-10)
    assert abs(other.objective - res.objective) > 1e-3


def test_z_form_by_hand_equals_from_dynamics(cartpole_solution):
    problem = cp.cartpole_z_form()
    assert (problem.N, problem.nz, problem.nvars, problem.neq, problem.param_size) == (50, 5, 255, 204, 4)
    res = solved(SparseSQPFunction(name="ms_cartpole_z", problem=problem, settings=SETTINGS)(np.zeros(255), p=np.zeros(4)))
    assert abs(res.objective - cp.J_STAR) < 1e-6
    close(res.x, cartpole_solution.x, 1e-8, "x")
    close(res.lam_eq, cartpole_solution.lam_eq, 1e-6, "lam_eq")
    assert res.X is None and res.U is None, "a z-form problem has no state/control split"


def test_cartpole_multipliers_agree_with_ipopt(cartpole_solution):
    nlp, bounds = cp.cartpole_casadi()
    want = ipopt(nlp, bounds)
    res = cartpole_solution
    close(res.x, want["x"], 1e-6, "x")
    close(res.objective, want["f"], 1e-6, "objective")
    close(res.objective, cp.J_STAR, 1e-8, "objective vs J*")
    # lam_eq: the initial state's 4 rows, then the dynamics stage by stage, as Ipopt's lam_g.
    close(res.lam_eq, want["lam_g"], 1e-5, "lam_eq")
    assert np.max(np.abs(res.lam_eq[:4])) > 1.0
    # lam_box: the force bounds (positive at the upper one), as Ipopt's lam_x.
    close(res.lam_box, want["lam_x"], 1e-5, "lam_box")
    active = np.abs(want["lam_x"]) > 1e-6
    assert active.any() and np.all(np.abs(res.lam_box[~active]) < 1e-6)
    assert np.all(np.sign(res.lam_box[active]) == np.sign(res.x[active]))


def test_gauss_newton_converges_to_the_optimum():
    settings = SQPSettings(max_iter=300, hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    solver = SparseSQPFunction(name="ms_cartpole_gn", problem=cp.cartpole_from_dynamics(name="cpgn"), settings=settings)
    res = solved(solver(np.zeros(255), p=np.zeros(4)))
    assert abs(res.objective - cp.J_STAR) < 1e-6, res.objective


def test_long_horizons_reach_ipopts_swing_up():
    """The cart-pole at N = 200 from rest and from a moved initial state (issue 31): with the
    whole Hessian's inertia corrected (convexify_by_stage=False, the default), the SQP by
    stages reaches Ipopt's J, and ends at the acceptable level where a tolerance is finer
    than rounding allows; with each stage block convexified on its own
    (convexify_by_stage=True) the steps are no Newton steps, and it ends far above it
    (J = 267.6 from rest, MAX_ITER)."""
    n, moved = 200, np.array([0.1, -0.2, 0.05, 0.3])
    problem = cp.cartpole_from_dynamics(n, name="cp200")
    whole = SQPSettings(max_iter=1000, convexify_by_stage=False)
    solver = SparseSQPFunction(name="ms_cartpole_200", problem=problem, settings=whole)
    for x_init in (np.zeros(4), moved):
        nlp, bounds = cp.cartpole_casadi(n, x_init)
        want = ipopt(nlp, bounds)
        res = solved(solver(np.zeros(solver.nx), p=x_init))
        close(res.objective, want["f"], 1e-6, "objective")
        g = cs.Function("cp200_g", [nlp["x"]], [nlp["g"]])
        assert np.max(np.abs(np.asarray(g(res.x)))) <= 1e-8
        if not x_init.any():
            j_rest = want["f"]
    # A stationarity tolerance finer than the rounding of 200 stages' merit values resolves:
    # the line search finds no step at stat ~2e-8, within 100 times tol_stat = 1e-9, where the
    # solve ends SOLVED at Ipopt's acceptable level (LINESEARCH_FAILED before).
    solver.settings = dataclasses.replace(whole, tol_stat=1e-9)
    res = solver(np.zeros(solver.nx), p=np.zeros(4))
    assert res.status == SQPStatus.SOLVED and res.stat_res <= 100 * 1e-9, res
    close(res.objective, j_rest, 1e-6, "objective at the acceptable level")
    by_stage = SparseSQPFunction(name="ms_cartpole_200_by_stage", problem=problem, settings=SQPSettings(max_iter=300, convexify_by_stage=True))
    res = by_stage(np.zeros(solver.nx), p=np.zeros(4))
    assert res.status == SQPStatus.MAX_ITER and res.objective > 2 * j_rest, res


# A double integrator z = (position, velocity, force, s) tracking a reference: the initial
# state is p_global, each stage's parameter is (reference r_i, disturbance d_i); an auxiliary
# s = force + 0.1 r_i on the middle stages (eq_stage) and a zero final velocity (eq_terminal).
# Quadratic costs and linear constraints: the optimum solves one linear KKT system.

DI_DT = 0.2


def di_costs(z, p, m):
    err = z[0] - p[0]
    effort = 0.1 * z[2] ** 2 + 0.1 * z[3] ** 2
    return {
        "initial": 2.0 * err**2 + effort,
        "stage": err**2 + 0.05 * z[1] ** 2 + effort,
        "terminal": 10.0 * err**2 + z[1] ** 2 + effort,
    }


def di_interstage(z, zn, p, m):
    return m.vec([zn[0] - z[0] - DI_DT * z[1], zn[1] - z[1] - DI_DT * (z[2] + p[1])])


def di_stage_eq(z, p, m):
    return m.vec([z[3] - z[2] - 0.1 * p[0]])


def di_problem(n, name="di"):
    stage = (av.Arg(4), av.Arg(2), av.Arg(2))
    m = AnvilMath

    def fn(what, body, inputs=stage):
        return av.NumericalFunction(f"{name}_{what}", body, inputs)

    return MultistageProblem(
        N=n,
        nz=4,
        cost_initial_fn=fn("l0", lambda z, g, p: di_costs(z, p, m)["initial"]),
        cost_stage_fn=fn("l", lambda z, g, p: di_costs(z, p, m)["stage"]),
        cost_terminal_fn=fn("lf", lambda z, g, p: di_costs(z, p, m)["terminal"]),
        eq_initial_fn=fn("e0", lambda z, g, p: z[:2] - g),
        eq_interstage_fn=fn("dyn", lambda z, zn, g, p: di_interstage(z, zn, p, m), (av.Arg(4),) + stage),
        eq_stage_fn=fn("e", lambda z, g, p: di_stage_eq(z, p, m)),
        eq_terminal_fn=fn("ef", lambda z, g, p: m.vec([z[1]])),
        param_dim=2,
        global_param_dim=2,
    )


def di_kkt(n, x_init, stage_params):
    """The optimum and equality multipliers from the KKT system (CasADi for the exact
    derivatives of the same formulas, numpy for the solve)."""
    m = CasadiMath
    z = cs.SX.sym("z", (n + 1) * 4)
    zs = [z[4 * k : 4 * k + 4] for k in range(n + 1)]
    ps = [cs.DM(stage_params[k]) for k in range(n + 1)]
    f = di_costs(zs[0], ps[0], m)["initial"]
    f += sum(di_costs(zs[k], ps[k], m)["stage"] for k in range(1, n))
    f += di_costs(zs[n], ps[n], m)["terminal"]
    g = cs.vertcat(
        zs[0][:2] - cs.DM(x_init),
        *[di_interstage(zs[k], zs[k + 1], ps[k], m) for k in range(n)],
        *[di_stage_eq(zs[k], ps[k], m) for k in range(1, n)],
        zs[n][1],
    )
    at0 = cs.Function("at0", [z], [cs.hessian(f, z)[0], cs.gradient(f, z), cs.jacobian(g, z), g, f])
    h, c, a, g0, f0 = (np.asarray(v) for v in at0(np.zeros(z.shape[0])))
    nv, ne = h.shape[0], a.shape[0]
    kkt = np.block([[h, a.T], [a, np.zeros((ne, ne))]])
    sol = np.linalg.solve(kkt, np.concatenate([-c.ravel(), -g0.ravel()]))
    x, lam = sol[:nv], sol[nv:]
    return x, lam, f0.item() + c.ravel() @ x + 0.5 * x @ h @ x


def test_stage_and_global_parameters_match_the_kkt_solution():
    n = 8
    problem = di_problem(n)
    assert (problem.nvars, problem.neq, problem.param_size) == (36, 2 + 2 * n + (n - 1) + 1, 2 + 9 * 2)
    solver = SparseSQPFunction(name="ms_di", problem=problem, qp_backend="piqp")
    assert solver.qp_backend == "piqp"
    rng = np.random.default_rng(3)
    for _ in range(2):
        x_init = rng.normal(size=2)
        stages = np.column_stack([np.sin(np.arange(n + 1)) + rng.normal(size=n + 1), 0.3 * rng.normal(size=n + 1)])
        res = solved(solver(np.zeros(36), p=np.concatenate([x_init, stages.ravel()])))
        x, lam, f = di_kkt(n, x_init, stages)
        close(res.x, x, 1e-8, "x")
        close(res.lam_eq, lam, 1e-8, "lam_eq (initial, interstage, stage, terminal)")
        close(res.objective, f, 1e-8, "objective")
        np.testing.assert_allclose(res.x[:2], x_init, atol=1e-10)
        assert res.X is None


# Stage inequalities: a nonlinear oscillator (x = (position, velocity), force u) pushed from
# x_init = (1, 0) towards 0 with |velocity| <= 0.5 and |u| <= 2 (as two-sided constraint
# rows) and position >= 0.4 (a bound). The dynamics form constrains steps 0..N-1 (u_0 = -2
# is active), the z-form stages 1..N-1 only (u_0 goes beyond -2): Ipopt solves each.

OSC_N, OSC_DT = 15, 0.1
OSC_LB, OSC_UB = [-0.5, -2.0], [0.5, 2.0]
OSC_X_LB = [0.4, -np.inf]


def osc_step(x, u, m):
    return m.vec([x[0] + OSC_DT * x[1], x[1] + OSC_DT * (u[0] - m.sin(x[0]))])


def osc_cost(x, u):
    return 10.0 * x[0] ** 2 + x[1] ** 2 + 0.01 * u[0] ** 2


def osc_terminal(x):
    return 10.0 * x[0] ** 2 + 10.0 * x[1] ** 2


def osc_rows(x, u, m):
    return m.vec([x[1], u[0]])


def osc_casadi(stages):
    """The oscillator over z = (x, u) stacked: the initial state, the dynamics, then the
    constraint rows of `stages` stage by stage."""
    m, n = CasadiMath, OSC_N
    z = cs.SX.sym("z", (n + 1) * 3)
    xs, us = [z[3 * k : 3 * k + 2] for k in range(n + 1)], [z[3 * k + 2 : 3 * k + 3] for k in range(n + 1)]
    f = sum(osc_cost(xs[k], us[k]) for k in range(n)) + osc_terminal(xs[n])
    eq = [xs[0] - cs.DM([1.0, 0.0])] + [xs[k + 1] - osc_step(xs[k], us[k], m) for k in range(n)]
    rows = [osc_rows(xs[k], us[k], m) for k in stages]
    neq, nin = 2 + 2 * n, 2 * len(stages)
    bounds = {
        "lbg": np.r_[np.zeros(neq), np.tile(OSC_LB, len(stages))],
        "ubg": np.r_[np.zeros(neq), np.tile(OSC_UB, len(stages))],
        "lbx": np.tile(OSC_X_LB + [-np.inf], n + 1),
        "ubx": np.full((n + 1) * 3, np.inf),
    }
    assert nin == len(bounds["lbg"]) - neq
    return {"x": z, "f": f, "g": cs.vertcat(*eq, *rows)}, bounds, neq


def osc_from_dynamics(prefix, **bounds):
    """The oscillator in states and controls, its functions named ``<prefix>_*``, with its
    path constraints and the given bounds (``path_lb``, ``path_ub``, ``x_lb``, ...)."""
    m, xup = AnvilMath, (av.Arg(2), av.Arg(1), av.Arg(0))
    return MultistageProblem.from_dynamics(
        N=OSC_N,
        nx=2,
        nu=1,
        dynamics_fn=av.NumericalFunction(f"{prefix}_f", lambda x, u, p: osc_step(x, u, m), xup),
        stage_cost_fn=av.NumericalFunction(f"{prefix}_l", lambda x, u, p: osc_cost(x, u), xup),
        terminal_cost_fn=av.NumericalFunction(f"{prefix}_lf", lambda x, p: osc_terminal(x), (av.Arg(2), av.Arg(0))),
        path_constraints_fn=av.NumericalFunction(f"{prefix}_h", lambda x, u, p: osc_rows(x, u, m), xup),
        **bounds,
    )


def osc_z_form(prefix, **extra):
    """The oscillator in the z-form, z = (x, u), the initial state as the global parameter,
    its functions named ``<prefix>_*``; `extra`: further arguments (stage inequalities,
    bounds)."""
    m, stage = AnvilMath, (av.Arg(3), av.Arg(2), av.Arg(0))
    return MultistageProblem(
        N=OSC_N,
        nz=3,
        cost_initial_fn=av.NumericalFunction(f"{prefix}_l0", lambda z, g, p: osc_cost(z[:2], z[2:]), stage),
        cost_stage_fn=av.NumericalFunction(f"{prefix}_l", lambda z, g, p: osc_cost(z[:2], z[2:]), stage),
        cost_terminal_fn=av.NumericalFunction(f"{prefix}_lf", lambda z, g, p: osc_terminal(z[:2]), stage),
        eq_initial_fn=av.NumericalFunction(f"{prefix}_e0", lambda z, g, p: z[:2] - g, stage),
        eq_interstage_fn=av.NumericalFunction(
            f"{prefix}_dyn", lambda z, zn, g, p: zn[:2] - osc_step(z[:2], z[2:], m), (av.Arg(3),) + stage
        ),
        global_param_dim=2,
        **extra,
    )


def multistage_solver(name, problem, backend):
    """The SQP with QP backend `backend`, or the interior-point solver ("ipm", to 1e-10)."""
    if backend == "ipm":
        return SparseIPMFunction(name, problem, IPMSettings(tol=1e-10))
    return SparseSQPFunction(name=name, problem=problem, qp_backend=backend)


def compare_with_ipopt(res, want, neq):
    close(res.x, want["x"], 1e-6, "x")
    close(res.objective, want["f"], 1e-6, "objective")
    close(res.lam_eq, want["lam_g"][:neq], 1e-5, "lam_eq")
    close(res.lam_ineq, want["lam_g"][neq:], 1e-5, "lam_ineq (stage by stage)")
    close(res.lam_box, want["lam_x"], 1e-5, "lam_box")
    # The same active constraints, each on its side, and the inactive ones' multipliers as
    # small as the multipliers agree (a bound 1e-3 from binding keeps one of ~1e-6 within the
    # complementarity tolerance).
    for got, ref in ((res.lam_ineq, want["lam_g"][neq:]), (res.lam_box, want["lam_x"])):
        active = np.abs(ref) > 1e-3
        np.testing.assert_array_equal(np.sign(got[active]), np.sign(ref[active]))
        assert np.all(np.abs(got[np.abs(ref) < 1e-8]) < 1e-5)


@pytest.mark.parametrize("backend", ["riccati", "piqp"])
def test_path_constraints_and_stage_inequalities_agree_with_ipopt(backend):
    m = AnvilMath
    ocp = osc_from_dynamics("osc", path_lb=OSC_LB, path_ub=OSC_UB, x_lb=OSC_X_LB)
    assert (ocp.nineq, ocp.neq) == (2 * OSC_N, 2 + 2 * OSC_N)
    res = solved(SparseSQPFunction(name=f"ms_osc_{backend}", problem=ocp, qp_backend=backend)(np.zeros(ocp.nvars), p=[1.0, 0.0]))
    nlp, bounds, neq = osc_casadi(range(OSC_N))
    want = ipopt(nlp, bounds)
    compare_with_ipopt(res, want, neq)
    assert res.U is not None and res.U[0, 0] == pytest.approx(-2.0, abs=1e-8) and res.lam_ineq[1] < 0
    assert np.any(res.lam_ineq[0::2] < -1e-3) and np.any(res.lam_ineq[1::2] > 1e-3), "both sides active"
    assert np.any(res.lam_box[0::3] < -1e-3), "the position bound is active"

    stage = (av.Arg(3), av.Arg(2), av.Arg(0))
    zform = osc_z_form(
        "oscz",
        ineq_stage_fn=av.NumericalFunction("oscz_h", lambda z, g, p: osc_rows(z[:2], z[2:], m), stage),
        ineq_lb=OSC_LB,
        ineq_ub=OSC_UB,
        z_lb=OSC_X_LB + [-np.inf],
    )
    assert zform.nineq == 2 * (OSC_N - 1)
    res = solved(SparseSQPFunction(name=f"ms_oscz_{backend}", problem=zform, qp_backend=backend)(np.zeros(zform.nvars), p=[1.0, 0.0]))
    nlp, bounds, neq = osc_casadi(range(1, OSC_N))
    compare_with_ipopt(res, ipopt(nlp, bounds), neq)
    assert res.x[2] < -2.5, "stage 0 is not constrained"


@pytest.mark.parametrize("backend", ["riccati", "piqp", "ipm"])
def test_bounds_that_differ_by_stage_agree_with_ipopt(backend):
    """The oscillator with bounds by stage: its position held above 0.4 from stage 8 on, its
    controls within 1.5 except the first (free), its final position above 0.45; each solver at
    Ipopt's solution and multipliers, every bound binding where it holds and only there."""
    n = OSC_N
    lb, ub = np.tile([-np.inf, -np.inf, -1.5], (n + 1, 1)), np.tile([np.inf, np.inf, 1.5], (n + 1, 1))
    lb[8:, 0] = 0.4
    lb[0, 2], ub[0, 2] = -np.inf, np.inf
    lb[n, 0] = 0.45
    problem = osc_z_form("oscb", z_lb=lb, z_ub=ub)
    solver = multistage_solver(f"ms_oscb_{backend}", problem, backend)
    res = solver(np.zeros(problem.nvars), p=[1.0, 0.0])
    if backend == "ipm":
        # Ipopt's tolerances; its point may cross a bound by the bounds' relaxation (1e-8 of
        # 1.5), as Ipopt's.
        assert res.status == SQPStatus.SOLVED and res.ineq_res <= 1.5e-8 and res.eq_res <= 1e-8
    else:
        solved(res)
    nlp, bounds, neq = osc_casadi([])
    bounds["lbx"], bounds["ubx"] = lb.ravel(), ub.ravel()
    compare_with_ipopt(res, ipopt(nlp, bounds), neq)
    # The bounds travel with the problem.
    assert pickle.loads(pickle.dumps(problem)).z_lb == problem.z_lb == [float(v) for v in lb.ravel()]
    box = res.lam_box.reshape(n + 1, 3)
    assert np.any(box[8:, 0] < -1e-3) and np.all(np.abs(box[:8, 0]) < 1e-6), "the position bound from stage 8"
    assert res.x[2] < -1.5 and np.any(np.abs(box[1:, 2]) > 1e-3), "the first control is free, the others bound"
    assert box[n, 0] < box[n - 1, 0] - 1e-3, "the final position's own bound"


@pytest.mark.parametrize("backend", ["riccati", "piqp", "ipm"])
def test_path_bounds_that_differ_by_stage_agree_with_ipopt(backend):
    """The oscillator's path constraints with bounds by stage: the speed within 0.5 until
    stage 7, within 0.3 after, the force within 2 except at stage 0 (free); each solver at
    Ipopt's solution and multipliers."""
    n = OSC_N
    lb, ub = np.tile(OSC_LB, (n, 1)), np.tile(OSC_UB, (n, 1))
    lb[7:, 0], ub[7:, 0] = -0.3, 0.3
    lb[0, 1], ub[0, 1] = -np.inf, np.inf
    ocp = osc_from_dynamics("oscp", path_lb=lb, path_ub=ub)
    solver = multistage_solver(f"ms_oscp_{backend}", ocp, backend)
    res = solver(np.zeros(ocp.nvars), p=[1.0, 0.0])
    assert res.status == SQPStatus.SOLVED, res
    nlp, bounds, neq = osc_casadi(range(n))
    bounds["lbg"], bounds["ubg"] = np.r_[np.zeros(neq), lb.ravel()], np.r_[np.zeros(neq), ub.ravel()]
    bounds["lbx"] = np.full((n + 1) * 3, -np.inf)
    compare_with_ipopt(res, ipopt(nlp, bounds), neq)
    rows = res.lam_ineq.reshape(n, 2)
    assert np.any(np.abs(rows[7:, 0]) > 1e-3), "the tighter speed bound binds"
    assert abs(rows[0, 1]) < 1e-8 and abs(res.U[0, 0]) > 2.0, "the first force is free"


# A named horizon, generated modules.


def di_ocp(n, name):
    """A double integrator in the dynamics form, steps n (int or CodegenIntConstant)."""
    xup = (av.Arg(2), av.Arg(1), av.Arg(1))
    f = av.NumericalFunction(
        f"{name}_f", lambda x, u, p: av.Tensor.stack(x[0] + 0.1 * x[1], x[1] + 0.1 * u[0]), xup
    )
    l = av.NumericalFunction(f"{name}_l", lambda x, u, p: (x[0] - p[0]) ** 2 + 0.1 * u[0] ** 2, xup)
    return MultistageProblem.from_dynamics(N=n, nx=2, nu=1, dynamics_fn=f, stage_cost_fn=l, u_lb=-1, u_ub=1, param_dim=1)


@pytest.fixture(scope="module")
def named_horizon():
    horizon = av.CodegenIntConstant("N_TRACK", 12)
    problem = di_ocp(horizon, "trk")
    assert problem.horizon is horizon and problem.N == 12
    return SparseSQPFunction(name="ms_track", problem=problem)


def test_a_codegen_constant_names_the_horizon(named_horizon, in_tmp_dir):
    av.generate_module("trackmod", [named_horizon])
    header = (in_tmp_dir / "trackmod.hpp").read_text()
    assert "constexpr int N_TRACK = 12;" in header
    assert "namespace ms_track {" in header
    # It solves as the same problem with an int horizon.
    p = np.concatenate([[1.0, 0.0], np.linspace(0.0, 1.0, 13)])
    res = solved(named_horizon(np.zeros(13 * 3), p=p))
    plain = solved(SparseSQPFunction(name="ms_track_int", problem=di_ocp(12, "trk_int"))(np.zeros(39), p=p))
    close(res.x, plain.x, 1e-10, "x")
    assert res.X is not None and res.X.shape == (13, 2) and res.U is not None and res.U.shape == (12, 1)
    np.testing.assert_allclose(res.X[0], [1.0, 0.0], atol=1e-10)


def test_generated_module_with_multistage_solvers_compiles(cartpole, named_horizon, in_tmp_dir):
    zform = SparseSQPFunction(name="ms_mod_z", problem=di_problem(4, "dimod"))
    extra = av.NumericalFunction("twice", lambda x: x * 2.0, [av.Arg(3)])
    av.generate_module("msmod", [named_horizon, zform, extra])
    header = (in_tmp_dir / "msmod.hpp").read_text()
    for name in ("ms_track", "ms_mod_z"):
        assert f"namespace {name} {{" in header
        # The stage functions the solver evaluates on all their stages at once, values
        # alone included (not the whole-problem values, linearisation and Hessian): each once.
        for fn in ("cost0", "eq0", "cost_hess0", "cost_value0", "eq_value0"):
            assert header.count(f"namespace {name}_{fn} {{") == 1, (name, fn)
            assert "void call_batch(long long count" in header.split(f"namespace {name}_{fn} {{")[1]
        for fn in ("values", "linearize", "hessian"):
            assert f"namespace {name}_{fn} {{" not in header
    assert "constexpr int NX = 39;" in header and "constexpr int N_TRACK = 12;" in header
    assert_compiles(in_tmp_dir / "msmod.cpp")
    # The cart-pole's module holds its solver (compiled below, in its own test).
    av.generate_module("cpmod", [cartpole])
    assert "constexpr int NX = 255;" in (in_tmp_dir / "cpmod.hpp").read_text()


def test_cartpole_functions_compile_without_warnings(cartpole, in_tmp_dir):
    # The solver's derived functions alone (no PIQP headers to parse: fast).
    av.generate_module("cpfun", cartpole.functions)
    assert_compiles(in_tmp_dir / "cpfun.cpp")


# Bad input: each error says what is wrong.


def test_bad_multistage_problems_are_clear_errors(cartpole):
    stage = (av.Arg(3), av.Arg(0), av.Arg(0))
    cost = av.NumericalFunction("bm_c", lambda z, g, p: (z**2).sum(), stage)
    rows = av.NumericalFunction("bm_h", lambda z, g, p: z[:2], stage)
    two_args = av.NumericalFunction("bm_two", lambda z, p: (z**2).sum(), (av.Arg(3), av.Arg(0)))
    vector = av.NumericalFunction("bm_v", lambda z, g, p: z * 2.0, stage)
    with pytest.raises(ValueError, match=r"cost_stage_fn must take \(z, p_global, p_i\).*it takes \(f64 array of shape \[3\], f64 array of shape \[0\]\)$"):
        MultistageProblem(N=5, nz=3, cost_stage_fn=two_args)
    with pytest.raises(ValueError, match=r"cost_initial_fn must take .*shape \[4\].*it takes \(f64 array of shape \[3\]"):
        MultistageProblem(N=5, nz=4, cost_initial_fn=cost)
    with pytest.raises(ValueError, match="cost_terminal_fn must return a scalar; it returns an array of shape \\[3\\]"):
        MultistageProblem(N=5, nz=3, cost_terminal_fn=vector)
    with pytest.raises(ValueError, match=r"eq_interstage_fn must take \(z, z_next, p_global, p_i\)"):
        MultistageProblem(N=5, nz=3, eq_interstage_fn=cost)
    with pytest.raises(ValueError, match=r"cost_stage_fn must take .*shape \[2\]"):
        MultistageProblem(N=5, nz=3, cost_stage_fn=cost, global_param_dim=2)
    with pytest.raises(ValueError, match=r"z_lb`: has 2 entries, expected nz = 3 \(every stage's\) or \(N \+ 1\)·nz = 18"):
        MultistageProblem(N=5, nz=3, cost_stage_fn=cost, z_lb=[0.0, 0.0])
    with pytest.raises(ValueError, match=r"z_ub`: has 15 entries, expected nz = 3 .* or \(N \+ 1\)·nz = 18"):
        MultistageProblem(N=5, nz=3, cost_stage_fn=cost, z_ub=np.ones((5, 3)))
    with pytest.raises(ValueError, match="no value satisfies both"):
        MultistageProblem(N=5, nz=3, z_lb=np.r_[np.zeros(15), [0.0, 2.0, 0.0]], z_ub=1.0)
    nan_at_stage_2 = np.zeros((6, 3))
    nan_at_stage_2[2, 1] = np.nan
    with pytest.raises(ValueError, match="z_lb`: entry 7 is NaN"):
        MultistageProblem(N=5, nz=3, z_lb=nan_at_stage_2)
    with pytest.raises(ValueError, match="z_lb`: has 10000000 entries, expected nz = 3"):
        MultistageProblem(N=5, nz=3, z_lb=np.zeros(10**7))
    with pytest.raises(ValueError, match=r"ineq_lb`: has 3 entries, expected rows = 2 \(every stage's\) or \(stages\)·rows = 8"):
        MultistageProblem(N=5, nz=3, cost_stage_fn=cost, ineq_stage_fn=rows, ineq_lb=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="bounds that differ by stage fix the number of stages; give the horizon N as a number"):
        MultistageProblem(N=av.CodegenIntConstant("N_BY_STAGE", 2), nz=3, cost_stage_fn=cost, z_lb=np.arange(9.0))
    with pytest.raises(ValueError, match="ineq_ub`: has 3 entries, expected rows = 2"):
        MultistageProblem(N=5, nz=3, ineq_stage_fn=rows, ineq_ub=[1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="no value satisfies both"):
        MultistageProblem(N=5, nz=3, z_lb=1.0, z_ub=0.0)
    with pytest.raises(ValueError, match="ineq_lb/ineq_ub are given but there is no ineq_stage_fn"):
        MultistageProblem(N=5, nz=3, ineq_lb=0.0)
    with pytest.raises(TypeError, match="eq_stage_fn must be a NumericalFunction of \\(z, p_global, p_i\\)"):
        MultistageProblem(N=5, nz=3, eq_stage_fn=lambda z, g, p: z)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="N must be >= 1, got 0"):
        MultistageProblem(N=0, nz=3)
    with pytest.raises(ValueError, match="N must be >= 1, got N_BAD = -2"):
        MultistageProblem(N=av.CodegenIntConstant("N_BAD", -2), nz=3)
    with pytest.raises(TypeError, match="N must be an int or a CodegenIntConstant, got float"):
        MultistageProblem(N=5.0, nz=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nz must be >= 1, got 0"):
        MultistageProblem(N=5, nz=0)

    # The dynamics form.
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    f = av.NumericalFunction("bm_f", lambda x, u, p: x + u[0], xup)
    with pytest.raises(ValueError, match=r"dynamics_fn must return the next state \(2 entries\); it returns shape \[1\]"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=av.NumericalFunction("bm_g", lambda x, u, p: x.sum().reshape(1), xup))
    with pytest.raises(ValueError, match=r"dynamics_fn must take .*shape \[1\]\).*it takes"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, param_dim=1)
    with pytest.raises(ValueError, match="path_lb/path_ub are given but there is no path_constraints_fn"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, path_lb=-1.0)
    with pytest.raises(ValueError, match=r"x_lb`: has 3 entries, expected nx = 2 \(every stage's\) or \(N \+ 1\)·nx = 12 \(stage by stage\)"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, x_lb=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"u_ub`: has 6 entries, expected nu = 1 \(every stage's\) or \(N\)·nu = 5 \(stage by stage\)"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, u_ub=np.ones(6))
    with pytest.raises(ValueError, match="bounds that differ by stage fix the number of stages"):
        MultistageProblem.from_dynamics(N=av.CodegenIntConstant("N_BM_X", 2), nx=2, nu=1, dynamics_fn=f, x_lb=np.arange(6.0))
    with pytest.raises(ValueError, match="stage_cost_fn must return a scalar; it returns an array of shape \\[2\\]"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, stage_cost_fn=f)
    with pytest.raises(ValueError, match=r"terminal_cost_fn must take \(f64 array of shape \[2\], f64 array of shape \[0\]\)"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, terminal_cost_fn=f)

    # Solvers and calls.
    problem = MultistageProblem(N=5, nz=3, cost_stage_fn=cost)
    with pytest.raises(ValueError, match=r"unknown qp_backend \"hpipm\" for a MultistageProblem; choose one of \"riccati\", \"piqp\""):
        SparseSQPFunction(name="bm", problem=problem, qp_backend="hpipm")
    with pytest.raises(TypeError, match="qp_backend must be a str or None"):
        SparseSQPFunction(name="bm", problem=problem, qp_backend=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="DenseSQPFunction does not solve a MultistageProblem.*use SparseSQPFunction"):
        DenseSQPFunction(name="bm", problem=problem)
    plain = av.NumericalFunction("bm_plain", lambda x, p: (x**2).sum(), (av.Arg(2), av.Arg(0)))
    for cls, kind in ((SparseSQPFunction, SparseProblem), (DenseSQPFunction, DenseProblem)):
        with pytest.raises(ValueError, match=f"unknown qp_backend \"riccati\" for a {cls.__name__}; choose one of \"piqp\", \"ipm\""):
            cls(name="bm", problem=kind(cost_fn=plain), qp_backend="riccati")
    with pytest.raises(ValueError, match=r"x0 must have shape \(255,\) \(51 stages of \(x, u\), 4 \+ 1 entries each\), got \(250,\)"):
        cartpole(np.zeros(250))
    with pytest.raises(ValueError, match=r"p must have shape \(4,\) \(x_init \(4\), then 51 stage parameters of 0 entries\), got \(5,\)"):
        cartpole(np.zeros(255), p=np.zeros(5))
    solver = SparseSQPFunction(name="bm_z", problem=MultistageProblem(N=5, nz=3, cost_stage_fn=cost))
    with pytest.raises(ValueError, match=r"x0 must have shape \(18,\) \(6 stages of z, 3 entries each\), got \(3,\)"):
        solver(np.zeros(3))
    with pytest.raises(ValueError, match=r"p must have shape \(0,\) \(p_global \(0\), then 6 stage parameters"):
        solver(np.zeros(18), p=[1.0])


def test_bad_first_and_last_stage_inequalities_are_clear_errors():
    stage = (av.Arg(3), av.Arg(0), av.Arg(0))
    rows = av.NumericalFunction("bfl_h", lambda z, g, p: z[:2], stage)
    with pytest.raises(ValueError, match=r"ineq_initial_lb`: has 3 entries, expected rows = 2"):
        MultistageProblem(N=5, nz=3, ineq_initial_fn=rows, ineq_initial_lb=[0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="ineq_terminal_lb.*no value satisfies both"):
        MultistageProblem(N=5, nz=3, ineq_terminal_fn=rows, ineq_terminal_lb=1.0, ineq_terminal_ub=[0.0, 2.0])
    with pytest.raises(ValueError, match="ineq_terminal_lb`: entry 1 is NaN"):
        MultistageProblem(N=5, nz=3, ineq_terminal_fn=rows, ineq_terminal_lb=[0.0, np.nan])
    with pytest.raises(ValueError, match="ineq_initial_lb/ineq_initial_ub are given but there is no ineq_initial_fn"):
        MultistageProblem(N=5, nz=3, ineq_initial_ub=1.0)
    with pytest.raises(ValueError, match="ineq_terminal_lb/ineq_terminal_ub are given but there is no ineq_terminal_fn"):
        MultistageProblem(N=5, nz=3, ineq_terminal_lb=1.0)
    with pytest.raises(TypeError, match=r"ineq_terminal_fn must be a NumericalFunction of \(z, p_global, p_i\)"):
        MultistageProblem(N=5, nz=3, ineq_terminal_fn=lambda z, g, p: z)  # type: ignore[arg-type]
    coupled = av.NumericalFunction("bfl_c", lambda z, zn, g, p: z - zn, (av.Arg(3), av.Arg(3), av.Arg(0), av.Arg(0)))
    with pytest.raises(ValueError, match=r"ineq_initial_fn must take \(z, p_global, p_i\)"):
        MultistageProblem(N=5, nz=3, ineq_initial_fn=coupled)
    # The dynamics form's terminal inequalities take (x, p).
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    f = av.NumericalFunction("bfl_f", lambda x, u, p: x + u[0], xup)
    end = av.NumericalFunction("bfl_end", lambda x, p: x, (av.Arg(2), av.Arg(0)))
    with pytest.raises(ValueError, match=r"terminal_ineq_fn must take \(f64 array of shape \[2\], f64 array of shape \[0\]\)"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, terminal_ineq_fn=f)
    with pytest.raises(ValueError, match=r"terminal_ineq_ub`: has 3 entries, expected rows = 2"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, terminal_ineq_fn=end, terminal_ineq_ub=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="terminal_ineq_lb/terminal_ineq_ub are given but there is no terminal_ineq_fn"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, terminal_ineq_lb=0.0)
    # State and control bounds by stage: NaN and huge arrays.
    nan_at_stage_3 = np.zeros((6, 2))
    nan_at_stage_3[3, 1] = np.nan
    with pytest.raises(ValueError, match="x_lb`: entry 7 is NaN"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, x_lb=nan_at_stage_3)
    with pytest.raises(ValueError, match=r"u_lb`: has 10000000 entries, expected nu = 1 \(every stage's\) or \(N\)·nu = 5"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, u_lb=np.zeros(10**7))
    # Rows and their multipliers: initial, stage by stage, terminal.
    problem = MultistageProblem(N=5, nz=3, ineq_initial_fn=rows, ineq_stage_fn=rows, ineq_terminal_fn=end_z(), ineq_terminal_ub=1.0)
    assert problem.nineq == 2 + 4 * 2 + 1
    ocp = MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=f, terminal_ineq_fn=end, terminal_ineq_ub=1.0)
    assert ocp.nineq == 2


def end_z():
    return av.NumericalFunction("bfl_end_z", lambda z, g, p: (z**2).sum(), (av.Arg(3), av.Arg(0), av.Arg(0)))


def test_warm_starts_and_shifts_reject_what_does_not_fit(cartpole, cartpole_solution):
    with pytest.raises(TypeError, match="give the initial guess x0 \\(or warm_start=, an earlier result\\)"):
        cartpole()
    with pytest.raises(TypeError, match="warm_start must be an SQPResult, got ndarray"):
        cartpole(p=np.zeros(4), warm_start=np.zeros(255))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="shift takes the SQPResult of a solve of this problem, got dict"):
        cartpole.problem.shift({})  # type: ignore[arg-type]
    other = cp.cartpole_from_dynamics(n=10, name="cp10")
    with pytest.raises(ValueError, match=r"the solution's `x` has 255 entries, expected 55 \(a solution of another problem\?\)"):
        other.shift(cartpole_solution)
    # The shifted result's plan: stage i is the solution's stage i + 1, the last repeated.
    shifted = cartpole.problem.shift(cartpole_solution)
    np.testing.assert_array_equal(shifted.X[:-1], cartpole_solution.X[1:])
    np.testing.assert_array_equal(shifted.X[-1], cartpole_solution.X[-1])
    np.testing.assert_array_equal(shifted.U[:-1], cartpole_solution.U[1:])
    np.testing.assert_array_equal(shifted.lam_eq[:4], cartpole_solution.lam_eq[:4])
    np.testing.assert_array_equal(shifted.lam_eq[4:-4], cartpole_solution.lam_eq[8:])
    # Explicit arguments win over the warm start's: the converged solve restarted at its own
    # optimum stops at once, one given a worse x0 does not.
    assert cartpole(p=np.zeros(4), warm_start=cartpole_solution).iterations == 0
    assert cartpole(np.zeros(255), p=np.zeros(4), warm_start=cartpole_solution).iterations > 0


def test_closed_loop_example_swings_the_pole_up_and_saves_its_plot(tmp_path):
    """examples/cartpole_mpc.py: MPC with real-time iterations from the shifted solution."""
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
    import cartpole_mpc

    loop = cartpole_mpc.run(steps=60)
    assert loop.first_iterations > 1
    final = loop.states[-1]
    assert abs(final[1] - np.pi) < 0.02, final
    assert np.all(np.abs(final[[0, 2, 3]]) < 0.1), final
    assert np.all(np.abs(loop.forces) <= cartpole_mpc.U_MAX + 1e-6)
    # The pole passes upright within the first 1.5 s and stays near it from then on.
    after = loop.states[loop.t > 1.5][:, 1]
    assert np.all(np.abs(after - np.pi) < 0.1)
    assert np.all(loop.rti_seconds > 0)
    path = tmp_path / "cartpole_mpc.png"
    cartpole_mpc.plot(loop, str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_real_time_iteration_reports_its_step_without_derivatives(cartpole, cartpole_solution):
    shifted = cartpole.problem.shift(cartpole_solution)
    x_next = cartpole_solution.X[1]
    saved = cartpole.settings
    rti = SQPSettings.real_time_iteration(hessian_approximation=saved.hessian_approximation)
    try:
        cartpole.settings = rti
        step = cartpole(p=x_next, warm_start=shifted)
        assert (step.status, step.iterations) == (SQPStatus.MAX_ITER, 1)
        assert np.isnan(step.stat_res) and step.eq_res < 0.05, step
        # The same step, with the derivatives evaluated at its end as well.
        cartpole.settings = dataclasses.replace(rti, final_stationarity=True)
        checked = cartpole(p=x_next, warm_start=shifted)
        np.testing.assert_array_equal(checked.x, step.x)
        assert np.isfinite(checked.stat_res)
        np.testing.assert_allclose(checked.eq_res, step.eq_res, rtol=1e-12, atol=1e-15)
        with pytest.raises(TypeError, match="SQPSettings.final_stationarity must be a bool, got 1"):
            cartpole.settings = dataclasses.replace(rti, final_stationarity=1)
    finally:
        cartpole.settings = saved


def test_terminal_constraints_pin_the_final_state_for_both_solvers():
    """``from_dynamics(terminal_constraints_fn=...)``: a double integrator from (1, 0.5) to rest
    at the origin in 4 s, |u| <= 1. The interior-point solver (its KKT systems by stages) and
    the SQP (its Riccati QP in the z-form recursion) reach Ipopt's optimum of the same NLP, the
    final state at the target; the problem travels with its terminal rows."""
    import pickle

    from anvil.opti import SparseIPMFunction

    n, dt = 40, 0.1
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    step = av.NumericalFunction("term_step", lambda x, u, p: av.Tensor.stack(x[0] + dt * x[1], x[1] + dt * u[0]), xup)
    cost = av.NumericalFunction("term_cost", lambda x, u, p: (x**2).sum() + 0.1 * (u**2).sum(), xup)
    rest = av.NumericalFunction("term_rest", lambda x, p: x, (av.Arg(2), av.Arg(0)))
    ocp = MultistageProblem.from_dynamics(
        N=n, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=cost, u_lb=-1.0, u_ub=1.0, terminal_constraints_fn=rest
    )
    assert ocp.neq == 2 + 2 * n + 2
    x_init = np.array([1.0, 0.5])
    # Ipopt on the same NLP, written out.
    z = cs.SX.sym("z", 3 * (n + 1))
    xs = [z[3 * k : 3 * k + 2] for k in range(n + 1)]
    us = [z[3 * k + 2] for k in range(n + 1)]
    f = sum(cs.sumsqr(xs[k]) + 0.1 * us[k] ** 2 for k in range(n))
    g = cs.vertcat(
        xs[0] - x_init,
        *[xs[k + 1] - cs.vertcat(xs[k][0] + dt * xs[k][1], xs[k][1] + dt * us[k]) for k in range(n)],
        xs[n],
    )
    options = {"print_time": 0, "ipopt": {"print_level": 0, "sb": "yes", "tol": 1e-10}}
    ipopt = cs.nlpsol("term_ipopt", "ipopt", {"x": z, "f": f, "g": g}, options)
    bounds = np.tile([-np.inf, -np.inf, -1.0], n + 1), np.tile([np.inf, np.inf, 1.0], n + 1)
    want = ipopt(x0=0.0, lbx=bounds[0], ubx=bounds[1], lbg=0.0, ubg=0.0)
    assert ipopt.stats()["success"]
    for solver in (SparseIPMFunction("term_ipm", ocp), SparseSQPFunction("term_sqp", ocp, SETTINGS)):
        res = solver(np.zeros(ocp.nvars), p=x_init)
        assert res.status == SQPStatus.SOLVED, (solver.name, res.status)
        assert abs(res.objective - float(want["f"])) <= 1e-7 * float(want["f"]), (solver.name, res.objective)
        np.testing.assert_allclose(res.X[-1], 0.0, atol=1e-8)
        close(res.x[: 3 * n], np.asarray(want["x"]).ravel()[: 3 * n], 1e-5, f"{solver.name} x")
        # Multipliers: initial state, dynamics, then the terminal rows (CasADi's order).
        close(res.lam_eq, np.asarray(want["lam_g"]).ravel(), 1e-4, f"{solver.name} lam_eq")
    again = pickle.loads(pickle.dumps(ocp))
    assert again.terminal_constraints_fn is not None and again.neq == ocp.neq
    with pytest.raises((TypeError, ValueError), match="terminal_constraints_fn must take"):
        MultistageProblem.from_dynamics(N=n, nx=2, nu=1, dynamics_fn=step, terminal_constraints_fn=cost)


def min_time_problem(n, t_lb, name):
    """The least time T (shared by every step: x_{k+1} = x_k + T/N f(x_k, u_k)) that moves a
    double integrator from rest at 0 to rest at 1, |u| <= 1, T in [t_lb, 10], plus 0.01 u²."""
    xusp = (av.Arg(2), av.Arg(1), av.Arg(1), av.Arg(0))
    xsp = (av.Arg(2), av.Arg(1), av.Arg(0))
    step = av.NumericalFunction(
        f"{name}_step", lambda x, u, s, p: x + s[0] / n * av.Tensor.stack(x[1], u[0]), xusp
    )
    effort = av.NumericalFunction(f"{name}_effort", lambda x, u, s, p: 0.01 * u[0] ** 2, xusp)
    time = av.NumericalFunction(f"{name}_time", lambda x, s, p: s[0], xsp)
    rest = av.NumericalFunction(f"{name}_rest", lambda x, s, p: x - np.array([1.0, 0.0]), xsp)
    return MultistageProblem.from_dynamics(
        N=n, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=effort, terminal_cost_fn=time,
        terminal_constraints_fn=rest, u_lb=-1.0, u_ub=1.0, shared_dim=1, shared_lb=t_lb, shared_ub=10.0,
    )


def min_time_ipopt(n, t_lb):
    """Ipopt on the same NLP written out, the variables ordered as anvil's: (x_k, u_k) by stage, then T."""
    z = cs.SX.sym("z", 3 * (n + 1) + 1)
    t = z[-1]
    xs = [z[3 * k : 3 * k + 2] for k in range(n + 1)]
    us = [z[3 * k + 2] for k in range(n + 1)]
    f = t + sum(0.01 * us[k] ** 2 for k in range(n))
    g = cs.vertcat(
        xs[0],
        *[xs[k + 1] - (xs[k] + t / n * cs.vertcat(xs[k][1], us[k])) for k in range(n)],
        xs[n] - cs.DM([1.0, 0.0]),
    )
    lb = np.r_[np.tile([-np.inf, -np.inf, -1.0], n + 1), t_lb]
    ub = np.r_[np.tile([np.inf, np.inf, 1.0], n + 1), 10.0]
    x0 = np.r_[np.zeros(3 * (n + 1)), 2.0]
    return ipopt({"x": z, "f": f, "g": g}, {"lbx": lb, "ubx": ub, "lbg": 0.0, "ubg": 0.0}, x0)


@pytest.mark.parametrize("t_lb", [0.5, 2.5])
def test_a_shared_free_final_time_agrees_with_ipopt(t_lb):
    """``shared_dim=1``: the final time is one variable at the end of x (``res.S``), which
    every solver reaches as Ipopt does on the NLP with T written once: x, the objective, the
    multipliers of the user's rows, and T's bound multiplier (binding where t_lb = 2.5)."""
    n = 20
    tag = "free" if t_lb < 1 else "slow"
    problem = min_time_problem(n, t_lb, f"mt_{tag}")
    assert (problem.nvars, problem.neq, problem.shared_dim) == (3 * (n + 1) + 1, 2 * n + 4, 1)
    want = min_time_ipopt(n, t_lb)
    guess = np.r_[np.zeros(3 * (n + 1)), 2.0]
    solvers = [SparseIPMFunction(f"mt_{tag}_ipm", problem, IPMSettings(tol=1e-10))]
    solvers += [SparseSQPFunction(f"mt_{tag}_{b}", problem, SETTINGS, qp_backend=b) for b in ("riccati", "piqp")]
    for solver in solvers:
        res = solver(guess, p=[0.0, 0.0])
        assert res.status == SQPStatus.SOLVED, (solver.name, res.status)
        # The interior-point method relaxes bounds by 1e-8 (relative), as Ipopt does.
        assert max(res.stat_res, res.eq_res, res.ineq_res, res.comp_res) <= 1e-7, res
        close(res.x, want["x"], 1e-6, f"{solver.name} x")
        close(res.objective, want["f"], 1e-8, f"{solver.name} objective")
        close(res.lam_eq, want["lam_g"], 1e-5, f"{solver.name} lam_eq")
        close(res.lam_box, want["lam_x"], 1e-5, f"{solver.name} lam_box")
        assert res.S is not None and res.S.shape == (1,) and res.S[0] == res.x[-1]
        assert res.X.shape == (n + 1, 2) and res.U.shape == (n, 1)
        np.testing.assert_allclose(res.X[-1], [1.0, 0.0], atol=1e-8)
    if t_lb > 1:
        assert abs(want["x"][-1] - t_lb) < 1e-7 and want["lam_x"][-1] < -1e-3, "the bound binds"
    # The MPC shift keeps T; the problem travels with its shared variable.
    shifted = problem.shift(res)
    assert shifted.S[0] == res.S[0] and shifted.x.size == problem.nvars
    again = pickle.loads(pickle.dumps(problem))
    assert (again.shared_dim, again.nvars) == (1, problem.nvars)
    res = SparseIPMFunction(f"mt_{tag}_again", again, IPMSettings(tol=1e-10))(guess, p=[0.0, 0.0])
    close(res.x, want["x"], 1e-6, "again")


def test_shared_variables_that_do_not_fit_are_clear_errors():
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    step = av.NumericalFunction("sv_step", lambda x, u, p: x + 0.1 * av.Tensor.stack(x[1], u[0]), xup)
    with pytest.raises(ValueError, match=r"shared_dim = 1, but dynamics_fn takes .*\(x, u, s, p\)"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=step, shared_dim=1)
    with pytest.raises(ValueError, match="shared_lb/shared_ub are given but shared_dim is 0"):
        MultistageProblem.from_dynamics(N=5, nx=2, nu=1, dynamics_fn=step, shared_lb=0.0)
    with pytest.raises(ValueError, match="shared_dim must be >= 0"):
        MultistageProblem(N=5, nz=2, shared_dim=-1)
    cost = av.NumericalFunction("sv_cost", lambda z, g, p: (z**2).sum(), (av.Arg(2), av.Arg(0), av.Arg(0)))
    with pytest.raises(ValueError, match=r"\(z, s, p_global, p_i\)"):
        MultistageProblem(N=5, nz=2, cost_stage_fn=cost, shared_dim=1)
    with pytest.raises(ValueError, match="shared_lb"):
        MultistageProblem(N=5, nz=2, shared_dim=2, shared_lb=[0.0, 1.0, 2.0])
    problem = min_time_problem(5, 0.5, "sv_fit")
    solver = SparseIPMFunction("sv_fit_ipm", problem)
    with pytest.raises(ValueError, match=r"x0 must have shape \(19,\) \(6 stages of \(x, u\), 2 \+ 1 entries each, then 1 shared\)"):
        solver(np.zeros(18), p=[0.0, 0.0])
    with pytest.raises(ValueError, match="shared_lb.*NaN"):
        MultistageProblem(N=5, nz=2, shared_dim=1, shared_lb=np.nan)
    # A NaN in the shared part of the guess reaches the lifted solver's check through the
    # generated wrapper's copies.
    res = solver(np.r_[np.zeros(18), np.nan], p=[0.0, 0.0])
    assert res.status == SQPStatus.INVALID_INPUT and res.invalid_input == "x0", res


def test_initial_constraints_free_part_of_the_first_state_as_ipopt_does():
    """``initial_constraints_fn``: rows on the first stage in place of ``x_0 = x_init`` (the
    position starts at 1, the velocity is the solver's), with no x_init parameter; both
    solvers reach Ipopt's optimum of the same NLP, multipliers included."""
    n, dt = 20, 0.1
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    step = av.NumericalFunction("ic_step", lambda x, u, p: av.Tensor.stack(x[0] + dt * x[1], x[1] + dt * u[0]), xup)
    cost = av.NumericalFunction("ic_cost", lambda x, u, p: (x**2).sum() + 0.1 * (u**2).sum(), xup)
    start = av.NumericalFunction("ic_start", lambda x, u, p: x[0:1] - 1.0, xup)
    ocp = MultistageProblem.from_dynamics(
        N=n, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=cost, u_lb=-1.0, u_ub=1.0, initial_constraints_fn=start
    )
    assert (ocp.neq, ocp.param_size, ocp.global_param_dim) == (1 + 2 * n, 0, 0)
    z = cs.SX.sym("z", 3 * (n + 1))
    xs = [z[3 * k : 3 * k + 2] for k in range(n + 1)]
    us = [z[3 * k + 2] for k in range(n + 1)]
    f = sum(cs.sumsqr(xs[k]) + 0.1 * us[k] ** 2 for k in range(n))
    g = cs.vertcat(xs[0][0] - 1.0, *[xs[k + 1] - cs.vertcat(xs[k][0] + dt * xs[k][1], xs[k][1] + dt * us[k]) for k in range(n)])
    bounds = {"lbx": np.tile([-np.inf, -np.inf, -1.0], n + 1), "ubx": np.tile([np.inf, np.inf, 1.0], n + 1), "lbg": 0.0, "ubg": 0.0}
    want = ipopt({"x": z, "f": f, "g": g}, bounds)
    assert abs(want["x"][1]) > 0.1, "the first velocity is free and moves"
    for solver in (SparseIPMFunction("ic_ipm", ocp, IPMSettings(tol=1e-10)), SparseSQPFunction("ic_sqp", ocp, SETTINGS)):
        res = solved(solver(np.zeros(ocp.nvars)))
        close(res.x, want["x"], 1e-6, f"{solver.name} x")
        close(res.lam_eq, want["lam_g"], 1e-5, f"{solver.name} lam_eq")
        close(res.lam_box, want["lam_x"], 1e-5, f"{solver.name} lam_box")
    with pytest.raises(ValueError, match=r"p must have shape \(0,\) \(21 stage parameters of 0 entries; no x_init"):
        SparseIPMFunction("ic_ipm", ocp)(np.zeros(ocp.nvars), p=[1.0, 0.0])
    again = pickle.loads(pickle.dumps(ocp))
    assert again.initial_constraints_fn is not None and again.neq == ocp.neq
    with pytest.raises((TypeError, ValueError), match="initial_constraints_fn must take"):
        MultistageProblem.from_dynamics(N=n, nx=2, nu=1, dynamics_fn=step, initial_constraints_fn=av.NumericalFunction("ic_bad", lambda x, p: x, (av.Arg(2), av.Arg(0))))


def test_infeasible_multistage_problems_end_infeasible_for_both_solvers():
    """Problems without a feasible point end INFEASIBLE, not QP_FAILED: an unreachable terminal
    state (rest at 100 in 2 s with |u| <= 1), an initial state outside the state bounds, a
    state bound that the initial velocity must overshoot (explicit dynamics, no terminal
    rows: the Riccati recursion's QP), and contradictory stage equalities. The SQP's QP relaxes
    its rows (the elastic QP, by the z-form's recursion) when a QP fails, and stops where the
    violation cannot decrease."""
    dt = 0.1
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    step = av.NumericalFunction("inf_step", lambda x, u, p: av.Tensor.stack(x[0] + dt * x[1], x[1] + dt * u[0]), xup)
    effort = av.NumericalFunction("inf_effort", lambda x, u, p: 0.1 * (u**2).sum(), xup)
    far = av.NumericalFunction("inf_far", lambda x, p: x - np.array([100.0, 0.0]), (av.Arg(2), av.Arg(0)))
    unreachable = MultistageProblem.from_dynamics(
        N=20, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=effort, u_lb=-1, u_ub=1, terminal_constraints_fn=far
    )
    boxed = MultistageProblem.from_dynamics(
        N=20, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=effort, u_lb=-1, u_ub=1, x_lb=[-1, -1], x_ub=[1, 1]
    )
    st = (av.Arg(2), av.Arg(0), av.Arg(0))
    contradictory = MultistageProblem(
        N=10,
        nz=2,
        cost_stage_fn=av.NumericalFunction("inf_l", lambda z, g, p: (z**2).sum(), st),
        eq_stage_fn=av.NumericalFunction("inf_c", lambda z, g, p: av.Tensor.stack(z[0] - 1.0, z[0] - 2.0), st),
    )
    overshoot = MultistageProblem.from_dynamics(
        N=20, nx=2, nu=1, dynamics_fn=step, stage_cost_fn=effort, u_lb=-1, u_ub=1, x_lb=[-1, -20], x_ub=[1, 20]
    )
    cases = [
        ("unreachable", unreachable, [0.0, 0.0]),
        ("boxed", boxed, [2.0, 0.0]),
        ("overshoot", overshoot, [0.0, 10.0]),
        ("contradictory", contradictory, None),
    ]
    for name, problem, p in cases:
        for solver in (SparseSQPFunction(f"inf_{name}_sqp", problem, SETTINGS), SparseIPMFunction(f"inf_{name}_ipm", problem)):
            res = solver(np.zeros(problem.nvars), p=p)
            assert res.status == SQPStatus.INFEASIBLE, (solver.name, res.status, res.iterations)
            assert res.eq_res > 0.4, (solver.name, res.eq_res)


def test_the_sqp_recovers_from_an_infeasible_first_qp():
    """From T = 1 the least-time problem's first linearisation cannot reach the target (the
    steps' sensitivity to T is zero at rest, and |u| <= 1 covers 0.25 in 1 s): its QP is
    infeasible. The Riccati QP's elastic form takes the step, and the SQP reaches Ipopt's
    optimum from there."""
    n = 20
    problem = min_time_problem(n, 0.5, "rec_mt")
    want = min_time_ipopt(n, 0.5)
    res = solved(SparseSQPFunction("rec_mt_sqp", problem, SETTINGS)(np.r_[np.zeros(3 * (n + 1)), 1.0], p=[0.0, 0.0]))
    close(res.x, want["x"], 1e-6, "x")
    close(res.objective, want["f"], 1e-8, "objective")


def test_the_free_final_time_example_runs_as_documented(capsys):
    """examples/min_time.py: both solvers reach T = 2 (the bang-bang optimum: accelerate for
    one second, brake for one) from a guess whose first QP is infeasible."""
    import runpy

    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "min_time.py")
    scope = runpy.run_path(path)
    out = capsys.readouterr().out
    assert "interior point: SOLVED, T = 2.0000" in out and "SQP:            SOLVED, T = 2.0000" in out
    u = scope["res"].U[:, 0]
    np.testing.assert_allclose(u[:20], 1.0, atol=1e-4)
    np.testing.assert_allclose(u[20:], -1.0, atol=1e-4)


def test_the_motion_planning_example_runs_as_documented(capsys):
    """examples/motion_planning.py (rockit's example): both solvers at Ipopt's optimum (J =
    11.513019, T = 10.2881 from tests/peer_problems.py's CasADi form), the path clear of the
    obstacle at every grid point, the last one included (the terminal inequality)."""
    import runpy

    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples", "motion_planning.py")
    scope = runpy.run_path(path)
    out = capsys.readouterr().out
    assert "interior point: SOLVED, J = 11.513019, T = 10.2881" in out, out
    assert "SQP:            SOLVED, J = 11.513019, T = 10.2881" in out, out
    x = scope["res"].X
    assert np.all(np.hypot(x[:, 0] - 0.2, x[:, 1] - 5.0) >= 1.0 - 1e-7)


def test_state_and_control_bounds_by_stage_in_the_dynamics_form_bind_where_they_hold():
    """``from_dynamics``' x_lb/x_ub as an (N + 1, nx) array and u_lb/u_ub as an (N, nu) one: a
    double integrator's final position at most 0.3 (0.6 without) and its first force within
    ±0.3 (the others ±1) solve as the same limits written as a terminal inequality and a path
    constraint bounded step by step, each bound's multiplier the row's, by the interior-point
    solver by stages and the SQP by stages."""
    n = 20
    xup, xp = (av.Arg(2), av.Arg(1), av.Arg(0)), (av.Arg(2), av.Arg(0))
    step = av.NumericalFunction("sb_f", lambda x, u, p: av.Tensor.stack(x[0] + 0.1 * x[1], x[1] + 0.1 * u[0]), xup)
    cost = av.NumericalFunction("sb_l", lambda x, u, p: (x**2).sum() + 0.1 * (u**2).sum(), xup)
    end = av.NumericalFunction("sb_lf", lambda x, p: 10.0 * (x**2).sum(), xp)
    force_limits = np.r_[0.3, np.ones(n - 1)]
    x_ub = np.full((n + 1, 2), np.inf)
    x_ub[n, 0] = 0.3
    common = {"N": n, "nx": 2, "nu": 1, "dynamics_fn": step, "stage_cost_fn": cost, "terminal_cost_fn": end}
    by_stage = MultistageProblem.from_dynamics(**common, x_ub=x_ub, u_lb=-force_limits[:, None], u_ub=force_limits[:, None])
    rows = MultistageProblem.from_dynamics(
        **common,
        path_constraints_fn=av.NumericalFunction("sb_force", lambda x, u, p: u, xup),
        path_lb=-force_limits[:, None],
        path_ub=force_limits[:, None],
        terminal_ineq_fn=av.NumericalFunction("sb_end", lambda x, p: x[0].reshape(1), xp),
        terminal_ineq_ub=0.3,
        u_lb=-1.0,
        u_ub=1.0,
    )
    assert (by_stage.nineq, rows.nineq) == (0, n + 1)
    x0, x_init = np.zeros(by_stage.nvars), np.array([1.0, 0.5])
    for cls, kind in ((SparseIPMFunction, "ipm"), (SparseSQPFunction, "sqp")):
        want = cls(f"sb_bounds_{kind}", by_stage)(x0, p=x_init)
        got = cls(f"sb_rows_{kind}", rows)(x0, p=x_init)
        assert want.status == got.status == SQPStatus.SOLVED, (kind, want.status, got.status)
        np.testing.assert_allclose(got.x, want.x, atol=1e-6, err_msg=kind)
        first_force, last_position = 2, 3 * n
        assert abs(want.X[n, 0] - 0.3) < 1e-6 and abs(want.U[0, 0]) > 0.3 - 1e-6, kind
        lam = np.r_[want.lam_box[first_force], want.lam_box[last_position]]
        assert np.all(np.abs(lam) > 1e-3), (kind, lam)
        np.testing.assert_allclose(np.asarray(got.lam_ineq)[[0, -1]], lam, rtol=1e-4, atol=1e-7, err_msg=kind)

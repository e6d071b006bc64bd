"""anvil.opti: SQP solvers against Ipopt and the literature, statuses, the API, bad input.

The oracle is Ipopt (through CasADi, a test dependency) solved to 1e-10 on the same problems
(opti_problems.py); literature optima check both.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import casadi as cs
import numpy as np
import pytest

import anvil as av
from anvil.opti import (
    DenseProblem,
    DenseSQPFunction,
    HessianApproximation,
    SparseProblem,
    SparseSQPFunction,
    SQPResult,
    SQPSettings,
    SQPStatus,
)

sys.path.insert(0, os.path.dirname(__file__))
from opti_problems import PROBLEMS, anvil_problem, casadi_nlp  # noqa: E402

CASES = [(spec, sparse) for spec in PROBLEMS for sparse in (False, True) if sparse or not spec.large]


def ipopt(spec):
    nlp, bounds, neq = casadi_nlp(spec)
    opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.tol": 1e-10, "ipopt.sb": "yes"}
    solver = cs.nlpsol("ipopt_" + spec.name, "ipopt", nlp, opts)
    r = solver(x0=spec.x0, **bounds)
    assert solver.stats()["success"], f"Ipopt failed on {spec.name}"
    lam_g = np.asarray(r["lam_g"]).ravel()
    return {
        "x": np.asarray(r["x"]).ravel(),
        "f": float(r["f"]),
        "lam_eq": lam_g[:neq],
        "lam_ineq": lam_g[neq:],
        "lam_box": np.asarray(r["lam_x"]).ravel(),
    }


def close(got, want, tol, what):
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    scale = 1.0 + np.max(np.abs(want), initial=0.0)
    err = np.max(np.abs(got - want), initial=0.0)
    assert err <= tol * scale, f"{what}: max |error| {err:.3g} > {tol:g} * {scale:.3g}\n got {got}\nwant {want}"


@pytest.mark.parametrize("spec,sparse", CASES, ids=[f"{s.name}-{'sparse' if sp else 'dense'}" for s, sp in CASES])
def test_agrees_with_ipopt_and_the_literature(spec, sparse):
    cls = SparseSQPFunction if sparse else DenseSQPFunction
    solver = cls(name=f"t_{spec.name}_{'s' if sparse else 'd'}", problem=anvil_problem(spec, sparse))
    res = solver(np.array(spec.x0))
    assert res.status == SQPStatus.SOLVED, res
    assert res.success
    want = ipopt(spec)
    close(res.x, want["x"], 1e-6, "x")
    close(res.objective, want["f"], 1e-6, "objective")
    if spec.f_opt is not None:
        close(res.objective, spec.f_opt, 1e-6, "objective vs the literature")
    for r in (res.stat_res, res.eq_res, res.ineq_res, res.comp_res):
        assert r <= 1e-8
    if spec.unique_multipliers:
        for key in ("lam_eq", "lam_ineq", "lam_box"):
            close(getattr(res, key), want[key], 1e-6, key)
    # Far from the solution a QP is solved loosely, sometimes at its starting point (0 QP
    # iterations); the count still adds up over the solve.
    assert res.iterations >= 1 and res.qp_iterations >= 1
    assert 0.0 < res.solve_time < 10.0


# The interior-point QP backend (qp_backend="ipm") on problems of every kind in the
# collection: equalities, inequalities, bounds, degenerate multipliers, a large sparse one.
IPM_QP_CASES = [
    (spec, sparse)
    for spec, sparse in CASES
    if (spec.name, sparse)
    in {
        ("guide", False),
        ("hs014", False),
        ("hs035", False),
        ("hs065", False),
        ("hs071", False),
        ("hs076", False),
        ("hs100", False),
        ("rosen_eq", False),
        ("chain150", True),
    }
]


@pytest.mark.parametrize(
    "spec,sparse", IPM_QP_CASES, ids=[f"{s.name}-{'sparse' if sp else 'dense'}" for s, sp in IPM_QP_CASES]
)
def test_ipm_qp_backend_agrees_with_ipopt(spec, sparse):
    cls = SparseSQPFunction if sparse else DenseSQPFunction
    solver = cls(name=f"tq_{spec.name}_{'s' if sparse else 'd'}", problem=anvil_problem(spec, sparse), qp_backend="ipm")
    assert solver.qp_backend == "ipm"
    res = solver(np.array(spec.x0))
    assert res.status == SQPStatus.SOLVED, res
    want = ipopt(spec)
    close(res.x, want["x"], 1e-6, "x")
    close(res.objective, want["f"], 1e-6, "objective")
    for r in (res.stat_res, res.eq_res, res.ineq_res, res.comp_res):
        assert r <= 1e-8
    if spec.unique_multipliers:
        for key in ("lam_eq", "lam_ineq", "lam_box"):
            close(getattr(res, key), want[key], 1e-6, key)
    assert res.qp_iterations >= 1


def test_qp_backend_names_are_checked():
    problem = projection()
    assert DenseSQPFunction(name="qpb_default", problem=problem).qp_backend == "piqp"
    expected = 'unknown qp_backend "riccati" for a DenseSQPFunction; choose one of "piqp", "ipm"'
    with pytest.raises(ValueError, match=re.escape(expected)):
        DenseSQPFunction(name="qpb_bad", problem=problem, qp_backend="riccati")
    with pytest.raises(ValueError, match=r"for a SparseSQPFunction"):
        SparseSQPFunction(name="qpb_bad", problem=problem, qp_backend="osqp")
    with pytest.raises(TypeError, match="qp_backend must be a str or None"):
        DenseSQPFunction(name="qpb_bad", problem=problem, qp_backend=1)  # type: ignore[arg-type]


# A problem with a parameter: the projection of p onto the line x0 + x1 = 1, x0 <= 0.2.
def projection(cls=DenseProblem, **settings_kw):
    args = (av.Arg(2), av.Arg(2))
    f = av.NumericalFunction("proj_f", lambda x, p: ((x - p) ** 2).sum(), args)
    g = av.NumericalFunction("proj_g", lambda x, p: x.sum().reshape(1), args)
    return cls(cost_fn=f, eq_constraints_fn=g, eq_rhs=[1.0], x_ub=[0.2, np.inf])


@pytest.fixture(scope="module")
def proj_solver():
    return DenseSQPFunction(name="proj", problem=projection())


def test_parameters_reach_the_callbacks(proj_solver):
    for p in ([0.0, 0.0], [-1.0, 3.0], [0.5, 0.9]):
        res = proj_solver([0.0, 0.0], p=np.array(p))
        shift = (1.0 - sum(p)) / 2
        x = np.array(p) + shift
        if x[0] > 0.2:  # the bound is active: x = (0.2, 0.8)
            x = np.array([0.2, 0.8])
        np.testing.assert_allclose(res.x, x, atol=1e-9)
        assert res.status == SQPStatus.SOLVED
    # A problem with a parameter needs it: a missing p is an error, not zeros.
    with pytest.raises(TypeError, match=r"give the parameter p, of shape \(2,\)"):
        proj_solver([0.0, 0.0])


def test_multiplier_signs_follow_casadi(proj_solver):
    # p = 0: x = (0.2, 0.8); the upper bound of x0 is active: lam_box[0] > 0.
    res = proj_solver([0.0, 0.0], p=np.zeros(2))
    # Stationarity: 2(x - p) + lam_eq + lam_box = 0.
    np.testing.assert_allclose(res.lam_eq, [-1.6], atol=1e-8)
    np.testing.assert_allclose(res.lam_box, [1.2, 0.0], atol=1e-8)
    # An active lower bound is negative.
    s = DenseSQPFunction(name="lower", problem=DenseProblem(cost_fn=one_var_cost(), x_lb=[3.0]))
    assert s([5.0]).lam_box[0] == pytest.approx(-6.0, abs=1e-8)


def one_var_cost():
    return av.NumericalFunction("sq", lambda x, p: (x**2).sum(), (av.Arg(1), av.Arg(0)))


def test_calls_carry_no_state_and_warm_starts_are_used(proj_solver):
    a = proj_solver([3.0, -2.0], p=[0.3, 0.1])
    b = proj_solver([3.0, -2.0], p=[0.3, 0.1])
    np.testing.assert_array_equal(a.x, b.x)
    np.testing.assert_array_equal(a.lam_eq, b.lam_eq)
    assert a.iterations == b.iterations
    # From the solution with its multipliers, it is solved at once.
    c = proj_solver(a.x, p=[0.3, 0.1], lam_eq0=a.lam_eq, lam_ineq0=a.lam_ineq, lam_box0=a.lam_box)
    assert c.status == SQPStatus.SOLVED and c.iterations == 0
    np.testing.assert_allclose(c.x, a.x, atol=1e-12)


def test_dense_and_sparse_agree_and_gauss_newton_converges():
    spec = next(s for s in PROBLEMS if s.name == "hs071")
    d = DenseSQPFunction(name="agree_d", problem=anvil_problem(spec, False))(spec.x0)
    s = SparseSQPFunction(name="agree_s", problem=anvil_problem(spec, True))(spec.x0)
    close(s.x, d.x, 1e-8, "x")
    close(s.lam_ineq, d.lam_ineq, 1e-6, "lam_ineq")
    # Rosenbrock as least squares: r = (10 (x1 - x0^2), 1 - x0), on the disk |x|^2 <= 1.5.
    args = (av.Arg(2), av.Arg(0))
    r = av.NumericalFunction("rosen_r", lambda x, p: av.Tensor.stack(10.0 * (x[1] - x[0] ** 2), 1.0 - x[0]), args)
    h = av.NumericalFunction("disk", lambda x, p: (x**2).sum().reshape(1), args)
    settings = SQPSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    for cls, problem in ((DenseSQPFunction, DenseProblem), (SparseSQPFunction, SparseProblem)):
        gn = cls(
            name=f"gn_{cls.__name__}",
            problem=problem(cost_fn=r, ineq_constraints_fn=h, ineq_ub=1.5),
            settings=settings,
        )
        res = gn([-1.2, 1.0])
        assert res.status == SQPStatus.SOLVED, res
        # The objective is 1/2 |r|^2; the optimum lies on the circle (Ipopt: x = (0.9072, 0.8228)).
        assert res.objective == pytest.approx(0.5 * (100 * (res.x[1] - res.x[0] ** 2) ** 2 + (1 - res.x[0]) ** 2))
        assert (res.x**2).sum() == pytest.approx(1.5, abs=1e-8)
        assert res.lam_ineq[0] > 0


def test_verbose_prints_one_line_per_iteration(capfd):
    solver = DenseSQPFunction(name="loud", problem=projection(), settings=SQPSettings(verbose=1))
    res = solver([4.0, 4.0], p=[1.0, 1.0])
    lines = [ln for ln in capfd.readouterr().out.splitlines() if ln.strip()]
    assert lines[0].split()[:2] == ["iter", "objective"]
    assert len(lines) == 1 + res.iterations + 1
    quiet = DenseSQPFunction(name="loud", problem=projection())
    quiet([4.0, 4.0], p=[1.0, 1.0])
    assert capfd.readouterr().out == ""


@pytest.mark.parametrize("filter_search", [False, True], ids=["merit", "filter"])
def test_second_order_correction_takes_full_steps_through_the_maratos_effect(capfd, filter_search):
    # Powell's example (Nocedal & Wright, example 15.4): min 2(x'x - 1) - x0 on the unit
    # circle, from a point on it. The full SQP steps converge, but each raises both the cost
    # and the violation, so the monotone l1 merit function and the filter both backtrack; the
    # second-order correction bends the step onto the circle and keeps it whole.
    from opti_problems import Spec

    theta = 0.5
    spec = Spec(
        name="maratos",
        n=2,
        x0=[np.cos(theta), np.sin(theta)],
        cost=lambda x, m: 2 * (x[0] ** 2 + x[1] ** 2 - 1) - x[0],
        eq=lambda x, m: m.vec([x[0] ** 2 + x[1] ** 2 - 1]),
    )

    def steps(soc: bool) -> tuple[SQPResult, list[float], list[str]]:
        settings = SQPSettings(second_order_correction=soc, filter=filter_search, merit_memory=1, verbose=1)
        name = f"maratos_{int(soc)}_{int(filter_search)}"
        res = DenseSQPFunction(name, anvil_problem(spec, False), settings)(spec.x0)
        rows = [ln.split() for ln in capfd.readouterr().out.splitlines() if ln.strip()]
        return res, [float(r[7]) for r in rows[2:]], [r[9] for r in rows[2:]]

    res, with_soc, kinds = steps(True)
    res0, without, _ = steps(False)
    for r in (res, res0):
        assert r.status == SQPStatus.SOLVED
        np.testing.assert_allclose(r.x, [1.0, 0.0], atol=1e-7)
    assert with_soc == [1.0] * res.iterations, with_soc
    # Upper case: the step was a correction (F by the filter, M by the merit function).
    assert ("F" if filter_search else "M") in kinds, kinds
    assert min(without) < 1.0 and res.iterations < res0.iterations, (without, res.iterations)
    with pytest.raises(TypeError, match="SQPSettings.second_order_correction must be a bool, got 1"):
        DenseSQPFunction("maratos_bad", anvil_problem(spec, False), SQPSettings(second_order_correction=1))


def _ipopt_from(spec, x0):
    nlp, bounds, _ = casadi_nlp(spec)
    opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"}
    solver = cs.nlpsol("ipopt_from_" + spec.name, "ipopt", nlp, opts)
    r = solver(x0=x0, **bounds)
    return {"success": solver.stats()["success"], "iterations": solver.stats()["iter_count"], "f": float(r["f"])}


def _agrees(res, want, what):
    assert want["success"] and res.status == SQPStatus.SOLVED, (what, res.status, res.iterations)
    assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (what, res.objective, want["f"])


def _cops_nlp(name, size):
    """The COPS NLP `name` at `size`: its Spec and its guesses (the COPS one, a plainer one)."""
    import cops_nlp

    return cops_nlp.PROBLEMS[name](size)


def _cops_nlp_spec(name, size):
    return _cops_nlp(name, size)[0]


def _cops_with_and_without(name, size, setting, max_iter):
    """The COPS NLP `name` from its plainer guess: Ipopt's result, and the sparse SQP's with
    the boolean `setting` on (key True) and off (key False)."""
    spec, starts = _cops_nlp(name, size)
    runs = {}
    for on in (True, False):
        settings = SQPSettings(max_iter=max_iter, **{setting: on})
        solver = SparseSQPFunction(f"{name}_{setting}_{int(on)}", anvil_problem(spec, True), settings)
        runs[on] = solver(starts[1])
    return _ipopt_from(spec, starts[1]), runs


def test_the_merit_penalty_comes_down_and_the_filter_needs_none(capfd):
    # COPS gas oil (parameter estimation, 3 parameters, collocated ODE) from the plainer
    # guess: each step trades a little of the collocation equations' violation for much of
    # the least-squares cost. A penalty that could only rise (raised once by a nearly
    # feasible iterate, whose rule divides by its tiny violation) priced that violation too
    # high: steps of 1e-3 for the whole budget. Powell's rule lets it come down towards the
    # multipliers; the filter, which needs no penalty, takes Ipopt's steps.
    want, runs = _cops_with_and_without("gasoil", 25, "filter", max_iter=100)
    _agrees(runs[True], want, "filter")
    assert runs[True].iterations <= 2 * want["iterations"], (runs[True].iterations, want["iterations"])
    _agrees(runs[False], want, "merit")
    assert runs[True].iterations < runs[False].iterations, (runs[True].iterations, runs[False].iterations)
    # verbose=2 prints each step's penalty: it comes down as well as up.
    spec, starts = _cops_nlp("gasoil", 25)
    SparseSQPFunction("gasoil_penalty", anvil_problem(spec, True), SQPSettings(max_iter=100, verbose=2))(starts[1])
    penalties = [float(m) for m in re.findall(r"merit penalty ([0-9.e+-]+),", capfd.readouterr().out)]
    assert len(penalties) == runs[False].iterations, (len(penalties), runs[False].iterations)
    assert any(b < 0.9 * a for a, b in zip(penalties, penalties[1:])), penalties
    for bad in (1, float("nan")):
        with pytest.raises(TypeError, match="SQPSettings.filter must be a bool"):
            SparseSQPFunction("gasoil_ls_bad", anvil_problem(_cops_nlp_spec("gasoil", 25), True), SQPSettings(filter=bad))


def test_second_order_corrections_follow_strongly_curved_equations():
    # COPS flow in a channel from the plainer guess: a square nonlinear system (the cost is
    # constant) whose Newton step of length 100 raises the violation from 1 to 6e3. Repeated
    # corrections (the chord steps d - J^-1 c(x + d)) bring it to 6e-3, so the step is taken
    # whole, as Ipopt's three corrections do: two iterations. One correction is not enough,
    # and backtracking alone takes steps of 1e-4.
    want, runs = _cops_with_and_without("channel", 50, "second_order_correction", max_iter=30)
    _agrees(runs[True], want, "with corrections")
    assert runs[True].iterations <= want["iterations"] + 1, (runs[True].iterations, want["iterations"])
    assert runs[False].status == SQPStatus.MAX_ITER, runs[False].status


@pytest.mark.parametrize("filter_search", [False, True], ids=["merit", "filter"])
def test_a_failed_qp_is_followed_by_a_restoration_step(capfd, filter_search):
    # HS 103 from a perturbed start: after a dozen steps the multipliers reach 1e15 and the
    # QP fails however the Hessian is convexified. A restoration step (the QP without the
    # cost, its Hessian the cost's alone; 'r' in the log) reduces the violation instead, the
    # multipliers start afresh, and the solve goes on to the optimum. It ended QP_FAILED.
    import hock_schittkowski
    from opti_problems import perturbed_starts

    spec = next(s for s in hock_schittkowski.PROBLEMS if s.name == "hs103")
    x0 = perturbed_starts(spec)[1]
    settings = SQPSettings(max_iter=200, filter=filter_search, verbose=1)
    res = DenseSQPFunction(f"hs103_restore_{int(filter_search)}", anvil_problem(spec, False), settings)(x0)
    kinds = [ln.split()[-1] for ln in capfd.readouterr().out.splitlines()[2:] if ln.strip()]
    _agrees(res, _ipopt_from(spec, x0), "hs103")
    assert "r" in kinds, kinds


@pytest.mark.parametrize("name, start", [("hs093", 1), ("hs099", 2)])
def test_an_infeasibility_verdict_on_the_bounds_is_checked_from_the_interior(capfd, name, start):
    # HS 93 from a perturbed start sits with two factors of its product constraint on their
    # bound 0, where the constraint's gradient vanishes; HS 99 steps onto a vertex of its box.
    # There no direction along the linearisation reduces the violation, and the solves ended
    # INFEASIBLE (HS 93 at its start). The iterate is now pushed into the interior as Ipopt
    # pushes its start ('p' in the log) before the verdict stands: both reach Ipopt's optimum.
    import hock_schittkowski
    from opti_problems import perturbed_starts

    spec = next(s for s in hock_schittkowski.PROBLEMS if s.name == name)
    x0 = perturbed_starts(spec)[start]
    settings = SQPSettings(max_iter=200, verbose=1)
    res = DenseSQPFunction(f"{name}_pushed", anvil_problem(spec, False), settings)(x0)
    kinds = [ln.split()[-1] for ln in capfd.readouterr().out.splitlines()[2:] if ln.strip()]
    _agrees(res, _ipopt_from(spec, x0), name)
    assert "p" in kinds, kinds


def test_stationarity_is_measured_against_the_multipliers_scale():
    # HS 99: a cost of -8e8 with gradients of 1e8. The rounding error in grad f + J'lam is
    # 1e-7, above the tolerance 1e-8 however often the SQP steps; Ipopt's test divides it by
    # the multipliers' mean magnitude over 100 (its s_d), and so does the SQP's now. It ran
    # to max_iter at the optimum.
    import hock_schittkowski

    spec = next(s for s in hock_schittkowski.PROBLEMS if s.name == "hs099")
    res = DenseSQPFunction("hs099_scaled", anvil_problem(spec, False), SQPSettings(max_iter=100))(spec.x0)
    _agrees(res, _ipopt_from(spec, spec.x0), "hs099")
    assert res.stat_res > 1e-8 and res.iterations < 20, (res.stat_res, res.iterations)


@pytest.mark.parametrize("name", ["hs084", "hs099"])
def test_the_convergence_test_scales_the_problem_as_ipopt_does(name):
    # HS 84's constraints have gradients of 1e5 and HS 99's cost 1e8: with interior-point
    # QPs the iterates stop moving at a violation of 6e-8 (HS 84) and a complementarity of
    # 1e-5 (HS 99), rounding at those scales, and the solves ran to max_iter there. Tested
    # on the problem scaled by its gradients, as Ipopt's, they end SOLVED.
    import hock_schittkowski

    spec = next(s for s in hock_schittkowski.PROBLEMS if s.name == name)
    settings = SQPSettings(max_iter=100)
    res = DenseSQPFunction(f"{name}_ipm_scaled", anvil_problem(spec, False), settings, qp_backend="ipm")(spec.x0)
    _agrees(res, _ipopt_from(spec, spec.x0), name)
    assert res.iterations < 30, res.iterations


def test_steps_the_line_search_cuts_raise_a_proximal_term(capfd):
    # The Goddard rocket (COPS) at N = 100 from the report's guess, as one sparse NLP. Near
    # its singular arc the QP's steps (length 2.4) move the thrust across its range, and the
    # line search cut them to 1e-4 for all 500 iterations (MAX_ITER at J = -1.00556; Ipopt
    # -1.01283). Steps cut at a nearly feasible point now raise a proximal term in the next
    # QPs (the reg column), which full steps lower again: it reaches Ipopt's optimum.
    from cops_problems import PROBLEMS

    spec, guesses = PROBLEMS["rocket"](100)
    settings = SQPSettings(max_iter=200, verbose=1)
    res = SparseSQPFunction("rocket_proximal", anvil_problem(spec, True), settings)(guesses[0])
    _agrees(res, _ipopt_from(spec, guesses[0]), "rocket")
    lines = [ln.split() for ln in capfd.readouterr().out.splitlines()]
    regs = [float(t[6]) for t in lines if len(t) >= 9 and t[0].isdigit()]
    assert max(regs) >= 1e-4 and regs[-1] <= 1e-6, regs


# Statuses: each ends with its status and the last iterate, never a crash.


@pytest.mark.parametrize("qp_backend", ["piqp", "ipm"])
def test_infeasible_constraints_are_reported(qp_backend):
    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("inf_f", lambda x, p: (x**2).sum(), args)
    circle = av.NumericalFunction("inf_g", lambda x, p: (x[0] ** 2 + 1.0).reshape(1), args)
    lines = av.NumericalFunction("inf_l", lambda x, p: av.Tensor.stack(x.sum(), x.sum() - 1.0), args)
    for cls in (DenseSQPFunction, SparseSQPFunction):
        for g in (circle, lines):
            problem = DenseProblem(cost_fn=f, eq_constraints_fn=g)
            res = cls(name=f"infeasible_{g.name}_{qp_backend}", problem=problem, qp_backend=qp_backend)([1.0, 2.0])
            assert res.status == SQPStatus.INFEASIBLE, (g.name, res)
            assert np.all(np.isfinite(res.x))


def test_nan_in_a_callback_is_reported():
    args = (av.Arg(1), av.Arg(0))
    f = av.NumericalFunction("sqrt_cost", lambda x, p: (x[0]).sqrt() + x[0] ** 2, args)
    res = DenseSQPFunction(name="nan_cost", problem=DenseProblem(cost_fn=f))([-1.0])
    assert res.status == SQPStatus.NAN_DETECTED
    assert res.x[0] == -1.0


def test_max_iter_and_line_search_failure():
    spec = next(s for s in PROBLEMS if s.name == "rosen_chain10")
    solver = DenseSQPFunction(name="limits", problem=anvil_problem(spec, False), settings=SQPSettings(max_iter=2))
    res = solver(spec.x0)
    assert res.status == SQPStatus.MAX_ITER and res.iterations == 2
    assert np.all(np.isfinite(res.x))
    solver.settings = SQPSettings(max_line_search_steps=1, merit_memory=1, filter=False)
    res = solver(spec.x0)
    assert res.status == SQPStatus.LINESEARCH_FAILED, res
    assert np.all(np.isfinite(res.x))
    # Full steps (no line search) go on.
    solver.settings = SQPSettings(line_search=False, max_iter=3)
    assert solver(spec.x0).status in (SQPStatus.MAX_ITER, SQPStatus.SOLVED)


def test_qp_iteration_limit_is_a_qp_failure():
    spec = next(s for s in PROBLEMS if s.name == "hs071")
    solver = DenseSQPFunction(name="qp_limit", problem=anvil_problem(spec, False), settings=SQPSettings(qp_max_iter=1))
    res = solver(spec.x0)
    assert res.status == SQPStatus.QP_FAILED
    assert np.all(np.isfinite(res.x))


# The API and bad input.


def test_result_and_settings_types(proj_solver):
    res = proj_solver([0.0, 0.0], p=[0.0, 0.0])
    assert isinstance(res, SQPResult) and isinstance(res.status, SQPStatus)
    assert res.x.dtype == np.float64 and res.lam_box.shape == (2,) and res.lam_ineq.shape == (0,)
    assert (proj_solver.nx, proj_solver.neq, proj_solver.nineq) == (2, 1, 0)
    assert [f.name for f in proj_solver.functions] == ["proj_values", "proj_linearize", "proj_hessian"]
    assert "DenseSQPFunction(name='proj'" in repr(proj_solver)
    s = proj_solver.settings
    s.max_iter = 1
    assert proj_solver.settings.max_iter == 100, "settings returns a copy"
    with pytest.raises(TypeError, match="max_iter must be an int"):
        proj_solver.settings = SQPSettings(max_iter=1.5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tol_stat"):
        proj_solver.settings = SQPSettings(tol_stat=-1.0)
    with pytest.raises(ValueError, match="backtrack"):
        proj_solver.settings = SQPSettings(backtrack=1.5)
    with pytest.raises(ValueError, match="Hessian approximation"):
        proj_solver.settings = SQPSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    with pytest.raises(TypeError, match="SQPSettings"):
        proj_solver.settings = {"max_iter": 3}  # type: ignore[assignment]
    assert proj_solver.settings.max_iter == 100, "a rejected setting leaves the old ones"


def test_bad_call_arguments_are_clear_errors(proj_solver):
    with pytest.raises(ValueError, match=r"x0 must have shape \(2,\), got \(3,\)"):
        proj_solver([0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match=r"p must have shape \(2,\), got \(1,\)"):
        proj_solver([0.0, 0.0], p=[1.0])
    with pytest.raises(TypeError, match="x0 must be real numbers"):
        proj_solver(["a", "b"])
    with pytest.raises(ValueError, match=r"lam_eq0 must have shape \(1,\)"):
        proj_solver([0.0, 0.0], p=[0.0, 0.0], lam_eq0=[1.0, 2.0])
    # Non-finite input is the solver's INVALID_INPUT, with the guess echoed and the
    # argument at fault named.
    res = proj_solver([np.nan, 0.0], p=[0.0, 0.0])
    assert res.status == SQPStatus.INVALID_INPUT and res.iterations == 0
    assert res.invalid_input == "x0"
    res = proj_solver([0.0, 0.0], p=[np.inf, 0.0])
    assert (res.status, res.invalid_input) == (SQPStatus.INVALID_INPUT, "p")
    res = proj_solver([0.0, 0.0], p=[0.0, 0.0], lam_eq0=[np.nan])
    assert (res.status, res.invalid_input) == (SQPStatus.INVALID_INPUT, "lam_eq0")
    assert proj_solver([0.0, 0.0], p=[0.0, 0.0]).invalid_input is None


def test_bad_problems_are_clear_errors():
    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("bp_f", lambda x, p: (x**2).sum(), args)
    vec = av.NumericalFunction("bp_v", lambda x, p: x * 2.0, args)
    with pytest.raises(TypeError, match="cost_fn must be a NumericalFunction"):
        DenseProblem(cost_fn=lambda x, p: x)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="eq_rhs is given but there is no eq_constraints_fn"):
        DenseProblem(cost_fn=f, eq_rhs=1.0)
    with pytest.raises(TypeError, match="x_lb must be numbers"):
        DenseProblem(cost_fn=f, x_lb="low")
    cases = [
        (DenseProblem(cost_fn=f, x_lb=[0.0, 0.0, 0.0]), "x_lb"),
        (DenseProblem(cost_fn=f, x_lb=1.0, x_ub=0.0), "x_lb"),
        (DenseProblem(cost_fn=f, ineq_constraints_fn=vec, ineq_lb=[0.0]), "ineq_lb"),
        (DenseProblem(cost_fn=vec), "scalar"),
        (DenseProblem(cost_fn=av.NumericalFunction("bp_m", lambda x, p: x.sum(), (av.Arg([2, 2]), av.Arg(0)))), "x"),
        (DenseProblem(cost_fn=f, eq_constraints_fn=one_var_cost()), "every callback takes the same"),
    ]
    for problem, match in cases:
        with pytest.raises(ValueError, match=match):
            DenseSQPFunction(name="bad", problem=problem)
    with pytest.raises(ValueError, match="name"):
        DenseSQPFunction(name="not an identifier", problem=DenseProblem(cost_fn=f))
    with pytest.raises(TypeError, match="problem must be"):
        DenseSQPFunction(name="bad", problem=f)  # type: ignore[arg-type]


def test_generated_module_holds_the_solver_and_its_functions_once(in_tmp_dir):
    spec = next(s for s in PROBLEMS if s.name == "hs071")
    a = DenseSQPFunction(name="hs071_a", problem=anvil_problem(spec, False))
    b = SparseSQPFunction(name="hs071_b", problem=anvil_problem(spec, True))
    extra = av.NumericalFunction("twice", lambda x: x * 2.0, [av.Arg(3)])
    av.generate_module("sqpmod", [a, b, extra])
    header = (in_tmp_dir / "sqpmod.hpp").read_text()
    source = (in_tmp_dir / "sqpmod.cpp").read_text()
    for name in ("hs071_a", "hs071_b"):
        assert f"namespace {name} {{" in header
        for fn in ("values", "linearize", "hessian"):
            assert header.count(f"namespace {name}_{fn} {{") == 1
    assert "constexpr int NX = 4;" in header and "enum class Status : int" in header
    assert "Info solve(const double* x0, const double* p" in header
    assert source.count("namespace anvil_opti") >= 1
    # It compiles standalone against the include directories anvil reports.
    assert_compiles("sqpmod.cpp")


def assert_compiles(source):
    """A generated solver module passes g++'s syntax check with every warning an error,
    against the include directories anvil reports (test_multistage.py uses it too)."""
    flags = [f"-isystem{d}" for d in av.opti.include_dirs()]
    out = subprocess.run(
        ["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", *flags, os.fspath(source)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr[-4000:]


def test_include_dirs_name_piqp_and_eigen():
    dirs = av.opti.include_dirs()
    assert os.path.isfile(os.path.join(dirs[0], "piqp", "piqp.hpp"))
    assert os.path.isfile(os.path.join(dirs[1], "Eigen", "Core"))


def test_example_runs(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    # The example writes its module into a fresh temporary directory: under tmp_path here.
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, os.path.join(root, "examples", "sqp.py")],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
    )
    assert out.returncode == 0, out.stderr
    assert "status SOLVED" in out.stdout and "p = 26: f = 17.5" in out.stdout
    assert "interior point: status SOLVED, f = 17.014017" in out.stdout
    written = [d for d in os.listdir(tmp_path) if d.startswith("anvil_sqp_")]
    assert len(written) == 1 and os.path.isfile(os.path.join(tmp_path, written[0], "hs071.hpp"))


def test_iterates_within_the_acceptable_level_for_15_iterations_end_solved():
    """Ipopt's acceptable level: a solve whose iterates stay within 100 times the tolerances
    for 15 iterations in a row ends SOLVED there. HS 71 with full steps and tolerances of
    1e-11 settles at a complementarity of 1.4e-10 (rounding), within 100 times but never
    within them: it ends SOLVED 15 iterations after reaching that level; asked for 1e-12,
    where 100 times is not met either, it runs to max_iter."""
    spec = next(s for s in PROBLEMS if s.name == "hs071")

    def solve(tol):
        settings = SQPSettings(max_iter=200, tol_stat=tol, tol_eq=tol, tol_ineq=tol, tol_comp=tol, line_search=False)
        return DenseSQPFunction(name="hs071_acceptable", problem=anvil_problem(spec, False), settings=settings)(spec.x0)

    res = solve(1e-11)
    assert res.status == SQPStatus.SOLVED and res.iterations <= 30, res
    assert 1e-11 < res.comp_res <= 100 * 1e-11, res.comp_res
    assert solve(1e-12).status == SQPStatus.MAX_ITER

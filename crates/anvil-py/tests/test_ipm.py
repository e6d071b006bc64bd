"""anvil.opti.DenseIPMFunction: the interior-point solver against Ipopt from several initial
guesses, each of its algorithmic components on a problem that needs it, its statuses, the
API and bad input.

The oracle is Ipopt (through CasADi) on the same problems (opti_problems.py); constraint
violations at the returned points are computed independently, with CasADi's functions.
"""

from __future__ import annotations

import copy
import os
import pickle
import sys
from concurrent.futures import ThreadPoolExecutor

import casadi as cs
import numpy as np
import pytest

import anvil as av
from anvil.opti import (
    DenseIPMFunction,
    SparseIPMFunction,
    DenseProblem,
    HessianApproximation,
    IPMSettings,
    MultistageProblem,
    SparseProblem,
    SQPResult,
    SQPStatus,
)

sys.path.insert(0, os.path.dirname(__file__))
import cops_nlp  # noqa: E402
import hock_schittkowski  # noqa: E402
from opti_problems import PROBLEMS, anvil_problem, casadi_nlp, casadi_stationarity, casadi_violation, perturbed_starts  # noqa: E402

SMALL = [spec for spec in PROBLEMS if not spec.large]
#: (problem, KKT solver): the dense one on the small problems, the sparse one on all.
CASES = [(spec, sparse) for spec in PROBLEMS for sparse in (False, True) if sparse or not spec.large]


def guesses(spec, count=3):
    """The problem's own initial guess, then `count - 1` seeded perturbations of it (inside
    the bounds)."""
    return perturbed_starts(spec, count)


def ipopt(spec, x0):
    nlp, bounds, neq = casadi_nlp(spec)
    opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"}
    solver = cs.nlpsol("ipopt_ipm_" + spec.name, "ipopt", nlp, opts)
    r = solver(x0=x0, **bounds)
    stats = solver.stats()
    lam_g = np.asarray(r["lam_g"]).ravel()
    return {
        "success": stats["success"],
        "iterations": stats["iter_count"],
        "x": np.asarray(r["x"]).ravel(),
        "f": float(r["f"]),
        "lam_eq": lam_g[:neq],
        "lam_ineq": lam_g[neq:],
        "lam_box": np.asarray(r["lam_x"]).ravel(),
    }


def violation(spec, x):
    """The largest constraint and bound violation at x, evaluated by CasADi."""
    nlp, bounds, _ = casadi_nlp(spec)
    return casadi_violation(nlp, bounds, x)


_SOLVERS: dict[tuple[str, bool], object] = {}
_SOLVES: dict[tuple[str, bool], list[tuple[object, dict]]] = {}


def _build(case):
    spec, sparse = case
    cls = SparseIPMFunction if sparse else DenseIPMFunction
    solver = cls(f"ipm_{spec.name}_{'s' if sparse else 'd'}", anvil_problem(spec, sparse))
    solver.compile()
    return (spec.name, sparse), solver


def built_once(cache, build, items):
    """`cache` filled with `build(item)`'s (key, value) pairs the first time, building on all
    cores at once (deriving and compiling release the GIL)."""
    if not cache:
        with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            cache.update(pool.map(build, items))
    return cache


def reaches_ipopts_optimum(what, res, want, violation_at_x):
    """SOLVED at Ipopt's objective (1e-6 relative), with the violation at the returned point
    (computed independently) at most 1e-7."""
    assert res.status == SQPStatus.SOLVED, (what, res.status)
    assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (what, res.objective, want["f"])
    assert violation_at_x <= 1e-7, what


def solves(spec, sparse=False):
    """Each guess's (anvil result, Ipopt result) for `spec`, computed once per session. The
    first call builds every case's solver, on all cores at once (deriving and compiling
    release the GIL)."""
    built_once(_SOLVERS, _build, CASES)
    key = (spec.name, sparse)
    if key not in _SOLVES:
        solver = _SOLVERS[key]
        _SOLVES[key] = [(solver(x0), ipopt(spec, x0)) for x0 in guesses(spec)]
    return _SOLVES[key]


# A known gap, recorded as an expected failure (strict: it reports when it is closed): on the
# 300-variable hanging chain (Ipopt: 290-430 iterations, with its restoration phase) the
# sparse solver ends at Ipopt's optimum from one start and at nearby local minima (-41.50,
# -40.98 against -41.597) from the other two, the dense one at Ipopt's optimum from two and
# LINESEARCH_FAILED from the third.
KNOWN_GAPS = {"chain150": "other local minima, or a failure, from some starts (issue 31)"}
# Known gaps in the iteration count alone, by (problem, sparse, guess), strict too: none now.
# (hs040 from its third guess took 2,000 iterations where Ipopt takes 67 until the initial
# multipliers came from the unregularised least-squares system, as Ipopt's do; then 113 with
# the sparse solver, its iterates at |f| ~ 1e10 under regularisation ~ 1e8, until the
# multipliers started again by least squares where no step helped a feasible point: 100.)
SLOW: dict[tuple[str, bool, int], str] = {}
AGREEMENT = [
    pytest.param(spec, sparse, marks=pytest.mark.xfail(reason=KNOWN_GAPS[spec.name], strict=True))
    if spec.name in KNOWN_GAPS
    else pytest.param(spec, sparse)
    for spec, sparse in CASES
]


@pytest.mark.parametrize("spec,sparse", AGREEMENT, ids=[f"{s.name}-{'sparse' if sp else 'dense'}" for s, sp in CASES])
def test_agrees_with_ipopt_from_several_guesses(spec, sparse):
    for k, (res, want) in enumerate(solves(spec, sparse)):
        assert want["success"], f"Ipopt failed on {spec.name} from guess {k}"
        what = f"{spec.name}, guess {k}"
        assert res.status == SQPStatus.SOLVED, (what, res)
        # Ipopt's objective, or a better local optimum (hs040 from one guess: Ipopt stops at a
        # worse KKT point); either way a KKT point (stat_res below).
        scale = max(1.0, abs(want["f"]))
        assert res.objective <= want["f"] + 1e-6 * scale, (what, res.objective, want["f"])
        better = res.objective < want["f"] - 1e-6 * scale
        # Ipopt's constraint violation, computed independently at the returned point.
        assert violation(spec, res.x) <= max(1e-8, 10 * violation(spec, want["x"])), what
        assert res.stat_res <= 1e-6 and res.qp_iterations == 0, (what, res)
        if spec.unique_multipliers and k == 0 and not better:
            for key in ("lam_eq", "lam_ineq", "lam_box"):
                got, ref = getattr(res, key), want[key]
                assert np.max(np.abs(got - ref), initial=0.0) <= 1e-5 * (1.0 + np.max(np.abs(ref), initial=0.0)), key
        # Ipopt's method: about Ipopt's iterations (the target is 1.2x over the set).
        within = res.iterations <= 1.5 * want["iterations"] + 3
        assert within != ((spec.name, sparse, k) in SLOW), (what, res.iterations, want["iterations"])


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
def test_iterations_over_the_collection_are_within_1_2_times_ipopts(sparse):
    pairs = [
        pair for spec in SMALL for k, pair in enumerate(solves(spec, sparse)) if (spec.name, sparse, k) not in SLOW
    ]
    ours = sum(res.iterations for res, _ in pairs)
    theirs = sum(want["iterations"] for _, want in pairs)
    assert ours <= 1.2 * theirs, (ours, theirs)


# The wider Hock & Schittkowski collection (hock_schittkowski.py: 81 more problems, each from
# three starts, in benches/collection_bench.py). Here, from the start where it decides, one
# witness of each of Ipopt's rules the collection showed anvil had missed: hs016 (its start is
# outside the bounds: the scaling's gradients are taken at the start as given, before the
# bound push), hs064 (a badly scaled objective: the barrier parameter's floor is in the scaled
# objective's units), hs103 (a constraint scaled down by 1e-5: bounds are relaxed in the
# problem's own units, by at most constr_viol_tol), hs056 (a step that satisfies the
# switching and Armijo conditions leaves the filter as it is, also above theta_min), hs114
# (the restoration phase's first iteration keeps the barrier parameter the restoration
# problem was centred for, as Ipopt's monotone update does: lowered at once, the phase
# returned another point and the solve took 53 iterations to Ipopt's 41).
HS_WITNESSES = [("hs016", 0), ("hs064", 1), ("hs103", 2), ("hs056", 1), ("hs114", 2)]


@pytest.mark.parametrize("name,k", HS_WITNESSES, ids=[name for name, _ in HS_WITNESSES])
def test_hock_schittkowski_witnesses_follow_ipopt(name, k):
    spec = hock_schittkowski.by_name(name)
    x0 = guesses(spec)[k]
    res = DenseIPMFunction(f"ipm_{name}_witness", anvil_problem(spec, False))(x0)
    want = ipopt(spec, x0)
    what = f"{name} from guess {k}"
    assert want["success"] and res.status == SQPStatus.SOLVED, (what, res.status)
    assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (what, res.objective, want["f"])
    assert violation(spec, res.x) <= max(1e-8, 1.01 * violation(spec, want["x"])), what
    assert res.iterations <= 1.2 * want["iterations"] + 3, (what, res.iterations, want["iterations"])


# COPS 3.0's other problems (cops_nlp.py: eleven of them; all in benches/collection_bench.py
# at the report's sizes, where every run reaches Ipopt's optimum): here four kinds at small
# sizes, from the COPS guess and a plainer one, with the sparse KKT solver — a bound-
# constrained grid problem (torsion), one with equalities (minimal surface), inequalities
# (cam shape), collocated parameter estimations (methanol, gas oil, marine population
# dynamics: its initial populations free, fifteen rates in every interval's rows) and a
# square nonlinear system (the channel, whose KKT matrix has no diagonal to pivot on).
# Recorded there, not here: at nh = 25 pinene ends at the local minimum 104.13 from both
# guesses (70 and 108 iterations; Ipopt 19.87; before its KKT order stopped waiting for zero
# diagonals, LINESEARCH_FAILED after 1,429 iterations from the COPS guess) (issue 31).
COPS_NLP_CASES = [
    ("torsion", 25),
    ("minsurf", 25),
    ("camshape", 100),
    ("methanol", 25),
    ("gasoil", 25),
    ("marine", 25),
    ("channel", 50),
]


@pytest.mark.parametrize("name,size", COPS_NLP_CASES, ids=[name for name, _ in COPS_NLP_CASES])
def test_cops_nlps_reach_ipopts_optimum(name, size):
    spec, starts = cops_nlp.PROBLEMS[name](size)
    solver = SparseIPMFunction(f"ipm_{spec.name}", anvil_problem(spec, True))
    for k, x0 in enumerate(starts):
        res, want = solver(x0), ipopt(spec, x0)
        what = f"{spec.name} from guess {k}"
        assert want["success"] and res.status == SQPStatus.SOLVED, (what, res.status)
        assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (what, res.objective, want["f"])
        assert violation(spec, res.x) <= max(1e-7, 1.01 * violation(spec, want["x"])), what
        assert res.iterations <= 1.2 * want["iterations"] + 3, (what, res.iterations, want["iterations"])


def test_soft_restoration_steps_must_reduce_ipopts_primal_dual_error():
    # COPS cam shape (nh = 200) from the COPS guess: at iteration 7 the line search fails at a
    # nearly singular KKT system. Judged by the scaled optimality error (divided by the
    # multipliers' size), soft restoration steps of length 1e-6 to 1e-13 that grew the
    # multipliers a hundredfold each passed as progress, and the solve took 80 iterations;
    # judged by Ipopt's primal-dual system error they fail, the restoration phase follows,
    # and the solve takes Ipopt's path (Ipopt: 43).
    spec, starts = cops_nlp.PROBLEMS["camshape"](200)
    res = SparseIPMFunction(f"ipm_{spec.name}_soft", anvil_problem(spec, True))(starts[0])
    want = ipopt(spec, starts[0])
    assert want["success"] and res.status == SQPStatus.SOLVED, res.status
    assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (res.objective, want["f"])
    assert res.iterations <= 1.2 * want["iterations"] + 3, (res.iterations, want["iterations"])


def test_filter_resets_where_it_blocks_iteration_after_iteration():
    # Gas oil at nh = 100 from the COPS guess: five iterations in a row end in a step whose
    # last rejected trial point only the filter rejected; Ipopt then clears the filter, and
    # its next step raises the violation from 2.4 to 210 and converges in 17 iterations. Without
    # the reset the filter's old entries kept blocking: 39 iterations.
    spec, starts = cops_nlp.PROBLEMS["gasoil"](100)
    res = SparseIPMFunction("ipm_gasoil_reset", anvil_problem(spec, True))(starts[0])
    want = ipopt(spec, starts[0])
    assert want["success"] and res.status == SQPStatus.SOLVED, res.status
    assert abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"])), (res.objective, want["f"])
    assert res.iterations <= 1.2 * want["iterations"] + 3, (res.iterations, want["iterations"])


def test_a_tolerance_below_roundoff_ends_at_a_tiny_step():
    # tol = 1e-16 cannot be met in double precision: once steps stop changing the iterate at
    # the smallest barrier parameter, the solve ends there (Ipopt's "search direction becomes
    # too small") instead of running to max_iter.
    spec = next(s for s in SMALL if s.name == "hs071")
    settings = IPMSettings(tol=1e-16, acceptable_iter=0, max_iter=500)
    res = DenseIPMFunction("ipm_tiny_step", anvil_problem(spec, False), settings)(spec.x0)
    assert res.status == SQPStatus.LINESEARCH_FAILED and res.iterations < 100, res
    assert res.objective == pytest.approx(spec.f_opt, rel=1e-8)


def test_initial_multipliers_are_the_least_squares_ones():
    # A constraint Jacobian with a singular value of 5e-5 and a cost whose gradient is -J'(1, 2):
    # the least-squares multipliers are (1, 2), as Ipopt starts. Regularising their system by
    # 1e-8 (its square is 2.5e-9) would have shrunk their component along that direction by 80 %.
    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("ls_y_f", lambda x, p: -3.0 * x[0] - 3.0002 * x[1], args)
    g = av.NumericalFunction("ls_y_g", lambda x, p: av.Tensor.stack(x[0] + x[1], x[0] + 1.0001 * x[1]), args)
    for cls, problem in ((DenseIPMFunction, DenseProblem), (SparseIPMFunction, SparseProblem)):
        solver = cls(f"ipm_ls_y_{cls.__name__}", problem(cost_fn=f, eq_constraints_fn=g), IPMSettings(max_iter=0))
        res = solver([0.3, -0.2])
        assert res.status == SQPStatus.MAX_ITER and res.iterations == 0
        np.testing.assert_allclose(res.lam_eq, [1.0, 2.0], atol=1e-5, err_msg=cls.__name__)


def run_logged(capfd, solver, *args, **kwargs):
    res = solver(*args, **kwargs)
    rows = [line.split() for line in capfd.readouterr().out.splitlines() if line.strip()]
    return res, rows


def step_kinds(rows):
    """How each iteration's step was accepted (Ipopt's letters: f, h; F, H after a
    second-order correction; r a restoration iteration)."""
    return [row[-2][-1] for row in rows[2:] if row[0] != "iter"]


def test_verbose_prints_ipopts_columns_one_line_per_iteration(capfd):
    spec = next(s for s in SMALL if s.name == "hs071")
    solver = DenseIPMFunction("ipm_loud", anvil_problem(spec, False), IPMSettings(verbose=1))
    res, rows = run_logged(capfd, solver, spec.x0)
    assert rows[0] == ["iter", "objective", "inf_pr", "inf_du", "lg(mu)", "||d||", "lg(rg)", "alpha_du", "alpha_pr", "ls"]
    assert len(rows) == 1 + res.iterations + 1
    assert [int(r[0]) for r in rows[1:]] == list(range(res.iterations + 1))
    quiet = DenseIPMFunction("ipm_quiet", anvil_problem(spec, False))
    quiet(spec.x0)
    assert capfd.readouterr().out == ""


def test_second_order_corrections_are_taken_where_the_full_step_fails(capfd):
    # hs006 from (-1.2, 1): the curved equality rejects full steps (the Maratos effect).
    spec = next(s for s in SMALL if s.name == "hs006")
    with_soc = DenseIPMFunction("ipm_soc", anvil_problem(spec, False), IPMSettings(verbose=1))
    res, rows = run_logged(capfd, with_soc, spec.x0)
    assert res.status == SQPStatus.SOLVED and set("FH") & set(step_kinds(rows)), step_kinds(rows)
    without = DenseIPMFunction("ipm_no_soc", anvil_problem(spec, False), IPMSettings(verbose=1, max_soc=0))
    res0, rows0 = run_logged(capfd, without, spec.x0)
    assert not set("FH") & set(step_kinds(rows0)) and res0.status == SQPStatus.SOLVED
    assert res0.objective == pytest.approx(res.objective, abs=1e-8)


def test_inertia_correction_regularises_nonconvex_steps(capfd):
    # Rosenbrock on a disk from (-1.2, 1): the Lagrangian's Hessian is indefinite there.
    spec = next(s for s in SMALL if s.name == "hs015")
    solver = DenseIPMFunction("ipm_inertia", anvil_problem(spec, False), IPMSettings(verbose=1))
    res, rows = run_logged(capfd, solver, spec.x0)
    assert res.status == SQPStatus.SOLVED
    assert any(row[-4] != "-" for row in rows[1:]), "no iteration needed delta_w"
    assert res.objective == pytest.approx(306.5, rel=1e-6)


def test_rank_deficient_constraint_jacobian_is_regularised():
    # The same equality twice: the Jacobian has rank 1, the KKT matrix needs delta_c.
    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("rd_f", lambda x, p: (x**2).sum(), args)
    g = av.NumericalFunction("rd_g", lambda x, p: av.Tensor.stack(x.sum(), x.sum()), args)
    solver = DenseIPMFunction("ipm_rank", DenseProblem(cost_fn=f, eq_constraints_fn=g, eq_rhs=[1.0, 1.0]))
    res = solver([3.0, -1.0])
    assert res.status == SQPStatus.SOLVED, res
    np.testing.assert_allclose(res.x, [0.5, 0.5], atol=1e-7)
    # Only the sum of the two multipliers is determined: grad f + J'lam = 0.
    assert res.lam_eq.sum() == pytest.approx(-1.0, abs=1e-6)


def test_restoration_phase_recovers_where_the_filter_blocks(capfd):
    # hs027 from its published start (2, 2, 2): Ipopt's line search needs restoration too.
    spec = hock_schittkowski.by_name("hs027")
    solver = DenseIPMFunction("ipm_resto", anvil_problem(spec, False), IPMSettings(verbose=1))
    res, rows = run_logged(capfd, solver, spec.x0)
    assert "r" in step_kinds(rows) and any(row[0].endswith("r") for row in rows[1:])
    assert res.status == SQPStatus.SOLVED
    assert res.objective == pytest.approx(spec.f_opt, rel=1e-6)


def test_infeasible_problems_end_infeasible():
    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("ipm_inf_f", lambda x, p: (x**2).sum(), args)
    circle = av.NumericalFunction("ipm_inf_g", lambda x, p: (x[0] ** 2 + 1.0).reshape(1), args)
    lines = av.NumericalFunction("ipm_inf_l", lambda x, p: av.Tensor.stack(x.sum(), x.sum() - 1.0), args)
    for g in (circle, lines):
        res = DenseIPMFunction(f"ipm_infeasible_{g.name}", DenseProblem(cost_fn=f, eq_constraints_fn=g))([1.0, 2.0])
        assert res.status == SQPStatus.INFEASIBLE, (g.name, res)
        assert np.all(np.isfinite(res.x)) and res.eq_res > 0.1


def test_acceptable_level_ends_a_solve_that_cannot_reach_tol():
    spec = next(s for s in SMALL if s.name == "hs071")
    unreachable = IPMSettings(tol=1e-30, acceptable_iter=5, max_iter=200)
    res = DenseIPMFunction("ipm_acceptable", anvil_problem(spec, False), unreachable)(spec.x0)
    assert res.status == SQPStatus.SOLVED and res.objective == pytest.approx(spec.f_opt, rel=1e-6)
    short = IPMSettings(max_iter=4)
    res = DenseIPMFunction("ipm_short", anvil_problem(spec, False), short)(spec.x0)
    assert res.status == SQPStatus.MAX_ITER and res.iterations == 4


def test_gradient_scaling_handles_badly_scaled_costs():
    spec = next(s for s in SMALL if s.name == "hs071")
    problem = anvil_problem(spec, False)
    args = (av.Arg(4), av.Arg(0))
    big = av.NumericalFunction("ipm_big_cost", lambda x, p: 1e6 * spec.cost(x, _Math), args)
    scaled = DenseProblem(
        cost_fn=big,
        eq_constraints_fn=problem.eq_constraints_fn,
        ineq_constraints_fn=problem.ineq_constraints_fn,
        x_lb=problem.x_lb,
        x_ub=problem.x_ub,
        eq_rhs=problem.eq_rhs,
        ineq_lb=problem.ineq_lb,
        ineq_ub=problem.ineq_ub,
    )
    ref = DenseIPMFunction("ipm_ref_scale", problem)(spec.x0)
    res = DenseIPMFunction("ipm_scaled", scaled)(spec.x0)
    assert res.status == SQPStatus.SOLVED
    np.testing.assert_allclose(res.x, ref.x, atol=1e-6)
    # Reported unscaled: the objective and the multipliers are the problem's own.
    assert res.objective == pytest.approx(1e6 * ref.objective, rel=1e-8)
    np.testing.assert_allclose(res.lam_eq, 1e6 * ref.lam_eq, rtol=1e-5)


class _Math:
    from opti_problems import AnvilMath as _m

    vec = _m.vec
    sum = _m.sum


def test_adaptive_barrier_update_solves_the_hock_schittkowski_problems():
    # The ones that need the monotone safeguard, restoration or second-order corrections.
    for spec in [s for s in SMALL if s.name in ("hs015", "hs065", "hs071", "hs100")]:
        solver = DenseIPMFunction(f"ipm_adaptive_{spec.name}", anvil_problem(spec, False), IPMSettings(mu_strategy="adaptive"))
        res = solver(spec.x0)
        assert res.status == SQPStatus.SOLVED, (spec.name, res)
        if spec.f_opt is not None:
            assert res.objective == pytest.approx(spec.f_opt, rel=1e-6, abs=1e-8), spec.name


def test_warm_start_from_an_earlier_result():
    spec = next(s for s in SMALL if s.name == "hs071")
    cold = DenseIPMFunction("ipm_py_cold", anvil_problem(spec, False))
    first = cold(spec.x0)
    settings = IPMSettings(warm_start_init_point=True, mu_init=1e-6, warm_start_bound_push=1e-6)
    warm = DenseIPMFunction("ipm_py_warm", anvil_problem(spec, False), settings)
    again = warm(warm_start=first)
    assert again.status == SQPStatus.SOLVED and again.iterations < first.iterations
    np.testing.assert_allclose(again.x, first.x, atol=1e-7)


def test_nan_in_a_callback_is_reported():
    args = (av.Arg(1), av.Arg(0))
    f = av.NumericalFunction("ipm_sqrt_cost", lambda x, p: (x[0]).sqrt() + x[0] ** 2, args)
    res = DenseIPMFunction("ipm_nan_cost", DenseProblem(cost_fn=f))([-1.0])
    assert res.status == SQPStatus.NAN_DETECTED


def test_gauss_newton_least_squares():
    # min 1/2 ||r||^2, r = (x0 - 1, 10 (x1 - x0^2)): Rosenbrock as least squares.
    args = (av.Arg(2), av.Arg(0))
    r = av.NumericalFunction("ipm_gn_r", lambda x, p: av.Tensor.stack(x[0] - 1.0, 10.0 * (x[1] - x[0] ** 2)), args)
    settings = IPMSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    res = DenseIPMFunction("ipm_gn", DenseProblem(cost_fn=r, x_ub=[0.5, np.inf]), settings)([-1.2, 1.0])
    assert res.status == SQPStatus.SOLVED
    np.testing.assert_allclose(res.x, [0.5, 0.25], atol=1e-7)


def test_solvers_travel():
    spec = next(s for s in SMALL if s.name == "hs071")
    solver = DenseIPMFunction("ipm_travel", anvil_problem(spec, False), IPMSettings(max_soc=2))
    want = solver(spec.x0)
    for other in (pickle.loads(pickle.dumps(solver)), copy.deepcopy(solver), copy.copy(solver)):
        assert isinstance(other, DenseIPMFunction) and other.settings == solver.settings
        got = other(spec.x0)
        np.testing.assert_array_equal(got.x, want.x)


def test_result_and_settings_types():
    spec = next(s for s in SMALL if s.name == "hs071")
    solver = DenseIPMFunction("ipm_types", anvil_problem(spec, False))
    res = solver(spec.x0)
    assert isinstance(res, SQPResult) and res.success and res.status.name == "SOLVED"
    assert (solver.nx, solver.neq, solver.nineq) == (4, 1, 1)
    assert "namespace ipm_types" in solver.header_code() and "anvil_ipm::InteriorPoint" in solver.source_code()
    solver.settings = IPMSettings(max_iter=3)
    assert solver(spec.x0).status == SQPStatus.MAX_ITER


def test_bad_input_is_a_clear_error():
    spec = next(s for s in SMALL if s.name == "hs071")
    problem = anvil_problem(spec, False)
    solver = DenseIPMFunction("ipm_bad", problem)
    cases = [
        (lambda: IPMSettings(tol=0.0), None),
        (lambda: DenseIPMFunction("ipm_bad_tol", problem, IPMSettings(tol=0.0)), "tol"),
        (lambda: DenseIPMFunction("ipm_bad_mu", problem, IPMSettings(mu_strategy="fast")), "mu_strategy"),
        (lambda: DenseIPMFunction("ipm_bad_push", problem, IPMSettings(bound_push=0.9)), "bound_push"),
        (lambda: DenseIPMFunction("ipm_bad_int", problem, IPMSettings(max_iter=2.5)), "max_iter"),
        (lambda: DenseIPMFunction("ipm_bad_flag", problem, IPMSettings(warm_start_init_point=1)), "warm_start_init_point"),
        (lambda: DenseIPMFunction("ipm_bad_kind", problem, settings=object()), "IPMSettings"),
        (lambda: DenseIPMFunction("ipm_bad_backend", problem, qp_backend="piqp"), "qp_backend"),
        (lambda: DenseIPMFunction("anvil_ipm", problem), "anvil_ipm"),
        (lambda: solver([1.0, 2.0]), "x0 must have shape (4,)"),
        (lambda: solver(spec.x0, lam_eq0=[1.0, 2.0]), "lam_eq0"),
    ]
    for make, needle in cases:
        if needle is None:
            make()  # a dataclass accepts anything; the solver checks it
            continue
        with pytest.raises((TypeError, ValueError)) as e:
            make()
        assert needle in str(e.value), (needle, str(e.value))
    ms = MultistageProblem(N=2, nz=1, cost_stage_fn=av.NumericalFunction("ipm_ms_l", lambda z, g, p: (z**2).sum(), (av.Arg(1), av.Arg(0), av.Arg(0))))
    with pytest.raises(TypeError, match="MultistageProblem"):
        DenseIPMFunction("ipm_ms", ms)
    res = solver([1.0, np.nan, 1.0, 1.0])
    assert res.status == SQPStatus.INVALID_INPUT and res.invalid_input == "x0"


# COPS 3.0 optimal-control problems (cops_problems.py), whole-problem NLPs with the sparse KKT
# solver, from the report's guess and a plainer one, at N = 50 (the benchmark runs the
# report's discretisations: benches/cops_bench.py).
from cops_problems import PROBLEMS as COPS  # noqa: E402


_COPS_SOLVERS: dict[str, tuple[object, object, list]] = {}


def _build_cops(name):
    spec, starts = COPS[name](50)
    solver = SparseIPMFunction(f"ipm_cops_{name}", anvil_problem(spec, True))
    solver.compile()
    return name, (spec, solver, starts)


@pytest.mark.parametrize("name", list(COPS))
def test_cops_problems_reach_ipopts_optimum(name):
    spec, solver, starts = built_once(_COPS_SOLVERS, _build_cops, COPS)[name]
    for k, x0 in enumerate(starts):
        want = ipopt(spec, x0)
        assert want["success"], (name, k)
        res = solver(x0)
        what = f"{spec.name} from guess {k}"
        reaches_ipopts_optimum(what, res, want, violation(spec, res.x))
        # The report's optimum where known, up to the coarser discretisation's error.
        if spec.f_opt is not None:
            assert abs(res.objective - spec.f_opt) <= 2e-3 * abs(spec.f_opt), (what, res.objective, spec.f_opt)


# Multistage problems (multistage_problems.py) keep their stages: the stage functions called in
# a loop, the KKT systems factorised stage by stage.
import multistage_problems as mp  # noqa: E402


def _cartpole_ipopt(n):
    nlp, bounds = mp.cartpole_casadi(n)
    solver = cs.nlpsol("ipm_ms_ipopt", "ipopt", nlp, {"print_time": 0, "ipopt": {"print_level": 0, "sb": "yes"}})
    out = solver(x0=0.0, **bounds)
    g = cs.Function("ipm_ms_g", [nlp["x"]], [nlp["g"]])
    return solver.stats(), float(out["f"]), g


@pytest.mark.parametrize("form", ["from_dynamics", "z_form"])
def test_multistage_swing_up_takes_ipopts_steps(form):
    n = 50
    stats, f_ipopt, g = _cartpole_ipopt(n)
    assert stats["success"]
    if form == "from_dynamics":
        problem, p = mp.cartpole_from_dynamics(n=n, name="ipm_ms_cp"), np.zeros(4)
    else:
        problem, p = mp.cartpole_z_form(n=n, name="ipm_ms_cpz"), np.zeros(4)
    solver = SparseIPMFunction(f"ipm_ms_{form}", problem)
    assert "StageLdl<" in solver.source_code()
    res = solver(np.zeros(problem.nvars), p)
    assert res.status == SQPStatus.SOLVED, res.status
    assert abs(res.objective - f_ipopt) <= 1e-6 * abs(f_ipopt), (res.objective, f_ipopt)
    assert res.iterations <= 1.2 * stats["iter_count"], (res.iterations, stats["iter_count"])
    # Independently: the dynamics and the initial state hold at the returned point, and the
    # force bounds up to their relaxation (1e-8 relative: the point is the iterate, as Ipopt's).
    assert np.max(np.abs(np.asarray(g(res.x)))) <= 1e-7
    assert np.all(np.abs(res.x.reshape(n + 1, 5)[:, 4]) <= mp.U_MAX * (1.0 + 1e-8))


def test_multistage_solver_travels_and_rejects_the_dense_kkt():
    problem = mp.cartpole_from_dynamics(n=10, name="ipm_ms_small")
    solver = SparseIPMFunction("ipm_ms_travel", problem, IPMSettings(max_iter=200))
    res = solver(np.zeros(problem.nvars), np.zeros(4))
    assert res.status == SQPStatus.SOLVED and res.X.shape == (11, 4) and res.U.shape == (10, 1)
    again = pickle.loads(pickle.dumps(solver))
    assert again.settings == solver.settings and isinstance(again.problem, MultistageProblem)
    np.testing.assert_allclose(again(np.zeros(problem.nvars), np.zeros(4)).x, res.x, rtol=0, atol=1e-12)
    # Bad input, as for the other solvers: NaN is the solver's verdict, a wrong length an error.
    bad = solver(np.full(problem.nvars, np.nan), np.zeros(4))
    assert bad.status == SQPStatus.INVALID_INPUT and bad.invalid_input == "x0"
    bad = solver(np.zeros(problem.nvars), np.array([0.0, np.inf, 0.0, 0.0]))
    assert bad.status == SQPStatus.INVALID_INPUT and bad.invalid_input == "p"
    with pytest.raises(ValueError, match="x0 must have shape"):
        solver(np.zeros(problem.nvars - 1), np.zeros(4))
    with pytest.raises(TypeError, match="give the parameter p"):
        solver(np.zeros(problem.nvars))
    with pytest.raises(TypeError, match="SparseIPMFunction"):
        DenseIPMFunction("ipm_ms_dense", problem)
    with pytest.raises(TypeError, match="qp_backend"):
        SparseIPMFunction("ipm_ms_backend", problem, qp_backend="riccati")


# The same COPS problems as MultistageProblems (cops_multistage.py: one stage per grid point,
# the defects interstage equalities), factorised stage by stage, from the same guesses (the
# Spec's, restacked by stage) at N = 50; the Spec (Ipopt) is the oracle.
import cops_multistage  # noqa: E402
from opti_problems import Spec  # noqa: E402

#: (the Spec, the multistage solver, its guesses as stacked stages, the Spec's guesses).
_CopsMultistage = tuple[Spec, SparseIPMFunction, list[np.ndarray], list[np.ndarray]]
_COPS_MS_SOLVERS: dict[str, _CopsMultistage] = {}


def _build_cops_multistage(name: str) -> tuple[str, _CopsMultistage]:
    """The problem's Spec, its compiled multistage solver, its guesses as stacked stages and
    the Spec's own guesses (the same points), at N = 50."""
    problem, starts, spec = cops_multistage.PROBLEMS[name](50)
    _, spec_starts = COPS[name](50)
    solver = SparseIPMFunction(f"ipm_cops_ms_{name}", problem)
    solver.compile()
    return name, (spec, solver, starts, spec_starts)


# Known gaps (strict): none now. The robot arm by stages from the report's guess took its
# restoration phase to a local minimum of the violation (INFEASIBLE) while its final time was
# a copy per stage, each weighed in full by the restoration's proximity term; weighed once in
# all (as the one variable they stand for) it reaches Ipopt's optimum.
#
# The hang glider by stages from the report's guess took a path through regularisations of
# up to 1e12 and the restoration phase to another local optimum (-1282.40 against -1286.98)
# until the stage fronts pivoted with Ipopt's threshold for MUMPS (1e-6, rising while solves
# are inaccurate) instead of 0.01.
MULTISTAGE_GAPS: dict[tuple[str, int], str] = {}
# Known gaps in the iteration count alone (strict). The hang glider's counts swing
# with the grid and the guess for Ipopt too (393-1575 iterations at N = 100, 200); by stages
# from the plain guess at N = 50 the solver took 840 where Ipopt takes 569, and takes 291
# since its first multipliers are Ipopt's (the unregularised least-squares ones).
MULTISTAGE_SLOW: dict[tuple[str, int], str] = {}
# (The robot arm at N = 50 from the report's guess took 80 iterations against Ipopt's 53
# while the method measured and regularised the problem it solves by stages, the final time
# a copy per stage: each copy shifted by delta_w shifted the final time by (N + 1) delta_w,
# the copies' dual residuals counted apart and their rows' multipliers in the multipliers'
# size. Measured and regularised as the problem is written (one final time), it takes 52,
# Ipopt's path, as the whole NLP does.)
# Problems whose paths from the report's guesses are chaotic in rounding: hundreds of short
# steps under large regularisations, Ipopt's too, which end at one of two KKT points of the
# hang glider (J = -1286.98 or -1282.40) as the last bits of the arithmetic fall. From 20
# starts within 1e-9 (relative) of the guess at N = 50, Ipopt ends at -1282.40 from 2 (338 to
# 1688 iterations), the solver by stages from 1 (219 to 552); which start that is moves with
# any change in how the fronts are pivoted. For these the guess and eight such starts are
# solved: at least seven must reach Ipopt's optimum, in a median count within the bound.
ROUNDING_CHAOTIC = {"glider"}


def near_starts(z0: np.ndarray, count: int) -> list[np.ndarray]:
    """z0 and count - 1 starts within 1e-9 (relative) of it (fixed seeds)."""
    noise = [np.random.default_rng(seed).standard_normal(z0.shape) for seed in range(1, count)]
    return [z0] + [z0 * (1.0 + 1e-9 * e) for e in noise]


@pytest.mark.parametrize("name", list(cops_multistage.OCPS))
def test_the_fatrop_form_is_the_same_problem(name: str) -> None:
    """The benchmark's fatrop peer solves each COPS problem in fatrop's explicit form
    (cops_multistage.fatrop_form: the next grid point as controls, copied by the dynamics).
    At the report's guess and at Ipopt's solution, carried into that form, its objective is
    the Spec's, its dynamics rows (the copies) are zero, its path rows are the Spec's rows
    (the same values, stage by stage instead of trajectory by trajectory), its bounds hold
    where the Spec's do, and its variables come back to the same stacked stages."""
    import casadi

    n = 20
    ocp, guesses, spec = cops_multistage.OCPS[name](n)
    form = cops_multistage.fatrop_form(ocp)
    nlp, bounds, _ = casadi_nlp(spec)
    spec_fg = casadi.Function("spec_fg", [nlp["x"]], [nlp["f"], nlp["g"]])
    form_fg = casadi.Function("form_fg", [form.nlp["x"]], [form.nlp["f"], form.nlp["g"]])
    # Each stage's rows: the dynamics (nz, but the last stage's), then its path rows.
    dynamics = np.concatenate([np.r_[np.full(ocp.nz if k < n else 0, True), np.full(ng, False)] for k, ng in enumerate(form.options["ng"])])
    assert dynamics.size == form.nlp["g"].shape[0] == len(form.options["equality"])
    for x in (guesses[0], ipopt(spec, guesses[0])["x"]):
        z = cops_multistage.to_stages(x, n, ocp.width)
        start = form.start(z)
        np.testing.assert_array_equal(form.stages(start), z)
        f_spec, g_spec = (np.asarray(v).ravel() for v in spec_fg(x))
        f_form, g_form = (np.asarray(v).ravel() for v in form_fg(start))
        np.testing.assert_allclose(f_form, f_spec, rtol=1e-12)
        assert np.all(g_form[dynamics] == 0.0), name
        np.testing.assert_allclose(np.sort(g_form[~dynamics]), np.sort(g_spec), rtol=1e-9, atol=1e-12)
        inside = np.all((start >= form.bounds["lbx"]) & (start <= form.bounds["ubx"]))
        assert inside == bool(np.all((x >= bounds["lbx"]) & (x <= bounds["ubx"]))), name


@pytest.mark.parametrize("name", list(cops_multistage.PROBLEMS))
def test_cops_multistage_reaches_ipopts_optimum(name: str) -> None:
    built = built_once(_COPS_MS_SOLVERS, _build_cops_multistage, cops_multistage.PROBLEMS)
    spec, solver, starts, spec_starts = built[name]
    for k, (z0, x0) in enumerate(zip(starts, spec_starts)):
        # Both solvers start from the same point.
        np.testing.assert_array_equal(cops_multistage.from_stages(z0, 50, spec.n), x0)
        want = ipopt(spec, x0)
        assert want["success"], (name, k)
        res = solver(z0)
        what = f"{spec.name} (multistage) from guess {k}"
        if (name, k) in MULTISTAGE_GAPS:
            # Strict: reports when the gap closes (Ipopt's optimum reached).
            at_optimum = abs(res.objective - want["f"]) <= 1e-6 * max(1.0, abs(want["f"]))
            assert not (res.status == SQPStatus.SOLVED and at_optimum), (what, MULTISTAGE_GAPS[name, k])
            continue
        iterations = res.iterations
        if name in ROUNDING_CHAOTIC:
            results = [res] + [solver(z) for z in near_starts(z0, 9)[1:]]
            reached = 0
            for r in results:
                try:
                    reaches_ipopts_optimum(what, r, want, violation(spec, cops_multistage.from_stages(r.x, 50, spec.n)))
                    reached += 1
                except AssertionError:
                    pass
            assert reached >= 7, (what, [(r.status.name, r.objective) for r in results])
            iterations = float(np.median([r.iterations for r in results]))
        else:
            # Independently: the Spec's constraints and bounds at the returned point.
            reaches_ipopts_optimum(what, res, want, violation(spec, cops_multistage.from_stages(res.x, 50, spec.n)))
        # The final time's copies add no barrier terms (bounds by stage): Ipopt's path.
        within = iterations <= 1.2 * want["iterations"] + 3
        assert within != ((name, k) in MULTISTAGE_SLOW), (what, iterations, want["iterations"])


# The peers' own examples (peer_problems.py), solved by stages; Ipopt on the same NLP is the
# oracle.
import peer_problems  # noqa: E402


def test_fatrops_quadrotor_reaches_ipopts_optimum() -> None:
    """fatrop's quadrotor example (12 states, 4 rotor speeds, K = 100 grid points, from hover
    to hover, every final state pinned) by stages, from the example's guess and from hover at
    the start: Ipopt's optimum (objective to 1e-6, violation at most 1e-7 evaluated by
    CasADi) within 1.2x Ipopt's iterations (+3). From all zeros the rotors are stopped, where
    the thrust's Jacobian vanishes: a stationary point of the violation, at which the
    restoration phase converges (INFEASIBLE) and from which Ipopt runs to its limit (fatrop,
    whose restoration differs, solves it); recorded strictly as a gap."""
    import casadi

    nlp, bounds = peer_problems.quadrotor_casadi()
    reference = casadi.nlpsol("ipopt_quadrotor", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    g = casadi.Function("quadrotor_g", [nlp["x"]], [nlp["g"]])
    solver = SparseIPMFunction("ipm_peer_quadrotor", peer_problems.quadrotor_problem("ipm_peer_quadrotor"))
    example, hover, zero = peer_problems.quadrotor_guesses()
    x_init = np.zeros(peer_problems.QUAD_NX)
    for k, z0 in enumerate((example, hover)):
        sol = reference(x0=z0, **bounds)
        stats = reference.stats()
        assert stats["success"], k
        want = {"f": float(sol["f"]), "iterations": stats["iter_count"]}
        res = solver(z0, p=x_init)
        x = np.asarray(res.x)
        worst = max(np.max(np.abs(np.asarray(g(x)))), np.max(np.maximum(bounds["lbx"] - x, x - bounds["ubx"])))
        what = f"quadrotor from guess {k}"
        reaches_ipopts_optimum(what, res, want, float(worst))
        assert res.iterations <= 1.2 * want["iterations"] + 3, (what, res.iterations, want["iterations"])
    res = solver(zero, p=x_init)
    assert res.status != SQPStatus.SOLVED, ("quadrotor from zero: the gap closed", res.objective)


def test_the_sqp_by_stages_solves_fatrops_quadrotor_with_converging_qps() -> None:
    """The SQP by stages on fatrop's quadrotor from the example's guess: Ipopt's J (1e-6). Its
    final state is pinned, so its QPs take the z-form recursion, whose variables' regularisation
    (fixed at 1e-7) left rho dx in every step's dual residual: near the solution every other QP
    ran to its limit twice (511 QP iterations per SQP iteration, 11 s, J 1.6e-6 above Ipopt's).
    As a forcing term it lets them converge: a few QP iterations per SQP iteration."""
    import casadi
    from anvil.opti import SparseSQPFunction, SQPSettings

    nlp, bounds = peer_problems.quadrotor_casadi()
    example = peer_problems.quadrotor_guesses()[0]
    reference = casadi.nlpsol("ipopt_quadrotor_sqp", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    want = float(reference(x0=example, **bounds)["f"])
    problem = peer_problems.quadrotor_problem("sqp_peer_quadrotor")
    res = SparseSQPFunction("sqp_peer_quadrotor", problem, SQPSettings(max_iter=200))(example, p=np.zeros(peer_problems.QUAD_NX))
    assert res.status == SQPStatus.SOLVED, res.status
    assert abs(res.objective - want) <= 1e-6 * abs(want), (res.objective, want)
    assert res.qp_iterations <= 40 * res.iterations, (res.qp_iterations, res.iterations)


def motion_reference(disks):
    """rockit's motion planning (or its ``disks`` variant) in CasADi: Ipopt, and the violation
    of a point evaluated by CasADi."""
    import casadi

    nlp, bounds = peer_problems.motion_casadi(disks)
    options = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"}
    reference = casadi.nlpsol(f"ipopt_motion_{disks}", "ipopt", nlp, options)
    g = casadi.Function(f"motion_g_{disks}", [nlp["x"]], [nlp["g"]])

    def violation(x):
        gx = np.asarray(g(x)).ravel()
        rows = np.maximum(bounds["lbg"] - gx, gx - bounds["ubg"])
        return float(max(np.max(rows), np.max(np.maximum(bounds["lbx"] - x, x - bounds["ubx"]))))

    def ipopt_from(z0):
        sol = reference(x0=z0, **bounds)
        stats = reference.stats()
        assert stats["success"], stats["return_status"]
        return {"f": float(sol["f"]), "iterations": stats["iter_count"], "lam_g": np.asarray(sol["lam_g"]).ravel()}

    return ipopt_from, violation


def test_rockits_motion_planning_reaches_ipopts_optimum() -> None:
    """rockit's motion planning example (a bicycle around a round obstacle in a free final
    time; the obstacle at every grid point, the last one a terminal inequality), by stages
    from the example's guess and a slower one: Ipopt's optimum within 1.2x its iterations (+3)
    with the interior-point solver, and within 50 with the SQP by stages (its Hessian negative
    along the saturated speed's coupling with the heading, which the inertia test credits as
    the active bound it is once the KKT error is below 0.1: credited only below 1e-3, the
    shifts before damped every step, 105 iterations and 300 from the second guess)."""
    from anvil.opti import SparseSQPFunction, SQPSettings

    ipopt_from, violation = motion_reference(False)
    problem = peer_problems.motion_problem("ipm_peer_motion")
    assert problem.nineq == peer_problems.MOTION_N + 1
    ipm = SparseIPMFunction("ipm_peer_motion", problem)
    sqp = SparseSQPFunction("sqp_peer_motion", peer_problems.motion_problem("sqp_peer_motion"), SQPSettings(max_iter=100))
    for k, z0 in enumerate(peer_problems.motion_guesses()):
        want = ipopt_from(z0)
        for solver, most in ((ipm, 1.2 * want["iterations"] + 3), (sqp, 50)):
            res = solver(z0, p=peer_problems.MOTION_START)
            what = f"motion planning from guess {k} by {solver.name}"
            reaches_ipopts_optimum(what, res, want, violation(np.asarray(res.x)))
            assert res.iterations <= most, (what, res.iterations, want["iterations"])


def test_inequalities_on_the_first_and_last_stage_reach_ipopts_optimum() -> None:
    """rockit's motion planning from anywhere in a disk about the start to anywhere in one
    about the end (inequality rows on the first and the last stage only, both active), in
    the z-form: Ipopt's optimum, and each disk's multiplier Ipopt's, from both guesses with
    the interior-point solver by stages and the SQP with each QP backend."""
    from anvil.opti import SparseSQPFunction, SQPSettings

    ipopt_from, violation = motion_reference(True)
    problem = peer_problems.motion_problem("peer_motion_disks", disks=True)
    n = peer_problems.MOTION_N
    assert problem.nineq == 2 + (n - 1) + 2
    solvers = [SparseIPMFunction("ipm_peer_motion_disks", problem)]
    for qp in ("riccati", "piqp", "ipm"):
        solvers.append(SparseSQPFunction(f"sqp_{qp}_peer_motion_disks", problem, SQPSettings(max_iter=100), qp_backend=qp))
    for k, z0 in enumerate(peer_problems.motion_guesses()):
        want = ipopt_from(z0)
        # Ipopt's rows: the heading, the start disk, ...; the end disk last.
        disks = np.array([want["lam_g"][1], want["lam_g"][-1]])
        assert np.all(np.abs(disks) > 1e-2), disks
        for solver in solvers:
            res = solver(z0)
            what = f"the disks from guess {k} by {solver.name}"
            reaches_ipopts_optimum(what, res, want, violation(np.asarray(res.x)))
            lam = np.asarray(res.lam_ineq)
            np.testing.assert_allclose(lam[[0, -1]], disks, rtol=1e-4, err_msg=what)


def test_fatrops_car_tracking_reaches_ipopts_optimum() -> None:
    """fatrop's car reference-tracking example (a bicycle tracking a spline past three round
    obstacles, kept clear at every point, the last one a terminal inequality; the speed bounded
    after the start: state bounds by stage; the reference each stage's parameter), by stages:
    from the example's guess and from the start held throughout, Ipopt's optimum (a different
    local one from each) within 1.2x its iterations (+3)."""
    import casadi

    nlp, bounds = peer_problems.car_casadi()
    reference = casadi.nlpsol("ipopt_car", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    solver = SparseIPMFunction("ipm_peer_car", peer_problems.car_problem("ipm_peer_car"))
    p = peer_problems.car_parameter()
    for k, z0 in enumerate(peer_problems.car_guesses()):
        sol = reference(x0=z0, **bounds)
        stats = reference.stats()
        assert stats["success"], k
        want = {"f": float(sol["f"]), "iterations": stats["iter_count"]}
        res = solver(z0, p=p)
        what = f"car tracking from guess {k}"
        assert res.status == SQPStatus.SOLVED, (what, res.status)
        assert abs(res.objective - want["f"]) <= 1e-6 * abs(want["f"]), (what, res.objective, want["f"])
        # Ipopt's own point crosses the clearances (rows of 36 and more) by their 1e-8 relative
        # relaxation; the solver's may too, and no further.
        allowed = max(1e-7, 1.01 * casadi_violation(nlp, bounds, np.asarray(sol["x"]).ravel()))
        assert casadi_violation(nlp, bounds, np.asarray(res.x)) <= allowed, what
        assert res.iterations <= 1.2 * want["iterations"] + 3, (what, res.iterations, want["iterations"])


@pytest.mark.xfail(
    reason="the SQP by stages keeps a shift of ~60 while the KKT error stays above 0.1 (issue 31): "
    "220 iterations from the example's guess, MAX_ITER from the start held",
    strict=True,
)
def test_the_sqp_by_stages_solves_fatrops_car_tracking() -> None:
    """A known gap, recorded strictly (it reports when it is closed): the SQP by stages on
    fatrop's car example within 50 iterations of Ipopt's optimum from both guesses. Its
    obstacles' active rows curve the Lagrangian's Hessian the other way; the inertia test
    credits them only below a KKT error of 0.1, which the shift's damping keeps it above
    (credited always, 10 / 20 iterations, but the cart-pole at N = 200 then ends elsewhere)."""
    import casadi
    from anvil.opti import SparseSQPFunction, SQPSettings

    nlp, bounds = peer_problems.car_casadi()
    reference = casadi.nlpsol("ipopt_car_sqp", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    solver = SparseSQPFunction("sqp_peer_car", peer_problems.car_problem("sqp_peer_car"), SQPSettings(max_iter=50))
    for z0 in peer_problems.car_guesses():
        want = float(reference(x0=z0, **bounds)["f"])
        res = solver(z0, p=peer_problems.car_parameter())
        assert res.status == SQPStatus.SOLVED and abs(res.objective - want) <= 1e-6 * abs(want), (res.status, res.iterations)


def test_acados_chain_of_masses_reaches_ipopts_optimum() -> None:
    """acados' chain of masses (21 states, 3 controls, N = 40 steps of two RK4 steps, the wall a
    state bound at every point), by stages from the start held and from rest: Ipopt's optimum
    with the interior-point solver within 1.2x its iterations (+3), and with the SQP by stages
    within 20. Its stage Hessian one unit direction at a time is 97k operations, which g++ did
    not compile in ten minutes; past UNIT_DIRECTIONS_MAX_WORK it stays batched, and each
    solver builds in seconds."""
    import casadi
    from anvil.opti import SparseSQPFunction, SQPSettings

    nlp, bounds = peer_problems.chain_casadi()
    reference = casadi.nlpsol("ipopt_chain_mass", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    ipm = SparseIPMFunction("ipm_peer_chain_mass", peer_problems.chain_problem("ipm_peer_chain_mass"))
    sqp = SparseSQPFunction("sqp_peer_chain_mass", peer_problems.chain_problem("sqp_peer_chain_mass"), SQPSettings(max_iter=50))
    x_init = peer_problems.chain_start()
    walls = np.asarray(bounds["lbx"]) > -np.inf
    for k, z0 in enumerate(peer_problems.chain_guesses()):
        sol = reference(x0=z0, **bounds)
        stats = reference.stats()
        assert stats["success"], k
        want = {"f": float(sol["f"]), "iterations": stats["iter_count"]}
        # The wall holds the chain back: some ball's y is on it at Ipopt's optimum.
        assert np.any(np.abs(np.asarray(sol["x"]).ravel()[walls] - peer_problems.CHAIN_WALL) < 1e-6)
        for solver, most in ((ipm, 1.2 * want["iterations"] + 3), (sqp, 20)):
            res = solver(z0, p=x_init)
            what = f"chain of masses from guess {k} by {solver.name}"
            reaches_ipopts_optimum(what, res, want, casadi_violation(nlp, bounds, np.asarray(res.x)))
            assert res.iterations <= most, (what, res.iterations, want["iterations"])


def test_casadis_van_der_pol_reaches_ipopts_optimum() -> None:
    """CasADi's Van der Pol examples (N = 20 intervals of four RK4 steps, the cost's quadrature
    integrated with the states): x1 >= -0.25 and |u| <= 1 (the multiple-shooting example), and
    the DAE example's end at rest with -0.75 <= u <= 1; by stages from the example's guess and
    from the start held: Ipopt's optimum with the interior-point solver within 1.2x its
    iterations (+3), with the SQP by stages within 15."""
    import casadi
    from anvil.opti import SparseSQPFunction

    for to_rest in (False, True):
        nlp, bounds = peer_problems.vdp_casadi(to_rest)
        reference = casadi.nlpsol("ipopt_vdp", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
        name = f"peer_vdp{int(to_rest)}"
        ipm = SparseIPMFunction(f"ipm_{name}", peer_problems.vdp_problem(f"ipm_{name}", to_rest))
        sqp = SparseSQPFunction(f"sqp_{name}", peer_problems.vdp_problem(f"sqp_{name}", to_rest))
        for k, z0 in enumerate(peer_problems.vdp_guesses()):
            sol = reference(x0=z0, **bounds)
            stats = reference.stats()
            assert stats["success"], (to_rest, k)
            want = {"f": float(sol["f"]), "iterations": stats["iter_count"]}
            if not to_rest:  # the state bound is what the example shows: active at the optimum
                assert abs(np.min(np.asarray(sol["x"]).ravel()[0 :: peer_problems.VDP_NX + 1]) + 0.25) < 1e-6
            for solver, most in ((ipm, 1.2 * want["iterations"] + 3), (sqp, 15)):
                res = solver(z0, p=peer_problems.VDP_START)
                what = f"Van der Pol{' to rest' if to_rest else ''} from guess {k} by {solver.name}"
                reaches_ipopts_optimum(what, res, want, casadi_violation(nlp, bounds, np.asarray(res.x)))
                assert res.iterations <= most, (what, res.iterations, want["iterations"])


def test_acados_pendulum_on_a_cart_reaches_a_kkt_point_from_either_guess() -> None:
    """acados' getting-started example (a pendulum swung up on a cart in 1 s, |F| <= 80,
    N = 20 RK4 steps, x'Qx + u'Ru): from the start held, Ipopt's optimum with the interior
    point within 1.2x its iterations (+3) and with the SQP by stages within 50. From acados'
    default guess (every state zero, so the first step cannot be met) the problem shows its
    local optima: Ipopt ends at J = 33,092 after 270 iterations (fatrop fails), anvil's
    interior point at a KKT point of J = 7,860 in 300, the SQP at the best one, 4,485.66, in
    114 — each checked as a KKT point by CasADi, none worse than Ipopt's."""
    import casadi
    from anvil.opti import SparseSQPFunction, SQPSettings

    nlp, bounds = peer_problems.pendulum_casadi()
    reference = casadi.nlpsol("ipopt_pendulum", "ipopt", nlp, {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes"})
    ipm = SparseIPMFunction("ipm_peer_pendulum", peer_problems.pendulum_problem("ipm_peer_pendulum"))
    sqp = SparseSQPFunction("sqp_peer_pendulum", peer_problems.pendulum_problem("sqp_peer_pendulum"), SQPSettings(max_iter=200))
    zeros, held = peer_problems.pendulum_guesses()
    best = None
    for k, z0 in ((1, held), (0, zeros)):
        sol = reference(x0=z0, **bounds)
        stats = reference.stats()
        assert stats["success"], k
        want = {"f": float(sol["f"]), "iterations": stats["iter_count"]}
        # Ipopt's force bounds hold to its relative relaxation (1e-8 of 80), anvil's too.
        allowed = max(1e-7, 1.01 * casadi_violation(nlp, bounds, np.asarray(sol["x"]).ravel()))
        for solver, most in ((ipm, 1.2 * want["iterations"] + 3), (sqp, 50 if k == 1 else 200)):
            res = solver(z0, p=peer_problems.PENDULUM_START)
            what = f"pendulum from guess {k} by {solver.name}"
            assert res.status == SQPStatus.SOLVED, (what, res.status)
            assert casadi_violation(nlp, bounds, np.asarray(res.x)) <= allowed, what
            stationarity = casadi_stationarity(nlp, np.asarray(res.x), np.asarray(res.lam_eq).ravel(), res.lam_box)
            assert stationarity <= 1e-6, (what, stationarity)
            assert res.iterations <= most, (what, res.iterations, want["iterations"])
            if k == 1:
                assert abs(res.objective - want["f"]) <= 1e-6 * abs(want["f"]), (what, res.objective, want["f"])
                best = want["f"]
            else:
                assert res.objective <= want["f"], (what, res.objective, want["f"])
        # From the zeros the SQP finds the optimum the start held leads to.
        if k == 0:
            assert abs(res.objective - best) <= 1e-6 * best, (res.objective, best)


# CasADi's race car from the example's guess: six ill-conditioned iterations (a dual
# infeasibility of 8e8 by the sixth), then a restoration phase at the seventh (Ipopt and the
# whole NLP alike). It took 111 iterations to Ipopt's 38 (by stages 100) until the restoration
# phase started and ended as Ipopt's does (its equality multipliers from zero, each bound's
# multiplier kept per side, the proximity weight of the phase's barrier parameter, the return
# judged by the largest row violation; the multipliers after it of one Newton step over its
# move, y from zero). Its path from there is chaotic in rounding: from nine starts within 1e-9
# (relative) of the guess Ipopt takes 38-47 iterations, the whole NLP 38-74 (median 54), by
# stages 35-66 (median 39), so that guess is judged by the median over those starts (as the
# hang glider's). Recorded strictly (it reports when a form's median comes within the bound).
RACE_SLOW: dict[tuple[str, int], str] = {
    ("whole", 0): "the whole NLP's paths from near the example's guess: median 54 against Ipopt's 38",
}
RACE_CHAOTIC_GUESSES = {0}


def test_casadis_race_car_reaches_ipopts_optimum() -> None:
    """CasADi's race car (the Opti stack's example: minimal time T, the speed limit at every
    point, N = 100 RK4 steps), as the whole NLP and by stages (T a shared variable), from the
    example's guess and a ramp: Ipopt's optimum, within 1.2x its iterations (+3) but for
    RACE_SLOW; from the example's guess (RACE_CHAOTIC_GUESSES) from it and eight starts within
    1e-9 of it, the median counts compared."""
    spec = peer_problems.race_spec()
    solvers = {
        "whole": SparseIPMFunction("ipm_peer_race", anvil_problem(spec, sparse=True)),
        "stages": SparseIPMFunction("ipm_peer_race_stages", peer_problems.race_problem("ipm_peer_race_stages")),
    }
    for k, guess in enumerate(peer_problems.race_guesses()):
        starts = near_starts(guess, 9) if k in RACE_CHAOTIC_GUESSES else [guess]
        wants = [ipopt(spec, z0) for z0 in starts]
        assert all(want["success"] for want in wants), k
        for form, solver in solvers.items():
            counts = []
            for z0, want in zip(starts, wants):
                res = solver(z0) if form == "whole" else solver(z0, p=np.zeros(peer_problems.RACE_NX))
                what = f"race car from guess {k}, {form}"
                reaches_ipopts_optimum(what, res, want, violation(spec, np.asarray(res.x)))
                counts.append(res.iterations)
            ipopt_counts = [want["iterations"] for want in wants]
            within = np.median(counts) <= 1.2 * np.median(ipopt_counts) + 3
            assert within != ((form, k) in RACE_SLOW), (what, counts, ipopt_counts)


def restoration_rows(out: str) -> list[list[str]]:
    """The rows of an Ipopt-style log for a restoration phase's steps (iteration marked r;
    not Ipopt's row for the phase's start, step kind R, nor the return's, step kind r)."""
    rows = [line.split() for line in out.splitlines() if line.strip()]
    return [r for r in rows if len(r) == 10 and r[0] != "iter" and r[0].endswith("r") and not r[-2].endswith(("r", "R"))]


def test_restoration_lines_report_the_problems_objective_and_violation(capfd):
    """Ipopt's restoration lines report the problem's objective and violation at the phase's
    iterates, not the restoration problem's. CasADi's race car from the example's guess
    enters the restoration phase at iteration 7 in both solvers from the same point and takes
    the same steps there: the first restoration step's line reads the same in both logs
    (anvil's printed rho * sum(p + n) + proximity, 5,080, and the relaxed rows' 8.5e-5 where
    Ipopt prints f = 1.079 and 0.862)."""
    spec = peer_problems.race_spec()
    z0 = peer_problems.race_guesses()[0]
    nlp, bounds, _ = casadi_nlp(spec)
    cs.nlpsol("ipopt_resto_log", "ipopt", nlp, {"print_time": False, "ipopt.print_level": 5})(x0=z0, **bounds)
    theirs = restoration_rows(capfd.readouterr().out)
    solver = SparseIPMFunction("ipm_peer_race_log", anvil_problem(spec, sparse=True), IPMSettings(verbose=1))
    solver(z0)
    ours = restoration_rows(capfd.readouterr().out)
    assert ours and theirs, (ours, theirs)
    f_ours, viol_ours = float(ours[0][1]), float(ours[0][2])
    f_theirs, viol_theirs = float(theirs[0][1]), float(theirs[0][2])
    assert f_ours == pytest.approx(f_theirs, rel=1e-3) and viol_ours == pytest.approx(viol_theirs, rel=1e-2), (
        ours[0],
        theirs[0],
    )


def test_multipliers_start_again_where_no_step_helps_a_feasible_point() -> None:
    """The COPS chain by stages at N = 100 from the plain guess, and from starts 1e-8 from
    it: paths of hundreds of iterations (Ipopt: 530 from the guess) on which the equality
    multipliers grow with the Hessian's regularisation (y ~ delta_w c, each making the other
    larger) until, at a feasible point of J ~ 9.4, the directions are rounding: no step is
    found, or only tiny ones (three of these eight starts ended LINESEARCH_FAILED there, one
    of them the guess itself). The restoration phase cannot reduce a violation that is zero
    already; the multipliers started again by least squares there reach Ipopt's optimum
    from each start."""
    problem, starts, spec = cops_multistage.PROBLEMS["chain"](100)
    _, spec_starts = COPS["chain"](100)
    want = ipopt(spec, spec_starts[1])
    solver = SparseIPMFunction("ipm_cops_ms_chain100", problem)
    rng = np.random.default_rng(0)
    first = None
    for k in range(8):
        noise = 1e-8 if k > 0 else 0.0
        z0 = starts[1] * (1 + noise * rng.standard_normal(starts[1].shape)) + noise * rng.standard_normal(starts[1].shape)
        res = solver(z0)
        first = first or res
        what = f"chain100 (multistage) from the plain guess, start {k}"
        reaches_ipopts_optimum(what, res, want, violation(spec, cops_multistage.from_stages(res.x, 100, spec.n)))
    # Solving again takes the same steps: which order each stage's front took last (kept
    # from one factorisation to the next) starts afresh with each solve.
    again = solver(starts[1])
    assert again.iterations == first.iterations and np.array_equal(again.x, first.x)


def test_the_sqp_corrects_the_whole_hessian_where_stage_blocks_are_indefinite() -> None:
    """``SQPSettings(convexify_by_stage=False)``: the Riccati QP gets the Hessian as it is and
    shifts it only where its stage recursion finds it indefinite on the constraints' null
    space. Particle steering's stage blocks are indefinite at the optimum while the problem is
    not: its steps are then Newton steps, and it reaches Ipopt's optimum in Ipopt's iterations
    (6; Ipopt 12-15), where stage-by-stage convexification takes 81-90. The chain and the arm
    reach Ipopt's optimum the same way."""
    from anvil.opti import SparseSQPFunction, SQPSettings

    problem, starts, spec = cops_multistage.PROBLEMS["steering"](50)
    _, spec_starts = COPS["steering"](50)
    for by_stage in (True, False):
        settings = SQPSettings(max_iter=500, convexify_by_stage=by_stage)
        solver = SparseSQPFunction(f"sqp_cops_ms_steering_{by_stage}", problem, settings)
        for k, (z0, x0) in enumerate(zip(starts, spec_starts)):
            want = ipopt(spec, x0)
            res = solver(z0)
            what = f"steering50 (multistage SQP, by stage {by_stage}) from guess {k}"
            reaches_ipopts_optimum(what, res, want, violation(spec, cops_multistage.from_stages(res.x, 50, spec.n)))
            newton = res.iterations <= want["iterations"]
            assert newton != by_stage, (what, res.iterations, want["iterations"])
    # The hanging chain and the robot arm reach Ipopt's optimum that way too.
    for name in ("chain", "arm"):
        problem, starts, spec = cops_multistage.PROBLEMS[name](50)
        _, spec_starts = COPS[name](50)
        settings = SQPSettings(max_iter=500, convexify_by_stage=False)
        solver = SparseSQPFunction(f"sqp_cops_ms_{name}_whole", problem, settings)
        for k, (z0, x0) in enumerate(zip(starts, spec_starts)):
            res = solver(z0)
            what = f"{name}50 (multistage SQP, whole Hessian) from guess {k}"
            reaches_ipopts_optimum(what, res, ipopt(spec, x0), violation(spec, cops_multistage.from_stages(res.x, 50, spec.n)))
    with pytest.raises(TypeError, match="SQPSettings.convexify_by_stage must be a bool, got 0"):
        SparseSQPFunction("sqp_cops_ms_steering_bad", problem, SQPSettings(convexify_by_stage=0))


@pytest.mark.parametrize("name", ["rocket", "catmix"])
def test_the_sqp_by_stages_credits_the_bounds_estimated_active(name) -> None:
    """Near a solution the SQP by stages (whole Hessian) credits the bounds estimated active
    in its inertia test, as a barrier term would, and starts its QP with that weight on them:
    the Goddard rocket's thrust and catalyst mixing's control saturate where the Hessian is
    negative, so without the credit every step took a shift of 1e-4 to 1e-3 and both ended
    `MAX_ITER` at N = 100 near their optimum (500 iterations). Catalyst mixing's singular
    arc then has a nearly free alternating mode of its controls, along which an unshifted step
    crosses their range: after such a cut step its shift stays ten times larger (the proximal
    term's least value), where it cycled before."""
    from anvil.opti import SparseSQPFunction, SQPSettings

    problem, starts, spec = cops_multistage.PROBLEMS[name](100)
    _, spec_starts = COPS[name](100)
    solver = SparseSQPFunction(f"sqp_cops_ms_{name}_credit", problem, SQPSettings(max_iter=500, convexify_by_stage=False))
    for k, (z0, x0) in enumerate(zip(starts, spec_starts)):
        res = solver(z0)
        what = f"{name}100 (multistage SQP, whole Hessian) from guess {k}"
        reaches_ipopts_optimum(what, res, ipopt(spec, x0), violation(spec, cops_multistage.from_stages(res.x, 100, spec.n)))
        assert res.iterations <= 60, (what, res.iterations)


def test_gauss_newton_on_linear_stage_costs_warns():
    """The interior-point solver warns as the SQP does: Gauss-Newton keeps only the stage
    costs' Hessian, which is empty when they are linear."""
    stage = (av.Arg(2), av.Arg(0), av.Arg(0))
    linear = av.NumericalFunction("ipm_gn_linear", lambda z, g, p: z.sum(), stage)
    problem = MultistageProblem(N=3, nz=2, cost_stage_fn=linear, z_lb=-1.0, z_ub=1.0)
    with pytest.warns(UserWarning, match="HessianApproximation::Exact"):
        SparseIPMFunction("ipm_gn_warned", problem, IPMSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON))

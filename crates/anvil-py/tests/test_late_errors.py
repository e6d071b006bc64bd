"""Mistakes that used to pass silently or fail late, each now an error where it is made (or a
result that says what was wrong), and the documentation's examples run as written."""

from __future__ import annotations

import doctest

import numpy as np
import pytest

import anvil as av
from anvil import ad
from anvil.opti import (
    DenseProblem,
    DenseSQPFunction,
    HessianApproximation,
    MultistageProblem,
    SparseSQPFunction,
    SQPSettings,
    SQPStatus,
)


def two_outputs():
    return av.NumericalFunction("two", lambda x: (x.sin(), x * x), (av.Arg(2),))


def test_derivatives_of_a_function_with_several_outputs_name_the_output():
    f = two_outputs()
    for transform in (ad.gradient, ad.jacobian, ad.hessian, ad.spjacobian, ad.sphessian):
        with pytest.raises(ValueError, match=r"2 outputs.*output=k"):
            transform(f)
    x = np.array([1.0, 2.0])
    np.testing.assert_allclose(ad.jacobian(f, output=1)(x), np.diag(2 * x))
    np.testing.assert_allclose(ad.jacobian(f, output=0)(x), np.diag(np.cos(x)))
    np.testing.assert_allclose(ad.spjacobian(f, output=1)(x).toarray(), np.diag(2 * x))
    g = av.NumericalFunction("sums", lambda x: ((x * x).sum(), x.sin().sum()), (av.Arg(2),))
    np.testing.assert_allclose(ad.gradient(g, output=1)(x), np.cos(x))
    np.testing.assert_allclose(ad.hessian(g, output=0)(x), 2 * np.eye(2))
    with pytest.raises(ValueError, match="no output 2"):
        ad.jacobian(f, output=2)
    with pytest.raises(TypeError, match="output must be a non-negative int"):
        ad.jacobian(f, output=-1)


def test_ambiguous_or_missing_dtypes_are_rejected():
    with pytest.raises(TypeError, match="dtype is None"):
        av.Arg(3, dtype=None)
    for name in ("float", "int"):
        with pytest.raises(TypeError, match="ambiguous"):
            av.Arg(3, dtype=name)
    assert av.Arg(3, dtype="float32").dtype == av.dtypes.float32
    assert av.Arg(3, dtype=float).dtype == av.dtypes.float64  # Python's float is a double
    assert av.Arg(3, dtype=av.dtypes.float).dtype == av.dtypes.float32


def test_bool_arrays_holding_any_byte_agree_natively_and_in_the_interpreter():
    f = av.NumericalFunction("count", lambda b: b.cast(av.dtypes.int64).sum(), (av.Arg(8, dtype=av.dtypes.bool),))
    raw = np.array([0, 1, 2, 255, 0, 7, 1, 0], dtype=np.uint8)
    flags = raw.view(np.bool_)  # numpy lets a bool array hold any byte
    assert int(f(flags)) == 5 == int(f.eval(flags))
    strided = np.repeat(raw, 2).view(np.bool_)[::2]  # non-contiguous: copied on the way in
    assert int(f(strided)) == 5 == int(f.eval(strided))


def test_names_the_generated_code_or_the_program_declares_are_rejected():
    for name in ("main", "piqp", "anvil_opti", "Eigen"):
        with pytest.raises(ValueError, match="declares"):
            av.NumericalFunction(name, lambda x: x * 2.0, (av.Arg(2),))
    cost = av.NumericalFunction("main_cost", lambda x, p: (x**2).sum(), (av.Arg(1), av.Arg(0)))
    with pytest.raises(ValueError, match="declares"):
        DenseSQPFunction(name="main", problem=DenseProblem(cost_fn=cost))
    # A legal name ending in `_` derives legal names.
    step = av.NumericalFunction("step_", lambda x: x * 2.0, (av.Arg(2),))
    assert ad.jacobian(step).name == "step_jac"


def test_settings_out_of_range_name_the_setting():
    cost = av.NumericalFunction("range_cost", lambda x, p: (x**2).sum(), (av.Arg(1), av.Arg(0)))
    with pytest.raises(ValueError, match=r"SQPSettings\.verbose must be a non-negative integer below 2\*\*31"):
        DenseSQPFunction(name="range", problem=DenseProblem(cost_fn=cost), settings=SQPSettings(verbose=2**40))
    with pytest.raises(ValueError, match=r"max_iter.*must be an integer in \[0, 2147483647\]"):
        DenseSQPFunction(name="range", problem=DenseProblem(cost_fn=cost), settings=SQPSettings(max_iter=2**40))


def test_one_step_problems_keep_their_path_constraints():
    args = (av.Arg(2), av.Arg(1), av.Arg(0))
    f = av.NumericalFunction("one_f", lambda x, u, p: x + u.sum(), args)
    h = av.NumericalFunction("one_h", lambda x, u, p: u, args)
    problem = MultistageProblem.from_dynamics(N=1, nx=2, nu=1, dynamics_fn=f, path_constraints_fn=h, path_lb=0.5, path_ub=1.0)
    assert problem.nineq == 1
    with pytest.raises(ValueError, match=r"has 2 entries, expected rows = 1 \(every stage's\), or one scalar"):
        MultistageProblem.from_dynamics(N=1, nx=2, nu=1, dynamics_fn=f, path_constraints_fn=h, path_lb=[0.0, 0.0])
    l = av.NumericalFunction("one_l", lambda x, u, p: (x**2).sum() + (u**2).sum(), args)
    problem = MultistageProblem.from_dynamics(N=1, nx=2, nu=1, dynamics_fn=f, stage_cost_fn=l, path_constraints_fn=h, path_lb=0.5, path_ub=1.0)
    res = SparseSQPFunction(name="one_step", problem=problem)(np.zeros(6), p=[1.0, 1.0])
    assert res.status == SQPStatus.SOLVED and res.U[0, 0] == pytest.approx(0.5, abs=1e-8)


def test_gauss_newton_on_linear_stage_costs_warns():
    stage = (av.Arg(2), av.Arg(0), av.Arg(0))
    linear = av.NumericalFunction("gnw_linear", lambda z, g, p: z.sum(), stage)
    problem = MultistageProblem(N=3, nz=2, cost_stage_fn=linear, z_lb=-1.0, z_ub=1.0)
    gn = SQPSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    with pytest.warns(UserWarning, match="Gauss-Newton keeps only the Hessian of the stage costs"):
        SparseSQPFunction(name="gnw", problem=problem, settings=gn)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        SparseSQPFunction(name="gnw_exact", problem=problem)  # the exact Hessian: no warning


def test_statuses_print_by_name():
    assert str(SQPStatus.SOLVED) == "SQPStatus.SOLVED" and f"{SQPStatus.MAX_ITER}" == "SQPStatus.MAX_ITER"
    assert SQPStatus.SOLVED == 0 and int(SQPStatus.INVALID_INPUT) == 6


def test_documented_examples_run():
    for module in (av.ad, av.opti):
        failed, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
        assert tried > 0 and failed == 0, module.__name__

"""Problems and solvers travel like functions: pickle, copy, spawn workers, save/load, all
through anvil's object format, each giving a solver that solves exactly as the original."""

from __future__ import annotations

import copy
import json
import multiprocessing
import pickle
import struct

import numpy as np
import pytest

import anvil as av
from anvil.opti import (
    DenseProblem,
    DenseSQPFunction,
    HessianApproximation,
    MultistageProblem,
    SparseProblem,
    SparseSQPFunction,
    SQPSettings,
)


def projection(cls=DenseProblem):
    args = (av.Arg(2), av.Arg(2))
    f = av.NumericalFunction("tr_f", lambda x, p: ((x - p) ** 2).sum(), args)
    g = av.NumericalFunction("tr_g", lambda x, p: x.sum().reshape(1), args)
    h = av.NumericalFunction("tr_h", lambda x, p: (x[0] * x[1]).reshape(1), args)
    return cls(cost_fn=f, eq_constraints_fn=g, ineq_constraints_fn=h, eq_rhs=[1.0], ineq_ub=0.1, x_ub=[0.9, np.inf])


def ocp(N=av.CodegenIntConstant("TR_N", 12)):
    xup = (av.Arg(2), av.Arg(1), av.Arg(0))
    F = av.NumericalFunction("tr_F", lambda x, u, p: av.Tensor.stack(x[0] + 0.1 * x[1], x[1] + 0.1 * u[0]), xup)
    l = av.NumericalFunction("tr_l", lambda x, u, p: (x**2).sum() + (u**2).sum(), xup)
    h = av.NumericalFunction("tr_path", lambda x, u, p: x[1].reshape(1), xup)
    end = av.NumericalFunction("tr_end", lambda x, p: x[0].reshape(1), (av.Arg(2), av.Arg(0)))
    return MultistageProblem.from_dynamics(
        N=N, nx=2, nu=1, dynamics_fn=F, stage_cost_fn=l, path_constraints_fn=h, path_lb=-0.5, path_ub=0.5, u_lb=-1.0, u_ub=1.0,
        terminal_ineq_fn=end, terminal_ineq_ub=0.25,
    )


def z_form():
    stage = (av.Arg(2), av.Arg(0), av.Arg(1))
    cost = av.NumericalFunction("tr_zc", lambda z, g, p: ((z - p[0]) ** 2).sum(), stage)
    link = av.NumericalFunction("tr_zl", lambda z, zn, g, p: zn[0] - z[1], (av.Arg(2), av.Arg(2), av.Arg(0), av.Arg(1)))
    first = av.NumericalFunction("tr_zf", lambda z, g, p: (z[0] * z[1]).reshape(1), stage)
    last = av.NumericalFunction("tr_zn", lambda z, g, p: z.sum().reshape(1), stage)
    return MultistageProblem(
        N=4, nz=2, cost_stage_fn=cost, eq_interstage_fn=link, z_lb=-2.0, z_ub=2.0, param_dim=1,
        ineq_initial_fn=first, ineq_initial_ub=1.0, ineq_terminal_fn=last, ineq_terminal_lb=-1.0, ineq_terminal_ub=1.0,
    )


SOLVERS = {
    "dense": lambda: DenseSQPFunction(name="tr_dense", problem=projection(), settings=SQPSettings(max_iter=60)),
    "sparse": lambda: SparseSQPFunction(name="tr_sparse", problem=projection(SparseProblem)),
    "riccati": lambda: SparseSQPFunction(name="tr_ocp", problem=ocp()),
    "ocp_piqp": lambda: SparseSQPFunction(
        name="tr_ocp_piqp",
        problem=ocp(N=12),
        qp_backend="piqp",
        settings=SQPSettings(hessian_approximation=HessianApproximation.GAUSS_NEWTON, max_iter=200),
    ),
    "z_form": lambda: SparseSQPFunction(name="tr_z", problem=z_form()),
}


def arguments(solver, k=0):
    """A guess and a parameter for `solver` (the k-th of a family)."""
    x0 = np.zeros(solver.nx)
    if isinstance(solver.problem, MultistageProblem):
        size = solver.problem.param_size
        return x0, np.full(size, 0.3 + 0.1 * k)
    return x0, np.array([0.2 + 0.1 * k, 0.5])


def same(a, b):
    for key in ("x", "lam_eq", "lam_ineq", "lam_box"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    assert (a.status, a.iterations) == (b.status, b.iterations)


@pytest.mark.parametrize("kind", list(SOLVERS))
def test_solvers_pickle_save_and_copy_into_solvers_that_solve_the_same(kind, tmp_path):
    solver = SOLVERS[kind]()
    x0, p = arguments(solver)
    want = solver(x0, p=p)
    assert want.success, want
    for other in (
        pickle.loads(pickle.dumps(solver)),
        copy.deepcopy(solver),
        type(solver).from_bytes(solver.to_bytes()),
    ):
        assert type(other) is type(solver) and other.name == solver.name
        assert other.settings == solver.settings and other.qp_backend == solver.qp_backend
        same(other(x0, p=p), want)
    solver.save(tmp_path / "solver.anvil")
    same(type(solver).load(tmp_path / "solver.anvil")(x0, p=p), want)
    # Problems travel on their own too.
    problem = pickle.loads(pickle.dumps(solver.problem))
    assert type(problem) is type(solver.problem)
    same(type(solver)(name=solver.name, problem=problem, settings=solver.settings, qp_backend=solver.qp_backend)(x0, p=p), want)


def test_a_copy_has_its_own_settings():
    solver = SOLVERS["dense"]()
    for other in (copy.copy(solver), copy.deepcopy(solver)):
        other.settings = SQPSettings(max_iter=1)
        assert solver.settings.max_iter == 60 and other.settings.max_iter == 1
        x0, p = arguments(solver)
        assert solver(x0, p=p).success and not other(x0, p=p).success


def test_bad_objects_are_clear_errors(tmp_path):
    solver = SOLVERS["dense"]()
    data = solver.to_bytes()
    with pytest.raises(ValueError, match="not an anvil object"):
        DenseSQPFunction.from_bytes(b"nonsense")
    with pytest.raises(ValueError, match="corrupted anvil object"):
        DenseSQPFunction.from_bytes(data[:-5])
    with pytest.raises(ValueError, match="format version 99"):
        DenseSQPFunction.from_bytes(data[:8] + (99).to_bytes(4, "little") + data[12:])
    with pytest.raises(TypeError, match="holds a DenseSQPFunction"):
        MultistageProblem.from_bytes(data)
    with pytest.raises(ValueError, match="not an anvil object"):
        DenseSQPFunction.from_bytes(solver.problem.cost_fn.to_bytes())  # a function is not a solver
    # A well-formed object of a kind anvil.opti does not know, and a solver of such a problem.
    header = json.dumps({"kind": "Spaceship"}).encode()
    alien = b"ANVILOBJ" + struct.pack("<II", 1, len(header)) + header + struct.pack("<I", 0)
    with pytest.raises(ValueError, match="kind 'Spaceship', not one of"):
        DenseSQPFunction.from_bytes(alien)
    document = json.loads(data[16 : 16 + struct.unpack_from("<I", data, 12)[0]])
    document["problem"]["kind"] = "Spaceship"
    header = json.dumps(document).encode()
    rest = data[16 + struct.unpack_from("<I", data, 12)[0] :]
    with pytest.raises(ValueError, match="kind 'Spaceship'"):
        DenseSQPFunction.from_bytes(b"ANVILOBJ" + struct.pack("<II", 1, len(header)) + header + rest)
    expr = av.CodegenIntConstant.from_expr("TR_EXPR", av.CodegenIntConstant("TR_A", 3) * 2)
    with pytest.raises(TypeError, match="defined by an expression"):
        pickle.dumps(expr)
    assert pickle.loads(pickle.dumps(av.CodegenIntConstant("TR_B", 7, "int64_t"))).type == "int64_t"


def _solve(solver, k):
    x0, p = arguments(solver, k)
    return solver(x0, p=p)


def test_spawned_workers_solve_as_the_parent_does():
    solver = SOLVERS["riccati"]()
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        results = pool.starmap(_solve, [(solver, k) for k in range(4)])
    for k, got in enumerate(results):
        same(got, _solve(solver, k))

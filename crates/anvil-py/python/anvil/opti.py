"""SQP solvers generated as allocation-free C++ over PIQP.

A problem names the cost, the constraints and the bounds::

    min f(x, p)  s.t.  g_eq(x, p) = eq_rhs,  ineq_lb <= g_ineq(x, p) <= ineq_ub,  x_lb <= x <= x_ub

Every callback is a NumericalFunction of ``(x, p)``: ``x`` a float64 vector, ``p`` a float64
parameter array (``Arg(0)``: none) that is data, never differentiated. A solver derives what
the SQP method needs (values, the linearisation, the Hessian of the Lagrangian) and runs the
whole loop in native code; ``generate_module("m", [solver])`` writes it as C++ with every
function it calls.

    import anvil as av
    from anvil.opti import DenseProblem, DenseSQPFunction, SQPSettings

    args = (av.Arg(2), av.Arg(0))
    f = av.NumericalFunction("f", lambda x, p: (x[0] - 1.0) ** 2 + (x[1] - 2.0) ** 2, args)
    g = av.NumericalFunction("g", lambda x, p: (x[0] + x[1]).reshape(1), args)
    solver = DenseSQPFunction(name="demo", problem=DenseProblem(cost_fn=f, eq_constraints_fn=g, eq_rhs=1.0))
    res = solver([0.0, 0.0])   # res.x ~ [0, 1], res.lam_eq ~ [2]

Multipliers are signed, one per constraint row and per variable, for the Lagrangian
``L = f + lam_eq'g_eq + lam_ineq'g_ineq + lam_box'x``: positive where the upper bound is
active, negative where the lower one is (CasADi's ``lam_g``/``lam_x`` convention).

A ``MultistageProblem`` (optimal control) has one variable block ``z_i`` (``nz`` entries) per
stage ``i = 0..N`` and functions of one stage, ``(z_i, p_global, p_i)``, or of a stage and the
next, ``(z_i, z_next, p_global, p_i)``: each is traced once and its derivatives are
block-banded. ``SparseSQPFunction`` solves it; the variables are the stacked ``z`` and the
parameter is ``[p_global, p_0, ..., p_N]``. ``MultistageProblem.from_dynamics`` builds one
from dynamics ``x_next = F(x, u, p)``; its results also carry ``X`` and ``U``::

    import numpy as np
    from anvil.opti import MultistageProblem, SparseSQPFunction

    xup = (av.Arg(2), av.Arg(1), av.Arg(0))      # (x, u, p): p is absent
    F = av.NumericalFunction("F", lambda x, u, p: av.Tensor.stack(x[0] + 0.1 * x[1], x[1] + 0.1 * u[0]), xup)
    l = av.NumericalFunction("l", lambda x, u, p: (x**2).sum() + (u**2).sum(), xup)
    problem = MultistageProblem.from_dynamics(N=20, nx=2, nu=1, dynamics_fn=F, stage_cost_fn=l, u_lb=-1.0, u_ub=1.0)
    solver = SparseSQPFunction(name="ocp", problem=problem)
    res = solver(np.zeros(21 * 3), p=[1.0, 0.0])   # p = x_init; res.X: (21, 2), res.U: (20, 1)

A MultistageProblem in the z-form names its functions itself (``cost_initial_fn``,
``cost_stage_fn``, ``cost_terminal_fn``, ``eq_initial_fn``, ``eq_interstage_fn``,
``eq_stage_fn``, ``eq_terminal_fn``, ``ineq_stage_fn``); see its docstring.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import sys
import warnings
from typing import Any, Optional

import numpy as np

from . import _travel

from . import CodegenIntConstant, NumericalFunction, _anvil

__all__ = [
    "DenseIPMFunction",
    "DenseProblem",
    "DenseSQPFunction",
    "HessianApproximation",
    "IPMSettings",
    "MultistageProblem",
    "SQPResult",
    "SQPSettings",
    "SQPStatus",
    "SparseIPMFunction",
    "SparseProblem",
    "SparseSQPFunction",
    "include_dirs",
    "runtime_library",
]


class HessianApproximation(enum.Enum):
    """How the SQP method models curvature (fixed when a solver is built)."""

    #: The exact Hessian of the Lagrangian, convexified where it is not positive definite
    #: (eigenvalues clipped with the dense backend, a diagonal shift with the sparse one).
    EXACT = "EXACT"
    #: ``J'J`` for a least-squares cost ``1/2 ||r||^2``: the cost function returns ``r``.
    #: For a MultistageProblem (scalar stage costs): the Hessian of the costs alone, without
    #: the constraints' curvature (a solver of linear stage costs, whose Hessian is then empty,
    #: says so with a UserWarning when it is built).
    GAUSS_NEWTON = "GAUSS_NEWTON"


class SQPStatus(enum.IntEnum):
    """How a solve ended (printed by name: ``SQPStatus.SOLVED``; compares as its code)."""

    def __str__(self) -> str:
        return f"{type(self).__name__}.{self.name}"

    SOLVED = 0
    MAX_ITER = 1
    QP_FAILED = 2
    LINESEARCH_FAILED = 3
    NAN_DETECTED = 4
    INFEASIBLE = 5
    INVALID_INPUT = 6


@dataclasses.dataclass
class SQPSettings:
    """Settings of an SQP solver; all but ``hessian_approximation`` may change between solves
    (``solver.settings = ...``). The values a solver is built with are also the defaults of
    its generated C++ ``Settings``.

    The residuals are infinity norms: stationarity
    ``||grad f + J_eq'lam_eq + J_ineq'lam_ineq + lam_box||``, equality and inequality (and
    bound) violation, and complementarity. They are compared with the tolerances on the
    problem scaled as Ipopt scales it: the objective and each constraint row are divided so
    that their largest derivative at the current iterate is at most 100 (Ipopt measures at
    the start). Stationarity and
    complementarity are divided further by the scaled multipliers' mean magnitude over 100,
    where that exceeds 1 (Ipopt's s_d and s_c: large multipliers carry rounding errors of
    their size). A solved point also meets Ipopt's unscaled limits: violation and
    complementarity at most 1e-4, stationarity at most 1. The result reports the residuals
    unscaled.
    """

    #: Most SQP iterations (QP solves).
    max_iter: int = 100
    tol_stat: float = 1e-8
    tol_eq: float = 1e-8
    tol_ineq: float = 1e-8
    tol_comp: float = 1e-8
    hessian_approximation: HessianApproximation = HessianApproximation.EXACT
    #: Smallest eigenvalue of the convexified Hessian (keeps every QP strictly convex).
    hessian_regularization: float = 1e-8
    #: The Riccati QP's Hessian (multistage problems, exact Hessian): shifted as a whole
    #: (False, the default), by the least of a growing sequence of multiples of the identity
    #: that makes the QP convex, which the QP's stage recursion detects (Ipopt's and fatrop's
    #: inertia correction), with the bounds estimated active credited near a solution as a
    #: barrier term would credit them: Newton steps where stage blocks are indefinite and the
    #: problem is not (COPS particle steering: 6 iterations instead of 75) and where the
    #: Hessian is negative only along saturated controls (the COPS rocket: 25-29 iterations
    #: instead of MAX_ITER; 19 of the 24 COPS optimal-control runs solved instead of 9); or
    #: (True) convexified stage by stage, each diagonal block positive definite, which needs
    #: no test but is no Newton step where a block is indefinite (the cart-pole swing-up at
    #: N = 200 ends MAX_ITER far from Ipopt's optimum). A Gauss-Newton Hessian is always
    #: convexified stage by stage; the PIQP backends ignore it.
    convexify_by_stage: bool = False
    #: A backtracking line search; False takes full steps.
    line_search: bool = True
    #: The line search's test: sufficient decrease of the l1 merit function
    #: ``f + rho ||c||_1`` against the largest of the last ``merit_memory`` values (False);
    #: or (True) a filter on (constraint violation, objective) pairs (Waechter & Biegler's
    #: filter SQP), where a step is taken if it reduces either enough: it takes the long
    #: steps a large penalty rho blocks (COPS gas oil), but can wander where the merit
    #: function would not (the cart-pole from a moved initial state). Where the filter finds
    #: no step, the merit function's search is tried from the same point.
    filter: bool = False
    #: Where the full step fails the line search's test and raises the infeasibility, the QP
    #: again with the trial point's constraint values less their linear part (second-order
    #: corrections, against the Maratos effect), up to four times while the violation keeps
    #: falling; the first corrected step that passes is taken. Each costs a QP.
    second_order_correction: bool = True
    #: Sufficient-decrease constant of the line search.
    armijo: float = 1e-4
    #: Step reduction per backtracking step.
    backtrack: float = 0.5
    max_line_search_steps: int = 30
    #: Merit values the non-monotone line search compares with (1: monotone).
    merit_memory: int = 4
    #: The QPs' absolute and relative tolerances. PIQP and the ``"ipm"`` backend solve
    #: every QP to them (the latter, where roundoff stalls it, to a millionth of the QP's
    #: data); the multistage Riccati backend only near the solution, and farther away to
    #: 1e-4 times the KKT error (at most 1e-3): an inexact step costs fewer QP iterations
    #: and few if any extra SQP iterations.
    qp_eps_abs: float = 1e-10
    qp_eps_rel: float = 1e-10
    qp_max_iter: int = 250
    #: 0: silent; 1: one line per iteration (on the process's stdout); 2: also, per
    #: iteration, the step's merit penalty, slope and largest entry, and the iterations of
    #: each QP the ``qp_backend="ipm"`` solvers solve.
    verbose: int = 0
    #: When ``max_iter`` ends a solve after a step, also evaluate the derivatives at the
    #: returned point so that ``stat_res`` is its stationarity; False: only its objective
    #: and constraints (``stat_res`` is NaN; each iteration evaluates derivatives once).
    final_stationarity: bool = True

    @classmethod
    def real_time_iteration(cls, **overrides: Any) -> "SQPSettings":
        """Real-time iteration (RTI), the MPC mode: each solve is one SQP step — linearise at
        the warm start, solve one QP, take the full step (no line search) — with the
        Gauss-Newton Hessian and the QP solved to 1e-6 (``overrides`` change any field;
        ``SqpSettings::real_time_iteration`` in Rust is the same). A solve then reports
        ``SQPStatus.MAX_ITER`` unless the warm start already was optimal: the step is the
        answer. Derivatives are evaluated once, at the warm start (``final_stationarity`` is
        off): the result's objective and constraint residuals are those of the returned
        point, its ``stat_res`` is NaN.

        >>> s = SQPSettings.real_time_iteration()
        >>> (s.max_iter, s.line_search, s.final_stationarity, s.hessian_approximation.name)
        (1, False, False, 'GAUSS_NEWTON')
        """
        values: dict[str, Any] = dict(
            max_iter=1,
            line_search=False,
            hessian_approximation=HessianApproximation.GAUSS_NEWTON,
            qp_eps_abs=1e-6,
            qp_eps_rel=1e-6,
            final_stationarity=False,
        )
        values.update(overrides)
        return cls(**values)

    def _as_dict(self) -> dict[str, Any]:
        return _settings_dict(self)


def _settings_dict(settings: Any) -> dict[str, Any]:
    """A settings dataclass as the native side takes it, each field's type checked (the error
    names the field)."""
    cls = type(settings).__name__
    out: dict[str, Any] = {}
    for field in dataclasses.fields(settings):
        value = getattr(settings, field.name)
        where = f"{cls}.{field.name}"
        if field.name == "hessian_approximation":
            if not isinstance(value, HessianApproximation):
                raise TypeError(f"{where} must be a HessianApproximation, got {value!r}")
            value = value.value
        elif field.type in ("bool", bool):
            if not isinstance(value, (bool, np.bool_)):
                raise TypeError(f"{where} must be a bool, got {value!r}")
            value = bool(value)
        elif field.type in ("str", str):
            if not isinstance(value, str):
                raise TypeError(f"{where} must be a str, got {value!r}")
        elif field.type in ("int", int):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise TypeError(f"{where} must be an int, got {value!r}")
            if value < 0:
                raise ValueError(f"{where} must be >= 0, got {value}")
            value = int(value)
        else:
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise TypeError(f"{where} must be a number, got {value!r}")
            value = float(value)
        out[field.name] = value
    return out


@dataclasses.dataclass
class IPMSettings:
    """Settings of an interior-point solver (``DenseIPMFunction``): Ipopt's options of the same
    names, with Ipopt's defaults. All but ``hessian_approximation`` may change between solves.

    A solve ends ``SOLVED`` when the scaled optimality error is at most ``tol`` and the unscaled
    dual infeasibility, constraint violation and complementarity are within ``dual_inf_tol``,
    ``constr_viol_tol`` and ``compl_inf_tol`` (or when the error stayed below
    ``acceptable_tol`` for ``acceptable_iter`` iterations in a row: Ipopt's "acceptable level").

    >>> IPMSettings(mu_strategy="adaptive").tol
    1e-08
    """

    #: Most iterations (restoration iterations included).
    max_iter: int = 3000
    tol: float = 1e-8
    acceptable_tol: float = 1e-6
    #: Consecutive acceptable iterations that end a solve (0: never).
    acceptable_iter: int = 15
    constr_viol_tol: float = 1e-4
    dual_inf_tol: float = 1.0
    compl_inf_tol: float = 1e-4
    #: The initial barrier parameter (small, e.g. 1e-4, for a warm start).
    mu_init: float = 0.1
    #: ``"monotone"`` (Fiacco-McCormick, robust) or ``"adaptive"`` (LOQO's rule, fewer
    #: iterations on many problems).
    mu_strategy: str = "monotone"
    #: How far the initial point is pushed from its bounds (relative, at least 1).
    bound_push: float = 1e-2
    #: ... at most this fraction of the distance between two bounds.
    bound_frac: float = 1e-2
    #: Bounds relaxed by this relative amount, at most ``constr_viol_tol`` (equal bounds keep
    #: an interior).
    bound_relax_factor: float = 1e-8
    #: The cost and constraints are scaled so their gradients at x0 (as given, before the
    #: bound push) are at most this (0: off).
    nlp_scaling_max_gradient: float = 100.0
    #: Most second-order corrections per iteration.
    max_soc: int = 4
    #: Warm start (MPC): push x0 from its bounds by only ``warm_start_bound_push`` and keep the
    #: given multipliers.
    warm_start_init_point: bool = False
    warm_start_bound_push: float = 1e-9
    #: 0: silent; 1: one line per iteration in Ipopt's columns (on the process's stdout).
    verbose: int = 0
    #: ``EXACT``, or ``GAUSS_NEWTON`` for a least-squares cost (the cost returns the residual).
    hessian_approximation: HessianApproximation = HessianApproximation.EXACT

    def _as_dict(self) -> dict[str, Any]:
        return _settings_dict(self)


@dataclasses.dataclass(frozen=True)
class SQPResult:
    """A solve's last iterate, its multipliers, and what happened."""

    x: np.ndarray
    lam_eq: np.ndarray
    lam_ineq: np.ndarray
    lam_box: np.ndarray
    status: SQPStatus
    iterations: int
    qp_iterations: int
    objective: float
    stat_res: float
    eq_res: float
    ineq_res: float
    comp_res: float
    #: Seconds spent in the native solve.
    solve_time: float
    #: States ``(N + 1, nx)`` of a problem from ``MultistageProblem.from_dynamics`` (else None).
    X: Optional[np.ndarray] = None
    #: Controls ``(N, nu)`` of a problem from ``MultistageProblem.from_dynamics`` (else None).
    U: Optional[np.ndarray] = None
    #: With ``SQPStatus.INVALID_INPUT``: the argument at fault (``"x0"``, ``"p"``,
    #: ``"lam_eq0"``, ``"lam_ineq0"``, ``"lam_box0"``, ``"settings"``); None otherwise.
    invalid_input: Optional[str] = None
    #: The variables shared by every stage of a MultistageProblem with ``shared_dim > 0``
    #: (``x[-shared_dim:]``; else None).
    S: Optional[np.ndarray] = None

    @property
    def success(self) -> bool:
        """Whether the solve converged (``status == SQPStatus.SOLVED``)."""
        return self.status == SQPStatus.SOLVED


def _bound(value: Any, what: str) -> Any:
    """A bound as a float (every entry) or a flat list of floats; ±inf or |v| >= 1e20: none."""
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{what} must be numbers (a scalar, an array or a Tensor), got {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim == 0:
        return float(arr)
    return [float(v) for v in arr.ravel()]


def _function(fn: Any, what: str, optional: bool) -> Any:
    if fn is None and optional:
        return None
    if not isinstance(fn, NumericalFunction):
        raise TypeError(f"{what} must be a NumericalFunction of (x, p), got {type(fn).__name__}")
    return fn


class _Travels:
    """Problems and solvers travel like functions: ``pickle``, ``copy``, worker processes
    (``multiprocessing``, Dask) and ``save``/``load`` use anvil's object format (the functions
    in anvil's function format and a JSON document; see ``anvil._travel``), without the
    Python code that traced them."""

    def _describe(self, writer: Any) -> dict[str, Any]:
        raise NotImplementedError

    def to_bytes(self) -> bytes:
        """The object in anvil's object format (what pickling and ``save`` write)."""
        return _travel.pack(type(self).__name__, self._describe)

    @classmethod
    def from_bytes(cls, data: bytes) -> Any:
        """An object from ``to_bytes`` (of this class)."""
        obj = _restore(data)
        if not isinstance(obj, cls):
            raise TypeError(f"{cls.__name__}.from_bytes: the data holds a {type(obj).__name__}")
        return obj

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the object to ``path``; ``load`` reads it (in another process too)."""
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Any:
        """Reads an object written by ``save``."""
        with open(path, "rb") as f:
            return cls.from_bytes(f.read())

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (self.to_bytes(),))


def _restore(data: bytes) -> Any:
    """The problem or solver of anvil's object format ``data``."""
    document, functions = _travel.unpack(data)
    classes = (
        DenseProblem,
        SparseProblem,
        MultistageProblem,
        DenseSQPFunction,
        SparseSQPFunction,
        DenseIPMFunction,
        SparseIPMFunction,
    )
    return _kind(document, classes)._rebuild(document, functions)


def _kind(document: dict[str, Any], classes: tuple[Any, ...]) -> Any:
    """The class of ``classes`` a document names, or a ValueError."""
    kind = document.get("kind")
    for c in classes:
        if c.__name__ == kind:
            return c
    raise ValueError(f"anvil object of kind {kind!r}, not one of {', '.join(c.__name__ for c in classes)}")


class DenseProblem(_Travels):
    """An optimisation problem for ``DenseSQPFunction`` (dense derivatives).

    Args:
      cost_fn: f(x, p), a scalar; or, with ``HessianApproximation.GAUSS_NEWTON``, the
        residual r(x, p) of the cost 1/2 ||r||^2.
      eq_constraints_fn: g_eq(x, p) (any shape, read as a vector), or None.
      ineq_constraints_fn: g_ineq(x, p), or None.
      x_lb, x_ub: bounds on x (default: none).
      eq_rhs: right-hand side of the equalities (default 0).
      ineq_lb, ineq_ub: bounds on g_ineq (default: -inf and 0, i.e. g_ineq <= 0).

    Bounds are scalars, arrays or constant Tensors; ±inf, or magnitudes >= 1e20, mean none.
    """

    def __init__(
        self,
        cost_fn: NumericalFunction[Any, Any],
        eq_constraints_fn: Optional[NumericalFunction[Any, Any]] = None,
        ineq_constraints_fn: Optional[NumericalFunction[Any, Any]] = None,
        x_lb: Any = None,
        x_ub: Any = None,
        eq_rhs: Any = None,
        ineq_lb: Any = None,
        ineq_ub: Any = None,
    ) -> None:
        self.cost_fn = _function(cost_fn, "cost_fn", optional=False)
        self.eq_constraints_fn = _function(eq_constraints_fn, "eq_constraints_fn", optional=True)
        self.ineq_constraints_fn = _function(ineq_constraints_fn, "ineq_constraints_fn", optional=True)
        if self.eq_constraints_fn is None and eq_rhs is not None:
            raise ValueError("eq_rhs is given but there is no eq_constraints_fn")
        if self.ineq_constraints_fn is None and (ineq_lb is not None or ineq_ub is not None):
            raise ValueError("ineq_lb/ineq_ub are given but there is no ineq_constraints_fn")
        self.x_lb = _bound(-np.inf if x_lb is None else x_lb, "x_lb")
        self.x_ub = _bound(np.inf if x_ub is None else x_ub, "x_ub")
        self.eq_rhs = _bound(0.0 if eq_rhs is None else eq_rhs, "eq_rhs")
        self.ineq_lb = _bound(-np.inf if ineq_lb is None else ineq_lb, "ineq_lb")
        self.ineq_ub = _bound(0.0 if ineq_ub is None else ineq_ub, "ineq_ub")

    _FUNCTIONS = ("cost_fn", "eq_constraints_fn", "ineq_constraints_fn")
    _BOUNDS = ("x_lb", "x_ub", "eq_rhs", "ineq_lb", "ineq_ub")

    def _describe(self, writer: Any) -> dict[str, Any]:
        return {
            "functions": {k: writer.function(getattr(self, k)) for k in self._FUNCTIONS},
            "bounds": {k: getattr(self, k) for k in self._BOUNDS},
        }

    @classmethod
    def _rebuild(cls, document: dict[str, Any], functions: list[Any]) -> "DenseProblem":
        fns = {k: _travel.function(functions, document["functions"].get(k)) for k in cls._FUNCTIONS}
        bounds = document["bounds"]
        kwargs: dict[str, Any] = dict(fns, x_lb=bounds["x_lb"], x_ub=bounds["x_ub"])
        if fns["eq_constraints_fn"] is not None:
            kwargs["eq_rhs"] = bounds["eq_rhs"]
        if fns["ineq_constraints_fn"] is not None:
            kwargs.update(ineq_lb=bounds["ineq_lb"], ineq_ub=bounds["ineq_ub"])
        return cls(**kwargs)


class SparseProblem(DenseProblem):
    """An optimisation problem for ``SparseSQPFunction`` (sparse derivatives on fixed
    patterns, found by sparsity detection and computed with graph colouring); the same
    arguments as ``DenseProblem``."""


def _count(value: Any, what: str, least: int) -> int:
    """A non-negative int argument (``least``: its smallest allowed value)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int, got {type(value).__name__}")
    if value < least:
        raise ValueError(f"{what} must be >= {least}, got {value}")
    return int(value)


def _horizon(value: Any) -> int | CodegenIntConstant:
    """``N``: an int >= 1, or a CodegenIntConstant (its value >= 1)."""
    if isinstance(value, CodegenIntConstant):
        if value.value < 1:
            raise ValueError(f"N must be >= 1, got {value.name} = {value.value}")
        return value
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"N must be an int or a CodegenIntConstant, got {type(value).__name__}")
    return _count(value, "N", 1)


def _stage_function(fn: Any, what: str, form: str) -> Optional[NumericalFunction[Any, Any]]:
    if fn is None:
        return None
    if not isinstance(fn, NumericalFunction):
        raise TypeError(f"{what} must be a NumericalFunction of {form} or None, got {type(fn).__name__}")
    return fn


def _shared(count: Any, lb: Any, ub: Any) -> tuple[int, Any, Any]:
    """``shared_dim`` and its bounds (None when there are no shared variables)."""
    count = _count(count, "shared_dim", 0)
    if count == 0:
        if lb is not None or ub is not None:
            raise ValueError("shared_lb/shared_ub are given but shared_dim is 0")
        return 0, None, None
    return count, _bound(-np.inf if lb is None else lb, "shared_lb"), _bound(np.inf if ub is None else ub, "shared_ub")


def _inequality_bounds(
    fn: Optional[NumericalFunction[Any, Any]], what: str, lb: Any, ub: Any, names: tuple[str, str]
) -> tuple[Any, Any]:
    """The bounds of an inequality function ``what`` (default -inf and 0, i.e. ``h <= 0``);
    bounds without the function are an error."""
    if fn is None and (lb is not None or ub is not None):
        raise ValueError(f"{names[0]}/{names[1]} are given but there is no {what}")
    return _bound(-np.inf if lb is None else lb, names[0]), _bound(0.0 if ub is None else ub, names[1])


def _native(fn: Optional[NumericalFunction[Any, Any]]) -> Any:
    return None if fn is None else fn._native


class MultistageProblem(_Travels):
    """A multistage (optimal control) problem for ``SparseSQPFunction``, over the stacked
    stage variables ``z = (z_0, ..., z_N)`` (``nz`` each) with a global parameter
    ``p_global`` and one parameter ``p_i`` per stage::

        min  l_0(z_0) + sum_{0<i<N} l(z_i) + l_N(z_N)
        s.t. e_0(z_0) = 0,  c(z_i, z_{i+1}) = 0 (i < N),  e(z_i) = 0 (0 < i < N),  e_N(z_N) = 0,
             ineq_lb <= h(z_i) <= ineq_ub (0 < i < N),  z_lb <= z_i <= z_ub (every i),
             ineq_initial_lb <= h_0(z_0) <= ineq_initial_ub,  ineq_terminal_lb <= h_N(z_N) <= ineq_terminal_ub

    Every function takes ``(z, p_global, p_i)`` (``Arg(nz), Arg(global_param_dim),
    Arg(param_dim)``; ``Arg(0)`` for an absent parameter), ``eq_interstage_fn`` takes
    ``(z, z_next, p_global, p_i)`` with the source stage's ``p_i``; costs return scalars,
    constraints any shape (read as vectors). Each is traced once and its derivatives are
    evaluated for all its stages at once. Any function may be None.

    A solver's variables are ``z`` (``(N + 1) * nz`` entries), its parameter
    ``[p_global, p_0, ..., p_N]`` (``global_param_dim + (N + 1) * param_dim``). Equality
    multipliers come in the order initial, interstage (stage by stage), stage (stage by
    stage), terminal; inequality multipliers initial, stage (stage by stage), terminal.

    Args:
      N: stage transitions (``N + 1`` stages): an int, or a CodegenIntConstant that the
        generated C++ declares.
      nz: variables per stage.
      cost_initial_fn, cost_stage_fn, cost_terminal_fn: ``l_0``, ``l``, ``l_N``.
      eq_initial_fn, eq_interstage_fn, eq_stage_fn, eq_terminal_fn: ``e_0``, ``c``, ``e``, ``e_N``.
      ineq_stage_fn: ``h``, with ``ineq_lb``/``ineq_ub`` (one entry per row of ``h``, or
        scalars, at every stage; or an ``(N - 1, rows)`` array of each stage's; default -inf
        and 0, i.e. ``h <= 0``).
      ineq_initial_fn, ineq_terminal_fn: ``h_0`` and ``h_N``, inequalities on the first and the
        last stage only (a terminal set: ``|z_N[:2] - target|^2 <= r^2``), with
        ``ineq_initial_lb``/``ineq_initial_ub`` and ``ineq_terminal_lb``/``ineq_terminal_ub``
        (one entry per row, or scalars; default -inf and 0).
      z_lb, z_ub: bounds on the stages' variables: ``nz`` entries (or scalars) that hold at
        every stage, or an ``(N + 1, nz)`` array (or ``(N + 1) * nz`` entries) of each
        stage's, e.g. a free final time bounded at one stage only (default none).
      param_dim: entries of each stage parameter ``p_i``.
      global_param_dim: entries of ``p_global``.

      shared_dim: entries of variables ``s`` shared by every stage (a free final time, a
        design parameter); every function then takes ``s`` before ``p_global``:
        ``(z, s, p_global, p_i)`` and ``(z, z_next, s, p_global, p_i)``. A solver's variables
        are then ``[z_0, ..., z_N, s]`` and results carry ``S``. The solvers carry a copy of
        ``s`` in each stage, equal to the next stage's, so that their stage-wise
        factorisations eliminate it as they eliminate states.
      shared_lb, shared_ub: bounds on ``s`` (``shared_dim`` entries, or scalars; default none).
        Their multiplier in ``lam_box`` is the sum of the copies'.

    Bounds are scalars, arrays or constant Tensors; ±inf, or magnitudes >= 1e20, mean none.
    Signatures and bound lengths are checked here (ValueError saying what is wrong).
    """

    horizon: int | CodegenIntConstant
    nz: int
    param_dim: int
    global_param_dim: int
    shared_dim: int = 0
    shared_lb: Any = None
    shared_ub: Any = None
    # The z-form's functions and bounds (None in a problem from ``from_dynamics``).
    cost_initial_fn: Optional[NumericalFunction[Any, Any]] = None
    cost_stage_fn: Optional[NumericalFunction[Any, Any]] = None
    cost_terminal_fn: Optional[NumericalFunction[Any, Any]] = None
    eq_initial_fn: Optional[NumericalFunction[Any, Any]] = None
    eq_interstage_fn: Optional[NumericalFunction[Any, Any]] = None
    eq_stage_fn: Optional[NumericalFunction[Any, Any]] = None
    eq_terminal_fn: Optional[NumericalFunction[Any, Any]] = None
    ineq_stage_fn: Optional[NumericalFunction[Any, Any]] = None
    ineq_lb: Any = None
    ineq_ub: Any = None
    ineq_initial_fn: Optional[NumericalFunction[Any, Any]] = None
    ineq_initial_lb: Any = None
    ineq_initial_ub: Any = None
    ineq_terminal_fn: Optional[NumericalFunction[Any, Any]] = None
    ineq_terminal_lb: Any = None
    ineq_terminal_ub: Any = None
    z_lb: Any = None
    z_ub: Any = None
    #: States and controls per stage (``z = (x, u)``) of a problem from ``from_dynamics``
    #: (None in the z-form), with its functions and bounds.
    nx: Optional[int] = None
    nu: Optional[int] = None
    dynamics_fn: Optional[NumericalFunction[Any, Any]] = None
    stage_cost_fn: Optional[NumericalFunction[Any, Any]] = None
    terminal_cost_fn: Optional[NumericalFunction[Any, Any]] = None
    path_constraints_fn: Optional[NumericalFunction[Any, Any]] = None
    terminal_constraints_fn: Optional[NumericalFunction[Any, Any]] = None
    initial_constraints_fn: Optional[NumericalFunction[Any, Any]] = None
    terminal_ineq_fn: Optional[NumericalFunction[Any, Any]] = None
    path_lb: Any = None
    path_ub: Any = None
    terminal_ineq_lb: Any = None
    terminal_ineq_ub: Any = None
    x_lb: Any = None
    x_ub: Any = None
    u_lb: Any = None
    u_ub: Any = None
    _native: _anvil._MultistageProblem

    def __init__(
        self,
        N: int | CodegenIntConstant,
        nz: int,
        cost_initial_fn: Optional[NumericalFunction[Any, Any]] = None,
        cost_stage_fn: Optional[NumericalFunction[Any, Any]] = None,
        cost_terminal_fn: Optional[NumericalFunction[Any, Any]] = None,
        eq_initial_fn: Optional[NumericalFunction[Any, Any]] = None,
        eq_interstage_fn: Optional[NumericalFunction[Any, Any]] = None,
        eq_stage_fn: Optional[NumericalFunction[Any, Any]] = None,
        eq_terminal_fn: Optional[NumericalFunction[Any, Any]] = None,
        ineq_stage_fn: Optional[NumericalFunction[Any, Any]] = None,
        ineq_lb: Any = None,
        ineq_ub: Any = None,
        z_lb: Any = None,
        z_ub: Any = None,
        param_dim: int = 0,
        global_param_dim: int = 0,
        shared_dim: int = 0,
        shared_lb: Any = None,
        shared_ub: Any = None,
        ineq_initial_fn: Optional[NumericalFunction[Any, Any]] = None,
        ineq_initial_lb: Any = None,
        ineq_initial_ub: Any = None,
        ineq_terminal_fn: Optional[NumericalFunction[Any, Any]] = None,
        ineq_terminal_lb: Any = None,
        ineq_terminal_ub: Any = None,
    ) -> None:
        self.horizon = _horizon(N)
        self.nz = _count(nz, "nz", 1)
        self.param_dim = _count(param_dim, "param_dim", 0)
        self.global_param_dim = _count(global_param_dim, "global_param_dim", 0)
        self.shared_dim, self.shared_lb, self.shared_ub = _shared(shared_dim, shared_lb, shared_ub)
        s = ", s" if self.shared_dim else ""
        stage, coupled = f"(z{s}, p_global, p_i)", f"(z, z_next{s}, p_global, p_i)"
        self.cost_initial_fn = _stage_function(cost_initial_fn, "cost_initial_fn", stage)
        self.cost_stage_fn = _stage_function(cost_stage_fn, "cost_stage_fn", stage)
        self.cost_terminal_fn = _stage_function(cost_terminal_fn, "cost_terminal_fn", stage)
        self.eq_initial_fn = _stage_function(eq_initial_fn, "eq_initial_fn", stage)
        self.eq_interstage_fn = _stage_function(eq_interstage_fn, "eq_interstage_fn", coupled)
        self.eq_stage_fn = _stage_function(eq_stage_fn, "eq_stage_fn", stage)
        self.eq_terminal_fn = _stage_function(eq_terminal_fn, "eq_terminal_fn", stage)
        self.ineq_stage_fn = _stage_function(ineq_stage_fn, "ineq_stage_fn", stage)
        self.ineq_initial_fn = _stage_function(ineq_initial_fn, "ineq_initial_fn", stage)
        self.ineq_terminal_fn = _stage_function(ineq_terminal_fn, "ineq_terminal_fn", stage)
        self.ineq_lb, self.ineq_ub = _inequality_bounds(self.ineq_stage_fn, "ineq_stage_fn", ineq_lb, ineq_ub, ("ineq_lb", "ineq_ub"))
        self.ineq_initial_lb, self.ineq_initial_ub = _inequality_bounds(
            self.ineq_initial_fn, "ineq_initial_fn", ineq_initial_lb, ineq_initial_ub, ("ineq_initial_lb", "ineq_initial_ub")
        )
        self.ineq_terminal_lb, self.ineq_terminal_ub = _inequality_bounds(
            self.ineq_terminal_fn, "ineq_terminal_fn", ineq_terminal_lb, ineq_terminal_ub, ("ineq_terminal_lb", "ineq_terminal_ub")
        )
        self.z_lb = _bound(-np.inf if z_lb is None else z_lb, "z_lb")
        self.z_ub = _bound(np.inf if z_ub is None else z_ub, "z_ub")
        self._native = _anvil.multistage_problem(
            self.horizon,
            self.nz,
            self.global_param_dim,
            self.param_dim,
            _native(self.cost_initial_fn),
            _native(self.cost_stage_fn),
            _native(self.cost_terminal_fn),
            _native(self.eq_initial_fn),
            _native(self.eq_interstage_fn),
            _native(self.eq_stage_fn),
            _native(self.eq_terminal_fn),
            _native(self.ineq_stage_fn),
            self.ineq_lb,
            self.ineq_ub,
            self.z_lb,
            self.z_ub,
            self.shared_dim,
            self.shared_lb,
            self.shared_ub,
            _native(self.ineq_initial_fn),
            (self.ineq_initial_lb, self.ineq_initial_ub),
            _native(self.ineq_terminal_fn),
            (self.ineq_terminal_lb, self.ineq_terminal_ub),
        )

    @classmethod
    def from_dynamics(
        cls,
        N: int | CodegenIntConstant,
        nx: int,
        nu: int,
        dynamics_fn: NumericalFunction[Any, Any],
        stage_cost_fn: Optional[NumericalFunction[Any, Any]] = None,
        terminal_cost_fn: Optional[NumericalFunction[Any, Any]] = None,
        path_constraints_fn: Optional[NumericalFunction[Any, Any]] = None,
        path_lb: Any = None,
        path_ub: Any = None,
        x_lb: Any = None,
        x_ub: Any = None,
        u_lb: Any = None,
        u_ub: Any = None,
        param_dim: int = 0,
        terminal_constraints_fn: Optional[NumericalFunction[Any, Any]] = None,
        shared_dim: int = 0,
        shared_lb: Any = None,
        shared_ub: Any = None,
        initial_constraints_fn: Optional[NumericalFunction[Any, Any]] = None,
        terminal_ineq_fn: Optional[NumericalFunction[Any, Any]] = None,
        terminal_ineq_lb: Any = None,
        terminal_ineq_ub: Any = None,
    ) -> MultistageProblem:
        """An optimal control problem in states ``x`` (``nx``) and controls ``u`` (``nu``)::

            min  sum_{k<N} l(x_k, u_k, p_k) + l_N(x_N, p_N)
            s.t. x_0 = x_init,  x_{k+1} = F(x_k, u_k, p_k),  path_lb <= h(x_k, u_k, p_k) <= path_ub (k < N),
                 r(x_N, p_N) = 0,  terminal_ineq_lb <= h_N(x_N, p_N) <= terminal_ineq_ub,
                 x_lb <= x_k <= x_ub,  u_lb <= u_k <= u_ub

        as a MultistageProblem with ``z_k = (x_k, u_k)`` (``z_N``'s control is unused: bounded,
        costed nowhere). Callbacks take ``(x, u, p)`` (``terminal_cost_fn``: ``(x, p)``), ``p``
        the stage's parameter (``Arg(param_dim)``, ``Arg(0)`` for none).

        A solver's guess has ``(N + 1) * (nx + nu)`` entries (the stacked ``z``), its
        parameter is ``[x_init, p_0, ..., p_N]`` (None: zeros); results also carry ``X``
        ``(N + 1, nx)`` and ``U`` ``(N, nu)``. Equality multipliers: the initial state's
        ``nx`` rows, then the dynamics step by step; inequality multipliers step by step.

        Args:
          N: steps (an int or a CodegenIntConstant).
          nx, nu: states and controls.
          dynamics_fn: ``F``, returning the next state (``nx`` entries).
          stage_cost_fn, terminal_cost_fn: ``l`` and ``l_N`` (scalars), or None.
          path_constraints_fn: ``h``, or None; ``path_lb``/``path_ub``: its bounds, the same at
            every stage or an ``(N, rows)`` array of each stage's (default -inf and 0, i.e.
            ``h <= 0``).
          x_lb, x_ub, u_lb, u_ub: bounds on the states and controls (default: none): ``nx``
            (``nu``) entries, or scalars, that hold at every stage, or an ``(N + 1, nx)``
            (``(N, nu)``) array of each stage's (a state held at the last stage only).
          param_dim: entries of each stage parameter.
          terminal_constraints_fn: ``r`` of ``(x, p)``, equality rows on the final state (a
            point-to-point problem: ``x - x_target``), or None. Their multipliers follow the
            dynamics'. The final state is then fixed twice (by the dynamics and by these
            rows): SparseIPMFunction pivots them in earlier stages; the SQP's Riccati QP
            takes its general (z-form) recursion.
          shared_dim: entries of variables ``s`` shared by every step, chosen by the solver
            (a free final time ``T``: ``F = x + T/N * f(x, u)``); every callback then takes
            ``s`` before ``p``: ``(x, u, s, p)``, ``(x, s, p)``. The guess and the result's
            ``x`` end with ``s`` (``(N + 1) * (nx + nu) + shared_dim`` entries); results carry
            ``S``. See ``MultistageProblem``'s ``shared_dim``.
          shared_lb, shared_ub: bounds on ``s`` (default none).
          initial_constraints_fn: ``r_0`` of ``(x, u, p)``, equality rows on the first stage in
            place of ``x_0 = x_init`` (some states free: ``lambda x, u, p: x[:2] - a``), or None.
            There is then no ``x_init``: the parameter is ``[p_0, ..., p_N]``. Their
            multipliers come first.
          terminal_ineq_fn: ``h_N`` of ``(x, p)``, inequality rows on the final state (a terminal
            set, or a path constraint that must hold at the end too: ``h(x_N)`` of an obstacle),
            or None; ``terminal_ineq_lb``/``terminal_ineq_ub``: its bounds (default -inf and 0).
            Their multipliers follow the path constraints'.

        Example, the least time ``T`` that moves a double integrator from rest at 0 to rest
        at 1 with ``|u| <= 1``::

            N = 20
            xusp = (av.Arg(2), av.Arg(1), av.Arg(1), av.Arg(0))   # (x, u, s, p), s = [T]
            F = av.NumericalFunction(
                "F", lambda x, u, s, p: x + s[0] / N * av.Tensor.stack(x[1], u[0]), xusp)
            xsp = (av.Arg(2), av.Arg(1), av.Arg(0))
            time = av.NumericalFunction("time", lambda x, s, p: s[0], xsp)
            rest = av.NumericalFunction("rest", lambda x, s, p: x - np.array([1.0, 0.0]), xsp)
            problem = MultistageProblem.from_dynamics(
                N, 2, 1, F, terminal_cost_fn=time, terminal_constraints_fn=rest,
                u_lb=-1.0, u_ub=1.0, shared_dim=1, shared_lb=0.1, shared_ub=10.0)
            res = SparseIPMFunction(name="min_time", problem=problem)(
                np.r_[np.zeros(21 * 3), 1.0], p=[0.0, 0.0])    # res.S ~ [2]
        """
        horizon = _horizon(N)
        nx, nu = _count(nx, "nx", 1), _count(nu, "nu", 0)
        param_dim = _count(param_dim, "param_dim", 0)
        shared_dim, shared_lb, shared_ub = _shared(shared_dim, shared_lb, shared_ub)
        s = ", s" if shared_dim else ""
        xup, xp = f"(x, u{s}, p)", f"(x{s}, p)"
        if not isinstance(dynamics_fn, NumericalFunction):
            raise TypeError(f"dynamics_fn must be a NumericalFunction of {xup}, got {type(dynamics_fn).__name__}")
        stage_cost_fn = _stage_function(stage_cost_fn, "stage_cost_fn", xup)
        terminal_cost_fn = _stage_function(terminal_cost_fn, "terminal_cost_fn", xp)
        path_constraints_fn = _stage_function(path_constraints_fn, "path_constraints_fn", xup)
        terminal_constraints_fn = _stage_function(terminal_constraints_fn, "terminal_constraints_fn", xp)
        initial_constraints_fn = _stage_function(initial_constraints_fn, "initial_constraints_fn", xup)
        terminal_ineq_fn = _stage_function(terminal_ineq_fn, "terminal_ineq_fn", xp)
        path_bounds = _inequality_bounds(path_constraints_fn, "path_constraints_fn", path_lb, path_ub, ("path_lb", "path_ub"))
        terminal_ineq_bounds = _inequality_bounds(
            terminal_ineq_fn, "terminal_ineq_fn", terminal_ineq_lb, terminal_ineq_ub, ("terminal_ineq_lb", "terminal_ineq_ub")
        )
        bounds = [
            *path_bounds,
            *(
                _bound(default if value is None else value, what)
                for value, default, what in (
                    (x_lb, -np.inf, "x_lb"),
                    (x_ub, np.inf, "x_ub"),
                    (u_lb, -np.inf, "u_lb"),
                    (u_ub, np.inf, "u_ub"),
                )
            ),
        ]
        native = _anvil.control_problem(
            horizon,
            nx,
            nu,
            param_dim,
            dynamics_fn._native,
            _native(stage_cost_fn),
            _native(terminal_cost_fn),
            _native(path_constraints_fn),
            *bounds,
            _native(terminal_constraints_fn),
            shared_dim,
            shared_lb,
            shared_ub,
            _native(initial_constraints_fn),
            _native(terminal_ineq_fn),
            terminal_ineq_bounds,
        )
        problem = cls.__new__(cls)
        problem.shared_dim, problem.shared_lb, problem.shared_ub = shared_dim, shared_lb, shared_ub
        problem.horizon, problem.nz, problem.nx, problem.nu = horizon, nx + nu, nx, nu
        problem.param_dim, problem.global_param_dim = param_dim, 0 if initial_constraints_fn else nx
        problem.dynamics_fn, problem.stage_cost_fn, problem.terminal_cost_fn = dynamics_fn, stage_cost_fn, terminal_cost_fn
        problem.path_constraints_fn = path_constraints_fn
        problem.terminal_constraints_fn = terminal_constraints_fn
        problem.initial_constraints_fn = initial_constraints_fn
        problem.terminal_ineq_fn = terminal_ineq_fn
        problem.terminal_ineq_lb, problem.terminal_ineq_ub = terminal_ineq_bounds
        problem.path_lb, problem.path_ub, problem.x_lb, problem.x_ub, problem.u_lb, problem.u_ub = bounds
        problem._native = native
        return problem

    @property
    def N(self) -> int:
        """Stage transitions (the value of ``horizon`` when it is a CodegenIntConstant)."""
        return self._native.horizon

    @property
    def nvars(self) -> int:
        """All variables, ``(N + 1) * nz + shared_dim``."""
        return self._native.dims[0]

    @property
    def neq(self) -> int:
        """Equality constraint rows."""
        return self._native.dims[1]

    @property
    def nineq(self) -> int:
        """Inequality constraint rows."""
        return self._native.dims[2]

    @property
    def param_size(self) -> int:
        """Entries of a solver's parameter: ``global_param_dim + (N + 1) * param_dim``."""
        return self._native.dims[3]

    def shift(self, result: SQPResult) -> SQPResult:
        """The warm start of the next step of a receding-horizon (MPC) loop: ``result`` moved
        one stage earlier. Stage ``i`` takes stage ``i + 1``'s variables, each constraint's
        multipliers move the same way, the last stage keeps its own. Pass it as
        ``solver(p=..., warm_start=problem.shift(result))``."""
        if not isinstance(result, SQPResult):
            raise TypeError(f"shift takes the SQPResult of a solve of this problem, got {type(result).__name__}")
        x, lam_eq, lam_ineq, lam_box = self._native.shift(
            *(np.ascontiguousarray(v, dtype=np.float64).ravel() for v in (result.x, result.lam_eq, result.lam_ineq, result.lam_box))
        )
        states, controls, shared = self._split(x)
        return dataclasses.replace(
            result, x=x, lam_eq=lam_eq, lam_ineq=lam_ineq, lam_box=lam_box, X=states, U=controls, S=shared
        )

    def _split(self, z: np.ndarray) -> tuple[Optional[np.ndarray], Optional[np.ndarray], Optional[np.ndarray]]:
        """States ``(N + 1, nx)`` and controls ``(N, nu)`` of a solver's variables (None,
        None for a problem not built from dynamics), and the shared variables (None without)."""
        stacked = (self.N + 1) * self.nz
        shared = z[stacked:].copy() if self.shared_dim else None
        if self.nx is None:
            return None, None, shared
        stages = z[:stacked].reshape(self.N + 1, self.nz)
        return stages[:, : self.nx].copy(), stages[:-1, self.nx :].copy(), shared

    _Z_FUNCTIONS = (
        "cost_initial_fn",
        "cost_stage_fn",
        "cost_terminal_fn",
        "eq_initial_fn",
        "eq_interstage_fn",
        "eq_stage_fn",
        "eq_terminal_fn",
        "ineq_stage_fn",
        "ineq_initial_fn",
        "ineq_terminal_fn",
    )
    _DYNAMICS_FUNCTIONS = (
        "dynamics_fn",
        "stage_cost_fn",
        "terminal_cost_fn",
        "path_constraints_fn",
        "terminal_constraints_fn",
        "initial_constraints_fn",
        "terminal_ineq_fn",
    )

    def _describe(self, writer: Any) -> dict[str, Any]:
        if self.nx is None:
            names = self._Z_FUNCTIONS
            bounds = ("ineq_lb", "ineq_ub", "ineq_initial_lb", "ineq_initial_ub", "ineq_terminal_lb", "ineq_terminal_ub", "z_lb", "z_ub")
            sizes = {"nz": self.nz, "param_dim": self.param_dim, "global_param_dim": self.global_param_dim}
        else:
            names = self._DYNAMICS_FUNCTIONS
            bounds = ("path_lb", "path_ub", "terminal_ineq_lb", "terminal_ineq_ub", "x_lb", "x_ub", "u_lb", "u_ub")
            sizes = {"nx": self.nx, "nu": self.nu, "param_dim": self.param_dim}
        if self.shared_dim:
            sizes["shared_dim"] = self.shared_dim
            bounds = (*bounds, "shared_lb", "shared_ub")
        return {
            "form": "z" if self.nx is None else "dynamics",
            "N": _travel.horizon(self.horizon),
            "sizes": sizes,
            "functions": {k: writer.function(getattr(self, k)) for k in names},
            "bounds": {k: getattr(self, k) for k in bounds},
        }

    @classmethod
    def _rebuild(cls, document: dict[str, Any], functions: list[Any]) -> "MultistageProblem":
        fns = {k: _travel.function(functions, v) for k, v in document["functions"].items()}
        bounds = dict(document["bounds"])
        # Bounds of absent constraints are not arguments.
        inequalities = {
            "ineq_stage_fn": "ineq",
            "ineq_initial_fn": "ineq_initial",
            "ineq_terminal_fn": "ineq_terminal",
            "path_constraints_fn": "path",
            "terminal_ineq_fn": "terminal_ineq",
        }
        for fn, prefix in inequalities.items():
            if fns.get(fn) is None:
                bounds.pop(f"{prefix}_lb", None), bounds.pop(f"{prefix}_ub", None)
        if document["form"] == "z":
            return cls(N=_travel.horizon_from(document["N"]), **document["sizes"], **fns, **bounds)
        return cls.from_dynamics(N=_travel.horizon_from(document["N"]), **document["sizes"], **fns, **bounds)

    def __repr__(self) -> str:
        split = "" if self.nx is None else f", nx={self.nx}, nu={self.nu}"
        split += f", shared_dim={self.shared_dim}" if self.shared_dim else ""
        return (
            f"MultistageProblem(N={self.N}, nz={self.nz}{split}, neq={self.neq}, nineq={self.nineq}, "
            f"param_size={self.param_size})"
        )


def _vector(value: Any, n: int, what: str, solver: str, layout: str = "") -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{solver}: {what} must be real numbers, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{solver}: {what} must have shape ({n},){layout}, got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


class _Solver(_Travels):
    """What every generated solver shares: its settings, sizes, functions, code and calls."""

    _backend = ""
    _settings_class: Any = None

    def __init__(
        self,
        name: str,
        problem: DenseProblem | MultistageProblem,
        settings: Any = None,
        qp_backend: Optional[str] = None,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not isinstance(problem, (DenseProblem, MultistageProblem)):
            raise TypeError(
                f"problem must be a DenseProblem, SparseProblem or MultistageProblem, got {type(problem).__name__}"
            )
        kind = self._settings_class
        settings = kind() if settings is None else settings
        if not isinstance(settings, kind):
            raise TypeError(f"settings must be an {kind.__name__}, got {type(settings).__name__}")
        if qp_backend is not None and not isinstance(qp_backend, str):
            raise TypeError(f"qp_backend must be a str or None, got {type(qp_backend).__name__}")
        self._native = self._build(name, problem, settings, qp_backend)
        self._settings = dataclasses.replace(settings)
        self.problem = problem
        for message in self._native.warnings:
            warnings.warn(message, UserWarning, stacklevel=3)

    def _build(self, name: str, problem: Any, settings: Any, qp_backend: Optional[str]) -> Any:
        raise NotImplementedError

    @property
    def name(self) -> str:
        """The solver's name: its C++ namespace."""
        return self._native.name

    @property
    def settings(self) -> Any:
        """A copy of the settings solves use; assign new settings (of the solver's kind) to
        change them."""
        return dataclasses.replace(self._settings)

    @settings.setter
    def settings(self, value: Any) -> None:
        kind = self._settings_class
        if not isinstance(value, kind):
            raise TypeError(f"settings must be an {kind.__name__}, got {type(value).__name__}")
        self._native.set_settings(value._as_dict())
        self._settings = dataclasses.replace(value)

    @property
    def qp_backend(self) -> Optional[str]:
        """The QP backend of an SQP solver (``"piqp"``, ``"ipm"``, or for a MultistageProblem
        ``"riccati"``); None for the interior-point solvers."""
        return self._native.qp_backend

    @property
    def nx(self) -> int:
        """Number of variables."""
        return self._native.dims[0]

    @property
    def neq(self) -> int:
        """Number of equality constraint rows."""
        return self._native.dims[1]

    @property
    def nineq(self) -> int:
        """Number of inequality constraint rows."""
        return self._native.dims[2]

    @property
    def functions(self) -> list[NumericalFunction[Any, Any]]:
        """The functions the solver calls: ``<name>_values``, ``<name>_linearize``,
        ``<name>_hessian``."""
        return [NumericalFunction._from_native(f) for f in self._native.functions()]

    def compile(self) -> None:
        """Compiles (or loads from the cache) the native solver; the first call does it."""
        self._native.compile()

    def header_code(self) -> str:
        """The C++ declarations ``generate_module`` writes for this solver (its namespace)."""
        return self._native.header_code()

    def source_code(self) -> str:
        """The C++ definitions ``generate_module`` writes for this solver (the SQP loop)."""
        return self._native.source_code()

    def __call__(
        self,
        x0: Any = None,
        p: Any = None,
        lam_eq0: Any = None,
        lam_ineq0: Any = None,
        lam_box0: Any = None,
        *,
        warm_start: Optional[SQPResult] = None,
    ) -> SQPResult:
        """Solves from ``x0`` (projected onto the bounds) with parameter ``p`` (required when
        the problem has parameters) and initial multipliers (None: zeros). No state carries over from earlier calls.

        ``warm_start``: an earlier SQPResult whose ``x`` and multipliers start this solve
        (``x0`` and ``lam_*0`` given explicitly take precedence); in an MPC loop, the last
        result shifted by ``MultistageProblem.shift``.

        For a MultistageProblem, ``x0`` is the stacked ``z`` and ``p`` is
        ``[p_global, p_0, ..., p_N]`` (from ``from_dynamics``: ``[x_init, p_0, ..., p_N]``)."""
        name = self.name
        if warm_start is not None:
            if not isinstance(warm_start, SQPResult):
                raise TypeError(f"{name}: warm_start must be an SQPResult, got {type(warm_start).__name__}")
            x0 = warm_start.x if x0 is None else x0
            lam_eq0 = warm_start.lam_eq if lam_eq0 is None else lam_eq0
            lam_ineq0 = warm_start.lam_ineq if lam_ineq0 is None else lam_ineq0
            lam_box0 = warm_start.lam_box if lam_box0 is None else lam_box0
        if x0 is None:
            raise TypeError(f"{name}: give the initial guess x0 (or warm_start=, an earlier result)")
        nx, neq, nineq = self._native.dims
        x_layout, p_layout = self._layouts()
        x = _vector(x0, nx, "x0", name, x_layout)
        shape = tuple(self._native.param_shape)
        if p is None:
            if math.prod(shape) > 0:
                raise TypeError(f"{name}: give the parameter p, of shape {shape}{p_layout}")
            params = np.zeros(0, dtype=np.float64)
        else:
            arr = np.asarray(p)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"{name}: p must be real numbers, got dtype {arr.dtype}")
            if arr.shape != shape:
                raise ValueError(f"{name}: p must have shape {shape}{p_layout}, got {arr.shape}")
            params = np.ascontiguousarray(arr, dtype=np.float64).ravel()
        warm = [
            None if v is None else _vector(v, n, what, name)
            for v, n, what in ((lam_eq0, neq, "lam_eq0"), (lam_ineq0, nineq, "lam_ineq0"), (lam_box0, nx, "lam_box0"))
        ]
        xs, le, li, lb, info = self._native.solve(x, params, *warm)
        status, iterations, qp_iterations, objective, stat, eq, ineq, comp, seconds, invalid_input = info
        states = controls = shared = None
        if isinstance(self.problem, MultistageProblem):
            states, controls, shared = self.problem._split(xs)
        return SQPResult(
            x=xs,
            lam_eq=le,
            lam_ineq=li,
            lam_box=lb,
            status=SQPStatus(status),
            iterations=iterations,
            qp_iterations=qp_iterations,
            objective=objective,
            stat_res=stat,
            eq_res=eq,
            ineq_res=ineq,
            comp_res=comp,
            solve_time=seconds,
            X=states,
            U=controls,
            invalid_input=invalid_input,
            S=shared,
        )

    def _layouts(self) -> tuple[str, str]:
        """How a MultistageProblem's guess and parameter are laid out (for error messages)."""
        problem = self.problem
        if not isinstance(problem, MultistageProblem):
            return "", ""
        stages = problem.N + 1
        if problem.nx is not None:
            x = f" ({stages} stages of (x, u), {problem.nx} + {problem.nu} entries each)"
            first = f"x_init ({problem.nx})"
        else:
            x = f" ({stages} stages of z, {problem.nz} entries each)"
            first = f"p_global ({problem.global_param_dim})"
        if problem.shared_dim:
            x = f"{x[:-1]}, then {problem.shared_dim} shared)"
        params = f"{stages} stage parameters of {problem.param_dim} entries"
        if problem.nx is not None and problem.initial_constraints_fn is not None:
            return x, f" ({params}; no x_init: initial_constraints_fn fixes the first stage)"
        return x, f" ({first}, then {params})"

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, nx={self.nx}, neq={self.neq}, nineq={self.nineq})"

    def _describe(self, writer: Any) -> dict[str, Any]:
        settings = dataclasses.asdict(self._settings)
        settings["hessian_approximation"] = self._settings.hessian_approximation.value
        problem = self.problem
        return {
            "name": self.name,
            "settings": settings,
            "qp_backend": self.qp_backend,
            "problem": {"kind": type(problem).__name__, **problem._describe(writer)},
        }

    @classmethod
    def _rebuild(cls, document: dict[str, Any], functions: list[Any]) -> "_Solver":
        inner = document["problem"]
        problem = _kind(inner, (DenseProblem, SparseProblem, MultistageProblem))._rebuild(inner, functions)
        fields = dict(document["settings"])
        fields["hessian_approximation"] = HessianApproximation(fields["hessian_approximation"])
        settings = cls._settings_class(**fields)
        return cls(name=document["name"], problem=problem, settings=settings, qp_backend=document["qp_backend"])


class _SQPFunction(_Solver):
    _settings_class = SQPSettings

    def _build(self, name: str, problem: Any, settings: Any, qp_backend: Optional[str]) -> Any:
        cls = type(self).__name__
        if isinstance(problem, MultistageProblem):
            if self._backend != "sparse":
                raise TypeError(
                    f"{cls} does not solve a MultistageProblem (its derivatives are sparse, stage by stage): "
                    "use SparseSQPFunction"
                )
            return _anvil.multistage_sqp_solver(name, problem._native, qp_backend, settings._as_dict())
        return _anvil.sqp_solver(name, self._backend, qp_backend, *_problem_args(problem), settings._as_dict())


def _problem_args(problem: DenseProblem) -> tuple[Any, ...]:
    """A DenseProblem's callbacks and bounds, as the native solver builders take them."""
    return (
        problem.cost_fn._native,
        _native(problem.eq_constraints_fn),
        _native(problem.ineq_constraints_fn),
        problem.x_lb,
        problem.x_ub,
        problem.eq_rhs,
        problem.ineq_lb,
        problem.ineq_ub,
    )


class DenseSQPFunction(_SQPFunction):
    """An SQP solver with dense derivatives and dense QPs, for small problems.

    Args:
      name: a C++ identifier (the solver's namespace; its functions are ``<name>_*``).
      problem: a DenseProblem (or SparseProblem); a MultistageProblem takes SparseSQPFunction.
      settings: SQPSettings (default: ``SQPSettings()``).
      qp_backend: the QP solver: ``"piqp"`` (the default, None: PIQP's dense backend) or
        ``"ipm"`` (anvil's interior-point method, the one of DenseIPMFunction, on a dense
        KKT matrix: no PIQP or Eigen, nor a runtime library to build first).
    """

    _backend = "dense"


class _IPMFunction(_Solver):
    _settings_class = IPMSettings

    def _build(self, name: str, problem: Any, settings: Any, qp_backend: Optional[str]) -> Any:
        cls = type(self).__name__
        if qp_backend is not None:
            raise TypeError(f"{cls} solves no QPs: leave qp_backend None")
        if isinstance(problem, MultistageProblem):
            if self._backend != "sparse":
                raise TypeError(
                    f"{cls} does not solve a MultistageProblem (its derivatives are sparse, stage by stage): "
                    "use SparseIPMFunction"
                )
            return _anvil.multistage_ipm_solver(name, problem._native, settings._as_dict())
        return _anvil.ipm_solver(name, self._backend, *_problem_args(problem), settings._as_dict())


class DenseIPMFunction(_IPMFunction):
    """A primal-dual interior-point solver (Ipopt's method: filter line search, second-order
    corrections, inertia correction, feasibility restoration), generated as C++ with dense
    derivatives and a dense LDL' of its KKT systems: for small and medium problems (up to a
    few hundred variables and constraints). It needs neither PIQP nor Eigen and compiles in
    about a second. Calls return an ``SQPResult`` (the same fields and multiplier convention
    as the SQP solvers; ``qp_iterations`` is 0).

    Args:
      name: a C++ identifier (the solver's namespace; its functions are ``<name>_*``).
      problem: a DenseProblem (or SparseProblem).
      settings: IPMSettings (default: ``IPMSettings()``).

    >>> import anvil as av
    >>> from anvil.opti import DenseProblem, DenseIPMFunction
    >>> args = (av.Arg(2), av.Arg(0))
    >>> f = av.NumericalFunction("ipm_doc_f", lambda x, p: (x[0] - 1.0) ** 2 + (x[1] - 2.0) ** 2, args)
    >>> g = av.NumericalFunction("ipm_doc_g", lambda x, p: (x[0] + x[1]).reshape(1), args)
    >>> solver = DenseIPMFunction("ipm_doc", DenseProblem(cost_fn=f, eq_constraints_fn=g, eq_rhs=1.0))
    >>> res = solver([0.0, 0.0])
    >>> res.status.name, [round(float(v), 6) for v in res.x], round(float(res.lam_eq[0]), 6)
    ('SOLVED', [0.0, 1.0], 2.0)
    """

    _backend = "dense"


class SparseIPMFunction(_IPMFunction):
    """The interior-point solver of ``DenseIPMFunction`` with sparse derivatives and a sparse
    LDL' of its KKT systems (a minimum-degree ordering and the symbolic factorisation are
    computed when the solver is built; the generated code runs the numeric factorisation
    only): for large sparse problems. Same arguments and results as ``DenseIPMFunction``.

    A MultistageProblem keeps its stage structure: each stage function is traced and
    differentiated once and called in a loop over its stages (code whose size does not grow
    with N), and each KKT system is factorised stage by stage, from the last stage to the
    first, with the stage sizes compiled in (time linear in N). The pivots inside a stage are
    chosen for stability, and what a stage cannot pivot (rows that pin a state the dynamics
    already fix: terminal and point constraints) moves to the stage before; the inertia that
    drives the inertia correction is the whole KKT matrix's, as in Ipopt and fatrop.
    """

    _backend = "sparse"


class SparseSQPFunction(_SQPFunction):
    """An SQP solver with sparse derivatives and sparse QPs, for larger problems
    and for MultistageProblems (stage-wise derivatives stamped into sparse matrices).

    Args:
      name: a C++ identifier (the solver's namespace; its functions are ``<name>_*``).
      problem: a SparseProblem (or DenseProblem), or a MultistageProblem.
      settings: SQPSettings (default: ``SQPSettings()``).
      qp_backend: the QP solver. For a MultistageProblem: ``"riccati"`` (the default, None:
        anvil's own interior-point QP on dense stage blocks, factorised stage by stage with
        the stage sizes compiled in), ``"piqp"`` (PIQP's sparse backend on the stamped
        global patterns) or ``"ipm"`` (anvil's interior-point NLP method on the stamped
        patterns, a sparse KKT matrix). For the other problems: ``"piqp"`` (the default,
        None: PIQP's sparse backend) or ``"ipm"`` (the method of SparseIPMFunction, its KKT
        matrix sparse: no PIQP or Eigen).
    """

    _backend = "sparse"


def include_dirs() -> list[str]:
    """The include directories the solver runtime's definitions need (PIQP's, then
    Eigen's): ``generate_module`` of a PIQP-backed solver writes them beside the module as
    ``anvil_opti.cpp``, to compile once per program::

        g++ -std=c++17 -O2 $(for d in ...; do echo -isystem $d; done) -c anvil_opti.cpp

    The module's own ``.cpp`` includes no third-party header."""
    return _anvil.opti_include_dirs()


def runtime_library() -> str:
    """The solver runtime (``anvil_opti.cpp`` with PIQP's template instantiations) as a
    static library built for this machine with the JIT's compiler and flags, on first use
    (tens of seconds, once) and kept in anvil's cache: link it in place of compiling a
    module's ``anvil_opti.cpp``. Modules compiled with any flags link with it."""
    return _anvil.opti_runtime_library()


def _register_bundled() -> None:
    """Tells the native library where this installation keeps PIQP's sources (bundled in
    the wheel) and Eigen's headers (the cmeel-eigen package), if it has them."""
    here = os.path.dirname(os.path.abspath(__file__))
    piqp = os.path.join(here, "_vendor", "piqp")
    eigen = None
    for entry in sys.path:
        candidate = os.path.join(entry or ".", "cmeel.prefix", "include", "eigen3")
        if os.path.isfile(os.path.join(candidate, "Eigen", "Core")):
            eigen = candidate
            break
    _anvil.opti_set_bundled_dirs(piqp if os.path.isdir(piqp) else None, eigen)


_register_bundled()

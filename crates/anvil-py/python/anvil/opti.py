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
"""

from __future__ import annotations

import dataclasses
import enum
import math
import os
import sys
from typing import Any, Optional

import numpy as np

from . import NumericalFunction, _anvil

__all__ = [
    "DenseProblem",
    "DenseSQPFunction",
    "HessianApproximation",
    "SQPResult",
    "SQPSettings",
    "SQPStatus",
    "SparseProblem",
    "SparseSQPFunction",
    "include_dirs",
]


class HessianApproximation(enum.Enum):
    """How the SQP method models curvature (fixed when a solver is built)."""

    #: The exact Hessian of the Lagrangian, convexified where it is not positive definite
    #: (eigenvalues clipped with the dense backend, a diagonal shift with the sparse one).
    EXACT = "EXACT"
    #: ``J'J`` for a least-squares cost ``1/2 ||r||^2``: the cost function returns ``r``.
    GAUSS_NEWTON = "GAUSS_NEWTON"


class SQPStatus(enum.IntEnum):
    """How a solve ended."""

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

    Residuals compared with the tolerances are unscaled infinity norms: stationarity
    ``||grad f + J_eq'lam_eq + J_ineq'lam_ineq + lam_box||``, equality and inequality (and
    bound) violation, and complementarity.
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
    #: Backtracking on the l1 merit function; False takes full steps.
    line_search: bool = True
    #: Sufficient-decrease constant of the line search.
    armijo: float = 1e-4
    #: Step reduction per backtracking step.
    backtrack: float = 0.5
    max_line_search_steps: int = 30
    #: Merit values the non-monotone line search compares with (1: monotone).
    merit_memory: int = 4
    qp_eps_abs: float = 1e-10
    qp_eps_rel: float = 1e-10
    qp_max_iter: int = 250
    #: 0: silent; 1: one line per iteration (on the process's stdout).
    verbose: int = 0

    def _as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "hessian_approximation":
                if not isinstance(value, HessianApproximation):
                    raise TypeError(f"SQPSettings.hessian_approximation must be a HessianApproximation, got {value!r}")
                value = value.value
            elif field.name == "line_search":
                if not isinstance(value, (bool, np.bool_)):
                    raise TypeError(f"SQPSettings.line_search must be a bool, got {value!r}")
                value = bool(value)
            elif field.type in ("int", int):
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                    raise TypeError(f"SQPSettings.{field.name} must be an int, got {value!r}")
                if value < 0:
                    raise ValueError(f"SQPSettings.{field.name} must be >= 0, got {value}")
                value = int(value)
            else:
                if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
                    raise TypeError(f"SQPSettings.{field.name} must be a number, got {value!r}")
                value = float(value)
            out[field.name] = value
        return out


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


class DenseProblem:
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


class SparseProblem(DenseProblem):
    """An optimisation problem for ``SparseSQPFunction`` (sparse derivatives on fixed
    patterns, found by sparsity detection and computed with graph colouring); the same
    arguments as ``DenseProblem``."""


def _vector(value: Any, n: int, what: str, solver: str) -> np.ndarray:
    arr = np.asarray(value)
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"{solver}: {what} must be real numbers, got dtype {arr.dtype}")
    if arr.shape != (n,):
        raise ValueError(f"{solver}: {what} must have shape ({n},), got {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.float64)


class _SQPFunction:
    _backend = ""

    def __init__(self, name: str, problem: DenseProblem, settings: Optional[SQPSettings] = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name must be a str, got {type(name).__name__}")
        if not isinstance(problem, DenseProblem):
            raise TypeError(f"problem must be a DenseProblem or SparseProblem, got {type(problem).__name__}")
        settings = SQPSettings() if settings is None else settings
        if not isinstance(settings, SQPSettings):
            raise TypeError(f"settings must be an SQPSettings, got {type(settings).__name__}")
        native = lambda f: None if f is None else f._native  # noqa: E731
        self._native = _anvil.sqp_solver(
            name,
            self._backend,
            problem.cost_fn._native,
            native(problem.eq_constraints_fn),
            native(problem.ineq_constraints_fn),
            problem.x_lb,
            problem.x_ub,
            problem.eq_rhs,
            problem.ineq_lb,
            problem.ineq_ub,
            settings._as_dict(),
        )
        self._settings = dataclasses.replace(settings)
        self.problem = problem

    @property
    def name(self) -> str:
        """The solver's name: its C++ namespace."""
        return self._native.name

    @property
    def settings(self) -> SQPSettings:
        """A copy of the settings solves use; assign a new SQPSettings to change them."""
        return dataclasses.replace(self._settings)

    @settings.setter
    def settings(self, value: SQPSettings) -> None:
        if not isinstance(value, SQPSettings):
            raise TypeError(f"settings must be an SQPSettings, got {type(value).__name__}")
        self._native.set_settings(value._as_dict())
        self._settings = dataclasses.replace(value)

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
        x0: Any,
        p: Any = None,
        lam_eq0: Any = None,
        lam_ineq0: Any = None,
        lam_box0: Any = None,
    ) -> SQPResult:
        """Solves from ``x0`` (projected onto the bounds) with parameter ``p`` (None: zeros)
        and initial multipliers (None: zeros). No state carries over from earlier calls."""
        name = self.name
        nx, neq, nineq = self._native.dims
        x = _vector(x0, nx, "x0", name)
        shape = tuple(self._native.param_shape)
        if p is None:
            params = np.zeros(math.prod(shape), dtype=np.float64)
        else:
            arr = np.asarray(p)
            if arr.dtype.kind not in "biuf":
                raise TypeError(f"{name}: p must be real numbers, got dtype {arr.dtype}")
            if arr.shape != shape:
                raise ValueError(f"{name}: p must have shape {shape}, got {arr.shape}")
            params = np.ascontiguousarray(arr, dtype=np.float64).ravel()
        warm = [
            None if v is None else _vector(v, n, what, name)
            for v, n, what in ((lam_eq0, neq, "lam_eq0"), (lam_ineq0, nineq, "lam_ineq0"), (lam_box0, nx, "lam_box0"))
        ]
        xs, le, li, lb, info = self._native.solve(x, params, *warm)
        status, iterations, qp_iterations, objective, stat, eq, ineq, comp, seconds = info
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
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, nx={self.nx}, neq={self.neq}, nineq={self.nineq})"


class DenseSQPFunction(_SQPFunction):
    """An SQP solver with dense derivatives and PIQP's dense backend, for small problems.

    Args:
      name: a C++ identifier (the solver's namespace; its functions are ``<name>_*``).
      problem: a DenseProblem (or SparseProblem).
      settings: SQPSettings (default: ``SQPSettings()``).
    """

    _backend = "dense"


class SparseSQPFunction(_SQPFunction):
    """An SQP solver with sparse derivatives and PIQP's sparse backend, for larger problems;
    the same arguments as ``DenseSQPFunction``."""

    _backend = "sparse"


def include_dirs() -> list[str]:
    """The include directories a generated solver module needs (PIQP's, then Eigen's)::

    g++ -std=c++17 -O2 $(for d in ...; do echo -isystem $d; done) -c m.cpp
    """
    return _anvil.opti_include_dirs()


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

"""Nonlinear programs with known optima, written once for anvil and for CasADi.

Hock & Schittkowski's test problems (Lecture Notes in Economics and Mathematical Systems
187, 1981), constrained Rosenbrock variants, the original anvil guide's dense example, and
a hanging chain with hundreds of variables. Each problem is written against a small math
namespace (``m``) so that the same formula builds an anvil graph and a CasADi expression;
the tests (test_opti.py) and the benchmark (benches/opti_bench.py) share them.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional

import numpy as np

INF = np.inf


@dataclasses.dataclass
class Spec:
    name: str
    n: int
    x0: list[float]
    cost: Callable[[Any, Any], Any]
    eq: Optional[Callable[[Any, Any], Any]] = None
    ineq: Optional[Callable[[Any, Any], Any]] = None
    ineq_lb: Any = None
    ineq_ub: Any = None
    x_lb: Any = -INF
    x_ub: Any = INF
    #: The known optimal cost (from the literature), if any.
    f_opt: Optional[float] = None
    #: Whether the optimal multipliers are unique (strict complementarity, LICQ): then they
    #: are compared too.
    unique_multipliers: bool = True
    #: Large problems: solved by the sparse backend only.
    large: bool = False


class AnvilMath:
    """The operations the problems use, on anvil Tensors."""

    @staticmethod
    def vec(items: list[Any]) -> Any:
        import anvil as av

        return av.Tensor.stack(*items)

    @staticmethod
    def cat(parts: list[Any]) -> Any:
        return parts[0].cat(*parts[1:], dim=0)

    sin = staticmethod(lambda t: t.sin())
    cos = staticmethod(lambda t: t.cos())
    tan = staticmethod(lambda t: t.tan())
    exp = staticmethod(lambda t: t.exp())
    log = staticmethod(lambda t: t.log())
    sqrt = staticmethod(lambda t: t.sqrt())
    sum = staticmethod(lambda t: t.sum())


class NumpyMath:
    """The same operations on floats (numpy scalars and arrays, elementwise)."""

    vec = staticmethod(lambda items: np.array(items, dtype=float))
    sin, cos, tan, exp, log, sqrt = np.sin, np.cos, np.tan, np.exp, np.log, np.sqrt
    sum = staticmethod(np.sum)


class CasadiMath:
    """The same operations on CasADi SX."""

    @staticmethod
    def vec(items: list[Any]) -> Any:
        import casadi as cs

        return cs.vertcat(*items)

    @staticmethod
    def cat(parts: list[Any]) -> Any:
        import casadi as cs

        return cs.vertcat(*parts)

    @staticmethod
    def _cs() -> Any:
        import casadi as cs

        return cs

    sin = staticmethod(lambda t: CasadiMath._cs().sin(t))
    cos = staticmethod(lambda t: CasadiMath._cs().cos(t))
    tan = staticmethod(lambda t: CasadiMath._cs().tan(t))
    exp = staticmethod(lambda t: CasadiMath._cs().exp(t))
    log = staticmethod(lambda t: CasadiMath._cs().log(t))
    sqrt = staticmethod(lambda t: CasadiMath._cs().sqrt(t))
    sum = staticmethod(lambda t: CasadiMath._cs().sum1(t))


def _chain(masses: int) -> Spec:
    """A hanging chain of `masses` free point masses between (0, 0) and (1, 0): the links have
    length L; minimise the potential energy sum(y) above a sloped floor y >= -0.4 + 0.1 x.
    Variables: x-coordinates then y-coordinates."""
    k = masses
    length = 1.6 / (k + 1)

    def coords(z: Any) -> tuple[Any, Any]:
        return z[:k], z[k:]

    def links(z: Any, m: Any) -> Any:
        x, y = coords(z)
        # Link i joins mass i-1 and mass i (the anchors at the ends).
        first = x[0:1] ** 2 + y[0:1] ** 2 - length**2
        inner = (x[1:] - x[:-1]) ** 2 + (y[1:] - y[:-1]) ** 2 - length**2
        last = (1.0 - x[k - 1 : k]) ** 2 + y[k - 1 : k] ** 2 - length**2
        return m.cat([first, inner, last])

    def floor(z: Any, m: Any) -> Any:
        x, y = coords(z)
        return y - 0.1 * x

    # The initial guess: a sine-shaped sag deep enough for the chain's length.
    t = np.linspace(0, 1, k + 2)

    def polygon_length(depth: float) -> float:
        return float(np.hypot(np.diff(t), np.diff(-depth * np.sin(np.pi * t))).sum())

    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if polygon_length(mid) < 1.6 else (low, mid)
    x0 = list(t[1:-1]) + list(-low * np.sin(np.pi * t[1:-1]))
    return Spec(
        name=f"chain{k}",
        n=2 * k,
        x0=x0,
        cost=lambda z, m: m.sum(z[k:]),
        eq=links,
        ineq=floor,
        ineq_lb=-0.4,
        ineq_ub=INF,
        large=True,
    )


def _rosen(x: Any, m: Any) -> Any:
    return (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2


def _rosen_chained(n: int) -> Callable[[Any, Any], Any]:
    def cost(x: Any, m: Any) -> Any:
        return m.sum(100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)

    return cost


PROBLEMS: list[Spec] = [
    Spec(
        name="guide",
        n=4,
        x0=[0.5, 0.5, 0.0, 0.0],
        cost=lambda x, m: (x[1] - 2.0) ** 2 - x[2] + x[3],
        eq=lambda x, m: m.vec([x[0] ** 2 + x[1] - 1.0]),
        x_lb=[-1.0, -1e6, -1.0, -1.0],
        x_ub=[1.0, 1e6, 1.0, 1.0],
        f_opt=-1.0,
    ),
    Spec(
        name="hs006",
        n=2,
        x0=[-1.2, 1.0],
        cost=lambda x, m: (1 - x[0]) ** 2,
        eq=lambda x, m: m.vec([10 * (x[1] - x[0] ** 2)]),
        f_opt=0.0,
    ),
    Spec(
        name="hs007",
        n=2,
        x0=[2.0, 2.0],
        cost=lambda x, m: m.log(1 + x[0] ** 2) - x[1],
        eq=lambda x, m: m.vec([(1 + x[0] ** 2) ** 2 + x[1] ** 2 - 4]),
        f_opt=-math.sqrt(3),
    ),
    Spec(
        name="hs014",
        n=2,
        x0=[2.0, 2.0],
        cost=lambda x, m: (x[0] - 2) ** 2 + (x[1] - 1) ** 2,
        eq=lambda x, m: m.vec([x[0] - 2 * x[1] + 1]),
        ineq=lambda x, m: m.vec([-(x[0] ** 2) / 4 - x[1] ** 2 + 1]),
        ineq_lb=0.0,
        ineq_ub=INF,
        f_opt=9 - 2.875 * math.sqrt(7),
    ),
    Spec(
        name="hs015",
        n=2,
        x0=[-2.0, 1.0],
        cost=lambda x, m: 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2,
        ineq=lambda x, m: m.vec([x[0] * x[1] - 1, x[0] + x[1] ** 2]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_ub=[0.5, INF],
        f_opt=306.5,
    ),
    Spec(
        name="hs021",
        n=2,
        x0=[-1.0, -1.0],
        cost=lambda x, m: 0.01 * x[0] ** 2 + x[1] ** 2 - 100,
        ineq=lambda x, m: m.vec([10 * x[0] - x[1] - 10]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=[2.0, -50.0],
        x_ub=[50.0, 50.0],
        f_opt=-99.96,
    ),
    Spec(
        name="hs035",
        n=3,
        x0=[0.5, 0.5, 0.5],
        cost=lambda x, m: 9 - 8 * x[0] - 6 * x[1] - 4 * x[2] + 2 * x[0] ** 2 + 2 * x[1] ** 2 + x[2] ** 2
        + 2 * x[0] * x[1] + 2 * x[0] * x[2],
        ineq=lambda x, m: m.vec([3 - x[0] - x[1] - 2 * x[2]]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=1 / 9,
    ),
    Spec(
        name="hs039",
        n=4,
        x0=[2.0, 2.0, 2.0, 2.0],
        cost=lambda x, m: -x[0],
        eq=lambda x, m: m.vec([x[1] - x[0] ** 3 - x[2] ** 2, x[0] ** 2 - x[1] - x[3] ** 2]),
        f_opt=-1.0,
    ),
    Spec(
        name="hs040",
        n=4,
        x0=[0.8, 0.8, 0.8, 0.8],
        cost=lambda x, m: -x[0] * x[1] * x[2] * x[3],
        eq=lambda x, m: m.vec([x[0] ** 3 + x[1] ** 2 - 1, x[0] ** 2 * x[3] - x[2], x[3] ** 2 - x[1]]),
        f_opt=-0.25,
    ),
    Spec(
        name="hs043",
        n=4,
        x0=[0.0, 0.0, 0.0, 0.0],
        cost=lambda x, m: x[0] ** 2 + x[1] ** 2 + 2 * x[2] ** 2 + x[3] ** 2 - 5 * x[0] - 5 * x[1] - 21 * x[2] + 7 * x[3],
        ineq=lambda x, m: m.vec(
            [
                8 - x[0] ** 2 - x[1] ** 2 - x[2] ** 2 - x[3] ** 2 - x[0] + x[1] - x[2] + x[3],
                10 - x[0] ** 2 - 2 * x[1] ** 2 - x[2] ** 2 - 2 * x[3] ** 2 + x[0] + x[3],
                5 - 2 * x[0] ** 2 - x[1] ** 2 - x[2] ** 2 - 2 * x[0] + x[1] + x[3],
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        f_opt=-44.0,
    ),
    Spec(
        name="hs065",
        n=3,
        x0=[-5.0, 5.0, 0.0],
        cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[0] + x[1] - 10) ** 2 / 9 + (x[2] - 5) ** 2,
        ineq=lambda x, m: m.vec([48 - x[0] ** 2 - x[1] ** 2 - x[2] ** 2]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=[-4.5, -4.5, -5.0],
        x_ub=[4.5, 4.5, 5.0],
        f_opt=0.9535288567,
    ),
    Spec(
        name="hs071",
        n=4,
        x0=[1.0, 5.0, 5.0, 1.0],
        cost=lambda x, m: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2],
        eq=lambda x, m: m.vec([x[0] ** 2 + x[1] ** 2 + x[2] ** 2 + x[3] ** 2 - 40]),
        ineq=lambda x, m: m.vec([x[0] * x[1] * x[2] * x[3] - 25]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=1.0,
        x_ub=5.0,
        f_opt=17.0140173,
    ),
    Spec(
        name="hs076",
        n=4,
        x0=[0.5, 0.5, 0.5, 0.5],
        cost=lambda x, m: x[0] ** 2 + 0.5 * x[1] ** 2 + x[2] ** 2 + 0.5 * x[3] ** 2 - x[0] * x[2] + x[2] * x[3]
        - x[0] - 3 * x[1] + x[2] - x[3],
        ineq=lambda x, m: m.vec(
            [5 - x[0] - 2 * x[1] - x[2] - x[3], 4 - 3 * x[0] - x[1] - 2 * x[2] + x[3], x[1] + 4 * x[2] - 1.5]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=-4.681818181,
    ),
    Spec(
        name="hs100",
        n=7,
        x0=[1.0, 2.0, 0.0, 4.0, 0.0, 1.0, 1.0],
        cost=lambda x, m: (x[0] - 10) ** 2 + 5 * (x[1] - 12) ** 2 + x[2] ** 4 + 3 * (x[3] - 11) ** 2 + 10 * x[4] ** 6
        + 7 * x[5] ** 2 + x[6] ** 4 - 4 * x[5] * x[6] - 10 * x[5] - 8 * x[6],
        ineq=lambda x, m: m.vec(
            [
                127 - 2 * x[0] ** 2 - 3 * x[1] ** 4 - x[2] - 4 * x[3] ** 2 - 5 * x[4],
                282 - 7 * x[0] - 3 * x[1] - 10 * x[2] ** 2 - x[3] + x[4],
                196 - 23 * x[0] - x[1] ** 2 - 6 * x[5] ** 2 + 8 * x[6],
                -4 * x[0] ** 2 - x[1] ** 2 + 3 * x[0] * x[1] - 2 * x[2] ** 2 - 5 * x[5] + 11 * x[6],
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        f_opt=680.6300573,
    ),
    Spec(
        name="rosen_disk",
        n=2,
        x0=[-1.2, 1.0],
        cost=_rosen,
        ineq=lambda x, m: m.vec([x[0] ** 2 + x[1] ** 2]),
        ineq_lb=-INF,
        ineq_ub=1.5,
    ),
    Spec(
        name="rosen_cubic_line",
        n=2,
        x0=[0.5, 1.0],
        cost=_rosen,
        ineq=lambda x, m: m.vec([(x[0] - 1) ** 3 - x[1] + 1, x[0] + x[1] - 2]),
        ineq_lb=-INF,
        ineq_ub=0.0,
        x_lb=[-1.5, -0.5],
        x_ub=[1.5, 2.5],
        f_opt=0.0,
        unique_multipliers=False,
    ),
    Spec(
        name="rosen_eq",
        n=2,
        x0=[0.0, 0.0],
        cost=_rosen,
        eq=lambda x, m: m.vec([x[0] + x[1] - 1.5]),
    ),
    Spec(
        name="rosen_chain10",
        n=10,
        x0=[-1.2, 1.0] * 5,
        cost=_rosen_chained(10),
        x_ub=0.8,
    ),
    _chain(150),
]


def by_name(name: str) -> Spec:
    return next(p for p in PROBLEMS if p.name == name)


def anvil_problem(spec: Spec, sparse: bool) -> Any:
    """The anvil problem (DenseProblem or SparseProblem) of `spec`."""
    import anvil as av
    from anvil.opti import DenseProblem, SparseProblem

    args = (av.Arg(spec.n), av.Arg(0))
    cls = SparseProblem if sparse else DenseProblem
    fn = lambda what, body: av.NumericalFunction(f"{spec.name}_{what}", lambda x, p: body(x, AnvilMath), args)  # noqa: E731
    return cls(
        cost_fn=fn("cost", spec.cost),
        eq_constraints_fn=fn("eq", spec.eq) if spec.eq else None,
        ineq_constraints_fn=fn("ineq", spec.ineq) if spec.ineq else None,
        x_lb=spec.x_lb,
        x_ub=spec.x_ub,
        ineq_lb=spec.ineq_lb if spec.ineq else None,
        ineq_ub=spec.ineq_ub if spec.ineq else None,
    )


def casadi_nlp(spec: Spec) -> tuple[dict[str, Any], dict[str, Any], int]:
    """CasADi's form of `spec`: the nlp dict, the bounds (lbx, ubx, lbg, ubg) and the
    number of equality rows (the first rows of g)."""
    import casadi as cs

    x = cs.SX.sym("x", spec.n)
    eq = spec.eq(x, CasadiMath) if spec.eq else cs.SX(0, 1)
    ineq = spec.ineq(x, CasadiMath) if spec.ineq else cs.SX(0, 1)
    neq, nin = eq.shape[0], ineq.shape[0]
    full = lambda v, k: np.broadcast_to(np.asarray(v, dtype=float), (k,)).copy()  # noqa: E731
    bounds = {
        "lbx": full(spec.x_lb, spec.n),
        "ubx": full(spec.x_ub, spec.n),
        "lbg": np.concatenate([np.zeros(neq), full(spec.ineq_lb if spec.ineq else 0.0, nin)]),
        "ubg": np.concatenate([np.zeros(neq), full(spec.ineq_ub if spec.ineq else 0.0, nin)]),
    }
    for key in ("lbx", "ubx", "lbg", "ubg"):
        bounds[key][np.abs(bounds[key]) >= 1e20] = np.sign(bounds[key][np.abs(bounds[key]) >= 1e20]) * np.inf
    nlp = {"x": x, "f": spec.cost(x, CasadiMath), "g": cs.vertcat(eq, ineq)}
    return nlp, bounds, neq


def casadi_violation(nlp: dict[str, Any], bounds: dict[str, Any], x: Any) -> float:
    """The largest constraint and bound violation at x of CasADi's `nlp` with `bounds` (as
    casadi_nlp returns them), evaluated by CasADi: the independent check of a returned point."""
    import casadi as cs

    g = np.asarray(cs.Function("g", [nlp["x"]], [nlp["g"]])(x)).ravel()
    return float(
        max(
            np.max(np.maximum(bounds["lbg"] - g, g - bounds["ubg"]), initial=0.0),
            np.max(np.maximum(bounds["lbx"] - x, x - bounds["ubx"]), initial=0.0),
        )
    )


def casadi_stationarity(nlp: dict[str, Any], x: Any, lam_g: Any, lam_x: Any) -> float:
    """||grad f + J'lam_g + lam_x||_inf at x of CasADi's `nlp` with the given multipliers
    (CasADi's signs, as anvil's: lam_g the equality rows, then the inequality rows),
    relative to max(1, ||grad f||_inf): the independent check that a point reported solved
    is a KKT point, with the complementarity anvil checks itself."""
    import casadi as cs

    grad, jac = cs.Function("kkt", [nlp["x"]], [cs.gradient(nlp["f"], nlp["x"]), cs.jacobian(nlp["g"], nlp["x"])])(x)
    grad, jac = np.asarray(grad).ravel(), np.asarray(cs.DM(jac))
    residual = grad + jac.T @ np.asarray(lam_g, dtype=float).ravel() + np.asarray(lam_x, dtype=float).ravel()
    return float(np.max(np.abs(residual), initial=0.0) / max(1.0, np.max(np.abs(grad), initial=0.0)))


def perturbed_starts(spec: Spec, count: int = 3) -> list[np.ndarray]:
    """The problem's own initial guess, then `count - 1` seeded perturbations of it (inside
    the bounds): the starts the tests and the benchmarks share."""
    rng = np.random.default_rng(sum(map(ord, spec.name)))
    _, bounds, _ = casadi_nlp(spec)
    lb = np.where(np.isfinite(bounds["lbx"]), bounds["lbx"], -1e9)
    ub = np.where(np.isfinite(bounds["ubx"]), bounds["ubx"], 1e9)
    x0 = np.array(spec.x0, dtype=float)
    return [x0] + [np.clip(x0 + rng.normal(0.0, 1.0, spec.n) * (1.0 + np.abs(x0)), lb, ub) for _ in range(count - 1)]

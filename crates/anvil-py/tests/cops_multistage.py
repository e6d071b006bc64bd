"""The COPS 3.0 optimal-control problems of cops_problems.py as anvil MultistageProblems in the
z-form: one variable block per grid point, so that a multistage solver factorises their KKT
systems stage by stage. They are the same discretised problems (the trapezoidal rule on `N`
intervals, the same bounds, the same objective), so that their optimum is Ipopt's on the Spec,
which each function returns beside the MultistageProblem as the oracle.

Stage k holds the states and the controls at grid point k; a free final time is a variable
shared by every stage (``shared_dim=1``), which the solvers carry as a copy per stage equal to
the next stage's. The trapezoidal defect between grid points k and k + 1 is the interstage
equality of ``(z_k, z_{k+1}, t_f)``, with the step ``t_f / N``. The initial conditions are stage
0's equalities, the terminal conditions and the objective (a Mayer term: a function of z_N and
t_f) stage N's. Stage N keeps its controls: the trapezoid uses u at both ends of every
interval. The Spec's bounds are the same at every grid point, so they are the stages' bounds;
the final time's are the shared variable's (held by one copy, as the Spec has one such bound).

The Spec's variables are stacked by trajectory, the multistage problem's by stage (then the
final time, as in the Spec): ``to_stages`` and ``from_stages`` convert between the two, so that
both solvers start from the Spec's guesses (the report's and a plainer one) and the returned
point can be checked on the Spec.

Each problem is an ``Ocp`` (its ODE, ends, bounds and cost by grid point), from which
``multistage_problem`` builds anvil's problem and ``fatrop_form`` the same problem in fatrop's
form (its dynamics explicit: the next grid point is a control), the benchmark's second peer.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional

import numpy as np

from cops_problems import catalyst_mixing, goddard_rocket, hang_glider, hanging_chain, particle_steering, robot_arm
from opti_problems import AnvilMath as m
from opti_problems import CasadiMath
from opti_problems import Spec


def to_stages(x: np.ndarray, N: int, nz: int) -> np.ndarray:
    """The Spec's point x (``nz`` trajectories of N + 1 values, then the final time if free)
    as the stacked stages ``z = (z_0, ..., z_N)`` of ``nz`` entries each, then the final time."""
    x = np.asarray(x, dtype=float)
    grid = nz * (N + 1)
    return np.concatenate([x[:grid].reshape(nz, N + 1).T.ravel(), x[grid:]])


def from_stages(z: np.ndarray, N: int, n: int) -> np.ndarray:
    """The stacked stages z (then the final time if free) as the point of the Spec of ``n``
    variables (the inverse of ``to_stages``)."""
    z = np.asarray(z, dtype=float)
    grid = n // (N + 1) * (N + 1)
    return np.concatenate([z[:grid].reshape(N + 1, -1).T.ravel(), z[grid:]])


@dataclasses.dataclass(frozen=True)
class Ocp:
    """One problem by grid points: the ODE ``x' = rhs(z, m)`` (one entry per state, the states
    first in z; ``m`` the operations on z's type, AnvilMath or CasadiMath) discretised by the
    trapezoidal rule on N intervals of [0, t_f], t_f = 1 or (``free_time``) the last of the
    ``nz`` entries of z, with the Mayer cost ``cost(z_N)``, the equalities ``initial(z_0) = 0``
    and ``terminal(z_N) = 0`` (if any) and the bounds ``z_lb <= z <= z_ub`` (per entry; None:
    none). The callbacks read ``t_f`` as ``z[nz - 1]``."""

    name: str
    N: int
    nz: int
    rhs: Callable[[Any, Any], list[Any]]
    free_time: bool
    cost: Callable[[Any], Any]
    initial: Callable[[Any], list[Any]]
    terminal: Optional[Callable[[Any], list[Any]]] = None
    z_lb: Any = None
    z_ub: Any = None

    @property
    def width(self) -> int:
        """A stage's own variables: the grid point's, the final time apart."""
        return self.nz - 1 if self.free_time else self.nz

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """``(lb, ub)``, each of nz entries."""
        lb = np.broadcast_to(np.asarray(-np.inf if self.z_lb is None else self.z_lb, dtype=float), (self.nz,))
        ub = np.broadcast_to(np.asarray(np.inf if self.z_ub is None else self.z_ub, dtype=float), (self.nz,))
        return lb, ub

    def defects(self, z: Any, zn: Any, tf: Any, m: Any) -> list[Any]:
        """The trapezoid's defects between the grid points z and zn (each readable up to the
        final time's entry, which is tf's)."""
        step = tf / self.N
        f, fn = self.rhs(z, m), self.rhs(zn, m)
        return [zn[j] - z[j] - 0.5 * step * (fn[j] + f[j]) for j in range(len(f))]


class _Point:
    """A grid point's variables z with the final time s[0] as entry ``width``."""

    def __init__(self, z: Any, s: Any, width: int) -> None:
        self.z, self.s, self.width = z, s, width

    def __getitem__(self, j: int) -> Any:
        return self.s[j - self.width] if j >= self.width else self.z[j]


def multistage_problem(ocp: Ocp) -> Any:
    """The anvil MultistageProblem of ``ocp``: stage k holds grid point k, the final time is a
    variable shared by every stage; its functions are named ``cops_ms_<name>_*``."""
    import anvil as av
    from anvil.opti import MultistageProblem

    width, free_time, name = ocp.width, ocp.free_time, ocp.name

    def point(z: Any, rest: tuple) -> Any:
        return _Point(z, rest[0] if free_time else None, width)

    def defects(z: Any, zn: Any, *rest: Any) -> Any:
        tf = rest[0][0] if free_time else 1.0
        return m.vec(ocp.defects(point(z, rest), point(zn, rest), tf, m))

    lb, ub = ocp.bounds()
    shared = (av.Arg(1),) if free_time else ()
    stage = (av.Arg(width), *shared, av.Arg(0), av.Arg(0))

    def fn(what: str, body: Callable[[Any], Any]) -> Any:
        return av.NumericalFunction(f"cops_ms_{name}_{what}", lambda z, *rest: body(point(z, rest)), stage)

    return MultistageProblem(
        N=ocp.N,
        nz=width,
        cost_terminal_fn=fn("cost", ocp.cost),
        eq_initial_fn=fn("start", lambda z: m.vec(ocp.initial(z))),
        eq_interstage_fn=av.NumericalFunction(
            f"cops_ms_{name}_defects", defects, (av.Arg(width), av.Arg(width), *shared, av.Arg(0), av.Arg(0))
        ),
        eq_terminal_fn=fn("end", lambda z: m.vec(ocp.terminal(z))) if ocp.terminal else None,
        z_lb=lb[:width],
        z_ub=ub[:width],
        shared_dim=len(shared),
        shared_lb=lb[width:] if free_time else None,
        shared_ub=ub[width:] if free_time else None,
    )


@dataclasses.dataclass
class FatropForm:
    """``ocp`` in fatrop's form (through CasADi's nlpsol, ``structure_detection="manual"``):
    fatrop's dynamics are explicit, ``x_{k+1} = F(x_k, u_k)``, and the trapezoid is implicit
    in the next grid point, so the state of stage k is grid point k (and the final time, which
    the dynamics carry unchanged) and its controls are the next grid point, which the
    dynamics copy into the next state; the defects are stage k's path equalities, with the
    initial conditions at stage 0 and the terminal ones at stage N. Bounds hold on the states.
    The variables are ordered x_0, u_0, x_1, u_1, ..., x_N; the rows per stage, dynamics then
    path equalities (all rows are equalities)."""

    nlp: dict
    bounds: dict
    options: dict
    ocp: Ocp

    def start(self, z: np.ndarray) -> np.ndarray:
        """The stacked stages z (``to_stages``) as fatrop's variables."""
        ocp, width = self.ocp, self.ocp.width
        points = np.asarray(z[: width * (ocp.N + 1)], dtype=float).reshape(ocp.N + 1, width)
        tf = list(z[width * (ocp.N + 1) :])
        parts = []
        for k in range(ocp.N + 1):
            parts += [points[k], tf]
            if k < ocp.N:
                parts.append(points[k + 1])
        return np.concatenate(parts)

    def stages(self, x: np.ndarray) -> np.ndarray:
        """fatrop's variables x as the stacked stages (the inverse of ``start``)."""
        ocp, width = self.ocp, self.ocp.width
        x = np.asarray(x, dtype=float).ravel()
        stride = ocp.nz + width
        points = [x[k * stride : k * stride + width] for k in range(ocp.N + 1)]
        return np.concatenate(points + [x[width : ocp.nz]])


def fatrop_form(ocp: Ocp) -> FatropForm:
    """``ocp`` in fatrop's form (FatropForm)."""
    import casadi as cs

    N, nz, width = ocp.N, ocp.nz, ocp.width
    lb, ub = ocp.bounds()
    xs = [cs.SX.sym(f"x{k}", nz) for k in range(N + 1)]
    us = [cs.SX.sym(f"u{k}", width) for k in range(N)]
    variables, rows, path_rows, lbx, ubx = [], [], [], [], []
    for k in range(N + 1):
        x = xs[k]
        tf = x[width] if ocp.free_time else 1.0
        path = list(ocp.initial(x)) if k == 0 else []
        variables.append(x)
        lbx.append(lb)
        ubx.append(ub)
        if k < N:
            u = us[k]
            # The next grid point: the controls, the final time the state's.
            nxt = cs.vertcat(u, x[width:])
            path += ocp.defects(x, nxt, tf, CasadiMath)
            variables.append(u)
            lbx.append(np.full(width, -np.inf))
            ubx.append(np.full(width, np.inf))
            rows.append(xs[k + 1] - nxt)
        if k == N and ocp.terminal:
            path += list(ocp.terminal(x))
        rows.append(cs.vertcat(*path) if path else cs.SX(0, 1))
        path_rows.append(len(path))
    g = cs.vertcat(*rows)
    nlp = {"x": cs.vertcat(*variables), "f": ocp.cost(xs[N]), "g": g}
    bounds = {"lbx": np.concatenate(lbx), "ubx": np.concatenate(ubx), "lbg": 0.0, "ubg": 0.0}
    options = {
        "structure_detection": "manual",
        "nx": [nz] * (N + 1),
        "nu": [width] * N + [0],
        "ng": path_rows,
        "N": N,
        "equality": [True] * g.shape[0],
    }
    return FatropForm(nlp, bounds, options, ocp)


def catalyst_mixing_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Catalyst mixing (cops_problems.catalyst_mixing): ``z = (x1, x2, u)``, 0 <= u <= 1,
    min x1(1) + x2(1) - 1 from x(0) = (1, 0)."""
    spec, guesses = catalyst_mixing(N)

    def rhs(z: Any, m: Any) -> list[Any]:
        x1, x2, u = z[0], z[1], z[2]
        return [u * (10.0 * x2 - x1), u * (x1 - 10.0 * x2) - (1.0 - u) * x2]

    ocp = Ocp(
        f"catmix{N}",
        N,
        3,
        rhs,
        free_time=False,
        cost=lambda z: z[0] + z[1] - 1.0,
        initial=lambda z: [z[0] - 1.0, z[1]],
        z_lb=[-np.inf, -np.inf, 0.0],
        z_ub=[np.inf, np.inf, 1.0],
    )
    return ocp, guesses, spec


def particle_steering_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Particle steering (cops_problems.particle_steering): ``z = (y1, y2, y3, y4, u, t_f)``,
    |u| <= pi/2, min t_f from rest at the origin to y2 = 5 with velocity (45, 0)."""
    spec, guesses = particle_steering(N)
    a = 100.0

    def rhs(z: Any, m: Any) -> list[Any]:
        return [z[2], z[3], a * m.cos(z[4]), a * m.sin(z[4])]

    ocp = Ocp(
        f"steering{N}",
        N,
        6,
        rhs,
        free_time=True,
        cost=lambda z: z[5],
        initial=lambda z: [z[0], z[1], z[2], z[3]],
        terminal=lambda z: [z[1] - 5.0, z[2] - 45.0, z[3]],
        z_lb=[-np.inf] * 4 + [-math.pi / 2, 0.0],
        z_ub=[np.inf] * 4 + [math.pi / 2, np.inf],
    )
    return ocp, guesses, spec


def hanging_chain_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Hanging chain (cops_problems.hanging_chain): ``z = (x1, x2, x3, u)``, min x2(1) with
    x1 from a = 1 to b = 3 and length x3(1) = L = 4."""
    spec, guesses = hanging_chain(N)
    a, b, length = 1.0, 3.0, 4.0

    def rhs(z: Any, m: Any) -> list[Any]:
        arc = m.sqrt(1.0 + z[3] * z[3])
        return [z[3], z[0] * arc, arc]

    ocp = Ocp(
        f"chain{N}",
        N,
        4,
        rhs,
        free_time=False,
        cost=lambda z: z[1],
        initial=lambda z: [z[0] - a, z[1], z[2]],
        terminal=lambda z: [z[0] - b, z[2] - length],
    )
    return ocp, guesses, spec


def goddard_rocket_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Goddard rocket (cops_problems.goddard_rocket): ``z = (h, v, m, T, t_f)`` with the
    Spec's bounds, min -h(t_f) from (1, 0, 1) with the final mass 0.6."""
    spec, guesses = goddard_rocket(N)
    h0, v0, m0, g0, tc, hc, vc, mc = 1.0, 0.0, 1.0, 1.0, 3.5, 500.0, 620.0, 0.6
    c = 0.5 * math.sqrt(g0 * h0)
    mf, dc, tmax = mc * m0, 0.5 * vc * m0 / g0, tc * g0 * m0

    def rhs(z: Any, m: Any) -> list[Any]:
        alt, vel, mass, thrust = z[0], z[1], z[2], z[3]
        drag = dc * vel * vel * m.exp(-hc * (alt - h0) / h0)
        gravity = g0 * (h0 / alt) * (h0 / alt)
        return [vel, (thrust - drag) / mass - gravity, -thrust / c]

    ocp = Ocp(
        f"rocket{N}",
        N,
        5,
        rhs,
        free_time=True,
        cost=lambda z: -z[0],
        initial=lambda z: [z[0] - h0, z[1] - v0, z[2] - m0],
        terminal=lambda z: [z[2] - mf],
        z_lb=[h0, 0.0, mf, 0.0, 0.0],
        z_ub=[np.inf, np.inf, m0, tmax, np.inf],
    )
    return ocp, guesses, spec


def hang_glider_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Hang glider (cops_problems.hang_glider): ``z = (x, y, v_x, v_y, c_L, t_f)`` with the
    Spec's bounds, min -x(t_f) from (0, 1000) to y(t_f) = 900 at the velocity (13.23, -1.288)
    at both ends."""
    spec, guesses = hang_glider(N)
    y0, yf, vx0, vy0 = 1000.0, 900.0, 13.23, -1.288
    uc, radius, mass, g, c0, k, area, rho, cl_max = 2.5, 100.0, 100.0, 9.81, 0.034, 0.069662, 14.0, 1.13, 1.4

    def rhs(z: Any, m: Any) -> list[Any]:
        x, vx, vy, cl = z[0], z[2], z[3], z[4]
        d = x / radius - 2.5
        w = vy - uc * (1.0 - d * d) * m.exp(-d * d)
        q = (0.5 * rho * area / mass) * m.sqrt(vx * vx + w * w)
        cd = c0 + k * cl * cl
        return [vx, vy, -q * (cl * w + cd * vx), q * (cl * vx - cd * w) - g]

    ocp = Ocp(
        f"glider{N}",
        N,
        6,
        rhs,
        free_time=True,
        cost=lambda z: -z[0],
        initial=lambda z: [z[0], z[1] - y0, z[2] - vx0, z[3] - vy0],
        terminal=lambda z: [z[1] - yf, z[2] - vx0, z[3] - vy0],
        z_lb=[0.0, -np.inf, 0.0, -np.inf, 0.0, 0.0],
        z_ub=[np.inf, np.inf, np.inf, np.inf, cl_max, np.inf],
    )
    return ocp, guesses, spec


def robot_arm_ocp(N: int) -> tuple[Ocp, list[np.ndarray], Spec]:
    """Robot arm (cops_problems.robot_arm): ``z = (rho, theta, phi, rho', theta', phi', u_rho,
    u_theta, u_phi, t_f)`` with the Spec's bounds, min t_f from rest at (4.5, 0, pi / 4) to rest
    at (4.5, 2 pi / 3, pi / 4)."""
    spec, guesses = robot_arm(N)
    length = 5.0
    start, end = [4.5, 0.0, math.pi / 4], [4.5, 2.0 * math.pi / 3, math.pi / 4]

    def rhs(z: Any, m: Any) -> list[Any]:
        rho, s = z[0], m.sin(z[2])
        i_phi = ((length - rho) * (length - rho) * (length - rho) + rho * rho * rho) / 3.0
        return [z[3], z[4], z[5], z[6] / length, z[7] / (i_phi * s * s), z[8] / i_phi]

    ocp = Ocp(
        f"arm{N}",
        N,
        10,
        rhs,
        free_time=True,
        cost=lambda z: z[9],
        initial=lambda z: [z[j] - start[j] for j in range(3)] + [z[3], z[4], z[5]],
        terminal=lambda z: [z[j] - end[j] for j in range(3)] + [z[3], z[4], z[5]],
        z_lb=[0.0, -math.pi, 0.0, -np.inf, -np.inf, -np.inf, -1.0, -1.0, -1.0, 0.0],
        z_ub=[length, math.pi, math.pi, np.inf, np.inf, np.inf, 1.0, 1.0, 1.0, np.inf],
    )
    return ocp, guesses, spec


#: Each problem by name (cops_problems.PROBLEMS's names), as a function of the number of
#: intervals N: (its Ocp, the Spec's guesses, the Spec).
OCPS: dict[str, Callable[[int], tuple[Ocp, list[np.ndarray], Spec]]] = {
    "catmix": catalyst_mixing_ocp,
    "steering": particle_steering_ocp,
    "chain": hanging_chain_ocp,
    "rocket": goddard_rocket_ocp,
    "glider": hang_glider_ocp,
    "arm": robot_arm_ocp,
}


def _staged(ocp_of: Callable[[int], tuple[Ocp, list[np.ndarray], Spec]]) -> Callable[[int], tuple[Any, list[np.ndarray], Spec]]:
    def build(N: int) -> tuple[Any, list[np.ndarray], Spec]:
        ocp, guesses, spec = ocp_of(N)
        return multistage_problem(ocp), [to_stages(x, N, ocp.width) for x in guesses], spec

    return build


#: Each problem by name, as a function of N: (the MultistageProblem, its guesses as stacked
#: stages, the Spec).
PROBLEMS: dict[str, Callable[[int], tuple[Any, list[np.ndarray], Spec]]] = {
    name: _staged(ocp_of) for name, ocp_of in OCPS.items()
}

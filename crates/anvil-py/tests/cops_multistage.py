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
"""

from __future__ import annotations

import math
from typing import Any, Callable, Optional

import numpy as np

from cops_problems import catalyst_mixing, goddard_rocket, hang_glider, hanging_chain, particle_steering, robot_arm
from opti_problems import AnvilMath as m
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


def _problem(
    name: str,
    N: int,
    nz: int,
    rhs: Callable[[Any], list[Any]],
    free_time: bool,
    cost: Callable[[Any], Any],
    initial: Callable[[Any], list[Any]],
    terminal: Optional[Callable[[Any], list[Any]]] = None,
    z_lb: Any = None,
    z_ub: Any = None,
) -> Any:
    """The MultistageProblem of an ODE ``x' = rhs(z)`` (one entry per state, the states first
    in z) discretised by the trapezoidal rule on N intervals of [0, t_f], t_f = 1 or (free) the
    shared variable, with the Mayer cost ``cost(z_N)`` and the equalities ``initial(z_0) = 0``
    and ``terminal(z_N) = 0`` (if any). The callbacks read ``z`` with ``t_f`` as its last entry
    ``z[nz - 1]`` (and ``z_lb``/``z_ub`` bound it there). Its functions are named
    ``cops_ms_<name>_*``."""
    import anvil as av
    from anvil.opti import MultistageProblem

    width = nz - 1 if free_time else nz

    class Stage:
        """A stage's variables with the final time as entry ``width``."""

        def __init__(self, z: Any, s: Any) -> None:
            self.z, self.s = z, s

        def __getitem__(self, j: int) -> Any:
            return self.s[j - width] if j >= width else self.z[j]

    def defects(z: Any, zn: Any, *rest: Any) -> Any:
        s = rest[0] if free_time else None
        step = s[0] / N if free_time else 1.0 / N
        f, fn = rhs(Stage(z, s)), rhs(Stage(zn, s))
        return m.vec([zn[j] - z[j] - 0.5 * step * (fn[j] + f[j]) for j in range(len(f))])

    lb = np.broadcast_to(np.asarray(-np.inf if z_lb is None else z_lb, dtype=float), (nz,))
    ub = np.broadcast_to(np.asarray(np.inf if z_ub is None else z_ub, dtype=float), (nz,))
    shared = (av.Arg(1),) if free_time else ()
    stage = (av.Arg(width), *shared, av.Arg(0), av.Arg(0))

    def fn(what: str, body: Callable[[Any], Any]) -> Any:
        return av.NumericalFunction(
            f"cops_ms_{name}_{what}", lambda z, *rest: body(Stage(z, rest[0] if free_time else None)), stage
        )

    return MultistageProblem(
        N=N,
        nz=width,
        cost_terminal_fn=fn("cost", cost),
        eq_initial_fn=fn("start", lambda z: m.vec(initial(z))),
        eq_interstage_fn=av.NumericalFunction(
            f"cops_ms_{name}_defects", defects, (av.Arg(width), av.Arg(width), *shared, av.Arg(0), av.Arg(0))
        ),
        eq_terminal_fn=fn("end", lambda z: m.vec(terminal(z))) if terminal else None,
        z_lb=lb[:width],
        z_ub=ub[:width],
        shared_dim=len(shared),
        shared_lb=lb[width:] if free_time else None,
        shared_ub=ub[width:] if free_time else None,
    )


def catalyst_mixing_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Catalyst mixing (cops_problems.catalyst_mixing): ``z = (x1, x2, u)``, 0 <= u <= 1,
    min x1(1) + x2(1) - 1 from x(0) = (1, 0)."""
    spec, guesses = catalyst_mixing(N)

    def rhs(z: Any) -> list[Any]:
        x1, x2, u = z[0], z[1], z[2]
        return [u * (10.0 * x2 - x1), u * (x1 - 10.0 * x2) - (1.0 - u) * x2]

    problem = _problem(
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
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


def particle_steering_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Particle steering (cops_problems.particle_steering): ``z = (y1, y2, y3, y4, u, t_f)``,
    |u| <= pi/2, min t_f from rest at the origin to y2 = 5 with velocity (45, 0)."""
    spec, guesses = particle_steering(N)
    a = 100.0

    def rhs(z: Any) -> list[Any]:
        return [z[2], z[3], a * m.cos(z[4]), a * m.sin(z[4])]

    problem = _problem(
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
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


def hanging_chain_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Hanging chain (cops_problems.hanging_chain): ``z = (x1, x2, x3, u)``, min x2(1) with
    x1 from a = 1 to b = 3 and length x3(1) = L = 4."""
    spec, guesses = hanging_chain(N)
    a, b, length = 1.0, 3.0, 4.0

    def rhs(z: Any) -> list[Any]:
        arc = m.sqrt(1.0 + z[3] * z[3])
        return [z[3], z[0] * arc, arc]

    problem = _problem(
        f"chain{N}",
        N,
        4,
        rhs,
        free_time=False,
        cost=lambda z: z[1],
        initial=lambda z: [z[0] - a, z[1], z[2]],
        terminal=lambda z: [z[0] - b, z[2] - length],
    )
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


def goddard_rocket_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Goddard rocket (cops_problems.goddard_rocket): ``z = (h, v, m, T, t_f)`` with the
    Spec's bounds, min -h(t_f) from (1, 0, 1) with the final mass 0.6."""
    spec, guesses = goddard_rocket(N)
    h0, v0, m0, g0, tc, hc, vc, mc = 1.0, 0.0, 1.0, 1.0, 3.5, 500.0, 620.0, 0.6
    c = 0.5 * math.sqrt(g0 * h0)
    mf, dc, tmax = mc * m0, 0.5 * vc * m0 / g0, tc * g0 * m0

    def rhs(z: Any) -> list[Any]:
        alt, vel, mass, thrust = z[0], z[1], z[2], z[3]
        drag = dc * vel * vel * m.exp(-hc * (alt - h0) / h0)
        gravity = g0 * (h0 / alt) * (h0 / alt)
        return [vel, (thrust - drag) / mass - gravity, -thrust / c]

    problem = _problem(
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
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


def hang_glider_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Hang glider (cops_problems.hang_glider): ``z = (x, y, v_x, v_y, c_L, t_f)`` with the
    Spec's bounds, min -x(t_f) from (0, 1000) to y(t_f) = 900 at the velocity (13.23, -1.288)
    at both ends."""
    spec, guesses = hang_glider(N)
    y0, yf, vx0, vy0 = 1000.0, 900.0, 13.23, -1.288
    uc, radius, mass, g, c0, k, area, rho, cl_max = 2.5, 100.0, 100.0, 9.81, 0.034, 0.069662, 14.0, 1.13, 1.4

    def rhs(z: Any) -> list[Any]:
        x, vx, vy, cl = z[0], z[2], z[3], z[4]
        d = x / radius - 2.5
        w = vy - uc * (1.0 - d * d) * m.exp(-d * d)
        q = (0.5 * rho * area / mass) * m.sqrt(vx * vx + w * w)
        cd = c0 + k * cl * cl
        return [vx, vy, -q * (cl * w + cd * vx), q * (cl * vx - cd * w) - g]

    problem = _problem(
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
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


def robot_arm_stages(N: int) -> tuple[Any, list[np.ndarray], Spec]:
    """Robot arm (cops_problems.robot_arm): ``z = (rho, theta, phi, rho', theta', phi', u_rho,
    u_theta, u_phi, t_f)`` with the Spec's bounds, min t_f from rest at (4.5, 0, pi / 4) to rest
    at (4.5, 2 pi / 3, pi / 4)."""
    spec, guesses = robot_arm(N)
    length = 5.0
    start, end = [4.5, 0.0, math.pi / 4], [4.5, 2.0 * math.pi / 3, math.pi / 4]

    def rhs(z: Any) -> list[Any]:
        rho, s = z[0], m.sin(z[2])
        i_phi = ((length - rho) * (length - rho) * (length - rho) + rho * rho * rho) / 3.0
        return [z[3], z[4], z[5], z[6] / length, z[7] / (i_phi * s * s), z[8] / i_phi]

    problem = _problem(
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
    return problem, [to_stages(x, N, problem.nz) for x in guesses], spec


#: Each problem by name (cops_problems.PROBLEMS's names), as a function of the number of
#: intervals N: (the MultistageProblem, its guesses as stacked stages, the Spec).
PROBLEMS: dict[str, Callable[[int], tuple[Any, list[np.ndarray], Spec]]] = {
    "catmix": catalyst_mixing_stages,
    "steering": particle_steering_stages,
    "chain": hanging_chain_stages,
    "rocket": goddard_rocket_stages,
    "glider": hang_glider_stages,
    "arm": robot_arm_stages,
}

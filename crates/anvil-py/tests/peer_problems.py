"""The peers' own examples, written from their published descriptions: problems their authors
chose to show their solvers on, which nobody here tuned for.

- ``quadrotor``: fatrop's quadrotor example (meco-group/fatrop, ``examples/ocp_quadrotor_example.py``):
  a 12-state quadrotor (position, velocity, roll-pitch-yaw Euler angles, body rates) driven by
  its four rotor speeds ω ∈ [0, 600], from hover at the origin to hover at (5, 5, 2) in 5 s on
  K = 100 grid points (N = 99 explicit Euler steps of T/K), roll and pitch within ±π/4,
  minimising Σ_k Σ_j (ω_j / ω_max)². The example's initial guess interpolates the states from
  start to end (plus 0.1) with the rotors at hover speed.

- ``motion``: rockit's motion planning example (meco-group/rockit, ``examples/motion_planning.py``):
  a kinematic bicycle (position, heading; steering angle |δ| ≤ π/6 and speed V ∈ [0, 1]) from
  the origin heading north to (0, 10) around a round obstacle of radius 1 at (0.2, 5), in a
  free final time T, minimising T + ∫ x² dt, on N = 20 intervals of M = 4 RK4 steps each; the
  obstacle holds at every grid point, the last included. The example's guess: y = t along
  the grid of T = 10, heading north at V = 1. Its ``disks`` variant starts anywhere in the
  disk of radius 1/2 about the origin (heading north) and ends anywhere in the disk of radius
  1/2 about (0, 10): inequalities on the first and the last stage, both active.

- ``car``: fatrop's car reference-tracking example (meco-group/fatrop,
  ``examples/car_reference_tracking_example.py``): a kinematic bicycle with its speed a state
  (x, y, θ, v; acceleration |a| ≤ 3, steering |δ| ≤ π/4, -5 ≤ v ≤ 20 after the start) tracks
  a cubic spline through six waypoints at 5 m/s for 5 s (K = 51 points, one RK4 step of 0.1 s
  per interval), from a start off the reference, keeping clear of three round obstacles at
  every point (the first one on the reference's way): tracking costs at every point, a² on
  every step. The reference is each stage's parameter. The example's guess: the reference
  states, zero controls; a second: the start state held throughout.

- ``chain_mass``: acados' chain of masses (acados, ``examples/acados_python/chain_mass``, after
  Wirsching, Bock and Diehl, "Fast NMPC of a chain of masses connected by springs", 2006): five
  balls (m = 0.033) on springs (D = 1, rest length 0.033), the first fixed at the origin, the
  last moved by its velocity u (|u_i| ≤ 1); 21 states (the four free balls' positions, the
  three intermediate ones' velocities). From the state 5 steps of u = (-1, 1, 1) away from
  rest, back to rest over N = 40 steps of 0.2 s (two RK4 steps each), the example's weights
  (the last ball's position 4× the others, controls 1e-2), the balls' y at least -0.05 (the
  wall, a state bound at every point; the example softens it with slacks). Guesses: the start
  held, and rest, over the horizon (zero controls).

- ``race``: CasADi's race car (casadi, ``docs/examples/python/race_car.py``, the Opti stack's
  introductory example): position and speed, ṗ = v, v̇ = u − v, throttle 0 ≤ u ≤ 1, from
  standstill at 0 to position 1 in minimal time T (shared by every interval), N = 100 RK4
  steps of T/N, the speed at most 1 − sin(2π p)/2 at every point. The example's guess: speed
  1 and T = 1 (the rest zero); a second: p from 0 to 1, speed and throttle 1/2, T = 2.

- ``vdp``: CasADi's Van der Pol examples (casadi, ``docs/examples/python/direct_multiple_shooting.py``
  and ``dae_multiple_shooting.py``): ẋ₁ = (1 − x₂²) x₁ − x₂ + u, ẋ₂ = x₁ from (0, 1) over
  10 s, minimising ∫ x₁² + x₂² + u² dt, on N = 20 intervals of four RK4 steps that integrate
  the cost with the states (the first example's integrator); x₁ ≥ −0.25 and |u| ≤ 1 (the
  first example), or the DAE example's end at rest with −0.75 ≤ u ≤ 1 (its algebraic
  variable z = 1 − x₂² eliminated). Guesses: the example's (zero but the start), and the start
  held.

- ``pendulum``: acados' getting-started example (``examples/acados_python/getting_started/
  minimal_example_ocp.py`` and its ``pendulum_model.py``): a pendulum (0.1 kg on a 0.8 m rod)
  on a cart (1 kg) swung up from hanging in T = 1 s by a force |F| ≤ 80, N = 20 intervals (one
  RK4 step each; the example integrates implicitly), minimising x'Qx + u'Ru (Q = 2 diag(1e3,
  1e3, 1e-2, 1e-2), R = 2e-2) with the stages' terms weighted by the interval as acados does.
  Guesses: acados' default (every state and control zero), and the start held.

Each problem comes as an anvil ``MultistageProblem`` (``from_dynamics``) and as the same NLP in
CasADi (the z-form ``z_k = (x_k, u_k)``, the last stage's control unused and bounded, as
``from_dynamics`` has it), which Ipopt and fatrop solve in the tests and the benchmark.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opti_problems import AnvilMath, CasadiMath, NumpyMath


def rk4(ode: Any, x: Any, n: int, h: Any, steps: int = 1) -> list[Any]:
    """``steps`` RK4 steps of length h of s' = ode(s) from the first n components of x (the
    examples' fixed-step integrators; a cost's quadrature is one more component)."""
    s = [x[i] for i in range(n)]
    for _ in range(steps):
        k1 = ode(s)
        k2 = ode([s[i] + h / 2 * k1[i] for i in range(n)])
        k3 = ode([s[i] + h / 2 * k2[i] for i in range(n)])
        k4 = ode([s[i] + h * k3[i] for i in range(n)])
        s = [s[i] + h / 6 * (k1[i] + 2 * k2[i] + 2 * k3[i] + k4[i]) for i in range(n)]
    return s


# --- fatrop's quadrotor ----------------------------------------------------------------------

QUAD_MASS, QUAD_G, QUAD_ARM, QUAD_KF, QUAD_KM = 1.0, 9.81, 0.25, 1e-5, 1e-6
QUAD_INERTIA = (0.01, 0.01, 0.02)
QUAD_W_MAX = 600.0
QUAD_TILT = math.pi / 4
QUAD_POINTS, QUAD_T = 100, 5.0
QUAD_N = QUAD_POINTS - 1
QUAD_DT = QUAD_T / QUAD_POINTS  # the example's step: T / K
QUAD_NX, QUAD_NU = 12, 4
QUAD_END = np.array([5.0, 5.0, 2.0, 0, 0, 0, 0, 0, 0, 0, 0, 0])
QUAD_HOVER = math.sqrt(QUAD_G * QUAD_MASS / (4 * QUAD_KF))


def quadrotor_ode(x: Any, w: Any, m: Any) -> list[Any]:
    """x' for the state x = (p, v, (φ, θ, ψ), (p, q, r)) and the rotor speeds w: thrust k_F Σ w²
    along the body z axis (rotated by R = R_z(ψ) R_y(θ) R_x(φ)), the torques of the rotor pairs,
    the Euler angle rates of the body rates (ZYX) and Euler's equations of a diagonal inertia."""
    ix, iy, iz = QUAD_INERTIA
    phi, theta = x[6], x[7]
    p, q, r = x[9], x[10], x[11]
    sq = [w[j] * w[j] for j in range(4)]
    thrust = QUAD_KF * (sq[0] + sq[1] + sq[2] + sq[3])
    roll = QUAD_ARM * QUAD_KF * (sq[1] - sq[3])
    pitch = QUAD_ARM * QUAD_KF * (sq[2] - sq[0])
    yaw = QUAD_KM * (sq[0] - sq[1] + sq[2] - sq[3])
    sf, cf, st, ct = m.sin(phi), m.cos(phi), m.sin(theta), m.cos(theta)
    # The thrust in the world frame: R^T (0, 0, thrust), the last row of R times the thrust;
    # the Euler rates as the example writes them, its matrix of tan θ and 1 / cos θ times (p, q, r).
    a = thrust / QUAD_MASS
    tt = st / ct
    return [
        x[3],
        x[4],
        x[5],
        -a * st,
        a * ct * sf,
        a * ct * cf - QUAD_G,
        p + sf * tt * q + cf * tt * r,
        cf * q - sf * r,
        sf / ct * q + cf / ct * r,
        (roll + (iy - iz) * q * r) / ix,
        (pitch + (iz - ix) * p * r) / iy,
        (yaw + (ix - iy) * p * q) / iz,
    ]


def quadrotor_step(x: Any, w: Any, m: Any) -> Any:
    """One explicit Euler step of T / K."""
    f = quadrotor_ode(x, w, m)
    return m.vec([x[i] + QUAD_DT * f[i] for i in range(QUAD_NX)])


def quadrotor_cost(w: Any) -> Any:
    return sum((w[j] / QUAD_W_MAX) * (w[j] / QUAD_W_MAX) for j in range(QUAD_NU))


def quadrotor_bounds() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(x_lb, x_ub, u_lb, u_ub)``: roll and pitch within ±π/4, rotors in [0, ω_max]."""
    x_lb, x_ub = np.full(QUAD_NX, -np.inf), np.full(QUAD_NX, np.inf)
    x_lb[6:8], x_ub[6:8] = -QUAD_TILT, QUAD_TILT
    return x_lb, x_ub, np.zeros(QUAD_NU), np.full(QUAD_NU, QUAD_W_MAX)


def quadrotor_guesses() -> list[np.ndarray]:
    """The example's guess (states from start to end plus 0.1, rotors at hover), hover at the
    start for the whole horizon, and all zeros (rotors stopped: their Jacobian is zero there,
    a stationary point of the infeasibility)."""
    example = [np.r_[k / QUAD_N * QUAD_END + 0.1, [QUAD_HOVER] * QUAD_NU] for k in range(QUAD_N + 1)]
    rest = np.tile(np.r_[np.zeros(QUAD_NX), [QUAD_HOVER] * QUAD_NU], QUAD_N + 1)
    return [np.concatenate(example), rest, np.zeros((QUAD_N + 1) * (QUAD_NX + QUAD_NU))]


def quadrotor_problem(name: str = "quadrotor") -> Any:
    """The quadrotor as ``MultistageProblem.from_dynamics`` (parameter: x_init, the origin)."""
    import anvil as av
    from anvil.opti import MultistageProblem

    xup = (av.Arg(QUAD_NX), av.Arg(QUAD_NU), av.Arg(0))
    x_lb, x_ub, u_lb, u_ub = quadrotor_bounds()
    return MultistageProblem.from_dynamics(
        N=QUAD_N,
        nx=QUAD_NX,
        nu=QUAD_NU,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, p: quadrotor_step(x, u, AnvilMath), xup),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, p: quadrotor_cost(u), xup),
        terminal_constraints_fn=av.NumericalFunction(
            f"{name}_end", lambda x, p: x - QUAD_END, (av.Arg(QUAD_NX), av.Arg(0))
        ),
        x_lb=x_lb,
        x_ub=x_ub,
        u_lb=u_lb,
        u_ub=u_ub,
    )


def quadrotor_casadi() -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over the stacked z: ``(nlp, bounds)`` for ``nlpsol``; its rows
    the initial state, the steps, the final state (all equalities)."""
    import casadi as cs

    nz = QUAD_NX + QUAD_NU
    z = cs.SX.sym("z", (QUAD_N + 1) * nz)
    xs = [z[k * nz : k * nz + QUAD_NX] for k in range(QUAD_N + 1)]
    us = [z[k * nz + QUAD_NX : (k + 1) * nz] for k in range(QUAD_N + 1)]
    f = sum(quadrotor_cost(us[k]) for k in range(QUAD_N))
    steps = [xs[k + 1] - quadrotor_step(xs[k], us[k], CasadiMath) for k in range(QUAD_N)]
    g = cs.vertcat(xs[0], *steps, xs[QUAD_N] - QUAD_END)
    x_lb, x_ub, u_lb, u_ub = quadrotor_bounds()
    bounds = {
        "lbx": np.tile(np.r_[x_lb, u_lb], QUAD_N + 1),
        "ubx": np.tile(np.r_[x_ub, u_ub], QUAD_N + 1),
        "lbg": 0.0,
        "ubg": 0.0,
    }
    return {"x": z, "f": f, "g": g}, bounds


# --- rockit's motion planning ----------------------------------------------------------------

MOTION_N, MOTION_M = 20, 4
MOTION_NX, MOTION_NU = 3, 2
MOTION_NZ = MOTION_NX + MOTION_NU
MOTION_WHEELBASE = 1.0
MOTION_OBSTACLE, MOTION_RADIUS = (0.2, 5.0), 1.0
MOTION_START = np.array([0.0, 0.0, math.pi / 2])
MOTION_END = np.array([0.0, 10.0])
MOTION_STEER = math.pi / 6
MOTION_T_GUESS = 10.0
#: The ``disks`` variant's start and end regions.
MOTION_DISK = 0.5


def motion_ode(s: list[Any], u: Any, m: Any) -> list[Any]:
    """The bicycle's (x, y, θ)' and the running cost x², for u = (δ, V)."""
    delta, speed = u[0], u[1]
    return [speed * m.cos(s[2]), speed * m.sin(s[2]), speed / MOTION_WHEELBASE * m.tan(delta), s[0] * s[0]]


def motion_interval(x: Any, u: Any, t_final: Any, m: Any) -> list[Any]:
    """The state after one control interval of T / N (M RK4 steps) and ∫ x² over it."""
    h = t_final / (MOTION_N * MOTION_M)
    return rk4(lambda s: motion_ode(s, u, m), [x[0], x[1], x[2], 0.0], 4, h, MOTION_M)


def squared_distance(x: Any, point: Any) -> Any:
    """|(x[0], x[1]) - point|²."""
    dx, dy = x[0] - point[0], x[1] - point[1]
    return dx * dx + dy * dy


def motion_clearance(x: Any) -> Any:
    """The squared distance to the obstacle's centre (at least its radius squared)."""
    return squared_distance(x, MOTION_OBSTACLE)


def motion_guesses() -> list[np.ndarray]:
    """``[z_0, …, z_N, T]``: the example's guess (y = t on the grid of T = 10, heading north at
    V = 1), and the same path at half the speed and twice the time, steering slightly right."""
    def path(speed: float, steer: float, t_final: float) -> np.ndarray:
        stages = [[0.0, t_final * speed * k / MOTION_N, math.pi / 2, steer, speed] for k in range(MOTION_N + 1)]
        return np.r_[np.concatenate(stages), t_final]

    return [path(1.0, 0.0, MOTION_T_GUESS), path(0.5, -0.1, 2 * MOTION_T_GUESS)]


def motion_bounds() -> tuple[np.ndarray, np.ndarray]:
    """``(z_lb, z_ub)`` of one stage: |δ| ≤ π/6, 0 ≤ V ≤ 1."""
    inf = np.inf
    return np.array([-inf, -inf, -inf, -MOTION_STEER, 0.0]), np.array([inf, inf, inf, MOTION_STEER, 1.0])


def motion_problem(name: str = "motion", disks: bool = False) -> Any:
    """rockit's motion planning as ``from_dynamics`` (parameter: x_init), T shared; with
    ``disks`` its variant in the z-form (no parameter): ``ineq_initial_fn`` and
    ``ineq_terminal_fn`` hold the start and end disks."""
    import anvil as av
    from anvil.opti import MultistageProblem

    m = AnvilMath
    if not disks:
        xusp = (av.Arg(MOTION_NX), av.Arg(MOTION_NU), av.Arg(1), av.Arg(0))
        xsp = (av.Arg(MOTION_NX), av.Arg(1), av.Arg(0))
        z_lb, z_ub = motion_bounds()
        return MultistageProblem.from_dynamics(
            N=MOTION_N,
            nx=MOTION_NX,
            nu=MOTION_NU,
            dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, s, p: m.vec(motion_interval(x, u, s[0], m)[:3]), xusp),
            stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, s, p: motion_interval(x, u, s[0], m)[3], xusp),
            terminal_cost_fn=av.NumericalFunction(f"{name}_time", lambda x, s, p: s[0], xsp),
            path_constraints_fn=av.NumericalFunction(f"{name}_obstacle", lambda x, u, s, p: m.vec([motion_clearance(x)]), xusp),
            path_lb=MOTION_RADIUS**2,
            path_ub=np.inf,
            terminal_ineq_fn=av.NumericalFunction(f"{name}_obstacle_end", lambda x, s, p: m.vec([motion_clearance(x)]), xsp),
            terminal_ineq_lb=MOTION_RADIUS**2,
            terminal_ineq_ub=np.inf,
            terminal_constraints_fn=av.NumericalFunction(f"{name}_end", lambda x, s, p: x[:2] - MOTION_END, xsp),
            u_lb=z_lb[MOTION_NX:],
            u_ub=z_ub[MOTION_NX:],
            shared_dim=1,
            shared_lb=0.0,
            shared_ub=np.inf,
        )
    zsp = (av.Arg(MOTION_NZ), av.Arg(1), av.Arg(0), av.Arg(0))
    zzsp = (av.Arg(MOTION_NZ), av.Arg(MOTION_NZ), av.Arg(1), av.Arg(0), av.Arg(0))

    def defect(z: Any, zn: Any, s: Any) -> Any:
        nxt = motion_interval(z[:MOTION_NX], z[MOTION_NX:], s[0], m)
        return m.vec([zn[i] - nxt[i] for i in range(MOTION_NX)])

    def fn(what: str, body: Any, args: Any = zsp) -> Any:
        return av.NumericalFunction(f"{name}_{what}", body, args)

    running = fn("l", lambda z, s, g, p: motion_interval(z[:MOTION_NX], z[MOTION_NX:], s[0], m)[3])
    z_lb, z_ub = motion_bounds()
    return MultistageProblem(
        N=MOTION_N,
        nz=MOTION_NZ,
        cost_initial_fn=running,
        cost_stage_fn=running,
        cost_terminal_fn=fn("time", lambda z, s, g, p: s[0]),
        eq_initial_fn=fn("heading", lambda z, s, g, p: m.vec([z[2] - MOTION_START[2]])),
        eq_interstage_fn=fn("defect", lambda z, zn, s, g, p: defect(z, zn, s), zzsp),
        ineq_stage_fn=fn("obstacle", lambda z, s, g, p: m.vec([motion_clearance(z)])),
        ineq_lb=MOTION_RADIUS**2,
        ineq_ub=np.inf,
        ineq_initial_fn=fn("start", lambda z, s, g, p: m.vec([z[0] * z[0] + z[1] * z[1], motion_clearance(z)])),
        ineq_initial_lb=[-np.inf, MOTION_RADIUS**2],
        ineq_initial_ub=[MOTION_DISK**2, np.inf],
        ineq_terminal_fn=fn("end", lambda z, s, g, p: m.vec([motion_clearance(z), motion_end_distance(z)])),
        ineq_terminal_lb=[MOTION_RADIUS**2, -np.inf],
        ineq_terminal_ub=[np.inf, MOTION_DISK**2],
        z_lb=z_lb,
        z_ub=z_ub,
        shared_dim=1,
        shared_lb=0.0,
        shared_ub=np.inf,
    )


def motion_end_distance(x: Any) -> Any:
    """The squared distance to the goal (the disks variant: at most 1/4)."""
    return squared_distance(x, MOTION_END)


def motion_casadi(disks: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over ``[z_0, …, z_N, T]``: ``(nlp, bounds)`` for ``nlpsol``."""
    import casadi as cs

    nz, n, inf = MOTION_NZ, MOTION_N, np.inf
    z = cs.SX.sym("z", (n + 1) * nz + 1)
    t_final = z[-1]
    xs = [z[k * nz : k * nz + MOTION_NX] for k in range(n + 1)]
    us = [z[k * nz + MOTION_NX : (k + 1) * nz] for k in range(n + 1)]
    intervals = [motion_interval(xs[k], us[k], t_final, CasadiMath) for k in range(n)]
    f = t_final + sum(step[3] for step in intervals)
    rows: list[tuple[Any, Any, Any]] = []  # (expression, lb, ub)
    if disks:
        rows.append((xs[0][2] - MOTION_START[2], 0.0, 0.0))
        rows.append((xs[0][0] ** 2 + xs[0][1] ** 2, -inf, MOTION_DISK**2))
        rows.append((motion_clearance(xs[0]), MOTION_RADIUS**2, inf))
    else:
        rows += [(xs[0][i] - MOTION_START[i], 0.0, 0.0) for i in range(MOTION_NX)]
        rows.append((motion_clearance(xs[0]), MOTION_RADIUS**2, inf))
    rows += [(xs[k + 1][i] - intervals[k][i], 0.0, 0.0) for k in range(n) for i in range(MOTION_NX)]
    rows += [(motion_clearance(xs[k]), MOTION_RADIUS**2, inf) for k in range(1, n + 1)]
    if disks:
        rows.append((motion_end_distance(xs[n]), -inf, MOTION_DISK**2))
    else:
        rows += [(xs[n][i] - MOTION_END[i], 0.0, 0.0) for i in range(2)]
    z_lb, z_ub = motion_bounds()
    bounds = {
        "lbx": np.r_[np.tile(z_lb, n + 1), 0.0],
        "ubx": np.r_[np.tile(z_ub, n + 1), inf],
        "lbg": np.array([r[1] for r in rows]),
        "ubg": np.array([r[2] for r in rows]),
    }
    return {"x": z, "f": f, "g": cs.vertcat(*[r[0] for r in rows])}, bounds


def fatrop_stage_options(nx: int, nu: int, n: int, path_rows: list[int], lbg: Any, ubg: Any) -> dict[str, Any]:
    """fatrop's manual structure of an NLP written stage by stage (``x_0, u_0, …, x_N``; per
    stage the dynamics' rows, then its path rows), its rows with equal bounds equalities."""
    return {
        "structure_detection": "manual",
        "nx": [nx] * (n + 1),
        "nu": [nu] * n + [0],
        "ng": path_rows,
        "N": n,
        "equality": list(np.asarray(lbg) == np.asarray(ubg)),
    }


class FatropRows:
    """The rows of an NLP written stage by stage for fatrop: each stage's dynamics (equalities),
    then its path rows ``(row, lb, ub)``; ``options`` is fatrop's manual structure of them."""

    def __init__(self) -> None:
        self.rows: list[Any] = []
        self.lbg: list[float] = []
        self.ubg: list[float] = []
        self.path_rows: list[int] = []

    def dynamics(self, defect: Any, count: int) -> None:
        self.rows.append(defect)
        self.lbg += [0.0] * count
        self.ubg += [0.0] * count

    def path(self, path: list[tuple[Any, float, float]]) -> None:
        self.rows += [r for r, _, _ in path]
        self.lbg += [lo for _, lo, _ in path]
        self.ubg += [hi for _, _, hi in path]
        self.path_rows.append(len(path))

    def options(self, nx: int, nu: int, n: int) -> dict[str, Any]:
        return fatrop_stage_options(nx, nu, n, self.path_rows, self.lbg, self.ubg)


def free_time_maps(n: int, nx: int, nu: int) -> tuple[Any, Any]:
    """``(into, back)``: a guess ``[z_0, …, z_N, T]`` (``z_k = (x_k, u_k)``) onto fatrop's
    variables ``[x_0, T, u_0, …, x_N, T]`` (the final time a state of each stage) and back
    (the last stage's control zero)."""

    def into(z: np.ndarray) -> np.ndarray:
        stages, t_final = z[:-1].reshape(n + 1, nx + nu), z[-1]
        parts = []
        for k in range(n + 1):
            parts.append(np.r_[stages[k, :nx], t_final])
            if k < n:
                parts.append(stages[k, nx:])
        return np.concatenate(parts)

    def back(w: np.ndarray) -> np.ndarray:
        stride = nx + 1 + nu
        stages = [np.r_[w[k * stride : k * stride + nx], w[k * stride + nx + 1 : (k + 1) * stride]] for k in range(n)]
        stages.append(np.r_[w[n * stride : n * stride + nx], np.zeros(nu)])
        return np.r_[np.concatenate(stages), w[n * stride + nx]]

    return into, back


def motion_fatrop() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any, Any]:
    """The motion planning problem in fatrop's form, the final time a state (T_{k+1} = T_k) of
    each stage: ``(nlp, bounds, options, into, back)``, ``into`` mapping a guess
    ``[z_0, …, z_N, T]`` onto its variables ``[x_0, u_0, …, x_N]`` and ``back`` the other way."""
    import casadi as cs

    n, nx, nu, inf = MOTION_N, MOTION_NX + 1, MOTION_NU, np.inf
    xs = [cs.SX.sym(f"x{k}", nx) for k in range(n + 1)]
    us = [cs.SX.sym(f"u{k}", nu) for k in range(n)]
    z_lb, z_ub = motion_bounds()
    variables, lbx, ubx, stages = [], [], [], FatropRows()
    cost: Any = 0.0
    for k in range(n + 1):
        x = xs[k]
        variables.append(x)
        lbx.append(np.r_[z_lb[:MOTION_NX], 0.0])
        ubx.append(np.r_[z_ub[:MOTION_NX], inf])
        path = []  # (row, lb, ub)
        if k == 0:
            path += [(x[i] - MOTION_START[i], 0.0, 0.0) for i in range(MOTION_NX)]
        path.append((motion_clearance(x), MOTION_RADIUS**2, inf))
        if k == n:
            path += [(x[i] - MOTION_END[i], 0.0, 0.0) for i in range(2)]
            cost = cost + x[MOTION_NX]
        if k < n:
            u = us[k]
            variables.append(u)
            lbx.append(z_lb[MOTION_NX:])
            ubx.append(z_ub[MOTION_NX:])
            step = motion_interval(x, u, x[MOTION_NX], CasadiMath)
            cost = cost + step[3]
            stages.dynamics(xs[k + 1] - cs.vertcat(*step[:3], x[MOTION_NX]), nx)
        stages.path(path)
    nlp = {"x": cs.vertcat(*variables), "f": cost, "g": cs.vertcat(*stages.rows)}
    bounds = {"lbx": np.concatenate(lbx), "ubx": np.concatenate(ubx), "lbg": np.array(stages.lbg), "ubg": np.array(stages.ubg)}
    options = stages.options(nx, nu, n)

    into, back = free_time_maps(n, MOTION_NX, nu)
    return nlp, bounds, options, into, back


# --- fatrop's car reference tracking ---------------------------------------------------------

CAR_N, CAR_DT = 50, 0.1
CAR_NX, CAR_NU = 4, 2
CAR_WHEELBASE = 2.7
CAR_SPEED_LIMITS, CAR_ACCELERATION, CAR_STEER = (-20.0 / 4, 20.0), 3.0, math.pi / 4
CAR_WEIGHTS = {"position": 10.0, "heading": 10.0, "speed": 0.1, "acceleration": 1.0}
CAR_WAYPOINTS = [(0, 0), (5, 3), (10, 8), (15, 10), (20, 12), (25, 8)]
CAR_SPEED = 5.0
CAR_START = np.array([0.5, -0.5, math.pi / 6, 1.0])
CAR_OBSTACLES = [(2.0, 8.0, 6.0), (12.0, 8.0, 2.0), (22.0, 10.0, 1.5)]


def car_reference() -> np.ndarray:
    """The reference (x, y, θ, v) at each of the K points: cubic splines (not-a-knot) of x and y
    against the waypoints' chord length, at the distance 5 m/s covers by then, θ the tangent's
    angle, v 5 m/s."""
    from scipy.interpolate import CubicSpline

    points = np.array(CAR_WAYPOINTS, dtype=float)
    chord = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(points, axis=0), axis=1))]
    sx, sy = CubicSpline(chord, points[:, 0]), CubicSpline(chord, points[:, 1])
    s = (CAR_SPEED * np.linspace(0.0, CAR_N * CAR_DT, CAR_N + 1)) % chord[-1]
    theta = np.arctan2(sy.derivative()(s), sx.derivative()(s))
    return np.stack([sx(s), sy(s), theta, np.full(s.shape, CAR_SPEED)], axis=1)


def car_ode(x: Any, u: Any, m: Any) -> list[Any]:
    theta, v = x[2], x[3]
    return [v * m.cos(theta), v * m.sin(theta), v * m.tan(u[1]) / CAR_WHEELBASE, u[0]]


def car_step(x: Any, u: Any, m: Any) -> list[Any]:
    """One RK4 step of 0.1 s."""
    return rk4(lambda s: car_ode(s, u, m), x, CAR_NX, CAR_DT)


def car_tracking(x: Any, ref: Any, m: Any) -> Any:
    """The example's tracking cost at one point against its reference (x, y, θ, v)."""
    w = CAR_WEIGHTS
    position = (x[0] - ref[0]) * (x[0] - ref[0]) + (x[1] - ref[1]) * (x[1] - ref[1])
    s, c = m.sin(x[2] - ref[2]), m.cos(x[2] - ref[2])
    heading = s * s + (1.0 - c) * (1.0 - c)
    return w["position"] * position + w["heading"] * heading + w["speed"] * (x[3] - ref[3]) * (x[3] - ref[3])


def car_clearances(x: Any) -> list[Any]:
    """Each obstacle's squared distance (at least its radius squared)."""
    return [squared_distance(x, (ox, oy)) for ox, oy, _ in CAR_OBSTACLES]


def car_radii() -> np.ndarray:
    return np.array([r * r for _, _, r in CAR_OBSTACLES])


def car_state_bounds() -> tuple[np.ndarray, np.ndarray]:
    """``(x_lb, x_ub)`` by stage: the speed bounded after the start."""
    x_lb, x_ub = np.full((CAR_N + 1, CAR_NX), -np.inf), np.full((CAR_N + 1, CAR_NX), np.inf)
    x_lb[1:, 3], x_ub[1:, 3] = CAR_SPEED_LIMITS
    return x_lb, x_ub


def car_parameter() -> np.ndarray:
    """The solver's parameter: x_init, then each stage's reference."""
    return np.r_[CAR_START, car_reference().ravel()]


def car_guesses() -> list[np.ndarray]:
    """The example's guess (the reference's states, zero controls) and the start state held
    throughout (zero controls)."""
    ref = car_reference()
    example = np.concatenate([np.r_[ref[k], 0.0, 0.0] for k in range(CAR_N + 1)])
    held = np.tile(np.r_[CAR_START, 0.0, 0.0], CAR_N + 1)
    return [example, held]


def car_problem(name: str = "car") -> Any:
    """The car as ``MultistageProblem.from_dynamics`` (parameter: x_init and the references)."""
    import anvil as av
    from anvil.opti import MultistageProblem

    m = AnvilMath
    xup, xp = (av.Arg(CAR_NX), av.Arg(CAR_NU), av.Arg(CAR_NX)), (av.Arg(CAR_NX), av.Arg(CAR_NX))
    x_lb, x_ub = car_state_bounds()
    w = CAR_WEIGHTS["acceleration"]
    return MultistageProblem.from_dynamics(
        N=CAR_N,
        nx=CAR_NX,
        nu=CAR_NU,
        param_dim=CAR_NX,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, p: m.vec(car_step(x, u, m)), xup),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, p: car_tracking(x, p, m) + w * u[0] * u[0], xup),
        terminal_cost_fn=av.NumericalFunction(f"{name}_lf", lambda x, p: car_tracking(x, p, m), xp),
        path_constraints_fn=av.NumericalFunction(f"{name}_clear", lambda x, u, p: m.vec(car_clearances(x)), xup),
        path_lb=car_radii(),
        path_ub=np.inf,
        terminal_ineq_fn=av.NumericalFunction(f"{name}_clear_end", lambda x, p: m.vec(car_clearances(x)), xp),
        terminal_ineq_lb=car_radii(),
        terminal_ineq_ub=np.inf,
        x_lb=x_lb,
        x_ub=x_ub,
        u_lb=[-CAR_ACCELERATION, -CAR_STEER],
        u_ub=[CAR_ACCELERATION, CAR_STEER],
    )


def car_casadi() -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over the stacked z = (x_k, u_k) (the last control unused and
    bounded, as ``from_dynamics`` has it): ``(nlp, bounds)``."""
    import casadi as cs

    n, nz, inf = CAR_N, CAR_NX + CAR_NU, np.inf
    ref = car_reference()
    z = cs.SX.sym("z", (n + 1) * nz)
    xs = [z[k * nz : k * nz + CAR_NX] for k in range(n + 1)]
    us = [z[k * nz + CAR_NX : (k + 1) * nz] for k in range(n + 1)]
    w = CAR_WEIGHTS["acceleration"]
    f = sum(car_tracking(xs[k], ref[k], CasadiMath) + w * us[k][0] ** 2 for k in range(n))
    f += car_tracking(xs[n], ref[n], CasadiMath)
    rows = [xs[0] - CAR_START]
    rows += [xs[k + 1] - cs.vertcat(*car_step(xs[k], us[k], CasadiMath)) for k in range(n)]
    rows += [cs.vertcat(*car_clearances(xs[k])) for k in range(n + 1)]
    neq, radii = CAR_NX * (n + 1), car_radii()
    x_lb, x_ub = car_state_bounds()
    u_lb, u_ub = np.array([-CAR_ACCELERATION, -CAR_STEER]), np.array([CAR_ACCELERATION, CAR_STEER])
    bounds = {
        "lbx": np.concatenate([np.r_[x_lb[k], u_lb] for k in range(n + 1)]),
        "ubx": np.concatenate([np.r_[x_ub[k], u_ub] for k in range(n + 1)]),
        "lbg": np.r_[np.zeros(neq), np.tile(radii, n + 1)],
        "ubg": np.r_[np.zeros(neq), np.full(3 * (n + 1), inf)],
    }
    return {"x": z, "f": f, "g": cs.vertcat(*rows)}, bounds


def car_fatrop() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any, Any]:
    """The car as the example poses it to fatrop (variables x_0, u_0, ..., x_N; per point the
    dynamics, then the path rows: the start, the speed's and the controls' bounds as rows,
    the obstacles): ``(nlp, bounds, options, into, back)`` as ``motion_fatrop``'s."""
    import casadi as cs

    n, nx, nu, inf = CAR_N, CAR_NX, CAR_NU, np.inf
    ref = car_reference()
    xs = [cs.SX.sym(f"x{k}", nx) for k in range(n + 1)]
    us = [cs.SX.sym(f"u{k}", nu) for k in range(n)]
    w = CAR_WEIGHTS["acceleration"]
    variables, stages = [], FatropRows()
    cost: Any = 0.0
    for k in range(n + 1):
        x = xs[k]
        variables.append(x)
        cost = cost + car_tracking(x, ref[k], CasadiMath)
        path: list[tuple[Any, float, float]] = []
        if k == 0:
            path += [(x[i] - CAR_START[i], 0.0, 0.0) for i in range(nx)]
        else:
            path.append((x[3], *CAR_SPEED_LIMITS))
        if k < n:
            u = us[k]
            variables.append(u)
            cost = cost + w * u[0] ** 2
            stages.dynamics(xs[k + 1] - cs.vertcat(*car_step(x, u, CasadiMath)), nx)
            path += [(u[0], -CAR_ACCELERATION, CAR_ACCELERATION), (u[1], -CAR_STEER, CAR_STEER)]
        path += [(c, r, inf) for c, r in zip(car_clearances(x), car_radii())]
        stages.path(path)
    nlp = {"x": cs.vertcat(*variables), "f": cost, "g": cs.vertcat(*stages.rows)}
    size = (n + 1) * nx + n * nu
    bounds = {"lbx": np.full(size, -inf), "ubx": np.full(size, inf), "lbg": np.array(stages.lbg), "ubg": np.array(stages.ubg)}
    options = stages.options(nx, nu, n)

    def into(z: np.ndarray) -> np.ndarray:
        stages = z.reshape(n + 1, nx + nu)
        return np.concatenate([stages[k] if k < n else stages[k, :nx] for k in range(n + 1)])

    def back(v: np.ndarray) -> np.ndarray:
        return np.r_[v, 0.0, 0.0]

    return nlp, bounds, options, into, back


# --- acados' chain of masses -----------------------------------------------------------------

CHAIN_BALLS = 5
CHAIN_FREE = CHAIN_BALLS - 2  # the intermediate balls
CHAIN_NX, CHAIN_NU = (2 * CHAIN_FREE + 1) * 3, 3
CHAIN_N, CHAIN_TS, CHAIN_RK4_STEPS = 40, 0.2, 2
CHAIN_MASS, CHAIN_SPRING, CHAIN_REST_LENGTH = 0.033, 1.0, 0.033
CHAIN_WALL, CHAIN_U_MAX = -0.05, 1.0
CHAIN_END = np.array([CHAIN_REST_LENGTH * (CHAIN_FREE + 1) * 6, 0.0, 0.0])
CHAIN_PUSH = np.array([-1.0, 1.0, 1.0])


def chain_ode(x: Any, u: Any, m: Any) -> list[Any]:
    """The balls' velocities, the last one's (u), and the free balls' accelerations: gravity
    along z and the springs' forces D/m (1 - L/|d|) d on both balls of each spring."""
    free = CHAIN_FREE
    positions = [[x[3 * i + j] for j in range(3)] for i in range(free + 1)]
    velocities = [x[3 * (free + 1) + j] for j in range(3 * free)]
    acceleration: list[Any] = [-9.81 if j == 2 else 0.0 for _ in range(free) for j in range(3)]
    for i in range(free + 1):
        left = positions[i - 1] if i > 0 else [0.0, 0.0, 0.0]
        d = [positions[i][j] - left[j] for j in range(3)]
        scale = CHAIN_SPRING / CHAIN_MASS * (1.0 - CHAIN_REST_LENGTH / m.sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]))
        for j in range(3):
            if i < free:
                acceleration[3 * i + j] = acceleration[3 * i + j] - scale * d[j]
            if i > 0:
                acceleration[3 * (i - 1) + j] = acceleration[3 * (i - 1) + j] + scale * d[j]
    return velocities + [u[0], u[1], u[2]] + acceleration


def chain_step(x: Any, u: Any, m: Any) -> list[Any]:
    """One sampling time: two RK4 steps of 0.1 s."""
    return rk4(lambda s: chain_ode(s, u, m), x, CHAIN_NX, CHAIN_TS / CHAIN_RK4_STEPS, CHAIN_RK4_STEPS)


def chain_rest() -> np.ndarray:
    """The chain at rest with its last ball at (0.792, 0, 0): the free balls where the
    springs balance gravity."""
    from scipy.optimize import fsolve

    free = CHAIN_FREE

    def accelerations(p: np.ndarray) -> np.ndarray:
        x = np.r_[p, CHAIN_END, np.zeros(3 * free)]
        return np.array(chain_ode(x, np.zeros(CHAIN_NU), NumpyMath)[3 * (free + 1) :])

    guess = np.concatenate([CHAIN_END * (i + 1) / (free + 1) for i in range(free)])
    p, _, _, message = fsolve(accelerations, guess, full_output=True, xtol=1e-13)
    if not np.max(np.abs(accelerations(p))) <= 1e-9:
        raise RuntimeError(f"the chain's rest state was not found: {message}")
    return np.r_[p, CHAIN_END, np.zeros(3 * free)]


def chain_start() -> np.ndarray:
    """The example's start: rest, then 5 steps of u = (-1, 1, 1)."""
    x = chain_rest()
    for _ in range(5):
        x = np.array(chain_step(x, CHAIN_PUSH, NumpyMath))
    return x


def chain_cost(x: Any, u: Any, rest: np.ndarray) -> Any:
    """½ |x - rest|²_Q (+ ½ |u|²_R): Q = 2 diag(1, ..., the last ball's 4, ..., 1), R = 2e-2 I."""
    q = np.ones(CHAIN_NX)
    q[3 * CHAIN_FREE : 3 * CHAIN_FREE + 3] = CHAIN_FREE + 1
    cost = sum(q[i] * (x[i] - rest[i]) * (x[i] - rest[i]) for i in range(CHAIN_NX))
    if u is not None:
        cost = cost + sum(1e-2 * u[j] * u[j] for j in range(CHAIN_NU))
    return cost


def chain_state_bounds() -> tuple[np.ndarray, np.ndarray]:
    """``(x_lb, x_ub)``: every ball's y beyond the wall."""
    x_lb, x_ub = np.full(CHAIN_NX, -np.inf), np.full(CHAIN_NX, np.inf)
    x_lb[1 : 3 * (CHAIN_FREE + 1) : 3] = CHAIN_WALL
    return x_lb, x_ub


def chain_guesses() -> list[np.ndarray]:
    """The start held, and rest, over the horizon (zero controls)."""
    return [np.tile(np.r_[x, np.zeros(CHAIN_NU)], CHAIN_N + 1) for x in (chain_start(), chain_rest())]


def chain_problem(name: str = "chain_mass") -> Any:
    """The chain as ``MultistageProblem.from_dynamics`` (parameter: x_init, chain_start())."""
    import anvil as av
    from anvil.opti import MultistageProblem

    m, rest = AnvilMath, chain_rest()
    xup, xp = (av.Arg(CHAIN_NX), av.Arg(CHAIN_NU), av.Arg(0)), (av.Arg(CHAIN_NX), av.Arg(0))
    x_lb, x_ub = chain_state_bounds()
    return MultistageProblem.from_dynamics(
        N=CHAIN_N,
        nx=CHAIN_NX,
        nu=CHAIN_NU,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, p: m.vec(chain_step(x, u, m)), xup),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, p: chain_cost(x, u, rest), xup),
        terminal_cost_fn=av.NumericalFunction(f"{name}_lf", lambda x, p: chain_cost(x, None, rest), xp),
        x_lb=x_lb,
        x_ub=x_ub,
        u_lb=-CHAIN_U_MAX,
        u_ub=CHAIN_U_MAX,
    )


def chain_casadi() -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over the stacked z = (x_k, u_k) (the last control unused and
    bounded, as ``from_dynamics`` has it): ``(nlp, bounds)``, its rows the initial state and
    the steps (all equalities)."""
    import casadi as cs

    n, nx, nu = CHAIN_N, CHAIN_NX, CHAIN_NU
    nz = nx + nu
    rest, start = chain_rest(), chain_start()
    z = cs.SX.sym("z", (n + 1) * nz)
    xs = [z[k * nz : k * nz + nx] for k in range(n + 1)]
    us = [z[k * nz + nx : (k + 1) * nz] for k in range(n + 1)]
    f = sum(chain_cost(xs[k], us[k], rest) for k in range(n)) + chain_cost(xs[n], None, rest)
    steps = [xs[k + 1] - cs.vertcat(*chain_step(xs[k], us[k], CasadiMath)) for k in range(n)]
    x_lb, x_ub = chain_state_bounds()
    u_bound = np.full(nu, CHAIN_U_MAX)
    bounds = {
        "lbx": np.tile(np.r_[x_lb, -u_bound], n + 1),
        "ubx": np.tile(np.r_[x_ub, u_bound], n + 1),
        "lbg": 0.0,
        "ubg": 0.0,
    }
    return {"x": z, "f": f, "g": cs.vertcat(xs[0] - start, *steps)}, bounds


# --- CasADi's race car -----------------------------------------------------------------------

RACE_N, RACE_NX, RACE_NU = 100, 2, 1
RACE_NZ = RACE_NX + RACE_NU


def race_limit(position: Any, m: Any) -> Any:
    return 1.0 - m.sin(2.0 * math.pi * position) / 2.0


def race_step(x: Any, u: Any, t_final: Any, m: Any) -> list[Any]:
    """One RK4 step of T/N of ṗ = v, v̇ = u − v."""
    return rk4(lambda s: [s[1], u[0] - s[1]], x, RACE_NX, t_final / RACE_N)


def race_speeding(x: Any, m: Any) -> Any:
    """The speed over the limit (at most 0)."""
    return x[1] - race_limit(x[0], m)


def race_guesses() -> list[np.ndarray]:
    """``[z_0, …, z_N, T]``: the example's (speed 1, T = 1, the rest zero), and p from 0 to 1
    with speed and throttle 1/2, T = 2."""
    example = np.r_[np.tile([0.0, 1.0, 0.0], RACE_N + 1), 1.0]
    ramp = np.r_[np.concatenate([[k / RACE_N, 0.5, 0.5] for k in range(RACE_N + 1)]), 2.0]
    return [example, ramp]


def race_problem(name: str = "race") -> Any:
    """The race as ``from_dynamics`` (parameter: x_init, standstill at 0), T shared."""
    import anvil as av
    from anvil.opti import MultistageProblem

    m = AnvilMath
    xusp = (av.Arg(RACE_NX), av.Arg(RACE_NU), av.Arg(1), av.Arg(0))
    xsp = (av.Arg(RACE_NX), av.Arg(1), av.Arg(0))
    return MultistageProblem.from_dynamics(
        N=RACE_N,
        nx=RACE_NX,
        nu=RACE_NU,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, s, p: m.vec(race_step(x, u, s[0], m)), xusp),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, s, p: 0.0 * s[0], xusp),
        terminal_cost_fn=av.NumericalFunction(f"{name}_time", lambda x, s, p: s[0], xsp),
        path_constraints_fn=av.NumericalFunction(f"{name}_limit", lambda x, u, s, p: m.vec([race_speeding(x, m)]), xusp),
        path_lb=-np.inf,
        path_ub=0.0,
        terminal_ineq_fn=av.NumericalFunction(f"{name}_limit_end", lambda x, s, p: m.vec([race_speeding(x, m)]), xsp),
        terminal_ineq_lb=-np.inf,
        terminal_ineq_ub=0.0,
        terminal_constraints_fn=av.NumericalFunction(f"{name}_finish", lambda x, s, p: x[:1] - 1.0, xsp),
        u_lb=0.0,
        u_ub=1.0,
        shared_dim=1,
        shared_lb=0.0,
        shared_ub=np.inf,
    )


def race_spec() -> Any:
    """The same NLP over ``[z_0, …, z_N, T]`` as an ``opti_problems.Spec`` (the whole problem
    for anvil's sparse solvers, and through ``casadi_nlp`` for Ipopt): the start and the
    steps, the finish (equalities); the speed limit at every point."""
    from opti_problems import Spec

    n, nz, inf = RACE_N, RACE_NZ, np.inf

    def split(z: Any) -> tuple[Any, list[Any], list[Any]]:
        t_final = z[(n + 1) * nz]
        return t_final, [z[k * nz : k * nz + RACE_NX] for k in range(n + 1)], [z[k * nz + RACE_NX : (k + 1) * nz] for k in range(n + 1)]

    def eq(z: Any, m: Any) -> Any:
        t_final, xs, us = split(z)
        rows = [xs[0][0], xs[0][1]]
        for k in range(n):
            nxt = race_step(xs[k], us[k], t_final, m)
            rows += [xs[k + 1][i] - nxt[i] for i in range(RACE_NX)]
        return m.vec(rows + [xs[n][0] - 1.0])

    def ineq(z: Any, m: Any) -> Any:
        _, xs, _ = split(z)
        return m.vec([race_speeding(xs[k], m) for k in range(n + 1)])

    return Spec(
        name="race",
        n=(n + 1) * nz + 1,
        x0=list(race_guesses()[0]),
        cost=lambda z, m: z[(n + 1) * nz],
        eq=eq,
        ineq=ineq,
        ineq_lb=-inf,
        ineq_ub=0.0,
        x_lb=np.r_[np.tile([-inf, -inf, 0.0], n + 1), 0.0],
        x_ub=np.r_[np.tile([inf, inf, 1.0], n + 1), inf],
        large=True,
    )


def race_fatrop() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], Any, Any]:
    """The race in fatrop's form, T a state of each stage (T_{k+1} = T_k), as
    ``motion_fatrop``'s: ``(nlp, bounds, options, into, back)``."""
    import casadi as cs

    n, nx, nu, inf = RACE_N, RACE_NX + 1, RACE_NU, np.inf
    xs = [cs.SX.sym(f"x{k}", nx) for k in range(n + 1)]
    us = [cs.SX.sym(f"u{k}", nu) for k in range(n)]
    variables, lbx, ubx, stages = [], [], [], FatropRows()
    for k in range(n + 1):
        x = xs[k]
        variables.append(x)
        lbx.append([-inf, -inf, 0.0])
        ubx.append([inf, inf, inf])
        path: list[tuple[Any, float, float]] = [(x[i], 0.0, 0.0) for i in range(RACE_NX)] if k == 0 else []
        path.append((race_speeding(x, CasadiMath), -inf, 0.0))
        if k == n:
            path.append((x[0] - 1.0, 0.0, 0.0))
        else:
            variables.append(us[k])
            lbx.append([0.0])
            ubx.append([1.0])
            stages.dynamics(xs[k + 1] - cs.vertcat(*race_step(x, us[k], x[RACE_NX], CasadiMath), x[RACE_NX]), nx)
        stages.path(path)
    nlp = {"x": cs.vertcat(*variables), "f": xs[n][RACE_NX], "g": cs.vertcat(*stages.rows)}
    bounds = {"lbx": np.concatenate(lbx), "ubx": np.concatenate(ubx), "lbg": np.array(stages.lbg), "ubg": np.array(stages.ubg)}
    options = stages.options(nx, nu, n)

    into, back = free_time_maps(n, RACE_NX, nu)
    return nlp, bounds, options, into, back


# --- CasADi's Van der Pol oscillator -----------------------------------------------------------

VDP_N, VDP_T, VDP_RK4_STEPS = 20, 10.0, 4
VDP_NX, VDP_NU = 2, 1
VDP_START = np.array([0.0, 1.0])


def vdp_ode(s: list[Any], u: Any) -> list[Any]:
    """ẋ₁ = (1 − x₂²) x₁ − x₂ + u, ẋ₂ = x₁, and the cost's integrand x₁² + x₂² + u²."""
    return [(1.0 - s[1] * s[1]) * s[0] - s[1] + u, s[0], s[0] * s[0] + s[1] * s[1] + u * u]


def vdp_interval(x: Any, u: Any) -> list[Any]:
    """One interval of T/N: four RK4 steps of the states and the cost's quadrature (the
    example's fixed-step integrator): ``[x₁, x₂, q]``."""
    return rk4(lambda s: vdp_ode(s, u), [x[0], x[1], 0.0], VDP_NX + 1, VDP_T / VDP_N / VDP_RK4_STEPS, VDP_RK4_STEPS)


def vdp_bounds(to_rest: bool) -> tuple[np.ndarray, np.ndarray, float, float]:
    """``(x_lb, x_ub, u_lb, u_ub)``: x₁ ≥ −0.25 and |u| ≤ 1 (the multiple-shooting example), or
    −0.75 ≤ u ≤ 1 and no state bound (the DAE example, which ends at rest)."""
    inf = np.inf
    if to_rest:
        return np.full(VDP_NX, -inf), np.full(VDP_NX, inf), -0.75, 1.0
    return np.array([-0.25, -inf]), np.full(VDP_NX, inf), -1.0, 1.0


def vdp_guesses() -> list[np.ndarray]:
    """The example's (zero but the start), and the start held (zero controls)."""
    example = np.zeros((VDP_N + 1) * (VDP_NX + VDP_NU))
    example[:VDP_NX] = VDP_START
    held = np.tile(np.r_[VDP_START, 0.0], VDP_N + 1)
    return [example, held]


def vdp_problem(name: str = "vdp", to_rest: bool = False) -> Any:
    """The oscillator as ``from_dynamics`` (parameter: x_init, ``VDP_START``); ``to_rest``: the
    DAE example's variant, which must end at x = 0."""
    import anvil as av
    from anvil.opti import MultistageProblem

    xup, xp = (av.Arg(VDP_NX), av.Arg(VDP_NU), av.Arg(0)), (av.Arg(VDP_NX), av.Arg(0))
    x_lb, x_ub, u_lb, u_ub = vdp_bounds(to_rest)
    m = AnvilMath
    ends = {"terminal_constraints_fn": av.NumericalFunction(f"{name}_rest", lambda x, p: x + 0.0, xp)} if to_rest else {}
    return MultistageProblem.from_dynamics(
        N=VDP_N,
        nx=VDP_NX,
        nu=VDP_NU,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, p: m.vec(vdp_interval(x, u[0])[:VDP_NX]), xup),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, p: vdp_interval(x, u[0])[VDP_NX], xup),
        terminal_cost_fn=av.NumericalFunction(f"{name}_lf", lambda x, p: 0.0 * x[0], xp),
        x_lb=x_lb,
        x_ub=x_ub,
        u_lb=u_lb,
        u_ub=u_ub,
        **ends,
    )


def vdp_casadi(to_rest: bool = False) -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over the stacked z = (x_k, u_k), as ``chain_casadi``'s: its rows
    the initial state, the steps and (``to_rest``) the end (all equalities)."""
    import casadi as cs

    n, nx, nu = VDP_N, VDP_NX, VDP_NU
    nz = nx + nu
    z = cs.SX.sym("z", (n + 1) * nz)
    xs = [z[k * nz : k * nz + nx] for k in range(n + 1)]
    us = [z[k * nz + nx] for k in range(n + 1)]
    intervals = [vdp_interval(xs[k], us[k]) for k in range(n)]
    rows = [xs[0] - VDP_START] + [xs[k + 1] - cs.vertcat(*intervals[k][:nx]) for k in range(n)]
    if to_rest:
        rows.append(xs[n])
    x_lb, x_ub, u_lb, u_ub = vdp_bounds(to_rest)
    bounds = {
        "lbx": np.tile(np.r_[x_lb, u_lb], n + 1),
        "ubx": np.tile(np.r_[x_ub, u_ub], n + 1),
        "lbg": 0.0,
        "ubg": 0.0,
    }
    return {"x": z, "f": sum(interval[nx] for interval in intervals), "g": cs.vertcat(*rows)}, bounds


# --- acados' pendulum on a cart (its getting-started example) -------------------------------

PENDULUM_N, PENDULUM_T, PENDULUM_F_MAX = 20, 1.0, 80.0
PENDULUM_NX, PENDULUM_NU = 4, 1
PENDULUM_START = np.array([0.0, math.pi, 0.0, 0.0])
PENDULUM_Q = 2.0 * np.array([1e3, 1e3, 1e-2, 1e-2])
PENDULUM_R = 2.0 * 1e-2


def pendulum_ode(x: Any, u: Any, m: Any) -> list[Any]:
    """The cart's position and speed, the pole's angle and rate (x, θ, v, θ̇) under the force F:
    cart 1 kg, ball 0.1 kg, rod 0.8 m (acados' ``export_pendulum_ode_model``)."""
    m_cart, m_ball, g, rod = 1.0, 0.1, 9.81, 0.8
    cos, sin = m.cos(x[1]), m.sin(x[1])
    denominator = m_cart + m_ball - m_ball * cos * cos
    rate2 = x[3] * x[3]
    return [
        x[2],
        x[3],
        (-m_ball * rod * sin * rate2 + m_ball * g * cos * sin + u) / denominator,
        (-m_ball * rod * cos * sin * rate2 + u * cos + (m_cart + m_ball) * g * sin) / (rod * denominator),
    ]


def pendulum_step(x: Any, u: Any, m: Any) -> list[Any]:
    """One interval of T/N: an RK4 step."""
    return rk4(lambda s: pendulum_ode(s, u, m), x, PENDULUM_NX, PENDULUM_T / PENDULUM_N)


def pendulum_cost(x: Any, u: Any) -> Any:
    """x'Qx + u'Ru, the stages' weighted by the interval (acados scales its stage costs by the
    time step), the terminal one not."""
    cost = sum(PENDULUM_Q[i] * x[i] * x[i] for i in range(PENDULUM_NX))
    if u is None:
        return cost
    return (cost + PENDULUM_R * u * u) * (PENDULUM_T / PENDULUM_N)


def pendulum_guesses() -> list[np.ndarray]:
    """acados' default (every state and control zero), and the start held (hanging, no force)."""
    nz = PENDULUM_NX + PENDULUM_NU
    return [np.zeros((PENDULUM_N + 1) * nz), np.tile(np.r_[PENDULUM_START, 0.0], PENDULUM_N + 1)]


def pendulum_problem(name: str = "pendulum") -> Any:
    """The swing-up as ``from_dynamics`` (parameter: x_init, ``PENDULUM_START``)."""
    import anvil as av
    from anvil.opti import MultistageProblem

    m = AnvilMath
    xup, xp = (av.Arg(PENDULUM_NX), av.Arg(PENDULUM_NU), av.Arg(0)), (av.Arg(PENDULUM_NX), av.Arg(0))
    return MultistageProblem.from_dynamics(
        N=PENDULUM_N,
        nx=PENDULUM_NX,
        nu=PENDULUM_NU,
        dynamics_fn=av.NumericalFunction(f"{name}_f", lambda x, u, p: m.vec(pendulum_step(x, u[0], m)), xup),
        stage_cost_fn=av.NumericalFunction(f"{name}_l", lambda x, u, p: pendulum_cost(x, u[0]), xup),
        terminal_cost_fn=av.NumericalFunction(f"{name}_lf", lambda x, p: pendulum_cost(x, None), xp),
        u_lb=-PENDULUM_F_MAX,
        u_ub=PENDULUM_F_MAX,
    )


def pendulum_casadi() -> tuple[dict[str, Any], dict[str, Any]]:
    """The same NLP in CasADi over the stacked z = (x_k, u_k), as ``chain_casadi``'s."""
    import casadi as cs

    n, nx, nu = PENDULUM_N, PENDULUM_NX, PENDULUM_NU
    nz = nx + nu
    z = cs.SX.sym("z", (n + 1) * nz)
    xs = [z[k * nz : k * nz + nx] for k in range(n + 1)]
    us = [z[k * nz + nx] for k in range(n + 1)]
    f = sum(pendulum_cost(xs[k], us[k]) for k in range(n)) + pendulum_cost(xs[n], None)
    rows = [xs[0] - PENDULUM_START] + [xs[k + 1] - cs.vertcat(*pendulum_step(xs[k], us[k], CasadiMath)) for k in range(n)]
    bounds = {
        "lbx": np.tile(np.r_[np.full(nx, -np.inf), -PENDULUM_F_MAX], n + 1),
        "ubx": np.tile(np.r_[np.full(nx, np.inf), PENDULUM_F_MAX], n + 1),
        "lbg": 0.0,
        "ubg": 0.0,
    }
    return {"x": z, "f": f, "g": cs.vertcat(*rows)}, bounds

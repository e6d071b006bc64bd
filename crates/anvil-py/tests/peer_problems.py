"""The peers' own examples, written from their published descriptions: problems their authors
chose to show their solvers on, which nobody here tuned for.

- ``quadrotor``: fatrop's quadrotor example (meco-group/fatrop, ``examples/ocp_quadrotor_example.py``):
  a 12-state quadrotor (position, velocity, roll-pitch-yaw Euler angles, body rates) driven by
  its four rotor speeds ω ∈ [0, 600], from hover at the origin to hover at (5, 5, 2) in 5 s on
  K = 100 grid points (N = 99 explicit Euler steps of T/K), roll and pitch within ±π/4,
  minimising Σ_k Σ_j (ω_j / ω_max)². The example's initial guess interpolates the states from
  start to end (plus 0.1) with the rotors at hover speed.

Each problem comes as an anvil ``MultistageProblem`` (``from_dynamics``) and as the same NLP in
CasADi (the z-form ``z_k = (x_k, u_k)``, the last stage's control unused and bounded, as
``from_dynamics`` has it), which Ipopt and fatrop solve in the tests and the benchmark.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from opti_problems import AnvilMath, CasadiMath

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

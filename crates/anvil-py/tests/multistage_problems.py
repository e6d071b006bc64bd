"""Multistage (optimal control) problems, written once for anvil and for CasADi.

The cart-pole swing-up of the benchmark: state (p, θ, v, ω) with θ = 0 hanging and θ = π
upright, force u on a cart of mass M = 1 carrying a point mass m = 0.1 at l = 0.5; one RK4
step of dt = 0.05 per interval, N = 50, |u| <= 20, cost
``sum_{k<N} dt (e_k'Q e_k + R u_k^2) + e_N'Q_N e_N`` with ``e = x - (0, π, 0, 0)``. From
``x_init = 0`` and the zero guess its optimum is J* = 34.00324653 (Ipopt, fatrop and
sqpmethod agree). The formulas take a math namespace (``AnvilMath`` or ``CasadiMath`` from
opti_problems.py) so the same text builds an anvil graph and a CasADi expression; the tests
(test_multistage.py) and the benchmark share them.
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

DT = 0.05
N = 50
NX, NU = 4, 1
U_MAX = 20.0
TARGET = (0.0, math.pi, 0.0, 0.0)
Q = (1.0, 10.0, 0.1, 0.1)
R = 0.01
Q_N = (10.0, 100.0, 10.0, 10.0)
#: The known optimum from x_init = 0 and the zero guess.
J_STAR = 34.00324653

_M_CART, _M_POLE, _L, _G = 1.0, 0.1, 0.5, 9.81


def cartpole_ode(x: Any, u: Any, m: Any) -> Any:
    """The continuous dynamics (p, θ, v, ω)' of the cart-pole under the force u[0]."""
    theta, v, omega = x[1], x[2], x[3]
    s, c = m.sin(theta), m.cos(theta)
    force = u[0]
    den = _M_CART + _M_POLE * s**2
    pdd = (force + _M_POLE * s * (_L * omega**2 + _G * c)) / den
    thdd = (-force * c - _M_POLE * _L * omega**2 * c * s - (_M_CART + _M_POLE) * _G * s) / (_L * den)
    return m.vec([v, omega, pdd, thdd])


def cartpole_step(x: Any, u: Any, m: Any) -> Any:
    """One RK4 step of length DT."""
    k1 = cartpole_ode(x, u, m)
    k2 = cartpole_ode(x + (DT / 2) * k1, u, m)
    k3 = cartpole_ode(x + (DT / 2) * k2, u, m)
    k4 = cartpole_ode(x + DT * k3, u, m)
    return x + (DT / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def _weighted(x: Any, weights: tuple[float, ...]) -> Any:
    return sum(w * (x[i] - t) ** 2 for i, (w, t) in enumerate(zip(weights, TARGET)))


def cartpole_stage_cost(x: Any, u: Any) -> Any:
    """``dt (e'Q e + R u^2)``."""
    return DT * (_weighted(x, Q) + R * u[0] ** 2)


def cartpole_terminal_cost(x: Any) -> Any:
    """``e'Q_N e``."""
    return _weighted(x, Q_N)


def cartpole_from_dynamics(n: Any = N, name: str = "cp") -> Any:
    """The swing-up as ``MultistageProblem.from_dynamics`` (``n``: an int or a
    CodegenIntConstant)."""
    import anvil as av
    from anvil.opti import MultistageProblem
    from opti_problems import AnvilMath as m

    xup = (av.Arg(NX), av.Arg(NU), av.Arg(0))
    f = av.NumericalFunction(f"{name}_rk4", lambda x, u, p: cartpole_step(x, u, m), xup)
    l = av.NumericalFunction(f"{name}_l", lambda x, u, p: cartpole_stage_cost(x, u), xup)
    lf = av.NumericalFunction(f"{name}_lf", lambda x, p: cartpole_terminal_cost(x), (av.Arg(NX), av.Arg(0)))
    return MultistageProblem.from_dynamics(
        N=n, nx=NX, nu=NU, dynamics_fn=f, stage_cost_fn=l, terminal_cost_fn=lf, u_lb=-U_MAX, u_ub=U_MAX
    )


def cartpole_z_form(n: int = N, name: str = "cpz") -> Any:
    """The same problem written by hand in the z-form: ``z = (x, u)``, ``p_global = x_init``,
    the initial cost on stage 0 and the stage cost on stages 1..N-1."""
    import anvil as av
    from anvil.opti import MultistageProblem
    from opti_problems import AnvilMath as m

    nz = NX + NU
    stage = (av.Arg(nz), av.Arg(NX), av.Arg(0))
    cost = lambda z, g, p: cartpole_stage_cost(z[:NX], z[NX:])  # noqa: E731
    return MultistageProblem(
        N=n,
        nz=nz,
        cost_initial_fn=av.NumericalFunction(f"{name}_l0", cost, stage),
        cost_stage_fn=av.NumericalFunction(f"{name}_l", cost, stage),
        cost_terminal_fn=av.NumericalFunction(f"{name}_lf", lambda z, g, p: cartpole_terminal_cost(z[:NX]), stage),
        eq_initial_fn=av.NumericalFunction(f"{name}_start", lambda z, g, p: z[:NX] - g, stage),
        eq_interstage_fn=av.NumericalFunction(
            f"{name}_dyn",
            lambda z, zn, g, p: zn[:NX] - cartpole_step(z[:NX], z[NX:], m),
            (av.Arg(nz), av.Arg(nz), av.Arg(NX), av.Arg(0)),
        ),
        z_lb=[-np.inf] * NX + [-U_MAX],
        z_ub=[np.inf] * NX + [U_MAX],
        global_param_dim=NX,
    )


def cartpole_casadi(n: int = N, x_init: Optional[np.ndarray] = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """The swing-up as one CasADi NLP over the stacked ``z = (x_k, u_k)`` (z_N's control
    bounded and unused, as in ``from_dynamics``), its constraints the initial state, then the
    dynamics step by step: ``(nlp, bounds)`` for ``nlpsol``."""
    import casadi as cs
    from opti_problems import CasadiMath as m

    nz = NX + NU
    x0 = np.zeros(NX) if x_init is None else np.asarray(x_init, dtype=float)
    z = cs.SX.sym("z", (n + 1) * nz)
    xs = [z[k * nz : k * nz + NX] for k in range(n + 1)]
    us = [z[k * nz + NX : (k + 1) * nz] for k in range(n + 1)]
    f = sum(cartpole_stage_cost(xs[k], us[k]) for k in range(n)) + cartpole_terminal_cost(xs[n])
    g = cs.vertcat(xs[0] - x0, *[xs[k + 1] - cartpole_step(xs[k], us[k], m) for k in range(n)])
    lbx = np.tile([-np.inf] * NX + [-U_MAX], n + 1)
    ubx = np.tile([np.inf] * NX + [U_MAX], n + 1)
    return {"x": z, "f": f, "g": g}, {"lbx": lbx, "ubx": ubx, "lbg": 0.0, "ubg": 0.0}

"""Cart-pole swing-up with anvil's multistage solver in the loop (model predictive control).

The plant is simulated: every 50 ms the controller measures the state, solves the optimal
control problem over the next 2.5 s (N = 50 RK4 intervals, |u| <= 20) with the measured
state as the initial one, applies the first force, and the plant moves on. The first solve
runs to convergence from the hanging pole; every later one is a real-time iteration (one
Gauss-Newton SQP step) warm-started from the previous solution shifted by one stage.

    .venv/bin/python examples/cartpole_mpc.py [--steps 100] [--out cartpole_mpc.png]

prints the time per real-time iteration and, with --out, saves a plot of states and force
(which needs matplotlib: pip install matplotlib).
"""

from __future__ import annotations

import argparse
import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

import anvil as av
from anvil.opti import MultistageProblem, SparseSQPFunction, SQPSettings, HessianApproximation

DT, N = 0.05, 50
U_MAX = 20.0
UPRIGHT = np.array([0.0, math.pi, 0.0, 0.0])
Q, R, Q_N = np.array([1.0, 10.0, 0.1, 0.1]), 0.01, np.array([10.0, 100.0, 10.0, 10.0])


class _Tensors:
    """The operations the model needs, on anvil Tensors (for the controller's model)."""

    sin = staticmethod(lambda t: t.sin())
    cos = staticmethod(lambda t: t.cos())
    stack = staticmethod(lambda items: av.Tensor.stack(*items))


class _Floats:
    """The same on numpy floats (for the simulated plant)."""

    sin, cos, stack = np.sin, np.cos, staticmethod(np.array)


def ode(x: Any, u: Any, m: Any) -> Any:
    """(p, θ, v, ω)': a cart of 1 kg with a 0.1 kg point mass on a 0.5 m massless rod."""
    m_cart, m_pole, length, g = 1.0, 0.1, 0.5, 9.81
    theta, v, omega = x[1], x[2], x[3]
    s, c = m.sin(theta), m.cos(theta)
    den = m_cart + m_pole * s**2
    pdd = (u[0] + m_pole * s * (length * omega**2 + g * c)) / den
    thdd = (-u[0] * c - m_pole * length * omega**2 * c * s - (m_cart + m_pole) * g * s) / (length * den)
    return m.stack([v, omega, pdd, thdd])


def rk4(x: Any, u: Any, m: Any) -> Any:
    """One RK4 step of DT."""
    k1 = ode(x, u, m)
    k2 = ode(x + (DT / 2) * k1, u, m)
    k3 = ode(x + (DT / 2) * k2, u, m)
    k4 = ode(x + DT * k3, u, m)
    return x + (DT / 6) * (k1 + 2.0 * k2 + 2.0 * k3 + k4)


def controller(n: int = N) -> tuple[MultistageProblem, SparseSQPFunction]:
    """The swing-up problem and its solver (Gauss-Newton, anvil's Riccati QP)."""
    xup = (av.Arg(4), av.Arg(1), av.Arg(0))
    target = av.Tensor(UPRIGHT)
    stage_cost = av.NumericalFunction(
        "mpc_l", lambda x, u, p: DT * ((((x - target) ** 2) * av.Tensor(Q)).sum() + R * (u**2).sum()), xup
    )
    terminal_cost = av.NumericalFunction(
        "mpc_lf", lambda x, p: (((x - target) ** 2) * av.Tensor(Q_N)).sum(), (av.Arg(4), av.Arg(0))
    )
    dynamics = av.NumericalFunction("mpc_rk4", lambda x, u, p: rk4(x, u, _Tensors), xup)
    problem = MultistageProblem.from_dynamics(
        N=n, nx=4, nu=1, dynamics_fn=dynamics, stage_cost_fn=stage_cost, terminal_cost_fn=terminal_cost,
        u_lb=-U_MAX, u_ub=U_MAX,
    )
    settings = SQPSettings(max_iter=100, hessian_approximation=HessianApproximation.GAUSS_NEWTON)
    return problem, SparseSQPFunction(name="cartpole_mpc", problem=problem, settings=settings)


@dataclass
class ClosedLoop:
    """What happened: states (steps + 1, 4), forces (steps,), native seconds per real-time
    iteration, and the first (converged) solve's iterations and seconds."""

    t: np.ndarray
    states: np.ndarray
    forces: np.ndarray
    rti_seconds: np.ndarray
    first_iterations: int
    first_seconds: float


def run(steps: int = 100, n: int = N) -> ClosedLoop:
    """Simulates `steps` control intervals from the hanging pole at rest."""
    problem, solver = controller(n)
    x = np.zeros(4)
    res = solver(np.zeros(problem.nvars), p=x)
    first = (res.iterations, res.solve_time)
    solver.settings = SQPSettings.real_time_iteration()
    states, forces, seconds = [x], [], []
    for _ in range(steps):
        u = float(res.U[0, 0])
        x = rk4(x, np.array([u]), _Floats)
        states.append(x)
        forces.append(u)
        res = solver(p=x, warm_start=problem.shift(res))
        seconds.append(res.solve_time)
    return ClosedLoop(
        t=DT * np.arange(steps + 1),
        states=np.array(states),
        forces=np.array(forces),
        rti_seconds=np.array(seconds),
        first_iterations=first[0],
        first_seconds=first[1],
    )


def plot(loop: ClosedLoop, path: str) -> None:
    """States and force over time, saved as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(3, 1, figsize=(7, 6.5), sharex=True)
    axes[0].plot(loop.t, loop.states[:, 1], label="θ (rad)")
    axes[0].axhline(math.pi, color="gray", lw=0.8, ls="--", label="upright")
    axes[0].plot(loop.t, loop.states[:, 0], label="cart position (m)")
    axes[0].legend(loc="lower right")
    axes[1].plot(loop.t, loop.states[:, 2], label="cart velocity (m/s)")
    axes[1].plot(loop.t, loop.states[:, 3], label="ω (rad/s)")
    axes[1].legend(loc="upper right")
    axes[2].step(loop.t[:-1], loop.forces, where="post", label="force u (N)")
    for bound in (-U_MAX, U_MAX):
        axes[2].axhline(bound, color="gray", lw=0.8, ls="--")
    axes[2].set_xlabel("time (s)")
    axes[2].legend(loc="upper right")
    median_us = 1e6 * float(np.median(loop.rti_seconds))
    axes[0].set_title(f"cart-pole swing-up, MPC with anvil (N = 50, RTI {median_us:.0f} µs per step)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--out", default=None, help="save a plot here (needs matplotlib)")
    args = parser.parse_args()
    if args.out is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            parser.error("--out needs matplotlib (pip install matplotlib); without --out, no plot is drawn")
    start = time.perf_counter()
    loop = run(args.steps)
    print(f"first solve: {loop.first_iterations} SQP iterations, {1e3 * loop.first_seconds:.2f} ms")
    rti = 1e6 * loop.rti_seconds
    print(f"real-time iteration: median {np.median(rti):.0f} µs, max {rti.max():.0f} µs over {args.steps} steps")
    final = loop.states[-1]
    print(f"final state: p = {final[0]:.3f} m, θ = {final[1]:.4f} rad (π = {math.pi:.4f}), "
          f"v = {final[2]:.3f} m/s, ω = {final[3]:.3f} rad/s")
    if args.out is not None:
        plot(loop, args.out)
        print(f"saved {args.out}")
    print(f"{time.perf_counter() - start:.1f} s in all")


if __name__ == "__main__":
    main()

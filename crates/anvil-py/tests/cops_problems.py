"""Optimal-control problems of the COPS 3.0 collection (E. D. Dolan, J. J. Moré, T. S. Munson,
"Benchmarking optimization software with COPS 3.0", Argonne ANL/MCS-TM-273, 2004), written
from the report as whole-problem NLPs: the same trapezoidal discretisation on `N` intervals,
the report's initial guess and a second, plainer one. Each is an opti_problems.Spec, so the
same formula builds the anvil problem and the CasADi one (the oracle: Ipopt).

Variables are stacked by trajectory: every state's N + 1 values, then every control's, then
the final time where it is free.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from opti_problems import INF, Spec


def _trapezoid(x: Any, f: Any, h: Any) -> Any:
    """The trapezoidal rule's defects x[k+1] - x[k] - h/2 (f[k] + f[k+1])."""
    return x[1:] - x[:-1] - 0.5 * h * (f[1:] + f[:-1])


def _split(z: Any, n: int, count: int) -> list[Any]:
    """The first `count` trajectories of n values in z."""
    return [z[i * n : (i + 1) * n] for i in range(count)]


def catalyst_mixing(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Catalyst mixing (COPS §14): the mixing policy u of two catalysts along a reactor,
    x1' = u (10 x2 - x1), x2' = u (x1 - 10 x2) - (1 - u) x2, x(0) = (1, 0), 0 <= u <= 1,
    maximising the yield: min -1 + x1(1) + x2(1). Reported optimum -4.8056e-2."""
    n, h = N + 1, 1.0 / N

    def parts(z: Any) -> list[Any]:
        return _split(z, n, 3)

    def eq(z: Any, m: Any) -> Any:
        x1, x2, u = parts(z)
        f1 = u * (10.0 * x2 - x1)
        f2 = u * (x1 - 10.0 * x2) - (1.0 - u) * x2
        return m.cat([_trapezoid(x1, f1, h), _trapezoid(x2, f2, h), m.vec([x1[0] - 1.0, x2[0]])])

    x_lb = np.concatenate([np.full(2 * n, -INF), np.zeros(n)])
    x_ub = np.concatenate([np.full(2 * n, INF), np.ones(n)])
    cops = np.concatenate([np.ones(n), np.zeros(n), np.zeros(n)])
    plain = np.concatenate([np.ones(n), np.zeros(n), np.full(n, 0.5)])
    spec = Spec(
        name=f"catmix{N}",
        n=3 * n,
        x0=list(cops),
        cost=lambda z, m: z[n - 1] + z[2 * n - 1] - 1.0,
        eq=eq,
        x_lb=x_lb,
        x_ub=x_ub,
        f_opt=-4.8056e-2,
        large=True,
    )
    return spec, [cops, plain]


def particle_steering(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Particle steering (COPS §12): a particle accelerated by a thrust of magnitude a = 100 in
    the direction u reaches y2 = 5 with velocity (45, 0) in minimum time, from rest at the
    origin. Reported optimum t_f = 0.55457."""
    n, a = N + 1, 100.0

    def parts(z: Any) -> tuple[list[Any], Any]:
        return _split(z, n, 5), z[5 * n]

    def eq(z: Any, m: Any) -> Any:
        (y1, y2, y3, y4, u), tf = parts(z)
        h = tf / N
        defects = [
            _trapezoid(y1, y3, h),
            _trapezoid(y2, y4, h),
            _trapezoid(y3, a * m.cos(u), h),
            _trapezoid(y4, a * m.sin(u), h),
        ]
        ends = m.vec([y1[0], y2[0], y3[0], y4[0], y2[N] - 5.0, y3[N] - 45.0, y4[N]])
        return m.cat(defects + [ends])

    t = np.linspace(0.0, 1.0, n)
    x_lb = np.concatenate([np.full(4 * n, -INF), np.full(n, -math.pi / 2), [0.0]])
    x_ub = np.concatenate([np.full(4 * n, INF), np.full(n, math.pi / 2), [INF]])
    # The report's guess: states between their boundary values, no steering, t_f = 1.
    cops = np.concatenate([np.zeros(n), 5.0 * t, 45.0 * t, np.zeros(n), np.zeros(n), [1.0]])
    plain = np.concatenate([np.zeros(5 * n), [1.0]])
    spec = Spec(
        name=f"steering{N}",
        n=5 * n + 1,
        x0=list(cops),
        cost=lambda z, m: z[5 * n],
        eq=eq,
        x_lb=x_lb,
        x_ub=x_ub,
        f_opt=0.55457,
        large=True,
    )
    return spec, [cops, plain]


def hanging_chain(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Hanging chain (COPS §3): the chain of length L = 4 between heights a = 1 and b = 3 of
    least potential energy, x1' = u, x2' = x1 sqrt(1 + u^2) (energy), x3' = sqrt(1 + u^2)
    (length), x3(1) = L. Reported optimum 5.06852."""
    n, h, a, b, length = N + 1, 1.0 / N, 1.0, 3.0, 4.0

    def eq(z: Any, m: Any) -> Any:
        x1, x2, x3, u = _split(z, n, 4)
        arc = m.sqrt(1.0 + u * u)
        defects = [_trapezoid(x1, u, h), _trapezoid(x2, x1 * arc, h), _trapezoid(x3, arc, h)]
        ends = m.vec([x1[0] - a, x1[N] - b, x2[0], x3[0], x3[N] - length])
        return m.cat(defects + [ends])

    t = np.linspace(0.0, 1.0, n)
    # The report's guess: a parabola with its minimum at t = 1/4.
    tmin = 0.25
    x1 = 2.0 * abs(b - a) * t * (t - 2.0 * tmin) + a
    u = 4.0 * abs(b - a) * (t - tmin)
    cops = np.concatenate([x1, a * t, length * t, u])
    plain = np.concatenate([a + (b - a) * t, np.zeros(n), length * t, np.full(n, b - a)])
    spec = Spec(
        name=f"chain_cops{N}",
        n=4 * n,
        x0=list(cops),
        cost=lambda z, m: z[2 * n - 1],
        eq=eq,
        f_opt=5.06852,
        large=True,
    )
    return spec, [cops, plain]


def goddard_rocket(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Goddard rocket (COPS §10): the thrust T that maximises the final altitude of a rocket
    with drag D = Dc v^2 exp(-hc (h - h0) / h0) and gravity g0 (h0 / h)^2, fuel m from 1 to
    0.6, free final time (normalised units). Reported optimum h(t_f) = 1.01283."""
    n = N + 1
    h0, v0, m0, g0, tc, hc, vc, mc = 1.0, 0.0, 1.0, 1.0, 3.5, 500.0, 620.0, 0.6
    c = 0.5 * math.sqrt(g0 * h0)
    mf, dc, tmax = mc * m0, 0.5 * vc * m0 / g0, tc * g0 * m0

    def eq(z: Any, m: Any) -> Any:
        alt, vel, mass, thrust = _split(z, n, 4)
        step = z[4 * n] / N
        drag = dc * vel * vel * m.exp(-hc * (alt - h0) / h0)
        gravity = g0 * (h0 / alt) * (h0 / alt)
        defects = [
            _trapezoid(alt, vel, step),
            _trapezoid(vel, (thrust - drag) / mass - gravity, step),
            _trapezoid(mass, -thrust / c, step),
        ]
        ends = m.vec([alt[0] - h0, vel[0] - v0, mass[0] - m0, mass[N] - mf])
        return m.cat(defects + [ends])

    t = np.linspace(0.0, 1.0, n)
    x_lb = np.concatenate([np.full(n, h0), np.zeros(n), np.full(n, mf), np.zeros(n), [0.0]])
    x_ub = np.concatenate([np.full(n, INF), np.full(n, INF), np.full(n, m0), np.full(n, tmax), [INF]])
    # The report's guess: a rising velocity profile, linear fuel, half thrust, t_f = 1.
    cops = np.concatenate([np.ones(n), t * (1.0 - t), (mf - m0) * t + m0, np.full(n, tmax / 2), [1.0]])
    plain = np.concatenate([np.ones(n), np.zeros(n), np.full(n, m0), np.full(n, tmax), [0.5]])
    spec = Spec(
        name=f"rocket{N}",
        n=4 * n + 1,
        x0=list(cops),
        cost=lambda z, m: -z[n - 1],
        eq=eq,
        x_lb=x_lb,
        x_ub=x_ub,
        f_opt=-1.01283,
        large=True,
    )
    return spec, [cops, plain]


#: Each problem by name, as a function of the number of intervals N.
PROBLEMS: dict[str, Callable[[int], tuple[Spec, list[np.ndarray]]]] = {
    "catmix": catalyst_mixing,
    "steering": particle_steering,
    "chain": hanging_chain,
    "rocket": goddard_rocket,
}

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


def hang_glider(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Hang glider (COPS §11): the lift coefficient 0 <= c_L <= 1.4 that maximises the range
    x(t_f) of a glider (mass m = 100, wing area S = 14, air density rho = 1.13, g = 9.81) from
    (x, y) = (0, 1000) down to y(t_f) = 900, at the velocity (13.23, -1.288) at both ends, free
    final time, through the thermal updraft u_a = u_c (1 - X) exp(-X), X = (x/R - 2.5)^2, u_c =
    2.5, R = 100. With w = v_y - u_a and the airspeed v = sqrt(v_x^2 + w^2), the lift L = c_L q
    and the drag D = c_D q, q = rho S v^2 / 2, c_D = c0 + k c_L^2, c0 = 0.034, k = 0.069662:
    m x'' = -(L w + D v_x) / v, m y'' = (L v_x - D w) / v - m g; x >= 0, v_x >= 0. Reported
    optimum x(t_f) = 1.25505e3 at N = 100 (the report's value at other N is not recorded here:
    Ipopt finds 1.24881e3 at N = 200 and 1.24797e3 at N = 400; coarse grids overestimate the
    range, 1.287e3 at N = 50)."""
    n = N + 1
    x0, y0, yf, vx0, vy0 = 0.0, 1000.0, 900.0, 13.23, -1.288
    uc, radius, mass, g, c0, k, area, rho, cl_max = 2.5, 100.0, 100.0, 9.81, 0.034, 0.069662, 14.0, 1.13, 1.4

    def eq(z: Any, m: Any) -> Any:
        x, y, vx, vy, cl = _split(z, n, 5)
        step = z[5 * n] / N
        d = x / radius - 2.5
        updraft = uc * (1.0 - d * d) * m.exp(-d * d)
        w = vy - updraft
        q = (0.5 * rho * area / mass) * m.sqrt(vx * vx + w * w)
        cd = c0 + k * cl * cl
        defects = [
            _trapezoid(x, vx, step),
            _trapezoid(y, vy, step),
            _trapezoid(vx, -q * (cl * w + cd * vx), step),
            _trapezoid(vy, q * (cl * vx - cd * w) - g, step),
        ]
        ends = m.vec([x[0] - x0, y[0] - y0, vx[0] - vx0, vy[0] - vy0, y[N] - yf, vx[N] - vx0, vy[N] - vy0])
        return m.cat(defects + [ends])

    t = np.linspace(0.0, 1.0, n)
    free = np.full(n, INF)
    x_lb = np.concatenate([np.zeros(n), -free, np.zeros(n), -free, np.zeros(n), [0.0]])
    x_ub = np.concatenate([free, free, free, free, np.full(n, cl_max), [INF]])
    # The report's guess: straight lines between the boundary values (x at the initial speed),
    # half the largest lift, t_f = 1.
    cops = np.concatenate(
        [x0 + vx0 * t, y0 + (yf - y0) * t, np.full(n, vx0), np.full(n, vy0), np.full(n, cl_max / 2), [1.0]]
    )
    # A plainer one: the initial state throughout, the same lift, t_f = 100.
    plain = np.concatenate([np.full(n, x0), np.full(n, y0), np.full(n, vx0), np.full(n, vy0), np.full(n, 0.7), [100.0]])
    spec = Spec(
        name=f"glider{N}",
        n=5 * n + 1,
        x0=list(cops),
        cost=lambda z, m: -z[n - 1],
        eq=eq,
        x_lb=x_lb,
        x_ub=x_ub,
        f_opt=-1.25505e3 if N == 100 else None,
        large=True,
    )
    return spec, [cops, plain]


def robot_arm(N: int) -> tuple[Spec, list[np.ndarray]]:
    """Robot arm (COPS §8): the torques |u_rho|, |u_theta|, |u_phi| <= 1 that turn an arm of
    length L = 5 by theta = 2 pi / 3 in minimum time, from rest to rest, with the length rho
    and the angle phi back at 4.5 and pi / 4: L rho'' = u_rho, I_theta theta'' = u_theta,
    I_phi phi'' = u_phi, I_phi = ((L - rho)^3 + rho^3) / 3, I_theta = I_phi sin(phi)^2,
    0 <= rho <= L, |theta| <= pi, 0 <= phi <= pi. Reported optimum t_f = 9.14138 (N = 200)."""
    n, length = N + 1, 5.0
    start, end = [4.5, 0.0, math.pi / 4], [4.5, 2.0 * math.pi / 3, math.pi / 4]

    def eq(z: Any, m: Any) -> Any:
        rho, theta, phi, drho, dtheta, dphi, u_rho, u_theta, u_phi = _split(z, n, 9)
        step = z[9 * n] / N
        i_phi = ((length - rho) * (length - rho) * (length - rho) + rho * rho * rho) / 3.0
        s = m.sin(phi)
        defects = [
            _trapezoid(rho, drho, step),
            _trapezoid(theta, dtheta, step),
            _trapezoid(phi, dphi, step),
            _trapezoid(drho, u_rho / length, step),
            _trapezoid(dtheta, u_theta / (i_phi * s * s), step),
            _trapezoid(dphi, u_phi / i_phi, step),
        ]
        positions = [rho, theta, phi]
        ends = [q[0] - a for q, a in zip(positions, start)] + [q[N] - b for q, b in zip(positions, end)]
        ends += [q[0] for q in (drho, dtheta, dphi)] + [q[N] for q in (drho, dtheta, dphi)]
        return m.cat(defects + [m.vec(ends)])

    t = np.linspace(0.0, 1.0, n)
    # Per trajectory: rho, theta, phi, their rates, the torques.
    lower = [0.0, -math.pi, 0.0, -INF, -INF, -INF, -1.0, -1.0, -1.0]
    upper = [length, math.pi, math.pi, INF, INF, INF, 1.0, 1.0, 1.0]
    x_lb, x_ub = np.append(np.repeat(lower, n), 0.0), np.append(np.repeat(upper, n), INF)
    # The report's guess: rho and phi at rest, theta = (2 pi / 3) t^2 with its rate, no torques,
    # t_f = 1.
    rest = [np.full(n, 4.5), np.full(n, math.pi / 4)]
    theta, dtheta = 2.0 * math.pi / 3 * t * t, 4.0 * math.pi / 3 * t
    cops = np.concatenate([rest[0], theta, rest[1], np.zeros(n), dtheta, np.zeros(n), np.zeros(3 * n), [1.0]])
    # A plainer one: theta along a straight line, at rest otherwise, t_f = 10.
    plain = np.concatenate([rest[0], 2.0 * math.pi / 3 * t, rest[1], np.zeros(6 * n), [10.0]])
    spec = Spec(
        name=f"arm{N}",
        n=9 * n + 1,
        x0=list(cops),
        cost=lambda z, m: z[9 * n],
        eq=eq,
        x_lb=x_lb,
        x_ub=x_ub,
        f_opt=9.14138,
        large=True,
    )
    return spec, [cops, plain]


#: Each problem by name, as a function of the number of intervals N.
PROBLEMS: dict[str, Callable[[int], tuple[Spec, list[np.ndarray]]]] = {
    "catmix": catalyst_mixing,
    "steering": particle_steering,
    "chain": hanging_chain,
    "rocket": goddard_rocket,
    "glider": hang_glider,
    "arm": robot_arm,
}

"""Non-optimal-control problems of the COPS 3.0 collection (E. D. Dolan, J. J. Moré, T. S.
Munson, "Benchmarking optimization software with COPS 3.0", Argonne ANL/MCS-TM-273, 2004):
design (polygon, electrons on a sphere, cam shape), PDE-constrained minimisation on a grid
(elastic-plastic torsion, journal bearing, minimal surface with obstacle), a collocated
boundary-value problem (flow in a channel) and collocated parameter estimation (alpha-pinene,
gas oil, methanol, marine population dynamics). Each is an opti_problems.Spec, so the same formula builds the anvil problem
and the CasADi one (the oracle: Ipopt); each function of the problem's size returns the Spec and
two initial guesses: the COPS model's own, then a plainer one.

The formulations follow the COPS 3.0 AMPL models (as ported to JuMP in COPSBenchmark.jl).
Where the COPS model carries variables that the problem does not need, they are left out and
said so: the grid problems with zero boundary values (torsion, bearing) keep the interior grid
values only; the collocation problems (channel, pinene, gasoil, methanol, marine) keep the collocation
coefficients v, w and drop the auxiliary variables uc, Duc (u and u' at the collocation points,
fixed by linear equalities), which are substituted. The optima are unchanged.

Sizes: ``SIZES[name]["test"]`` are small (Ipopt solves each in well under a second from
either guess), ``SIZES[name]["bench"]`` the report's smaller sizes, where ``f_opt`` is the
report's value (None for polygon and camshape, whose local optima differ between solvers:
their docstrings record Ipopt's values).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from opti_problems import INF, Spec


# --------------------------------------------------------------------------------------------
# Design problems
# --------------------------------------------------------------------------------------------


def polygon(nv: int) -> tuple[Spec, list[np.ndarray]]:
    """Largest small polygon (COPS §1): the polygon of nv vertices and diameter at most 1 of
    largest area. In polar coordinates (r_i, theta_i) about the vertex at the origin, the last
    vertex (r_nv, theta_nv) = (0, pi) being that origin vertex:
    max 1/2 sum_{i<nv} r_i r_{i+1} sin(theta_{i+1} - theta_i)
    s.t. r_i^2 + r_j^2 - 2 r_i r_j cos(theta_j - theta_i) <= 1 (i < j), theta_{i+1} >= theta_i,
    0 <= r_i <= 1, 0 <= theta_i <= pi. Variables: r, then theta (n = 2 nv); the pairs (i, i+k) of
    the diameter constraints are stacked by k = 1, ..., nv-1.

    Local optima abound and the solvers' optima differ, so f_opt is left None. Ipopt's
    values (local optima, not the report's): -0.732207 at nv = 25 from both guesses (the global
    optimum there is the regular 25-gon's area, 0.780232, a KKT point of this formulation that
    Ipopt keeps when started on it with tiny bound pushes, but leaves from its default start);
    -0.719741 (COPS guess) and -0.688404 (plainer guess) at nv = 50 (from COPSBenchmark.jl's
    guess r = 1, theta_i = pi (i-1)/(nv-1), Ipopt finds -0.674981, its recorded value).
    Guess (the COPS model): r_i = 4 i (nv + 1 - i) / (nv + 1)^2, theta_i = pi i / nv; the
    plainer one: r = 1/2, theta evenly spaced over [0, pi]."""
    k_pairs = [(k, nv - k) for k in range(1, nv)]

    def parts(x: Any) -> tuple[Any, Any]:
        return x[:nv], x[nv:]

    def cost(x: Any, m: Any) -> Any:
        r, th = parts(x)
        return -0.5 * m.sum(r[:-1] * r[1:] * m.sin(th[1:] - th[:-1]))

    def eq(x: Any, m: Any) -> Any:
        return m.vec([x[2 * nv - 1] - math.pi, x[nv - 1]])

    def ineq(x: Any, m: Any) -> Any:
        r, th = parts(x)
        rows = [th[1:] - th[:-1]]
        for k, count in k_pairs:
            ri, rj = r[:count], r[k:]
            rows.append(ri * ri + rj * rj - 2.0 * ri * rj * m.cos(th[k:] - th[:count]))
        return m.cat(rows)

    npairs = nv * (nv - 1) // 2
    i = np.arange(1, nv + 1, dtype=float)
    cops = np.concatenate([4.0 * i * (nv + 1 - i) / (nv + 1) ** 2, math.pi * i / nv])
    plain = np.concatenate([np.full(nv, 0.5), np.linspace(0.0, math.pi, nv)])
    spec = Spec(
        name=f"polygon{nv}",
        n=2 * nv,
        x0=list(cops),
        cost=cost,
        eq=eq,
        ineq=ineq,
        ineq_lb=np.concatenate([np.zeros(nv - 1), np.full(npairs, -INF)]),
        ineq_ub=np.concatenate([np.full(nv - 1, INF), np.ones(npairs)]),
        x_lb=0.0,
        x_ub=np.concatenate([np.ones(nv), np.full(nv, math.pi)]),
        f_opt=None,
        unique_multipliers=False,
        large=nv >= 50,
    )
    return spec, [cops, plain]


#: The Thomson problem's global minima (the Cambridge Cluster Database; the COPS report gives
#: 1.0552e3 at n = 50). Ipopt reaches both from both guesses.
_THOMSON = {25: 243.812760, 50: 1055.182315}


def electrons(ne: int) -> tuple[Spec, list[np.ndarray]]:
    """Distribution of electrons on a sphere (COPS §2, the Thomson problem): ne electrons on
    the unit sphere of least Coulomb potential,
    min sum_{i<j} 1 / |p_i - p_j|  s.t. |p_i|^2 = 1. Variables: x, y, z coordinates (n = 3 ne);
    the pairs (i, i+k) are summed by k = 1, ..., ne-1. f_opt: the global minimum (243.812760 at
    ne = 25, 1055.182315 at ne = 50). Guess (COPS): random points on the sphere,
    (cos t sin p, sin t sin p, cos p), t ~ U(0, 2 pi), p ~ U(0, pi) (numpy's generator, seed
    2713, in place of AMPL's); the plainer one: random points in the cube [-1, 1]^3."""

    def cost(x: Any, m: Any) -> Any:
        px, py, pz = x[:ne], x[ne : 2 * ne], x[2 * ne :]
        terms = []
        for k in range(1, ne):
            dx, dy, dz = px[k:] - px[: ne - k], py[k:] - py[: ne - k], pz[k:] - pz[: ne - k]
            terms.append(1.0 / m.sqrt(dx * dx + dy * dy + dz * dz))
        return m.sum(m.cat(terms))

    def eq(x: Any, m: Any) -> Any:
        px, py, pz = x[:ne], x[ne : 2 * ne], x[2 * ne :]
        return px * px + py * py + pz * pz - 1.0

    rng = np.random.default_rng(2713)
    t, p = 2.0 * math.pi * rng.random(ne), math.pi * rng.random(ne)
    cops = np.concatenate([np.cos(t) * np.sin(p), np.sin(t) * np.sin(p), np.cos(p)])
    plain = np.random.default_rng(1).uniform(-1.0, 1.0, 3 * ne)
    spec = Spec(
        name=f"elec{ne}",
        n=3 * ne,
        x0=list(cops),
        cost=cost,
        eq=eq,
        f_opt=_THOMSON.get(ne),
        large=3 * ne > 100,
    )
    return spec, [cops, plain]


def camshape(n: int) -> tuple[Spec, list[np.ndarray]]:
    """Shape optimisation of a cam (COPS §3): the radii r_1..r_n of a convex cam at the angles
    i dtheta, dtheta = 2 pi / (5 (n + 1)), that maximise the valve's opening,
    max (pi R_v / n) sum r_i, R_v = 1, s.t. R_min = 1 <= r_i <= R_max = 2; convexity
    -r_{i-1} r_i - r_i r_{i+1} + 2 r_{i-1} r_{i+1} cos(dtheta) <= 0 for i = 1..n with
    r_{-1} = r_0 = R_min, r_{n+1} = R_max, r_{n+2} = r_n (the i = 0 and i = n+1 rows included);
    curvature |r_{i+1} - r_i| <= alpha dtheta, alpha = 1.5, for i = 0..n with r_0 = R_min,
    r_{n+1} = R_max. Rows: the n-2 inner convexity rows, the four end rows, the n-1 inner
    curvature rows, the two end ones (2n + 3). The report's optima are not recorded here
    (f_opt None); Ipopt's values (the same from both guesses): -4.284200 (n = 100), -4.278705
    (n = 200); -4.279065 at n = 1000, which COPSBenchmark.jl records (4.2791). Guess (COPS):
    r_i = 1.5; the plainer one: uniform random in [1, 2] (seed 3)."""
    rv, rmax, rmin, alpha = 1.0, 2.0, 1.0, 1.5
    dth = 2.0 * math.pi / (5.0 * (n + 1))
    c, slope = math.cos(dth), alpha * dth

    def ineq(r: Any, m: Any) -> Any:
        convex = -r[:-2] * r[1:-1] - r[1:-1] * r[2:] + 2.0 * c * r[:-2] * r[2:]
        ends = m.vec(
            [
                -rmin * r[0] - r[0] * r[1] + 2.0 * c * rmin * r[1],
                -rmin * rmin - rmin * r[0] + 2.0 * c * rmin * r[0],
                -r[n - 2] * r[n - 1] - r[n - 1] * rmax + 2.0 * c * r[n - 2] * rmax,
                -2.0 * rmax * r[n - 1] + 2.0 * c * r[n - 1] * r[n - 1],
            ]
        )
        steps = r[1:] - r[:-1]
        step_ends = m.vec([r[0] - rmin, rmax - r[n - 1]])
        return m.cat([convex, ends, steps, step_ends])

    nconv = n + 2
    cops = np.full(n, (rmin + rmax) / 2.0)
    plain = np.random.default_rng(3).uniform(rmin, rmax, n)
    spec = Spec(
        name=f"camshape{n}",
        n=n,
        x0=list(cops),
        cost=lambda r, m: -(math.pi * rv / n) * m.sum(r),
        ineq=ineq,
        ineq_lb=np.concatenate([np.full(nconv, -INF), np.full(n + 1, -slope)]),
        ineq_ub=np.concatenate([np.zeros(nconv), np.full(n + 1, slope)]),
        x_lb=rmin,
        x_ub=rmax,
        f_opt=None,
        unique_multipliers=False,
        large=n > 100,
    )
    return spec, [cops, plain]


# --------------------------------------------------------------------------------------------
# Grid problems
# --------------------------------------------------------------------------------------------


def _grid_quadratic(nx: int, ny: int, cx: np.ndarray, cy: np.ndarray) -> Callable[[Any, Any], Any]:
    """sum over the edges of the (nx+2) x (ny+2) grid of c (v_a - v_b)^2, where v is zero on
    the boundary and x holds the interior values row by row (row i = 1..nx of ny values): an
    edge between rows i and i+1 (i = 0..nx) weighs cx[i], an edge within row i (i = 1..nx, the
    ny + 1 edges from column 0 to ny + 1) weighs cy[i]."""
    j = np.tile(np.arange(ny), nx)
    rows = np.repeat(np.arange(1, nx + 1), ny)
    between = np.repeat(cx[1:nx], ny)  # rows i and i+1, both inside
    within = (cy[rows] * (j != ny - 1))[:-1]  # the pair (k, k+1) in the same row
    # The boundary edges: v_(1,j)^2, v_(nx,j)^2 (rows 0, nx+1), v_(i,1)^2, v_(i,ny)^2 (columns).
    diag = cy[rows] * ((j == 0).astype(float) + (j == ny - 1))
    diag[:ny] += cx[0]
    diag[-ny:] += cx[nx]

    def quad(x: Any, m: Any) -> Any:
        dx, dy = x[ny:] - x[:-ny], x[1:] - x[:-1]
        return m.sum(dx * dx * between) + m.sum(dy * dy * within) + m.sum(x * x * diag)

    return quad


def torsion(nx: int, ny: int | None = None) -> tuple[Spec, list[np.ndarray]]:
    """Elastic-plastic torsion (COPS §15): on the unit square, piecewise-linear finite elements
    on an (nx+2) x (ny+2) grid (h_x = 1/(nx+1), h_y = 1/(ny+1)), v = 0 on the boundary,
    min 1/2 int |grad v|^2 - c int v, c = 5, s.t. |v| <= dist(., boundary). With the COPS
    model's lower and upper triangles this is
    (h_x h_y / 2) sum_edges (dv / h)^2 - c h_x h_y sum v
    over the interior values (the boundary ones, fixed at 0 by the model's bounds, dropped):
    n = nx ny, stored row by row (row i = 1..nx of ny values). Bounds: -D <= v <= D,
    D_ij = min(min(i, nx-i+1) h_x, min(j, ny-j+1) h_y). The report's optimum -4.18087e-1 at
    nx = ny = 50 (f_opt there only); Ipopt's value at 25 x 25: -4.169356e-1. Guess (COPS): v = D; the
    plainer one: v = 0."""
    ny = nx if ny is None else ny
    c = 5.0
    hx, hy = 1.0 / (nx + 1), 1.0 / (ny + 1)
    quad = _grid_quadratic(nx, ny, np.full(nx + 1, 0.5 * hy / hx), np.full(nx + 2, 0.5 * hx / hy))

    def cost(x: Any, m: Any) -> Any:
        return quad(x, m) - c * hx * hy * m.sum(x)

    i, j = np.meshgrid(np.arange(1, nx + 1), np.arange(1, ny + 1), indexing="ij")
    dist = np.minimum(np.minimum(i, nx - i + 1) * hx, np.minimum(j, ny - j + 1) * hy).ravel()
    spec = Spec(
        name=f"torsion{nx}x{ny}",
        n=nx * ny,
        x0=list(dist),
        cost=cost,
        x_lb=-dist,
        x_ub=dist,
        f_opt=-4.18087e-1 if (nx, ny) == (50, 50) else None,
        unique_multipliers=False,
        large=True,
    )
    return spec, [dist.copy(), np.zeros(nx * ny)]


def bearing(nx: int, ny: int | None = None) -> tuple[Spec, list[np.ndarray]]:
    """Journal bearing (COPS §16): the pressure v >= 0 in a lubricated journal bearing, on
    (0, 2 pi) x (0, 2 b), b = 10, eccentricity e = 0.1, v = 0 on the boundary:
    min 1/2 int w_q |grad v|^2 - int w_l v, w_q = (1 + e cos x)^3, w_l = e sin x. As in the COPS
    model, on an (nx+2) x (ny+2) grid (h_x = 2 pi / (nx+1), h_y = 2 b / (ny+1)),
    w_i = (1 + e cos(i h_x))^3:
    (h_x h_y / 12) [sum_{lower (i,j)} (w_i + 2 w_{i+1}) |grad v|^2_(i,j)
                    + sum_{upper (i,j)} (2 w_i + 2 w_{i-1}) |grad v|^2_(i,j)]
      - h_x h_y sum e sin(i h_x) v_ij,
    the lower triangle (i,j) with the forward differences (i = 0..nx, j = 0..ny), the upper one
    with the backward differences (i, j = 1..nx+1) (the weights as in the COPS model, which
    gives the report's optimum). Only the interior values are variables (n = nx ny, row by row;
    the boundary ones are 0). The report's optimum -1.5482e-1 at nx = ny = 50 (f_opt there
    only); Ipopt's value at 25 x 25: -1.546676e-1. Guess (COPS):
    v_ij = max(sin(i h_x), 0); the plainer one: v = 0.5."""
    ny = nx if ny is None else ny
    b, e = 10.0, 0.1
    hx, hy = 2.0 * math.pi / (nx + 1), 2.0 * b / (ny + 1)
    w = (1.0 + e * np.cos(np.arange(nx + 2) * hx)) ** 3
    lower = w[:-1] + 2.0 * w[1:]  # lower triangle at i = 0..nx
    upper = np.concatenate([[0.0], 2.0 * w[1:] + 2.0 * w[:-1]])  # upper triangle at i = 1..nx+1
    scale = 0.5 * hx * hy / 6.0
    # An edge (i, i+1) lies in the lower triangle i and the upper one i+1; an edge within row i
    # in the lower and the upper triangles of row i.
    cx = scale * (lower + upper[1:]) / hx**2
    cy = scale * (np.concatenate([lower, [0.0]]) + upper) / hy**2
    quad = _grid_quadratic(nx, ny, cx, cy)
    lin = hx * hy * e * np.repeat(np.sin(np.arange(1, nx + 1) * hx), ny)

    def cost(x: Any, m: Any) -> Any:
        return quad(x, m) - m.sum(x * lin)

    cops = np.repeat(np.maximum(np.sin(np.arange(1, nx + 1) * hx), 0.0), ny)
    spec = Spec(
        name=f"bearing{nx}x{ny}",
        n=nx * ny,
        x0=list(cops),
        cost=cost,
        x_lb=0.0,
        f_opt=-1.5482e-1 if (nx, ny) == (50, 50) else None,
        unique_multipliers=False,
        large=True,
    )
    return spec, [cops, np.full(nx * ny, 0.5)]


#: The report's optima of the minimal surface, per (nx, ny).
_MINSURF = {(50, 50): 2.51488, (50, 75): 2.50568, (50, 100): 2.50694}


def minsurf(nx: int, ny: int | None = None) -> tuple[Spec, list[np.ndarray]]:
    """Minimal surface with obstacle (COPS §17): the surface v over the unit square of least
    area, v = 1 - (2 x - 1)^2 on the sides y = 0 and y = 1, v = 0 on x = 0 and x = 1, above the
    obstacle v >= 1 on [1/4, 3/4]^2 (and v >= 0). Piecewise-linear elements on an
    (nx+2) x (ny+2) grid, h_x = 1/(nx+1), h_y = 1/(ny+1):
    min (h_x h_y / 2) [sum_{i<=nx, j<=ny} sqrt(1 + ((v_{i+1,j} - v_ij)/h_x)^2 + ((v_{i,j+1} - v_ij)/h_y)^2)
                     + sum_{i,j>=1} sqrt(1 + ((v_{i-1,j} - v_ij)/h_x)^2 + ((v_{i,j-1} - v_ij)/h_y)^2)].
    All grid values are variables (n = (nx+2)(ny+2), row by row: row i = 0..nx+1 of ny+2
    values), the boundary ones fixed by equalities (each once: 2 (ny+2) + 2 nx rows); bounds
    v >= 0 inside, v >= 1 at i in floor(h_x^-1/4)..ceil(3 h_x^-1/4), the same for j (the COPS
    index ranges). The report's optima: 2.51488 (50 x 50), 2.50568 (50 x 75), 2.50694
    (50 x 100) (f_opt there only); Ipopt's value at 25 x 25: 2.528889. Guess (COPS):
    v_ij = 1 - (2 i h_x - 1)^2; the plainer one: v = 1."""
    ny = nx if ny is None else ny
    hx, hy = 1.0 / (nx + 1), 1.0 / (ny + 1)
    width, rows = ny + 2, nx + 2
    span = (nx + 1) * width
    col = np.arange(span) % width
    # Masks: the lower triangles have j <= ny, the upper ones j >= 1.
    mask_lower, mask_upper = (col != width - 1).astype(float), (col != 0).astype(float)
    area = 0.5 * hx * hy
    edge = 1.0 - (2.0 * np.arange(rows) * hx - 1.0) ** 2

    def cost(x: Any, m: Any) -> Any:
        here_l, down = x[:span], x[width : width + span]
        right = x[1 : span + 1]
        left = x[width - 1 : width - 1 + span]
        lower = m.sqrt(1.0 + ((down - here_l) / hx) ** 2 + ((right - here_l) / hy) ** 2)
        upper = m.sqrt(1.0 + ((here_l - down) / hx) ** 2 + ((left - down) / hy) ** 2)
        return area * (m.sum(lower * mask_lower) + m.sum(upper * mask_upper))

    def eq(x: Any, m: Any) -> Any:
        sides = []
        for i in range(1, nx + 1):
            sides += [x[i * width] - edge[i], x[i * width + width - 1] - edge[i]]
        return m.cat([x[:width], x[(nx + 1) * width :], m.vec(sides)])

    lb = np.zeros((rows, width))
    ilo, ihi = math.floor(0.25 / hx), math.ceil(0.75 / hx)
    jlo, jhi = math.floor(0.25 / hy), math.ceil(0.75 / hy)
    lb[ilo : ihi + 1, jlo : jhi + 1] = 1.0
    lb[0, :] = lb[-1, :] = lb[:, 0] = lb[:, -1] = -INF  # the boundary: fixed by equalities
    cops = np.repeat(edge, width)
    spec = Spec(
        name=f"minsurf{nx}x{ny}",
        n=rows * width,
        x0=list(cops),
        cost=cost,
        eq=eq,
        x_lb=lb.ravel(),
        f_opt=_MINSURF.get((nx, ny)),
        unique_multipliers=False,
        large=True,
    )
    return spec, [cops, np.ones(rows * width)]


# --------------------------------------------------------------------------------------------
# Collocation problems
# --------------------------------------------------------------------------------------------


def channel(nh: int) -> tuple[Spec, list[np.ndarray]]:
    """Flow in a channel (COPS §7): the boundary-value problem u'''' = R (u' u'' - u u'''),
    R = 10, u(0) = u'(0) = 0, u(1) = 1, u'(1) = 0, solved by collocation at the 4 Gauss points
    rho_j of each of nh intervals of length h: on interval i,
    u(t_i + rho h) = sum_{k=1..4} v_ik (rho h)^(k-1)/(k-1)! + h^4 sum_{k=1..4} w_ik rho^(k+3)/(k+3)!
    (v_ik = u^(k-1)(t_i), u'''' = sum_k w_ik rho^(k-1)/(k-1)!); the equations: collocation at
    each rho_j (4 nh), continuity of u, u', u'', u''' between intervals (4 (nh - 1)), the four
    boundary conditions: a square system (n = 8 nh: v_1..v_4 then w_1..w_4, each of nh values),
    with the COPS model's constant objective 1 (so f_opt = 1). The COPS model's auxiliary
    variables uc, Duc are substituted. Ipopt's solution matches scipy's solve_bvp to 1e-9. Guess (COPS): v = (t^2 (3 - 2t), 6t(1 - t), 6(1 - 2t),
    -12) at t_i, w = 0; the plainer one: v = (t, 1, 0, 0), w = 0."""
    R = 10.0
    rho = [0.06943184420297, 0.33000947820757, 0.66999052179243, 0.93056815579703]
    h = 1.0 / nh
    fact = math.factorial

    def parts(x: Any) -> tuple[list[Any], list[Any]]:
        return [x[s * nh : (s + 1) * nh] for s in range(4)], [x[(4 + k) * nh : (5 + k) * nh] for k in range(4)]

    def deriv(v: list[Any], w: list[Any], s: int, r: float) -> Any:
        """u^(s) at t_i + r h on every interval (s = 0..3)."""
        out = v[s]
        for k in range(s + 1, 4):
            out = out + v[k] * ((r * h) ** (k - s) / fact(k - s))
        for k in range(1, 5):
            out = out + w[k - 1] * (h ** (4 - s) * r ** (k + 3 - s) / fact(k + 3 - s))
        return out

    def eq(x: Any, m: Any) -> Any:
        v, w = parts(x)
        rows = []
        for r in rho:
            d = [deriv(v, w, s, r) for s in range(4)]
            u4 = w[0]
            for k in range(2, 5):
                u4 = u4 + w[k - 1] * (r ** (k - 1) / fact(k - 1))
            rows.append(u4 - R * (d[1] * d[2] - d[0] * d[3]))
        for s in range(4):
            rows.append(deriv(v, w, s, 1.0)[:-1] - v[s][1:])
        end_u, end_du = deriv(v, w, 0, 1.0), deriv(v, w, 1, 1.0)
        rows.append(m.vec([v[0][0], v[1][0], end_u[nh - 1] - 1.0, end_du[nh - 1]]))
        return m.cat(rows)

    t = np.arange(nh) * h
    cops = np.concatenate([t * t * (3.0 - 2.0 * t), 6.0 * t * (1.0 - t), 6.0 * (1.0 - 2.0 * t), np.full(nh, -12.0), np.zeros(4 * nh)])
    plain = np.concatenate([t, np.ones(nh), np.zeros(6 * nh)])
    spec = Spec(
        name=f"channel{nh}",
        n=8 * nh,
        x0=list(cops),
        cost=lambda x, m: 0.0 * x[0] + 1.0,
        eq=eq,
        f_opt=1.0,
        unique_multipliers=False,
        large=True,
    )
    return spec, [cops, plain]


def _collocation_fit(
    name: str,
    nh: int,
    rho: list[float],
    tau: list[float],
    z: np.ndarray,
    bc: list[float] | None,
    npar: int,
    rhs: Callable[[Any, list[Any]], list[Any]],
    f_opt: float | None,
    theta0: float,
    v_const: float | None,
    plain_interp: bool = False,
) -> tuple[Spec, list[np.ndarray]]:
    """The COPS collocation template of the parameter-estimation problems: the ODE u' = f(theta,
    u) on [0, tau_last], nh intervals of length h, nc = len(rho) collocation points; on interval
    i, u_s(t_i + r h) = v_is + h sum_{k=1..nc} w_iks r^k / k!; the equations: u' = f at every
    collocation point, continuity between intervals, u(0) = bc (u(0) free where bc is None); the
    objective: the squared misfit to the measurements z at the times tau. Variables: theta
    (npar), v_s (nh each, s = 1..ne), w_ks (nh each, s-major). Guess (COPS): theta = theta0,
    v = the measurement preceding t_i (the initial value before the first one) or v_const
    where the COPS model sets a constant, w = 0; the plainer one: theta = theta0, v = bc, w = 0
    (or, with plain_interp, v = the measurements interpolated linearly at t_i, bc at t = 0
    where given)."""
    nc, ne, nm = len(rho), z.shape[1], len(tau)
    h = tau[-1] / nh
    fact = math.factorial
    itau = [min(nh - 1, math.floor(tm / h)) for tm in tau]  # the interval holding each tau
    nv = npar + ne * nh

    def parts(x: Any) -> tuple[list[Any], list[Any], list[list[Any]]]:
        theta = [x[p] for p in range(npar)]
        v = [x[npar + s * nh : npar + (s + 1) * nh] for s in range(ne)]
        w = [[x[nv + (s * nc + k) * nh : nv + (s * nc + k + 1) * nh] for k in range(nc)] for s in range(ne)]
        return theta, v, w

    def cost(x: Any, m: Any) -> Any:
        _, v, w = parts(x)
        res = []
        for j in range(nm):
            i, dt = itau[j], tau[j] - itau[j] * h
            for s in range(ne):
                e = v[s][i] - float(z[j, s])
                for k in range(nc):
                    e = e + w[s][k][i] * (dt ** (k + 1) / (fact(k + 1) * h**k))
                res.append(e)
        r = m.vec(res)
        return m.sum(r * r)

    def eq(x: Any, m: Any) -> Any:
        theta, v, w = parts(x)
        rows = []
        for r in rho:
            uc, duc = [], []
            for s in range(ne):
                u, du = v[s], w[s][0]
                for k in range(nc):
                    u = u + w[s][k] * (h * r ** (k + 1) / fact(k + 1))
                    if k > 0:
                        du = du + w[s][k] * (r**k / fact(k))
                uc.append(u)
                duc.append(du)
            f = rhs(theta, uc)
            rows += [duc[s] - f[s] for s in range(ne)]
        for s in range(ne):
            end = v[s][:-1]
            for k in range(nc):
                end = end + w[s][k][:-1] * (h / fact(k + 1))
            rows.append(end - v[s][1:])
        if bc is not None:
            rows.append(m.vec([v[s][0] - bc[s] for s in range(ne)]))
        return m.cat(rows)

    # The COPS guess: v on interval i = the last measurement at or before t_i.
    v0 = np.zeros((nh, ne))
    v0[: itau[0] + 1] = z[0] if bc is None else bc
    for j in range(1, nm):
        v0[itau[j - 1] + 1 : itau[j] + 1] = z[j]
    v0[itau[-1] + 1 :] = z[-1]
    if v_const is not None:
        v0[:] = v_const
    theta = np.full(npar, theta0)
    cops = np.concatenate([theta, v0.T.ravel(), np.zeros(ne * nc * nh)])
    if plain_interp:
        t, times, data = np.arange(nh) * h, np.asarray(tau), z
        if bc is not None:
            times, data = np.concatenate([[0.0], tau]), np.vstack([bc, z])
        v_plain = np.concatenate([np.interp(t, times, data[:, s]) for s in range(ne)])
    else:
        v_plain = np.repeat(bc, nh)
    plain = np.concatenate([theta, v_plain, np.zeros(ne * nc * nh)])
    x_lb = np.concatenate([np.zeros(npar), np.full(ne * nh * (1 + nc), -INF)])
    spec = Spec(
        name=f"{name}{nh}",
        n=npar + ne * nh * (1 + nc),
        x0=list(cops),
        cost=cost,
        eq=eq,
        x_lb=x_lb,
        f_opt=f_opt,
        unique_multipliers=False,
        large=True,
    )
    return spec, [cops, plain]


def pinene(nh: int) -> tuple[Spec, list[np.ndarray]]:
    """Isomerization of alpha-pinene (COPS §5): the rate constants theta >= 0 of
    y1' = -(t1 + t2) y1, y2' = t1 y1, y3' = t2 y1 - (t3 + t4) y3 + t5 y5, y4' = t3 y3,
    y5' = t4 y3 - t5 y5, y(0) = (100, 0, 0, 0, 0), that fit the 8 measurements of Box et al.
    (1973) in least squares; collocation at the 3 Gauss points of nh intervals of [0, 36420]
    (_collocation_fit). n = 5 + 20 nh. The report's optimum 1.98721e1 (nh = 100; f_opt at
    every nh: Ipopt's value at nh = 25 is 1.987153e1). Guess (COPS): theta = 0, v = the
    preceding measurement; the plainer one: theta = 0, v = the measurements interpolated
    linearly (v = y(0) throughout, the plainest, leads Ipopt to the local minimum 104.13 or
    stalls: theta ~ 1e-5..1e-4 is badly scaled against Ipopt's bound push of 1e-2)."""
    tau = [1230.0, 3060.0, 4920.0, 7800.0, 10680.0, 15030.0, 22620.0, 36420.0]
    z = np.array(
        [
            [88.35, 7.3, 2.3, 0.4, 1.75],
            [76.4, 15.6, 4.5, 0.7, 2.8],
            [65.1, 23.1, 5.3, 1.1, 5.8],
            [50.4, 32.9, 6.0, 1.5, 9.3],
            [37.5, 42.7, 6.0, 1.9, 12.0],
            [25.9, 49.1, 5.9, 2.2, 17.0],
            [14.0, 57.4, 5.1, 2.6, 21.0],
            [4.5, 63.1, 3.8, 2.9, 25.7],
        ]
    )

    def rhs(t: list[Any], u: list[Any]) -> list[Any]:
        return [
            -(t[0] + t[1]) * u[0],
            t[0] * u[0],
            t[1] * u[0] - (t[2] + t[3]) * u[2] + t[4] * u[4],
            t[2] * u[2],
            t[3] * u[2] - t[4] * u[4],
        ]

    rho = [0.11270166537926, 0.5, 0.88729833462074]
    return _collocation_fit("pinene", nh, rho, tau, z, [100.0, 0.0, 0.0, 0.0, 0.0], 5, rhs, 1.98721e1, 0.0, None, True)


def gasoil(nh: int) -> tuple[Spec, list[np.ndarray]]:
    """Catalytic cracking of gas oil (COPS §12): the rate constants theta >= 0 of
    y1' = -(t1 + t3) y1^2, y2' = t1 y1^2 - t2 y2, y(0) = (1, 0), that fit 21 measurements in
    least squares; collocation at the 4 Gauss points of nh intervals of [0, 0.95]
    (_collocation_fit). n = 3 + 10 nh. The report's optimum 5.2366e-3 (nh = 100; f_opt at
    every nh: Ipopt's value at nh = 25 is 5.234309e-3). Guess (COPS): theta = 0, v = the
    preceding measurement; the plainer one: theta = 0, v = y(0)."""
    tau = [0.0, 0.025, 0.05, 0.075, 0.10, 0.125, 0.150, 0.175, 0.20, 0.225, 0.250, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55, 0.65, 0.75, 0.85, 0.95]
    z = np.array(
        [
            [1.0000, 0.0],
            [0.8105, 0.2000],
            [0.6208, 0.2886],
            [0.5258, 0.3010],
            [0.4345, 0.3215],
            [0.3903, 0.3123],
            [0.3342, 0.2716],
            [0.3034, 0.2551],
            [0.2735, 0.2258],
            [0.2405, 0.1959],
            [0.2283, 0.1789],
            [0.2071, 0.1457],
            [0.1669, 0.1198],
            [0.1530, 0.0909],
            [0.1339, 0.0719],
            [0.1265, 0.0561],
            [0.1200, 0.0460],
            [0.0990, 0.0280],
            [0.0870, 0.0190],
            [0.0770, 0.0140],
            [0.0690, 0.0100],
        ]
    )

    def rhs(t: list[Any], u: list[Any]) -> list[Any]:
        sq = u[0] * u[0]
        return [-(t[0] + t[2]) * sq, t[0] * sq - t[1] * u[1]]

    rho = [0.06943184420297, 0.33000947820757, 0.66999052179243, 0.93056815579703]
    return _collocation_fit("gasoil", nh, rho, tau, z, [1.0, 0.0], 3, rhs, 5.2366e-3, 0.0, None)


def methanol(nh: int) -> tuple[Spec, list[np.ndarray]]:
    """Methanol to hydrocarbons (COPS §13): the rate constants theta >= 0 of
    y1' = -(2 t2 - t1 y2 / d + t3 + t4) y1, y2' = t1 y1 (t2 y1 - y2) / d + t3 y1,
    y3' = t1 y1 (y2 + t5 y1) / d + t4 y1, d = (t2 + t5) y1 + y2, y(0) = (1, 0, 0), that fit 17
    measurements in least squares; collocation at the 3 Gauss points of nh intervals of
    [0, 1.122] (_collocation_fit). n = 5 + 12 nh. The report's optimum 9.02229e-3 (nh = 100;
    f_opt at every nh: Ipopt's value at nh = 25 is 9.021911e-3). Guess (the COPS model as in
    COPSBenchmark.jl): theta = 1, v = 0.001, w = 0; the plainer one: theta = 1, v = y(0)."""
    tau = [0.0, 0.050, 0.065, 0.080, 0.123, 0.233, 0.273, 0.354, 0.397, 0.418, 0.502, 0.553, 0.681, 0.750, 0.916, 0.937, 1.122]
    z = np.array(
        [
            [1.0000, 0.0, 0.0],
            [0.7085, 0.1621, 0.0811],
            [0.5971, 0.1855, 0.0965],
            [0.5537, 0.1989, 0.1198],
            [0.3684, 0.2845, 0.1535],
            [0.1712, 0.3491, 0.2097],
            [0.1198, 0.3098, 0.2628],
            [0.0747, 0.3576, 0.2467],
            [0.0529, 0.3347, 0.2884],
            [0.0415, 0.3388, 0.2757],
            [0.0261, 0.3557, 0.3167],
            [0.0208, 0.3483, 0.2954],
            [0.0085, 0.3836, 0.2950],
            [0.0053, 0.3611, 0.2937],
            [0.0019, 0.3609, 0.2831],
            [0.0018, 0.3485, 0.2846],
            [0.0006, 0.3698, 0.2899],
        ]
    )

    def rhs(t: list[Any], u: list[Any]) -> list[Any]:
        d = (t[1] + t[4]) * u[0] + u[1]
        return [
            -(2.0 * t[1] - t[0] * u[1] / d + t[2] + t[3]) * u[0],
            t[0] * u[0] * (t[1] * u[0] - u[1]) / d + t[2] * u[0],
            t[0] * u[0] * (u[1] + t[4] * u[0]) / d + t[3] * u[0],
        ]

    rho = [0.11270166537926, 0.5, 0.88729833462074]
    return _collocation_fit("methanol", nh, rho, tau, z, [1.0, 0.0, 0.0], 5, rhs, 9.02229e-3, 1.0, 0.001)


def marine(nh: int) -> tuple[Spec, list[np.ndarray]]:
    """Marine population dynamics (COPS §6): the growth rates g >= 0 (7) and mortality rates
    m >= 0 (8) of a species' eight larval stages, u1' = -(m1 + g1) u1,
    u_s' = g_{s-1} u_{s-1} - (m_s + g_s) u_s (s = 2..7), u8' = g7 u7 - m8 u8, the initial
    populations free, that fit 21 counts of each stage over [0, 10] in least squares;
    collocation at the midpoint of nh intervals (_collocation_fit, one point). n = 15 + 16 nh.
    The report's optimum 1.97465e7 (nh = 100). Guess (COPS): g = m = 0, v = the preceding
    counts, w = 0; the plainer one: g = m = 0, v = the counts interpolated linearly."""
    tau = [0.5 * j for j in range(21)]
    z = np.array(
        [
            [20000, 17000, 10000, 15000, 12000, 9000, 7000, 3000],
            [12445, 15411, 13040, 13338, 13484, 8426, 6615, 4022],
            [7705, 13074, 14623, 11976, 12453, 9272, 6891, 5020],
            [4664, 8579, 12434, 12603, 11738, 9710, 6821, 5722],
            [2977, 7053, 11219, 11340, 13665, 8534, 6242, 5695],
            [1769, 5054, 10065, 11232, 12112, 9600, 6647, 7034],
            [943, 3907, 9473, 10334, 11115, 8826, 6842, 7348],
            [581, 2624, 7421, 10297, 12427, 8747, 7199, 7684],
            [355, 1744, 5369, 7748, 10057, 8698, 6542, 7410],
            [223, 1272, 4713, 6869, 9564, 8766, 6810, 6961],
            [137, 821, 3451, 6050, 8671, 8291, 6827, 7525],
            [87, 577, 2649, 5454, 8430, 7411, 6423, 8388],
            [49, 337, 2058, 4115, 7435, 7627, 6268, 7189],
            [32, 228, 1440, 3790, 6474, 6658, 5859, 7467],
            [17, 168, 1178, 3087, 6524, 5880, 5562, 7144],
            [11, 99, 919, 2596, 5360, 5762, 4480, 7256],
            [7, 65, 647, 1873, 4556, 5058, 4944, 7538],
            [4, 44, 509, 1571, 4009, 4527, 4233, 6649],
            [2, 27, 345, 1227, 3677, 4229, 3805, 6378],
            [1, 20, 231, 934, 3197, 3695, 3159, 6454],
            [1, 12, 198, 707, 2562, 3163, 3232, 5566],
        ],
        dtype=float,
    )
    stages = z.shape[1]

    def rhs(theta: list[Any], u: list[Any]) -> list[Any]:
        g, m = theta[: stages - 1], theta[stages - 1 :]
        rows = []
        for s in range(stages):
            out = -(m[s] + g[s]) * u[s] if s < stages - 1 else -m[s] * u[s]
            rows.append(out + g[s - 1] * u[s - 1] if s > 0 else out)
        return rows

    return _collocation_fit("marine", nh, [0.5], tau, z, None, 2 * stages - 1, rhs, 1.97465e7, 0.0, None, True)


#: Each problem by name, as a function of its size (an int: vertices, electrons, radii, the
#: grid's interior nx = ny, or the collocation intervals nh).
PROBLEMS: dict[str, Callable[[int], tuple[Spec, list[np.ndarray]]]] = {
    "polygon": polygon,
    "elec": electrons,
    "camshape": camshape,
    "torsion": torsion,
    "bearing": bearing,
    "minsurf": minsurf,
    "channel": channel,
    "pinene": pinene,
    "gasoil": gasoil,
    "methanol": methanol,
    "marine": marine,
}

#: Per problem: the small sizes to test and the sizes to benchmark (the report's smaller ones).
SIZES: dict[str, dict[str, list[int]]] = {
    "polygon": {"test": [25], "bench": [25, 50]},
    "elec": {"test": [25], "bench": [25, 50]},
    "camshape": {"test": [100], "bench": [100, 200]},
    "torsion": {"test": [25], "bench": [50]},
    "bearing": {"test": [25], "bench": [50]},
    "minsurf": {"test": [25], "bench": [50]},
    "channel": {"test": [50], "bench": [200]},
    "pinene": {"test": [25], "bench": [100]},
    "gasoil": {"test": [25], "bench": [100]},
    "methanol": {"test": [25], "bench": [100]},
    "marine": {"test": [25], "bench": [100]},
}

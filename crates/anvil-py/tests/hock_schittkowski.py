"""Hock & Schittkowski's test problems (W. Hock, K. Schittkowski, "Test Examples for Nonlinear
Programming Codes", Lecture Notes in Economics and Mathematical Systems 187, 1981): 81 of
them beside the 13 of opti_problems.py, written against the same math namespace (``m``) so
that one formula builds the anvil graph and the CasADi expression.

HS writes inequalities as g(x) >= 0: here ineq_lb=0, ineq_ub=INF unless a row is a range.
Each was checked at random points against the CUTEst SIF files (S2MPJ's Python versions),
OptimizationProblems.jl and the OPTI toolbox's transcriptions, and with Ipopt (CasADi), which
reaches the published optimum from the published start on every problem of ``PROBLEMS``.
``LOCAL_FROM_X0``: problems stated as published whose published start leads Ipopt to another
local minimum (or, hs057, away along a valley); they are benchmarked but not compared with the
published optimum.

Where the sources disagree (the SIF/book version is used, and reproduces the book's optimum):
  hs083  the x3^2 and x3*x4 terms of rows 2 and 3 have "+" (OptimizationProblems.jl: "-").
  hs109  the last equality has "- 22.938 a" (OptimizationProblems.jl and MOI's test: "+";
         with "+" the optimum is 5326.8513, not the book's 5362.06928).
  hs117  3 d_j x_{10+j}^2 appears once per row (OptimizationProblems.jl sums it 5 times).
  hs118  x_{3j+2} - x_{3j-1} lies in [-7, 7] and the others in [-7, 6]; the demands are
         60, 50, 70, 85, 100 (OptimizationProblems.jl swaps both).
  hs119  sum_j b_ij x_j = c_i (OptimizationProblems.jl subtracts c_i 16 times).
f_opt is the published value except hs106 (see there) and hs116 (97.5875096, the book's value;
CUTEst's 97.588409 is not reached).
hs059's f_opt is the value at the book's own minimiser (-7.8027894, CUTEst's "corrected
HS59"); the book prints -7.804226324.
"""

from __future__ import annotations

import math
from typing import Any

from opti_problems import INF, Spec

def _rosen(x, m):
    return 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2


# HS25 data: u_i = 25 + (-50 ln(0.01 i))^(2/3), i = 1..99.
_HS25_U = [25 + (-50 * math.log(0.01 * i)) ** (2 / 3) for i in range(1, 100)]


def _hs25(x, m):
    # (u_i - x2)^x3 written as exp(x3 log(u_i - x2)); u_i - x2 >= u_99 - 25.6 > 0 in the box.
    r = m.vec([-0.01 * i + m.exp(-m.exp(x[2] * m.log(u - x[1])) / x[0]) for i, u in enumerate(_HS25_U, 1)])
    return m.sum(r**2)


# HS57 data (a_i, b_i), i = 1..44.
_HS57_A = [8] * 2 + [10] * 4 + [12] * 4 + [14] * 3 + [16] * 3 + [18] * 2 + [20] * 3 + [22] * 3 + [24] * 3 \
    + [26] * 3 + [28] * 2 + [30] * 3 + [32] * 2 + [34] + [36] * 2 + [38] * 2 + [40] + [42]
_HS57_B = [0.49, 0.49, 0.48, 0.47, 0.48, 0.47, 0.46, 0.46, 0.45, 0.43, 0.45, 0.43, 0.43, 0.44, 0.43, 0.43,
           0.46, 0.45, 0.42, 0.42, 0.43, 0.41, 0.41, 0.40, 0.42, 0.40, 0.40, 0.41, 0.40, 0.41, 0.41, 0.40,
           0.40, 0.40, 0.38, 0.41, 0.40, 0.40, 0.41, 0.38, 0.40, 0.40, 0.39, 0.39]


def _hs57(x, m):
    r = m.vec([b - x[0] - (0.49 - x[0]) * m.exp(-x[1] * (a - 8)) for a, b in zip(_HS57_A, _HS57_B)])
    return m.sum(r**2)


def _hs59(x, m):
    x1, x2 = x[0], x[1]
    return (
        -75.196 + 3.8112 * x1 + 0.0020567 * x1**3 - 1.0345e-5 * x1**4 + 6.8306 * x2 - 0.030234 * x1 * x2
        + 1.28134e-3 * x2 * x1**2 + 2.266e-7 * x1**4 * x2 - 0.25645 * x2**2 + 0.0034604 * x2**3
        - 1.3514e-5 * x2**4 + 28.106 / (x2 + 1) + 5.2375e-6 * x1**2 * x2**2 + 6.3e-8 * x1**3 * x2**2
        - 7e-10 * x1**3 * x2**3 - 3.405e-4 * x1 * x2**2 + 1.6638e-6 * x1 * x2**3
        + 2.8673 * m.exp(0.0005 * x1 * x2) - 3.5256e-5 * x1**3 * x2 - 0.12694 * x1**2
    )


_HS51_F = lambda x, m: (x[0] - x[1]) ** 2 + (x[1] + x[2] - 2) ** 2 + (x[3] - 1) ** 2 + (x[4] - 1) ** 2  # noqa: E731
_HS52_EQ = lambda x, m: m.vec([x[0] + 3 * x[1], x[2] + x[3] - 2 * x[4], x[1] - x[4]])  # noqa: E731


_FIRST: list[Spec] = [
    # HS1: Rosenbrock, bound (inactive at the optimum).
    Spec(name="hs001", n=2, x0=[-2.0, 1.0], cost=_rosen, x_lb=[-INF, -1.5], f_opt=0.0),
    # HS3: bound, active at the optimum.
    Spec(name="hs003", n=2, x0=[10.0, 1.0], cost=lambda x, m: x[1] + 1e-5 * (x[1] - x[0]) ** 2,
         x_lb=[-INF, 0.0], f_opt=0.0),
    # HS4: both bounds active.
    Spec(name="hs004", n=2, x0=[1.125, 0.125], cost=lambda x, m: (x[0] + 1) ** 3 / 3 + x[1],
         x_lb=[1.0, 0.0], f_opt=8 / 3),
    # HS5: box, nonconvex (sin), interior optimum.
    Spec(name="hs005", n=2, x0=[0.0, 0.0],
         cost=lambda x, m: m.sin(x[0] + x[1]) + (x[0] - x[1]) ** 2 - 1.5 * x[0] + 2.5 * x[1] + 1,
         x_lb=[-1.5, -3.0], x_ub=[4.0, 3.0], f_opt=-math.sqrt(3) / 2 - math.pi / 3),
    # HS8: constant objective, two nonlinear equalities (a feasibility problem).
    Spec(name="hs008", n=2, x0=[2.0, 1.0], cost=lambda x, m: 0 * x[0] - 1.0,
         eq=lambda x, m: m.vec([x[0] ** 2 + x[1] ** 2 - 25, x[0] * x[1] - 9]), f_opt=-1.0),
    # HS9: trigonometric objective, linear equality; infinitely many minimisers x = (12k - 3, 16k - 4), same f*
    # (from x0 Ipopt lands on k = -39).
    Spec(name="hs009", n=2, x0=[0.0, 0.0],
         cost=lambda x, m: m.sin(math.pi * x[0] / 12) * m.cos(math.pi * x[1] / 16),
         eq=lambda x, m: m.vec([4 * x[0] - 3 * x[1]]), f_opt=-0.5),
    # HS10: linear objective, one nonconvex inequality.
    Spec(name="hs010", n=2, x0=[-10.0, 10.0], cost=lambda x, m: x[0] - x[1],
         ineq=lambda x, m: m.vec([-3 * x[0] ** 2 + 2 * x[0] * x[1] - x[1] ** 2 + 1]),
         ineq_lb=0.0, ineq_ub=INF, f_opt=-1.0),
    # HS11: one inequality.
    Spec(name="hs011", n=2, x0=[4.9, 0.1], cost=lambda x, m: (x[0] - 5) ** 2 + x[1] ** 2 - 25,
         ineq=lambda x, m: m.vec([-x[0] ** 2 + x[1]]), ineq_lb=0.0, ineq_ub=INF, f_opt=-8.498464223),
    # HS12: one convex inequality.
    Spec(name="hs012", n=2, x0=[0.0, 0.0],
         cost=lambda x, m: 0.5 * x[0] ** 2 + x[1] ** 2 - x[0] * x[1] - 7 * x[0] - 7 * x[1],
         ineq=lambda x, m: m.vec([25 - 4 * x[0] ** 2 - x[1] ** 2]), ineq_lb=0.0, ineq_ub=INF, f_opt=-30.0),
    # HS16: Rosenbrock, two inequalities, bounds.
    Spec(name="hs016", n=2, x0=[-2.0, 1.0], cost=_rosen,
         ineq=lambda x, m: m.vec([x[0] + x[1] ** 2, x[0] ** 2 + x[1]]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[-0.5, -INF], x_ub=[0.5, 1.0], f_opt=0.25),
    # HS17: Rosenbrock, two inequalities, bounds; one active inequality has a zero multiplier.
    Spec(name="hs017", n=2, x0=[-2.0, 1.0], cost=_rosen,
         ineq=lambda x, m: m.vec([x[1] ** 2 - x[0], x[0] ** 2 - x[1]]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[-0.5, -INF], x_ub=[0.5, 1.0], f_opt=1.0, unique_multipliers=False),
    # HS18: two inequalities, bounds.
    Spec(name="hs018", n=2, x0=[2.0, 2.0], cost=lambda x, m: 0.01 * x[0] ** 2 + x[1] ** 2,
         ineq=lambda x, m: m.vec([x[0] * x[1] - 25, x[0] ** 2 + x[1] ** 2 - 25]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[2.0, 0.0], x_ub=[50.0, 50.0], f_opt=5.0),
    # HS19: cubic objective, two inequalities (one nonconvex), bounds.
    Spec(name="hs019", n=2, x0=[20.1, 5.84], cost=lambda x, m: (x[0] - 10) ** 3 + (x[1] - 20) ** 3,
         ineq=lambda x, m: m.vec([(x[0] - 5) ** 2 + (x[1] - 5) ** 2 - 100, -(x[1] - 5) ** 2 - (x[0] - 6) ** 2 + 82.81]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=[13.0, 0.0], x_ub=[100.0, 100.0], f_opt=-6961.81381),
    # HS22: two inequalities (linear, nonlinear), both active.
    Spec(name="hs022", n=2, x0=[2.0, 2.0], cost=lambda x, m: (x[0] - 2) ** 2 + (x[1] - 1) ** 2,
         ineq=lambda x, m: m.vec([2 - x[0] - x[1], x[1] - x[0] ** 2]), ineq_lb=0.0, ineq_ub=INF, f_opt=1.0),
    # HS23: five inequalities, bounds.
    Spec(name="hs023", n=2, x0=[3.0, 1.0], cost=lambda x, m: x[0] ** 2 + x[1] ** 2,
         ineq=lambda x, m: m.vec([x[0] + x[1] - 1, x[0] ** 2 + x[1] ** 2 - 1, 9 * x[0] ** 2 + x[1] ** 2 - 9,
                                  x[0] ** 2 - x[1], x[1] ** 2 - x[0]]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=-50.0, x_ub=50.0, f_opt=2.0),
    # HS24: nonconvex objective, three linear inequalities, bounds.
    Spec(name="hs024", n=2, x0=[1.0, 0.5],
         cost=lambda x, m: ((x[0] - 3) ** 2 - 9) * x[1] ** 3 / (27 * math.sqrt(3)),
         ineq=lambda x, m: m.vec([x[0] / math.sqrt(3) - x[1], x[0] + math.sqrt(3) * x[1],
                                  6 - x[0] - math.sqrt(3) * x[1]]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=0.0, f_opt=-1.0),
    # HS25: 99-term data fitting, bounds.
    Spec(name="hs025", n=3, x0=[100.0, 12.5, 3.0], cost=_hs25, x_lb=[0.1, 0.0, 0.0], x_ub=[100.0, 25.6, 5.0],
         f_opt=0.0),
    # HS26: one nonlinear equality, singular Hessian at the optimum (x* known only to ~1e-5 from f).
    Spec(name="hs026", n=3, x0=[-2.6, 2.0, 2.0], cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 4,
         eq=lambda x, m: m.vec([(1 + x[1] ** 2) * x[0] + x[2] ** 4 - 3]), f_opt=0.0),
    # HS27: one nonlinear equality.
    Spec(name="hs027", n=3, x0=[2.0, 2.0, 2.0], cost=lambda x, m: 0.01 * (x[0] - 1) ** 2 + (x[1] - x[0] ** 2) ** 2,
         eq=lambda x, m: m.vec([x[0] + x[2] ** 2 + 1]), f_opt=0.04),
    # HS28: convex quadratic, one linear equality.
    Spec(name="hs028", n=3, x0=[-4.0, 1.0, 1.0], cost=lambda x, m: (x[0] + x[1]) ** 2 + (x[1] + x[2]) ** 2,
         eq=lambda x, m: m.vec([x[0] + 2 * x[1] + 3 * x[2] - 1]), f_opt=0.0),
    # HS29: nonconvex objective, one inequality (four symmetric global minimisers).
    Spec(name="hs029", n=3, x0=[1.0, 1.0, 1.0], cost=lambda x, m: -x[0] * x[1] * x[2],
         ineq=lambda x, m: m.vec([48 - x[0] ** 2 - 2 * x[1] ** 2 - 4 * x[2] ** 2]), ineq_lb=0.0, ineq_ub=INF,
         f_opt=-16 * math.sqrt(2)),
    # HS30: one inequality, bounds; the active inequality and bound have parallel gradients (LICQ fails).
    Spec(name="hs030", n=3, x0=[1.0, 1.0, 1.0], cost=lambda x, m: x[0] ** 2 + x[1] ** 2 + x[2] ** 2,
         ineq=lambda x, m: m.vec([x[0] ** 2 + x[1] ** 2 - 1]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[1.0, -10.0, -10.0], x_ub=10.0, f_opt=1.0, unique_multipliers=False),
    # HS31: one inequality, bounds.
    Spec(name="hs031", n=3, x0=[1.0, 1.0, 1.0], cost=lambda x, m: 9 * x[0] ** 2 + x[1] ** 2 + 9 * x[2] ** 2,
         ineq=lambda x, m: m.vec([x[0] * x[1] - 1]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[-10.0, 1.0, -10.0], x_ub=[10.0, 10.0, 1.0], f_opt=6.0),
    # HS32: equality + inequality + bounds; an active bound has a zero multiplier.
    Spec(name="hs032", n=3, x0=[0.1, 0.7, 0.2],
         cost=lambda x, m: (x[0] + 3 * x[1] + x[2]) ** 2 + 4 * (x[0] - x[1]) ** 2,
         eq=lambda x, m: m.vec([1 - x[0] - x[1] - x[2]]),
         ineq=lambda x, m: m.vec([6 * x[1] + 4 * x[2] - x[0] ** 3 - 3]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=0.0, f_opt=1.0, unique_multipliers=False),
    # HS33: cubic objective, two nonconvex inequalities, bounds.
    Spec(name="hs033", n=3, x0=[0.0, 0.0, 3.0], cost=lambda x, m: (x[0] - 1) * (x[0] - 2) * (x[0] - 3) + x[2],
         ineq=lambda x, m: m.vec([x[2] ** 2 - x[0] ** 2 - x[1] ** 2, x[0] ** 2 + x[1] ** 2 + x[2] ** 2 - 4]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=0.0, x_ub=[INF, INF, 5.0], f_opt=math.sqrt(2) - 6),
    # HS34: linear objective, exponential inequalities, bounds.
    Spec(name="hs034", n=3, x0=[0.0, 1.05, 2.9], cost=lambda x, m: -x[0],
         ineq=lambda x, m: m.vec([x[1] - m.exp(x[0]), x[2] - m.exp(x[1])]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=0.0, x_ub=[100.0, 100.0, 10.0], f_opt=-math.log(math.log(10))),
    # HS36: cubic objective, one linear inequality, bounds (two upper bounds active).
    Spec(name="hs036", n=3, x0=[10.0, 10.0, 10.0], cost=lambda x, m: -x[0] * x[1] * x[2],
         ineq=lambda x, m: m.vec([72 - x[0] - 2 * x[1] - 2 * x[2]]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=0.0, x_ub=[20.0, 11.0, 42.0], f_opt=-3300.0),
    # HS37: cubic objective, two linear inequalities, bounds.
    Spec(name="hs037", n=3, x0=[10.0, 10.0, 10.0], cost=lambda x, m: -x[0] * x[1] * x[2],
         ineq=lambda x, m: m.vec([72 - x[0] - 2 * x[1] - 2 * x[2], x[0] + 2 * x[1] + 2 * x[2]]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=0.0, x_ub=42.0, f_opt=-3456.0),
    # HS38: Colville #4 (Wood function), box.
    Spec(name="hs038", n=4, x0=[-3.0, -1.0, -3.0, -1.0],
         cost=lambda x, m: 100 * (x[1] - x[0] ** 2) ** 2 + (1 - x[0]) ** 2 + 90 * (x[3] - x[2] ** 2) ** 2
         + (1 - x[2]) ** 2 + 10.1 * ((x[1] - 1) ** 2 + (x[3] - 1) ** 2) + 19.8 * (x[1] - 1) * (x[3] - 1),
         x_lb=-10.0, x_ub=10.0, f_opt=0.0),
    # HS41: cubic objective, one linear equality, bounds.
    Spec(name="hs041", n=4, x0=[2.0, 2.0, 2.0, 2.0], cost=lambda x, m: 2 - x[0] * x[1] * x[2],
         eq=lambda x, m: m.vec([x[0] + 2 * x[1] + 2 * x[2] - x[3]]),
         x_lb=0.0, x_ub=[1.0, 1.0, 1.0, 2.0], f_opt=52 / 27),
    # HS42: two equalities (linear, nonlinear).
    Spec(name="hs042", n=4, x0=[1.0, 1.0, 1.0, 1.0],
         cost=lambda x, m: (x[0] - 1) ** 2 + (x[1] - 2) ** 2 + (x[2] - 3) ** 2 + (x[3] - 4) ** 2,
         eq=lambda x, m: m.vec([x[0] - 2, x[2] ** 2 + x[3] ** 2 - 2]), f_opt=28 - 10 * math.sqrt(2)),
    # HS45: box, all upper bounds active.
    Spec(name="hs045", n=5, x0=[2.0] * 5, cost=lambda x, m: 2 - x[0] * x[1] * x[2] * x[3] * x[4] / 120,
         x_lb=0.0, x_ub=[1.0, 2.0, 3.0, 4.0, 5.0], f_opt=1.0),
    # HS46: two nonlinear equalities, degenerate (quartic/sextic) optimum (x* known only to ~1e-5 from f).
    Spec(name="hs046", n=5, x0=[math.sqrt(2) / 2, 1.75, 0.5, 2.0, 2.0],
         cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[2] - 1) ** 2 + (x[3] - 1) ** 4 + (x[4] - 1) ** 6,
         eq=lambda x, m: m.vec([x[0] ** 2 * x[3] + m.sin(x[3] - x[4]) - 1, x[1] + x[2] ** 4 * x[3] ** 2 - 2]),
         f_opt=0.0),
    # HS47: three nonlinear equalities; f* = 0 is a local minimum only (the cubic term lets f go below 0),
    # x* known only to ~1e-5 from f.
    Spec(name="hs047", n=5, x0=[2.0, math.sqrt(2), -1.0, 2 - math.sqrt(2), 0.5],
         cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 3 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 4,
         eq=lambda x, m: m.vec([x[0] + x[1] ** 2 + x[2] ** 3 - 3, x[1] - x[2] ** 2 + x[3] - 1, x[0] * x[4] - 1]),
         f_opt=0.0),
    # HS48: convex quadratic, two linear equalities.
    Spec(name="hs048", n=5, x0=[3.0, 5.0, -3.0, 2.0, -2.0],
         cost=lambda x, m: (x[0] - 1) ** 2 + (x[1] - x[2]) ** 2 + (x[3] - x[4]) ** 2,
         eq=lambda x, m: m.vec([x[0] + x[1] + x[2] + x[3] + x[4] - 5, x[2] - 2 * (x[3] + x[4]) + 3]), f_opt=0.0),
    # HS49: two linear equalities, degenerate (quartic/sextic) optimum (x* known only to ~1e-3 from f).
    Spec(name="hs049", n=5, x0=[10.0, 7.0, 2.0, -3.0, 0.8],
         cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[2] - 1) ** 2 + (x[3] - 1) ** 4 + (x[4] - 1) ** 6,
         eq=lambda x, m: m.vec([x[0] + x[1] + x[2] + 4 * x[3] - 7, x[2] + 5 * x[4] - 6]), f_opt=0.0),
    # HS50: three linear equalities.
    Spec(name="hs050", n=5, x0=[35.0, -31.0, 11.0, 5.0, -5.0],
         cost=lambda x, m: (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2 + (x[2] - x[3]) ** 4 + (x[3] - x[4]) ** 2,
         eq=lambda x, m: m.vec([x[0] + 2 * x[1] + 3 * x[2] - 6, x[1] + 2 * x[2] + 3 * x[3] - 6,
                                x[2] + 2 * x[3] + 3 * x[4] - 6]), f_opt=0.0),
    # HS51: convex quadratic, three linear equalities.
    Spec(name="hs051", n=5, x0=[2.5, 0.5, 2.0, -1.0, 0.5], cost=_HS51_F,
         eq=lambda x, m: m.vec([x[0] + 3 * x[1] - 4, x[2] + x[3] - 2 * x[4], x[1] - x[4]]), f_opt=0.0),
    # HS52: convex quadratic, three linear equalities.
    Spec(name="hs052", n=5, x0=[2.0] * 5,
         cost=lambda x, m: (4 * x[0] - x[1]) ** 2 + (x[1] + x[2] - 2) ** 2 + (x[3] - 1) ** 2 + (x[4] - 1) ** 2,
         eq=_HS52_EQ, f_opt=1859 / 349),
    # HS53: convex quadratic, three linear equalities, bounds (inactive).
    Spec(name="hs053", n=5, x0=[2.0] * 5, cost=_HS51_F, eq=_HS52_EQ, x_lb=-10.0, x_ub=10.0, f_opt=176 / 43),
    # HS56: four trigonometric equalities; x4..x7 are determined only up to sign and period.
    Spec(name="hs056", n=7,
         x0=[1.0, 1.0, 1.0] + [math.asin(math.sqrt(1 / 4.2))] * 3 + [math.asin(math.sqrt(5 / 7.2))],
         cost=lambda x, m: -x[0] * x[1] * x[2],
         eq=lambda x, m: m.vec([x[0] - 4.2 * m.sin(x[3]) ** 2, x[1] - 4.2 * m.sin(x[4]) ** 2,
                                x[2] - 4.2 * m.sin(x[5]) ** 2,
                                x[0] + 2 * x[1] + 2 * x[2] - 7.2 * m.sin(x[6]) ** 2]),
         f_opt=-3.456),
    # HS59: polynomial/exponential objective, three nonlinear inequalities, bounds; several local minima.
    # The book prints f* = -7.804226324, but its own x* = (13.55010424, 51.66018129) gives -7.80278 with the
    # book's coefficients; f_opt is the value at the computed minimiser (CUTEst's "corrected" HS59: -7.8027894).
    Spec(name="hs059", n=2, x0=[90.0, 10.0], cost=_hs59,
         ineq=lambda x, m: m.vec([x[0] * x[1] - 700, x[1] - x[0] ** 2 / 125, (x[1] - 50) ** 2 - 5 * (x[0] - 55)]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=0.0, x_ub=[75.0, 65.0], f_opt=-7.8027894716),
]

# Correctly transcribed (checked against the book's x* and f*), but Ipopt from the published x0 does not
# reach the published optimum: f_opt is the book's value, the comment says what Ipopt reaches.
_FIRST_LOCAL: list[Spec] = [
    # HS2: Rosenbrock, active bound x2 >= 1.5; book x* = (1.224370749, 1.5), f* = 0.0504261879.
    # From x0 Ipopt reaches the other local minimum f = 4.941229291 at x = (-1.2210262, 1.5).
    Spec(name="hs002", n=2, x0=[-2.0, 1.0], cost=_rosen, x_lb=[-INF, 1.5], f_opt=0.0504261879),
    # HS20: Rosenbrock, three inequalities, bounds.
    # From x0 (x1 = -2, pushed to the bound -0.5) Ipopt reaches the local minimum f = 40.19872719 at
    # x = (-0.5, sqrt(3)/2); from some perturbed starts (x2 < 0) it stops at a point of local infeasibility.
    Spec(name="hs020", n=2, x0=[-2.0, 1.0], cost=_rosen,
         ineq=lambda x, m: m.vec([x[0] + x[1] ** 2, x[0] ** 2 + x[1], x[0] ** 2 + x[1] ** 2 - 1]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=[-0.5, -INF], x_ub=[0.5, INF], f_opt=81.5 - 25 * math.sqrt(3)),
    # HS44: bilinear (indefinite) objective, six linear inequalities, bounds; has other local minima.
    # From x0 Ipopt reaches the local minimum f = -13 at x = (3, 0, 4, 0).
    Spec(name="hs044", n=4, x0=[0.0, 0.0, 0.0, 0.0],
         cost=lambda x, m: x[0] - x[1] - x[2] - x[0] * x[2] + x[0] * x[3] + x[1] * x[2] - x[1] * x[3],
         ineq=lambda x, m: m.vec([8 - x[0] - 2 * x[1], 12 - 4 * x[0] - x[1], 12 - 3 * x[0] - 4 * x[1],
                                  8 - 2 * x[2] - x[3], 8 - x[2] - 2 * x[3], 5 - x[2] - x[3]]),
         ineq_lb=0.0, ineq_ub=INF, x_lb=0.0, f_opt=-15.0),
    # HS55: six linear equalities of rank 5 (LICQ fails), bounds.
    # The feasible set is the segment x1 = t in [0, 1], f = 16/3 + t/3 + exp(t - t^2): local minima at both
    # ends; from x0 Ipopt reaches t = 1, f = 20/3.
    Spec(name="hs055", n=6, x0=[1.0, 2.0, 0.0, 0.0, 0.0, 2.0],
         cost=lambda x, m: x[0] + 2 * x[1] + 4 * x[4] + m.exp(x[0] * x[3]),
         eq=lambda x, m: m.vec([x[0] + 2 * x[1] + 5 * x[4] - 6, x[0] + x[1] + x[2] - 3, x[3] + x[4] + x[5] - 2,
                                x[0] + x[3] - 1, x[1] + x[4] - 2, x[2] + x[5] - 2]),
         x_lb=0.0, x_ub=[1.0, INF, INF, 1.0, INF, INF], f_opt=19 / 3, unique_multipliers=False),
    # HS57: 44-term data fitting, one nonlinear inequality, bounds.
    # From x0 Ipopt drifts to x2 ~ 1.9e5 (f -> 0.030647619 as x2 -> inf, no minimum there); the book's
    # x* = (0.419952675, 1.284845629) does give f = 0.0284596697 here, so the transcription is right.
    Spec(name="hs057", n=2, x0=[0.42, 5.0], cost=_hs57,
         ineq=lambda x, m: m.vec([0.49 * x[1] - x[0] * x[1] - 0.09]), ineq_lb=0.0, ineq_ub=INF,
         x_lb=[0.4, -4.0], f_opt=0.02845966972),
]


SQ2 = math.sqrt(2.0)


def _sumsq(x: Any, idx: range) -> Any:
    out = x[idx[0]] ** 2
    for i in idx[1:]:
        out = out + x[i] ** 2
    return out


def _prod(x: Any, idx: range) -> Any:
    out = x[idx[0]]
    for i in idx[1:]:
        out = out * x[i]
    return out


def _mono(x: Any, coef: float, expo: list[float]) -> Any:
    """coef * prod_i x_i ** expo_i (zero exponents skipped)."""
    out = None
    for i, e in enumerate(expo):
        if e == 0:
            continue
        t = x[i] if e == 1 else x[i] ** e
        out = t if out is None else out * t
    return coef * out


# --- HS78 / HS80 / HS81 share the constraints ------------------------------------------------
def _hs78_eq(x: Any, m: Any) -> Any:
    return m.vec(
        [
            _sumsq(x, range(5)) - 10,
            x[1] * x[2] - 5 * x[3] * x[4],
            x[0] ** 3 + x[1] ** 3 + 1,
        ]
    )


# --- HS74 / HS75 ------------------------------------------------------------------------------
def _hs74_cost(x: Any, m: Any) -> Any:
    return 3 * x[0] + 1e-6 * x[0] ** 3 + 2 * x[1] + (2e-6 / 3) * x[1] ** 3


def _hs74_eq(x: Any, m: Any) -> Any:
    return m.vec(
        [
            1000 * m.sin(-x[2] - 0.25) + 1000 * m.sin(-x[3] - 0.25) + 894.8 - x[0],
            1000 * m.sin(x[2] - 0.25) + 1000 * m.sin(x[2] - x[3] - 0.25) + 894.8 - x[1],
            1000 * m.sin(x[3] - 0.25) + 1000 * m.sin(x[3] - x[2] - 0.25) + 1294.8,
        ]
    )


def _hs74(name: str, a: float, f_opt: float) -> Spec:
    return Spec(
        name=name,
        n=4,
        x0=[0.0, 0.0, 0.0, 0.0],
        cost=_hs74_cost,
        eq=_hs74_eq,
        # -a <= x4 - x3 <= a (HS: two rows x4 - x3 + a >= 0, x3 - x4 + a >= 0).
        ineq=lambda x, m: m.vec([x[3] - x[2]]),
        ineq_lb=-a,
        ineq_ub=a,
        x_lb=[0.0, 0.0, -a, -a],
        x_ub=[1200.0, 1200.0, a, a],
        f_opt=f_opt,
    )


# --- HS83 (Colville / Himmelblau) ------------------------------------------------------------
def _hs83_ineq(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5 = x[0], x[1], x[2], x[3], x[4]
    return m.vec(
        [
            85.334407 + 0.0056858 * x2 * x5 + 0.0006262 * x1 * x4 - 0.0022053 * x3 * x5,
            80.51249 + 0.0071317 * x2 * x5 + 0.0029955 * x1 * x2 + 0.0021813 * x3**2 - 90,
            9.300961 + 0.0047026 * x3 * x5 + 0.0012547 * x1 * x3 + 0.0019085 * x3 * x4 - 20,
        ]
    )


# --- HS84 -------------------------------------------------------------------------------------
_A84 = [
    -24345.0, -8720288.849, 150512.5253, -156.6950325, 476470.3222, 729482.8271,
    -145421.402, 2931.1506, -40.427932, 5106.192, 15711.36,
    -155011.1084, 4360.53352, 12.9492344, 10236.884, 13176.786,
    -326669.5104, 7390.68412, -27.8986976, 16643.076, 30988.146,
]


def _hs84_row(x: Any, a: list[float]) -> Any:
    return x[0] * (a[0] + a[1] * x[1] + a[2] * x[2] + a[3] * x[3] + a[4] * x[4])


# --- HS86 / HS117 (Colville 1 and its dual) ---------------------------------------------------
_A86 = [
    [-16.0, 2.0, 0.0, 1.0, 0.0],
    [0.0, -2.0, 0.0, 4.0, 2.0],
    [-3.5, 0.0, 2.0, 0.0, 0.0],
    [0.0, -2.0, 0.0, -4.0, -1.0],
    [0.0, -9.0, -2.0, 1.0, -2.8],
    [2.0, 0.0, -4.0, 0.0, 0.0],
    [-1.0, -1.0, -1.0, -1.0, -1.0],
    [-1.0, -2.0, -3.0, -2.0, -1.0],
    [1.0, 2.0, 3.0, 4.0, 5.0],
    [1.0, 1.0, 1.0, 1.0, 1.0],
]
_B86 = [-40.0, -2.0, -0.25, -4.0, -4.0, -1.0, -40.0, -60.0, 5.0, 1.0]
_C86 = [
    [30.0, -20.0, -10.0, 32.0, -10.0],
    [-20.0, 39.0, -6.0, -31.0, 32.0],
    [-10.0, -6.0, 10.0, -6.0, -10.0],
    [32.0, -31.0, -6.0, 39.0, -20.0],
    [-10.0, 32.0, -10.0, -20.0, 30.0],
]
_D86 = [4.0, 8.0, 10.0, 6.0, 2.0]
_E86 = [-15.0, -27.0, -36.0, -18.0, -12.0]


def _lin(x: Any, coefs: list[float], offset: int = 0) -> Any:
    out = None
    for j, c in enumerate(coefs):
        if c == 0:
            continue
        t = c * x[offset + j]
        out = t if out is None else out + t
    return out


def _hs86_cost(x: Any, m: Any) -> Any:
    out = _lin(x, _E86)
    for i in range(5):
        for j in range(5):
            out = out + _C86[i][j] * x[i] * x[j]
    for j in range(5):
        out = out + _D86[j] * x[j] ** 3
    return out


def _hs86_ineq(x: Any, m: Any) -> Any:
    return m.vec([_lin(x, _A86[i]) - _B86[i] for i in range(10)])


def _hs117_cost(x: Any, m: Any) -> Any:
    out = -_lin(x, _B86)
    for k in range(5):
        for j in range(5):
            out = out + _C86[k][j] * x[10 + k] * x[10 + j]
    for j in range(5):
        out = out + 2 * _D86[j] * x[10 + j] ** 3
    return out


def _hs117_ineq(x: Any, m: Any) -> Any:
    rows = []
    for j in range(5):
        r = 2 * _lin(x, [_C86[k][j] for k in range(5)], 10) + 3 * _D86[j] * x[10 + j] ** 2 + _E86[j]
        r = r - _lin(x, [_A86[k][j] for k in range(10)])
        rows.append(r)
    return m.vec(rows)


# --- HS95-HS98 --------------------------------------------------------------------------------
def _hs95_cost(x: Any, m: Any) -> Any:
    return 4.3 * x[0] + 31.8 * x[1] + 63.3 * x[2] + 15.8 * x[3] + 68.5 * x[4] + 4.7 * x[5]


def _hs95_rows(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5, x6 = x[0], x[1], x[2], x[3], x[4], x[5]
    return [
        17.1 * x1 + 38.2 * x2 + 204.2 * x3 + 212.3 * x4 + 623.4 * x5 + 1495.5 * x6
        - 169 * x1 * x3 - 3580 * x3 * x5 - 3810 * x4 * x5 - 18500 * x4 * x6 - 24300 * x5 * x6,
        17.9 * x1 + 36.8 * x2 + 113.9 * x3 + 169.7 * x4 + 337.8 * x5 + 1385.2 * x6
        - 139 * x1 * x3 - 2450 * x4 * x5 - 16600 * x4 * x6 - 17200 * x5 * x6,
        -273 * x2 - 70 * x4 - 819 * x5 + 26000 * x4 * x5,
        159.9 * x1 - 311 * x2 + 587 * x4 + 391 * x5 + 2198 * x6 - 14000 * x1 * x6,
    ]


def _hs95(name: str, b: list[float], f_opt: float) -> Spec:
    return Spec(
        name=name,
        n=6,
        x0=[0.0] * 6,
        cost=_hs95_cost,
        ineq=lambda x, m: m.vec([r - bi for r, bi in zip(_hs95_rows(x, m), b)]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        x_ub=[0.31, 0.046, 0.068, 0.042, 0.028, 0.0134],
        f_opt=f_opt,
    )


# --- HS99 -------------------------------------------------------------------------------------
_A99 = [50.0, 50.0, 75.0, 75.0, 75.0, 100.0, 100.0]
_DT99 = [25.0, 25.0, 50.0, 50.0, 50.0, 90.0, 90.0]


def _hs99_rqs(x: Any, m: Any) -> tuple[Any, Any, Any]:
    """r_8, q_8, s_8 of HS99: r_i = r_{i-1} + a_i dt_i cos x_{i-1},
    q_i = q_{i-1} + dt_i s_{i-1} + dt_i^2 (a_i sin x_{i-1} - b) / 2,
    s_i = s_{i-1} + dt_i (a_i sin x_{i-1} - b); r_1 = q_1 = s_1 = 0, b = 32."""
    acc = _A99[0] * m.sin(x[0]) - 32.0
    r = _A99[0] * _DT99[0] * m.cos(x[0])
    q = 0.5 * _DT99[0] ** 2 * acc
    s = _DT99[0] * acc
    for i in range(1, 7):
        acc = _A99[i] * m.sin(x[i]) - 32.0
        r = r + _A99[i] * _DT99[i] * m.cos(x[i])
        q = q + 0.5 * _DT99[i] ** 2 * acc + _DT99[i] * s
        s = s + _DT99[i] * acc
    return r, q, s


def _hs99_cost(x: Any, m: Any) -> Any:
    r, _, _ = _hs99_rqs(x, m)
    return -(r**2)


def _hs99_eq(x: Any, m: Any) -> Any:
    _, q, s = _hs99_rqs(x, m)
    return m.vec([q - 1e5, s - 1e3])


# --- HS101-HS103 (posynomials) ----------------------------------------------------------------
def _hs101_f(x: Any, a: float) -> Any:
    return (
        _mono(x, 10.0, [1, -1, 0, 2, 0, -3, a])
        + _mono(x, 15.0, [-1, -2, 1, 1, -1, 0, -0.5])
        + _mono(x, 20.0, [-2, 1, 0, -1, -2, 1, 0])
        + _mono(x, 25.0, [2, 2, -1, 0, 0.5, -2, 1])
    )


def _hs101_ineq(a: float) -> Any:
    def ineq(x: Any, m: Any) -> Any:
        f = _hs101_f(x, a)
        return m.vec(
            [
                1 - _mono(x, 0.5, [0.5, 0, -1, 0, 0, -2, 1]) - _mono(x, 0.7, [3, 1, -2, 0, 0, 1, 0.5])
                - _mono(x, 0.2, [0, -1, 1, -0.5, 0, 2 / 3, 0.25]),
                1 - _mono(x, 1.3, [-0.5, 1, -1, 0, -1, 1, 0]) - _mono(x, 0.8, [0, 0, 1, -1, -1, 2, 0])
                - _mono(x, 3.1, [-1, 0.5, 0, -2, -1, 1 / 3, 0]),
                1 - _mono(x, 2.0, [1, 0, -1.5, 0, 1, -1, 1 / 3]) - _mono(x, 0.1, [0, 1, -0.5, 0, 1, -1, -0.5])
                - _mono(x, 1.0, [-1, 1, 0.5, 0, 1, 0, 0]) - _mono(x, 0.65, [0, -2, 1, 0, 1, -1, 1]),
                1 - _mono(x, 0.2, [-2, 1, 0, -1, 0.5, 0, 1 / 3]) - _mono(x, 0.3, [0.5, 2, 1, 1 / 3, -2 / 3, 0, 0.25])
                - _mono(x, 0.4, [-3, -2, 1, 0, 1, 0, 0.75]) - _mono(x, 0.5, [0, 0, -2, 1, 0, 0, 0.5]),
                f,
            ]
        )

    return ineq


def _hs101(name: str, a: float, f_opt: float) -> Spec:
    return Spec(
        name=name,
        n=7,
        x0=[6.0] * 7,
        cost=lambda x, m: _hs101_f(x, a),
        ineq=_hs101_ineq(a),
        # g1..g4 >= 0; 100 <= f <= 3000.
        ineq_lb=[0.0, 0.0, 0.0, 0.0, 100.0],
        ineq_ub=[INF, INF, INF, INF, 3000.0],
        x_lb=[0.1] * 6 + [0.01],
        x_ub=10.0,
        f_opt=f_opt,
    )


# --- HS104 ------------------------------------------------------------------------------------
def _hs104_f(x: Any) -> Any:
    return 0.4 * x[0] ** 0.67 * x[6] ** -0.67 + 0.4 * x[1] ** 0.67 * x[7] ** -0.67 + 10 - x[0] - x[1]


def _hs104_ineq(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5, x6, x7, x8 = (x[i] for i in range(8))
    return m.vec(
        [
            1 - 0.0588 * x5 * x7 - 0.1 * x1,
            1 - 0.0588 * x6 * x8 - 0.1 * x1 - 0.1 * x2,
            1 - 4 * x3 / x5 - 2 * x3**-0.71 / x5 - 0.0588 * x3**-1.3 * x7,
            1 - 4 * x4 / x6 - 2 * x4**-0.71 / x6 - 0.0588 * x4**-1.3 * x8,
            _hs104_f(x),
        ]
    )


# --- HS107 / HS109 (power flow) ---------------------------------------------------------------
def _hs107_eq(x: Any, m: Any) -> Any:
    c = (48.4 / 50.176) * math.sin(0.25)
    d = (48.4 / 50.176) * math.cos(0.25)
    x1, x2, x3, x4, x5, x6, x7, x8, x9 = (x[i] for i in range(9))
    y1, y2 = m.sin(x8), m.cos(x8)
    y3, y4 = m.sin(x9), m.cos(x9)
    y5, y6 = m.sin(x8 - x9), m.cos(x8 - x9)
    return m.vec(
        [
            0.4 - x1 + 2 * c * x5**2 - x5 * x6 * (d * y1 + c * y2) - x5 * x7 * (d * y3 + c * y4),
            0.4 - x2 + 2 * c * x6**2 + x5 * x6 * (d * y1 - c * y2) + x6 * x7 * (d * y5 - c * y6),
            0.8 + 2 * c * x7**2 + x5 * x7 * (d * y3 - c * y4) - x6 * x7 * (d * y5 + c * y6),
            0.2 - x3 + 2 * d * x5**2 + x5 * x6 * (c * y1 - d * y2) + x5 * x7 * (c * y3 - d * y4),
            0.2 - x4 + 2 * d * x6**2 - x5 * x6 * (c * y1 + d * y2) - x6 * x7 * (c * y5 + d * y6),
            -0.337 + 2 * d * x7**2 - x5 * x7 * (c * y3 + d * y4) + x6 * x7 * (c * y5 - d * y6),
        ]
    )


def _hs109_eq(x: Any, m: Any) -> Any:
    a = 50.176
    b = math.sin(0.25)
    c = math.cos(0.25)
    x1, x2, x3, x4, x5, x6, x7, x8, x9 = (x[i] for i in range(9))
    return m.vec(
        [
            x5 * x6 * m.sin(-x3 - 0.25) + x5 * x7 * m.sin(-x4 - 0.25) + 2 * b * x5**2 - a * x1 + 400 * a,
            x5 * x6 * m.sin(x3 - 0.25) + x6 * x7 * m.sin(x3 - x4 - 0.25) + 2 * b * x6**2 - a * x2 + 400 * a,
            x5 * x7 * m.sin(x4 - 0.25) + x6 * x7 * m.sin(x4 - x3 - 0.25) + 2 * b * x7**2 + 881.779 * a,
            a * x8 + x5 * x6 * m.cos(-x3 - 0.25) + x5 * x7 * m.cos(-x4 - 0.25) - 200 * a - 2 * c * x5**2
            + 0.7533e-3 * a * x5**2,
            a * x9 + x5 * x6 * m.cos(x3 - 0.25) + x6 * x7 * m.cos(x3 - x4 - 0.25) - 2 * c * x6**2
            + 0.7533e-3 * a * x6**2 - 200 * a,
            x5 * x7 * m.cos(x4 - 0.25) + x6 * x7 * m.cos(x4 - x3 - 0.25) - 2 * c * x7**2 - 22.938 * a
            + 0.7533e-3 * a * x7**2,
        ]
    )


# --- HS111 / HS112 (chemical equilibrium) -----------------------------------------------------
_C111 = [-6.089, -17.164, -34.054, -5.914, -24.721, -14.986, -24.100, -10.708, -26.662, -22.179]


def _hs111_cost(x: Any, m: Any) -> Any:
    e = [m.exp(x[j]) for j in range(10)]
    tot = e[0]
    for j in range(1, 10):
        tot = tot + e[j]
    lt = m.log(tot)
    out = e[0] * (_C111[0] + x[0] - lt)
    for j in range(1, 10):
        out = out + e[j] * (_C111[j] + x[j] - lt)
    return out


def _hs111_eq(x: Any, m: Any) -> Any:
    e = [m.exp(x[j]) for j in range(10)]
    return m.vec(
        [
            e[0] + 2 * e[1] + 2 * e[2] + e[5] + e[9] - 2,
            e[3] + 2 * e[4] + e[5] + e[6] - 1,
            e[2] + e[6] + e[7] + 2 * e[8] + e[9] - 1,
        ]
    )


def _hs112_cost(x: Any, m: Any) -> Any:
    tot = x[0]
    for j in range(1, 10):
        tot = tot + x[j]
    out = x[0] * (_C111[0] + m.log(x[0] / tot))
    for j in range(1, 10):
        out = out + x[j] * (_C111[j] + m.log(x[j] / tot))
    return out


def _hs112_eq(x: Any, m: Any) -> Any:
    return m.vec(
        [
            x[0] + 2 * x[1] + 2 * x[2] + x[5] + x[9] - 2,
            x[3] + 2 * x[4] + x[5] + x[6] - 1,
            x[2] + x[6] + x[7] + 2 * x[8] + x[9] - 1,
        ]
    )


# --- HS113 ------------------------------------------------------------------------------------
def _hs113_cost(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = (x[i] for i in range(10))
    return (
        x1**2 + x2**2 + x1 * x2 - 14 * x1 - 16 * x2 + (x3 - 10) ** 2 + 4 * (x4 - 5) ** 2 + (x5 - 3) ** 2
        + 2 * (x6 - 1) ** 2 + 5 * x7**2 + 7 * (x8 - 11) ** 2 + 2 * (x9 - 10) ** 2 + (x10 - 7) ** 2 + 45
    )


def _hs113_ineq(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = (x[i] for i in range(10))
    return m.vec(
        [
            105 - 4 * x1 - 5 * x2 + 3 * x7 - 9 * x8,
            -10 * x1 + 8 * x2 + 17 * x7 - 2 * x8,
            8 * x1 - 2 * x2 - 5 * x9 + 2 * x10 + 12,
            -3 * (x1 - 2) ** 2 - 4 * (x2 - 3) ** 2 - 2 * x3**2 + 7 * x4 + 120,
            -5 * x1**2 - 8 * x2 - (x3 - 6) ** 2 + 2 * x4 + 40,
            -0.5 * (x1 - 8) ** 2 - 2 * (x2 - 4) ** 2 - 3 * x5**2 + x6 + 30,
            -(x1**2) - 2 * (x2 - 2) ** 2 + 2 * x1 * x2 - 14 * x5 + 6 * x6,
            3 * x1 - 6 * x2 - 12 * (x9 - 8) ** 2 + 7 * x10,
        ]
    )


# --- HS114 (alkylation) -----------------------------------------------------------------------
def _hs114_parts(x: Any) -> tuple[Any, ...]:
    a, b = 0.99, 0.9
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = (x[i] for i in range(10))
    g1 = 35.82 - 0.222 * x10 - b * x9
    g2 = -133 + 3 * x7 - a * x10
    g5 = 1.12 * x1 + 0.13167 * x1 * x8 - 0.00667 * x1 * x8**2 - a * x4
    g6 = 57.425 + 1.098 * x8 - 0.038 * x8**2 + 0.325 * x6 - a * x7
    return g1, g2, g5, g6


def _hs114_ineq(x: Any, m: Any) -> Any:
    a, b = 0.99, 0.9
    g1, g2, g5, g6 = _hs114_parts(x)
    return m.vec(
        [
            g1,
            g2,
            -g1 + x[8] * (1 / b - b),
            -g2 + (1 / a - a) * x[9],
            g5,
            g6,
            -g5 + (1 / a - a) * x[3],
            -g6 + (1 / a - a) * x[6],
        ]
    )


def _hs114_eq(x: Any, m: Any) -> Any:
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10 = (x[i] for i in range(10))
    return m.vec(
        [
            1.22 * x4 - x1 - x5,
            98000 * x3 / (x4 * x9 + 1000 * x3) - x6,
            (x2 + x5) / x1 - x8,
        ]
    )


# --- HS116 (membrane separation) --------------------------------------------------------------
def _hs116_ineq(x: Any, m: Any) -> Any:
    a, b, c, d, e, f = 0.002, 1.262626, 1.231059, 0.03475, 0.975, 0.00975
    x1, x2, x3, x4, x5, x6, x7, x8, x9, x10, x11, x12, x13 = (x[i] for i in range(13))
    return m.vec(
        [
            x3 - x2,
            x2 - x1,
            1 - a * x7 + a * x8,
            x11 + x12 + x13,  # 50 <= . <= 250
            x13 - b * x10 + c * x3 * x10,
            x5 - d * x2 - e * x2 * x5 + f * x2**2,
            x6 - d * x3 - e * x3 * x6 + f * x3**2,
            x4 - d * x1 - e * x1 * x4 + f * x1**2,
            x12 - b * x9 + c * x2 * x9,
            x11 - b * x8 + c * x1 * x8,
            x5 * x7 - x1 * x8 - x4 * x7 + x4 * x8,
            1 - a * (x2 * x9 + x5 * x8 - x1 * x8 - x6 * x9) - x5 - x6,
            x2 * x9 - x3 * x10 - x6 * x9 - 500 * x2 + 500 * x6 + x2 * x10,
            x2 - 0.9 - a * (x2 * x10 - x3 * x10),
        ]
    )


# --- HS118 ------------------------------------------------------------------------------------
def _hs118_cost(x: Any, m: Any) -> Any:
    terms = []
    for k in range(5):
        i = 3 * k
        terms.append(
            2.3 * x[i] + 0.0001 * x[i] ** 2 + 1.7 * x[i + 1] + 0.0001 * x[i + 1] ** 2
            + 2.2 * x[i + 2] + 0.00015 * x[i + 2] ** 2
        )
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


def _hs118_ineq(x: Any, m: Any) -> Any:
    rows = []
    for j in range(1, 5):  # HS's j = 1..4, 0-based indices below
        rows.append(x[3 * j] - x[3 * j - 3])  # x_{3j+1} - x_{3j-2} in [-7, 6]
        rows.append(x[3 * j + 1] - x[3 * j - 2])  # x_{3j+2} - x_{3j-1} in [-7, 7]
        rows.append(x[3 * j + 2] - x[3 * j - 1])  # x_{3j+3} - x_{3j}   in [-7, 6]
    for k, dem in enumerate([60.0, 50.0, 70.0, 85.0, 100.0]):
        rows.append(x[3 * k] + x[3 * k + 1] + x[3 * k + 2] - dem)
    return m.vec(rows)


# --- HS119 ------------------------------------------------------------------------------------
_A119 = [  # a_ij = 1 entries, (i, j) 1-based
    (1, 1), (1, 4), (1, 7), (1, 8), (1, 16), (2, 2), (2, 3), (2, 7), (2, 10), (3, 3), (3, 7), (3, 9),
    (3, 10), (3, 14), (4, 4), (4, 7), (4, 11), (4, 15), (5, 5), (5, 6), (5, 10), (5, 12), (5, 16),
    (6, 6), (6, 8), (6, 15), (7, 7), (7, 11), (7, 13), (8, 8), (8, 10), (8, 15), (9, 9), (9, 12),
    (9, 16), (10, 10), (10, 14), (11, 11), (11, 13), (12, 12), (12, 14), (13, 13), (13, 14),
    (14, 14), (15, 15), (16, 16),
]
_B119_COLS = [  # column j of b (8 rows), j = 1..8; columns 9..16 are unit vectors except b_{7,9}
    [0.22, -1.46, 1.29, -1.10, 0.0, 0.0, 1.12, 0.0],
    [0.20, 0.0, -0.89, -1.06, 0.0, -1.72, 0.0, 0.45],
    [0.19, -1.30, 0.0, 0.95, 0.0, -0.33, 0.0, 0.26],
    [0.25, 1.82, 0.0, -0.54, -1.43, 0.0, 0.31, -1.10],
    [0.15, -1.15, -1.16, 0.0, 1.51, 1.62, 0.0, 0.58],
    [0.11, 0.0, -0.96, -1.78, 0.59, 1.24, 0.0, 0.0],
    [0.12, 0.80, 0.0, -0.41, -0.33, 0.21, 1.12, -1.03],
    [0.13, 0.0, -0.49, 0.0, -0.43, -0.26, 0.0, 0.10],
]
_C119 = [2.5, 1.1, -3.1, -3.5, 1.3, 2.1, 2.3, -1.5]


def _hs119_cost(x: Any, m: Any) -> Any:
    u = [x[i] ** 2 + x[i] + 1 for i in range(16)]
    out = u[0] * u[0]  # a_11 = 1
    for i, j in _A119[1:]:
        out = out + u[i - 1] * u[j - 1]
    return out


def _hs119_eq(x: Any, m: Any) -> Any:
    rows = []
    for i in range(8):
        coefs = [_B119_COLS[j][i] for j in range(8)] + [1.0 if k == i else 0.0 for k in range(8)]
        if i == 6:
            coefs[8] = -0.36  # b_{7,9}
        if i == 0:
            coefs[8] = 1.0
        rows.append(_lin(x, coefs) - _C119[i])
    return m.vec(rows)


_SECOND: list[Spec] = [
    Spec(
        name="hs060",
        n=3,
        x0=[2.0, 2.0, 2.0],
        cost=lambda x, m: (x[0] - 1) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 4,
        eq=lambda x, m: m.vec([x[0] * (1 + x[1] ** 2) + x[2] ** 4 - 4 - 3 * SQ2]),
        x_lb=-10.0,
        x_ub=10.0,
        f_opt=0.0325682002513,
    ),
    Spec(
        name="hs061",
        n=3,
        x0=[0.0, 0.0, 0.0],
        cost=lambda x, m: 4 * x[0] ** 2 + 2 * x[1] ** 2 + 2 * x[2] ** 2 - 33 * x[0] + 16 * x[1] - 24 * x[2],
        eq=lambda x, m: m.vec([3 * x[0] - 2 * x[1] ** 2 - 7, 4 * x[0] - x[2] ** 2 - 11]),
        f_opt=-143.646142201,
    ),
    Spec(
        name="hs062",
        n=3,
        x0=[0.7, 0.2, 0.1],
        cost=lambda x, m: -32.174
        * (
            255 * m.log((x[0] + x[1] + x[2] + 0.03) / (0.09 * x[0] + x[1] + x[2] + 0.03))
            + 280 * m.log((x[1] + x[2] + 0.03) / (0.07 * x[1] + x[2] + 0.03))
            + 290 * m.log((x[2] + 0.03) / (0.13 * x[2] + 0.03))
        ),
        eq=lambda x, m: m.vec([x[0] + x[1] + x[2] - 1]),
        x_lb=0.0,
        x_ub=1.0,
        f_opt=-26272.5144873,
    ),
    Spec(
        name="hs063",
        n=3,
        x0=[2.0, 2.0, 2.0],
        cost=lambda x, m: 1000 - x[0] ** 2 - 2 * x[1] ** 2 - x[2] ** 2 - x[0] * x[1] - x[0] * x[2],
        eq=lambda x, m: m.vec([8 * x[0] + 14 * x[1] + 7 * x[2] - 56, x[0] ** 2 + x[1] ** 2 + x[2] ** 2 - 25]),
        x_lb=0.0,
        f_opt=961.715172127,
    ),
    Spec(
        name="hs064",
        n=3,
        x0=[1.0, 1.0, 1.0],
        cost=lambda x, m: 5 * x[0] + 50000 / x[0] + 20 * x[1] + 72000 / x[1] + 10 * x[2] + 144000 / x[2],
        ineq=lambda x, m: m.vec([1 - 4 / x[0] - 32 / x[1] - 120 / x[2]]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=1e-5,
        f_opt=6299.84242821,
    ),
    Spec(
        name="hs066",
        n=3,
        x0=[0.0, 1.05, 2.9],
        cost=lambda x, m: 0.2 * x[2] - 0.8 * x[0],
        ineq=lambda x, m: m.vec([x[1] - m.exp(x[0]), x[2] - m.exp(x[1])]),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        x_ub=[100.0, 100.0, 10.0],
        f_opt=0.518163274159,
    ),
    Spec(
        name="hs072",
        n=4,
        x0=[1.0, 1.0, 1.0, 1.0],
        cost=lambda x, m: 1 + x[0] + x[1] + x[2] + x[3],
        ineq=lambda x, m: m.vec(
            [
                0.0401 - 4 / x[0] - 2.25 / x[1] - 1 / x[2] - 0.25 / x[3],
                0.010085 - 0.16 / x[0] - 0.36 / x[1] - 0.64 / x[2] - 0.64 / x[3],
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.001,
        x_ub=[4e5, 3e5, 2e5, 1e5],
        f_opt=727.679358,
    ),
    Spec(
        name="hs073",
        n=4,
        x0=[1.0, 1.0, 1.0, 1.0],
        cost=lambda x, m: 24.55 * x[0] + 26.75 * x[1] + 39 * x[2] + 40.5 * x[3],
        eq=lambda x, m: m.vec([x[0] + x[1] + x[2] + x[3] - 1]),
        ineq=lambda x, m: m.vec(
            [
                2.3 * x[0] + 5.6 * x[1] + 11.1 * x[2] + 1.3 * x[3] - 5,
                12 * x[0] + 11.9 * x[1] + 41.8 * x[2] + 52.1 * x[3] - 21
                - 1.645 * m.sqrt(0.28 * x[0] ** 2 + 0.19 * x[1] ** 2 + 20.5 * x[2] ** 2 + 0.62 * x[3] ** 2),
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=29.894378,
    ),
    _hs74("hs074", 0.55, 5126.4981),
    _hs74("hs075", 0.48, 5174.4129),
    Spec(
        name="hs077",
        n=5,
        x0=[2.0] * 5,
        cost=lambda x, m: (x[0] - 1) ** 2 + (x[0] - x[1]) ** 2 + (x[2] - 1) ** 2 + (x[3] - 1) ** 4 + (x[4] - 1) ** 6,
        eq=lambda x, m: m.vec(
            [
                x[0] ** 2 * x[3] + m.sin(x[3] - x[4]) - 2 * SQ2,
                x[1] + x[2] ** 4 * x[3] ** 2 - 8 - SQ2,
            ]
        ),
        f_opt=0.24150513,
    ),
    Spec(
        name="hs078",
        n=5,
        x0=[-2.0, 1.5, 2.0, -1.0, -1.0],
        cost=lambda x, m: _prod(x, range(5)),
        eq=_hs78_eq,
        f_opt=-2.91970041,
    ),
    Spec(
        name="hs079",
        n=5,
        x0=[2.0] * 5,
        cost=lambda x, m: (x[0] - 1) ** 2 + (x[0] - x[1]) ** 2 + (x[1] - x[2]) ** 2 + (x[2] - x[3]) ** 4
        + (x[3] - x[4]) ** 4,
        eq=lambda x, m: m.vec(
            [
                x[0] + x[1] ** 2 + x[2] ** 3 - 2 - 3 * SQ2,
                x[1] - x[2] ** 2 + x[3] + 2 - 2 * SQ2,
                x[0] * x[4] - 2,
            ]
        ),
        f_opt=0.0787768209,
    ),
    Spec(
        name="hs080",
        n=5,
        x0=[-2.0, 2.0, 2.0, -1.0, -1.0],
        cost=lambda x, m: m.exp(_prod(x, range(5))),
        eq=_hs78_eq,
        x_lb=[-2.3, -2.3, -3.2, -3.2, -3.2],
        x_ub=[2.3, 2.3, 3.2, 3.2, 3.2],
        f_opt=0.0539498478,
    ),
    Spec(
        name="hs081",
        n=5,
        x0=[-2.0, 2.0, 2.0, -1.0, -1.0],
        cost=lambda x, m: m.exp(_prod(x, range(5))) - 0.5 * (x[0] ** 3 + x[1] ** 3 + 1) ** 2,
        eq=_hs78_eq,
        x_lb=[-2.3, -2.3, -3.2, -3.2, -3.2],
        x_ub=[2.3, 2.3, 3.2, 3.2, 3.2],
        f_opt=0.0539498478,
    ),
    Spec(
        name="hs083",
        n=5,
        x0=[78.0, 33.0, 27.0, 27.0, 27.0],
        cost=lambda x, m: 5.3578547 * x[2] ** 2 + 0.8356891 * x[0] * x[4] + 37.293239 * x[0] - 40792.141,
        ineq=_hs83_ineq,
        ineq_lb=0.0,
        ineq_ub=[92.0, 20.0, 5.0],
        x_lb=[78.0, 33.0, 27.0, 27.0, 27.0],
        x_ub=[102.0, 45.0, 45.0, 45.0, 45.0],
        f_opt=-30665.53867,
    ),
    Spec(
        name="hs084",
        n=5,
        x0=[2.52, 2.0, 37.5, 9.25, 6.8],
        cost=lambda x, m: -_A84[0] - _hs84_row(x, _A84[1:6]),
        ineq=lambda x, m: m.vec([_hs84_row(x, _A84[6:11]), _hs84_row(x, _A84[11:16]), _hs84_row(x, _A84[16:21])]),
        ineq_lb=0.0,
        ineq_ub=[294000.0, 294000.0, 277200.0],
        x_lb=[0.0, 1.2, 20.0, 9.0, 6.5],
        x_ub=[1000.0, 2.4, 60.0, 9.3, 7.0],
        f_opt=-5280335.133,
    ),
    Spec(
        name="hs086",
        n=5,
        x0=[0.0, 0.0, 0.0, 0.0, 1.0],
        cost=_hs86_cost,
        ineq=_hs86_ineq,
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=-32.34867897,
    ),
    Spec(
        name="hs093",
        n=6,
        x0=[5.54, 4.4, 12.02, 11.82, 0.702, 0.852],
        cost=lambda x, m: 0.0204 * x[0] * x[3] * (x[0] + x[1] + x[2])
        + 0.0187 * x[1] * x[2] * (x[0] + 1.57 * x[1] + x[3])
        + 0.0607 * x[0] * x[3] * x[4] ** 2 * (x[0] + x[1] + x[2])
        + 0.0437 * x[1] * x[2] * x[5] ** 2 * (x[0] + 1.57 * x[1] + x[3]),
        ineq=lambda x, m: m.vec(
            [
                0.001 * _prod(x, range(6)) - 2.07,
                1 - 0.00062 * x[0] * x[3] * x[4] ** 2 * (x[0] + x[1] + x[2])
                - 0.00058 * x[1] * x[2] * x[5] ** 2 * (x[0] + 1.57 * x[1] + x[3]),
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=135.075961,
    ),
    _hs95("hs095", [4.97, -1.88, -29.08, -78.02], 0.015619514),
    _hs95("hs096", [4.97, -1.88, -69.08, -118.02], 0.015619514),
    _hs95("hs097", [32.97, 25.12, -29.08, -78.02], 3.1358091),
    Spec(
        name="hs099",
        n=7,
        x0=[0.5] * 7,
        cost=_hs99_cost,
        eq=_hs99_eq,
        x_lb=0.0,
        x_ub=1.58,
        f_opt=-0.831079892e9,
    ),
    _hs101("hs101", -0.25, 1809.76476),
    _hs101("hs102", 0.125, 911.880571),
    _hs101("hs103", 0.5, 543.667958),
    Spec(
        name="hs104",
        n=8,
        x0=[6.0, 3.0, 0.4, 0.2, 6.0, 6.0, 1.0, 0.5],
        cost=lambda x, m: _hs104_f(x),
        ineq=_hs104_ineq,
        ineq_lb=[0.0, 0.0, 0.0, 0.0, 1.0],
        ineq_ub=[INF, INF, INF, INF, 4.2],
        x_lb=0.1,
        x_ub=10.0,
        f_opt=3.9511634396,
    ),
    Spec(
        name="hs106",
        n=8,
        x0=[5000.0, 5000.0, 5000.0, 200.0, 350.0, 150.0, 225.0, 425.0],
        cost=lambda x, m: x[0] + x[1] + x[2],
        ineq=lambda x, m: m.vec(
            [
                1 - 0.0025 * (x[3] + x[5]),
                1 - 0.0025 * (x[4] + x[6] - x[3]),
                1 - 0.01 * (x[7] - x[4]),
                x[0] * x[5] - 833.33252 * x[3] - 100 * x[0] + 83333.333,
                x[1] * x[6] - 1250 * x[4] - x[1] * x[3] + 1250 * x[3],
                x[2] * x[7] - 1250000 - x[2] * x[4] + 2500 * x[4],
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=[100.0, 1000.0, 1000.0, 10.0, 10.0, 10.0, 10.0, 10.0],
        x_ub=[10000.0, 10000.0, 10000.0, 1000.0, 1000.0, 1000.0, 1000.0, 1000.0],
        # HS print 7049.330923; the optimum of this very formulation is 7049.24802052867
        # (also CEC 2006 g10); Ipopt with tight tolerances reaches 7049.24802053.
        f_opt=7049.24802052867,
    ),
    Spec(
        name="hs107",
        n=9,
        x0=[0.8, 0.8, 0.2, 0.2, 1.0454, 1.0454, 1.0454, 0.0, 0.0],
        cost=lambda x, m: 3000 * x[0] + 1000 * x[0] ** 3 + 2000 * x[1] + 666.667 * x[1] ** 3,
        eq=_hs107_eq,
        x_lb=[0.0, 0.0, -INF, -INF, 0.90909, 0.90909, 0.90909, -INF, -INF],
        x_ub=[INF, INF, INF, INF, 1.0909, 1.0909, 1.0909, INF, INF],
        f_opt=5055.011803,
    ),
    Spec(
        name="hs109",
        n=9,
        x0=[0.0] * 9,
        cost=lambda x, m: 3 * x[0] + 1e-6 * x[0] ** 3 + 2 * x[1] + 0.522074e-6 * x[1] ** 3,
        eq=_hs109_eq,
        ineq=lambda x, m: m.vec(
            [
                x[3] - x[2],  # -0.55 <= . <= 0.55
                2250000 - x[0] ** 2 - x[7] ** 2,
                2250000 - x[1] ** 2 - x[8] ** 2,
            ]
        ),
        ineq_lb=[-0.55, 0.0, 0.0],
        ineq_ub=[0.55, INF, INF],
        x_lb=[0.0, 0.0, -0.55, -0.55, 196.0, 196.0, 196.0, -400.0, -400.0],
        x_ub=[INF, INF, 0.55, 0.55, 252.0, 252.0, 252.0, 800.0, 800.0],
        f_opt=5362.06928,
    ),
    Spec(
        name="hs110",
        n=10,
        x0=[9.0] * 10,
        cost=lambda x, m: m.sum(m.vec([m.log(x[i] - 2) ** 2 + m.log(10 - x[i]) ** 2 for i in range(10)]))
        - _prod(x, range(10)) ** 0.2,
        x_lb=2.001,
        x_ub=9.999,
        f_opt=-45.77846971,
    ),
    Spec(
        name="hs111",
        n=10,
        x0=[-2.3] * 10,
        cost=_hs111_cost,
        eq=_hs111_eq,
        x_lb=-100.0,
        x_ub=100.0,
        f_opt=-47.76109026,
    ),
    Spec(
        name="hs112",
        n=10,
        x0=[0.1] * 10,
        cost=_hs112_cost,
        eq=_hs112_eq,
        x_lb=1e-6,
        f_opt=-47.76109026,
    ),
    Spec(
        name="hs113",
        n=10,
        x0=[2.0, 3.0, 5.0, 5.0, 1.0, 2.0, 7.0, 3.0, 6.0, 10.0],
        cost=_hs113_cost,
        ineq=_hs113_ineq,
        ineq_lb=0.0,
        ineq_ub=INF,
        f_opt=24.3062091,
    ),
    Spec(
        name="hs114",
        n=10,
        x0=[1745.0, 12000.0, 110.0, 3048.0, 1974.0, 89.2, 92.8, 8.0, 3.6, 145.0],
        cost=lambda x, m: 5.04 * x[0] + 0.035 * x[1] + 10 * x[2] + 3.36 * x[4] - 0.063 * x[3] * x[6],
        eq=_hs114_eq,
        ineq=_hs114_ineq,
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=[1e-5, 1e-5, 1e-5, 1e-5, 1e-5, 85.0, 90.0, 3.0, 1.2, 145.0],
        x_ub=[2000.0, 16000.0, 120.0, 5000.0, 2000.0, 93.0, 95.0, 12.0, 4.0, 162.0],
        f_opt=-1768.80696,
    ),
    Spec(
        name="hs116",
        n=13,
        x0=[0.5, 0.8, 0.9, 0.1, 0.14, 0.5, 489.0, 80.0, 650.0, 450.0, 150.0, 150.0, 150.0],
        cost=lambda x, m: x[10] + x[11] + x[12],
        ineq=_hs116_ineq,
        ineq_lb=[0.0, 0.0, 0.0, 50.0] + [0.0] * 10,
        ineq_ub=[INF, INF, INF, 250.0] + [INF] * 10,
        x_lb=[0.1, 0.1, 0.1, 0.0001, 0.1, 0.1, 0.1, 0.1, 500.0, 0.1, 1.0, 0.0001, 0.0001],
        x_ub=[1.0, 1.0, 1.0, 0.1, 0.9, 0.9, 1000.0, 1000.0, 1000.0, 500.0, 150.0, 150.0, 150.0],
        f_opt=97.5875096,
        # 13 active constraints (11 rows, 2 bounds) whose gradients are linearly dependent
        # (rank 12) at the solution: LICQ fails.
        unique_multipliers=False,
    ),
    Spec(
        name="hs117",
        n=15,
        x0=[0.001] * 6 + [60.0] + [0.001] * 8,
        cost=_hs117_cost,
        ineq=_hs117_ineq,
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=0.0,
        f_opt=32.34867897,
    ),
    Spec(
        name="hs118",
        n=15,
        x0=[20.0, 55.0, 15.0] + [20.0, 60.0, 20.0] * 4,
        cost=_hs118_cost,
        ineq=_hs118_ineq,
        ineq_lb=[-7.0] * 12 + [0.0] * 5,
        ineq_ub=[6.0, 7.0, 6.0] * 4 + [INF] * 5,
        x_lb=[8.0, 43.0, 3.0] + [0.0] * 12,
        x_ub=[21.0, 57.0, 16.0] + [90.0, 120.0, 60.0] * 4,
        f_opt=664.82045,
    ),
    Spec(
        name="hs119",
        n=16,
        x0=[10.0] * 16,
        cost=_hs119_cost,
        eq=_hs119_eq,
        x_lb=0.0,
        x_ub=5.0,
        f_opt=244.899698,
    ),
]

#: Verified transcriptions where Ipopt, started from the published x0, stops at another local
#: minimum (it reaches f_opt from other starts); kept apart so that a test comparing against
#: f_opt from x0 does not pick them up by accident.
#: hs098: Ipopt from x0 = 0 ends at 4.0712464 (local); from perturbed starts at 3.1358091.
#: hs108: Ipopt from x0 = 1 ends at -0.6749814 (local); from perturbed starts at -0.8660254.
_SECOND_LOCAL: list[Spec] = [
    _hs95("hs098", [32.97, 25.12, -124.08, -173.02], 3.1358091),
    Spec(
        name="hs108",
        n=9,
        x0=[1.0] * 9,
        cost=lambda x, m: -0.5
        * (x[0] * x[3] - x[1] * x[2] + x[2] * x[8] - x[4] * x[8] + x[4] * x[7] - x[5] * x[6]),
        ineq=lambda x, m: m.vec(
            [
                1 - x[2] ** 2 - x[3] ** 2,
                1 - x[4] ** 2 - x[5] ** 2,
                1 - x[8] ** 2,
                1 - x[0] ** 2 - (x[1] - x[8]) ** 2,
                1 - (x[0] - x[4]) ** 2 - (x[1] - x[5]) ** 2,
                1 - (x[0] - x[6]) ** 2 - (x[1] - x[7]) ** 2,
                1 - (x[2] - x[4]) ** 2 - (x[3] - x[5]) ** 2,
                1 - (x[2] - x[6]) ** 2 - (x[3] - x[7]) ** 2,
                1 - x[6] ** 2 - (x[7] - x[8]) ** 2,
                x[0] * x[3] - x[1] * x[2],
                x[2] * x[8],
                -x[4] * x[8],
                x[4] * x[7] - x[5] * x[6],
            ]
        ),
        ineq_lb=0.0,
        ineq_ub=INF,
        x_lb=[-INF] * 8 + [0.0],
        f_opt=-0.8660254038,
        unique_multipliers=False,
    ),
]


#: Every problem Ipopt solves to the published optimum from the published start.
PROBLEMS: list[Spec] = _FIRST + _SECOND
#: Published problems whose published start leads elsewhere (see the module's docstring).
LOCAL_FROM_X0: list[Spec] = _FIRST_LOCAL + _SECOND_LOCAL


def by_name(name: str) -> Spec:
    """The problem called `name` (either list)."""
    return next(p for p in PROBLEMS + LOCAL_FROM_X0 if p.name == name)

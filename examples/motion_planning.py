"""Motion planning around an obstacle in a free final time (anvil.opti), rockit's example.

A kinematic bicycle (position x, y and heading theta; steering angle |delta| <= pi/6, speed
0 <= V <= 1) drives from the origin, heading north, to (0, 10) around a round obstacle of radius
1 at (0.2, 5), minimising its final time T plus the integral of x^2, on N = 20 control
intervals of M = 4 RK4 steps each (rockit's `examples/motion_planning.py`):

    min  T + int_0^T x^2 dt   s.t.  bicycle dynamics,  (x, y)(0) = 0, theta(0) = pi/2,
         (x, y)(T) = (0, 10),  |(x, y) - (0.2, 5)| >= 1 at every grid point

What each piece is in a MultistageProblem built from dynamics:
- T is shared by every stage (`shared_dim=1`): each callback takes it as `s`.
- The obstacle is a path constraint (`path_constraints_fn`, steps k < N) and, because it must
  hold at the end too, a terminal inequality on the final state (`terminal_ineq_fn`).
- The final position is a terminal equality (`terminal_constraints_fn`).

Both multistage solvers solve it from the example's guess (y = t, heading north at full speed,
T = 10): the interior-point solver in Ipopt's iterations, the SQP in a few more.

Run with the package installed: `python examples/motion_planning.py`.
"""

import numpy as np

import anvil as av
from anvil.opti import MultistageProblem, SparseIPMFunction, SparseSQPFunction, SQPStatus

N, M = 20, 4
OBSTACLE, RADIUS = np.array([0.2, 5.0]), 1.0
START, GOAL = np.array([0.0, 0.0, np.pi / 2]), np.array([0.0, 10.0])


def ode(s, u):
    """(x, y, theta)' of the bicycle (wheelbase 1) and the running cost x^2."""
    delta, speed = u[0], u[1]
    return [speed * s[2].cos(), speed * s[2].sin(), speed * delta.tan(), s[0] * s[0]]


def interval(x, u, t_final):
    """M RK4 steps over one interval of T / N: the next state and the integral of x^2."""
    h = t_final / (N * M)
    s = [x[0], x[1], x[2], 0.0]
    for _ in range(M):
        k1 = ode(s, u)
        k2 = ode([a + h / 2 * b for a, b in zip(s, k1)], u)
        k3 = ode([a + h / 2 * b for a, b in zip(s, k2)], u)
        k4 = ode([a + h * b for a, b in zip(s, k3)], u)
        s = [a + h / 6 * (b + 2 * c + 2 * d + e) for a, b, c, d, e in zip(s, k1, k2, k3, k4)]
    return s


def clearance(x):
    """The squared distance to the obstacle's centre, as a one-row constraint."""
    return (((x[0] - OBSTACLE[0]) ** 2) + (x[1] - OBSTACLE[1]) ** 2).reshape(1)


xusp = (av.Arg(3), av.Arg(2), av.Arg(1), av.Arg(0))  # (x, u, s, p): s = [T], no parameter
xsp = (av.Arg(3), av.Arg(1), av.Arg(0))
problem = MultistageProblem.from_dynamics(
    N=N,
    nx=3,
    nu=2,
    dynamics_fn=av.NumericalFunction("mp_f", lambda x, u, s, p: av.Tensor.stack(*interval(x, u, s[0])[:3]), xusp),
    stage_cost_fn=av.NumericalFunction("mp_l", lambda x, u, s, p: interval(x, u, s[0])[3], xusp),
    terminal_cost_fn=av.NumericalFunction("mp_time", lambda x, s, p: s[0], xsp),
    path_constraints_fn=av.NumericalFunction("mp_obstacle", lambda x, u, s, p: clearance(x), xusp),
    path_lb=RADIUS**2,
    path_ub=np.inf,
    terminal_ineq_fn=av.NumericalFunction("mp_obstacle_end", lambda x, s, p: clearance(x), xsp),
    terminal_ineq_lb=RADIUS**2,
    terminal_ineq_ub=np.inf,
    terminal_constraints_fn=av.NumericalFunction("mp_goal", lambda x, s, p: x[:2] - GOAL, xsp),
    u_lb=[-np.pi / 6, 0.0],
    u_ub=[np.pi / 6, 1.0],
    shared_dim=1,
    shared_lb=0.0,
)
print(problem)

# The example's guess: y = t on the grid of T = 10, heading north at full speed.
stages = [[0.0, 10.0 * k / N, np.pi / 2, 0.0, 1.0] for k in range(N + 1)]
guess = np.r_[np.ravel(stages), 10.0]

ipm = SparseIPMFunction("motion_planning_ipm", problem)
res = ipm(guess, p=START)
print(f"interior point: {res.status.name}, J = {res.objective:.6f}, T = {res.S[0]:.4f} in {res.iterations} iterations")
assert res.status == SQPStatus.SOLVED

sqp = SparseSQPFunction("motion_planning_sqp", problem)
again = sqp(guess, p=START)
print(f"SQP:            {again.status.name}, J = {again.objective:.6f}, T = {again.S[0]:.4f} in {again.iterations} iterations")

distance = np.hypot(res.X[:, 0] - OBSTACLE[0], res.X[:, 1] - OBSTACLE[1])
print(f"closest approach to the obstacle's centre: {distance.min():.4f} (radius {RADIUS})")
print("path (x, y):", np.round(res.X[:, :2], 2).tolist())

"""A free final time and which multistage solver to pick (anvil.opti).

The least time T that moves a double integrator (position, velocity; force |u| <= 1) from rest
at 0 to rest at 1, on N steps of T / N each, with a small cost on the force:

    min  T + sum_k 0.01 u_k^2 T / N   s.t.  x_{k+1} = x_k + T/N (v_k, u_k),  x_0 = 0,  x_N = (1, 0)

T is one variable of the whole problem, shared by every stage (`shared_dim=1`): every callback
takes it as `s` after the stage's own arguments, the guess and the result end with it, and
`res.S` is it.

Which solver: `SparseIPMFunction` (Ipopt's interior-point method, its KKT systems factorised
stage by stage) for a problem solved once from a rough guess: it converges where Ipopt does,
in Ipopt's iterations, and says `INFEASIBLE` when no point meets the constraints.
`SparseSQPFunction` (SQP, its QPs solved by a Riccati recursion) for MPC: warm starts from the
shifted last solution, real-time iterations, Gauss-Newton Hessians. With an exact Hessian it
corrects the whole Hessian's inertia as Ipopt does, crediting saturated controls' bounds near
a solution (Newton steps where stage blocks are indefinite: the cart-pole swing-up at N = 200
and 1000 reaches Ipopt's optimum); `SQPSettings(convexify_by_stage=True)` convexifies each
stage block on its own instead, which needs no inertia test but stalls there. Both solvers
run the same generated code through the JIT and as AOT C++.

Run with the package installed: `python examples/min_time.py`.
"""

import numpy as np

import anvil as av
from anvil.opti import MultistageProblem, SparseIPMFunction, SparseSQPFunction, SQPStatus

N = 40
xusp = (av.Arg(2), av.Arg(1), av.Arg(1), av.Arg(0))  # (x, u, s, p): s = [T], no parameter
xsp = (av.Arg(2), av.Arg(1), av.Arg(0))
step = av.NumericalFunction(
    "mt_step", lambda x, u, s, p: x + s[0] / N * av.Tensor.stack(x[1], u[0]), xusp
)
effort = av.NumericalFunction("mt_effort", lambda x, u, s, p: 0.01 * u[0] ** 2 * s[0] / N, xusp)
time = av.NumericalFunction("mt_time", lambda x, s, p: s[0], xsp)
rest = av.NumericalFunction("mt_rest", lambda x, s, p: x - np.array([1.0, 0.0]), xsp)
problem = MultistageProblem.from_dynamics(
    N=N,
    nx=2,
    nu=1,
    dynamics_fn=step,
    stage_cost_fn=effort,
    terminal_cost_fn=time,
    terminal_constraints_fn=rest,
    u_lb=-1.0,
    u_ub=1.0,
    shared_dim=1,
    shared_lb=0.1,
    shared_ub=10.0,
)
print(problem)

# A rough guess: at rest everywhere, T = 1 (too short to get there: the first linearisation
# cannot reach the target, which both solvers recover from).
guess = np.r_[np.zeros((N + 1) * 3), 1.0]
x_init = np.zeros(2)

ipm = SparseIPMFunction("min_time_ipm", problem)
res = ipm(guess, p=x_init)
print(f"interior point: {res.status.name}, T = {res.S[0]:.6f} in {res.iterations} iterations")
assert res.status == SQPStatus.SOLVED

sqp = SparseSQPFunction("min_time_sqp", problem)
again = sqp(guess, p=x_init)
print(f"SQP:            {again.status.name}, T = {again.S[0]:.6f} in {again.iterations} iterations")

# MPC: the solver re-solves from the shifted last solution as the start moves along the path.
moved = sqp(p=res.X[1], warm_start=problem.shift(res))
print(f"SQP, warm start from the shifted solution: T = {moved.S[0]:.6f} in {moved.iterations} iterations")
print("bang-bang force:", np.round(res.U[:, 0], 2))

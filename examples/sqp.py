"""An SQP solver from Python: define a nonlinear program, solve it through the JIT, and write
the solver as standalone C++ (anvil.opti).

Hock & Schittkowski's problem 71, with the product's bound as a parameter p:

    min  x0 x3 (x0 + x1 + x2) + x2
    s.t. x0^2 + x1^2 + x2^2 + x3^2 = 40,   x0 x1 x2 x3 >= p,   1 <= x <= 5

Run with the package installed: `python examples/sqp.py` (add `--compile` to also build the
generated module with g++ and run a small C++ program that calls it).
"""

import os
import subprocess
import sys
import tempfile

import numpy as np

import anvil as av
from anvil.opti import DenseIPMFunction, SparseProblem, SparseSQPFunction, SQPSettings

args = (av.Arg(4), av.Arg(1))  # (x, p): every callback takes both
cost = av.NumericalFunction("hs071_cost", lambda x, p: x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2], args)
sphere = av.NumericalFunction("hs071_sphere", lambda x, p: (x**2).sum().reshape(1), args)
product = av.NumericalFunction("hs071_product", lambda x, p: (x[0] * x[1] * x[2] * x[3] - p[0]).reshape(1), args)

problem = SparseProblem(
    cost_fn=cost,
    eq_constraints_fn=sphere,
    eq_rhs=40.0,
    ineq_constraints_fn=product,
    ineq_lb=0.0,
    ineq_ub=np.inf,
    x_lb=1.0,
    x_ub=5.0,
)
solver = SparseSQPFunction(name="hs071", problem=problem, settings=SQPSettings(verbose=1))

res = solver(np.array([1.0, 5.0, 5.0, 1.0]), p=np.array([25.0]))
print(f"status {res.status.name} after {res.iterations} iterations ({res.solve_time * 1e6:.0f} us)")
print("x        =", res.x)  # (1, 4.743, 3.8211, 1.3794), f = 17.014
print("lam_eq   =", res.lam_eq)
print("lam_ineq =", res.lam_ineq, "(negative: the lower bound is active)")
print("lam_box  =", res.lam_box)

# The same solver, warm-started from that solution for a nearby parameter.
solver.settings = SQPSettings()
nearby = solver(res.x, p=np.array([26.0]), lam_eq0=res.lam_eq, lam_ineq0=res.lam_ineq, lam_box0=res.lam_box)
print(f"p = 26: f = {nearby.objective:.6f} in {nearby.iterations} iterations")

# Which solver: the interior-point solver (Ipopt's method, generated the same way) for a
# program solved once with the exact Hessian: it converges where Ipopt does, in Ipopt's
# iterations, and needs neither PIQP nor Eigen (it compiles in about a second). The SQP solver
# above for MPC (warm starts, real-time iteration), Gauss-Newton, large sparse problems and
# multistage problems.
ipm = DenseIPMFunction(name="hs071_ipm", problem=problem)
r = ipm(np.array([1.0, 5.0, 5.0, 1.0]), p=np.array([25.0]))
print(f"interior point: status {r.status.name}, f = {r.objective:.6f} in {r.iterations} iterations")

# AOT: hs071.hpp/.cpp hold the solver and every function it calls; compile them against
# PIQP and Eigen, whose directories anvil.opti.include_dirs() gives.
out = tempfile.mkdtemp(prefix="anvil_sqp_")
av.generate_module("hs071", [solver], directory=out)
flags = " ".join(f"-isystem {d}" for d in av.opti.include_dirs())
print(f"wrote {out}/hs071.hpp, hs071.cpp and anvil_opti.cpp; build with:\n  g++ -std=c++17 -O2 {flags} -c hs071.cpp anvil_opti.cpp")

if "--compile" in sys.argv:
    main = r"""
#include "hs071.hpp"
#include <cstdio>
int main() {
  const double x0[4] = {1, 5, 5, 1}, p[1] = {25};
  double x[4], lam_eq[1], lam_ineq[1], lam_box[4];
  hs071::WS_t ws = hs071::init_ws();
  hs071::Info info = hs071::solve(x0, p, nullptr, nullptr, nullptr, x, lam_eq, lam_ineq, lam_box,
                                  hs071::Settings{}, ws);
  std::printf("C++: status %d, f = %.6f, x = (%.4f, %.4f, %.4f, %.4f)\n", static_cast<int>(info.status),
              info.objective, x[0], x[1], x[2], x[3]);
  hs071::free_ws(ws);
}
"""
    with open(os.path.join(out, "main.cpp"), "w") as f:
        f.write(main)
    include = [f"-isystem{d}" for d in av.opti.include_dirs()]
    # anvil_opti.cpp: the solver runtime (PIQP's glue), written beside the module.
    sources = ["main.cpp", "hs071.cpp", "anvil_opti.cpp"]
    subprocess.run(["g++", "-std=c++17", "-O2", *include, *sources, "-o", "hs071"], cwd=out, check=True)
    subprocess.run([os.path.join(out, "hs071")], check=True)

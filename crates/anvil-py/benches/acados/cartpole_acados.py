"""acados peer of the multistage benchmark: the cart-pole swing-up (the problem of
crates/anvil-py/benches/multistage_peers.py) as an acados OCP, solved by SQP with HPIPM on the
fully condensed QP, and run as a real-time iteration (RTI) in a closed-loop swing-up.

Run it through scripts/bench_acados.sh (it makes the Python 3.12 venv with the
comma-deps-acados wheel and sets the environment). It prints ONE JSON line on stdout, the
last line; everything acados prints while generating and compiling goes to stderr.

    {"ok": true, "N": 50, "gauss_newton": {...}, "exact": {...}, "rti": {...}, ...}

Times are in seconds. "time_s" is the median wall time of solver.solve() (the ctypes call)
from the zero guess (solver.reset() before each solve, untimed); "solver_time_s" is acados'
own time_tot. J is recomputed from the solution with the benchmark's formula
Σ_{k<N} dt (e_kᵀQe_k + R u_k²) + e_NᵀQ_N e_N and checked against J* = 34.00324653 (N = 50).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import statistics
import sys
import time
import traceback

import numpy as np

DT = 0.05
NX, NU = 4, 1
M_CART, M_POLE, L_POLE, G = 1.0, 0.1, 0.5, 9.81
U_MAX = 20.0
X_REF = np.array([0.0, math.pi, 0.0, 0.0])
Q = np.array([1.0, 10.0, 0.1, 0.1])
R = 0.01
Q_N = np.array([10.0, 100.0, 10.0, 10.0])
KNOWN_OPTIMA = {50: 34.00324653, 200: 33.96872749, 1000: 33.96872749}  # see multistage_peers.py
TOL_J = 1e-6
CFLAGS = os.environ.get("BENCH_PEER_CFLAGS", "-O3 -march=native")


def cartpole_ode(ca, x, u):
    th, v, om = x[1], x[2], x[3]
    s, c = ca.sin(th), ca.cos(th)
    den = M_CART + M_POLE * s**2
    pdd = (u + M_POLE * s * (L_POLE * om**2 + G * c)) / den
    thdd = (-u * c - M_POLE * L_POLE * om**2 * c * s - (M_CART + M_POLE) * G * s) / (L_POLE * den)
    return ca.vertcat(v, om, pdd, thdd)


def rk4(ca, x, u):
    k1 = cartpole_ode(ca, x, u)
    k2 = cartpole_ode(ca, x + DT / 2 * k1, u)
    k3 = cartpole_ode(ca, x + DT / 2 * k2, u)
    k4 = cartpole_ode(ca, x + DT * k3, u)
    return x + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def objective(xs: np.ndarray, us: np.ndarray) -> float:
    """The benchmark's J of states xs (N+1, 4) and controls us (N, 1)."""
    e = xs - X_REF
    n = us.shape[0]
    return float(DT * (e[:n] ** 2 @ Q + R * (us**2).sum(axis=1)).sum() + e[n] ** 2 @ Q_N)


def build_solver(
    name: str, n: int, hessian: str, rti: bool, workdir: str, tol: float, qp_solver: str, globalization: str
):
    import casadi as ca
    from acados.acados_template import AcadosModel, AcadosOcp, AcadosOcpSolver

    model = AcadosModel()
    model.name = name
    x, u = ca.SX.sym("x", NX), ca.SX.sym("u", NU)
    model.x, model.u = x, u
    model.xdot = ca.SX.sym("xdot", NX)
    # Discrete dynamics: x_{k+1} = the RK4 step itself, so the discretization is the benchmark's.
    model.disc_dyn_expr = rk4(ca, x, u)

    ocp = AcadosOcp()
    ocp.model = model
    ocp.dims.N = n
    ocp.solver_options.tf = n * DT  # time steps dt: acados weighs the stage costs by them

    # Linear least squares: 0.5 ||Vx x + Vu u - yref||²_W, times dt for the stages (acados
    # does that) and unscaled at the end. W = 2 diag(Q, R) gives dt (eᵀQe + R u²).
    ny = NX + NU
    ocp.cost.cost_type = "LINEAR_LS"
    ocp.cost.cost_type_e = "LINEAR_LS"
    ocp.cost.W = 2.0 * np.diag(np.r_[Q, R])
    ocp.cost.W_e = 2.0 * np.diag(Q_N)
    ocp.cost.Vx = np.vstack([np.eye(NX), np.zeros((NU, NX))])
    ocp.cost.Vu = np.vstack([np.zeros((NX, NU)), np.eye(NU)])
    ocp.cost.Vx_e = np.eye(NX)
    ocp.cost.yref = np.r_[X_REF, np.zeros(NU)]
    ocp.cost.yref_e = X_REF.copy()
    assert ocp.cost.W.shape == (ny, ny)

    ocp.constraints.lbu = np.array([-U_MAX])
    ocp.constraints.ubu = np.array([U_MAX])
    ocp.constraints.idxbu = np.array([0])
    ocp.constraints.x0 = np.zeros(NX)  # x_0 = x_init as bounds on stage 0, reset every RTI step

    opts = ocp.solver_options
    opts.integrator_type = "DISCRETE"
    opts.qp_solver = qp_solver
    if not rti:
        opts.globalization = globalization
    opts.hessian_approx = hessian
    if hessian == "EXACT":
        opts.regularize_method = "PROJECT"
    opts.nlp_solver_type = "SQP_RTI" if rti else "SQP"
    opts.nlp_solver_max_iter = 500
    # acados passes the NLP tolerances on to HPIPM as its QP tolerances (unless qp_solver_tol_*
    # are set), so a tighter tol costs HPIPM iterations in every QP as well.
    opts.nlp_solver_tol_stat = tol
    opts.nlp_solver_tol_eq = tol
    opts.nlp_solver_tol_ineq = tol
    opts.nlp_solver_tol_comp = tol
    opts.qp_solver_iter_max = 100
    opts.print_level = 0
    opts.ext_fun_compile_flags = CFLAGS  # also the CFLAGS of the generated solver's own C files

    ocp.code_export_directory = os.path.join(workdir, f"c_generated_code_{name}")
    json_file = os.path.join(workdir, f"acados_ocp_{name}.json")
    t0 = time.perf_counter()
    solver = AcadosOcpSolver(ocp, json_file=json_file, verbose=False)
    return solver, time.perf_counter() - t0


def stat(solver, field: str) -> float:
    return float(np.asarray(solver.get_stats(field)).ravel()[0])


def trajectory(solver, n: int) -> tuple[np.ndarray, np.ndarray]:
    xs = np.array([solver.get(k, "x") for k in range(n + 1)])
    us = np.array([solver.get(k, "u") for k in range(n)])
    return xs, us


def solve_from_zero(solver, n: int, repeats: int) -> dict:
    times, solver_times, iters, statuses = [], [], [], []
    for i in range(repeats + 1):  # the first is the warm-up
        solver.reset()  # the iterate (x, u and multipliers) back to zero: the benchmark's guess
        for k in range(n + 1):
            solver.set(k, "x", np.zeros(NX))
        for k in range(n):
            solver.set(k, "u", np.zeros(NU))
        t0 = time.perf_counter()
        status = solver.solve()
        elapsed = time.perf_counter() - t0
        if i > 0:
            times.append(elapsed)
            solver_times.append(stat(solver, "time_tot"))
            iters.append(int(stat(solver, "sqp_iter")))
            statuses.append(int(status))
    breakdown = {f: stat(solver, f"time_{f}") for f in ("lin", "sim", "qp", "qp_solver_call", "reg")}
    try:
        qp_iterations = int(np.asarray(solver.get_stats("qp_iter")).sum())
    except Exception:  # noqa: BLE001 - older/newer acados: leave it out
        qp_iterations = None
    xs, us = trajectory(solver, n)
    j = objective(xs, us)
    ref = KNOWN_OPTIMA.get(n)
    err = abs(j - ref) if ref is not None else None
    return {
        "time_s": statistics.median(times),
        "times_s": times,
        "solver_time_s": statistics.median(solver_times),
        "iterations": iters[-1],
        "qp_iterations": qp_iterations,  # HPIPM iterations, summed over the SQP iterations
        "breakdown_s": breakdown,  # acados' timers of the last solve: linearization, QP, ...
        "status": statuses[-1],  # 0: converged, 2: max iterations, 3/4: QP failure
        "success": statuses[-1] == 0,
        "J": j,
        "J_acados": float(solver.get_cost()),  # acados' own cost: the same J (0.5 ||.||²_W · dt)
        "J_ref": ref,
        "J_err": err,
        "J_ok": None if err is None else err <= TOL_J,
        "final_state": xs[n].tolist(),
    }


def closed_loop_rti(solver, n: int, steps: int) -> dict:
    """Swing-up in closed loop: plant = the same RK4 step; one SQP_RTI iteration per control
    step (preparation and feedback together), warm-started by shifting the previous solution;
    x_0 set through the bounds of stage 0."""
    import casadi as ca

    xs_, us_ = ca.SX.sym("x", NX), ca.SX.sym("u", NU)
    plant = ca.Function("plant", [xs_, us_], [rk4(ca, xs_, us_)])

    solver.reset()
    for k in range(n + 1):
        solver.set(k, "x", np.zeros(NX))
    for k in range(n):
        solver.set(k, "u", np.zeros(NU))
    x = np.zeros(NX)
    times, solver_times, statuses, xs_cl, us_cl = [], [], [], [x.copy()], []
    for _ in range(steps):
        solver.set(0, "lbx", x)
        solver.set(0, "ubx", x)
        t0 = time.perf_counter()
        status = solver.solve()
        times.append(time.perf_counter() - t0)
        solver_times.append(stat(solver, "time_tot"))
        statuses.append(int(status))
        u = solver.get(0, "u")
        # shift: stage k gets stage k+1's iterate; the last stage keeps its own.
        xs, us = trajectory(solver, n)
        for k in range(n):
            solver.set(k, "x", xs[k + 1])
            solver.set(k, "u", us[min(k + 1, n - 1)])
        solver.set(n, "x", xs[n])
        x = np.asarray(plant(x, u)).ravel()
        xs_cl.append(x.copy())
        us_cl.append(np.asarray(u).ravel())
    xs_cl, us_cl = np.array(xs_cl), np.array(us_cl)
    cl_e = xs_cl - X_REF
    return {
        "steps": steps,
        "time_mean_s": statistics.fmean(times),
        "time_median_s": statistics.median(times),
        "time_max_s": max(times),
        "solver_time_mean_s": statistics.fmean(solver_times),
        "solver_time_max_s": max(solver_times),
        "statuses": sorted(set(statuses)),
        "final_state": xs_cl[-1].tolist(),
        "upright_at_end": bool(abs(xs_cl[-1, 1] - math.pi) < 0.05 and abs(xs_cl[-1, 3]) < 0.1),
        # the closed loop's own cost over the simulation (stage costs only, dt-weighted)
        "closed_loop_cost": float(DT * (cl_e[:-1] ** 2 @ Q + R * (us_cl**2).sum(axis=1)).sum()),
        "u_max_abs": float(np.abs(us_cl).max()),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--N", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--rti-steps", type=int, default=100)
    parser.add_argument(
        "--qp-solver",
        default="FULL_CONDENSING_HPIPM",
        help="acados qp_solver. FULL_CONDENSING_HPIPM is the benchmark's; N = 50 is the horizon it "
        "is meant for: at N = 200 its QPs fail (status 4), and PARTIAL_CONDENSING_HPIPM runs but "
        "ends elsewhere (GN: J = 150.5; exact: 500 iterations), with either globalization",
    )
    parser.add_argument(
        "--globalization",
        default="FIXED_STEP",
        choices=("FIXED_STEP", "MERIT_BACKTRACKING"),
        help="SQP step: full steps (acados' default, the benchmark's) or a merit line search",
    )
    parser.add_argument("--tol", type=float, default=1e-6, help="NLP (and so QP) tolerances; 1e-6 is acados' default")
    parser.add_argument("--workdir", default=os.path.join(os.getcwd(), ".bench", "acados"))
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)

    result: dict = {"ok": False, "peer": "acados", "N": args.N, "cflags": CFLAGS, "tol": args.tol}
    result.update(qp_solver=args.qp_solver, globalization=args.globalization)
    t_start = time.perf_counter()
    # acados prints to stdout (from Python and C): keep stdout for the JSON line only.
    stdout_fd = os.dup(1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            os.dup2(2, 1)
            import casadi

            result["casadi"] = casadi.__version__
            n = args.N
            cwd = os.getcwd()
            os.chdir(args.workdir)  # acados writes its json and build files relative to cwd
            try:
                # one model name (and so one generated library) per configuration
                tag = f"{n}_{args.qp_solver.split('_')[0].lower()}_{args.globalization.split('_')[0].lower()}"

                def build(kind: str, hessian: str, rti: bool):
                    return build_solver(
                        f"cartpole_{kind}_{tag}", n, hessian, rti, args.workdir, args.tol, args.qp_solver, args.globalization
                    )

                gn, gn_build = build("gn", "GAUSS_NEWTON", False)
                result["gauss_newton"] = {"build_s": gn_build, **solve_from_zero(gn, n, args.repeats)}
                ex, ex_build = build("exact", "EXACT", False)
                result["exact"] = {"build_s": ex_build, "regularize": "PROJECT", **solve_from_zero(ex, n, args.repeats)}
                rti, rti_build = build("rti", "GAUSS_NEWTON", True)
                result["rti"] = {"build_s": rti_build, "hessian": "GAUSS_NEWTON", **closed_loop_rti(rti, n, args.rti_steps)}
            finally:
                os.chdir(cwd)
            sys.stdout.flush()
        result["ok"] = True
    except Exception as exc:  # noqa: BLE001 - report, as JSON, why acados could not run
        result["error"] = f"{type(exc).__name__}: {exc}"
        traceback.print_exc(file=sys.stderr)
    finally:
        sys.stderr.flush()
        os.dup2(stdout_fd, 1)
        os.close(stdout_fd)
    result["wall_s"] = time.perf_counter() - t_start
    print(json.dumps(result), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

"""CasADi peers of the multistage benchmark: the cart-pole swing-up solved by fatrop, Ipopt
and sqpmethod, with CasADi's JIT (the NLP functions compiled by the system C compiler).

    python crates/anvil-py/benches/multistage_peers.py            # N = 50
    python crates/anvil-py/benches/multistage_peers.py --long     # also N = 200 and 1000 (~2 min)
    python crates/anvil-py/benches/multistage_peers.py --acados   # and the acados peer

The problem (the same as crates/anvil/tests/multistage.rs): state (p, θ, v, ω), θ = 0
hanging, θ = π upright; one RK4 step of dt = 0.05 per interval, |u| <= 20, the states free;
constraints x_0 - x_init = 0 and x_{k+1} - F(x_k, u_k) = 0; cost
Σ_{k<N} dt (e_kᵀ Q e_k + R u_k²) + e_Nᵀ Q_N e_N, e = x - (0, π, 0, 0). The decision vector is
the z-form: z_k = (x_k, u_k) for k = 0..N stacked ((N+1)*5 entries; u_N is bounded, has no
cost and enters no constraint). Every solve starts from the zero guess with x_init = 0.

The main benchmark imports the ``run_*`` functions; each returns a dict (see ``_result``):
time per solve (median of ``repeats`` solves after one warm-up), iterations, J, and whether J
matches the known optimum to 1e-6 (``KNOWN_OPTIMA``: N = 50, 200, 1000). ``run_acados`` runs
scripts/bench_acados.sh (a Python 3.12 venv with acados) and returns its JSON.

Two ways to write the NLP (``form``):
- ``"map"`` (default): an MX graph that applies the stage functions (SX) with ``Function.map``;
  the generated C code loops over the stages, so the JIT compiles in a few seconds for any N.
- ``"sx"``: the loop unrolled into one SX graph (what Opti with ``expand=True`` gives). Its
  functions are faster (fatrop N = 50: about 12.6 ms per solve against 15 ms) but gcc -O3 on the
  unrolled code takes about 90 s per solver at N = 50 and grows faster than N.
"""

from __future__ import annotations

import argparse
import math
import os
import json
import shutil
import statistics
import subprocess
import tempfile
import time
from typing import Any, Callable, Optional

import numpy as np

# --- The problem ---------------------------------------------------------------------------

DT = 0.05
NX, NU = 4, 1
M_CART, M_POLE, L_POLE, G = 1.0, 0.1, 0.5, 9.81
U_MAX = 20.0
X_REF = (0.0, math.pi, 0.0, 0.0)
Q = (1.0, 10.0, 0.1, 0.1)
R = 0.01
Q_N = (10.0, 100.0, 10.0, 10.0)

# J* from the zero guess, N -> J*. N = 50: Ipopt, fatrop and sqpmethod agree to 2e-7 (the
# benchmark's figure). N = 200 and N = 1000: Ipopt here (249 and 1495 iterations; tol 1e-8),
# fatrop agrees to 2e-7; the two are the same minimum to 1e-9 (after the swing-up the cart rests
# upright, so the longer horizon adds no cost). sqpmethod does not converge there (max_iter).
KNOWN_OPTIMA = {50: 34.00324653, 200: 33.96872749, 1000: 33.96872749}
TOL_J = 1e-6

# Flags of CasADi's JIT ("shell" compiler: the system cc). -march=native as anvil's JIT uses it
# (crates/anvil/src/jit/compiler.rs); override with BENCH_PEER_CFLAGS="-O3".
JIT_FLAGS = os.environ.get("BENCH_PEER_CFLAGS", "-O3 -march=native").split()


def cartpole_ode(ca: Any, x: Any, u: Any) -> Any:
    th, v, om = x[1], x[2], x[3]
    s, c = ca.sin(th), ca.cos(th)
    den = M_CART + M_POLE * s**2
    pdd = (u + M_POLE * s * (L_POLE * om**2 + G * c)) / den
    thdd = (-u * c - M_POLE * L_POLE * om**2 * c * s - (M_CART + M_POLE) * G * s) / (L_POLE * den)
    return ca.vertcat(v, om, pdd, thdd)


def stage_functions(ca: Any) -> tuple[Any, Any, Any]:
    """F(x, u): one RK4 step; L(x, u): the stage cost with its dt; LN(x): the terminal cost."""
    x, u = ca.SX.sym("x", NX), ca.SX.sym("u", NU)
    k1 = cartpole_ode(ca, x, u)
    k2 = cartpole_ode(ca, x + DT / 2 * k1, u)
    k3 = cartpole_ode(ca, x + DT / 2 * k2, u)
    k4 = cartpole_ode(ca, x + DT * k3, u)
    f = ca.Function("cartpole_rk4", [x, u], [x + DT / 6 * (k1 + 2 * k2 + 2 * k3 + k4)])
    e = x - ca.DM(X_REF)
    lk = ca.Function("cartpole_l", [x, u], [DT * (ca.bilin(ca.diag(ca.DM(Q)), e, e) + R * ca.sumsqr(u))])
    ln = ca.Function("cartpole_lf", [x], [ca.bilin(ca.diag(ca.DM(Q_N)), e, e)])
    return f, lk, ln


def cartpole_nlp(n: int, form: str = "map") -> tuple[dict, dict]:
    """The z-form NLP {x, p, f, g} (p = x_init) and its bounds (all g are equalities)."""
    import casadi as ca

    f, lk, ln = stage_functions(ca)
    nz = NX + NU
    if form == "map":
        z, p = ca.MX.sym("z", nz * (n + 1)), ca.MX.sym("p", NX)
        zm = ca.reshape(z, nz, n + 1)
        xs, us = zm[:NX, :], zm[NX:, :]
        cost = ca.sum2(lk.map(n)(xs[:, :n], us[:, :n])) + ln(xs[:, n])
        g = ca.vertcat(xs[:, 0] - p, ca.vec(xs[:, 1:] - f.map(n)(xs[:, :n], us[:, :n])))
    elif form == "sx":
        z, p = ca.SX.sym("z", nz * (n + 1)), ca.SX.sym("p", NX)
        xk = [z[nz * k : nz * k + NX] for k in range(n + 1)]
        uk = [z[nz * k + NX : nz * (k + 1)] for k in range(n + 1)]
        cost = sum(lk(xk[k], uk[k]) for k in range(n)) + ln(xk[n])
        g = ca.vertcat(xk[0] - p, *[xk[k + 1] - f(xk[k], uk[k]) for k in range(n)])
    else:
        raise ValueError(f"form must be 'map' or 'sx', not {form!r}")
    lbx = np.tile(np.r_[np.full(NX, -np.inf), np.full(NU, -U_MAX)], n + 1)
    bounds = dict(lbx=lbx, ubx=-lbx, lbg=0.0, ubg=0.0)
    return {"x": z, "p": p, "f": cost, "g": g}, bounds


def objective(z: np.ndarray, n: int) -> float:
    """J of a z-form point with the benchmark's formula (dt-weighted stage costs)."""
    zm = np.asarray(z, dtype=np.float64).reshape(n + 1, NX + NU)
    e = zm[:, :NX] - np.array(X_REF)
    stage = e[:n] ** 2 @ np.array(Q) + R * (zm[:n, NX:] ** 2).sum(axis=1)
    return float(DT * stage.sum() + e[n] ** 2 @ np.array(Q_N))


# --- Solvers -------------------------------------------------------------------------------


def _jit_options(directory: str) -> dict:
    return {
        "jit": True,
        "compiler": "shell",
        "record_time": True,
        "jit_options": {"flags": JIT_FLAGS, "verbose": False, "directory": directory + os.sep},
    }


def _fatrop_options(ng: int) -> tuple[str, dict]:
    # fatrop needs the stage structure. structure_detection="auto" reads it from the sparsity
    # of the constraint Jacobian (variables ordered x_0, u_0, x_1, u_1, ..., constraints
    # stage by stage, gap-closing rows x_{k+1} - F(x_k, u_k)); it refuses to run unless
    # `equality` marks which rows of g are equalities (here all). "manual" takes nx, nu, ng
    # (length N+1 each) and N instead.
    return "fatrop", {
        "structure_detection": "auto",
        "equality": [True] * ng,
        "fatrop": {"print_level": 0, "max_iter": 5000},  # N = 1000 takes 1466 iterations
        "print_time": False,
    }


def _ipopt_options() -> tuple[str, dict]:
    return "ipopt", {"ipopt.print_level": 0, "ipopt.sb": "yes", "print_time": False}


def _sqpmethod_options(qpsol: str) -> tuple[str, dict]:
    # With the exact Hessian as it comes (indefinite away from the optimum) sqpmethod+PIQP
    # "succeeds" at another local minimum (J = 93.74, 29 iterations) and qrqp stops with
    # Search_Direction_Becomes_Too_Small (J = 230.4). eigen-clip convexification (per block of
    # the block-diagonal Hessian) reaches J* in 72 iterations (line search on, the default).
    qp_opts: dict = {"error_on_fail": False}
    if qpsol == "qrqp":
        qp_opts.update(print_iter=False, print_header=False, print_info=False)
    return "sqpmethod", {
        "qpsol": qpsol,
        "qpsol_options": qp_opts,
        "convexify_strategy": "eigen-clip",
        "max_iter": 300,
        "print_header": False,
        "print_iteration": False,
        "print_status": False,
        "print_time": False,
    }


def _count_libraries(directory: str) -> int:
    return sum(name.endswith(".so") for name in os.listdir(directory))


def _result(peer: str, n: int, **fields: Any) -> dict:
    base = {
        "peer": peer,
        "N": n,
        "time_s": None,  # median wall time of one solve from the zero guess (Python call included)
        "times_s": [],  # each timed solve
        "time_min_s": None,  # the fastest of them (steadier than the median on a busy machine)
        "solver_time_s": None,  # median of CasADi's own t_wall_total
        "iterations": None,
        "J": None,
        "J_ref": KNOWN_OPTIMA.get(n),
        "J_err": None,  # |J - J_ref| where J_ref is known
        "J_ok": None,  # J_err <= 1e-6 (None where J_ref is unknown)
        "status": None,
        "success": None,
        "build_s": None,  # nlpsol construction, JIT compilation included
        "jit_flags": " ".join(JIT_FLAGS),
        "jit_libraries": None,  # .so files the JIT produced (>= 1 when it compiled)
        "error": None,
    }
    base.update(fields)
    return base


def _run(
    peer: str, n: int, repeats: int, form: str, options: Callable[[int], tuple[str, dict]], warmup: bool = True
) -> dict:
    import casadi as ca

    nlp, bounds = cartpole_nlp(n, form)
    plugin, opts = options(nlp["g"].shape[0])
    jit_dir = tempfile.mkdtemp(prefix=f"casadi_jit_{peer}_")
    opts.update(_jit_options(jit_dir))
    args = dict(x0=np.zeros(nlp["x"].shape[0]), p=np.zeros(NX), **bounds)
    try:
        cwd = os.getcwd()
        os.chdir(jit_dir)  # CasADi writes the generated jit_tmp*.c to the working directory
        try:
            t0 = time.perf_counter()
            solver = ca.nlpsol(f"cartpole_{peer.replace('+', '_')}_{n}", plugin, nlp, opts)
            build_s = time.perf_counter() - t0
        finally:
            os.chdir(cwd)
        libraries = _count_libraries(jit_dir)  # the .so stays there while the solver lives
        if libraries == 0:
            return _result(peer, n, build_s=build_s, jit_libraries=0, error="the JIT produced no library")
        if warmup:
            solver(**args)
        times, solver_times = [], []
        for _ in range(max(1, repeats)):
            t0 = time.perf_counter()
            out = solver(**args)
            times.append(time.perf_counter() - t0)
            stats = solver.stats()
            solver_times.append(stats.get("t_wall_total", float("nan")))
        z = np.asarray(out["x"]).ravel()
        j = objective(z, n)
        ref = KNOWN_OPTIMA.get(n)
        err = abs(j - ref) if ref is not None else None
        return _result(
            peer,
            n,
            time_s=statistics.median(times),
            times_s=times,
            time_min_s=min(times),
            solver_time_s=statistics.median(solver_times),
            iterations=int(stats["iter_count"]),
            J=j,
            J_err=err,
            J_ok=None if err is None else err <= TOL_J,
            status=str(stats["return_status"]),
            success=bool(stats["success"]),
            build_s=build_s,
            jit_libraries=libraries,
        )
    except Exception as exc:  # noqa: BLE001 - a peer that fails is reported, not fatal
        return _result(peer, n, error=f"{type(exc).__name__}: {exc}".strip().splitlines()[-1])
    finally:
        solver = None  # CasADi removes its .so and .o when the solver goes; then the folder
        shutil.rmtree(jit_dir, ignore_errors=True)


def run_fatrop(N: int = 50, repeats: int = 5, form: str = "map", warmup: bool = True) -> dict:
    """fatrop through casadi.nlpsol (structure_detection="auto"), JIT-compiled functions."""
    return _run("fatrop", N, repeats, form, _fatrop_options, warmup)


def run_ipopt(N: int = 50, repeats: int = 5, form: str = "map", warmup: bool = True) -> dict:
    """Ipopt (MUMPS, exact Hessian, tol 1e-8) through casadi.nlpsol, JIT-compiled functions."""
    return _run("ipopt", N, repeats, form, lambda ng: _ipopt_options(), warmup)


def run_sqpmethod(
    N: int = 50, repeats: int = 5, qpsol: Optional[str] = None, form: str = "map", warmup: bool = True
) -> dict:
    """CasADi's sqpmethod with PIQP (qrqp where this CasADi has no PIQP), eigen-clip."""
    import casadi as ca

    if qpsol is None:
        qpsol = "piqp" if ca.has_conic("piqp") else "qrqp"
    return _run(f"sqpmethod+{qpsol}", N, repeats, form, lambda ng: _sqpmethod_options(qpsol), warmup)


def run_all(N: int = 50, repeats: int = 5, form: str = "map", warmup: bool = True) -> list[dict]:
    return [
        run_fatrop(N, repeats, form, warmup),
        run_ipopt(N, repeats, form, warmup),
        run_sqpmethod(N, repeats, form=form, warmup=warmup),
    ]


# --- acados (another interpreter: the wheel needs CPython 3.12) ----------------------------

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def run_acados(N: int = 50, repeats: int = 20, rti_steps: int = 100, timeout_s: float = 600) -> dict:
    """scripts/bench_acados.sh --N N ...: its last stdout line, parsed (see
    benches/acados/cartpole_acados.py for the fields); {"ok": False, "error": ...} when acados
    could not run. The first call makes the venv (.bench/acados-venv; about 20 s with the
    downloads)."""
    cmd = ["bash", os.path.join(REPO, "scripts", "bench_acados.sh"), "--N", str(N), "--repeats", str(repeats)]
    cmd += ["--rti-steps", str(rti_steps)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=REPO)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {"ok": False, "peer": "acados", "N": N, "error": f"{type(exc).__name__}: {exc}"}
    lines = out.stdout.strip().splitlines()
    try:
        return json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"ok": False, "peer": "acados", "N": N, "error": f"exit {out.returncode}: {tail}"}


def acados_rows(res: dict) -> list[dict]:
    """The acados JSON as rows of the table (GN, exact Hessian; the RTI has its own line)."""
    n = res.get("N")
    if not res.get("ok"):
        return [_result("acados", n, error=res.get("error", "failed"))]
    rows = []
    for key, label in (("gauss_newton", "acados SQP GN"), ("exact", "acados SQP exact+PROJECT")):
        r = res[key]
        rows.append(
            _result(
                label,
                n,
                **{k: r[k] for k in ("time_s", "times_s", "solver_time_s", "iterations", "J", "J_err", "J_ok", "success")},
                time_min_s=min(r["times_s"]),
                status=str(r["status"]),
                build_s=r["build_s"],
                jit_flags=res.get("cflags"),
            )
        )
    return rows


# --- Table ---------------------------------------------------------------------------------


def _ms(seconds: Optional[float]) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3f}"


def markdown(rows: list[dict]) -> str:
    """ms / solve: median wall time of the call from Python; solver ms: the solver's own timer
    (CasADi's t_wall_total, acados' time_tot); build s: construction with code generation and
    compilation."""
    lines = [
        "| peer | N | ms / solve | solver ms | iterations | J | J ok | status | build s |",
        "| --- | ---: | ---: | ---: | ---: | ---: | :---: | --- | ---: |",
    ]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['peer']} | {r['N']} | — | — | — | — | — | {r['error']} | — |")
            continue
        ok = "—" if r["J_ok"] is None else ("yes" if r["J_ok"] else f"NO ({r['J_err']:.1e})")
        lines.append(
            f"| {r['peer']} | {r['N']} | {_ms(r['time_s'])} | {_ms(r['solver_time_s'])} | {r['iterations']} | "
            f"{r['J']:.8f} | {ok} | {r['status']} | {r['build_s']:.1f} |"
        )
    return "\n".join(lines)


def main(argv: Optional[list[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--long", action="store_true", help="also N = 200 and N = 1000 (minutes: Ipopt takes ~20 s a solve at N = 1000)")
    parser.add_argument("--horizons", type=int, nargs="*", help="horizons to run (default 50; --long: 50 200 1000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed solves per peer at N = 50 (fewer at longer N)")
    parser.add_argument("--form", choices=("map", "sx"), default="map")
    parser.add_argument("--acados", action="store_true", help="also run scripts/bench_acados.sh (Python 3.12 venv)")
    args = parser.parse_args(argv)
    horizons = args.horizons or ([50, 200, 1000] if args.long else [50])
    import casadi as ca

    print(f"CasADi {ca.__version__}, JIT flags {' '.join(JIT_FLAGS)}, form {args.form}; each solve from the zero guess\n")
    rows = []
    for n in horizons:
        repeats = args.repeats if n <= 50 else (3 if n <= 200 else 1)
        rows += run_all(n, repeats, args.form, warmup=n < 1000)  # a solve at N = 1000 takes seconds
    rti = []
    if args.acados:
        # acados with full condensing is the N = 50 peer: at N = 200 its QPs fail (see
        # cartpole_acados.py --qp-solver), and condensing 1000 stages is out of reach.
        for n in [n for n in horizons if n <= 50]:
            res = run_acados(n)
            rows += acados_rows(res)
            if res.get("ok"):
                rti.append(res["rti"] | {"N": n})
    print(markdown(rows))
    for r in rti:
        print(
            f"\nacados SQP_RTI closed loop, N = {r['N']}: {r['steps']} steps, time per RTI step mean "
            f"{r['time_mean_s'] * 1e3:.3f} ms, max {r['time_max_s'] * 1e3:.3f} ms (acados time_tot mean "
            f"{r['solver_time_mean_s'] * 1e3:.3f} ms); upright at the end: {r['upright_at_end']}"
        )


if __name__ == "__main__":
    main()

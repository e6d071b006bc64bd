"""The peers' own examples (tests/peer_problems.py: fatrop's quadrotor), solved by anvil's
interior-point solver by stages (and, with ``--sqp``, its SQP solver by stages) next to Ipopt
(CasADi, MUMPS) and fatrop (CasADi, ``structure_detection="auto"``; neither JIT-compiled, as
the example runs fatrop), from each of the problem's guesses, in the same run.

    python crates/anvil-py/benches/peers_bench.py
    python crates/anvil-py/benches/peers_bench.py --sqp --markdown

Per guess and solver: the status, the objective, the iterations, the median time per solve over
``--repeat`` solves (anvil's native time, the peers' own ``t_wall_total``) and its ratio to
Ipopt's and fatrop's, and the constraint violation at the returned point, computed with
CasADi's functions.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from solver_runs import against, anvil_run, casadi_run, print_markdown, print_row  # noqa: E402


def run(args: argparse.Namespace) -> list[tuple[str, ...]]:
    import casadi as cs
    import numpy as np
    import peer_problems as pp
    from opti_problems import casadi_violation

    from anvil.opti import IPMSettings, SparseIPMFunction, SparseSQPFunction, SQPSettings

    nlp, bounds = pp.quadrotor_casadi()
    quiet = {"print_time": False, "record_time": True}
    ipopt = cs.nlpsol("peers_ipopt", "ipopt", nlp, dict(quiet, ipopt={"print_level": 0, "sb": "yes", "max_iter": 3000}))
    fatrop_opts = {"structure_detection": "auto", "equality": [True] * nlp["g"].shape[0]}
    fatrop = cs.nlpsol("peers_fatrop", "fatrop", nlp, dict(quiet, fatrop={"print_level": 0, "max_iter": 3000}, **fatrop_opts))
    solvers = {"anvil IPM stages": SparseIPMFunction("peers_quad_ipm", pp.quadrotor_problem("peers_quad_ipm"), IPMSettings())}
    if args.sqp:
        solvers["anvil SQP stages"] = SparseSQPFunction(
            "peers_quad_sqp", pp.quadrotor_problem("peers_quad_sqp"), SQPSettings(max_iter=500)
        )
    for label, solver in solvers.items():
        start = time.perf_counter()
        solver.compile()
        print(f"{label}: compiled in {time.perf_counter() - start:.1f} s", flush=True)
    x_init = np.zeros(pp.QUAD_NX)
    rows = []
    for k, x0 in enumerate(pp.quadrotor_guesses()):
        results = {label: anvil_run(lambda: solver(x0, p=x_init), args.repeat) for label, solver in solvers.items()}
        for label, peer in (("Ipopt", ipopt), ("fatrop", fatrop)):
            results[label] = casadi_run(peer, args.repeat, x0=x0, **bounds)
        for label, (status, f, it, t, x) in results.items():
            row = (
                f"quadrotor{pp.QUAD_POINTS}",
                ("example", "hover at start", "zero")[k],
                label,
                status,
                f"{f:.9g}",
                str(it),
                f"{t * 1e3:.2f}",
                *against(t, results, ("Ipopt", "fatrop")),
                f"{casadi_violation(nlp, bounds, x):.1e}",
            )
            rows.append(row)
            print_row(row, 16)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="solves per solver and guess (median time)")
    parser.add_argument("--sqp", action="store_true", help="also anvil's SQP solver by stages")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    header = ("problem", "guess", "solver", "status", "objective", "iterations", "ms", "× Ipopt", "× fatrop", "violation")
    print_row(header, 16)
    rows = run(args)
    if args.markdown:
        print_markdown(header, rows)


if __name__ == "__main__":
    main()

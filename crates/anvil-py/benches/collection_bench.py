"""The interior-point solver on two published collections nobody here tuned it for, side by
side with Ipopt (through CasADi, MUMPS) in the same run:

- Hock & Schittkowski's problems (tests/opti_problems.py and tests/hock_schittkowski.py: 94
  of them), each from its published start and two seeded perturbations of it (the tests'
  guesses), with the dense KKT solver;
- the non-optimal-control problems of COPS 3.0 (tests/cops_nlp.py: polygon, electrons on a
  sphere, cam shape, torsion, journal bearing, minimal surface, flow in a channel, pinene, gas
  oil, methanol, marine population dynamics) at the report's smaller sizes, from the COPS
  guess and a plainer one, with the sparse KKT solver.

    python crates/anvil-py/benches/collection_bench.py              # both collections
    python crates/anvil-py/benches/collection_bench.py --only cops --rows all
    python crates/anvil-py/benches/collection_bench.py --solver sqp-ipm   # the SQP, IPM QPs

Per run: anvil's status, objective and iterations against Ipopt's, and the constraint
violation at the returned points (computed independently with CasADi's functions), and for
every run anvil reports SOLVED its stationarity with its own multipliers, computed the same
way (relative to the gradient; above 1e-6 it is counted as not a KKT point). A run
"agrees" when anvil ends SOLVED at Ipopt's objective (1e-6 relative) or a better one, with
at most Ipopt's violation (or 1e-7). Ipopt meets its constraints to about 1e-8 only, which
can buy it an objective lower by up to its largest multiplier times its violation (HS 95:
1e-4 relative below the literature's optimum, which anvil, feasible to 1e-16, reaches):
that much is allowed too. The summary adds the iterations and times over the runs
where both solvers succeeded; times are the median of `--repeat` solves (anvil's native
solve time, Ipopt's own t_wall_total).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from concurrent.futures import ThreadPoolExecutor
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))


def cases(only: str) -> list[tuple[str, Any, list[Any], bool]]:
    """(collection, Spec, guesses, sparse) for every problem of the chosen collections."""
    import cops_nlp
    import hock_schittkowski
    from opti_problems import PROBLEMS, perturbed_starts

    out = []
    if only in ("all", "hs"):
        for spec in [s for s in PROBLEMS if s.name.startswith("hs")] + hock_schittkowski.PROBLEMS:
            out.append(("HS", spec, perturbed_starts(spec), False))
    if only in ("all", "cops"):
        for name, make in cops_nlp.PROBLEMS.items():
            for size in cops_nlp.SIZES[name]["bench"]:
                spec, guesses = make(size)
                out.append(("COPS", spec, guesses, True))
    return out


SOLVERS = ("ipm", "sqp-piqp", "sqp-ipm")


def build(case: tuple[str, Any, list[Any], bool], solver: str, line_search: str = "merit") -> Any:
    """The chosen anvil solver for one problem: the interior-point method, or the SQP (exact
    Hessian) with its QPs solved by PIQP or by the interior-point method, and its line search
    on the filter or the l1 merit function."""
    from opti_problems import anvil_problem

    from anvil.opti import DenseIPMFunction, DenseSQPFunction, SparseIPMFunction, SparseSQPFunction, SQPSettings

    _, spec, _, sparse = case
    name = f"bench_{spec.name}_{'s' if sparse else 'd'}_{solver.replace('-', '_')}_{line_search}"
    problem = anvil_problem(spec, sparse)
    if solver == "ipm":
        built = (SparseIPMFunction if sparse else DenseIPMFunction)(name, problem)
    else:
        cls = SparseSQPFunction if sparse else DenseSQPFunction
        settings = SQPSettings(max_iter=500, filter=line_search == "filter")
        built = cls(name, problem, settings, qp_backend=solver.removeprefix("sqp-"))
    built.compile()
    return built


def main() -> None:
    import casadi as cs
    import numpy as np
    from opti_problems import casadi_nlp, casadi_stationarity, casadi_violation

    from anvil.opti import SQPStatus

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", choices=["all", "hs", "cops"], default="all")
    parser.add_argument("--repeat", type=int, default=3, help="solves per solver and guess (median time)")
    parser.add_argument("--rows", choices=["differ", "all"], default="differ", help="which runs to print")
    parser.add_argument(
        "--solver", choices=SOLVERS, default="ipm", help="the interior-point method, or the SQP with PIQP's or the IPM's QPs"
    )
    parser.add_argument("--line-search", choices=["merit", "filter"], default="merit", help="the SQP's line search")
    args = parser.parse_args()
    chosen = cases(args.only)
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        solvers = list(pool.map(lambda case: build(case, args.solver, args.line_search), chosen))
    totals: dict[str, dict[str, float]] = {}
    for (collection, spec, guesses, _), solver in zip(chosen, solvers):
        nlp, bounds, _ = casadi_nlp(spec)
        opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes", "record_time": True}
        ipopt = cs.nlpsol(f"bench_ipopt_{spec.name}", "ipopt", nlp, opts)
        t = totals.setdefault(
            collection,
            dict.fromkeys(["runs", "agree", "anvil_fail", "not_kkt", "ipopt_fail", "it", "it_ipopt", "ms", "ms_ipopt"], 0.0),
        )
        for k, x0 in enumerate(guesses):
            ours, theirs = [], []
            for _ in range(args.repeat):
                res = solver(x0)
                ours.append(res.solve_time)
                sol = ipopt(x0=x0, **bounds)
                theirs.append(ipopt.stats()["t_wall_total"])
            st = ipopt.stats()
            f, x = float(sol["f"]), np.asarray(sol["x"]).ravel()
            v, v_ipopt = casadi_violation(nlp, bounds, np.asarray(res.x)), casadi_violation(nlp, bounds, x)
            solved = res.status == SQPStatus.SOLVED and v <= max(1e-7, 1.01 * v_ipopt)
            multipliers = np.concatenate([np.asarray(sol["lam_g"]).ravel(), np.asarray(sol["lam_x"]).ravel()])
            bought = v_ipopt * np.max(np.abs(multipliers), initial=0.0)
            agree = solved and res.objective <= f + 1e-6 * max(1.0, abs(f)) + bought
            t["runs"] += 1
            t["agree"] += agree
            t["anvil_fail"] += res.status != SQPStatus.SOLVED
            if res.status == SQPStatus.SOLVED:
                lam_g = np.concatenate([np.asarray(res.lam_eq).ravel(), np.asarray(res.lam_ineq).ravel()])
                stationarity = casadi_stationarity(nlp, np.asarray(res.x), lam_g, res.lam_box)
                t["not_kkt"] += stationarity > 1e-6
                if stationarity > 1e-6:
                    print(f"{collection:4s} {spec.name:14s} guess {k}: SOLVED, but stationarity {stationarity:.1e} (CasADi)")
            t["ipopt_fail"] += not st["success"]
            if res.status == SQPStatus.SOLVED and st["success"]:
                t["it"] += res.iterations
                t["it_ipopt"] += st["iter_count"]
                t["ms"] += 1e3 * statistics.median(ours)
                t["ms_ipopt"] += 1e3 * statistics.median(theirs)
            if args.rows == "all" or not agree or not st["success"]:
                print(
                    f"{collection:4s} {spec.name:14s} guess {k}: anvil {res.status.name:17s} f={res.objective:<14.9g} "
                    f"it={res.iterations:<5d} viol={v:.0e} | Ipopt {st['return_status']:22s} f={f:<14.9g} "
                    f"it={st['iter_count']:<5d} viol={v_ipopt:.0e}",
                    flush=True,
                )
    print()
    print(
        "| collection | runs | anvil at Ipopt's optimum (or better) | anvil not SOLVED | SOLVED, not a KKT point (CasADi) | "
        "Ipopt failed | iterations, both solved: anvil / Ipopt | time, both solved: anvil / Ipopt | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for collection, t in totals.items():
        print(
            f"| {collection} | {t['runs']:.0f} | {t['agree']:.0f} | {t['anvil_fail']:.0f} | {t['not_kkt']:.0f} | {t['ipopt_fail']:.0f} | "
            f"{t['it']:.0f} / {t['it_ipopt']:.0f} | {t['ms']:.1f} ms / {t['ms_ipopt']:.1f} ms | "
            f"{t['ms'] / max(t['ms_ipopt'], 1e-9):.3f} |"
        )


if __name__ == "__main__":
    main()

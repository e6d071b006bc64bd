"""COPS 3.0 optimal-control problems (tests/cops_problems.py) at the report's discretisations,
from the report's initial guess and a plainer one: anvil's sparse interior-point solver, the
same solver on the problems written as MultistageProblems (tests/cops_multistage.py: its KKT
systems factorised by stages), its sparse SQP solver (PIQP's QPs, and the interior-point
QPs of qp_backend="ipm"), and the SQP solver by stages (its
Riccati QP, with the whole Hessian's inertia corrected and with its stage blocks convexified
one by one) next to Ipopt (through CasADi, MUMPS) and fatrop (through CasADi, on the same
problem in its form: ``cops_multistage.fatrop_form``), measured in the same run.

    python crates/anvil-py/benches/cops_bench.py                  # N = 100, 200, 400
    python crates/anvil-py/benches/cops_bench.py --N 50 --problems rocket,chain
    python crates/anvil-py/benches/cops_bench.py --markdown       # ...and a table for the docs

Per problem, guess and solver: the status, the objective (against the report's optimum), the
iterations, the median time per solve over `--repeat` solves (anvil's native time; the
peers' own `t_wall_total`) and its ratio to each peer's, and the constraint violation at the
returned point, computed independently with CasADi's functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from solver_runs import against, anvil_run, casadi_run, print_markdown, print_row  # noqa: E402


def run(args: argparse.Namespace) -> list[tuple[str, ...]]:
    import casadi as cs
    import cops_multistage
    from cops_problems import PROBLEMS
    from opti_problems import anvil_problem, casadi_nlp, casadi_violation

    from anvil.opti import SparseIPMFunction, SparseSQPFunction, SQPSettings

    rows = []
    for name in args.problems.split(","):
        for n in args.N:
            spec, guesses = PROBLEMS[name](n)
            nlp, bounds, _ = casadi_nlp(spec)
            opts = {"ipopt.print_level": 0, "print_time": False, "ipopt.sb": "yes", "record_time": True}
            ipopt = cs.nlpsol(f"ipopt_{spec.name}", "ipopt", nlp, opts)
            ocp, _, _ = cops_multistage.OCPS[name](n)
            fatrop_form = cops_multistage.fatrop_form(ocp)
            fatrop_opts = {"fatrop": {"print_level": 0, "max_iter": 3000}, "print_time": False, "record_time": True}
            fatrop = cs.nlpsol(f"fatrop_{spec.name}", "fatrop", fatrop_form.nlp, dict(fatrop_form.options, **fatrop_opts))
            problem = anvil_problem(spec, True)
            staged, _, _ = cops_multistage.PROBLEMS[name](n)

            def whole(x: Any) -> Any:
                return x

            def by_stages(x: Any, nz: int = staged.nz) -> Any:
                return cops_multistage.to_stages(x, n, nz)

            def back(z: Any, size: int = spec.n) -> Any:
                return cops_multistage.from_stages(z, n, size)

            sqp = SQPSettings(max_iter=500, filter=args.line_search == "filter")
            # label: (solver, the guess in its variables, its result in the Spec's).
            solvers = {
                "anvil IPM": (SparseIPMFunction(f"{spec.name}_ipm", problem), whole, whole),
                "anvil IPM stages": (SparseIPMFunction(f"{spec.name}_ipm_stages", staged), by_stages, back),
                "anvil SQP": (SparseSQPFunction(f"{spec.name}_sqp", problem, sqp), whole, whole),
                "anvil SQP ipm-qp": (
                    SparseSQPFunction(f"{spec.name}_sqp_ipm", problem, sqp, qp_backend="ipm"),
                    whole,
                    whole,
                ),
                # By stages (the Riccati QP): the whole Hessian's inertia corrected, and
                # convexified stage by stage (convexify_by_stage).
                "anvil SQP stages": (
                    SparseSQPFunction(
                        f"{spec.name}_sqp_stages", staged, dataclasses.replace(sqp, convexify_by_stage=False)
                    ),
                    by_stages,
                    back,
                ),
                "anvil SQP stages blockwise": (
                    SparseSQPFunction(
                        f"{spec.name}_sqp_blockwise", staged, dataclasses.replace(sqp, convexify_by_stage=True)
                    ),
                    by_stages,
                    back,
                ),
            }
            if args.solvers:
                solvers = {k: v for k, v in solvers.items() if k in args.solvers.split(",")}
            for s, _, _ in solvers.values():
                s.compile()
            for k, x0 in enumerate(guesses):
                results = {}
                for label, (solver, into, out) in solvers.items():
                    status, f, it, t, z = anvil_run(lambda: solver(into(x0)), args.repeat)
                    results[label] = (status, f, it, t, out(z))
                results["Ipopt"] = casadi_run(ipopt, args.repeat, x0=x0, **bounds)
                fat = casadi_run(fatrop, args.repeat, x0=fatrop_form.start(by_stages(x0)), **fatrop_form.bounds)
                results["fatrop"] = (*fat[:4], back(fatrop_form.stages(fat[4])))
                for label, (status, f, it, t, x) in results.items():
                    row = (
                        spec.name,
                        "COPS" if k == 0 else "plain",
                        label,
                        status,
                        f"{f:.7g}",
                        f"{spec.f_opt:g}" if spec.f_opt is not None else "—",
                        str(it),
                        f"{t * 1e3:.2f}",
                        *against(t, results, ("Ipopt", "fatrop")),
                        f"{casadi_violation(nlp, bounds, x):.1e}",
                    )
                    rows.append(row)
                    print_row(row, 14)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--N", type=int, nargs="+", default=[100, 200, 400], help="intervals (default 100 200 400)")
    parser.add_argument("--problems", default="catmix,steering,chain,rocket,glider,arm")
    parser.add_argument("--repeat", type=int, default=5, help="solves per solver and guess (median time)")
    parser.add_argument("--solvers", default="", help="comma-separated labels of the anvil solvers to run (default all)")
    parser.add_argument("--line-search", choices=["merit", "filter"], default="merit", help="the SQP solvers' line search")
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    header = ("problem", "guess", "solver", "status", "objective", "published", "iterations", "ms", "× Ipopt", "× fatrop", "violation")
    print_row(header, 14)
    rows = run(args)
    if args.markdown:
        print_markdown(header, rows)


if __name__ == "__main__":
    main()

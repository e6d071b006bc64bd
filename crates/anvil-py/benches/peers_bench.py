"""The peers' own examples (tests/peer_problems.py: fatrop's quadrotor and car reference
tracking, rockit's motion planning, acados' chain of masses and pendulum on a cart, CasADi's
race car and Van der Pol examples), solved by anvil's interior-point solver by stages (and,
with ``--sqp``, its SQP solver by stages) next to Ipopt (CasADi, MUMPS) and fatrop (CasADi;
the quadrotor, the chain of masses, Van der Pol and the pendulum with
``structure_detection="auto"``, the motion planning and the race car in fatrop's stage form,
the free final time a state of each stage, the car as its example poses it; neither
JIT-compiled, as the examples run them), from each of the problem's guesses, in the same run.

    python crates/anvil-py/benches/peers_bench.py
    python crates/anvil-py/benches/peers_bench.py --sqp --markdown

Per guess and solver: the status, the objective, the iterations, the median time per solve over
``--repeat`` solves (anvil's native time, the peers' own ``t_wall_total``) and its ratio to
Ipopt's and fatrop's, and the constraint violation at the returned point, computed with
CasADi's functions.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time
from typing import Any, Callable

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))

from solver_runs import against, anvil_run, casadi_run, print_markdown, print_row  # noqa: E402


@dataclasses.dataclass
class Peer:
    """One example: its NLP for Ipopt (and the violation check), fatrop's form of it with the
    maps of a guess onto its variables and back, anvil's problem, the guesses and x_init."""

    name: str
    nlp: dict[str, Any]
    bounds: dict[str, Any]
    fatrop: tuple[dict[str, Any], dict[str, Any], dict[str, Any], Callable[[Any], Any], Callable[[Any], Any]]
    problem: Callable[[str], Any]
    guesses: list[Any]
    labels: tuple[str, ...]
    p: Any


def peers() -> list[Peer]:
    import numpy as np
    import peer_problems as pp
    from opti_problems import casadi_nlp

    def same(x: Any) -> Any:
        return x

    def detected(nlp: dict[str, Any], bounds: dict[str, Any]) -> tuple[Any, ...]:
        """fatrop on the z-form NLP itself, its stages detected from the sparsity (all rows
        equalities)."""
        return (nlp, bounds, {"structure_detection": "auto", "equality": [True] * nlp["g"].shape[0]}, same, same)

    def auto(name: str, form: tuple[Any, Any], problem: Callable[[str], Any], guesses: Any, labels: tuple[str, ...], p: Any) -> Peer:
        """A peer whose CasADi form (nlp, bounds) fatrop takes by detection."""
        nlp, bounds = form
        return Peer(name, nlp, bounds, detected(nlp, bounds), problem, guesses, labels, p)

    quadrotor = auto(
        f"quadrotor{pp.QUAD_POINTS}",
        pp.quadrotor_casadi(),
        pp.quadrotor_problem,
        pp.quadrotor_guesses(),
        ("example", "hover at start", "zero"),
        np.zeros(pp.QUAD_NX),
    )
    nlp, bounds = pp.motion_casadi()
    motion = Peer(
        "motion planning",
        nlp,
        bounds,
        pp.motion_fatrop(),
        pp.motion_problem,
        pp.motion_guesses(),
        ("example", "slower"),
        pp.MOTION_START,
    )
    nlp, bounds = pp.car_casadi()
    car = Peer(
        "car tracking",
        nlp,
        bounds,
        pp.car_fatrop(),
        pp.car_problem,
        pp.car_guesses(),
        ("example", "start held"),
        pp.car_parameter(),
    )
    chain = auto("chain of masses", pp.chain_casadi(), pp.chain_problem, pp.chain_guesses(), ("start held", "rest"), pp.chain_start())
    nlp, bounds, _ = casadi_nlp(pp.race_spec())
    race = Peer("race car", nlp, bounds, pp.race_fatrop(), pp.race_problem, pp.race_guesses(), ("example", "ramp"), np.zeros(2))
    vdp = [
        auto(
            "Van der Pol" + (" to rest" if to_rest else ""),
            pp.vdp_casadi(to_rest),
            lambda name, to_rest=to_rest: pp.vdp_problem(name, to_rest),
            pp.vdp_guesses(),
            ("example", "start held"),
            pp.VDP_START,
        )
        for to_rest in (False, True)
    ]
    pendulum = auto(
        "pendulum on a cart",
        pp.pendulum_casadi(),
        pp.pendulum_problem,
        pp.pendulum_guesses(),
        ("zeros", "start held"),
        pp.PENDULUM_START,
    )
    return [quadrotor, motion, car, chain, race, *vdp, pendulum]


def run(args: argparse.Namespace) -> list[tuple[str, ...]]:
    import casadi as cs
    from opti_problems import casadi_violation

    from anvil.opti import IPMSettings, SparseIPMFunction, SparseSQPFunction, SQPSettings

    quiet = {"print_time": False, "record_time": True}
    rows = []
    for k, peer in enumerate(peers()):
        ipopt = cs.nlpsol(f"peers_ipopt{k}", "ipopt", peer.nlp, dict(quiet, ipopt={"print_level": 0, "sb": "yes", "max_iter": 3000}))
        fatrop_nlp, fatrop_bounds, fatrop_opts, into, back = peer.fatrop
        fatrop_quiet = dict(quiet, fatrop={"print_level": 0, "max_iter": 3000}, **fatrop_opts)
        fatrop = cs.nlpsol(f"peers_fatrop{k}", "fatrop", fatrop_nlp, fatrop_quiet)
        solvers = {"anvil IPM stages": SparseIPMFunction(f"peers{k}_ipm", peer.problem(f"peers{k}_ipm"), IPMSettings())}
        if args.sqp:
            solvers["anvil SQP stages"] = SparseSQPFunction(f"peers{k}_sqp", peer.problem(f"peers{k}_sqp"), SQPSettings(max_iter=500))
        for label, solver in solvers.items():
            start = time.perf_counter()
            solver.compile()
            print(f"{peer.name}, {label}: compiled in {time.perf_counter() - start:.1f} s", flush=True)
        for guess, x0 in zip(peer.labels, peer.guesses):
            results = {label: anvil_run(lambda: solver(x0, p=peer.p), args.repeat) for label, solver in solvers.items()}
            results["Ipopt"] = casadi_run(ipopt, args.repeat, x0=x0, **peer.bounds)
            status, f, it, t, w = casadi_run(fatrop, args.repeat, x0=into(x0), **fatrop_bounds)
            results["fatrop"] = (status, f, it, t, back(w))
            for label, (status, f, it, t, x) in results.items():
                row = (
                    peer.name,
                    guess,
                    label,
                    status,
                    f"{f:.9g}",
                    str(it),
                    f"{t * 1e3:.2f}",
                    *against(t, results, ("Ipopt", "fatrop")),
                    f"{casadi_violation(peer.nlp, peer.bounds, x):.1e}",
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

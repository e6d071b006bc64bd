"""What the solver benchmarks next to CasADi peers share (cops_bench.py, peers_bench.py): timed
solves of anvil's solvers and of CasADi's, as one kind of result, and the table printed from
them.

A result is ``(status, objective, iterations, seconds, x)``: the last solve's status,
objective, iterations and point, and the median time per solve (anvil's native time, the
peer's own ``t_wall_total``).
"""

from __future__ import annotations

import statistics
from typing import Any, Callable

import numpy as np

Result = tuple[str, float, int, float, np.ndarray]


def anvil_run(solve: Callable[[], Any], repeat: int) -> Result:
    """``repeat`` calls of ``solve`` (an anvil solver's call)."""
    times, res = [], None
    for _ in range(repeat):
        res = solve()
        times.append(res.solve_time)
    return res.status.name, res.objective, res.iterations, statistics.median(times), np.asarray(res.x)


def casadi_run(peer: Any, repeat: int, **args: Any) -> Result:
    """``repeat`` solves of the CasADi nlpsol ``peer`` (built with ``record_time``) from ``args``.
    The status is the plugin's own where it names one (Ipopt's), else whether it succeeded."""
    times, sol = [], None
    for _ in range(repeat):
        sol = peer(**args)
        times.append(peer.stats()["t_wall_total"])
    stats = peer.stats()
    status = stats["return_status"]
    if not isinstance(status, str):
        status = "Solve_Succeeded" if stats["success"] else f"failed ({status})"
    x = np.asarray(sol["x"]).ravel()
    return status, float(sol["f"]), int(stats["iter_count"]), statistics.median(times), x


def against(seconds: float, results: dict[str, Result], peers: tuple[str, ...]) -> list[str]:
    """The time ``seconds`` over each peer's (the table's ratio columns)."""
    return [f"{seconds / results[peer][3]:.3f}" for peer in peers]


def print_row(row: tuple[str, ...], width: int) -> None:
    print("  ".join(f"{c:>{width}s}" for c in row), flush=True)


def print_markdown(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for row in rows:
        print("| " + " | ".join(row) + " |")

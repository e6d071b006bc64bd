"""Solve time of anvil's SQP solvers and its interior-point solver (anvil.opti) next to
CasADi's sqpmethod (with the qrqp and PIQP QP solvers) and Ipopt, on the same problems
(tests/opti_problems.py), measured in the same run.

    python crates/anvil-py/benches/opti_bench.py                 # every problem
    python crates/anvil-py/benches/opti_bench.py --markdown      # ...and a table for the README
    python crates/anvil-py/benches/opti_bench.py --problems hs071,chain150 --repeat 50
    python crates/anvil-py/benches/opti_bench.py --cold          # fresh JIT cache: compile everything

Each solve starts from the problem's x0 and is timed by wall clock around the Python call
(so it includes the Python bindings' overhead, anvil's and CasADi's alike; each solver's own
time, anvil's ``res.solve_time`` and CasADi's ``t_wall_total``, is shown next to it, as
"own"). The tools are called round-robin, one solve each per round, so that drift on a busy
machine hits them all alike; the table shows medians over the rounds. A problem runs
``--repeat`` rounds, fewer where a round is slow (at most about ``--max-seconds`` per
problem, and at least 3 rounds).

The first solver a process builds loads PIQP's runtime library from the JIT cache, or
builds it there (tens of seconds, once per compiler and flags); "JIT: definition to first
solve" is measured after that, on a solver of a new name (so its code is compiled, not found
in the cache; its files are removed from the cache afterwards). ``--cold`` points
``$ANVIL_CACHE_DIR`` at a fresh temporary directory (removed at the end), so that the run
pays every compilation, the PIQP library's included.

CasADi is optional (without it only the anvil columns are shown). Its functions are SX
expressions (no expansion needed); ``--casadi-jit`` compiles them with the system compiler.
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import os
import platform
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(os.path.dirname(HERE), "tests")

#: Columns, in order: key -> label.
TOOLS = {
    "dense": "anvil dense",
    "sparse": "anvil sparse",
    "ipm": "anvil IPM",
    "qrqp": "sqpmethod+qrqp",
    "piqp": "sqpmethod+piqp",
    "ipopt": "Ipopt",
}
ANVIL_TOOLS = ("dense", "sparse", "ipm")
MIN_ROUNDS = 3
#: Matches anvil's default tolerances (SQPSettings.tol_*).
TOL = 1e-8


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=200, help="rounds per problem (default 200)")
    parser.add_argument(
        "--max-seconds",
        type=float,
        default=8.0,
        help="fewer rounds where they would take longer than this per problem (default 8; at least 3 rounds)",
    )
    parser.add_argument("--problems", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--markdown", action="store_true", help="also print a markdown table (for the README)")
    parser.add_argument("--cold", action="store_true", help="use a fresh, temporary JIT cache ($ANVIL_CACHE_DIR)")
    parser.add_argument("--casadi-jit", action="store_true", help="JIT-compile CasADi's NLP functions")
    parser.add_argument("--jit-problem", default="hs071", help="problem of the definition-to-first-solve timing")
    return parser.parse_args(argv)


# --- The machine -------------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def jit_compiler() -> str:
    """The compiler and flags anvil's JIT uses (see crates/anvil/src/jit/compiler.rs)."""
    command = os.environ.get("CXX", "").strip()
    candidates = [command] if command else ["c++", "g++", "clang++"]
    flags = os.environ.get("ANVIL_CXXFLAGS", "-O3 -march=native -fno-math-errno -ffp-contract=off")
    for cmd in candidates:
        try:
            out = subprocess.run(cmd.split() + ["--version"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0:
            version = (out.stdout.splitlines() or ["?"])[0]
            return f"{cmd}: {version}; flags {flags}"
    return "none found"


def print_machine(casadi: Any) -> None:
    import importlib.metadata

    import numpy as np

    cores = os.cpu_count()
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"CPU:       {cpu_model()} ({cores} logical cores; load average {load})")
    print(f"OS:        {platform.platform()}")
    print(f"JIT:       {jit_compiler()}")
    versions = [f"anvil {importlib.metadata.version('anvil')}", f"Python {platform.python_version()}"]
    versions.append(f"numpy {np.__version__}")
    versions.append(f"CasADi {casadi.__version__} (Ipopt with MUMPS)" if casadi else "CasADi not installed")
    print(f"Versions:  {', '.join(versions)}")


# --- The JIT cache -----------------------------------------------------------------------


def cache_dirs() -> list[str]:
    """Where anvil's JIT may keep libraries: its cache directory (crates/anvil/src/jit/cache.rs)
    and the per-user subdirectory it uses when that one is shared."""
    root = os.environ.get("ANVIL_CACHE_DIR") or (
        os.path.join(os.environ["XDG_CACHE_HOME"], "anvil")
        if os.environ.get("XDG_CACHE_HOME")
        else os.path.join(os.path.expanduser("~"), ".cache", "anvil")
    )
    return [root, os.path.join(root, f"anvil-{os.getuid()}")] if hasattr(os, "getuid") else [root]


def cache_files() -> set[str]:
    out: set[str] = set()
    for d in cache_dirs():
        try:
            out.update(os.path.join(d, f) for f in os.listdir(d))
        except OSError:
            pass
    return out


def what_was_built(new_files: set[str], solver: str) -> str:
    """What the cache gained while `solver` was built (other processes may share the cache:
    only PIQP's library and the solver's own count)."""
    names = [os.path.basename(f) for f in new_files]
    parts = []
    if any(n.startswith("libanvil-opti-piqp-") and n.endswith(".a") for n in names):
        parts.append("built PIQP's runtime library")
    compiled = any(n.startswith(f"lib{solver}-") and n.endswith(".so") for n in names)
    parts.append("compiled: not in the on-disk cache" if compiled else "loaded from the on-disk cache")
    return ", ".join(parts)


# --- Runners -----------------------------------------------------------------------------


@dataclasses.dataclass
class Outcome:
    ok: bool
    status: str
    iterations: int
    objective: float
    #: The solver's own time for the solve (anvil's res.solve_time, CasADi's t_wall_total).
    native_s: Optional[float]
    note: str = ""


@dataclasses.dataclass
class Runner:
    key: str
    #: One solve from x0; its result goes to `outcome` (outside the timed region).
    call: Callable[[], Any]
    outcome: Callable[[Any], Outcome]
    #: (n, equality rows, inequality rows), where known.
    dims: Optional[tuple[int, int, int]] = None


@dataclasses.dataclass
class Timing:
    key: str
    wall: list[float]
    native: list[float]
    last: Outcome

    @property
    def median(self) -> float:
        return statistics.median(self.wall)

    @property
    def native_median(self) -> Optional[float]:
        return statistics.median(self.native) if self.native else None


def anvil_solver(spec: Any, sparse: bool, name: Optional[str] = None) -> Any:
    from anvil.opti import DenseSQPFunction, SparseSQPFunction, SQPSettings
    from opti_problems import anvil_problem

    cls = SparseSQPFunction if sparse else DenseSQPFunction
    name = name or f"{spec.name}_{'s' if sparse else 'd'}"
    return cls(name=name, problem=anvil_problem(spec, sparse), settings=SQPSettings())


def anvil_ipm_solver(spec: Any) -> Any:
    from anvil.opti import DenseIPMFunction, IPMSettings
    from opti_problems import anvil_problem

    return DenseIPMFunction(f"{spec.name}_ipm", anvil_problem(spec, False), IPMSettings())


def anvil_runner(spec: Any, kind: str) -> Runner:
    import numpy as np

    solver = anvil_ipm_solver(spec) if kind == "ipm" else anvil_solver(spec, kind == "sparse")
    solver.compile()
    x0 = np.array(spec.x0, dtype=np.float64)

    def outcome(res: Any) -> Outcome:
        return Outcome(
            res.success, res.status.name, res.iterations, res.objective, res.solve_time, f"{res.qp_iterations} QP it"
        )

    dims = (solver.nx, solver.neq, solver.nineq)
    return Runner(kind, lambda: solver(x0), outcome, dims)


def casadi_options(key: str, jit: bool) -> tuple[str, dict[str, Any]]:
    opts: dict[str, Any] = {"print_time": False, "record_time": True, "error_on_fail": False}
    if jit:
        opts.update(jit=True, compiler="shell", jit_options={"flags": ["-O3", "-march=native"], "verbose": False})
    if key == "ipopt":
        opts.update({"ipopt.print_level": 0, "ipopt.sb": "yes", "ipopt.tol": TOL})
        return "ipopt", opts
    qp_opts: dict[str, Any] = {"error_on_fail": False}
    if key == "qrqp":
        qp_opts.update(print_iter=False, print_header=False)
    opts.update(
        qpsol=key,
        qpsol_options=qp_opts,
        print_header=False,
        print_iteration=False,
        print_status=False,
        max_iter=100,
        tol_pr=TOL,
        tol_du=TOL,
    )
    return "sqpmethod", opts


def casadi_runner(spec: Any, key: str, jit: bool) -> Runner:
    import casadi as cs
    import numpy as np
    from opti_problems import casadi_nlp

    nlp, bounds, _ = casadi_nlp(spec)
    plugin, opts = casadi_options(key, jit)
    solver = cs.nlpsol(f"{spec.name}_{key}", plugin, nlp, opts)
    kwargs = dict(x0=np.array(spec.x0, dtype=np.float64), **bounds)

    def outcome(out: Any) -> Outcome:
        st = solver.stats()
        ok, status, it = bool(st["success"]), str(st["return_status"]), int(st["iter_count"])
        return Outcome(ok, status, it, float(out["f"]), st.get("t_wall_total"))

    return Runner(key, lambda: solver(**kwargs), outcome)


# --- Timing ------------------------------------------------------------------------------


def measure(runners: list[Runner], repeat: int, max_seconds: float) -> tuple[dict[str, Timing], int]:
    """Round-robin timings of `runners` (the starting runner rotates from round to round),
    after one warm-up solve each; returns the timings and the number of rounds."""
    round_s = 0.0
    for r in runners:
        t0 = time.perf_counter()
        r.call()
        round_s += time.perf_counter() - t0
    rounds = min(repeat, max(MIN_ROUNDS, int(max_seconds / max(round_s, 1e-9))))
    timings: dict[str, Timing] = {}
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for i in range(rounds):
            k = i % len(runners)
            for r in runners[k:] + runners[:k]:
                t0 = time.perf_counter()
                out = r.call()
                wall = time.perf_counter() - t0
                o = r.outcome(out)
                t = timings.setdefault(r.key, Timing(r.key, [], [], o))
                t.wall.append(wall)
                if o.native_s is not None:
                    t.native.append(o.native_s)
                t.last = o
    finally:
        if gc_was_enabled:
            gc.enable()
    return timings, rounds


# --- Reporting ---------------------------------------------------------------------------


def wrong_optimum(spec: Any, o: Outcome) -> bool:
    """Ended "successfully", at a point other than the known optimum (a local minimum)."""
    return o.ok and spec.f_opt is not None and abs(o.objective - spec.f_opt) > 1e-4 * (1 + abs(spec.f_opt))


def best_anvil(timings: dict[str, Timing]) -> Optional[Timing]:
    """The fastest anvil solver that succeeded (else the fastest one)."""
    ours = [timings[k] for k in ANVIL_TOOLS if k in timings]
    good = [t for t in ours if t.last.ok] or ours
    return min(good, key=lambda t: t.median, default=None)


def us(seconds: Optional[float]) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:,.1f}" if seconds < 1e-3 else f"{seconds * 1e6:,.0f}"


def print_problem(spec: Any, dims: tuple[int, int, int], rounds: int, timings: dict[str, Timing]) -> None:
    n, neq, nineq = dims
    print(f"\n{spec.name}  (n = {n}, {neq} eq, {nineq} ineq; {rounds} rounds)")
    best = best_anvil(timings)
    for key, label in TOOLS.items():
        t = timings.get(key)
        if t is None:
            continue
        o = t.last
        status = o.status if o.ok else f"FAIL {o.status}"
        if wrong_optimum(spec, o):
            status += f" (f* = {spec.f_opt:.10g})"
        ratio = ""
        if best is not None:
            ratio = "best anvil" if t is best else f"{t.median / best.median:6.2f}x best anvil"
        native = f"(own {us(t.native_median):>9} us)"
        it = f"it {o.iterations:3d}" + (f" ({o.note})" if o.note else "")
        objective = f"f = {o.objective:<+16.10g}"
        print(f"  {label:<15} {us(t.median):>10} us {native:<21} {it:<20} {ratio:<17}  {objective} {status}")
    if best is not None and not best.last.ok:
        print("  (no anvil solver succeeded: the ratios compare with a failed solve)")


def markdown(rows: list[tuple[Any, int, int, dict[str, Timing]]]) -> str:
    #: (problem, objective) -> the tools that ended there, away from the known optimum.
    elsewhere: dict[tuple[str, str], list[str]] = {}

    def cell(spec: Any, t: Optional[Timing], show_status: bool) -> str:
        if t is None:
            return "—"
        o = t.last
        if not o.ok:
            return f"{us(t.median)} ({o.iterations} / **fail: {o.status}**)"
        mark = ""
        if wrong_optimum(spec, o):
            mark = "†"
            elsewhere.setdefault((spec.name, f"f = {o.objective:.6g}, f* = {spec.f_opt:.6g}"), []).append(TOOLS[t.key])
        return f"{us(t.median)} ({o.iterations}{' / ok' if show_status else ''}){mark}"

    lines = [
        "| problem | n | anvil dense µs (it) | anvil sparse µs (it) | anvil IPM µs (it) "
        "| sqpmethod+qrqp µs (it / status) | sqpmethod+piqp µs (it / status) | Ipopt µs (it) "
        "| best anvil speed-up vs Ipopt |",
        "|---|--:|--:|--:|--:|--:|--:|--:|--:|",
    ]
    for spec, n, _, timings in rows:
        cells = [cell(spec, timings.get(k), k in ("qrqp", "piqp")) for k in TOOLS]
        best, ipopt = best_anvil(timings), timings.get("ipopt")
        if best is None or ipopt is None:
            speedup = "—"
        elif not best.last.ok:
            speedup = "— (anvil failed)"
        else:
            speedup = f"{ipopt.median / best.median:.1f}×" + ("" if ipopt.last.ok else " (Ipopt failed)")
        lines.append(f"| {spec.name} | {n} | " + " | ".join(cells) + f" | {speedup} |")
    rounds = sorted({r for _, _, r, _ in rows})
    span = f"{rounds[0]}" if len(rounds) == 1 else f"{rounds[0]}–{rounds[-1]}"
    lines.append("")
    lines.append(
        f"Median wall-clock time per solve, called from Python, in µs, over {span} round-robin rounds; "
        f"it: SQP, interior-point (Ipopt) iterations; tolerances {TOL:g}. {cpu_model()}, {os.cpu_count()} cores."
    )
    for (problem, where), tools in elsewhere.items():
        lines.append(f"† {problem}: {', '.join(tools)} converged to another local minimum ({where}).")
    return "\n".join(lines)


# --- JIT: definition to first solve ------------------------------------------------------


def time_first_solver() -> None:
    """Builds the run's first solver: loads PIQP's runtime library (or builds it)."""
    from opti_problems import by_name

    before = cache_files()
    t0 = time.perf_counter()
    solver = anvil_solver(by_name("guide"), sparse=False, name="opti_bench_warmup")
    solver.compile()
    elapsed = time.perf_counter() - t0
    built = what_was_built(cache_files() - before, solver.name)
    print(f"\nFirst solver of the run (guide, dense): {elapsed:.2f} s to compile ({built})")


def time_definition_to_first_solve(name: str, casadi: Any, casadi_jit: bool) -> None:
    """From defining the NumericalFunctions to the end of the first solve, for a solver of
    a new name (compiled, not found in the cache), and the same for CasADi."""
    import numpy as np
    from opti_problems import by_name, casadi_nlp

    base = by_name(name)
    x0 = np.array(base.x0, dtype=np.float64)
    for sparse in (False, True):
        if base.large and not sparse:
            continue
        spec = dataclasses.replace(base, name=f"jit_{name}_{secrets.token_hex(4)}")
        before = cache_files()
        t0 = time.perf_counter()
        solver = anvil_solver(spec, sparse, name=spec.name)
        t1 = time.perf_counter()
        solver.compile()
        t2 = time.perf_counter()
        res = solver(x0)
        t3 = time.perf_counter()
        new = cache_files() - before
        print(
            f"JIT, definition to first solve, {name} {'sparse' if sparse else 'dense'}: {t3 - t0:.2f} s "
            f"(define {(t1 - t0) * 1e3:.1f} ms, compile {t2 - t1:.2f} s, first solve {(t3 - t2) * 1e3:.2f} ms, "
            f"{res.status.name}; {what_was_built(new, spec.name)})"
        )
        for f in new:
            if spec.name in os.path.basename(f):
                os.remove(f)
    if casadi is None:
        return
    for key in ("qrqp", "ipopt"):
        t0 = time.perf_counter()
        nlp, bounds, _ = casadi_nlp(base)
        plugin, opts = casadi_options(key, casadi_jit)
        solver = casadi.nlpsol(f"first_{key}", plugin, nlp, opts)
        solver(x0=x0, **bounds)
        print(f"CasADi, definition to first solve, {name} {TOOLS[key]}: {time.perf_counter() - t0:.3f} s")


# --- Main --------------------------------------------------------------------------------


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    start = time.perf_counter()
    cold_dir = None
    if args.cold:
        # Before anvil is imported (it reads the variable when it compiles).
        cold_dir = tempfile.mkdtemp(prefix="anvil-opti-bench-")
        os.environ["ANVIL_CACHE_DIR"] = cold_dir
    sys.path.insert(0, TESTS)
    try:
        run(args)
    finally:
        if cold_dir:
            shutil.rmtree(cold_dir, ignore_errors=True)
    print(f"\nTotal: {time.perf_counter() - start:.1f} s")


def run(args: argparse.Namespace) -> None:
    from opti_problems import PROBLEMS

    try:
        import casadi
    except ImportError:
        casadi = None
    wanted = [p for p in args.problems.split(",") if p]
    unknown = set(wanted) - {p.name for p in PROBLEMS}
    if unknown:
        sys.exit(f"unknown problems: {', '.join(sorted(unknown))} (known: {', '.join(p.name for p in PROBLEMS)})")
    problems = [p for p in PROBLEMS if not wanted or p.name in wanted]

    print_machine(casadi)
    print(f"JIT cache: {cache_dirs()[0]}{' (fresh: --cold)' if args.cold else ''}")

    time_first_solver()
    time_definition_to_first_solve(args.jit_problem, casadi, args.casadi_jit)

    rows = []
    for spec in problems:
        # The interior-point solver factorises its KKT systems densely: the small problems.
        kinds = ["sparse"] if spec.large else ["dense", "sparse", "ipm"]
        runners = [anvil_runner(spec, kind) for kind in kinds]
        if casadi is not None:
            runners += [casadi_runner(spec, key, args.casadi_jit) for key in ("qrqp", "piqp", "ipopt")]
        timings, rounds = measure(runners, args.repeat, args.max_seconds)
        dims = next(r.dims for r in runners if r.dims is not None)
        print_problem(spec, dims, rounds, timings)
        rows.append((spec, dims[0], rounds, timings))
        sys.stdout.flush()

    if args.markdown:
        print()
        print(markdown(rows))
    load = " / ".join(f"{v:.2f}" for v in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"\nLoad average at the end: {load}")


if __name__ == "__main__":
    main()

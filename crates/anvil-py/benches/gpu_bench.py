"""The GPU benchmark: anvil's CUDA backend next to JAX's CUDA build, in one process, on device
arrays (anvil: CuPy arrays in and out; JAX: its own), each call synchronised, medians of
calls interleaved one by one, and in alternating blocks of ten (each ratio column is anvil /
JAX).

    python crates/anvil-py/benches/gpu_bench.py             # every case
    python crates/anvil-py/benches/gpu_bench.py --quick     # fewer repetitions

- the cart-pole RK4 rollout (tests/multistage_problems.py's step), 50 steps from a state
  with its own 50 controls, vmapped over 65,536 samples, f64 (JAX: ``jit(vmap(scan))``);
- the MLP 16-64-64-4 (tanh, captured weights) vmapped over 1M samples in f64 and over 65,536
  in f32 (JAX: ``jit(vmap(mlp))``, its float32 products at full precision, not TF32);
- ``sum(0.5 x² + sin x)`` of n = 1024 per sample over 16,384 samples, f64;
- ``sum(0.5 x² + sin x)`` of n = 2²⁴ in one call (no vmap), f64;
- the time to the first result of a new function (NVRTC, an empty CUBIN cache) and of the
  same function again in a new object (the cached CUBIN), next to JAX's first call.

Every result is checked against JAX's first. Needs an NVIDIA GPU, NVRTC, CuPy and JAX.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import tempfile
import time
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import anvil as av  # noqa: E402
import multistage_problems as cp  # noqa: E402
from opti_problems import AnvilMath  # noqa: E402

STEPS = 50
RNG = np.random.default_rng(7)
W1, W2, W3 = RNG.uniform(-0.5, 0.5, (64, 16)), RNG.uniform(-0.5, 0.5, (64, 64)), RNG.uniform(-0.5, 0.5, (4, 64))
B1, B2, B3 = RNG.uniform(-0.5, 0.5, 64), RNG.uniform(-0.5, 0.5, 64), RNG.uniform(-0.5, 0.5, 4)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


FIRST_CALLS: list[tuple[str, float, float]] = []


BLOCK = 10


def compare(label: str, anvil_call: Callable[[], Any], jax_call: Callable[[], Any], reps: int) -> tuple[float, float]:
    """Median seconds per call of each (after their first calls, which compile): interleaved
    call by call, then in alternating blocks of `BLOCK` calls of one (where neither call
    follows the other's, whose work may still occupy the GPU)."""
    FIRST_CALLS.append((label, timed(anvil_call), timed(jax_call)))
    for _ in range(3):
        anvil_call()
        jax_call()
    a, j = [], []
    for _ in range(reps):
        a.append(timed(anvil_call))
        j.append(timed(jax_call))
    ta, tj = statistics.median(a), statistics.median(j)
    ba, bj = [], []
    for _ in range(max(1, reps // BLOCK)):
        ba.extend(timed(anvil_call) for _ in range(BLOCK))
        bj.extend(timed(jax_call) for _ in range(BLOCK))
    sa, sj = statistics.median(ba), statistics.median(bj)
    print(
        f"{label:<46} {ta * 1e3:>9.3f} ms {tj * 1e3:>9.3f} ms {ta / tj:>7.2f}"
        f" {sa * 1e3:>9.3f} ms {sj * 1e3:>9.3f} ms {sa / sj:>7.2f}",
        flush=True,
    )
    return ta, tj


def check(label: str, got: Any, want: Any, rtol: float) -> None:
    g, w = np.asarray(got.get() if hasattr(got, "get") else got), np.asarray(want)
    err = float(np.max(np.abs(g - w) / (1.0 + np.abs(w))))
    assert err <= rtol, f"{label}: anvil and JAX differ by {err:.2e}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    reps = 10 if args.quick else 40

    import cupy
    import jax

    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    name, (major, minor), sms = av._anvil.cuda_device(0)
    print(f"GPU: {name} (sm_{major}{minor}, {sms} multiprocessors); JAX {jax.__version__} on {jax.devices()[0]}")
    print(f"{'':<46} {'interleaved call by call':>33} {'in blocks of ' + str(BLOCK) + ' calls':>33}")
    print(f"{'case':<46} {'anvil':>12} {'JAX':>12} {'ratio':>7} {'anvil':>12} {'JAX':>12} {'ratio':>7}")

    failed = [label for label, case in CASES if not run_case(label, case, cupy, jax, jnp, reps)]
    print("first calls of the cases above (anvil: trace, lowering, NVRTC; JAX: trace, XLA):")
    for label, a, j in FIRST_CALLS:
        print(f"  {label:<44} {a:>9.2f} s  {j:>9.2f} s")
    if failed:
        sys.exit(f"failed: {', '.join(failed)}")


def run_case(label: str, case: Callable[..., None], *modules: Any) -> bool:
    """Runs one case; a failure is printed and the other cases still run."""
    try:
        case(*modules)
        return True
    except Exception as e:  # noqa: BLE001 - reported, and the benchmark exits non-zero
        print(f"{label}: FAILED: {type(e).__name__}: {e}", flush=True)
        return False


def rollout_case(cupy: Any, jax: Any, jnp: Any, reps: int) -> None:
    """The cart-pole rollout."""
    batch = 65_536

    def rollout(x: Any, u: Any) -> Any:
        for k in range(STEPS):
            x = cp.cartpole_step(x, u[k : k + 1], AnvilMath)
        return x

    roll = av.vmap(av.NumericalFunction("rollout", rollout, (av.Arg(4), av.Arg(STEPS)), device="CUDA"), batch)

    class JaxMath:
        vec = staticmethod(lambda items: jnp.stack(items))
        sin, cos = jnp.sin, jnp.cos

    def scan(x: Any, u: Any) -> Any:
        return jax.lax.scan(lambda c, uk: (cp.cartpole_step(c, uk[None], JaxMath), None), x, u)[0]

    jroll = jax.jit(jax.vmap(scan))
    x0 = np.stack([RNG.uniform(-0.5, 0.5, batch), RNG.uniform(0, math.pi, batch), np.zeros(batch), np.ones(batch)], 1)
    us = RNG.uniform(-5, 5, (batch, STEPS))
    cx, cu, jx, ju = cupy.asarray(x0), cupy.asarray(us), jnp.asarray(x0), jnp.asarray(us)
    compare(f"cart-pole rollout N={STEPS}, {batch} samples, f64", lambda: roll(cx, cu), lambda: jroll(jx, ju).block_until_ready(), reps)
    check("rollout", roll(cx, cu), jroll(jx, ju), 1e-9)


def mlp_case(cupy: Any, jax: Any, jnp: Any, reps: int) -> None:
    """The MLP."""
    for dtype, batch in ((np.float64, 1 << 20), (np.float32, 65_536)):
        tw = [av.Tensor(a.astype(dtype)) for a in (W1, W2, W3, B1, B2, B3)]
        spec = (av.Arg(16, dtype),)
        mlp = av.NumericalFunction(
            f"mlp_{np.dtype(dtype).name}",
            lambda x: tw[2] @ (tw[1] @ (tw[0] @ x + tw[3]).tanh() + tw[4]).tanh() + tw[5],
            spec,
            device="CUDA",
        )
        vmlp = av.vmap(mlp, batch)
        jw = [jnp.asarray(a.astype(dtype)) for a in (W1, W2, W3, B1, B2, B3)]
        # Full precision: by default JAX multiplies float32 matrices in TF32 on this GPU.
        mm = functools.partial(jnp.matmul, precision=jax.lax.Precision.HIGHEST)
        jmlp = jax.jit(jax.vmap(lambda v: mm(jw[2], jnp.tanh(mm(jw[1], jnp.tanh(mm(jw[0], v) + jw[3])) + jw[4])) + jw[5]))
        xs = RNG.uniform(-1, 1, (batch, 16)).astype(dtype)
        cxs, jxs = cupy.asarray(xs), jnp.asarray(xs)
        label = f"MLP 16-64-64-4, {batch} samples, {np.dtype(dtype).name}"
        compare(label, lambda: vmlp(cxs), lambda: jmlp(jxs).block_until_ready(), reps)
        check("mlp", vmlp(cxs), jmlp(jxs), 1e-9 if dtype == np.float64 else 1e-4)


def reduction_case(cupy: Any, jax: Any, jnp: Any, reps: int) -> None:
    """A long reduction per sample."""
    n, batch = 1024, 16_384
    energy = av.vmap(
        av.NumericalFunction("energy", lambda x: (x.square() * 0.5 + x.sin()).sum(), (av.Arg(n),), device="CUDA"), batch
    )
    jenergy = jax.jit(lambda v: jnp.sum(0.5 * v**2 + jnp.sin(v), axis=1))
    xs = RNG.uniform(-3, 3, (batch, n))
    cxs, jxs = cupy.asarray(xs), jnp.asarray(xs)
    compare(f"sum(0.5x^2 + sin x), n={n}, {batch} samples, f64", lambda: energy(cxs), lambda: jenergy(jxs).block_until_ready(), reps)
    check("energy", energy(cxs), jenergy(jxs), 1e-10)


def total_case(cupy: Any, jax: Any, jnp: Any, reps: int) -> None:
    """One long reduction to a value, not vmapped (split over 131,072 threads, then combined by warps)."""
    n = 1 << 24
    total = av.NumericalFunction("total", lambda x: (x.square() * 0.5 + x.sin()).sum(), (av.Arg(n),), device="CUDA")
    jtotal = jax.jit(lambda v: jnp.sum(0.5 * v**2 + jnp.sin(v)))
    xs = RNG.uniform(-3, 3, n)
    cxs, jxs = cupy.asarray(xs), jnp.asarray(xs)
    compare(f"sum(0.5x^2 + sin x), n={n}, one call, f64", lambda: total(cxs), lambda: jtotal(jxs).block_until_ready(), reps)
    check("total", total(cxs), jtotal(jxs), 1e-9)


def first_result_case(cupy: Any, jax: Any, jnp: Any, reps: int) -> None:
    """Time to the first result."""
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ANVIL_CACHE_DIR"] = cache
        scale = float(RNG.uniform(1, 2))  # a function no cache has seen
        x = cupy.asarray(RNG.uniform(-1, 1, (1024, 4)))

        def fresh() -> Any:
            f = av.NumericalFunction("first", lambda v: (v * scale).sin().exp().sum(), (av.Arg(4),), device="CUDA")
            return av.vmap(f, 1024)

        cold = timed(lambda: cupy.asnumpy(fresh()(x)))
        warm = timed(lambda: cupy.asnumpy(fresh()(x)))
        jfirst = jax.jit(lambda v: jnp.sum(jnp.exp(jnp.sin(v * scale)), axis=1))
        jcold = timed(lambda: jfirst(jnp.asarray(x.get())).block_until_ready())
        print(f"{'first result of a new function (NVRTC)':<46} {cold * 1e3:>9.1f} ms {jcold * 1e3:>9.1f} ms {cold / jcold:>7.2f}")
        print(f"{'first result again, CUBIN cached':<46} {warm * 1e3:>9.1f} ms")


CASES = [
    ("cart-pole rollout", rollout_case),
    ("MLP", mlp_case),
    ("reduction per sample", reduction_case),
    ("one long reduction", total_case),
    ("first result", first_result_case),
]


if __name__ == "__main__":
    main()

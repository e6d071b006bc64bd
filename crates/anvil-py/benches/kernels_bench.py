"""Kernel speed on the shapes control engineers write, side by side in one run.

    python crates/anvil-py/benches/kernels_bench.py            # all cases
    python crates/anvil-py/benches/kernels_bench.py --large    # and the 90k-node rollout's compile time

Native cases: anvil's generated C++ (``generate_module``), CasADi's generated C for the same
SX expression, and a hand-written C loop, compiled with the same compiler and timed by one C++
driver in one interleaved loop (median per call; the ratio column is anvil / peer):

- the 4×16 Jacobian of the MLP 16-64-64-4 (tanh, captured weights);
- the cart-pole RK4 step (tests/multistage_problems.py) and its 4×5 Jacobian;
- the extended Rosenbrock sparse Hessian (upper triangle, n = 1000), the tridiagonal
  residual's sparse Jacobian (n = 1000) and the banded Jacobian of sin(x₁) cos(x₀) + cos(x₁)
  over neighbours (n = 1000, sines and cosines of one argument in each column's code), CSC
  values.

Every value is checked first: anvil against CasADi (dense, 1e-12 relative) and the driver's
three results against each other. anvil is compiled with its JIT's flags, CasADi's C and the
hand-written C with ``-O3 -march=native`` (what CasADi's JIT uses) plus anvil's vector flags.

Batched cases, from Python (per item, one call over the batch): the vmapped MLP (batch 1024)
next to numpy (and ``jax.jit`` when installed), and the cart-pole 50-step rollout vmapped over
1024 states next to numpy (and ``jax.jit(vmap(scan))``), and the column sums of a 1000 × 4097
matrix next to numpy (and ``jax.jit``), per element. anvil's code runs on one thread, and
so does numpy's BLAS here (``OPENBLAS_NUM_THREADS=1`` and its kin, set before numpy is
imported unless already set): on a machine with more cores a threaded BLAS would compare
cores, not code.

Build cases: the multiple-shooting defects of the cart-pole (N = 50) written as a Python loop
over stages and written with vmap: their sparse Jacobian's build (trace, detection,
colouring, graph), compile (empty JIT cache) and time per call.
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from typing import Any, Callable

for _threads in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_threads, "1")

import numpy as np  # noqa: E402

import anvil as av  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests"))

import multistage_problems as cp  # noqa: E402
from opti_problems import AnvilMath, CasadiMath  # noqa: E402

CXX = os.environ.get("CXX", "g++")
BASE_FLAGS = ["-O3", "-march=native", "-fno-math-errno", "-ffp-contract=off"]
ANVIL_FLAGS = BASE_FLAGS + ["-fopenmp-simd", "-DANVIL_OMP_SIMD", "-DANVIL_LIBMVEC"]


class NumpyMath:
    """The operations of the problem formulas on numpy arrays (leading axis: the components)."""

    vec = staticmethod(lambda items: np.stack(np.broadcast_arrays(*items)))
    sin, cos = np.sin, np.cos


# ---------------------------------------------------------------------------------------------
# The cases
# ---------------------------------------------------------------------------------------------

RNG = np.random.default_rng(7)
W1, W2, W3 = RNG.uniform(-0.5, 0.5, (64, 16)), RNG.uniform(-0.5, 0.5, (64, 64)), RNG.uniform(-0.5, 0.5, (4, 64))
B1, B2, B3 = RNG.uniform(-0.5, 0.5, 64), RNG.uniform(-0.5, 0.5, 64), RNG.uniform(-0.5, 0.5, 4)
N_SPARSE = 1000


def mlp_anvil() -> Any:
    tw = [av.Tensor(a) for a in (W1, W2, W3, B1, B2, B3)]
    return av.NumericalFunction(
        "mlp", lambda x: tw[2] @ (tw[1] @ (tw[0] @ x + tw[3]).tanh() + tw[4]).tanh() + tw[5], (av.Arg(16),)
    )


def mlp_casadi(ca: Any, x: Any) -> Any:
    return ca.mtimes(W3, ca.tanh(ca.mtimes(W2, ca.tanh(ca.mtimes(W1, x) + B1)) + B2)) + B3


def cartpole_z(z: Any, m: Any) -> Any:
    """One RK4 step of the cart-pole as a function of z = (x, u)."""
    return cp.cartpole_step(z[:4], z[4:], m)


def rosenbrock(x: Any, sum_: Callable[[Any], Any]) -> Any:
    a, b = x[: N_SPARSE - 1], x[1:]
    return sum_(100.0 * (b - a * a) ** 2 + (1.0 - a) ** 2)


H2 = 1.0 / (N_SPARSE + 1) ** 2


def residual_anvil(x: Any) -> Any:
    p = x.pad(((1, 1),))
    return p[:N_SPARSE] - x * 2.0 + p[2:] + x.exp() * H2


def band_trig_anvil(x: Any) -> Any:
    return x[1:].sin() * x[:-1].cos() + x[1:].cos()


def band_trig_casadi(ca: Any, x: Any) -> Any:
    return ca.sin(x[1:]) * ca.cos(x[:-1]) + ca.cos(x[1:])


def residual_casadi(ca: Any, x: Any) -> Any:
    p = ca.vertcat(0, x, 0)
    return p[: N_SPARSE] - 2 * x + p[2:] + H2 * ca.exp(x)


def c_array(name: str, a: np.ndarray) -> str:
    return f"static const double {name}[{a.size}] = {{{', '.join(repr(float(v)) for v in a.ravel())}}};\n"


HAND_C = (
    c_array("W1", W1)
    + c_array("W2", W2)
    + c_array("W3", W3)
    + c_array("B1", B1)
    + c_array("B2", B2)
    + f"""
#include <math.h>
/* glibc's vector versions (libmvec), as anvil's generated code declares them. */
#pragma omp declare simd notinbranch
double exp(double);
#pragma omp declare simd notinbranch
double tanh(double);

/* J = W3 D2 W2 D1 W1 with D = diag(1 - tanh^2), multiplied from the left (4 rows). */
void hand_mlp_jac(const double* x, double* jac) {{
  double t1[64], d2[64], g[4 * 64], h[4 * 64];
  for (int i = 0; i < 64; ++i) t1[i] = B1[i];
  for (int j = 0; j < 16; ++j)
    for (int i = 0; i < 64; ++i) t1[i] += W1[i * 16 + j] * x[j];
#pragma omp simd
  for (int i = 0; i < 64; ++i) t1[i] = tanh(t1[i]);
  for (int i = 0; i < 64; ++i) d2[i] = B2[i];
  for (int j = 0; j < 64; ++j)
    for (int i = 0; i < 64; ++i) d2[i] += W2[i * 64 + j] * t1[j];
#pragma omp simd
  for (int i = 0; i < 64; ++i) {{
    double t = tanh(d2[i]);
    d2[i] = 1.0 - t * t;
  }}
  for (int r = 0; r < 4; ++r)
    for (int i = 0; i < 64; ++i) g[r * 64 + i] = W3[r * 64 + i] * d2[i];
  for (int r = 0; r < 4; ++r) {{
    for (int j = 0; j < 64; ++j) h[r * 64 + j] = 0.0;
    for (int i = 0; i < 64; ++i)
      for (int j = 0; j < 64; ++j) h[r * 64 + j] += g[r * 64 + i] * W2[i * 64 + j];
    for (int j = 0; j < 64; ++j) h[r * 64 + j] *= 1.0 - t1[j] * t1[j];
  }}
  /* column-major 4x16, as CasADi and anvil's (4, 16) row-major differ: row-major here */
  for (int r = 0; r < 4; ++r)
    for (int c = 0; c < 16; ++c) {{
      double a = 0.0;
      for (int i = 0; i < 64; ++i) a += h[r * 64 + i] * W1[i * 16 + c];
      jac[r * 16 + c] = a;
    }}
}}

/* Upper triangle of the extended Rosenbrock Hessian, CSC: column j holds (j-1, j), (j, j). */
void hand_rosen_hess(const double* x, double* v) {{
  const int n = {N_SPARSE};
  v[0] = 1200.0 * x[0] * x[0] - 400.0 * x[1] + 2.0;
  for (int j = 1; j < n - 1; ++j) {{
    v[2 * j - 1] = -400.0 * x[j - 1];
    v[2 * j] = 1200.0 * x[j] * x[j] - 400.0 * x[j + 1] + 2.0 + 200.0;
  }}
  v[2 * n - 3] = -400.0 * x[n - 2];
  v[2 * n - 2] = 200.0;
}}

/* Tridiagonal residual's Jacobian, CSC: column j holds rows j-1, j, j+1. */
void hand_resid_jac(const double* x, double* v) {{
  const int n = {N_SPARSE};
  const double h2 = {H2!r};
  double d[{N_SPARSE}];
#pragma omp simd
  for (int j = 0; j < n; ++j) d[j] = -2.0 + h2 * exp(x[j]);
  v[0] = d[0];
  v[1] = 1.0;
  for (int j = 1; j < n - 1; ++j) {{
    v[3 * j - 1] = 1.0;
    v[3 * j] = d[j];
    v[3 * j + 1] = 1.0;
  }}
  v[3 * n - 4] = 1.0;
  v[3 * n - 3] = d[n - 1];
}}
"""
)


class Case:
    """One native case: anvil's function, CasADi's, and optionally a hand-written C one."""

    def __init__(self, label: str, anvil_fn: Any, casadi_fn: Any, hand: str | None, x: np.ndarray):
        self.label, self.anvil, self.casadi, self.hand, self.x = label, anvil_fn, casadi_fn, hand, x

    def expected(self) -> np.ndarray:
        """anvil's values (row-major, or CSC values for a sparse function)."""
        if self.anvil.is_sparse:
            return self.anvil.values(self.x)
        return np.asarray(self.anvil(self.x), dtype=float).ravel()

    def check_against_casadi(self) -> None:
        dense_casadi = np.array(self.casadi(self.x).full())
        if self.anvil.is_sparse:
            dense_anvil = self.anvil(self.x).toarray()
        else:
            dense_anvil = np.asarray(self.anvil(self.x)).reshape(dense_casadi.shape)
        scale = max(1.0, float(np.abs(dense_casadi).max()))
        err = float(np.abs(dense_anvil - dense_casadi).max()) / scale
        if err > 1e-12:
            raise SystemExit(f"{self.label}: anvil and CasADi differ by {err:.2e}")

    def casadi_same_layout(self) -> bool:
        """Whether CasADi's output non-zeros are anvil's values in the same order."""
        sp = self.casadi.sparsity_out(0)
        if self.anvil.is_sparse:
            same_pattern = list(sp.row()) == list(self.anvil.indices) and list(sp.colind()) == list(self.anvil.indptr)
            return sp.shape == tuple(self.anvil.shape) and same_pattern
        return sp.is_dense() and 1 in sp.shape  # a dense vector: the same order


def native_cases(ca: Any) -> list[Case]:
    x16 = np.linspace(-1.0, 1.0, 16)
    mlp = mlp_anvil()
    xs = ca.SX.sym("x", 16)
    mlp_jac_ca = ca.Function("ca_mlp_jac", [xs], [ca.jacobian(mlp_casadi(ca, xs), xs)])

    z0 = np.array([0.1, 2.5, -0.3, 0.7, 1.5])
    step = av.NumericalFunction("cp_step", lambda z: cartpole_z(z, AnvilMath), (av.Arg(5),))
    zs = ca.SX.sym("z", 5)
    step_expr = cartpole_z(zs, CasadiMath)
    step_ca = ca.Function("ca_cp_step", [zs], [step_expr])
    step_jac_ca = ca.Function("ca_cp_step_jac", [zs], [ca.jacobian(step_expr, zs)])

    xn = np.linspace(-0.5, 0.8, N_SPARSE)
    rosen = av.NumericalFunction("rosen", lambda x: rosenbrock(x, lambda t: t.sum()), (av.Arg(N_SPARSE),))
    resid = av.NumericalFunction("resid", residual_anvil, (av.Arg(N_SPARSE),))
    xsn = ca.SX.sym("x", N_SPARSE)
    rosen_ca = ca.Function("ca_rosen_hess", [xsn], [ca.triu(ca.hessian(rosenbrock(xsn, ca.sum1), xsn)[0])])
    resid_ca = ca.Function("ca_resid_jac", [xsn], [ca.jacobian(residual_casadi(ca, xsn), xsn)])
    band = av.NumericalFunction("band_trig", band_trig_anvil, (av.Arg(N_SPARSE),))
    band_ca = ca.Function("ca_band_jac", [xsn], [ca.jacobian(band_trig_casadi(ca, xsn), xsn)])
    return [
        Case("MLP 16-64-64-4 Jacobian (4x16)", av.ad.jacobian(mlp, name="mlp_jac"), mlp_jac_ca, "hand_mlp_jac", x16),
        Case("cart-pole RK4 step", step, step_ca, None, z0),
        Case("cart-pole RK4 step Jacobian (4x5)", av.ad.jacobian(step, name="cp_step_jac"), step_jac_ca, None, z0),
        Case("Rosenbrock sparse Hessian, n=1000", av.ad.sphessian(rosen, name="rosen_hess"), rosen_ca, "hand_rosen_hess", xn),
        Case("tridiagonal sparse Jacobian, n=1000", av.ad.spjacobian(resid, name="resid_jac"), resid_ca, "hand_resid_jac", xn),
        Case("banded sin/cos sparse Jacobian, n=1000", av.ad.spjacobian(band, name="band_jac"), band_ca, None, xn),
    ]


DRIVER_HEAD = r"""
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>
#include "bench_anvil.hpp"
extern "C" {
%(decls)s
}
static double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
// Median time per call of each implementation, measured in one interleaved loop: each round
// times a batch of calls of every implementation in turn.
template <class... F>
static std::vector<double> interleaved(F... fs) {
  std::vector<std::vector<double>> times(sizeof...(F));
  std::vector<long> batch;
  auto calibrate = [&](auto& f) {
    f();
    double t0 = now();
    long k = 0;
    while (now() - t0 < 2e-4) { f(); ++k; }
    batch.push_back(std::max(1L, k));
  };
  (calibrate(fs), ...);
  for (int round = 0; round < 31; ++round) {
    std::size_t i = 0;
    auto run = [&](auto& f) {
      double t0 = now();
      for (long k = 0; k < batch[i]; ++k) f();
      times[i].push_back((now() - t0) / batch[i]);
      ++i;
    };
    (run(fs), ...);
  }
  std::vector<double> med;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    med.push_back(t[t.size() / 2]);
  }
  return med;
}
static bool close(const double* a, const double* b, int n) {
  double scale = 1.0, err = 0.0;
  for (int i = 0; i < n; ++i) scale = std::max(scale, std::fabs(b[i]));
  for (int i = 0; i < n; ++i) err = std::max(err, std::fabs(a[i] - b[i]));
  return err <= 1e-12 * scale;
}
int main() {
  int failures = 0;
"""

CASE_TEMPLATE = r"""
  {
    static const double x[%(nx)d] = {%(x)s};
    static const double expected[%(ny)d] = {%(y)s};
    static double y_anvil[%(ny)d], y_casadi[%(nyc)d], y_hand[%(ny)d];
    auto ws = %(ns)s::init_ws();
    const double* ca_arg[%(sz_arg)d] = {x};
    double* ca_res[%(sz_res)d] = {y_casadi};
    static long long ca_iw[%(sz_iw)d + 1];
    static double ca_w[%(sz_w)d + 1];
    auto anvil = [&] { %(ns)s::call(%(ns)s::IN0_t{const_cast<double*>(x)}, %(ns)s::OUT0_t{y_anvil}, ws); };
    auto casadi = [&] { %(casadi)s(ca_arg, ca_res, ca_iw, ca_w, 0); };
    auto hand = [&] { %(hand_call)s };
    anvil(); casadi(); hand();
    if (!close(y_anvil, expected, %(ny)d)) { std::printf("%(label)s: anvil's native values differ from its Python call\n"); ++failures; }
    if (%(compare_casadi)d && !close(y_casadi, expected, %(ny)d)) { std::printf("%(label)s: CasADi differs\n"); ++failures; }
    if (%(has_hand)d && !close(y_hand, expected, %(ny)d)) { std::printf("%(label)s: hand-written C differs\n"); ++failures; }
    auto t = interleaved(anvil, casadi, hand);
    std::printf("%%-40s anvil %%9.3f us | CasADi %%9.3f us (ratio %%5.2f)", "%(label)s", t[0] * 1e6, t[1] * 1e6, t[0] / t[1]);
    if (%(has_hand)d) std::printf(" | hand-written C %%8.3f us (ratio %%5.2f)", t[2] * 1e6, t[0] / t[2]);
    std::printf("\n");
    %(ns)s::free_ws(ws);
  }
"""


def run_native(ca: Any, workdir: str) -> None:
    if shutil.which(CXX) is None:
        raise SystemExit(f"the C++ compiler `{CXX}` is not on PATH: run scripts/setup.sh, or set CXX")
    cases = native_cases(ca)
    for case in cases:
        case.check_against_casadi()
    av.generate_module("bench_anvil", [c.anvil for c in cases], directory=workdir)
    cg = ca.CodeGenerator("bench_casadi.c")
    for c in cases:
        cg.add(c.casadi)
    cg.generate(workdir + os.sep)
    with open(os.path.join(workdir, "bench_hand.c"), "w") as f:
        f.write(HAND_C)

    decls = ["int %s(const double**, double**, long long*, double*, int);" % c.casadi.name() for c in cases]
    decls += ["void %s(const double*, double*);" % c.hand for c in cases if c.hand]
    body = [DRIVER_HEAD % {"decls": "\n".join(decls)}]
    for c in cases:
        y = c.expected()
        body.append(
            CASE_TEMPLATE
            % {
                "nx": c.x.size,
                "x": ", ".join(repr(float(v)) for v in c.x),
                "ny": y.size,
                "nyc": max(y.size, c.casadi.nnz_out(0)),
                "y": ", ".join(repr(float(v)) for v in y),
                "ns": c.anvil.name,
                "sz_arg": c.casadi.sz_arg(),
                "sz_res": c.casadi.sz_res(),
                "sz_iw": c.casadi.sz_iw(),
                "sz_w": c.casadi.sz_w(),
                "casadi": c.casadi.name(),
                "hand_call": f"{c.hand}(x, y_hand);" if c.hand else "",
                "has_hand": int(c.hand is not None),
                "compare_casadi": int(c.casadi_same_layout()),
                "label": c.label,
            }
        )
    body.append("  return failures;\n}\n")
    with open(os.path.join(workdir, "driver.cpp"), "w") as f:
        f.write("".join(body))

    def compile_(src: str, flags: list[str]) -> str:
        obj = os.path.join(workdir, os.path.basename(src) + ".o")
        subprocess.run([CXX, "-c", *flags, "-o", obj, os.path.join(workdir, src)], check=True)
        return obj

    objs = [
        compile_("bench_anvil.cpp", ["-std=c++17", *ANVIL_FLAGS]),
        compile_("bench_casadi.c", ["-x", "c", *BASE_FLAGS]),
        compile_("bench_hand.c", ["-x", "c", *ANVIL_FLAGS]),
        compile_("driver.cpp", ["-std=c++17", "-O2"]),
    ]
    exe = os.path.join(workdir, "driver")
    subprocess.run([CXX, "-o", exe, *objs, "-lmvec", "-lm"], check=True)
    print(f"Native, one interleaved loop ({CXX}; anvil: {' '.join(ANVIL_FLAGS)}; CasADi: {' '.join(BASE_FLAGS)}):")
    sys.stdout.flush()
    result = subprocess.run([exe])
    if result.returncode != 0:
        raise SystemExit(f"the native driver reported {result.returncode} mismatches")


# ---------------------------------------------------------------------------------------------
# Batched cases (from Python, per item)
# ---------------------------------------------------------------------------------------------

BATCH = 1024
ROLLOUT_STEPS = 50
ROLLOUT_U = np.sin(0.3 * np.arange(ROLLOUT_STEPS))


def per_call(fn: Callable[[], Any], number: int = 20, repeat: int = 15) -> float:
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def report(
    label: str, anvil_s: float, peers: list[tuple[str, float]], unit: str = "ns per item", items: int = BATCH
) -> None:
    scale = 1e9 / items

    def fmt(t: float) -> str:
        return f"{t * scale:9.1f}" if t * scale >= 10 else f"{t * scale:9.3f}"

    parts = [f"anvil {fmt(anvil_s)}"]
    parts += [f"{name} {fmt(t)} (ratio {anvil_s / t:5.2f})" for name, t in peers]
    print(f"{label:<40} " + " | ".join(parts) + f"  [{unit}]")


def optional_jax() -> Any:
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        return jax
    except ImportError:
        return None


def run_batched() -> None:
    jax = optional_jax()
    threads = os.environ["OPENBLAS_NUM_THREADS"]
    print(
        f"\nBatched, from Python, batch {BATCH}, numpy's BLAS on {threads} thread(s)"
        + ("" if jax else " (jax not installed: no JAX column)")
        + ":"
    )
    mlp = av.transform.svmap(mlp_anvil(), BATCH)
    xb = np.linspace(-1.0, 1.0, BATCH * 16).reshape(BATCH, 16)

    def mlp_numpy() -> np.ndarray:
        return np.tanh(np.tanh(xb @ W1.T + B1) @ W2.T + B2) @ W3.T + B3

    np.testing.assert_allclose(mlp(xb), mlp_numpy(), rtol=1e-12, atol=1e-12)
    peers = [("numpy", per_call(mlp_numpy))]
    if jax:
        jnp = jax.numpy
        jmlp = jax.jit(lambda v: jnp.tanh(jnp.tanh(v @ W1.T + B1) @ W2.T + B2) @ W3.T + B3)
        peers.append(("jax.jit", per_call(lambda: jmlp(xb).block_until_ready())))
    report("vmapped MLP 16-64-64-4", per_call(lambda: mlp(xb)), peers)

    def rollout(x: Any) -> Any:
        for k in range(ROLLOUT_STEPS):
            x = cp.cartpole_step(x, av.Tensor(ROLLOUT_U[k : k + 1]), AnvilMath)
        return x

    roll = av.transform.svmap(av.NumericalFunction("rollout", rollout, (av.Arg(4),)), BATCH)
    x0 = np.stack([np.linspace(-0.5, 0.5, BATCH), np.linspace(0, math.pi, BATCH), np.zeros(BATCH), np.ones(BATCH)], 1)

    def rollout_numpy() -> np.ndarray:
        xt = x0.T.copy()
        for k in range(ROLLOUT_STEPS):
            xt = cp.cartpole_step(xt, np.array([ROLLOUT_U[k]]), NumpyMath)
        return xt.T

    np.testing.assert_allclose(roll(x0), rollout_numpy(), rtol=1e-9, atol=1e-9)
    peers = [("numpy", per_call(rollout_numpy))]
    if jax:
        jnp = jax.numpy

        class JaxMath:
            vec = staticmethod(lambda items: jnp.stack(items))
            sin, cos = jnp.sin, jnp.cos

        def scan(x: Any) -> Any:
            return jax.lax.scan(lambda c, u: (cp.cartpole_step(c, u[None], JaxMath), None), x, ROLLOUT_U)[0]

        jroll = jax.jit(jax.vmap(scan))
        peers.append(("jax.jit(vmap(scan))", per_call(lambda: jroll(x0).block_until_ready())))
    report(f"vmapped cart-pole rollout, {ROLLOUT_STEPS} steps", per_call(lambda: roll(x0)), peers)

    # Sums down the columns (the batch sum of a gradient): interchanged, tiled along the row.
    rows, cols = 1000, 4097
    m = np.sin(np.arange(rows * cols) * 1e-3).reshape(rows, cols)
    colsum = av.NumericalFunction("column_sums", lambda x: x.sum(axis=0), (av.Arg((rows, cols)),))
    np.testing.assert_allclose(colsum(m), m.sum(axis=0), rtol=1e-12, atol=1e-9)
    peers = [("numpy", per_call(lambda: m.sum(axis=0), number=5))]
    if jax:
        jsum = jax.jit(lambda v: v.sum(axis=0))
        peers.append(("jax.jit", per_call(lambda: jsum(m).block_until_ready(), number=5)))
    label = f"column sums of a {rows}x{cols} matrix"
    report(label, per_call(lambda: colsum(m), number=5), peers, unit="ns per element", items=rows * cols)


# ---------------------------------------------------------------------------------------------
# Build cases: a sparse Jacobian of defects written as a Python loop, and with vmap
# ---------------------------------------------------------------------------------------------

STAGES = 50


def defects_loop(w: Any) -> Any:
    z = w.reshape((STAGES + 1, 5))
    return AnvilMath.cat([z[k + 1, :4] - cartpole_z(z[k], AnvilMath) for k in range(STAGES)])


def defects_vmap(w: Any) -> Any:
    z = w.reshape((STAGES + 1, 5))
    step = av.dvmap(lambda zk: cartpole_z(zk, AnvilMath))
    return (z[1:, :4] - step(z[:STAGES])).reshape((STAGES * 4,))


def run_build() -> None:
    print(f"\nSparse Jacobian of the cart-pole's multiple-shooting defects, N = {STAGES} (empty JIT cache):")
    w = np.linspace(-1.0, 1.0, (STAGES + 1) * 5)
    with tempfile.TemporaryDirectory() as cache:
        os.environ["ANVIL_CACHE_DIR"] = cache
        results = []
        for label, fn in (("Python loop over stages", defects_loop), ("vmap over stages", defects_vmap)):
            start = time.perf_counter()
            f = av.NumericalFunction(f"defects_{label.split()[0].lower()}", fn, (av.Arg((STAGES + 1) * 5),))
            jac = av.ad.spjacobian(f)
            built = time.perf_counter() - start
            start = time.perf_counter()
            values = jac.values(w)  # the first call compiles
            compiled = time.perf_counter() - start
            t = per_call(lambda: jac.values(w), number=200)
            source = jac.source_code
            print(
                f"  {label:<26} build {built:6.2f} s, compile {compiled:6.2f} s, {t * 1e6:8.1f} us per call "
                f"({source.count('void kernel')} kernels, {len(source) / 1e3:.0f} kB of C++, nnz {jac.nnz})"
            )
            results.append(values)
        del os.environ["ANVIL_CACHE_DIR"]
        np.testing.assert_allclose(results[0], results[1], rtol=1e-13, atol=1e-13)


def run_large() -> None:
    """The compile time of a long straight rollout (about 90k graph nodes, one kernel)."""
    steps = 10_000
    print("\nA 90k-node rollout, compile time (empty JIT cache):")

    def rollout(x0: Any, k: Any) -> Any:
        q, v = x0[0], x0[1]
        for _ in range(steps):
            a = -(q.sin() * k) - v * 0.1
            q, v = q + v * 0.01, v + a * 0.01
        return q, v

    with tempfile.TemporaryDirectory() as cache:
        os.environ["ANVIL_CACHE_DIR"] = cache
        start = time.perf_counter()
        f = av.NumericalFunction("rollout_90k", rollout, (av.Arg((2, 8)), av.Arg(8)))
        source = f.source_code
        built = time.perf_counter() - start
        start = time.perf_counter()
        f(np.ones((2, 8)), np.ones(8))  # the first call compiles
        print(f"  trace + lower + render {built:.1f} s, {len(source) / 1e6:.1f} MB of C++, compile {time.perf_counter() - start:.1f} s")
        del os.environ["ANVIL_CACHE_DIR"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="also the 90k-node rollout's compile time")
    args = parser.parse_args()
    try:
        import casadi as ca
    except ImportError:
        ca = None
        print("(casadi not installed: no native side-by-side cases)")
    if ca is not None:
        with tempfile.TemporaryDirectory() as workdir:
            run_native(ca, workdir)
    run_batched()
    run_build()
    if args.large:
        run_large()


if __name__ == "__main__":
    main()

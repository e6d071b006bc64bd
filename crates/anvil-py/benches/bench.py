"""Per-call cost of anvil functions from Python next to the same functions written with
numpy (and CasADi / JAX when installed), measured in the same run.

    python crates/anvil-py/benches/bench.py
"""

import statistics
import timeit

import numpy as np

import anvil as av


def per_call(fn, number=2000, repeat=15):
    fn()
    return statistics.median(timeit.repeat(fn, number=number, repeat=repeat)) / number


def report(name, anvil_s, baselines):
    parts = [f"anvil {anvil_s * 1e6:8.2f} us"]
    for label, t in baselines:
        parts.append(f"{label} {t * 1e6:8.2f} us (ratio {anvil_s / t:.2f})")
    print(f"{name:<34} " + "   ".join(parts))


def optional_baselines(casadi_expr, jax_fn, arg_sizes, args):
    """CasADi Function and jax.jit versions of the same function, when installed."""
    out = []
    try:
        import casadi as ca

        syms = [ca.SX.sym(f"x{i}", n) for i, n in enumerate(arg_sizes)]
        f = ca.Function("f", syms, [casadi_expr(ca, *syms)])
        out.append(("casadi", per_call(lambda: f(*args))))
    except ImportError:
        pass
    try:
        import jax

        jax.config.update("jax_enable_x64", True)
        jf = jax.jit(jax_fn)
        out.append(("jax.jit", per_call(lambda: jf(*args).block_until_ready())))
    except ImportError:
        pass
    return out


def main():
    try:
        import casadi  # noqa: F401
    except ImportError:
        print("(casadi not installed: no CasADi column)")
    try:
        import jax  # noqa: F401
    except ImportError:
        print("(jax not installed: no JAX column)")

    # Per-call overhead: a 3-element add.
    add = av.NumericalFunction("bench_add", lambda x, y: x + y, (av.Arg(3), av.Arg(3)))
    x3, y3 = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    baselines = [("numpy", per_call(lambda: np.add(x3, y3)))]
    baselines += optional_baselines(lambda ca, x, y: x + y, lambda x, y: x + y, [3, 3], (x3, y3))
    report("add, 3 elements (call overhead)", per_call(lambda: add(x3, y3)), baselines)

    # B1: sum(0.5 x^2 + sin x), n = 1024.
    energy = av.NumericalFunction("bench_energy", lambda x: (x.square() * 0.5 + x.sin()).sum(), (av.Arg(1024),))
    x = np.linspace(-3, 3, 1024)
    baselines = [("numpy", per_call(lambda: (0.5 * x * x + np.sin(x)).sum()))]

    def jax_energy(v):
        import jax.numpy as jnp

        return (0.5 * v * v + jnp.sin(v)).sum()

    baselines += optional_baselines(lambda ca, v: ca.sum1(0.5 * v * v + ca.sin(v)), jax_energy, [1024], (x,))
    report("sum(0.5 x^2 + sin x), n = 1024", per_call(lambda: energy(x)), baselines)

    # MLP 16 -> 64 -> 64 -> 4 with tanh.
    rng = np.random.default_rng(7)
    w1, w2, w3 = rng.uniform(-0.5, 0.5, (64, 16)), rng.uniform(-0.5, 0.5, (64, 64)), rng.uniform(-0.5, 0.5, (4, 64))
    b1, b2, b3 = rng.uniform(-0.5, 0.5, 64), rng.uniform(-0.5, 0.5, 64), rng.uniform(-0.5, 0.5, 4)
    tw = [av.Tensor(a) for a in (w1, w2, w3, b1, b2, b3)]
    mlp = av.NumericalFunction(
        "bench_mlp", lambda x: tw[2] @ (tw[1] @ (tw[0] @ x + tw[3]).tanh() + tw[4]).tanh() + tw[5], (av.Arg(16),)
    )
    xm = np.linspace(-1, 1, 16)

    def mlp_numpy():
        return w3 @ np.tanh(w2 @ np.tanh(w1 @ xm + b1) + b2) + b3

    def jax_mlp(v):
        import jax.numpy as jnp

        return w3 @ jnp.tanh(w2 @ jnp.tanh(w1 @ v + b1) + b2) + b3

    def casadi_mlp(ca, v):
        return ca.mtimes(w3, ca.tanh(ca.mtimes(w2, ca.tanh(ca.mtimes(w1, v) + b1)) + b2)) + b3

    np.testing.assert_allclose(mlp(xm), mlp_numpy(), rtol=1e-12)
    baselines = [("numpy", per_call(mlp_numpy))] + optional_baselines(casadi_mlp, jax_mlp, [16], (xm,))
    report("MLP 16-64-64-4, tanh", per_call(lambda: mlp(xm)), baselines)


if __name__ == "__main__":
    main()

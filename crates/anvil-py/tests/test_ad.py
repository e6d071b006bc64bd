"""Derivatives from Python against finite differences; sparse against dense; vmap against
a loop."""

import numpy as np

import anvil as av
from anvil import ad


def rosen(x):
    a, b = x[:-1], x[1:]
    return ((b - a.square()).square() * 100.0 + (1.0 - a).square()).sum()


def finite_difference_gradient(f, x, h=1e-6):
    g = np.zeros_like(x)
    for i in range(x.size):
        e = np.zeros_like(x)
        e[i] = h
        g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def test_gradient_jacobian_hessian_against_finite_differences():
    n = 6
    f = av.NumericalFunction("rosen", rosen, (av.Arg(n),))
    x = np.linspace(-0.5, 1.2, n)
    g = ad.gradient(f)
    np.testing.assert_allclose(g(x), finite_difference_gradient(f, x), rtol=1e-6, atol=1e-6)
    h = ad.hessian(f)(x)
    np.testing.assert_allclose(h, h.T, atol=1e-9)
    jg = np.stack([finite_difference_gradient(lambda z, i=i: g(z)[i], x) for i in range(n)])
    np.testing.assert_allclose(h, jg, rtol=1e-5, atol=1e-5)
    residual = av.NumericalFunction("res", lambda x: (x.sin() * x[::-1]), (av.Arg(n),))
    jac = ad.jacobian(residual)(x)
    fd = np.stack([finite_difference_gradient(lambda z, i=i: residual(z)[i], x) for i in range(n)])
    np.testing.assert_allclose(jac, fd, rtol=1e-6, atol=1e-6)


def test_jvp_and_vjp_satisfy_the_adjoint_identity():
    f = av.NumericalFunction("two", lambda x, y: ((x * y).exp(), (x @ y).sin()), (av.Arg(4), av.Arg(4)))
    rng = np.random.default_rng(1)
    x, y, tx, ty = (rng.normal(size=4) for _ in range(4))
    _, _, dy0, dy1 = ad.jvp(f)(x, y, tx, ty)
    u0, u1 = rng.normal(size=4), rng.normal()
    bx, by = ad.vjp(f)(x, y, u0, u1)
    assert np.isclose(u0 @ dy0 + u1 * dy1, bx @ tx + by @ ty)


def test_sparse_equals_dense():
    n = 30
    f = av.NumericalFunction("rosen30", rosen, (av.Arg(n),))
    x = np.linspace(-1, 1, n)
    s = ad.sphessian(f)
    assert s.colors == 3 and s.nnz == 2 * n - 1
    np.testing.assert_allclose(s(x).toarray(), np.triu(ad.hessian(f)(x)), atol=1e-9)
    r = av.NumericalFunction("r", lambda x: x[1:] * x[:-1], (av.Arg(n),))
    j = ad.spjacobian(r)
    np.testing.assert_allclose(j(x).toarray(), ad.jacobian(r)(x), atol=1e-12)


def test_vmap_equals_a_loop():
    f = av.NumericalFunction("f", lambda x, w: (x * w).sum().tanh(), (av.Arg(3), av.Arg(3)))
    batched = av.vmap(f, 5, in_axes=(0, None))
    xs = np.random.default_rng(2).normal(size=(5, 3))
    w = np.array([0.5, -1.0, 2.0])
    np.testing.assert_allclose(batched(xs, w), [f(x, w) for x in xs], rtol=1e-12)
    assert ad.gradient(f)(xs[0], w).shape == (3,)

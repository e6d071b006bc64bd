"""The original's Python names: code written for the original anvil runs unchanged."""

import numpy as np
import pytest

import anvil as av
from anvil import ad
from anvil.transform import dvmap, svmap, vmap


def xp():
    return av.NumericalFunction("xp", lambda x, p: x * p, (av.Arg(2), av.Arg(2)))


def test_derivatives_take_argnum_wrt_and_name(in_tmp_dir):
    f = xp()
    x, p = np.array([1.0, 2.0]), np.array([3.0, 5.0])
    np.testing.assert_array_equal(ad.jacobian(f, argnum=1)(x, p), np.diag(x))  # d/dp
    np.testing.assert_array_equal(ad.jacobian(f, wrt=1)(x, p), np.diag(x))
    dx, dp = ad.jacobian(f, argnum=0), ad.jacobian(f, argnum=1, name="xp_dp")
    assert (dx.name, dp.name) == ("xp_jac", "xp_dp")
    av.generate_module("both", [dx, dp])
    with pytest.raises(ValueError, match="unique"):
        av.generate_module("clash", [ad.jacobian(f, argnum=0), ad.jacobian(f, argnum=1)])
    g = av.NumericalFunction("g", lambda x: (x * x).sum(), (av.Arg(5),))
    np.testing.assert_array_equal(ad.gradient(g, argnum=0)(np.arange(1.0, 6.0)), [2, 4, 6, 8, 10])
    assert ad.hessian(g, name="g_h").name == "g_h"
    assert ad.sphessian(g, argnum=0, name="g_sh").name == "g_sh"
    with pytest.raises(TypeError, match="argnum"):
        ad.gradient(g, argnum="0")


def test_spjacobian_takes_the_originals_keywords():
    n = 8
    f = av.NumericalFunction("arrow", lambda x: (x[0] * x.sin().sum()) + x.square().sum(), (av.Arg(n),))
    grad = ad.gradient(f)
    x = np.linspace(0.1, 1.0, n)
    dense = ad.jacobian(grad)(x)
    plain = ad.spjacobian(grad, argnum=0, unroll=True, sep_uncompression=False)
    star = ad.spjacobian(grad, 0, False, True, True)
    assert star.colors < plain.colors
    np.testing.assert_allclose(star(x).toarray(), dense, rtol=1e-12)
    np.testing.assert_allclose(plain(x).toarray(), dense, rtol=1e-12)
    with pytest.raises(TypeError, match="unroll must be a bool"):
        ad.spjacobian(grad, unroll="yes")


def test_assigning_a_name_renames_the_function(in_tmp_dir):
    f = xp()
    f(np.ones(2), np.ones(2))  # traced and compiled under the old name
    f.name = "renamed"
    np.testing.assert_array_equal(f(np.ones(2), np.full(2, 2.0)), [2.0, 2.0])
    av.generate_module("m", [f])
    assert "namespace renamed" in (in_tmp_dir / "m.hpp").read_text()
    with pytest.raises(ValueError, match="invalid name"):
        f.name = "sin"
    assert f.name == "renamed"


def test_svmap_and_vmap_fix_the_batch_size():
    f = av.NumericalFunction("outer", lambda x: x.reshape(3, 1) * x.reshape(1, 3), (av.Arg(3),))
    assert vmap is svmap and av.vmap is svmap
    xs = np.arange(12.0).reshape(4, 3)
    v = svmap(f, 4, in_axes=0, out_axis=1)
    out = v(xs)
    assert out.shape == (3, 4, 3)
    for b in range(4):
        np.testing.assert_array_equal(out[:, b, :], f(xs[b]))
    np.testing.assert_array_equal(svmap(f, 4, out_axis=-1)(xs)[..., 2], f(xs[2]))
    with pytest.raises(ValueError, match="out of range"):
        svmap(f, 4, out_axis=5)


def test_dvmap_reads_the_batch_size_from_its_inputs():
    def rotate(v, angle):
        c, s = angle.cos(), angle.sin()
        return Tensor_stack(v[0] * c - v[1] * s, v[0] * s + v[1] * c)

    def Tensor_stack(*ts):
        return av.Tensor.stack(*ts)

    rotate_all = dvmap(rotate, in_axes=(0, None))
    # Inside a traced function: the batch size comes from the traced input.
    traced = av.NumericalFunction("rotations", lambda vs, a: rotate_all(vs, a), (av.Arg((5, 2)), av.Arg(())))
    vs = np.arange(10.0).reshape(5, 2)
    out = traced(vs, np.pi / 2)
    np.testing.assert_allclose(out, np.stack([-vs[:, 1], vs[:, 0]], axis=1), atol=1e-12)
    # On arrays, any batch size.
    np.testing.assert_allclose(rotate_all(vs[:3], np.array(np.pi)), -vs[:3], atol=1e-12)
    with pytest.raises(ValueError, match="at least one input must have a mapped axis"):
        dvmap(rotate, in_axes=(None, None))(vs, np.array(0.0))
    with pytest.raises(ValueError, match="different batch sizes"):
        dvmap(lambda a, b: a + b)(np.ones(3), np.ones(4))


def test_the_language_module_and_clamp():
    from anvil import language

    assert language.Tensor is av.Tensor and language.dtypes is av.dtypes
    x = av.Tensor([-2.0, 0.5, 3.0])
    np.testing.assert_array_equal(x.clamp(-1.0, 1.0).numpy(), [-1.0, 0.5, 1.0])


def test_tensors_iterate_and_unpack():
    f = av.NumericalFunction("cartpole", lambda x: (lambda p, th, v, om: p + th * v - om)(*x), (av.Arg(4),))
    assert f(np.array([1.0, 2.0, 3.0, 4.0])) == 1.0 + 6.0 - 4.0

    def unpack(x):
        p, th, v, om = x
        return av.Tensor.stack(*[t * 2.0 for t in x]) + p

    np.testing.assert_array_equal(av.NumericalFunction("u", unpack, (av.Arg(4),))(np.ones(4)), np.full(4, 3.0))
    t = av.Tensor([[1.0, 2.0], [3.0, 4.0]])
    assert len(t) == 2 and [r.numpy().tolist() for r in t] == [[1.0, 2.0], [3.0, 4.0]]
    with pytest.raises(IndexError):
        t[2]
    with pytest.raises(ValueError):
        a, b, c = t
    with pytest.raises(TypeError, match="0-d"):
        iter(av.Tensor(1.0))


def test_numpy_functions_on_tensors_work_or_say_why_not():
    def body(x):
        return np.sum(np.sin(x) * 2.0, axis=0) + np.maximum(x, 0.5).mean() + np.float64(1.5) * x[0]

    f = av.NumericalFunction("numpyish", body, (av.Arg(3),))
    x = np.array([0.1, 0.7, 2.0])
    assert f(x) == pytest.approx(np.sum(np.sin(x) * 2.0) + np.maximum(x, 0.5).mean() + 1.5 * x[0])
    np.testing.assert_array_equal(np.asarray(av.Tensor([1.0, 2.0]) * 2.0), [2.0, 4.0])
    with pytest.raises(TypeError, match="linalg|inv"):
        av.NumericalFunction("inv", lambda m: np.linalg.inv(m), (av.Arg((2, 2)),)).outputs
    with pytest.raises(TypeError, match="has no values"):
        av.NumericalFunction("arr", lambda v: av.Tensor(np.asarray(v)), (av.Arg(2),)).outputs
    with pytest.raises(TypeError, match="not supported on anvil Tensors"):
        av.NumericalFunction("cum", lambda v: np.cumsum(v), (av.Arg(2),)).outputs


def test_generate_module_takes_a_directory_and_only_functions(tmp_path):
    f = av.NumericalFunction("dirfn", lambda x: x + 1.0, (av.Arg(2),))
    av.generate_module("placed", [f], directory=tmp_path / "out")
    assert (tmp_path / "out" / "placed.hpp").exists() and (tmp_path / "out" / "placed.cpp").exists()
    with pytest.raises(TypeError, match="item 1 of the list is a str"):
        av.generate_module("bad", [f, "not a function"], directory=tmp_path)
    with pytest.raises(TypeError, match="list of NumericalFunctions"):
        av.generate_module("bad", f, directory=tmp_path)

"""The Tensor DSL from Python: native results equal numpy's and the interpreter's."""

import numpy as np
import pytest

import anvil as av

rng = np.random.default_rng(0)
X = rng.uniform(0.2, 1.5, size=(3, 4))
Y = rng.uniform(0.2, 1.5, size=(3, 4))

CASES = {
    "arith": (lambda x, y: x + y * 2 - 1 / y + (-x) ** 2, lambda x, y: x + y * 2 - 1 / y + (-x) ** 2),
    "rops": (lambda x, y: 2 - x + 3 * y + 1 / x, lambda x, y: 2 - x + 3 * y + 1 / x),
    "pow": (lambda x, y: x**y + 2**x, lambda x, y: x**y + 2**x),
    "math": (lambda x, y: x.sin() + x.cos() * x.exp() - y.log() + x.sqrt() + x.tanh() + x.sigmoid(),
             lambda x, y: np.sin(x) + np.cos(x) * np.exp(x) - np.log(y) + np.sqrt(x) + np.tanh(x) + 1 / (1 + np.exp(-x))),
    "compare": (lambda x, y: (x < y).where(x, y) + (x >= 1.0).cast(av.dtypes.float64),
                lambda x, y: np.where(x < y, x, y) + (x >= 1.0)),
    "minmax": (lambda x, y: x.maximum(y) - x.minimum(0.5) + x.clip(0.5, 1.0), lambda x, y: np.maximum(x, y) - np.minimum(x, 0.5) + np.clip(x, 0.5, 1.0)),
    "reduce": (lambda x, y: x.sum(axis=1) + y.max(axis=1) - x.mean(1) + y.min(1) * x.prod(1),
               lambda x, y: x.sum(1) + y.max(1) - x.mean(1) + y.min(1) * x.prod(1)),
    "reduce_keep": (lambda x, y: x.sum(axis=0, keepdim=True) * y, lambda x, y: x.sum(0, keepdims=True) * y),
    "reduce_all": (lambda x, y: x.sum() + y.max(), lambda x, y: x.sum() + y.max()),
    "matmul": (lambda x, y: x @ y.T, lambda x, y: x @ y.T),
    "movement": (lambda x, y: x.reshape(4, 3).permute(1, 0) + y.transpose().reshape((4, 3)).T,
                 lambda x, y: x.reshape(4, 3).transpose(1, 0) + y.T.reshape(4, 3).T),
    "pad_shrink_flip": (lambda x, y: x.pad(((1, 0), None)).shrink(((0, 3), (1, 3))).flip(1) + y.flip((0, 1))[:, :2],
                        lambda x, y: np.pad(x, ((1, 0), (0, 0)))[0:3, 1:3][:, ::-1] + y[::-1, ::-1][:, :2]),
    "expand": (lambda x, y: x.sum(1, keepdim=True).expand(3, 4) + x.reshape(-1)[:4].expand(3, -1),
               lambda x, y: np.broadcast_to(x.sum(1, keepdims=True), (3, 4)) + np.broadcast_to(x.reshape(-1)[:4], (3, 4))),
    "cat_stack": (lambda x, y: x.cat(y, dim=1).sum(0) + av.Tensor.stack(x, y, dim=0).sum(1).reshape(-1),
                  lambda x, y: np.concatenate([x, y], 1).sum(0) + np.stack([x, y]).sum(1).reshape(-1)),
    "unsqueeze": (lambda x, y: x.unsqueeze(0).squeeze(0) * y[None, :, :].squeeze(), lambda x, y: x * y),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ops_match_numpy(name):
    op, ref = CASES[name]
    fn = av.NumericalFunction(f"op_{name}", op, (av.Arg((3, 4)), av.Arg((3, 4))))
    want = ref(X, Y)
    np.testing.assert_allclose(fn(X, Y), want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(fn.eval(X, Y), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    "key",
    [np.s_[1], np.s_[-1], np.s_[:2], np.s_[1:], np.s_[::2], np.s_[::-1], np.s_[3:0:-1], np.s_[-2::-2], np.s_[:, 0],
     np.s_[1, 1:3], np.s_[None, :, 2], np.s_[..., 1], np.s_[0, ...], np.s_[1:2, ::-3], np.s_[5:], np.s_[-10:2]],
)
def test_indexing_matches_numpy(key):
    data = np.arange(20.0).reshape(4, 5)
    fn = av.NumericalFunction("indexing", lambda x: x[key], (av.Arg((4, 5)),))
    np.testing.assert_array_equal(np.asarray(fn(data)), data[key])


def test_integer_tensor_indexing_and_gather():
    idx = av.Tensor(np.array([2, 0, 2]))
    fn = av.NumericalFunction("rows", lambda x: (x[idx], x.gather(1, av.Tensor(np.array([[0, 1], [1, 0], [4, 4], [3, 2]])))), (av.Arg((4, 5)),))
    data = np.arange(20.0).reshape(4, 5)
    rows, g = fn(data)
    np.testing.assert_array_equal(rows, data[[2, 0, 2]])
    np.testing.assert_array_equal(g, np.take_along_axis(data, np.array([[0, 1], [1, 0], [4, 4], [3, 2]]), 1))


def test_dtypes_and_constants():
    assert av.Tensor([1, 2]).dtype == av.dtypes.int64
    assert av.Tensor(np.array([1, 2], dtype=np.int32)).dtype == av.dtypes.int32
    assert av.Tensor([1.5]).dtype == av.dtypes.float64
    assert av.Tensor(np.float32([1.5])).dtype == av.dtypes.float32
    assert av.Tensor([True]).dtype == av.dtypes.bool
    assert av.Tensor([1, 2], dtype=av.dtypes.float32).dtype == av.dtypes.float32
    np.testing.assert_array_equal((av.Tensor([[1.0, 2.0]]) * 3).numpy(), [[3.0, 6.0]])
    np.testing.assert_array_equal(av.Tensor.arange(5).numpy(), np.arange(5))
    assert av.Tensor.zeros(2, 3).shape == (2, 3) and av.Tensor.ones((4,)).numpy().sum() == 4
    fn = av.NumericalFunction("ints", lambda a: (a * 2, a // 3, a.cast(av.dtypes.float32) / 2),
                              (av.Arg(4, dtype=av.dtypes.int32),))
    a, b, c = fn(np.array([1, 5, -7, 9]))
    assert a.dtype == np.int32 and c.dtype == np.float32
    np.testing.assert_array_equal(a, [2, 10, -14, 18])
    np.testing.assert_array_equal(b, [0, 1, -3, 3])
    np.testing.assert_array_equal(c, [0.5, 2.5, -3.5, 4.5])


def test_python_scalars_are_weakly_typed():
    fn = av.NumericalFunction("weak", lambda x: x * 2 + 1.5, (av.Arg(2, dtype=av.dtypes.float32),))
    assert fn.outputs[0].dtype == av.dtypes.float32

"""Arguments are checked, not guessed: shapes in Arg must be integers, and call inputs follow
numpy's `same_kind` casting rule with range checks (no silent truncation or wrapping)."""

import numpy as np
import pytest

import anvil as av


def test_arg_shapes_must_be_integers():
    assert av.Arg(np.int64(3)).shape == 3
    assert av.Arg((np.int32(2), 3)).shape == (2, 3)
    assert av.Arg([2, 3]).shape == (2, 3)
    assert av.Arg(np.array([2, 3])).shape == (2, 3)
    assert av.Arg(np.array(4)).shape == 4
    assert av.Arg(0).ndim == 1
    for bad in ["12", (2.5,), 2.5, True, None, (1, "a")]:
        with pytest.raises(TypeError, match="Arg"):
            av.Arg(bad)
    with pytest.raises(ValueError, match="non-negative"):
        av.Arg(-1)


def test_arg_dtypes_accept_numpy_spellings():
    assert av.Arg(3, dtype="float32").dtype == av.dtypes.float32
    assert av.Arg(3, dtype=np.int32).dtype == av.dtypes.int32
    assert av.Arg(3, dtype=np.dtype("f8")).dtype == av.dtypes.float64
    with pytest.raises(TypeError, match="unsupported dtype"):
        av.Arg(3, dtype=np.complex128)


@pytest.fixture(scope="module")
def f():
    return av.NumericalFunction(
        "typed", lambda x, i, s: (x * 2.0, i + 1, s * 1.0),
        (av.Arg(3), av.Arg(3, dtype=av.dtypes.int32), av.Arg((), dtype=av.dtypes.float64)),
    )


def call_both(f, *args):
    """The native call and the interpreter must accept and refuse the same arguments."""
    native = f(*args)
    np.testing.assert_array_equal(native[0], f.eval(*args)[0])
    return native


def test_widening_and_same_kind_casts_are_accepted(f):
    x, i, s = call_both(f, [1, 2, 3], np.array([1, 2, 3], dtype=np.int64), 2)
    np.testing.assert_array_equal(x, [2.0, 4.0, 6.0])
    assert i.dtype == np.int32 and list(i) == [2, 3, 4]
    assert s == 2.0
    call_both(f, np.array([True, False, True]), [0, 0, 0], np.float32(1.5))
    call_both(f, np.array([1.0, 2.0, 3.0], dtype=np.float32), np.array([1, 2, 3], dtype=np.uint8), 0)


def test_big_endian_arrays_work(f):
    x = np.array([1.0, 2.0, 3.0], dtype=">f8")
    i = np.array([1, 2, 3], dtype=">i4")
    out = call_both(f, x, i, np.array(1.0, dtype=">f8"))
    np.testing.assert_array_equal(out[0], [2.0, 4.0, 6.0])
    np.testing.assert_array_equal(out[1], [2, 3, 4])
    np.testing.assert_array_equal(av.Tensor(x).numpy(), [1.0, 2.0, 3.0])


@pytest.mark.parametrize("bad, match", [
    ((np.zeros(3), np.array([1.5, 2.0, 3.0]), 0.0), "argument 1 of dtype float64 cannot be cast to int32"),
    ((np.zeros(3), np.zeros(3, dtype=np.int32), None), "argument 2 is None"),
    ((np.array(["2020-01-01"] * 3, dtype="datetime64[D]"), np.zeros(3, dtype=np.int32), 0.0), "datetime64"),
    ((np.zeros(3, dtype=complex), np.zeros(3, dtype=np.int32), 0.0), "complex128"),
    ((["a", "b", "c"], np.zeros(3, dtype=np.int32), 0.0), "cannot be cast"),
    ((np.zeros(3), np.zeros(3, dtype=np.int32), [None]), "argument 2"),
])
def test_lossy_or_meaningless_casts_are_type_errors(f, bad, match):
    with pytest.raises(TypeError, match=match):
        f(*bad)
    with pytest.raises(TypeError, match=match):
        f.eval(*bad)


def test_integers_out_of_range_are_overflow_errors(f):
    for i in [np.array([2**40, 0, 0]), [2**40, 0, 0], np.array([2**63, 0, 0], dtype=np.uint64)]:
        with pytest.raises(OverflowError, match="argument 1 holds"):
            f(np.zeros(3), i, 0.0)
    with pytest.raises(TypeError, match="object"):
        f(np.zeros(3), [2**70, 0, 0], 0.0)  # beyond int64: numpy makes an object array
    with pytest.raises(OverflowError, match="does not fit int64"):
        av.Tensor(np.array([2**63], dtype=np.uint64))


def test_weak_python_numbers_must_fit_the_tensor_dtype():
    ints = av.NumericalFunction("ints", lambda i: i + 2**40, (av.Arg(2, dtype=av.dtypes.int32),))
    with pytest.raises(ValueError, match="does not fit i32"):
        ints(np.zeros(2, dtype=np.int32))
    longs = av.NumericalFunction("longs", lambda i: i + (2**60 + 1), (av.Arg(1, dtype=av.dtypes.int64),))
    assert longs(np.array([1]))[0] == 2**60 + 2  # exact: not rounded through a float
    with pytest.raises(OverflowError, match="out of bounds for int64"):
        av.NumericalFunction("huge", lambda i: i + 2**64, (av.Arg(1, dtype=av.dtypes.int64),)).outputs


def test_integer_floor_division_and_modulo_follow_python():
    a = np.array([7, -7, 7, -7, 0, 2**62 + 1], dtype=np.int64)
    b = np.array([2, 2, -2, -2, 3, 1], dtype=np.int64)
    f = av.NumericalFunction("pydiv", lambda a, b: (a // b, a % b, a // 2), (av.Arg(6, dtype=av.dtypes.int64),) * 2)
    q, r, h = f(a, b)
    assert q.dtype == np.int64
    assert list(q) == [x // y for x, y in zip(a.tolist(), b.tolist())]
    assert list(r) == [x % y for x, y in zip(a.tolist(), b.tolist())]
    assert list(h) == [x // 2 for x in a.tolist()]
    for native, interpreted in zip(f(a, b), f.eval(a, b)):
        np.testing.assert_array_equal(native, interpreted)


def test_index_tensors_must_be_integers():
    x = av.Tensor([10.0, 20.0, 30.0])
    np.testing.assert_array_equal(x[av.Tensor([2, 0])].numpy(), [30.0, 10.0])
    with pytest.raises(IndexError, match="integer type, got float64"):
        x[av.Tensor([1.5])]
    with pytest.raises(IndexError, match="integer type, got bool"):
        x[av.Tensor([True, False, True])]


def test_mean_of_an_empty_tensor_is_nan():
    f = av.NumericalFunction("empty", lambda x: x.mean(), (av.Arg(0),))
    assert np.isnan(f(np.zeros(0)))
    assert np.isnan(f.eval(np.zeros(0)))

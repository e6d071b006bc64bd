"""Shapes and allocations too large for the machine raise ValueError / MemoryError before
anything is allocated: no wrapped sizes, no Rust panics (PanicException), no aborts."""

import numpy as np
import pytest

import anvil as av


def raises(exception, fn, match=None):
    """Like pytest.raises, but a Rust panic (a BaseException) fails the test with its text."""
    try:
        fn()
    except BaseException as e:  # noqa: B036 - PanicException derives from BaseException
        assert type(e).__name__ != "PanicException", f"Rust panic: {e}"
        assert isinstance(e, exception), f"expected {exception.__name__}, got {type(e).__name__}: {e}"
        if match is not None:
            assert match in str(e), str(e)
        return
    raise AssertionError(f"expected {exception.__name__}, nothing was raised")


def trace(shape, body=lambda x: x.sum()):
    return av.NumericalFunction("big", body, (av.Arg(shape),)).outputs


def test_huge_shapes_are_value_errors_naming_the_op_and_shape():
    raises(ValueError, lambda: trace((2**32, 2**32)), "[4294967296, 4294967296]")
    raises(ValueError, lambda: av.Tensor.full((2**33, 2**31), 0.0), "too large")
    raises(ValueError, lambda: av.Tensor.zeros(2**33, 2**31), "too large")
    x = av.Tensor([1.0, 2.0])
    raises(ValueError, lambda: x.pad(((2**64 - 1, 0),)))
    raises(ValueError, lambda: x.pad(((2**60, 0),)), "pad")
    raises(ValueError, lambda: x.reshape(1, 2).expand(2**62, 2), "expand")
    raises(ValueError, lambda: x.scatter_add(av.Tensor([0, 1]), [2**40, 2**40]), "scatter_add")
    raises(ValueError, lambda: trace(3, lambda x: x.reshape(3, 1) * av.Tensor.ones(1, 2**50)), "too large")


def test_huge_allocations_are_memory_errors():
    raises(MemoryError, lambda: av.Tensor.eye(1 << 23), "eye")
    raises(MemoryError, lambda: av.Tensor.eye(1 << 40), "more than 2^64 bytes")
    raises(MemoryError, lambda: av.Tensor.arange(1e14), "arange")
    big = av.NumericalFunction("huge_out", lambda x: x.expand(2**40) * 2.0, (av.Arg(1),))
    raises(MemoryError, lambda: big.eval(np.ones(1)), "TiB")
    raises(MemoryError, lambda: big(np.ones(1)))
    wide = av.NumericalFunction("wide", lambda x: x * 2.0, (av.Arg(1 << 22),))
    raises(MemoryError, lambda: av.ad.jacobian(wide))


def test_former_panics_are_ordinary_exceptions():
    x = av.Tensor([[1.0, 2.0], [3.0, 4.0]])
    raises(IndexError, lambda: x[..., ...], "single ellipsis")
    raises(ValueError, lambda: av.Tensor.arange(float("inf")), "finite")
    raises(ValueError, lambda: av.Tensor.arange(0.0, float("nan")), "finite")
    raises(ValueError, lambda: av.Tensor.arange(1e300), "2^48")
    np.testing.assert_array_equal(x[..., 1].numpy(), [2.0, 4.0])

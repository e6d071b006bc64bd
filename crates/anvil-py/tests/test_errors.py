"""Bad input from Python raises the right exception and the interpreter survives."""

import numpy as np
import pytest

import anvil as av


def add():
    return av.NumericalFunction("add", lambda x, y: x + y, (av.Arg(3), av.Arg(3)))


def test_wrong_argument_count_is_a_type_error():
    with pytest.raises(TypeError, match=r"add\(\) takes 2 arguments"):
        add()(np.zeros(3))


def test_wrong_shape_is_a_value_error_naming_the_argument():
    with pytest.raises(ValueError, match=r"add\(\): argument 1 must have shape \(3,\), got \(4,\)"):
        add()(np.zeros(3), np.zeros(4))


def test_shape_mismatch_inside_the_function():
    fn = av.NumericalFunction("bad", lambda x, y: x + y, (av.Arg(3), av.Arg(4)))
    with pytest.raises(ValueError, match=r"add: shapes \[3\] and \[4\] cannot be broadcast"):
        fn(np.zeros(3), np.zeros(4))


def test_an_exception_inside_the_traced_function_propagates():
    def boom(x):
        raise KeyError("inside")

    fn = av.NumericalFunction("boom", boom, (av.Arg(3),))
    with pytest.raises(KeyError, match="inside"):
        fn(np.zeros(3))


def test_returning_a_non_tensor_is_a_type_error():
    fn = av.NumericalFunction("notensor", lambda x: 3.0, (av.Arg(3),))
    with pytest.raises(TypeError, match="must return a Tensor or a tuple of Tensors, got float"):
        fn(np.zeros(3))
    fn = av.NumericalFunction("mixed", lambda x: (x, "no"), (av.Arg(3),))
    with pytest.raises(TypeError, match="got str"):
        fn(np.zeros(3))


def test_wrong_arity_is_a_type_error():
    fn = av.NumericalFunction("arity", lambda x, y: x + y, (av.Arg(3),))
    with pytest.raises(TypeError):
        fn(np.zeros(3))


def test_invalid_names_and_devices():
    with pytest.raises(ValueError, match="invalid name"):
        av.NumericalFunction("not-valid", lambda x: x, (av.Arg(1),))(np.zeros(1))
    for device in ("METAL", "cuda", "CUDA:x", "TPU"):
        with pytest.raises(ValueError, match="unsupported device"):
            av.NumericalFunction("gpu", lambda x: x, (av.Arg(1),), device=device)
    assert av.NumericalFunction("gpu", lambda x: x, (av.Arg(1),), device="CUDA:1").device == "CUDA:1"
    with pytest.raises(ValueError, match="unique"):
        f = av.NumericalFunction("same", lambda x: x * 2.0, (av.Arg(1),))
        g = av.NumericalFunction("same", lambda x: x * 3.0, (av.Arg(1),))
        av.generate_module("m", [f, g])


def test_misused_tensors():
    x = av.Tensor([1.0, 2.0])
    with pytest.raises(TypeError, match="truth value"):
        bool(x > 1.0)
    with pytest.raises(ValueError, match="reshape"):
        x.reshape(3)
    with pytest.raises(IndexError):
        x[0, 0]
    with pytest.raises(IndexError, match="out of bounds"):
        x[5]
    with pytest.raises(TypeError):
        x["a"]
    with pytest.raises(TypeError, match="unsupported dtype"):
        x.cast("complex64")


def test_derivative_misuse():
    fn = av.NumericalFunction("vec", lambda x: x.sin(), (av.Arg(3),))
    with pytest.raises(ValueError, match="scalar"):
        av.ad.gradient(fn)
    with pytest.raises(ValueError, match="out of range"):
        av.vmap(fn, 4, in_axes=2)


def test_the_interpreter_survives_all_of_the_above():
    np.testing.assert_array_equal(add()(np.ones(3), np.ones(3)), [2.0, 2.0, 2.0])


def test_a_tensor_leaked_from_another_trace_is_rejected():
    kept = []

    def first(x):
        kept.append(x.sin())
        return x * 2.0

    av.NumericalFunction("first", first, (av.Arg(3),)).outputs
    second = av.NumericalFunction("second", lambda y: y + kept[0], (av.Arg(3),))
    with pytest.raises(ValueError, match="tensor from another traced function"):
        second(np.zeros(3))

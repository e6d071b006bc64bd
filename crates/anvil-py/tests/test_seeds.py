"""Every code example of the original's documentation (seeds 002 and 003), as shown."""

import numpy as np
import pytest
import scipy.sparse as sp

import anvil as av
from anvil.ad import sphessian, spjacobian


def test_decorator_one_input():
    @av.numerical_function("my_fn", 1024)
    def my_fn(x: av.Tensor) -> av.Tensor:
        return 0.5 * x.square()

    x = np.linspace(-1, 1, 1024)
    np.testing.assert_allclose(my_fn(x), 0.5 * x**2)


def test_decorator_two_inputs():
    @av.numerical_function("add", 3, 3)
    def add(x: av.Tensor, y: av.Tensor) -> av.Tensor:
        return x + y

    np.testing.assert_array_equal(add(np.array([1.0, 2, 3]), np.array([4.0, 5, 6])), [5.0, 7.0, 9.0])


def test_decorator_with_a_tuple_of_shapes():
    @av.numerical_function("my_fn", ((3,), (2,)))
    def my_fn(x: av.Tensor, y: av.Tensor) -> av.Tensor:
        return x + y.pad(((0, 1),))

    np.testing.assert_array_equal(my_fn(np.array([1.0, 2, 3]), np.array([10.0, 20])), [11.0, 22.0, 3.0])


def test_direct_construction():
    fn = av.NumericalFunction("my_function", lambda x: 0.5 * x.square(), (av.Arg(1024),))
    assert fn(np.full(1024, 2.0))[5] == 2.0


def test_arg_forms():
    assert av.Arg(1024).shape == 1024 and av.Arg(1024).dtype == av.dtypes.float64
    assert av.Arg((3, 3)).ndim == 2
    assert av.Arg(1024, dtype=av.dtypes.float32).dtype == av.dtypes.float32
    zero = av.Arg(0)
    fn = av.NumericalFunction("unused", lambda x, y: y * 2.0, (zero, av.Arg(2)))
    np.testing.assert_array_equal(fn(np.zeros(0), np.array([1.0, 2.0])), [2.0, 4.0])


def test_calling_convention():
    fn = av.NumericalFunction("add", lambda x, y: x + y, (av.Arg(3), av.Arg(3)))
    x = np.array([1.0, 2.0, 3.0])
    y = np.array([4.0, 5.0, 6.0])
    result = fn(x, y)
    assert isinstance(result, np.ndarray)
    np.testing.assert_array_equal(result, [5.0, 7.0, 9.0])

    fn2 = av.NumericalFunction("split", lambda x, y: (x + y, x * y), (av.Arg(3), av.Arg(3)))
    sum_result, prod_result = fn2(x, y)
    np.testing.assert_array_equal(sum_result, [5.0, 7.0, 9.0])
    np.testing.assert_array_equal(prod_result, [4.0, 10.0, 18.0])

    fn3 = av.NumericalFunction("norm", lambda x: (x * x).sum(), (av.Arg(3),))
    s = fn3(x)
    assert isinstance(s, np.float64) and s == 14.0


def test_inputs_are_cast_and_made_contiguous():
    fn = av.NumericalFunction("f32", lambda x: x * 2.0, (av.Arg((2, 2), dtype=av.dtypes.float32),))
    strided = np.arange(8.0).reshape(2, 4)[:, ::2]  # float64, not contiguous
    out = fn(strided)
    assert out.dtype == np.float32 and out.flags["C_CONTIGUOUS"]
    np.testing.assert_array_equal(out, strided * 2)
    np.testing.assert_array_equal(fn([[1, 2], [3, 4]]), [[2, 4], [6, 8]])


def test_capturing_constants():
    A = av.Tensor([[1.0, 2.0], [3.0, 4.0]])
    fn = av.NumericalFunction("matmul", lambda x: A @ x, (av.Arg(2),))
    np.testing.assert_array_equal(fn(np.array([1.0, 1.0])), [3.0, 7.0])
    B = av.Tensor(np.eye(3) * 2)
    fn = av.NumericalFunction("scale", lambda x: B @ x, (av.Arg(3),))
    np.testing.assert_array_equal(fn(np.ones(3)), [2.0, 2.0, 2.0])


def my_sparse_fn(x):
    p = x.pad(((1, 1),))
    return p[:-2] - x * 2.0 + p[2:] + x.square()


def test_sparse_jacobian_and_hessian_reconstruct_with_scipy():
    n = 20
    fn = av.NumericalFunction("f", my_sparse_fn, (av.Arg(n),))
    jac_fn = spjacobian(fn)
    x = np.linspace(-1, 1, n)
    values = jac_fn.values(x)
    J = sp.csc_array((values, jac_fn.indices, jac_fn.indptr), shape=jac_fn.shape)
    assert jac_fn.shape == (n, n) and jac_fn.nnz == 3 * n - 2
    dense = av.ad.jacobian(fn)(x)
    np.testing.assert_allclose(J.toarray(), dense, atol=1e-12)
    assert isinstance(jac_fn(x), sp.csc_array)
    np.testing.assert_allclose(jac_fn(x).toarray(), dense, atol=1e-12)

    energy = av.NumericalFunction("e", lambda x: my_sparse_fn(x).square().sum(), (av.Arg(n),))
    hess_fn = sphessian(energy)
    H = hess_fn(x).toarray()
    np.testing.assert_allclose(H, np.triu(av.ad.hessian(energy)(x)), atol=1e-9)


def test_sparse_numerical_function_from_a_pattern():
    indices = av.Tensor(np.array([0, 1, 2], dtype=np.int64))
    indptr = av.Tensor(np.array([0, 1, 2, 3], dtype=np.int64))

    @av.sparse_numerical_function("diag", (av.Arg(3),), (3, 3), 3, indices, indptr)
    def diag(x):
        return x.exp()

    m = diag(np.zeros(3))
    np.testing.assert_array_equal(m.toarray(), np.eye(3))
    assert diag.nnz == 3 and diag.shape == (3, 3)
    np.testing.assert_array_equal(diag.indptr, [0, 1, 2, 3])
    bad = av.SparseNumericalFunction("bad", lambda x: x * 1.0, (av.Arg(3),), (3, 3), 2, [0, 1], [0, 1, 2, 2])
    with pytest.raises(ValueError):
        bad(np.zeros(3))


def test_codegen_int_constant_arithmetic():
    n = av.CodegenIntConstant("N", 10)
    nx = av.CodegenIntConstant("NX", 4)
    total = av.CodegenIntConstant.from_expr("TOTAL", n * nx + 2)
    assert int(total) == 42 and repr(total) == "TOTAL"
    assert (n - 3).value == 7 and (20 - n).name == "(20 - N)" and (n // 3).value == 3
    assert [c.name for c in total.all_dependencies()] == ["N", "NX", "TOTAL"]
    assert av.CodegenIntConstant("K", 5, type="int64_t").type == "int64_t"


def test_generate_module_writes_into_the_current_directory(in_tmp_dir, capsys):
    fn = av.NumericalFunction("add", lambda x, y: x + y, (av.Arg(3), av.Arg(3)))
    n = av.CodegenIntConstant("N", 3)
    av.generate_module("my_module", [fn], constants={n}, verbosity=1)
    assert (in_tmp_dir / "my_module.hpp").exists() and (in_tmp_dir / "my_module.cpp").exists()
    header = (in_tmp_dir / "my_module.hpp").read_text()
    assert "static constexpr int N = 3;" in header and "namespace add" in header
    assert "Generating header file: my_module.hpp" in capsys.readouterr().out
    assert "typedef Buffer<double, 3> IN0_t;" in fn.header_code
    assert "void call(IN0_t in0, IN1_t in1, OUT0_t out0, WS_t ws)" in fn.source_code


def test_outputs_are_inferred_from_tracing():
    fn = av.NumericalFunction("two", lambda x: (x.sum(), x.reshape(2, 2)), (av.Arg(4, dtype=av.dtypes.float32),))
    assert fn.outputs == (av.Arg((), av.dtypes.float32), av.Arg((2, 2), av.dtypes.float32))


def test_functions_compose_inside_other_functions():
    step = av.NumericalFunction("step", lambda x, u: x + (x.sin() + u) * 0.1, (av.Arg(3), av.Arg(3)))

    def rollout(x, u):
        for _ in range(10):
            x = step(x, u)
        return x

    f = av.NumericalFunction("rollout", rollout, (av.Arg(3), av.Arg(3)))
    x0, u = np.array([0.1, 0.2, 0.3]), np.array([1.0, -1.0, 0.5])
    want = x0
    for _ in range(10):
        want = step(want, u)
    np.testing.assert_allclose(f(x0, u), want, rtol=1e-14)
    assert isinstance(step(av.Tensor([1.0, 2.0, 3.0]), u), av.Tensor)

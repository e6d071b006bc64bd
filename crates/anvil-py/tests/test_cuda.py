"""device="CUDA": everywhere on the CPU's emulation of a GPU (the generated CUDA compiled as
C++, the grid run serially), compared with the reference interpreter; on a machine with an
NVIDIA GPU (scripts/gpu_check.sh), on the GPU with numpy, CuPy, PyTorch and JAX arrays."""

from __future__ import annotations

import math
import os
from typing import Any

import numpy as np
import pytest

import anvil as av
from anvil.transform import vmap


@pytest.fixture
def emulated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANVIL_CUDA_EMULATE", "1")


def pendulum(x: Any, u: Any) -> Any:
    return av.Tensor.stack(x[1], -9.81 * x[0].sin() - 0.1 * x[1] + u[0])


def test_a_cuda_function_runs_and_agrees_with_the_interpreter(emulated: None) -> None:
    f = av.NumericalFunction("pend", pendulum, (av.Arg(2), av.Arg(1)), device="CUDA")
    assert f.device == "CUDA"
    x, u = np.array([0.3, -1.0]), np.array([0.5])
    np.testing.assert_allclose(f(x, u), f.eval(x, u), rtol=1e-14)
    batched = vmap(f, 129, in_axes=(0, None))
    assert batched.device == "CUDA"
    xs = np.random.default_rng(1).uniform(-2, 2, (129, 2))
    xs[3, 0] = np.nan
    xs[5, 1] = np.inf
    np.testing.assert_allclose(batched(xs, u), batched.eval(xs, u), rtol=1e-14)


def test_derived_functions_keep_the_device(emulated: None) -> None:
    f = av.NumericalFunction("pend", pendulum, (av.Arg(2), av.Arg(1)), device="CUDA")
    for g in (av.ad.jacobian(f), av.ad.spjacobian(f), vmap(av.ad.jacobian(f), 7)):
        assert g.device == "CUDA", g
    jac = vmap(av.ad.jacobian(f), 7, in_axes=(0, None))
    xs = np.linspace(-1, 1, 14).reshape(7, 2)
    np.testing.assert_allclose(jac(xs, np.array([0.2])), jac.eval(xs, np.array([0.2])), rtol=1e-14)
    sparse = av.ad.spjacobian(f)
    np.testing.assert_allclose(sparse(xs[0], np.array([0.2])).toarray(), av.ad.jacobian(f).eval(xs[0], np.array([0.2])))


def test_float32_and_a_reduction_per_sample(emulated: None) -> None:
    f = av.NumericalFunction("energy", lambda x: (x.square() * 0.5 + x.sin()).sum(), (av.Arg(64, np.float32),), device="CUDA")
    xs = np.random.default_rng(2).uniform(-3, 3, (130, 64)).astype(np.float32)
    v = vmap(f, 130)
    np.testing.assert_allclose(v(xs), v.eval(xs), rtol=2e-5)


def test_a_function_that_is_no_vmap_runs_kernel_by_kernel(emulated: None) -> None:
    f = av.NumericalFunction(
        "field", lambda x: ((x.reshape(50, 400).sin() * 2.0).sum(axis=1), x.exp().sum()), (av.Arg(20_000),), device="CUDA"
    )
    x = np.random.default_rng(5).uniform(-2, 2, 20_000)
    rows, total = f(x)
    want_rows, want_total = f.eval(x)
    np.testing.assert_allclose(rows, want_rows, rtol=1e-12)
    np.testing.assert_allclose(total, want_total, rtol=1e-12)
    assert "anvil_kernel0" in f._native.cuda_source


class DLPackOnly:
    """An array that speaks DLPack alone (the emulation's device memory is host memory)."""

    def __init__(self, a: np.ndarray) -> None:
        self.a = a

    def __dlpack__(self, stream: Any = None) -> Any:
        return self.a.__dlpack__()

    def __dlpack_device__(self) -> Any:
        return self.a.__dlpack_device__()


def test_dlpack_arrays_are_read_in_place(emulated: None) -> None:
    f = av.NumericalFunction("pend_dl", pendulum, (av.Arg(2), av.Arg(1)), device="CUDA")
    v = vmap(f, 129, in_axes=(0, None))
    xs = np.random.default_rng(6).uniform(-2, 2, (129, 2))
    u = np.array([0.5])
    out = v(DLPackOnly(xs), DLPackOnly(u))
    np.testing.assert_allclose(out, v.eval(xs, u), rtol=1e-14)
    with pytest.raises(ValueError, match=r"expected shape \(129, 2\)"):
        v(DLPackOnly(xs[:5]), DLPackOnly(u))
    with pytest.raises(TypeError, match="float64 device array, got float32"):
        v(DLPackOnly(xs.astype(np.float32)), DLPackOnly(u))
    with pytest.raises(ValueError, match="not C-contiguous"):
        v(DLPackOnly(np.asfortranarray(xs)), DLPackOnly(u))
    # Device arrays are read in place: the batch axis must come first.
    moved = vmap(f, 129, in_axes=(1, None))
    with pytest.raises(ValueError, match="batch axis first"):
        moved(DLPackOnly(np.ascontiguousarray(xs.T)), DLPackOnly(u))
    np.testing.assert_allclose(moved(np.ascontiguousarray(xs.T), u), v.eval(xs, u), rtol=1e-14)


def test_bad_devices_and_arrays_say_what_is_wrong(emulated: None) -> None:
    with pytest.raises(ValueError, match="METAL is not implemented"):
        av.NumericalFunction("f", lambda x: x, (av.Arg(2),), device="METAL")

    class FakeDeviceArray:
        """Host memory behind __cuda_array_interface__ (the emulation addresses host memory)."""

        def __init__(self, a: np.ndarray) -> None:
            self.a = a
            self.__cuda_array_interface__ = {
                "shape": a.shape,
                "typestr": a.dtype.str,
                "data": (a.ctypes.data, False),
                "strides": None if a.flags.c_contiguous else a.strides,
                "version": 3,
            }

    cpu = av.NumericalFunction("cpu", lambda x: x * 2, (av.Arg(3),))
    with pytest.raises(TypeError, match="runs on the CPU"):
        cpu(FakeDeviceArray(np.ones(3)))
    f = av.NumericalFunction("gpu", lambda x, y: x * y, (av.Arg(3), av.Arg(3)), device="CUDA")
    with pytest.raises(ValueError, match=r"expected shape \(3,\)"):
        f(FakeDeviceArray(np.ones(4)), FakeDeviceArray(np.ones(3)))
    with pytest.raises(TypeError, match="float64 device array, got float32"):
        f(FakeDeviceArray(np.ones(3, np.float32)), FakeDeviceArray(np.ones(3)))
    with pytest.raises(ValueError, match="not C-contiguous"):
        f(FakeDeviceArray(np.ones(6)[::2]), FakeDeviceArray(np.ones(3)))
    with pytest.raises(TypeError, match="argument 1 is a host array"):
        f(FakeDeviceArray(np.ones(3)), np.ones(3))


def test_without_a_gpu_the_error_says_what_is_missing() -> None:
    try:
        av._anvil.cuda_device(0)
        pytest.skip("a GPU is present: the error of its absence cannot be seen here")
    except RuntimeError:
        pass
    f = av.NumericalFunction("nogpu", lambda x: x.exp(), (av.Arg(2),), device="CUDA")
    with pytest.raises(RuntimeError, match="CUDA is unavailable"):
        f(np.zeros(2))


# ----- on a GPU -----


def gpu() -> str:
    try:
        name, _, _ = av._anvil.cuda_device(0)
    except RuntimeError as e:
        if os.environ.get("ANVIL_TEST_CUDA") == "1":  # scripts/gpu_check.sh: a GPU is expected
            raise
        pytest.skip(f"no NVIDIA GPU here: {e}")
    return name


def test_on_the_gpu_numpy_and_device_arrays_agree() -> None:
    gpu()
    f = av.NumericalFunction("pend_gpu", pendulum, (av.Arg(2), av.Arg(1)), device="CUDA")
    v = vmap(f, 4097, in_axes=(0, None))
    xs = np.random.default_rng(3).uniform(-2, 2, (4097, 2))
    u = np.array([0.25])
    want = v.eval(xs, u)
    np.testing.assert_allclose(v(xs, u), want, rtol=1e-12)
    cupy = pytest.importorskip("cupy")
    out = v(cupy.asarray(xs), cupy.asarray(u))
    assert isinstance(out, cupy.ndarray)
    np.testing.assert_allclose(out.get(), want, rtol=1e-12)
    with cupy.cuda.Stream():  # written on a stream of CuPy's own: the call orders it through DLPack
        out = v(cupy.asarray(xs) * 1.0, cupy.asarray(u))
    np.testing.assert_allclose(out.get(), want, rtol=1e-12)
    with pytest.raises(ValueError, match="expected shape"):
        v(cupy.asarray(xs[:-1]), cupy.asarray(u))
    with pytest.raises(ValueError, match="not C-contiguous"):
        v(cupy.asfortranarray(cupy.asarray(xs)), cupy.asarray(u))
    with pytest.raises(TypeError, match="float64"):
        v(cupy.asarray(xs, dtype=cupy.float32), cupy.asarray(u))
    torch = pytest.importorskip("torch")
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):  # written on another stream: the call waits for it
        tx = torch.as_tensor(xs, device="cuda") * 1.0
        out = v(tx, torch.as_tensor(u, device="cuda"))
    assert isinstance(out, torch.Tensor) and out.is_cuda
    np.testing.assert_allclose(out.cpu().numpy(), want, rtol=1e-12)
    jax = pytest.importorskip("jax")
    jax.config.update("jax_enable_x64", True)
    out = v(jax.numpy.asarray(xs), jax.numpy.asarray(u))
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-12)


def test_on_the_gpu_float32_and_a_long_rollout() -> None:
    gpu()

    def rollout(x: Any) -> Any:
        for _ in range(50):
            x = x + 0.01 * av.Tensor.stack(x[1], -x[0].sin())
        return x

    f = av.NumericalFunction("roll_gpu", rollout, (av.Arg(2, np.float32),), device="CUDA")
    v = vmap(f, 65_537)
    xs = np.random.default_rng(4).uniform(-math.pi, math.pi, (65_537, 2)).astype(np.float32)
    np.testing.assert_allclose(v(xs), v.eval(xs), rtol=1e-4, atol=1e-5)

"""Device arrays for functions on ``device="CUDA"``: arrays that speak DLPack (``__dlpack__``:
CuPy, PyTorch, JAX) or expose ``__cuda_array_interface__`` (those and Numba) go in without a
copy, and the outputs come back as arrays of the same library (CuPy's for JAX and Numba)
without a copy either. CuPy arrays of CuPy's default stream (the legacy one, which anvil's
launches use) skip DLPack: their shape, dtype, layout and device are read directly.

Also finds NVRTC where pip installs it (``pip install nvidia-cuda-nvrtc``), for the native
library, which loads it on first use."""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from typing import Any, Sequence

import numpy as np

# Streams a `__cuda_array_interface__` may name that anvil's launches (on the legacy default
# stream) already wait for: none given, the legacy default stream, the per-thread one.
_ORDERED_STREAMS = (None, 1, 2)


def nvrtc_dirs() -> list[str]:
    """The directories where pip's NVIDIA wheels put NVRTC (``nvidia-cuda-nvrtc``)."""
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    roots = spec.submodule_search_locations if spec is not None and spec.submodule_search_locations else []
    dirs = [os.path.join(root, sub) for root in roots for sub in ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib")]
    return [d for d in dirs if os.path.isdir(d) and any(n.startswith("libnvrtc.so") for n in os.listdir(d))]


def find_nvrtc() -> None:
    """Points ``$ANVIL_CUDA_LIB_DIRS`` at the pip wheels' NVRTC, unless it is set."""
    dirs = nvrtc_dirs()
    if dirs and not os.environ.get("ANVIL_CUDA_LIB_DIRS"):
        os.environ["ANVIL_CUDA_LIB_DIRS"] = os.pathsep.join(dirs)


# DLPack's device types of GPU memory (kDLCUDA, kDLCUDAManaged), and of host memory (kDLCPU),
# which the CPU's emulation of a GPU (ANVIL_CUDA_EMULATE=1) addresses.
_DLPACK_GPU = (2, 13)
_DLPACK_CPU = 1
# DLPack's type codes: kDLInt, kDLUInt, kDLFloat, kDLBool.
_DLPACK_KINDS = {0: "i", 1: "u", 2: "f", 6: "b"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    """The head of DLPack's DLManagedTensor (a `dltensor` capsule's pointer)."""

    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


def _dlpack_device_types() -> tuple[int, ...]:
    return _DLPACK_GPU + ((_DLPACK_CPU,) if os.environ.get("ANVIL_CUDA_EMULATE") == "1" else ())


def _speaks_dlpack(a: Any) -> bool:
    if isinstance(a, np.ndarray) or not hasattr(a, "__dlpack__") or not hasattr(a, "__dlpack_device__"):
        return False
    try:
        return int(a.__dlpack_device__()[0]) in _dlpack_device_types()
    except Exception:
        return False


def is_device_array(a: Any) -> bool:
    cupy = sys.modules.get("cupy")
    if cupy is not None and isinstance(a, cupy.ndarray):
        return True
    return _speaks_dlpack(a) or (hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray))


def _check_layout(what: str, shape: Sequence[int], got_shape: Sequence[int], dtype: np.dtype[Any], got: np.dtype[Any], strides: Any) -> None:
    """Raises unless the array has `shape`, `dtype` and C-contiguous `strides` (in bytes; None: contiguous)."""
    if tuple(got_shape) != tuple(shape):
        raise ValueError(f"{what}: expected shape {tuple(shape)}, got a device array of shape {tuple(got_shape)}")
    if got != dtype:
        raise TypeError(f"{what}: expected a {dtype} device array, got {got} (convert it with .astype)")
    if strides is not None and len(shape):
        contiguous = dtype.itemsize * np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
        if tuple(int(s) for s, n in zip(strides, shape) if n > 1) != tuple(int(c) for c, n in zip(contiguous, shape) if n > 1):
            raise ValueError(f"{what}: the device array is not C-contiguous (make it so: .copy() or ascontiguousarray)")


def _dlpack_address(what: str, a: Any, shape: Sequence[int], dtype: np.dtype[Any], gpu: int) -> tuple[int, bool, Any]:
    """The address of a DLPack array, whether the call must synchronise first (the producer
    could not order its work before anvil's stream), and the capsule to keep alive."""
    wait = False
    try:
        capsule = a.__dlpack__(stream=1)  # anvil's launches run on the legacy default stream
    except (TypeError, ValueError, BufferError):
        capsule, wait = a.__dlpack__(), True
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype = ctypes.c_void_p
    get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
    tensor = _DLTensor.from_address(get_pointer(capsule, b"dltensor"))
    if tensor.device.device_type not in _dlpack_device_types() or tensor.dtype.lanes != 1:
        raise TypeError(f"{what}: a DLPack array of device type {tensor.device.device_type} is no CUDA array")
    if tensor.device.device_type in _DLPACK_GPU and tensor.device.device_id != gpu:
        raise ValueError(f"{what}: the array is on GPU {tensor.device.device_id}, the function on GPU {gpu} (device='CUDA:{gpu}')")
    kind = _DLPACK_KINDS.get(tensor.dtype.code)
    got = np.dtype("?") if kind == "b" else np.dtype(f"{kind or 'V'}{tensor.dtype.bits // 8}")
    got_shape = [tensor.shape[k] for k in range(tensor.ndim)]
    strides = None if not tensor.strides else [tensor.strides[k] * got.itemsize for k in range(tensor.ndim)]
    _check_layout(what, shape, got_shape, dtype, got, strides)
    return int(tensor.data or 0) + int(tensor.byte_offset), wait, capsule


def _address(name: str, i: int, a: Any, shape: Sequence[int], dtype: np.dtype[Any], gpu: int) -> tuple[int, bool, Any]:
    """The device address of argument ``i``, whether the call must synchronise first, and what
    to keep alive meanwhile."""
    what = f"{name}(): argument {i}"
    if _speaks_dlpack(a):
        return _dlpack_address(what, a, shape, dtype, gpu)
    cai = a.__cuda_array_interface__
    _check_layout(what, shape, cai["shape"], dtype, np.dtype(cai["typestr"]), cai.get("strides"))
    return int(cai["data"][0]), cai.get("stream") not in _ORDERED_STREAMS, None


def _output_address(out: Any) -> int:
    if isinstance(out, np.ndarray):  # the emulation's outputs are host memory
        return int(out.ctypes.data)
    return int(out.__cuda_array_interface__["data"][0])


def _empty(like: Any, shape: Sequence[int], dtype: np.dtype[Any]) -> Any:
    """A new device array of the library of ``like`` (CuPy's where that library cannot make one)."""
    module = type(like).__module__.split(".")[0]
    if _speaks_dlpack(like) and int(like.__dlpack_device__()[0]) == _DLPACK_CPU:
        return np.empty(tuple(shape), dtype=dtype)  # the emulation's device memory is the host's
    if module == "torch":
        import torch

        torch_dtype = getattr(torch, np.dtype(dtype).name if dtype != np.bool_ else "bool")
        return torch.empty(tuple(shape), dtype=torch_dtype, device=like.device)
    try:
        import cupy
    except ImportError:
        raise TypeError(
            f"anvil makes the outputs of a call on {type(like).__name__} arrays with CuPy, which is not installed: "
            "pip install cupy-cuda13x, or pass CuPy or PyTorch arrays"
        ) from None
    return cupy.empty(tuple(shape), dtype=dtype)


class Plan:
    """What a call of one function on device arrays needs, read from it once: each call would
    otherwise spend more time asking than the GPU spends computing."""

    __slots__ = ("native", "inputs", "outputs", "gpu")

    def __init__(self, native: Any, numpy_dtypes: dict[Any, Any]) -> None:
        self.native = native
        self.inputs = [(tuple(shape), np.dtype(numpy_dtypes[dtype])) for shape, dtype in native.inputs]
        self.outputs = [(tuple(shape), np.dtype(numpy_dtypes[dtype])) for shape, dtype in native.outputs]
        self.gpu = int(native.device.partition(":")[2] or 0)


def _cupy_call(plan: Plan, args: Sequence[Any], cupy: Any) -> Any:
    """The call on CuPy arrays laid out as declared, on the function's GPU, of work queued on
    the legacy default stream (anvil's), without DLPack's capsules; ``None`` where any of that
    is not so (the general path then orders the streams, or says what is wrong)."""
    if cupy.cuda.get_current_stream().ptr != 0:
        return None
    addresses = []
    for a, (shape, dtype) in zip(args, plan.inputs):
        if a.shape != shape or a.dtype != dtype or not a.flags.c_contiguous or a.device.id != plan.gpu:
            return None
        addresses.append(a.data.ptr)
    outputs = [cupy.empty(shape, dtype=dtype) for shape, dtype in plan.outputs]
    plan.native.call_device(addresses + [o.data.ptr for o in outputs], False)
    return outputs[0] if len(outputs) == 1 else tuple(outputs)


def call(plan: Plan, args: Sequence[Any]) -> Any:
    """Runs ``plan.native`` (a function on the CUDA device) on device arrays ``args``."""
    native, specs, gpu = plan.native, plan.inputs, plan.gpu
    if len(args) != len(specs):
        raise TypeError(f"{native.name}() takes {len(specs)} arguments but {len(args)} were given")
    cupy = sys.modules.get("cupy")
    if cupy is not None and all(isinstance(a, cupy.ndarray) for a in args):
        done = _cupy_call(plan, args, cupy)
        if done is not None:
            return done
    addresses, synchronize, producer, keep = [], False, None, []
    for i, (a, (shape, dtype)) in enumerate(zip(args, specs)):
        if not is_device_array(a):
            raise TypeError(
                f"{native.name}(): argument {i} is a host array ({type(a).__name__}) while others are on the GPU: "
                "pass all arguments as device arrays, or all as host arrays"
            )
        address, wait, alive = _address(native.name, i, a, shape, dtype, gpu)
        addresses.append(address)
        keep.append(alive)
        synchronize = synchronize or wait
        producer = producer if producer is not None else a
    outputs = [_empty(producer, shape, dtype) for shape, dtype in plan.outputs]
    addresses += [_output_address(o) for o in outputs]
    native.call_device(addresses, synchronize)
    del keep  # the inputs' DLPack capsules lived through the call
    if type(producer).__module__.split(".")[0] in ("jax", "jaxlib"):
        import jax

        outputs = [jax.dlpack.from_dlpack(o) for o in outputs]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)

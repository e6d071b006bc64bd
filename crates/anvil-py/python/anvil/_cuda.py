"""Device arrays for functions on ``device="CUDA"``: arrays that expose
``__cuda_array_interface__`` (CuPy, PyTorch, Numba, JAX) go in without a copy, and the outputs
come back as arrays of the same library (CuPy's for JAX and Numba) without a copy either.

Also finds NVRTC where pip installs it (``pip install nvidia-cuda-nvrtc``), for the native
library, which loads it on first use."""

from __future__ import annotations

import importlib.util
import os
from typing import Any, Sequence

import numpy as np

# Streams a `__cuda_array_interface__` may name that anvil's launches (on the legacy default
# stream) already wait for: none given, the legacy default stream, the per-thread one.
_ORDERED_STREAMS = (None, 1, 2)


def find_nvrtc() -> None:
    """Points ``$ANVIL_CUDA_LIB_DIRS`` at the pip wheels' NVRTC, unless it is set."""
    if os.environ.get("ANVIL_CUDA_LIB_DIRS"):
        return
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return
    if spec is None or not spec.submodule_search_locations:
        return
    dirs = []
    for root in spec.submodule_search_locations:
        for sub in ("cu13/lib", "cu12/lib", "cuda_nvrtc/lib"):
            path = os.path.join(root, sub)
            if os.path.isdir(path):
                dirs.append(path)
    if dirs:
        os.environ["ANVIL_CUDA_LIB_DIRS"] = os.pathsep.join(dirs)


def is_device_array(a: Any) -> bool:
    return hasattr(a, "__cuda_array_interface__") and not isinstance(a, np.ndarray)


def _address(name: str, i: int, a: Any, shape: Sequence[int], dtype: np.dtype[Any]) -> tuple[int, bool]:
    """The device address of argument ``i`` and whether the call must synchronise first."""
    cai = a.__cuda_array_interface__
    what = f"{name}(): argument {i}"
    if tuple(cai["shape"]) != tuple(shape):
        raise ValueError(f"{what}: expected shape {tuple(shape)}, got a device array of shape {tuple(cai['shape'])}")
    if np.dtype(cai["typestr"]) != dtype:
        raise TypeError(f"{what}: expected a {dtype} device array, got {np.dtype(cai['typestr'])} (convert it with .astype)")
    strides = cai.get("strides")
    if strides is not None:
        contiguous = np.empty(0, dtype).itemsize * np.cumprod((1,) + tuple(shape[:0:-1]))[::-1]
        if len(shape) and tuple(strides) != tuple(int(s) for s in contiguous):
            raise ValueError(f"{what}: the device array is not C-contiguous (make it so: .copy() or ascontiguousarray)")
    return int(cai["data"][0]), cai.get("stream") not in _ORDERED_STREAMS


def _empty(like: Any, shape: Sequence[int], dtype: np.dtype[Any]) -> Any:
    """A new device array of the library of ``like`` (CuPy's where that library cannot make one)."""
    module = type(like).__module__.split(".")[0]
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


def call(native: Any, args: Sequence[Any], numpy_dtypes: dict[Any, Any]) -> Any:
    """Runs ``native`` (a function on the CUDA device) on device arrays ``args``."""
    specs = native.inputs
    if len(args) != len(specs):
        raise TypeError(f"{native.name}() takes {len(specs)} arguments but {len(args)} were given")
    addresses, synchronize, producer = [], False, None
    for i, (a, (shape, dtype)) in enumerate(zip(args, specs)):
        if not is_device_array(a):
            raise TypeError(
                f"{native.name}(): argument {i} is a host array ({type(a).__name__}) while others are on the GPU: "
                "pass all arguments as device arrays, or all as host arrays"
            )
        address, wait = _address(native.name, i, a, shape, np.dtype(numpy_dtypes[dtype]))
        addresses.append(address)
        synchronize = synchronize or wait
        producer = producer if producer is not None else a
    outputs = [_empty(producer, shape, np.dtype(numpy_dtypes[dtype])) for shape, dtype in native.outputs]
    addresses += [int(o.__cuda_array_interface__["data"][0]) for o in outputs]
    native.call_device(addresses, synchronize)
    if type(producer).__module__.split(".")[0] in ("jax", "jaxlib"):
        import jax

        outputs = [jax.dlpack.from_dlpack(o) for o in outputs]
    return outputs[0] if len(outputs) == 1 else tuple(outputs)

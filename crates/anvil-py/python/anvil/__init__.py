"""anvil: write a function with tensor operations, trace it into a graph, differentiate it,
and get fast, allocation-free native code -- a callable (JIT) or C++ files (AOT).

    import anvil as av
    import numpy as np

    fn = av.NumericalFunction("add", lambda x, y: x + y, (av.Arg(3), av.Arg(3)))
    fn(np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0]))  # array([5., 7., 9.])
    av.generate_module("my_module", [fn])                      # my_module.hpp / .cpp
"""

from __future__ import annotations

import operator
import os
import re
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar, Union, overload

import numpy as np

from . import _anvil, _cuda
from ._anvil import CodegenIntConstant, DType, Tensor

_cuda.find_nvrtc()

__all__ = [
    "Arg",
    "CodegenIntConstant",
    "DType",
    "NumericalFunction",
    "SparseNumericalFunction",
    "Tensor",
    "dtypes",
    "generate_module",
    "numerical_function",
    "sparse_numerical_function",
    "dvmap",
    "svmap",
    "vmap",
]


class dtypes:
    """Element types, named as in tinygrad (``float`` is float32, ``double`` float64)."""

    float64 = DType.float64
    double = DType.float64
    float32 = DType.float32
    float = DType.float32
    int64 = DType.int64
    long = DType.int64
    int32 = DType.int32
    int = DType.int32
    bool = DType.bool


_NUMPY = {
    DType.float64: np.float64,
    DType.float32: np.float32,
    DType.int64: np.int64,
    DType.int32: np.int32,
    DType.bool: np.bool_,
}

_SUPPORTED_DEVICES = ("CPU", "CUDA")


def _shape(shape: int | Sequence[int]) -> tuple[int, ...]:
    return (shape,) if isinstance(shape, int) else tuple(int(n) for n in shape)


def _extent(n: Any) -> int:
    """An extent: a non-negative integer (``int``, ``np.int64``, ...; not a bool, float or str)."""
    if isinstance(n, (bool, np.bool_)):
        raise TypeError(f"Arg: extents must be integers, got the bool {n!r}")
    try:
        value = operator.index(n)
    except TypeError:
        raise TypeError(f"Arg: extents must be integers, got {n!r} ({type(n).__name__})") from None
    if value < 0:
        raise ValueError(f"Arg: extents must be non-negative, got {value}")
    return value


def _checked_shape(shape: Any) -> int | tuple[int, ...]:
    """``shape`` as an int (1-D) or a tuple of ints, or a clear error."""
    if isinstance(shape, (str, bytes)):
        raise TypeError(f"Arg: a shape is an int or a tuple of ints, got the string {shape!r}")
    if isinstance(shape, (bool, np.bool_)):
        return _extent(shape)  # raises, naming the bool
    try:
        return _extent(operator.index(shape))  # int, np.int64, a 0-d integer array
    except TypeError:
        pass
    try:
        items = list(shape)
    except TypeError:
        raise TypeError(f"Arg: a shape is an int or a tuple of ints, got {shape!r} ({type(shape).__name__})") from None
    return tuple(_extent(n) for n in items)


DTypeLike = Union[DType, str, "np.dtype[Any]", "type[Any]"]


@dataclass(frozen=True)
class Arg:
    """Specification of a NumericalFunction input: shape and dtype.

    Args:
      shape: an int for 1-D (``Arg(0)`` is a zero-length input), a tuple otherwise.
      dtype: element type (default float64): an ``anvil.dtypes`` member, a numpy dtype or
        its name.
    """

    shape: int | tuple[int, ...]
    dtype: DTypeLike = dtypes.float64

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", _checked_shape(self.shape))
        object.__setattr__(self, "dtype", _anvil.as_dtype(self.dtype))

    @property
    def ndim(self) -> int:
        return len(_shape(self.shape))


I = TypeVar("I", bound=tuple)
R = TypeVar("R", bound=Union[Tensor, tuple])
FloatArray = Any


class NumericalFunction(Generic[I, R]):
    """A traced numerical function: called with numpy arrays it runs JIT-compiled native
    code; ``generate_module`` writes it as standalone C++.

    The function is traced on first use (call, ``outputs``, ``header_code``, ...) by calling
    ``fn`` on symbolic Tensors.

    Args:
      name: a valid C++ identifier, unique within a module.
      fn: the Python function, taking Tensors and returning a Tensor or a tuple of Tensors.
      inputs: tuple of ``Arg`` specs.
      device: where it runs: "CPU" (the default: C++ compiled by the system compiler) or
        "CUDA" (an NVIDIA GPU: CUDA compiled by NVRTC; "CUDA:1" for the second GPU). On "CUDA", a vmapped function runs one
        GPU thread per batch item; it takes numpy arrays (copied to the GPU and back) or
        device arrays (CuPy, PyTorch, JAX: in place, results on the GPU). Derived functions
        (``anvil.ad``, ``anvil.transform``) run on the device of the function they derive.
    """

    _name: str

    # fmt: off
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg], Tensor]", name: str, fn: Callable[[Tensor], Tensor], inputs: tuple[Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg], Tensor]", name: str, fn: Callable[[Tensor, Tensor], Tensor], inputs: tuple[Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg, Arg], Tensor]", name: str, fn: Callable[[Tensor, Tensor, Tensor], Tensor], inputs: tuple[Arg, Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg], Tensor]", name: str, fn: Callable[[Tensor, Tensor, Tensor, Tensor], Tensor], inputs: tuple[Arg, Arg, Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg], tuple[Tensor, Tensor]]", name: str, fn: Callable[[Tensor], tuple[Tensor, Tensor]], inputs: tuple[Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg], tuple[Tensor, Tensor]]", name: str, fn: Callable[[Tensor, Tensor], tuple[Tensor, Tensor]], inputs: tuple[Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg, Arg], tuple[Tensor, Tensor]]", name: str, fn: Callable[[Tensor, Tensor, Tensor], tuple[Tensor, Tensor]], inputs: tuple[Arg, Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg], tuple[Tensor, Tensor]]", name: str, fn: Callable[[Tensor, Tensor, Tensor, Tensor], tuple[Tensor, Tensor]], inputs: tuple[Arg, Arg, Arg, Arg], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg, Arg, *tuple[Arg, ...]], Any]", name: str, fn: Callable[..., Any], inputs: tuple[Arg, Arg, Arg, Arg, Arg, *tuple[Arg, ...]], /, device: str = "CPU") -> None: ...
    @overload
    def __init__(self: "NumericalFunction[tuple[Arg, ...], Any]", name: str, fn: Callable[..., Any], inputs: tuple[Arg, ...], /, device: str = "CPU") -> None: ...
    # fmt: on
    def __init__(self, name: str, fn: Callable[..., Any], inputs: tuple[Arg, ...], /, device: str = "CPU") -> None:
        if device not in _SUPPORTED_DEVICES and not re.fullmatch(r"CUDA:\d+", device):
            raise ValueError(
                f"unsupported device {device!r}: anvil runs on {_SUPPORTED_DEVICES} or 'CUDA:<n>' for the n-th GPU "
                "(METAL is not implemented)"
            )
        if isinstance(inputs, Arg):
            inputs = (inputs,)
        if not all(isinstance(a, Arg) for a in inputs):
            raise TypeError(f"inputs of `{name}` must be a tuple of anvil.Arg, got {inputs!r}")
        self._native_fn: Any = None
        self.name = name
        self.fn = fn
        self.inputs = tuple(inputs)
        self.device = device

    @classmethod
    def _from_native(cls, native: Any) -> "NumericalFunction[Any, Any]":
        self = cls.__new__(cls)
        self._native_fn = native
        self._name = native.name
        self.fn = None
        self.inputs = tuple(Arg(tuple(s), d) for s, d in native.inputs)
        self.device = native.device
        return self

    @property
    def name(self) -> str:
        """The function's name: its C++ namespace. Assigning renames the function (checked
        like any name; a derived function can so take a name of its own)."""
        return self._name

    @name.setter
    def name(self, value: str) -> None:
        _anvil.check_name(value)
        if self._native_fn is not None:
            self._native_fn = self._native_fn.renamed(value)
        self._name = value

    @property
    def _native(self) -> Any:
        if self._native_fn is None:
            specs = [(_shape(a.shape), a.dtype) for a in self.inputs]
            native = _anvil.trace(self.name, self.fn, specs)
            self._native_fn = native if self.device == "CPU" else native.with_device(self.device)
        return self._native_fn

    @property
    def is_sparse(self) -> bool:
        return False

    @property
    def outputs(self) -> tuple[Arg, ...]:
        """Output specs, from tracing."""
        return tuple(Arg(tuple(s), d) for s, d in self._native.outputs)

    @property
    def header_code(self) -> str:
        """This function's declarations in a generated ``.hpp``."""
        return self._native.header_code

    @property
    def source_code(self) -> str:
        """This function's definitions in a generated ``.cpp``."""
        return self._native.source_code

    @staticmethod
    def _results(outs: list[np.ndarray]) -> Any:
        outs = [o[()] if o.ndim == 0 else o for o in outs]
        return outs[0] if len(outs) == 1 else tuple(outs)

    # fmt: off
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg], Tensor]", a0: FloatArray, /) -> np.ndarray: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg], Tensor]", a0: FloatArray, a1: FloatArray, /) -> np.ndarray: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg, Arg], Tensor]", a0: FloatArray, a1: FloatArray, a2: FloatArray, /) -> np.ndarray: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg], Tensor]", a0: FloatArray, a1: FloatArray, a2: FloatArray, a3: FloatArray, /) -> np.ndarray: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg], tuple[Tensor, Tensor]]", a0: FloatArray, /) -> tuple[np.ndarray, np.ndarray]: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg], tuple[Tensor, Tensor]]", a0: FloatArray, a1: FloatArray, /) -> tuple[np.ndarray, np.ndarray]: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg, Arg], tuple[Tensor, Tensor]]", a0: FloatArray, a1: FloatArray, a2: FloatArray, /) -> tuple[np.ndarray, np.ndarray]: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg], tuple[Tensor, Tensor]]", a0: FloatArray, a1: FloatArray, a2: FloatArray, a3: FloatArray, /) -> tuple[np.ndarray, np.ndarray]: ...
    @overload
    def __call__(self: "NumericalFunction[tuple[Arg, Arg, Arg, Arg, Arg, *tuple[Arg, ...]], Any]", *args: FloatArray) -> Any: ...
    # fmt: on
    def __call__(self, *args: FloatArray) -> Any:
        """Runs the native code: numpy arrays in (cast to the declared dtypes, made
        contiguous), numpy arrays out (a ``np.float64`` for a scalar output, a tuple for
        several outputs). The GIL is released while the native code runs.

        Called with Tensors (inside another traced function), it is applied symbolically:
        its graph is inlined into the caller's and Tensors are returned.

        On ``device="CUDA"``, device arrays (anything with ``__cuda_array_interface__``:
        CuPy, PyTorch, JAX) are used in place and the results are device arrays of the same
        library, never copied to the host."""
        if any(_cuda.is_device_array(a) for a in args):
            if not self.device.startswith("CUDA"):
                raise TypeError(
                    f"{self.name}() runs on the {self.device}: pass host (numpy) arrays, or make the function "
                    "with device='CUDA' to call it on device arrays"
                )
            plan = self.__dict__.get("_cuda_plan")
            if plan is None or plan.native is not self._native:
                plan = self.__dict__["_cuda_plan"] = _cuda.Plan(self._native, _NUMPY)
            return _cuda.call(plan, args)
        return self._native.call_numpy(*args)

    def eval(self, *args: FloatArray) -> Any:
        """Like calling the function, but with anvil's reference interpreter."""
        return self._results(self._native.eval(list(args)))

    def __repr__(self) -> str:
        return f"NumericalFunction({self.name!r}, inputs={self.inputs!r})"

    # ----- functions that travel: pickle, copy, save/load -----
    def to_bytes(self) -> bytes:
        """The traced function in anvil's function format (graph, inputs, name, sparsity):
        what pickling, ``save`` and worker processes use. The Python source is not needed
        to load it."""
        return self._native.to_bytes()

    @staticmethod
    def from_bytes(data: bytes) -> "NumericalFunction[Any, Any]":
        """A function from ``to_bytes`` (a sparse one comes back as a SparseNumericalFunction)."""
        return _restore_function(data)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore_function, (self.to_bytes(),))

    def save(self, path: str | os.PathLike[str]) -> None:
        """Writes the function to ``path`` (as CasADi's ``Function.save``); ``load`` reads it."""
        with open(path, "wb") as f:
            f.write(self.to_bytes())

    @staticmethod
    def load(path: str | os.PathLike[str]) -> "NumericalFunction[Any, Any]":
        """Reads a function written by ``save`` (a sparse one loads as a SparseNumericalFunction)."""
        with open(path, "rb") as f:
            return _restore_function(f.read())


class SparseNumericalFunction(NumericalFunction[Any, Tensor]):
    """A function returning a sparse matrix in CSC form: the traced function computes the
    ``nnz`` non-zero values, the pattern (``indices``: row indices, ``indptr``: column
    starts) is fixed. Calling it returns a ``scipy.sparse.csc_array``; ``values(...)``
    returns the flat non-zeros.

    Args (direct construction, as the original):
      name, fn, inputs: as for NumericalFunction (fn returns the nnz values as a vector).
      shape: ``(rows, cols)``.
      nnz: number of non-zeros.
      indices: CSC row indices (length nnz).
      indptr: CSC column pointers (length cols + 1).
    """

    def __init__(self, name: str, fn: Callable[..., Any], inputs: tuple[Arg, ...], shape: tuple[int, int], nnz: int, indices: Any, indptr: Any, /, device: str = "CPU") -> None:  # type: ignore[override]
        super().__init__(name, fn, inputs, device=device)
        self._pattern = (tuple(int(n) for n in shape), int(nnz), _int_list(indices), _int_list(indptr))

    @classmethod
    def _from_native(cls, native: Any) -> "SparseNumericalFunction":  # type: ignore[override]
        self = super()._from_native(native)
        self._pattern = None
        return self  # type: ignore[return-value]

    @property
    def _native(self) -> Any:
        if self._native_fn is None:
            dense = NumericalFunction(self.name, self.fn, self.inputs)._native
            (rows, cols), nnz, indices, indptr = self._pattern
            if len(indices) != nnz:
                raise ValueError(f"sparse function `{self.name}`: nnz is {nnz} but {len(indices)} row indices are given")
            self._native_fn = _anvil.sparse_from_pattern(dense, (rows, cols), indices, indptr)
        return self._native_fn

    @property
    def is_sparse(self) -> bool:
        return True

    def _info(self) -> tuple[int, int, int, list[int], list[int], int]:
        return self._native.sparse_info()

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, cols)`` of the matrix."""
        rows, cols, *_ = self._info()
        return (rows, cols)

    @property
    def nnz(self) -> int:
        """Number of stored non-zeros."""
        return self._info()[2]

    @property
    def indices(self) -> np.ndarray:
        """CSC row indices (``innerIndices``)."""
        return np.asarray(self._info()[3], dtype=np.int64)

    @property
    def indptr(self) -> np.ndarray:
        """CSC column pointers (``outerStarts``)."""
        return np.asarray(self._info()[4], dtype=np.int64)

    @property
    def colors(self) -> int:
        """Directional derivatives per evaluation (0 for a user-given pattern)."""
        return self._info()[5]

    def values(self, *args: FloatArray) -> np.ndarray:
        """The ``nnz`` non-zero values (CSC order), through the native code."""
        return self._native.call_numpy(*args)

    def __call__(self, *args: FloatArray) -> Any:  # type: ignore[override]
        """The matrix as a ``scipy.sparse.csc_array``."""
        import scipy.sparse as sp

        return sp.csc_array((self.values(*args), self.indices, self.indptr), shape=self.shape)


def _restore_function(data: bytes) -> NumericalFunction[Any, Any]:
    native = _anvil.function_from_bytes(data)
    if native.is_sparse:
        return SparseNumericalFunction._from_native(native)
    return NumericalFunction._from_native(native)


def _int_list(values: Any) -> list[int]:
    if isinstance(values, Tensor):
        values = values.numpy()
    return [int(v) for v in np.asarray(values).reshape(-1)]


def _shapes_from(shapes: tuple[Any, ...]) -> tuple[Any, ...]:
    # ("f", 1024) and ("f", 3, 3): one shape per argument; ("f", ((3,), (2,))) and
    # ("f", (3, 3)): one tuple listing the shapes (the original's `inputs`).
    if len(shapes) == 1 and isinstance(shapes[0], (tuple, list)):
        return tuple(shapes[0])
    return shapes


def numerical_function(name: str, *shapes: Any) -> Callable[[Callable[..., Any]], NumericalFunction[Any, Any]]:
    """Decorator: ``@numerical_function("my_fn", 1024)``, ``@numerical_function("add", 3, 3)``
    or ``@numerical_function("my_fn", ((3,), (2,)))`` (float64 inputs)."""

    def decorator(fn: Callable[..., Any]) -> NumericalFunction[Any, Any]:
        return NumericalFunction(name, fn, tuple(Arg(s) for s in _shapes_from(shapes)))

    return decorator


def sparse_numerical_function(name: str, inputs: Any, shape: tuple[int, int], nnz: int, indices: Any, indptr: Any) -> Callable[[Callable[..., Any]], SparseNumericalFunction]:
    """Decorator for a SparseNumericalFunction with an explicit CSC pattern; the decorated
    function returns the ``nnz`` values as a vector."""
    args = (inputs,) if isinstance(inputs, Arg) else tuple(inputs)
    return lambda fn: SparseNumericalFunction(name, fn, args, shape, nnz, indices, indptr)


def generate_module(
    module_name: str,
    fns: Sequence[Any],
    constants: set[CodegenIntConstant] | Sequence[CodegenIntConstant] | None = None,
    verbosity: int = 0,
    directory: str | os.PathLike[str] | None = None,
) -> None:
    """Writes ``<module_name>.hpp`` and ``<module_name>.cpp``, and beside them what its solvers
    need compiled once per program: ``anvil_opti.cpp`` (PIQP-backed solvers: the solver runtime,
    compiled against PIQP and Eigen, ``anvil.opti.include_dirs()``, or replaced by
    ``anvil.opti.runtime_library()``) and ``anvil_ipm.cpp`` (interior-point solvers and SQP
    solvers with ``qp_backend="ipm"``: the interior-point method, no third-party headers).

    Args:
      module_name: base name of the files (a C++ identifier).
      fns: the functions and solvers (names unique); a solver brings the functions it calls.
      constants: CodegenIntConstants to declare besides those the functions use.
      verbosity: if >= 1, print the file names.
      directory: where to write them (created if needed); default: the current directory.
    """
    from .opti import _SQPFunction

    if isinstance(fns, (NumericalFunction, _SQPFunction, str, bytes)) or not isinstance(fns, Sequence):
        raise TypeError(f"generate_module takes a list of NumericalFunctions, got {type(fns).__name__}")
    if not fns:
        raise ValueError("generate_module needs at least one function")
    for i, f in enumerate(fns):
        if not isinstance(f, (NumericalFunction, _SQPFunction)):
            raise TypeError(
                f"generate_module: item {i} of the list is a {type(f).__name__}, not a NumericalFunction or SQP solver"
            )
    natives = [f._native for f in fns]
    out = os.fspath(directory) if directory is not None else os.getcwd()
    hpp, cpp = _anvil.generate_module(module_name, natives, list(constants or ()), out)
    if verbosity >= 1:
        print("Generating header file: " + os.path.basename(hpp))
        print("Generating source file: " + os.path.basename(cpp))


from . import ad, language, opti, transform  # noqa: E402  (the submodules need the classes above)
from .transform import dvmap, svmap, vmap  # noqa: E402

"""numpy's protocols for anvil Tensors: ``np.sin(x)``, ``np.sum(x, axis=0)``, ``x * np.float64(2)``
work on Tensors (giving Tensors); numpy functions anvil cannot express raise a TypeError
that says what to use instead. ``np.asarray`` gives the values of a constant Tensor."""

from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ._anvil import Tensor

_INSTEAD = (
    "use the Tensor's methods (x.sin(), x.sum(axis=0), Tensor.cat(...), ...) inside traced functions, "
    "or call the NumericalFunction on numpy arrays"
)


def _tensor(a: Any) -> Any:
    """An operand numpy handed over, as something Tensor arithmetic accepts."""
    if isinstance(a, np.generic):  # before float: np.float64 is a float, and would come back here
        return a.item()
    if isinstance(a, (Tensor, bool, int, float)):
        return a
    return Tensor(np.asarray(a))


def _method(name: str) -> Callable[..., Any]:
    return lambda x, *rest: getattr(_tensor_of(x), name)(*rest)


def _tensor_of(a: Any) -> Tensor:
    t = _tensor(a)
    return t if isinstance(t, Tensor) else Tensor(t)


_UFUNCS: dict[Any, Callable[..., Any]] = {
    np.add: operator.add,
    np.subtract: operator.sub,
    np.multiply: operator.mul,
    np.true_divide: operator.truediv,
    np.floor_divide: operator.floordiv,
    np.remainder: operator.mod,
    np.power: operator.pow,
    np.negative: operator.neg,
    np.positive: operator.pos,
    np.absolute: abs,
    np.fabs: abs,
    np.less: operator.lt,
    np.less_equal: operator.le,
    np.greater: operator.gt,
    np.greater_equal: operator.ge,
    np.equal: operator.eq,
    np.not_equal: operator.ne,
    np.maximum: _method("maximum"),
    np.minimum: _method("minimum"),
    np.arctan2: _method("atan2"),
    np.sqrt: _method("sqrt"),
    np.square: _method("square"),
    np.reciprocal: _method("reciprocal"),
    np.exp: _method("exp"),
    np.exp2: _method("exp2"),
    np.log: _method("log"),
    np.log2: _method("log2"),
    np.sin: _method("sin"),
    np.cos: _method("cos"),
    np.tan: _method("tan"),
    np.arcsin: _method("asin"),
    np.arccos: _method("acos"),
    np.arctan: _method("atan"),
    np.sinh: _method("sinh"),
    np.cosh: _method("cosh"),
    np.tanh: _method("tanh"),
    np.floor: _method("floor"),
    np.ceil: _method("ceil"),
    np.sign: _method("sign"),
}


def array_ufunc(ufunc: Any, method: str, inputs: tuple[Any, ...], kwargs: dict[str, Any] | None) -> Any:
    op = _UFUNCS.get(ufunc)
    if op is None or method != "__call__" or kwargs:
        extra = f".{method}" if method != "__call__" else ""
        given = f" with {sorted(kwargs)}" if kwargs else ""
        raise TypeError(f"numpy's {ufunc.__name__}{extra}{given} is not supported on anvil Tensors; {_INSTEAD}")
    return op(*(_tensor(a) for a in inputs))


def _reduction(name: str) -> Callable[..., Any]:
    def reduce(a: Any, axis: Any = None, dtype: Any = None, out: Any = None, keepdims: bool = False, **rest: Any) -> Any:
        if dtype is not None or out is not None or rest:
            raise TypeError(f"numpy's {name} on anvil Tensors takes only axis and keepdims")
        return getattr(_tensor_of(a), name)(axis, keepdim=bool(keepdims))

    return reduce


def _sequence(join: Callable[..., Any]) -> Callable[..., Any]:
    return lambda arrays, axis=0: join(*(_tensor_of(a) for a in arrays), dim=axis)


_FUNCTIONS: dict[Any, Callable[..., Any]] = {
    np.sum: _reduction("sum"),
    np.mean: _reduction("mean"),
    np.max: _reduction("max"),
    np.amax: _reduction("max"),
    np.min: _reduction("min"),
    np.amin: _reduction("min"),
    np.prod: _reduction("prod"),
    np.dot: lambda a, b: _tensor_of(a).dot(_tensor(b)),
    np.matmul: lambda a, b: _tensor_of(a) @ _tensor(b),
    np.where: lambda c, a, b: _tensor_of(c).where(_tensor(a), _tensor(b)),
    np.concatenate: _sequence(lambda first, *rest, dim: first.cat(*rest, dim=dim)),
    np.stack: _sequence(lambda *ts, dim: Tensor.stack(*ts, dim=dim)),
    np.reshape: lambda a, shape: _tensor_of(a).reshape(shape),
    np.transpose: lambda a, axes=None: _tensor_of(a).permute(*(axes if axes is not None else range(_tensor_of(a).ndim)[::-1])),
    np.clip: lambda a, lo, hi: _tensor_of(a).clip(_tensor(lo), _tensor(hi)),
    np.expand_dims: lambda a, axis: _tensor_of(a).unsqueeze(axis),
    np.squeeze: lambda a, axis=None: _tensor_of(a).squeeze(axis),
    np.flip: lambda a, axis: _tensor_of(a).flip(axis),
    np.shape: lambda a: _tensor_of(a).shape,
    np.ndim: lambda a: _tensor_of(a).ndim,
}


def array_function(func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    implementation = _FUNCTIONS.get(func)
    if implementation is None:
        raise TypeError(f"numpy's {func.__name__} is not supported on anvil Tensors; {_INSTEAD}")
    return implementation(*args, **kwargs)


def to_array(t: Tensor, dtype: Any = None, copy: Any = None) -> np.ndarray:
    """``np.asarray(t)``: the values of a Tensor that depends on no function input."""
    try:
        values = t.numpy()
    except ValueError:
        raise TypeError(f"a traced Tensor has no values to convert to a numpy array; {_INSTEAD}") from None
    return values if dtype is None else values.astype(dtype)

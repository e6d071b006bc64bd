"""Vectorising transforms, as the original's ``anvil.transform``.

- ``svmap(fn, batch_size, in_axes=0, out_axis=0)``: static vmap of a NumericalFunction, the
  batch size fixed when it is built (``vmap`` is the same).
- ``dvmap(fn, in_axes=0, out_axis=0)``: dynamic vmap of a plain Python function of Tensors;
  the batch size is read from the inputs at each call. Use it inside traced functions (on
  Tensors) or on numpy arrays.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Sequence

import numpy as np

from . import Arg, NumericalFunction, Tensor, _anvil

__all__ = ["dvmap", "svmap", "vmap"]

Axes = "int | None | Sequence[int | None]"


def _axes(in_axes: Any, count: int) -> list[int | None]:
    if isinstance(in_axes, (tuple, list)):
        if len(in_axes) != count:
            raise ValueError(f"in_axes has {len(in_axes)} entries for {count} inputs")
        return list(in_axes)
    return [in_axes] * count


def _normalize(axis: int | None, rank: int, what: str) -> int | None:
    if axis is None:
        return None
    if not -rank <= axis < rank:
        raise ValueError(f"{what}: axis {axis} is out of range for rank {rank}")
    return axis % rank


def svmap(fn: NumericalFunction[Any, Any], batch_size: int, in_axes: Any = 0, out_axis: int = 0, *, name: str | None = None) -> NumericalFunction[Any, Any]:
    """Adds a batch axis of extent ``batch_size`` to ``fn``: ``in_axes`` says where each input
    has it (one value for all inputs, or one per input; ``None`` shares an input unbatched),
    ``out_axis`` where the outputs get it."""
    if not isinstance(fn, NumericalFunction):
        raise TypeError(f"svmap needs a NumericalFunction, got {type(fn).__name__} (use dvmap for plain functions)")
    axes = []
    for a, spec in zip(_axes(in_axes, len(fn.inputs)), fn.inputs):
        rank = len(spec.shape) if isinstance(spec.shape, tuple) else 1
        axes.append(_normalize(a, rank + 1, "in_axes"))
    rank_out = min(len(o.shape) if isinstance(o.shape, tuple) else 1 for o in fn.outputs) + 1
    out = _normalize(out_axis, rank_out, "out_axis")
    assert out is not None
    return NumericalFunction._from_native(_anvil.vmap(fn._native, batch_size, axes, out, name))


vmap = svmap


def dvmap(fn: Callable[..., Tensor], in_axes: Any = 0, out_axis: int = 0) -> Callable[..., Any]:
    """``fn`` (Tensors to one Tensor) mapped over a batch axis whose extent is read from the
    inputs at each call: ``in_axes`` says where each input has it (``None``: shared).
    Called with Tensors (inside a traced function) it returns a Tensor; with arrays, an array.
    Raises ``ValueError("at least one input must have a mapped axis")`` if no input is
    mapped, and when the mapped inputs disagree on the batch size."""
    base = re.sub(r"\W", "_", getattr(fn, "__name__", "fn")).strip("_") or "fn"
    built: dict[Any, NumericalFunction[Any, Any]] = {}

    def mapped(*args: Any) -> Any:
        axes = _axes(in_axes, len(args))
        values = [a if isinstance(a, Tensor) else np.asarray(a) for a in args]
        if all(ax is None for ax in axes):
            raise ValueError("at least one input must have a mapped axis")
        specs, sizes, normalized = [], set(), []
        for v, ax in zip(values, axes):
            shape = tuple(v.shape)
            ax = _normalize(ax, len(shape), "in_axes")
            normalized.append(ax)
            if ax is not None:
                sizes.add(shape[ax])
                shape = shape[:ax] + shape[ax + 1 :]
            specs.append(Arg(shape, dtype=v.dtype))
        if len(sizes) != 1:
            raise ValueError(f"the mapped inputs have different batch sizes: {sorted(sizes)}")
        batch = sizes.pop()
        key = (tuple(specs), tuple(normalized), batch)
        if key not in built:
            per_item = NumericalFunction(f"dvmap_{base}", fn, tuple(specs))
            built[key] = svmap(per_item, batch, in_axes=normalized, out_axis=out_axis)
        return built[key](*args)

    return mapped

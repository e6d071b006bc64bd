"""Automatic differentiation of NumericalFunctions: each transform returns a new
NumericalFunction (call it, differentiate it again, or generate C++ from it).

Every transform takes ``argnum`` (the input to differentiate with respect to; ``wrt`` is an
alias) and an optional ``name`` for the result (default: ``f_grad``, ``f_jac``, ...), so that
``jacobian(f, argnum=0)`` and ``jacobian(f, argnum=1, name="f_dp")`` fit in one module.
``gradient``, ``jacobian``, ``hessian``, ``spjacobian`` and ``sphessian`` differentiate one
output: of a function with several, name it with ``output=k`` (they raise otherwise, rather
than pick one silently).

Conventions at kinks: ``abs``, ``sign``, ``floor``, ``ceil`` have derivative 0 where they
jump; ``relu'(0) = 0``; ``maximum``/``minimum``/``clip`` split ties evenly; ``max``/``min``
reductions share the derivative among tied extrema.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import NumericalFunction, SparseNumericalFunction, _anvil

__all__ = ["gradient", "hessian", "jacobian", "jvp", "spjacobian", "sphessian", "vjp"]


def _argnum(argnum: int, wrt: int | None) -> int:
    if wrt is not None and wrt != argnum and argnum != 0:
        raise TypeError(f"argnum={argnum} and wrt={wrt} disagree (wrt is an alias of argnum)")
    chosen = wrt if wrt is not None else argnum
    if isinstance(chosen, bool) or not isinstance(chosen, int):
        raise TypeError(f"argnum must be an int, got {chosen!r}")
    return chosen


def _output(output: int | None) -> int | None:
    if output is not None and (isinstance(output, bool) or not isinstance(output, int) or output < 0):
        raise TypeError(f"output must be a non-negative int (which output to differentiate), got {output!r}")
    return output


def _dense(what: str, fn: Any, argnum: int, wrt: int | None, output: int | None, name: str | None) -> Any:
    """The dense derivative ``what`` (gradient, jacobian, hessian) of ``fn``."""
    native = getattr(_anvil, what)(_function(fn, what), _argnum(argnum, wrt), _output(output), name)
    return NumericalFunction._from_native(native)


def _function(fn: Any, what: str) -> Any:
    if not isinstance(fn, NumericalFunction):
        raise TypeError(f"{what} needs a NumericalFunction, got {type(fn).__name__}")
    return fn._native


def jvp(fn: NumericalFunction[Any, Any], *, name: str | None = None) -> NumericalFunction[Any, Any]:
    """Forward mode: a function of ``(x1..xk, t1..tk)`` returning ``(y.., ydot..)``."""
    return NumericalFunction._from_native(_anvil.jvp(_function(fn, "jvp"), name))


def vjp(fn: NumericalFunction[Any, Any], *, name: str | None = None) -> NumericalFunction[Any, Any]:
    """Reverse mode: a function of ``(x1..xk, ybar1..ybarm)`` returning ``(xbar1..xbark)``."""
    return NumericalFunction._from_native(_anvil.vjp(_function(fn, "vjp"), name))


def gradient(
    fn: NumericalFunction[Any, Any],
    argnum: int = 0,
    *,
    wrt: int | None = None,
    output: int | None = None,
    name: str | None = None,
) -> NumericalFunction[Any, Any]:
    """Gradient of the (scalar) output with respect to input ``argnum`` (a VJP with
    cotangent 1); named ``f"{fn.name}_grad"`` unless ``name`` is given. ``output``: which
    output, for a function with several."""
    return _dense("gradient", fn, argnum, wrt, output, name)


def jacobian(
    fn: NumericalFunction[Any, Any],
    argnum: int = 0,
    *,
    wrt: int | None = None,
    output: int | None = None,
    name: str | None = None,
) -> NumericalFunction[Any, Any]:
    """Dense Jacobian of the output with respect to input ``argnum``, ``(m, n)`` over the
    flattened output and input. ``output``: which output, for a function with several.

    >>> import anvil as av
    >>> f = av.NumericalFunction("f", lambda x: (x.sin(), x * x), (av.Arg(2),))
    >>> jacobian(f, output=1)(np.array([1.0, 2.0]))
    array([[2., 0.],
           [0., 4.]])
    """
    return _dense("jacobian", fn, argnum, wrt, output, name)


def hessian(
    fn: NumericalFunction[Any, Any],
    argnum: int = 0,
    *,
    wrt: int | None = None,
    output: int | None = None,
    name: str | None = None,
) -> NumericalFunction[Any, Any]:
    """Dense Hessian of the (scalar) output (forward over reverse); ``output``: which output,
    for a function with several."""
    return _dense("hessian", fn, argnum, wrt, output, name)


def spjacobian(
    fn: NumericalFunction[Any, Any],
    argnum: int = 0,
    unroll: bool = False,
    sep_uncompression: bool = True,
    symmetric: bool = False,
    *,
    wrt: int | None = None,
    output: int | None = None,
    name: str | None = None,
) -> SparseNumericalFunction:
    """Sparse Jacobian: structural sparsity, a colouring, one batched directional derivative
    per colour. Calling it returns a ``scipy.sparse.csc_array``. ``output``: which output,
    for a function with several.

    ``symmetric=True`` (for Jacobians known to be symmetric, such as a gradient's) uses star
    colouring, which needs fewer colours, and returns both triangles. ``unroll`` and
    ``sep_uncompression`` are the original's code-layout hints; anvil evaluates all colours
    in one batched graph and its scheduler places the gather of the non-zeros, so they are
    accepted (for code written for the original) and change neither values nor code."""
    for flag, value in (("unroll", unroll), ("sep_uncompression", sep_uncompression), ("symmetric", symmetric)):
        if not isinstance(value, (bool, int)):
            raise TypeError(f"{flag} must be a bool, got {value!r}")
    native = _anvil.spjacobian(_function(fn, "spjacobian"), _argnum(argnum, wrt), bool(symmetric), _output(output), name)
    return SparseNumericalFunction._from_native(native)


def sphessian(
    fn: NumericalFunction[Any, Any],
    argnum: int = 0,
    *,
    wrt: int | None = None,
    output: int | None = None,
    name: str | None = None,
) -> SparseNumericalFunction:
    """Sparse Hessian, upper triangle (star colouring); ``output``: which output, for a
    function with several."""
    native = _anvil.sphessian(_function(fn, "sphessian"), _argnum(argnum, wrt), _output(output), name)
    return SparseNumericalFunction._from_native(native)

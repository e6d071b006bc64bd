"""Automatic differentiation of NumericalFunctions: each transform returns a new
NumericalFunction (call it, differentiate it again, or generate C++ from it).

Conventions at kinks: ``abs``, ``sign``, ``floor``, ``ceil`` have derivative 0 where they
jump; ``relu'(0) = 0``; ``maximum``/``minimum``/``clip`` split ties evenly; ``max``/``min``
reductions share the derivative among tied extrema.
"""

from __future__ import annotations

from typing import Any

from . import NumericalFunction, SparseNumericalFunction, _anvil

__all__ = ["gradient", "hessian", "jacobian", "jvp", "spjacobian", "sphessian", "vjp"]


def jvp(fn: NumericalFunction[Any, Any]) -> NumericalFunction[Any, Any]:
    """Forward mode: a function of ``(x1..xk, t1..tk)`` returning ``(y.., ydot..)``."""
    return NumericalFunction._from_native(_anvil.jvp(fn._native))


def vjp(fn: NumericalFunction[Any, Any]) -> NumericalFunction[Any, Any]:
    """Reverse mode: a function of ``(x1..xk, ybar1..ybarm)`` returning ``(xbar1..xbark)``."""
    return NumericalFunction._from_native(_anvil.vjp(fn._native))


def gradient(fn: NumericalFunction[Any, Any], wrt: int = 0) -> NumericalFunction[Any, Any]:
    """Gradient of the (scalar) first output with respect to input ``wrt``."""
    return NumericalFunction._from_native(_anvil.gradient(fn._native, wrt))


def jacobian(fn: NumericalFunction[Any, Any], wrt: int = 0) -> NumericalFunction[Any, Any]:
    """Dense Jacobian of the first output with respect to input ``wrt``, ``(m, n)`` over
    the flattened output and input."""
    return NumericalFunction._from_native(_anvil.jacobian(fn._native, wrt))


def hessian(fn: NumericalFunction[Any, Any], wrt: int = 0) -> NumericalFunction[Any, Any]:
    """Dense Hessian of the (scalar) first output (forward over reverse)."""
    return NumericalFunction._from_native(_anvil.hessian(fn._native, wrt))


def spjacobian(fn: NumericalFunction[Any, Any], wrt: int = 0) -> SparseNumericalFunction:
    """Sparse Jacobian: structural sparsity, column colouring, one batched directional
    derivative per colour. Calling it returns a ``scipy.sparse.csc_array``."""
    return SparseNumericalFunction._from_native(_anvil.spjacobian(fn._native, wrt))


def sphessian(fn: NumericalFunction[Any, Any], wrt: int = 0) -> SparseNumericalFunction:
    """Sparse Hessian, upper triangle (star colouring)."""
    return SparseNumericalFunction._from_native(_anvil.sphessian(fn._native, wrt))

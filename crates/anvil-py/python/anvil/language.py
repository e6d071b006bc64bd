"""The tensor language functions are written in (the original's ``anvil.language``):
``Tensor`` with tinygrad's method names, ``dtypes``, and the specs of function inputs.
Math is written as methods (``x.sin()``); there is no ``av.sin``."""

from . import Arg, CodegenIntConstant, DType, Tensor, dtypes

__all__ = ["Arg", "CodegenIntConstant", "DType", "Tensor", "dtypes"]

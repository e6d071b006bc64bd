"""anvil from Python in one page: trace, call through the JIT, differentiate, write C++.

Run with scripts/demo.sh (or, with the package installed, `python examples/quickstart.py`).
"""

import os
import tempfile

import numpy as np

import anvil as av
from anvil import ad


@av.numerical_function("energy", 1024)
def energy(x: av.Tensor) -> av.Tensor:
    return (0.5 * x.square() + x.sin()).sum()


x = np.linspace(0.0, 1.0, 1024)
print("energy(x)             =", energy(x))

A = av.Tensor([[1.0, 2.0], [3.0, 4.0]])  # a captured constant
affine = av.NumericalFunction("affine", lambda v: A @ v + 1.0, (av.Arg(2),))
print("affine([1, 1])        =", affine(np.array([1.0, 1.0])))


def residual(v):
    p = v.pad(((1, 1),))
    return p[:-2] - 2.0 * v + p[2:] + 1e-4 * v.exp()


r = av.NumericalFunction("residual", residual, (av.Arg(100),))
jac = ad.spjacobian(r)  # sparse Jacobian by graph colouring
J = jac(np.zeros(100))  # a scipy.sparse.csc_array
print(f"sparse Jacobian       : {J.shape}, nnz = {jac.nnz}, {jac.colors} colours")
print("gradient of energy    :", ad.gradient(energy)(x)[:3], "...")

out = tempfile.mkdtemp(prefix="anvil_quickstart_py_")
os.chdir(out)
av.generate_module("quickstart_py", [energy, affine, jac], verbosity=1)
print("written into          :", out)

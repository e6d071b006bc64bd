"""The package's typing: pyright (basedpyright) infers arity and single-vs-tuple returns
from the NumericalFunction overloads."""

import pathlib
import shutil
import subprocess
import sys

import pytest

SNIPPET = '''
import numpy as np
import anvil as av

one = av.NumericalFunction("one", lambda x: x + 1.0, (av.Arg(3),))
two = av.NumericalFunction("two", lambda x, y: (x + y, x * y), (av.Arg(3), av.Arg(3)))
a = one(np.zeros(3))
b = two(np.zeros(3), np.zeros(3))
reveal_type(a)
reveal_type(b)
one(np.zeros(3), np.zeros(3))
five = av.NumericalFunction("five", lambda a, b, c, d, e: a + b + c + d + e, (av.Arg(1), av.Arg(1), av.Arg(1), av.Arg(1), av.Arg(1)))
five(*[np.zeros(1)] * 5)
'''


def checker():
    exe = shutil.which("basedpyright") or shutil.which("pyright")
    if exe is None:
        candidate = pathlib.Path(sys.executable).parent / "basedpyright"
        exe = str(candidate) if candidate.exists() else None
    return exe


def test_pyright_infers_arity_and_return_types(tmp_path):
    exe = checker()
    if exe is None:
        pytest.fail("basedpyright is not installed: run scripts/setup.sh")
    src = tmp_path / "snippet.py"
    src.write_text(SNIPPET)
    out = subprocess.run([exe, "--pythonpath", sys.executable, str(src)], capture_output=True, text=True).stdout
    assert 'Type of "a" is "ndarray' in out, out
    assert 'Type of "b" is "tuple[ndarray' in out, out
    # Calling a one-input function with two arguments is a type error (line 11), and
    # nothing else is.
    errors = [line for line in out.splitlines() if " - error" in line]
    assert len(errors) == 1 and "snippet.py:11:" in errors[0], out

"""Names that would break the generated C++ are rejected when defined; codegen constants
are exact (Python's floor division included) or raise."""

import subprocess

import pytest

import anvil as av


@pytest.mark.parametrize("name", ["sin", "malloc", "free", "exit", "abort", "system", "abs", "memcpy", "size_t",
                                  "int64_t", "NULL", "SIZE_MAX", "RAND_MAX", "powf", "ANVIL_X", "Buffer", "y0",
                                  "_hidden", "a__b", "f" * 220])
def test_names_that_break_the_module_are_rejected(name):
    with pytest.raises(ValueError, match="invalid name"):
        av.NumericalFunction(name, lambda x: x * 2.0, (av.Arg(1),)).outputs
    with pytest.raises(ValueError, match="invalid name"):
        av.CodegenIntConstant(name, 1)


def test_constant_arithmetic_raises_instead_of_wrapping():
    n = av.CodegenIntConstant("N", 3)
    with pytest.raises(ZeroDivisionError):
        n // 0
    with pytest.raises(OverflowError, match="does not fit `int`"):
        n * 2**40
    with pytest.raises(OverflowError):
        av.CodegenIntConstant("BIG", 2**40)
    assert (av.CodegenIntConstant("BIG", 2**40, "int64_t") * 4).value == 2**42
    with pytest.raises(ValueError, match="in terms of itself"):
        av.CodegenIntConstant.from_expr("N", n + 1)


def test_floor_division_matches_python_in_value_and_in_cpp(in_tmp_dir):
    a = av.CodegenIntConstant("A", -7)
    q = av.CodegenIntConstant.from_expr("Q", a // 2)
    assert q.value == -7 // 2 == -4
    f = av.NumericalFunction("keep", lambda x: x * 1.0, (av.Arg(1),))
    av.generate_module("consts", [f], constants=[q])
    (in_tmp_dir / "check.cpp").write_text('#include "consts.hpp"\nstatic_assert(Q == -4, "floor");\n')
    done = subprocess.run(["g++", "-std=c++17", "-fsyntax-only", "check.cpp"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_two_constants_of_one_name_cannot_be_declared(in_tmp_dir):
    f = av.NumericalFunction("keep2", lambda x: x * 1.0, (av.Arg(1),))
    with pytest.raises(ValueError, match="two different constants are named `N`"):
        av.generate_module("two", [f], constants=[av.CodegenIntConstant("N", 1), av.CodegenIntConstant("N", 2)])

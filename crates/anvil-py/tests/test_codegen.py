"""Python and Rust generate the same C++ for the same functions."""

import pathlib
import subprocess

import numpy as np

import anvil as av

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_generated_files_equal_rusts(in_tmp_dir):
    rust_dir = in_tmp_dir / "rust"
    subprocess.run(
        ["cargo", "run", "--release", "--quiet", "--example", "reference_module", "--", str(rust_dir)],
        cwd=ROOT,
        check=True,
    )
    energy = av.NumericalFunction("energy", lambda x: (x.square() * 0.5 + x.sin()).sum(), (av.Arg(8),))
    a = av.Tensor([[1.0, 2.0], [3.0, 4.0]])
    affine = av.NumericalFunction("affine", lambda x: (a @ x + 1.0, x.sum()), (av.Arg(2),))

    def residual_fn(x):
        p = x.pad(((1, 1),))
        return p.shrink(((0, 6),)) - x * 2.0 + p.shrink(((2, 8),)) + x.square()

    residual = av.NumericalFunction("residual", residual_fn, (av.Arg(6),))
    jac = av.ad.spjacobian(residual)
    n = av.CodegenIntConstant("N", 3)
    nn = av.CodegenIntConstant.from_expr("NN", n * 2)
    av.generate_module("reference", [energy, affine, jac], constants=[nn])
    for name in ["reference.hpp", "reference.cpp"]:
        assert (in_tmp_dir / name).read_text() == (rust_dir / name).read_text(), name
    # And the module computes what the JIT does.
    x = np.linspace(0, 1, 6)
    np.testing.assert_allclose(jac(x).toarray(), av.ad.jacobian(residual)(x), atol=1e-12)

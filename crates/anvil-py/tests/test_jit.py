"""The JIT's environment: $CXX is honoured or rejected, compilations time out, the cache is
private. Each case runs in a fresh interpreter (the environment is read once per process)."""

import os
import stat
import subprocess
import sys

CALL = """
import numpy as np, anvil as av
f = av.NumericalFunction("jit_env", lambda x: x * 3.0, (av.Arg(2),))
try:
    print(f(np.array([1.0, 2.0])).tolist())
except Exception as e:
    print(type(e).__name__ + ": " + str(e))
"""


def run(tmp_path, **env):
    full = dict(os.environ, ANVIL_CACHE_DIR=str(tmp_path / "cache"), **env)
    done = subprocess.run([sys.executable, "-c", CALL], env=full, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_cxx_is_honoured_or_rejected(tmp_path):
    assert run(tmp_path, CXX="env g++") == "[3.0, 6.0]"
    out = run(tmp_path, CXX="false")
    assert out.startswith("RuntimeError") and "`false`" in out and "$CXX" in out, out
    out = run(tmp_path, CXX="/nonexistent/c++")
    assert out.startswith("RuntimeError") and "cannot be run" in out, out


def test_a_hanging_compiler_times_out(tmp_path):
    hang = tmp_path / "hang"
    hang.write_text('#!/bin/sh\n[ "$1" = --version ] && echo fake && exit 0\nsleep 600\n')
    hang.chmod(0o755)
    out = run(tmp_path, CXX=str(hang), ANVIL_COMPILE_TIMEOUT="1")
    assert out.startswith("TimeoutError") and "ANVIL_COMPILE_TIMEOUT" in out, out


def test_a_shared_cache_directory_gets_a_private_subdirectory(tmp_path):
    shared = tmp_path / "cache"
    shared.mkdir()
    shared.chmod(0o1777)
    assert run(tmp_path) == "[3.0, 6.0]"
    own = shared / f"anvil-{os.getuid()}"
    assert stat.S_IMODE(own.stat().st_mode) == 0o700
    assert any(p.name.endswith(".so") for p in own.iterdir())

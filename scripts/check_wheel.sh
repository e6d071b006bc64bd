#!/usr/bin/env bash
# Release check: the Python wheel alone must be enough to build and run a generated SQP
# solver (anvil.opti) on a machine with only a C++ compiler. Builds the wheel (release),
# checks that it carries PIQP's sources and licence, installs it into a fresh virtual
# environment (pulling cmeel-eigen, numpy and scipy from the package index), then, from
# outside the source tree, with $ANVIL_PIQP_DIR and $ANVIL_EIGEN_DIR unset and an empty JIT
# cache, checks that anvil.opti finds PIQP and Eigen inside that environment and solves a
# small equality-constrained problem. Exits non-zero on any failure.
#
# Slow (a release build, a package download, PIQP's template library compiled from
# scratch), so not part of scripts/test.sh. Needs scripts/setup.sh's .venv (maturin) and
# network access to the package index. Idempotent: works in a fresh temporary directory,
# removed on exit unless ANVIL_CHECK_KEEP=1. Usage: scripts/check_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

work="$(mktemp -d "${TMPDIR:-/tmp}/anvil-check-wheel.XXXXXX")"
if [ "${ANVIL_CHECK_KEEP:-0}" = 1 ]; then
  echo "check_wheel: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi

# The wheel carries this copy of PIQP (see [tool.maturin] include in pyproject.toml).
python3 scripts/fetch_piqp.py --into crates/anvil-py/python/anvil/_vendor/piqp >/dev/null

echo "check_wheel: building the wheel"
VIRTUAL_ENV="$root/.venv" "$root/.venv/bin/maturin" build --release --quiet \
  -m crates/anvil-py/Cargo.toml -o "$work/wheels"
wheel="$(ls "$work"/wheels/anvil-*.whl)"
echo "check_wheel: $(basename "$wheel") ($(du -h "$wheel" | cut -f1))"

python3 - "$wheel" <<'EOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
vendor = "anvil/_vendor/piqp/"
missing = [n for n in ("include/piqp/piqp.hpp", "src/solver.cpp", "LICENSE", ".complete") if vendor + n not in names]
if missing:
    sys.exit(f"check_wheel: the wheel lacks {', '.join(vendor + n for n in missing)}")
EOF

echo "check_wheel: installing it into a fresh virtual environment"
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel"

echo "check_wheel: solving a problem with the installed package"
cd "$work"
# -I: neither the source tree nor $PYTHONPATH nor the user's site-packages may help.
env -u ANVIL_PIQP_DIR -u ANVIL_EIGEN_DIR ANVIL_CACHE_DIR="$work/cache" "$work/venv/bin/python" -I - <<'EOF'
import os, sysconfig
from importlib.metadata import version

import numpy as np

import anvil as av
from anvil.opti import DenseProblem, DenseSQPFunction, include_dirs

site = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
for d in include_dirs():
    if not any(os.path.realpath(d).startswith(s + os.sep) for s in site):
        raise SystemExit(f"check_wheel: anvil.opti uses {d}, outside this environment's site-packages {sorted(site)}")
print("check_wheel: include dirs", include_dirs(), "; cmeel-eigen", version("cmeel-eigen"))

args = (av.Arg(2), av.Arg(0))
f = av.NumericalFunction("f", lambda x, p: (x[0] - 1.0) ** 2 + (x[1] - 2.0) ** 2, args)
g = av.NumericalFunction("g", lambda x, p: (x[0] + x[1]).reshape(1), args)
solver = DenseSQPFunction(name="demo", problem=DenseProblem(cost_fn=f, eq_constraints_fn=g, eq_rhs=1.0))
r = solver([0.0, 0.0])
print(f"check_wheel: {r.status!r}, x = {r.x}, lam_eq = {r.lam_eq}")
if not (r.success and np.allclose(r.x, [0.0, 1.0], atol=1e-6) and np.allclose(r.lam_eq, [2.0], atol=1e-6)):
    raise SystemExit("check_wheel: wrong solution (expected x = [0, 1], lam_eq = [2])")
EOF
echo "check_wheel: ok (${SECONDS} s)"

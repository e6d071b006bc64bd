#!/usr/bin/env bash
# The Python wheel alone must be enough to build and run a generated SQP solver (anvil.opti)
# on a machine with only a C++ compiler, and a fresh clone must build it as the README says
# (`pip install ./crates/anvil-py`). From a pristine clone of HEAD (no .deps/, no vendored
# PIQP: the package's build fetches PIQP's pinned sdist itself, or refuses to build), builds
# the wheel with pip, checks that it carries PIQP's sources and licence, installs it into a
# fresh virtual environment (pulling cmeel-eigen, numpy and scipy from the package index),
# then, from outside the source tree, with $ANVIL_PIQP_DIR and $ANVIL_EIGEN_DIR unset and an
# empty JIT cache, checks that anvil.opti finds PIQP and Eigen inside that environment and
# solves a small equality-constrained problem. Exits non-zero on any failure.
#
# The build is the release build as pip runs it, unoptimised (CARGO_PROFILE_RELEASE_OPT_LEVEL,
# default 0 here: what is checked is the packaging, and a build at opt-level 3 takes twice as
# long), then PIQP's runtime library from scratch: a minute or two. Needs git, python3 and network access to the package index. Builds in
# target/check-wheel (kept between runs; not target/ itself: cargo names a workspace's
# artifacts alike wherever it lies, so the clone's build script, which records its own
# paths, would serve the source tree's build) and a fresh temporary directory, removed on
# exit unless ANVIL_CHECK_KEEP=1. Uncommitted changes are not in the clone.
# Usage: scripts/check_wheel.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

work="$(mktemp -d "${TMPDIR:-/tmp}/anvil-check-wheel.XXXXXX")"
if [ "${ANVIL_CHECK_KEEP:-0}" = 1 ]; then
  echo "check_wheel: keeping $work"
else
  trap 'rm -rf "$work"' EXIT
fi

echo "check_wheel: building the wheel from a pristine clone (pip, release build)"
git clone --quiet --no-hardlinks "$root" "$work/clone"
if [ -e "$work/clone/.deps" ] || [ -e "$work/clone/crates/anvil-py/python/anvil/_vendor" ]; then
  echo "check_wheel: the clone is not pristine (is PIQP committed?)" >&2
  exit 1
fi
CARGO_PROFILE_RELEASE_OPT_LEVEL="${CARGO_PROFILE_RELEASE_OPT_LEVEL:-0}" \
  CARGO_TARGET_DIR="$root/target/check-wheel" python3 -m pip wheel --quiet --disable-pip-version-check \
  --no-deps -w "$work/wheels" "$work/clone/crates/anvil-py"
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

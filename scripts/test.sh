#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: formatting, lints, unit,
# integration, property and doc tests of the Rust crates, the API references, the wheel from
# a pristine clone (scripts/check_wheel.sh), the demo, then the Python package's tests.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each step's time on stderr, against the suite's budget (12 minutes on 2 cores).
step() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  echo "test.sh: $name took $((SECONDS - start)) s (${SECONDS} s in all)" >&2
}
step setup scripts/setup.sh
# NVRTC from its wheel in .venv (setup.sh installs it), for the CUDA tests of the Rust crate.
ANVIL_CUDA_LIB_DIRS="$(.venv/bin/python scripts/nvrtc_dir.py)"
export ANVIL_CUDA_LIB_DIRS
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets -- -D warnings
# The tests compile their generated C++ at -O1 ($ANVIL_TEST_CXXFLAGS overrides): the same code
# paths in half the compile time (the solver modules' runtime headers take 2.8 s each at -O3),
# no fast-math at either level. The tests whose subject is the optimised code (vectorised
# numerics, random graphs) pin -O3 (common::optimised); the wheel check and the demo run at
# the default -O3.
test_flags="${ANVIL_TEST_CXXFLAGS:--O1 -march=native -fno-math-errno -ffp-contract=off}"
step "Rust tests" env ANVIL_CXXFLAGS="$test_flags" cargo test --workspace
# The Python package: build it into .venv, then its tests.
# An extension module from an older build (another ABI tag) would shadow the new one.
rm -f crates/anvil-py/python/anvil/_anvil*.so
step "Python package" env VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet -m crates/anvil-py/Cargo.toml
# The API references (rustdoc and the Python package's, broken links are errors).
step docs scripts/docs.sh
# The package as a new user builds it: pip, from a pristine clone, PIQP fetched by the build.
step wheel scripts/check_wheel.sh
# The README's other command: the demo runs as documented.
step demo scripts/demo.sh
# The Python tests, a worker process per core (pytest-xdist), idle workers taking tests
# queued on busy ones: most of their time on a fresh machine is compiling generated code,
# and the JIT cache lets one build what several workers ask for (the others wait for it).
# At -O1, as the Rust tests.
step "Python tests" env ANVIL_CXXFLAGS="$test_flags" .venv/bin/python -m pytest -q -p no:cacheprovider -n auto --dist worksteal --durations=15 crates/anvil-py/tests

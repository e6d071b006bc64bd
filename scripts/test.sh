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
step "Rust tests" cargo test --workspace
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
# The Python tests, in two processes (one per core of the CI machine): most of their time on
# a fresh machine is compiling generated code, one unit at a time. The first takes the files
# that build the most solvers, the second every other test file.
tests=crates/anvil-py/tests
heavy=(test_ipm.py test_opti.py test_travel.py test_seeds.py test_original_api.py test_inputs.py test_pickle.py)
rest=()
for f in "$tests"/test_*.py; do
  [[ " ${heavy[*]} " == *" $(basename "$f") "* ]] || rest+=("$f")
done
python_start=$SECONDS
logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT
.venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$logs/a" "${heavy[@]/#/$tests/}" >"$logs/a.log" 2>&1 &
first=$!
.venv/bin/python -m pytest -q -p no:cacheprovider --basetemp="$logs/b" "${rest[@]}" >"$logs/b.log" 2>&1 &
second=$!
status=0
wait "$first" || status=1
wait "$second" || status=1
cat "$logs/a.log" "$logs/b.log"
echo "test.sh: Python tests took $((SECONDS - python_start)) s (${SECONDS} s in all)" >&2
exit "$status"

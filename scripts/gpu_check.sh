#!/usr/bin/env bash
# The GPU tests and the GPU benchmark, for a machine with an NVIDIA GPU, run from binaries
# built on a machine without one (no Rust or C++ compiler is needed where the GPU is):
#
#   scripts/gpu_check.sh build   # here: the Rust test binary into .gpu/, the Python extension in place
#   scripts/gpu_check.sh run     # there (NVIDIA driver, NVRTC, and for the benchmark CuPy and JAX)
#
# `run` prints a summary: the GPU, each part's result, and the benchmark's table.
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  local binary
  binary="$(cargo test -p anvil --test suite --no-run --message-format=json 2>/dev/null |
    .venv/bin/python -c 'import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "suite":
        print(m["executable"])')"
  mkdir -p .gpu
  cp "$binary" .gpu/suite
  strip .gpu/suite
  rm -f crates/anvil-py/python/anvil/_anvil*.so
  VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet -m crates/anvil-py/Cargo.toml
  echo "gpu_check: built .gpu/suite ($(du -h .gpu/suite | cut -f1)) and the Python extension"
}

# Each part is stopped after a time limit (seconds), so that a hang is reported, not waited on.
limit() { timeout --kill-after=10 "$@"; }

run() {
  local python="${PYTHON:-python3}" status=0 results=()
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  export ANVIL_TEST_CUDA=1 PYTHONPATH="$PWD/crates/anvil-py/python${PYTHONPATH:+:$PYTHONPATH}"
  if limit 200 .gpu/suite cuda::on_the_gpu --test-threads=1; then results+=("Rust GPU tests: passed"); else
    results+=("Rust GPU tests: FAILED"); status=1; fi
  if limit 100 "$python" -m pytest -q -p no:cacheprovider crates/anvil-py/tests/test_cuda.py -k on_the_gpu -rs; then
    results+=("Python GPU tests: passed"); else results+=("Python GPU tests: FAILED"); status=1; fi
  local bench
  if bench="$(limit 200 "$python" crates/anvil-py/benches/gpu_bench.py "$@" 2>&1)"; then results+=("benchmark: ran"); else
    results+=("benchmark: FAILED"); status=1; fi
  echo "$bench"
  echo "== gpu_check summary"
  printf '%s\n' "${results[@]}"
  return "$status"
}

case "${1:-}" in
  build) build ;;
  run) shift; run "$@" ;;
  *) echo "usage: scripts/gpu_check.sh build | run [--quick]" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Sets up a fresh machine and runs the main demo (crates/anvil/examples/quickstart.rs, then
# examples/quickstart.py).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
echo "demo: building and running the Rust quick start..." >&2
cargo run --release --example quickstart
# The same from Python.
echo "demo: building the Python package (maturin, release)..." >&2
# An extension module from an older build (another ABI tag) would shadow the new one.
rm -f crates/anvil-py/python/anvil/_anvil*.so
VIRTUAL_ENV="$PWD/.venv" .venv/bin/maturin develop --release --quiet -m crates/anvil-py/Cargo.toml
.venv/bin/python examples/quickstart.py

#!/usr/bin/env bash
# Sets up a fresh machine and runs the main demo (examples/quickstart.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo run --release --example quickstart

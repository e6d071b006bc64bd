#!/usr/bin/env bash
# Sets up a fresh machine and runs the whole test suite: formatting, lints, unit,
# integration, property and doc tests.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace

#!/usr/bin/env bash
# Installs what anvil's build, demo and tests need. Idempotent: installs only what is
# missing. Needs Debian/Ubuntu's apt-get for system packages (as root, or with sudo).
#
#   scripts/setup.sh          everything the tests need
#   scripts/setup.sh --demo   only what the demo runs (no clang, which only tests use)
set -euo pipefail
cd "$(dirname "$0")/.."
for_tests=1
[ "${1:-}" = "--demo" ] && for_tests=0
step() { echo "setup: $*" >&2; }

apt_install() {
  local sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  if ! command -v apt-get >/dev/null; then
    echo "setup: please install $* with your system's package manager" >&2
    return 1
  fi
  step "installing $* (apt-get)..."
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@"
}

if ! command -v cargo >/dev/null; then
  echo "setup: Rust is missing; install it from https://rustup.rs (stable toolchain)" >&2
  exit 1
fi

# The JIT and the AOT tests need a C++17 compiler; g++ is the reference one.
if ! command -v g++ >/dev/null; then
  apt_install g++
fi

# Generated code is also checked with clang++ (with its sanitizer runtimes).
clang_ready() {
  command -v clang++ >/dev/null &&
    echo 'int main() { return 0; }' | clang++ -fsanitize=address,undefined -x c++ - -o /dev/null 2>/dev/null
}
if [ "$for_tests" = 1 ] && ! clang_ready; then
  apt_install clang libclang-rt-dev || echo "setup: clang++ not installed; generated code is checked with g++ only" >&2
fi

# Generated SQP solvers (anvil.opti) call PIQP, a header-only QP solver over Eigen: Eigen
# from the system packages, PIQP's sources from its PyPI source distribution (pinned
# version and digest) into .deps/, where the library finds them. The Python package carries
# a copy of PIQP's (python/anvil/_vendor/piqp, put in its wheel and sdist) and gets Eigen from
# the cmeel-eigen package.
if [ ! -f /usr/include/eigen3/Eigen/Core ] && [ ! -f /usr/local/include/eigen3/Eigen/Core ]; then
  apt_install libeigen3-dev
fi
step "PIQP's sources (pinned, digest checked)..."
python3 scripts/fetch_piqp.py >/dev/null
python3 scripts/fetch_piqp.py --into crates/anvil-py/python/anvil/_vendor/piqp >/dev/null

for tool in rustfmt clippy; do
  if ! cargo "${tool/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$tool"
  fi
done

# Python: a virtual environment (.venv) with the build and test tools. The anvil package
# itself is built into it by scripts/test.sh and scripts/demo.sh (maturin develop).
step "Python tools in .venv..."
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r crates/anvil-py/requirements-dev.txt

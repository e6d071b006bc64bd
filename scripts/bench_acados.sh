#!/usr/bin/env bash
# The acados peer of the multistage benchmark (cart-pole swing-up; see
# crates/anvil-py/benches/acados/cartpole_acados.py).
#
#   bash scripts/bench_acados.sh [--N 50] [--repeats 20] [--rti-steps 100]
#
# Makes (once) a Python 3.12 venv in .bench/acados-venv with the PyPI wheel comma-deps-acados
# (acados + HPIPM + BLASFEO + the acados_template Python interface + the tera renderer
# binary t_renderer), casadi and numpy; points acados at the wheel's install/ folder and runs
# the benchmark. The last line on stdout is one JSON object; everything else goes to stderr.
# Where acados cannot run, that line is {"ok": false, "error": "..."} and the exit status 1.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BENCH="$ROOT/.bench"
VENV="$BENCH/acados-venv"
CASADI_VERSION="${CASADI_VERSION:-3.8.2}"

fail() {
    # one JSON line on stdout saying why, for the caller that parses it
    python3 -c 'import json,sys; print(json.dumps({"ok": False, "peer": "acados", "error": sys.argv[1]}))' "$1" 2>/dev/null \
        || printf '{"ok": false, "peer": "acados", "error": "%s"}\n' "$1"
    exit 1
}

find_python312() {
    local c
    for c in "${PYTHON312:-}" python3.12 "$(pyenv root 2>/dev/null)/versions/3.12"*/bin/python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12; do
        [ -n "$c" ] || continue
        if "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
            command -v "$c" 2>/dev/null || echo "$c"
            return 0
        fi
    done
    return 1
}

mkdir -p "$BENCH"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import acados, casadi, numpy' >/dev/null 2>&1; then
    PY312="$(find_python312)" || fail "no CPython 3.12 found (the comma-deps-acados wheel requires it; set PYTHON312)"
    echo "bench_acados: making $VENV with $PY312" >&2
    rm -rf "$VENV"
    "$PY312" -m venv "$VENV" >&2 || fail "python3.12 -m venv failed"
    "$VENV/bin/python" -m pip install -q --upgrade pip >&2 || true
    # The wheel vendors a slimmed casadi 3.7 in site-packages/casadi; installing casadi after it
    # (in its own step) overwrites that with the full casadi, which acados' code generation uses.
    "$VENV/bin/python" -m pip install -q comma-deps-acados numpy >&2 || fail "pip install comma-deps-acados failed"
    "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "casadi==$CASADI_VERSION" >&2 \
        || fail "pip install casadi==$CASADI_VERSION failed"
fi

ACADOS_DIR="$("$VENV/bin/python" -c 'import acados, os; print(os.path.dirname(acados.__file__))' 2>/dev/null)" \
    || fail "the acados package does not import in $VENV"
"$VENV/bin/python" -c 'import acados; acados.smoketest()' >&2 || fail "acados.smoketest() failed (see stderr)"

# acados_template reads these: ACADOS_SOURCE_DIR for include/, lib/ and bin/t_renderer (the
# wheel's install/ folder has exactly that layout), ACADOS_PYTHON_INTERFACE_PATH for the
# templates and layout json (the wheel keeps them in acados/acados_template, not under
# install/interfaces/). The generated solver library links libacados, libhpipm and libblasfeo
# without an rpath: LD_LIBRARY_PATH.
export ACADOS_SOURCE_DIR="$ACADOS_DIR/install"
export ACADOS_PYTHON_INTERFACE_PATH="$ACADOS_DIR/acados_template"
export TERA_PATH="$ACADOS_DIR/install/bin/t_renderer"
export LD_LIBRARY_PATH="$ACADOS_DIR/install/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

cd "$ROOT"
exec "$VENV/bin/python" "$ROOT/crates/anvil-py/benches/acados/cartpole_acados.py" --workdir "$BENCH/acados" "$@"

#!/usr/bin/env bash
# Builds the API references: the rustdoc of the anvil crate (target/doc/anvil/index.html)
# and the Python package's (target/pydoc/anvil.html, with pdoc). Needs the set-up's .venv
# with the package built into it (scripts/demo.sh or scripts/test.sh do both). Broken links
# in either are errors.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "docs: rustdoc..." >&2
RUSTDOCFLAGS="-D warnings" cargo doc --quiet --no-deps -p anvil
echo "docs: the Python API reference (pdoc)..." >&2
rm -rf target/pydoc
.venv/bin/python -m pdoc -o target/pydoc anvil anvil.ad anvil.opti anvil.transform anvil.language
test -f target/doc/anvil/index.html && test -f target/pydoc/anvil.html
echo "docs: target/doc/anvil/index.html, target/pydoc/anvil.html" >&2

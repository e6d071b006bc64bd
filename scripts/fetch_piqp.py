#!/usr/bin/env python3
"""Fetches PIQP's C++ sources (the QP solver anvil's generated SQP solvers call).

PIQP is header-only C++ over Eigen; anvil needs its `include/` directory (and `src/`, to
build its template-instantiation library once per compiler, which makes every solver
compile several times faster). They come from PIQP's source distribution on PyPI, pinned
by version and SHA-256 digest, and are unpacked (with PIQP's licence) into

    DEST/piqp-<version>/{include,src,LICENSE}

DEST defaults to `.deps` next to this script's directory. Idempotent: an unpacked copy with
a matching stamp is left alone. Offline: set ANVIL_PIQP_SDIST to the path of the sdist
(`piqp-<version>.tar.gz`, e.g. from `pip download piqp==<version> --no-binary piqp --no-deps`);
its digest is checked all the same. ANVIL_PYPI_SIMPLE names another package index
(default https://pypi.org/simple). Standard library only.

The Python package carries a copy in its wheel and sdist: `--into DIR` puts the files in DIR
itself (no version directory), copied from the unpacked copy in `.deps` (fetched first if
need be); `scripts/setup.sh` does this for `crates/anvil-py/python/anvil/_vendor/piqp`.

Usage: fetch_piqp.py [DEST]         prints the unpacked directory
       fetch_piqp.py --into DIR     prints DIR
"""

import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import urllib.request
from pathlib import Path

VERSION = "0.7.0"
SHA256 = "e4f573a435f8609f2c5e14352b44307ce4dd643ce1874ab23f68d7d4105b54a3"
# What anvil needs from the sdist (paths under its top directory).
WANTED = ("include/", "src/", "LICENSE")


def sdist_bytes() -> bytes:
    local = os.environ.get("ANVIL_PIQP_SDIST")
    if local:
        return Path(local).read_bytes()
    # The simple index (PEP 691 JSON), as pip reads it.
    index = os.environ.get("ANVIL_PYPI_SIMPLE", "https://pypi.org/simple").rstrip("/")
    request = urllib.request.Request(f"{index}/piqp/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as r:
        files = json.load(r)["files"]
    urls = [f["url"] for f in files if f["filename"] == f"piqp-{VERSION}.tar.gz"]
    if not urls:
        sys.exit(f"fetch_piqp: {index} lists no source distribution of piqp {VERSION}")
    with urllib.request.urlopen(urls[0], timeout=300) as r:
        return r.read()


def unpack(data: bytes, target: Path) -> None:
    top = f"piqp-{VERSION}/"
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staging = Path(tmp) / target.name
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar.getmembers():
                name = member.name
                if not name.startswith(top):
                    continue
                rel = name[len(top):]
                if not any(rel == w or rel.startswith(w) for w in WANTED):
                    continue
                if not (member.isfile() or member.isdir()) or ".." in Path(rel).parts:
                    continue
                dest = staging / rel
                if member.isdir():
                    dest.mkdir(parents=True, exist_ok=True)
                    continue
                dest.parent.mkdir(parents=True, exist_ok=True)
                source = tar.extractfile(member)
                assert source is not None
                dest.write_bytes(source.read())
        (staging / ".complete").write_text(SHA256 + "\n")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)


def fetch(dest: Path) -> Path:
    target = dest / f"piqp-{VERSION}"
    stamp = target / ".complete"
    if stamp.is_file() and stamp.read_text().strip() == SHA256:
        return target
    data = sdist_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != SHA256:
        sys.exit(f"fetch_piqp: the piqp {VERSION} sdist has SHA-256 {digest}, expected {SHA256}; refusing it")
    dest.mkdir(parents=True, exist_ok=True)
    unpack(data, target)
    return target


def copy_into(source: Path, target: Path) -> Path:
    """Mirrors the unpacked `source` (stamp included) into `target`, unless it already
    holds a copy with the same stamp."""
    stamp = target / ".complete"
    if stamp.is_file() and stamp.read_text() == (source / ".complete").read_text():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        staging = Path(tmp) / target.name
        # The stamp goes last, so that an interrupted copy is never taken for a complete one.
        shutil.copytree(source, staging, ignore=shutil.ignore_patterns(".complete"))
        shutil.copy2(source / ".complete", staging / ".complete")
        if target.exists():
            shutil.rmtree(target)
        staging.rename(target)
    return target


if __name__ == "__main__":
    default = Path(__file__).resolve().parent.parent / ".deps"
    args = sys.argv[1:]
    if len(args) == 2 and args[0] == "--into":
        print(copy_into(fetch(default), Path(args[1])))
    elif len(args) <= 1 and not (args and args[0].startswith("-")):
        print(fetch(Path(args[0]) if args else default))
    else:
        sys.exit(__doc__)

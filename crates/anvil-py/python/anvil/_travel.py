"""Problems and solvers that travel: anvil's object format, which pickling, ``copy``, worker
processes and ``save``/``load`` all use.

An object is written as the functions it is made of (each in anvil's function format, as
``NumericalFunction.to_bytes``) and a JSON document saying how they fit together (the
problem's kind, its bounds and sizes, the solver's name, settings and QP backend); no Python
code and no pickle. Loading it traces nothing: the functions come back as graphs, and the
solver is built from them again (its native code is found in anvil's cache when the same
machine compiled it before).

Layout (little-endian): ``b"ANVILOBJ"``, the format version (u32), the document's length
(u32) and its UTF-8 JSON, the number of functions (u32), then each function's length (u64)
and bytes.
"""

from __future__ import annotations

import json
import struct
from typing import Any, Callable

from . import CodegenIntConstant, NumericalFunction

MAGIC = b"ANVILOBJ"
VERSION = 1


class _Writer:
    """Collects the functions of a document: each is stored once, referred to by index."""

    def __init__(self) -> None:
        self.functions: list[NumericalFunction[Any, Any]] = []

    def function(self, fn: Any) -> Any:
        if fn is None:
            return None
        for i, known in enumerate(self.functions):
            if known is fn:
                return i
        self.functions.append(fn)
        return len(self.functions) - 1


def pack(kind: str, describe: Callable[[_Writer], dict[str, Any]]) -> bytes:
    """The bytes of an object of ``kind`` whose document ``describe`` writes."""
    writer = _Writer()
    document = {"kind": kind, **describe(writer)}
    header = json.dumps(document).encode()
    parts = [MAGIC, struct.pack("<II", VERSION, len(header)), header, struct.pack("<I", len(writer.functions))]
    for fn in writer.functions:
        blob = fn.to_bytes()
        parts += [struct.pack("<Q", len(blob)), blob]
    return b"".join(parts)


def unpack(data: bytes) -> tuple[dict[str, Any], list[NumericalFunction[Any, Any]]]:
    """The document and functions of ``data``, or a ValueError saying what is wrong."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        raise TypeError(f"anvil object: expected bytes, got {type(data).__name__}")
    data = bytes(data)
    if not data.startswith(MAGIC):
        raise ValueError("not an anvil object (a problem or solver written by save/to_bytes): wrong magic bytes")
    try:
        offset = len(MAGIC)
        version, length = struct.unpack_from("<II", data, offset)
        if version != VERSION:
            raise ValueError(
                f"anvil object of format version {version}; this anvil reads version {VERSION} (save it again with this version)"
            )
        offset += 8
        document = json.loads(data[offset : offset + length].decode())
        offset += length
        (count,) = struct.unpack_from("<I", data, offset)
        offset += 4
        functions = []
        for _ in range(count):
            (size,) = struct.unpack_from("<Q", data, offset)
            offset += 8
            if offset + size > len(data):
                raise ValueError("corrupted anvil object (truncated)")
            functions.append(NumericalFunction.from_bytes(data[offset : offset + size]))
            offset += size
    except (struct.error, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"corrupted anvil object ({e})") from None
    if offset != len(data):
        raise ValueError(f"corrupted anvil object ({len(data) - offset} bytes after its end)")
    if not isinstance(document, dict) or "kind" not in document:
        raise ValueError("corrupted anvil object (its document names no kind)")
    return document, functions


def function(functions: list[NumericalFunction[Any, Any]], index: Any) -> Any:
    """The function a document refers to by ``index`` (None stays None)."""
    if index is None:
        return None
    if not isinstance(index, int) or not 0 <= index < len(functions):
        raise ValueError(f"corrupted anvil object (it refers to function {index!r} of {len(functions)})")
    return functions[index]


def horizon(value: Any) -> Any:
    """``N`` as a document holds it: an int, or a plain CodegenIntConstant."""
    if isinstance(value, CodegenIntConstant):
        name, number, type_name = value.__reduce__()[1]
        return {"constant": name, "value": number, "type": type_name}
    return value


def horizon_from(value: Any) -> Any:
    if isinstance(value, dict):
        return CodegenIntConstant(value["constant"], value["value"], value["type"])
    return value

"""Fuzz target: the FPS/1 operations (slice, concat, reverse, splice, with and without
``out=``) and ``cid_sha256``, compiled vs twin. Cases are read as ``fps_cases`` lays
them out."""
from __future__ import annotations

from typing import Any

import _harness
from _harness import Mismatch, instrumented, outcome, pair, same
from fps_cases import parse

with instrumented():
    COMPILED, TWIN = pair("fps")


def _call(fps: Any, op: str, level: Any, offset: int, length: int, chunks: list[bytes],
          out: Any = None) -> Any:
    first = chunks[0] if chunks else b""
    options = {} if out is None else {"out": out}
    if op == "concat":
        return fps.concat(chunks, **options)
    if op == "reverse":
        return fps.reverse(first, level, **options)
    if op == "slice":
        return fps.slice(first, offset, length, level, **options)
    insert = chunks[1] if len(chunks) > 1 else b""
    return fps.splice(first, offset, length, insert, level, **options)


def one_input(data: bytes) -> None:
    case = parse(data)
    if case is None:
        return
    op, level, offset, length, chunks, use_out = case
    what = f"{op}(level={level!r}, offset={offset}, length={length}, chunks={chunks!r})"
    got = outcome(lambda: _call(COMPILED, *case[:5]))
    want = outcome(lambda: _call(TWIN, *case[:5]))
    same(what, got, want)
    if got[0] == "value":
        same(f"cid_sha256 of {what}", outcome(lambda: COMPILED.cid_sha256(got[1])),
             outcome(lambda: TWIN.cid_sha256(want[1])))
    if not use_out:
        return
    size = len(got[1]) if got[0] == "value" else length % 64
    buffers = (bytearray(size), bytearray(size))
    with_out = [outcome(lambda b=b, f=f: _call(f, *case[:5], out=b))
                for f, b in zip((COMPILED, TWIN), buffers)]
    same(f"{what} with out=", with_out[0], with_out[1])
    if with_out[0][0] == "value":
        if got[0] != "value" or with_out[0][1] != size or bytes(buffers[0]) != got[1] \
                or buffers[0] != buffers[1]:
            raise Mismatch(f"{what}: out= wrote {bytes(buffers[0])!r}, returned "
                           f"{with_out[0][1]!r}; without out= {got!r}")


if __name__ == "__main__":
    _harness.run(one_input)

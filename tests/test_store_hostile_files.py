"""Store files that change or lie underneath the readers (STORE.md §2, §4).

- A pack truncated while a ``Store`` has it mapped: the reads past its new end would be
  SIGBUS; they are a ``CorruptObjectError`` (detail ``truncated``) and an fsck finding,
  with the compiled readers and with the twins. (In a subprocess each: on a failure the
  signal must not take the test run with it.)
- A DEFLATE object of 256 MiB (a stream of 256 KiB): fsck holds a small buffer of it, and
  ``get`` one copy of its bytes, whatever zlib decodes it — memory follows what the
  stream really holds, never its declared length.
- A reader's own callback (its ``inflate``) releasing or re-initialising it: refused with
  ``InUseError`` by both backends (the compiled one would otherwise read freed memory).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from blake3 import blake3
from strategies_store import build_pack

from canonkit import errors
from canonkit.store import deflate
from canonkit.store.deflate import inflate

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parent.parent / "src"), os.environ.get("PYTHONPATH", "")])}

_TRUNCATE = r"""
import json, os, sys
from canonkit import errors
from canonkit.store import Store
import canonkit.store._format_py as twin

root, backend = sys.argv[1], sys.argv[2]
store = Store(root, backend=twin if backend == "py" else None)
addresses = sorted(store.addresses())
assert store.get_many(addresses)  # every page of the pack mapped and read once
pack = next(p for p in os.listdir(root + "/packs") if p.endswith(".pack"))
os.truncate(f"{root}/packs/{pack}", 4096)
out = {}
for name, call in (("get", lambda: store.get(addresses[-1])),
                   ("get_many", lambda: store.get_many(addresses)),
                   ("form", lambda: store.form(addresses[-1]))):
    try:
        call()
        out[name] = "no error"
    except errors.StoreError as exc:
        out[name] = [type(exc).__name__, exc.detail, exc.path]
report = store.fsck()
out["fsck"] = sorted({(f.code, f.path) for f in report.errors()})
print(json.dumps(out))
"""


@pytest.fixture
def packed_store(tmp_path: Path) -> str:
    from canonkit.store import Store

    store = Store.init(tmp_path / "s", durable=False)
    for i in range(200):
        store.put(os.urandom(2000) + bytes([i]), form="deflate" if i % 3 else "loose")
    store.repack(deflate="never")
    return store.root


@pytest.mark.parametrize("backend", ["c", "py"])
def test_a_pack_truncated_while_mapped_is_corrupt_not_a_signal(packed_store: str,
                                                               backend: str) -> None:
    proc = subprocess.run([sys.executable, "-c", _TRUNCATE, packed_store, backend],
                          capture_output=True, env=ENV, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr.decode()[-2000:])
    out = json.loads(proc.stdout)
    pack = next(p for p in os.listdir(f"{packed_store}/packs") if p.endswith(".pack"))
    for call in ("get", "get_many"):
        assert out[call] == ["CorruptObjectError", "truncated", f"packs/{pack}"], out
    assert out["form"] == "no error"  # the index is intact: the object is packed
    assert ["truncated", f"packs/{pack}"] in out["fsck"], out


_MEMORY = r"""
import resource, sys, zlib
from canonkit.store import Store, deflate

def peak_kib():  # this process's own high-water mark (ru_maxrss may be the parent's)
    try:
        with open("/proc/self/status") as fh:
            return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:"))
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

if sys.argv[3] == "stdlib":
    deflate._ZLIB = zlib
store = Store(sys.argv[1])
before = peak_kib()
if sys.argv[2] == "get":
    assert len(store.get("blake3:" + sys.argv[4])) == 256 << 20
else:
    report = store.fsck()
    assert report.ok and report.logical_bytes == 256 << 20, report.findings
print((peak_kib() - before) // 1024)
"""


@pytest.fixture(scope="module")
def big_deflate_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    from canonkit.store import Store

    store = Store.init(tmp_path_factory.mktemp("big") / "s", durable=False)
    size = 256 << 20
    data = bytes(size)
    digest = blake3(data).hexdigest()
    content = (b"CKL1\x01" + size.to_bytes(8, "big") + zlib.compress(data, 9))
    del data
    Path(store.root, "objects", digest[:2]).mkdir()
    Path(store.root, "objects", digest[:2], digest[2:]).write_bytes(content)
    return store.root, digest


# Under AddressSanitizer (.ci/sanitize preloads it, with PYTHONMALLOC=malloc) the peak RSS
# counts the sanitizer's own allocator (redzones, quarantine, no pymalloc arenas), not what
# canonkit holds: the memory bounds are measured by the plain build's run of these tests.
_UNDER_ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


@pytest.mark.slow
@pytest.mark.skipif(_UNDER_ASAN, reason="peak RSS under ASan measures the sanitizer's "
                    "allocator; the plain build's run checks the bound")
@pytest.mark.parametrize("zlib_module", ["default", "stdlib"])
@pytest.mark.parametrize("call", ["get", "fsck"])
def test_inflating_costs_what_the_stream_holds(big_deflate_store: tuple[str, str],
                                               call: str, zlib_module: str) -> None:
    root, digest = big_deflate_store
    proc = subprocess.run([sys.executable, "-c", _MEMORY, root, call, zlib_module, digest],
                          capture_output=True, text=True, env=ENV, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    grown_mib = int(proc.stdout)
    limit = 300 if call == "get" else 40  # get: one copy of 256 MiB; fsck: a small buffer
    assert grown_mib < limit, f"{call} grew the peak RSS by {grown_mib} MiB"


def test_a_stream_declaring_far_more_than_it_holds_costs_nothing() -> None:
    stream = zlib.compress(b"tiny")
    for logical in (1 << 30, (1 << 63) - 1):
        for call in (lambda: inflate(stream, logical),
                     lambda: deflate.stream(stream, logical)):
            with pytest.raises(Exception) as info:
                call()
            assert getattr(info.value, "detail", None) == "length_mismatch"


def test_streaming_checks_exactly_what_inflating_checks() -> None:
    data = bytes(range(256)) * 9000  # over SMALL: the streamed path
    stream = zlib.compress(data)
    digest = blake3(data).digest()
    assert inflate(stream, len(data), 7, digest) == data
    checked = deflate.stream(stream, len(data), 7, digest, keep=lambda first: True)
    assert checked.size == len(data) and checked.first == 0 and checked.data == data
    assert deflate.stream(stream, len(data), 7, digest).data is None
    for payload, logical, want, code in [
            (stream, len(data), b"\x00" * 32, "digest_mismatch"),
            (stream, len(data) - 1, None, "length_mismatch"),
            (stream, len(data) + 1, None, "length_mismatch"),
            (stream[:-9], len(data), None, "deflate_invalid"),
            (stream + b"x", len(data), None, "trailing_bytes")]:
        for call in (inflate, deflate.stream):
            with pytest.raises(Exception) as info:
                call(payload, logical, 7, want)
            assert info.value.detail == code  # type: ignore[attr-defined]
            assert info.value.offset >= 7  # type: ignore[attr-defined]


def _deflated_pack() -> tuple[bytes, bytes, bytes, int]:
    data = b"compressible " * 100
    pack, index, offsets = build_pack([(data, True)])
    (offset,) = offsets.values()
    return pack, index, blake3(data).digest(), offset


@pytest.mark.parametrize("what", ["release", "reinit", "release index"])
def test_a_reader_refuses_its_own_callback_pulling_it_away(store_impl: ModuleType,
                                                           what: str) -> None:
    pack_bytes, idx_bytes, digest, offset = _deflated_pack()
    pack, index = store_impl.Pack(pack_bytes), store_impl.Index(idx_bytes)
    seen: list[str] = []

    def hostile(payload: Any, logical: int, base: int, want: Any) -> bytes:
        try:
            if what == "release":
                pack.release()
            elif what == "reinit":
                pack.__init__(b"CKPK" + bytes(100))
            else:
                index.release()
        except errors.InUseError as exc:
            seen.append(str(exc))
        return inflate(payload, logical, base, want)

    if what == "release index":
        out: list[Any] = [None]
        assert pack.read_many(index, digest, out, True, hostile) == 1
    else:
        assert pack.entry(offset, digest, hostile) == b"compressible " * 100
        assert pack.check_entries([offset], digest, hostile)[0] == b"compressible " * 100
    assert seen and all("cannot be released" in m or "initialised already" in m
                        for m in seen)
    assert pack.entry(offset, digest, inflate) == b"compressible " * 100  # still whole
    with pytest.raises(errors.InUseError, match="initialised already"):
        index.__init__(idx_bytes)
    pack.release()
    index.release()

"""The compiled store readers hash inputs of ``MT_HASH_BYTES`` or more on BLAKE3's
threads: the digest is the one-thread digest (a right object reads back, a wrong one is
``digest_mismatch`` at the same offset as with the twin), and a child forked after the
threads have started still checks such a pack (on one thread: the pool is not there)."""
from __future__ import annotations

import os
import random
import signal
import sys
from pathlib import Path

import pytest
from blake3 import blake3
from conftest import backend_pair

from canonkit.errors import CorruptObjectError
from canonkit.store import Store, deflate
from canonkit.store.packwriter import encode_pack


def _big() -> bytes:
    compiled, _ = backend_pair("store")
    return random.Random(7).randbytes(compiled.MT_HASH_BYTES + 12345)


def test_a_large_entry_reads_back_and_a_wrong_digest_fails_alike() -> None:
    compiled, twin = backend_pair("store")
    data = _big()
    digest = blake3(data).digest()
    pack, _ = encode_pack([(digest, False, data, len(data))])
    for wrong in (False, True):
        want = blake3(data + b"!").digest() if wrong else digest
        outcomes = []
        for kernel in (compiled, twin):
            try:
                outcomes.append(bytes(kernel.Pack(pack).entry(16, want, deflate.inflate))
                                == data)
            except CorruptObjectError as exc:
                outcomes.append((exc.detail, exc.offset))
        assert outcomes[0] == outcomes[1] == (("digest_mismatch", 33) if wrong else True)
        assert compiled.Pack(pack).body_digest() == twin.Pack(pack).body_digest() \
            == blake3(pack[:-32]).digest()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork")
def test_a_child_forked_after_threaded_hashing_still_checks_a_large_pack(
        tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    store.put(_big())
    store.repack()
    assert store.fsck().ok  # the parent's hashing starts BLAKE3's threads
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through its exit status
        signal.alarm(60)  # a hang is a failure, never a stuck suite
        try:
            ok = Store(tmp_path / "s", durable=False).fsck().ok
        finally:
            sys.stdout.flush()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

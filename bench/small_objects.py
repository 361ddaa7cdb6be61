"""Content addresses of small records: the fixed cost of a call next to its raw floor.

    PYTHONPATH=src python bench/small_objects.py [--rounds 5] [--number 20000]

Plain script mode, as ``bench/small_messages.py``: every contender of a row is timed in
turn, ``--rounds`` times ``--number`` calls, and its minimum kept. Times are ns per call
of the thread's CPU time (``time.thread_time``: a process scheduled out between two
calls does not count; ``--wall`` uses ``time.perf_counter`` instead);
each ratio is the row's floor over the contender's time (1.00: the floor itself; the
lower, the more the call costs on top of the work it must do).

Rows (``bench/test_small_objects.py`` times the same with pytest-benchmark, groups
``small-objects:<operation>:<record>``):

- ``address_object``: ``objects.address_object(kind, fields)`` (check, envelope, encode,
  hash) for records of ``bench/small_messages.py`` (record5, rpc3, bytes32, each as the
  fields of a kind registered here) and the ``commit`` kind; its floor (``floor``) encodes
  the finished envelope map with a reused core ``cbor.Encoder`` and hashes the bytes on a
  reused ``blake3`` hasher (reset, update, digest, hex), without any schema check; the
  parts ``encode only`` and ``hash only`` split that floor.
- ``for_block``: ``Link.for_block(data)`` (dag-cbor, sha2-256) of each message's
  DAG-CBOR bytes; floor: the CID's constant prefix + ``hashlib.sha256(data).digest()``.
- ``link``: ``Link(cid_bytes)`` (the constructor that checks the CID) and
  ``cid_problem(cid_bytes)`` alone, of that message's CID; floor: ``bytes(cid_bytes)``.
"""
from __future__ import annotations

import argparse
import functools
import hashlib
import time
from collections.abc import Callable
from typing import Any

from blake3 import blake3
from small_messages import MESSAGES, message_bytes, minimums

from canonkit import cbor, objects
from canonkit.cbor import Link
from canonkit.cbor._cid import cid_problem
from canonkit.objects import Array, Bool, Bytes, Kind, Text, UInt

# the small messages that are maps of plain fields, as object kinds (post holds a link,
# which core CBOR has no form for; ints20 is a list)
KINDS: dict[str, Kind] = {
    "record5": Kind("bench-file", 1, fields={"id": UInt(), "name": Text(), "size": UInt(),
                                             "ok": Bool(), "tags": Array(Text())}),
    "rpc3": Kind("bench-rpc", 1, fields={"id": UInt(), "method": Text(),
                                         "params": Array(Text())}),
    "bytes32": Kind("bench-digest", 1, fields={"sha256": Bytes(32)}),
}
COMMIT = {"tree": bytes(range(32)), "parents": [bytes(range(1, 33))],
          "author": "Ada Lovelace <ada@example.org>", "time": 1767225600000,
          "message": "initial import\n"}
RECORDS = ("record5", "rpc3", "bytes32", "commit")
OPERATIONS = ("address_object", "for_block", "link")
# each operation's contenders, as ``contenders`` returns them
CONTENDERS = {"address_object": ("floor", "address_object", "encode only", "hash only"),
              "for_block": ("floor", "Link.for_block"),
              "link": ("floor", "Link(cid)", "cid_problem")}


@functools.cache
def _registered() -> None:
    for kind in KINDS.values():
        objects.register_kind(kind, replace=True)


def record(name: str) -> tuple[str, dict[str, Any]]:
    """(kind, fields) of an ``address_object`` row."""
    _registered()
    if name == "commit":
        return "commit", COMMIT
    return KINDS[name].name, MESSAGES[name][1]


def _block(name: str) -> bytes:
    """The DAG-CBOR block of a ``for_block``/``link`` row."""
    return message_bytes(name) if name in MESSAGES else cbor.encode(COMMIT, profile="dag-cbor")


def input_size(operation: str, name: str) -> int:
    """Bytes of the row's input: the addressed object, the block, or the CID."""
    if operation == "address_object":
        kind, fields = record(name)
        return len(cbor.encode({"t": kind, "v": 1, **fields}, profile="core"))
    block = _block(name)
    return len(block) if operation == "for_block" else len(Link.for_block(block).cid_bytes)


def contenders(operation: str, name: str) -> dict[str, Callable[[], object]]:
    """The timed calls of one row, the floor first, each checked once before it is
    returned."""
    if operation == "address_object":
        kind, fields = record(name)
        whole = {"t": kind, "v": 1, **fields}
        encode = cbor.Encoder(profile="core").encode
        data = encode(whole)
        hasher = blake3()
        address_object = objects.address_object

        def floor() -> str:
            hasher.reset()
            hasher.update(encode(whole))
            return "blake3:" + hasher.digest().hex()  # type: ignore[no-any-return]

        def hash_only() -> str:
            hasher.reset()
            hasher.update(data)
            return "blake3:" + hasher.digest().hex()  # type: ignore[no-any-return]

        runs: dict[str, Callable[[], object]] = {
            "floor": floor,
            "address_object": lambda: address_object(kind, fields),
            "encode only": lambda: encode(whole),
            "hash only": hash_only,
        }
        assert runs["address_object"]() == floor() == "blake3:" + blake3(data).hexdigest()
        return runs
    data = _block(name)
    cid = Link.for_block(data).cid_bytes
    if operation == "for_block":
        prefix, sha256, for_block = cid[:-32], hashlib.sha256, Link.for_block
        runs = {"floor": lambda: prefix + sha256(data).digest(),
                "Link.for_block": lambda: for_block(data)}
        assert for_block(data).cid_bytes == runs["floor"]()
        return runs
    if operation == "link":
        runs = {"floor": lambda: bytes(cid), "Link(cid)": lambda: Link(cid),
                "cid_problem": lambda: cid_problem(cid)}
        assert Link(cid).cid_bytes == cid and cid_problem(cid) is None
        return runs
    raise KeyError(operation)


def names(operation: str) -> tuple[str, ...]:
    return RECORDS if operation == "address_object" else (*MESSAGES, "commit")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--number", type=int, default=20000)
    parser.add_argument("--operations", nargs="*", default=list(OPERATIONS),
                        choices=OPERATIONS)
    parser.add_argument("--wall", action="store_true",
                        help="time with time.perf_counter, not the thread's CPU time")
    args = parser.parse_args()
    timer = time.perf_counter if args.wall else time.thread_time
    print(f"{'operation':15} {'record':8} {'contender':15} {'ns/call':>8} {'floor/it':>9}")
    for operation in args.operations:
        for name in names(operation):
            best = minimums(contenders(operation, name), args.rounds, args.number, timer)
            for contender, seconds in best.items():
                print(f"{operation:15} {name:8} {contender:15} {seconds * 1e9:8.0f} "
                      f"{best['floor'] / seconds:8.2f}x")


if __name__ == "__main__":
    main()

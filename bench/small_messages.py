"""Small DAG-CBOR messages: where the fixed cost of a call decides, not throughput.

    PYTHONPATH=src python bench/small_messages.py [--rounds 40] [--number 2000]

Plain script mode: every contender of every (operation, message) row is timed in turn,
``--rounds`` times ``--number`` calls, and its minimum kept, so a load burst hits every
contender alike. Times are CPU time of the calling thread (``time.thread_time``: time
spent waiting for a core is not counted), in ns per call; each ratio is libipld's minimum
over the contender's (above 1.00: faster than libipld). ``bench/test_small_messages.py`` times the
same contenders with pytest-benchmark (groups ``small-messages:<operation>:<message>``).

Each decoder decodes the same canonical bytes; each encoder encodes its own decoding of
them (a link is canonkit's ``Link``, libipld's and cbrrr's own CID form, cbor2's tag 42),
and every dag-cbor encoder writes the same bytes back. orjson, for scale, parses and
writes the message's DAG-JSON form.
"""
from __future__ import annotations

import argparse
import functools
import time
import timeit
from collections.abc import Callable
from typing import Any

import cbor2
import cbrrr
import libipld
import orjson

from canonkit import cbor
from canonkit.cbor import Link

PROFILE = "dag-cbor"
# a CIDv1 (dag-cbor, sha2-256) as a post's link would hold
_LINK = Link.for_block(b"\xa1dtextkhello world")

MESSAGES: dict[str, tuple[str, Any]] = {
    "record5": ("a 5-field file record (43 B)",
                {"id": 1, "name": "file-1.txt", "size": 12345, "ok": True, "tags": ["a", "b"]}),
    "post": ("an atproto-like post: text, datetime string, langs, a record embed with a "
             "link",
             {"$type": "app.bsky.feed.post",
              "text": "Deterministic CBOR, content-addressed: one encoding per value.",
              "createdAt": "2026-01-15T09:30:00.000Z",
              "langs": ["en"],
              "embed": {"$type": "app.bsky.embed.record",
                        "record": {"cid": _LINK,
                                   "uri": "at://did:plc:4fq3bnh6kaz2ltngbbzvkbuh/"
                                          "app.bsky.feed.post/3lbkq7uvzzc2x"}}}),
    "rpc3": ("a 3-field RPC frame", {"id": 7, "method": "store.get",
                                      "params": ["blake3:" + "ab" * 32]}),
    "ints20": ("a list of 20 ints of every head size",
               [0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**63 - 1, -1, -24,
                -25, -256, -257, -65537, -(2**32), -(2**63), 1000000]),
    "bytes32": ("a map with one 32-byte bytes value", {"sha256": bytes(range(32))}),
}

OPERATIONS = ("decode", "encode", "check", "decode_prefix")


@functools.cache
def message_bytes(name: str) -> bytes:
    return cbor.encode(MESSAGES[name][1], profile=PROFILE)


def contenders(operation: str, name: str) -> dict[str, Callable[[], object]]:
    """The timed calls of one row (canonkit's compiled backend and the peers), each
    checked once against the message before it is returned."""
    data = message_bytes(name)
    value = MESSAGES[name][1]
    decoder, encoder = cbor.Decoder(profile=PROFILE), cbor.Encoder(profile=PROFILE)
    dec, enc, check, prefix = cbor.decode, cbor.encode, cbor.check, cbor.decode_prefix
    json_bytes = cbor.dag_json.encode(value)
    if operation == "decode":
        runs: dict[str, Callable[[], object]] = {
            "canonkit-c": lambda: dec(data, profile=PROFILE),
            "canonkit-c-object": lambda: decoder.decode(data),
            "libipld": lambda: libipld.decode_dag_cbor(data),
            "cbrrr": lambda: cbrrr.decode_dag_cbor(data),
            "cbor2": lambda: cbor2.loads(data),
            "orjson": lambda: orjson.loads(json_bytes),
        }
        assert runs["canonkit-c"]() == runs["canonkit-c-object"]() == value
        return runs
    if operation == "encode":
        theirs = {"libipld": libipld.decode_dag_cbor(data), "cbrrr": cbrrr.decode_dag_cbor(data),
                  "cbor2": cbor2.loads(data), "orjson": orjson.loads(json_bytes)}
        runs = {
            "canonkit-c": lambda: enc(value, profile=PROFILE),
            "canonkit-c-object": lambda: encoder.encode(value),
            "libipld": lambda: libipld.encode_dag_cbor(theirs["libipld"]),
            "cbrrr": lambda: cbrrr.encode_dag_cbor(theirs["cbrrr"]),
            "cbor2": lambda: cbor2.dumps(theirs["cbor2"], canonical=True),
            "orjson": lambda: orjson.dumps(theirs["orjson"]),
        }
        for contender in ("canonkit-c", "canonkit-c-object", "libipld", "cbrrr", "cbor2"):
            assert runs[contender]() == data, contender
        return runs
    # check and decode_prefix: canonkit only, next to libipld's decode for scale
    library = lambda: libipld.decode_dag_cbor(data)  # noqa: E731
    if operation == "check":
        runs = {"canonkit-c": lambda: check(data, profile=PROFILE),
                "canonkit-c-object": lambda: decoder.check(data),
                "libipld": library}
        assert runs["canonkit-c"]() is None and runs["canonkit-c-object"]() is None
        return runs
    if operation == "decode_prefix":
        runs = {"canonkit-c": lambda: prefix(data, 0, profile=PROFILE),
                "canonkit-c-object": lambda: decoder.decode_prefix(data, 0),
                "libipld": library}
        assert runs["canonkit-c"]() == runs["canonkit-c-object"]() == (value, len(data))
        return runs
    raise KeyError(operation)


def minimums(runs: dict[str, Callable[[], object]], rounds: int, number: int,
             timer: Callable[[], float] = time.thread_time) -> dict[str, float]:
    """Seconds per call: each contender's minimum over ``rounds`` batches of ``number``
    calls, the contenders interleaved round by round (``timer``: timeit's clock)."""
    best = dict.fromkeys(runs, float("inf"))
    for _ in range(rounds):
        for contender, run in runs.items():
            best[contender] = min(best[contender],
                                  timeit.timeit(run, number=number, timer=timer) / number)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--number", type=int, default=2000)
    parser.add_argument("--operations", nargs="*", default=list(OPERATIONS),
                        choices=OPERATIONS)
    args = parser.parse_args()
    print(f"{'operation':14} {'message':8} {'contender':18} {'ns/call':>8} "
          f"{'libipld/it':>10}")
    for operation in args.operations:
        for name in MESSAGES:
            best = minimums(contenders(operation, name), args.rounds, args.number)
            for contender, seconds in best.items():
                print(f"{operation:14} {name:8} {contender:18} {seconds * 1e9:8.0f} "
                      f"{best['libipld'] / seconds:9.2f}x")


if __name__ == "__main__":
    main()

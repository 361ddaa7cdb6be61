"""CAR files of realistic shape for the CAR benchmarks, generated (seeded, the same on
every run) and written once into a directory:

- ``repo``: an atproto-like repository export, CARv1, one root: a signed commit, the
  nodes of a Merkle search tree (entries of key prefixes and links, 4 to a leaf, 16 to an
  inner node) and the records they link (60 % likes, 40 % posts of 3-40 words) — many
  small dag-cbor blocks with sha2-256 CIDs, as Bluesky's PDSs export them;
- ``repo-v2``: the same blocks in a CARv2 with a car-multihash-index-sorted index;
- ``big-dagcbor``: dag-cbor blocks that each hold one 256 KiB byte string (a chunked file
  as a DAG), sha2-256;
- ``big-raw``: the same bytes as raw blocks (libipld's ``decode_car`` reads dag-cbor
  blocks only, so for this file the peer is the hashing alone).
"""
from __future__ import annotations

import os
import random
import string
from pathlib import Path

from canonkit import car, cbor
from canonkit.cbor import Link

Block = tuple[Link, bytes]


def _dag(value: object) -> Block:
    data = cbor.encode(value, profile="dag-cbor")
    return Link.for_block(data), data


def _tid(rng: random.Random) -> str:
    return "3k" + "".join(rng.choice(string.ascii_lowercase + "234567") for _ in range(11))


def atproto_repo(records: int, seed: int = 1) -> tuple[list[Link], list[Block]]:
    """``(roots, blocks)`` of an atproto-like repository of ``records`` records."""
    rng = random.Random(seed)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9)))
             for _ in range(2000)]
    did = "did:plc:" + "".join(rng.choice(string.ascii_lowercase + "234567") for _ in range(24))
    blocks: list[Block] = []
    keys: list[tuple[str, Link]] = []
    for _ in range(records):
        if rng.random() < 0.6:
            collection = "app.bsky.feed.like"
            record: dict[str, object] = {
                "$type": collection,
                "subject": {"cid": str(Link.for_block(rng.randbytes(16))),
                            "uri": f"at://{did}/app.bsky.feed.post/{_tid(rng)}"},
                "createdAt": f"2024-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T"
                             f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00.000Z"}
        else:
            collection = "app.bsky.feed.post"
            record = {"$type": collection, "langs": ["en"],
                      "text": " ".join(rng.choice(words) for _ in range(rng.randint(3, 40))),
                      "createdAt": "2024-01-01T00:00:00.000Z"}
        cid, data = _dag(record)
        blocks.append((cid, data))
        keys.append((f"{collection}/{_tid(rng)}", cid))
    keys.sort()
    level: list[Link] = []
    for i in range(0, len(keys), 4):  # leaves: 4 entries, keys as prefix-compressed bytes
        entries, previous = [], b""
        for key, value in keys[i:i + 4]:
            raw = key.encode()
            shared = len(os.path.commonprefix([previous, raw]))
            entries.append({"k": raw[shared:], "p": shared, "t": None, "v": value})
            previous = raw
        cid, data = _dag({"e": entries, "l": None})
        blocks.append((cid, data))
        level.append(cid)
    while len(level) > 1:  # inner nodes: 16 subtrees each
        above = []
        for i in range(0, len(level), 16):
            entries = [{"k": b"k%d" % j, "p": 0, "t": sub, "v": sub}
                       for j, sub in enumerate(level[i:i + 16])]
            cid, data = _dag({"e": entries, "l": None})
            blocks.append((cid, data))
            above.append(cid)
        level = above
    commit = _dag({"data": level[0], "did": did, "prev": None, "rev": _tid(rng),
                   "sig": rng.randbytes(64), "version": 3})
    return [commit[0]], [commit, *blocks]


def big_blocks(count: int, size: int, *, codec: str, seed: int = 2) -> list[Block]:
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        chunk = rng.randbytes(size)
        if codec == "raw":
            out.append((Link.for_block(chunk, "raw"), chunk))
        else:
            out.append(_dag({"data": chunk}))
    return out


def write_all(directory: Path, *, records: int = 50_000, big: int = 128,
              big_size: int = 256 << 10) -> dict[str, Path]:
    """Write every dataset into ``directory``; ``{name: path}``."""
    roots, blocks = atproto_repo(records)
    paths = {"repo": directory / "repo.car", "repo-v2": directory / "repo-v2.car",
             "big-dagcbor": directory / "big-dagcbor.car", "big-raw": directory / "big-raw.car"}
    car.write(paths["repo"], roots, blocks)
    car.write(paths["repo-v2"], roots, blocks, version=2, index="car-multihash-index-sorted")
    dagcbor = big_blocks(big, big_size, codec="dag-cbor")
    car.write(paths["big-dagcbor"], [dagcbor[0][0]], dagcbor)
    raw = big_blocks(big, big_size, codec="raw")
    car.write(paths["big-raw"], [raw[0][0]], raw)
    return paths

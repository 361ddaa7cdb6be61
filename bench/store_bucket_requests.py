"""What repack, gc and fsck of a store in object storage cost in requests (docs/store.md,
"In object storage"): every request counted by method, and the bytes each way.

    python bench/store_bucket_requests.py [--loose 200] [--packed 200] [--garbage 50]

A store of ``--packed`` objects in one pack and ``--loose`` loose ones (blobs of 1 KiB;
``--garbage`` of each kind unreachable) is written under a prefix of moto's S3 server,
started here on 127.0.0.1 behind the suite's counting proxy (``tests/services.py``), and
stopped at the end. Then, one after the other: fsck, repack (merging the pack), gc
(rewriting it without the garbage), fsck again. Counts, not times: moto answers a few
hundred requests per second, so its times say nothing about a real endpoint. Prints a
Markdown table.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from services import FaultProxy, start_moto  # noqa: E402  (the suite's own services)


class Counting(FaultProxy):
    """The proxy, counting requests by method and the bytes sent and received."""

    def __init__(self, upstream: str) -> None:
        super().__init__(upstream)
        self.by_method: Counter[str] = Counter()
        self.sent = self.received = 0
        self._count_lock = threading.Lock()

    def _forward(self, head: bytes, headers: list[bytes], body: bytes, method: str) -> bytes:
        out = super()._forward(head, headers, body, method)
        target = head.split(b" ")[1]
        kind = ("LIST" if b"list-type=" in target else
                "DELETE" if target.endswith(b"?delete") else method)
        with self._count_lock:
            self.by_method[kind] += 1
            self.sent += len(body)
            self.received += len(out)
        return out

    def take(self) -> tuple[Counter[str], int, int]:
        with self._count_lock:
            out = (self.by_method, self.sent, self.received)
            self.by_method, self.sent, self.received = Counter(), 0, 0
        return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--loose", type=int, default=200)
    parser.add_argument("--packed", type=int, default=200)
    parser.add_argument("--garbage", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="canonkit-bucket-requests-") as tmp:
        endpoint = start_moto(Path(tmp))
        assert endpoint.service is not None
        proxy = Counting(endpoint.url.removeprefix("http://"))
        try:
            os.environ.update(endpoint.env, AWS_ENDPOINT_URL=proxy.url)
            rows = run(proxy, f"s3://{endpoint.bucket}/bench/st", args)
        finally:
            proxy.close()
            endpoint.service.stop()
    print("| operation | GET | HEAD | LIST | PUT | DELETE | bytes sent | bytes received |")
    print("|---|---|---|---|---|---|---|---|")
    for name, counts, sent, received in rows:
        print(f"| {name} | {counts['GET']} | {counts['HEAD']} | "
              f"{counts['LIST']} | {counts['PUT']} | {counts['DELETE']} | {sent:,} | "
              f"{received:,} |")
    return 0


def run(proxy: Counting, url: str, args: Any) -> list[tuple[str, Counter[str], int, int]]:
    from canonkit import objects
    from canonkit.store import Store

    rng = random.Random(5)
    store = Store.init(url)

    def blobs(n: int, garbage: int) -> None:
        kept = [store.put(rng.randbytes(1024)) for _ in range(n - garbage)]
        for _ in range(garbage):
            store.put(rng.randbytes(1024))
        tree = store.put_object("tree", {"entries": [
            {"name": f"f{i:05d}", "mode": 0o100644, "ref": bytes.fromhex(a[7:])}
            for i, a in enumerate(kept)]})
        store.set_ref(f"r{len(store.refs())}", tree)

    blobs(args.packed, args.garbage)
    store.repack(grace_seconds=0)
    blobs(args.loose, args.garbage)
    assert objects  # the tree kind is registered by importing it
    rows = []
    for name, op in (("fsck", lambda s: s.fsck()),
                     ("repack (merge)", lambda s: s.repack(grace_seconds=0)),
                     ("gc (rewrite)", lambda s: s.gc(grace_seconds=0)),
                     ("fsck", lambda s: s.fsck())):
        proxy.take()
        op(Store(url))
        counts, sent, received = proxy.take()
        rows.append((name, counts, sent, received))
    return rows


if __name__ == "__main__":
    sys.exit(main())

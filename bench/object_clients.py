"""Which object-storage client canonkit reads URLs with: a measurement (docs/scale.md).

    pip install -e '.[bench-remote]'    # s3fs, the fsspec contender
    python bench/object_clients.py [--repeat 3] [--small 2000] [--large-mib 256]

Contenders: obstore (the Rust ``object_store`` crate) and fsspec (s3fs for S3, its
aiohttp ``HTTPFileSystem`` for HTTP), each driven the way it is fastest: asyncio with
``--concurrency`` requests in flight for the small GETs, sequential ranged reads of 8 MiB
for the large one. canonkit's own reader (``canonkit._files.remote.open_range``, obstore
underneath, one block fetched ahead) and a local ``pread`` of the same file are measured
beside them.

Servers, started here on 127.0.0.1 and stopped at the end: nginx (static files, range
requests) and moto's S3 server. moto answers a few hundred requests per second at best,
so on moto only the relative cost of the clients means anything and its workloads are
smaller; throughput is measured on nginx.

Workloads: ``--small`` ranged GETs of 4 KiB at random offsets of a 64 MiB object, and one
sequential read of a ``--large-mib`` object. Each cell is the best of ``--repeat``
interleaved rounds. Prints a Markdown table.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from services import start_moto, start_nginx  # noqa: E402  (the suite's own services)

SMALL = 4096
BLOCK = 8 << 20


def small_offsets(size: int, n: int) -> list[int]:
    rng = random.Random(8742)
    return [rng.randrange(0, size - SMALL) for _ in range(n)]


# --- obstore -------------------------------------------------------------------------------

def obstore_small(store: Any, key: str, offsets: list[int], concurrency: int) -> int:
    import obstore

    async def main() -> int:
        gate = asyncio.Semaphore(concurrency)

        async def one(at: int) -> int:
            async with gate:
                return len(await obstore.get_range_async(store, key, start=at,
                                                         end=at + SMALL))

        return sum(await asyncio.gather(*(one(at) for at in offsets)))

    return asyncio.run(main())


def obstore_large(store: Any, key: str, size: int) -> int:
    import obstore

    total = 0
    for at in range(0, size, BLOCK):
        total += len(obstore.get_range(store, key, start=at, end=min(size, at + BLOCK)))
    return total


# --- fsspec ----------------------------------------------------------------------------

def fsspec_small(fs: Any, path: str, offsets: list[int], concurrency: int) -> int:
    """On the filesystem's own event loop (fsspec's async filesystems run one)."""
    from fsspec.asyn import sync

    async def main() -> int:
        gate = asyncio.Semaphore(concurrency)

        async def one(at: int) -> int:
            async with gate:
                return len(await fs._cat_file(path, start=at, end=at + SMALL))

        return sum(await asyncio.gather(*(one(at) for at in offsets)))

    return int(sync(fs.loop, main))


def drain(f: Any) -> int:
    """Read ``f`` to its end in blocks; the bytes read."""
    total = 0
    while True:
        chunk = f.read(BLOCK)
        if not chunk:
            return total
        total += len(chunk)


def fsspec_large(fs: Any, path: str, size: int) -> int:
    with fs.open(path, "rb", block_size=BLOCK, cache_type="none") as f:
        return drain(f)


# --- canonkit and local ------------------------------------------------------------------

def canonkit_large(url: str) -> int:
    from canonkit._files import remote

    with remote.open_range(remote.head(url)) as f:
        return drain(f)


def local_small(path: Path, offsets: list[int]) -> int:
    fd = os.open(path, os.O_RDONLY)
    try:
        return sum(len(os.pread(fd, SMALL, at)) for at in offsets)
    finally:
        os.close(fd)


def local_large(path: Path) -> int:
    with open(path, "rb", buffering=0) as f:
        return drain(f)


def timed(call: Callable[[], int]) -> tuple[float, int]:
    start = time.perf_counter()
    got = call()
    return time.perf_counter() - start, got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--small", type=int, default=2000, help="ranged GETs on nginx")
    parser.add_argument("--small-moto", type=int, default=300, help="ranged GETs on moto")
    parser.add_argument("--large-mib", type=int, default=256)
    parser.add_argument("--large-moto-mib", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    import fsspec
    import obstore
    from obstore.store import HTTPStore, S3Store

    work = Path(tempfile.mkdtemp(prefix="canonkit-clients-"))
    www = work / "www"
    www.mkdir()
    small_size = 64 << 20
    (www / "small.bin").write_bytes(os.urandom(small_size))
    with open(www / "large.bin", "wb") as f:
        for _ in range(args.large_mib):
            f.write(os.urandom(1 << 20))
    nginx = start_nginx(www, work / "nginx")
    moto = start_moto(work)
    try:
        os.environ.update(moto.env)
        s3_store = S3Store(moto.bucket, retry_config={"max_retries": 0})
        obstore.put(s3_store, "small.bin", www / "small.bin")
        moto_large = (www / "large.bin").read_bytes()[:args.large_moto_mib << 20]
        obstore.put(s3_store, "large.bin", moto_large)
        http_store = HTTPStore.from_url(nginx.url.rstrip("/"),
                                        client_options={"allow_http": True})
        s3fs = fsspec.filesystem("s3", endpoint_url=moto.url, key=moto.env["AWS_ACCESS_KEY_ID"],
                                 secret=moto.env["AWS_SECRET_ACCESS_KEY"], asynchronous=False,
                                 skip_instance_cache=True)
        httpfs = fsspec.filesystem("http", skip_instance_cache=True)
        offsets = small_offsets(small_size, args.small)
        moto_offsets = offsets[:args.small_moto]
        large = args.large_mib << 20
        moto_large_size = len(moto_large)
        nginx_small = nginx.url + "small.bin"
        nginx_large = nginx.url + "large.bin"
        s3_small = f"{moto.bucket}/small.bin"
        s3_large = f"{moto.bucket}/large.bin"

        cells: dict[tuple[str, str, str], Callable[[], int]] = {
            ("nginx", "small", "obstore"): lambda: obstore_small(http_store, "small.bin",
                                                                 offsets, args.concurrency),
            ("nginx", "small", "fsspec"): lambda: fsspec_small(httpfs, nginx_small, offsets,
                                                               args.concurrency),
            ("nginx", "small", "local pread"): lambda: local_small(www / "small.bin",
                                                                   offsets),
            ("nginx", "large", "obstore"): lambda: obstore_large(http_store, "large.bin",
                                                                 large),
            ("nginx", "large", "fsspec"): lambda: fsspec_large(httpfs, nginx_large, large),
            ("nginx", "large", "canonkit open_range"): lambda: canonkit_large(nginx_large),
            ("nginx", "large", "local read"): lambda: local_large(www / "large.bin"),
            ("moto", "small", "obstore"): lambda: obstore_small(s3_store, "small.bin",
                                                                moto_offsets,
                                                                args.concurrency),
            ("moto", "small", "fsspec"): lambda: fsspec_small(s3fs, s3_small, moto_offsets,
                                                              args.concurrency),
            ("moto", "large", "obstore"): lambda: obstore_large(s3_store, "large.bin",
                                                                moto_large_size),
            ("moto", "large", "fsspec"): lambda: fsspec_large(s3fs, s3_large,
                                                              moto_large_size),
            ("moto", "large", "canonkit open_range"): lambda: canonkit_large(
                f"s3://{moto.bucket}/large.bin"),
        }
        expect = {("nginx", "small"): SMALL * len(offsets),
                  ("moto", "small"): SMALL * len(moto_offsets),
                  ("nginx", "large"): large, ("moto", "large"): moto_large_size}
        best: dict[tuple[str, str, str], float] = {}
        for _ in range(args.repeat):
            for cell, call in cells.items():
                seconds, got = timed(call)
                assert got == expect[cell[:2]], (cell, got)
                best[cell] = min(best.get(cell, float("inf")), seconds)
    finally:
        nginx.service.stop()
        if moto.service is not None:
            moto.service.stop()

    print(f"{args.small} (nginx) / {args.small_moto} (moto) ranged GETs of {SMALL} bytes, "
          f"{args.concurrency} in flight; sequential reads of {args.large_mib} MiB (nginx) / "
          f"{args.large_moto_mib} MiB (moto) in {BLOCK >> 20} MiB ranges; best of "
          f"{args.repeat}\n")
    print("| server | workload | client | time (s) | rate | vs fsspec |")
    print("|---|---|---|---:|---:|---:|")
    for (server, workload, client), seconds in best.items():
        n = len(offsets) if server == "nginx" else len(moto_offsets)
        rate = (f"{n / seconds:,.0f} GETs/s" if workload == "small"
                else f"{expect[(server, workload)] / seconds / 1e6:,.0f} MB/s")
        base = best.get((server, workload, "fsspec"))
        ratio = f"{base / seconds:.1f}x" if base else ""
        print(f"| {server} | {workload} | {client} | {seconds:.3f} | {rate} | {ratio} |")


if __name__ == "__main__":
    main()

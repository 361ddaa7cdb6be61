"""A content-addressed object store on a local filesystem (STORE.md; docs/store.md).

    >>> from canonkit.store import Store
    >>> store = Store.init("my-store")                          # doctest: +SKIP
    >>> address = store.put(b"hello tovio\\n")                    # doctest: +SKIP
    >>> store.set_ref("main", address)                           # doctest: +SKIP
    >>> store.repack(); store.gc(); store.fsck().ok              # doctest: +SKIP

Objects are kept loose (raw or DEFLATE) or packed (a pack and its index, read through
mmap); every form decodes to the same logical bytes and address. repack and gc are
crash-safe in the order STORE.md §3 gives; fsck checks every byte, on the local process
pool or Dask.
"""
from __future__ import annotations

from .findings import CODES, Finding, FsckReport
from .lock import LockInfo
from .stats import GCStats, RepackStats
from .store import FORMS, Store

__all__ = ["CODES", "FORMS", "Finding", "FsckReport", "GCStats", "LockInfo", "RepackStats",
           "Store"]

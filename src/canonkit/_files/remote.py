"""Object storage: the URL side of the input door, and the conditional writes a store needs.

Every byte canonkit reads from ``s3://``, ``gs://``, ``az://`` or ``http(s)://`` comes
through here, under the rules the local door (:mod:`canonkit._files.inputs`) keeps for
files; ``file://`` URLs are local paths (:attr:`ObjectURL.key`) and go through that door.
The client is obstore (Rust ``object_store``), the optional extra ``canonkit[s3]``
(docs/scale.md, "client choice"); without it every call raises
:class:`MissingDependencyError` naming the extra.

API (``url`` is a URL string or an :class:`~canonkit._files.urls.ObjectURL`)::

    head(url) -> ObjectInfo                   # one object: size, ETag, LastModified
    list_prefix(url) -> list[ObjectInfo]      # a prefix URL ("/" at the end), recursively
    read_range(info, start, end) -> bytes     # bytes [start, end) of that object version
    open_range(info, start=0, end=None)       # buffered, seekable reader of [start, end)
    read_object(info, *, max_bytes=None)      # the whole object, bounded
    put(url, data, *, if_none_match=False, if_match=None) -> str   # the new ETag
    delete(url, *, if_match=None) -> None
    delete_many(urls) -> None                 # in as few requests as the service allows
    redact(text) -> str                       # text with every credential elided

Rules:

- **Identity.** :class:`ObjectInfo` ``(url, size, etag, last_modified)`` is what a
  listing or :func:`head` saw; the identity of an object is ``(url, size, etag)``. Every
  read is a GET with ``If-Match: <etag>`` (or, for a server that sends no ETag, checked
  against size and LastModified), and the response's size and ETag are checked again: an
  object replaced or rewritten since it was listed is :class:`FileChangedError` (code
  ``input_changed``, as for a file), never blended with the bytes read before.
- **Bounded reads.** A read asks for exactly the bytes it needs (``open_range`` in blocks
  of ``BLOCK`` bytes with one block fetched ahead, so verifying and fetching overlap) and
  refuses a short or long body; ``read_object`` refuses an object larger than
  ``max_bytes`` before reading it (:class:`FileTooLargeError`).
- **Retries.** Throttling (429, 503 SlowDown), other 5xx, dropped connections and
  timeouts are retried with exponential backoff and full jitter (``RETRY``); 4xx are not.
  What still fails is :class:`ObjectStorageError` with ``url`` and ``status`` (None when
  no response came); a missing object or bucket is :class:`ObjectNotFoundError` (also a
  ``FileNotFoundError``).
- **Conditional writes** for the store (STORE.md §7): ``put(if_none_match=True)`` sends
  ``If-None-Match: *`` and ``put(if_match=etag)`` / ``delete(if_match=etag)`` send
  ``If-Match``; a lost condition is :class:`PreconditionFailedError`. A conditional
  request retried after a response was lost may find its own first attempt applied and
  report the condition lost: the error's ``detail`` is then ``"retried"``, and the caller
  re-reads the object to tell the two apart. Conditional delete is an S3 and Azure
  request (signed by the client, sent with ``If-Match``); on ``gs://`` it is refused, as
  is every write to ``http(s)://`` (read-only here).
- **Credentials** come from the client's standard environment: for S3
  ``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``,
  ``AWS_ENDPOINT_URL``, ``AWS_ALLOW_HTTP=true`` (plain-HTTP endpoint); for gs
  ``GOOGLE_SERVICE_ACCOUNT`` / ``GOOGLE_APPLICATION_CREDENTIALS``; for az
  ``AZURE_STORAGE_ACCOUNT_NAME`` with ``AZURE_STORAGE_ACCOUNT_KEY`` or a token. They never
  appear in a message: every error text passes through :func:`redact`, which elides the
  value of every credential variable and the query of any URL (a signature).

One client per (scheme, container) per process, made on first use. A client's runtime
does not survive ``fork``: a process forked after this one used object storage hangs on
its first request, so processes that read object storage are started with ``spawn`` (as
the local pool's workers are) or are Dask workers.
"""
from __future__ import annotations

import http.client
import io
import os
import random
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, BinaryIO, NamedTuple, TypeVar
from urllib.parse import urlsplit

from ..errors import (
    FileChangedError,
    FileTooLargeError,
    ObjectNotFoundError,
    ObjectStorageError,
    PreconditionFailedError,
    UnsupportedURLError,
)
from .urls import ObjectURL, parse_url

__all__ = ["BLOCK", "RETRY", "ObjectInfo", "RetryPolicy", "delete", "delete_many", "head",
           "list_prefix", "open_range", "put", "read_object", "read_range", "redact"]

BLOCK = 8 << 20  # bytes per GET of a sequential reader
T = TypeVar("T")


# --- retries -------------------------------------------------------------------------

@dataclass(frozen=True)
class RetryPolicy:
    """``attempts`` tries in all; before try n+1 a pause drawn uniformly from
    ``[0, min(cap, first * 2**n)]`` seconds (exponential backoff, full jitter)."""

    attempts: int = 8
    first: float = 0.2
    cap: float = 10.0

    def pause(self, attempt: int) -> float:
        return random.uniform(0.0, min(self.cap, self.first * 2 ** attempt))


RETRY = RetryPolicy()
_TRANSIENT = frozenset({408, 429, 500, 502, 503, 504})


class _Failure(Exception):
    """One failed request, classified: ``status`` (None: no response), ``transient``."""

    def __init__(self, status: int | None, reason: str, transient: bool, kind: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.transient = transient
        self.kind = kind  # "not_found", "precondition", "denied", "other"


def _with_retries(call: Callable[[], T]) -> tuple[T, int]:
    """``call()`` and the number of attempts it took; a transient :class:`_Failure` is
    retried under ``RETRY``, anything else (or the last failure) propagates."""
    policy = RETRY
    attempt = 0
    while True:
        attempt += 1
        try:
            return call(), attempt
        except _Failure as failure:
            if not failure.transient or attempt >= policy.attempts:
                failure.attempts = attempt  # type: ignore[attr-defined]
                raise
        time.sleep(policy.pause(attempt - 1))


# --- credentials never leave in a message --------------------------------------------

_SECRET_NAME = re.compile(r"(?:AWS|AZURE|GOOGLE|GCS|GCP|OBJECT_STORE)_\w*"
                          r"(?:SECRET|TOKEN|PASSWORD|KEY|SAS|CREDENTIAL|SIGNATURE)\w*")
_URL_QUERY = re.compile(r"((?:https?|s3|gs|az)://[^\s?#\"'<>]*)[?#][^\s\"'<>]*")


def redact(text: str) -> str:
    """``text`` with the value of every credential variable of the environment elided
    (``AWS_SECRET_ACCESS_KEY``, ``AWS_ACCESS_KEY_ID``, ``AWS_SESSION_TOKEN``,
    ``AZURE_STORAGE_ACCOUNT_KEY``, ...) and the query of every URL (where a presigned
    or SAS signature travels) cut off."""
    for name, value in os.environ.items():
        if len(value) >= 4 and _SECRET_NAME.fullmatch(name.upper()):
            text = text.replace(value, "***")
    return _URL_QUERY.sub(r"\1?…", text)


# --- clients ---------------------------------------------------------------------------

_clients: dict[tuple[str, str], Any] = {}
_lock = threading.Lock()
_prefetch: ThreadPoolExecutor | None = None


def _obstore() -> Any:
    from .._optional import require

    return require("obstore", "reading or writing object storage (s3://, gs://, az://, "
                              "http(s)://)")


def _client(url: ObjectURL) -> Any:
    key = (url.scheme, url.container)
    client = _clients.get(key)
    if client is not None:
        return client
    _obstore()  # MissingDependencyError naming the extra when absent
    from obstore import store

    # retries are ours (RETRY), the same for every request and every client
    options: dict[str, Any] = {"retry_config": {"max_retries": 0}}
    with _lock:
        client = _clients.get(key)
        if client is None:
            if url.scheme == "s3":
                client = store.S3Store(url.container, **options)
            elif url.scheme == "gs":
                client = store.GCSStore(url.container, **options)
            elif url.scheme == "az":
                client = store.AzureStore(url.container, **options)
            else:
                client = store.HTTPStore.from_url(
                    url.base, client_options={"allow_http": url.scheme == "http"}, **options)
            _clients[key] = client
    return client


def _parse(url: str | ObjectURL) -> ObjectURL:
    parsed = url if isinstance(url, ObjectURL) else parse_url(url)
    if parsed.scheme == "file":
        raise UnsupportedURLError(f"{parsed}: a file URL is a local path; read it through "
                                  "the local input door", detail=str(parsed))
    return parsed


_STATUS = re.compile(r"status code: (\d{3})")


def _classify(exc: BaseException) -> _Failure:
    """The :class:`_Failure` an obstore exception means."""
    from obstore import exceptions as ox

    text = str(exc)
    found = _STATUS.search(text)
    status = int(found.group(1)) if found else None
    first = text.split("\n", 1)[0]
    if isinstance(exc, FileNotFoundError) or isinstance(exc, ox.NotFoundError):
        what = "the bucket does not exist" if "NoSuchBucket" in text else "not found"
        return _Failure(status or 404, what, False, "not_found")
    if isinstance(exc, (ox.PreconditionError, ox.AlreadyExistsError)):
        return _Failure(status or 412, "precondition failed", False, "precondition")
    if isinstance(exc, (ox.PermissionDeniedError, ox.UnauthenticatedError)):
        return _Failure(status, "access denied (check the credentials in the environment)",
                        False, "denied")
    if isinstance(exc, ox.NotSupportedError):
        return _Failure(status, redact(first), False, "other")
    if status is None:  # no response: connection refused or dropped, timeout
        detail = re.search(r"kind: (\w+)", text)
        reason = "no response" + (f" ({detail.group(1).lower()})" if detail else "")
        return _Failure(None, reason, True, "other")
    phrase = re.search(r"status code: \d{3} ([A-Za-z ]+)", text)
    reason = f"HTTP {status}" + (f" {phrase.group(1).strip()}" if phrase else "")
    return _Failure(status, reason, status in _TRANSIENT or status >= 500, "other")


def _request(call: Callable[[], T]) -> T:
    """``call()``, its obstore exceptions turned into a :class:`_Failure`."""
    from obstore.exceptions import BaseError

    try:
        return call()
    except (BaseError, OSError) as exc:
        raise _classify(exc) from None


def _error(failure: _Failure, url: ObjectURL, op: str) -> ObjectStorageError:
    attempts = getattr(failure, "attempts", 1)
    tries = f" after {attempts} attempts" if attempts > 1 else ""
    where = str(url)
    if failure.kind == "not_found":
        return ObjectNotFoundError(redact(f"{where}: {failure.reason} ({op}, HTTP "
                                          f"{failure.status})"), url=where,
                                   status=failure.status)
    if failure.kind == "precondition":
        return PreconditionFailedError(
            redact(f"{where}: {op}: the condition did not hold (HTTP {failure.status})"
                   + ("; an earlier attempt may have been applied" if attempts > 1 else "")),
            url=where, status=failure.status, detail="retried" if attempts > 1 else None)
    return ObjectStorageError(redact(f"{where}: {op} failed{tries}: {failure.reason}"),
                              url=where, status=failure.status)


def _run(url: ObjectURL, op: str, call: Callable[[], T]) -> T:
    try:
        return _with_retries(lambda: _request(call))[0]
    except _Failure as failure:
        raise _error(failure, url, op) from None


# --- what an object is ---------------------------------------------------------------

class ObjectInfo(NamedTuple):
    """An object as a listing or HEAD saw it. Its identity is ``(url, size, etag)``;
    ``last_modified`` serves ages (a store's grace period) and stands in for the ETag
    with a server that sends none."""

    url: str
    size: int
    etag: str | None
    last_modified: datetime | None

    def change(self, size: int, etag: str | None, last_modified: datetime | None
               ) -> str | None:
        """How an object now of ``size``/``etag``/``last_modified`` differs from this
        one, in words; None if it is the same version."""
        parts = []
        if size != self.size:
            parts.append(f"size {self.size} -> {size} bytes")
        if self.etag is not None and etag is not None and etag != self.etag:
            parts.append(f"ETag {self.etag} -> {etag}")
        if self.etag is None and last_modified != self.last_modified:
            parts.append(f"LastModified {self.last_modified} -> {last_modified}")
        return ", ".join(parts) or None


def _info(url: ObjectURL, meta: Any) -> ObjectInfo:
    return ObjectInfo(str(url), int(meta["size"]), meta.get("e_tag"), meta.get("last_modified"))


def _changed(info: ObjectInfo, what: str) -> FileChangedError:
    return FileChangedError(redact(f"{info.url}: not the object the run started on: {what}"),
                            detail=info.url)


def head(url: str | ObjectURL) -> ObjectInfo:
    """The object at ``url`` as it is now (HEAD); ObjectNotFoundError when absent."""
    parsed = _parse(url)
    if parsed.is_prefix:
        raise UnsupportedURLError(f"{parsed}: a prefix, not an object (list it)",
                                  detail=str(parsed))
    client = _client(parsed)
    obstore = _obstore()
    return _info(parsed, _run(parsed, "HEAD", lambda: obstore.head(client, parsed.key)))


def _walk_key(key: str) -> tuple[tuple[int, str], ...]:
    """Sort key giving the order of a directory walk (canonkit._files / reverify):
    in each "directory", its objects by name, then its sub-prefixes by name."""
    parts = key.split("/")
    return tuple((1, part) for part in parts[:-1]) + ((0, parts[-1]),)


def list_prefix(url: str | ObjectURL) -> list[ObjectInfo]:
    """Every object under the prefix ``url`` (which ends in ``/``), recursively, in the
    order a directory walk gives (objects of a level by name, then its sub-prefixes);
    a "directory marker" (an empty ``name/`` beside objects under ``name/``) is not an
    object. An empty list when there
    is none: the caller decides whether that is an error. ``http(s)://`` cannot be
    listed (HTTP has no listing)."""
    parsed = _parse(url)
    if not parsed.is_prefix:
        raise UnsupportedURLError(f"{parsed}: not a prefix (a prefix URL ends in '/')",
                                  detail=str(parsed))
    if parsed.scheme in ("http", "https"):
        raise UnsupportedURLError(f"{parsed}: an http(s) URL cannot be listed; name each "
                                  "object", detail=str(parsed))
    client = _client(parsed)
    obstore = _obstore()
    prefix = parsed.key or None

    def listing() -> list[Any]:
        found: list[Any] = []
        for batch in obstore.list(client, prefix=prefix, chunk_size=1000):
            found.extend(batch)
        return found

    metas = _run(parsed, "LIST", listing)
    # the client lists a "directory marker" ("runs/", empty) as "runs": not an object
    parents = {path[:i] for path in (m["path"] for m in metas)
               for i, c in enumerate(path) if c == "/"}
    infos = [_info(parsed.child(m["path"]), m) for m in metas
             if not (m["size"] == 0 and m["path"] in parents)]
    infos.sort(key=lambda i: _walk_key(i.url.split("/", 3)[3]))
    return infos


# --- reading ---------------------------------------------------------------------------

def _get(info: ObjectInfo, start: int, end: int) -> Any:
    """Bytes ``[start, end)`` of the object ``info`` describes (an obstore ``Bytes``),
    refused with FileChangedError when the object is another version now."""
    parsed = _parse(info.url)
    client = _client(parsed)
    obstore = _obstore()
    options: dict[str, Any] = {"range": (start, end)}
    if info.etag is not None:
        options["if_match"] = info.etag

    def fetch() -> Any:
        result = _request(lambda: obstore.get(client, parsed.key, options=options))
        meta = result.meta
        what = info.change(int(meta["size"]), meta.get("e_tag"), meta.get("last_modified"))
        if what is not None:
            raise _changed(info, what)
        data = _request(result.bytes)
        if len(data) != end - start:  # a body cut short (or a server ignoring Range)
            raise _Failure(None, f"the response held {len(data)} bytes for a range of "
                                 f"{end - start}", True, "other")
        return data

    try:
        return _with_retries(fetch)[0]
    except _Failure as failure:
        if failure.kind == "precondition":  # If-Match lost: another version now
            raise _changed(info, "its ETag is no longer " + str(info.etag)) from None
        raise _error(failure, parsed, f"GET bytes {start}-{end}") from None


def _check_range(info: ObjectInfo, start: int, end: int) -> None:
    if not 0 <= start <= end <= info.size:
        raise ValueError(f"{info.url}: range [{start}, {end}) is outside the object's "
                         f"{info.size} bytes")


def read_range(info: ObjectInfo, start: int, end: int) -> bytes:
    """Bytes ``[start, end)`` of the object ``info`` describes (one GET, retried)."""
    _check_range(info, start, end)
    if start == end:
        return b""
    return bytes(_get(info, start, end))


def read_object(info: ObjectInfo, *, max_bytes: int | None = None) -> bytes:
    """The whole object; FileTooLargeError (before reading) when it is larger than
    ``max_bytes``."""
    if max_bytes is not None and info.size > max_bytes:
        raise FileTooLargeError(f"{info.url}: larger than the {max_bytes}-byte limit",
                                detail=info.url)
    return read_range(info, 0, info.size)


def _executor() -> ThreadPoolExecutor:
    global _prefetch
    with _lock:
        if _prefetch is None:
            _prefetch = ThreadPoolExecutor(max_workers=4, thread_name_prefix="canonkit-get")
        return _prefetch


class _RangeReader(io.RawIOBase):
    """Raw reader of bytes ``[start, end)`` of one object version; positions are object
    offsets. Fetches ``block`` bytes per GET and the following block ahead."""

    def __init__(self, info: ObjectInfo, start: int, end: int, block: int,
                 readahead: bool = True) -> None:
        self._info = info
        self._start, self._end, self._block = start, end, block
        self._readahead = readahead
        self._pos = start
        self._data: memoryview = memoryview(b"")
        self._at = start  # object offset of self._data[0]
        self._ahead: tuple[int, Future[Any]] | None = None
        self.fetched = 0  # bytes received (for progress counters)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_CUR:
            offset += self._pos
        elif whence == io.SEEK_END:
            offset += self._end
        if offset < 0:
            raise ValueError("negative seek position")
        self._pos = offset
        return offset

    def _fetch(self, at: int) -> Future[Any]:
        end = min(self._end, at + self._block)
        return _executor().submit(_get, self._info, at, end)

    def _load(self) -> None:
        """Make ``self._data`` the block holding ``self._pos``."""
        at = self._pos
        if self._ahead is not None and self._ahead[0] == at:
            future = self._ahead[1]
        else:
            future = self._fetch(at)
        self._ahead = None
        data = future.result()
        self._data, self._at = memoryview(data), at
        self.fetched += len(data)
        following = at + len(data)
        if self._readahead and following < self._end:
            self._ahead = (following, self._fetch(following))

    def readinto(self, buffer: Any) -> int:
        if self._pos >= self._end:
            return 0
        if not self._at <= self._pos < self._at + len(self._data):
            self._load()
        offset = self._pos - self._at
        n = min(len(buffer), len(self._data) - offset, self._end - self._pos)
        memoryview(buffer).cast("B")[:n] = self._data[offset:offset + n]
        self._pos += n
        return n

    def close(self) -> None:
        if self._ahead is not None:
            self._ahead[1].cancel()
            self._ahead = None
        self._data = memoryview(b"")
        super().close()


def open_range(info: ObjectInfo, start: int = 0, end: int | None = None, *,
               block: int = BLOCK, readahead: bool = True) -> BinaryIO:
    """A buffered binary reader of bytes ``[start, end)`` (default: to the object's end)
    of the object version ``info`` describes, positioned at ``start``; ``tell``/``seek``
    use object offsets and the stream ends at ``end``. Every GET is checked against
    ``info`` (FileChangedError when the object changed). ``readahead=False`` fetches
    no block before it is read (a reader that only peeks, such as a range planner)."""
    stop = info.size if end is None else end
    _check_range(info, start, stop)
    raw = _RangeReader(info, start, stop, max(1, block), readahead)
    return io.BufferedReader(raw, min(1 << 20, max(1, block)))


# --- writing ---------------------------------------------------------------------------

def storage_prefix(name: str, *, what: str, local: str, error: Callable[..., Exception]
                   ) -> str:
    """The prefix ``name`` names in object storage (a ``/`` added), for a ``what`` kept
    there (a cache, a journal); ``error(message, detail=...)`` is raised for a URL that
    cannot hold one: malformed, ``http(s)://`` (read-only) or ``file://`` (a ``local``
    path names that)."""
    shown = redact(name)
    try:
        url = parse_url(name if name.endswith("/") else name + "/")
    except ValueError as exc:
        raise error(f"{shown}: {exc}", detail=shown) from None
    if url.scheme in ("http", "https", "file"):
        raise error(f"{shown}: a {what} URL must name object storage (s3://, gs://, "
                    f"az://); use a local {local} instead of a file:// URL", detail=shown)
    return str(url)


def _writable(url: str | ObjectURL) -> ObjectURL:
    parsed = _parse(url)
    if parsed.scheme in ("http", "https"):
        raise UnsupportedURLError(f"{parsed}: http(s) URLs are read-only", detail=str(parsed))
    if parsed.is_prefix:
        raise UnsupportedURLError(f"{parsed}: a prefix, not an object", detail=str(parsed))
    return parsed


def put(url: str | ObjectURL, data: bytes | bytearray | memoryview | Path, *,
        if_none_match: bool = False, if_match: str | None = None) -> str:
    """Write the object at ``url`` atomically (readers see the old or the new bytes,
    never a part) and return its new ETag. ``if_none_match=True``: only if no object is
    there (``If-None-Match: *``); ``if_match=etag``: only if the object there has that
    ETag. A lost condition is PreconditionFailedError. ``data`` may be a local file
    (``Path``): an unconditional put of one sends it in parts (multipart upload)."""
    if if_none_match and if_match is not None:
        raise ValueError("put: if_none_match and if_match exclude each other")
    parsed = _writable(url)
    client = _client(parsed)
    obstore = _obstore()
    mode: Any = ("create" if if_none_match else
                 {"e_tag": if_match} if if_match is not None else "overwrite")
    body: Any = data if isinstance(data, Path) else memoryview(data)
    multipart = None if isinstance(data, Path) and mode == "overwrite" else False
    result = _run(parsed, "PUT", lambda: obstore.put(client, parsed.key, body, mode=mode,
                                                     use_multipart=multipart))
    return str(result["e_tag"])


def delete(url: str | ObjectURL, *, if_match: str | None = None) -> None:
    """Delete the object at ``url``. Without ``if_match`` a missing object is no error
    (S3's rule); with it, the object must have that ETag (PreconditionFailedError
    otherwise, ObjectNotFoundError when it is gone)."""
    parsed = _writable(url)
    client = _client(parsed)
    obstore = _obstore()
    if if_match is None:
        _run(parsed, "DELETE", lambda: obstore.delete(client, parsed.key))
        return
    if parsed.scheme == "gs":
        raise UnsupportedURLError(f"{parsed}: a conditional delete is not available on "
                                  "gs:// here", detail=str(parsed))
    try:
        _with_retries(lambda: _signed_delete(obstore, client, parsed, if_match))
    except _Failure as failure:
        raise _error(failure, parsed, "DELETE If-Match") from None


def delete_many(urls: list[str | ObjectURL]) -> None:
    """Delete the objects at ``urls`` (all in one bucket), as few requests as the service
    allows: S3's DeleteObjects takes up to 1000 keys, Azure's batch 256; elsewhere one
    request each. A missing object is no error. Each request is retried as a whole (a
    deletion is the same when repeated)."""
    if not urls:
        return
    parsed = [_writable(url) for url in urls]
    if len({(u.scheme, u.container) for u in parsed}) != 1:
        raise ValueError("delete_many: the objects must be in one bucket")
    client = _client(parsed[0])
    obstore = _obstore()
    keys = [u.key for u in parsed]
    try:
        _run(parsed[0], f"DELETE of {len(keys)} objects", lambda: obstore.delete(client, keys))
    except ObjectNotFoundError:  # a service that says so for a missing one: one by one
        for url in parsed:
            delete(url)


def _signed_delete(obstore: Any, client: Any, url: ObjectURL, etag: str) -> None:
    """One DELETE with ``If-Match`` on a URL the client signed (obstore has no conditional
    delete). The signed URL carries a signature: it is never put in a message."""
    signed = _request(lambda: obstore.sign(client, "DELETE", url.key, timedelta(minutes=5)))
    parts = urlsplit(signed)
    connection_class = (http.client.HTTPSConnection if parts.scheme == "https"
                        else http.client.HTTPConnection)
    target = parts.path + (f"?{parts.query}" if parts.query else "")
    connection = connection_class(parts.netloc, timeout=60)
    try:
        try:
            connection.request("DELETE", target, headers={"If-Match": etag})
            response = connection.getresponse()
            response.read()
        except (OSError, http.client.HTTPException) as exc:
            raise _Failure(None, f"no response ({type(exc).__name__})", True, "other"
                           ) from None
    finally:
        connection.close()
    status = response.status
    if status in (200, 202, 204):
        return
    if status == 404:
        raise _Failure(404, "not found", False, "not_found")
    if status == 412:
        raise _Failure(412, "precondition failed", False, "precondition")
    raise _Failure(status, f"HTTP {status} {response.reason}",
                   status in _TRANSIENT or status >= 500,
                   "denied" if status in (401, 403) else "other")


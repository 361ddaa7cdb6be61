"""Input URLs (REVERIFY.md §6): what canonkit accepts, parsed once, refused precisely.

Accepted forms (``SCHEMES``)::

    s3://BUCKET/KEY       gs://BUCKET/KEY       az://CONTAINER/KEY
    http://HOST[:PORT]/PATH                     https://HOST[:PORT]/PATH
    file:///ABSOLUTE/PATH (or file://localhost/...; percent-escapes decoded, RFC 8089)

- A URL whose key is empty or ends in ``/`` is a **prefix**, listed recursively like a
  directory (:attr:`ObjectURL.is_prefix`); ``s3://bucket/`` is the whole bucket.
- Keys are taken literally (``s3://b/a%20b`` names the key ``a%20b``, as the AWS CLI
  does); a key with an empty, ``.`` or ``..`` segment is refused: no object store
  addresses one reliably.
- **Never a local path.** Anything that looks like a URL (:func:`is_url`: a scheme of two
  or more letters and ``:/``) is parsed as one: an unknown scheme is
  :class:`UnsupportedURLError`, never a file name. A local directory whose name holds a
  colon is still reachable as ``./name:/...``.
- **No secret in a URL.** Credentials come from the environment
  (:mod:`canonkit._files.remote`), so user info (``user:pass@``), a query (a presigned or
  SAS signature) and a fragment are refused — a URL is printed in reports and errors,
  and the refusal itself prints the URL with those parts elided.

Nothing here does I/O or imports an object-storage client.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

from ..errors import UnsupportedURLError

__all__ = ["OBJECT_SCHEMES", "SCHEMES", "ObjectURL", "elide", "is_url", "parse_url"]

#: schemes read through an object-storage client (``file`` goes through the local door)
OBJECT_SCHEMES = ("s3", "gs", "az", "http", "https")
SCHEMES = OBJECT_SCHEMES + ("file",)
_BUCKET_SCHEMES = ("s3", "gs", "az")
# two or more scheme characters: a Windows drive ("C:/") is not a URL
_URL_LIKE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]+:/")
_BUCKET = re.compile(r"[A-Za-z0-9][A-Za-z0-9._\-]*")


def is_url(text: str) -> bool:
    """Whether ``text`` looks like a URL (``scheme:/...``), supported or not: such a name
    is never taken for a local path."""
    return _URL_LIKE.match(text) is not None


@dataclass(frozen=True, slots=True)
class ObjectURL:
    """A parsed URL: ``scheme`` (lower case), ``container`` (bucket, Azure container, or
    ``host[:port]``; empty for ``file``) and ``key`` (the object's path inside it, no
    leading ``/``; for ``file`` the absolute local path). ``str()`` is the canonical
    spelling, the one reports name."""

    scheme: str
    container: str
    key: str

    @property
    def is_prefix(self) -> bool:
        """A prefix (listed recursively), not one object."""
        return self.scheme != "file" and (self.key == "" or self.key.endswith("/"))

    @property
    def base(self) -> str:
        """The URL of the container: ``s3://bucket``, ``https://host:port``."""
        return f"{self.scheme}://{self.container}"

    def child(self, key: str) -> ObjectURL:
        """The object ``key`` (a full key, as a listing returns it) of the same container."""
        return ObjectURL(self.scheme, self.container, key)

    def __str__(self) -> str:
        if self.scheme == "file":
            return "file://" + self.key
        return f"{self.scheme}://{self.container}/{self.key}"


def elide(text: str) -> str:
    """``text`` without user info, query or fragment: safe to print."""
    scheme, _, rest = text.partition("://")
    rest = re.split(r"[?#]", rest, maxsplit=1)[0]
    authority, slash, path = rest.partition("/")
    if "@" in authority:
        authority = "…@" + authority.rpartition("@")[2]
    return f"{scheme}://{authority}{slash}{path}"


def _refuse(text: str, why: str) -> UnsupportedURLError:
    shown = elide(text)
    return UnsupportedURLError(f"{shown}: {why}", detail=shown)


def _check_key(text: str, key: str) -> None:
    body = key[:-1] if key.endswith("/") else key
    if body and any(part in ("", ".", "..") for part in body.split("/")):
        raise _refuse(text, "a key with an empty, '.' or '..' segment cannot be addressed "
                            "in object storage")


def parse_url(text: str) -> ObjectURL:
    """The :class:`ObjectURL` of ``text``; :class:`UnsupportedURLError` (with the URL, its
    secrets elided) for an unknown scheme, user info, a query or fragment, a missing
    bucket or host, or a key no object store can address."""
    if not is_url(text):
        raise UnsupportedURLError(f"{text!r}: not a URL (expected scheme://...)",
                                  detail=text)
    scheme = text.partition(":")[0].lower()
    if scheme not in SCHEMES:
        raise _refuse(text, f"the URL scheme {scheme!r} is not supported (supported: "
                            f"{', '.join(s + '://' for s in SCHEMES)}); a URL is never "
                            "taken for a local path")
    if not text[len(scheme):].startswith("://"):
        raise _refuse(text, f"expected {scheme}://...")
    try:
        parts = urlsplit(text)
    except ValueError as exc:
        raise _refuse(text, f"not a valid URL ({exc})") from None
    if "@" in parts.netloc:
        raise _refuse(text, "credentials in a URL are refused: they come from the "
                            "environment (AWS_ACCESS_KEY_ID, ...), never from a URL that "
                            "reports print")
    if "?" in text or "#" in text:
        raise _refuse(text, "a URL with a query or fragment is refused (it may carry a "
                            "signature, and reports print the URL)")
    host, path = parts.netloc, parts.path
    if scheme == "file":
        if host not in ("", "localhost"):
            raise _refuse(text, f"a file URL on another host ({host!r}) cannot be read")
        local = unquote(path)
        if not local.startswith("/") or "\x00" in local:
            raise _refuse(text, "a file URL names an absolute path (file:///...)")
        return ObjectURL("file", "", local)
    if not host:
        raise _refuse(text, "no bucket or host after " + scheme + "://")
    if scheme in _BUCKET_SCHEMES and not _BUCKET.fullmatch(host):
        raise _refuse(text, f"{host!r} is not a bucket or container name")
    if path in ("", "/") and scheme not in _BUCKET_SCHEMES and not text.endswith("/"):
        raise _refuse(text, "no object path after the host (a prefix URL ends in '/')")
    if path == "" and scheme in _BUCKET_SCHEMES:
        raise _refuse(text, f"names a bucket, not an object: {scheme}://{host}/ (with the "
                            "final '/') lists all of it")
    key = path[1:]
    _check_key(text, key)
    return ObjectURL(scheme, host if scheme in _BUCKET_SCHEMES else host.lower(), key)

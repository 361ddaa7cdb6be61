"""The object-storage side of the input door (canonkit._files.remote and .urls), against
the S3 endpoint and the HTTP server the suite starts (tests/services.py)."""
from __future__ import annotations

import multiprocessing
import os
import sys
from pathlib import Path

import pytest
from services import (DaskCluster, FaultProxy, HTTPServer, S3Prefix, needs_obstore, random_secret,
                      use_endpoint)

from canonkit import errors
from canonkit._files import remote
from canonkit._files.urls import ObjectURL, is_url, parse_url

pytestmark = needs_obstore

# --- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "parsed"), [
    ("s3://bucket/runs/c.jsonl", ObjectURL("s3", "bucket", "runs/c.jsonl")),
    ("S3://bucket/a%20b", ObjectURL("s3", "bucket", "a%20b")),
    ("gs://b/x/", ObjectURL("gs", "b", "x/")),
    ("az://container/k", ObjectURL("az", "container", "k")),
    ("s3://bucket/", ObjectURL("s3", "bucket", "")),
    ("https://Example.org:8443/data/c.jsonl", ObjectURL("https", "example.org:8443",
                                                        "data/c.jsonl")),
    ("http://127.0.0.1:81/", ObjectURL("http", "127.0.0.1:81", "")),
    ("file:///tmp/a%20b.jsonl", ObjectURL("file", "", "/tmp/a b.jsonl")),
    ("file://localhost/tmp/x", ObjectURL("file", "", "/tmp/x")),
])
def test_urls_parse_to_scheme_container_and_key(text: str, parsed: ObjectURL) -> None:
    assert parse_url(text) == parsed
    assert is_url(text)


def test_a_prefix_ends_in_a_slash() -> None:
    assert parse_url("s3://b/runs/").is_prefix and parse_url("s3://b/").is_prefix
    assert not parse_url("s3://b/runs").is_prefix
    assert str(parse_url("s3://b/runs/")) == "s3://b/runs/"


@pytest.mark.parametrize(("text", "says"), [
    ("ftp://host/x", "the URL scheme 'ftp' is not supported"),
    ("hdfs://nn/x", "never taken for a local path"),
    ("s3:/bucket/x", "expected s3://"),
    ("s3://bucket", "names a bucket, not an object"),
    ("s3:///key", "no bucket or host"),
    ("s3://bucket/a//b", "empty, '.' or '..' segment"),
    ("s3://bucket/a/../b", "empty, '.' or '..' segment"),
    ("http://host", "no object path"),
    ("file://otherhost/x", "on another host"),
])
def test_unusable_urls_are_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(errors.UnsupportedURLError, match="^" + text.split("?")[0][:6]) as got:
        parse_url(text)
    assert says in str(got.value) and got.value.code == "unsupported_url"


@pytest.mark.parametrize("text", [
    "s3://AKIAEXAMPLE:hunter2-secret@bucket/key",
    "https://host/c.jsonl?X-Amz-Signature=hunter2-secret",
    "az://container/blob#hunter2-secret",
])
def test_a_url_carrying_a_secret_is_refused_without_printing_it(text: str) -> None:
    with pytest.raises(errors.UnsupportedURLError) as got:
        parse_url(text)
    assert "hunter2" not in str(got.value) and "hunter2" not in str(got.value.detail)


def test_windows_drives_and_plain_paths_are_not_urls() -> None:
    for text in ("C:/data/x.jsonl", "runs/c.jsonl", "./s3:/bucket", "/abs/path", "s3"):
        assert not is_url(text)


# --- S3: listing, reading, identity ---------------------------------------------------------


def test_listing_gives_size_etag_in_directory_walk_order(s3: S3Prefix) -> None:
    names = ["b.jsonl", "a/z.json", "a.jsonl", "a/b/c.json", "a/a.json"]
    etags = {name: s3.put(name, name.encode() * 3) for name in names}
    s3.put_marker("a/")
    s3.put_marker("c/")
    listed = remote.list_prefix(s3.url)
    got = [info.url[len(s3.url):] for info in listed]
    # a level's objects by name, then its sub-prefixes; "a/" is a directory marker, and
    # so is "c/", which the client lists as the empty object "c"
    assert got == ["a.jsonl", "b.jsonl", "c", "a/a.json", "a/z.json", "a/b/c.json"]
    for info in listed[:2] + listed[3:]:
        name = info.url[len(s3.url):]
        assert info.size == 3 * len(name) and info.etag == etags[name]
    assert remote.list_prefix(s3.url + "nothing-here/") == []


def test_ranged_reads_return_exactly_the_bytes_asked(s3: S3Prefix) -> None:
    data = bytes(range(256)) * 100
    s3.put("blob.bin", data)
    info = remote.head(s3.key_url("blob.bin"))
    assert info.size == len(data) and info.etag and info.last_modified is not None
    assert remote.read_range(info, 10, 20) == data[10:20]
    assert remote.read_range(info, 5, 5) == b""
    assert remote.read_object(info) == data
    with pytest.raises(ValueError, match="outside the object"):
        remote.read_range(info, 0, len(data) + 1)
    with pytest.raises(errors.FileTooLargeError):
        remote.read_object(info, max_bytes=100)


def test_open_range_reads_lines_in_blocks_and_seeks_by_object_offset(s3: S3Prefix) -> None:
    lines = [f'{{"n": {i}}}\n'.encode() for i in range(500)]
    data = b"".join(lines)
    s3.put("c.jsonl", data)
    info = remote.head(s3.key_url("c.jsonl"))
    start = len(b"".join(lines[:100]))
    end = len(b"".join(lines[:300]))
    with remote.open_range(info, start, end, block=777) as f:
        assert f.tell() == start
        got = list(f)
        assert got == lines[100:300] and f.read() == b""
        f.seek(start + 3)
        assert f.read(5) == data[start + 3:start + 8]
    with remote.open_range(info) as f:
        assert f.read() == data


def test_an_object_rewritten_since_listing_is_refused_never_blended(s3: S3Prefix) -> None:
    s3.put("c.jsonl", b"old\n" * 1000)
    info = remote.head(s3.key_url("c.jsonl"))
    with remote.open_range(info, block=1000) as f:
        assert f.read(10) == b"old\nold\nol"
        s3.put("c.jsonl", b"new\n" * 1000)  # same size, another ETag
        with pytest.raises(errors.FileChangedError, match="not the object the run started on"):
            f.read()
    with pytest.raises(errors.FileChangedError) as got:
        remote.read_range(info, 0, 4)
    assert got.value.detail == info.url and got.value.code == "input_changed"


def test_an_object_lost_mid_run_names_its_url_and_status(s3: S3Prefix) -> None:
    s3.put("gone.jsonl", b"x\n")
    info = remote.head(s3.key_url("gone.jsonl"))
    remote.delete(s3.key_url("gone.jsonl"))
    with pytest.raises(errors.ObjectNotFoundError) as got:
        remote.read_range(info, 0, 2)
    assert got.value.url == info.url and got.value.status == 404
    assert isinstance(got.value, FileNotFoundError) and info.url in str(got.value)
    with pytest.raises(errors.ObjectNotFoundError, match="not found"):
        remote.head(s3.key_url("never.jsonl"))


def test_a_missing_bucket_says_so(s3: S3Prefix) -> None:
    with pytest.raises(errors.ObjectNotFoundError, match="the bucket does not exist"):
        remote.put("s3://canonkit-no-such-bucket/x", b"1")


# --- S3: conditional writes -------------------------------------------------------------


def test_put_if_none_match_creates_once(s3: S3Prefix) -> None:
    url = s3.key_url("objects/ab/cd")
    etag = remote.put(url, b"first", if_none_match=True)
    with pytest.raises(errors.PreconditionFailedError) as got:
        remote.put(url, b"second", if_none_match=True)
    assert got.value.status == 412 and got.value.detail is None
    info = remote.head(url)
    assert info.etag == etag and remote.read_object(info) == b"first"


def test_put_if_match_is_a_compare_and_swap(s3: S3Prefix) -> None:
    url = s3.key_url("refs/main")
    first = remote.put(url, b"blake3:" + b"0" * 64 + b"\n")
    second = remote.put(url, b"blake3:" + b"1" * 64 + b"\n", if_match=first)
    with pytest.raises(errors.PreconditionFailedError):
        remote.put(url, b"blake3:" + b"2" * 64 + b"\n", if_match=first)  # lost the race
    assert remote.head(url).etag == second
    with pytest.raises(ValueError, match="exclude each other"):
        remote.put(url, b"x", if_none_match=True, if_match=second)


def test_delete_if_match_deletes_only_that_version(s3: S3Prefix) -> None:
    url = s3.key_url("lock")
    old = remote.put(url, b'{"holder": "a"}')
    new = remote.put(url, b'{"holder": "b"}')
    with pytest.raises(errors.PreconditionFailedError):
        remote.delete(url, if_match=old)
    assert remote.head(url).etag == new
    remote.delete(url, if_match=new)
    with pytest.raises(errors.ObjectNotFoundError):
        remote.head(url)
    with pytest.raises(errors.ObjectNotFoundError):
        remote.delete(url, if_match=new)
    remote.delete(url)  # unconditional: a missing object is no error


def test_a_large_file_is_put_in_parts(s3: S3Prefix, tmp_path: Path) -> None:
    big = tmp_path / "pack"
    big.write_bytes(os.urandom(11 << 20))  # over the 5 MiB part size: multipart
    remote.put(s3.key_url("packs/p.pack"), big)
    info = remote.head(s3.key_url("packs/p.pack"))
    assert info.size == 11 << 20
    assert remote.read_range(info, (6 << 20) - 5, (6 << 20) + 5) == \
        big.read_bytes()[(6 << 20) - 5:(6 << 20) + 5]


def test_writes_to_http_and_file_urls_are_refused() -> None:
    with pytest.raises(errors.UnsupportedURLError, match="read-only"):
        remote.put("https://example.org/x", b"1")
    with pytest.raises(errors.UnsupportedURLError, match="local path"):
        remote.head("file:///tmp/x")


# --- retries ------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 500, 503])
def test_throttling_and_5xx_are_retried_with_backoff(s3: S3Prefix, proxied: FaultProxy,
                                                     status: int) -> None:
    s3.put("r.jsonl", b"0123456789")
    info = remote.head(s3.key_url("r.jsonl"))
    proxied.fail(status, 3)
    assert remote.read_range(info, 2, 6) == b"2345"
    assert proxied.faults == 3
    proxied.fail(status, 3, match=lambda method, path: method == "HEAD")
    assert remote.head(s3.key_url("r.jsonl")) == info


def test_a_dropped_connection_is_retried(s3: S3Prefix, proxied: FaultProxy) -> None:
    s3.put("r.jsonl", b"0123456789")
    info = remote.head(s3.key_url("r.jsonl"))
    proxied.drop(2)
    assert remote.read_range(info, 0, 3) == b"012"
    assert proxied.faults == 2


def test_retries_end_in_an_error_naming_url_and_status(s3: S3Prefix,
                                                       proxied: FaultProxy) -> None:
    s3.put("r.jsonl", b"0123456789")
    info = remote.head(s3.key_url("r.jsonl"))
    proxied.fail(503, 10)
    with pytest.raises(errors.ObjectStorageError) as got:
        remote.read_range(info, 0, 3)
    assert got.value.status == 503 and got.value.url == info.url
    assert "after 4 attempts" in str(got.value) and proxied.faults == 4


def test_client_errors_are_not_retried(s3: S3Prefix, proxied: FaultProxy) -> None:
    before = proxied.requests
    with pytest.raises(errors.ObjectNotFoundError):
        remote.head(s3.key_url("absent"))
    proxied.fail(403, 1)
    with pytest.raises(errors.ObjectStorageError, match="access denied") as got:
        remote.head(s3.key_url("absent"))
    assert proxied.requests - before == 2 and got.value.status == 403


def test_a_conditional_put_retried_after_a_lost_answer_says_it_was_retried(
        s3: S3Prefix, proxied: FaultProxy) -> None:
    url = s3.key_url("refs/x")
    proxied.fail(503, 1, match=lambda method, path: method == "PUT")
    remote.put(url, b"one", if_none_match=True)  # 503 before it reached the store: retried
    proxied.fail(500, 1, match=lambda method, path: method == "PUT")
    with pytest.raises(errors.PreconditionFailedError) as got:
        remote.put(url, b"two", if_none_match=True)
    assert got.value.detail == "retried" and "may have been applied" in str(got.value)


# --- credentials ---------------------------------------------------------------------------


def test_no_credential_appears_in_any_error(s3: S3Prefix, monkeypatch: pytest.MonkeyPatch,
                                            capfd: pytest.CaptureFixture[str],
                                            caplog: pytest.LogCaptureFixture) -> None:
    secret, token, key_id = random_secret(), random_secret(), random_secret()
    env = dict(s3.endpoint.env)
    if "CANONKIT_TEST_S3_ENDPOINT" not in os.environ:  # moto takes any credentials
        env.update(AWS_SECRET_ACCESS_KEY=secret, AWS_SESSION_TOKEN=token,
                   AWS_ACCESS_KEY_ID=key_id)
    else:
        secret = token = key_id = env.get("AWS_SECRET_ACCESS_KEY", secret)
    use_endpoint(monkeypatch, env)
    monkeypatch.setattr(remote, "RETRY", remote.RetryPolicy(attempts=2, first=0.01, cap=0.01))
    caplog.set_level("DEBUG")
    messages = []
    url = s3.key_url("k")
    etag = remote.put(url, b"v")
    attempts = [
        lambda: remote.head(s3.key_url("absent")),
        lambda: remote.put(url, b"w", if_none_match=True),
        lambda: remote.put(url, b"w", if_match='"0"'),
        lambda: remote.delete(url, if_match='"0"'),
        lambda: remote.read_range(remote.ObjectInfo(url, 1, '"0"', None), 0, 1),
        lambda: remote.put("s3://canonkit-no-such-bucket/x", b"1"),
    ]
    for attempt in attempts:
        with pytest.raises(errors.CanonkitError) as got:
            attempt()
        messages += [str(got.value), repr(got.value), str(got.value.detail)]
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(remote, "_clients", {})
    with pytest.raises(errors.ObjectStorageError) as got:
        remote.head(url)
    assert got.value.status is None and "no response" in str(got.value)
    messages += [str(got.value), repr(got.value)]
    out, err = capfd.readouterr()
    everything = "\n".join(messages + [out, err, caplog.text])
    for value in (secret, token, key_id):
        assert value not in everything
    assert etag


def test_redact_elides_credentials_and_signatures(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = random_secret()
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", secret)
    text = (f"key {secret} in https://acct.blob.core.windows.net/c/b?sv=2024&sig=abc123 "
            f"and http://h:1/k?X-Amz-Signature=def456")
    clean = remote.redact(text)
    assert secret not in clean and "abc123" not in clean and "def456" not in clean
    assert "https://acct.blob.core.windows.net/c/b?…" in clean


# --- without the extra ------------------------------------------------------------------


def test_without_obstore_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "obstore", None)  # import obstore -> ImportError
    monkeypatch.setattr(remote, "_clients", {})
    with pytest.raises(errors.MissingDependencyError, match=r"canonkit\[s3\]") as got:
        remote.head("s3://bucket/key")
    assert got.value.code == "missing_dependency"


# --- HTTP with range requests (nginx) -------------------------------------------------------


def test_http_objects_are_read_by_range_and_checked_by_etag(http_server: HTTPServer) -> None:
    path = http_server.root / "runs" / "c.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(b"line one\nline two\n")
    url = http_server.url + "runs/c.jsonl"
    info = remote.head(url)
    assert info.size == 18 and info.etag
    assert remote.read_range(info, 5, 8) == b"one"
    with remote.open_range(info, 9) as f:
        assert f.read() == b"line two\n"
    stat = path.stat()
    path.write_bytes(b"line ONE\nline two\n")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    with pytest.raises(errors.FileChangedError, match="not the object the run started on"):
        remote.read_range(info, 5, 8)
    with pytest.raises(errors.ObjectNotFoundError):
        remote.head(http_server.url + "runs/absent.jsonl")
    with pytest.raises(errors.UnsupportedURLError, match="cannot be listed"):
        remote.list_prefix(http_server.url + "runs/")


# --- processes ------------------------------------------------------------------------------


def _read_in_child(info: remote.ObjectInfo, queue: multiprocessing.Queue[bytes]) -> None:
    queue.put(remote.read_range(info, 0, 5))


def test_a_spawned_worker_reads_with_its_own_client(s3: S3Prefix) -> None:
    s3.put("f.jsonl", b"hello world")
    info = remote.head(s3.key_url("f.jsonl"))  # the parent has a client now
    context = multiprocessing.get_context("spawn")
    queue: multiprocessing.Queue[bytes] = context.Queue()
    child = context.Process(target=_read_in_child, args=(info, queue))
    child.start()
    try:
        assert queue.get(timeout=60) == b"hello"
    finally:
        child.join(30)
    assert child.exitcode == 0


def test_the_dask_workers_read_the_bucket_themselves(s3: S3Prefix,
                                                      dask_cluster: DaskCluster) -> None:
    from distributed import Client

    s3.put("d.jsonl", b"from the bucket\n")
    info = remote.head(s3.key_url("d.jsonl"))
    with Client(dask_cluster.address, timeout=30) as client:
        futures = [client.submit(remote.read_range, info, 5, 15, pure=False, workers=[w])
                   for w in client.scheduler_info()["workers"]]
        assert client.gather(futures) == [b"the bucket"] * 2
        pids = client.run(os.getpid)
    assert len(set(pids.values())) == 2 and os.getpid() not in pids.values()

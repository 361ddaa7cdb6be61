"""canonkit._files, the input and output doors: regular-file inputs that never block, file
identities, confined paths, compressed streams whose ends are checked, strict JSON with
located errors, the JSON-lines reader, and outputs written completely or not at all."""
from __future__ import annotations

import errno
import gc
import io
import json
import os
import socket
import stat
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from canonkit import _files
from canonkit._files import streams
from canonkit.errors import (
    BrokenStreamError,
    CanonkitError,
    DuplicateJSONKeyError,
    FileChangedError,
    FileTooLargeError,
    JSONInputError,
    NotRegularFileError,
    OutputPathError,
    PathOutsideError,
)

# --- inputs ------------------------------------------------------------------------


def finishes(call: Callable[[], Any], fifo: Path | None = None, timeout: float = 10.0) -> Any:
    """``call()``'s result or exception, failing the test if it blocks; a reader blocked
    on ``fifo`` is released by opening its write end, so a failure never hangs pytest."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        if fifo is not None:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        thread.join(timeout)
        pytest.fail(f"blocked for more than {timeout} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    for call in (lambda: _files.open_regular(fifo), lambda: _files.read_regular(fifo),
                 lambda: _files.read_json(fifo), lambda: _files.check_regular(fifo)):
        with pytest.raises(NotRegularFileError) as info:
            finishes(call, fifo)
        assert info.value.code == "not_regular_file" and info.value.detail == str(fifo)
        assert "is a FIFO" in str(info.value) and str(fifo) in str(info.value)
        assert isinstance(info.value, OSError) and isinstance(info.value, CanonkitError)


def test_sockets_devices_and_directories_are_refused(tmp_path: Path) -> None:
    sock_path = tmp_path / "s.sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(sock_path))
        for path, kind in ((sock_path, "a socket"), (Path("/dev/null"), "a character device"),
                           (tmp_path, "a directory")):
            with pytest.raises(NotRegularFileError, match=kind):
                finishes(lambda p=path: _files.open_regular(p))  # type: ignore[misc]
    finally:
        server.close()


def test_a_symlink_to_a_regular_file_reads(tmp_path: Path) -> None:
    (tmp_path / "real").write_bytes(b"abc")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert _files.read_regular(tmp_path / "link") == b"abc"
    with _files.open_regular(tmp_path / "real") as handle:  # blocking mode restored
        assert os.get_blocking(handle.fileno())


def test_a_swapped_path_is_checked_again_after_opening(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    monkeypatch.setattr(_files.inputs, "check_regular", lambda path: None)  # lose the race
    with pytest.raises(NotRegularFileError):
        finishes(lambda: _files.open_regular(fifo), fifo)


def test_read_json(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_bytes(b'{"a": [1, 2]}')
    assert _files.read_json(path) == {"a": [1, 2]}
    path.write_bytes(b'{"a": 1, "a": 2}')
    with pytest.raises(DuplicateJSONKeyError, match="doc.json"):
        _files.read_json(path)
    with pytest.raises(FileTooLargeError):
        _files.read_json(path, max_bytes=3)


def test_read_regular_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert _files.read_regular(path, max_bytes=10) == b"x" * 10
    with pytest.raises(FileTooLargeError) as info:
        _files.read_regular(path, max_bytes=9)
    assert info.value.code == "file_too_large" and info.value.detail == str(path)
    with pytest.raises(FileNotFoundError):
        _files.read_regular(tmp_path / "missing")


def test_a_nul_byte_in_a_path_is_an_os_error(tmp_path: Path) -> None:
    for call in (_files.check_regular, _files.open_regular, _files.read_regular,
                 _files.read_json, _files.open_stream):
        with pytest.raises(OSError) as info:
            call(f"{tmp_path}/a\x00b")  # type: ignore[operator]
        assert info.value.errno == errno.EINVAL and "NUL" in str(info.value)


def test_identity_refuses_a_replaced_or_rewritten_file(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b"[1]\n[2]\n")
    first = _files.Identity.of(path.stat())
    assert _files.read_regular(path, expect=first) == b"[1]\n[2]\n"
    (tmp_path / "new").write_bytes(b"[3]\n[4]\n")
    os.replace(tmp_path / "new", path)
    with pytest.raises(FileChangedError, match="replaced by another file") as info:
        _files.open_regular(path, expect=first)
    assert info.value.code == "input_changed" and isinstance(info.value, OSError)
    assert info.value.detail == str(path)
    second = _files.Identity.of(path.stat())
    with _files.open_regular(path, expect=second) as handle:
        handle.read(1)
        with open(path, "r+b") as other:  # rewritten in place while being read
            other.write(b"[5]")
        os.utime(path, ns=(second.mtime_ns + 10**9, second.mtime_ns + 10**9))
        with pytest.raises(FileChangedError, match="rewritten: modified"):
            _files.check_unchanged(handle, path, second)
        _files.check_unchanged(handle, path, None)  # nothing expected, nothing checked
    path.write_bytes(b"[6]")
    assert "size 8 -> 3 bytes" in (second.change(_files.Identity.of(path.stat())) or "")


def test_resolve_within_keeps_a_name_under_its_directory(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.json").write_bytes(b"{}")
    (tmp_path / "out.json").symlink_to("/etc/hostname")
    (tmp_path / "in.json").symlink_to(tmp_path / "sub" / "x.json")
    assert _files.resolve_within(tmp_path, "sub/x.json") == str(tmp_path / "sub" / "x.json")
    assert _files.resolve_within(tmp_path, "in.json") == str(tmp_path / "sub" / "x.json")
    assert _files.resolve_within(tmp_path, "sub/../sub/x.json").endswith("x.json")
    for name in ("../x.json", "/etc/passwd", "out.json", "sub/../../x", "a\x00b"):
        with pytest.raises(PathOutsideError) as info:
            _files.resolve_within(tmp_path, name)
        assert info.value.code == "path_outside" and info.value.detail == name


def test_read_regular_reads_what_the_file_held_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc")
    with pytest.raises(NotRegularFileError):
        finishes(lambda: _files.read_regular("/dev/zero"))
    with pytest.raises(FileTooLargeError):  # refused on fstat, before reading
        _files.read_regular(path, max_bytes=2)


# --- compressed streams ------------------------------------------------------------

zstandard = pytest.importorskip("zstandard")


def _zstd(data: bytes, pieces: int, checksum: bool, sized: bool, skippable: bool
          ) -> tuple[bytes, set[int]]:
    """``data`` in ``pieces`` zstd frames (streamed ones, without a content size, unless
    ``sized``), and the offsets where a frame ends."""
    compressor = zstandard.ZstdCompressor(level=1, write_checksum=checksum,
                                          write_content_size=sized)
    step = max(1, -(-len(data) // max(1, pieces)))
    frames = []
    for i in range(0, len(data), step):
        out = io.BytesIO()
        if sized:
            out.write(compressor.compress(data[i:i + step]))
        else:
            with compressor.stream_writer(out, closefd=False) as writer:
                writer.write(data[i:i + step])
        frames.append(out.getvalue())
    if skippable:
        frames.insert(len(frames) // 2, b"\x50\x2a\x4d\x18" + (5).to_bytes(4, "little") + b"skip!")
    frames = frames or [compressor.compress(b"")]
    return b"".join(frames), {sum(map(len, frames[:k + 1])) for k in range(len(frames))}


def _gzip(data: bytes, pieces: int) -> tuple[bytes, set[int]]:
    """``data`` in ``pieces`` gzip members, and the offsets where a member ends."""
    import gzip

    step = max(1, -(-len(data) // max(1, pieces)))
    members = [gzip.compress(data[i:i + step], compresslevel=1)
               for i in range(0, len(data), step)] or [gzip.compress(b"")]
    return b"".join(members), {sum(map(len, members[:k + 1])) for k in range(len(members))}


def _decode(kind: str, blob: bytes) -> tuple[bytes, BrokenStreamError | None]:
    """Everything decoded, and the error that ended the stream (None: clean)."""
    source = io.BytesIO(blob)
    chunks = (streams.zstd_chunks(source.read, "f", zstandard) if kind == "zst"
              else streams.gzip_chunks(source.read, "f"))
    out = bytearray()
    try:
        for chunk in chunks:
            out += chunk
    except BrokenStreamError as exc:
        return bytes(out), exc
    return bytes(out), None


_DATA = st.one_of(st.binary(max_size=3000),
                  st.lists(st.sampled_from([b'{"a":1}\n', b"x" * 700, b"\x00" * 5000]),
                           max_size=80).map(b"".join))


@settings(max_examples=120, deadline=None)
@given(data=_DATA, pieces=st.integers(1, 6), checksum=st.booleans(), sized=st.booleans(),
       skippable=st.booleans(), kind=st.sampled_from(["zst", "gz"]), cut=st.floats(0, 1),
       trailer=st.sampled_from([b"", b"\x00", b"junk", b"\x1f\x8b", b"(\xb5/\xfd"]))
def test_compressed_streams_decode_whole_or_say_where_they_break(
        data: bytes, pieces: int, checksum: bool, sized: bool, skippable: bool, kind: str,
        cut: float, trailer: bytes) -> None:
    blob, ends = (_zstd(data, pieces, checksum, sized, skippable) if kind == "zst"
                  else _gzip(data, pieces))
    assert _decode(kind, blob) == (data, None)
    if trailer:  # bytes after the last frame: all of the data first, then the error
        got, error = _decode(kind, blob + trailer)
        assert got == data and error is not None and error.offset == len(blob)
        assert error.code == "broken_stream"
        if trailer not in (b"\x1f\x8b", b"(\xb5/\xfd"):  # those start a (cut) frame
            assert "after the last" in str(error)
    end = int(len(blob) * cut)
    if 0 < end < len(blob):  # a cut: a prefix of the data, then the error
        got, error = _decode(kind, blob[:end])
        assert data.startswith(got)
        if end in ends:  # between two frames: a shorter stream, as the format allows
            assert error is None
        else:
            assert error is not None and error.offset is not None and error.offset < end
            assert max([0, *(e for e in ends if e <= end)]) == error.offset


def test_a_corrupt_or_empty_stream_is_a_broken_stream() -> None:
    data = b"a line of text\n" * 5000
    for kind, (blob, _) in (("zst", _zstd(data, 1, True, True, False)), ("gz", _gzip(data, 1))):
        got, error = _decode(kind, b"")
        assert got == b"" and error is not None and "empty" in str(error)
        middle = len(blob) // 2
        broken = blob[:middle] + bytes([blob[middle] ^ 0xFF]) + blob[middle + 1:]
        got, error = _decode(kind, broken)  # found where the format can (gzip: its CRC)
        assert error is not None and error.offset == 0
        assert _decode(kind, b"not compressed at all")[1] is not None


def test_decoded_output_is_bounded_by_blocks_not_by_declared_sizes() -> None:
    zeros = b"\x00" * (64 << 20)  # compresses to a few KiB: a bomb in miniature
    for kind, blob in (("zst", zstandard.ZstdCompressor(level=1).compress(zeros)),
                       ("gz", _gzip(zeros, 1)[0])):
        assert len(blob) < 1 << 20
        source = io.BytesIO(blob)
        chunks = (streams.zstd_chunks(source.read, "f", zstandard) if kind == "zst"
                  else streams.gzip_chunks(source.read, "f"))
        sizes = [len(chunk) for chunk in chunks]
        assert sum(sizes) == len(zeros) and max(sizes) <= 1 << 20, kind


def test_open_stream_reads_plain_gzip_and_zstd_files(tmp_path: Path) -> None:
    data = b'{"n": 1}\n' * 1000
    (tmp_path / "c.jsonl").write_bytes(data)
    (tmp_path / "c.jsonl.gz").write_bytes(_gzip(data, 3)[0])
    (tmp_path / "c.jsonl.zst").write_bytes(_zstd(data, 3, True, True, True)[0])
    (tmp_path / "cut.jsonl.zst").write_bytes(_zstd(data, 3, True, True, False)[0][:-3])
    for name in ("c.jsonl", "c.jsonl.gz", "c.jsonl.zst"):
        with _files.open_stream(tmp_path / name) as opened:
            assert opened.stream.read() == data
            assert opened.disk_bytes == (tmp_path / name).stat().st_size
    with _files.open_stream(tmp_path / "cut.jsonl.zst") as opened:
        with pytest.raises(BrokenStreamError, match="does not end"):
            opened.stream.read()
    os.mkfifo(tmp_path / "p.jsonl.gz")
    with pytest.raises(NotRegularFileError):
        finishes(lambda: _files.open_stream(tmp_path / "p.jsonl.gz"))


# --- strict JSON -------------------------------------------------------------------


@pytest.mark.parametrize(("text", "offset", "key"), [
    ('{"a": 1, "a": 2}', 9, "a"),
    ('[0, {"x": {"y": 1, "y": 2}}]', 19, "y"),
    ('{"é": 1, "b": [], "é": 2}', 19, "é"),  # bytes offset: é is two bytes
    ('{"a": {"b": 1}, "c": [{"d": 1, "e": {"f": [1, {"g": 1, "g": 2}]}}]}', 55, "g"),
    ('{"a\\u0041": 1, "aA": 2}', 15, "aA"),  # the same key, spelled differently
])
def test_duplicate_keys_are_refused_with_their_offset(text: str, offset: int, key: str) -> None:
    data = text.encode()
    with pytest.raises(DuplicateJSONKeyError) as info:
        _files.loads_json(data, source="doc.json")
    assert info.value.code == "duplicate_json_key" and isinstance(info.value, JSONInputError)
    assert info.value.detail == key and info.value.offset == offset
    assert data[offset:offset + 1] == b'"'
    assert "doc.json" in str(info.value) and f"offset {offset}" in str(info.value)
    with pytest.raises(DuplicateJSONKeyError) as on_text:  # text input: character offsets
        _files.loads_json(text)
    assert on_text.value.offset == len(data[:offset].decode())


def test_duplicates_can_be_noted_instead() -> None:
    data = b'{"a": 1, "a": 2, "b": [{"x": 1, "y": 0, "x": 2}], "a": 3}'
    value, repeats = _files.loads_json_noting_duplicates(data)
    assert value == {"a": 3, "b": [{"x": 2, "y": 0}]}
    assert repeats == [("a", 9), ("x", 40), ("a", 50)]
    assert all(data[i:i + 1] == b'"' for _, i in repeats)
    assert _files.loads_json_noting_duplicates(b'{"a": {"a": 1}}') == ({"a": {"a": 1}}, [])


@pytest.mark.parametrize(("text", "offset", "detail"), [
    ('{"a": NaN}', 6, "NaN"), ("[1, Infinity]", 4, "Infinity"),
    ('[{"b": -Infinity}]', 7, "-Infinity"),
])
def test_nan_and_infinity_are_refused(text: str, offset: int, detail: str) -> None:
    with pytest.raises(JSONInputError) as info:
        _files.loads_json(text.encode())
    assert type(info.value) is JSONInputError
    assert (info.value.offset, info.value.detail) == (offset, detail)
    assert f"JSON has no {detail}" in str(info.value)


def test_integers_are_bounded_before_conversion() -> None:
    limit = _files.MAX_INTEGER_DIGITS
    assert _files.loads_json(b"[" + b"9" * limit + b"]") == [int("9" * limit)]
    assert _files.loads_json(b"-" + b"9" * limit) == -int("9" * limit)
    for text in (b'{"n": ' + b"1" * (limit + 1) + b"}", b'[0, -' + b"7" * 100_000 + b"]"):
        with pytest.raises(JSONInputError) as info:
            _files.loads_json(text)
        assert info.value.offset == text.index(b"1" if b"1" in text else b"-")
        assert "more than 4300 digits" in str(info.value)
    # a long float mantissa or exponent is not an integer conversion
    assert _files.loads_json(b"0." + b"5" * 10_000) == 0.5555555555555556


def test_an_integer_bounded_even_with_the_interpreter_limit_lifted() -> None:
    old = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    try:
        with pytest.raises(JSONInputError):
            _files.loads_json(b"1" * 1_000_000)
    finally:
        sys.set_int_max_str_digits(old)


@pytest.mark.parametrize(("data", "offset"), [
    (b"\xff{}", 0), (b'{"a": "\xc3"}', 7), (b"{", 1), (b"", 0), (b"[1, 2", 5),
    (b"\xef\xbb\xbf{}", 0), (b'["\xc3\xa9", x]', 7), (b"{} {}", 3),
])
def test_syntax_and_encoding_errors_carry_byte_offsets(data: bytes, offset: int) -> None:
    with pytest.raises(JSONInputError) as info:
        _files.loads_json(data)
    assert info.value.code == "invalid_json_input" and info.value.offset == offset


def test_deep_nesting_is_an_invalid_json_error() -> None:
    with pytest.raises(JSONInputError, match="nested too deeply"):
        _files.loads_json(b"[" * 100_000 + b"]" * 100_000)
    # the locator is iterative: a repeat after deep (but parseable) nesting is located
    deep = b'{"k": ' + b"[" * 500 + b"]" * 500 + b', "k": 1}'
    with pytest.raises(DuplicateJSONKeyError) as info:
        _files.loads_json(deep)
    assert info.value.offset == deep.rindex(b'"k"')


@pytest.mark.parametrize(("text", "offset", "detail"), [
    ('{"a": 1e400}', 6, "number"), ("[0, -2E+999]", 4, "number"),
    ('["\\ud800"]', 2, "surrogate"), ('{"k\\udfff": 1}', 3, "surrogate"),
    ('["ok", "\\ud83d\\ude00", "\\ud83dx"]', 24, "surrogate"),
    ('["\\ud800\\ud800\\udc00"]', 2, "surrogate"),
])
def test_unrepresentable_numbers_and_lone_surrogates_are_refused(text: str, offset: int,
                                                                 detail: str) -> None:
    with pytest.raises(JSONInputError) as info:
        _files.loads_json(text.encode())
    assert (info.value.offset, info.value.detail) == (offset, detail)
    assert _files.loads_json(b'["\\ud83d\\ude00", "\\\\ud800", 1e308]') == [
        "\U0001f600", "\\ud800", 1e308]  # a pair, an escaped backslash, a finite float


def test_the_first_problem_in_the_text_is_the_one_reported() -> None:
    # the hooks see a repeated key when its object closes, a huge number at once: the
    # report still names what comes first in the text
    text = b'[{"a": 1, "a": 2, "n": 1e400}]'
    with pytest.raises(DuplicateJSONKeyError) as info:
        _files.loads_json(text)
    assert info.value.offset == text.index(b'"a"', 5)
    value, repeats = _files.loads_json_noting_duplicates(b'{"a": 1, "a": 2, "n": ' +
                                                         b"9" * 5000 + b', "a": 3}')
    assert [key for key, _ in repeats] == ["a", "a"] and value["a"] == 3
    with pytest.raises(JSONInputError, match="too large for a float"):
        _files.loads_json_noting_duplicates(b'{"a": 1, "a": 2, "n": 1e400}')


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner,
                                                                  max_size=4),
    max_leaves=20)


@settings(max_examples=200)
@given(value=_JSON, indent=st.sampled_from([None, 0, 2]), ascii_only=st.booleans())
def test_loads_json_agrees_with_json_on_valid_documents(value: Any, indent: int | None,
                                                        ascii_only: bool) -> None:
    text = json.dumps(value, indent=indent, ensure_ascii=ascii_only)
    assert _files.loads_json(text.encode()) == json.loads(text)
    assert _files.loads_json_noting_duplicates(text) == (json.loads(text), [])


@settings(max_examples=200)
@given(value=st.dictionaries(st.text(max_size=4), _JSON, min_size=1, max_size=4),
       data=st.data())
def test_a_repeated_key_is_located_at_the_repeat(value: dict[str, Any],
                                                 data: st.DataObject) -> None:
    key = data.draw(st.sampled_from(sorted(value)))
    head = json.dumps(value)[:-1]
    text = f'[{head}, {json.dumps(key)}: 0}}]'.encode()
    with pytest.raises(DuplicateJSONKeyError) as info:
        _files.loads_json(text)
    assert info.value.offset == len(head.encode()) + 3 and info.value.detail == key


# --- JSON lines --------------------------------------------------------------------


def test_json_lines_numbers_every_physical_line_and_marks_blank_ones() -> None:
    raw = b'{"a": 1}\n\n \t\r\n\x0c\n[1]\r\n' + b"x" * 30 + b"\n" + b"y" * 40 + b'\n"end"'
    reader = _files.JSONLines(io.BytesIO(raw), max_line=20)
    assert list(reader) == [(1, b'{"a": 1}\n'), (2, b""), (3, b""),
                            (4, b"\x0c\n"),  # not JSON whitespace: a document (invalid)
                            (5, b"[1]\r\n"), (6, None), (7, None), (8, b'"end"')]
    assert reader.lines == 8 and reader.consumed == len(raw)


def test_json_lines_skip_an_over_long_line_in_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_files.JSONLines, "_SKIP", 7)
    raw = b"z" * 100 + b"\n{}\n"
    reader = _files.JSONLines(io.BytesIO(raw), max_line=10)
    assert list(reader) == [(1, None), (2, b"{}\n")]


def test_json_lines_stop_after_a_byte_budget() -> None:
    raw = b"[1]\n\n[2]\n[3]\n"
    stream = io.BytesIO(raw)
    stream.seek(4)
    reader = _files.JSONLines(stream, max_line=100, stop_after=5)
    assert list(reader) == [(1, b""), (2, b"[2]\n")] and reader.consumed == 5


class _Unseekable(io.RawIOBase):
    """A stream that cannot seek (a decoded .gz/.zst stream, a pipe)."""

    def __init__(self, data: bytes) -> None:
        self._data = io.BytesIO(data)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self._data.readinto(buffer)


@pytest.mark.parametrize("seekable", [True, False])
def test_json_lines_longer_than_a_piece_are_read_whole_or_skipped(
        monkeypatch: pytest.MonkeyPatch, seekable: bool) -> None:
    monkeypatch.setattr(_files.JSONLines, "_PIECE", 8)
    monkeypatch.setattr(_files.JSONLines, "_SKIP", 5)
    raw = (b"[1]\n" + b"[" + b"7," * 20 + b"7]\n" + b"x" * 60 + b"\n" + b" " * 30 + b"\n"
           + b"[" + b"2," * 9 + b"2]")
    stream: Any = io.BytesIO(raw) if seekable else io.BufferedReader(_Unseekable(raw), 4)
    reader = _files.JSONLines(stream, max_line=50)
    assert list(reader) == [(1, b"[1]\n"), (2, b"[" + b"7," * 20 + b"7]\n"), (3, None),
                            (4, b""), (5, b"[" + b"2," * 9 + b"2]")]
    assert reader.lines == 5 and reader.consumed == len(raw)


def test_an_over_long_line_of_a_seekable_file_is_never_held(
        monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []

    class Watched(io.BytesIO):
        def read(self, size: int | None = -1) -> bytes:
            data = super().read(size)
            reads.append(len(data))
            return data

        def readline(self, size: int | None = -1) -> bytes:
            data = super().readline(size)
            reads.append(len(data))
            return data

    monkeypatch.setattr(_files.JSONLines, "_SKIP", 1000)
    raw = b"z" * 100_000 + b"\n{}\n"
    reader = _files.JSONLines(Watched(raw), max_line=10_000)
    assert list(reader) == [(1, None), (2, b"{}\n")] and reader.consumed == len(raw)
    assert max(reads) <= 10_001  # blocks and the first piece: the line was never held


# --- outputs -----------------------------------------------------------------------


def _names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path: Path) -> None:
    target = tmp_path / "out.bin"
    _files.write_atomic(target, b"one")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask
    target.chmod(0o600)
    _files.write_atomic(target, b"two" * 100_000)  # several buffer flushes
    assert target.read_bytes() == b"two" * 100_000
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert _names(tmp_path) == ["out.bin"]


@settings(max_examples=30)
@given(sizes=st.lists(st.integers(0, 150_000), max_size=8))
def test_writes_of_any_sizes_arrive_in_order(tmp_path_factory: pytest.TempPathFactory,
                                             sizes: list[int]) -> None:
    target = tmp_path_factory.mktemp("w") / "out"
    chunks = [bytes([i % 251]) * n for i, n in enumerate(sizes)]
    with _files.AtomicWriter(target) as out:
        for chunk in chunks:
            out.write(memoryview(chunk) if len(chunk) % 2 else chunk)
    assert target.read_bytes() == b"".join(chunks)


def _fail_partials_with(code: int, monkeypatch: pytest.MonkeyPatch, after: int = 0) -> None:
    """os.write to a ``.partial`` temporary writes ``after`` bytes, then fails with
    ``code`` (a full disk: ENOSPC)."""
    real = os.write
    budget = {"left": after}

    def write(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".partial"):
            if budget["left"] <= 0:
                raise OSError(code, os.strerror(code))
            n = min(len(data), budget["left"])
            budget["left"] -= n
            return real(fd, memoryview(data)[:n])
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


@pytest.mark.parametrize("after", [0, 1, 70_000])
def test_a_full_disk_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, after: int) -> None:
    target = tmp_path / "report.jsonl"
    target.write_bytes(b"old report\n")
    _fail_partials_with(errno.ENOSPC, monkeypatch, after)
    with pytest.raises(OSError) as info:
        _files.write_atomic(target, b"new" * 200_000)
    assert info.value.errno == errno.ENOSPC
    assert target.read_bytes() == b"old report\n"
    assert _names(tmp_path) == ["report.jsonl"]
    # line by line through the writer: the failure surfaces in write() or commit()
    writer = _files.AtomicWriter(target)
    with pytest.raises(OSError):
        for _ in range(100_000):
            writer.write(b"a line of the new report\n")
        writer.commit()
    assert writer.closed and _names(tmp_path) == ["report.jsonl"]
    assert target.read_bytes() == b"old report\n"


def test_fsync_file_before_rename_and_directory_after(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd: int) -> None:
        calls.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def replace(src: Any, dst: Any) -> None:
        calls.append(("replace", os.fspath(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    _files.write_atomic(tmp_path / "f", b"data")
    assert [c[0] for c in calls] == ["fsync", "replace", "fsync"]
    assert calls[0][1].endswith(".partial") and calls[1][1] == str(tmp_path / "f")
    assert calls[2][1] == str(tmp_path)


def test_an_exception_or_abort_or_garbage_collection_removes_the_temporary(
        tmp_path: Path) -> None:
    target = tmp_path / "out"
    target.write_bytes(b"old")
    with pytest.raises(KeyboardInterrupt):
        with _files.AtomicWriter(target) as out:
            out.write(b"new")
            raise KeyboardInterrupt
    assert _names(tmp_path) == ["out"] and target.read_bytes() == b"old"
    writer = _files.AtomicWriter(target)
    writer.write(b"x")
    writer.abort()
    writer.abort()  # idempotent
    with pytest.raises(ValueError):
        writer.write(b"y")
    assert _names(tmp_path) == ["out"]
    forgotten = _files.AtomicWriter(target)
    assert len(_names(tmp_path)) == 2
    del forgotten
    gc.collect()
    assert _names(tmp_path) == ["out"] and target.read_bytes() == b"old"


def test_a_failed_rename_removes_the_temporary(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(src: Any, dst: Any) -> None:
        raise OSError(errno.EXDEV, "rename refused")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="rename refused"):
        _files.write_atomic(tmp_path / "f", b"data")
    assert _names(tmp_path) == []


def test_output_paths_are_validated_before_work(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    source = tmp_path / "in.json"
    source.write_bytes(b"{}")
    (tmp_path / "alias.json").symlink_to(source)
    os.link(source, tmp_path / "hard.json")
    refused = {
        tmp_path: "is a directory",
        fifo: "is a FIFO",
        tmp_path / "missing" / "out": "does not exist",
        source: "is one of the inputs",
        tmp_path / "alias.json": "is one of the inputs",
        tmp_path / "hard.json": "is one of the inputs",
        tmp_path / "." / "in.json": "is one of the inputs",
        "": "empty",
    }
    for path, reason in refused.items():
        with pytest.raises(OutputPathError, match=reason) as info:
            _files.validate_output_path(path, inputs=[source])
        assert info.value.code == "invalid_output_path" and isinstance(info.value, OSError)
        with pytest.raises(OutputPathError):
            _files.AtomicWriter(path, inputs=[source])
    assert source.read_bytes() == b"{}" and fifo.exists()
    # a symlinked output is written where it points, the link stays a link
    (tmp_path / "link").symlink_to(tmp_path / "target")
    assert _files.validate_output_path(tmp_path / "link") == str(tmp_path / "target")
    _files.write_atomic(tmp_path / "link", b"via link")
    assert (tmp_path / "link").is_symlink() and (tmp_path / "target").read_bytes() == b"via link"
    # a directory the process may not write to (simulated: this suite may run as root)
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(OutputPathError, match="not writable"):
        _files.validate_output_path(tmp_path / "new")


def test_devices_are_never_replaced_and_inputs_dirs_are_refused(tmp_path: Path) -> None:
    for device in ("/dev/null", "/dev/zero"):
        with pytest.raises(OutputPathError, match="is a character device"):
            _files.AtomicWriter(device)
    (tmp_path / "store" / "objects").mkdir(parents=True)
    for path in (tmp_path / "store" / "x", tmp_path / "store" / "objects" / "y",
                 tmp_path / "store"):
        with pytest.raises(OutputPathError):
            _files.validate_output_path(path, input_dirs=[tmp_path / "store"])
    (tmp_path / "into").symlink_to(tmp_path / "store" / "z")  # through a link, too
    with pytest.raises(OutputPathError, match="inside"):
        _files.validate_output_path(tmp_path / "into", input_dirs=[tmp_path / "store"])
    assert _files.validate_output_path(tmp_path / "beside", input_dirs=[tmp_path / "store"])


def test_replace_false_never_overwrites_even_a_file_that_appears_meanwhile(
        tmp_path: Path) -> None:
    target = tmp_path / "corpus.jsonl"
    target.write_bytes(b"old")
    with pytest.raises(OutputPathError, match="exists"):
        _files.AtomicWriter(target, replace=False)
    fresh = tmp_path / "fresh.jsonl"
    writer = _files.AtomicWriter(fresh, replace=False)
    writer.write(b"new")
    fresh.write_bytes(b"someone else's")  # appears between the check and the commit
    with pytest.raises(OutputPathError, match="exists"):
        writer.commit()
    assert fresh.read_bytes() == b"someone else's" and writer.closed
    _files.write_atomic(tmp_path / "third.jsonl", b"3", replace=False)
    assert (tmp_path / "third.jsonl").read_bytes() == b"3"
    assert _names(tmp_path) == ["corpus.jsonl", "fresh.jsonl", "third.jsonl"]


def test_a_target_swapped_for_a_fifo_or_directory_before_commit_is_left(tmp_path: Path
                                                                         ) -> None:
    for swap in (os.mkfifo, os.mkdir):
        target = tmp_path / f"out-{swap.__name__}"
        writer = _files.AtomicWriter(target)
        writer.write(b"data")
        swap(target)
        with pytest.raises(OutputPathError, match="became"):
            writer.commit()
        assert not target.is_file() and writer.closed
    assert sorted(_names(tmp_path)) == ["out-mkdir", "out-mkfifo"]


def test_concurrent_writers_never_collide(tmp_path: Path) -> None:
    target = tmp_path / "shared.out"
    contents = [bytes([65 + i]) * (300_000 + i) for i in range(8)]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(contents))

    def writer(data: bytes) -> None:
        try:
            barrier.wait()
            for _ in range(5):
                _files.write_atomic(target, data)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(c,)) for c in contents]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert target.read_bytes() in contents
    assert _names(tmp_path) == ["shared.out"]


def test_concurrent_processes_never_collide(tmp_path: Path) -> None:
    target = tmp_path / "shared.out"
    script = ("import sys; from canonkit import _files\n"
              "for _ in range(20): _files.write_atomic(sys.argv[1], sys.argv[2].encode() * 50000)")
    procs = [subprocess.Popen([sys.executable, "-c", script, str(target), letter])
             for letter in "pqrs"]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert target.read_bytes() in [c.encode() * 50000 for c in "pqrs"]
    assert _names(tmp_path) == ["shared.out"]


def test_write_exclusive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new"
    _files.write_exclusive(path, b"abc", mode=0o644)
    assert path.read_bytes() == b"abc" and stat.S_IMODE(path.stat().st_mode) & 0o777 <= 0o644
    with pytest.raises(FileExistsError):
        _files.write_exclusive(path, b"again")
    real = os.write

    def full(fd: int, data: Any) -> int:
        if os.readlink(f"/proc/self/fd/{fd}").endswith("other"):
            raise OSError(errno.ENOSPC, "full")
        return real(fd, data)

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError):
        _files.write_exclusive(tmp_path / "other", b"abc")
    assert _names(tmp_path) == ["new"]


# --- numbers -----------------------------------------------------------------------


@pytest.mark.parametrize(("text", "value"), [
    ("0", 0), ("7", 7), (str(2**64 - 1), 2**64 - 1), (str(2**64), None), ("01", None),
    ("-1", None), ("1e3", None), (" 1", None), ("", None), ("9" * 5000, None),
    ("١", None),  # a non-ASCII digit: int() would take it
])
def test_decimal_uint64(text: str, value: int | None) -> None:
    assert _files.decimal_uint64(text) == value


def test_long_integers_are_kept_unconverted_when_noting() -> None:
    digits = "8" * 5000
    value, repeats = _files.loads_json_noting_duplicates(f'{{"n": -{digits}, "m": 1}}')
    assert repeats == [] and value["m"] == 1
    kept = value["n"]
    assert isinstance(kept, _files.LongInteger) and kept.digits == "-" + digits
    assert len(kept) == 5000 and repr(kept) == "<integer of 5000 digits>"
    assert kept == _files.LongInteger("-" + digits) and kept != -int("8" * 10)


def test_an_interrupt_as_the_temporary_is_created_leaves_no_partial(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C handled the moment ``os.open`` has made the temporary (Python runs signal
    handlers between calls, so a KeyboardInterrupt can arrive before the writer holds the
    descriptor) leaves no ``.partial`` behind and no target."""
    from canonkit._files import outputs

    real_open = os.open

    def open_then_interrupt(path: str, flags: int, mode: int = 0o777) -> int:
        real_open(path, flags, mode)
        raise KeyboardInterrupt

    monkeypatch.setattr(outputs.os, "open", open_then_interrupt)
    with pytest.raises(KeyboardInterrupt):
        outputs.AtomicWriter(tmp_path / "report.jsonl")
    monkeypatch.undo()
    gc.collect()
    assert sorted(p.name for p in tmp_path.iterdir()) == []

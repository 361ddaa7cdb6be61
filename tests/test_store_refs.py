"""Refs as fsck and gc see them: one enumeration of refs/ (STORE.md §1, §3, §4).

Anything under refs/ that fsck flags — a name the rule does not allow (a space, a
non-ASCII or non-UTF-8 byte), bad content, a symlink to a file or to a directory of refs,
something that is not a file — makes gc refuse before it deletes anything, naming the
entry: such a ref may be the only root of the objects gc would otherwise collect. And
every name the rule allows can be set, read and deleted, up to its 1024 bytes.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from canonkit import errors
from canonkit.store import Store

MAX_REF_NAME = 1024    # bytes, the documented rule (docs/store.md)
MAX_REF_SEGMENT = 255  # bytes per segment: a file name's limit

ENV = {**os.environ, "PYTHONPATH": os.pathsep.join(
    [str(Path(__file__).parent.parent / "src"), os.environ.get("PYTHONPATH", "")])}


def _store_with_hidden_root(tmp_path: Path) -> tuple[Store, str, Path]:
    """A store whose only root of ``target`` is about to be a ref gc cannot read."""
    store = Store.init(tmp_path / "s", durable=False)
    target = store.put(b"only reachable from the odd ref")
    store.set_ref("main", store.put(b"something else"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sentinel").write_text("untouched")
    return store, target, outside


def _bad_name(name: bytes) -> Callable[[Path, str, Path], str]:
    def make(refs: Path, target: str, outside: Path) -> str:
        path = os.path.join(os.fsencode(refs), name)
        with open(path, "wb") as fh:
            fh.write((target + "\n").encode())
        return "ref_bad_name"
    return make


def _symlinked_dir(refs: Path, target: str, outside: Path) -> str:
    (outside / "release").write_text(target + "\n")
    (refs / "team").symlink_to(outside, target_is_directory=True)
    return "symlink"


def _symlinked_file(refs: Path, target: str, outside: Path) -> str:
    (outside / "ref").write_text(target + "\n")
    (refs / "linked").symlink_to(outside / "ref")
    return "symlink"


def _bad_content(refs: Path, target: str, outside: Path) -> str:
    (refs / "short").write_text(target)  # no newline
    return "ref_bad_content"


def _fifo(refs: Path, target: str, outside: Path) -> str:
    os.mkfifo(refs / "pipe")
    return "unexpected_file"


def _huge(refs: Path, target: str, outside: Path) -> str:
    with open(refs / "huge", "wb") as fh:  # sparse: read whole it would be 2 GiB
        fh.write((target + "\n").encode())
        fh.truncate(2 << 30)
    return "ref_bad_content"


ODD_REFS = {
    "space": _bad_name(b"release 1"),
    "unicode": _bad_name("é".encode()),
    "not utf-8": _bad_name(b"caf\xe9"),
    "symlinked directory": _symlinked_dir,
    "symlinked file": _symlinked_file,
    "bad content": _bad_content,
    "fifo": _fifo,
    "huge sparse file": _huge,
}


@pytest.mark.parametrize("kind", ODD_REFS)
def test_gc_refuses_while_a_ref_is_flagged_by_fsck(tmp_path: Path, kind: str) -> None:
    store, target, outside = _store_with_hidden_root(tmp_path)
    code = ODD_REFS[kind](Path(store.root, "refs"), target, outside)
    flagged = [f for f in store.fsck().findings if f.path.startswith("refs/")]
    assert [f.code for f in flagged] == [code]
    with pytest.raises(errors.StoreError) as info:
        store.gc(grace_seconds=0)
    assert "gc stopped before deleting anything" in str(info.value)
    assert info.value.path == flagged[0].path  # named, as fsck names it
    assert store.get(target) == b"only reachable from the odd ref"
    assert len(list(Path(store.root, "objects").rglob("*"))) == 4  # 2 fan-outs, 2 files
    assert (outside / "sentinel").read_text() == "untouched"  # nothing outside touched


def test_gc_names_every_kind_of_odd_ref_and_counts_the_rest(tmp_path: Path) -> None:
    store, target, outside = _store_with_hidden_root(tmp_path)
    for make in (ODD_REFS["space"], ODD_REFS["not utf-8"], _symlinked_dir):
        make(Path(store.root, "refs"), target, outside)
    with pytest.raises(errors.InvalidRefNameError) as info:
        store.gc(grace_seconds=0)
    assert "and 2 more" in str(info.value)
    assert info.value.path == "refs/caf\\xe9"  # printable: the byte that is not UTF-8


def test_fsck_json_names_a_ref_that_is_not_utf8(tmp_path: Path) -> None:
    store, target, outside = _store_with_hidden_root(tmp_path)
    _bad_name(b"caf\xe9")(Path(store.root, "refs"), target, outside)
    proc = subprocess.run([sys.executable, "-m", "canonkit", "store", "fsck", store.root,
                           "--json"], capture_output=True, env=ENV)
    assert proc.returncode == 1, proc.stderr
    assert b'"refs/caf\\\\xe9"' in proc.stdout and b"Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "canonkit", "store", "gc", store.root,
                           "--grace", "0"], capture_output=True, env=ENV)
    assert proc.returncode == 2 and b"refs/caf\\xe9" in proc.stderr


def test_listing_refs_leaves_the_odd_ones_to_fsck(tmp_path: Path) -> None:
    store, target, outside = _store_with_hidden_root(tmp_path)
    _bad_content(Path(store.root, "refs"), target, outside)
    _symlinked_dir(Path(store.root, "refs"), target, outside)
    assert list(store.refs()) == ["main"]


def _longest_name() -> str:
    segment = "s" * MAX_REF_SEGMENT
    name = "/".join([segment] * 4)  # 1023 bytes
    return name + "/x" * ((MAX_REF_NAME - len(name)) // 2)


@pytest.mark.parametrize("length", [245, 255, 600, MAX_REF_NAME])
def test_every_name_the_rule_allows_can_be_stored(tmp_path: Path, length: int) -> None:
    store = Store.init(tmp_path / "s")
    address = store.put(b"x")
    segments, left = [], length
    while left > 0:
        take = min(MAX_REF_SEGMENT, left)
        if left - take == 1:  # never leave a lone byte for a segment plus its slash
            take -= 1
        segments.append("n" * take)
        left -= take + 1
    name = "/".join(segments)[:length]
    assert len(name) == length and not name.endswith("/")
    store.set_ref(name, address, expect=Store.ABSENT)
    assert store.ref(name) == address and store.refs() == {name: address}
    assert store.fsck().ok
    store.set_ref(name, address, expect=address)
    assert store.delete_ref(name) is True and store.ref(name) is None
    assert os.listdir(Path(store.root, "tmp")) == []
    store.set_ref(_longest_name(), address)
    assert store.ref(_longest_name()) == address


def test_a_segment_longer_than_a_file_name_is_an_invalid_name(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "s", durable=False)
    address = store.put(b"x")
    for name in ("n" * (MAX_REF_SEGMENT + 1), "a/" + "n" * 300 + "/b"):
        with pytest.raises(errors.InvalidRefNameError) as info:
            store.set_ref(name, address)
        assert "longer than 255 bytes" in str(info.value)
        with pytest.raises(errors.InvalidRefNameError):
            store.ref(name)

"""What the HTML report tests share: a reader of pages, a corpus whose failing Episode
has markup in its id and file name, and a store with planted corruption."""
from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any, ClassVar

from canonkit.store import Store

REPO = Path(__file__).resolve().parent.parent
SEED_TABLE = REPO / "examples" / "seed-table"
HOSTILE_ID = '<script>window.__canonkit_pwned = 1</script>"&\u202e'
STRAY = '<b onclick="window.__canonkit_pwned=3">stray.txt'
HOSTILE_NAME = '<img src=x onerror="window.__canonkit_pwned=2">.json'


class Page(HTMLParser):
    """What a test reads from a page: the text of each element with an id, every script
    and style element's text, every attribute, and all the text."""

    def __init__(self, markup: str) -> None:
        super().__init__(convert_charrefs=True)
        self.by_id: dict[str, str] = {}
        self.scripts: list[str] = []
        self.styles: list[str] = []
        self.attributes: list[tuple[str, str, str]] = []
        self.text: list[str] = []
        self._open: list[tuple[str, str | None, list[str]]] = []
        self.feed(markup)
        self.close()

    _VOID: ClassVar[set[str]] = {"meta", "br", "img", "input", "link", "hr", "rect", "line",
                                 "circle", "polyline", "polygon"}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))
        if tag not in self._VOID:
            self._open.append((tag, dict(attrs).get("id"), []))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in self._VOID:
            return
        while self._open:
            name, ident, parts = self._open.pop()
            text = "".join(parts)
            if self._open:
                self._open[-1][2].append(text)
            if ident is not None:
                self.by_id[ident] = text
            if name == "script":
                self.scripts.append(text)
            if name == "style":
                self.styles.append(text)
            if name == tag:
                return

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._open:
            self._open[-1][2].append(data)

    def number(self, ident: str) -> int:
        return int(self.by_id[ident].replace(",", ""))


def hostile_corpus(tmp_path: Path) -> Path:
    """A corpus whose failing Episode has markup in its id and in its file name."""
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    document = json.loads((SEED_TABLE / "0000033.json").read_text())  # no_seal_record
    document["episode_id"] = HOSTILE_ID
    (corpus / HOSTILE_NAME).write_text(json.dumps(document))
    (corpus / "ok.json").write_bytes((SEED_TABLE / "0000002.json").read_bytes())
    return corpus


def damaged_store(root: Path) -> Store:
    """Every form, a planted corruption in a loose file and in a pack, a stray file whose
    name is markup, and unreachable objects."""
    store = Store.init(root, durable=False)
    blobs = [store.put(f"object {i}\n".encode() * (i + 1),
                       form="deflate" if i % 3 == 0 else "loose") for i in range(12)]
    tree = store.put_object("tree", {"entries": [
        {"name": f"f{i}", "mode": 0o100644, "ref": bytes.fromhex(a[7:])}
        for i, a in enumerate(blobs[:8])]})
    store.set_ref("main", tree)
    store.repack(grace_seconds=0)
    for i in range(5):
        store.put(f"loose {i}\n".encode() * 40, form="deflate" if i % 2 else "loose")
    loose = sorted(p for p in (root / "objects").rglob("*") if p.is_file())
    loose[0].chmod(0o644)
    data = bytearray(loose[0].read_bytes())
    data[-1] ^= 1
    loose[0].write_bytes(bytes(data))
    (pack,) = (root / "packs").glob("*.pack")
    pack.chmod(0o644)
    data = bytearray(pack.read_bytes())
    data[40] ^= 0x20
    pack.write_bytes(bytes(data))
    (root / STRAY).write_text("not part of a store")
    return store


def fsck_summary(report: dict[str, Any]) -> dict[str, int]:
    """Every count ``canonkit store fsck`` summarises, by the id the page gives it."""
    counts = {f"count-{k}": report[k] for k in ("objects", "loose_files", "pack_entries",
                                                "packs", "reachable", "refs",
                                                "logical_bytes")}
    counts.update({f"count-code-{code}": n for code, n in report["counts"].items()})
    counts.update({f"count-form-{form}": v["objects"] for form, v in report["forms"].items()})
    for severity in ("error", "warning", "info"):
        counts[f"count-severity-{severity}"] = sum(
            1 for f in report["findings"] if f["severity"] == severity)
    counts["count-severity-total"] = len(report["findings"])
    return counts

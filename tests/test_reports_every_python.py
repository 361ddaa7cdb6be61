"""The same bytes give the same report on every supported Python.

The proofs of record in tests/vectors/ (one with ``Z`` instants in its context entries), a
synthetic corpus whose instants are rewritten to end in ``Z``, the frozen TIMESTAMP
field-encoding vectors and the TIMESTAMP encoding of instant texts at the edges of the
rule are re-verified here, and their report is pinned by one recorded digest. (Every other
frozen vector is checked against its expected value by its own tests, on each interpreter.) CI runs this module under every supported interpreter (the whole
suite on the oldest and newest, this module with the compiled-backend subset on the rest),
so every interpreter must produce exactly these bytes. With CANONKIT_REPORTS_DIR set, the
report is also written there (``python-X.Y.Z.jsonl``) for CI to compare side by side."""
from __future__ import annotations

import hashlib
import os
import platform
import shutil
from pathlib import Path
from typing import Any

import orjson
from conftest import VECTORS

from canonkit import astp, reverify
from canonkit.errors import CanonkitError
from canonkit.reverify import synthetic_corpus as synth

PROOFS_OF_RECORD = sorted((VECTORS / "astp").glob("proof-of-record-*.json"))
# instant texts the TIMESTAMP encoder reads or refuses, by the rule (docs/astp.md)
INSTANT_TEXTS = [
    "2026-01-01T00:00:00.123Z", "2026-01-01T00:00:00.123+00:00",
    "2025-12-31T16:00:00.123-08:00", "2026-10-01T20:49:00.256512Z", "2026-01-01T00:00:00Z",
    "2026-01-01T00:00:00.1Z", "2026-01-01T00:00:00.1234567Z", "2026-01-01T00:00:00.9999999Z",
    "1970-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "2024-02-29T12:00:00+14:00",
    "2026-01-01T00:00:00", "2026-01-01T00:00:00z", "2026-01-01 00:00:00+00:00",
    "2026-01-01T00:00:00+0000", "2026-01-01T00:00:00+05", "20260101T000000Z",
    "2026-W01-1T00:00:00Z", "2026-01-01T00:00:00.+00:00", "2026-01-01T24:00:00Z",
]
# sha256 of the report below; the same on every supported interpreter. A deliberate change
# of the report format or of a verdict changes it: record the new digest with the change.
REPORT_DIGEST = "15214ba27518ca91221a1d5f36e1aa0562308542e81b9764f3efcb5dc6d27c74"


def z_instants(value: Any, counter: list[int]) -> Any:
    """``value`` with every ``…+00:00`` instant written ``…Z``, outside Layer 3 exports
    (whose datetime text must be the +00:00 form: both corpora then agree there too)."""
    if isinstance(value, dict):
        return {k: v if k == "layer3" else z_instants(v, counter) for k, v in value.items()}
    if isinstance(value, list):
        return [z_instants(v, counter) for v in value]
    if isinstance(value, str) and len(value) >= 25 and value[10] == "T" \
            and value.endswith("+00:00"):
        counter[0] += 1
        return value[:-6] + "Z"
    return value


def instant_lines() -> bytes:
    vectors = orjson.loads((VECTORS / "astp" / "seal-constructions-5.0.0.json").read_bytes())
    out = []
    for key, expected in vectors["field_encoding"].items():
        if key.startswith("TIMESTAMP_"):
            text = "2026-01-01T00:00:00.123Z" if key.endswith("Z") else \
                "2025-12-31T16:00:00.123-08:00"
            encoding = astp.encode_field("TIMESTAMP", text).hex()
            assert [encoding] == (expected if isinstance(expected, list) else [expected]), key
            out.append(orjson.dumps({"vector": key, "instant": text, "encoding": encoding})
                       + b"\n")
    for text in INSTANT_TEXTS:
        try:
            outcome: Any = astp.timestamp_ms(text)
        except CanonkitError as exc:
            outcome = exc.code
        out.append(orjson.dumps({"instant": text, "timestamp_ms": outcome}) + b"\n")
    return b"".join(out)


def test_reports_are_byte_identical_on_every_python(tmp_path: Path,
                                                     monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)  # sources are named relative to here in the report
    for path in PROOFS_OF_RECORD:
        shutil.copy(path, path.name)
    synth.write_corpus(60, out="corpus.jsonl", mix="all-outcomes", seed=23,
                       median_segments=12, por_fraction=0.5, layer3=0.5)
    rewritten = [0]
    with open("corpus.jsonl", "rb") as src, open("corpus-z.jsonl", "wb") as dst:
        for line in src:
            try:
                doc = orjson.loads(line)
            except orjson.JSONDecodeError:  # a deliberately broken document: as it is
                dst.write(line)
                continue
            dst.write(orjson.dumps(z_instants(doc, rewritten)) + b"\n")
    assert rewritten[0] > 500

    reports = {}
    for name in [p.name for p in PROOFS_OF_RECORD] + ["corpus.jsonl", "corpus-z.jsonl"]:
        reports[name] = b"".join(r.line + b"\n" for r in reverify.run([name], jobs=1))

    for path in PROOFS_OF_RECORD:
        line = orjson.loads(reports[path.name])
        assert line["outcome"] == "reproduced", (path.name, line)
        assert set(line["components"].values()) <= {"ok", "not_checked"}, line
    # an instant written with Z means what the same instant with +00:00 does
    assert reports["corpus-z.jsonl"].replace(b'"corpus-z.jsonl"', b'"corpus.jsonl"') \
        == reports["corpus.jsonl"]

    report = b"".join(reports.values()) + instant_lines()
    where = os.environ.get("CANONKIT_REPORTS_DIR")
    if where:
        Path(where).mkdir(parents=True, exist_ok=True)
        (Path(where) / f"python-{platform.python_version()}.jsonl").write_bytes(report)
    digest = hashlib.sha256(report).hexdigest()
    lines = report.count(b"\n")
    assert digest == REPORT_DIGEST, \
        f"report of {lines} lines has digest {digest} on Python {platform.python_version()}"

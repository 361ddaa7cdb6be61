"""``extract``: write a CAR file's blocks to files named by their CIDs (docs/car.md).

Only a block whose CID verifies is written, each through the output door (complete or
not at all). The targets are planned and checked before the first is written, so a run
that refuses a target (it exists, and ``force`` was not given) writes nothing.
"""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .. import cbor
from .._files import validate_output_path, write_atomic
from ..errors import FileChangedError
from .findings import Finding
from .frames import block_problems
from .reader import CarFile, Section

__all__ = ["ExtractReport", "extract"]

PathLike = str | os.PathLike[str]


@dataclass
class ExtractReport:
    """What ``extract`` wrote (``written``: CID strings, in file order), the findings of
    the file (a block with an error finding is not written) and the requested CIDs it does
    not hold as a verified block (``missing``). ``ok`` when there is neither."""

    path: str
    directory: str
    written: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.missing and not any(f.severity == "error" for f in self.findings)

    @property
    def exit_status(self) -> int:
        return 0 if self.ok else 1

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "directory": self.directory, "ok": self.ok,
                "written": self.written, "missing": self.missing,
                "findings": [f.to_dict() for f in self.findings]}


def _as_link(cid: cbor.Link | str | bytes) -> cbor.Link:
    if isinstance(cid, cbor.Link):
        return cid
    if isinstance(cid, str):
        return cbor.Link.from_string(cid)
    return cbor.Link(cid)


def extract(path: PathLike, directory: PathLike, *,
            cids: Iterable[cbor.Link | str | bytes] | None = None, force: bool = False,
            strict: bool = False) -> ExtractReport:
    """Write each verified block of the CAR file at ``path`` (only those of ``cids`` if
    given) to ``directory/<CID>`` (base32 ``b...`` for a CIDv1, ``Qm...`` for a CIDv0),
    once per CID. ``directory`` is created if it does not exist (its parent must). An
    existing target is replaced only with ``force``; without it, OutputPathError is raised
    before anything is written. ``strict``: a dag-cbor block must also be strict
    DAG-CBOR to be written."""
    wanted = None if cids is None else {_as_link(c).cid_bytes: _as_link(c) for c in cids}
    target_dir = os.fspath(directory)
    report = ExtractReport(path=os.fspath(path), directory=target_dir)
    with CarFile(path) as car:
        report.findings.extend(car.header_findings)
        plan: dict[bytes, Section] = {}
        for item in car.sections(strict=strict):
            if isinstance(item, Finding):
                report.findings.append(item)
                continue
            report.findings.extend(item.findings)
            if item.cid is None or any(f.severity == "error" for f in item.findings):
                continue
            key = item.cid.cid_bytes
            if (wanted is None or key in wanted) and key not in plan:
                plan[key] = item._replace(data=b"")  # read again when written: bounded memory
        if wanted is not None:
            report.missing = [str(link) for key, link in wanted.items() if key not in plan]
        if plan and not os.path.isdir(target_dir):
            os.mkdir(target_dir)
        targets = {key: os.path.join(target_dir, str(item.cid)) for key, item in plan.items()}
        for target in targets.values():  # every refusal before the first write
            validate_output_path(target, inputs=[path], replace=force)
        for key, item in plan.items():
            data = car.read(item)
            assert item.fields is not None
            expected = key[len(key) - item.fields.digest_length:]  # a CID ends with its digest
            if any(code != "car_short_digest"
                   for code, _ in block_problems(item.fields, expected, data)):
                raise FileChangedError(f"{report.path}: the block at offset {item.offset} "
                                       "changed while being extracted")
            write_atomic(targets[key], data, inputs=[path], replace=force)
            report.written.append(str(item.cid))
    return report

"""Corpora the reverify journal and cache tests share."""
from __future__ import annotations

from pathlib import Path

import orjson

from canonkit.reverify import synthetic_corpus as synth


def named_export_corpus(directory: Path, name: str, episodes: int, seed: int) -> Path:
    """``directory/name``: a JSON-lines corpus of clean Episodes, each naming its Layer 3
    export by path (``l3/<i>.export`` beside it) instead of carrying it inline."""
    inline = directory.parent / f"{directory.name}-inline-{name}"  # not in the corpus
    synth.write_corpus(episodes, out=str(inline), mix="reproduced", seed=seed,
                       median_segments=6, layer3=1.0, layer3_violating=0.0)
    (directory / "l3").mkdir(parents=True, exist_ok=True)
    lines = []
    for i, line in enumerate(inline.read_bytes().splitlines()):
        doc = orjson.loads(line)
        (directory / "l3" / f"{i}.export").write_bytes(orjson.dumps(doc["layer3"]))
        doc["layer3"] = f"l3/{i}.export"
        lines.append(orjson.dumps(doc))
    inline.unlink()
    out = directory / name
    out.write_bytes(b"\n".join(lines) + b"\n")
    return out

"""The registry of manifest schemas canonkit reads, verifies and writes."""
from __future__ import annotations

from . import fixtures, fps_artifacts, fps_cases, fps_negative, tgk_edges
from ._model import Schema

SCHEMAS: dict[str, Schema] = {
    module.SCHEMA.name: module.SCHEMA
    for module in (fixtures, tgk_edges, fps_cases, fps_negative, fps_artifacts)
}

__all__ = ["SCHEMAS", "Schema"]

"""Fuzz target: one Episode document's bytes, read by the compiled fast path and the
general path of ``canonkit reverify`` and by ``canonkit astp reproduce`` — the same
verdict, error code and offset from all three (``episode_readers.py``).

An input is a plan and a document: the first byte is the length of the plan, whose bytes
choose structured mutations (a key repeated at any depth, a truncation, a changed type, a
huge number, a lone surrogate) applied to the document after it is checked as it is; the
fuzzer's own byte mutations reach every other shape."""
from __future__ import annotations

import _harness
from _harness import instrumented

with instrumented():
    import episode_readers

    READERS = episode_readers.Readers()


def one_input(data: bytes) -> None:
    if not data:
        return
    plan_length = min(data[0] % 9 * 2, len(data) - 1)
    plan, document = data[1:1 + plan_length], data[1 + plan_length:]
    episode_readers.check_mutations(READERS, document, plan)


if __name__ == "__main__":
    _harness.run(one_input)

"""``canonkit reverify --answers FILE``: each result compared with its answer as it
arrives (``canonkit.reverify.answers``), each disagreement printed at once, the verdict
at the end. Nothing is held per Episode: a corpus of any size is compared in constant
memory.

Text mode prints ``disagrees: EPISODE_ID  expected OUTCOME  got OUTCOME`` lines on
stdout, then a last line after the table; ``--json`` prints ``{"disagreement": {...}}``
lines among the report lines and ``{"answers": {...}}`` after the summary.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from ..errors import AnswersError
from ..reverify.answers import Answers, Disagreement
from ..reverify.runner import Result
from ._common import EXIT_FAILURES, EXIT_OK


class AnswerCheck:
    """The comparison of one run with the answer file at ``path`` (opened at once)."""

    def __init__(self, path: str, *, json_lines: bool) -> None:
        self._answers = Answers(path)
        self._json = json_lines
        self.compared = 0
        self.disagreements = 0
        self.error: AnswersError | None = None

    def __enter__(self) -> AnswerCheck:
        return self

    def __exit__(self, *exc: object) -> None:
        self._answers.close()

    def _emit(self, payload: dict[str, Any], text: str) -> None:
        if self._json:  # among the report lines, which go to the binary stream
            sys.stdout.buffer.write(json.dumps(payload, ensure_ascii=False).encode() + b"\n")
        else:
            print(text)

    def _disagree(self, found: Disagreement) -> None:
        self.disagreements += 1
        self._emit({"disagreement": {"index": found.index, "episode_id": found.episode_id,
                                     "expected": found.expected, "got": found.got}},
                   f"disagrees: {found.line()}")

    def see(self, result: Result) -> None:
        """Compare the next result of the run (corpus order) with the next answer."""
        if self.error is not None:
            return
        try:
            found = self._answers.compare(result, self.compared)
        except AnswersError as exc:  # the comparison stops; the run goes on to its table
            self.error = exc
            return
        self.compared += 1
        if found is not None:
            self._disagree(found)

    def finish(self) -> None:
        """The answers the run had no Episode for, then the verdict line."""
        if self.error is None:
            try:
                for found in self._answers.rest(self.compared):
                    self._disagree(found)
            except AnswersError as exc:
                self.error = exc
        path = self._answers.path
        if self.error is not None:
            print(f"canonkit reverify: {self.error}", file=sys.stderr)
            verdict = f"answers: {path} is not an answer file; compared {self.compared}"
        elif self.disagreements:
            verdict = f"answers: {self.disagreements} disagreement(s) with {path}"
        else:
            verdict = f"answers: all {self.compared} Episodes agree with {path}"
        self._emit({"answers": {"path": path, "compared": self.compared,
                                "disagreements": self.disagreements,
                                "error": None if self.error is None else str(self.error),
                                "agree": self.exit_status == EXIT_OK}}, verdict)
        (sys.stdout.buffer if self._json else sys.stdout).flush()

    @property
    def exit_status(self) -> int:
        """0 when every Episode agreed with its answer, 1 otherwise."""
        return EXIT_OK if self.error is None and self.disagreements == 0 else EXIT_FAILURES

"""A run compared with the answers of a synthetic corpus (REVERIFY.md §5).

``canonkit synth --answers FILE`` writes one JSON line per Episode, in corpus order, each
with the outcome re-verification must give it; ``canonkit reverify --answers FILE``
compares the run with them. The file is read a line at a time beside the run's results
(also in corpus order), never whole: a corpus of a million Episodes has as many answers.

A result disagrees with its answer when the outcome differs, or the Episode identifier
does where the answer names one. An answer without an Episode, or an Episode without an
answer, disagrees too. A line that is not an answer (not JSON, not an object, no
``outcome``) ends the comparison with :class:`~canonkit.errors.AnswersError`.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

from .._files import loads_json, open_regular
from ..errors import AnswersError, JSONInputError
from .outcomes import OUTCOMES
from .runner import Result

#: the longest answer line read (a search answer lists its order: a few KiB)
MAX_LINE = 1 << 20

NO_ANSWER = "(no answer)"
NO_EPISODE = "(no Episode)"


@dataclass(frozen=True)
class Disagreement:
    """One Episode whose result is not its answer: ``index`` its position in the corpus
    (0-based), ``expected`` the answer's outcome (or ``NO_ANSWER``), ``got`` the run's
    (or ``NO_EPISODE``); ``episode_id`` the identifier the run or the answer gives."""

    index: int
    episode_id: str | None
    expected: str
    got: str

    def line(self) -> str:
        return f"{self.episode_id or '-'}  expected {self.expected}  got {self.got}"


class Answers:
    """The answer file at ``path``, opened at once (missing, unreadable or not a regular
    file: the ``OSError`` is raised here, before any work) and read as results arrive."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self._file: BinaryIO = open_regular(self.path)
        self._line = 0

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> Answers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next(self) -> dict[str, Any] | None:
        """The next answer, None at the end of the file."""
        raw = self._file.readline(MAX_LINE + 1)
        if not raw:
            return None
        self._line += 1
        where = f"{self.path}: line {self._line}"
        if len(raw) > MAX_LINE:
            raise AnswersError(f"{where}: longer than {MAX_LINE} bytes", detail=self.path)
        try:
            answer = loads_json(raw, source=where)
        except JSONInputError as exc:
            raise AnswersError(str(exc), detail=self.path, offset=exc.offset) from None
        outcome = answer.get("outcome") if isinstance(answer, dict) else None
        if outcome not in OUTCOMES:
            raise AnswersError(f"{where}: not an answer (a JSON object whose outcome is one "
                               f"of {', '.join(OUTCOMES)})", detail=self.path)
        assert isinstance(answer, dict)
        return answer

    def compare(self, result: Result, index: int) -> Disagreement | None:
        """Compare the run's ``index``-th result with the next answer."""
        answer = self._next()
        if answer is None:
            return Disagreement(index, result.episode_id, NO_ANSWER, result.outcome)
        expected_id = answer.get("episode_id")
        same_id = expected_id is None or expected_id == result.episode_id
        if answer["outcome"] == result.outcome and same_id:
            return None
        got = result.outcome if same_id else f"{result.outcome} for {result.episode_id}"
        return Disagreement(index, expected_id or result.episode_id, answer["outcome"], got)

    def rest(self, index: int) -> Iterator[Disagreement]:
        """The answers left once the run has ended: each an Episode the run did not see."""
        while (answer := self._next()) is not None:
            yield Disagreement(index, answer.get("episode_id"), answer["outcome"], NO_EPISODE)
            index += 1

"""Reports to look at: one self-contained HTML file per run of ``canonkit reverify`` or
``canonkit store fsck`` (``--html FILE``), its charts inline SVG, nothing fetched.

    >>> import canonkit.reverify as rv
    >>> from canonkit import htmlreport
    >>> timeline = htmlreport.Timeline()
    >>> run = rv.run(["corpus/"], on_progress=timeline.add)          # doctest: +SKIP
    >>> page = htmlreport.ReverifyPage()
    >>> for result in run:                                           # doctest: +SKIP
    ...     page.add(result)
    >>> html = page.render(run.summary, timeline)                    # doctest: +SKIP
    >>> htmlreport.write_html("run.html", html, inputs=run.files)    # doctest: +SKIP

A page is bounded whatever the size of the run: the tables list at most ``MAX_ROWS``
failing Episodes or findings (and say how many more there are), the charts aggregate.
Everything taken from the input is escaped (``text``); the page's policy lets only its
own style sheet and script run, and the script only sorts the tables: the page reads the
same with JavaScript off. Pages are written through canonkit's output door
(``canonkit._files``): complete or not at all.
"""
from __future__ import annotations

import os
from collections.abc import Iterable

from .._files import validate_output_path, write_atomic
from ..errors import OutputPathError
from .fsck import render_fsck
from .page import FORMAT
from .reverify import MAX_ROWS, ReverifyPage
from .timeline import Timeline

__all__ = ["FORMAT", "MAX_ROWS", "ReverifyPage", "Timeline", "check_output", "render_fsck",
           "write_html"]

PathArg = str | os.PathLike[str]


def check_output(path: PathArg, *, inputs: Iterable[PathArg] = (),
                 input_dirs: Iterable[PathArg] = (),
                 others: Iterable[tuple[str, PathArg | None]] = ()) -> None:
    """Refuse, before the work, an HTML output that could not be written completely or
    must not be (``validate_output_path``: a missing or read-only directory, a directory,
    FIFO or device, one of ``inputs`` or inside one of ``input_dirs``) or that is one of
    the run's other outputs (``others``: ``(option, path)`` pairs). OutputPathError."""
    target = validate_output_path(path, inputs=inputs, input_dirs=input_dirs)
    for option, other in others:
        if other is not None and os.path.realpath(other) == target:
            raise OutputPathError(f"{os.fspath(path)}: is the {option} file too; the HTML "
                                  "report needs a file of its own", detail=os.fspath(path))


def write_html(path: PathArg, html: str, *, inputs: Iterable[PathArg] = (),
               input_dirs: Iterable[PathArg] = ()) -> None:
    """Write the page ``html`` (UTF-8) to ``path``: complete or not at all, checked as
    ``check_output`` checks it. A failed write is an OutputPathError naming the file."""
    data = html.encode("utf-8")
    try:
        write_atomic(path, data, inputs=inputs, input_dirs=input_dirs)
    except OutputPathError:
        raise
    except OSError as exc:
        raise OutputPathError(f"{os.fspath(path)}: cannot be written: "
                              f"{exc.strerror or exc}", detail=os.fspath(path)) from exc

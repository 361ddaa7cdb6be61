"""What every command shares: the exit statuses, how an I/O failure is reported, and the
table layout.

Exit status of every ``canonkit`` command (the same condition gives the same status in
every command):

====== ===================================================================================
status meaning
====== ===================================================================================
0      done: everything checked passed, every output was written
1      ran to the end and found failures: invalid data in an input that was read (not
       JSON, not CBOR, not the document the command takes), manifest drift, a corpus
       check that failed, Episodes that did not reproduce, disagreement with answers
2      could not run: a usage error (options, arguments, a malformed value on the
       command line), a named input that is missing, unreadable or over its limit, an
       output that cannot be written (missing directory, existing target), a missing
       optional dependency, an unexpected internal error; no output is left behind
128+n  stopped by signal n: 130 for SIGINT (Ctrl-C), 143 for SIGTERM, 141 when the
       reader of stdout went away (``canonkit ... | head``); partial outputs are removed
====== ===================================================================================

When a run both finds failures and meets an input it could not read, 2 wins: the result
is incomplete, so it must not look like a finished check (``worst``).
"""
from __future__ import annotations

import os
import signal
import stat
import sys
from collections.abc import Iterable, Sequence

EXIT_OK = 0
EXIT_FAILURES = 1
EXIT_COULD_NOT_RUN = 2
EXIT_USAGE = EXIT_COULD_NOT_RUN
EXIT_SIGNAL_BASE = 128
EXIT_INTERRUPTED = EXIT_SIGNAL_BASE + signal.SIGINT
EXIT_STDOUT_CLOSED = EXIT_SIGNAL_BASE + 13  # SIGPIPE (absent on Windows, same number)

EXIT_STATUS_EPILOG = """\
exit status (every command):
  0      done: everything checked passed, every output was written
  1      ran to the end and found failures (invalid data read, drift, Episodes not
         reproduced)
  2      could not run: usage error (a malformed value on the command line too), missing
         or unreadable input, unwritable output
  128+n  stopped by signal n (130 Ctrl-C, 143 SIGTERM, 141 stdout closed early)
"""


def worst(statuses: Iterable[int]) -> int:
    """The status of a run made of several parts: could-not-run outranks failures,
    failures outrank success."""
    return max(statuses, default=EXIT_OK)


def describe_os_error(exc: OSError) -> str:
    """``PATH: reason`` (``SRC -> DST: reason`` for a rename or link), or the bare reason
    when the error names no path."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    where = os.fsdecode(exc.filename)
    if exc.filename2 is not None:
        where += " -> " + os.fsdecode(exc.filename2)
    return f"{where}: {reason}"


def report_os_error(command: str, exc: OSError) -> int:
    """Print ``canonkit COMMAND: PATH: reason`` on stderr and return
    ``EXIT_COULD_NOT_RUN``: every command reports an I/O failure this way."""
    print(f"canonkit {command}: {describe_os_error(exc)}", file=sys.stderr)
    return EXIT_COULD_NOT_RUN


def report_usage_error(command: str, message: str) -> int:
    """Print ``canonkit COMMAND: message`` on stderr and return ``EXIT_COULD_NOT_RUN``."""
    print(f"canonkit {command}: {message}", file=sys.stderr)
    return EXIT_COULD_NOT_RUN


def stdout_reader_gone() -> bool:
    """True only when stdout is a pipe or socket whose reading end is closed — the one
    case (``canonkit ... | head``) where a ``BrokenPipeError`` is not a failure of the
    command itself. A broken pipe anywhere else (a worker, a resource tracker) is."""
    stdout = sys.__stdout__
    if stdout is None:
        return False
    try:
        fd = stdout.fileno()
        mode = os.fstat(fd).st_mode
    except (OSError, ValueError):
        return False
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        return False
    try:
        import select

        poller = select.poll()
    except (ImportError, AttributeError):  # Windows: no poll(); a flush tells
        try:
            stdout.flush()
        except BrokenPipeError:
            return True
        except OSError:
            return False
        return False
    poller.register(fd, 0)  # POLLERR/POLLHUP are reported whatever the event mask
    return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))


def silence_stdout() -> None:
    """Point stdout at the null device so the interpreter's final flush of buffered
    output cannot raise a second ``BrokenPipeError`` at exit."""
    stdout = sys.__stdout__
    if stdout is None:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


def table_lines(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """The header line, then one line per row: every column but the last padded to its
    widest cell (header included), two spaces apart; the last column is free text."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header[:-1])]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths)) + "  " + cells[-1]

    return [line(header), *(line(row) for row in rows)]

"""``canonkit reverify PATH...`` (REVERIFY.md §3) and ``canonkit synth ...`` (§5): two
plain commands, registered together because synthetic corpora exist to be re-verified.

Both run inside ``engines.interruptible()``: SIGINT/SIGTERM/SIGHUP stop the workers,
remove every temporary and give 128+n.
"""
from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Generator
from typing import Any

from ._answers import AnswerCheck
from ._common import report_os_error
from ._parsing import fraction, integer, non_negative, positive

_EPILOG = """\
synthetic corpora:
  canonkit synth --episodes N --mix seed-table --seed S --out FILE --answers FILE
  canonkit reverify FILE --answers FILE   (compares the run with the answers)

Layer 3: an Episode may carry a `layer3` member (a canonkit-layer3/1 export, or the name
of a file beside it holding one); the report line then has components.layer3 = ok, failed
(with layer3_findings) or absent. It never changes the outcome.

exit status: 0 every sealed Episode reproduced; 1 any not_reproducible, no_seal_record or
invalid_record (with --require-layer3, also any Episode whose Layer 3 failed or is
absent); with --answers, 0 when every Episode agrees with its answer and 1 otherwise
(a malformed answer file too); 2 could not run (a usage error, a missing input).
"""


def _register_synth(subparsers: Any) -> None:
    from ..reverify.runner import DEFAULT_SEARCH_CAP
    from ..reverify.synthetic_corpus import MIXES

    p = subparsers.add_parser(
        "synth",
        help="write a synthetic corpus with a known answer for every Episode",
        description="Write a synthetic corpus with a known answer for every Episode "
                    "(REVERIFY.md §5); `canonkit reverify CORPUS --answers FILE` checks a "
                    "run against the answers.",
    )
    p.add_argument("--episodes", type=non_negative, required=True, help="number of Episodes")
    p.add_argument("--mix", choices=sorted(MIXES), default="seed-table",
                   help="outcome mix: seed-table = the reproducibility study's 62-Episode "
                        "table (45/8/4/2/3), scaled "
                        "(default); all-outcomes = every outcome class; reproduced = all clean")
    p.add_argument("--seed", type=integer, default=0, help="random seed (default 0)")
    p.add_argument("--out", required=True,
                   help="corpus file: .jsonl, .jsonl.gz, .jsonl.zst, .cborseq, or DIR/ "
                        "(one .json per Episode)")
    p.add_argument("--answers", help="answer file (JSON lines, one per Episode, same order)")
    p.add_argument("--force", action="store_true",
                   help="replace an existing corpus file and answer file (without it "
                        "either existing is refused, status 2, and left as it is; --out and "
                        "--answers must be two files whatever --force says)")
    p.add_argument("--median-segments", type=positive, default=200,
                   help="median number of segments per Episode (default 200)")
    p.add_argument("--por-fraction", type=fraction, default=0.3,
                   help="share of Episodes written as astp-proof-of-record/1 where that "
                        "format can carry them (default 0.3)")
    p.add_argument("--search-cap", type=positive, default=DEFAULT_SEARCH_CAP,
                   help="the cap the tied-group sizes are chosen against (default %(default)s)")
    p.add_argument("--layer3", type=fraction, default=0.0, metavar="FRACTION",
                   help="share of Episodes carrying a Layer 3 export in their layer3 member, "
                        "with the expected Layer 3 result in the answers (default 0)")
    p.add_argument("--layer3-violating", type=fraction, default=0.5, metavar="FRACTION",
                   help="share of those exports that break one Layer 3 rule, each violation "
                        "class in turn (default 0.5)")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    p.set_defaults(func=_synth)


def register(subparsers: Any) -> None:
    from ..reverify.runner import DASK_BATCH_BYTES, DEFAULT_BATCH_BYTES, DEFAULT_SEARCH_CAP

    p = subparsers.add_parser(
        "reverify",
        help="rebuild every sealed root of a corpus and report what reproduced",
        description="Re-verify a corpus: rebuild every sealed root from stored nodes and "
                    "say, per Episode, exactly what reproduced (REVERIFY.md).",
        epilog=_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("paths", nargs="+", metavar="PATH",
                   help=".json files, directories (recursive), .jsonl[.gz|.zst] files, "
                        "CBOR sequences (.cborseq/.cbor), or their URLs (s3://, gs://, "
                        "az://, http(s)://, file://; a URL ending in / is a prefix, listed "
                        "recursively; needs canonkit[s3])")
    p.add_argument("--report", metavar="FILE", help="write one JSON line per Episode, then "
                   "the summary line")
    p.add_argument("--annotations", metavar="FILE", help="write the orders found by search "
                   "as resolved_signal_order annotations (the inputs are never modified)")
    p.add_argument("--html", metavar="FILE", help="write a self-contained HTML report: "
                   "outcomes, constructions, throughput, mismatches, the failing Episodes")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local process pool (default) or Dask")
    p.add_argument("--jobs", type=positive, metavar="N",
                   help="worker processes (default: all cores; 1 = in-process)")
    p.add_argument("--scheduler", metavar="ADDRESS",
                   help="Dask scheduler address (default with --engine dask: a LocalCluster)")
    p.add_argument("--search-cap", type=positive, default=DEFAULT_SEARCH_CAP, metavar="N",
                   help="most tied-signal orders tried per Episode (default %(default)s)")
    p.add_argument("--batch-size", type=positive, default=64, metavar="N",
                   help="documents per batch (does not change the report)")
    p.add_argument("--batch-bytes", type=positive, metavar="N",
                   help="bytes per unit of work: a batch of documents, a range of a JSON-lines "
                        f"file (default {DEFAULT_BATCH_BYTES} = 8 MiB on the local pool, "
                        f"{DASK_BATCH_BYTES} = 64 MiB on Dask, where each task costs the "
                        "client and the scheduler more; does not change the report)")
    p.add_argument("--json", action="store_true",
                   help="print the report lines and the summary line on stdout instead of "
                        "the table")
    p.add_argument("--answers", metavar="FILE",
                   help="the answer file of a synthetic corpus (canonkit synth --answers): "
                        "list every Episode whose outcome is not its answer (Episode id, "
                        "expected, got); the exit status is then 0 when all agree, 1 "
                        "otherwise")
    p.add_argument("--require-layer3", action="store_true",
                   help="every Episode must carry a Layer 3 export that verifies: write the "
                        "layer3 component on every line, exit 1 when one failed or is absent")
    p.add_argument("--journal", metavar="FILE|URL",
                   help="make the run resumable: append every finished unit of work to FILE "
                        "(a local file, or a prefix in object storage: s3://, gs://, az://); "
                        "a run started on an existing journal takes the units it holds from "
                        "it and verifies the rest (the report is the same)")
    p.add_argument("--cache", metavar="DIR|URL",
                   help="a result cache (a local directory, made if missing, or a prefix in "
                        "object storage: s3://, gs://, az://): Episodes whose exact bytes "
                        "were verified before under the same options are taken from it (the "
                        "report is the same)")
    p.add_argument("--no-progress", action="store_true", help="no live progress on stderr")
    p.set_defaults(func=_reverify)
    _register_synth(subparsers)


def _reverify(args: argparse.Namespace) -> int:
    from .. import engines, reverify
    from ..errors import JournalError, MissingDependencyError, OutputPathError
    from ..reverify.outcomes import EXIT_USAGE

    if args.scheduler is not None and args.engine != "dask":
        print("canonkit reverify: --scheduler needs --engine dask", file=sys.stderr)
        return EXIT_USAGE
    html = _HtmlOutput(args) if args.html is not None else None
    try:  # before any work: a missing answer file is a usage error, not a late surprise
        check = AnswerCheck(args.answers, json_lines=args.json) if args.answers else None
    except OSError as exc:
        return report_os_error("reverify", exc)
    with engines.interruptible(), check or contextlib.nullcontext():
        try:
            run = reverify.run(
                args.paths, engine=args.engine, jobs=args.jobs, scheduler=args.scheduler,
                search_cap=args.search_cap, report=args.report, annotations=args.annotations,
                batch_size=args.batch_size, batch_bytes=args.batch_bytes,
                progress=False if args.no_progress else None,
                require_layer3=args.require_layer3,
                on_progress=None if html is None else html.timeline.add,
                journal=args.journal, cache=args.cache,
            )
            told = _tell_journal_notes(args, run.journal_notes, 0)
            if html is not None:
                html.check(run.files)
        except (reverify.InputError, OutputPathError, ValueError,
                MissingDependencyError) as exc:
            print(f"canonkit reverify: {exc}", file=sys.stderr)
            return EXIT_USAGE
        out = sys.stdout.buffer
        # one Result per Episode only for what reads them (a unit the cache holds whole
        # is otherwise written without one)
        wanted = html is not None or args.json or check is not None
        results = iter(run) if wanted else _no_results()
        try:
            for result in results:
                if html is not None:
                    html.page.add(result)
                if args.json:
                    out.write(result.line + b"\n")
                if check is not None:
                    check.see(result)
            summary = run.summary
            _tell_journal_notes(args, run.journal_notes, told)  # those found while running
            if html is not None:
                html.write(summary, run.files)
            if args.json:
                import orjson

                out.write(orjson.dumps(summary.to_json()) + b"\n")
                out.flush()
            else:
                print(summary.table(), flush=True)
            if check is not None:
                check.finish()
        except (OutputPathError, JournalError) as exc:  # the report or journal could not
            # be written (disk full, object storage unreachable, ...)
            print(f"canonkit reverify: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (RuntimeError, MissingDependencyError) as exc:  # e.g. no dask, no obstore
            print(f"canonkit reverify: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt as exc:  # the run cleaned up: no partial report
            print("canonkit reverify: interrupted", file=sys.stderr)
            return exc.exit_status if isinstance(exc, engines.Interrupted) else 130
        finally:
            results.close()  # a consumer leaving early still stops the workers
        if summary.cache_recomputed:
            print(f"canonkit reverify: cache {args.cache}: {summary.cache_recomputed} damaged "
                  "entries recomputed", file=sys.stderr)
        print(summary.rate_line(), file=sys.stderr)
    return summary.exit_status if check is None else check.exit_status


def _no_results() -> Generator[Any, None, None]:
    yield from ()


class _HtmlOutput:
    """``--html FILE``: checked with the other outputs before any work, fed every result,
    written (complete or not at all) once the run is complete."""

    def __init__(self, args: argparse.Namespace) -> None:
        from .. import htmlreport

        self._args = args
        self.timeline = htmlreport.Timeline()
        self.page = htmlreport.ReverifyPage(require_layer3=args.require_layer3)

    def check(self, inputs: list[str]) -> None:
        from ..htmlreport import check_output

        check_output(self._args.html, inputs=inputs,
                     others=(("--report", self._args.report),
                             ("--annotations", self._args.annotations)))

    def write(self, summary: Any, inputs: list[str]) -> None:
        from ..htmlreport import write_html

        write_html(self._args.html, self.page.render(summary, self.timeline), inputs=inputs)


def _tell_journal_notes(args: argparse.Namespace, notes: list[str], told: int) -> int:
    """Print the journal's notes from ``told`` on; how many have been told."""
    for note in notes[told:]:
        print(f"canonkit reverify: journal {args.journal}: {note}", file=sys.stderr)
    return len(notes)


def _synth(args: argparse.Namespace) -> int:
    from .. import engines
    from ..errors import CorpusExistsError, OutputPathError
    from ..reverify.outcomes import EXIT_USAGE, TABLE_ORDER
    from ..reverify.synthetic_corpus import write_corpus

    with engines.interruptible():
        try:
            counts = write_corpus(
                args.episodes, out=args.out, answers=args.answers, mix=args.mix,
                seed=args.seed, median_segments=args.median_segments,
                por_fraction=args.por_fraction, search_cap=args.search_cap,
                progress=False if args.no_progress else None, layer3=args.layer3,
                layer3_violating=args.layer3_violating, force=args.force,
            )
        except (OutputPathError, CorpusExistsError) as exc:
            print(f"canonkit synth: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except OSError as exc:
            return report_os_error("synth", exc)
        except ValueError as exc:
            print(f"canonkit synth: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except KeyboardInterrupt as exc:  # nothing half-written is left behind
            print("canonkit synth: interrupted", file=sys.stderr)
            return exc.exit_status if isinstance(exc, engines.Interrupted) else 130
    for name in TABLE_ORDER:
        if counts.get(name):
            print(f"{name:<36} {counts[name]:>8}")
    print(f"{'total':<36} {sum(counts.values()):>8}  -> {args.out}")
    return 0

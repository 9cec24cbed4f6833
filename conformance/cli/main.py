"""dmlconf: ``validate`` case files, ``run`` them on execution providers, ``report`` and ``diff`` runs, map
their ``coverage``, ``fuzz`` an EP.

Exit codes: 0 nothing failed; 1 a FAIL or ERROR (run, report; with --waivers only unexpected ones), a regression
(diff), a clause left uncovered (coverage) or a mismatch found (fuzz); 2 invalid input or usage (one line per
problem).
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import sys
from collections.abc import Sequence

from conformance.cases.load import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_NODES
from conformance.cases.suite import DEFAULT_MAX_RUN_ELEMENTS
from conformance.cases.validate import DEFAULT_MAX_ELEMENTS, validate
from conformance.cli.reports import (
    UsageError,
    add_report_commands,
    add_run_options,
    diff_command,
    merge_command,
    report_command,
)
from conformance.cli.run import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    chosen_eps,
    collect_paths,
    file_limits,
    print_problems,
    run_command,
)
from conformance.coverage.mapping import build_map, case_coverage, quick
from conformance.coverage.markdown import render_coverage
from conformance.fuzz.search import SHRINK_EXAMPLES, fuzz
from conformance.model import Case, Operator
from conformance.problems import CaseFileError, Problem, first_line
from conformance.results import write_text_atomic


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="dmlconf", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug detail to stderr")
    commands = parser.add_subparsers(dest="command", required=True)
    check = commands.add_parser("validate", help="check case files against the spec; exit 0 valid, 2 invalid")
    check.add_argument("paths", nargs="+", metavar="PATH")
    run = commands.add_parser("run", help="run cases on execution providers and write reports")
    run.add_argument("paths", nargs="*", metavar="PATH", help="case files or directories (default: cases/)")
    run.add_argument(
        "--ep",
        action="append",
        default=[],
        metavar="EP",
        help="cpu, cuda, dml, webgpu, a full EP name or a plugin library path, with options as "
        "ALIAS:key=value,...; repeatable (default: the best available)",
    )
    run.add_argument(
        "--feature-level",
        metavar="FL",
        help="the target's DML feature level, e.g. 4_1: cases needing more are NOT_SUPPORTED "
        "(default: for dml, what the installed DirectML supports; for other EPs, none)",
    )
    run.add_argument("--report-dir", default="reports", metavar="DIR", help="where reports go (default: reports/)")
    run.add_argument(
        "-k",
        dest="keyword",
        metavar="SUBSTRING",
        help="only cases whose id contains SUBSTRING; a case's full id selects that case alone",
    )
    run.add_argument("--quick", action="store_true", help="only the quick selection (every clause, few cases)")
    add_run_options(run)
    _add_run_limits(run)
    cover = commands.add_parser("coverage", help="map the spec's clauses to the cases that exercise them (Markdown)")
    cover.add_argument("paths", nargs="*", metavar="PATH", help="case files or directories (default: cases/)")
    cover.add_argument("--output", default="reports/coverage.md", metavar="FILE", help="default: reports/coverage.md")
    cover.add_argument("--quick", action="store_true", help="map the quick selection only")
    add_report_commands(commands)
    fuzzing = commands.add_parser("fuzz", help="random valid cases on an EP; a mismatch is shrunk to a case file")
    fuzzing.add_argument("--operator", required=True, choices=[op.value for op in Operator])
    fuzzing.add_argument("--ep", default=None, metavar="EP", help="as for run (default: the best available)")
    fuzzing.add_argument("--time", type=float, default=60.0, metavar="SECONDS", help="how long to search (default 60)")
    fuzzing.add_argument("--seed", type=int, default=0, metavar="N", help="the same seed draws the same cases")
    fuzzing.add_argument("--out", default="cases/found", metavar="DIR", help="where a minimal case goes")
    fuzzing.add_argument("--special", action="store_true", help="draw NaN, infinities and denormals too")
    fuzzing.add_argument(
        "--shrink-examples",
        type=_positive,
        default=SHRINK_EXAMPLES,
        metavar="N",
        help=f"candidates run while shrinking a mismatch (default {SHRINK_EXAMPLES})",
    )
    for sub in (check, run, cover):
        _add_limits(sub)
    return parser


def _add_limits(sub: argparse.ArgumentParser) -> None:
    """What reading one case file may cost: bytes, YAML nodes, and any one tensor's elements."""
    sub.add_argument(
        "--max-elements",
        type=_positive,
        default=DEFAULT_MAX_ELEMENTS,
        metavar="N",
        help=f"refuse tensors over N elements before allocating (default {DEFAULT_MAX_ELEMENTS})",
    )
    sub.add_argument(
        "--max-file-bytes",
        type=_positive,
        default=DEFAULT_MAX_FILE_BYTES,
        metavar="N",
        help=f"refuse case files over N bytes before reading them (default {DEFAULT_MAX_FILE_BYTES})",
    )
    sub.add_argument(
        "--max-nodes",
        type=_positive,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        help=f"refuse case files of over N YAML nodes, aliases counted each time used (default {DEFAULT_MAX_NODES})",
    )


def _add_run_limits(run: argparse.ArgumentParser) -> None:
    run.add_argument(
        "--keep-going",
        action="store_true",
        help="run the cases of the valid files even if other files have problems (printed and recorded; exit 2)",
    )
    run.add_argument(
        "--max-run-elements",
        type=_positive,
        default=DEFAULT_MAX_RUN_ELEMENTS,
        metavar="N",
        help="refuse to start a run whose (case, EP) pairs hold over N tensor elements in all, inputs and outputs "
        f"(default {DEFAULT_MAX_RUN_ELEMENTS}: some 600 times the case library on one EP)",
    )


def _validate(args: argparse.Namespace) -> int:
    suite = collect_paths(args.paths, args.max_elements, limits=file_limits(args))
    problems = list(suite.problems)
    for entry in suite.entries:
        if isinstance(entry, Case) and entry.expect_invalid is not None and not validate(entry, args.max_elements):
            problems.append(Problem(entry.pos("expect"), "expect", "marked invalid, but the validator accepts it"))
    if problems:
        print_problems(problems, suite.files)
        return EXIT_USAGE
    print(f"ok: {len(suite.entries)} case(s) in {suite.files} file(s)")
    return EXIT_OK


def _coverage(args: argparse.Namespace, argv: Sequence[str]) -> int:
    suite = collect_paths(args.paths or ["cases"], args.max_elements, limits=file_limits(args))
    if suite.problems:
        print_problems(suite.problems, suite.files)
        return EXIT_USAGE
    if args.quick:
        suite = quick(suite, args.max_elements)
    operators = {Operator(e.operator) for e in suite.entries}
    coverage = build_map([case_coverage(e, args.max_elements) for e in suite.entries], sorted(operators))
    title = "Spec coverage of the quick selection" if args.quick else "Spec coverage"
    try:
        os.makedirs(os.path.dirname(args.output) or ".", exist_ok=True)
        write_text_atomic(args.output, render_coverage(coverage, title, " ".join(argv)))
    except OSError as error:
        raise UsageError(f"--output: cannot write {args.output}: {error.strerror or error}") from None
    covered = len(coverage.clauses) - len(coverage.uncovered)
    print(f"{covered} of {len(coverage.clauses)} clause(s) covered by {len(suite.entries)} case(s): {args.output}")
    for row in coverage.uncovered:
        missing = f" (facets missing: {', '.join(row.missing)})" if row.missing else ""
        needs = " (no negative case)" if row.clause.needs_negative and not row.negative else ""
        print(f"not covered: {row.clause.id}{missing}{needs}", file=sys.stderr)
    return EXIT_FAILED if coverage.uncovered or coverage.unknown else EXIT_OK


def _fuzz(args: argparse.Namespace) -> int:
    (ep,) = chosen_eps([args.ep] if args.ep else [])
    if args.time <= 0:
        raise UsageError(f"--time: must be above 0, got {args.time}")
    operator = Operator(args.operator)
    print(f"fuzzing {operator.value} on {ep.text} for {args.time:g} s, seed {args.seed}")
    outcome = fuzz(operator, ep, args.time, args.seed, args.out, args.special, args.shrink_examples)
    print(f"{outcome.examples} example(s) in {outcome.seconds:.1f} s, {outcome.shrunk} of them shrinking")
    if outcome.result is None or outcome.case_file is None:
        print("no mismatch found")
        return EXIT_OK
    first = first_line(outcome.result.message, None)
    print(f"{outcome.result.status.value} ({outcome.result.failure_kind}): {first}")
    again = "yes" if outcome.reproduced or outcome.rerun is None else f"NO, it gave {outcome.rerun.status.value}"
    print(f"minimal case: {outcome.case_file} (reproduces: {again})")
    print(f"reproduce: {outcome.reproduce}")
    return EXIT_FAILED


def _tolerant_output() -> None:
    """A console that cannot encode a case id (cp1252, a pipe) shows an escape instead of raising."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(Exception):
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    _tolerant_output()
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    try:
        if args.command == "validate":
            return _validate(args)
        if args.command == "fuzz":
            return _fuzz(args)
        if args.command == "coverage":
            return _coverage(args, ["dmlconf", *argv])
        if args.command == "report":
            return report_command(args)
        if args.command == "diff":
            return diff_command(args)
        if args.command == "merge":
            return merge_command(args)
        return run_command(args, ["dmlconf", *argv])
    except UsageError as error:
        print(f"dmlconf: {error}", file=sys.stderr)
        return EXIT_USAGE
    except CaseFileError as error:  # a waiver file's problems, one line each
        print("\n".join(str(p) for p in error.problems), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:  # before a run had anything to write (a run's own interruption is handled in it)
        print("dmlconf: interrupted", file=sys.stderr)
        return EXIT_FAILED

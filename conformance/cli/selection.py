"""The cases a run selects, shared by ``dmlconf run`` and ``dmlconf list``; ``dmlconf list`` prints them.

One function decides the selection (case files, -k, --keep-going, --quick, --shard: the options declared here, which
``run`` lists too), so that ``list`` shows exactly what ``run`` with the same arguments would run. ``list`` reads and
validates case files only: it never loads onnxruntime or onnx.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from conformance.cases.parse import Entry, Rejected
from conformance.cases.suite import Suite, in_shard, parse_shard, shard, valid_files_only
from conformance.cli.output import say, warn
from conformance.cli.shared import EXIT_OK, EXIT_USAGE, UsageError, collect_paths, file_limits, print_problems
from conformance.coverage.mapping import quick
from conformance.ep.memory import PATHS
from conformance.model import MemoryPath
from conformance.problems import one_line
from conformance.results import read_results
from conformance.run.command_line import Option
from conformance.run.options import READING

KEYWORD = Option(
    ("-k",),
    "only cases whose id contains SUBSTRING; a case's full id selects that case alone",
    metavar="SUBSTRING",
    key="keyword",
)
QUICK = Option(
    ("--quick",),
    "only the quick selection: few cases that cover every clause the suite covers, plus the found ones",
    flag=True,
)
SHARD = Option(
    ("--shard",),
    "only shard I of N (by a hash of each case id; merge them after); auto: I and N from the CI's variables "
    "(GitLab CI_NODE_INDEX/CI_NODE_TOTAL, a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with auto/N, or "
    "DMLCONF_SHARD_INDEX/DMLCONF_SHARD_COUNT: docs/ci.md)",
    metavar="I/N",
    check=parse_shard,
)
SHARD_BY_TIME = Option(
    ("--shard-by-time",),
    "with --shard, split by each case's time in an earlier run's results.json (.gz too), the longest first onto the "
    "shard with the least, instead of by hash; every shard of the split must be given the same file",
    metavar="PREVIOUS.json",
)
KEEP_GOING = Option(
    ("--keep-going",),
    "run the cases of the valid files even if other files have problems (printed and recorded; exit 2)",
    flag=True,
)
JSON = Option(
    ("--json",),
    "print a JSON list of the selected cases (id, path, operator, data_type, feature_level, negative)",
    flag=True,
)
LIST_OPTIONS = (*READING, KEYWORD, QUICK, SHARD, SHARD_BY_TIME, KEEP_GOING, JSON)


def selected(args: argparse.Namespace, paths: Sequence[MemoryPath] = PATHS) -> Suite | None:
    """The cases to run; None (after printing the problems) where a case file has problems, unless --keep-going
    runs the cases of the other files. ``paths``: the ways the run's EPs execute a case, on which each case's frames
    and memory are checked (every path for ``list``, which names no EP)."""
    return settled(
        args, collect_paths(args.paths or ["cases"], args.max_elements, args.keyword, file_limits(args, paths))
    )


def settled(args: argparse.Namespace, suite: Suite) -> Suite | None:
    """The selection from the files' suite (``selected``'s, and a streamed run's once its files are read): their
    problems printed (None: the run refuses them), --keep-going, --quick, --shard."""
    if suite.problems:
        print_problems(suite.problems)
        if not args.keep_going:
            warn("nothing was run: fix the problems above")
            return None
        skipped = len(suite.invalid_files)
        warn(f"--keep-going: skipping the {skipped} file(s) with problems, running the others")
        suite = valid_files_only(suite)
    if args.quick:
        suite = quick(suite, args.max_elements)
    if args.shard_by_time is not None and args.shard is None:
        raise UsageError("--shard-by-time: give --shard I/N (or auto) too: it says how the shards are split")
    if args.shard is not None:
        index, count = args.shard
        suite = shard(suite, index, count, _case_seconds(args.shard_by_time) if args.shard_by_time else None)
    return suite


def streamed_selection(args: argparse.Namespace) -> Callable[[Entry], bool] | None:
    """Whether a run may start each case as its file is read, and which cases of a valid file it starts: those
    ``settled`` will select (the rest of --shard's by hash). None where the selection needs every case first: --quick
    (a cover of them all), --shard-by-time (a split of them all), -k (a full id given selects that case alone)."""
    if args.quick or args.shard_by_time is not None or args.keyword is not None:
        return None
    if args.shard is None:
        return lambda entry: True
    index, count = args.shard
    return lambda entry: in_shard(entry.id, index, count)


def _case_seconds(path: str) -> dict[str, float]:
    """Each case's time in an earlier run (its results on every EP, summed); UsageError where the file is no run."""
    try:
        document = read_results(path)
    except (OSError, ValueError) as error:
        raise UsageError(f"--shard-by-time: {path}: {one_line(str(error))}") from None
    seconds: dict[str, float] = {}
    for result in document.results:
        if math.isfinite(result.seconds) and result.seconds > 0:
            seconds[result.case] = seconds.get(result.case, 0.0) + result.seconds
    return seconds


def described(entry: Entry) -> dict[str, Any]:
    """A selected case for ``list --json``: its id, file and operator, the data type and feature level its results
    will record (results.json's ``data_type`` and ``feature_level``: none for an entry that could not be read), and
    whether it is a negative case (``expect: invalid``)."""
    if isinstance(entry, Rejected):
        return {
            "id": entry.id,
            "path": entry.path,
            "operator": entry.operator,
            "data_type": None,
            "feature_level": None,
            "negative": entry.expect_invalid is not None,
        }
    return {
        "id": entry.id,
        "path": entry.path,
        "operator": entry.operator.value,
        "data_type": entry.descriptor.input.data_type.value,
        "feature_level": str(entry.feature_level),
        "negative": entry.expect_invalid is not None,
    }


def list_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """The ids ``run`` would select, one a line (--json: a list of ``described``); the count on stderr, so that
    stdout holds the ids alone. Exit 2 where a case file has problems, as ``run`` would (with --keep-going after
    listing the other files' cases, as ``run`` runs them); an empty selection is an answer, exit 0."""
    suite = selected(args)
    if suite is None:
        return EXIT_USAGE
    if args.json:
        say(json.dumps([described(entry) for entry in suite.entries], indent=1))
    else:
        for entry in suite.entries:
            say(entry.id)
    warn(f"{len(suite.entries)} case(s) selected from {suite.files} file(s)")
    return EXIT_USAGE if suite.problems else EXIT_OK

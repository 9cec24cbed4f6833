"""``dmlconf run``: collect the cases, run them in worker processes, stream each result to results.jsonl, write
results.json and the reports. ``--resume`` finishes a run that was killed (stream.py)."""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from conformance.cases.suite import Suite, run_elements
from conformance.cli.output import say, warn
from conformance.cli.progress import Progress
from conformance.cli.reports import read_waivers, verdict_lines, write_reports
from conformance.cli.selection import selected
from conformance.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    chosen_eps,
    existing,
)
from conformance.ep.directml import DirectML
from conformance.ep.dml_here import directml_for
from conformance.ep.providers import EpSpec
from conformance.ep.wine.chain import ChainMissing
from conformance.gate.summary import summarize
from conformance.gate.waivers import Waiver, apply_waivers
from conformance.report.console import render_console
from conformance.results import Result, write_results
from conformance.run.identity import RunFacts, cases_sha256, environment, skipped_files
from conformance.run.options import REPORT_FORMATS, RunOptions, run_options
from conformance.survive.pool import Ran, finished_prefix, run_pairs
from conformance.survive.stream import STREAM_NAME, Stream, StreamError, read_stream, run_identity
from conformance.survive.supervisor import Supervisor

log = logging.getLogger(__name__)


def _directml(eps: Sequence[EpSpec]) -> dict[str, DirectML]:
    """Each DirectML EP's DirectML, by its ``--ep`` text (off Windows, asked of the device through its build's
    runner); a usage error naming the missing piece where the chain or a build is not there."""
    try:
        return directml_for(list(eps))
    except ChainMissing as error:
        raise UsageError(f"--ep dml: {error}") from None


@dataclass(frozen=True)
class _Start:
    """When the command started: the wall clock for results.json, the monotonic clock for its duration."""

    at: datetime
    clock: float


def run_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    start = _Start(datetime.now(UTC), time.monotonic())
    eps = chosen_eps(args.ep)  # an EP that is not installed is a usage error, as is
    existing(args.paths or ["cases"])  # a wrong path, before the workers start: it costs nothing
    directml = _directml(eps)  # so is a missing piece of the DirectML chain
    if args.jobs < 1:
        return _run_suite(args, argv, eps, None, directml, start)
    # Started before the case files are read, so that the workers' imports overlap the reading.
    with Supervisor(args.jobs, args.case_timeout or None) as supervisor:
        return _run_suite(args, argv, eps, supervisor, directml, start)


def _within_limit(args: argparse.Namespace, suite: Suite, eps: Sequence[EpSpec]) -> None:
    """--max-run-elements, from the descriptors' sizes: checked before anything is generated or run."""
    elements = run_elements(suite.entries, len(eps))
    if elements > args.max_run_elements:
        raise UsageError(
            f"the selected cases hold {elements} elements, over --max-run-elements {args.max_run_elements} "
            "(select fewer with -k, --shard or --quick, or raise the limit)"
        )


def _folders(args: argparse.Namespace) -> None:
    """--report-dir and --artifacts made before the run, so that an unusable one costs nothing."""
    for option, folder in (("--report-dir", args.report_dir), ("--artifacts", args.artifacts)):
        try:
            if folder:
                os.makedirs(folder, exist_ok=True)
        except OSError as error:
            raise UsageError(f"{option}: cannot create {folder}: {error.strerror or error}") from None


def _stream(
    args: argparse.Namespace, suite: Suite, eps: Sequence[EpSpec], options: RunOptions, digest: str
) -> tuple[Stream, dict[int, Result]]:
    """results.jsonl opened for appending; with --resume, the results it already holds. ``digest``: the case files'
    hash (_cases_hash), taken once for results.json and the run's identity alike."""
    path = os.path.join(args.report_dir, STREAM_NAME)
    identity = run_identity(suite.entries, eps, options, digest)
    try:
        if args.resume and os.path.exists(path):
            done, keep = read_stream(path, identity)
            say(f"resuming: {len(done)} result(s) kept from {path}")
            return Stream(path, identity, keep), done
        if args.resume:
            warn(f"nothing to resume in {path}: running every case")
        return Stream(path, identity), {}
    except StreamError as error:
        raise UsageError(f"--resume: {error}; run without --resume to start again") from None
    except OSError as error:
        raise UsageError(f"--report-dir: cannot write {path}: {error.strerror or error}") from None


def _cases_hash(suite: Suite) -> tuple[str, int]:
    """The hash of the case files the selected cases come from (identity.py), taken as they are selected."""
    try:
        return cases_sha256(entry.path for entry in suite.entries)
    except OSError as error:
        raise UsageError(f"{error.filename}: cannot be read again to hash it: {error.strerror or error}") from None


def _announce(suite: Suite, eps: Sequence[EpSpec], directml: Mapping[str, DirectML]) -> None:
    say(f"running {len(suite.entries)} case(s) from {suite.files} file(s) on {', '.join(ep.text for ep in eps)}")
    for label, found in directml.items():
        level = found.feature_level or "?"
        say(f"{label}: DirectML {found.version or '?'} ({found.source}): feature level {level}")


def _run_suite(
    args: argparse.Namespace,
    argv: Sequence[str],
    eps: list[EpSpec],
    supervisor: Supervisor | None,
    directml: Mapping[str, DirectML],
    start: _Start,
) -> int:
    suite = selected(args)  # the selection ``dmlconf list`` shows
    if suite is None:
        return EXIT_USAGE
    if not suite.entries:
        raise UsageError("no cases selected" + (f" (-k {args.keyword!r} matched none)" if args.keyword else ""))
    _within_limit(args, suite, eps)
    digest, files = _cases_hash(suite)
    options = run_options(vars(args), directml)
    _folders(args)
    waivers = read_waivers(args.waivers)  # read once: the file may change while a long run goes on
    stream, done = _stream(args, suite, eps, options, digest)
    planned = len(suite.entries) * len(eps)
    progress = Progress(planned - len(done))
    finished = dict(done)

    def record(pair: int, result: Result) -> None:
        finished[pair] = result
        stream.add(pair, result)

    try:
        _announce(suite, eps, directml)
        ran = run_pairs(suite.entries, eps, options, args.jobs, progress.advance, supervisor, done=done, record=record)
    except KeyboardInterrupt:  # one that came before (or after) run_pairs had it in hand: the same as one within
        ran = Ran(tuple(finished_prefix(finished, planned)), interrupted=True)
    finally:
        stream.close()
        progress.close()
    if ran.stopped is not None:
        log.error("%s", ran.stopped)
    skipped = skipped_files(suite.invalid_files, suite.problems)
    facts = RunFacts(start.at, time.monotonic() - start.clock, digest, files, skipped)
    env = environment(eps, options, argv, directml, suite.problems, facts)
    if ran.stopped is not None:
        env["stopped"] = ran.stopped
    if ran.runner_deaths:  # docs/reliability.md: each EP's DirectML runner deaths, which the gate fails
        env["runner_deaths"] = list(ran.runner_deaths)
    code = _report(args, env, ran.results, planned, waivers)
    if suite.problems:  # --keep-going: the input was still invalid, which outranks any verdict
        why = f"{len(suite.invalid_files)} file(s) were skipped for {len(suite.problems)} problem(s)"
        warn(f"{why} (listed above and in results.json): exit code 2")
        return EXIT_USAGE
    return code


def _report(
    args: argparse.Namespace,
    env: dict[str, Any],
    results: Sequence[Result],
    planned: int,
    waivers: list[Waiver] | None,
) -> int:
    """results.json and every report written, then the console's summary: a reader of stdout that went away
    (``| head``) costs no report, and the exit code is the run's verdict whatever became of stdout."""
    interrupted = len(results) < planned
    if interrupted:  # recorded, so that every report of this results.json says the run failed, and how far it got
        warn(f"interrupted: writing the {len(results)} result(s) finished so far")
        env |= {"interrupted": True, "planned_results": planned}
    summary = summarize(env, results)
    gate = apply_waivers(env, results, waivers) if waivers is not None else None
    results_path = os.path.join(args.report_dir, "results.json")
    try:
        write_results(results_path, env, results)
        written = write_reports(args.report_dir, summary, results, gate, list(REPORT_FORMATS))
    except OSError as error:
        say(render_console(summary))  # with results.jsonl, the only record of the results now
        warn(f"dmlconf: cannot write reports to {args.report_dir}: {error.strerror or error}")
        return EXIT_FAILED
    say(render_console(summary))
    say(f"reports: {', '.join([results_path, *written])}")
    if interrupted:
        say(f"every finished result is in {os.path.join(args.report_dir, STREAM_NAME)}: add --resume to finish")
    lines, passed = verdict_lines(summary, gate)  # the last lines, as report's and merge's
    say("\n".join(lines))
    return EXIT_OK if passed else EXIT_FAILED

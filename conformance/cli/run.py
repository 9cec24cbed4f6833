"""``dmlconf run``: collect the cases, run them in worker processes, stream each result to results.jsonl, write
results.json and the reports. ``--resume`` finishes a run that was killed (stream.py). One run at a time writes in a
report folder (lock.py), and the reports a previous run left there are removed before this run writes anything
(run_start.py)."""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

from conformance import ep_table
from conformance.cases.limits import DEFAULT_MAX_RUN_ELEMENTS
from conformance.cases.parse import Entry
from conformance.cases.suite import Suite
from conformance.cli.collector import full_collection_deferred
from conformance.cli.output import say, warn
from conformance.cli.progress import Progress
from conformance.cli.reports import (
    QUIET,
    REPORT_DIR,
    REPORT_FORMATS,
    locked,
    read_waivers,
    verdict_lines,
    write_reports,
)
from conformance.cli.run_start import cases_hash, make_folders, open_stream, within_limit
from conformance.cli.run_stream import Held, Reading, SelectionRefused, streams
from conformance.cli.selection import KEEP_GOING, KEYWORD, QUICK, SHARD, SHARD_BY_TIME, selected
from conformance.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    chosen_eps,
    existing,
    file_limits,
    found_paths,
)
from conformance.cli.triage import TRIAGE, triage_run
from conformance.environment import Environment
from conformance.ep.directml import DirectML
from conformance.ep.dml_here import check_chains, directml_for
from conformance.ep.memory import memory_path
from conformance.ep.providers import EpSpec, uses_directml
from conformance.ep.wine.chain import ChainMissing
from conformance.ep.wine.client import runners_peak
from conformance.gate.recorded import record
from conformance.gate.summary import Summary, summarize
from conformance.gate.waiver_file import WaiverFile
from conformance.gate.waivers import Gate, apply_waivers
from conformance.model import MemoryPath
from conformance.problems import first_line
from conformance.report.console import render_console
from conformance.results import NotOurFile, Result, own_folder, verdict_text, write_results
from conformance.run.again import worth_running_again
from conformance.run.command_line import Option, whole_number
from conformance.run.expect import UnexpectedDevice, check_devices
from conformance.run.identity import RunFacts, environment, skipped_files
from conformance.run.modes import VALUES_FOLDER, has_family, mode_equality, prune_values, with_modes
from conformance.run.options import (
    ARTIFACTS,
    CASE_TIMEOUT,
    EP,
    EXPECT_DEVICE,
    FEATURE_LEVEL,
    MAX_CASE_BYTES,
    MAX_ELEMENTS,
    MAX_FILE_BYTES,
    MAX_NODES,
    MODES,
    PACK,
    REPEAT,
    RERUN_FAILURES,
    WAIVERS,
    RunOptions,
    run_options,
)
from conformance.survive.again import rerun_failures
from conformance.survive.faults import RunLog
from conformance.survive.interrupt import Interrupts, interrupts_stop_the_run
from conformance.survive.lock import FolderLock
from conformance.survive.memory import Peaks, own_peak_kib
from conformance.survive.pool import Ran, ran_so_far, run_arriving, run_pairs
from conformance.survive.stream import STREAM_NAME, Stream, StreamWriteError
from conformance.survive.supervisor import RunStopped, Supervisor

log = logging.getLogger(__name__)

JOBS = Option(
    ("-j", "--jobs"),
    "run in N worker processes; a worker that crashes or hangs costs only its case (default 1; "
    "0: in this process, unprotected)",
    default=1,
    metavar="N",
    check=whole_number(0),
)
RESUME = Option(
    ("--resume",),
    "finish a run that was killed: keep the results in --report-dir's results.jsonl, run the rest",
    flag=True,
)
MAX_RUN_ELEMENTS = Option(
    ("--max-run-elements",),
    "refuse to start a run whose (case, EP) pairs hold over N tensor elements in all, inputs and outputs "
    f"(default {DEFAULT_MAX_RUN_ELEMENTS}: some 600 times the case library on one EP)",
    default=DEFAULT_MAX_RUN_ELEMENTS,
    metavar="N",
    check=whole_number(1),
)
RUN_OPTIONS = (
    EP,
    MODES,
    FEATURE_LEVEL,
    MAX_ELEMENTS,
    MAX_CASE_BYTES,
    MAX_FILE_BYTES,
    MAX_NODES,
    CASE_TIMEOUT,
    JOBS,
    PACK,
    REPEAT,
    RERUN_FAILURES,
    TRIAGE,
    EXPECT_DEVICE,
    REPORT_DIR,
    KEYWORD,
    QUICK,
    WAIVERS,
    QUIET,
    ARTIFACTS,
    SHARD,
    SHARD_BY_TIME,
    RESUME,
    KEEP_GOING,
    MAX_RUN_ELEMENTS,
)


Describe = Callable[[], Mapping[str, DirectML]]  # each DirectML EP's DirectML, by its --ep text (ChainMissing)


@contextlib.contextmanager
def _chain_usage() -> Iterator[None]:
    """A missing piece of a DirectML chain, or a build that cannot describe its device: a usage error naming it."""
    try:
        yield
    except ChainMissing as error:
        raise UsageError(f"--ep {ep_table.DML.alias}: {error}") from None


@dataclass(frozen=True)
class _Start:
    """When the command started: the wall clock for results.json, the monotonic clock for its duration; and the
    handler of the signals that interrupt it, which tells which came."""

    at: datetime
    clock: float
    interrupts: Interrupts


def run_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    # SIGTERM and SIGHUP as Ctrl-C (survive/interrupt.py); no full collection of what the run holds (collector.py)
    with interrupts_stop_the_run() as interrupts, full_collection_deferred():
        return _run_command(args, argv, interrupts)


def _run_command(args: argparse.Namespace, argv: Sequence[str], interrupts: Interrupts) -> int:
    start = _Start(datetime.now(UTC), time.monotonic(), interrupts)
    eps = chosen_eps(args.ep)  # an EP that is not installed is a usage error, as is
    if args.modes:  # each EP's execution modes, as EPs of their own (run/modes.py)
        eps = with_modes(eps)
    existing(args.paths or ["cases"])  # a wrong path, before the workers start: it costs nothing
    with contextlib.ExitStack() as held:  # the report folder's lock, once _run_suite takes it, until the reports
        if args.jobs < 1:
            with _chain_usage():  # so is a missing piece of the DirectML chain (described here: a runner of its own)
                directml = directml_for(eps)
            return _run_suite(args, argv, eps, None, lambda: directml, start, held)
        with _chain_usage():
            check_chains(eps)  # so is a missing piece of a DirectML chain, told before any worker starts
        # Started before the case files are read, so that the workers' imports, and their DirectML runners and
        # devices, come up while this process reads them; the first worker's describe is the run's.
        describe = [ep for ep in eps if uses_directml(ep)]
        with Supervisor(args.jobs, run_options(vars(args), {}).case_timeout, describe) as supervisor:
            try:
                return _run_suite(args, argv, eps, supervisor, supervisor.directml, start, held)
            except RunStopped as error:  # workers that never started, while the describe waited: nothing ran
                log.error("%s", error)
                return EXIT_FAILED


def _announce(suite: Suite, eps: Sequence[EpSpec], directml: Mapping[str, DirectML]) -> None:
    say(f"running {len(suite.entries)} case(s) from {suite.files} file(s) on {', '.join(ep.text for ep in eps)}")
    for label, found in directml.items():
        level = found.feature_level or "?"
        say(f"{label}: DirectML {found.version or '?'} ({found.source}): feature level {level}")


@dataclass(frozen=True)
class _Began:
    """What a run has once its selection is known and its cases ran: the selection, the options they ran with, the
    DirectML they ran on, the case files' hash, the report folder's lock, the waivers, and what the run gave."""

    suite: Suite
    options: RunOptions
    directml: Mapping[str, DirectML]
    digest: str
    files: int
    lock: FolderLock
    waivers: WaiverFile | None
    ran: Ran
    run_log: RunLog


def _run_suite(
    args: argparse.Namespace,
    argv: Sequence[str],
    eps: list[EpSpec],
    supervisor: Supervisor | None,
    describe: Describe,
    start: _Start,
    held: contextlib.ExitStack,
) -> int:
    """The run, from its selection to its exit code; ``describe`` gives each DirectML EP's DirectML once the case
    files are read (or while they are: run_stream.py); ``held`` keeps the report folder's lock, taken once the input
    is known to be valid, until the caller's reports are written."""
    paths = [memory_path(ep) for ep in eps]
    began: _Began | None
    if supervisor is not None and streams(args, eps):
        try:
            began = _streamed(args, eps, paths, supervisor, describe, held)
        except SelectionRefused:
            return EXIT_USAGE
    else:
        began = _read_first(args, eps, paths, supervisor, describe, held)
    if began is None:
        return EXIT_USAGE
    suite, options, directml, ran = began.suite, began.options, began.directml, began.ran
    if args.rerun_failures and not ran.interrupted and ran.stopped is None:  # in the workers, before the triage
        ran = _again(args, suite.entries, eps, options, directml, supervisor, began.run_log, ran, began.waivers)
    if supervisor is not None:  # no more tasks: the workers exit while the reports are written (closed after)
        supervisor.stop()
    if options.values_dir is not None:  # before the triage: a mode mismatch is a failure of its own
        ran = _modes_equal(ran, options.values_dir, args.quiet)
    if args.triage and not ran.interrupted:  # the failures re-run on the ladder before any report is written
        entries = {entry.id: entry for entry in suite.entries}
        ran = replace(ran, results=tuple(triage_run(ran.results, entries, options, args.quiet)))
    if ran.stopped is not None:
        log.error("%s", ran.stopped)
    skipped = skipped_files(suite.invalid_files, suite.problems)
    facts = RunFacts(start.at, time.monotonic() - start.clock, began.digest, began.files, skipped, suite.shard)
    env = _environment(argv, eps, options, directml, suite, facts, ran, supervisor)
    planned = len(suite.entries) * len(eps)
    code = _report(args, env, ran.results, planned, began.waivers, began.lock, start.interrupts.received)
    if suite.problems:  # --keep-going: the input was still invalid, which outranks any verdict
        why = f"{len(suite.invalid_files)} file(s) were skipped for {len(suite.problems)} problem(s)"
        warn(f"{why} (listed above and in results.json): exit code 2")
        return EXIT_USAGE
    return code


def _read_first(
    args: argparse.Namespace,
    eps: list[EpSpec],
    paths: Sequence[MemoryPath],
    supervisor: Supervisor | None,
    describe: Describe,
    held: contextlib.ExitStack,
) -> _Began | None:
    """Every case file read and the selection made, then the cases run; None where the files have problems."""
    suite = selected(args, paths)  # the selection ``dmlconf list`` shows (which checks every path)
    if suite is None:
        return None
    _some_selected(args, suite)
    within_limit(args, suite, eps, paths)
    with _chain_usage():  # -j N: the workers' answer, their runners started beside the reading (supervisor.py)
        directml = describe()
    options = _options(args, eps, directml)
    ready = _ready(args, suite, eps, options, directml, held)
    run_log = RunLog()  # the run's: its runs again (--rerun-failures) add to what its cases taught it
    if not args.quiet:
        _announce(suite, eps, directml)
    ran = _run_pairs(args, suite, eps, options, supervisor, ready.stream, ready.done, run_log)
    return _Began(suite, options, directml, ready.digest, ready.files, ready.lock, ready.waivers, ran, run_log)


def _some_selected(args: argparse.Namespace, suite: Suite) -> None:
    if not suite.entries:
        raise UsageError("no cases selected" + (f" (-k {args.keyword!r} matched none)" if args.keyword else ""))


def _options(args: argparse.Namespace, eps: Sequence[EpSpec], directml: Mapping[str, DirectML]) -> RunOptions:
    """The run's options, once its DirectML is known (a run meant for one GPU that would run elsewhere is stopped
    here, before it writes anything); with two modes of one EP, the folder their outputs are kept in."""
    try:
        check_devices(eps, directml, args.expect_device)
    except UnexpectedDevice as error:
        raise UsageError(str(error)) from None
    options = run_options(vars(args), directml)
    if has_family(eps):  # two modes of one EP: their outputs kept, for mode equality to name where they differ
        options = replace(options, values_dir=values_folder(args.report_dir))
    return options


@dataclass(frozen=True)
class _Ready:
    """What a run makes ready before its first result is written (run_start.py)."""

    digest: str
    files: int
    lock: FolderLock
    waivers: WaiverFile | None
    stream: Stream
    done: dict[int, Result]


def _ready(
    args: argparse.Namespace,
    suite: Suite,
    eps: Sequence[EpSpec],
    options: RunOptions,
    directml: Mapping[str, DirectML],
    held: contextlib.ExitStack,
) -> _Ready:
    """The case files' hash, the folders, the report folder's lock (a second run: refused before it writes), the
    waivers (read once: the file may change while a long run goes on) and results.jsonl (--resume: what it holds)."""
    digest, files = cases_hash(suite)
    make_folders(args, suite, eps)
    lock = held.enter_context(locked(args.report_dir, "--report-dir"))
    waivers = read_waivers(args.waivers)
    stream, done = open_stream(args, suite, eps, options, digest, directml)
    return _Ready(digest, files, lock, waivers, stream, done)


def _streamed(
    args: argparse.Namespace,
    eps: list[EpSpec],
    paths: Sequence[MemoryPath],
    supervisor: Supervisor,
    describe: Describe,
    held: contextlib.ExitStack,
) -> _Began:
    """The case files read while the workers run the cases read so far (run_stream.py); SelectionRefused where the
    files have problems (nothing is written then, and the workers are stopped)."""

    def check(suite: Suite) -> None:  # in the reading's thread: the selection's size, as _read_first checks it
        _some_selected(args, suite)
        within_limit(args, suite, eps, paths)

    reading = Reading(args, found_paths(args.paths or ["cases"]), file_limits(args, paths), check)
    reading.start()
    with _chain_usage():
        directml = describe()
    options = _options(args, eps, directml)
    holding, run_log = Held(), RunLog()
    progress = Progress(None, silent=args.quiet)
    readied: list[tuple[Suite, _Ready]] = []

    def selection_made() -> None:
        """Every file read: the selection checked and the run made ready, as a run that reads first does."""
        suite = reading.selection()
        ready = _ready(args, suite, eps, options, directml, held)
        holding.open(ready.stream)
        readied.append((suite, ready))
        progress.known(len(suite.entries) * len(eps))
        if not args.quiet:
            progress.clear()
            _announce(suite, eps, directml)

    class Arrivals:
        def take(self) -> Sequence[Entry] | None:
            came: Sequence[Entry] | None = reading.take()
            if came is None:
                selection_made()
            return came

    finished: dict[int, Result] = {}

    def record(pair: int, result: Result) -> None:
        finished[pair] = result
        holding.record(pair, result)

    try:
        ran = run_arriving(Arrivals(), eps, options, supervisor, progress.advance, record, run_log)
        if not readied:  # cut short while the files were read: what finished is written, which needs them all
            reading.finish()
            selection_made()
    except StreamWriteError as error:
        ran = _disk_full(error, args.report_dir, finished, reading.taken * len(eps), run_log)
    finally:
        _closed(holding.stream, progress)
    suite, ready = readied[0]
    return _Began(suite, options, directml, ready.digest, ready.files, ready.lock, ready.waivers, ran, run_log)


def _disk_full(
    error: StreamWriteError, report_dir: str, finished: Mapping[int, Result], planned: int, run_log: RunLog
) -> Ran:
    """A full disk ends the run: what cannot be kept for --resume is not run; what finished is written."""
    kept = f"the results before are kept there: --resume finishes the run once {report_dir} has room"
    return ran_so_far(finished, planned, run_log, stopped=f"{error}: the run stops here ({kept})")


def _closed(stream: Stream | None, progress: Progress) -> None:
    """The stream and the progress line closed, whatever ended the run."""
    unsynced = stream.close() if stream is not None else None
    progress.close()
    if unsynced is not None:
        warn(f"dmlconf: {unsynced}: its last results may be cut short (results.json has them all)")


def values_folder(report_dir: str) -> str:
    """Where the run keeps each mode's outputs (run/modes.py), made now: never reached through a planted link."""
    folder = os.path.join(report_dir, VALUES_FOLDER)
    try:
        own_folder(folder)
    except NotOurFile as error:
        raise UsageError(f"--report-dir: {error}") from None
    return folder


def _modes_equal(ran: Ran, folder: str, quiet: bool) -> Ran:
    """Mode equality over the run's results (run/modes.py): the mismatches said, their outputs kept as evidence."""
    results, evidence = mode_equality(ran.results, folder)
    kept = prune_values(folder, evidence)
    mismatches = [r for r, before in zip(results, ran.results, strict=True) if r is not before]
    if mismatches and not quiet:
        say(f"mode equality: {len(mismatches)} (case, mode) result(s) differ bit for bit from another mode's")
        for result in mismatches:
            say(f"  {result.case} [{result.ep}]: {first_line(result.message)}")
        say(f"  their outputs: {kept} file(s) in {folder}")
    return replace(ran, results=tuple(results))


def _again(
    args: argparse.Namespace,
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    options: RunOptions,
    directml: Mapping[str, DirectML],
    supervisor: Supervisor | None,
    log: RunLog,
    ran: Ran,
    waivers: WaiverFile | None,
) -> Ran:
    """--rerun-failures: the run's unexpected failures (every failure without a waiver file; with one, those the
    gate does not expect) run again in the run's workers; a FLAKY one is not run again."""
    if waivers is not None:  # the gate on the machine as results.json will record it
        machine = environment(eps, options, [], directml)
        failing: Sequence[Result] = apply_waivers(machine, ran.results, waivers.entries).unexpected_failures
    else:
        failing = ran.results
    chosen = {(r.case, r.ep) for r in failing if worth_running_again(r)}
    if not chosen:
        return ran
    if not args.quiet:
        say(f"--rerun-failures {args.rerun_failures}: running {len(chosen)} failure(s) again")
    told = None if args.quiet else lambda r: say(f"  {verdict_text(r.status, r.failure_kind)} {r.case} [{r.ep}]")
    again = rerun_failures(ran, chosen, entries, eps, args.rerun_failures, options, args.jobs, supervisor, log, told)
    if again.interrupted and not ran.interrupted:
        warn("interrupted while failures ran again: those not run again keep their verdicts")
    return again


def _run_pairs(
    args: argparse.Namespace,
    suite: Suite,
    eps: Sequence[EpSpec],
    options: RunOptions,
    supervisor: Supervisor | None,
    stream: Stream,
    done: dict[int, Result],
    run_log: RunLog,
) -> Ran:
    """The pairs not ``done`` run, each result streamed to results.jsonl as it comes; a Ctrl-C or a full disk ends
    the run with what finished so far. The stream and the progress line are closed whatever happens. ``run_log`` is
    the run's, given so that every way out of it keeps its runner deaths and lost devices."""
    planned = len(suite.entries) * len(eps)
    progress = Progress(planned - len(done), silent=args.quiet)  # --quiet: the unexpected and the verdict alone
    finished = dict(done)

    def record(pair: int, result: Result) -> None:
        finished[pair] = result
        stream.add(pair, result)

    try:
        ran = run_pairs(
            suite.entries, eps, options, args.jobs, progress.advance, supervisor, done=done, record=record, log=run_log
        )
    except KeyboardInterrupt:  # one that came before (or after) run_pairs had it in hand: the same as one within
        ran = ran_so_far(finished, planned, run_log, interrupted=True)
    except StreamWriteError as error:
        ran = _disk_full(error, args.report_dir, finished, planned, run_log)
    finally:
        _closed(stream, progress)
    return ran


def _environment(
    argv: Sequence[str],
    eps: Sequence[EpSpec],
    options: RunOptions,
    directml: Mapping[str, DirectML],
    suite: Suite,
    facts: RunFacts,
    ran: Ran,
    supervisor: Supervisor | None,
) -> Environment:
    """results.json's environment: what the run ran on and how, how it ended, and its peak memory."""
    peaks = supervisor.peaks if supervisor is not None else Peaks()  # -j 0: this process's own runners alone
    return replace(
        environment(eps, options, argv, directml, suite.problems, facts),
        stopped=ran.stopped,
        runner_deaths=ran.runner_deaths,  # docs/reports.md: each EP's runner deaths; those under a pack fail the run
        peak_memory=peaks.record(own_peak_kib(), *runners_peak()),  # this process's runners: describe's, -j 0's
    )


def _report(
    args: argparse.Namespace,
    env: Environment,
    results: Sequence[Result],
    planned: int,
    waivers: WaiverFile | None,
    lock: FolderLock,
    signal_name: str | None,
) -> int:
    """results.json and every report written, then the console's summary: a reader of stdout that went away
    (``| head``) costs no report, and the exit code is the run's verdict whatever became of stdout."""
    interrupted = len(results) < planned
    if interrupted:  # recorded, so that every report of this results.json says the run failed, and how far it got
        by = f" by {signal_name}" if signal_name else ""
        warn(f"interrupted{by}: writing the {len(results)} result(s) finished so far")
        env = replace(env, interrupted=True, planned_results=planned)
    gate = apply_waivers(env, results, waivers.entries) if waivers is not None else None
    if waivers is not None and gate is not None:  # recorded, so that a report of results.json gives this verdict
        env = replace(env, waivers=record(waivers, gate))
    summary = summarize(env, results)
    written, unwritten = _write_all(args.report_dir, env, summary, results, gate, lock)
    # where nothing could be written, with results.jsonl the only record of the results; --quiet: the unexpected alone
    console = render_console(summary, gate=gate, quiet=args.quiet, verbose=args.verbose)
    if console:
        say(console)
    if written and not args.quiet:
        say(f"reports: {', '.join(written)}")
    if interrupted:
        say(f"every finished result is in {os.path.join(args.report_dir, STREAM_NAME)}: add --resume to finish")
    lines, passed = verdict_lines(summary, gate, args.quiet, recap=not args.quiet)  # as report's and merge's
    say("\n".join(lines))
    if unwritten is not None:  # after the verdict, so that the last line says why the exit code is 1
        warn(f"dmlconf: cannot write {unwritten}: exit code 1")
        return EXIT_FAILED
    return EXIT_OK if passed else EXIT_FAILED


def _write_all(
    folder: str, env: Environment, summary: Summary, results: Sequence[Result], gate: Gate | None, lock: FolderLock
) -> tuple[list[str], str | None]:
    """results.json, then the reports, each written where it can be (a full disk may take the small summary.md
    and not the large results.json): the paths written, and what could not be written and why (one line). Nothing
    is written into a folder that was removed or replaced while the run went on: another run may hold it now."""
    results_path = os.path.join(folder, "results.json")
    written: list[str] = []
    if not lock.still_ours():
        return written, f"{folder}: removed or replaced while this run went on (another run may hold it now)"
    unwritten = None
    try:
        write_results(results_path, env.to_json(whole=True), results)  # as this run found it
        written.append(results_path)
    except OSError as error:
        unwritten = f"{results_path}: {error.strerror or error}"
    try:
        written += write_reports(folder, summary, results, gate, list(REPORT_FORMATS))
    except OSError as error:
        unwritten = unwritten or f"the reports in {folder}: {error.strerror or error}"
    return written, unwritten

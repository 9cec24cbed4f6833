"""The report side of the CLI: writing every format from results (``dmlconf run``, ``report`` and ``merge``), the
known-failure gate, and ``dmlconf diff``. Rendering lives in the report stage; this module picks files (the reports'
names, ``REPORT_FORMATS``), options (report's, diff's and merge's, --report-dir and --quiet shared with run) and exit
codes. It reads results.json only: nothing here loads onnxruntime or onnx."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType
from urllib.parse import quote

from conformance.cli.output import say, warn
from conformance.cli.shared import UsageError
from conformance.environment import Environment, GatedWith
from conformance.gate.diff import SeveralEps, diff_runs, only_ep
from conformance.gate.merge import MergeError, merge_runs, recorded_waivers
from conformance.gate.recorded import Gating, RecordedFileError, gating, record
from conformance.gate.summary import Summary, summarize
from conformance.gate.verdict import decide, whose_label
from conformance.gate.waiver_file import WaiverFile, load_waiver_file
from conformance.gate.waivers import Gate, apply_waivers, near_miss_keys, stale_line
from conformance.model import Status
from conformance.records import RecordError
from conformance.report.diff import render_diff_console, render_diff_markdown
from conformance.report.html import render_html
from conformance.report.junit import render_junit
from conformance.report.markdown import render_markdown
from conformance.results import (
    NotOurFile,
    Result,
    ResultsFile,
    own_folder,
    read_results,
    write_results,
    write_text_atomic,
)
from conformance.run.artifacts import folder_name
from conformance.run.command_line import Option, required
from conformance.run.options import WAIVERS
from conformance.survive.lock import FolderBusy, FolderLock

# Each report format, by its --format name, and the file it is written to (beside results.json, or in --out-dir).
REPORT_FORMATS: Mapping[str, str] = MappingProxyType({"html": "report.html", "md": "summary.md", "junit": "junit.xml"})

REPORT_DIR = Option(
    ("--report-dir",),
    "where the results and reports go (run's default: reports/; merge needs it)",
    default="reports",
    metavar="DIR",
)
QUIET = Option(
    ("--quiet",),
    "print only the unexpected results and the verdict (no tables, known failures or files written)",
    flag=True,
)
FORMAT = Option(
    ("--format",),
    "repeatable (default: html, md and junit)",
    repeat=True,
    choices=tuple(sorted(REPORT_FORMATS)),
)
OUT_DIR = Option(("--out-dir",), "where reports go (default: beside RESULTS.json)", metavar="DIR")
MARKDOWN = Option(("--markdown",), "also write the comparison as Markdown to FILE", metavar="FILE")
MATCH = Option(
    ("--match",),
    "pair results by case and EP (case-ep), or by case alone (case: runs of different EPs or devices, one EP "
    "a run; default case-ep)",
    default="case-ep",
    choices=("case-ep", "case"),
)
OLD_EP = Option(
    ("--old-ep",),
    "take only OLD's results on this EP (its text as run wrote it, e.g. dml:directml=1.13.1): one build of a "
    "run of several, diffed against another",
    metavar="EP",
)
NEW_EP = Option(
    ("--new-ep",),
    "take only NEW's results on this EP (OLD and NEW may be one file; two EPs need --match case)",
    metavar="EP",
)
ALLOW_REMOVED = Option(
    ("--allow-removed",),
    "a result in OLD that NEW lacks is shown, not a regression (two runs with nothing in common still are)",
    flag=True,
)
REPORT_OPTIONS = (WAIVERS, QUIET, FORMAT, OUT_DIR)
DIFF_OPTIONS = (MARKDOWN, MATCH, OLD_EP, NEW_EP, ALLOW_REMOVED, WAIVERS)
MERGE_OPTIONS = (required(REPORT_DIR), WAIVERS, QUIET)


def read_waivers(path: str | None) -> WaiverFile | None:
    """The waiver file, or None without one; its problems are CaseFileError lines."""
    if path is None:
        return None
    if not os.path.isfile(path):
        raise UsageError(f"--waivers: {path}: no such file")
    return load_waiver_file(path)


def chosen_gating(given: str | None, recorded: Sequence[GatedWith], results_path: str) -> Gating:
    """The waiver file a reader gates a run with: ``given`` (--waivers), else the one the run recorded
    (gate/recorded.py); a recorded file that cannot be applied again is a usage error naming the results.json."""
    try:
        return gating(read_waivers(given), recorded)
    except RecordedFileError as error:
        raise UsageError(f"{results_path}: {error}") from None


def gated(choice: Gating, env: Environment, results: Sequence[Result]) -> tuple[Gate | None, Environment]:
    """The gate ``choice`` gives ``results``, and the environment recording the file it was gated with (what
    results.json keeps: gate/recorded.py); no gate, and the environment as it was, without a file."""
    if choice.file is None:
        return None, env
    gate = apply_waivers(env, results, choice.file.entries)
    return gate, replace(env, waivers=record(choice.file, gate))


def gating_lines(choice: Gating, quiet: bool) -> list[str]:
    """Which waiver file gated the run: always where it is not the run's own, else unless --quiet."""
    return [choice.line] if choice.line and (choice.replaced or not quiet) else []


class CannotWrite(OSError):
    """An output that could not be written: the path meant (not a temporary beside it) and the OS's reason. An
    OSError still, so that ``dmlconf run`` keeps its own handling of reports it cannot write."""

    def __init__(self, path: str, error: OSError, doing: str = "write") -> None:
        super().__init__(error.errno, error.strerror or str(error), path)
        self.line = f"{path}: cannot {doing}: {error.strerror or error}"


@contextlib.contextmanager
def _output(path: str, doing: str = "write") -> Iterator[None]:
    """Writing ``path``: an OSError becomes CannotWrite naming it."""
    try:
        yield
    except CannotWrite:
        raise
    except OSError as error:
        raise CannotWrite(path, error, doing) from None


@contextlib.contextmanager
def _one_line() -> Iterator[None]:
    """report, merge and diff: an output they cannot write is one line naming it and why, exit 2 (a usage error:
    the output path is the user's to fix), with what was written before it left as it is."""
    try:
        yield
    except CannotWrite as error:
        raise UsageError(error.line) from None


@contextlib.contextmanager
def locked(folder: str, option: str, names_holder: bool = True) -> Iterator[FolderLock]:
    """``folder`` (which exists) locked against a run or a report writing there (survive/lock.py) while the body
    writes into it; a usage error, one line, where another command holds it or ``.dmlconf.lock`` is a link or no
    regular file. ``option``: the folder's option, named in the line; ``names_holder``: lock.py's."""
    try:
        lock = FolderLock(folder, names_holder)
    except FolderBusy as error:
        raise UsageError(f"{option} {error}") from None
    except NotOurFile as error:
        raise UsageError(f"{option}: {error}") from None
    except OSError as error:
        raise UsageError(f"{option}: cannot write in {folder}: {error.strerror or error}") from None
    try:
        yield lock
    finally:
        lock.release()


@contextlib.contextmanager
def writing_in(folder: str, option: str) -> Iterator[None]:
    """``folder`` made where missing, not reached through a planted link (results.own_folder), and ``locked``."""
    try:
        own_folder(folder)
    except NotOurFile as error:
        raise UsageError(f"{option}: {error}") from None
    except OSError as error:
        raise UsageError(f"{folder}: cannot create the folder: {error.strerror or error}") from None
    with locked(folder, option, names_holder=False):
        yield


def read_run(path: str) -> ResultsFile:
    """A results.json, or a one-line usage error naming the file and what is wrong: where in it for a document that
    is no results.json ("r.json: results[3].status: 'BOGUS' is not a status")."""
    try:
        return read_results(path)
    except RecordError as error:
        raise UsageError(f"{path}: {error}") from None
    except (OSError, ValueError) as error:
        raise UsageError(f"{path}: not a readable results.json: {error}") from None


def artifact_links(env: Environment, results: Sequence[Result], out_dir: str) -> dict[tuple[str, str], str]:
    """(case, EP) -> the address of its --artifacts folder (results.json's environment names the root; artifacts.py
    names each folder), for the folders that exist: relative to ``out_dir``, so that the two folders can be moved
    together (a CI artifact holding both), else the folder's file: URI."""
    root = env.artifacts
    if not root:
        return {}
    links = {}
    for r in results:
        folder = os.path.join(root, folder_name(r.case, r.ep))
        if r.status is Status.FAIL and os.path.isdir(folder):
            try:
                relative = os.path.relpath(folder, out_dir).replace(os.sep, "/")
            except ValueError:  # Windows: another drive
                relative = ""
            links[(r.case, r.ep)] = (
                quote(relative, safe="/=,+") + "/" if relative else Path(folder).resolve().as_uri() + "/"
            )
    return links


def write_reports(
    out_dir: str, summary: Summary, results: Sequence[Result], gate: Gate | None, formats: Sequence[str]
) -> list[str]:
    """Write each format of ``summary`` (of ``results``) into ``out_dir`` (atomically, file by file); the paths
    written."""
    renderers = {
        "html": lambda: render_html(summary, results, gate, artifact_links(summary.environment, results, out_dir)),
        "md": lambda: render_markdown(summary, gate),
        "junit": lambda: render_junit(summary, results, gate),
    }
    try:  # every format rendered before any is written: a renderer that fails leaves the folder as it was
        texts = {name: renderers[name]() for name in formats}
    except Exception as error:  # a results.json this version cannot render: one line, not a traceback
        raise UsageError(f"cannot render the reports: {type(error).__name__}: {error}") from None
    written = []
    for name, text in texts.items():
        path = os.path.join(out_dir, REPORT_FORMATS[name])
        with _output(path):
            write_text_atomic(path, text, in_place_device=False)
        written.append(path)
    return written


def gate_lines(gate: Gate, quiet: bool = False, recap: bool = True) -> list[str]:
    """The gate's verdict for a console: what was expected, and what was not (``recap``: each unexpected result
    named again, one line each); ``quiet``: the unexpected results alone."""
    lines = (
        []
        if quiet
        else [
            f"known failures: {len(gate.expected_failures)} expected, {len(gate.unexpected_failures)} unexpected "
            f"failure(s), {len(gate.unexpected_passes)} unexpected pass(es), {len(gate.stale)} stale waiver(s)"
            + (f", {len(gate.flaky)} flaky result(s) tolerated" if gate.flaky else "")
        ]
    )
    if recap:
        why = near_miss_keys(gate)
        lines += [
            f"UNEXPECTED FAIL {r.case} [{r.ep}]{_whose(r)}"
            + (f": {why[(r.case, r.ep)]}" if (r.case, r.ep) in why else "")
            for r in gate.unexpected_failures
        ]
        lines += [f"UNEXPECTED PASS {r.case} [{r.ep}]: {w.tracking} can be closed" for r, w in gate.unexpected_passes]
    if gate.stale and not quiet:  # one line: summary.md and report.html list them
        lines.append(f"warning: {stale_line(gate.stale)} (listed in summary.md and report.html)")
    return lines


def _whose(result: Result) -> str:
    """ " [whose: driver]" after a failure triage judged; nothing after one it did not."""
    label = whose_label(result)
    return f" [{label}]" if label else ""


def verdict_lines(
    summary: Summary, gate: Gate | None, quiet: bool = False, recap: bool = True
) -> tuple[list[str], bool]:
    """How run, report and merge end on the console: the gate's lines, then the verdict's headline; and whether the
    verdict passed, which decides their exit code. ``quiet`` (--quiet): the unexpected results and the verdict;
    ``recap``: the gate names each unexpected result (run's console has listed them already under --quiet)."""
    verdict = decide(summary, gate)
    lines = gate_lines(gate, quiet, recap) if gate is not None else []
    return [*lines, verdict.headline], verdict.passed


def _publish(
    out_dir: str,
    env: Environment,
    results: Sequence[Result],
    gate: Gate | None,
    formats: Sequence[str],
    quiet: bool = False,
) -> tuple[list[str], list[str], int]:
    """``report`` and ``merge``'s common end: every format written; the paths written, the gate's lines ending with
    the verdict, and the exit code."""
    summary = summarize(env, results)
    with _one_line():
        written = write_reports(out_dir, summary, results, gate, formats)
    lines, passed = verdict_lines(summary, gate, quiet)
    return written, lines, 0 if passed else 1


def _skipped_input(env: Environment, code: int) -> int:
    """A run made with --keep-going over invalid case files exits 2 whatever its verdicts; so does every report of
    its results.json, so that a gate reading it later cannot pass on cases that were never run."""
    if not env.problems:
        return code
    warn(f"the run skipped case files for {len(env.problems)} problem(s) (--keep-going): exit code 2")
    return 2


def report_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    document = read_run(args.results)
    env, results = document.environment, document.results
    out_dir = args.out_dir or os.path.dirname(args.results) or "."
    formats = args.format or list(REPORT_FORMATS)
    choice = chosen_gating(args.waivers, [env.waivers] if env.waivers is not None else [], args.results)
    gate, env = gated(choice, env, results)
    with writing_in(out_dir, "--out-dir"):
        written, lines, code = _publish(out_dir, env, results, gate, formats, args.quiet)
    say("\n".join([*([] if args.quiet else written), *gating_lines(choice, args.quiet), *lines]))
    return _skipped_input(env, code)


def merge_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    documents = [(path, read_run(path)) for path in args.results]
    runs = [(path, document.environment, document.results) for path, document in documents]
    try:
        env, results = merge_runs(runs, waivers_given=args.waivers is not None)
    except MergeError as error:
        raise UsageError(str(error)) from None
    choice = chosen_gating(args.waivers, recorded_waivers(runs), ", ".join(args.results))
    gate, env = gated(choice, env, results)
    results_path = os.path.join(args.report_dir, "results.json")
    with writing_in(args.report_dir, "--report-dir"):
        with _one_line(), _output(results_path):
            write_results(results_path, env.to_json(), results)
        written, lines, code = _publish(args.report_dir, env, results, gate, list(REPORT_FORMATS), args.quiet)
    if not args.quiet:
        say(f"merged {len(results)} result(s) from {len(runs)} file(s): {', '.join([results_path, *written])}")
    say("\n".join([*gating_lines(choice, args.quiet), *lines]))
    return _skipped_input(env, code)


def _same_file(old: str, new: str) -> bool:
    try:
        return os.path.samefile(old, new)
    except OSError:  # one is missing: _read names it
        return False


def _one_ep(path: str, option: str, label: str | None) -> tuple[Environment, Sequence[Result]]:
    """A results.json to diff: all of it, or (``--old-ep``/``--new-ep``) one EP's results."""
    document = read_run(path)
    env, results = document.environment, document.results
    if label is None:
        return env, results
    try:
        chosen, env = only_ep(results, env, label)
    except ValueError as error:
        raise UsageError(f"{option} {label}: {path}: {error}") from None
    return env, chosen


def diff_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    if args.old_ep and args.new_ep and args.old_ep != args.new_ep and args.match != "case":
        raise UsageError(f"--old-ep {args.old_ep} and --new-ep {args.new_ep} are two EPs: pair them with --match case")
    if bool(args.old_ep) != bool(args.new_ep) and _same_file(args.old, args.new):
        given = "--old-ep" if args.old_ep else "--new-ep"
        raise UsageError(
            f"{given} picks one EP of a file that is both OLD and NEW: pick the other side's with "
            f"{'--new-ep' if args.old_ep else '--old-ep'} too"
        )
    old_env, old = _one_ep(args.old, "--old-ep", args.old_ep)
    new_env, new = _one_ep(args.new, "--new-ep", args.new_ep)
    choice = chosen_gating(args.waivers, [new_env.waivers] if new_env.waivers is not None else [], args.new)
    gate, _ = gated(choice, new_env, new)
    flaky = frozenset((r.case, r.ep) for r, _ in gate.flaky) if gate is not None else frozenset()
    try:
        comparison = diff_runs(old, new, old_env, new_env, args.match == "case", args.allow_removed, flaky)
    except SeveralEps as error:
        raise UsageError(f"--match case: {error}") from None
    except ValueError as error:
        raise UsageError(str(error)) from None
    if gate is not None:
        comparison = replace(comparison, new_gate=decide(summarize(new_env, new), gate).headline)
    console = "\n".join([*gating_lines(choice, quiet=False), render_diff_console(comparison)])
    if args.markdown:  # written before the console's lines, whose reader may go away (output.py)
        try:
            with _one_line(), _output(args.markdown):
                write_text_atomic(args.markdown, render_diff_markdown(comparison))
        except UsageError:
            say(console)  # the diff is not lost for want of its Markdown
            raise
    say(console)
    if args.markdown:
        say(f"markdown: {args.markdown}")
    return 1 if comparison.regressed else 0

"""What ``dmlconf run`` checks and makes ready before its first case, so that a wrong limit or an unusable folder
costs nothing: the run's size within its limits, the report and artifact folders, results.jsonl (with --resume, the
results it holds) and the hash of the case files."""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Mapping, Sequence

from conformance.cases.suite import Suite, run_elements
from conformance.cli.output import say, warn
from conformance.cli.reports import REPORT_FORMATS
from conformance.cli.shared import UsageError, within_memory
from conformance.ep.directml import DirectML
from conformance.ep.providers import EpSpec
from conformance.model import MemoryPath
from conformance.results import NotOurFile, Result, not_our_file, own_folder
from conformance.run.artifacts import folder_name, taken
from conformance.run.identity import cases_sha256
from conformance.run.options import RunOptions
from conformance.survive.stream import STREAM_NAME, Stream, StreamError, read_stream, run_identity


def within_limit(args: argparse.Namespace, suite: Suite, eps: Sequence[EpSpec], paths: Sequence[MemoryPath]) -> None:
    """--max-run-elements and, with -j, --max-case-bytes on each EP's path (``paths``), from the descriptors' sizes:
    checked before anything is generated or run."""
    within_memory(suite.entries, args.jobs, args.max_case_bytes, paths)
    elements = run_elements(suite.entries, len(eps))
    if elements > args.max_run_elements:
        raise UsageError(
            f"the selected cases hold {elements} elements, over --max-run-elements {args.max_run_elements} "
            "(select fewer with -k, --shard or --quick, or raise the limit)"
        )


def make_folders(args: argparse.Namespace, suite: Suite, eps: Sequence[EpSpec]) -> None:
    """--report-dir and --artifacts made before the run, so that an unusable one costs nothing, and neither
    reached through a link planted in a checkout (results.own_folder); nor a folder name --artifacts would give a
    failure of this run taken by a link or a file (artifacts.py puts each folder there by renaming its own)."""
    for option, folder in (("--report-dir", args.report_dir), ("--artifacts", args.artifacts)):
        try:
            if folder:
                own_folder(folder)
        except NotOurFile as error:
            raise UsageError(f"{option}: {error}") from None
        except OSError as error:
            raise UsageError(f"{option}: cannot create {folder}: {error.strerror or error}") from None
    if args.artifacts:
        for entry in suite.entries:
            for ep in eps:
                path = os.path.join(args.artifacts, folder_name(entry.id, ep.text))
                if taken(path):
                    raise UsageError(f"--artifacts: {not_our_file(path, 'a folder')}")


def open_stream(
    args: argparse.Namespace,
    suite: Suite,
    eps: Sequence[EpSpec],
    options: RunOptions,
    digest: str,
    directml: Mapping[str, DirectML],
) -> tuple[Stream, dict[int, Result]]:
    """results.jsonl opened for appending; with --resume, the results it already holds. ``digest``: the case files'
    hash (cases_hash), taken once for results.json and the run's identity alike; ``directml``: what each DirectML
    EP executes on, part of that identity."""
    path = os.path.join(args.report_dir, STREAM_NAME)
    identity = run_identity(suite.entries, eps, options, digest, directml)
    plan = [(entry.id, ep.text) for entry in suite.entries for ep in eps]  # pool.py's pair order: entry-major
    done: dict[int, Result] = {}
    keep = 0
    try:
        if args.resume and os.path.exists(path):
            done, keep = read_stream(path, identity, plan)
            say(f"resuming: {len(done)} result(s) kept from {path}")
        elif args.resume:
            warn(f"nothing to resume in {path}: running every case")
        stream = Stream(path, identity, keep)
        _remove_previous_reports(args.report_dir)
        return stream, done
    except StreamError as error:
        raise UsageError(f"--resume: {error}; run without --resume to start again") from None
    except NotOurFile as error:
        raise UsageError(f"--report-dir: {error}") from None
    except OSError as error:
        raise UsageError(f"--report-dir: cannot write {error.filename or path}: {error.strerror or error}") from None


def _remove_previous_reports(folder: str) -> None:
    """The results.json and reports a previous run left in ``folder``, removed before this run writes anything:
    beside this run's results.jsonl, a killed run would otherwise leave another run's PASSED to be read as its own.
    (The run writes them all again when it ends; results.jsonl is this run's, for --resume.)"""
    for name in ("results.json", *REPORT_FORMATS.values()):
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, name))


def cases_hash(suite: Suite) -> tuple[str, int]:
    """The hash of the case files the selected cases come from (identity.py), taken as they are selected."""
    try:
        return cases_sha256(entry.path for entry in suite.entries)
    except OSError as error:
        raise UsageError(f"{error.filename}: cannot be read again to hash it: {error.strerror or error}") from None

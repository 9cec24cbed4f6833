"""What the CLI's commands share: the usage error and exit codes, finding the case files, choosing the EPs."""

from __future__ import annotations

import argparse
import heapq
import os
import sys
from collections.abc import Sequence

from conformance import ep_table
from conformance.cases.limits import DEFAULT_LIMITS, FileLimits
from conformance.cases.memory import case_bytes, size_text
from conformance.cases.parse import Entry
from conformance.cases.suite import Found, NoCaseFiles, Suite, collected, find_case_files
from conformance.cli.output import warn
from conformance.ep.installed import NotInstalled, check_installed
from conformance.ep.memory import PATHS
from conformance.ep.providers import EpSpec, best_available_ep, uses_directml
from conformance.model import MemoryPath
from conformance.problems import Problem, one_line
from conformance.run.options import distinct_eps

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad command-line input: one line, exit code 2 (the CLI prints it)."""


def existing(paths: Sequence[str]) -> Sequence[str]:
    for path in paths:
        if not os.path.exists(path):
            raise UsageError(f"{path}: no such file or directory")
    return paths


def file_limits(args: argparse.Namespace, paths: Sequence[MemoryPath] = PATHS) -> FileLimits:
    """The limits the case files are read under: each case's frames and memory checked on ``paths``, the ways the
    run's EPs execute it (ep/memory.py's memory_path); every path for the commands that run nothing (validate,
    list, coverage)."""
    return FileLimits(args.max_file_bytes, args.max_nodes, args.max_case_bytes, tuple(paths))


def collect_paths(
    paths: Sequence[str], max_elements: int, keyword: str | None = None, limits: FileLimits = DEFAULT_LIMITS
) -> Suite:
    """The suite under ``paths``; the YAML files the walks skipped as not case files are counted on one line (on
    stderr, so that a command's output stays its own; through cli/output, as every line before a run: a reader that
    went away must not cost the run its reports)."""
    return collected(found_paths(paths), max_elements, keyword, limits)


def found_paths(paths: Sequence[str]) -> Found:
    """The case files under ``paths`` (a path that is none, or holds none, is a usage error), and the YAML files
    skipped as not case files counted on one line."""
    try:
        found = find_case_files(existing(paths))
    except NoCaseFiles as error:
        raise UsageError(str(error)) from None
    if found.skipped:
        warn(f"skipped {len(found.skipped)} YAML file(s) that are not case files")
    return found


def print_problems(problems: Sequence[Problem]) -> None:
    """Each problem on its line, then how many in how many files: the files with a problem, not all those read."""
    for problem in problems:
        warn(str(problem))
    warn(f"{len(problems)} problem(s) in {len({p.pos.path for p in problems})} file(s)")


def within_memory(entries: Sequence[Entry], jobs: int, max_case_bytes: int, paths: Sequence[MemoryPath]) -> None:
    """``run -j N``: N workers may run the N largest selected (case, EP) pairs at once, so their estimated memory
    together, each on its EP's path (``paths``: one per EP), must fit --max-case-bytes, as one case's must (checked
    where its file is read); a usage error naming the largest, before anything runs. -j 0 and -j 1 run one case at
    a time."""
    if jobs <= 1:
        return
    pairs = ((case_bytes(entry, path), entry.id) for entry in entries for path in paths)
    largest = heapq.nlargest(jobs, pairs)
    total = sum(estimate for estimate, _ in largest)
    if total > max_case_bytes:
        raise UsageError(
            f"-j {jobs}: the {len(largest)} largest selected cases may run at once, an estimated {size_text(total)} "
            f"(the largest, {one_line(largest[0][1])}: {size_text(largest[0][0])}), over --max-case-bytes "
            f"{max_case_bytes} ({size_text(max_case_bytes)}): lower -j, select fewer cases, or raise the limit"
        )


def chosen_eps(eps: Sequence[EpSpec]) -> list[EpSpec]:
    """The EPs to run on, each once (``distinct_eps``); the best available when none is named, saying so where that
    passes over a DirectML chain set up under Wine. A usage error where a named EP's package or library is not
    installed (ep/installed.py): decided before anything runs."""
    named = distinct_eps(eps)
    try:
        check_installed(named)
    except NotInstalled as error:
        raise UsageError(str(error)) from None
    if named:
        return named
    best = best_available_ep()
    if not uses_directml(best) and _wine_chain_here():
        warn(
            f"no --ep given: running on {best.text}, the best available; DirectML under Wine is set up here, but off "
            f"Windows it runs only when named: --ep {ep_table.DML.alias} (dmlconf doctor checks the chain)"
        )
    return [best]


def _wine_chain_here() -> bool:
    """Off Windows, whether the DirectML chain's pieces are in place (Wine on PATH, DMLCONF_VKD3D_PROTON's DLLs, a
    display): looked up, not started, so that choosing the default EP stays instant. DirectML is never the default
    there (onnxruntime's providers do not list it), so a run that means it must name it."""
    if sys.platform == "win32":
        return False
    from conformance.ep.wine.chain import ChainMissing, find_display, find_vkd3d_proton, find_wine

    try:
        find_wine(os.environ)
        find_vkd3d_proton(os.environ)
        find_display(os.environ)
    except ChainMissing:
        return False
    return True

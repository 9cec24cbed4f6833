"""Collect a suite: case files under the given paths, read, validated, filtered by -k, --quick and --shard."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import PurePosixPath

from conformance.coverage import case_coverage, quick_selection
from conformance.load import iter_case_files, load_document
from conformance.model import Case
from conformance.parse import Entry, Rejected, parse_document
from conformance.problems import CaseFileError, Problem
from conformance.validate import DEFAULT_MAX_ELEMENTS, validate


@dataclass(frozen=True)
class Suite:
    """The cases to run and the problems that make the input unusable (a run refuses to start on any)."""

    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...]
    files: int


def read_file(path: str, max_elements: int = DEFAULT_MAX_ELEMENTS) -> tuple[list[Entry], list[Problem]]:
    """One case file's entries and its problems, deduplicated (a sweep repeats its base case's problems)."""
    try:
        entries, problems = parse_document(load_document(path))
    except CaseFileError as error:
        return [], list(error.problems)
    for entry in entries:
        if isinstance(entry, Rejected) and entry.expect_invalid is None:
            problems.extend(entry.problems)
        elif isinstance(entry, Case) and entry.expect_invalid is None:
            problems.extend(validate(entry, max_elements))
    return entries, list(dict.fromkeys(problems))


def collect(paths: Sequence[str], max_elements: int = DEFAULT_MAX_ELEMENTS, keyword: str | None = None) -> Suite:
    files = list(iter_case_files(list(paths)))
    entries: list[Entry] = []
    problems: list[Problem] = []
    for path in files:
        file_entries, file_problems = read_file(path, max_elements)
        entries.extend(e for e in file_entries if keyword is None or keyword in e.id)
        problems.extend(file_problems)
    exact = tuple(e for e in entries if e.id == keyword)
    # A full id (what a reproduction command gives) selects that case alone, not every id it is a prefix of.
    return Suite(exact or tuple(entries), tuple(problems), len(files))


def is_found(entry: Entry) -> bool:
    """A case under a ``found/`` folder: the smallest form of something a GPU run found (a regression test)."""
    return "found" in PurePosixPath(entry.path).parent.parts


def quick(suite: Suite, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Suite:
    """The quick selection: few cases covering every clause and facet the suite covers, plus the found ones."""
    coverages = [case_coverage(entry, max_elements) for entry in suite.entries]
    chosen = set(quick_selection(coverages, [e.id for e in suite.entries if is_found(e)]))
    return replace(suite, entries=tuple(e for e in suite.entries if e.id in chosen))


def parse_shard(text: str) -> tuple[int, int]:
    """ "I/N" (1 <= I <= N) -> (I, N); ValueError with a one-line reason otherwise."""
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit()) or not 1 <= int(index) <= int(count):
        raise ValueError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return int(index), int(count)


def in_shard(case_id: str, index: int, count: int) -> bool:
    """Whether a case belongs to shard ``index`` of ``count``: by a hash of its full id, so a case stays in its shard
    when others are added or removed, and every machine computes the same split."""
    return int(hashlib.sha1(case_id.encode("utf-8")).hexdigest(), 16) % count == index - 1


def shard(suite: Suite, index: int, count: int) -> Suite:
    """Shard ``index`` of ``count``: the shards of one suite are disjoint and together hold every case."""
    return replace(suite, entries=tuple(e for e in suite.entries if in_shard(e.id, index, count)))

"""Case files -> Case objects: field names are the spec's own, so a case reads like the descriptor.

Each entry of ``cases:`` becomes one Case per sweep variant, or a Rejected entry carrying the one-line
problems that kept it from being read. The spec's constraints are checked later, in ``validate``.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from conformance.cases.fields import UNKNOWN_FIELD, Fields, member, unknown_operator
from conformance.cases.ids import file_id
from conformance.cases.keys import (
    CASE_KEYS,
    EXPECT_INVALID,
    EXPECT_VALID,
    FILE_KEYS,
    MAX_ULP,
    MODE_KEYS,
    OPERATOR_PREFIX,
    TOLERANCE_KEYS,
    Key,
    names,
)
from conformance.cases.layouts import case_layouts
from conformance.cases.load import Document
from conformance.cases.operators import OPERATORS
from conformance.cases.parse_tensor import read_outputs, read_values
from conformance.cases.sweep import Budget, expand
from conformance.ep_table import checked_value, mode_options
from conformance.model import (
    OUTPUT_NAMES,
    Case,
    FeatureLevel,
    Operator,
    SourcePos,
    Tolerance,
)
from conformance.problems import Problem

# Every operator was introduced at DML_FEATURE_LEVEL_2_1 (each page's "Availability").
INTRODUCED = FeatureLevel(2, 1)


@dataclass(frozen=True)
class Rejected:
    """A case entry that could not be read; for ``expect: invalid`` entries that is the expected outcome.

    ``as_read``: the case as read where its problems left what was read as written (keys it does not know, ignored;
    an id an earlier case has), so that the validator holds it to the spec too (suite.read_file) and a typo hides
    none of its other problems; None for a negative case, whose spec problems are meant."""

    id: str
    path: str
    operator: str
    pos: SourcePos
    expect_invalid: str | None
    problems: tuple[Problem, ...]
    as_read: Case | None = None


Entry = Case | Rejected


@dataclass(frozen=True)
class ParsedFile:
    """One case file read: ``entries``, its cases; ``problems``, those of the file itself and of its sweeps; and
    ``read``, every case read, in the file's order: its entries and the cases under an id an earlier case of the file
    has, which are no entries (their id is taken) but are read, as Rejected entries saying so, so that their own
    problems are reported beside the duplicate id."""

    entries: tuple[Entry, ...]
    problems: tuple[Problem, ...]
    read: tuple[Entry, ...]
    duplicates: tuple[Rejected, ...]  # those of ``read`` under a duplicate id


def case_keys(operator: Operator) -> tuple[Key, ...]:
    """The keys of one case of ``operator``'s files: the case's own, then its descriptor's."""
    return (*CASE_KEYS, *OPERATORS[operator].keys)


def display_path(path: str) -> str:
    """The path as the shell reaches it, for commands to run again (``Case.path``): relative to the working directory
    when inside it. Ids name the file otherwise (ids.py)."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative.replace(os.sep, "/")


def _operator(top: Fields) -> Operator | None:
    """The file's operator, read as every choice is (fields.member); a name it is not, refused with the nearest."""
    if not top.has("operator"):
        top.get("operator", required=True)  # says it is missing
        return None
    found = member(Operator, top.raw["operator"], OPERATOR_PREFIX)
    if found is None:
        top.problem("operator", unknown_operator(top.raw["operator"], OPERATOR_PREFIX))
    return found


def _feature_level(f: Fields, default: FeatureLevel) -> FeatureLevel:
    if not f.has("feature_level"):
        return default
    try:
        return FeatureLevel.parse(str(f.raw["feature_level"]))
    except ValueError as error:
        f.problem("feature_level", str(error))
        return default


def _tolerance(f: Fields | None) -> Tolerance | None:
    if f is None:
        return None
    f.check_known(names(TOLERANCE_KEYS))
    max_ulp = f.integer("max_ulp", 0, MAX_ULP, required=False)
    atol = f.number("atol")
    if atol is not None and atol < 0:
        f.problem("atol", "must be >= 0")
    return Tolerance(max_ulp=max_ulp, atol=atol)


def _modes(f: Fields | None) -> dict[str, str]:
    """A case's execution modes: each a mode's option and a value that option takes (as its EP reads it)."""
    if f is None:
        return {}
    f.check_known(names(MODE_KEYS))
    accepted = mode_options()
    modes = {}
    for key in MODE_KEYS:
        if not f.has(key.name):
            continue
        text = f.text(key.name)
        try:
            modes[key.name] = checked_value(accepted[key.name], text)
        except ValueError as error:
            f.problem(key.name, str(error))
    return modes


def _expected(f: Fields | None, operator: Operator) -> tuple[dict[str, tuple[float, ...]], dict[str, tuple[int, ...]]]:
    values: dict[str, tuple[float, ...]] = {}
    shapes: dict[str, tuple[int, ...]] = {}
    if f is None:
        return values, shapes
    f.check_known(OUTPUT_NAMES[operator])
    for name in OUTPUT_NAMES[operator]:
        if f.has(name):
            read = read_values(f, name)
            if read is not None:
                values[name], shapes[name] = read
    return values, shapes


def _case(
    raw: dict[str, Any],
    positions: dict[str, SourcePos],
    case_id: str,
    path: str,
    operator: Operator,
    file_level: FeatureLevel,
) -> Entry:
    problems: list[Problem] = []
    f = Fields(raw, "", positions, problems)
    f.check_known(names(case_keys(operator)))
    expect = f.text("expect", default=EXPECT_VALID).lower()
    if expect not in (EXPECT_VALID, EXPECT_INVALID):
        f.problem("expect", f"must be {EXPECT_VALID!r} or {EXPECT_INVALID!r}, got {expect!r}")
    # Both read, and so checked, whatever the case is: a problem found after the check below would be lost.
    written_reason = f.text("reason", default="(no reason given)")
    reason = written_reason if expect == EXPECT_INVALID else None
    description = f.text("description")
    level = _feature_level(f, file_level)
    outputs = read_outputs(f, OUTPUT_NAMES[operator])
    descriptor = OPERATORS[operator].read(f, outputs)
    expected, shapes = _expected(f.sub("expected", required=False), operator)
    tolerance = _tolerance(f.sub("tolerance", required=False))
    modes = _modes(f.sub("modes", required=False))
    if descriptor is None and not problems:  # every reader records why it gave up; this is a safety net
        f.problem("", "the descriptor could not be read")
    case = None
    if descriptor is not None:
        case = Case(
            id=case_id,
            path=path,
            operator=operator,
            feature_level=level,
            descriptor=descriptor,
            description=description,
            expected=expected,
            expected_shapes=shapes,
            tolerance=tolerance,
            expect_invalid=reason,
            positions=positions,
            outputs=outputs,
            modes=modes,
            layouts=case_layouts(operator, descriptor, outputs),
        )
    if problems or case is None:
        # A misspelt key is never what a negative case is meant to show: its case is refused, not "invalid as
        # expected" (else `Axiz: 9` under `expect: invalid` would pass for the wrong reason).
        typo = any(_ignored_key(problem) for problem in problems)
        # Only unknown keys: the case was read as written, and the validator's problems are its own too.
        as_read = case if expect == EXPECT_VALID and all(_ignored_key(problem) for problem in problems) else None
        return Rejected(case_id, path, operator.value, f.pos(), None if typo else reason, tuple(problems), as_read)
    return case


def _ignored_key(problem: Problem) -> bool:
    """Whether ``problem`` is a key the readers do not know, which they ignore: what was read is as written."""
    return problem.message.startswith(UNKNOWN_FIELD)


def _duplicate(entry: Entry, duplicate: Problem) -> Rejected:
    """A case read under an id an earlier case of its file has: the duplicate id, then the case's own problems (none
    for a negative case, whose problems are meant) and, for the validator, the case as read."""
    if isinstance(entry, Case):
        as_read = entry if entry.expect_invalid is None else None
        return Rejected(entry.id, entry.path, entry.operator.value, entry.pos(""), None, (duplicate,), as_read)
    own = entry.problems if entry.expect_invalid is None else ()
    return Rejected(entry.id, entry.path, entry.operator, entry.pos, None, (duplicate, *own), entry.as_read)


def _case_positions(doc: Document) -> dict[int, dict[str, SourcePos]]:
    grouped: dict[int, dict[str, SourcePos]] = defaultdict(dict)
    for key, pos in doc.positions.items():
        if len(key) >= 2 and key[0] == "cases" and isinstance(key[1], int):
            grouped[key[1]][".".join(str(k) for k in key[2:])] = pos
    return grouped


def parse_document(doc: Document, named: str | None = None) -> tuple[list[Entry], list[Problem]]:
    """The entries of one case file, and its problems: the file's own (``parse_file``), then those of each case read
    under a duplicate id. ``named``: the file as its cases' ids name it (ids.py; by default, from its repository's
    root or its own folder)."""
    parsed = parse_file(doc, named)
    return list(parsed.entries), [*parsed.problems, *(p for entry in parsed.duplicates for p in entry.problems)]


def parse_file(doc: Document, named: str | None = None) -> ParsedFile:
    """One case file read (``ParsedFile``). Its cases are read whenever its operator, its feature level and its list
    of cases could be: its other problems (a key it does not know) hide none of theirs. ``named``: the file as its
    cases' ids name it (ids.py; by default, from its repository's root or its own folder)."""
    path = display_path(doc.path)
    prefix = named if named is not None else file_id(doc.path)
    problems: list[Problem] = []
    top = Fields(doc.data, "", {".".join(map(str, k)): v for k, v in doc.positions.items() if len(k) <= 1}, problems)
    if not isinstance(doc.data, dict):
        not_a_file = Problem(doc.pos(()), "", "a case file is a mapping with 'operator:' and 'cases:'")
        return ParsedFile((), (not_a_file,), (), ())
    operator, level, cases = _file_keys(top)
    level_unread = any(problem.field == "feature_level" for problem in problems)  # its cases would take another
    if operator is None or not isinstance(cases, list) or level_unread:
        return ParsedFile((), tuple(problems), (), ())
    entries: list[Entry] = []
    read: list[Entry] = []
    duplicates: list[Rejected] = []
    seen: dict[str, SourcePos] = {}
    ids: set[str] = set()
    budget = Budget()
    for index, (raw, positions) in enumerate(zip(cases, _by_index(_case_positions(doc), len(cases)), strict=True)):
        positions[""] = doc.pos(("cases", index))
        case_fields = Fields(raw, "", positions, problems)
        if not isinstance(raw, dict):
            case_fields.problem("", "each case is a mapping")
            continue
        case_id = case_fields.text("id", required=True)
        if case_fields.has("id") and not case_id.strip():
            case_fields.problem("id", "must not be empty")
        if not case_id.strip():
            continue
        duplicate = None
        if case_id in seen:
            message = f"duplicate id {case_id!r} (first at line {seen[case_id].line})"
            duplicate = Problem(case_fields.pos("id"), case_fields.path("id"), message)
        else:
            seen[case_id] = case_fields.pos("id")
        variants, sweep_problems = expand(raw, positions, budget)
        problems.extend(sweep_problems)
        for variant in variants:
            full_id = f"{prefix}::{case_id}{variant.suffix}"
            if duplicate is not None:
                duplicates.append(
                    _duplicate(_case(variant.raw, variant.positions, full_id, path, operator, level), duplicate)
                )
                read.append(duplicates[-1])
                continue
            if full_id in ids:
                where = variant.positions.get("matrix", case_fields.pos("id"))
                problems.append(Problem(where, "matrix", f"gives the id {full_id!r} twice (repeated values?)"))
                break
            ids.add(full_id)
            entry = _case(variant.raw, variant.positions, full_id, path, operator, level)
            entries.append(entry)
            read.append(entry)
    return ParsedFile(tuple(entries), tuple(problems), tuple(read), tuple(duplicates))


def _file_keys(top: Fields) -> tuple[Operator | None, FeatureLevel, Any]:
    """A file's keys around its cases: its operator (None: not read), feature level and cases (a list where it is
    one), each problem said through ``top``."""
    top.check_known(names(FILE_KEYS))
    top.text("description")  # only checked: a file's description is for its readers
    operator = _operator(top)
    level = _feature_level(top, INTRODUCED)
    cases = top.get("cases", True)
    if top.has("cases") and not isinstance(cases, list):
        top.problem("cases", f"must be a list of cases, got {_kind(cases)}")
    return operator, level, cases


def _kind(value: Any) -> str:
    """What a YAML value is, for messages: 'a mapping', 'a list', 'an empty value', or its repr."""
    if value is None:
        return "an empty value"
    if isinstance(value, dict):
        return "a mapping"
    return "a list" if isinstance(value, list) else repr(value)


def _by_index(grouped: dict[int, dict[str, SourcePos]], count: int) -> list[dict[str, SourcePos]]:
    return [grouped.get(i, {}) for i in range(count)]

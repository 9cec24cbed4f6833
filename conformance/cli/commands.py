"""dmlconf's commands that read case files and run nothing: ``validate`` them (their goldens against the oracle
too), map their spec ``coverage``."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from conformance.cases.generate import case_inputs
from conformance.cases.memory import cost_problem
from conformance.cases.oracle import expected_outputs
from conformance.cases.validate import validate
from conformance.cli.selection import QUICK
from conformance.cli.shared import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    collect_paths,
    file_limits,
    print_problems,
)
from conformance.compare.golden import golden_mismatches
from conformance.coverage.mapping import build_map, case_coverage, quick
from conformance.coverage.markdown import render_coverage
from conformance.model import Case, Operator
from conformance.problems import Problem
from conformance.results import NotOurFile, own_folder, write_text_atomic
from conformance.run.command_line import Option
from conformance.run.options import READING

OUTPUT = Option(
    ("--output",),
    "the coverage map's file (default: reports/coverage.md)",
    default="reports/coverage.md",
    metavar="FILE",
)
VALIDATE_OPTIONS = READING
COVERAGE_OPTIONS = (*READING, QUICK, OUTPUT)


def validate_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Every case file's problems, a negative case the validator accepts, and every ``expected:`` golden the oracle
    disagrees with, one line each (exit 2); else one ``ok`` line."""
    suite = collect_paths(args.paths, args.max_elements, limits=file_limits(args))
    problems = list(suite.problems)
    goldens = 0
    for entry in suite.entries:
        if not isinstance(entry, Case):
            continue
        if entry.expect_invalid is not None and not validate(entry, args.max_elements):
            problems.append(Problem(entry.pos("expect"), "expect", "marked invalid, but the validator accepts it"))
        elif entry.expect_invalid is None and entry.expected and _within_limits(entry, args):
            goldens += len(entry.expected)
            problems.extend(golden_problems(entry))
    if problems:
        print_problems(problems)
        return EXIT_USAGE
    checked = f"; the oracle agrees with their {goldens} expected: output(s)" if goldens else ""
    print(f"ok: {len(suite.entries)} case(s) in {suite.files} file(s){checked}")
    return EXIT_OK


def _within_limits(case: Case, args: argparse.Namespace) -> bool:
    """Whether the oracle may run on ``case``: it is valid, within --max-elements, the frames and --max-case-bytes
    on every path (whose problems, if any, the suite already holds)."""
    return not validate(case, args.max_elements) and cost_problem(case, file_limits(args)) is None


def golden_problems(case: Case) -> list[Problem]:
    """A valid case's ``expected:`` outputs that disagree with the oracle's, by the rule its EP outputs get (as
    ``run`` would find them, as ERROR ``golden_mismatch``): one problem at each such ``expected:`` entry. The oracle
    runs on the case's inputs, which the limits (--max-elements and the others) have already bounded."""
    try:
        inputs = case_inputs(case)
        return [d.problem() for d in golden_mismatches(case, inputs, expected_outputs(case, inputs))]
    except Exception as error:  # a harness bug must still be one line naming the case, never a traceback
        message = f"the oracle could not compute the outputs to compare: {type(error).__name__}: {error}"
        return [Problem(case.pos("expected"), "expected", message)]


def coverage_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    suite = collect_paths(args.paths or ["cases"], args.max_elements, limits=file_limits(args))
    if suite.problems:
        print_problems(suite.problems)
        return EXIT_USAGE
    if args.quick:
        suite = quick(suite, args.max_elements)
    operators = {Operator(e.operator) for e in suite.entries}
    coverage = build_map([case_coverage(e, args.max_elements) for e in suite.entries], sorted(operators))
    title = "Spec coverage of the quick selection" if args.quick else "Spec coverage"
    try:  # reports/coverage.md by default: in a checkout, whose links are never followed (results.own_folder)
        own_folder(os.path.dirname(args.output) or ".")
        write_text_atomic(args.output, render_coverage(coverage, title, " ".join(argv)))
    except NotOurFile as error:
        raise UsageError(f"--output: {error}") from None
    except OSError as error:
        raise UsageError(f"--output: cannot write {args.output}: {error.strerror or error}") from None
    covered = len(coverage.clauses) - len(coverage.uncovered)
    print(f"{covered} of {len(coverage.clauses)} clause(s) covered by {len(suite.entries)} case(s): {args.output}")
    for row in coverage.uncovered:
        missing = f" (facets missing: {', '.join(row.missing)})" if row.missing else ""
        needs = " (no negative case)" if row.clause.needs_negative and not row.negative else ""
        print(f"not covered: {row.clause.id}{missing}{needs}", file=sys.stderr)
    return EXIT_FAILED if coverage.uncovered or coverage.unknown else EXIT_OK

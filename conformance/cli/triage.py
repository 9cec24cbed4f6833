"""Triage from the command line: ``dmlconf run --triage`` (the run's failures re-run before its reports are written)
and ``dmlconf triage RESULTS.json`` (a finished run's, written back into the same results.json). docs/triage.md."""

from __future__ import annotations

import argparse
import os
from collections import Counter
from collections.abc import Mapping, Sequence

from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.parse import Entry
from conformance.cli.output import say
from conformance.cli.reports import read_run
from conformance.cli.shared import EXIT_OK, UsageError, collect_paths
from conformance.environment import Environment
from conformance.results import Result, gzipped, write_results
from conformance.run.command_line import Option
from conformance.run.options import CASE_TIMEOUT, RunOptions
from conformance.whose import Whose

TRIAGE = Option(
    ("--triage",),
    "re-run each failing (case, EP) of a DirectML path on a ladder of references (the reference adapter, the other "
    "path, DirectML's flags, the previous build, the CPU EP) and record whose failure it is (docs/triage.md)",
    flag=True,
)
TRIAGE_OPTIONS = (CASE_TIMEOUT,)  # the case files are read with the default limits, as a library run's


def _line(result: Result) -> str:
    """ "  driver            cases/...::id [dmlop]: passes on the reference adapter ..." """
    assert result.triage is not None
    return f"  {result.triage.verdict.value:<20} {result.case} [{result.ep}]: {result.triage.why}"


def counted(results: Sequence[Result]) -> str:
    """ "3 driver, 12 directml" over the triaged results, in the verdicts' order."""
    counts = Counter(r.triage.verdict for r in results if r.triage is not None)
    return ", ".join(f"{counts[verdict]} {verdict.value}" for verdict in Whose if counts[verdict])


def triage_run(
    results: Sequence[Result], entries: Mapping[str, Entry], options: RunOptions, quiet: bool
) -> list[Result]:
    """``run --triage``: the run's results with every failing DirectML result triaged, each said in one line."""
    from conformance.triage.rerun import triage_results, triageable

    chosen = [r for r in results if triageable(r)]
    if not chosen:
        return list(results)
    if not quiet:
        say(f"triage: re-running {len(chosen)} failing result(s) of DirectML on the ladder (docs/triage.md)")
    triaged = triage_results(results, entries, options, told=None if quiet else lambda r: say(_line(r)))
    if not quiet:
        say(f"triage: {counted(triaged)}")
    return triaged


def _adapters(env: Environment) -> dict[str, str]:
    """Each EP's adapter as the run recorded it (DirectML's own description), by its ``--ep`` text."""
    found = {}
    for ep in env.eps:
        chain = ep.directml.chain if ep.directml is not None else None
        if chain is not None and chain.adapter is not None and chain.adapter.description:
            found[ep.label] = chain.adapter.description
    return found


def triage_command(args: argparse.Namespace, argv: Sequence[str]) -> int:
    """Triage a finished run's failures where they ran, and write the records into its results.json."""
    from conformance.triage.rerun import Elsewhere, triage_results, triageable

    path = args.results
    if gzipped(path):
        raise UsageError(f"{path}: gzip-compressed: triage writes its records back into the file; gunzip it first")
    document = read_run(path)  # one line naming the file and what is wrong
    chosen = [r for r in document.results if triageable(r)]
    if not chosen:
        say(f"{path}: no failing result of a DirectML path: nothing to triage")
        return EXIT_OK
    files = sorted({r.case.partition("::")[0] for r in chosen})
    missing = [file for file in files if not os.path.isfile(file)]
    if missing:
        raise UsageError(f"{missing[0]}: no such case file here: run triage where the run's case files are")
    suite = collect_paths(files, DEFAULT_MAX_ELEMENTS)
    entries = {entry.id: entry for entry in suite.entries}
    options = RunOptions(case_timeout=args.case_timeout or None)
    say(f"triage: re-running {len(chosen)} failing result(s) of DirectML from {path} (docs/triage.md)")
    try:
        triaged = triage_results(
            document.results, entries, options, told=lambda r: say(_line(r)), expected=_adapters(document.environment)
        )
    except Elsewhere as error:
        raise UsageError(str(error)) from None
    write_results(path, document.environment.to_json(), triaged)
    say(f"triage: {counted(triaged)}; written into {path} (dmlconf report {path} renders the reports)")
    return EXIT_OK

"""--rerun-failures N: what a failure's runs again make of it (survive/again.py runs them, in the run's workers).

A failure that passes on a run again (PASS or QUALITY_WARNING) becomes FLAKY: its kind and message stay the
failure's, its message says which run passed, and ``Result.repeats`` keeps every run's verdict and output hashes (as
--repeat does; run/repeat.py). One that fails every time stays as it was, its runs recorded. A FLAKY result is never
run again (another run cannot make it steady), and a FLAKY result still fails the gate unless the waiver file's
``flaky:`` section lists it (docs/reliability.md#flaky-results---repeat-n-and---rerun-failures-n).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from conformance.model import Status
from conformance.results import FAILING, PASSING, Result, verdict_text
from conformance.run.repeat import recorded_runs


def worth_running_again(result: Result) -> bool:
    """Whether ``result`` is a failure a run again may turn FLAKY: any failing status but FLAKY itself."""
    return result.status in FAILING and result.status is not Status.FLAKY


def passed(result: Result) -> bool:
    return result.status in PASSING


def settled(first: Result, again: Sequence[Result], times: int) -> Result:
    """``first`` (a failure) once run ``again`` (in order, of at most ``times``; the runs stop at the first pass):
    FLAKY where the last passed, else ``first`` with every run recorded."""
    if not again:
        return first
    before = first.repeats or recorded_runs([first])  # first's own --repeat runs, where it had them
    runs = (*before, *recorded_runs(again))
    if not passed(again[-1]):
        return replace(first, repeats=runs)
    listed = ", ".join(verdict_text(run.status, run.failure_kind) for run in runs)
    note = f"passed on re-run {len(again)} of {times} (--rerun-failures; runs: {listed})"
    return replace(
        first,
        status=Status.FLAKY,
        message=f"{note}\n{first.message}" if first.message else note,
        repeats=runs,
        outputs_sha256={},  # no one run's outputs stand for the result
        values_sha256={},
        # a crash's result proves no placement: the passing run's shows where the case ran
        placement=first.placement or again[-1].placement,
    )

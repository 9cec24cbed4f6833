"""--rerun-failures N: a run's unexpected failures executed again, up to N times each, before they fail the gate.

A failure that passes on a re-run (PASS or QUALITY_WARNING) becomes FLAKY: its kind and message stay the failure's,
its message says which run passed, and ``Result.repeats`` keeps every run's verdict and output hashes (as --repeat
does; run/repeat.py). One that fails every time stays as it was, its runs recorded. Each (case, EP) runs again alone
in its own session, in the harness's process; only the failures chosen cost anything. A FLAKY result still fails the
gate unless the waiver file's ``flaky:`` section lists it (docs/waivers.md).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import replace

from conformance.cases.parse import Entry
from conformance.ep.providers import parse_ep, uses_directml
from conformance.ep.sessions import Sessions
from conformance.model import Status
from conformance.results import Repeat, Result, verdict_text
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

PASSING = frozenset({Status.PASS, Status.QUALITY_WARNING})


def _runs(results: Sequence[Result]) -> tuple[Repeat, ...]:
    return tuple(Repeat(r.status, r.failure_kind, r.outputs_sha256) for r in results)


def again(first: Result, entry: Entry, times: int, options: RunOptions, sessions: Sessions) -> Result:
    """``first`` (a failure) with up to ``times`` more runs of its (case, EP): FLAKY at the first that passes."""
    ep = parse_ep(first.ep)
    runs = [first]
    for _ in range(times):
        runs.append(run_entry(entry, ep, options, sessions))
        if runs[-1].status in PASSING:
            break
    listed = ", ".join(verdict_text(r.status, r.failure_kind) for r in runs)
    if runs[-1].status not in PASSING:
        return replace(first, repeats=_runs(runs))
    note = f"passed on re-run {len(runs) - 1} of {times} (--rerun-failures; runs: {listed})"
    return replace(
        first,
        status=Status.FLAKY,
        message=f"{note}\n{first.message}" if first.message else note,
        repeats=_runs(runs),
        outputs_sha256={},  # no one run's outputs stand for the result
    )


def rerun_failures(
    results: Sequence[Result],
    chosen: Collection[tuple[str, str]],
    entries: Mapping[str, Entry],
    times: int,
    options: RunOptions,
    told: Callable[[Result], None] | None = None,
) -> list[Result]:
    """``results`` with each (case, EP) in ``chosen`` run again (``again``); ``told`` of each once decided."""
    runners = None
    if any(uses_directml(parse_ep(ep)) for _, ep in chosen):
        from conformance.ep.wine.client import Runners  # the DirectML runner, where a chosen failure needs it

        runners = Runners(limit=options.case_timeout)
    sessions = Sessions(capacity=0, runners=runners)
    done: list[Result] = []
    try:
        for result in results:
            entry = entries.get(result.case)
            if (result.case, result.ep) not in chosen or entry is None:
                done.append(result)
                continue
            decided = again(result, entry, times, options, sessions)
            if told is not None:
                told(decided)
            done.append(decided)
    finally:
        if runners is not None:
            runners.close()
    return done

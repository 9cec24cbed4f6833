"""Failing results executed again on the ladder (ladder.py), each given its triage record (decide.py).

Only failing results of a DirectML path are re-run, each (case, EP) alone in its own session, in this process: the
DirectML runners it needs (one per build and adapter: the reference's has its own Vulkan driver and Wine prefix) are
started once and stopped at the end. A re-run never changes the original result's status, only adds the record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase

from conformance.cases.generate import case_inputs
from conformance.cases.oracle import expected_outputs
from conformance.cases.parse import Entry, Rejected
from conformance.compare.golden import golden_differences
from conformance.ep.directml import REFERENCE_ADAPTERS, DirectML
from conformance.ep.dml_here import directml_for
from conformance.ep.providers import EpSpec, parse_ep, uses_directml
from conformance.ep.sessions import Sessions
from conformance.ep.wine.chain import ChainMissing
from conformance.ep.wine.client import Runners
from conformance.model import MODE_MISMATCH, Case, DataType, Status
from conformance.results import Result
from conformance.run.again import worth_running_again
from conformance.run.options import RunOptions
from conformance.run.runner import GOLDEN_MISMATCH, run_entry
from conformance.triage.decide import decide
from conformance.triage.ladder import Step, steps
from conformance.whose import Rerun, Rung, Triage, Whose

log = logging.getLogger(__name__)
GOLDENS_EP = "goldens"  # a Rerun's ``ep`` for the goldens rung, which runs on no EP


def triageable(result: Result) -> bool:
    """Whether triage re-runs ``result``: a failure on a DirectML path (an EP text that does not parse is none). A
    FLAKY result is not: it passed when run again (--repeat, --rerun-failures), so no re-run can say whose it is;
    nor a mode mismatch (run/modes.py), which no oracle judged: the ladder's re-runs compare with the oracle, and its
    evidence is the two modes' outputs."""
    if not worth_running_again(result) or result.failure_kind == MODE_MISMATCH:
        return False
    try:
        return uses_directml(parse_ep(result.ep))
    except ValueError:
        return False


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def _float16(entry: Entry) -> bool:
    """Whether the case's tensors are all float16 (where onnxruntime's DirectML EP sets the half-precision flag)."""
    return not isinstance(entry, Rejected) and entry.descriptor.input.data_type is DataType.FLOAT16


@dataclass
class _Adapters:
    """Each DirectML EP's adapter description, asked of its runner once (``directml_for``); the reason where its
    chain could not answer."""

    runners: Runners
    found: dict[str, DirectML | str]

    def of(self, ep: EpSpec) -> DirectML | str:
        if ep.text not in self.found:
            try:
                self.found[ep.text] = directml_for([ep], self.runners)[ep.text]
            except (ChainMissing, OSError) as error:
                self.found[ep.text] = _first_line(str(error)) or type(error).__name__
        return self.found[ep.text]

    def description(self, ep: EpSpec) -> str:
        if not uses_directml(ep):
            return ""
        found = self.of(ep)
        if isinstance(found, str) or found.identity is None:
            return ""
        adapter = found.identity.get("adapter") or {}
        return str(adapter.get("description") or "")


def _goldens(case: Case) -> Rerun:
    """The case's goldens against the oracle's outputs: the oracle vouched for (PASS), contradicted (FAIL), or none."""
    start = time.perf_counter()
    if not case.expected:
        return Rerun(Rung.GOLDENS, GOLDENS_EP, None, message="the case has no golden outputs")
    inputs = case_inputs(case)
    wrong = golden_differences(case, inputs, expected_outputs(case, inputs))
    seconds = round(time.perf_counter() - start, 6)
    if wrong:
        return Rerun(Rung.GOLDENS, GOLDENS_EP, Status.FAIL, GOLDEN_MISMATCH, message=_first_line(
            next(iter(wrong.values()))), seconds=seconds)  # fmt: skip
    return Rerun(
        Rung.GOLDENS, GOLDENS_EP, Status.PASS, message=f"{len(case.expected)} golden output(s) agree", seconds=seconds
    )


def _executed(step: Step, entry: Entry, options: RunOptions, sessions: Sessions, adapters: _Adapters) -> Rerun:
    """``entry`` run on ``step``'s EP; a Rerun without a status where that EP's chain could not start."""
    found = adapters.of(step.ep) if uses_directml(step.ep) else ""
    if isinstance(found, str) and found:
        return Rerun(step.rung, step.ep.text, None, message=found)
    result = run_entry(entry, step.ep, options, sessions)
    return Rerun(
        step.rung,
        step.ep.text,
        result.status,
        result.failure_kind,
        adapters.description(step.ep),
        _first_line(result.message),
        dict(result.metrics),
        result.seconds,
    )


def _reference(step: Step, device: str, entry: Entry, run: Callable[[Step, Entry], Rerun]) -> Rerun:
    """The reference rung: not run again where the failing result's own adapter is the reference (lavapipe, WARP)."""
    if device and any(fnmatchcase(device, pattern) for pattern in REFERENCE_ADAPTERS):
        message = "the device is the reference adapter itself: not run again"
        return Rerun(step.rung, step.ep.text, None, adapter=device, message=message, same_device=True)
    rerun = run(step, entry)
    if device and rerun.adapter == device:  # the reference's runner found the same device
        return replace(rerun, same_device=True)
    return rerun


def triage_one(result: Result, entry: Entry, options: RunOptions, sessions: Sessions, adapters: _Adapters) -> Triage:
    """The triage record of failing ``result``: every rung of its ladder run, then the verdict."""
    start = time.perf_counter()
    ep = parse_ep(result.ep)
    device = adapters.description(ep)

    def run(step: Step, on: Entry) -> Rerun:
        try:
            return _executed(step, on, options, sessions, adapters)
        except (ChainMissing, OSError) as error:  # a chain that broke after it answered; the rung says so
            return Rerun(step.rung, step.ep.text, None, message=_first_line(str(error)) or type(error).__name__)

    reruns: list[Rerun] = []
    for step in steps(ep, _float16(entry)):
        reruns.append(_reference(step, device, entry, run) if step.rung is Rung.REFERENCE else run(step, entry))
    if not isinstance(entry, Rejected):
        reruns.append(_goldens(entry))
    verdict, why = decide(result, reruns)
    return Triage(verdict, why, tuple(reruns), round(time.perf_counter() - start, 3))


class Elsewhere(ValueError):
    """The run's failures happened on another adapter than the one here: one line naming both."""


def _same_machine(results: Sequence[Result], expected: Mapping[str, str], adapters: _Adapters) -> None:
    """Elsewhere where an EP of the failures to triage ran on another adapter than the one it finds here."""
    for label in dict.fromkeys(r.ep for r in results if triageable(r)):
        recorded = expected.get(label)
        here = adapters.description(parse_ep(label))
        if recorded and here and recorded != here:
            raise Elsewhere(f"{label} ran on {recorded}; here it runs on {here}: triage where the failures happened")


def triage_results(
    results: Sequence[Result],
    entries: Mapping[str, Entry],
    options: RunOptions,
    told: Callable[[Result], None] | None = None,
    expected: Mapping[str, str] | None = None,
) -> list[Result]:
    """``results`` with a triage record on each failing result of a DirectML path (``told`` of each once it has
    one); the others as they are. ``entries``: the cases by id (a result whose case is not among them is undecided).
    ``expected``: each EP's adapter as the run recorded it, by its ``--ep`` text: Elsewhere where it is another."""
    runners = Runners(limit=options.case_timeout)
    sessions = Sessions(capacity=0, runners=runners)
    adapters = _Adapters(runners, {})
    triaged: list[Result] = []
    try:
        _same_machine(results, expected or {}, adapters)
        for result in results:
            if not triageable(result):
                triaged.append(result)
                continue
            entry = entries.get(result.case)
            if entry is None:
                record = Triage(Whose.UNDECIDED, "the case is not in the case files read: nothing to re-run")
            else:
                record = triage_one(result, entry, options, sessions, adapters)
            done = replace(result, triage=record)
            if told is not None:
                told(done)
            triaged.append(done)
    finally:
        runners.close()
    return triaged

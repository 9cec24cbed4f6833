"""--repeat N: the one result a (case, EP) gets from its N runs (batch.py runs them, each in a new session).

Runs agree when each gives the same verdict (status and failure kind) and the same bytes in every output, by
``fingerprint.tensor_sha256``; then the result is the first run's. Where they differ the result is FLAKY: its
message says what differed ("3 repeats: PASS, FAIL (values), PASS", "output OutputTensor hash differs between
repeats 1 and 2") with the first message of each verdict, and its other fields (details, metrics, placement) are the
first run's, for the report, but for its outputs' hashes, which no one run stands for and are left empty. Either
way ``Result.repeats`` keeps every run's verdict and output hashes.

A fault (CRASH, TIMEOUT, DEVICE_LOST) ends its case's runs and is its result, with the runs before it noted: the
process or device it ran on is gone, and a fault is a finding of its own, more telling than a difference.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from conformance.model import Status
from conformance.results import Repeat, Result, differing_tensors, verdict_text

FAULTS = frozenset({Status.CRASH, Status.TIMEOUT, Status.DEVICE_LOST})
VERDICTS_DIFFER = "verdicts_differ"
OUTPUTS_DIFFER = "outputs_differ"


def recorded_runs(results: Sequence[Result]) -> tuple[Repeat, ...]:
    """Each run's Repeat: its verdict and its outputs' hashes (``Result.outputs_sha256``; none where the EP returned
    none, or a harness error replaced the verdict)."""
    return tuple(Repeat(r.status, r.failure_kind, r.outputs_sha256) for r in results)


def _verdict(run: Repeat) -> str:
    return verdict_text(run.status, run.failure_kind)


def _outputs_differ(runs: Sequence[Repeat]) -> str:
    """Which outputs' hashes differ between the first run and the first run unlike it, in words; "" if none."""
    for number, run in enumerate(runs[1:], 2):
        names = differing_tensors(runs[0].outputs_sha256, run.outputs_sha256)
        if names:
            which = (
                f"output {names[0]} hash differs" if len(names) == 1 else f"outputs {', '.join(names)} hashes differ"
            )
            return f"{which} between repeats 1 and {number}"
    return ""


def _messages(results: Sequence[Result], verdicts: Sequence[str]) -> list[str]:
    """The first run of each verdict, with its message indented (runs whose message is empty say nothing)."""
    lines: list[str] = []
    for number, (result, verdict) in enumerate(zip(results, verdicts, strict=True), 1):
        if verdict not in verdicts[: number - 1] and result.message:
            lines += [f"repeat {number}, {verdict}:", *(f"  {line}" for line in result.message.splitlines())]
    return lines


def merged(results: Sequence[Result], planned: int, prepared_seconds: float = 0.0) -> Result:
    """The result of a (case, EP)'s runs, in order: fewer than ``planned`` where a fault ended them.
    ``prepared_seconds``: the preparation each run's time counts, counted once here."""
    runs = recorded_runs(results)
    seconds = round(sum(r.seconds for r in results) - prepared_seconds * (len(results) - 1), 6)
    packed = next((r.packed for r in results if r.packed), "")  # a run whose verdict packed differed from alone
    fault = next((r for r in results if r.status in FAULTS), None)
    if fault is not None:
        verdicts = [_verdict(run) for run in runs]
        before = f"; the runs before it: {', '.join(verdicts[:-1])}" if len(verdicts) > 1 else ""
        note = f"(repeat {len(runs)} of {planned}{before}; not run again after it)"
        return replace(fault, repeats=runs, seconds=seconds, packed=packed, message=f"{fault.message}\n{note}")
    first = replace(results[0], repeats=runs, seconds=seconds, packed=packed)
    verdicts = [_verdict(run) for run in runs]
    outputs = _outputs_differ(runs)
    if len(set(verdicts)) == 1 and not outputs:
        return first
    listed = f"{len(runs)} repeats: {', '.join(verdicts)}"
    if len(set(verdicts)) > 1:
        kind, head = VERDICTS_DIFFER, [listed, *([outputs] if outputs else [])]
    else:
        kind, head = OUTPUTS_DIFFER, [f"{outputs} ({listed})"]
    message = "\n".join([*head, *_messages(results, verdicts)])
    # No one run's outputs stand for the result: a diff would compare whichever bytes repeat 1 happened to return.
    return replace(first, status=Status.FLAKY, failure_kind=kind, message=message, outputs_sha256={}, values_sha256={})

"""The CI gate a waiver file gives a run's results: which failures were expected, which were not and why, which
known failures no longer fail, which flaky results were tolerated, which entries are stale. The file itself is read
by waiver_file.py (its format: docs/waivers.md); whether a failure fits an entry's signature is signature.py's.

- A failing result that a known-failure entry matches (its case and EP patterns; on a GPU of this run that meets
  its device and driver patterns) and that fits the entry's signature is expected: the first such entry in file
  order is reported for it. One that entries match but none of whose signatures it fits is unexpected, and the
  gate keeps why (``NearMiss``: "waived for tie_order; failed by values: 3/12 sequences fail") for every report.
- Unexpected passes are judged per EP: an entry matching dml and dmlop whose dmlop results all pass says so for
  dmlop only, and the gate judges each EP's results by the entries that match them. An entry's passing results on
  an EP are unexpected passes only when none of its results on that EP still fails (a near miss still fails): a
  pattern over a sweep whose other sizes pass is no unexpected pass while one of them fails.
- A result that a ``flaky:`` entry matches is tolerated, whatever its status: its failure is never unexpected, its
  pass never an unexpected pass, and a flaky entry is never stale. Known-failure entries do not judge it.

Patterns are matched case-sensitively (``fnmatchcase``) on every platform: ``fnmatch`` folds case on Windows
only, and the gate must give the same verdict on the Windows DirectML machines as on Linux CI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from conformance.environment import Environment
from conformance.gate.signature import outside
from conformance.gate.summary import Summary
from conformance.gate.waiver_file import TOP_KEY as TOP_KEY
from conformance.gate.waiver_file import Waiver as Waiver
from conformance.gate.waiver_file import WaiverFile as WaiverFile
from conformance.gate.waiver_file import is_tracking as is_tracking
from conformance.gate.waiver_file import load_waiver_file as load_waiver_file
from conformance.gate.waiver_file import load_waivers as load_waivers
from conformance.results import FAILING, PASSING, Result

# A waived case that now runs to PASS or QUALITY_WARNING (results.PASSING) no longer fails: the known failure is
# fixed (or moved). NOT_SUPPORTED, NOT_EXPRESSIBLE and INVALID are in neither PASSING nor FAILING on purpose: the EP
# gave no verdict on the case (it declined it, ONNX cannot express it, or the validator rejected a negative case
# before any EP ran), so such a result says nothing about whether the known failure still happens; it neither uses
# up nor clears the waiver.


@dataclass(frozen=True)
class NearMiss:
    """A failing result that ``waiver`` (the first known failure in file order that matches it) names, but that
    fails otherwise than its signature says: an unexpected failure, and ``why`` ("waived up to max_ulp 4; failed
    with 412 ULP")."""

    result: Result
    waiver: Waiver
    why: str

    @property
    def line(self) -> str:
        """What a report prints beside the failure: why, and where the entry it missed is written."""
        return f"{self.why} (the entry at {self.waiver.pos})"


@dataclass(frozen=True)
class Gate:
    """A run's results sorted against the waivers.

    ``stale`` waivers are in this run's scope and gave it nothing to decide: on a GPU they name (or any, where they
    name none), they match results of this run, and every one of those is without a verdict (NOT_SUPPORTED,
    NOT_EXPRESSIBLE, INVALID: the EP declined the case, or could not start). The known failure can then neither be
    confirmed nor cleared, which the entry's owner should know. A waiver that matches no result at all is out of
    scope, not stale: another EP, device or driver, a case not selected (``-k``, ``--shard``) or not reached; a
    shared waiver file has many such entries on every run, and listing them buried the run's real news. Stale
    waivers are reported, and do not fail the gate.

    Unexpected passes DO fail the gate by default (``unexpected_passes_fail``): a driver team must notice the fix
    so that the waiver is removed, else it would silently hide the next regression. ``near_misses``: the unexpected
    failures that an entry names but whose failure lies outside its signature, each with why. ``flaky``: the failing
    results a flaky entry tolerated.
    """

    expected_failures: tuple[tuple[Result, Waiver], ...]
    unexpected_failures: tuple[Result, ...]
    unexpected_passes: tuple[tuple[Result, Waiver], ...]
    stale: tuple[Waiver, ...]
    unexpected_passes_fail: bool = True
    near_misses: tuple[NearMiss, ...] = ()
    flaky: tuple[tuple[Result, Waiver], ...] = ()

    @property
    def failed(self) -> bool:
        """True when a failure is not waived, or (by default) when a waived failure passes now."""
        return bool(self.unexpected_failures) or (self.unexpected_passes_fail and bool(self.unexpected_passes))

    @property
    def applied(self) -> tuple[Waiver, ...]:
        """The entries that waived a failure of this run (an expected failure, a tolerated flaky result), once
        each, in file order."""
        used = dict.fromkeys(waiver for _, waiver in (*self.expected_failures, *self.flaky))
        return tuple(sorted(used, key=lambda waiver: (waiver.pos.line, waiver.pos.col)))


def apply_waivers(
    environment: Environment,
    results: Sequence[Result],
    waivers: Sequence[Waiver],
    *,
    unexpected_passes_fail: bool = True,
) -> Gate:
    """Sort ``results`` against ``waivers`` (a file's ``entries``: known failures and flaky ones alike) on the GPUs
    of ``environment`` (results.json's), by the rules of the module's docstring."""
    gpus = _gpus(environment)
    here = [(index, waiver) for index, waiver in enumerate(waivers) if _on_this_machine(waiver, gpus)]
    known = [(index, waiver) for index, waiver in here if not waiver.flaky]
    flaky = [waiver for _, waiver in here if waiver.flaky]
    matched: set[int] = set()
    decided: set[int] = set()  # matched a result with a verdict: failing (expected or not) or passing
    still_failing: set[tuple[int, str]] = set()  # (entry, EP label) with a failing result
    expected: list[tuple[Result, Waiver]] = []
    unexpected: list[Result] = []
    near: list[NearMiss] = []
    tolerated: list[tuple[Result, Waiver]] = []
    passing: dict[tuple[int, str], list[Result]] = {}
    for result in results:
        flake = next((waiver for waiver in flaky if _matches(waiver, result)), None)
        if flake is not None:
            if result.status in FAILING:
                tolerated.append((result, flake))
            continue
        matching = [(index, waiver) for index, waiver in known if _matches(waiver, result)]
        matched.update(index for index, _ in matching)
        if result.status in FAILING or result.status in PASSING:
            decided.update(index for index, _ in matching)
        if result.status in FAILING:
            still_failing.update((index, result.ep) for index, _ in matching)
            fitting = next((waiver for _, waiver in matching if outside(waiver, result) is None), None)
            if fitting is not None:
                expected.append((result, fitting))
                continue
            unexpected.append(result)
            if matching:
                first = matching[0][1]
                near.append(NearMiss(result, first, outside(first, result) or ""))
        elif result.status in PASSING:
            for index, _ in matching:
                passing.setdefault((index, result.ep), []).append(result)
    # Per (entry, EP): the entry's results on one EP are passes only where none of them still fails there.
    passes = [
        (r, waivers[entry]) for (entry, ep), rs in passing.items() if (entry, ep) not in still_failing for r in rs
    ]
    stale = tuple(waiver for index, waiver in known if index in matched and index not in decided)
    return Gate(
        tuple(expected), tuple(unexpected), tuple(passes), stale, unexpected_passes_fail, tuple(near), tuple(tolerated)
    )


STALE_WHY = "their cases ran here but gave no verdict (NOT_SUPPORTED, NOT_EXPRESSIBLE, INVALID)"


def stale_line(stale: Sequence[Waiver], shown: int = 5) -> str:
    """ "2 stale waiver(s) at w.yaml:2:5, w.yaml:9:5: their cases ran here but gave no verdict (...)": the console's
    one line for them (the first ``shown`` places, then how many more)."""
    places = ", ".join(str(waiver.pos) for waiver in stale[:shown])
    more = f" and {len(stale) - shown} more" if len(stale) > shown else ""
    return f"{len(stale)} stale waiver(s) at {places}{more}: {STALE_WHY}"


def waived_keys(gate: Gate) -> dict[tuple[str, str], str]:
    """(case, ep) of each expected failure -> "reason (tracking)", and of each tolerated flaky result -> "flaky:
    reason (tracking)", for reporters to print beside the failure."""
    keys = {
        (result.case, result.ep): f"{waiver.reason} ({waiver.tracking})" for result, waiver in gate.expected_failures
    }
    keys.update(
        {(result.case, result.ep): f"flaky: {waiver.reason} ({waiver.tracking})" for result, waiver in gate.flaky}
    )
    return keys


def near_miss_keys(gate: Gate) -> dict[tuple[str, str], str]:
    """(case, ep) of each unexpected failure that an entry names but whose failure lies outside its signature ->
    why, and where the entry is (``NearMiss.line``), for reporters to print beside the failure."""
    return {(miss.result.case, miss.result.ep): miss.line for miss in gate.near_misses}


def _gpus(environment: Environment) -> list[tuple[str, str]]:
    """(name, driver_version) of each GPU, and of the adapter DirectML ran on under Wine (its Vulkan device and
    driver: lavapipe is no GPU the OS lists); a GPU without a name or driver version matches no device pattern."""
    found = [
        (gpu.name, gpu.driver_version)
        for gpu in environment.gpus
        if gpu.name is not None and gpu.driver_version is not None
    ]
    for ep in environment.eps:
        chain = ep.chain
        if chain is not None and chain.adapter is not None and chain.adapter.description is not None:
            found.append((chain.adapter.description, chain.vulkan_driver or ""))
    return found


def _on_this_machine(waiver: Waiver, gpus: Sequence[tuple[str, str]]) -> bool:
    """No device/driver pattern: any machine. Else one GPU must match both, so that "H100 on 580.*" is not met
    by an H100 on 550 next to another GPU on 580."""
    if waiver.device is None and waiver.driver is None:
        return True
    return any(
        (waiver.device is None or fnmatchcase(name, waiver.device))
        and (waiver.driver is None or fnmatchcase(driver, waiver.driver))
        for name, driver in gpus
    )


def _matches(waiver: Waiver, result: Result) -> bool:
    return case_matches(waiver.case, result.case) and fnmatchcase(result.ep, waiver.ep)


def case_matches(pattern: str, case_id: str) -> bool:
    """Whether an entry's case ``pattern`` matches the case id ``case_id``."""
    return fnmatchcase(_slashed(case_id), _slashed(pattern))


def _slashed(case_id: str) -> str:
    """Case ids start with the case file's path as the OS joined it: on Windows with backslashes. A waiver file is
    shared across platforms, so the path part is compared with forward slashes on both sides."""
    path, separator, name = case_id.partition("::")
    return path.replace("\\", "/") + separator + name


def overall_failed(summary: Summary, gate: Gate | None) -> bool:
    """A run's verdict: with waivers, unexpected results only; in every case an EP that never started, an
    interrupted run or a runner death under a pack that no result stands for fails (Summary.unwaivable: no waiver
    can stand for them)."""
    return (gate.failed or bool(summary.unwaivable)) if gate is not None else summary.failed

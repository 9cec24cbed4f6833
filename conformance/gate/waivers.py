"""Known failures (waivers) and the CI gate they give a run's results.

A waiver file names failures a driver team already knows about, each with the bug that tracks it::

    known_failures:
      - case: "cases/top_k1/sweep.yaml::long-axis-ties*"   # fnmatch pattern on the full case id
        ep: cuda                                           # fnmatch pattern on the result's EP label
        device: "NVIDIA H100*"                             # optional: pattern on a GPU name in the environment
        driver: "580.*"                                    # optional: pattern on that same GPU's driver version
        reason: CUDA RadixTopK is not index-stable
        tracking: https://github.com/microsoft/onnxruntime/issues/12345   # or a bug id: ADO#12345, BUG-123, 12345

Patterns are matched case-sensitively (``fnmatchcase``) on every platform: ``fnmatch`` folds case on Windows
only, and the gate must give the same verdict on the Windows DirectML machines as on Linux CI.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any
from urllib.parse import urlsplit

from conformance.cases.fields import Fields
from conformance.cases.load import load_document
from conformance.environment import Environment
from conformance.gate.summary import Summary
from conformance.model import SourcePos, Status
from conformance.problems import CaseFileError, Problem
from conformance.results import FAILING, Result

TOP_KEY = "known_failures"
FIELDS = ("case", "ep", "device", "driver", "reason", "tracking")
REQUIRED = frozenset({"case", "ep", "reason", "tracking"})
_ITEM = "a mapping with case, ep, reason and tracking"
# A bug id, for trackers a URL does not reach (an internal Azure DevOps, Jira): a number (12345, #12345), a tracker's
# prefix and a number (ADO#12345, microsoft/onnxruntime#123), or a Jira-style key (BUG-123, DML-42). Anything else
# ("TODO", "see above", "ftp://...") names no bug, and a waiver without one is never followed up.
BUG_ID = re.compile(r"#?[0-9]+|[A-Za-z][A-Za-z0-9_.\-/]*#[0-9]+|[A-Za-z][A-Za-z0-9_]*-[0-9]+")
TRACKING_FORMS = "an http(s) URL or a bug id (12345, ADO#12345, BUG-123)"
# A waived case that now runs to PASS or QUALITY_WARNING no longer fails: the known failure is fixed (or moved).
# NOT_SUPPORTED, NOT_EXPRESSIBLE and INVALID are in neither set on purpose: the EP gave no verdict on the case (it
# declined it, ONNX cannot express it, or the validator rejected a negative case before any EP ran), so such a
# result says nothing about whether the known failure still happens; it neither uses up nor clears the waiver.
_NOT_FAILING = frozenset({Status.PASS, Status.QUALITY_WARNING})


@dataclass(frozen=True)
class Waiver:
    """One known failure: patterns on the case id and EP label, optionally on one GPU's name and driver version;
    ``pos`` is where its list item was written."""

    case: str
    ep: str
    device: str | None
    driver: str | None
    reason: str
    tracking: str
    pos: SourcePos


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
    so that the waiver is removed, else it would silently hide the next regression.
    """

    expected_failures: tuple[tuple[Result, Waiver], ...]
    unexpected_failures: tuple[Result, ...]
    unexpected_passes: tuple[tuple[Result, Waiver], ...]
    stale: tuple[Waiver, ...]
    unexpected_passes_fail: bool = True

    @property
    def failed(self) -> bool:
        """True when a failure is not waived, or (by default) when a waived failure passes now."""
        return bool(self.unexpected_failures) or (self.unexpected_passes_fail and bool(self.unexpected_passes))


def load_waivers(path: str) -> list[Waiver]:
    """Read a waiver file; raise CaseFileError carrying every problem as a ``path:line:col: field: message`` line."""
    try:
        doc = load_document(path)
    except CaseFileError as error:
        raise CaseFileError([_for_waivers(problem) for problem in error.problems]) from None
    if not isinstance(doc.data, dict):
        raise CaseFileError([Problem(doc.pos(()), "", f"must be a mapping with a '{TOP_KEY}:' list")])
    positions = {".".join(map(str, key)): pos for key, pos in doc.positions.items()}
    problems: list[Problem] = []
    top = Fields(doc.data, "", positions, problems)
    top.check_known([TOP_KEY])
    items = doc.data.get(TOP_KEY)
    waivers: list[Waiver] = []
    if not top.has(TOP_KEY):
        top.problem(TOP_KEY, "missing required field")
    elif not isinstance(items, list):
        top.problem(TOP_KEY, f"must be a list of known failures (write '{TOP_KEY}: []' for none), got {items!r}")
    else:
        for index, raw in enumerate(items):
            waiver = _waiver(Fields(raw, f"{TOP_KEY}.{index}", positions, problems), raw)
            if waiver is not None:
                waivers.append(waiver)
    if problems:
        raise CaseFileError(problems)
    return waivers


def _for_waivers(problem: Problem) -> Problem:
    """load_document's message for an empty file speaks of case files; a waiver file expects something else."""
    if problem.message.startswith("empty file"):
        return replace(problem, message=f"empty file: expected '{TOP_KEY}:' (write '{TOP_KEY}: []' for none)")
    return problem


def _waiver(item: Fields, raw: Any) -> Waiver | None:
    """One list item as a Waiver, or None after recording its problems."""
    before = len(item.problems)
    if raw is None:
        item.problem("", f"empty list item: expected {_ITEM}")
        return None
    if not isinstance(raw, dict):
        item.problem("", f"must be {_ITEM}, got {raw!r}")
        return None
    item.check_known(FIELDS)
    values = {name: _text(item, name) for name in FIELDS}
    tracking = values["tracking"]
    if tracking is not None and not is_tracking(tracking):
        item.problem("tracking", f"must be {TRACKING_FORMS} of the bug that tracks the failure, got {tracking!r}")
    case, ep, reason = values["case"], values["ep"], values["reason"]
    if case is None or ep is None or reason is None or tracking is None or len(item.problems) > before:
        return None
    return Waiver(case, ep, values["device"], values["driver"], reason, tracking, item.pos())


def _text(item: Fields, name: str) -> str | None:
    """A non-empty string field; numbers are refused rather than converted: ``driver: 580.10`` reads as 580.1."""
    if not item.has(name):
        if name in REQUIRED:
            item.problem(name, "missing required field")
        return None
    value = item.raw[name]
    if not isinstance(value, str):
        item.problem(name, f"must be text (quote it), got {value!r}")
        return None
    if not value.strip():
        item.problem(name, "must not be empty")
        return None
    return value


def is_tracking(text: str) -> bool:
    """Whether ``text`` names a bug: an http(s) URL with a host, or a bug id (``BUG_ID``)."""
    return BUG_ID.fullmatch(text) is not None or _is_url(text)


def _is_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in text)


def apply_waivers(
    environment: Environment,
    results: Sequence[Result],
    waivers: Sequence[Waiver],
    *,
    unexpected_passes_fail: bool = True,
) -> Gate:
    """Sort ``results`` against ``waivers`` on the GPUs of ``environment`` (results.json's); the first waiver in
    file order that matches a result is the one reported for it."""
    gpus = _gpus(environment)
    here = [(index, waiver) for index, waiver in enumerate(waivers) if _on_this_machine(waiver, gpus)]
    matched: set[int] = set()
    decided: set[int] = set()  # matched a result with a verdict: failing (expected) or passing
    still_failing: set[int] = set()
    expected: list[tuple[Result, Waiver]] = []
    unexpected: list[Result] = []
    passing: dict[int, list[Result]] = {}
    for result in results:
        matching = [(index, waiver) for index, waiver in here if _matches(waiver, result)]
        matched.update(index for index, _ in matching)
        if result.status in FAILING or result.status in _NOT_FAILING:
            decided.update(index for index, _ in matching)
        if result.status in FAILING:
            if matching:
                expected.append((result, matching[0][1]))
                still_failing.update(index for index, _ in matching)
            else:
                unexpected.append(result)
        elif result.status in _NOT_FAILING:
            for index, _ in matching:
                passing.setdefault(index, []).append(result)
    # An entry is a known failure that no longer happens when none of the results it matches fails: a pattern that
    # also covers passing variants (a sweep's other sizes) is not a pass while one of its variants still fails.
    passes = [(r, waivers[index]) for index, rs in passing.items() if index not in still_failing for r in rs]
    stale = tuple(waivers[index] for index, _ in here if index in matched and index not in decided)
    return Gate(tuple(expected), tuple(unexpected), tuple(passes), stale, unexpected_passes_fail)


STALE_WHY = "their cases ran here but gave no verdict (NOT_SUPPORTED, NOT_EXPRESSIBLE, INVALID)"


def stale_line(stale: Sequence[Waiver], shown: int = 5) -> str:
    """ "2 stale waiver(s) at w.yaml:2:5, w.yaml:9:5: their cases ran here but gave no verdict (...)": the console's
    one line for them (the first ``shown`` places, then how many more)."""
    places = ", ".join(str(waiver.pos) for waiver in stale[:shown])
    more = f" and {len(stale) - shown} more" if len(stale) > shown else ""
    return f"{len(stale)} stale waiver(s) at {places}{more}: {STALE_WHY}"


def waived_keys(gate: Gate) -> dict[tuple[str, str], str]:
    """(case, ep) of each expected failure -> "reason (tracking)", for reporters to print beside the failure."""
    return {
        (result.case, result.ep): f"{waiver.reason} ({waiver.tracking})" for result, waiver in gate.expected_failures
    }


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
    return fnmatchcase(_slashed(result.case), _slashed(waiver.case)) and fnmatchcase(result.ep, waiver.ep)


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

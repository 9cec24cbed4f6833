"""Whether a failing result fails the way a known-failure entry says (its ``Signature``), and if not, why, in one
phrase every report can print: ``waived for tie_order; failed by values: 3/12 elements differ``, ``waived up to
max_ulp 4; failed with 412 ULP``, ``waived for verdict driver; not triaged``.

What each bound is measured against is read here and nowhere else: ``max_abs_error`` against the result's
``metrics["max_abs_error"]``, ``max_ulp`` against ``metrics["max_ulp_error"]`` (the error measured;
``metrics["max_ulp"]`` is the tolerance), ``max_mismatches`` against ``mismatched`` (below). A bound on something
the result did not measure (an ERROR has no error to measure) is not met: the entry says how far its failure goes,
and a failure nothing measured is not known to stay within it. A NaN measurement meets no bound.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from conformance.gate.waiver_file import Waiver
from conformance.results import Result


@dataclass(frozen=True)
class Mismatched:
    """How much of a result failed: ``count`` of ``total`` (None where not recorded) ``unit``s."""

    count: float
    total: float | None
    unit: str  # "elements", or "sequences" for an operator whose unit of failure is a sequence (TOP_K1)

    @property
    def text(self) -> str:
        """ "3/12 elements differ", "2/8 sequences fail"."""
        verb = "fail" if self.unit == "sequences" else "differ"
        total = f"/{_number(self.total)}" if self.total is not None else ""
        return f"{_number(self.count)}{total} {self.unit} {verb}"


def mismatched(result: Result) -> Mismatched | None:
    """The one reading of "how many failed" for ``max_mismatches`` (and ``waivers suggest``): the result's
    ``mismatches`` (elements; of ``elements``) where it counts them (MVN1, SLICE1), else its ``failing_sequences``
    (of ``sequences``): TOP_K1 judges whole sequences and counts no mismatched elements. None where neither is
    recorded."""
    for count, total, unit in (("mismatches", "elements", "elements"), ("failing_sequences", "sequences", "sequences")):
        value = measured(result, count)
        if value is not None:
            return Mismatched(value, measured(result, total), unit)
    return None


def measured(result: Result, name: str) -> float | None:
    """A metric as a number: results.json writes a non-finite one as "nan", "inf" or "-inf"; None where absent or
    not a number."""
    value = result.metrics.get(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def _number(value: float | None) -> str:
    """412.0 as "412", 0.00123 as "0.00123": a whole number without its point, any other as Python's shortest."""
    if value is None:
        return "?"
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def _kinds(kinds: tuple[str, ...]) -> str:
    return ", ".join(kinds)


def outside(waiver: Waiver, result: Result) -> str | None:
    """Why the failing ``result`` is not the failure ``waiver`` waives (its first unmet part, in the order failure
    kind, bounds, verdict); None where it is (every entry without a signature waives any failure it matches)."""
    signature = waiver.signature
    if signature.failure_kinds and result.failure_kind not in signature.failure_kinds:
        failed = result.failure_kind or f"{result.status.value} without a failure kind"
        much = mismatched(result)
        return f"waived for {_kinds(signature.failure_kinds)}; failed by {failed}" + (f": {much.text}" if much else "")
    if signature.max_abs_error is not None:
        why = _beyond("max_abs_error", signature.max_abs_error, measured(result, "max_abs_error"), "")
        if why:
            return why
    if signature.max_ulp is not None:
        why = _beyond("max_ulp", signature.max_ulp, measured(result, "max_ulp_error"), " ULP")
        if why:
            return why
    if signature.max_mismatches is not None:
        much = mismatched(result)
        unit = f" {much.unit}" if much is not None else ""
        why = _beyond("max_mismatches", signature.max_mismatches, much.count if much else None, unit)
        if why:
            return why
    if signature.verdicts:
        verdicts = ", ".join(verdict.value for verdict in signature.verdicts)
        if result.triage is None:
            return f"waived for verdict {verdicts}; not triaged"
        if result.triage.verdict not in signature.verdicts:
            return f"waived for verdict {verdicts}; triaged {result.triage.verdict.value}"
    return None


def _beyond(bound: str, limit: float, value: float | None, unit: str) -> str | None:
    """ "waived up to max_ulp 4; failed with 412 ULP" where ``value`` is over ``limit`` (NaN is over any), or was
    not measured; None where within."""
    if value is None:
        return f"waived up to {bound} {_number(limit)}; failed with nothing measured"
    if math.isnan(value) or value > limit:
        return f"waived up to {bound} {_number(limit)}; failed with {_number(value)}{unit}"
    return None

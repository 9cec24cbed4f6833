"""The gate's decision in words, and a run's failures grouped for a reader: data for every report, built from a
Summary and, where a waiver file was given, its Gate.

The verdict names what decided it ("PASSED — 52 known failures waived", "FAILED — 3 unexpected failures",
"INCOMPLETE/FAILED — interrupted: 120 of 1881 cases run"), so that no report shows a green badge beside "52 FAIL".
Failures are grouped by signature: operator, failure kind, EP and data type (and status), and where triage re-ran
them, whose failure it is (conformance/whose.py), since one driver bug usually fails many cases the same way; a
reader looks at one group, not at each of its cases.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.gate.summary import NO_VERDICT, OK, Summary, plural, severity
from conformance.gate.waivers import Gate, Waiver, overall_failed
from conformance.model import Status
from conformance.results import FAILING, Result
from conformance.whose import MEANING, Whose

# Statuses shown without detail: passes, and no verdict (counted by reason). Of the rest, those not FAILING are
# warnings (QUALITY_WARNING, and any such status the enum gains), grouped like failures.
WITHOUT_DETAIL = NO_VERDICT | OK


@dataclass(frozen=True)
class Verdict:
    """``passed`` is the exit code's verdict; ``headline`` says it with what decided it; ``label`` is its first
    word(s): PASSED, FAILED, or INCOMPLETE/FAILED when results were never produced."""

    passed: bool
    label: str
    reasons: tuple[str, ...]

    @property
    def because(self) -> str:
        """The reasons as one phrase ("3 unexpected failures; 52 known failures waived"); empty without any."""
        return "; ".join(self.reasons)

    @property
    def headline(self) -> str:
        return f"{self.label} — {self.because}" if self.reasons else self.label


def _failing_counts(summary: Summary) -> str:
    """ "3 failures (2 FAIL, 1 ERROR)", every failing status in severity order; "19 failures" when all are FAIL."""
    counts = {s: n for s, n in summary.totals.items() if s in FAILING and n}
    total = sum(counts.values())
    if set(counts) == {Status.FAIL}:
        return plural(total, "failure")
    return f"{plural(total, 'failure')} ({', '.join(f'{counts[s]} {s.value}' for s in sorted(counts, key=severity))})"


def decide(summary: Summary, gate: Gate | None) -> Verdict:
    """The verdict that ``overall_failed`` gives, with the reasons for it, most decisive first."""
    failed = overall_failed(summary, gate)
    completeness = summary.completeness
    reasons = list(summary.unwaivable)
    if gate is not None:
        if gate.unexpected_failures:
            reasons.append(plural(len(gate.unexpected_failures), "unexpected failure"))
        if gate.unexpected_passes and gate.unexpected_passes_fail:
            reasons.append(
                f"{plural(len(gate.unexpected_passes), 'known failure')} no longer failing (remove the waiver)"
            )
        if gate.expected_failures:
            reasons.append(f"{plural(len(gate.expected_failures), 'known failure')} waived")
        if gate.flaky:
            reasons.append(f"{plural(len(gate.flaky), 'flaky result')} tolerated")
    elif any(summary.totals.get(s) for s in FAILING):
        reasons.append(_failing_counts(summary) + ", no waiver file given")
    if not reasons:
        reasons.append("no failures" if summary.totals else "no results")
    label = "PASSED" if not failed else "FAILED" if completeness.complete else "INCOMPLETE/FAILED"
    return Verdict(not failed, label, tuple(reasons))


def whose(result: Result) -> Whose | None:
    """Whose failure ``result`` is, where triage re-ran it; None for one it did not (every result of a run without
    triage)."""
    return result.triage.verdict if result.triage is not None else None


def whose_label(result: Result) -> str:
    """ "whose: driver", how every report names a triaged failure's owner; empty for a result triage did not
    judge, so that an untriaged run's reports read as before."""
    verdict = whose(result)
    return f"whose: {verdict.value}" if verdict is not None else ""


def whose_order(verdict: Whose | None) -> int:
    """A sort key: the verdicts in whose.py's order, a failure triage did not judge last."""
    return list(Whose).index(verdict) if verdict is not None else len(Whose)


@dataclass(frozen=True, eq=False)  # each group is its own: reports key their anchors on it
class Group:
    """Results that failed (or warned) the same way: one operator, failure kind, EP, data type and status, and
    triage's verdict on them (None where triage did not judge them). ``waivers`` are the known failures that cover
    its results (none when unexpected)."""

    status: Status
    operator: str
    kind: str
    ep: str
    data_type: str
    whose: Whose | None
    results: tuple[Result, ...]
    waivers: tuple[Waiver, ...] = ()

    @property
    def first(self) -> Result:
        return self.results[0]

    @property
    def notes(self) -> tuple[tuple[str, str, tuple[Waiver, ...]], ...]:
        """(reason, tracking, the waivers that give it): a waiver file often says the same of many cases, one
        entry each; the reader needs the reason once, with where it is written."""
        notes: dict[tuple[str, str], list[Waiver]] = {}
        for waiver in self.waivers:
            notes.setdefault((waiver.reason, waiver.tracking), []).append(waiver)
        return tuple((reason, tracking, tuple(ws)) for (reason, tracking), ws in notes.items())


@dataclass(frozen=True)
class Findings:
    """A run's results a reader must look at, each list ordered most severe and largest first: failures no
    waiver covers (every failure without a waiver file), known failures that no longer fail, waived failures, and
    warnings."""

    unexpected: tuple[Group, ...]
    unexpected_passes: tuple[tuple[Result, Waiver], ...]
    waived: tuple[Group, ...]
    warnings: tuple[Group, ...]

    @property
    def groups(self) -> tuple[Group, ...]:
        return self.unexpected + self.waived + self.warnings

    @property
    def triaged(self) -> bool:
        """Whether triage judged any of these results: only then do reports give a "whose" column."""
        return any(group.whose is not None for group in self.groups)

    @property
    def by_whose(self) -> tuple[WhoseCount, ...]:
        """The failures each triage verdict owns (unexpected and known apart), in whose.py's order; empty when
        triage judged none."""
        counts = {verdict: [0, 0] for verdict in Whose}
        for index, groups in enumerate((self.unexpected, self.waived)):
            for group in groups:
                if group.whose is not None:
                    counts[group.whose][index] += len(group.results)
        return tuple(WhoseCount(v, *counts[v]) for v in Whose if sum(counts[v]))


@dataclass(frozen=True)
class WhoseCount:
    """How many of a run's failures triage gave to ``verdict``: unexpected and known (waived) ones."""

    verdict: Whose
    unexpected: int
    known: int

    @property
    def meaning(self) -> str:
        return MEANING[self.verdict]


def _grouped(results: Sequence[Result], waivers: dict[tuple[str, str], Waiver]) -> tuple[Group, ...]:
    members: dict[tuple[Status, str, str, str, str, Whose | None], list[Result]] = {}
    for r in results:
        key = (r.status, r.operator, r.failure_kind or "—", r.ep, r.data_type or "—", whose(r))
        members.setdefault(key, []).append(r)
    groups = [
        Group(
            *key,
            results=tuple(rs),
            waivers=tuple(dict.fromkeys(w for r in rs if (w := waivers.get((r.case, r.ep))) is not None)),
        )
        for key, rs in members.items()
    ]
    return tuple(
        sorted(
            groups,
            key=lambda g: (severity(g.status), whose_order(g.whose), -len(g.results), g.operator, g.ep, g.kind),
        )
    )


def findings(results: Sequence[Result], gate: Gate | None) -> Findings:
    """The failing results split by the gate, and the warnings, each grouped by signature; a failure a flaky entry
    tolerated is among the waived."""
    waived = (
        {(r.case, r.ep): waiver for r, waiver in (*gate.expected_failures, *gate.flaky)} if gate is not None else {}
    )
    failing = [r for r in results if r.status in FAILING]
    return Findings(
        unexpected=_grouped([r for r in failing if (r.case, r.ep) not in waived], {}),
        unexpected_passes=gate.unexpected_passes if gate is not None else (),
        waived=_grouped([r for r in failing if (r.case, r.ep) in waived], waived),
        warnings=_grouped([r for r in results if r.status not in FAILING and r.status not in WITHOUT_DETAIL], {}),
    )

"""``dmlconf waivers lint``: what is wrong with a waiver file that loads, judged against a case library's ids.

Findings, one line each at the entry they concern (the later of two):

- a duplicate: an entry of the same section with the same patterns and signature as an earlier one;
- an overlap: two entries of one section that can match the same result: a case id of the library that both case
  patterns match, an EP label both EP patterns can match, a GPU both can be on, and signatures that are not
  disjoint. The first in file order decides such a result, so the later entry is dead there or the order matters;
- a flaky case also listed as a known failure (the same test, signatures aside): the flaky entry decides;
- a case pattern that matches no case of the library (a renamed or removed case, a typo);
- ``suggest``'s placeholder tracking (``BUG-0``) left in.

How "can match the same" is decided: case patterns are matched against every case id of the library (exact over
it); EP patterns overlap where both match one of the EP table's aliases (cpu, cuda, dml, dmlop, webgpu) or one
matches the other's text (``dml*`` and ``dml:device_id=1``); device and driver patterns overlap where either is
absent or one matches the other's text (``NVIDIA*`` and ``NVIDIA H100*``; an approximation: two patterns that only
meet in a name neither spells are taken as disjoint); signatures are disjoint where both narrow the failure kinds,
or both the verdicts, to sets that share none.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase

from conformance import ep_table
from conformance.gate.waiver_file import Signature, Waiver, WaiverFile
from conformance.gate.waivers import case_matches
from conformance.model import SourcePos

PLACEHOLDER = "BUG-0"  # the tracking ``waivers suggest`` writes: a bug id the loader accepts, that names no bug


@dataclass(frozen=True)
class Finding:
    """What is wrong with an entry, and where the entry is."""

    pos: SourcePos
    what: str

    def __str__(self) -> str:
        return f"{self.pos}: {self.what}"


def _texts_meet(one: str | None, other: str | None) -> bool:
    """Two optional patterns on one name can meet: either is absent, or one matches the other's text."""
    if one is None or other is None:
        return True
    return fnmatchcase(one, other) or fnmatchcase(other, one)


def _eps_meet(one: str, other: str) -> bool:
    aliases = [row.alias for row in ep_table.KNOWN_EPS]
    return _texts_meet(one, other) or any(fnmatchcase(a, one) and fnmatchcase(a, other) for a in aliases)


def _disjoint(one: Signature, other: Signature) -> bool:
    kinds = bool(one.failure_kinds and other.failure_kinds) and not set(one.failure_kinds) & set(other.failure_kinds)
    verdicts = bool(one.verdicts and other.verdicts) and not set(one.verdicts) & set(other.verdicts)
    return kinds or verdicts


def _same(one: Waiver, other: Waiver) -> bool:
    return (one.case, one.ep, one.device, one.driver, one.signature) == (
        other.case,
        other.ep,
        other.device,
        other.driver,
        other.signature,
    )


def _at(waiver: Waiver) -> str:
    return f"line {waiver.pos.line}"


def lint(file: WaiverFile, case_ids: Sequence[str], library: str) -> list[Finding]:
    """The findings of ``file`` against the cases ``case_ids`` of ``library`` (the paths they were read from, as
    a finding names them), ordered by where they are."""
    matched = {waiver: [case for case in case_ids if case_matches(waiver.case, case)] for waiver in file.entries}
    findings = [
        Finding(waiver.pos, f"case pattern {waiver.case!r} matches no case of {library}")
        for waiver in file.entries
        if not matched[waiver]
    ]
    findings += [
        Finding(waiver.pos, f"tracking {PLACEHOLDER} is waivers suggest's placeholder: name the bug that tracks it")
        for waiver in file.entries
        if waiver.tracking == PLACEHOLDER
    ]

    def common(one: Waiver, other: Waiver) -> str | None:
        """A case id both can match on a common EP and GPU; None where they cannot meet."""
        if not (_eps_meet(one.ep, other.ep) and _texts_meet(one.device, other.device)):
            return None
        if not _texts_meet(one.driver, other.driver):
            return None
        mine = set(matched[one])
        return next((case for case in matched[other] if case in mine), None)

    for section in (file.known_failures, file.flaky):
        for index, later in enumerate(section):
            for earlier in section[:index]:
                if _same(earlier, later):
                    findings.append(Finding(later.pos, f"duplicate of the entry at {_at(earlier)}"))
                    break
                case = common(earlier, later)
                if case is not None and not _disjoint(earlier.signature, later.signature):
                    findings.append(
                        Finding(
                            later.pos,
                            f"overlaps the entry at {_at(earlier)} (both match {case} on EP {later.ep}): the first "
                            "in file order decides its results",
                        )
                    )
                    break
    for flaky in file.flaky:
        known = next(((k, case) for k in file.known_failures if (case := common(k, flaky)) is not None), None)
        if known is not None:
            findings.append(
                Finding(
                    flaky.pos,
                    f"flaky, and a known failure at {_at(known[0])} too (both match {known[1]}): the flaky entry "
                    "decides its results",
                )
            )
    return sorted(findings, key=lambda finding: (finding.pos.line, finding.pos.col, finding.what))

"""Summary data built from results first; the Markdown and console reports only format it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.model import Status
from conformance.results import FAILING, Result

STATUS_ORDER = tuple(Status)
# Non-PASS statuses worth a line each in a report; INVALID is a negative case rejected as it should be.
NOTABLE = frozenset(Status) - {Status.PASS, Status.INVALID}


@dataclass(frozen=True)
class Summary:
    environment: Mapping[str, Any]
    totals: Mapping[Status, int]
    eps: tuple[str, ...]
    by_operator: tuple[tuple[str, str, Mapping[Status, int]], ...]  # (operator, ep, counts)
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...]  # (case, status per ep), only with several EPs
    notable: tuple[Result, ...]

    @property
    def failed(self) -> bool:
        return any(self.totals.get(s, 0) for s in FAILING)


def summarize(environment: Mapping[str, Any], results: Sequence[Result]) -> Summary:
    eps = tuple(dict.fromkeys(r.ep for r in results))
    grouped: dict[tuple[str, str], Counter[Status]] = {}
    for r in results:
        grouped.setdefault((r.operator, r.ep), Counter())[r.status] += 1
    by_operator = tuple((op, ep, dict(c)) for (op, ep), c in sorted(grouped.items()))
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...] = ()
    if len(eps) > 1:
        statuses: dict[str, dict[str, Status]] = {}
        for r in results:
            statuses.setdefault(r.case, {})[r.ep] = r.status
        matrix = tuple((case, tuple(row.get(ep) for ep in eps)) for case, row in statuses.items())
    return Summary(
        environment=environment,
        totals=dict(Counter(r.status for r in results)),
        eps=eps,
        by_operator=by_operator,
        matrix=matrix,
        notable=tuple(r for r in results if r.status in NOTABLE),
    )


def first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 1] + "…"

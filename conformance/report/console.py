"""The console summary printed at the end of ``dmlconf run``, rendered from a Summary."""

from __future__ import annotations

from tabulate import tabulate

from conformance.gate.summary import STATUS_ORDER, Summary
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.text import plain
from conformance.results import FAILING


def render_console(summary: Summary, max_listed: int = 30) -> str:
    statuses = [s for s in STATUS_ORDER if summary.totals.get(s)]
    rows = [
        [plain(op), plain(ep), *(counts.get(s, 0) or "" for s in statuses)] for op, ep, counts in summary.by_operator
    ]
    parts = [tabulate(rows, ["operator", "EP", *statuses], tablefmt="simple")]
    if summary.matrix and len(summary.matrix) <= max_listed:
        matrix_rows = [[plain(case), *((s.value if s else "-") for s in row)] for case, row in summary.matrix]
        parts.append(
            tabulate(matrix_rows, ["case", *map(plain, summary.eps)], tablefmt="simple", disable_numparse=True)
        )
    listed = sorted(summary.notable, key=lambda r: (r.status not in FAILING, r.status != Status.FAIL))
    for result in listed[:max_listed]:
        detail = f" ({result.failure_kind})" if result.failure_kind else ""
        parts.append(
            f"{result.status.value}{detail} {plain(result.case)} [{plain(result.ep)}]\n"
            f"  {plain(first_line(result.message))}"
            + (f"\n  repro: {plain(result.repro)}" if result.status in FAILING else "")
        )
    if len(listed) > max_listed:
        parts.append(f"... and {len(listed) - max_listed} more not passing (see summary.md)")
    # What each EP ran on (the device first: adapter, driver, builds); without EP records, the GPU line.
    parts.append("\n".join(f"{plain(what)}: {plain(which)}" for what, which in summary.devices or summary.identity[:1]))
    completeness = summary.completeness
    parts += [f"{plain(reason)}: the run fails" for reason in completeness.reasons]  # the words of every report
    for death, reason in zip(summary.environment.runner_deaths, summary.runner_deaths, strict=True):
        parts.append("\n".join([f"{plain(reason)}: the run fails", *(f"  {plain(line)}" for line in death.stderr)]))
    if completeness.skipped_line:
        parts.append(plain(completeness.skipped_line))
    if summary.placement is not None:
        parts.append(f"placement: {summary.placement.line}")
    if summary.packed_differences:
        lines = [plain(line) for line in summary.packed_differences[:max_listed]]
        parts.append(
            f"packing: {len(summary.packed_differences)} case(s) got another verdict packed with other cases than "
            "alone (the verdict alone stands):\n  " + "\n  ".join(lines)
        )
    totals = ", ".join(f"{summary.totals[s]} {s.value}" for s in statuses)
    parts.append(f"== {totals or 'no results'} ==")
    return "\n\n".join(parts)

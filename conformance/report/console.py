"""The console summary printed at the end of ``dmlconf run``, rendered from a Summary and, with a waiver file, its
Gate: unexpected results first, marked as such, each with its message and repro; known failures one line each (then
a count); then warnings and results without a verdict. ``quiet`` keeps only the unexpected results."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from conformance.gate.summary import STATUS_ORDER, Summary, death_reason, death_verdict
from conformance.gate.waivers import Gate, near_miss_keys, waived_keys
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.text import plain
from conformance.results import FAILING, Result, verdict_text


def _block(result: Result, mark: str = "", outside: str = "") -> str:
    """A result as its status, kind, case and EP, its message's first line, why a waiver that names it does not
    cover it (``outside``) and, for a failure, its repro."""
    detail = f" ({result.failure_kind})" if result.failure_kind else ""
    return (
        f"{mark}{result.status.value}{detail} {plain(result.case)} [{plain(result.ep)}]\n"
        f"  {plain(first_line(result.message))}"
        + (f"\n  outside its waiver: {plain(outside)}" if outside else "")
        + (f"\n  repro: {plain(result.repro)}" if result.status in FAILING else "")
    )


def _more(listed: Sequence[object], max_listed: int, what: str) -> list[str]:
    return [f"... and {len(listed) - max_listed} more {what} (see summary.md)"] if len(listed) > max_listed else []


def _unexpected(summary: Summary, gate: Gate | None, max_listed: int) -> list[str]:
    """Failures no waiver covers (every failure without a waiver file), most severe first, then known failures
    that pass now: the results a gate fails on."""
    known = waived_keys(gate) if gate is not None else {}
    outside = near_miss_keys(gate) if gate is not None else {}
    mark = "UNEXPECTED " if gate is not None else ""
    failing = [r for r in _ordered(summary.notable) if r.status in FAILING and (r.case, r.ep) not in known]
    parts = [_block(r, mark, outside.get((r.case, r.ep), "")) for r in failing[:max_listed]]
    parts += _more(failing, max_listed, "unexpected failures")
    passes = gate.unexpected_passes if gate is not None else ()
    parts += [
        f"UNEXPECTED PASS {plain(r.case)} [{plain(r.ep)}]: a known failure no longer fails, remove its waiver "
        f"({w.pos}): {plain(w.reason)} ({plain(w.tracking)})"
        for r, w in passes[:max_listed]
    ]
    return parts


def _known(summary: Summary, gate: Gate, max_listed: int) -> list[str]:
    """Waived failures: one line each, the first ``max_listed``, then how many more."""
    known = waived_keys(gate)
    waived = [r for r in _ordered(summary.notable) if (r.case, r.ep) in known]
    lines = [
        f"known {verdict_text(r.status, r.failure_kind)} {plain(r.case)} [{plain(r.ep)}]: "
        f"{plain(known[(r.case, r.ep)])}"
        for r in waived[:max_listed]
    ]
    lines += _more(waived, max_listed, "known failures")
    return ["\n".join(lines)] if lines else []


def _ordered(results: Sequence[Result]) -> list[Result]:
    """FAIL first, then the other failing statuses, then the rest (the enum's order within each)."""
    return sorted(results, key=lambda r: (r.status not in FAILING, r.status != Status.FAIL))


def _listing(summary: Summary, gate: Gate | None, max_listed: int) -> list[str]:
    if gate is None:
        listed = _ordered(summary.notable)
        return [_block(r) for r in listed[:max_listed]] + _more(listed, max_listed, "not passing")
    others = [r for r in _ordered(summary.notable) if r.status not in FAILING]
    return [
        *_unexpected(summary, gate, max_listed),
        *_known(summary, gate, max_listed),
        *(_block(r) for r in others[:max_listed]),
        *_more(others, max_listed, "not passing"),
    ]


def render_console(summary: Summary, max_listed: int = 30, gate: Gate | None = None, quiet: bool = False) -> str:
    """The tables, the results worth a look (unexpected ones first where a ``gate`` sorted them), what each EP ran
    on, why the run fails whatever its verdicts, and the totals; ``quiet``: the unexpected results alone."""
    if quiet:
        return "\n\n".join(_unexpected(summary, gate, max_listed))
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
    parts += _listing(summary, gate, max_listed)
    # What each EP ran on (the device first: adapter, driver, builds); without EP records, the GPU line.
    parts.append("\n".join(f"{plain(what)}: {plain(which)}" for what, which in summary.devices or summary.identity[:1]))
    completeness = summary.completeness
    parts += [f"{plain(reason)}: the run fails" for reason in completeness.reasons]  # the words of every report
    for death in summary.environment.runner_deaths:
        said = f"{plain(death_reason(death))}: {death_verdict(death)}"
        parts.append("\n".join([said, *(f"  {plain(line)}" for line in death.stderr)]))
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

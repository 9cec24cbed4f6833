"""The console summary printed at the end of ``dmlconf run``, rendered from a Summary and, with a waiver file, its
Gate: unexpected results first, marked as such, each with its message and repro; known failures one short line each
under their reason, the reason once; then warnings; results without a verdict counted by reason (``verbose``: each
listed). A failure triage judged names whose it is. ``quiet`` keeps only the unexpected results."""

from __future__ import annotations

from collections.abc import Sequence

from tabulate import tabulate

from conformance.gate.summary import (
    NO_VERDICT,
    STATUS_ORDER,
    Summary,
    death_reason,
    death_verdict,
    plural,
    unexercised_line,
)
from conformance.gate.verdict import whose, whose_label, whose_order
from conformance.gate.waivers import Gate, Waiver, near_miss_keys, waived_keys
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.text import plain
from conformance.results import FAILING, Result, verdict_text

WIDTH = 116  # columns a reason is wrapped at, and a no-verdict line cut at: one terminal line each
KNOWN_PER_REASON = 3  # known failures listed under their reason (then how many more); -v lists every one
VERBOSE_HINT = "dmlconf -v run lists each"


def _line(result: Result) -> str:
    """A result in one short line: its verdict, case and EP, and whose it is where triage said."""
    label = whose_label(result)
    return f"{verdict_text(result.status, result.failure_kind)} {plain(result.case)} [{plain(result.ep)}]" + (
        f" [{label}]" if label else ""
    )


def _block(result: Result, mark: str = "", outside: str = "") -> str:
    """A result as its line, its message's first line, why a waiver that names it does not cover it (``outside``)
    and, for a failure, its repro."""
    return (
        f"{mark}{_line(result)}\n  {plain(first_line(result.message))}"
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


def _cut(text: str) -> str:
    """``text`` cut to WIDTH columns (an ellipsis marks the cut), its indentation kept."""
    return text if len(text) <= WIDTH else text[: WIDTH - 1] + "…"


def _known(gate: Gate, verbose: bool) -> list[str]:
    """Waived failures under their reason, the reason once (most failures first): the first KNOWN_PER_REASON of
    each, one short line apiece, then how many more; ``verbose``: every one."""
    by_reason: dict[tuple[str, str], list[tuple[Result, Waiver]]] = {}
    for result, waiver in gate.expected_failures:
        by_reason.setdefault((waiver.reason, waiver.tracking), []).append((result, waiver))
    if not by_reason:
        return []
    count = len(gate.expected_failures)
    lines = [f"known failures, waived: {count} under {plural(len(by_reason), 'reason')}"]
    for (reason, tracking), members in sorted(by_reason.items(), key=lambda item: -len(item[1])):
        results = sorted((r for r, _ in members), key=lambda r: (whose_order(whose(r)), r.status not in FAILING))
        # The reason's first words on one line and where it is tracked on the next: the whole reason is in
        # report.html and the waiver file.
        lines += [_cut(f"{len(results)} known: {plain(reason)}"), f"  tracked at {plain(tracking)}"]
        shown = results if verbose else results[:KNOWN_PER_REASON]
        lines += [f"    {_line(r)}" for r in shown]
        if len(results) > len(shown):
            lines.append(f"    ... and {len(results) - len(shown)} more ({VERBOSE_HINT})")
    return ["\n".join(lines)]


def _ordered(results: Sequence[Result]) -> list[Result]:
    """FAIL first, then the other failing statuses, then the rest (the enum's order within each)."""
    return sorted(results, key=lambda r: (r.status not in FAILING, r.status != Status.FAIL))


def _no_verdict(summary: Summary, max_listed: int, verbose: bool) -> list[str]:
    """Results without a verdict (NOT_SUPPORTED, NOT_EXPRESSIBLE): counted by status, EP and failure kind (by their
    message where they have no kind), each count with its first message; ``verbose``: each result listed."""
    declined = [r for r in summary.notable if r.status in NO_VERDICT]
    if verbose:
        return [_block(r) for r in declined[:max_listed]] + _more(declined, max_listed, "without a verdict")
    counted: dict[tuple[Status, str, str, str], list[Result]] = {}
    for r in declined:
        reason = "" if r.failure_kind else first_line(r.message, None)
        counted.setdefault((r.status, r.ep, r.failure_kind or "", reason), []).append(r)
    if not counted:
        return []
    lines = [f"no verdict: {plural(len(declined), 'result')} ({VERBOSE_HINT})"]
    for (status, ep, kind, _), members in sorted(counted.items(), key=lambda item: -len(item[1])):
        said = f"  {len(members)} {verdict_text(status, kind or None)} [{plain(ep)}]"
        message = plain(first_line(members[0].message, None))
        lines.append(_cut(f"{said}: {message}" if message else said))
    return ["\n".join(lines)]


def _listing(summary: Summary, gate: Gate | None, max_listed: int, verbose: bool) -> list[str]:
    """What a reader looks at: failures (unexpected first, then known ones under their reasons) and warnings, then
    the results without a verdict. Without a waiver file the failures and warnings share one list of
    ``max_listed``."""
    with_verdict = [r for r in _ordered(summary.notable) if r.status not in NO_VERDICT]
    if gate is None:
        shown = [_block(r) for r in with_verdict[:max_listed]] + _more(with_verdict, max_listed, "not passing")
        return [*shown, *_no_verdict(summary, max_listed, verbose)]
    warnings = [r for r in with_verdict if r.status not in FAILING]
    shown = [
        *_unexpected(summary, gate, max_listed),
        *_known(gate, verbose),
        *(_block(r) for r in warnings[:max_listed]),
        *_more(warnings, max_listed, "warnings"),
    ]
    return [*shown, *_no_verdict(summary, max_listed, verbose)]


def render_console(
    summary: Summary, max_listed: int = 30, gate: Gate | None = None, quiet: bool = False, verbose: bool = False
) -> str:
    """The tables, the results worth a look (unexpected ones first where a ``gate`` sorted them), what each EP ran
    on, why the run fails whatever its verdicts, and the totals; ``quiet``: the unexpected results alone;
    ``verbose`` (``dmlconf -v``): every known failure and every result without a verdict, each on its line."""
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
    parts += _listing(summary, gate, max_listed, verbose)
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
    if unexercised := unexercised_line(summary):
        parts.append(plain(unexercised))
    if summary.packed_differences:
        lines = [plain(line) for line in summary.packed_differences[:max_listed]]
        parts.append(
            f"packing: {len(summary.packed_differences)} case(s) got another verdict packed with other cases than "
            "alone (the verdict alone stands):\n  " + "\n  ".join(lines)
        )
    totals = ", ".join(f"{summary.totals[s]} {s.value}" for s in statuses)
    parts.append(f"== {totals or 'no results'} ==")
    return "\n\n".join(parts)

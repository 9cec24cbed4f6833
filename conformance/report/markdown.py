"""summary.md: short enough to paste into a pull request, rendered from a Summary."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from conformance.gate.summary import STATUS_ORDER, Summary
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.text import cell, code, table

MAX_ROWS = 40  # rows per list: GitHub refuses comments over 65,536 characters
MAX_COMMAND = 500  # characters of the command line shown (a run over thousands of named files has a long one)
NO_VERDICT = frozenset({Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE})  # counted by reason, not listed one by one


def _skipped_lines(problems: Sequence[str]) -> list[str]:
    if not problems:
        return []
    head = f"- **case files skipped** (`--keep-going`) for {len(problems)} problem(s): the run fails"
    return [head, *(f"  - {cell(line)}" for line in problems[:MAX_ROWS]), *_more(len(problems))]


def _more(count: int) -> list[str]:
    return ["", f"… and {count - MAX_ROWS} more: see report.html"] if count > MAX_ROWS else []


def _packed_lines(differences: Sequence[str]) -> list[str]:
    if not differences:
        return []
    head = f"- **{len(differences)} case(s) got another verdict packed with other cases than alone** (the verdict alone"
    head += " stands; the EP's result depended on the model's other nodes):"
    return [head, *(f"  - {cell(line)}" for line in differences[:MAX_ROWS]), *_more(len(differences))]


def render_markdown(summary: Summary) -> str:
    """The summary, short enough for a pull request comment: long lists are cut at MAX_ROWS rows."""
    env = summary.environment
    command = env.get("command") or []
    unproven = summary.placement.unproven if summary.placement else ()
    lines = [
        "# DirectML conformance summary",
        "",
        *(f"- {what}: {cell(which)}" for what, which in summary.identity),
        f"- target feature level: {env.get('target_feature_level') or 'per EP (above)'}",
        f"- command: {code(first_line(' '.join(str(word) for word in command), MAX_COMMAND))}",
        *([f"- placement: {summary.placement.line}"] if summary.placement else []),
        *(f"  - {cell(line)}" for line in unproven[:MAX_ROWS]),
        *_more(len(unproven)),
        *(["- **interrupted**: fewer results than planned; the run fails"] if env.get("interrupted") else []),
        *(f"- **EP {cell(ep)} executed none of its cases**: the run fails" for ep in summary.idle_eps),
        *_skipped_lines(summary.skipped_files),
        *_packed_lines(summary.packed_differences),
        "",
        "## Totals",
        "",
    ]
    statuses = [s for s in STATUS_ORDER if summary.totals.get(s)]
    lines.append(table([[s.value, summary.totals[s]] for s in statuses], ["status", "results"], text=False))
    lines += ["", "## By operator and EP", ""]
    rows = [[op, cell(ep), *(counts.get(s, 0) for s in statuses)] for op, ep, counts in summary.by_operator]
    lines.append(table(rows, ["operator", "EP", *statuses], text=False))
    if summary.dml_operators:
        lines += ["", "## What the cases reach on DirectML", ""]
        rows = [[op, cell(dml), n] for op, dml, n in summary.dml_operators]
        lines.append(table(rows, ["operator", "DML operator(s), from the DirectML lowering", "cases"], text=False))
    if summary.matrix:
        # Only the cases whose verdicts differ between EPs: the rest is in the totals above and in report.html.
        differing = [(case, row) for case, row in summary.matrix if len(set(row)) > 1]
        lines += ["", "## Cases whose verdicts differ between EPs", ""]
        rows = [[cell(case), *((s.value if s else "—") for s in row)] for case, row in differing[:MAX_ROWS]]
        if rows:
            lines.append(table(rows, ["case", *(cell(ep) for ep in summary.eps)]))
            lines += _more(len(differing))
        else:
            lines.append(f"none: each of the {len(summary.matrix)} cases has the same verdict on every EP")
    failing = [r for r in summary.notable if r.status not in NO_VERDICT]
    if failing:
        lines += ["", "## Failures and warnings", ""]
        rows = [
            [cell(r.case), cell(r.ep), r.status.value, r.failure_kind or "", cell(first_line(r.message, 100))]
            for r in failing[:MAX_ROWS]
        ]
        lines.append(table(rows, ["case", "EP", "status", "kind", "message"]))
        lines += _more(len(failing))
    declined = Counter((r.ep, r.status.value, r.failure_kind or "") for r in summary.notable if r.status in NO_VERDICT)
    if declined:
        lines += ["", "## No verdict", ""]
        rows = [[cell(ep), status, kind, n] for (ep, status, kind), n in sorted(declined.items())]
        lines.append(table(rows, ["EP", "status", "kind", "results"], text=False))
    return "\n".join(lines) + "\n"

"""summary.md: short enough to paste into a pull request, rendered from a Summary."""

from __future__ import annotations

from tabulate import tabulate

from conformance.summary import STATUS_ORDER, Summary, first_line


def _cell(text: object) -> str:
    """Case-provided text is escaped: a pipe or newline must not break the table, nor markup render."""
    value = str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
    for char in "`*_<>[]":
        value = value.replace(char, "\\" + char)
    return value


def render_markdown(summary: Summary) -> str:
    env = summary.environment
    lines = [
        "# DirectML conformance summary",
        "",
        f"- onnxruntime {env.get('onnxruntime')} on {env.get('platform')}, Python {env.get('python')}",
        f"- EPs: {', '.join(summary.eps) or 'none'}; target feature level: {env.get('target_feature_level') or 'any'}",
        f"- command: `{' '.join(env.get('command', []))}`",
        "",
        "## Totals",
        "",
    ]
    statuses = [s for s in STATUS_ORDER if summary.totals.get(s)]
    lines.append(tabulate([[s.value, summary.totals[s]] for s in statuses], ["status", "results"], tablefmt="github"))
    lines += ["", "## By operator and EP", ""]
    rows = [[op, ep, *(counts.get(s, 0) for s in statuses)] for op, ep, counts in summary.by_operator]
    lines.append(tabulate(rows, ["operator", "EP", *statuses], tablefmt="github"))
    if summary.matrix:
        lines += ["", "## Case × EP", ""]
        rows = [[_cell(case), *((s.value if s else "—") for s in row)] for case, row in summary.matrix]
        lines.append(tabulate(rows, ["case", *summary.eps], tablefmt="github"))
    if summary.notable:
        lines += ["", "## Not passing", ""]
        rows = [[_cell(r.case), r.ep, r.status.value, r.failure_kind or "", r.lowering or "",
                 _cell(first_line(r.message))] for r in summary.notable]
        lines.append(tabulate(rows, ["case", "EP", "status", "kind", "lowering", "message"], tablefmt="github"))
    return "\n".join(lines) + "\n"

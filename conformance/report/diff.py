"""A RunDiff as console text and as Markdown short enough for a pull-request comment."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from conformance.gate.diff import Changed, Drift, RunDiff, differing_inputs
from conformance.problems import first_line
from conformance.report.text import cell, code_cell, compact_table, plain
from conformance.results import FAILING, Result

T = TypeVar("T")


def _status(r: Result) -> str:
    return f"{r.status.value} ({r.failure_kind})" if r.failure_kind else r.status.value


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _grown(d: Drift) -> str:
    return ", ".join(f"{name} {_value(old)} → {_value(new)}" for name, old, new in d.metrics)


def _counts(d: RunDiff) -> str:
    counts = [
        ("regressions", len(d.regressions)),
        ("fixes", len(d.fixes)),
        ("metric drift", len(d.metric_drift)),
        ("new", len(d.new_cases)),
        ("removed", len(d.removed_cases)),
        ("other changes", len(d.other_changes)),
    ]
    if d.inputs_differ:  # only then: runs from before the hashes were recorded cannot tell
        counts.insert(3, ("inputs differ", len(d.inputs_differ)))
    return ", ".join(f"{label} {n}" for label, n in counts) + f" (of {d.compared} (case, EP) results in both runs)"


def _environment(d: RunDiff) -> list[str]:
    if d.environment is None:
        return ["environment: not compared"]
    if not d.environment:
        return ["environment: GPU, driver, onnxruntime, its packages, EPs and platform unchanged"]
    return [change.line for change in d.environment]


def _verdict(d: RunDiff) -> str:
    return "REGRESSED" if d.regressed else "no regressions"


def _sections(d: RunDiff) -> list[tuple[str, Sequence[Any]]]:
    return [
        ("Regressions", d.regressions),
        ("Fixes", d.fixes),
        ("Metric drift", d.metric_drift),
        ("Inputs differ", d.inputs_differ),
        ("New cases", d.new_cases),
        ("Removed cases", d.removed_cases),
        ("Other changes", d.other_changes),
    ]


def _more(shown: int, total: int) -> list[str]:
    return [f"… and {total - shown} more"] if total > shown else []


def _console_entry(entry: Changed | Drift | Result, title: str) -> str:
    if isinstance(entry, Result):
        verb = "now" if title == "New cases" else "was"
        return f"  {plain(entry.case)} [{plain(entry.ep)}]: {verb} {_status(entry)}"
    where = f"{plain(entry.new.case)} [{plain(entry.new.ep)}]"
    if isinstance(entry, Drift):
        return f"  {where} {entry.new.status.value}: {_grown(entry)}"
    line = f"  {_status(entry.old)} → {_status(entry.new)}  {where}"
    if title == "Inputs differ":
        line += f"  ({plain(', '.join(differing_inputs(entry.old, entry.new)))})"
    elif title == "Regressions":
        line += f"\n    {plain(first_line(entry.new.message))}\n    repro: {plain(entry.new.repro)}"
    elif entry.new.status in FAILING:
        line += "  (now failing)"  # e.g. NOT_SUPPORTED -> FAIL: newly run, and wrong
    return line


def render_diff_console(d: RunDiff, max_listed: int = 30) -> str:
    """Environment changes, counts, then each non-empty section (at most ``max_listed`` entries)."""
    parts = ["\n".join(plain(line) for line in _environment(d)), _counts(d)]
    for title, entries in _sections(d):
        if entries:
            lines = [f"{title} ({len(entries)})"]
            lines += [_console_entry(e, title) for e in entries[:max_listed]]
            parts.append("\n".join(lines + _more(min(len(entries), max_listed), len(entries))))
    parts.append(f"== {_verdict(d)}: {_counts(d)} ==")
    return "\n\n".join(parts)


def _rows(entries: Sequence[T], row: Callable[[T], list[str]], limit: int) -> list[list[str]]:
    return [row(e) for e in entries[:limit]]


def _where(r: Result) -> list[str]:
    return [cell(r.case), cell(r.ep)]


def _markdown_section(title: str, entries: Sequence[Any], limit: int) -> list[str]:
    if title == "Regressions":
        headers = ["case", "EP", "was", "now", "message", "repro"]
        rows = _rows(
            entries,
            lambda c: [
                *_where(c.new),
                _status(c.old),
                _status(c.new),
                cell(first_line(c.new.message)),
                code_cell(c.new.repro),
            ],
            limit,
        )
    elif title == "Metric drift":
        headers = ["case", "EP", "status", "grew"]
        rows = _rows(entries, lambda g: [*_where(g.new), g.new.status.value, _grown(g)], limit)
    elif title == "Inputs differ":
        headers = ["case", "EP", "was", "now", "inputs"]
        rows = _rows(
            entries,
            lambda c: [
                *_where(c.new),
                _status(c.old),
                _status(c.new),
                cell(", ".join(differing_inputs(c.old, c.new))),
            ],
            limit,
        )
    elif title in ("New cases", "Removed cases"):
        headers = ["case", "EP", "status"]
        rows = _rows(entries, lambda r: [*_where(r), _status(r)], limit)
    else:
        headers = ["case", "EP", "was", "now"]
        rows = _rows(entries, lambda c: [*_where(c.new), _status(c.old), _status(c.new)], limit)
    # A blank line ends the table: GFM would take a line right under it for one more row.
    more = ["", *_more(len(rows), len(entries))] if len(entries) > len(rows) else []
    return ["", f"## {title} ({len(entries)})", "", compact_table(rows, headers), *more]


def render_diff_markdown(d: RunDiff, max_rows: int = 20) -> str:
    """A PR comment: environment changes, counts, then each non-empty section capped at ``max_rows`` rows."""
    lines = ["# DirectML conformance diff", "", *(f"- {cell(line)}" for line in _environment(d))]
    lines += ["", f"**{_verdict(d)}**: {_counts(d)}"]
    for title, entries in _sections(d):
        if entries:
            lines += _markdown_section(title, entries, max_rows)
    return "\n".join(lines) + "\n"

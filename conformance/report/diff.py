"""A RunDiff as console text and as Markdown short enough for a pull-request comment."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

from conformance.gate.diff import Changed, Drift, RunDiff, differing_inputs, differing_outputs
from conformance.gate.sides import Side
from conformance.problems import first_line
from conformance.report.text import cell, code_cell, compact_table, plain
from conformance.results import FAILING, Result, verdict_text

T = TypeVar("T")
# The sections that list tensors by name: their tables' column, and which tensors each names.
_HASHED: Mapping[str, tuple[str, Callable[[Result, Result], tuple[str, ...]]]] = MappingProxyType(
    {"Inputs differ": ("inputs", differing_inputs), "Outputs differ": ("outputs", differing_outputs)}
)


def _status(r: Result) -> str:
    return verdict_text(r.status, r.failure_kind)


def _value(value: Any) -> str:
    return f"{value:.6g}" if isinstance(value, float) else str(value)


def _grown(d: Drift) -> str:
    return ", ".join(f"{name} {_value(old)} → {_value(new)}" for name, old, new in d.metrics)


def _counts(d: RunDiff) -> str:
    pairs = "cases" if d.by_case else "(case, EP) results"
    bits = f", {d.outputs_compared} of them with outputs compared bit for bit" if d.outputs_compared else ""
    return ", ".join(f"{label} {n}" for label, n in d.counts) + f" (of {d.compared} {pairs} in both runs{bits})"


def _side(which: str, s: Side) -> str:
    """ "old: dml (DmlExecutionProvider, DirectML 1.15.4, ...); GPU NVIDIA H100 80GB HBM3, driver 580.159.04" """
    eps = "; ".join(s.described) or "no results"
    return f"{which}: {eps}; GPU {s.gpu}, driver {s.driver}; {s.results} result(s)"


def _sides(d: RunDiff) -> list[str]:
    lines = [_side("old", d.old_side), _side("new", d.new_side)]
    if d.new_gate:
        lines.append(f"the new run's gate: {d.new_gate}")
    if d.by_case:
        lines.append("paired by case (--match case): each new result is compared with the old run's of its case")
    return lines


def _nothing_compared(d: RunDiff) -> str:
    """Why no result was compared, and the way out where the runs are of one EP each, different ones."""
    old, new = d.old_side, d.new_side
    if d.by_case:
        return f"no case in common: the old run has {old.results} result(s), the new run {new.results}"
    line = (
        f"no (case, EP) in common: the old run has {old.results} result(s) on {', '.join(old.eps) or 'no EP'}, "
        f"the new run {new.results} on {', '.join(new.eps) or 'no EP'}"
    )
    if len(old.eps) == len(new.eps) == 1 and old.eps != new.eps:
        line += "; --match case compares them case by case"
    return line


def _removed_note(d: RunDiff) -> str:
    if d.removed_regress:
        return "in the old run, not in the new: each is a regression (--allow-removed accepts them)"
    return "in the old run, not in the new (--allow-removed: not counted)"


def _incomplete(d: RunDiff) -> list[str]:
    """Why the new run fails whatever its results, one line each, as ``report`` says it (incomplete: its results
    cannot vouch for the cases it did not run; a runner death under a pack, which no result stands for)."""
    return [f"the new run fails: {reason}" for reason in d.new_unwaivable]


def _environment(d: RunDiff) -> list[str]:
    if d.environment is None:
        return ["environment: not compared"]
    if not d.environment:
        return ["environment: GPU, driver, onnxruntime, its packages, EPs and platform unchanged"]
    return [change.line for change in d.environment]


def _verdict(d: RunDiff) -> str:
    """The gate's decision and why: which of its rules failed the new run (RunDiff.reasons). FAILED, as ``run``
    says it, not REGRESSED: a diff that fails for removed results alone has no regression, and "REGRESSED ...:
    regressions 0" would read as a contradiction."""
    return f"FAILED — {', '.join(d.reasons)}" if d.regressed else "PASSED — no regressions"


def _sections(d: RunDiff) -> list[tuple[str, Sequence[Any]]]:
    return [
        ("Regressions", d.regressions),
        ("Flaky, tolerated by the waiver file", d.flaky),
        ("Fixes", d.fixes),
        ("Metric drift", d.metric_drift),
        ("Inputs differ", d.inputs_differ),
        ("Outputs differ", d.outputs_differ),
        ("New cases", d.new_cases),
        ("Removed cases", d.removed_cases),
        ("Other changes", d.other_changes),
    ]


def _more(shown: int, total: int) -> list[str]:
    return [f"… and {total - shown} more"] if total > shown else []


def _ep(entry: Changed | Drift) -> str:
    """The EP of a pair: one where both results are of one EP, "old → new" where a case-by-case diff paired two."""
    return entry.new.ep if entry.old.ep == entry.new.ep else f"{entry.old.ep} → {entry.new.ep}"


def _console_entry(entry: Changed | Drift | Result, title: str) -> str:
    if isinstance(entry, Result):
        verb = "now" if title == "New cases" else "was"
        return f"  {plain(entry.case)} [{plain(entry.ep)}]: {verb} {_status(entry)}"
    where = f"{plain(entry.new.case)} [{plain(_ep(entry))}]"
    if isinstance(entry, Drift):
        return f"  {where} {entry.new.status.value}: {_grown(entry)}"
    line = f"  {_status(entry.old)} → {_status(entry.new)}  {where}"
    if title in _HASHED:
        line += f"  ({plain(', '.join(_HASHED[title][1](entry.old, entry.new)))})"
    elif title == "Regressions":
        line += f"\n    {plain(first_line(entry.new.message))}\n    repro: {plain(entry.new.repro)}"
    elif entry.new.status in FAILING:
        line += "  (now failing)"  # e.g. NOT_SUPPORTED -> FAIL: newly run, and wrong
    return line


def render_diff_console(d: RunDiff, max_listed: int = 30) -> str:
    """Which EPs and device each side is, environment changes, then each non-empty section (at most
    ``max_listed`` entries), and last the counts and the verdict, each once: a CI log's reader sees them at its
    end."""
    head = [*_sides(d), *_environment(d)]
    parts = ["\n".join(plain(line) for line in head)]
    if d.nothing_compared:
        parts.append(plain(_nothing_compared(d)))
    parts += [plain(line) for line in _incomplete(d)]
    for title, entries in _sections(d):
        if entries:
            lines = [f"{title} ({len(entries)})"]
            lines += [f"  {_removed_note(d)}"] if title == "Removed cases" else []
            lines += [_console_entry(e, title) for e in entries[:max_listed]]
            parts.append("\n".join(lines + _more(min(len(entries), max_listed), len(entries))))
    parts.append(f"{_counts(d)}\n== {_verdict(d)} ==")
    return "\n\n".join(parts)


def _rows(entries: Sequence[T], row: Callable[[T], list[str]], limit: int) -> list[list[str]]:
    return [row(e) for e in entries[:limit]]


def _where(r: Result) -> list[str]:
    return [cell(r.case), cell(r.ep)]


def _pair(c: Changed | Drift) -> list[str]:
    return [cell(c.new.case), cell(_ep(c))]


def _markdown_section(d: RunDiff, title: str, entries: Sequence[Any], limit: int) -> list[str]:
    if title == "Regressions":
        headers = ["case", "EP", "was", "now", "message", "repro"]
        rows = _rows(
            entries,
            lambda c: [
                *_pair(c),
                _status(c.old),
                _status(c.new),
                cell(first_line(c.new.message)),
                code_cell(c.new.repro),
            ],
            limit,
        )
    elif title == "Metric drift":
        headers = ["case", "EP", "status", "grew"]
        rows = _rows(entries, lambda g: [*_pair(g), g.new.status.value, _grown(g)], limit)
    elif title in _HASHED:
        column, names = _HASHED[title]
        headers = ["case", "EP", "was", "now", column]
        rows = _rows(
            entries, lambda c: [*_pair(c), _status(c.old), _status(c.new), cell(", ".join(names(c.old, c.new)))], limit
        )
    elif title in ("New cases", "Removed cases"):
        headers = ["case", "EP", "status"]
        rows = _rows(entries, lambda r: [*_where(r), _status(r)], limit)
    else:
        headers = ["case", "EP", "was", "now"]
        rows = _rows(entries, lambda c: [*_pair(c), _status(c.old), _status(c.new)], limit)
    # A blank line ends the table: GFM would take a line right under it for one more row.
    more = ["", *_more(len(rows), len(entries))] if len(entries) > len(rows) else []
    note = [_removed_note(d), ""] if title == "Removed cases" else []
    return ["", f"## {title} ({len(entries)})", "", *note, compact_table(rows, headers), *more]


def render_diff_markdown(d: RunDiff, max_rows: int = 20) -> str:
    """A PR comment: which EPs and device each side is, environment changes, counts, then each non-empty section
    capped at ``max_rows`` rows."""
    head = [*_sides(d), *_environment(d)]
    lines = ["# DirectML conformance diff", "", *(f"- {cell(line)}" for line in head)]
    lines += ["", f"**{_verdict(d)}**: {_counts(d)}"]
    lines += ["", cell(_nothing_compared(d))] if d.nothing_compared else []
    lines += [line for reason in _incomplete(d) for line in ("", cell(reason))]
    for title, entries in _sections(d):
        if entries:
            lines += _markdown_section(d, title, entries, max_rows)
    return "\n".join(lines) + "\n"

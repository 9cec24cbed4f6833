"""The HTML report: one self-contained file (inline CSS and SVG, no script, no external asset) that a driver
engineer opens when a run turns red. The data comes from ``summary`` and each result's ``details``; this module
only formats it, and every string from a case file or an EP passes through ``html.escape``.

Order: the verdict and who ran it (device, driver, versions, feature level, command), the operator by data type by
EP matrix, the known-failure gate when a waiver file was given, every FAIL/ERROR/QUALITY_WARNING in detail
(parameters, pictures, the first mismatches, the reproduction command, the full message), then the results that
gave no verdict (NOT_SUPPORTED, NOT_EXPRESSIBLE), grouped by reason.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from conformance.gate.summary import Summary
from conformance.gate.waivers import Gate, overall_failed, waived_keys
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.svg import mismatch_map, ulp_histogram
from conformance.results import Result

FAULTS = (Status.CRASH, Status.TIMEOUT, Status.DEVICE_LOST)
ORDER = (
    Status.FAIL,
    Status.FLAKY,
    *FAULTS,
    Status.ERROR,
    Status.QUALITY_WARNING,
    Status.NOT_SUPPORTED,
    Status.NOT_EXPRESSIBLE,
)
DETAILED = frozenset({Status.FAIL, Status.FLAKY, *FAULTS, Status.ERROR, Status.QUALITY_WARNING})
COLOURS = {
    Status.PASS: "#2e7d32",
    Status.FAIL: "#c62828",
    Status.FLAKY: "#ad1457",
    Status.ERROR: "#6a1b9a",
    Status.CRASH: "#000000",
    Status.TIMEOUT: "#000000",
    Status.DEVICE_LOST: "#000000",
    Status.QUALITY_WARNING: "#ef6c00",
    Status.NOT_SUPPORTED: "#757575",
    Status.NOT_EXPRESSIBLE: "#757575",
    Status.INVALID: "#1565c0",
}
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#212121}
h1{margin:.2em 0}h2{border-bottom:2px solid #e0e0e0;margin-top:1.8em}h3{margin:.2em 0;font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #e0e0e0;padding:2px 8px;text-align:left}
th{background:#f5f5f5}code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#fafafa;padding:.6em;
overflow-x:auto;border:1px solid #eee}
dl.params{display:grid;grid-template-columns:max-content auto;gap:0 1em;margin:.3em 0}
dt{font-weight:600}dd{margin:0}.badge{color:#fff;border-radius:3px;padding:0 6px;font-weight:600;font-size:12px}
article{border:1px solid #e0e0e0;border-left:6px solid var(--c);padding:.6em 1em;margin:1em 0}
.verdict{font-size:1.2em;font-weight:600}.pictures{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-end}
td.n{text-align:right}figure{margin:0;max-width:600px}figcaption{font-size:11px;color:#555}
.cell{white-space:nowrap}.tie td{font-family:ui-monospace,monospace}
"""


def _status(status: Status | None, text: str | None = None) -> str:
    if status is None:
        return "—"
    return f'<span class="badge" style="background:{COLOURS[status]}">{escape(text or status.value)}</span>'


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (then the caller built them from escaped parts)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _header(summary: Summary, gate: Gate | None, red: bool) -> str:
    totals = ", ".join(
        f"{summary.totals[s]} {s.value}" for s in (*ORDER, Status.PASS, Status.INVALID) if s in summary.totals
    )
    verdict = "FAILED" if red else "PASSED"
    lines = "".join(f"<dt>{escape(what)}</dt><dd>{escape(which)}</dd>" for what, which in summary.identity)
    if gate is not None:
        known = f"{len(gate.expected_failures)} known failure(s) waived, {len(gate.unexpected_failures)} unexpected"
        totals += f" ({known})"
    placement = f"<p>{escape(summary.placement.line)}</p>" if summary.placement else ""
    return (
        f'<header><h1>DirectML conformance</h1><p class="verdict">'
        f"{_status(Status.FAIL if red else Status.PASS, verdict)} {escape(totals)}</p>"
        f'<dl class="params">{lines}</dl>{placement}</header>'
    )


def _matrix(results: Sequence[Result], eps: Sequence[str]) -> str:
    """Operator and data type rows, one column per EP; a cell counts its statuses and takes the worst one's colour."""
    cells: dict[tuple[str, str], dict[str, Counter[Status]]] = defaultdict(lambda: defaultdict(Counter))
    for r in results:
        cells[(r.operator, r.data_type or "—")][r.ep][r.status] += 1
    rows = []
    for (operator, data_type), by_ep in sorted(cells.items()):
        row = [escape(operator), escape(data_type)]
        for ep in eps:
            counts = by_ep.get(ep, Counter())
            shown = (*ORDER, Status.PASS, Status.INVALID)
            row.append(" ".join(_status(s, f"{counts[s]} {s.value}") for s in shown if counts[s]) or "—")
        rows.append(row)
    return "<h2 id=matrix>Operator, data type and EP</h2>" + _table(["operator", "data type", *eps], rows, raw=True)


def _gate(gate: Gate) -> str:
    def waiver_text(reason: str, tracking: str) -> str:
        return f'{escape(reason)} (<a href="{escape(tracking)}">{escape(tracking)}</a>)'

    rows = [
        [_status(r.status), escape(r.case), escape(r.ep), waiver_text(w.reason, w.tracking)]
        for r, w in gate.expected_failures
    ]
    rows += [
        [_status(Status.FAIL, "UNEXPECTED PASS"), escape(r.case), escape(r.ep), waiver_text(w.reason, w.tracking)]
        for r, w in gate.unexpected_passes
    ]
    stale = "".join(
        f"<li><code>{escape(w.case)}</code> on {escape(w.ep)} ({escape(str(w.pos))})</li>" for w in gate.stale
    )
    counts = (
        f"{len(gate.expected_failures)} known failure(s), {len(gate.unexpected_failures)} unexpected failure(s), "
        f"{len(gate.unexpected_passes)} unexpected pass(es), {len(gate.stale)} stale waiver(s)"
    )
    stale_part = f"<p>Waivers that matched nothing:</p><ul>{stale}</ul>" if stale else ""
    table = _table(["status", "case", "EP", "waiver"], rows, raw=True)
    return (
        f"<h2 id=gate>Known failures</h2><p>{escape(counts)}</p>"
        f"<details><summary>the {len(rows)} waived or unexpectedly passing result(s)</summary>{table}</details>"
        + stale_part
    )


def _pictures(details: Mapping[str, Any]) -> str:
    pictures = []
    if details.get("ulp_histogram"):
        pictures.append(ulp_histogram(details["ulp_histogram"], details.get("max_ulp")))
    if details.get("shape") is not None and details.get("positions"):
        pictures.append(mismatch_map(details["shape"], details["positions"], int(details.get("mismatches", 0))))
    return f'<div class="pictures">{"".join(pictures)}</div>' if pictures else ""


def _some(values: Sequence[object], total: int | None = None, shown: int = 24) -> str:
    """A list as text, cut after ``shown`` items with how many more there are (of ``total`` when the list itself
    was already cut)."""
    total = len(values) if total is None else total
    more = f", … ({total - shown} more)" if total > shown else ""
    return "[" + ", ".join(str(v) for v in values[:shown]) + more + "]"


def _sequence(details: Mapping[str, Any]) -> str:
    """TOP_K1's first failing sequence: the input, then each side's values and indices, tied elements marked."""
    seq = details.get("sequence")
    if not seq:
        return ""
    tied = {i for tie in details.get("ties", []) for i in tie["tied_at"] if isinstance(i, int)}
    cells = "".join(
        f"<td{' style=background:#fff3e0' if i in tied else ''}>{escape(v)}</td>" for i, v in enumerate(seq["input"])
    )
    rows = [f"<tr><th>input index</th>{''.join(f'<td>{i}</td>' for i in range(len(seq['input'])))}</tr>"]
    rows.append(f"<tr><th>input</th>{cells}</tr>")
    for side in ("expected", "actual"):
        values = "".join(f"<td>{escape(v)}</td>" for v in seq[f"{side}_values"])
        indices = "".join(f"<td>{int(i)}</td>" for i in seq[f"{side}_indices"])
        rows.append(f"<tr><th>{side} values</th>{values}</tr><tr><th>{side} indices</th>{indices}</tr>")
    shown = f" (first {len(seq['input'])} of {seq['input_size']})" if seq["input_size"] > len(seq["input"]) else ""
    ties = "".join(
        f"<li>{escape(str(t['value']))} is tied at input indices {escape(_some(t['tied_at'], t.get('tied_count')))}"
        f": the spec's order selects {escape(str(t['expected']))}, the EP gave {escape(str(t['actual']))}</li>"
        for t in details.get("ties", [])
    )
    why = "".join(f"<li>{escape(line)}</li>" for line in seq.get("why", []))
    return (
        f"<p>First failing sequence, {escape(seq['where'])}{escape(shown)}; tied elements shaded:</p>"
        f'<div style="overflow-x:auto"><table class="tie">{"".join(rows)}</table></div><ul>{ties or why}</ul>'
    )


def _article(index: int, r: Result, waived: Mapping[tuple[str, str], str]) -> str:
    params = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in r.parameters.items())
    about = [
        ("lowering", r.lowering or "—"),
        ("DML operator", r.dml_operator or "—"),
        ("feature level", r.feature_level),
    ]
    params += "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in about)
    details = r.details
    table = details.get("table")
    mismatches = _table(table["headers"], table["rows"]) if table else ""
    kind = f" ({r.failure_kind})" if r.failure_kind else ""
    repro = f"<p>Reproduce: <code>{escape(r.repro)}</code></p>" if r.repro else ""
    known = waived.get((r.case, r.ep))
    waiver = f"<p>{_status(Status.NOT_SUPPORTED, 'KNOWN FAILURE')} {escape(known)}</p>" if known else ""
    return (
        f'<article id="r{index}" style="--c:{COLOURS[r.status]}"><h3>{_status(r.status)}{escape(kind)} '
        f"<code>{escape(r.case)}</code> on {escape(r.ep)}</h3>{waiver}<p>{escape(first_line(r.message, 400))}</p>"
        f'<dl class="params">{params}</dl>{_pictures(details)}{_sequence(details)}{mismatches}'
        f"{repro}"
        f"<details><summary>full message</summary><pre>{escape(r.message)}</pre></details></article>"
    )


def _declined(results: Sequence[Result]) -> str:
    """NOT_SUPPORTED and NOT_EXPRESSIBLE, grouped by EP, status and reason (their first message line)."""
    groups: dict[tuple[str, Status, str], list[str]] = defaultdict(list)
    for r in results:
        if r.status in (Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE):
            groups[(r.ep, r.status, first_line(r.message, 200))].append(r.case)
    if not groups:
        return ""
    rows = [
        [
            escape(ep),
            _status(status),
            escape(reason),
            str(len(cases)),
            "<details><summary>cases</summary>" + "<br>".join(escape(c) for c in cases) + "</details>",
        ]
        for (ep, status, reason), cases in sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0]))
    ]
    return "<h2 id=declined>No verdict: not supported or not expressible</h2>" + _table(
        ["EP", "status", "reason", "results", "cases"], rows, raw=True
    )


def _skipped(problems: Sequence[str]) -> str:
    """The case files a --keep-going run skipped: none of their cases ran, so the run fails."""
    if not problems:
        return ""
    items = "".join(f"<li><code>{escape(line)}</code></li>" for line in problems)
    return f"<h2 id=skipped>Case files skipped for their problems ({len(problems)})</h2><ul>{items}</ul>"


def _packed(differences: Sequence[str]) -> str:
    """The cases whose verdict packed with others differed from their own (Result.packed)."""
    if not differences:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in differences)
    return (
        f"<h2 id=packed>Verdicts that differed when packed ({len(differences)})</h2><p>Each case's verdict above is "
        f"its own, from a session of its own; packed with other cases the EP gave another, so its result depended "
        f"on the model's other nodes.</p><ul>{items}</ul>"
    )


def render_html(summary: Summary, results: Sequence[Result], gate: Gate | None = None) -> str:
    """The whole report as one HTML document."""
    detailed = [r for r in results if r.status in DETAILED]
    detailed.sort(key=lambda r: (ORDER.index(r.status), r.operator, r.case, r.ep))
    waived = waived_keys(gate) if gate is not None else {}
    index = "".join(
        f'<li><a href="#r{i}">{_status(r.status)} {escape(r.case)} on {escape(r.ep)}</a>'
        f"{' (known failure)' if (r.case, r.ep) in waived else ''}</li>"
        for i, r in enumerate(detailed)
    )
    red = overall_failed(summary, gate)
    parts = [
        _header(summary, gate, red),
        _matrix(results, summary.eps),
        _gate(gate) if gate is not None else "",
        f"<h2 id=failures>Failures and warnings ({len(detailed)})</h2><ol>{index}</ol>" if detailed else "",
        "".join(_article(i, r, waived) for i, r in enumerate(detailed)),
        _skipped(summary.skipped_files),
        _packed(summary.packed_differences),
        _declined(results),
    ]
    title = "DirectML conformance: " + ("FAILED" if red else "PASSED")
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{CSS}</style></head>'
        f"<body>{''.join(parts)}</body></html>\n"
    )

"""The HTML report: one self-contained file (inline CSS, SVG and one small script for the filter, no external asset)
that a driver engineer opens when a run turns red. The data comes from ``summary``, ``verdict`` and each result's
``details``; this module only formats it, and every string from a case file or an EP passes through ``html.escape``.

Order: the verdict with what decided it, the totals (waived failures counted apart as known), and who ran it
(device, driver, versions, feature level, command, when, which harness); what the run lacks when it is incomplete;
the operator by data type by EP matrix, whose cells link to their results; where triage judged failures, how many
each owner has; a filter (text; status, EP, failure kind, whose, unexpected or known); the unexpected failures,
grouped by signature and open; the known failures, waived, in one closed group; the warnings; the results that gave
no verdict (NOT_SUPPORTED, NOT_EXPRESSIBLE), grouped by reason; then every pass, one short row each, so that the
filter finds any result. Each failure is one line (status, kind, whose where triaged, case, reason, time, its
--artifacts folder) that opens on its details: parameters, triage's re-runs, pictures, the first mismatches, the
reproduction command and the full message.

The page stays bounded however many results the run has: past MAX_ROWS failures and warnings, and past MAX_NAMES
other results listed by name, each group lists only its first results and says how many more it holds, and the top
of the page says, once, how many of the result rows it lists; the counts (header, matrix, filter, groups) still count
every result, and results.json holds them all.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any
from urllib.parse import urlsplit

from conformance.gate.summary import (
    NO_VERDICT,
    OK,
    STATUS_ORDER,
    Summary,
    death_reason,
    death_verdict,
    fails_the_run,
    plural,
    severity,
    unexercised_line,
)
from conformance.gate.verdict import Findings, Group, Verdict, decide, findings, whose
from conformance.gate.waivers import STALE_WHY, Gate, Waiver, near_miss_keys
from conformance.model import Status
from conformance.problems import first_line
from conformance.report.svg import mismatch_map, ulp_histogram
from conformance.results import FAILING, Result, verdict_text
from conformance.whose import MEANING, Triage

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
# What the filter's toggles select on: a row's data-status, data-ep, data-kind, where triage judged it data-whose,
# and with a waiver file data-gate (unexpected or known); a row without the attribute takes its group's (a pass's
# status and EP), and one that neither has is not filtered on it.
FACETS = ("status", "ep", "kind", "whose", "gate")
REASON_LENGTH = 160  # characters of a failure's first message line on its row
# The page's bounds, in rows that each list one result (a group cut by them lists its first results, at least one,
# and says how many more it holds). Two kinds, since their weights differ a hundredfold: a failure's or a warning's
# row carries its details (pictures, first mismatches, message), 5 to 12 KB on the committed runs, while a pass,
# a result without a verdict, a runner death's case in flight or a packed verdict is its name, about 60 bytes. The
# largest committed runs (13,552 results: 523 failures and warnings, some 13,000 other results) stay whole, every
# result there for the filter; a larger run's page stays near 1000 x 5-12 KB plus 20,000 x 60 B whatever its size
# (benchmarks/report_scale.py: 6.3 MB at 100,000 results, which headless Chromium loads and filters in about 3 s,
# where listing every result made 28 MB, growing with the run).
MAX_ROWS = 1000  # failures' and warnings' rows, about twice the committed runs' most
MAX_NAMES = 20_000  # the other results' rows, one name each, about 1.5 times the committed runs' most
CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5em auto;max-width:1320px;padding:0 1em;color:#212121}
h1{margin:.2em 0}h2{border-bottom:2px solid #e0e0e0;margin-top:1.6em}h3{margin:.2em 0;font-size:1.05em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #e0e0e0;padding:2px 8px;text-align:left}
th{background:#f5f5f5}code,pre{font:12px/1.4 ui-monospace,monospace}pre{background:#fafafa;padding:.6em;
overflow-x:auto;border:1px solid #eee;white-space:pre-wrap}[hidden]{display:none!important}
dl.params{display:grid;grid-template-columns:max-content auto;gap:0 1em;margin:.3em 0}
dd{margin:0;overflow-wrap:anywhere}dt{font-weight:600}
.badge{color:#fff;border-radius:3px;padding:0 6px;font-weight:600;font-size:12px;white-space:nowrap}
a.badge{text-decoration:none}a.badge:hover{outline:2px solid #212121}
.verdict{font-size:1.25em;font-weight:600;border-left:8px solid var(--c);background:#fafafa;padding:.4em .8em;
margin:.6em 0}
.verdict .badge{font-size:1em;padding:1px 8px}.totals .badge{margin-right:2px}
.incomplete{border:2px solid #c62828;background:#ffebee;padding:.4em 1em;margin:.8em 0}
nav a{margin-right:1.2em}
.filters{position:sticky;top:0;z-index:2;background:#fff;border-bottom:1px solid #e0e0e0;padding:.5em 0;margin-top:1em}
.filters input[type=search]{width:28em;font:inherit;padding:2px 6px}.facet{margin:.25em 0}.facet b{display:inline-block;
width:4.5em}.chip{display:inline-block;border:1px solid #e0e0e0;border-radius:12px;padding:0 8px 0 4px;margin:1px 2px;
font-size:12px;white-space:nowrap;cursor:pointer}.chip small{color:#757575}
section.group{border:1px solid #e0e0e0;border-left:6px solid var(--c);margin:.6em 0;padding:.2em .8em}
section.group>details>summary{cursor:pointer;padding:.2em 0;font-weight:600}
.note{display:block;margin:.2em 0 .2em 1.2em;font-weight:400}
.muted{color:#616161;font-weight:400}details.row{border-top:1px solid #f0f0f0}details.row>summary{cursor:pointer;
padding:2px 0;list-style-position:outside;margin-left:1.2em}
.line{display:inline-grid;grid-template-columns:12.5em minmax(0,5fr) minmax(0,6fr) 4.5em auto;gap:.8em;
width:calc(100% - 1em);vertical-align:top}.line .kind{color:#616161;font-size:12px;overflow-wrap:anywhere}
.line code{overflow-wrap:anywhere;color:#212121}.line .why{color:#424242;overflow-wrap:anywhere}
.line .t{text-align:right}.line.w{grid-template-columns:12.5em 7.5em minmax(0,5fr) minmax(0,6fr) 4.5em auto}
.whose{font-size:12px;overflow-wrap:anywhere}
ul.ids{margin:.2em 0 .4em;padding:0;list-style:none;columns:3 24em;font:12px/1.5 ui-monospace,monospace}
ul.ids::before{content:attr(data-path);display:block;column-span:all;color:#616161}
ul.ids>li{overflow-wrap:anywhere}ul.ids:not(:has(>li:not([hidden]))){display:none}
details.row>article{margin:.3em 0 .8em 1.2em;padding:.5em 1em;background:#fcfcfc;border-left:3px solid var(--c)}
details.waived{border:1px solid #e0e0e0;padding:.3em .8em;margin:1em 0}details.waived>summary{cursor:pointer;
font-size:1.15em;font-weight:600}.pictures{display:flex;gap:2em;flex-wrap:wrap;align-items:flex-start}
figure{margin:0;max-width:640px}figcaption{font-size:12px;color:#555}.cell{white-space:nowrap}
.tie td{font-family:ui-monospace,monospace}td.n{text-align:right}
p.more{margin:.3em 0 .6em 1.2em;color:#616161}p.cut{border-left:6px solid #757575;background:#fafafa;padding:.3em .8em}
"""
# The filter: rows (data-row) are shown when their status, EP, kind, whose and gate are toggled on and their text
# holds what the box holds; a group whose rows are all hidden hides; typing opens the groups that match. The query
# string sets a first filter (report.html?q=tie&status=FAIL,ERROR&ep=dml); a link to an anchor opens the groups
# around it. A row counts its data-n results (a no-verdict row its cases; a cut group's note, data-more, the results
# it does not list, which the toggles count but the text box cannot search).
SCRIPT = """
(function () {
  var box = document.getElementById("q");
  var toggles = Array.prototype.slice.call(document.querySelectorAll("input[data-facet]"));
  var rows = Array.prototype.slice.call(document.querySelectorAll("[data-row]"));
  var groups = Array.prototype.slice.call(document.querySelectorAll("section.group"));
  var shown = document.getElementById("shown");
  var texts = new Map();
  var facets = new Map();
  function text(row) {
    // A pass's row holds its case's name; its list holds the case file's path, so that a whole id matches too. A
    // note of unlisted results has no text to match: none of its results is on the page.
    if ("more" in row.dataset) { return ""; }
    if (!texts.has(row)) {
      var path = row.parentElement.dataset.path;
      texts.set(row, ((path ? path + "::" : "") + row.textContent).toLowerCase());
    }
    return texts.get(row);
  }
  function facet(row, name) {
    // A row's own value, else its group's: a pass's status and EP are its group's.
    var cached = facets.get(row) || {};
    facets.set(row, cached);
    if (!(name in cached)) {
      var group = row.closest("section.group");
      cached[name] = name in row.dataset ? row.dataset[name] : group ? group.dataset[name] : undefined;
    }
    return cached[name];
  }
  function openAround(element) {
    for (var e = element; e; e = e.parentElement) { if (e.tagName === "DETAILS") { e.open = true; } }
  }
  function apply() {
    var on = {};
    toggles.forEach(function (t) { (on[t.dataset.facet] = on[t.dataset.facet] || {})[t.value] = t.checked; });
    var words = box.value.trim().toLowerCase();
    var count = 0;
    rows.forEach(function (row) {
      var visible = Object.keys(on).every(function (f) {
        var value = facet(row, f);
        return value === undefined || !on[f] || on[f][value] !== false;
      }) && (!words || text(row).indexOf(words) >= 0);
      row.hidden = !visible;
      if (visible) { count += Number(row.dataset.n || 1); }
    });
    groups.forEach(function (group) {
      var visible = group.querySelectorAll("[data-row]:not([hidden])");
      group.hidden = visible.length === 0;
      var results = 0;
      visible.forEach(function (row) { results += Number(row.dataset.n || 1); });
      var part = group.querySelector(".part");
      if (part) { part.textContent = results < Number(group.dataset.n) ? results + " shown of " : ""; }
      if (words && visible.length) { openAround(visible[0].parentElement); }
    });
    shown.textContent = count;
  }
  var query = new URLSearchParams(window.location.search);
  if (query.has("q")) { box.value = query.get("q"); }
  toggles.forEach(function (t) {
    if (query.has(t.dataset.facet)) { t.checked = query.get(t.dataset.facet).split(",").indexOf(t.value) >= 0; }
    t.addEventListener("change", apply);
  });
  box.addEventListener("input", apply);
  function follow() {
    var target = window.location.hash ? document.getElementById(window.location.hash.slice(1)) : null;
    if (target) { openAround(target); target.scrollIntoView(); }
  }
  window.addEventListener("hashchange", follow);
  apply();
  follow();
})();
"""


# A waived failure's badge ("KNOWN FAILURE", "106 known"): the grey of a result that fails no gate.
KNOWN = Status.NOT_SUPPORTED


def _colour(status: Status) -> str:
    """A status's colour; one the table does not name (a status added to the enum) takes its family's."""
    return COLOURS.get(status) or ("#b71c1c" if status in FAILING else "#757575")


def _status(status: Status | None, text: str | None = None, href: str | None = None, title: str = "") -> str:
    if status is None:
        return "—"
    tag, link = ("a", f' href="{escape(href)}"') if href else ("span", "")
    tip = f' title="{escape(title)}"' if title else ""
    return (
        f'<{tag} class="badge"{link}{tip} style="background:{_colour(status)}">{escape(text or status.value)}</{tag}>'
    )


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]], raw: bool = False) -> str:
    """A table; cells are escaped unless ``raw`` (then the caller built them from escaped parts)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c if raw else escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _seconds(seconds: float) -> str:
    """A case's time: "35 ms", "1.25 s"; "—" where none was recorded."""
    if not math.isfinite(seconds) or seconds <= 0:
        return "—"
    return f"{round(seconds * 1000)} ms" if seconds < 1 else f"{seconds:.2f} s"


def _facts(summary: Summary) -> str:
    """Device and software, then how the run was made; the command as code, ready to copy."""
    lines = [*summary.identity, *summary.run]
    return "".join(
        f"<dt>{escape(what)}</dt><dd>{f'<code>{escape(which)}</code>' if what == 'command' else escape(which)}</dd>"
        for what, which in lines
    )


def _totals(summary: Summary, gate: Gate | None) -> str:
    """A badge per status; with a waiver file the failures it waives are counted apart, in one grey "N known"
    badge after the failing statuses, so that a gate that passed shows no red count beside PASSED."""
    known = Counter(r.status for r, _ in gate.expected_failures) if gate is not None else Counter()
    badges = [
        (severity(s), _status(s, f"{summary.totals[s] - known[s]} {s.value}"))
        for s in summary.totals
        if summary.totals[s] > known[s]
    ]
    if known:
        waived = ", ".join(f"{known[s]} {s.value}" for s in sorted(known, key=severity))
        title = f"known failures the waiver file waives: {waived}"
        # After every failing status and before the other verdicts: severity's rank 1 is the failing statuses'.
        after_failing = (1, len(STATUS_ORDER))
        badges.append((after_failing, _status(KNOWN, f"{known.total()} known", "#waived", title)))
    return " ".join(badge for _, badge in sorted(badges, key=lambda item: item[0]))


def _header(summary: Summary, verdict: Verdict, gate: Gate | None, found: Findings, passed: int) -> str:
    colour = _colour(Status.PASS if verdict.passed else Status.FAIL)
    badge = f'<span class="badge" style="background:{colour}">{escape(verdict.label)}</span>'
    reasons = f" — {escape(verdict.because)}" if verdict.reasons else ""
    totals = _totals(summary, gate)
    placement = f"<p>{escape(summary.placement.line)}</p>" if summary.placement else ""
    if summary.unexercised:
        placement += f"<p>{escape(unexercised_line(summary))}</p>"
    links = [("matrix", "matrix")]
    if found.triaged:
        links.append(("whose", "whose"))
    failures = "unexpected failures" if gate is not None else "failures"
    links.append(("unexpected", f"{failures} ({sum(len(g.results) for g in found.unexpected)})"))
    if gate is not None:
        links.append(("waived", f"known failures ({sum(len(g.results) for g in found.waived)})"))
    if found.warnings:
        links.append(("warnings", f"warnings ({sum(len(g.results) for g in found.warnings)})"))
    links.append(("declined", "no verdict"))
    links.append(("passes", f"passes ({passed})"))
    nav = "".join(f'<a href="#{anchor}">{escape(text)}</a>' for anchor, text in links)
    return (
        f'<header><h1>DirectML conformance</h1><p class="verdict" style="--c:{colour}">{badge}{reasons}</p>'
        f'<p class="totals">{totals or "no results"}</p><nav>{nav}</nav>'
        f'<dl class="params">{_facts(summary)}</dl>{placement}</header>'
    )


def _incomplete(summary: Summary) -> str:
    """What the run lacks: interrupted, case files skipped (--keep-going), EPs that executed nothing."""
    completeness = summary.completeness
    skipped = completeness.skipped_line
    if completeness.complete:
        return f"<p>{escape(skipped)}</p>" if skipped else ""
    reasons = "".join(f"<li>{escape(line)}</li>" for line in completeness.reasons)
    problems = "".join(f"<li><code>{escape(line)}</code></li>" for line in completeness.problems)
    listed = f"<p>The case files' problems:</p><ul>{problems}</ul>" if problems else ""
    return (
        f'<div class="incomplete" id="incomplete"><p><b>This run is incomplete, so it fails whatever its verdicts: '
        f"results that never ran cannot pass.</b></p><ul>{reasons}</ul>{listed}"
        f"{f'<p>{escape(skipped)}</p>' if skipped else ''}</div>"
    )


def _runner_deaths(summary: Summary, listed: Sequence[int]) -> str:
    """Each EP whose runner died: the reason (cases in flight) and what it means for the run, every case in flight,
    and the runner's last stderr lines."""
    deaths = summary.environment.runner_deaths
    if not deaths:
        return ""
    items = "".join(
        f"<li>{escape(death_reason(death))}: {escape(death_verdict(death))}<details><summary>cases in flight "
        f"({len(death.cases)}) and the last stderr lines"
        f"</summary><ul>{''.join(f'<li><code>{escape(case)}</code></li>' for case in death.cases[:shown])}"
        f"{_unlisted_item(len(death.cases) - shown, 'case in flight', 'cases in flight')}</ul>"
        f"<pre>{escape(chr(10).join(death.stderr))}</pre></details></li>"
        for death, shown in zip(deaths, listed, strict=True)
    )
    if not any(fails_the_run(death) for death in deaths):
        return f'<div id="runner-deaths"><p>Runner deaths:</p><ul>{items}</ul></div>'
    return (
        '<div class="incomplete" id="runner-deaths"><p><b>A runner died while serving packs of cases, so the run '
        f"fails whatever its verdicts and its waivers.</b></p><ul>{items}</ul></div>"
    )


def _anchors(found: Findings) -> dict[Group, str]:
    return {group: f"g{index}" for index, group in enumerate(found.groups)}


def _known_badge(status: Status, text: str, href: str | None, title: str) -> str:
    """A waived count: the status's colour on white, beside the unexpected count in full colour."""
    colour = _colour(status)
    tag, link = ("a", f' href="{escape(href)}"') if href else ("span", "")
    style = f"color:{colour};background:#fff;border:1px solid {colour}"
    return f'<{tag} class="badge"{link} title="{escape(title)}" style="{style}">{escape(text)}</{tag}>'


def _matrix(summary: Summary, found: Findings, anchors: Mapping[Group, str], passed: PassAnchors) -> str:
    """Operator and data type rows, one column per EP; each status's count in a cell links to its first group of
    failures, the known (waived) ones counted apart, to the no-verdict table, or to its list of passes."""
    first: dict[tuple[str, str, str, Status, bool], str] = {}
    kinds: dict[tuple[str, str, str, Status, bool], list[str]] = defaultdict(list)
    known: Counter[tuple[str, str, str, Status]] = Counter()
    for group in found.groups:
        key = (group.operator, group.data_type, group.ep, group.status, bool(group.waivers))
        first.setdefault(key, anchors[group])
        kinds[key].append(f"{len(group.results)} {group.kind}")
        known[key[:4]] += len(group.results) if group.waivers else 0
    cells: dict[tuple[str, str], dict[str, Mapping[Status, int]]] = defaultdict(dict)
    for operator, data_type, ep, counts in summary.by_data_type:
        cells[(operator, data_type)][ep] = counts
    rows = []
    for (operator, data_type), by_ep in cells.items():
        row = [escape(operator), escape(data_type)]
        for ep in summary.eps:
            counts = by_ep.get(ep, {})
            badges = []
            for s in sorted(counts, key=severity):
                key = (operator, data_type, ep, s, False)
                waived = known[key[:4]]
                if counts[s] > waived:
                    href = f"#{first[key]}" if key in first else "#declined" if s in NO_VERDICT else None
                    href = f"#{passed[(s, operator, ep)]}" if (s, operator, ep) in passed else href
                    badges.append(_status(s, f"{counts[s] - waived} {s.value}", href, ", ".join(kinds.get(key, []))))
                if waived:
                    key = (*key[:4], True)
                    title = "known failures: " + ", ".join(kinds[key])
                    badges.append(_known_badge(s, f"{waived} known {s.value}", f"#{first[key]}", title))
            row.append(" ".join(badges) or "—")
        rows.append(row)
    return "<h2 id=matrix>Operator, data type and EP</h2>" + _table(["operator", "data type", *summary.eps], rows, True)


def _mode_matrix(summary: Summary) -> str:
    """The execution modes (gate/summary.py's mode_columns): each mode's outputs against the defaults' bit for bit,
    and its verdicts against the oracle."""
    if not summary.modes:
        return ""
    rows = []
    for column in summary.modes:
        equal = "the reference" if column.base else str(column.executed - column.mismatched)
        mismatched = "—" if column.base else str(column.mismatched)
        badges = " ".join(
            _status(s, f"{column.verdicts[s]} {s.value}", None, "") for s in sorted(column.verdicts, key=severity)
        )
        rows.append([escape(column.ep), escape(column.modes), str(column.executed), equal, mismatched, badges])
    head = ["EP", "modes", "executed", "bit-equal to the defaults", "mode_mismatch", "verdicts"]
    return "<h2 id=modes>Execution modes</h2>" + _table(head, rows, True)


def _facet_order(facet: str) -> Callable[[tuple[str, int]], Any]:
    """Statuses most severe first; EPs and kinds with most results first."""
    if facet == "status":
        return lambda item: severity(Status(item[0]))
    if facet == "gate":
        return lambda item: item[0] != "unexpected"
    return lambda item: (-item[1], item[0])


def _facet_values(
    found: Findings, declined: Sequence[tuple[tuple[str, Status, str, str], list[str]]], passed: Passes, gated: bool
) -> str:
    """The filter: a text box, and a toggle for each status, EP and failure kind among the rows, for each owner
    where triage judged failures, and with a waiver file for unexpected and known failures, each with its count."""
    counts: dict[str, Counter[str]] = {facet: Counter() for facet in FACETS}
    for group in found.groups:
        for facet, value in (("status", group.status.value), ("ep", group.ep), ("kind", group.kind)):
            counts[facet][value] += len(group.results)
        if group.whose is not None:
            counts["whose"][group.whose.value] += len(group.results)
    for gate_value, groups in (("unexpected", found.unexpected), ("known", found.waived)) if gated else ():
        counts["gate"][gate_value] += sum(len(g.results) for g in groups)
    for (ep, status, kind, _), cases in declined:
        for facet, value in (("status", status.value), ("ep", ep), ("kind", kind)):
            counts[facet][value] += len(cases)
    for (status, _, ep), members in passed.items():
        counts["status"][status.value] += len(members)
        counts["ep"][ep] += len(members)
    total = sum(counts["status"].values())
    lines = []
    for facet in (f for f in FACETS if counts[f]):
        chips = "".join(
            f'<label class="chip"><input type="checkbox" data-facet="{facet}" value="{escape(value)}" checked> '
            f"{escape(value)} <small>{n}</small></label>"
            for value, n in sorted(counts[facet].items(), key=_facet_order(facet))
        )
        lines.append(f'<div class="facet"><b>{facet}</b>{chips}</div>')
    return (
        '<div class="filters"><input type="search" id="q" placeholder="filter: case id, operator, message, anything '
        f'shown" aria-label="filter"> showing <span id="shown">{total}</span> of {total} results'
        f"{''.join(lines)}</div>"
    )


def _short_link(url: str) -> str:
    """A tracking address as link text a reader takes in: without the scheme, a long path cut in its middle
    ("github.com/microsoft/onnxruntime/…/math/topk_impl.cuh"); the link itself is the whole address."""
    parts = urlsplit(url)
    segments = [s for s in parts.path.split("/") if s]
    text = "/".join([parts.netloc, *segments])
    if len(text) > 60 and len(segments) > 4:
        text = "/".join([parts.netloc, *segments[:2], "…", *segments[-2:]])
    return text + (f"#{parts.fragment}" if parts.fragment else "")


def _places(waivers: Sequence[Waiver]) -> str:
    """Where the waiver file gives a reason: "known-failures.yaml:32, 38, 56 and 4 more"."""
    by_file: dict[str, list[int]] = defaultdict(list)
    for waiver in waivers:
        by_file[waiver.pos.path].append(waiver.pos.line)
    texts = []
    for path, lines in by_file.items():
        shown = ", ".join(str(line) for line in sorted(lines)[:3])
        texts.append(f"{path}:{shown}" + (f" and {len(lines) - 3} more" if len(lines) > 3 else ""))
    return "; ".join(texts)


def _waiver_note(reason: str, tracking: str, waivers: Sequence[Waiver]) -> str:
    """A known failure's reason, its tracking link, and where the waiver file says so."""
    link = f'<a href="{escape(tracking)}" title="{escape(tracking)}">{escape(_short_link(tracking))}</a>'
    known = _status(KNOWN, "KNOWN FAILURE")
    return f'{known} {escape(reason)} ({link}) <span class="muted">{escape(_places(waivers))}</span>'


def _pictures(details: Mapping[str, Any]) -> str:
    pictures = []
    if details.get("ulp_histogram"):
        pictures.append(ulp_histogram(details["ulp_histogram"], details.get("max_ulp"), details.get("atol")))
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


def _triage(triage: Triage | None) -> str:
    """Whose the failure is, why, and each re-run triage made of it (its rung, EP, adapter and verdict)."""
    if triage is None:
        return ""
    rows = [
        [
            rerun.rung.value,
            rerun.ep,
            rerun.adapter or "—",
            verdict_text(rerun.status, rerun.failure_kind) if rerun.status is not None else "did not run",
            first_line(rerun.message, REASON_LENGTH),
        ]
        for rerun in triage.reruns
    ]
    reruns = _table(["re-run", "EP", "adapter", "verdict", "message"], rows) if rows else ""
    return (
        f"<p>Whose: <b>{escape(triage.verdict.value)}</b>, {escape(MEANING[triage.verdict])}. "
        f"{escape(triage.why)}</p>{reruns}"
    )


def _article(r: Result, artifacts: str | None) -> str:
    """What a failure's line opens on: its parameters, whose it is (where triage judged it), pictures, first
    mismatches, reproduction and message."""
    params = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in r.parameters.items())
    about = [
        ("data type", r.data_type or "—"),
        ("lowering", r.lowering or "—"),
        ("DML operator", r.dml_operator or "—"),
        ("feature level", r.feature_level or "—"),
        ("time", _seconds(r.seconds)),
    ]
    params += "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in about)
    if artifacts:
        params += f'<dt>artifacts</dt><dd><a href="{escape(artifacts)}">{escape(artifacts)}</a></dd>'
    details = r.details
    table = details.get("table")
    mismatches = _table(table["headers"], table["rows"]) if table else ""
    repro = f"<p>Reproduce: <code>{escape(r.repro)}</code></p>" if r.repro else ""
    return (
        f'<article><dl class="params">{params}</dl>{_triage(r.triage)}{_pictures(details)}{_sequence(details)}'
        f"{mismatches}{repro}"
        f"<details><summary>full message</summary><pre>{escape(r.message)}</pre></details></article>"
    )


def _whose_cell(r: Result) -> str:
    """The whose column: triage's verdict, its meaning and why as the tooltip; a dash where it did not judge."""
    triage = r.triage
    if triage is None:
        return '<span class="whose">—</span>'
    tip = f"{MEANING[triage.verdict]}. {triage.why}"
    return f'<span class="whose" title="{escape(tip)}">{escape(triage.verdict.value)}</span>'


def _row(anchor: str, r: Result, artifacts: str | None, gate: str | None, triaged: bool) -> str:
    """One failure on one line (status, kind, whose where ``triaged``, case, reason, time, artifacts), opening on
    its article; ``gate``: unexpected or known, where a waiver file sorted it; ``triaged``: whether the page has a
    whose column (triage judged one of its failures)."""
    sorted_by = f' data-gate="{gate}"' if gate else ""
    verdict = whose(r)
    sorted_by += f' data-whose="{escape(verdict.value)}"' if verdict is not None else ""
    link = f'<a href="{escape(artifacts)}" title="the files --artifacts kept">artifacts</a>' if artifacts else ""
    kind = r.failure_kind or "—"
    return (
        f'<details class="row" id="{anchor}" data-row data-status="{escape(r.status.value)}" data-ep="{escape(r.ep)}" '
        f'data-kind="{escape(kind)}"{sorted_by} style="--c:{_colour(r.status)}"><summary>'
        f'<span class="line{" w" if triaged else ""}">'
        f'<span>{_status(r.status)} <span class="kind">{escape(kind)}</span></span>'
        f"{_whose_cell(r) if triaged else ''}<code>{escape(r.case)}</code>"
        f'<span class="why">{escape(first_line(r.message, REASON_LENGTH))}</span>'
        f'<span class="t">{_seconds(r.seconds)}</span><span>{link}</span></span></summary>{_article(r, artifacts)}'
        "</details>"
    )


def _unlisted(count: int, noun: str, nouns: str | None = None, where: str = "") -> str:
    """What a listing cut by the page's bounds (MAX_ROWS, MAX_NAMES) says in place of the ``count`` results it
    leaves out ("… and 2503 more results in this group, not listed here: …"); empty where it leaves none."""
    if count <= 0:
        return ""
    more = plural(count, f"more {noun}", f"more {nouns}" if nouns else None)
    return f"… and {more}{where}, not listed here: results.json holds them all (see the page's top)."


def _unlisted_item(count: int, noun: str, nouns: str | None = None) -> str:
    """``_unlisted`` as a list's last item; empty where the list leaves none out."""
    return f"<li>{_unlisted(count, noun, nouns)}</li>" if count > 0 else ""


def _unlisted_row(count: int, gate: str | None = None) -> str:
    """A cut group's note of the results it does not list: a row (data-more) that stands for them all (data-n), so
    that the filter's toggles and its count still reach them; ``gate``: the group's rows' data-gate."""
    if count <= 0:
        return ""
    sorted_by = f' data-gate="{gate}"' if gate else ""
    note = _unlisted(count, "result", where=" in this group")
    return f'<p class="more" data-row data-more data-n="{count}"{sorted_by}>{note}</p>'


def _group(group: Group, anchor: str, opened: bool, rows: str) -> str:
    """A group's line (status, signature with whose where triage judged it, count, first case) and its
    known-failure notes, which stay in sight while the group is closed; its rows below."""
    notes = "".join(f'<span class="note">{_waiver_note(*note)}</span>' for note in group.notes)
    owner = group.whose.value if group.whose is not None else ""
    return (
        f'<section class="group" id="{anchor}" data-status="{escape(group.status.value)}" '
        f'data-op="{escape(group.operator)}" data-kind="{escape(group.kind)}" data-ep="{escape(group.ep)}" '
        f'data-type="{escape(group.data_type)}"{f" data-whose={chr(34)}{owner}{chr(34)}" if owner else ""} '
        f'data-n="{len(group.results)}" style="--c:{_colour(group.status)}">'
        f"<details{' open' if opened else ''}><summary>{_status(group.status)} {escape(group.operator)} · "
        f"{escape(group.kind)} · {escape(group.ep)} · {escape(group.data_type)} "
        f"{f'· whose: {escape(owner)} ' if owner else ''}"
        f'<span class="muted">— <span class="part"></span>{plural(len(group.results), "result")}, first: '
        f"<code>{escape(group.first.case)}</code></span>{notes}</summary>{rows}</details></section>"
    )


Links = Mapping[tuple[str, str], str]  # (case, EP) -> the address of its --artifacts folder


def _groups(
    groups: Sequence[Group],
    opened: bool,
    anchors: Mapping[Group, str],
    links: Links,
    triaged: bool,
    listed: Mapping[Group, int],
    gate: str | None = None,
) -> str:
    """Each group with its first ``listed[group]`` results, one row each, and a note of the rest."""
    parts = []
    for group in groups:
        anchor, shown = anchors[group], listed[group]
        rows = "".join(
            _row(f"{anchor}-{i}", r, links.get((r.case, r.ep)), gate, triaged)
            for i, r in enumerate(group.results[:shown])
        )
        parts.append(_group(group, anchor, opened, rows + _unlisted_row(len(group.results) - shown, gate)))
    return "".join(parts)


def _counted(groups: Sequence[Group]) -> str:
    results = sum(len(g.results) for g in groups)
    return f"{plural(results, 'result')} in {plural(len(groups), 'group')}"


def _unlisted_table_rows(count: int, columns: int) -> list[list[str]]:
    """A cut table's last row, the note of the results it does not list in its first cell; no row where it lists
    them all."""
    return [[_unlisted(count, "result"), *([""] * (columns - 1))]] if count > 0 else []


def _unexpected(
    found: Findings, gate: Gate | None, anchors: Mapping[Group, str], links: Links, cut: Cut, outside: Outside
) -> str:
    title = "Unexpected failures" if gate is not None else "Failures"
    why = "" if gate is not None else "<p>No waiver file was given: every failure counts.</p>"
    sorted_by = "unexpected" if gate is not None else None
    body = (
        _groups(found.unexpected, True, anchors, links, found.triaged, cut.groups, sorted_by)
        if found.unexpected
        else "<p>None.</p>"
    )
    part = f"<h2 id=unexpected>{title} ({_counted(found.unexpected)})</h2>{why}{body}"
    if outside:  # a waiver names the case and EP, but not this failure: why not, beside the groups above
        rows = [[escape(case), escape(ep), escape(text)] for (case, ep), text in list(outside.items())[: cut.outside]]
        rows += _unlisted_table_rows(len(outside) - cut.outside, 3)
        part += f"<h3>Failures outside their waiver's signature ({len(outside)})</h3>" + _table(
            ["case", "EP", "why the waiver does not cover it"], rows, raw=True
        )
    if found.unexpected_passes:
        passes = found.unexpected_passes
        rows = [[escape(r.case), escape(r.ep), _waiver_note(w.reason, w.tracking, [w])] for r, w in passes[: cut.fixed]]
        rows += _unlisted_table_rows(len(passes) - cut.fixed, 3)
        part += f"<h3>Known failures that no longer fail ({len(passes)}): their waivers must go</h3>" + _table(
            ["case", "EP", "waiver"], rows, raw=True
        )
    return part


def _waived(found: Findings, gate: Gate, anchors: Mapping[Group, str], links: Links, cut: Cut) -> str:
    results = sum(len(g.results) for g in found.waived)
    stale = "".join(
        f"<li><code>{escape(w.case)}</code> on {escape(w.ep)} ({escape(str(w.pos))})</li>" for w in gate.stale
    )
    stale_part = f"<p>Stale waivers ({len(gate.stale)}): {escape(STALE_WHY)}.</p><ul>{stale}</ul>" if stale else ""
    groups = _groups(found.waived, False, anchors, links, found.triaged, cut.groups, "known")
    return (
        f'<details class="waived" id="waived"><summary>Known failures, waived: {plural(results, "known failure")} in '
        f"{plural(len(found.waived), 'group')}</summary>{groups}"
        f"{stale_part}</details>"
    )


def _warnings(found: Findings, anchors: Mapping[Group, str], links: Links, cut: Cut) -> str:
    if not found.warnings:
        return ""
    groups = _groups(found.warnings, False, anchors, links, found.triaged, cut.groups)
    return (
        f"<h2 id=warnings>Warnings ({_counted(found.warnings)})</h2><p>Behaviour the spec leaves open that differs "
        f"from the oracle's choice: not a failure.</p>{groups}"
    )


Declined = Sequence[tuple[tuple[str, Status, str, str], Sequence[str]]]  # (EP, status, kind, reason) -> cases


def _declined_groups(results: Sequence[Result]) -> list[tuple[tuple[str, Status, str, str], list[str]]]:
    """NOT_SUPPORTED and NOT_EXPRESSIBLE, grouped by EP, status, kind and reason (their first message line)."""
    groups: dict[tuple[str, Status, str, str], list[str]] = defaultdict(list)
    for r in results:
        if r.status in NO_VERDICT:
            groups[(r.ep, r.status, r.failure_kind or "—", first_line(r.message, 200))].append(r.case)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0][0]))


def _declined(groups: Declined, listed: Sequence[int]) -> str:
    """A row per EP, status, kind and reason, counting its results, its cases' names in a closed list (the first
    ``listed`` of them)."""
    if not groups:
        return "<h2 id=declined>No verdict: not supported or not expressible</h2><p>None.</p>"
    rows = "".join(
        f'<tr data-row data-n="{len(cases)}" data-status="{escape(status.value)}" data-ep="{escape(ep)}" '
        f'data-kind="{escape(kind)}"><td>{escape(ep)}</td><td>{_status(status)}</td><td>{escape(kind)}</td>'
        f'<td>{escape(reason)}</td><td class="n">{len(cases)}</td><td><details><summary>cases</summary>'
        + "<br>".join(escape(c) for c in cases[:shown])
        + (f"<br>{_unlisted(len(cases) - shown, 'case')}" if len(cases) > shown else "")
        + "</details></td></tr>"
        for ((ep, status, kind, reason), cases), shown in zip(groups, listed, strict=True)
    )
    head = "".join(f"<th>{h}</th>" for h in ("EP", "status", "kind", "reason", "results", "cases"))
    return (
        "<h2 id=declined>No verdict: not supported or not expressible</h2>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>"
    )


def _packed(differences: Sequence[str], listed: int) -> str:
    """The cases whose verdict packed with others differed from their own (Result.packed), the first ``listed``."""
    if not differences:
        return ""
    items = "".join(f"<li>{escape(line)}</li>" for line in differences[:listed])
    items += _unlisted_item(len(differences) - listed, "case")
    return (
        f"<h2 id=packed>Verdicts that differed when packed ({len(differences)})</h2><p>Each case's verdict above is "
        f"its own, from a session of its own; packed with other cases the EP gave another, so its result depended "
        f"on the model's other nodes.</p><ul>{items}</ul>"
    )


def _by_whose(found: Findings, gated: bool) -> str:
    """How many failures each owner has, where triage judged any: the verdict (a link that filters the page on
    it), what it means, and the unexpected and known counts."""
    counts = found.by_whose
    if not counts:
        return ""
    rows = [
        [
            f'<a href="?whose={escape(count.verdict.value)}">{escape(count.verdict.value)}</a>',
            escape(count.meaning),
            *((str(count.unexpected), str(count.known)) if gated else (str(count.unexpected),)),
        ]
        for count in counts
    ]
    headers = ["whose", "meaning", *(("unexpected", "known") if gated else ("failures",))]
    return "<h2 id=whose>Whose failures: triage's verdicts</h2>" + _table(headers, rows, raw=True)


Passes = Mapping[tuple[Status, str, str], Sequence[Result]]  # (status, operator, EP) -> its passing results
PassAnchors = Mapping[tuple[Status, str, str], str]


def _passed(results: Sequence[Result]) -> dict[tuple[Status, str, str], list[Result]]:
    """PASS and INVALID (a negative case rejected as it should be), by status, operator and EP."""
    passed: dict[tuple[Status, str, str], list[Result]] = defaultdict(list)
    for r in results:
        if r.status in OK:
            passed[(r.status, r.operator, r.ep)].append(r)
    return dict(sorted(passed.items(), key=lambda item: (item[0][1], item[0][2], severity(item[0][0]))))


def _ids(results: Sequence[Result]) -> str:
    """The results' case names, one short row each, in one list per case file (its path said once, by the list's
    data-path, which the filter searches with each name)."""
    by_file: dict[str, list[str]] = defaultdict(list)
    for r in results:
        path, separator, name = r.case.partition("::")
        by_file[path if separator else ""].append(name if separator else r.case)
    return "".join(
        f'<ul class="ids"{f" data-path={chr(34)}{escape(path)}{chr(34)}" if path else ""}>'
        + "".join(f"<li data-row>{escape(name)}</li>" for name in names)
        + "</ul>"
        for path, names in by_file.items()
    )


def _passes(passed: Passes, anchors: PassAnchors, listed: Mapping[tuple[Status, str, str], int]) -> str:
    """Every pass, so that the filter finds any result: a closed group per status, operator and EP, holding each
    case's name alone (no details: a pass has none worth a look); past MAX_NAMES, each group's first names."""
    total = sum(len(members) for members in passed.values())
    if not passed:
        return "<h2 id=passes>Passes</h2><p>None.</p>"
    sections = "".join(
        f'<section class="group passes" id="{anchors[key]}" data-status="{escape(key[0].value)}" '
        f'data-ep="{escape(key[2])}" data-n="{len(members)}" style="--c:{_colour(key[0])}"><details><summary>'
        f"{_status(key[0])} {escape(key[1])} · {escape(key[2])} "
        f'<span class="muted">— <span class="part"></span>{plural(len(members), "result")}</span></summary>'
        f"{_ids(members[: listed[key]])}{_unlisted_row(len(members) - listed[key])}</details></section>"
        for key, members in passed.items()
    )
    return (
        f"<h2 id=passes>Passes ({plural(total, 'result')})</h2><p>Each result that passed, and each negative case "
        f"rejected as it should be (INVALID), by operator and EP; the filter above finds any of them.</p>{sections}"
    )


Outside = Mapping[tuple[str, str], str]  # (case, EP) of a failure outside its waiver's signature -> why


def _allot(sizes: Sequence[int], budget: int) -> list[int]:
    """How many rows each listing of ``sizes`` results shows within ``budget`` rows: every listing whole up to one
    level, the highest whose sum fits, and the rows left under the budget one each to the first listings past it
    (water-filling), so that small groups stay whole and the largest give up the most; yet each listing keeps its
    first row, over the budget where there are more listings than rows."""
    if sum(sizes) <= budget:
        return list(sizes)
    low, high = 1, max(sizes)  # the level: the highest in [low, high] whose rows fit (1 where none does)
    while low < high:
        level = (low + high + 1) // 2
        if sum(min(size, level) for size in sizes) <= budget:
            low = level
        else:
            high = level - 1
    shown = [min(size, low) for size in sizes]
    spare = budget - sum(shown)
    for index, size in enumerate(sizes):
        if spare <= 0:
            break
        if size > shown[index]:
            shown[index] += 1
            spare -= 1
    return shown


@dataclass(frozen=True)
class Cut:
    """How many results each listing on the page lists, within MAX_ROWS (``groups``: each failing or warning group)
    and MAX_NAMES (each runner death's cases in flight, the failures outside their waiver's signature, the known
    failures that no longer fail, each no-verdict row's cases, the packed verdicts, each group of passes); the
    page lists ``listed`` of its ``rows`` result rows."""

    groups: Mapping[Group, int]
    deaths: Sequence[int]
    outside: int
    fixed: int
    declined: Sequence[int]
    packed: int
    passes: Mapping[tuple[Status, str, str], int]
    listed: int
    rows: int


def _cut(summary: Summary, found: Findings, outside: Outside, declined: Declined, passed: Passes) -> Cut:
    failures = _allot([len(group.results) for group in found.groups], MAX_ROWS)
    names = {
        "deaths": [len(death.cases) for death in summary.environment.runner_deaths],
        "outside": [len(outside)],
        "fixed": [len(found.unexpected_passes)],
        "declined": [len(cases) for _, cases in declined],
        "packed": [len(summary.packed_differences)],
        "passes": [len(members) for members in passed.values()],
    }
    allotted = iter(_allot([size for sizes in names.values() for size in sizes], MAX_NAMES))
    shown = {listing: [next(allotted) for _ in sizes] for listing, sizes in names.items()}
    return Cut(
        groups=dict(zip(found.groups, failures, strict=True)),
        deaths=shown["deaths"],
        outside=shown["outside"][0],
        fixed=shown["fixed"][0],
        declined=shown["declined"],
        packed=shown["packed"][0],
        passes=dict(zip(passed, shown["passes"], strict=True)),
        listed=sum(failures) + sum(sum(counts) for counts in shown.values()),
        rows=sum(len(group.results) for group in found.groups) + sum(sum(sizes) for sizes in names.values()),
    )


def _cut_line(cut: Cut) -> str:
    """Where the page's bounds cut listings, what that means, once, at the top; nothing where they cut none."""
    if cut.listed == cut.rows:
        return ""
    return (
        f'<p class="cut" id="cut">report.html lists {cut.listed} of {cut.rows} result rows: past {MAX_ROWS} '
        f"failures and warnings and {MAX_NAMES} other results, each group lists its first results (at least one) "
        "and says how many more it holds. Every count on the page counts them all, the filter's toggles included "
        "(its text box searches the listed ones), and results.json holds every result.</p>"
    )


def render_html(
    summary: Summary, results: Sequence[Result], gate: Gate | None = None, artifacts: Links | None = None
) -> str:
    """The whole report as one HTML document; ``artifacts`` gives the address of each (case, EP)'s --artifacts
    folder that exists (the caller knows where the page and the folders are)."""
    links = artifacts or {}
    verdict = decide(summary, gate)
    found = findings(results, gate)
    anchors = _anchors(found)
    declined = _declined_groups(results)
    passed = _passed(results)
    pass_anchors = {key: f"p{index}" for index, key in enumerate(passed)}
    outside = near_miss_keys(gate) if gate is not None else {}
    cut = _cut(summary, found, outside, declined, passed)
    parts = [
        _header(summary, verdict, gate, found, sum(len(members) for members in passed.values())),
        _cut_line(cut),
        _incomplete(summary),
        _runner_deaths(summary, cut.deaths),
        _matrix(summary, found, anchors, pass_anchors),
        _by_whose(found, gate is not None),
        _facet_values(found, declined, passed, gate is not None),
        _unexpected(found, gate, anchors, links, cut, outside),
        _waived(found, gate, anchors, links, cut) if gate is not None else "",
        _warnings(found, anchors, links, cut),
        _mode_matrix(summary),
        _declined(declined, cut.declined),
        _packed(summary.packed_differences, cut.packed),
        _passes(passed, pass_anchors, cut.passes),
    ]
    title = "DirectML conformance: " + verdict.headline
    return (
        f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f'<meta name="viewport" content="width=device-width"><style>{CSS}</style></head>'
        f"<body>{''.join(parts)}<script>{SCRIPT}</script></body></html>\n"
    )

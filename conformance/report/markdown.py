"""summary.md: short enough to paste into a pull request, rendered from a Summary; where triage judged failures,
whose each is (a column, and the count each owner has)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from conformance.gate.summary import (
    NO_VERDICT,
    STATUS_ORDER,
    Completeness,
    Summary,
    death_reason,
    death_verdict,
    fails_the_run,
    severity,
    unexercised_line,
)
from conformance.gate.verdict import decide, findings, whose, whose_order
from conformance.gate.waivers import STALE_WHY, Gate, near_miss_keys, waived_keys
from conformance.problems import first_line
from conformance.report.text import cell, code, code_cell, table
from conformance.results import Result

MAX_ROWS = 40  # rows per list: GitHub refuses comments over 65,536 characters
MAX_COMMAND = 500  # characters of the command line shown (a run over thousands of named files has a long one)


def _incomplete_lines(completeness: Completeness) -> list[str]:
    """Why the run is incomplete ("interrupted: 120 of 1881 cases run"), then the skipped case files' problems."""
    lines = [f"- **{cell(reason)}**: the run fails" for reason in completeness.reasons]
    problems = completeness.problems
    lines += [*(f"  - {cell(line)}" for line in problems[:MAX_ROWS]), *_more(len(problems))]
    return lines + ([f"- {cell(completeness.skipped_line)}"] if completeness.skipped_line else [])


def _death_lines(summary: Summary) -> list[str]:
    """Each EP whose runner died: the reason (bold where it fails the run), then its last stderr lines as code."""
    lines = []
    for death in summary.environment.runner_deaths:
        reason = death_reason(death)
        shown = f"**{cell(reason)}**" if fails_the_run(death) else cell(reason)
        lines.append(f"- {shown}: {death_verdict(death)}")
        lines += [f"  - last stderr: {code(line)}" for line in death.stderr[-MAX_ROWS:]]
    return lines


def _more(count: int) -> list[str]:
    return ["", f"… and {count - MAX_ROWS} more: see report.html"] if count > MAX_ROWS else []


def _packed_lines(differences: Sequence[str]) -> list[str]:
    if not differences:
        return []
    head = f"- **{len(differences)} case(s) got another verdict packed with other cases than alone** (the verdict alone"
    head += " stands; the EP's result depended on the model's other nodes):"
    return [head, *(f"  - {cell(line)}" for line in differences[:MAX_ROWS]), *_more(len(differences))]


def _run_line(what: str, which: str) -> str:
    """The command as a code span (cut at MAX_COMMAND characters); the rest as text."""
    return f"- {cell(what)}: {code(first_line(which, MAX_COMMAND)) if what == 'command' else cell(which)}"


def render_markdown(summary: Summary, gate: Gate | None = None) -> str:
    """The summary, short enough for a pull request comment: long lists are cut at MAX_ROWS rows. The verdict is
    the gate's where a waiver file was given."""
    unproven = summary.placement.unproven if summary.placement else ()
    lines = [
        "# DirectML conformance summary",
        "",
        f"**{cell(decide(summary, gate).headline)}**",
        "",
        *(f"- {cell(what)}: {cell(which)}" for what, which in summary.identity),
        *(_run_line(what, which) for what, which in summary.run),
        *([f"- placement: {cell(summary.placement.line)}"] if summary.placement else []),
        *(f"  - {cell(line)}" for line in unproven[:MAX_ROWS]),
        *_more(len(unproven)),
        *_incomplete_lines(summary.completeness),
        *_death_lines(summary),
        *_packed_lines(summary.packed_differences),
        *([f"- {cell(unexercised_line(summary))}"] if summary.unexercised else []),
        "",
        "## Totals",
        "",
    ]
    statuses = [s for s in STATUS_ORDER if summary.totals.get(s)]
    lines.append(table([[s.value, summary.totals[s]] for s in statuses], ["status", "results"], text=False))
    lines += ["", "## By operator and EP", ""]
    rows = [[cell(op), cell(ep), *(counts.get(s, 0) for s in statuses)] for op, ep, counts in summary.by_operator]
    lines.append(table(rows, ["operator", "EP", *statuses], text=False))
    # What a reader acts on (the failures, each with the command that reproduces it) before what describes the run.
    sections = [
        *_by_whose(summary, gate),
        *_failures(summary, gate),
        *_reached(summary),
        *_differing(summary),
        *_mode_matrix(summary),
        *_declined(summary),
    ]
    return "\n".join([*lines, *sections, *_stale_lines(gate)]) + "\n"


def _by_whose(summary: Summary, gate: Gate | None) -> list[str]:
    """How many failures each owner has, where triage judged any (unexpected and known apart with a waiver file)."""
    counts = findings(summary.notable, gate).by_whose
    if not counts:
        return []
    gated = gate is not None
    rows = [
        [c.verdict.value, cell(c.meaning), *((c.unexpected, c.known) if gated else (c.unexpected,))] for c in counts
    ]
    headers = ["whose", "meaning", *(("unexpected", "known") if gated else ("failures",))]
    return ["", "## Whose failures: triage's verdicts", "", table(rows, headers, text=False)]


def _failures(summary: Summary, gate: Gate | None) -> list[str]:
    """Failures and warnings, unexpected ones first (so that the rows cut at MAX_ROWS are the known failures, which
    say they are known), by owner where triage judged them (a whose column then), each with its message's first
    line and its reproduction command."""
    known = waived_keys(gate) if gate is not None else {}
    outside = {key: f"outside its waiver: {why}; " for key, why in (near_miss_keys(gate) if gate else {}).items()}
    failing = sorted(
        (r for r in summary.notable if r.status not in NO_VERDICT),
        key=lambda r: ((r.case, r.ep) in known, whose_order(whose(r)), severity(r.status)),
    )
    if not failing:
        return []
    triaged = any(whose(r) is not None for r in failing)
    rows = [
        [
            cell(r.case),
            cell(r.ep),
            r.status.value + (" (known)" if (r.case, r.ep) in known else ""),
            cell(r.failure_kind or ""),
            *([_whose_cell(r)] if triaged else []),
            cell(outside.get((r.case, r.ep), "") + first_line(r.message, 100)),
            code_cell(r.repro),
        ]
        for r in failing[:MAX_ROWS]
    ]
    headers = ["case", "EP", "status", "kind", *(["whose"] if triaged else []), "message", "repro"]
    return ["", "## Failures and warnings", "", table(rows, headers), *_more(len(failing))]


def _whose_cell(result: Result) -> str:
    verdict = whose(result)
    return verdict.value if verdict is not None else ""


def _reached(summary: Summary) -> list[str]:
    """The DML operators the cases reach on DirectML, from the lowering."""
    if not summary.dml_operators:
        return []
    rows = [[cell(op), cell(dml), n] for op, dml, n in summary.dml_operators]
    headers = ["operator", "DML operator(s), from the DirectML lowering", "cases"]
    return ["", "## What the cases reach on DirectML", "", table(rows, headers, text=False)]


def _differing(summary: Summary) -> list[str]:
    """Only the cases whose verdicts differ between EPs: the rest is in the totals and in report.html."""
    if not summary.matrix:
        return []
    differing = [(case, row) for case, row in summary.matrix if len(set(row)) > 1]
    lines = ["", "## Cases whose verdicts differ between EPs", ""]
    rows = [[cell(case), *((s.value if s else "—") for s in row)] for case, row in differing[:MAX_ROWS]]
    if not rows:
        return [*lines, f"none: each of the {len(summary.matrix)} cases has the same verdict on every EP"]
    return [*lines, table(rows, ["case", *(cell(ep) for ep in summary.eps)]), *_more(len(differing))]


def _mode_matrix(summary: Summary) -> list[str]:
    """Each execution mode's outputs against the defaults' (bit for bit) and its verdicts against the oracle."""
    if not summary.modes:
        return []
    statuses = [s for s in STATUS_ORDER if any(column.verdicts.get(s) for column in summary.modes)]
    rows = [
        [
            cell(column.ep),
            cell(column.modes),
            column.executed,
            "(the reference)" if column.base else column.executed - column.mismatched,
            "—" if column.base else column.mismatched,
            *(column.verdicts.get(s, 0) for s in statuses),
        ]
        for column in summary.modes
    ]
    head = ["EP", "modes", "executed", "bit-equal to the defaults", "mode_mismatch", *(s.value for s in statuses)]
    said = "Each mode's outputs against the defaults' bit for bit, and its verdicts against the oracle."
    return ["", "## Execution modes", "", said, "", table(rows, head, text=False)]


def _declined(summary: Summary) -> list[str]:
    """The results without a verdict, counted by EP, status and kind."""
    declined = Counter((r.ep, r.status.value, r.failure_kind or "") for r in summary.notable if r.status in NO_VERDICT)
    if not declined:
        return []
    rows = [[cell(ep), status, cell(kind), n] for (ep, status, kind), n in sorted(declined.items())]
    return ["", "## No verdict", "", table(rows, ["EP", "status", "kind", "results"], text=False)]


def _stale_lines(gate: Gate | None) -> list[str]:
    """The stale waivers (gate/waivers.py), each with where it was written: the console says only how many."""
    if gate is None or not gate.stale:
        return []
    rows = [[cell(w.case), cell(w.ep), cell(str(w.pos))] for w in gate.stale[:MAX_ROWS]]
    head = ["", f"## Stale waivers ({len(gate.stale)})", "", f"{STALE_WHY[:1].upper()}{STALE_WHY[1:]}.", ""]
    return [*head, table(rows, ["case", "EP", "waiver"]), *_more(len(gate.stale))]

"""``dmlconf waivers suggest``: waiver entries for a run's failures, as YAML the loader reads (docs/waivers.md).

Each failure the gate did not expect (every failure, where no waiver file gates the run) gets an entry narrowed by
its signature: its ``failure_kind``; bounds a little above what was measured (``max_abs_error``, ``max_ulp``,
``max_mismatches``: the largest measured over the entry's results, rounded up to two significant digits, so 412 ULP
gives 420, 3 mismatches 3 and 0.00123 gives 0.0013; a bound is left out where a result measured none, or NaN, which
no bound meets); ``ep`` exact; ``device`` the GPU or adapter the EP ran on, where it ran on one GPU the environment
names; triage's ``verdict`` where the result has one, which also opens its ``reason`` ("driver: ..."). A FLAKY
result goes under ``flaky:`` instead, without a signature.

Results of one case file, EP, device, failure kind and verdict are grouped: each run of their case ids that no other
case id of the run on that EP interrupts (in sorted order) is one entry, the ids' longest common prefix and ``*``,
where that pattern matches no other case id of the run on the EP (exact over the run's results: a case the run did
not select may still match); the others are one entry a case, its id escaped.

``tracking`` is ``BUG-0``, a bug id the loader accepts (so that the output loads as it is) that names no bug: a
comment beside it says to replace it, and ``waivers lint`` finds it where it was left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal

from conformance.environment import Environment
from conformance.ep_table import ExecutesOn, ep_facts
from conformance.gate.lint import PLACEHOLDER
from conformance.gate.signature import measured, mismatched
from conformance.gate.waiver_file import FLAKY, KNOWN_FAILURES
from conformance.gate.waivers import Gate, case_matches
from conformance.model import Status
from conformance.problems import first_line
from conformance.results import FAILING, Result

REASON_LIMIT = 200  # characters of a message's first line taken as a reason


@dataclass(frozen=True)
class _Key:
    """What one entry's results share: their case file, EP, device, failure kind, verdict, section."""

    file: str
    ep: str
    device: str | None
    kind: str | None
    verdict: str | None
    flaky: bool


def escaped(text: str) -> str:
    """``text`` as an fnmatch pattern that matches it alone: ``[``, ``*`` and ``?`` in brackets."""
    return "".join(f"[{c}]" if c in "[*?" else c for c in text)


def quoted(text: str) -> str:
    """``text`` as a YAML double-quoted scalar: printable ASCII as it is, the rest escaped, so that no character
    (a line break of another alphabet, a control character) changes what the YAML says."""
    out = []
    for c in text:
        if c in '"\\':
            out.append("\\" + c)
        elif " " <= c <= "~":
            out.append(c)
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


def rounded_up(value: float) -> str:
    """``value`` rounded up to two significant digits, written as a plain decimal (no exponent: a reader of the file
    sees the number): 412 -> 420, 3 -> 3, 0.00123 -> 0.0013."""
    number = Decimal(repr(value))
    if number == 0:
        return "0"
    step = Decimal(1).scaleb(number.adjusted() - 1)
    return format(number.quantize(step, rounding=ROUND_CEILING).normalize(), "f")


def _device(env: Environment, label: str) -> str | None:
    """The GPU or adapter the EP ``label`` ran on: a DirectML chain's adapter, else the environment's GPU where it
    lists one (several: which one ran the EP is not recorded, so none); none for an EP on the CPU."""
    record = env.ep(label)
    if record is None:
        return None
    chain = record.chain
    if chain is not None and chain.adapter is not None and chain.adapter.description:
        return chain.adapter.description
    if ep_facts(record.name or "").executes_on is ExecutesOn.CPU:
        return None
    names = {gpu.name for gpu in env.gpus if gpu.name and gpu.driver_version}
    return names.pop() if len(names) == 1 else None


def _bound(results: Sequence[Result], read: Callable[[Result], float | None]) -> str | None:
    """The largest of the values ``read`` from ``results``, rounded up; None where one result measured none (or
    NaN, which no bound meets)."""
    found = [read(r) for r in results]
    numbers = [value for value in found if value is not None and value == value]
    if not numbers or len(numbers) < len(found):
        return None
    return rounded_up(max(numbers))


# Each bound and what it is written from (signature.py reads the same metrics to judge it).
_BOUNDS: tuple[tuple[str, Callable[[Result], float | None]], ...] = (
    ("max_abs_error", lambda r: measured(r, "max_abs_error")),
    ("max_ulp", lambda r: measured(r, "max_ulp_error")),
    ("max_mismatches", lambda r: m.count if (m := mismatched(r)) is not None else None),
)


def _reason(result: Result) -> str:
    """triage's verdict and why, else the failure's first line."""
    if result.triage is not None:
        return f"{result.triage.verdict.value}: {first_line(result.triage.why, REASON_LIMIT)}"
    return first_line(result.message, REASON_LIMIT) or f"{result.status.value} ({result.failure_kind or 'no kind'})"


def _pattern(block: Sequence[str], on_ep: Sequence[str]) -> str | None:
    """A prefix pattern that matches exactly the case ids of ``block`` among ``on_ep`` (the run's case ids on the
    EP); None where none does (or the block is one case)."""
    first, last = min(block), max(block)  # what these two share, every id sorted between them shares
    prefix = first[: next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))]
    if len(block) < 2 or "::" not in prefix:
        return None
    pattern = escaped(prefix) + "*"
    return pattern if {case for case in on_ep if case_matches(pattern, case)} == set(block) else None


def _grouped(group: Sequence[Result], everything: Sequence[Result]) -> list[tuple[str, list[Result]]]:
    """(case pattern, its results) for ``group`` (results of one EP): the ids a prefix matches lie together in
    sorted order, so each run of the group's ids with no other id of the EP between them is one entry where its
    common prefix matches no other id, else one entry a case."""
    members = {r.case: r for r in group}
    on_ep = sorted({r.case for r in everything if r.ep == group[0].ep} | set(members))
    blocks: list[list[str]] = [[]]
    for case in on_ep:
        if case in members:
            blocks[-1].append(case)
        elif blocks[-1]:
            blocks.append([])
    entries: list[tuple[str, list[Result]]] = []
    for block in (b for b in blocks if b):
        pattern = _pattern(block, on_ep)
        if pattern is not None:
            entries.append((pattern, [members[case] for case in block]))
        else:
            entries += [(escaped(case), [members[case]]) for case in block]
    return entries


def _entry(key: _Key, group: Sequence[Result], case: str) -> list[str]:
    lines = [f"  - case: {quoted(case)}", f"    ep: {quoted(key.ep)}"]
    if key.device is not None:
        lines.append(f"    device: {quoted(escaped(key.device))}")
    if not key.flaky:
        if key.kind is not None:
            lines.append(f"    failure_kind: {quoted(key.kind)}")
        for name, read in _BOUNDS:
            bound = _bound(group, read)
            if bound is not None:
                lines.append(f"    {name}: {bound}")
        if key.verdict is not None:
            lines.append(f"    verdict: {quoted(key.verdict)}")
    lines.append(f"    reason: {quoted(_reason(group[0]))}")
    lines.append(f"    tracking: {PLACEHOLDER}  # FILL IN the bug that tracks it: an http(s) URL or a bug id")
    return lines


def suggested(env: Environment, results: Sequence[Result], gate: Gate | None, source: str) -> str:
    """The YAML of entries for ``results``' failures that ``gate`` did not expect (every failure without one);
    ``source``: the results.json named in the header."""
    failing = list(gate.unexpected_failures) if gate is not None else [r for r in results if r.status in FAILING]
    groups: dict[_Key, list[Result]] = {}
    for r in failing:
        verdict = r.triage.verdict.value if r.triage is not None else None
        flaky = r.status is Status.FLAKY
        key = _Key(r.case.partition("::")[0], r.ep, _device(env, r.ep), r.failure_kind, verdict, flaky)
        groups.setdefault(key, []).append(r)
    sections: dict[str, list[str]] = {KNOWN_FAILURES: [], FLAKY: []}
    for key, group in groups.items():
        lines = sections[FLAKY if key.flaky else KNOWN_FAILURES]
        lines.append(f"  # {key.file} on {key.ep}: {len(group)} failure(s)")
        for case, members in _grouped(group, results):
            lines += _entry(key, members, case)
    head = [
        f"# Suggested by dmlconf waivers suggest for {len(failing)} failure(s) of {source}.",
        f"# Review each entry: say what fails in its reason and replace {PLACEHOLDER} with the bug that tracks it.",
        "# Bounds are the largest measured, rounded up; patterns cover exactly this run's failing results.",
    ]
    body = [f"{KNOWN_FAILURES}:" if sections[KNOWN_FAILURES] else f"{KNOWN_FAILURES}: []", *sections[KNOWN_FAILURES]]
    if sections[FLAKY]:
        body += [f"{FLAKY}:", *sections[FLAKY]]
    return "\n".join([*head, *body]) + "\n"

"""JUnit XML from results: the one test-report format that Azure Pipelines, GitHub Actions test reporters and
Jenkins all read, so a conformance run shows up per case in a CI's test tab.

One <testsuite> per (operator, EP), one <testcase> per Result. FAIL and ERROR turn CI red unless waived as known
failures (then skipped, with the waiver's reason); a known failure that passes now is a failure, as the gate says;
NOT_SUPPORTED and NOT_EXPRESSIBLE are skipped; PASS, INVALID (a negative case rejected as it should be) and
QUALITY_WARNING pass, the last with its message kept in <system-out>. A failure triage judged says whose it is
first ("[whose: driver] ..."), and why in its text. A run that is incomplete (interrupted, case files skipped with
--keep-going, an EP that executed nothing) gets one more testcase, an error saying so: a CI's test tab must not show
a partial run green.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.gate.summary import NO_VERDICT, Summary, death_reason, fails_the_run
from conformance.gate.verdict import whose_label
from conformance.gate.waivers import Gate, Waiver, near_miss_keys, waived_keys
from conformance.model import LAYOUTS_NOT_EXERCISED, Status
from conformance.problems import first_line
from conformance.results import FAILING, Result

# Everything XML 1.0 (section 2.2, Char) forbids: control characters other than tab, newline and carriage return,
# lone surrogates, U+FFFE and U+FFFF. ElementTree escapes markup but writes these as they are, and a parser rejects
# the whole file for one of them, so they are removed from every text and attribute.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# A dot in a classname reads as a package separator to Jenkins and Azure; a colon is unsafe in some report tools.
_CLASSNAME_UNSAFE = re.compile(r"[.:]")
# A wrong answer (FAIL), or answers that differ between repeats (FLAKY): a <failure>; the other failing statuses gave
# no answer (ERROR, CRASH, TIMEOUT, DEVICE_LOST): an <error>.
_WRONG_ANSWER = frozenset({Status.FAIL, Status.FLAKY})
_MESSAGE_LIMIT = 1000  # the message attribute is the one-line headline; the whole text goes in the element body
RUN = "dml-conformance"  # the classname of the run's own testcase (its completeness)


def _clean(text: object) -> str:
    return _NOT_XML_CHAR.sub("", str(text))


def _seconds(value: float) -> str:
    # A plain decimal: Jenkins parses time with the locale-free float parser and rejects "nan" or exponent forms.
    return f"{value:.3f}" if math.isfinite(value) and value > 0 else "0.000"


def _element(parent: ET.Element, tag: str, text: str | None = None, **attributes: str) -> ET.Element:
    child = ET.SubElement(parent, tag, {key: _clean(value) for key, value in attributes.items()})
    if text is not None:
        child.text = _clean(text)
    return child


def _detail(r: Result) -> str:
    """Whose the failure is and why (where triage judged it), the whole message, then the command that reproduces
    it."""
    owner = f"{whose_label(r)}: {r.triage.why}\n\n" if r.triage is not None else ""
    return owner + r.message + (f"\n\nrepro: {r.repro}" if r.repro else "")


def _owned(r: Result, message: str) -> str:
    """``message`` opened by whose the failure is ("[whose: driver] ..."), where triage judged it."""
    label = whose_label(r)
    return f"[{label}] {message}" if label else message


@dataclass
class _Counts:
    tests: int = 0
    failures: int = 0
    errors: int = 0
    skipped: int = 0
    seconds: float = 0.0

    def add(self, other: _Counts) -> None:
        self.tests += other.tests
        self.failures += other.failures
        self.errors += other.errors
        self.skipped += other.skipped
        self.seconds += other.seconds

    def attributes(self) -> dict[str, str]:
        return {
            "tests": str(self.tests),
            "failures": str(self.failures),
            "errors": str(self.errors),
            "skipped": str(self.skipped),
            "time": _seconds(self.seconds),
        }


def _testcase(
    suite: ET.Element, r: Result, waiver: str | None, passing: Waiver | None, outside: str, counts: _Counts
) -> None:
    """``waiver``: why a failure here is known; ``passing``: the waiver of a known failure that passes now;
    ``outside``: why a waiver that names this failure does not cover it."""
    classname = f"{r.operator}.{_CLASSNAME_UNSAFE.sub('_', r.ep)}"
    case = _element(suite, "testcase", name=r.case, classname=classname, time=_seconds(r.seconds))
    counts.tests += 1
    counts.seconds += r.seconds if math.isfinite(r.seconds) and r.seconds > 0 else 0.0
    unexercised = r.details.get(LAYOUTS_NOT_EXERCISED)
    if unexercised:  # a PASS too: what it did not check
        _element(_element(case, "properties"), "property", name=LAYOUTS_NOT_EXERCISED, value=_clean(unexercised))
    headline = first_line(r.message, _MESSAGE_LIMIT)
    if r.status in FAILING and waiver is not None:
        # A known failure must not turn CI red, yet stays visible: skipped, with the failure text kept.
        _element(case, "skipped", message=_owned(r, f"known failure: {waiver}"))
        _element(case, "system-out", f"{r.status.value} ({r.failure_kind or 'no kind'}): {_detail(r)}")
        counts.skipped += 1
    elif r.status in FAILING:
        tag = "failure" if r.status in _WRONG_ANSWER else "error"
        # A waiver that names the case but not this failure: why, first, where a CI's test tab shows the message.
        why = f"outside its waiver: {outside}" if outside else ""
        text = f"{why}\n\n{_detail(r)}" if why else _detail(r)
        message = f"{why}; {headline}" if why else headline
        _element(case, tag, text, message=_owned(r, message), type=r.failure_kind or r.status.value)
        counts.failures += r.status in _WRONG_ANSWER
        counts.errors += r.status not in _WRONG_ANSWER
    elif r.status in NO_VERDICT:
        _element(case, "skipped", message=f"{r.status.value}: {headline}" if headline else r.status.value)
        counts.skipped += 1
    elif passing is not None:  # the gate fails on it until its waiver goes, and so does CI's test tab
        why = f"known failure no longer fails: remove its waiver ({passing.pos}): {passing.reason} ({passing.tracking})"
        _element(case, "failure", _detail(r) or r.status.value, message=why, type="unexpected_pass")
        counts.failures += 1
    elif r.status is Status.QUALITY_WARNING:
        _element(case, "system-out", f"{r.status.value}: {_detail(r)}")


def _suite(root: ET.Element, name: str, facts: Sequence[tuple[str, str]]) -> ET.Element:
    suite = _element(root, "testsuite", name=name)
    properties = _element(suite, "properties")
    for what, which in facts:
        _element(properties, "property", name=what, value=which)
    return suite


def _finish(suite: ET.Element, counts: _Counts, total: _Counts) -> None:
    # Attributes are set after the cases are counted; ElementTree keeps them in insertion order, name first.
    for key, value in counts.attributes().items():
        suite.set(key, value)
    total.add(counts)


def _completeness(root: ET.Element, summary: Summary, facts: Sequence[tuple[str, str]], total: _Counts) -> None:
    """An incomplete run's own testcase: an error naming what is missing ("interrupted: 120 of 1881 cases run")."""
    completeness = summary.completeness
    if completeness.complete:
        return
    suite = _suite(root, f"{RUN} run", facts)
    case = _element(suite, "testcase", name="every planned case ran", classname=RUN, time=_seconds(0))
    text = "\n".join([*completeness.reasons, *(f"  {problem}" for problem in completeness.problems)])
    _element(case, "error", text, message="; ".join(completeness.reasons), type="incomplete")
    _finish(suite, _Counts(tests=1, errors=1), total)


def _runner_deaths(root: ET.Element, summary: Summary, facts: Sequence[tuple[str, str]], total: _Counts) -> None:
    """Each EP whose runner died while serving packs (what fails the run): an error testcase, with the cases in
    flight and the runner's last stderr lines, so that a CI's test tab shows it whatever the waivers say. Other
    deaths are their cases' CRASH or TIMEOUT testcases, or a failed start that stopped the run."""
    failing = [(death, death_reason(death)) for death in summary.environment.runner_deaths if fails_the_run(death)]
    if not failing:
        return
    suite = _suite(root, f"{RUN} runners", facts)
    counts = _Counts()
    for death, reason in failing:
        name = f"the runner of {death.ep} never died"
        case = _element(suite, "testcase", name=name, classname=RUN, time=_seconds(0))
        text = "\n".join([reason, "cases in flight:", *death.cases, "last stderr lines:", *death.stderr])
        _element(case, "error", text, message=reason, type="runner_died")
        counts.tests += 1
        counts.errors += 1
    _finish(suite, counts, total)


def render_junit(summary: Summary, results: Sequence[Result], gate: Gate | None = None) -> str:
    """JUnit XML for ``results`` (of ``summary``), sorted by the known-failure ``gate`` where there is one."""
    waived = waived_keys(gate) if gate is not None else {}
    outside = near_miss_keys(gate) if gate is not None else {}
    passing = {(r.case, r.ep): w for r, w in gate.unexpected_passes} if gate and gate.unexpected_passes_fail else {}
    root = ET.Element("testsuites", name="dml-conformance")
    grouped: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        grouped.setdefault((r.operator, r.ep), []).append(r)
    facts = [*summary.identity, *summary.run]
    total = _Counts()
    for (operator, ep), members in sorted(grouped.items()):
        suite = _suite(root, f"{operator} [{ep}]", facts)
        counts = _Counts()
        for r in members:
            pair = (r.case, r.ep)
            _testcase(suite, r, waived.get(pair), passing.get(pair), outside.get(pair, ""), counts)
        _finish(suite, counts, total)
    _completeness(root, summary, facts, total)
    _runner_deaths(root, summary, facts, total)
    for key, value in total.attributes().items():
        root.set(key, value)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

"""JUnit XML from results: the one test-report format that Azure Pipelines, GitHub Actions test reporters and
Jenkins all read, so a conformance run shows up per case in a CI's test tab.

One <testsuite> per (operator, EP), one <testcase> per Result. FAIL and ERROR turn CI red unless waived as known
failures; NOT_SUPPORTED and NOT_EXPRESSIBLE are skipped; PASS, INVALID (a negative case rejected as it should be)
and QUALITY_WARNING pass, the last with its message kept in <system-out>.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from conformance.gate.summary import identity_lines
from conformance.model import Status
from conformance.problems import first_line
from conformance.results import FAILING, Result

# Everything XML 1.0 (section 2.2, Char) forbids: control characters other than tab, newline and carriage return,
# lone surrogates, U+FFFE and U+FFFF. ElementTree escapes markup but writes these as they are, and a parser rejects
# the whole file for one of them, so they are removed from every text and attribute.
_NOT_XML_CHAR = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# A dot in a classname reads as a package separator to Jenkins and Azure; a colon is unsafe in some report tools.
_CLASSNAME_UNSAFE = re.compile(r"[.:]")
_SKIPPED = frozenset({Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE})
_MESSAGE_LIMIT = 1000  # the message attribute is the one-line headline; the whole text goes in the element body


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
    """The whole message, then the command that reproduces it."""
    return r.message + (f"\n\nrepro: {r.repro}" if r.repro else "")


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


def _testcase(suite: ET.Element, r: Result, waiver: str | None, counts: _Counts) -> None:
    classname = f"{r.operator}.{_CLASSNAME_UNSAFE.sub('_', r.ep)}"
    case = _element(suite, "testcase", name=r.case, classname=classname, time=_seconds(r.seconds))
    counts.tests += 1
    counts.seconds += r.seconds if math.isfinite(r.seconds) and r.seconds > 0 else 0.0
    headline = first_line(r.message, _MESSAGE_LIMIT)
    if r.status in FAILING and waiver is not None:
        # A known failure must not turn CI red, yet stays visible: skipped, with the failure text kept.
        _element(case, "skipped", message=f"known failure: {waiver}")
        _element(case, "system-out", f"{r.status.value} ({r.failure_kind or 'no kind'}): {_detail(r)}")
        counts.skipped += 1
    elif r.status in FAILING:  # FAIL: a wrong answer; ERROR, CRASH, TIMEOUT, DEVICE_LOST: no answer
        tag = "failure" if r.status is Status.FAIL else "error"
        _element(case, tag, _detail(r), message=headline, type=r.failure_kind or r.status.value)
        counts.failures += r.status is Status.FAIL
        counts.errors += r.status is not Status.FAIL
    elif r.status in _SKIPPED:
        _element(case, "skipped", message=f"{r.status.value}: {headline}" if headline else r.status.value)
        counts.skipped += 1
    elif r.status is Status.QUALITY_WARNING:
        _element(case, "system-out", f"{r.status.value}: {_detail(r)}")


def render_junit(
    environment: Mapping[str, Any],
    results: Sequence[Result],
    waived: Mapping[tuple[str, str], str] | None = None,
) -> str:
    """JUnit XML for ``results``; ``waived`` maps (case, ep) to the reason a FAIL or ERROR there is known."""
    waived = waived or {}
    root = ET.Element("testsuites", name="dml-conformance")
    grouped: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        grouped.setdefault((r.operator, r.ep), []).append(r)
    identity = identity_lines(environment)
    total = _Counts()
    for (operator, ep), members in sorted(grouped.items()):
        suite = _element(root, "testsuite", name=f"{operator} [{ep}]")
        properties = _element(suite, "properties")
        for what, which in identity:
            _element(properties, "property", name=what, value=which)
        counts = _Counts()
        for r in members:
            _testcase(suite, r, waived.get((r.case, r.ep)), counts)
        # Attributes are set after the cases are counted; ElementTree keeps them in insertion order, name first.
        for key, value in counts.attributes().items():
            suite.set(key, value)
        total.add(counts)
    for key, value in total.attributes().items():
        root.set(key, value)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"

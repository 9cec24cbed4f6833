"""The waiver file read into frozen records: its known failures, each optionally narrowed by a failure signature,
and its flaky cases (docs/waivers.md gives every field)::

    known_failures:
      - case: "cases/top_k1/sweep.yaml::long-axis-ties*"   # fnmatch pattern on the full case id
        ep: cuda                                           # fnmatch pattern on the result's EP label
        device: "NVIDIA H100*"                             # optional: pattern on a GPU name in the environment
        driver: "580.*"                                    # optional: pattern on that same GPU's driver version
        failure_kind: tie_order                            # optional signature: a kind or a list of kinds,
        max_mismatches: 3                                  #   bounds on what was measured (also max_abs_error,
        verdict: driver                                    #   max_ulp) and triage's verdict(s)
        reason: CUDA RadixTopK is not index-stable
        tracking: https://github.com/microsoft/onnxruntime/issues/12345   # or a bug id: ADO#12345, BUG-123, 12345
    flaky:
      - case: "cases/mean_variance_normalization1/*"       # the same matching fields, no signature
        ep: webgpu
        reason: the driver's float16 reduction order varies from run to run
        tracking: BUG-7

A file gives ``known_failures:``, ``flaky:`` or both; an empty file is refused. Every problem is one line,
``file:line:col: field: message``. The text a file was read from is kept (``WaiverFile.text``): a run records it in
results.json, so that a reader can apply the same file again (``waiver_text``).
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from conformance.cases.fields import Fields
from conformance.cases.load import Document, load_document, parse_document
from conformance.model import SourcePos
from conformance.problems import CaseFileError, Problem
from conformance.whose import Whose

KNOWN_FAILURES = "known_failures"
FLAKY = "flaky"
SECTIONS = (KNOWN_FAILURES, FLAKY)
TOP_KEY = KNOWN_FAILURES  # the section an empty file is told to write
BOUNDS = ("max_abs_error", "max_ulp", "max_mismatches")
SIGNATURE = ("failure_kind", *BOUNDS, "verdict")
FIELDS = ("case", "ep", "device", "driver", *SIGNATURE, "reason", "tracking")
FLAKY_FIELDS = ("case", "ep", "device", "driver", "reason", "tracking")
REQUIRED = frozenset({"case", "ep", "reason", "tracking"})
_ITEM = "a mapping with case, ep, reason and tracking"
_WHAT = {KNOWN_FAILURES: "known failures", FLAKY: "flaky cases"}
# A bug id, for trackers a URL does not reach (an internal Azure DevOps, Jira): a number (12345, #12345), a tracker's
# prefix and a number (ADO#12345, microsoft/onnxruntime#123), or a Jira-style key (BUG-123, DML-42). Anything else
# ("TODO", "see above", "ftp://...") names no bug, and a waiver without one is never followed up.
BUG_ID = re.compile(r"#?[0-9]+|[A-Za-z][A-Za-z0-9_.\-/]*#[0-9]+|[A-Za-z][A-Za-z0-9_]*-[0-9]+")
TRACKING_FORMS = "an http(s) URL or a bug id (12345, ADO#12345, BUG-123)"
VERDICTS = tuple(whose.value for whose in Whose)


@dataclass(frozen=True)
class Signature:
    """How a known failure fails, where the entry says: its failure kinds, bounds on what was measured (the
    largest absolute error, the largest ULP error, how many elements or sequences failed: gate/signature.py reads
    each) and triage's verdicts. Empty: any failure of the entry's cases is the known one."""

    failure_kinds: tuple[str, ...] = ()
    max_abs_error: float | None = None
    max_ulp: float | None = None
    max_mismatches: float | None = None
    verdicts: tuple[Whose, ...] = ()

    @property
    def narrowed(self) -> bool:
        return self != Signature()


@dataclass(frozen=True)
class Waiver:
    """One entry: patterns on the case id and EP label, optionally on one GPU's name and driver version; ``pos`` is
    where its list item was written; ``signature``: how its failure fails (known failures only); ``flaky``: an entry
    of the ``flaky:`` section, whose results may fail or pass."""

    case: str
    ep: str
    device: str | None
    driver: str | None
    reason: str
    tracking: str
    pos: SourcePos
    signature: Signature = field(default_factory=Signature)
    flaky: bool = False

    @property
    def section(self) -> str:
        return FLAKY if self.flaky else KNOWN_FAILURES


@dataclass(frozen=True)
class WaiverFile:
    """A waiver file as read: where, its text, and its entries, each section in file order."""

    path: str
    text: str
    known_failures: tuple[Waiver, ...]
    flaky: tuple[Waiver, ...] = ()

    @property
    def entries(self) -> tuple[Waiver, ...]:
        """Every entry, what ``apply_waivers`` takes: the known failures, then the flaky cases."""
        return self.known_failures + self.flaky

    @property
    def sha256(self) -> str:
        """The hash of the file's bytes (its text is the UTF-8 it was decoded from, so it encodes back to them)."""
        return hashlib.sha256(self.text.encode("utf-8")).hexdigest()


def load_waiver_file(path: str) -> WaiverFile:
    """Read a waiver file; raise CaseFileError carrying every problem as a ``path:line:col: field: message`` line."""
    try:
        doc = load_document(path)
    except CaseFileError as error:
        raise CaseFileError([_for_waivers(problem) for problem in error.problems]) from None
    return _waiver_file(doc)


def waiver_text(path: str, text: str) -> WaiverFile:
    """A waiver file from its ``text`` (as a run recorded it), its positions naming ``path``; CaseFileError as
    ``load_waiver_file``."""
    try:
        doc = parse_document(path, text)
    except CaseFileError as error:
        raise CaseFileError([_for_waivers(problem) for problem in error.problems]) from None
    return _waiver_file(doc)


def load_waivers(path: str) -> list[Waiver]:
    """Every entry of the waiver file at ``path`` (``WaiverFile.entries``)."""
    return list(load_waiver_file(path).entries)


def _waiver_file(doc: Document) -> WaiverFile:
    if not isinstance(doc.data, dict):
        raise CaseFileError(
            [Problem(doc.pos(()), "", f"must be a mapping with a '{KNOWN_FAILURES}:' or '{FLAKY}:' list")]
        )
    positions = {".".join(map(str, key)): pos for key, pos in doc.positions.items()}
    problems: list[Problem] = []
    top = Fields(doc.data, "", positions, problems)
    top.check_known(SECTIONS)
    if not any(top.has(section) for section in SECTIONS):
        top.problem(KNOWN_FAILURES, f"missing required field (a waiver file gives {KNOWN_FAILURES}:, {FLAKY}: or both)")
    sections = {section: _section(top, section, positions) for section in SECTIONS}
    if problems:
        raise CaseFileError(problems)
    return WaiverFile(doc.path, doc.text, sections[KNOWN_FAILURES], sections[FLAKY])


def _section(top: Fields, section: str, positions: dict[str, SourcePos]) -> tuple[Waiver, ...]:
    """One section's entries (none where the file lacks it), after recording its problems."""
    if not top.has(section):
        return ()
    items = top.raw[section]
    if not isinstance(items, list):
        top.problem(section, f"must be a list of {_WHAT[section]} (write '{section}: []' for none), got {items!r}")
        return ()
    waivers = []
    for index, raw in enumerate(items):
        waiver = _waiver(Fields(raw, f"{section}.{index}", positions, top.problems), raw, section == FLAKY)
        if waiver is not None:
            waivers.append(waiver)
    return tuple(waivers)


def _for_waivers(problem: Problem) -> Problem:
    """load_document's message for an empty file speaks of case files; a waiver file expects something else."""
    if problem.message.startswith("empty file"):
        return replace(problem, message=f"empty file: expected '{TOP_KEY}:' (write '{TOP_KEY}: []' for none)")
    return problem


def _waiver(item: Fields, raw: Any, flaky: bool) -> Waiver | None:
    """One list item as a Waiver, or None after recording its problems."""
    before = len(item.problems)
    if raw is None:
        item.problem("", f"empty list item: expected {_ITEM}")
        return None
    if not isinstance(raw, dict):
        item.problem("", f"must be {_ITEM}, got {raw!r}")
        return None
    item.check_known(FLAKY_FIELDS if flaky else FIELDS)
    values = {name: _text(item, name) for name in FLAKY_FIELDS}
    tracking = values["tracking"]
    if tracking is not None and not is_tracking(tracking):
        item.problem("tracking", f"must be {TRACKING_FORMS} of the bug that tracks the failure, got {tracking!r}")
    signature = Signature() if flaky else _signature(item)
    case, ep, reason = values["case"], values["ep"], values["reason"]
    if case is None or ep is None or reason is None or tracking is None or len(item.problems) > before:
        return None
    return Waiver(case, ep, values["device"], values["driver"], reason, tracking, item.pos(), signature, flaky)


def _text(item: Fields, name: str) -> str | None:
    """A non-empty string field; numbers are refused rather than converted: ``driver: 580.10`` reads as 580.1."""
    if not item.has(name):
        if name in REQUIRED:
            item.problem(name, "missing required field")
        return None
    return _nonempty_text(item, name, item.raw[name])


def _nonempty_text(item: Fields, name: str, value: Any) -> str | None:
    if not isinstance(value, str):
        item.problem(name, f"must be text (quote it), got {value!r}")
        return None
    if not value.strip():
        item.problem(name, "must not be empty")
        return None
    return value


def _signature(item: Fields) -> Signature:
    """The entry's signature fields (those it gives), each checked."""
    kinds = _texts(item, "failure_kind")
    verdicts = _texts(item, "verdict")
    for index, verdict in enumerate(verdicts):
        if verdict not in VERDICTS:
            where = "verdict" if isinstance(item.raw["verdict"], str) else f"verdict.{index}"
            item.problem(where, f"must be one of: {', '.join(VERDICTS)}, got {verdict!r}")
    bounds = {name: _bound(item, name) for name in BOUNDS}
    return Signature(
        failure_kinds=kinds,
        max_abs_error=bounds["max_abs_error"],
        max_ulp=bounds["max_ulp"],
        max_mismatches=bounds["max_mismatches"],
        verdicts=tuple(Whose(verdict) for verdict in verdicts if verdict in VERDICTS),
    )


def _texts(item: Fields, name: str) -> tuple[str, ...]:
    """A text, or a non-empty list of texts; () where the field is not given (or after recording its problem)."""
    if not item.has(name):
        return ()
    value = item.raw[name]
    if isinstance(value, list):
        if not value:
            item.problem(name, "must not be an empty list (leave the field out to match any)")
            return ()
        texts = [_nonempty_text(item, f"{name}.{index}", each) for index, each in enumerate(value)]
        return tuple(text for text in texts if text is not None)
    text = _nonempty_text(item, name, value)
    return (text,) if text is not None else ()


def _bound(item: Fields, name: str) -> float | None:
    """A bound: a finite number at least 0 (a quoted "3" is text, refused as ``_text`` refuses numbers)."""
    if not item.has(name):
        return None
    value = item.raw[name]
    if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    item.problem(name, f"must be a number >= 0, got {value!r}")
    return None


def is_tracking(text: str) -> bool:
    """Whether ``text`` names a bug: an http(s) URL with a host, or a bug id (``BUG_ID``)."""
    return BUG_ID.fullmatch(text) is not None or _is_url(text)


def _is_url(text: str) -> bool:
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an unclosed IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname) and not any(c.isspace() for c in text)

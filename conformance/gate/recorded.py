"""The verdict travels with the results: the waiver file a run was gated with is recorded in its results.json
(``environment.waivers``: its path, the SHA-256 of its bytes, its text and the lines of the entries that waived a
failure), and ``report``, ``merge`` and ``diff`` apply it again where no ``--waivers`` is given, so that a run
re-rendered later keeps its verdict. Given another file, they gate with that one and say so in one line.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.environment import GatedWith
from conformance.gate.waiver_file import WaiverFile, waiver_text
from conformance.gate.waivers import Gate
from conformance.problems import CaseFileError

SHOWN_SHA = 12  # hex digits of a file's SHA-256 in a line: enough to tell two files apart


class RecordedFileError(ValueError):
    """A recorded waiver file that cannot be applied again: one line, where in results.json and what is wrong."""


def record(file: WaiverFile, gate: Gate) -> GatedWith:
    """What results.json records of ``file``, which gave ``gate``."""
    return GatedWith(file.path, file.sha256, file.text, tuple(waiver.pos.line for waiver in gate.applied))


def recorded_file(gated: GatedWith) -> WaiverFile:
    """The file a run recorded, read again from its text (its positions name the recorded path); RecordedFileError
    where the text is not the one hashed (an edited results.json) or no longer loads (a newer harness's fields)."""
    if hashlib.sha256(gated.text.encode("utf-8")).hexdigest() != gated.sha256:
        raise RecordedFileError(f"environment.waivers: its sha256 is not that of its text ({gated.path})")
    try:
        return waiver_text(gated.path, gated.text)
    except CaseFileError as error:
        raise RecordedFileError(
            f"environment.waivers: the recorded waiver file does not load: {error.problems[0]}"
        ) from None


def named(gated: GatedWith | WaiverFile) -> str:
    """ "reports/known-failures.yaml (sha256 0123456789ab)": a waiver file as a line names it."""
    return f"{gated.path} (sha256 {gated.sha256[:SHOWN_SHA]})"


@dataclass(frozen=True)
class Gating:
    """The waiver file to gate with (None: no gate) and the line that says which it is: ``replaced`` where it is not
    the one the run recorded (always printed), else where it is the recorded one (printed unless --quiet)."""

    file: WaiverFile | None
    line: str = ""
    replaced: bool = False


def gating(given: WaiverFile | None, recorded: Sequence[GatedWith]) -> Gating:
    """Which file gates a run that recorded ``recorded`` (each distinct file its parts were gated with: one for a
    run, several only for a merge told which to use): ``given`` (--waivers) where there is one, else the recorded
    file; RecordedFileError where that cannot be read again, or where several were recorded and none given."""
    distinct = list({gated.sha256: gated for gated in recorded}.values())
    if given is not None:
        others = [gated for gated in distinct if gated.sha256 != given.sha256]
        if not others:
            return Gating(given)
        recorded_ones = " and ".join(named(gated) for gated in others)
        return Gating(given, f"gated with {named(given)}, not the run's recorded {recorded_ones}", replaced=True)
    if not distinct:
        return Gating(None)
    if len(distinct) > 1:
        files = " and ".join(named(gated) for gated in distinct)
        raise RecordedFileError(f"gated with several waiver files ({files}): give --waivers FILE to use one")
    return Gating(recorded_file(distinct[0]), f"gated with the run's recorded {named(distinct[0])}")

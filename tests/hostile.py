"""What the hostile-input tests share (test_fuzz_input.py, test_hostile_input.py, test_input_limits.py,
test_report_escaping.py): a valid case file to start from, the check that dmlconf refused something with one-line
problems and exit code 2, a results.json whose every text is hostile, and Markdown read as a comment reads it."""

from __future__ import annotations

import dataclasses
import enum
import re
import time
import types
import typing
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main

LINE = re.compile(r"^[^\n]+:\d+:\d+: [^\n]+$")
SUMMARY = re.compile(r"^\d+ problem\(s\) in \d+ file\(s\)$")
HANG_GUARD = 30.0  # seconds: what each refusal here takes is well under one; more means it expanded or read it all

OK_CASE = """\
operator: SLICE1
feature_level: "3_0"
cases:
  - id: ok
    InputTensor: {Sizes: [2, 2], DataType: FLOAT32, Data: [[1, 2], [3, 4]]}
    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 2]
    InputWindowStrides: [1, 1]
"""


def billion_laughs(levels: int) -> str:
    """An alias bomb: 10**levels strings once expanded, from a file of a few hundred bytes."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def refused(capsys: pytest.CaptureFixture[str], *argv: str, seconds: float = HANG_GUARD) -> list[str]:
    """Run dmlconf; it must exit 2 with only one-line problems on stderr; returns them. ``seconds`` guards against
    a hang (an alias bomb expanded, an 8 GiB file read): not a speed target, which is a benchmark's business."""
    started = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - started
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.splitlines()
    if argv[0] == "run":
        assert lines[-1] == "nothing was run: fix the problems above"
        lines = lines[:-1]
    assert SUMMARY.fullmatch(lines[-1]), lines
    problems = lines[:-1]
    assert problems and all(LINE.fullmatch(line) for line in problems), problems
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return problems


def accepted(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("ok: 1 case(s) in 1 file(s)")


def write(tmp_path: Path, content: str | bytes, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


TWO_CASES = (
    OK_CASE
    + """\
  - id: zero-stride
    InputTensor: {Sizes: [2, 2], DataType: FLOAT32, Data: [[1, 2], [3, 4]]}
    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 2]
    InputWindowStrides: [1, 0]
"""
)


def run_argv(path: Path, report_dir: Path, *more: str) -> list[str]:
    return ["run", str(path), "--ep", "cpu", "-j", "0", "--report-dir", str(report_dir), *more]


# --- a results.json whose every text is hostile ----------------------------------------------------------------------

# Markup of each kind a report could let through: HTML, a table's pipe, a code span's backtick, a line break that
# would start a Markdown block of its own, and a link to a script.
MARKER = "<script>alert(1)</script>|`tick`](javascript:alert(1))*b*_i_\nINJECTED\r\n# heading"


def filled(hint: Any, path: str, marker: str = MARKER) -> Any:
    """JSON for a record field of type ``hint`` in which every text (keys of objects too) is ``path`` and the
    marker: built from the record classes themselves, so that a field added to them is covered without a change
    here. Numbers are 1, flags true, statuses the first of their enum, each list one item."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return f"{path}{marker}"
    if origin in (typing.Union, types.UnionType):
        return filled(next(arm for arm in typing.get_args(hint) if arm is not types.NoneType), path, marker)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return next(iter(hint)).value
    if hint is str:
        return f"{path}{marker}"
    if hint in (int, float, bool):
        return {int: 1, float: 1.5, bool: True}[hint]
    if origin is tuple:
        arguments = typing.get_args(hint)
        if len(arguments) == 2 and arguments[1] is Ellipsis:
            return [filled(arguments[0], f"{path}[0]", marker)]
        return [filled(argument, f"{path}[{i}]", marker) for i, argument in enumerate(arguments)]
    if origin in (Mapping, dict):
        return {f"{path}.key{marker}": filled(typing.get_args(hint)[1], f"{path}.value", marker)}
    assert dataclasses.is_dataclass(hint), hint
    hints = typing.get_type_hints(hint)
    return {f.name: filled(hints[f.name], f"{path}.{f.name}", marker) for f in dataclasses.fields(hint)}


def hostile_results_document(marker: str = MARKER) -> dict[str, Any]:
    """A results.json whose environment and results (one of each status, their drawn details whole) hold the
    marker in every text field."""
    from conformance.environment import Environment
    from conformance.model import Status
    from conformance.results import SCHEMA_VERSION, Drawn, Result

    results = []
    for index, status in enumerate(Status):
        result = filled(Result, f"results[{index}]", marker)
        result |= {"status": status.value, "details": filled(Drawn, f"results[{index}].details", marker)}
        result["repeats"] = [{**result["repeats"][0], "status": status.value}]
        results.append(result)
    environment = filled(Environment, "environment", marker)
    environment["waivers"] = _recorded_waivers(results, marker)
    return {"schema_version": SCHEMA_VERSION, "environment": environment, "results": results}


def _recorded_waivers(results: list[dict[str, Any]], marker: str) -> dict[str, Any]:
    """The waiver file a run recorded (environment.waivers), which a report applies again: its path and reasons hold
    the marker, its entries match the FAIL and the FLAKY result (so that the reports print those reasons), and its
    sha256 is its text's, without which a report refuses the record."""
    import hashlib

    from conformance.gate.suggest import escaped, quoted
    from conformance.model import Status

    def entry(status: Status) -> str:
        result = next(r for r in results if r["status"] == status.value)
        return (
            f"  - case: {quoted(escaped(result['case']))}\n    ep: {quoted(escaped(result['ep']))}\n"
            f"    reason: {quoted(f'environment.waivers.{status.value}{marker}')}\n    tracking: BUG-1\n"
        )

    text = f"known_failures:\n{entry(Status.FAIL)}flaky:\n{entry(Status.FLAKY)}"
    sha256 = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return {"path": f"environment.waivers.path{marker}", "sha256": sha256, "text": text, "applied_lines": [2, 7]}


# --- Markdown read as a pull request comment reads it -----------------------------------------------------------------

_ASCII_PUNCTUATION = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


def _outside_code(line: str) -> str:
    """A Markdown line as its inline parser reads it outside code spans: backslash escapes and code spans (whose
    content is literal text) taken out (CommonMark 2.4 and 6.1)."""
    kept, i = [], 0
    while i < len(line):
        char = line[i]
        if char == "\\" and i + 1 < len(line) and line[i + 1] in _ASCII_PUNCTUATION:
            i += 2
            continue
        if char == "`":
            run = len(line[i:]) - len(line[i:].lstrip("`"))
            closing = re.compile(f"(?<!`){'`' * run}(?!`)").search(line, i + run)
            if closing is not None:  # a code span: its content is text
                i = closing.end()
                continue
            kept.append("`" * run)  # no closing run: the backticks are literal
            i += run
            continue
        kept.append(char)
        i += 1
    return "".join(kept)


def markdown_problems(markdown: str) -> list[str]:
    """What of the marker reached summary.md as markup: a raw tag or script link, a line break that began a line
    of its own, a table row whose pipes do not match its header's."""
    problems = ["a carriage return"] if "\r" in markdown else []
    table: int | None = None
    for number, line in enumerate(markdown.split("\n"), 1):
        text = _outside_code(line)
        problems += [f"line {number}: raw {raw!r}" for raw in ("<script", "](javascript:", "<") if raw in text]
        if text.lstrip(" -*>|").startswith(("INJECTED", "# heading")):
            problems.append(f"line {number}: a line break in a field began a line")
        if line.startswith("|"):
            pipes = text.count("|")
            table = pipes if table is None else table
            if pipes != table:
                problems.append(f"line {number}: {pipes} cells' pipes, the header has {table}")
        else:
            table = None
    return problems

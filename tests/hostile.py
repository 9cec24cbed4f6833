"""What the hostile-input tests share (test_fuzz_input.py, test_hostile_input.py, test_input_limits.py): a valid case
file to start from, and the check that dmlconf refused something with one-line problems and exit code 2."""

from __future__ import annotations

import re
import time
from pathlib import Path

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

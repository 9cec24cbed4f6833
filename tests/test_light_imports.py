"""The commands that only read (results.json, case files) and the pytest plugin's import never load onnxruntime or
onnx (the plugin's import not NumPy either): each runs in a fresh interpreter where importing them is refused and
recorded, and must do its whole job with no attempt recorded (an ImportError swallowed on the way would still be
seen)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "reports" / "h100-cuda" / "results.json"
OTHER = REPO / "reports" / "h100-webgpu" / "results.json"
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"

# Installed first in the child: a finder that refuses onnx and onnxruntime and writes down each attempt.
BLOCKER = """
import importlib.abc, json, sys
attempts = []
class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            attempts.append(name)
            raise ImportError(f"{name} is blocked by the test")
        return None
sys.meta_path.insert(0, Refuse())
"""
REPORT = "\n    print('ATTEMPTS ' + json.dumps(attempts))\n"


HEAVY = ("onnx", "onnxruntime")
WAIVERS = REPO / "reports" / "known-failures.yaml"


def _child(body: str, cwd: Path, blocked: tuple[str, ...] = HEAVY) -> tuple[int, list[str], str]:
    """Runs ``body`` after the blocker; (its exit code, the blocked imports it attempted, its output)."""
    code = (
        f"BLOCKED = {blocked!r}\n"
        + BLOCKER
        + "try:\n"
        + "".join(f"    {line}\n" for line in body.splitlines())
        + "finally:"
        + REPORT
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=cwd, capture_output=True, text=True, timeout=300)
    marker = [line for line in done.stdout.splitlines() if line.startswith("ATTEMPTS ")]
    assert marker, done.stdout + done.stderr
    return done.returncode, json.loads(marker[-1].removeprefix("ATTEMPTS ")), done.stdout + done.stderr


def _dmlconf(args: list[str], cwd: Path) -> tuple[int, list[str], str]:
    return _child(f"from conformance.cli.main import main\nsys.exit(main({args!r}))", cwd)


@pytest.mark.parametrize(
    "args",
    [
        ["report", "RESULTS", "--out-dir", "OUT"],
        ["report", "RESULTS", "--out-dir", "OUT", "--waivers", "WAIVERS"],
        ["diff", "RESULTS", "OTHER", "--markdown", "OUT/diff.md"],
        ["merge", "RESULTS", "--report-dir", "OUT"],
        ["validate", "CASES"],
        ["list", "CASES", "--json"],
        ["list", "CASES", "--quick", "--shard", "1/2"],
        ["coverage", "CASES", "--output", "OUT/coverage.md"],
        ["coverage", "CASES", "--quick", "--output", "OUT/coverage.md"],
        ["schema"],
        ["waivers", "suggest", "RESULTS", "--waivers", "WAIVERS"],
        ["waivers", "lint", "WAIVERS", "CASES"],
    ],
    ids=[
        "report",
        "report-waivers",
        "diff",
        "merge",
        "validate",
        "list",
        "list-quick",
        "coverage",
        "coverage-quick",
        "schema",
        "waivers-suggest",
        "waivers-lint",
    ],
)
def test_reading_commands_load_neither_onnxruntime_nor_onnx(args: list[str], tmp_path: Path) -> None:
    places = {
        "RESULTS": str(RESULTS),
        "OTHER": str(OTHER),
        "CASES": str(REPO / "cases"),
        "OUT": str(tmp_path),
        "WAIVERS": str(WAIVERS),
    }
    for key, value in places.items():
        args = [arg.replace(key, value) for arg in args]
    code, attempts, output = _dmlconf(args, tmp_path)
    assert attempts == [], output
    assert code in (0, 1) and "Traceback" not in output, output  # report and merge gate on the run's FAILs
    assert any(tmp_path.iterdir()) or args[0] in ("validate", "list", "schema", "waivers")  # these print only


def test_the_blocker_sees_a_command_that_runs_cases(tmp_path: Path) -> None:
    """The check can fail: ``run`` needs onnxruntime, and its attempt is recorded."""
    _, attempts, output = _dmlconf(["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--report-dir", "r"], tmp_path)
    assert "onnxruntime" in attempts or "onnx" in attempts, output


def test_the_pytest_plugin_imports_neither_nor_numpy(tmp_path: Path) -> None:
    code, attempts, output = _child("import conformance.pytest_plugin.plugin", tmp_path, (*HEAVY, "numpy"))
    assert (code, attempts) == (0, []), output


def test_the_case_type_imports_no_numpy(tmp_path: Path) -> None:
    """model.Case carries conformance/layout.py's Layouts, which load NumPy: model.py names them for type checking
    only, and the cases stage, which builds them, imports layout.py."""
    code, attempts, output = _child("import conformance.model", tmp_path, (*HEAVY, "numpy"))
    assert (code, attempts) == (0, []), output


def test_the_blocker_sees_a_plugin_that_runs_a_case(tmp_path: Path) -> None:
    """The pytest path can fail too: running a case needs onnxruntime, and the attempt is recorded."""
    args = [str(EXAMPLES), "--ep", "cpu", "--in-process", "-q", "-p", "no:cacheprovider", "-k", "example-1"]
    _, attempts, output = _child(f"import pytest\nsys.exit(pytest.main({args!r}))", tmp_path)
    assert "onnxruntime" in attempts or "onnx" in attempts, output


def test_collecting_cases_under_pytest_imports_neither(tmp_path: Path) -> None:
    """With the EP named, collection reads and validates the case files and runs nothing."""
    args = [str(EXAMPLES), "--ep", "cpu", "--collect-only", "-q", "-p", "no:cacheprovider"]
    body = f"import pytest\nsys.exit(pytest.main({args!r}))"
    code, attempts, output = _child(body, tmp_path)
    assert (code, attempts) == (0, []), output
    assert "spec_examples.yaml::example-1" in output

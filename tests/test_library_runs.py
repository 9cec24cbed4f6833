"""benchmarks/library_runs.py, the script issue 28's figures come from, on the TopK spec examples: it times each run
in each round, prints the ratio of the medians asked for, and diffs each run against an older results.json, whose
case ids it can strip of a folder's prefix; a baseline with a verdict changed by hand shows that change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = "cases/top_k1/spec_examples.yaml"


def test_rounds_ratios_and_diffs_against_older_runs(tmp_path: Path) -> None:
    made = subprocess.run(
        [sys.executable, "-m", "conformance", "run", EXAMPLES, "--ep", "cpu", "--report-dir", str(tmp_path / "old")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert made.returncode == 0, made.stderr
    document = json.loads((tmp_path / "old/results.json").read_text())
    for result in document["results"]:  # as a tree run from its own folder names its cases
        result["case"] = "old-tree/" + result["case"]
    (tmp_path / "same.json").write_text(json.dumps(document))
    document["results"][0]["status"], document["results"][0]["failure_kind"] = "FAIL", "WRONG_VALUES"
    (tmp_path / "changed.json").write_text(json.dumps(document))
    command = [sys.executable, "benchmarks/library_runs.py", EXAMPLES, "--rounds", "2", "--keep", str(tmp_path / "r")]
    command += ["--run", "one=--ep cpu", "--run", "packed1=--ep cpu --pack 1", "--ratio", "one/packed1"]
    command += ["--against", f"one={tmp_path / 'same.json'}", "--against", f"one={tmp_path / 'changed.json'}"]
    done = subprocess.run([*command, "--strip", "old-tree/"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(":")[0] for line in lines[:4]] == [
        "one round 1",
        "packed1 round 1",
        "one round 2",
        "packed1 round 2",
    ]
    table = {
        row[0]: row
        for row in (line.split() for line in lines[4:])
        if row[:1] in (["one"], ["packed1"]) and row[1].isdigit()
    }
    assert table["one"][1] == table["packed1"][1] == "2"  # runs of each
    assert any(line.startswith("one / packed1 (medians): ") and line.endswith("x") for line in lines)
    same, changed = tmp_path / "same.json", tmp_path / "changed.json"
    assert [line for line in lines if " against " in line] == [
        f"one round 1 against {same}: 0 changes (4 compared, 4 outputs bit for bit)",
        f"one round 2 against {same}: 0 changes (4 compared, 4 outputs bit for bit)",
        f"one round 1 against {changed}: fixes 1 (4 compared, 4 outputs bit for bit)",
        f"one round 2 against {changed}: fixes 1 (4 compared, 4 outputs bit for bit)",
    ]
    assert sorted(path.name for path in (tmp_path / "r").iterdir()) == ["one-1", "one-2", "packed1-1", "packed1-2"]

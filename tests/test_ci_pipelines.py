"""docs/ci.md's pipelines, read from the page and run as their CI would run them: each shard job's commands with its
CI's variables (three shards, on the CPU EP, over a small library in a workspace of their own), then the gate job's
merge, which must hold every case once and pass."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
PAGE = REPO / "docs" / "ci.md"
CASES = ["cases/top_k1/spec_examples.yaml", "cases/slice1/spec_examples.yaml"]


def _pipelines() -> list[dict[str, Any]]:
    """The page's YAML blocks, in order: GitLab's, then GitHub's."""
    blocks = re.findall(r"```yaml\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    return [yaml.safe_load(block) for block in blocks]


@pytest.fixture
def workspace(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A checkout's layout with a small library (the spec examples), the committed waiver file, and ``dmlconf`` on
    PATH as this interpreter's."""
    for case in CASES:
        (tmp_path / case).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / case, tmp_path / case)
    (tmp_path / "reports").mkdir()
    shutil.copy(REPO / "reports" / "known-failures.yaml", tmp_path / "reports" / "known-failures.yaml")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "dmlconf"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m conformance "$@"\n', encoding="utf-8")
    shim.chmod(shim.stat().st_mode | stat.S_IXUSR)
    env = {key: value for key, value in os.environ.items() if not key.startswith(("CI_", "DMLCONF_SHARD", "JOB_"))}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    env["PYTHONPATH"] = str(REPO)
    return tmp_path, env


def _shell(line: str, cwd: Path, env: dict[str, str]) -> int:
    """One script line as the CI's shell runs it (variables and globs expanded)."""
    return subprocess.run(["bash", "-c", line], cwd=cwd, env=env, timeout=300, check=False).returncode


def _merged_cases(cwd: Path) -> list[str]:
    document = json.loads((cwd / "merged" / "results.json").read_text(encoding="utf-8"))
    return sorted(result["case"] for result in document["results"])


def _all_cases(cwd: Path, env: dict[str, str]) -> list[str]:
    listed = subprocess.run(
        [sys.executable, "-m", "conformance", "list", "cases", "--json"], cwd=cwd, env=env, capture_output=True,
        text=True, timeout=120, check=True,
    )  # fmt: skip
    return sorted(case["id"] for case in json.loads(listed.stdout))


def test_the_gitlab_pipeline_runs_its_shards_and_gates_their_merge(workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    gitlab = _pipelines()[0]
    shards, gate = gitlab["conformance"], gitlab["gate"]
    count = int(shards["parallel"])
    assert count == 3 and gate["needs"] == ["conformance"]
    for index in range(1, count + 1):
        ci = {**env, "CI_NODE_INDEX": str(index), "CI_NODE_TOTAL": str(count)}
        assert [_shell(line, cwd, ci) for line in shards["script"]] == [0] * len(shards["script"])
        assert (cwd / f"shard-{index}" / "results.json").is_file()
    assert [_shell(line, cwd, env) for line in gate["script"]] == [0]
    assert _merged_cases(cwd) == _all_cases(cwd, env)
    assert (cwd / gate["artifacts"]["reports"]["junit"]).is_file()


def test_the_github_matrix_runs_its_shards_and_gates_their_merge(workspace: tuple[Path, dict[str, str]]) -> None:
    cwd, env = workspace
    jobs = _pipelines()[1]["jobs"]
    shards, gate = jobs["conformance"], jobs["gate"]
    assert gate["needs"] == "conformance"
    values = shards["strategy"]["matrix"]["shard"]
    for value in values:

        def expanded(text: object, value: object = value) -> str:
            return str(text).replace("${{ matrix.shard }}", str(value))

        ci = {**env, **{key: expanded(text) for key, text in shards["env"].items()}}
        assert ci["DMLCONF_SHARD_COUNT"] == str(len(values))
        runs = [expanded(step["run"]) for step in shards["steps"] if "run" in step and "pip install" not in step["run"]]
        assert [_shell(line, cwd, ci) for line in runs] == [0] * len(runs)
    merge = [step["run"] for step in gate["steps"] if "run" in step and "pip install" not in step["run"]]
    assert [_shell(line, cwd, env) for line in merge] == [0]
    assert _merged_cases(cwd) == _all_cases(cwd, env)

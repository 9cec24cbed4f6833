"""DirectML for real: the genuine onnxruntime-directml DLLs in the runner under Wine + vkd3d-proton, on whatever Vulkan
device the machine has (lavapipe in CI). Expected values come from the spec's examples (the case files' ``expected:``)
and from the oracle; the known DirectML findings are the waiver file's, so an unexpected one fails.

Skipped, with the missing piece named, where the chain is not set up (docs/directml-on-linux.md#setting-it-up); in
CI (CI=true) an absent chain is a failure, never a skip.
"""

from __future__ import annotations

import gc
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.ep.directml import DIRECTML_VERSIONS, feature_level_for
from conformance.ep.dml_here import directml_for
from conformance.ep.providers import parse_ep
from conformance.ep.wine.chain import MINGW, RUNNER_CC, find_chain
from conformance.ep.wine.client import Runner, RunnerDied, Runners

REPO = Path(__file__).resolve().parent.parent
SPEC_EXAMPLES = ["cases/top_k1/spec_examples.yaml", "cases/slice1/spec_examples.yaml"]
DML = "DmlExecutionProvider"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no Wine chain")


def _dmlconf(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip


def _results(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return loaded


def test_doctor_prints_every_link_of_the_chain(chain_ready: None) -> None:
    done = _dmlconf("doctor")
    lines = done.stdout.splitlines()
    assert done.returncode == 0, done.stdout + done.stderr
    links = [line.split(":")[0].split(None, 1) for line in lines[:-1]]
    assert [status for status, _ in links] == ["ok"] * 11
    assert [name for _, name in links] == [
        "Wine", "vkd3d-proton", "onnxruntime-directml", "runner", "display", "Wine prefix", "Vulkan",
        "runner start", "D3D12 device", "DirectML device", "one-node TopK",
    ]  # fmt: skip
    assert "spec example 3 exact" in lines[-2] and f"on {DML}" in lines[-2]
    assert lines[-1] == "the DirectML chain works: --ep dml runs the genuine DirectML here"


def test_the_spec_examples_pass_on_directml(chain_ready: None, tmp_path: Path) -> None:
    done = _dmlconf("run", *SPEC_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    found = _results(tmp_path)
    assert [(r["case"].rpartition("::")[2], r["status"]) for r in found["results"]] == [
        ("example-1", "PASS"), ("example-2-different-axis", "PASS"), ("example-3-tied-values", "PASS"),
        ("example-4-increasing", "PASS"), ("example-1-positive-strides", "PASS"),
        ("example-2-negative-strides", "PASS"),
    ]  # fmt: skip
    for result in found["results"]:  # every node DirectML's own, by onnxruntime's profile
        assert result["placement"] and set(result["placement"].values()) == {DML}, result["case"]
    chain = found["environment"]["eps"][0]["directml"]["chain"]
    assert chain["transport"] == "wine+vkd3d-proton"
    # One runner: the worker's, whose describe as it started is the run's (the run's own process starts none).
    assert found["environment"]["peak_memory"]["runners"] == 1
    assert chain["wine"].startswith("wine-") and chain["directml_dll"].startswith("1.")
    assert chain["dml_feature_level"] == found["environment"]["eps"][0]["target_feature_level"]
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    assert "wine+vkd3d-proton" in summary and chain["adapter"]["description"] in summary
    if shutil.which(MINGW) and not os.environ.get(RUNNER_CC):  # the default compiler where mingw-w64 is there
        assert chain["runner"]["compiler"] == "mingw"


def test_the_runner_built_by_zig_passes_the_spec_examples(chain_ready: None, tmp_path: Path) -> None:
    """The runner as a machine without mingw-w64 builds it (zig from the ziglang distribution, as on Windows), under
    the same Wine: the spec's examples to their expected outputs, and the run's identity names that build."""
    if importlib.util.find_spec("ziglang") is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must build the runner with zig too: pip install -e '.[test]' brings ziglang")
        pytest.skip("ziglang is not installed (pip install ziglang)")
    env = dict(os.environ, **{RUNNER_CC: "zig"})
    done = _dmlconf("run", *SPEC_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path), env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    found = _results(tmp_path)
    assert [(r["case"].rpartition("::")[2], r["status"]) for r in found["results"]] == [
        ("example-1", "PASS"), ("example-2-different-axis", "PASS"), ("example-3-tied-values", "PASS"),
        ("example-4-increasing", "PASS"), ("example-1-positive-strides", "PASS"),
        ("example-2-negative-strides", "PASS"),
    ]  # fmt: skip
    runner = found["environment"]["eps"][0]["directml"]["chain"]["runner"]
    assert (runner["compiler"], runner["chosen"]) == ("zig", f"{RUNNER_CC}=zig")
    assert runner["version"] == importlib.metadata.version("ziglang")
    staged = find_chain(env).folder / "dmlrunner.exe"  # the program that ran, beside the DLLs
    assert runner["sha256"] == hashlib.sha256(staged.read_bytes()).hexdigest()


OLDEST = "dml:directml=1.13.1,ort=1.19.0"  # the oldest DirectML.dll beside the oldest onnxruntime.dll


def test_the_oldest_and_the_newest_directml_builds_pass_the_spec_examples(chain_ready: None, tmp_path: Path) -> None:
    # A break in either direction (a new DirectML, or the harness leaving an old one behind) shows here.
    done = _dmlconf("run", *SPEC_EXAMPLES, "--ep", OLDEST, "--ep", "dml", "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    found = _results(tmp_path)
    assert sorted((r["ep"], r["status"]) for r in found["results"]) == [("dml", "PASS")] * 6 + [(OLDEST, "PASS")] * 6
    chains = {ep["label"]: ep["directml"]["chain"] for ep in found["environment"]["eps"]}
    # Each build's DLLs are the ones asked for, by their own file versions (DLL versions read by the runner).
    assert chains[OLDEST]["directml_dll"].startswith("1.13.1.") and chains["dml"]["directml_dll"].startswith("1.15.4.")
    assert chains[OLDEST]["onnxruntime_dll"].startswith("1.19.") and chains["dml"]["onnxruntime_dll"].startswith(
        "1.24."
    )
    assert (chains[OLDEST]["dml_feature_level"], chains["dml"]["dml_feature_level"]) == ("6_2", "6_4")


@pytest.mark.parametrize("directml", DIRECTML_VERSIONS)
def test_each_directml_build_answers_the_feature_level_the_table_gives_it(chain_ready: None, directml: str) -> None:
    """The harness's version -> feature level table (directml.py, from Microsoft's version history) against what
    each DirectML.dll answers itself (IDMLDevice::CheckFeatureSupport): NOT_SUPPORTED gating follows the device,
    but a Windows machine whose DLL version cannot be asked relies on the table."""
    ep = parse_ep(f"dml:directml={directml},ort=1.19.0")
    answered = directml_for([ep])[ep.text]
    assert answered.version == directml
    assert answered.feature_level == feature_level_for(directml)


def test_a_case_beyond_a_build_s_feature_level_is_not_supported_there_and_runs_on_the_next(
    chain_ready: None, tmp_path: Path
) -> None:
    """The spec's TopK example 1, demanding feature level 6_3: DirectML 1.13.1 answers 6_2 and must decline it,
    1.14.1 answers 6_3 and must run it (to the spec's outputs). No case of the library needs more than 4_0, the
    highest level the three spec pages name, so only such a case shows the gate following each build's answer."""
    example = (REPO / "cases" / "top_k1" / "spec_examples.yaml").read_text(encoding="utf-8")
    first = example.split("\n  - id: example-2")[0]
    assert 'feature_level: "2_1"' in first
    (tmp_path / "level-6_3.yaml").write_text(first.replace('feature_level: "2_1"', 'feature_level: "6_3"'), "utf-8")
    old, new = "dml:directml=1.13.1,ort=1.19.0", "dml:directml=1.14.1,ort=1.19.0"
    out = tmp_path / "out"
    done = _dmlconf("run", str(tmp_path / "level-6_3.yaml"), "--ep", old, "--ep", new, "--report-dir", str(out))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    results = _results(out)["results"]
    assert [r["case"].split("::")[1] for r in results] == ["example-1", "example-1"]
    verdicts = {r["ep"]: (r["status"], r["failure_kind"], r["message"]) for r in results}
    assert verdicts == {
        old: ("NOT_SUPPORTED", "feature_level", "needs feature level 6_3; the target is 6_2"),
        new: ("PASS", None, ""),
    }


def test_the_quick_selection_on_directml_has_only_known_failures(chain_ready: None, tmp_path: Path) -> None:
    waivers = str(REPO / "reports" / "known-failures.yaml")
    done = _dmlconf("run", "--quick", "--ep", "dml", "--waivers", waivers, "--report-dir", str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    statuses = {r["status"] for r in _results(tmp_path)["results"]}
    assert "PASS" in statuses and "ERROR" not in statuses


def test_the_pytest_plugin_runs_directml_cases(chain_ready: None) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", SPEC_EXAMPLES[0], "--ep", "dml"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert "4 passed" in done.stdout


def test_the_pytest_plugin_gates_directml_on_the_waiver_file(chain_ready: None, tmp_path: Path) -> None:
    """A DirectML finding the shipped waiver file names is an xfail with its reason; a case that passes, waived here
    on purpose, is XPASS(strict) and fails the session."""
    waivers = tmp_path / "known.yaml"
    waivers.write_text(
        (REPO / "reports" / "known-failures.yaml").read_text(encoding="utf-8")
        + '  - {case: "cases/top_k1/spec_examples.yaml::example-1", ep: "dml*", reason: passes, '
        + "tracking: https://example.com/bugs/1}\n",
        encoding="utf-8",
    )
    selection = ["cases/found/top_k1.yaml", SPEC_EXAMPLES[0], "-k", "nan-position and FLOAT32-DECREASING or example-1"]
    gate = ["--ep", "dml", "--waivers", str(waivers)]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rxf", "-p", "no:cacheprovider", *selection, *gate],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert (
        "XFAIL cases/found/top_k1.yaml::nan-position[FLOAT32-DECREASING] - FAIL (wrong_elements): directml: "
        "DirectML TopK with NaN in the input selects the wrong elements" in "\n".join(lines)
    )
    assert f"{SPEC_EXAMPLES[0]}::example-1 - [XPASS(strict)] passes" in "\n".join(lines)
    assert lines[-1].startswith("1 failed, ") and ", 1 xfailed" in lines[-1]


def test_a_node_directml_does_not_take_is_named_not_run_on_the_cpu(chain_ready: None, tmp_path: Path) -> None:
    mvn = "cases/mean_variance_normalization1/library.yaml"
    done = _dmlconf("run", mvn, "-k", "activation[GELU-FLOAT32", "--ep", "dml", "--report-dir", str(tmp_path))
    (result,) = _results(tmp_path)["results"]
    assert done.returncode == 0, done.stderr  # NOT_SUPPORTED is no failure of the gate: the report says what ran where
    assert (result["status"], result["failure_kind"]) == ("NOT_SUPPORTED", "placed_elsewhere")
    assert result["message"] == "Gelu node 'Gelu_1' was placed on CPUExecutionProvider, not DmlExecutionProvider"


def test_a_killed_runner_is_said_so_and_the_next_one_starts(chain_ready: None) -> None:
    runners = Runners()
    try:
        runner: Runner = runners.get()
        os.kill(runner._process.pid, signal.SIGKILL)
        with pytest.raises(RunnerDied, match=r"^the DirectML runner \(pid \d+\) was killed by SIGKILL"):
            runner.describe(0)
        again = runners.get()
        assert again is not runner and again.describe(0)["dml_feature_level"]
    finally:
        runners.close()


def _ended(pid: int) -> bool:
    """The process is gone, or a zombie waiting to be reaped: it ran to its end."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="utf-8")
    except OSError:
        return True
    return "\nState:\tZ" in status


def test_a_runner_nobody_holds_ends(chain_ready: None) -> None:
    runner = Runner(find_chain())
    pid = runner._process.pid
    assert not _ended(pid)
    del runner
    gc.collect()
    deadline = time.monotonic() + 30
    while not _ended(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _ended(pid)  # its stdin was closed with it: the runner saw the end of its input and exited

"""--rerun-failures N: a failure that passes when run again is FLAKY, one that fails every time stays as it was, only
the unexpected failures run again, and they run again as the run ran them (in its workers: a crash run again is a
crash again, not the end of the run). The flaky EPs are stand-ins: the real CPU EP with its first answer spoiled
(-j 0), and a worker that crashes once (DMLCONF_TEST_FAULT=segv_once); the failures every time are real: the CPU EP
against a tolerance of 0 ULP, and DirectML's on lavapipe (reports/README.md: float16-variance-below-the-smallest-half).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Loaded before any in-process pytester run (test_plugin.py says why).
import conformance.survive.pool  # noqa: F401
from conformance.cli.main import main
from conformance.ep.execute import Execution
from conformance.model import OUTPUT_VALUE_TENSOR, Status
from conformance.results import Repeat, Result
from conformance.run import onnxruntime_path
from conformance.run.again import settled, worth_running_again
from conformance.survive.faults import TEST_FAULT, TEST_ONCE

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parent.parent
SPEC = "cases/top_k1/spec_examples.yaml"
EXAMPLE_1 = f"{SPEC}::example-1"
FAST = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider")
# The CPU EP's MVN1 is within 2 ULP of the oracle here, never exact: with a tolerance of 0 ULP, a FAIL every run.
EXACT_MVN = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "3_1"
cases:
  - id: exact
    InputTensor: {Sizes: [1, 2, 3, 64], DataType: FLOAT32, Generator: {Kind: normal, Seed: 7}}
    Axes: [2, 3]
    tolerance: {max_ulp: 0, atol: 0}
"""


# -- what the runs make of a failure (run/again.py) ------------------------------------------------------------


FAILED = Result(EXAMPLE_1, "TOP_K1", "cpu", Status.FAIL, "values", message="3/12 elements differ")


def test_a_failure_that_passes_on_a_run_again_is_flaky_keeping_its_kind_and_message() -> None:
    again = [
        Result(EXAMPLE_1, "TOP_K1", "cpu", Status.FAIL, "values", outputs_sha256={"V": "bad"}),
        Result(EXAMPLE_1, "TOP_K1", "cpu", Status.PASS, outputs_sha256={"V": "good"}, placement={"TopK": "CPU"}),
    ]
    result = settled(replace(FAILED, outputs_sha256={"V": "bad"}), again, 3)
    assert (result.status, result.failure_kind) == (Status.FLAKY, "values")
    assert result.message == (
        "passed on re-run 2 of 3 (--rerun-failures; runs: FAIL (values), FAIL (values), PASS)\n3/12 elements differ"
    )
    assert result.repeats == (
        Repeat(Status.FAIL, "values", {"V": "bad"}),
        Repeat(Status.FAIL, "values", {"V": "bad"}),
        Repeat(Status.PASS, None, {"V": "good"}),
    )
    assert result.outputs_sha256 == {} and result.placement == {"TopK": "CPU"}


def test_a_failure_that_fails_every_time_stays_as_it_was_with_its_runs() -> None:
    again = [Result(EXAMPLE_1, "TOP_K1", "cpu", Status.CRASH, "worker_died")]
    result = settled(FAILED, again, 1)
    assert replace(result, repeats=()) == FAILED
    assert result.repeats == (Repeat(Status.FAIL, "values"), Repeat(Status.CRASH, "worker_died"))
    assert settled(FAILED, [], 2) == FAILED  # never run again (an interrupted run): as it was


def test_a_failure_s_own_repeats_come_before_its_runs_again() -> None:
    repeated = replace(FAILED, repeats=(Repeat(Status.FAIL, "values"), Repeat(Status.FAIL, "values")))
    result = settled(repeated, [Result(EXAMPLE_1, "TOP_K1", "cpu", Status.QUALITY_WARNING)], 1)
    assert result.status is Status.FLAKY
    assert [run.status for run in result.repeats] == [Status.FAIL, Status.FAIL, Status.QUALITY_WARNING]


def test_only_failures_other_than_flaky_are_run_again() -> None:
    chosen = {status for status in Status if worth_running_again(replace(FAILED, status=status))}
    assert chosen == {Status.FAIL, Status.ERROR, Status.CRASH, Status.TIMEOUT, Status.DEVICE_LOST}


# -- dmlconf run -------------------------------------------------------------------------------------------------


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # case ids as a user in a checkout sees them


def _results(folder: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {r["case"]: r for r in document["results"]}


def _wrong_first(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """onnxruntime_path.execute as the real CPU EP, but its first answer has its first value off by 100; the
    lowerings it was called for, in order."""
    real = onnxruntime_path.execute
    calls: list[str] = []

    def execute(lowering: Any, ep: Any, sessions: Any = None, threads: Any = None) -> Execution:
        done = real(lowering, ep, sessions, threads)
        calls.append(lowering.name)
        if len(calls) > 1:
            return done
        values = np.array(done.outputs[OUTPUT_VALUE_TENSOR], copy=True)
        values.reshape(-1)[0] += 100
        return replace(done, outputs={**done.outputs, OUTPUT_VALUE_TENSOR: values})

    monkeypatch.setattr(onnxruntime_path, "execute", execute)
    return calls


def test_a_wrong_answer_once_is_flaky_and_fails_and_a_tolerated_one_is_not_run_again(
    in_repo: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _wrong_first(monkeypatch)  # -j 0 and --pack 1: example-1's answer, the run's first, is wrong
    args = ["run", SPEC, "--ep", "cpu", "--pack", "1", "--rerun-failures", "2", "-j", "0"]
    assert main([*args, "--report-dir", str(tmp_path / "plain")]) == 1
    assert len(calls) == 5  # the four cases, then the failing one alone, once: it passed
    results = _results(tmp_path / "plain")
    flaky = results.pop(EXAMPLE_1)
    kind = flaky["repeats"][0]["failure_kind"]
    assert flaky["status"] == "FLAKY" and flaky["failure_kind"] == kind and kind is not None
    assert [run["status"] for run in flaky["repeats"]] == ["FAIL", "PASS"]
    lines = flaky["message"].splitlines()
    assert lines[0] == f"passed on re-run 1 of 2 (--rerun-failures; runs: FAIL ({kind}), PASS)"
    assert "elements differ" in lines[1]  # the failure's own message follows
    assert all(r["status"] == "PASS" and "repeats" not in r for r in results.values())  # not run again
    out = capsys.readouterr().out
    assert f"--rerun-failures 2: running 1 failure(s) again\n  FLAKY ({kind}) {EXAMPLE_1} [cpu]\n" in out
    waivers = tmp_path / "flaky.yaml"
    waivers.write_text(
        f'flaky:\n  - case: "{EXAMPLE_1}"\n    ep: cpu\n    reason: wrong once\n    tracking: BUG-1\n', encoding="utf-8"
    )
    calls.clear()  # spoils the first answer again; a failure the flaky: section tolerates is expected: not run again
    assert main([*args, "--report-dir", str(tmp_path / "waived"), "--waivers", str(waivers)]) == 0
    assert len(calls) == 4 and "repeats" not in _results(tmp_path / "waived")[EXAMPLE_1]


def _dmlconf(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k not in (TEST_FAULT, TEST_ONCE)}
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        env=clean | (env or {}),
    )


def test_a_worker_that_crashes_once_is_flaky_and_one_that_crashes_every_time_stays_a_crash(tmp_path: Path) -> None:
    once = tmp_path / "once"
    once.touch()
    args = ["run", SPEC, "-k", EXAMPLE_1, "--ep", "cpu", "--pack", "1", "-j", "1", "--rerun-failures", "2"]
    done = _dmlconf(*args, "--report-dir", str(tmp_path / "once-run"), env={TEST_FAULT: "segv_once:example-1",
                    TEST_ONCE: str(once)})  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert not once.exists()  # the one crash happened
    (flaky,) = _results(tmp_path / "once-run").values()
    assert (flaky["status"], flaky["failure_kind"]) == ("FLAKY", "worker_died")
    assert [run["status"] for run in flaky["repeats"]] == ["CRASH", "PASS"]
    assert flaky["message"].splitlines()[0] == (
        "passed on re-run 1 of 2 (--rerun-failures; runs: CRASH (worker_died), PASS)"
    )
    assert "SIGSEGV" in flaky["message"] and flaky["placement"]  # the crash's words; the passing run's placement
    # The run again goes to a worker: a crash every time costs its case three workers, not the run.
    done = _dmlconf(*args, "--report-dir", str(tmp_path / "every"), env={TEST_FAULT: "segv:example-1"})
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--rerun-failures 2: running 1 failure(s) again" in done.stdout
    (crash,) = _results(tmp_path / "every").values()
    assert (crash["status"], crash["failure_kind"]) == ("CRASH", "worker_died")
    assert [run["status"] for run in crash["repeats"]] == ["CRASH", "CRASH", "CRASH"]
    assert not crash["message"].startswith("passed")


def test_a_cpu_failure_every_time_stays_a_fail_and_an_expected_one_is_not_run_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    case = tmp_path / "exact.yaml"
    case.write_text(EXACT_MVN, encoding="utf-8")
    args = ["run", str(case), "--ep", "cpu", "--rerun-failures", "2"]
    assert main([*args, "--report-dir", str(tmp_path / "plain")]) == 1
    (failed,) = _results(tmp_path / "plain").values()
    assert (failed["status"], failed["failure_kind"]) == ("FAIL", "tolerance")
    assert [run["status"] for run in failed["repeats"]] == ["FAIL", "FAIL", "FAIL"]
    hashes = [run["outputs_sha256"] for run in failed["repeats"]]
    assert hashes[0] and hashes[0] == hashes[1] == hashes[2] == failed["outputs_sha256"]  # the same wrong answer
    assert "running 1 failure(s) again" in capsys.readouterr().out
    waivers = tmp_path / "known.yaml"
    waivers.write_text(
        f'known_failures:\n  - case: "{failed["case"]}"\n    ep: cpu\n    reason: 2 ULP\n    tracking: BUG-2\n',
        encoding="utf-8",
    )
    assert main([*args, "--report-dir", str(tmp_path / "waived"), "--waivers", str(waivers)]) == 0
    (known,) = _results(tmp_path / "waived").values()
    assert known["status"] == "FAIL" and "repeats" not in known
    assert "--rerun-failures" not in capsys.readouterr().out


# -- the pytest plugin -------------------------------------------------------------------------------------------


def test_pytest_runs_an_unexpected_failure_again_and_not_an_expected_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    pytester.path.joinpath("spec_examples.yaml").write_bytes((REPO / SPEC).read_bytes())
    once = tmp_path / "once"
    monkeypatch.setenv(TEST_FAULT, "segv_once:spec_examples.yaml::example-3")  # the session's worker inherits it
    monkeypatch.setenv(TEST_ONCE, str(once))
    once.touch()
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--rerun-failures", "1")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        ["FLAKY (worker_died) on cpu: passed on re-run 1 of 1 (--rerun-failures; runs: CRASH (worker_died), PASS)"]
    )
    waivers = tmp_path / "flaky.yaml"  # tolerates example-3 whatever its status
    waivers.write_text(
        'flaky:\n  - case: "spec_examples.yaml::example-3*"\n    ep: cpu\n    reason: crashes once\n'
        "    tracking: BUG-3\n",
        encoding="utf-8",
    )
    once.touch()
    result = pytester.runpytest(*FAST, "-rx", "--ep", "cpu", "--rerun-failures", "1", "--waivers", str(waivers))
    result.assert_outcomes(passed=3, xfailed=1)
    # the crash itself is expected: not run again (which would have made it FLAKY)
    result.stdout.fnmatch_lines(["XFAIL *example-3* - CRASH (worker_died): flaky: crashes once (BUG-3)"])


# -- DirectML on lavapipe ----------------------------------------------------------------------------------------


CASE = "cases/found/mean_variance_normalization1.yaml::float16-variance-below-the-smallest-half"


def test_directml_s_deterministic_failure_stays_a_failure(chain_ready: None, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    done = _dmlconf(
        "run", CASE.partition("::")[0], "-k", CASE, "--ep", "dmlop", "--rerun-failures", "2", "--report-dir",
        str(folder),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--rerun-failures 2: running 1 failure(s) again" in done.stdout
    (result,) = _results(folder).values()
    assert result["status"] == "FAIL" and result["failure_kind"] == "non_finite"
    assert [run["status"] for run in result["repeats"]] == ["FAIL", "FAIL", "FAIL"]

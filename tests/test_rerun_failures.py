"""--rerun-failures N: a failure that passes when run again is FLAKY, one that fails every time stays as it was, and
only the failures chosen run again. The flaky EP is a fake (run_entry answering PASS on its second call); the
deterministic failure is DirectML's on lavapipe (reports/README.md: float16-variance-below-the-smallest-half)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.cases.suite import collect
from conformance.ep.sessions import Sessions
from conformance.model import Status
from conformance.results import Result
from conformance.run import again as again_module
from conformance.run.options import RunOptions

REPO = Path(__file__).resolve().parent.parent
SPEC = "cases/top_k1/spec_examples.yaml"


def _entry_and_failure() -> tuple[object, Result]:
    entry = collect([str(REPO / SPEC)]).entries[0]
    failure = Result(entry.id, "TOP_K1", "cpu", Status.FAIL, "values", message="3/12 elements differ")
    return entry, failure


def test_a_failure_that_passes_again_is_flaky(monkeypatch: pytest.MonkeyPatch) -> None:
    entry, failure = _entry_and_failure()
    answers = iter([Status.FAIL, Status.PASS, Status.FAIL])
    calls: list[str] = []

    def fake_run(entry: object, ep: object, options: object, sessions: object) -> Result:
        calls.append("run")
        status = next(answers)
        return Result(failure.case, "TOP_K1", "cpu", status, "values" if status is Status.FAIL else None)

    monkeypatch.setattr(again_module, "run_entry", fake_run)
    result = again_module.again(failure, entry, 3, RunOptions(), Sessions(capacity=0))  # type: ignore[arg-type]
    assert len(calls) == 2  # it stops at the first pass
    assert result.status is Status.FLAKY and result.failure_kind == "values"
    assert result.message.splitlines()[0] == (
        "passed on re-run 2 of 3 (--rerun-failures; runs: FAIL (values), FAIL (values), PASS)"
    )
    assert result.message.splitlines()[1] == "3/12 elements differ"
    assert [r.status for r in result.repeats] == [Status.FAIL, Status.FAIL, Status.PASS]


def test_a_failure_that_fails_every_time_stays_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    entry, failure = _entry_and_failure()
    monkeypatch.setattr(
        again_module, "run_entry", lambda *_: Result(failure.case, "TOP_K1", "cpu", Status.FAIL, "values")
    )
    result = again_module.again(failure, entry, 2, RunOptions(), Sessions(capacity=0))  # type: ignore[arg-type]
    assert (result.status, result.failure_kind, result.message) == (Status.FAIL, "values", failure.message)
    assert len(result.repeats) == 3


def test_only_the_chosen_failures_run_again(monkeypatch: pytest.MonkeyPatch) -> None:
    entry, failure = _entry_and_failure()
    other = Result("cases/x.yaml::other", "TOP_K1", "cpu", Status.FAIL, "values")
    ran: list[str] = []
    monkeypatch.setattr(
        again_module,
        "run_entry",
        lambda entry, ep, *_: ran.append(entry.id) or Result(entry.id, "TOP_K1", "cpu", Status.PASS),
    )
    done = again_module.rerun_failures(
        [failure, other],
        {(failure.case, "cpu")},
        {failure.case: entry},
        1,
        RunOptions(),  # type: ignore[dict-item]
    )
    assert ran == [failure.case]
    assert [r.status for r in done] == [Status.FLAKY, Status.FAIL]


CASE = "cases/found/mean_variance_normalization1.yaml::float16-variance-below-the-smallest-half"


def test_directml_s_deterministic_failure_stays_a_failure(chain_ready: None, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    done = subprocess.run(
        [
            sys.executable, "-m", "conformance", "run", CASE.partition("::")[0], "-k", CASE, "--ep", "dmlop",
            "--rerun-failures", "2", "--report-dir", str(folder), "-j", "0",
        ],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "--rerun-failures 2: running 1 failure(s) again" in done.stdout
    (result,) = json.loads((folder / "results.json").read_text())["results"]
    assert result["status"] == "FAIL" and result["failure_kind"] == "non_finite"
    assert [run["status"] for run in result["repeats"]] == ["FAIL", "FAIL", "FAIL"]

"""--repeat N: each (case, EP) run N times, FLAKY where the runs' verdicts or output bytes differ, every run's output
hashes recorded. The stand-in EPs here are the real CPU EP with one run's outputs changed, as a GPU's nondeterminism
would change them."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Loaded before any in-process pytester run (test_plugin.py says why).
import conformance.survive.pool  # noqa: F401
from conformance.cases.fingerprint import tensor_sha256
from conformance.cases.suite import read_file
from conformance.cli.main import main
from conformance.environment import Environment
from conformance.ep.errors import ExecutionError, ProcessDied
from conformance.ep.execute import Execution
from conformance.ep.providers import parse_ep
from conformance.ep.sessions import Sessions
from conformance.gate.summary import summarize
from conformance.gate.waivers import Waiver, apply_waivers, overall_failed
from conformance.model import OUTPUT_INDEX_TENSOR, OUTPUT_VALUE_TENSOR, Case, SourcePos, Status
from conformance.results import Repeat, Result, read_results, result_from_json, write_results
from conformance.run import onnxruntime_path
from conformance.run.batch import Unwatched, run_batch
from conformance.run.options import RunOptions, repro_command
from conformance.run.repeat import merged
from conformance.survive.stream import run_identity

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[1]
TOPK_EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
EXAMPLE_1 = "cases/top_k1/spec_examples.yaml::example-1"
CPU = parse_ep("cpu")
FAST = ("-p", "no:hypothesispytest")
MVN = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "3_1"
cases:
  - id: first
    InputTensor: {Sizes: [1, 2, 3, 4], DataType: FLOAT32, Generator: {Kind: normal, Seed: 7}}
    Axes: [2, 3]
  - id: second
    InputTensor: {Sizes: [1, 2, 3, 4], DataType: FLOAT32, Generator: {Kind: normal, Seed: 8}}
    Axes: [2, 3]
"""
# A 1-ULP change of an MVN output: inside its tolerance (16 ULP for float32), so the verdict stays PASS.
ONE_ULP = "one_ulp"
# A TOP_K1 value changed by far: a FAIL.
WRONG = "wrong"


def _changed(array: np.ndarray, how: str) -> np.ndarray:
    changed = np.array(array, copy=True)
    flat = changed.reshape(-1)
    flat[0] = np.nextafter(flat[0], np.float32(np.inf)) if how == ONE_ULP else flat[0] + 100
    return changed


def _spoiling_execute(monkeypatch: pytest.MonkeyPatch, spoiled: set[int], how: str, output: str) -> list[str]:
    """onnxruntime_path.execute as the real CPU EP, but the ``spoiled`` calls (1-based) return ``output`` changed; the
    lowerings it was called for, in order."""
    real = onnxruntime_path.execute
    calls: list[str] = []

    def execute(lowering: Any, ep: Any, sessions: Any = None, threads: Any = None) -> Execution:
        done = real(lowering, ep, sessions, threads)
        calls.append(lowering.name)
        if len(calls) not in spoiled:
            return done
        return replace(done, outputs={**done.outputs, output: _changed(done.outputs[output], how)})

    monkeypatch.setattr(onnxruntime_path, "execute", execute)
    return calls


@pytest.fixture
def in_repo(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # case ids and repro lines as a user in a checkout sees them


def _results(folder: Path) -> dict[str, dict[str, Any]]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return {r["case"]: r for r in document["results"]}


def _spec_outputs_sha256() -> dict[str, dict[str, str]]:
    """Each spec example's outputs as the spec page gives them (the case file's ``expected:``), hashed as the CPU EP
    returns them: float32 values, int64 indices."""
    entries, problems = read_file(str(TOPK_EXAMPLES.relative_to(REPO)))
    assert problems == []
    dtypes = {OUTPUT_VALUE_TENSOR: np.float32, OUTPUT_INDEX_TENSOR: np.int64}
    return {
        entry.id: {
            name: tensor_sha256(np.array(values, dtype=dtypes[name]).reshape(entry.expected_shapes[name]))
            for name, values in entry.expected.items()
        }
        for entry in entries
        if isinstance(entry, Case)
    }


def test_a_deterministic_cpu_run_repeated_passes_with_every_run_s_equal_hashes(in_repo: None, tmp_path: Path) -> None:
    # Through the worker process (-j 1, the default) as a user's run goes.
    code = main(
        ["run", str(TOPK_EXAMPLES.relative_to(REPO)), "--ep", "cpu", "--repeat", "3", "--report-dir", str(tmp_path)]
    )
    assert code == 0
    results = _results(tmp_path)
    spec = _spec_outputs_sha256()
    assert set(results) == set(spec) and len(spec) == 4
    for case, result in results.items():
        assert result["status"] == "PASS"
        assert result["repeats"] == [{"status": "PASS", "failure_kind": None, "outputs_sha256": spec[case]}] * 3
        assert result["outputs_sha256"] == spec[case]  # runs that agree: the result's outputs are theirs
    assert results[EXAMPLE_1]["repro"].endswith("--ep cpu --repeat 3")


def test_a_run_without_repeat_writes_no_repeats(in_repo: None, tmp_path: Path) -> None:
    """So that a results.json of a run without --repeat reads as before, also with readers before the field."""
    args = ["run", str(TOPK_EXAMPLES.relative_to(REPO)), "--ep", "cpu", "-k", "example-1"]
    assert main([*args, "--report-dir", str(tmp_path)]) == 0
    (result,) = _results(tmp_path).values()
    assert "repeats" not in result and "--repeat" not in result["repro"]


def test_a_verdict_that_changes_between_runs_is_flaky_and_fails_the_run(
    in_repo: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    calls = _spoiling_execute(monkeypatch, {2}, WRONG, OUTPUT_VALUE_TENSOR)
    args = ["run", str(TOPK_EXAMPLES.relative_to(REPO)), "--ep", "cpu", "-k", "example-1", "--repeat", "3", "-j", "0"]
    assert main([*args, "--report-dir", str(tmp_path / "plain")]) == 1
    assert len(calls) == 3  # one case, run three times
    (result,) = _results(tmp_path / "plain").values()
    assert result["status"] == "FLAKY" and result["failure_kind"] == "verdicts_differ"
    lines = result["message"].splitlines()
    assert re.fullmatch(r"3 repeats: PASS, FAIL \(\w+\), PASS", lines[0])
    assert lines[1] == "output OutputValueTensor hash differs between repeats 1 and 2"
    # The repeat's own message, indented: its headline first (compare's "kind: N/M elements differ: ...").
    assert re.fullmatch(r"repeat 2, FAIL \(\w+\):", lines[2]) and re.match(r"  \w+: \d+/\d+ elements differ", lines[3])
    hashes = [repeat["outputs_sha256"] for repeat in result["repeats"]]
    assert [repeat["status"] for repeat in result["repeats"]] == ["PASS", "FAIL", "PASS"]
    assert hashes[0] == hashes[2] == _spec_outputs_sha256()[EXAMPLE_1]
    assert hashes[1][OUTPUT_VALUE_TENSOR] != hashes[0][OUTPUT_VALUE_TENSOR]
    assert hashes[1][OUTPUT_INDEX_TENSOR] == hashes[0][OUTPUT_INDEX_TENSOR]
    out = capsys.readouterr().out
    assert "FLAKY (verdicts_differ) cases/top_k1/spec_examples.yaml::example-1 [cpu]" in out
    assert "1 executed result(s), every node recorded on its own EP" in out
    # A waiver matches a FLAKY result as it matches a FAIL: the gate then passes.
    calls.clear()  # the stand-in spoils the second run of this run too
    waivers = tmp_path / "known.yaml"
    waivers.write_text(
        f'known_failures:\n  - case: "{EXAMPLE_1}"\n    ep: cpu\n    reason: flaky\n'
        "    tracking: https://example.com/bug/1\n",
        encoding="utf-8",
    )
    assert main([*args, "--report-dir", str(tmp_path / "waived"), "--waivers", str(waivers)]) == 0


def test_outputs_that_change_within_the_tolerance_are_flaky_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mvn.yaml"
    path.write_text(MVN, encoding="utf-8")
    entries, _ = read_file(str(path))
    _spoiling_execute(monkeypatch, {2}, ONE_ULP, "OutputTensor")
    (result,) = run_batch(entries[:1], CPU, RunOptions(pack=1, repeat=3), Sessions())
    assert result.status is Status.FLAKY and result.failure_kind == "outputs_differ"
    assert result.message == "output OutputTensor hash differs between repeats 1 and 2 (3 repeats: PASS, PASS, PASS)"
    assert [r.status for r in result.repeats] == [Status.PASS] * 3
    first, second, third = (r.outputs_sha256["OutputTensor"] for r in result.repeats)
    assert first == third != second


def test_repeats_of_a_packed_case_run_the_pack_again_each_in_a_new_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "mvn.yaml"
    path.write_text(MVN, encoding="utf-8")
    entries, _ = read_file(str(path))
    opened: list[str] = []
    real_open, real_run = onnxruntime_path.open_session, onnxruntime_path.run_session
    runs: list[int] = []

    def open_session(lowering: Any, ep: Any, **settings: Any) -> Any:
        opened.append(lowering.name)
        return real_open(lowering, ep, **settings)

    def run_session(opened_session: Any, lowering: Any) -> dict[str, np.ndarray]:
        outputs = real_run(opened_session, lowering)
        runs.append(len(runs) + 1)
        if len(runs) == 2:  # the second packed run: the first case's output 1 ULP off
            outputs["p0_OutputTensor"] = _changed(outputs["p0_OutputTensor"], ONE_ULP)
        return outputs

    monkeypatch.setattr(onnxruntime_path, "open_session", open_session)
    monkeypatch.setattr(onnxruntime_path, "run_session", run_session)
    first, second = run_batch(entries, CPU, RunOptions(repeat=3), Sessions())
    assert len(opened) == 3 and len(runs) == 3  # one packed session per run, each opened anew
    assert first.status is Status.FLAKY and first.failure_kind == "outputs_differ"
    assert second.status is Status.PASS and len({r.outputs_sha256["OutputTensor"] for r in second.repeats}) == 1
    assert len(second.repeats) == 3


def test_a_fault_ends_the_runs_and_stays_the_result(monkeypatch: pytest.MonkeyPatch) -> None:
    entries, _ = read_file(str(TOPK_EXAMPLES))
    real = onnxruntime_path.execute
    calls: list[int] = []

    def execute(lowering: Any, ep: Any, sessions: Any = None, threads: Any = None) -> Execution:
        calls.append(1)
        if len(calls) == 2:
            raise ProcessDied("the DirectML runner exited with status 139")
        return real(lowering, ep, sessions, threads)

    monkeypatch.setattr(onnxruntime_path, "execute", execute)
    (result,) = run_batch(entries[:1], CPU, RunOptions(pack=1, repeat=3), Sessions())
    assert len(calls) == 2
    assert result.status is Status.CRASH and [r.status for r in result.repeats] == [Status.PASS, Status.CRASH]
    assert result.message.splitlines()[-1] == "(repeat 2 of 3; the runs before it: PASS; not run again after it)"


def test_each_result_is_given_once_after_its_last_run() -> None:
    """A supervisor keeps the first result it is given for a case: it must be the merged one."""

    class Seen(Unwatched):
        def __init__(self) -> None:
            self.finished_at: list[tuple[int, int]] = []

        def finished(self, results: Mapping[int, Result]) -> None:
            self.finished_at += [(place, len(result.repeats)) for place, result in results.items()]

    entries, _ = read_file(str(TOPK_EXAMPLES))
    seen = Seen()
    run_batch(entries, CPU, RunOptions(repeat=2), Sessions(), seen)
    assert sorted(seen.finished_at) == [(0, 2), (1, 2), (2, 2), (3, 2)]


def _result(status: Status, hashes: dict[str, str], kind: str | None = None) -> Result:
    return Result(
        "f.yaml::c",
        "TOP_K1",
        "cpu",
        status,
        failure_kind=kind,
        outputs_sha256=hashes,
        repeats=(Repeat(status, kind, hashes),),
    )


def test_several_outputs_that_differ_are_named_with_the_first_run_unlike_the_first() -> None:
    same = {OUTPUT_VALUE_TENSOR: "a", OUTPUT_INDEX_TENSOR: "b"}
    other = {OUTPUT_VALUE_TENSOR: "c", OUTPUT_INDEX_TENSOR: "d"}
    result = merged([_result(Status.PASS, same), _result(Status.PASS, same), _result(Status.PASS, other)], 3)
    assert result.message == (
        "outputs OutputValueTensor, OutputIndexTensor hashes differ between repeats 1 and 3 "
        "(3 repeats: PASS, PASS, PASS)"
    )
    # No one run's bytes stand for a FLAKY result (a diff would compare whichever repeat 1 returned); each run's stay.
    assert result.outputs_sha256 == {} and [run.outputs_sha256 for run in result.repeats] == [same, same, other]


def test_flaky_fails_the_gate_unless_waived_and_a_waiver_matches_it_as_a_fail() -> None:
    flaky = replace(_result(Status.FLAKY, {}), case="cases/x.yaml::c")
    waiver = Waiver("cases/x.yaml::*", "cpu", None, None, "known", "https://example.com/1", SourcePos("w.yaml", 2, 5))
    summary = summarize(Environment(), [flaky])
    assert summary.failed and summary.totals == {Status.FLAKY: 1}
    gate = apply_waivers(Environment(), [flaky], [waiver])
    assert gate.expected_failures == ((flaky, waiver),) and not overall_failed(summary, gate)
    assert apply_waivers(Environment(), [flaky], []).unexpected_failures == (flaky,)


def test_results_json_keeps_every_run_and_reads_fields_of_newer_versions(tmp_path: Path) -> None:
    flaky = Result(
        "f.yaml::c",
        "TOP_K1",
        "cpu",
        Status.FLAKY,
        repeats=(
            Repeat(Status.PASS, None, {"OutputTensor": "a"}),
            Repeat(Status.FAIL, "values", {"OutputTensor": "b"}),
        ),
    )
    path = str(tmp_path / "results.json")
    write_results(path, {}, [flaky])
    assert read_results(path).results == (flaky,)
    newer = {**flaky.to_json(), "a_field_of_a_later_version": 1}
    assert result_from_json(newer) == flaky


def test_repeat_is_part_of_the_run_a_resume_continues_and_of_the_repro() -> None:
    entries, _ = read_file(str(TOPK_EXAMPLES))
    once, thrice = run_identity(entries, [CPU], RunOptions()), run_identity(entries, [CPU], RunOptions(repeat=3))
    assert "repeat" not in once and thrice == {**once, "repeat": 3}
    assert repro_command(entries[0], CPU, RunOptions(repeat=3)).endswith("--ep cpu --repeat 3")


@pytest.mark.parametrize("where", ["dmlconf", "pytest"])
def test_repeat_must_be_at_least_one(where: str, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    pytester.makefile(".yaml", spec_examples=TOPK_EXAMPLES.read_text(encoding="utf-8"))
    if where == "dmlconf":
        assert main(["run", "spec_examples.yaml", "--repeat", "0"]) == 2
        assert "dmlconf: --repeat: must be at least 1, got 0" in capsys.readouterr().err
    else:
        result = pytester.runpytest(*FAST, "--repeat", "0")
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["ERROR: --repeat: must be at least 1, got 0"])


def test_the_pytest_plugin_fails_a_flaky_case_and_passes_a_steady_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".yaml", spec_examples=TOPK_EXAMPLES.read_text(encoding="utf-8"))
    # In a worker process, as a plugin run goes: the CPU EP gives each case the same outputs every run.
    pytester.runpytest(*FAST, "--ep", "cpu", "--repeat", "3").assert_outcomes(passed=4)
    # In pytest's own process, where the stand-in EP is: its second run of example-1 gives a wrong value.
    _spoiling_execute(monkeypatch, {2}, WRONG, OUTPUT_VALUE_TENSOR)
    result = pytester.runpytest(*FAST, "--ep", "cpu", "--in-process", "--repeat", "3", "-k", "example-1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ spec_examples.yaml::example-1 [[]cpu[]] _*",
            "FLAKY (verdicts_differ) on cpu: 3 repeats: PASS, FAIL (*), PASS",
            "*reproduce: dmlconf run spec_examples.yaml -k spec_examples.yaml::example-1 --ep cpu --repeat 3",
        ]
    )


def test_a_lost_device_is_told_at_once_not_after_the_round(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker exits when it reports a lost device (worker.py): the case's result must go out before anything else
    runs on the dead device, as without --repeat."""

    class Events(Unwatched):
        def __init__(self) -> None:
            self.events: list[tuple[Any, ...]] = []

        def begin(self, places: Any, executing: bool, inputs: Any = ()) -> None:
            self.events.append(("begin", tuple(places), executing))

        def finished(self, results: Mapping[int, Result]) -> None:
            self.events += [("finished", place, result.status) for place, result in results.items()]

    def lost(*_: Any) -> Any:
        raise ExecutionError("D3D12: Removing Device. DXGI_ERROR_DEVICE_REMOVED (0x887A0005)")

    real = onnxruntime_path.execute
    calls: list[int] = []

    def execute(lowering: Any, ep: Any, sessions: Any = None, threads: Any = None) -> Execution:
        calls.append(1)
        return lost() if len(calls) == 1 else real(lowering, ep, sessions, threads)

    # The packed session loses the device: each case runs alone.
    monkeypatch.setattr(onnxruntime_path, "run_session", lost)
    monkeypatch.setattr(onnxruntime_path, "execute", execute)  # and the first alone loses it too
    entries, _ = read_file(str(TOPK_EXAMPLES))
    watch = Events()
    first, second = run_batch(entries[:2], CPU, RunOptions(repeat=3), Sessions(), watch)
    assert first.status is Status.DEVICE_LOST and len(first.repeats) == 1
    assert first.message.splitlines()[-1] == "(repeat 1 of 3; not run again after it)"
    assert second.status is Status.PASS and len(second.repeats) == 3
    told = watch.events.index(("finished", 0, Status.DEVICE_LOST))
    assert ("begin", (1,), True) in watch.events[told:] and ("begin", (1,), True) not in watch.events[:told]

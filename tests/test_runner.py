"""run_entry: one (case, EP) through the pipeline to a Result, never raising."""

from __future__ import annotations

import gc
import re
import shlex
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

import pytest

import conformance.run.onnxruntime_path as onnxruntime_path
import conformance.run.runner as runner
from conformance.cases.parse import Entry
from conformance.cases.suite import read_file
from conformance.ep.errors import ExecutionError
from conformance.ep.lower import NotExpressible
from conformance.ep.providers import EpSpec, parse_ep
from conformance.model import FeatureLevel, Status
from conformance.run.options import RunOptions, repro_command
from conformance.run.runner import run_entry

CPU = parse_ep("cpu")

# The page's example 1 of DML_TOP_K1_OPERATOR_DESC, plus variants around it.
CASES = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: example-1
    feature_level: "2_1"
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
    expected:
      OutputValueTensor: [[[[11, 10], [9, 8], [7, 6]]]]
      OutputIndexTensor: [[[[3, 2], [2, 3], [3, 2]]]]
  - id: wrong-golden
    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]}
    Axis: 3
    K: 2
    expected:
      OutputValueTensor: [[[[11, 10], [9, 8], [7, 5]]]]
  - id: rank3
    InputTensor: {Sizes: [2, 3, 5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 2
    K: 2
  - id: uint16
    InputTensor: {Sizes: [1, 1, 2, 4], DataType: UINT16, Data: [[[[1, 5, 3, 2], [9, 8, 7, 6]]]]}
    Axis: 3
    K: 2
  - id: k-zero
    expect: invalid
    reason: K must be greater than 0
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 0
  - id: strided
    InputTensor:
      Sizes: [1, 1, 3, 4]
      DataType: FLOAT32
      Data: [[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]]
      Strides: [12, 12, 1, 3]
    Axis: 3
    K: 2
    OutputIndexTensor: {Strides: [6, 6, 1, 3]}
    expected:
      OutputValueTensor: [[[[11, 10], [9, 8], [7, 6]]]]
  - id: not-really-invalid
    expect: invalid
    reason: it is valid
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
"""


@pytest.fixture(scope="module")
def entries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Entry]:
    path = tmp_path_factory.mktemp("runner") / "cases.yaml"
    path.write_text(CASES, encoding="utf-8")
    read, problems = read_file(str(path))
    assert problems == []
    return {entry.id.rpartition("::")[2]: entry for entry in read}


def _raise(*_: Any, **__: Any) -> NoReturn:
    raise RuntimeError("stage exploded\nsecond line of detail")


def test_a_case_with_layouts_passes_on_cpu_and_says_what_was_not_exercised(entries: dict[str, Entry]) -> None:
    result = run_entry(entries["strided"], CPU, RunOptions())
    assert result.status is Status.PASS
    assert result.message == (
        "layouts not exercised through onnxruntime: InputTensor fed packed (the values read through the strides); "
        "OutputIndexTensor read packed (strides and padding not checked)"
    )
    assert result.parameters["InputTensor"] == "[1, 1, 3, 4] FLOAT32, Data, Strides [12, 12, 1, 3]"
    assert result.parameters["OutputIndexTensor"] == "Strides [6, 6, 1, 3]"


def test_spec_example_passes_on_cpu(entries: dict[str, Entry]) -> None:
    result = run_entry(entries["example-1"], CPU, RunOptions())
    assert (result.status, result.failure_kind, result.message) == (Status.PASS, None, "")
    assert (result.operator, result.ep, result.data_type, result.feature_level) == ("TOP_K1", "cpu", "FLOAT32", "2_1")
    assert result.lowering == "TopK-11"
    assert set(result.placement.values()) == {"CPUExecutionProvider"}
    assert result.seconds > 0


@pytest.mark.parametrize(
    ("module", "stage"),
    [
        (runner, "case_inputs"),
        (runner, "expected_outputs"),
        (runner, "golden_differences"),
        (onnxruntime_path, "lower"),  # the steps of onnxruntime's execution path
        (onnxruntime_path, "execute"),
        (onnxruntime_path, "compare"),
    ],
)
def test_a_stage_raising_becomes_error_with_its_first_line(
    entries: dict[str, Entry], monkeypatch: pytest.MonkeyPatch, module: ModuleType, stage: str
) -> None:
    monkeypatch.setattr(module, stage, _raise)
    result = run_entry(entries["example-1"], CPU, RunOptions())
    assert result.status == Status.ERROR
    assert result.failure_kind == "harness"
    assert result.message == "RuntimeError: stage exploded"
    assert result.case.endswith("::example-1") and result.repro.startswith("dmlconf run ")


def test_validator_raising_on_a_negative_case_becomes_error(
    entries: dict[str, Entry], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "validate", _raise)
    result = run_entry(entries["not-really-invalid"], CPU, RunOptions())
    assert (result.status, result.message) == (Status.ERROR, "RuntimeError: stage exploded")


def test_even_the_result_header_raising_becomes_error(
    entries: dict[str, Entry], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(runner, "repro_command", _raise)
    result = run_entry(entries["example-1"], CPU, RunOptions())
    assert result.status == Status.ERROR
    assert result.case.endswith("::example-1")
    assert result.message == "RuntimeError: stage exploded"


def test_golden_mismatch_is_error_with_the_difference(entries: dict[str, Entry]) -> None:
    result = run_entry(entries["wrong-golden"], CPU, RunOptions())
    assert result.status == Status.ERROR
    assert result.failure_kind == "golden_mismatch"
    first, second = result.message.splitlines()  # where and what first: all a console shows
    assert re.fullmatch(
        r"\S+\.yaml:\d+:7: expected\.OutputValueTensor\[0, 0, 2, 1\] = 5\.0 \(0x40a00000\), "
        r"the oracle gives 6\.0 \(0x40c00000\)",
        first,
    ), first
    assert second.startswith("  1 of 6 elements differ (float32, compared bit for bit")
    assert result.lowering is None  # nothing was run on the EP


def test_not_expressible(entries: dict[str, Entry], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(onnxruntime_path, "lower", lambda *_: NotExpressible("no ONNX form for this"))
    result = run_entry(entries["example-1"], CPU, RunOptions())
    assert (result.status, result.message, result.failure_kind) == (
        Status.NOT_EXPRESSIBLE,
        "no ONNX form for this",
        None,
    )


def test_execution_error_is_error(entries: dict[str, Entry], monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*_: Any) -> NoReturn:
        raise ExecutionError("onnxruntime said no")

    monkeypatch.setattr(onnxruntime_path, "execute", fail)
    result = run_entry(entries["example-1"], CPU, RunOptions())
    assert (result.status, result.failure_kind, result.message) == (Status.ERROR, "execution", "onnxruntime said no")
    assert result.lowering == "TopK-11"


def test_missing_cpu_kernel_is_not_supported(entries: dict[str, Entry]) -> None:
    # The CPU EP registers no uint16 TopK kernel.
    result = run_entry(entries["uint16"], CPU, RunOptions())
    assert result.status == Status.NOT_SUPPORTED
    assert "uint16" in result.message and "TopK" in result.message


def test_a_refused_case_leaves_no_reference_cycle(entries: dict[str, Entry]) -> None:
    # onnxruntime's exception holds its half-created session (with a thread pool) in its traceback; kept in a
    # cycle, each refused case would leave one alive until a garbage collection (issue 6: it slowed every later
    # session's teardown several-fold on the CPU EP). Nothing the refusal leaves behind needs the collector.
    run_entry(entries["uint16"], CPU, RunOptions())  # warm-up: modules and caches allocate once
    gc.collect()
    gc.disable()
    try:
        result = run_entry(entries["uint16"], CPU, RunOptions())
        unreachable = gc.collect()
    finally:
        gc.enable()
    assert result.status == Status.NOT_SUPPORTED
    assert unreachable == 0


def test_feature_level_above_the_target_is_not_supported(entries: dict[str, Entry]) -> None:
    below = run_entry(entries["rank3"], CPU, RunOptions(feature_level=FeatureLevel(2, 1)))
    assert below.status == Status.NOT_SUPPORTED
    assert below.message == "needs feature level 3_1; the target is 2_1"
    assert run_entry(entries["rank3"], CPU, RunOptions(feature_level=FeatureLevel(3, 1))).status == Status.PASS


def test_negative_cases(entries: dict[str, Entry]) -> None:
    rejected = run_entry(entries["k-zero"], CPU, RunOptions())
    assert rejected.status == Status.INVALID and "K" in rejected.message
    accepted = run_entry(entries["not-really-invalid"], CPU, RunOptions())
    assert (accepted.status, accepted.failure_kind) == (Status.FAIL, "validator_accepted")


def test_repro_command_carries_target_and_limits(entries: dict[str, Entry]) -> None:
    entry = entries["rank3"]
    ep = parse_ep("cuda:device_id=1")
    words = shlex.split(repro_command(entry, ep, RunOptions(FeatureLevel(2, 1), 1000)))
    assert words == [
        "dmlconf",
        "run",
        entry.path,
        "-k",
        entry.id,
        "--ep",
        "cuda:device_id=1",
        "--feature-level",
        "2_1",
        "--max-elements",
        "1000",
    ]
    assert shlex.split(repro_command(entry, CPU)) == ["dmlconf", "run", entry.path, "-k", entry.id, "--ep", "cpu"]
    assert ep.text == "cuda:device_id=1"


def test_repro_command_quotes_awkward_ids(tmp_path: Path) -> None:
    path = tmp_path / "odd name.yaml"
    path.write_text(CASES.replace("id: example-1", 'id: "it\'s $(odd) `x`"'), encoding="utf-8")
    entry = next(e for e in read_file(str(path))[0] if "odd" in e.id)
    words = shlex.split(repro_command(entry, CPU))
    assert words[2] == entry.path and words[4] == entry.id
    assert entry.id.endswith("::it's $(odd) `x`")


def test_target_feature_level_per_ep() -> None:
    """--feature-level binds every EP; without it, DirectML's own level binds dml and nothing binds the others."""
    dml, cuda = EpSpec("dml", "DmlExecutionProvider"), EpSpec("cuda", "CUDAExecutionProvider")
    derived = RunOptions(directml_levels=(("dml", FeatureLevel(6, 4)),))
    assert (derived.target_level(dml), derived.target_level(cuda)) == (FeatureLevel(6, 4), None)
    forced = RunOptions(feature_level=FeatureLevel(3, 0), directml_levels=(("dml", FeatureLevel(6, 4)),))
    assert (forced.target_level(dml), forced.target_level(cuda)) == (FeatureLevel(3, 0), FeatureLevel(3, 0))


def test_directml_level_gates_dml_cases_before_anything_runs(entries: dict[str, Entry]) -> None:
    dml = parse_ep("dml:disable_metacommands=true")
    result = run_entry(entries["rank3"], dml, RunOptions(directml_levels=((dml.text, FeatureLevel(2, 1)),)))
    assert (result.status, result.message) == (Status.NOT_SUPPORTED, "needs feature level 3_1; the target is 2_1")
    assert result.failure_kind == "feature_level"
    assert result.repro.endswith("--ep dml:disable_metacommands=true")

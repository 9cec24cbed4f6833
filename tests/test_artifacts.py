"""--artifacts: a failing case's model, inputs and outputs, enough to reproduce it with onnxruntime alone."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

import conformance.run.runner as runner
from conformance.cli.main import main
from conformance.compare.common import Verdict
from conformance.model import Status
from conformance.run.artifacts import folder_name

EXAMPLE = "cases/top_k1/spec_examples.yaml"
REPO = Path(__file__).resolve().parent.parent


def _always_fails(*args: object) -> Verdict:
    return Verdict(Status.FAIL, "values", "forced failure", {})


def test_a_failing_case_saves_what_reproduces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(runner, "compare", _always_fails)  # CPU passes everything: make one case FAIL
    case = f"{EXAMPLE}::example-1"
    # -j 0: in this process, where the patch reaches (a worker process would import the real compare)
    argv = ["run", EXAMPLE, "-k", case, "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path / "r")]
    assert main([*argv, "--artifacts", str(tmp_path / "a")]) == 1
    folder = tmp_path / "a" / folder_name(case, "cpu")
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "README.txt",
        "actual_OutputIndexTensor.npy",
        "actual_OutputValueTensor.npy",
        "expected_OutputIndexTensor.npy",
        "expected_OutputValueTensor.npy",
        "input_InputTensor.npy",
        "model.onnx",
    ]
    # The saved model and input, run by onnxruntime alone, give the saved actual outputs.
    session = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    values, indices = session.run(None, {"InputTensor": np.load(folder / "input_InputTensor.npy")})
    np.testing.assert_array_equal(values, np.load(folder / "actual_OutputValueTensor.npy"))
    np.testing.assert_array_equal(indices, np.load(folder / "actual_OutputIndexTensor.npy"))
    # Spec example 1's output: the top 2 of [0, 1, 10, 11], [3, 2, 9, 8] and [4, 5, 6, 7].
    np.testing.assert_array_equal(
        np.load(folder / "expected_OutputValueTensor.npy").reshape(3, 2), [[11, 10], [9, 8], [7, 6]]
    )
    assert "forced failure" in (folder / "README.txt").read_text(encoding="utf-8")


def test_folder_names_are_safe_and_distinct() -> None:
    name = folder_name("cases/a b.yaml::x[1x2,<3>]", "dml:device_id=1")
    assert name.startswith("cases_a_b.yaml_x_1x2,_3_dml_device_id=1-") and "/" not in name
    # Ids that read the same once cleaned still get folders of their own.
    assert folder_name("t.yaml::x y", "cpu") != folder_name("t.yaml::x_y", "cpu")
    assert folder_name("../../etc", "cpu").startswith("etc_cpu-")

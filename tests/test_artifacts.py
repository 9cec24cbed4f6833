"""--artifacts: a failing case's model, inputs and outputs, enough to reproduce it with onnxruntime alone."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

import conformance.run.onnxruntime_path as onnxruntime_path
from conformance.cli.main import main
from conformance.compare.common import Verdict
from conformance.environment import ran_on
from conformance.model import Status
from conformance.results import read_results
from conformance.run.artifacts import folder_name

EXAMPLE = "cases/top_k1/spec_examples.yaml"
REPO = Path(__file__).resolve().parent.parent


def _always_fails(*args: object) -> Verdict:
    return Verdict(Status.FAIL, "values", "forced failure", {})


def test_a_failing_case_saves_what_reproduces_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(onnxruntime_path, "compare", _always_fails)  # CPU passes everything: make one case FAIL
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


# DirectML: the build and device that ran it, and the runner's lines off Windows (issue 26, item 19) ---------------

# The chain's identity as the lavapipe run recorded it (reports/lavapipe-dml's results.json), cut to what is named.
LAVAPIPE = {
    "transport": "wine+vkd3d-proton",
    "wine": "wine-8.0 (Debian 8.0~repack-4)",
    "vkd3d_proton": {"version": "3.0.1"},
    "vulkan_driver": "llvmpipe Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)",
    "adapter": {"index": 0, "description": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor_id": 65541, "device_id": 0},
    "onnxruntime": "1.24.4",
    "onnxruntime_dll": "1.24.26.316",
    "directml_dll": "1.15.4.0",
}


def test_a_directml_readme_names_the_build_adapter_and_driver_and_the_runner(tmp_path: Path) -> None:
    from conformance.ep.directml import DirectML
    from conformance.model import FeatureLevel
    from conformance.results import Result
    from conformance.run.artifacts import directml_text, save_artifacts

    found = DirectML("1.15.4", "DirectML.dll file version under Wine", FeatureLevel(6, 4), LAVAPIPE)
    result = Result("t.yaml::x", "TOP_K1", "dml", Status.FAIL, "values", message="1/2 elements differ: ...", repro="r")
    feeds = {"InputTensor": np.zeros(4, np.float32)}
    outputs = {"OutputValueTensor": np.zeros(2, np.float32), "OutputIndexTensor": np.zeros(2, np.int64)}
    folder = save_artifacts(
        str(tmp_path), result, b"", feeds, outputs, outputs, "DmlExecutionProvider", directml_text(found)
    )
    readme = (Path(folder) / "README.txt").read_text(encoding="utf-8")
    # 65541 is 0x10005, Mesa's vendor id for llvmpipe. The words are the reports' "EP dml ran on" line's.
    assert (
        "Executed by: DmlExecutionProvider: llvmpipe (LLVM 15.0.6, 256 bits) (PCI 10005:0000), driver llvmpipe Mesa "
        "25.0.7-2~bpo12+1 (LLVM 15.0.6), through wine+vkd3d-proton (wine-8.0 (Debian 8.0~repack-4), vkd3d-proton "
        "3.0.1); DirectML.dll 1.15.4.0, onnxruntime.dll 1.24.26.316 (onnxruntime 1.24.4); feature level 6_4\n"
    ) in readme
    assert "On Linux, DirectML runs in the harness's runner under Wine" in readme
    assert "    ep = parse_ep('dml')\n" in readme
    assert "    outputs = session.run(['OutputValueTensor', 'OutputIndexTensor'], {\n" in readme


def test_a_readme_of_another_ep_has_no_runner_lines(tmp_path: Path) -> None:
    from conformance.results import Result
    from conformance.run.artifacts import save_artifacts

    result = Result("t.yaml::x", "SLICE1", "cpu", Status.FAIL, "values", message="m", repro="r")
    arrays = {"OutputTensor": np.zeros(2, np.float32)}
    folder = save_artifacts(str(tmp_path), result, b"", {"InputTensor": arrays["OutputTensor"]}, arrays, arrays, "CPU")
    readme = (Path(folder) / "README.txt").read_text(encoding="utf-8")
    assert "Executed by" not in readme and "runner" not in readme


def test_the_readme_s_runner_lines_rerun_a_directml_failure_on_linux(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through the real chain (lavapipe here): the lines the README gives, run in its folder, give the outputs the
    run saved."""
    import subprocess
    import sys

    from conformance.ep.wine.chain import ChainMissing, find_chain

    if sys.platform == "win32":
        pytest.skip("DirectML is native on Windows")
    try:
        find_chain()
    except ChainMissing as error:
        pytest.skip(f"no DirectML chain here: {error}")
    monkeypatch.chdir(REPO)
    monkeypatch.setattr(onnxruntime_path, "compare", _always_fails)
    case = f"{EXAMPLE}::example-1"
    argv = ["run", EXAMPLE, "-k", case, "--ep", "dml", "-j", "0", "--report-dir", str(tmp_path / "r")]
    assert main([*argv, "--artifacts", str(tmp_path / "a")]) == 1
    capsys.readouterr()
    folder = tmp_path / "a" / folder_name(case, "dml")
    readme = (folder / "README.txt").read_text(encoding="utf-8")
    # The words of the run's reports: the "EP dml ran on" line of its results.json, and the feature level.
    env = read_results(str(tmp_path / "r" / "results.json")).environment
    ep = env.ep("dml")
    assert ep is not None and ep.directml is not None
    ran = f"Executed by: DmlExecutionProvider: {ran_on(ep, env)}; feature level {ep.directml.feature_level}\n"
    assert ran in readme and " (PCI " in ran and "; DirectML.dll " in ran
    lines = readme.split("in this folder:\n\n", 1)[1].splitlines()
    script = "\n".join(line.removeprefix("    ") for line in lines if line.startswith("    "))
    script += "\nfor name, array in zip(['OutputValueTensor', 'OutputIndexTensor'], outputs):"
    script += "\n    assert (np.asarray(array) == np.load(f'actual_{name}.npy')).all(), name"
    script += "\nprint('same')"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", script], cwd=folder, env=env, capture_output=True, text=True)
    assert done.stdout.strip() == "same", done.stderr

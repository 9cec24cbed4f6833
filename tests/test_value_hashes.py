"""Value hashes: the same logical values hash alike on every path (issue 38, item 3), and ``dmlconf diff`` compares
them where both runs recorded them, so that `dml` against `dmlop` counts only values that differ."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from conformance.cases.fingerprint import tensor_sha256, value_hashes
from conformance.gate.diff import diff_runs
from conformance.model import Status
from conformance.results import Result

REPO = Path(__file__).resolve().parent.parent


def test_equal_values_hash_alike_whatever_carried_them() -> None:
    indices = np.array([[2, 0, 1]], dtype=np.int64)
    as_uint32 = np.array([2, 0, 1], dtype=np.uint32)  # DirectML's UINT32 indices, another shape
    strided = np.array([[2, 9], [0, 9], [1, 9]], dtype=np.int32)[:, 0]  # every other element of a padded buffer
    digests = {value_hashes({"OutputIndexTensor": a})["OutputIndexTensor"] for a in (indices, as_uint32, strided)}
    assert digests == {tensor_sha256(np.array([2, 0, 1], dtype=np.int64))}
    assert value_hashes({"t": np.array([2, 1, 0])}) != value_hashes({"t": indices})


def test_floats_keep_their_type() -> None:
    half = value_hashes({"t": np.array([1.5, 2.0], dtype=np.float16)})
    single = value_hashes({"t": np.array([1.5, 2.0], dtype=np.float32)})
    assert half != single  # float16 and float32 of equal values are different outputs


def _result(ep: str, outputs: str, values: str) -> Result:
    return Result(
        "cases/x.yaml::a", "SLICE1", ep, Status.PASS, outputs_sha256={"OutputTensor": outputs},
        values_sha256={"OutputTensor": values} if values else {},
    )  # fmt: skip


def test_diff_compares_values_where_both_runs_have_them() -> None:
    same_values = diff_runs([_result("dml", "bytes-a", "v1")], [_result("dml", "bytes-b", "v1")])
    assert same_values.outputs_differ == () and same_values.outputs_compared == 1
    other_values = diff_runs([_result("dml", "bytes-a", "v1")], [_result("dml", "bytes-a", "v2")])
    assert len(other_values.outputs_differ) == 1
    older = diff_runs([_result("dml", "bytes-a", "")], [_result("dml", "bytes-b", "v1")])  # no values in the old
    assert len(older.outputs_differ) == 1  # then what each EP returned is compared


def test_dml_against_dmlop_on_the_spec_examples_differs_nowhere(chain_ready: None, tmp_path: Path) -> None:
    """Measured before value hashes: every result differed between the paths (H100: 1863 of 1863), SLICE1's spec
    examples (a pure copy, PASS on both) among them."""
    paths = ["cases/slice1/spec_examples.yaml", "cases/top_k1/spec_examples.yaml"]
    run = [sys.executable, "-m", "conformance", "run", *paths, "--ep", "dml", "--ep", "dmlop", "-j", "0"]
    done = subprocess.run([*run, "--report-dir", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    raw = {r["case"]: r["outputs_sha256"] for r in results if r["ep"] == "dml"}
    assert any(raw[r["case"]] != r["outputs_sha256"] for r in results if r["ep"] == "dmlop")  # the bytes differ
    diff = subprocess.run(
        [sys.executable, "-m", "conformance", "diff", str(tmp_path / "results.json"), str(tmp_path / "results.json"),
         "--match", "case", "--old-ep", "dml", "--new-ep", "dmlop"],
        cwd=REPO, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert diff.returncode == 0, diff.stdout + diff.stderr
    assert "outputs differ 0," in diff.stdout and "6 of them with outputs compared bit for bit" in diff.stdout

"""Issue 7, determinism: each result records a machine-independent SHA-256 of each generated input
(``Result.inputs_sha256``), seeded cases give pinned digests, and runs repeated in and out of worker processes, packed
and one per session, give the same hashes and verdicts."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.cases.fingerprint import tensor_hashes, tensor_sha256
from conformance.cases.suite import read_file
from conformance.cli.main import main
from conformance.environment import Environment
from conformance.ep.providers import parse_ep
from conformance.gate.diff import diff_runs
from conformance.model import FeatureLevel, Status
from conformance.report.diff import render_diff_console, render_diff_markdown
from conformance.results import Result, ResultsFile, read_results, result_from_json, write_results
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

REPO = Path(__file__).resolve().parent.parent
CPU = parse_ep("cpu")


def _sha(header: bytes, body: bytes) -> str:
    return hashlib.sha256(header + body).hexdigest()


# --- the hash's definition, against bytes written out by hand ------------------------------------------------------


def test_float32_digest_is_header_then_little_endian_elements() -> None:
    # 1.0f is 0x3F800000 and 2.0f is 0x40000000; little-endian, lowest byte first.
    expected = _sha(b"float32;2;", b"\x00\x00\x80\x3f" + b"\x00\x00\x00\x40")
    assert tensor_sha256(np.array([1, 2], dtype="<f4")) == expected
    # The same values stored big-endian are the same tensor, so they have the same digest.
    assert tensor_sha256(np.array([1, 2], dtype=">f4")) == expected


def test_other_dtypes_shapes_and_layouts() -> None:
    # float16 1.0 is 0x3C00, -2.0 is 0xC000.
    assert tensor_sha256(np.array([[1.0], [-2.0]], dtype=">f2")) == _sha(b"float16;2,1;", b"\x00\x3c\x00\xc0")
    # A transposed big-endian view: the digest follows the values in C order, not the memory.
    transposed = np.array([[1, 2], [3, 4]], dtype=">u4").T  # [[1, 3], [2, 4]]
    body = b"".join(value.to_bytes(4, "little") for value in (1, 3, 2, 4))
    assert tensor_sha256(transposed) == _sha(b"uint32;2,2;", body)
    assert tensor_sha256(np.array([-1, 2, 3], dtype=np.int8)) == _sha(b"int8;3;", b"\xff\x02\x03")
    assert tensor_sha256(np.array(0.5, dtype=np.float64)) == _sha(b"float64;;", struct.pack("<d", 0.5))
    assert tensor_sha256(np.zeros((0, 3), dtype=np.uint8)) == _sha(b"uint8;0,3;", b"")


def test_dtype_and_shape_are_part_of_the_digest() -> None:
    values = np.arange(6, dtype=np.int32)
    digests = {tensor_sha256(values), tensor_sha256(values.reshape(2, 3)), tensor_sha256(values.view(np.float32))}
    assert len(digests) == 3  # equal bytes, three tensors


def test_non_numeric_tensors_have_no_digest() -> None:
    with pytest.raises(ValueError, match="only numeric"):
        tensor_sha256(np.array(["a"]))
    with pytest.raises(ValueError, match="only numeric"):
        tensor_sha256(np.array([object()]))


def test_tensor_hashes_by_name_in_order() -> None:
    hashes = tensor_hashes({"InputTensor": np.array([1], np.uint8), "ScaleTensor": np.array([2], np.uint8)})
    assert list(hashes.items()) == [
        ("InputTensor", _sha(b"uint8;1;", b"\x01")),
        ("ScaleTensor", _sha(b"uint8;1;", b"\x02")),
    ]


# --- golden digests of seeded cases --------------------------------------------------------------------------------
#
# The digests below were computed once by ``_derive`` (below): PCG64's raw words seeded as generate_streams documents
# (entropy [Seed, crc32(tensor name), part]), the documented transform written out in plain Python, each element
# packed by ``struct`` and hashed with the header by hashlib; the harness's own run gave the same digests. A change
# of generation (or a NumPy whose PCG64 or casts give other bytes) fails test_golden_input_hashes, and a change of
# the hash's definition fails both tests.

TOPK = "cases/top_k1/library.yaml::k-position[3x7,3-FLOAT16-DECREASING]"  # ties, FLOAT16
MVN = (  # normal input, uniform Scale and Bias, FLOAT32
    "cases/mean_variance_normalization1/library.yaml::scale-bias-below-4_0[2_1-1x3x1x1,1x3x1x1-FLOAT32,FLOAT32,FLOAT32-true]"
)
SLICE = "cases/slice1/library.yaml::output-descriptor"  # integers, INT32
GOLDEN = {
    TOPK: {"InputTensor": "09dd425560304ab533bdaee430c32e999108f96cbd75badb16e2d1c834ba3fb4"},
    MVN: {
        "InputTensor": "1a97c82ff0e441b5439cd351903bf36031c10507be9f2630e99179ae792e71ca",  # normal
        "ScaleTensor": "d81e05628d96b5e0790a7a6f906b080187887c6c233c6af71ada0c363575cd5d",  # uniform
        "BiasTensor": "c06230287911cd5b6ba916cb2df174d7f6825c9a0832307ad0554e87af0608bf",  # uniform
    },
    SLICE: {"InputTensor": "bace2421dad73c3d6d5afba6e534ad10af9c454971e7d16c80e84892bb2fdfbe"},
}


def _words(seed: int, name: str, part: int, count: int) -> list[int]:
    return [int(word) for word in np.random.PCG64([seed, zlib.crc32(name.encode()), part]).random_raw(count)]


def _unit(word: int) -> float:
    return (word >> 11) / 2.0**53  # exact: a 53-bit integer over a power of two


def _digest(dtype: str, shape: tuple[int, ...], fmt: str, values: list[Any]) -> str:
    header = f"{dtype};{','.join(map(str, shape))};".encode()
    return _sha(header, struct.pack(f"<{len(values)}{fmt}", *values))


def _derive() -> dict[str, dict[str, str]]:
    """The golden cases' inputs rebuilt from the case files' generator parameters without the harness's code."""
    # k-position: ties, Seed 102, Distinct 5 (Low 0, Step 1) on [3, 7] FLOAT16: element i is level perm[i] mod 5,
    # perm the stable argsort of the raw words (sorted() is stable).
    words = _words(102, "InputTensor", 0, 21)
    perm = sorted(range(21), key=lambda i: words[i])
    ties = _digest("float16", (3, 7), "e", [float(perm[i] % 5) for i in range(21)])
    # scale-bias: uniform Low + (High - Low) * u on [1, 3, 1, 1]; normal Mean + Std * Box-Muller on [2, 3, 4, 5].
    # The harness's ln and cos are its own polynomials, libm's here: a few float64 ULP apart, too little to move
    # any of these 120 values across a float32 rounding boundary.
    scale = _digest("float32", (1, 3, 1, 1), "f", [0.5 + 1.5 * _unit(w) for w in _words(203, "ScaleTensor", 0, 3)])
    bias = _digest("float32", (1, 3, 1, 1), "f", [-1.0 + 2.0 * _unit(w) for w in _words(204, "BiasTensor", 0, 3)])
    radii = [math.sqrt(-2.0 * math.log(1.0 - _unit(w))) for w in _words(202, "InputTensor", 0, 120)]
    angles = [math.cos(2.0 * math.pi * _unit(w)) for w in _words(202, "InputTensor", 1, 120)]
    normal = _digest("float32", (2, 3, 4, 5), "f", [3.0 * r * c for r, c in zip(radii, angles, strict=True)])
    # output-descriptor: integers Low -100, High 100 on [4, 6] INT32: Low + word mod 201, no word in the rejected top.
    words = _words(301, "InputTensor", 0, 24)
    assert all(w < 2**64 - 2**64 % 201 for w in words)
    ints = _digest("int32", (4, 6), "i", [-100 + w % 201 for w in words])
    return {
        TOPK: {"InputTensor": ties},
        MVN: {"InputTensor": normal, "ScaleTensor": scale, "BiasTensor": bias},
        SLICE: {"InputTensor": ints},
    }


def test_golden_digests_rederived_independently() -> None:
    assert _derive() == GOLDEN


def test_golden_input_hashes() -> None:
    for full_id, digests in GOLDEN.items():
        path = full_id.split("::")[0]
        entries, problems = read_file(str(REPO / path))
        assert problems == []
        (entry,) = [e for e in entries if e.id.endswith(full_id)]
        result = run_entry(entry, CPU, RunOptions())
        assert result.status is Status.PASS, result.message
        assert result.inputs_sha256 == digests  # names in the case's order: InputTensor, ScaleTensor, BiasTensor
        assert list(result.inputs_sha256) == list(digests)


# --- which results carry hashes ------------------------------------------------------------------------------------

CASE_FILE = """\
operator: MEAN_VARIANCE_NORMALIZATION1
cases:
  - id: data
    InputTensor: {Sizes: [1, 2, 1, 2], DataType: FLOAT32, Data: [1, 2, 3, 5]}
    ScaleTensor: {Sizes: [1, 2, 1, 1], DataType: FLOAT32, Data: [1, -2]}
    BiasTensor: {Sizes: [1, 2, 1, 1], DataType: FLOAT32, Data: [0, 0.5]}
    Axes: [2, 3]
  - id: needs-3_1
    feature_level: "3_1"
    InputTensor: {Sizes: [2, 3, 4], DataType: FLOAT32, Generator: {Kind: arange}}
    Axes: [2]
  - id: negative
    expect: invalid
    reason: no axes
    InputTensor: {Sizes: [1, 1, 1, 2], DataType: FLOAT32, Data: [1, 2]}
    Axes: []
"""


def test_results_with_and_without_inputs(tmp_path: Path) -> None:
    path = tmp_path / "mvn.yaml"
    path.write_text(CASE_FILE, encoding="utf-8")
    entries, problems = read_file(str(path))
    assert problems == []
    data, high, negative = (run_entry(e, CPU, RunOptions(feature_level=FeatureLevel(2, 1))) for e in entries)
    assert data.status is Status.PASS and data.inputs_sha256 == {
        "InputTensor": _sha(b"float32;1,2,1,2;", struct.pack("<ffff", 1, 2, 3, 5)),
        "ScaleTensor": _sha(b"float32;1,2,1,1;", struct.pack("<ff", 1, -2)),
        "BiasTensor": _sha(b"float32;1,2,1,1;", struct.pack("<ff", 0, 0.5)),
    }
    # Refused before generating anything: no inputs, no hashes.
    assert (high.status, high.failure_kind, high.inputs_sha256) == (Status.NOT_SUPPORTED, "feature_level", {})
    assert (negative.status, negative.inputs_sha256) == (Status.INVALID, {})


def test_a_run_records_the_hash_of_each_output_the_ep_returned() -> None:
    entries, problems = read_file(str(REPO / "cases" / "top_k1" / "spec_examples.yaml"))
    assert problems == []
    result = run_entry(entries[0], CPU, RunOptions())
    # The spec's example 1 outputs, as onnxruntime returns them: float32 values, TopK's int64 indices.
    assert result.status is Status.PASS and result.outputs_sha256 == {
        "OutputValueTensor": _sha(b"float32;1,1,3,2;", struct.pack("<6f", 11, 10, 9, 8, 7, 6)),
        "OutputIndexTensor": _sha(b"int64;1,1,3,2;", struct.pack("<6q", 3, 2, 2, 3, 3, 2)),
    }


# --- results.json --------------------------------------------------------------------------------------------------


def test_results_json_round_trip_and_older_files(tmp_path: Path) -> None:
    hashes = {"InputTensor": "ab" * 32, "ScaleTensor": "cd" * 32}
    result = Result("f.yaml::c", "TOP_K1", "cpu", Status.PASS, inputs_sha256=hashes)
    write_results(str(tmp_path / "results.json"), {}, [result])
    written = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert written["results"][0]["inputs_sha256"] == hashes
    assert read_results(str(tmp_path / "results.json")).results == (result,)
    # A results.json from before the field (a committed run, and a hand-made record) still loads, with none.
    committed = read_results(str(REPO / "reports" / "h100-cuda" / "results.json")).results
    assert committed and all(r.inputs_sha256 == {} for r in committed)
    old = {"case": "f.yaml::c", "operator": "TOP_K1", "ep": "cpu", "status": "PASS", "seconds": 0.5}
    assert result_from_json(old) == Result("f.yaml::c", "TOP_K1", "cpu", Status.PASS, seconds=0.5)


def test_diff_lists_cases_whose_inputs_differ() -> None:
    def run(case: str, digest: str | None) -> Result:
        return Result(case, "TOP_K1", "cpu", Status.PASS, inputs_sha256={"InputTensor": digest} if digest else {})

    old = [run("same", "a" * 64), run("differs", "a" * 64), run("old-file", None)]
    new = [run("same", "a" * 64), run("differs", "b" * 64), run("old-file", "c" * 64)]
    d = diff_runs(old, new)
    assert [(c.old.case, c.new.case) for c in d.inputs_differ] == [("differs", "differs")]
    assert not d.regressed
    console = render_diff_console(d)
    assert "inputs differ 1" in console and "Inputs differ (1)\n  PASS → PASS  differs [cpu]  (InputTensor)" in console
    assert "| differs | cpu | PASS | PASS | InputTensor |" in render_diff_markdown(d)
    assert "inputs differ" not in render_diff_console(diff_runs(old, old))


def test_diff_lists_cases_whose_outputs_differ_on_the_same_inputs() -> None:
    def run(case: str, inputs: str, outputs: str | None, status: Status = Status.PASS) -> Result:
        recorded = {"OutputValueTensor": outputs, "OutputIndexTensor": "i" * 64} if outputs else {}
        return Result(case, "TOP_K1", "dml", status, inputs_sha256={"InputTensor": inputs}, outputs_sha256=recorded)

    old = [run("same", "a", "x"), run("bits", "a", "x"), run("data", "a", "x"), run("unrun", "a", None)]
    new = [run("same", "a", "x"), run("bits", "a", "y"), run("data", "b", "y"), run("unrun", "a", "x")]
    d = diff_runs(old, new)
    # Other bits on the same inputs: listed; on other inputs: an inputs difference, not the EP's; unrecorded: neither.
    assert [c.new.case for c in d.outputs_differ] == ["bits"] and [c.new.case for c in d.inputs_differ] == ["data"]
    assert d.outputs_compared == 2 and not d.regressed
    console = render_diff_console(d)
    assert "Outputs differ (1)\n  PASS → PASS  bits [dml]  (OutputValueTensor)" in console
    assert "outputs differ 1" in console and "2 of them with outputs compared bit for bit" in console
    assert "| bits | dml | PASS | PASS | OutputValueTensor |" in render_diff_markdown(d)
    same = render_diff_console(diff_runs(old[:1], new[:1]))
    assert "outputs differ 0" in same and "1 of them with outputs compared bit for bit" in same
    # Runs from before the outputs were hashed say nothing of them.
    assert "outputs" not in render_diff_console(diff_runs(old[3:], old[3:]))


def test_a_gzipped_results_json_reads_as_the_plain_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    result = Result("f.yaml::c", "TOP_K1", "cpu", Status.PASS, outputs_sha256={"OutputValueTensor": "ab" * 32})
    plain = tmp_path / "results.json"
    write_results(str(plain), {"command": ["dmlconf", "run"]}, [result])
    packed = tmp_path / "packed" / "results.json.gz"
    packed.parent.mkdir()
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    expected = ResultsFile(Environment(command=("dmlconf", "run")), (result,))
    assert read_results(str(packed)) == read_results(str(plain)) == expected
    assert main(["diff", str(plain), str(packed)]) == 0
    compared = "(of 1 (case, EP) results in both runs, 1 of them with outputs compared bit for bit)"
    assert compared in capsys.readouterr().out
    assert main(["report", str(packed), "--format", "md"]) == 0
    assert (packed.parent / "summary.md").is_file()
    capsys.readouterr()
    # A cut .gz, and one damaged past its header: one line naming the file, exit 2, no traceback.
    cut, damaged = tmp_path / "cut.json.gz", tmp_path / "damaged.json.gz"
    cut.write_bytes(packed.read_bytes()[:40])
    damaged.write_bytes(packed.read_bytes()[:10] + b"\xff" * 64)
    for broken in (cut, damaged):
        assert main(["diff", str(broken), str(plain)]) == 2
        err = capsys.readouterr().err.splitlines()
        assert len(err) == 1 and err[0].startswith(f"dmlconf: {broken}: not a readable results.json: "), err


# --- whole runs, repeated ------------------------------------------------------------------------------------------

# Seeded generators of every kind (the fuzzer's finds: special values, ties), Data cases, Scale/Bias tensors, each
# operator, and negative cases (no inputs).
RUN_CASES = ["cases/found", "cases/mean_variance_normalization1/lowerings.yaml", "cases/slice1/invalid.yaml"]


def _run(folder: Path, *options: str) -> list[dict[str, Any]]:
    assert main(["run", *RUN_CASES, "--ep", "cpu", "--report-dir", str(folder), *options]) == 0
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return [{key: value for key, value in r.items() if key != "seconds"} for r in document["results"]]


def test_repeated_runs_give_the_same_inputs_and_verdicts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    in_process = _run(tmp_path / "j0", "-j", "0")  # packed (the default --pack 64), in this process
    worker = _run(tmp_path / "j1")  # the default: one worker process
    alone = _run(tmp_path / "alone", "-j", "0", "--pack", "1")  # each case in its own session
    assert len(in_process) > 100
    assert worker == in_process and alone == in_process  # every field but the time, in the same order
    for r in in_process:
        if r["status"] == "INVALID":
            assert r["inputs_sha256"] == {}
        else:
            assert r["inputs_sha256"] and all(len(h) == 64 and int(h, 16) >= 0 for h in r["inputs_sha256"].values())
    assert {r["status"] for r in in_process} >= {"PASS", "INVALID"}

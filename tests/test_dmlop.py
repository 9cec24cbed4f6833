"""``--ep dmlop``: each case's DML operator descriptor as DirectML.h lays it out, created, compiled and dispatched
through DirectML's own operator API in the runner; negative cases shown to CreateOperator.

The layout tests compute each struct's offsets by hand from the x64 C rules (a field at the next multiple of its
size; the struct padded to its largest field's), not from ctypes. The Wine tests run the genuine DirectML."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.cases.suite import collect
from conformance.ep import dml_abi as abi
from conformance.ep.dml_descriptor import DmlOperator, Inexpressible
from conformance.ep.dmlop import Created
from conformance.ep.providers import parse_ep
from conformance.ep.wine import protocol
from conformance.model import Case, Status
from conformance.results import Result
from conformance.run.operator_api import describe
from conformance.run.options import RunOptions
from conformance.run.runner import Prepared, finish, prepare

REPO = Path(__file__).resolve().parent.parent


def describe_operator(case: Case) -> DmlOperator:
    """The case's descriptor as ``--ep dmlop`` makes it, in its default modes."""
    return describe(case, parse_ep("dmlop"))


def _case(path: str, name: str) -> Case:
    entries = [e for e in collect([str(REPO / path)]).entries if e.id.endswith(f"::{name}")]
    assert len(entries) == 1 and isinstance(entries[0], Case)
    return entries[0]


def test_the_shared_structs_have_directml_h_s_x64_layout() -> None:
    # DML_BUFFER_TENSOR_DESC: 3 UINTs (0, 4, 8), Sizes at 16, Strides 24, UINT64 32, UINT 40, padded to 48.
    assert (abi.BufferTensorDesc.Sizes.offset, abi.BufferTensorDesc.TotalTensorSizeInBytes.offset) == (16, 32)
    assert abi.BufferTensorDesc.GuaranteedBaseOffsetAlignment.offset == 40
    assert abi.ctypes.sizeof(abi.BufferTensorDesc) == 48
    # Each operator's own desc: tests/test_dml_fields.py.
    # An activation: two NULL tensors, then its FLOATs.
    shrink = abi.activation_struct(["Bias", "Threshold"])
    assert (shrink.Bias.offset, shrink.Threshold.offset, abi.ctypes.sizeof(shrink)) == (16, 20, 24)  # type: ignore[attr-defined]


def _field(block: bytes, at: int, fmt: str) -> Any:
    return struct.unpack_from(fmt, block, at)[0]


def test_the_top_k1_descriptor_says_the_case_field_by_field() -> None:
    op = describe_operator(_case("cases/top_k1/spec_examples.yaml", "example-4-increasing"))
    block, relocated = op.block, {at for at, _ in op.pointers}
    assert op.operator == "DML_OPERATOR_TOP_K1" and _field(block, op.desc_at, "<I") == 112  # DirectML.h's value
    desc = _field(block, op.desc_at + 8, "<Q")
    assert op.desc_at + 8 in relocated and desc in range(16, len(block))
    axis, k, direction = struct.unpack_from("<III", block, desc + 24)
    assert (axis, k, direction) == (3, 3, 0)  # INCREASING is 0 in DML_AXIS_DIRECTION
    index_tensor = _field(block, desc + 16, "<Q")
    buffer_desc = _field(block, index_tensor + 8, "<Q")
    data_type, flags, rank = struct.unpack_from("<III", block, buffer_desc)
    assert (data_type, flags, rank) == (3, 0, 4)  # UINT32, as the spec says: not onnxruntime's int64
    sizes = _field(block, buffer_desc + 16, "<Q")
    assert struct.unpack_from("<4I", block, sizes) == (1, 1, 3, 3)
    assert _field(block, buffer_desc + 24, "<Q") == 0  # no Strides given: NULL
    assert _field(block, buffer_desc + 32, "<Q") == 36  # 9 UINT32s
    for at, size in op.pointers:  # every relocated pointer's target lies inside the block, whole
        assert _field(block, at, "<Q") >= 16 and _field(block, at, "<Q") + size <= len(block)


def test_mvn1_keeps_normalize_variance_false_scale_alone_and_gelu_fused() -> None:
    op = describe_operator(_case("cases/mean_variance_normalization1/lowerings.yaml", "no-variance"))
    desc = _field(op.block, op.desc_at + 8, "<Q")
    assert _field(op.block, desc + 48, "<i") == 0  # NormalizeVariance FALSE
    alone = describe_operator(_case("cases/mean_variance_normalization1/invalid.yaml", "scale-without-bias"))
    desc = _field(alone.block, alone.desc_at + 8, "<Q")
    scale, bias = struct.unpack_from("<QQ", alone.block, desc + 8)
    assert scale != 0 and bias == 0 and alone.inputs[2] is None  # ScaleTensor given, BiasTensor NULL and unbound
    gelu = describe_operator(_case("cases/mean_variance_normalization1/lowerings.yaml", "fused-activation[GELU]"))
    desc = _field(gelu.block, gelu.desc_at + 8, "<Q")
    activation = _field(gelu.block, desc + 56, "<Q")
    assert _field(gelu.block, activation, "<I") == 157  # DML_OPERATOR_ACTIVATION_GELU
    fused = _field(gelu.block, activation + 8, "<Q")
    assert struct.unpack_from("<QQ", gelu.block, fused) == (0, 0)  # a fused activation's tensors are NULL


def test_what_a_descriptor_cannot_say_is_inexpressible() -> None:
    prelu = _case("cases/mean_variance_normalization1/lowerings.yaml", "fused-activation[PARAMETERIZED_RELU]")
    with pytest.raises(Inexpressible, match="its desc needs a tensor"):
        describe_operator(prelu)


# A negative case shown to CreateOperator, judged on its answer (S_OK: accepted; E_INVALIDARG: refused). Whether the
# spec forbids the case or only a decision of the harness does is the validator's, so these need no DirectML (each
# decision is documented under the name the message gives it: tests/test_validate.py).

S_OK, E_INVALIDARG = 0, 0x80070057


def _shown(path: Path | str, name: str, hresult: int) -> Result:
    """The verdict on a negative case of ``path`` whose descriptor DirectML's CreateOperator answered ``hresult``."""
    [entry] = [e for e in collect([str(REPO / path)]).entries if e.id.endswith(f"::{name}")]
    ep, options = parse_ep("dmlop"), RunOptions()
    prepared = prepare(entry, ep, options)
    assert isinstance(prepared, Prepared), prepared  # shown: its problem is in its descriptor
    return finish(prepared, Created(hresult), ep, options, 0.0)


MVN_INVALID, MVN1 = "cases/mean_variance_normalization1/invalid.yaml", "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"


@pytest.mark.parametrize(
    ("path", "name", "operator", "decision"),
    [
        ("cases/slice1/layouts.yaml", "output-strides-alias", "DML_OPERATOR_SLICE1", "Output elements do not overlap"),
        (MVN_INVALID, "no-axes", MVN1, "MVN1 Axes"),
        (MVN_INVALID, "duplicate-axes", MVN1, "MVN1 Axes"),
    ],
)
def test_directml_accepting_what_only_a_decision_refuses_is_its_own_kind(
    path: str, name: str, operator: str, decision: str
) -> None:
    refused = _shown(path, name, E_INVALIDARG)
    assert refused.status is Status.INVALID and "refused it too (HRESULT 0x80070057)" in refused.message
    problem = refused.message.splitlines()[0]
    accepted = _shown(path, name, S_OK)
    assert (accepted.status, accepted.failure_kind) == (Status.FAIL, "dml_accepted_decision")
    assert accepted.message == (
        f"DirectML's CreateOperator accepted {operator}, which the spec does not forbid: only the harness's decision "
        f'"{decision}" refuses it (docs/tolerances.md#spec-decisions): {problem}'
    )
    assert accepted.placement == {operator: "DmlOperatorApi"} and accepted.directml == {"create_hresult": "0x00000000"}


@pytest.mark.parametrize(
    ("path", "name"),
    [
        ("cases/top_k1/invalid.yaml", "k-equals-axis-size"),  # the spec's words ("less than"), read literally
        (MVN_INVALID, "scale-without-bias"),
    ],
)
def test_directml_accepting_what_the_spec_forbids_stays_dml_accepted_invalid(path: str, name: str) -> None:
    accepted = _shown(path, name, S_OK)
    assert (accepted.status, accepted.failure_kind) == (Status.FAIL, "dml_accepted_invalid")
    assert "though the spec forbids it: " in accepted.message and "decision" not in accepted.message.splitlines()[0]


def test_a_case_the_spec_forbids_besides_a_decision_is_dml_accepted_invalid(tmp_path: Path) -> None:
    # No Axes (a decision) and ScaleTensor without BiasTensor (the spec's words): DirectML accepting it accepts what
    # the spec forbids, whatever else the harness decided.
    both = tmp_path / "both.yaml"
    both.write_text(
        'operator: MEAN_VARIANCE_NORMALIZATION1\nfeature_level: "3_1"\ncases:\n'
        "  - id: both\n    expect: invalid\n    reason: no axes, and a scale without a bias\n"
        "    InputTensor: {Sizes: [1, 2, 3, 3], DataType: FLOAT32, Generator: {Kind: normal, Seed: 1}}\n"
        "    ScaleTensor: {Sizes: [1, 2, 1, 1], DataType: FLOAT32, Data: [1, 2]}\n    Axes: []\n",
        encoding="utf-8",
    )
    accepted = _shown(both, "both", S_OK)
    assert (accepted.status, accepted.failure_kind) == (Status.FAIL, "dml_accepted_invalid")
    assert "BiasTensor is required" in accepted.message and "must name at least one axis" in accepted.message


def test_a_dispatch_reply_is_read_field_by_field() -> None:
    refused = struct.pack("<BI", protocol.ST_OK, 0x80070057)
    assert protocol.read_dispatch(refused, create_only=False) == protocol.DispatchReply(0x80070057)
    done = (
        struct.pack("<BIII", protocol.ST_OK, 0, 0, 1)
        + struct.pack("<Q", 4)
        + b"\x01\x02\x03\x04"
        + struct.pack("<IQQ", 8, 256, 0)
        + struct.pack("<I", 17)
        + b"0.1 2.000 300.500"
    )
    reply = protocol.read_dispatch(done, create_only=False)
    assert reply.outputs == (b"\x01\x02\x03\x04",) and (reply.descriptors, reply.temporary_bytes) == (8, 256)
    assert reply.milliseconds == (0.1, 2.0, 300.5)


# ---- the genuine DirectML under Wine ----

wine = pytest.mark.skipif(sys.platform == "win32", reason="the Wine chain's tests")


def _dmlconf(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=REPO, capture_output=True, text=True, timeout=600, check=False
    )


@wine
def test_the_spec_examples_pass_through_directml_s_operator_api(chain_ready: None, tmp_path: Path) -> None:
    done = _dmlconf(
        "run", "cases/top_k1/spec_examples.yaml", "cases/slice1/spec_examples.yaml", "--ep", "dmlop",
        "--report-dir", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert [r["status"] for r in results] == ["PASS"] * 6
    assert {r["dml_operator"] for r in results} == {"DML_OPERATOR_TOP_K1", "DML_OPERATOR_SLICE1"}  # created, seen
    assert all(r["directml"]["create_hresult"] == "0x00000000" for r in results)
    assert all(r["placement"] == {r["dml_operator"]: "DmlOperatorApi"} for r in results)  # the operator it dispatched


@wine
def test_negative_cases_are_shown_to_directml(chain_ready: None, tmp_path: Path) -> None:
    done = _dmlconf(
        "run", "cases/top_k1/invalid.yaml", "-k", "axis-size", "--ep", "dmlop", "--report-dir", str(tmp_path)
    )
    results = {r["case"].rpartition("::")[2]: r for r in json.loads((tmp_path / "results.json").read_text())["results"]}
    assert done.returncode == 1, done.stdout + done.stderr  # DirectML took a descriptor the spec forbids
    refused, accepted = results["k-over-axis-size"], results["k-equals-axis-size"]
    assert refused["status"] == "INVALID" and refused["directml"]["create_hresult"] == "0x80070057"  # E_INVALIDARG
    assert (accepted["status"], accepted["failure_kind"]) == ("FAIL", "dml_accepted_invalid")
    assert accepted["directml"]["create_hresult"] == "0x00000000" and "less than" in accepted["message"]
    assert accepted["placement"] == {"DML_OPERATOR_TOP_K1": "DmlOperatorApi"}  # DirectML made the operator


@wine
def test_directml_accepting_what_only_a_decision_refuses_is_told_apart(chain_ready: None, tmp_path: Path) -> None:
    done = _dmlconf("run", MVN_INVALID, "--ep", "dmlop", "--report-dir", str(tmp_path))
    results = {r["case"].rpartition("::")[2]: r for r in json.loads((tmp_path / "results.json").read_text())["results"]}
    assert done.returncode == 1, done.stdout + done.stderr  # DirectML 1.15.4 takes the four below
    accepted = {name: r["failure_kind"] for name, r in results.items() if r["status"] == "FAIL"}
    assert accepted == {
        "no-axes": "dml_accepted_decision",  # the spec states no rule on Axes: the harness's decision refuses them
        "duplicate-axes": "dml_accepted_decision",
        "scale-without-bias": "dml_accepted_invalid",  # "required if the BiasTensor is used"
        "bias-without-scale": "dml_accepted_invalid",
    }
    decided, forbidden = results["no-axes"], results["scale-without-bias"]
    assert decided["message"].startswith(
        f"DirectML's CreateOperator accepted {MVN1}, which the spec does not forbid: only the harness's decision "
        '"MVN1 Axes" refuses it (docs/tolerances.md#spec-decisions): '
    )
    assert forbidden["message"].startswith(f"DirectML's CreateOperator accepted {MVN1} though the spec forbids it: ")


def test_a_negative_case_s_own_output_sizes_are_the_descriptor_s() -> None:
    case = _case("cases/top_k1/invalid.yaml", "value-sizes-not-k-along-axis")
    op = describe_operator(case)
    written = case.outputs["OutputValueTensor"].sizes
    assert written is not None and op.outputs[0].sizes == written  # not the sizes the spec would derive


STRIDED = [
    ("cases/top_k1/layouts.yaml", "total-size-above-minimum"),  # bytes past the elements, up to the total
    ("cases/slice1/layouts.yaml", "strided-output[4x1]"),  # padded rows
    ("cases/mean_variance_normalization1/layouts.yaml", "strided-output"),  # NHWC, a total above the minimum
]


@wine
@pytest.mark.parametrize(("path", "name"), STRIDED, ids=[p.split("/")[1] for p, _ in STRIDED])
def test_a_strided_output_passes_and_a_corrupted_guard_or_padding_byte_fails(
    chain_ready: None, path: str, name: str
) -> None:
    """One real dispatch per operator of a case with a strided output; the canary check judges its buffers as they
    came back (PASS), then with one guard byte, one padding byte, and one byte before the binding changed (FAIL
    out_of_bounds_write)."""
    from dataclasses import replace

    from conformance.cases.generate import case_inputs
    from conformance.cases.oracle import expected_outputs
    from conformance.compare.canary import CANARY, GUARD_BYTES
    from conformance.ep.providers import parse_ep
    from conformance.ep.wine.client import Runners
    from conformance.results import Result
    from conformance.run import operator_api
    from reference.layout import addressed_bytes

    case, ep, runners = _case(path, name), parse_ep("dmlop"), Runners()
    try:
        inputs = case_inputs(case)
        expected = expected_outputs(case, inputs)
        done = operator_api.dispatch(case, describe_operator(case), inputs, ep, runners)
    finally:
        runners.close()
    base = Result(case.id, case.operator.value, "dmlop", Status.PASS)

    def judged(buffers: dict[str, bytes]) -> Result:
        return operator_api.judge(case, inputs, expected, base, replace(done, buffers=buffers), ep, None, None)

    assert judged(dict(done.buffers)).status is Status.PASS
    layout = operator_api.layouts(case)[next(iter(case.outputs))]
    guard = bytearray(done.buffers[layout.name])
    guard[GUARD_BYTES + layout.buffer_bytes + 5] ^= 0xFF  # a write past TotalTensorSizeInBytes
    found = judged({**done.buffers, layout.name: bytes(guard)})
    assert (found.status, found.failure_kind) == (Status.FAIL, "out_of_bounds_write") and "guard" in found.message
    owned = addressed_bytes(layout.sizes, layout.strides, layout.element_size, layout.buffer_bytes)
    padding = GUARD_BYTES + int(np.flatnonzero(~owned)[0])  # a byte between the strided elements
    assert done.buffers[layout.name][padding] == CANARY[padding % 4]  # DirectML left it alone
    hole = bytearray(done.buffers[layout.name])
    hole[padding] ^= 0xFF
    found = judged({**done.buffers, layout.name: bytes(hole)})
    assert (found.status, found.failure_kind) == (Status.FAIL, "out_of_bounds_write")
    assert "no element addresses" in found.message
    early = bytearray(done.buffers[layout.name])
    early[GUARD_BYTES - 1] ^= 0xFF  # the byte just before the binding's first
    found = judged({**done.buffers, layout.name: bytes(early)})
    assert (found.status, found.failure_kind) == (Status.FAIL, "out_of_bounds_write")
    assert "before its start" in found.message


@wine
def test_a_failing_case_s_artifacts_hold_its_buffers_and_a_dxdispatch_model(chain_ready: None, tmp_path: Path) -> None:
    """DirectML's TopK with NaN fails (explained under the dml heading of reports/README.md): its artifacts hold
    the case for Microsoft's own tool and the output buffers with their guards, beside the harness's repro."""
    case = "cases/found/top_k1.yaml::nan-near-k-short[DECREASING]"
    done = _dmlconf(
        "run", "cases/found/top_k1.yaml", "-k", case, "--ep", "dmlop", "--artifacts", str(tmp_path / "a"),
        "--report-dir", str(tmp_path / "r"),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    (folder,) = (tmp_path / "a").iterdir()
    names = {path.name for path in folder.iterdir()}
    assert {"dxdispatch.json", "README.txt", "buffer_OutputValueTensor.bin", "buffer_OutputIndexTensor.bin"} <= names
    model = json.loads((folder / "dxdispatch.json").read_text(encoding="utf-8"))
    assert model["dispatchables"]["TOP_K1"]["type"] == "DML_OPERATOR_TOP_K1"
    readme = (folder / "README.txt").read_text(encoding="utf-8")
    assert f"dmlconf run cases/found/top_k1.yaml -k '{case}' --ep dmlop" in readme and "dxdispatch.exe" in readme
    values = (folder / "buffer_OutputValueTensor.bin").read_bytes()
    assert len(values) == 64 + 28 + 64  # the guards around 7 FLOAT32 values

"""conformance.ep.execute: outputs by DML name, placement from onnxruntime's record, and no silent CPU runs."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from conformance.cases.layouts import case_layouts
from conformance.ep import execute as execute_module
from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.execute import DISABLE_CPU_FALLBACK, RECORD_ASSIGNMENT, execute, missing_kernel
from conformance.ep.lower import Lowering, lower
from conformance.ep.placement import PlacedNode, check_placement, lowering_op_types
from conformance.ep.providers import CPU, CUDA, DML, EpSpec, parse_ep
from conformance.ep.wine.chain import ChainMissing
from conformance.model import (
    Activation,
    AxisDirection,
    Case,
    DataType,
    Descriptor,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    TensorSpec,
    TopK1Desc,
)

SPEC_3X4 = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)  # TOP_K1 example 1
AVAILABLE = set(ort.get_available_providers())


def _case(operator: Operator, desc: Descriptor) -> Case:
    return Case("t", "t.yaml", operator, FeatureLevel(3, 1), desc, layouts=case_layouts(operator, desc))


def topk(data_type: DataType = DataType.FLOAT32) -> Lowering:
    desc = TopK1Desc(TensorSpec((1, 1, 3, 4), data_type), 3, 2, AxisDirection.DECREASING)
    x = SPEC_3X4.astype(
        {DataType.FLOAT32: np.float32, DataType.UINT16: np.uint16, DataType.UINT32: np.uint32, DataType.INT8: np.int8}[
            data_type
        ]
    )
    result = lower(_case(Operator.TOP_K1, desc), {"InputTensor": x}, CPU)
    assert isinstance(result, Lowering)
    return result


def test_cpu_run_returns_outputs_by_dml_name_and_placement() -> None:
    execution = execute(topk(), parse_ep("cpu"))
    assert set(execution.outputs) == {"OutputValueTensor", "OutputIndexTensor"}
    np.testing.assert_array_equal(execution.outputs["OutputValueTensor"].reshape(3, 2), [[11, 10], [9, 8], [7, 6]])
    np.testing.assert_array_equal(execution.outputs["OutputIndexTensor"].reshape(3, 2), [[3, 2], [2, 3], [3, 2]])
    assert execution.outputs["OutputIndexTensor"].dtype == np.int64
    assert execution.placement == {"TopK_0": CPU}


def test_every_node_of_a_decomposition_is_placed() -> None:
    desc = Mvn1Desc(TensorSpec((2, 3, 4), DataType.FLOAT16), None, None, (1, 2), True, 1e-5, None)
    x = np.random.default_rng(1).standard_normal((2, 3, 4)).astype(np.float16)
    lowering = lower(_case(Operator.MEAN_VARIANCE_NORMALIZATION1, desc), {"InputTensor": x}, CPU)
    assert isinstance(lowering, Lowering) and lowering.name == "decomposed-MVN"
    execution = execute(lowering, parse_ep("cpu"))
    assert execution.placement == {node: CPU for node in lowering.nodes}
    out = execution.outputs["OutputTensor"]
    x64 = x.astype(np.float64)
    d = x64 - x64.mean(axis=(1, 2), keepdims=True)
    expected = d / np.sqrt((d * d).mean(axis=(1, 2), keepdims=True) + float(np.float32(1e-5)))
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, expected, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(("data_type", "type_name"), [(DataType.UINT16, "uint16"), (DataType.UINT32, "uint32")])
def test_a_node_the_cpu_has_no_kernel_for_is_not_supported(data_type: DataType, type_name: str) -> None:
    with pytest.raises(NotSupported) as raised:
        execute(topk(data_type), parse_ep("cpu"))
    message = str(raised.value)
    assert "no TopK(11) kernel" in message and type_name in message and CPU in message
    assert "\n" not in message


def test_int8_topk_does_run_on_cpu() -> None:
    assert execute(topk(DataType.INT8), parse_ep("cpu")).placement == {"TopK_0": CPU}


@pytest.mark.parametrize("name", [CUDA, DML])
def test_an_unavailable_ep_is_an_error_not_a_cpu_run(name: str) -> None:
    if name in AVAILABLE:
        pytest.skip(f"{name} is available here")
    if name == DML and sys.platform != "win32":
        pytest.skip("off Windows DirectML runs in the runner under Wine (test_wine_chain.py)")
    with pytest.raises(ExecutionError, match=rf"{name} is not available"):
        execute(topk(), EpSpec(name.lower(), name))


@pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows")
def test_dml_off_windows_without_the_chain_names_the_missing_piece(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DMLCONF_VKD3D_PROTON", raising=False)
    # The user's first step, first: the script that sets up every piece (issue 38), then the piece's own remedy.
    with pytest.raises(ChainMissing, match=r"^DMLCONF_VKD3D_PROTON is not set: source \.ci/dml-chain\.sh sets up"):
        execute(topk(), parse_ep("dml"))


@pytest.mark.skipif("AzureExecutionProvider" not in AVAILABLE, reason="needs an EP without a TopK kernel")
def test_nodes_an_ep_leaves_to_the_cpu_are_named_not_run() -> None:
    # onnxruntime's CPU build carries the Azure EP, which has no TopK: without the guards TopK would run on the CPU.
    with pytest.raises(NotSupported) as raised:
        execute(topk(), parse_ep("AzureExecutionProvider"))
    assert str(raised.value) == "TopK node 'TopK_0' was placed on CPUExecutionProvider, not AzureExecutionProvider"


@pytest.mark.skipif("AzureExecutionProvider" not in AVAILABLE, reason="needs an EP without a TopK kernel")
def test_a_node_no_allowed_ep_has_a_kernel_for_is_not_supported() -> None:
    # uint16 TopK has no kernel on the Azure EP nor on the CPU EP: NOT_SUPPORTED, not an execution error.
    with pytest.raises(NotSupported, match=r"no TopK\(11\) kernel for uint16 "):
        execute(topk(DataType.UINT16), parse_ep("AzureExecutionProvider"))


def test_an_unassigned_node_with_cpu_fallback_disabled_is_not_supported() -> None:
    # The message onnxruntime-gpu 1.31.1 gave for uint32 TopK on CUDA with session.disable_cpu_ep_fallback=1.
    text = (
        "[ONNXRuntimeError] : 1 : FAIL : Exception during initialization: transformer_memcpy.cc:253 "
        "!node_provider_type.empty() was false. Provider type for TopK node with name 'TopK_0' is not set."
    )
    found = missing_kernel(text, topk(DataType.UINT32), CUDA)
    assert isinstance(found, NotSupported)
    assert str(found).startswith("CUDAExecutionProvider took no TopK node 'TopK_0' for uint32 ")
    assert missing_kernel("some other failure", topk(), CUDA) is None


class _Spy:
    """Records how execute builds its sessions, then builds them for real."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, dict[str, Any]]] = []
        self.real = ort.InferenceSession

    def __call__(self, model: bytes, options: Any, **kwargs: Any) -> Any:
        self.calls.append((options, kwargs))
        return self.real(model, options, **kwargs)


def _entry(options: Any, key: str) -> str:
    try:
        return str(options.get_session_config_entry(key))
    except RuntimeError:  # "SessionOptions does not have configuration with key"
        return ""


@pytest.mark.parametrize(("ep", "disabled"), [("cpu", ""), ("AzureExecutionProvider", "1")])
def test_sessions_record_placement_and_never_fall_back(monkeypatch: pytest.MonkeyPatch, ep: str, disabled: str) -> None:
    if parse_ep(ep).name not in AVAILABLE:
        pytest.skip(f"{ep} is not in this build")
    spy = _Spy()
    monkeypatch.setattr(ort, "InferenceSession", spy)
    with contextlib.suppress(NotSupported):  # the Azure EP has no TopK
        execute(topk(), parse_ep(ep))
    options, kwargs = spy.calls[0]
    assert _entry(options, RECORD_ASSIGNMENT) == "1"
    assert _entry(options, DISABLE_CPU_FALLBACK) == disabled  # the CPU EP refuses it; every other EP gets it
    assert kwargs["enable_fallback"] == 0 and kwargs["providers"][0][0] == parse_ep(ep).name
    assert len(kwargs["providers"]) == 1  # the CPU EP is never added beside another EP


def test_dml_sessions_are_sequential_without_memory_patterns() -> None:
    options = execute_module._session_options(parse_ep("dml:device_id=1"), [], strict=True)
    assert options.execution_mode == ort.ExecutionMode.ORT_SEQUENTIAL and options.enable_mem_pattern is False
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    assert execute_module._providers(parse_ep("dml:device_id=1,disable_metacommands=true")) == [
        (DML, {"device_id": "1", "disable_metacommands": "true"})
    ]
    assert execute_module._providers(parse_ep("cuda")) == [(CUDA, {"device_id": "0"})]
    cpu = execute_module._session_options(parse_ep("cpu"), [], strict=True)
    assert cpu.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL


def test_check_placement() -> None:
    nodes = ("Cast_0", "Relu_1", "Cast_2")
    records = [
        PlacedNode("Cast_0", "Cast", CUDA),
        PlacedNode("Relu_1", "Relu", CUDA),
        PlacedNode("Cast_2", "Cast", CUDA),
    ]
    assert check_placement(records, nodes, CUDA) == dict.fromkeys(nodes, CUDA)
    with pytest.raises(NotSupported, match=r"^Relu node 'Relu_1' was placed on CPUExecutionProvider, not CUDA"):
        check_placement([*records[:1], PlacedNode("Relu_1", "Relu", CPU), records[2]], nodes, CUDA)
    with pytest.raises(ExecutionError, match=r"no placement"):
        check_placement([], nodes, CUDA)
    # a node onnxruntime deleted before partitioning ran nowhere; the others still prove where they ran
    assert check_placement(records[:2], nodes, CUDA) == {"Cast_0": CUDA, "Relu_1": CUDA}
    # DirectML records an activation fused into the normalization under a name of its own
    fused = [
        PlacedNode("fused op (#0 'InstanceNormalization_0') + (#1 'Relu_1')", "DmlFusedInstanceNormalization", DML)
    ]
    assert check_placement(fused, ("InstanceNormalization_0", "Relu_1"), DML) == {fused[0].name: DML}
    ops = frozenset({"InstanceNormalization", "Relu"})
    assert check_placement(fused, ("InstanceNormalization_0", "Relu_1"), DML, ops) == {fused[0].name: DML}
    rewritten = [PlacedNode("LayerNorm_fused", "LayerNormalization", DML)]
    with pytest.raises(ExecutionError, match=r"rewrote the lowering.*LayerNormalization node 'LayerNorm_fused'"):
        check_placement(rewritten, ("ReduceMean_0", "Sub_1"), DML, frozenset({"ReduceMean", "Sub"}))
    with pytest.raises(NotSupported, match=r"placed on CPUExecutionProvider, not DmlExecutionProvider"):
        check_placement([*fused, PlacedNode("Relu_1", "Relu", CPU)], ("InstanceNormalization_0", "Relu_1"), DML)
    # the CPU EP's missing float16 Relu: onnxruntime widens it with unnamed Casts (InsertCastTransformer)
    widened = [PlacedNode("", "Cast", CPU), PlacedNode("Relu_1", "Relu", CPU), PlacedNode("", "Cast", CPU)]
    with pytest.raises(NotSupported, match=r"no float16 kernel.*inserted 2 Cast node") as raised:
        check_placement(widened, ("Relu_1",), CPU, frozenset({"Relu"}))
    assert raised.value.kind == "no_kernel"


def test_float16_relu_on_cpu_is_not_supported() -> None:
    """onnxruntime's CPU EP has no float16 Relu kernel (it computes one in float32 between inserted Casts)."""
    desc = Mvn1Desc(TensorSpec((1, 2, 3), DataType.FLOAT16), None, None, (2,), True, 1e-5, Activation("RELU"))
    case = _case(Operator.MEAN_VARIANCE_NORMALIZATION1, desc)
    x = np.array([[[1, 2, 4], [-3, 0, 3]]], np.float16)
    lowering = lower(case, {"InputTensor": x}, CPU)
    assert isinstance(lowering, Lowering)
    with pytest.raises(NotSupported, match=r"no float16 kernel"):
        execute(lowering, parse_ep("cpu"))


@pytest.mark.skipif(importlib.util.find_spec("onnxruntime_ep_webgpu") is not None, reason="the package is here")
def test_webgpu_without_its_package_is_an_error() -> None:
    with pytest.raises(ExecutionError, match=r"webgpu plugin EP could not be loaded"):
        execute(topk(), parse_ep("webgpu"))


def test_a_plugin_library_that_does_not_load_is_an_error() -> None:
    with pytest.raises(ExecutionError, match=r"could not be loaded"):
        execute(topk(), parse_ep("/nonexistent/libnot_an_ep.so"))


def test_onnxruntime_failures_are_execution_errors() -> None:
    good = topk()
    with pytest.raises(ExecutionError, match=r"could not create a CPUExecutionProvider session"):
        execute(Lowering("junk", b"not a model", {}, {}, ("n",)), parse_ep("cpu"))
    wrong_shape = {"InputTensor": np.zeros((1, 1, 3, 5), np.float32)}
    with pytest.raises(ExecutionError, match=r"TopK-11 failed on CPUExecutionProvider"):
        execute(Lowering(good.name, good.model, wrong_shape, good.outputs, good.nodes), parse_ep("cpu"))


class _FailingEp:
    """An InferenceSession whose EP cannot start: what the Python wrapper would answer with a CPU retry."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError(
            "D:\\a\\onnxruntime\\provider_bridge.cc: CUDA failure 100: no CUDA-capable device is detected"
        )


@pytest.mark.skipif("AzureExecutionProvider" not in AVAILABLE, reason="needs a second EP in this build")
def test_an_ep_that_cannot_start_is_not_supported_naming_the_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort, "InferenceSession", _FailingEp)
    with pytest.raises(NotSupported) as error:
        execute(topk(), parse_ep("AzureExecutionProvider"))
    message = str(error.value)
    assert message.startswith("AzureExecutionProvider could not create a session for TopK-11 (")
    assert "no CUDA-capable device" in message
    assert message.endswith("TopK_0 would have run on CPUExecutionProvider")
    assert error.value.kind == "ep_not_started"


def test_the_cpu_ep_failing_to_start_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort, "InferenceSession", _FailingEp)
    with pytest.raises(ExecutionError, match=r"could not create a CPUExecutionProvider session"):
        execute(topk(), parse_ep("cpu"))


class _FailingModel:
    """An EP that starts (the probe session works) but refuses the case's model."""

    def __init__(self) -> None:
        self.real = ort.InferenceSession

    def __call__(self, model: bytes, *args: Any, **kwargs: Any) -> Any:
        if b"probe" not in model:
            raise RuntimeError("DmlOperatorTopk.cpp(42): the parameter is incorrect")
        return self.real(model, *args, **kwargs)


@pytest.mark.skipif("AzureExecutionProvider" not in AVAILABLE, reason="needs a second EP in this build")
def test_a_session_refused_by_an_ep_that_starts_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ort, "InferenceSession", _FailingModel())
    with pytest.raises(
        ExecutionError, match=r"could not create a AzureExecutionProvider session for TopK-11: .*incorrect"
    ):
        execute(topk(), parse_ep("AzureExecutionProvider"))


def test_lowering_op_types_include_function_bodies() -> None:
    hard_swish = Lowering("HardSwish", _one_node_model("HardSwish"), {}, {}, ("HardSwish_0",))
    assert lowering_op_types(hard_swish) == {"HardSwish", "HardSigmoid", "Mul"}
    sqrt = Lowering("Sqrt", _one_node_model("Sqrt"), {}, {}, ("Sqrt_0",))
    assert lowering_op_types(sqrt) == {"Sqrt"}


def _one_node_model(op_type: str) -> bytes:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])
    graph = helper.make_graph([helper.make_node(op_type, ["x"], ["y"], name=f"{op_type}_0")], "g", [x], [y])
    return bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString())


# -- refused attempts share a never-run context (WebGPU: a device context per live sessions) ---------------------


def _attempts(monkeypatch: pytest.MonkeyPatch, ep: EpSpec, names: list[str], keeper: object) -> tuple[Any, ...]:
    """``names`` through ``_create`` on ``ep`` (those starting "refused" refused): each attempt's name with whether a
    keeper held a context as it was made, each diagnosis's the same, and the keeper left."""
    from conformance.ep.sessions import RefusalContext

    refusals = RefusalContext()
    monkeypatch.setattr(execute_module, "REFUSALS", refusals)
    attempts: list[tuple[str, bool]] = []
    diagnosed: list[bool] = []

    def session(lowering: Lowering, ep: EpSpec, devices: Any, strict: bool, threads: Any) -> object:
        attempts.append((lowering.name, refusals.keeper is not None))
        if lowering.name.startswith("refused"):
            raise RuntimeError("no kernel")
        return object()

    def refusal(*args: Any) -> Exception:
        diagnosed.append(refusals.keeper is not None)
        return NotSupported("refused")

    monkeypatch.setattr(execute_module, "_session", session)
    monkeypatch.setattr(execute_module, "_never_run", lambda ep, devices: keeper)
    monkeypatch.setattr(execute_module, "_refusal", refusal)
    for name in names:
        with contextlib.suppress(NotSupported):
            execute_module._create(Lowering(name, b"", {}, {}, ()), ep, ep.name, [], None)
    return attempts, diagnosed, refusals.keeper


def test_refused_attempts_share_a_never_run_context_and_a_session_that_runs_gets_a_fresh_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kept = object()
    names = ["refused-1", "refused-2", "pack", "refused-3"]  # a pack's session is made by _create as a case's is
    attempts, diagnosed, keeper = _attempts(monkeypatch, parse_ep("webgpu"), names, kept)
    assert attempts == [
        ("refused-1", False),  # a fresh context, as every attempt had before
        ("refused-2", True),  # the keeper's, held since the first refusal
        ("pack", True),  # made in the keeper's context: dropped, since it would run there
        ("pack", False),  # the keeper closed first: the session that runs has a context of its own
        ("refused-3", False),
    ]
    assert diagnosed == [True, True, True]  # each diagnosis in the keeper's context, never a fresh one
    assert keeper is kept  # held again after refused-3, for the attempts after it


def test_only_an_ep_whose_context_lives_with_its_sessions_keeps_one_and_a_keeper_that_fails_changes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = ["refused-1", "refused-2", "runs"]
    attempts, diagnosed, keeper = _attempts(monkeypatch, parse_ep("cuda"), names, object())
    assert attempts == [("refused-1", False), ("refused-2", False), ("runs", False)] and keeper is None
    # WebGPU without a keeper (it could not be made): every attempt fresh, each refusal still the verdict
    attempts, diagnosed, keeper = _attempts(monkeypatch, parse_ep("webgpu"), names, None)
    assert attempts == [("refused-1", False), ("refused-2", False), ("runs", False)]
    assert diagnosed == [False, False] and keeper is None

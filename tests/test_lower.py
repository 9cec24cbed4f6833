"""conformance.ep.lower: the ONNX models it builds are well formed, and onnx.reference / onnxruntime's CPU EP running
them give what the spec pages (or a hand NumPy formula of the descriptor) say."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

from conformance.cases.layouts import case_layouts
from conformance.ep.lower import Lowering, NotExpressible, lower, same_for_every_ep
from conformance.ep.mvn1 import DML_FUSED_ACTIVATIONS
from conformance.ep.mvn1_lowering import DECOMPOSED, INSTANCE_NORM, MVN_13, mvn_candidate
from conformance.ep.slice1_lowering import INT64_MIN, slice_bounds
from conformance.model import (
    ACTIVATION_PARAMS,
    Activation,
    AxisDirection,
    Case,
    DataType,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    Slice1Desc,
    TensorSpec,
    TopK1Desc,
)

Array = npt.NDArray[Any]
CPU, DML = "CPUExecutionProvider", "DmlExecutionProvider"
CUDA, WEBGPU = "CUDAExecutionProvider", "WebGpuExecutionProvider"
NUMPY = {
    DataType.FLOAT32: np.float32,
    DataType.FLOAT16: np.float16,
    DataType.INT32: np.int32,
    DataType.INT16: np.int16,
    DataType.INT8: np.int8,
    DataType.UINT32: np.uint32,
    DataType.UINT16: np.uint16,
    DataType.UINT8: np.uint8,
}
SPEC_4X4 = np.arange(1, 17, dtype=np.float32).reshape(1, 1, 4, 4)  # the SLICE1 page's input
SPEC_3X4 = np.array([[[[0, 1, 10, 11], [3, 2, 9, 8], [4, 5, 6, 7]]]], np.float32)  # TOP_K1 examples 1 and 2
SPEC_TIES = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], np.float32)  # TOP_K1 examples 3 and 4


def spec(sizes: tuple[int, ...], data_type: DataType = DataType.FLOAT32) -> TensorSpec:
    return TensorSpec(sizes=sizes, data_type=data_type)


def case_of(desc: TopK1Desc | Slice1Desc | Mvn1Desc) -> Case:
    operator = (
        Operator.TOP_K1
        if isinstance(desc, TopK1Desc)
        else Operator.SLICE1
        if isinstance(desc, Slice1Desc)
        else Operator.MEAN_VARIANCE_NORMALIZATION1
    )
    return Case("t", "t.yaml", operator, FeatureLevel(3, 1), desc, layouts=case_layouts(operator, desc))


def lowered(desc: TopK1Desc | Slice1Desc | Mvn1Desc, inputs: Mapping[str, Array], ep: str = CPU) -> Lowering:
    result = lower(case_of(desc), inputs, ep)
    assert isinstance(result, Lowering), result
    model = onnx.load_from_string(result.model)
    onnx.checker.check_model(model, full_check=True)
    assert model.ir_version == 9
    names = [node.name for node in model.graph.node]
    assert all(names) and len(set(names)) == len(names) and tuple(names) == result.nodes
    initializers = {init.name for init in model.graph.initializer}
    assert set(result.feeds) == {i.name for i in model.graph.input} and not set(result.feeds) & initializers
    assert set(result.outputs) == {o.name for o in model.graph.output}
    return result


def ort_cpu(lowering: Lowering) -> dict[str, Array]:
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(lowering.model, options, providers=["CPUExecutionProvider"])
    names = list(lowering.outputs)
    return {lowering.outputs[n]: v for n, v in zip(names, session.run(names, dict(lowering.feeds)), strict=True)}


def reference(lowering: Lowering) -> dict[str, Array]:
    names = list(lowering.outputs)
    values = ReferenceEvaluator(onnx.load_from_string(lowering.model)).run(names, dict(lowering.feeds))
    return {lowering.outputs[n]: np.asarray(v) for n, v in zip(names, values, strict=True)}


def both(lowering: Lowering) -> list[dict[str, Array]]:
    return [ort_cpu(lowering), reference(lowering)]


# --- TOP_K1 -----------------------------------------------------------------------------------------------------

TOPK_EXAMPLES = [  # (input, axis, K, direction, values, indices) from DML_TOP_K1_OPERATOR_DESC.md
    (SPEC_3X4, 3, 2, AxisDirection.DECREASING, [[11, 10], [9, 8], [7, 6]], [[3, 2], [2, 3], [3, 2]]),
    (SPEC_3X4, 2, 2, AxisDirection.DECREASING, [[4, 5, 10, 11], [3, 2, 9, 8]], [[2, 2, 0, 0], [1, 1, 1, 1]]),
    (SPEC_TIES, 3, 3, AxisDirection.DECREASING, [[3, 2, 2], [5, 5, 4], [6, 6, 6]], [[3, 1, 2], [2, 3, 1], [0, 1, 2]]),
    (SPEC_TIES, 3, 3, AxisDirection.INCREASING, [[1, 2, 2], [3, 4, 5], [6, 6, 6]], [[0, 1, 2], [0, 1, 2], [0, 1, 2]]),
]


@pytest.mark.parametrize(("x", "axis", "k", "direction", "values", "indices"), TOPK_EXAMPLES)
def test_topk_spec_examples(
    x: Array, axis: int, k: int, direction: AxisDirection, values: list[list[int]], indices: list[list[int]]
) -> None:
    lowering = lowered(TopK1Desc(spec((1, 1, 3, 4)), axis, k, direction), {"InputTensor": x})
    assert lowering.name == "TopK-11" and lowering.nodes == ("TopK_0",)
    node = onnx.load_from_string(lowering.model).graph.node[0]
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    assert attrs == {"axis": axis, "largest": int(direction is AxisDirection.DECREASING), "sorted": 1}
    for out in both(lowering):
        np.testing.assert_array_equal(out["OutputValueTensor"].reshape(len(values), -1), values)
        np.testing.assert_array_equal(out["OutputIndexTensor"].reshape(len(indices), -1), indices)
        assert out["OutputIndexTensor"].dtype == np.int64


@pytest.mark.parametrize(
    "desc",
    [
        TopK1Desc(spec((1, 1, 3, 4)), 3, 2, AxisDirection.INCREASING),
        Slice1Desc(spec((1, 1, 4, 4)), (0, 0, 0, 1), (1, 1, 4, 3), (1, 1, -2, 2), (1, 1, 2, 2)),
    ],
)
def test_topk_and_slice_lower_alike_for_every_ep(desc: TopK1Desc | Slice1Desc) -> None:
    # The runner names a case's DML operator from this EP's lowering when the case says it is the same for all.
    inputs = {"InputTensor": SPEC_3X4 if isinstance(desc, TopK1Desc) else SPEC_4X4}
    assert same_for_every_ep(case_of(desc))
    models = {lowered(desc, inputs, ep).model for ep in (CPU, CUDA, WEBGPU, DML, "SomeOtherExecutionProvider")}
    assert len(models) == 1


def test_mvn_lowering_is_chosen_per_ep() -> None:
    desc = mvn((2, 3, 4, 5), (1, 2, 3), epsilon=0.0)
    assert not same_for_every_ep(case_of(desc))
    assert lowered(desc, mvn_inputs(desc), CPU).model != lowered(desc, mvn_inputs(desc), DML).model


@pytest.mark.parametrize("data_type", list(DataType))
def test_topk_every_dtype_builds_and_keeps_its_type(data_type: DataType) -> None:
    x = np.array([[5, 1, 7, 3], [2, 8, 0, 6]], NUMPY[data_type])
    lowering = lowered(TopK1Desc(spec((2, 4), data_type), 1, 2, AxisDirection.DECREASING), {"InputTensor": x})
    graph = onnx.load_from_string(lowering.model).graph
    assert graph.input[0].type.tensor_type.elem_type == helper.np_dtype_to_tensor_dtype(np.dtype(NUMPY[data_type]))
    assert graph.output[1].type.tensor_type.elem_type == TensorProto.INT64
    out = reference(lowering)
    np.testing.assert_array_equal(out["OutputValueTensor"], [[7, 5], [8, 6]])
    np.testing.assert_array_equal(out["OutputIndexTensor"], [[2, 0], [1, 3]])


# --- SLICE1 -----------------------------------------------------------------------------------------------------


def spec_slice(
    x: Array, offsets: tuple[int, ...], strides: tuple[int, ...], sizes: tuple[int, ...], out: tuple[int, ...]
) -> Array:
    """The SLICE1 page's pseudo-code, literally: Output[c] = Input[CopyStart + Strides * c]."""
    start = [o + (s - 1 if st < 0 else 0) for o, s, st in zip(offsets, sizes, strides, strict=True)]
    result = np.empty(out, x.dtype)
    for coord in np.ndindex(*out):
        result[coord] = x[tuple(b + st * c for b, st, c in zip(start, strides, coord, strict=True))]
    return result


@pytest.mark.parametrize(
    ("strides", "expected"), [((1, 1, 2, 2), [[2, 4], [10, 12]]), ((1, 1, -2, 2), [[14, 16], [6, 8]])]
)
def test_slice_spec_examples(strides: tuple[int, ...], expected: list[list[int]]) -> None:
    desc = Slice1Desc(spec((1, 1, 4, 4)), (0, 0, 0, 1), (1, 1, 4, 3), strides, (1, 1, 2, 2))
    lowering = lowered(desc, {"InputTensor": SPEC_4X4})
    assert lowering.name == "Slice-13"
    for out in both(lowering):
        np.testing.assert_array_equal(out["OutputTensor"].reshape(2, 2), expected)


def test_negative_stride_window_touching_zero_ends_at_int64_min() -> None:
    x = np.arange(5, dtype=np.float32)
    desc = Slice1Desc(spec((5,)), (0,), (5,), (-2,), None)  # copies 4, 2, 0: one step past 0 is -1
    assert slice_bounds(desc) == ([4], [INT64_MIN], [-2])
    for out in both(lowered(desc, {"InputTensor": x})):
        np.testing.assert_array_equal(out["OutputTensor"], [4, 2, 0])
    naive = helper.make_model(
        helper.make_graph(  # the trap: end -1 means "the last element", an empty slice
            [helper.make_node("Slice", ["x", "s", "e", "a", "st"], ["y"])],
            "naive",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
            [
                helper.make_tensor(n, TensorProto.INT64, [1], [v])
                for n, v in (("s", 4), ("e", -1), ("a", 0), ("st", -2))
            ],
        ),
        opset_imports=[helper.make_opsetid("", 18)],
    )
    naive_out = ReferenceEvaluator(naive).run(None, {"x": x})
    assert isinstance(naive_out, list) and np.asarray(naive_out[0]).size == 0


@pytest.mark.parametrize(
    ("offset", "size", "stride", "out", "bounds", "expected"),
    [
        (0, 3, -1, None, (2, INT64_MIN), [2, 1, 0]),
        (1, 3, -1, None, (3, 0), [3, 2, 1]),  # end 0 is a real index: kept
        (0, 5, -2, (2,), (4, 1), [4, 2]),  # fewer than MaxCopiedElements
        (1, 4, -3, None, (4, 0), [4, 1]),
        (0, 4, -3, None, (3, INT64_MIN), [3, 0]),
        (2, 3, 2, None, (2, 5), [2, 4]),
    ],
)
def test_slice_bounds_edges(
    offset: int, size: int, stride: int, out: tuple[int, ...] | None, bounds: tuple[int, int], expected: list[int]
) -> None:
    x = np.arange(5, dtype=np.int32)
    desc = Slice1Desc(spec((5,), DataType.INT32), (offset,), (size,), (stride,), out)
    starts, ends, _ = slice_bounds(desc)
    assert (starts[0], ends[0]) == bounds
    for result in both(lowered(desc, {"InputTensor": x})):
        np.testing.assert_array_equal(result["OutputTensor"], expected)


def test_slice_random_windows_match_the_spec_pseudocode() -> None:
    rng = np.random.default_rng(7)
    x = rng.integers(0, 1000, (4, 5, 6)).astype(np.float32)
    for _ in range(40):
        offsets, sizes, strides, outs = [], [], [], []
        for dim in x.shape:
            offset = int(rng.integers(0, dim))
            size = int(rng.integers(1, dim - offset + 1))
            stride = int(rng.choice([-3, -2, -1, 1, 2, 3]))
            offsets.append(offset)
            sizes.append(size)
            strides.append(stride)
            outs.append(int(rng.integers(1, 1 + (size - 1) // abs(stride) + 1)))
        desc = Slice1Desc(spec(x.shape), tuple(offsets), tuple(sizes), tuple(strides), tuple(outs))
        expected = spec_slice(x, desc.offsets, desc.strides, desc.sizes, tuple(outs))
        for result in both(lowered(desc, {"InputTensor": x})):
            np.testing.assert_array_equal(result["OutputTensor"], expected)


@pytest.mark.parametrize("data_type", list(DataType))
def test_slice_every_dtype_runs_on_cpu(data_type: DataType) -> None:
    x = np.arange(12).reshape(3, 4).astype(NUMPY[data_type])
    desc = Slice1Desc(spec((3, 4), data_type), (0, 1), (3, 3), (-1, 2), None)
    out = ort_cpu(lowered(desc, {"InputTensor": x}))["OutputTensor"]
    assert out.dtype == NUMPY[data_type]
    np.testing.assert_array_equal(out, [[9, 11], [5, 7], [1, 3]])


def test_slice_zero_stride_is_not_expressible() -> None:
    desc = Slice1Desc(spec((4,)), (0,), (4,), (0,), (1,))
    assert isinstance(lower(case_of(desc), {"InputTensor": np.zeros(4, np.float32)}, CPU), NotExpressible)


# --- MEAN_VARIANCE_NORMALIZATION1 -------------------------------------------------------------------------------


def mvn(
    sizes: tuple[int, ...],
    axes: tuple[int, ...],
    *,
    epsilon: float = 1e-5,
    normalize: bool = True,
    scale: tuple[int, ...] | None = None,
    bias: tuple[int, ...] | None = None,
    activation: Activation | None = None,
    data_type: DataType = DataType.FLOAT32,
) -> Mvn1Desc:
    return Mvn1Desc(
        spec(sizes, data_type),
        None if scale is None else spec(scale, data_type),
        None if bias is None else spec(bias, data_type),
        axes,
        normalize,
        epsilon,
        activation,
    )


def mvn_inputs(desc: Mvn1Desc, seed: int = 0) -> dict[str, Array]:
    rng = np.random.default_rng(seed)
    dtype = NUMPY[desc.input.data_type]
    inputs = {"InputTensor": (rng.standard_normal(desc.input.sizes) * 3 + 1).astype(dtype)}
    for key, tensor in (("ScaleTensor", desc.scale), ("BiasTensor", desc.bias)):
        if tensor is not None:
            inputs[key] = rng.uniform(-2, 2, tensor.sizes).astype(dtype)
    return inputs


def mvn64(desc: Mvn1Desc, inputs: Mapping[str, Array]) -> Array:
    """The descriptor's formula in float64, with the FLOAT Epsilon the operator receives."""
    x = inputs["InputTensor"].astype(np.float64)
    y = x - x.mean(axis=desc.axes, keepdims=True)
    if desc.normalize_variance:
        y = y / np.sqrt((y * y).mean(axis=desc.axes, keepdims=True) + float(np.float32(desc.epsilon)))
    if "ScaleTensor" in inputs:
        y = y * inputs["ScaleTensor"].astype(np.float64)
    if "BiasTensor" in inputs:
        y = y + inputs["BiasTensor"].astype(np.float64)
    return np.asarray(y)


CHOICES = [  # (EP, desc, expected lowering)
    (CPU, mvn((2, 3, 4, 5), (2, 3)), INSTANCE_NORM),
    (CPU, mvn((2, 3, 4, 5), (3, 2)), INSTANCE_NORM),  # order-insensitive
    (DML, mvn((2, 3, 4, 5), (2, 3)), INSTANCE_NORM),
    (WEBGPU, mvn((2, 3, 7), (2,), scale=(1, 3, 1), bias=(1, 3, 1)), INSTANCE_NORM),
    (CPU, mvn((2, 3, 4, 5), (2, 3), scale=(1, 1, 1, 1), bias=(1, 3, 1, 1)), INSTANCE_NORM),
    (CPU, mvn((2, 3, 4, 5), (2, 3), scale=(2, 3, 1, 1), bias=(2, 3, 1, 1)), DECOMPOSED),  # per-instance scale
    (CPU, mvn((2, 3, 4, 5), (2, 3), scale=(1, 1, 4, 5), bias=(1, 1, 4, 5)), DECOMPOSED),  # spatial scale
    (CPU, mvn((2, 3, 4, 5), (2, 3), normalize=False), DECOMPOSED),
    (CPU, mvn((3, 4), (1,), epsilon=0.0), MVN_13),  # rank < 3 cannot be InstanceNormalization
    (CUDA, mvn((2, 3, 4, 5), (2, 3)), INSTANCE_NORM),
    (CUDA, mvn((2, 3, 4, 5), (2, 3), epsilon=1e-6), DECOMPOSED),  # cuDNN would raise epsilon to its minimum
    (DML, mvn((2, 3, 4, 5), (1, 2, 3)), MVN_13),
    (DML, mvn((2, 3, 4, 5), (0, 2, 3)), MVN_13),
    (DML, mvn((2, 3, 4, 5), (0, 2, 3), data_type=DataType.FLOAT16), DECOMPOSED),  # MVN-13's body is float-only
    (DML, mvn((2, 3, 4, 5), (1, 2, 3), epsilon=1e-3), DECOMPOSED),
    (DML, mvn((2, 3, 4, 5), (1, 2, 3), scale=(1, 3, 1, 1), bias=(1, 3, 1, 1)), DECOMPOSED),
    (CPU, mvn((2, 3, 4, 5), (1, 2, 3)), DECOMPOSED),  # onnxruntime's CPU MVN adds no epsilon
    (CPU, mvn((2, 3, 4, 5), (1, 2, 3), epsilon=0.0), MVN_13),
    (CPU, mvn((2, 3, 4, 5), (1, 2, 3), epsilon=0.0, data_type=DataType.FLOAT16), DECOMPOSED),  # float32-only kernel
    (CUDA, mvn((2, 3, 4, 5), (1, 2, 3), epsilon=0.0), DECOMPOSED),  # no kernel: function body adds 1e-9 to std
    (WEBGPU, mvn((2, 3, 4, 5), (1, 2, 3)), DECOMPOSED),
    ("SomeOtherExecutionProvider", mvn((2, 3, 4, 5), (1, 2, 3), epsilon=0.0), DECOMPOSED),
]


@pytest.mark.parametrize(("ep", "desc", "expected"), CHOICES)
def test_mvn_lowering_choice_per_ep(ep: str, desc: Mvn1Desc, expected: str) -> None:
    assert mvn_candidate(desc, ep) == expected
    lowering = lowered(desc, mvn_inputs(desc), ep)
    assert lowering.name == expected


@pytest.mark.parametrize(
    "desc",
    [
        mvn((2, 3, 4, 5), (2, 3), epsilon=1e-3),
        mvn((2, 3, 6), (2,), scale=(1, 3, 1), bias=(1, 3, 1)),
        mvn((1, 2, 3, 2, 2), (2, 3, 4), scale=(1, 1, 1, 1, 1), bias=(1, 2, 1, 1, 1), epsilon=0.5),
    ],
)
def test_instance_normalization_matches_the_formula(desc: Mvn1Desc) -> None:
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs)
    assert lowering.name == INSTANCE_NORM
    model = onnx.load_from_string(lowering.model)
    epsilon = helper.get_attribute_value(model.graph.node[0].attribute[0])
    assert np.float32(epsilon) == np.float32(desc.epsilon)
    scale_input = {i.name: i for i in model.graph.input}.get("ScaleTensor")
    if desc.scale is not None:  # fed per channel, as [C]
        assert scale_input is not None and lowering.feeds["ScaleTensor"].shape == (desc.input.sizes[1],)
    for out in both(lowering):
        np.testing.assert_allclose(out["OutputTensor"], mvn64(desc, inputs), rtol=2e-5, atol=2e-5)


def test_instance_normalization_without_scale_uses_ones_and_zeros_of_the_input_type() -> None:
    desc = mvn((1, 2, 3, 3), (2, 3), data_type=DataType.FLOAT16)
    lowering = lowered(desc, mvn_inputs(desc))
    model = onnx.load_from_string(lowering.model)
    inits = {i.name: onnx.numpy_helper.to_array(i) for i in model.graph.initializer}
    scale, bias = (inits[name] for name in model.graph.node[0].input[1:])
    assert scale.dtype == bias.dtype == np.float16
    np.testing.assert_array_equal(scale, [1, 1])
    np.testing.assert_array_equal(bias, [0, 0])
    assert list(lowering.feeds) == ["InputTensor"]
    out = ort_cpu(lowering)["OutputTensor"]
    assert out.dtype == np.float16
    np.testing.assert_allclose(out, mvn64(desc, lowering.feeds), rtol=2e-3, atol=2e-3)


def test_mvn13_for_dml_carries_only_the_axes() -> None:
    desc = mvn((2, 3, 4, 5), (3, 1, 2))
    lowering = lowered(desc, mvn_inputs(desc), DML)
    node = onnx.load_from_string(lowering.model).graph.node[0]
    assert (node.op_type, lowering.nodes) == ("MeanVarianceNormalization", ("MeanVarianceNormalization_0",))
    assert {a.name: list(helper.get_attribute_value(a)) for a in node.attribute} == {"axes": [1, 2, 3]}


def test_mvn13_on_cpu_is_exact_for_zero_epsilon() -> None:
    desc = mvn((2, 3, 4, 5), (0, 2, 3), epsilon=0.0)
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs)
    assert lowering.name == MVN_13
    np.testing.assert_allclose(ort_cpu(lowering)["OutputTensor"], mvn64(desc, inputs), rtol=2e-5, atol=2e-5)


@pytest.mark.parametrize(
    "desc",
    [
        mvn((2, 3, 4, 5), (1, 2, 3)),
        mvn((2, 3, 4, 5), (0, 2, 3), normalize=False, scale=(1, 3, 1, 1), bias=(1, 3, 1, 1)),
        mvn((3, 7), (1,), epsilon=0.25, scale=(3, 7), bias=(1, 7)),
        mvn((2, 2, 3, 2, 2), (0, 4), scale=(1, 1, 3, 1, 1), bias=(2, 2, 3, 2, 2)),
        mvn((6,), (0,)),
    ],
)
def test_decomposition_matches_the_formula(desc: Mvn1Desc) -> None:
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs, CUDA)
    assert lowering.name == DECOMPOSED
    ops = [n.op_type for n in onnx.load_from_string(lowering.model).graph.node]
    assert ops[:2] == ["ReduceMean", "Sub"] and ("Sqrt" in ops) == desc.normalize_variance
    for out in both(lowering):
        np.testing.assert_allclose(out["OutputTensor"], mvn64(desc, inputs), rtol=2e-5, atol=2e-5)


def test_float16_decomposition_computes_in_float32_and_rounds_once() -> None:
    desc = mvn(
        (2, 3, 8), (1, 2), scale=(1, 3, 1), bias=(1, 3, 8), data_type=DataType.FLOAT16, activation=Activation("TANH")
    )
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs, WEBGPU)
    graph = onnx.load_from_string(lowering.model).graph
    ops = [n.op_type for n in graph.node]
    assert ops[0] == "Cast" and ops[-2:] == ["Tanh", "Cast"]
    assert helper.get_attribute_value(graph.node[-1].attribute[0]) == TensorProto.FLOAT16
    assert graph.input[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    assert graph.output[0].type.tensor_type.elem_type == TensorProto.FLOAT16
    expected = np.tanh(mvn64(desc, inputs))
    for out in both(lowering):
        assert out["OutputTensor"].dtype == np.float16
        ulp = np.spacing(np.abs(expected).astype(np.float16)).astype(np.float64)
        assert np.all(np.abs(out["OutputTensor"].astype(np.float64) - expected) <= ulp)


def test_non_float_mvn_and_unknown_activation_are_not_expressible() -> None:
    desc = mvn((2, 3, 4), (2,), data_type=DataType.INT32)
    assert isinstance(lower(case_of(desc), {"InputTensor": np.zeros((2, 3, 4), np.int32)}, CPU), NotExpressible)
    desc = mvn((2, 3, 4), (2,), activation=Activation("SOFTMAX"))
    result = lower(case_of(desc), mvn_inputs(desc), CPU)
    assert isinstance(result, NotExpressible) and "SOFTMAX" in result.reason


def test_rank1_scale_and_bias_lower() -> None:
    """Found by the fuzzer: a rank-1 input with scale and bias has no channel dimension (an IndexError once)."""
    desc = mvn((1,), (0,), scale=(1,), bias=(1,), normalize=False)
    assert isinstance(lower(case_of(desc), mvn_inputs(desc), CPU), Lowering)


def test_float16_celu_is_not_expressible() -> None:
    """ONNX Celu-12 constrains T to tensor(float): a float16 model using it is invalid."""
    desc = mvn((2, 3, 4), (2,), data_type=DataType.FLOAT16, activation=Activation("CELU"))
    result = lower(case_of(desc), mvn_inputs(desc), CPU)
    assert isinstance(result, NotExpressible) and "Celu takes float32 only" in result.reason
    desc = mvn((2, 3, 4), (2,), activation=Activation("CELU"))
    assert isinstance(lower(case_of(desc), mvn_inputs(desc), CPU), Lowering)


# --- fused activations ------------------------------------------------------------------------------------------


def _erf(x: Array) -> Array:
    return np.asarray(np.vectorize(math.erf)(x), np.float64)


Formula = Callable[[Array, Mapping[str, float]], Array]
ACTIVATIONS: dict[str, Formula] = {  # the brief's formulas, in float64
    "IDENTITY": lambda x, p: x,
    "RELU": lambda x, p: np.maximum(x, 0),
    "LEAKY_RELU": lambda x, p: np.where(x >= 0, x, p["alpha"] * x),
    "PARAMETERIZED_RELU": lambda x, p: np.where(x >= 0, x, p["alpha"] * x),
    "ELU": lambda x, p: np.where(x > 0, x, p["alpha"] * (np.exp(x) - 1)),
    "CELU": lambda x, p: np.maximum(0, x) + np.minimum(0, p["alpha"] * (np.exp(x / p["alpha"]) - 1)),
    "SCALED_ELU": lambda x, p: p["gamma"] * np.where(x > 0, x, p["alpha"] * (np.exp(x) - 1)),
    "SIGMOID": lambda x, p: 1 / (1 + np.exp(-x)),
    "HARD_SIGMOID": lambda x, p: np.clip(p["alpha"] * x + p["beta"], 0, 1),
    "TANH": lambda x, p: np.tanh(x),
    "SOFTSIGN": lambda x, p: x / (1 + np.abs(x)),
    "THRESHOLDED_RELU": lambda x, p: np.where(x > p["alpha"], x, 0),
    "SOFTPLUS": lambda x, p: np.log1p(np.exp(p["steepness"] * x)) / p["steepness"],
    "SHRINK": lambda x, p: np.where(x < -p["threshold"], x + p["bias"], np.where(x > p["threshold"], x - p["bias"], 0)),
    "HARD_SWISH": lambda x, p: x * np.clip(p["alpha"] * x + p["beta"], 0, 1),
    "GELU": lambda x, p: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
    "LINEAR": lambda x, p: p["alpha"] * x + p["beta"],
    "SCALED_TANH": lambda x, p: p["alpha"] * np.tanh(p["beta"] * x),
    "PARAMETRIC_SOFTPLUS": lambda x, p: p["alpha"] * np.log1p(np.exp(p["beta"] * x)),
    "SWISH": lambda x, p: x / (1 + np.exp(-p["sigmoid_input_scale"] * x)),
}
ACTIVATION_CASES = [  # (activation, ONNX ops after the normalization)
    (Activation("IDENTITY"), ["Identity"]),
    (Activation("RELU"), ["Relu"]),
    (Activation("LEAKY_RELU", {"alpha": 0.1}), ["LeakyRelu"]),
    (Activation("PARAMETERIZED_RELU", {"alpha": 0.25}), ["PRelu"]),
    (Activation("ELU", {"alpha": 0.5}), ["Elu"]),
    (Activation("CELU", {"alpha": 2.0}), ["Celu"]),
    (Activation("SCALED_ELU", {"alpha": 1.5, "gamma": 1.2}), ["Selu"]),
    (Activation("SCALED_ELU"), ["Selu"]),
    (Activation("SIGMOID"), ["Sigmoid"]),
    (Activation("HARD_SIGMOID", {"alpha": 0.3, "beta": 0.4}), ["HardSigmoid"]),
    (Activation("TANH"), ["Tanh"]),
    (Activation("SOFTSIGN"), ["Softsign"]),
    (Activation("THRESHOLDED_RELU", {"alpha": 0.3}), ["ThresholdedRelu"]),
    (Activation("SOFTPLUS"), ["Softplus"]),
    (Activation("SOFTPLUS", {"steepness": 2.0}), ["Mul", "Softplus", "Div"]),
    (Activation("SHRINK", {"bias": 0.1, "threshold": 0.3}), ["Shrink"]),
    (Activation("HARD_SWISH"), ["HardSwish"]),
    (Activation("HARD_SWISH", {"alpha": 0.25, "beta": 0.4}), ["HardSigmoid", "Mul"]),
    (Activation("GELU"), ["Gelu"]),
    (Activation("LINEAR", {"alpha": 1.5, "beta": -0.25}), ["Mul", "Add"]),
    (Activation("SCALED_TANH", {"alpha": 0.5, "beta": 2.0}), ["Mul", "Tanh", "Mul"]),
    (Activation("PARAMETRIC_SOFTPLUS", {"alpha": 2.0, "beta": 0.5}), ["Mul", "Softplus", "Mul"]),
    (Activation("SWISH", {"sigmoid_input_scale": 1.5}), ["Mul", "Sigmoid", "Mul"]),
]


def test_every_activation_is_covered() -> None:
    assert {a.type for a, _ in ACTIVATION_CASES} == set(ACTIVATION_PARAMS) == set(ACTIVATIONS)


@pytest.mark.parametrize(("activation", "ops"), ACTIVATION_CASES, ids=lambda v: getattr(v, "type", ""))
def test_activation_nodes_match_the_formula(activation: Activation, ops: list[str]) -> None:
    # Rows of symmetric multiples of 1/16: the mean is exactly 0 in float32, so the activation's input is exactly
    # x, and no x sits on a threshold (0.3, 0.5): the comparison tests only the activation.
    half = np.array([1, 3, 5, 8, 13, 21, 34, 55], np.float32) / 16
    x = np.stack([np.concatenate([half, -half]), np.concatenate([-half, half]) / 2])
    desc = mvn((2, 16), (1,), normalize=False, activation=activation)
    lowering = lowered(desc, {"InputTensor": x}, CUDA)
    assert lowering.name == DECOMPOSED + "".join(f"+{op}" for op in ops)
    model = onnx.load_from_string(lowering.model)
    assert [n.op_type for n in model.graph.node][2:] == ops
    assert model.opset_import[0].version == (20 if activation.type == "GELU" else 18)
    params = {**ACTIVATION_PARAMS[activation.type], **activation.params}
    expected = ACTIVATIONS[activation.type](x.astype(np.float64), params)
    for out in both(lowering):
        np.testing.assert_allclose(out["OutputTensor"], expected, rtol=2e-6, atol=1e-6)


@pytest.mark.parametrize("ep", [CPU, CUDA, DML])
def test_shrink_below_zero_threshold_takes_dmls_first_piece(ep: str) -> None:
    # With Threshold < 0 DML's "x - Bias, if x > Threshold" and "x + Bias, if x < -Threshold" overlap between
    # Threshold and -Threshold; the first piece written applies there, where ONNX Shrink applies the second.
    threshold, bias = -0.25, 0.5
    x = np.array([[-2, -0.25, -0.125, 0, 0.125, 0.25, 2]], np.float32)  # mean exactly 0: the activation sees x
    written_order = [v - bias if v > threshold else v + bias if v < -threshold else 0.0 for v in x[0].tolist()]
    activation = Activation("SHRINK", {"bias": bias, "threshold": threshold})
    lowering = lowered(mvn((1, 7), (1,), normalize=False, activation=activation), {"InputTensor": x}, ep)
    assert lowering.name.endswith("+Less+Add+Where+Greater+Sub+Where")
    for out in both(lowering):
        np.testing.assert_array_equal(out["OutputTensor"], [written_order])


def test_shrink_below_zero_on_float16_compares_and_shifts_in_float32() -> None:
    # InstanceNormalization keeps float16, but Threshold and Bias are FLOAT: rounding Threshold -0.1 to float16
    # (-0.0999755859375) would move the boundary, so the pieces run in float32 between two Casts.
    activation = Activation("SHRINK", {"bias": 0.1, "threshold": -0.1})
    desc = mvn((1, 2, 3, 3), (2, 3), activation=activation, data_type=DataType.FLOAT16)
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs, CPU)
    assert lowering.name == INSTANCE_NORM + "+Cast+Less+Add+Where+Greater+Sub+Where+Cast"
    y = mvn64(desc, inputs)
    t, b = float(np.float32(-0.1)), float(np.float32(0.1))
    expected = np.where(y > t, y - b, np.where(y < -t, y + b, 0.0))
    np.testing.assert_allclose(ort_cpu(lowering)["OutputTensor"].astype(np.float64), expected, atol=4e-3)


def test_activation_follows_instance_normalization_in_the_input_type() -> None:
    desc = mvn((1, 2, 3, 3), (2, 3), activation=Activation("LEAKY_RELU", {"alpha": 0.2}))
    inputs = mvn_inputs(desc)
    lowering = lowered(desc, inputs, DML)
    assert lowering.name == INSTANCE_NORM + "+LeakyRelu"
    assert lowering.nodes == ("InstanceNormalization_0", "LeakyRelu_1")
    y = mvn64(desc, inputs)
    np.testing.assert_allclose(ort_cpu(lowering)["OutputTensor"], np.where(y >= 0, y, 0.2 * y), rtol=2e-5, atol=2e-5)


def test_dml_fused_activation_list_names_onnx_ops_we_emit() -> None:
    emitted = {op for _, ops in ACTIVATION_CASES for op in ops if len(ops) == 1}
    assert emitted >= DML_FUSED_ACTIVATIONS
    assert not {"PRelu", "Celu", "Shrink", "Gelu", "HardSwish", "Identity"} & DML_FUSED_ACTIVATIONS

"""What a case reaches on DirectML: the DirectML lowering's ONNX, read through the DML EP's operator mapping
(DmlOperatorTopk.cpp, DmlOperatorSlice.cpp's GetSplitIndex, the normalization kernels, GraphTransformer.cpp's
activation fusion). Expected names are the EP source's; the ONNX is the lowering's, checked by test_lower's rules."""

from __future__ import annotations

import numpy as np
import pytest
from test_lower import DML, NUMPY, case_of, lowered, mvn, mvn_inputs, spec

from conformance.ep.dml_operators import expected_dml_operators
from conformance.ep.providers import EpSpec
from conformance.ep.slice1 import slice_becomes_split
from conformance.model import Activation, AxisDirection, DataType, Slice1Desc, TensorSpec, TopK1Desc
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

# The DML_OPERATOR_TYPE names the EP's kernels build (DirectML.h's spelling).
TOP_K1, SLICE1, SPLIT = "DML_OPERATOR_TOP_K1", "DML_OPERATOR_SLICE1", "DML_OPERATOR_SPLIT"
MVN1 = "DML_OPERATOR_MEAN_VARIANCE_NORMALIZATION1"


def _slice(sizes: tuple[int, ...], offsets: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...]) -> str:
    desc = Slice1Desc(spec(sizes), offsets, window, strides, None)
    x = np.arange(int(np.prod(sizes)), dtype=np.float32).reshape(sizes)
    return expected_dml_operators(lowered(desc, {"InputTensor": x}, DML).model)


@pytest.mark.parametrize("direction", list(AxisDirection))
@pytest.mark.parametrize("data_type", [DataType.FLOAT32, DataType.FLOAT16, DataType.UINT8, DataType.INT32])
def test_topk_reaches_top_k1(direction: AxisDirection, data_type: DataType) -> None:
    desc = TopK1Desc(spec((2, 9), data_type), 1, 3, direction)
    x = np.zeros((2, 9), dtype=NUMPY[data_type])
    assert expected_dml_operators(lowered(desc, {"InputTensor": x}, DML).model) == TOP_K1


@pytest.mark.parametrize(
    ("sizes", "offsets", "window", "strides", "expected"),
    [
        ((4, 6), (0, 2), (4, 4), (1, 1), SPLIT),  # the leading 2 columns cut off, the rest kept: Split
        ((4, 6), (1, 0), (3, 6), (1, 1), SPLIT),  # the same on axis 0
        ((4, 6), (0, 0), (4, 4), (1, 1), SLICE1),  # a window from offset 0 (the right part cut): Slice
        ((4, 6), (0, 2), (4, 3), (1, 1), SLICE1),  # not to the axis's end
        ((4, 6), (1, 2), (3, 4), (1, 1), SLICE1),  # two axes cut
        ((4, 6), (0, 2), (4, 4), (1, 2), SLICE1),  # a stride
        ((4, 6), (0, 2), (4, 4), (1, -1), SLICE1),  # a reversed window
        ((4, 6), (0, 0), (4, 6), (1, 1), SLICE1),  # the whole tensor
        # GetSplitIndex looks at the cut axis only: axis 1's trailing cut is not checked (onnxruntime then hands
        # Split a [3, 2] output of a [4, 4] input, the harness predicts what the EP's code does)
        ((4, 4), (1, 0), (3, 2), (1, 1), SPLIT),
    ],
)
def test_slice_reaches_slice1_or_the_split_shortcut(
    sizes: tuple[int, ...], offsets: tuple[int, ...], window: tuple[int, ...], strides: tuple[int, ...], expected: str
) -> None:
    assert _slice(sizes, offsets, window, strides) == expected


def test_split_rule_places_bounds_by_axes() -> None:
    from onnx import TensorProto, helper, numpy_helper

    def model(starts: list[int], ends: list[int], axes: list[int]) -> bytes:
        consts = [
            numpy_helper.from_array(np.array(v, np.int64), name)
            for name, v in (("s", starts), ("e", ends), ("a", axes), ("t", [1] * len(axes)))
        ]
        node = helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"], name="Slice_0")
        x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
        return helper.make_model(helper.make_graph([node], "g", [x], [y], consts)).SerializeToString()

    assert expected_dml_operators(model([2], [6], [1])) == SPLIT  # only axis 1 named: axis 0 is whole
    assert expected_dml_operators(model([-4], [6], [-1])) == SPLIT  # negative start and axis, normalized
    assert expected_dml_operators(model([0], [3], [1])) == SLICE1


def test_split_rule_reads_onnx_bounds() -> None:
    assert slice_becomes_split([5], [2], [2**62], [1])  # an end past the axis is clamped to it
    assert not slice_becomes_split([5], [2], [4], [1])
    assert not slice_becomes_split([5, 3], [0, 0], [5, 3], [1, 1])


@pytest.mark.parametrize(
    ("activation", "expected"),
    [
        (None, MVN1),
        ("RELU", f"{MVN1} (FusedActivation DML_OPERATOR_ACTIVATION_RELU)"),
        ("ELU", f"{MVN1} (FusedActivation DML_OPERATOR_ACTIVATION_ELU)"),
        ("SOFTSIGN", f"{MVN1} (FusedActivation DML_OPERATOR_ACTIVATION_SOFTSIGN)"),
        ("SCALED_ELU", f"{MVN1} (FusedActivation DML_OPERATOR_ACTIVATION_SCALED_ELU)"),
        # not in the EP's c_activationOps: a separate operator after MVN1
        ("CELU", f"{MVN1} + DML_OPERATOR_ACTIVATION_CELU"),
        ("SHRINK", f"{MVN1} + DML_OPERATOR_ACTIVATION_SHRINK"),
        ("GELU", f"{MVN1} + DML_OPERATOR_ACTIVATION_GELU"),
        # PRelu takes its slope as a second input, and the fusion only takes one-input activations
        ("PARAMETERIZED_RELU", f"{MVN1} + DML_OPERATOR_ACTIVATION_PARAMETERIZED_RELU"),
    ],
)
def test_instance_normalization_reaches_mvn1_with_its_fusable_activation(activation: str | None, expected: str) -> None:
    desc = mvn((2, 3, 4, 5), (2, 3), activation=Activation(activation, {}) if activation else None)
    assert expected_dml_operators(lowered(desc, mvn_inputs(desc), DML).model) == expected


def test_mvn13_reaches_mvn1_and_the_decomposition_reaches_none() -> None:
    cross = mvn((2, 3, 4, 5), (1, 2, 3))  # Epsilon 1e-5 = DML's DefaultEpsilon: MeanVarianceNormalization-13
    assert lowered(cross, mvn_inputs(cross), DML).name == "MeanVarianceNormalization-13"
    assert expected_dml_operators(lowered(cross, mvn_inputs(cross), DML).model) == MVN1
    other = mvn((2, 3, 4, 5), (1, 2, 3), epsilon=1e-3)  # no ONNX operator carries this Epsilon to DirectML
    reached = expected_dml_operators(lowered(other, mvn_inputs(other), DML).model)
    assert reached.startswith("no single DML operator: DML_OPERATOR_REDUCE, DML_OPERATOR_ELEMENT_WISE_SUBTRACT")
    assert MVN1 not in reached


def test_every_result_names_the_dml_operator_whatever_ep_runs_it() -> None:
    data = TensorSpec((1, 4), DataType.FLOAT32, data=(3.0, 1.0, 4.0, 1.5), data_shape=(1, 4))
    desc = TopK1Desc(data, 1, 2, AxisDirection.DECREASING)
    result = run_entry(case_of(desc), EpSpec("cpu", "CPUExecutionProvider"), RunOptions())
    assert (result.status.value, result.dml_operator) == ("PASS", TOP_K1)

"""SLICE1 in the ep stage: its ONNX form (slice1_lowering.py), DML_SLICE1_OPERATOR_DESC field by field, and what its
ONNX form reaches on DirectML: SLICE1, or SPLIT where onnxruntime's DirectML EP takes a shortcut."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from conformance.ep import dml_fields as dml
from conformance.ep.dml_abi import OperatorType
from conformance.ep.entry import EpEntry, OnnxConstants
from conformance.model import INPUT_TENSOR, OUTPUT_TENSOR, Descriptor, Operator, Slice1Desc

if TYPE_CHECKING:
    from conformance.ep.graph import Array, LoweredGraph

DML_SLICE1 = OperatorType("DML_OPERATOR_SLICE1", 111)
SPLIT = "DML_OPERATOR_SPLIT"


def _lower(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    from conformance.ep.slice1_lowering import lower_slice1  # onnx: only where a case is lowered

    return lower_slice1(desc, inputs, ep_name)


def _dml_fields(desc: Descriptor, tensors: Mapping[str, dml.TensorLayout]) -> tuple[dml.Field, ...]:
    """DML_SLICE1_OPERATOR_DESC: InputWindowStrides is INT, so negative strides stay signed; DimensionCount counts
    the window's arrays."""
    assert isinstance(desc, Slice1Desc)
    return (
        dml.Tensor(INPUT_TENSOR, tensors[INPUT_TENSOR]),
        dml.Tensor(OUTPUT_TENSOR, tensors[OUTPUT_TENSOR]),
        dml.Uint("DimensionCount", len(desc.offsets)),
        dml.UintArray("InputWindowOffsets", desc.offsets),
        dml.UintArray("InputWindowSizes", desc.sizes),
        dml.IntArray("InputWindowStrides", desc.strides),
    )


def slice_becomes_split(shape: Sequence[int], starts: Sequence[int], ends: Sequence[int], steps: Sequence[int]) -> bool:
    """DmlOperatorSlice's GetSplitIndex: every step 1, exactly one axis starting after 0, and that axis's window
    running to the axis's end (ONNX clamps ``end`` to the dimension). The other axes' windows are not looked at."""
    if any(step != 1 for step in steps):
        return False
    cut = [axis for axis, start in enumerate(starts) if start > 0]
    return len(cut) == 1 and min(ends[cut[0]], shape[cut[0]]) == shape[cut[0]]


def _slice_operator(inputs: Sequence[str], constants: OnnxConstants) -> str:
    """DmlOperatorSlice.cpp (Slice opsets 10, 11, 13) builds DML_OPERATOR_SLICE1, except that since PR #18289
    (onnxruntime 1.16.2) a slice with every step 1 whose only cut is one axis's leading part (a non-zero offset, the
    window running to the axis's end) becomes DML_OPERATOR_SPLIT, keeping the right part (``GetSplitIndex``).
    Read for a Slice whose bounds are initializers (the harness's always are), per input axis: starts and ends are
    placed by ``axes`` and made non-negative as onnxruntime normalizes them."""
    consts, shape = constants.initializers, constants.input_shapes.get(inputs[0])
    bounds = [consts.get(name) for name in inputs[1:5]]
    if shape is None or len(bounds) < 2 or any(b is None for b in bounds):
        return DML_SLICE1.name
    starts, ends = list(bounds[0] or []), list(bounds[1] or [])
    axes = list(bounds[2] or range(len(starts))) if len(bounds) > 2 else list(range(len(starts)))
    steps = list(bounds[3] or []) if len(bounds) > 3 else [1] * len(starts)
    full_starts, full_ends, full_steps = [0] * len(shape), list(shape), [1] * len(shape)
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        axis %= len(shape)
        full_starts[axis] = start + shape[axis] if start < 0 else start
        full_ends[axis] = end + shape[axis] if end < 0 else end
        full_steps[axis] = step
    return SPLIT if slice_becomes_split(shape, full_starts, full_ends, full_steps) else DML_SLICE1.name


ENTRY = EpEntry(
    operator=Operator.SLICE1,
    lower=_lower,
    same_for_every_ep=True,
    dml_operator=DML_SLICE1,
    dml_fields=_dml_fields,
    dml_rules={"Slice": _slice_operator},
    fused_activations=frozenset(),
    session_scratch=0.0,  # none counted on either path (docs/case-format.md's memory table)
    dispatch_scratch=0.0,
)

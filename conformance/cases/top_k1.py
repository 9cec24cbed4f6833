"""DML_TOP_K1_OPERATOR_DESC in the cases stage: its keys, how a case's fields are read into a ``TopK1Desc``, the spec
page's rules (reference/spec/), its tensors, its oracle and its figure of memory (``ENTRY``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.cases.case_operator import CaseOperator, DerivedOutput, Described
from conformance.cases.fields import Fields
from conformance.cases.keys import INPUT_TENSOR_KEY, Key, Kind, enum_values
from conformance.cases.parse_tensor import read_tensor
from conformance.cases.validate_checker import Checker, DimensionRule, OutputRules
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_VALUE_TENSOR,
    AxisDirection,
    DataType,
    Descriptor,
    FeatureLevel,
    Operator,
    OutputDesc,
    TensorSpec,
    TopK1Desc,
)
from reference.top_k1 import top_k1

AXIS_DIRECTION_PREFIX = "DML_AXIS_DIRECTION_"
KEYS = (
    INPUT_TENSOR_KEY,
    Key("Axis", Kind.UINT, "The dimension to select along; less than the InputTensor's DimensionCount.", True),
    Key("K", Kind.UINT, "How many elements to select; above 0 and below the size along Axis.", True),
    Key(
        "AxisDirection",
        Kind.CHOICE,
        "DECREASING (default: the largest K) or INCREASING (the smallest K).",
        choices=enum_values(AxisDirection),
        prefix=AXIS_DIRECTION_PREFIX,
        padded=True,
    ),
    Key("OutputValueTensor", Kind.OUTPUT, "The values' tensor: Sizes and DataType (derived if left out)."),
    Key(
        "OutputIndexTensor",
        Kind.OUTPUT,
        "The indices' tensor (UINT32): Sizes and DataType (derived if left out).",
    ),
)

T = f"{Operator.TOP_K1}."  # its clause ids' prefix (reference/clauses/)
FL_3_1 = FeatureLevel(3, 1)
# Tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
TOPK_RANKS = DimensionRule("TOP_K1 tensor support", FL_3_1, (1, 8), (4, 4))


def read(f: Fields, outputs: Mapping[str, OutputDesc]) -> Descriptor | None:
    tensor = f.sub("InputTensor")
    input_ = read_tensor(tensor) if tensor else None
    axis, k = f.uint("Axis"), f.uint("K")
    direction = f.choice("AxisDirection", AxisDirection, required=False, strip=AXIS_DIRECTION_PREFIX)
    if input_ is None or axis is None or k is None:
        return None
    return TopK1Desc(input_, axis, k, direction or AxisDirection.DECREASING)


def _support(c: Checker, row: str) -> tuple[str, ...]:
    """The tensor-support row ``row`` of the table that applies at the case's feature level, and of the older page,
    which has one table, 4-D only."""
    return (c.support(T, FL_3_1, row), f"{T}support-older-{row}")


def validate(c: Checker, d: Descriptor) -> None:
    assert isinstance(d, TopK1Desc)
    rank = len(d.input.sizes)
    # The outputs have the input's DimensionCount, so their rows are broken too.
    rows = [clause for row in ("input", "values", "indices") for clause in _support(c, row)]
    c.dimension_count("InputTensor.Sizes", rank, TOPK_RANKS, *rows)
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType), *_support(c, "input"))
    # "This value must be less than the DimensionCount of the InputTensor."
    if d.axis >= rank:
        c.fail("Axis", f"must be less than the InputTensor's DimensionCount {rank}, got {d.axis}", f"{T}axis-range")
        return
    axis_size = d.input.sizes[d.axis]
    # "K must be greater than 0, but less than the number of elements in the InputTensor along ... Axis."
    # DECISION: read literally, K equal to the axis size is invalid. The spec's words refuse it, so its problem names
    # no decision (decisions.py): the decision is only not to read "less than" as "at most".
    if not 0 < d.k < axis_size:
        message = f"must be greater than 0 but less than the axis size {axis_size} (the spec's words), got {d.k}"
        c.fail("K", message, f"{T}k-range")
        return
    out = d.output_sizes
    _outputs(c, d, out)
    if usable:
        # "InputTensor and OutputValueTensor must have the same DataType"; OutputIndexTensor is UINT32.
        c.expected(OUTPUT_VALUE_TENSOR, out, d.input.data_type)
        if not c.expected(OUTPUT_INDEX_TENSOR, out, DataType.UINT32):
            return
        # "The indices returned in this tensor are measured relative to the beginning of their sequence".
        indices = c.case.expected.get(OUTPUT_INDEX_TENSOR, ())
        if any(not 0 <= i < axis_size for i in indices):
            c.fail(f"expected.{OUTPUT_INDEX_TENSOR}", f"indices must lie in [0, {axis_size})", f"{T}index-relative")


def _outputs(c: Checker, d: TopK1Desc, out: tuple[int, ...]) -> None:
    """The output descriptors a case writes. "This tensor must have sizes equal to the InputTensor, except for
    the dimension specified by the Axis parameter, which must have a size equal to K." (both outputs)"""
    sizes_rule = "the InputTensor's sizes with K along Axis"
    values = OutputRules(
        sizes_rule,
        "InputTensor and OutputValueTensor must have the same DataType",
        (f"{T}same-dimension-count", f"{T}value-sizes"),
        (f"{T}value-sizes",),
        (f"{T}same-data-type",),
    )
    indices = OutputRules(
        sizes_rule,
        "the tensor support tables list UINT32 only",
        (f"{T}same-dimension-count", f"{T}index-sizes"),
        (f"{T}index-sizes",),
        _support(c, "indices"),
    )
    c.output(OUTPUT_VALUE_TENSOR, out, d.input.data_type, values)
    c.output(OUTPUT_INDEX_TENSOR, out, DataType.UINT32, indices)
    # Older revision: "OutputIndexTensor and OutputValueTensor must have the same Sizes."
    given = [c.case.outputs[n].sizes for n in (OUTPUT_VALUE_TENSOR, OUTPUT_INDEX_TENSOR) if n in c.case.outputs]
    if len(given) == 2 and None not in given and given[0] != given[1]:
        c.fail(OUTPUT_INDEX_TENSOR, "must have the OutputValueTensor's Sizes", f"{T}same-output-sizes")


def inputs(d: Descriptor) -> dict[str, TensorSpec]:
    assert isinstance(d, TopK1Desc)
    return {INPUT_TENSOR: d.input}


def outputs(d: Descriptor) -> dict[str, DerivedOutput]:
    """OutputValueTensor has the InputTensor's DataType ("InputTensor and OutputValueTensor must have the same
    DataType"), OutputIndexTensor UINT32; both have the input's Sizes with K along Axis."""
    assert isinstance(d, TopK1Desc)
    return {
        OUTPUT_VALUE_TENSOR: DerivedOutput(d.output_sizes, d.input.data_type),
        OUTPUT_INDEX_TENSOR: DerivedOutput(d.output_sizes, DataType.UINT32),
    }


def oracle(d: Descriptor, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    assert isinstance(d, TopK1Desc)
    values, indices = top_k1(arrays[INPUT_TENSOR], d.axis, d.k, axis_direction=d.axis_direction.value)
    return {OUTPUT_VALUE_TENSOR: values, OUTPUT_INDEX_TENSOR: indices}


def describe(d: Descriptor) -> dict[str, Described]:
    assert isinstance(d, TopK1Desc)
    return {"Axis": str(d.axis), "K": str(d.k), "AxisDirection": d.axis_direction.value}


ENTRY = CaseOperator(
    operator=Operator.TOP_K1,
    descriptor=TopK1Desc,
    keys=KEYS,
    read=read,
    validate=validate,
    inputs=inputs,
    outputs=outputs,
    oracle=oracle,
    describe=describe,
    # Measured peak per InputTensor element (benchmarks/case_memory.py): 44 (K near the axis size; 24 for K 8).
    bytes_per_element=52,
    introduced=FeatureLevel(2, 1),  # its page: "This operator was introduced in DML_FEATURE_LEVEL_2_1."
)

"""DML_SLICE1_OPERATOR_DESC in the cases stage: its keys, how a case's fields are read into a ``Slice1Desc`` (its
OutputSizes given either way), the spec page's rules (reference/spec/), its tensors, its oracle and its figure of
memory (``ENTRY``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from conformance.cases.case_operator import CaseOperator, DerivedOutput, Described
from conformance.cases.fields import Fields
from conformance.cases.keys import INPUT_TENSOR_KEY, Key, Kind
from conformance.cases.parse_tensor import read_tensor
from conformance.cases.validate_checker import Checker, DimensionRule, OutputRules
from conformance.model import (
    INPUT_TENSOR,
    OUTPUT_TENSOR,
    DataType,
    Descriptor,
    FeatureLevel,
    Operator,
    OutputDesc,
    Slice1Desc,
    TensorSpec,
)
from reference.slice1 import slice1

KEYS = (
    INPUT_TENSOR_KEY,
    Key("InputWindowOffsets", Kind.UINTS, "The window's start in each dimension.", required=True),
    Key("InputWindowSizes", Kind.UINTS, "The window's extent in each dimension.", required=True),
    Key("InputWindowStrides", Kind.INTS, "The step in each dimension; negative reverses, 0 is invalid.", True),
    Key("OutputSizes", Kind.UINTS, "The output's sizes (default: MaxCopiedElements); or give OutputTensor."),
    Key("OutputTensor", Kind.OUTPUT, "The output tensor: Sizes and DataType (derived if left out)."),
)

S = f"{Operator.SLICE1}."  # its clause ids' prefix (reference/clauses/)
FL_3_0 = FeatureLevel(3, 0)
# DimensionCount: "must be between 1 and 8, inclusively, starting from DML_FEATURE_LEVEL_3_0; earlier feature
# levels require a value of either 4 or 5."
SLICE_RANKS = DimensionRule("SLICE1 DimensionCount", FL_3_0, (1, 8), (4, 5))


def read(f: Fields, outputs: Mapping[str, OutputDesc]) -> Descriptor | None:
    tensor = f.sub("InputTensor")
    input_ = read_tensor(tensor) if tensor else None
    offsets, sizes = f.int_list("InputWindowOffsets"), f.int_list("InputWindowSizes")
    # The struct types InputWindowStrides as INT (the member text says UINT but allows negatives): signed.
    strides = f.int_list("InputWindowStrides", signed=True)
    output_sizes = f.int_list("OutputSizes", required=False)
    if input_ is None or offsets is None or sizes is None or strides is None:
        return None
    if f.has("OutputSizes") and output_sizes is None:
        return None
    return _output_sizes(f, Slice1Desc(input_, offsets, sizes, strides, output_sizes), outputs)


def _output_sizes(f: Fields, descriptor: Slice1Desc, outputs: Mapping[str, OutputDesc]) -> Slice1Desc | None:
    """OutputTensor.Sizes is the descriptor's own way of giving OutputSizes; both must then agree."""
    output = outputs.get("OutputTensor")
    if output is None or output.sizes is None:
        return descriptor
    if descriptor.given_output_sizes is not None and descriptor.given_output_sizes != output.sizes:
        f.problem("OutputTensor.Sizes", f"differs from OutputSizes {list(descriptor.given_output_sizes)}; give one")
        return None
    return replace(descriptor, given_output_sizes=output.sizes)


def _window(c: Checker, d: Slice1Desc) -> None:
    """The window's rules per dimension."""
    for i, (offset, size, stride) in enumerate(zip(d.offsets, d.sizes, d.strides, strict=True)):
        # "The input window mustn't be empty in any dimension"
        if size < 1:
            message = f"dimension {i}: the window mustn't be empty, got size {size}"
            c.fail(f"InputWindowSizes.{i}", message, f"{S}window-not-empty")
        # "InputWindowOffsets[i] + InputWindowSizes[i] <= InputTensor.Sizes[i]"
        elif offset + size > d.input.sizes[i]:
            c.fail(
                f"InputWindowOffsets.{i}",
                f"dimension {i}: offset {offset} + size {size} exceeds the input's "
                f"{d.input.sizes[i]} (out-of-bounds reads aren't permitted)",
                f"{S}window-in-bounds",
                f"{S}input-window-offsets-bound",
                f"{S}input-window-sizes-bound",
            )
        # "Strides may not be 0."
        if stride == 0:
            c.fail(f"InputWindowStrides.{i}", f"dimension {i}: strides may not be 0", f"{S}stride-not-zero")


def validate(c: Checker, d: Descriptor) -> None:
    assert isinstance(d, Slice1Desc)
    rank = len(d.input.sizes)
    support = c.support(S, FL_3_0, "input")
    count_rule = f"{S}dimension-count-3_0" if c.case.feature_level >= FL_3_0 else f"{S}dimension-count-below-3_0"
    output_row = c.support(S, FL_3_0, "output")
    c.dimension_count("InputTensor.Sizes", rank, SLICE_RANKS, support, output_row, count_rule)
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType), support)
    arrays = {"InputWindowOffsets": d.offsets, "InputWindowSizes": d.sizes, "InputWindowStrides": d.strides}
    if d.given_output_sizes is not None:
        arrays["OutputSizes"] = d.given_output_sizes
    wrong = [name for name, values in arrays.items() if len(values) != rank]
    for name in wrong:
        message = f"has {len(arrays[name])} entries; DimensionCount is {rank} (the InputTensor's)"
        output_rank = (f"{S}same-dimension-count",) if name == "OutputSizes" else ()
        c.fail(name, message, f"{S}array-lengths", f"{S}dimension-count-match", *output_rank)
    if wrong:
        return
    _window(c, d)
    for i, (out, most) in enumerate(zip(d.output_sizes, d.max_copied_elements, strict=True)):
        # "The slice is valid so long as 1 <= OutputSizes[i] <= MaxCopiedElements[i]."
        if not 1 <= out <= most:
            where = f"OutputSizes.{i}" if d.given_output_sizes is not None else f"InputWindowSizes.{i}"
            c.fail(where, f"dimension {i}: {out} is outside 1 to MaxCopiedElements {most}", f"{S}output-sizes-range")
    rules = OutputRules(
        "OutputSizes",
        "InputTensor and OutputTensor must have the same DataType",
        (f"{S}same-dimension-count", f"{S}dimension-count-match"),
        (f"{S}output-sizes-range",),
        (f"{S}same-data-type",),
    )
    c.output(OUTPUT_TENSOR, d.output_sizes, d.input.data_type, rules)
    if usable and not c.problems:
        c.expected(OUTPUT_TENSOR, d.output_sizes, d.input.data_type)


def inputs(d: Descriptor) -> dict[str, TensorSpec]:
    assert isinstance(d, Slice1Desc)
    return {INPUT_TENSOR: d.input}


def outputs(d: Descriptor) -> dict[str, DerivedOutput]:
    """OutputTensor: OutputSizes (else MaxCopiedElements), the InputTensor's DataType."""
    assert isinstance(d, Slice1Desc)
    return {OUTPUT_TENSOR: DerivedOutput(d.output_sizes, d.input.data_type)}


def oracle(d: Descriptor, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    assert isinstance(d, Slice1Desc)
    out = slice1(arrays[INPUT_TENSOR], d.offsets, d.sizes, d.strides, output_sizes=d.given_output_sizes)
    return {OUTPUT_TENSOR: out}


def describe(d: Descriptor) -> dict[str, Described]:
    assert isinstance(d, Slice1Desc)
    described: dict[str, Described] = {
        "InputWindowOffsets": d.offsets,
        "InputWindowSizes": d.sizes,
        "InputWindowStrides": d.strides,
    }
    if d.given_output_sizes is not None:
        described["OutputSizes"] = d.given_output_sizes
    return described


ENTRY = CaseOperator(
    operator=Operator.SLICE1,
    descriptor=Slice1Desc,
    keys=KEYS,
    read=read,
    validate=validate,
    inputs=inputs,
    outputs=outputs,
    oracle=oracle,
    describe=describe,
    # Measured peak per InputTensor element (benchmarks/case_memory.py): 24 (float32 and float16; int8 17).
    bytes_per_element=28,
    introduced=FeatureLevel(2, 1),  # its page: "This operator was introduced in DML_FEATURE_LEVEL_2_1."
)

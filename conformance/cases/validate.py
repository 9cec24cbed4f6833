"""The spec's constraints, checked at the case's feature level, as one-line problems.

Each rule quotes the sentence of the spec (reference/spec/) it enforces and cites that sentence's clause id
(reference/clauses/), so a negative case's problem names the clause it covers. Decisions where the
spec is ambiguous are marked DECISION and documented in docs/tolerances.md#spec-decisions; a problem that enforces
one where the spec's words refuse nothing names it (decisions.py).
"""

from __future__ import annotations

from conformance.cases.decisions import MVN_AXES
from conformance.cases.layouts import input_tensors, output_layouts
from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.validate_checker import Checker, DimensionRule, OutputRules
from conformance.cases.validate_layout import check_broadcast_data, check_layout
from conformance.model import (
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_INDEX_TENSOR,
    OUTPUT_TENSOR,
    OUTPUT_VALUE_TENSOR,
    SCALE_TENSOR,
    Case,
    DataType,
    FeatureLevel,
    Mvn1Desc,
    Slice1Desc,
    TensorSpec,
    TopK1Desc,
)
from conformance.problems import Problem

FL_2_1, FL_3_0, FL_3_1, FL_4_0 = FeatureLevel(2, 1), FeatureLevel(3, 0), FeatureLevel(3, 1), FeatureLevel(4, 0)
FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
T, M, S = "TOP_K1.", "MEAN_VARIANCE_NORMALIZATION1.", "SLICE1."
# Tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
TOPK_RANKS = DimensionRule("TOP_K1 tensor support", FL_3_1, (1, 8), (4, 4))
MVN_RANKS = DimensionRule("MEAN_VARIANCE_NORMALIZATION1 tensor support", FL_3_1, (1, 8), (4, 4))
# DimensionCount: "must be between 1 and 8, inclusively, starting from DML_FEATURE_LEVEL_3_0; earlier feature
# levels require a value of either 4 or 5."
SLICE_RANKS = DimensionRule("SLICE1 DimensionCount", FL_3_0, (1, 8), (4, 5))


def _support(c: Checker, prefix: str, since: FeatureLevel, row: str) -> tuple[str, ...]:
    """The tensor-support row ``row`` of the table that applies at the case's feature level."""
    level = str(since) if c.case.feature_level >= since else "2_1"
    older = (f"{T}support-older-{row}",) if prefix == T else ()  # the older page has one table, 4-D only
    return (f"{prefix}support-{level}-{row}", *older)


def _topk(c: Checker, d: TopK1Desc) -> None:
    rank = len(d.input.sizes)
    # The outputs have the input's DimensionCount, so their rows are broken too.
    rows = [clause for row in ("input", "values", "indices") for clause in _support(c, T, FL_3_1, row)]
    c.dimension_count("InputTensor.Sizes", rank, TOPK_RANKS, *rows)
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType), *_support(c, T, FL_3_1, "input"))
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
    _topk_outputs(c, d, out)
    if usable:
        # "InputTensor and OutputValueTensor must have the same DataType"; OutputIndexTensor is UINT32.
        c.expected(OUTPUT_VALUE_TENSOR, out, d.input.data_type)
        if not c.expected(OUTPUT_INDEX_TENSOR, out, DataType.UINT32):
            return
        # "The indices returned in this tensor are measured relative to the beginning of their sequence".
        indices = c.case.expected.get(OUTPUT_INDEX_TENSOR, ())
        if any(not 0 <= i < axis_size for i in indices):
            c.fail(f"expected.{OUTPUT_INDEX_TENSOR}", f"indices must lie in [0, {axis_size})", f"{T}index-relative")


def _topk_outputs(c: Checker, d: TopK1Desc, out: tuple[int, ...]) -> None:
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
        _support(c, T, FL_3_1, "indices"),
    )
    c.output(OUTPUT_VALUE_TENSOR, out, d.input.data_type, values)
    c.output(OUTPUT_INDEX_TENSOR, out, DataType.UINT32, indices)
    # Older revision: "OutputIndexTensor and OutputValueTensor must have the same Sizes."
    given = [c.case.outputs[n].sizes for n in (OUTPUT_VALUE_TENSOR, OUTPUT_INDEX_TENSOR) if n in c.case.outputs]
    if len(given) == 2 and None not in given and given[0] != given[1]:
        c.fail(OUTPUT_INDEX_TENSOR, "must have the OutputValueTensor's Sizes", f"{T}same-output-sizes")


def _scale_bias(c: Checker, d: Mvn1Desc, name: str, tensor: TensorSpec) -> None:
    what = "scale" if name == SCALE_TENSOR else "bias"
    # "BiasTensor, InputTensor, OutputTensor, and ScaleTensor must have the same DataType and DimensionCount."
    if tensor.data_type != d.input.data_type:
        message = f"must equal the InputTensor's {d.input.data_type}, got {tensor.data_type}"
        c.fail(f"{name}.DataType", message, f"{M}same-data-type")
    if len(tensor.sizes) != len(d.input.sizes):
        message = f"DimensionCount must equal the InputTensor's {len(d.input.sizes)}"
        c.fail(f"{name}.Sizes", message, f"{M}same-dimension-count")
        return
    for i, (size, in_size) in enumerate(zip(tensor.sizes, d.input.sizes, strict=True)):
        if c.case.feature_level >= FL_4_0:
            # ">= DML_FEATURE_LEVEL_4_0, then any dimension can be set to 1, and be automatically broadcast".
            ok, rule = size in (1, in_size), f"be the InputTensor's {in_size} or 1 (feature level 4_0 and above)"
            clause = f"{M}{what}-dimensions-4_0"
        elif i == 1:
            # "< DML_FEATURE_LEVEL_4_0 ... { ScaleBatchCount, ChannelCount, ScaleHeight, ScaleWidth }".
            ok, rule = size == in_size, f"equal the InputTensor's ChannelCount {in_size} below feature level 4_0"
            clause = f"{M}{what}-dimensions-below-4_0"
        else:
            ok, rule = size in (1, in_size), f"be the InputTensor's {in_size} or 1"
            clause = f"{M}{what}-dimensions-below-4_0"
        if not ok:
            c.fail(f"{name}.Sizes.{i}", f"dimension {i} is {size}; it must {rule}", clause)
            return


def _mvn(c: Checker, d: Mvn1Desc) -> None:
    rank = len(d.input.sizes)
    below = (f"{M}input-dimensions-below-3_1",) if c.case.feature_level < FL_3_1 else ()
    rows = [*_support(c, M, FL_3_1, "input"), *_support(c, M, FL_3_1, "output"), *below]
    c.dimension_count("InputTensor.Sizes", rank, MVN_RANKS, *rows)
    usable = c.tensor(INPUT_TENSOR, d.input, FLOATS, *_support(c, M, FL_3_1, "input"))
    # ScaleTensor: "This tensor is required if the BiasTensor is used." (and the same of BiasTensor)
    if (d.scale is None) != (d.bias is None):
        present, missing = (SCALE_TENSOR, BIAS_TENSOR) if d.bias is None else (BIAS_TENSOR, SCALE_TENSOR)
        clause = f"{M}{missing[:-6].lower()}-requires-{present[:-6].lower()}"
        c.fail(present, f"{missing} is required when {present} is used (the spec pairs them)", clause)
    for name, tensor in ((SCALE_TENSOR, d.scale), (BIAS_TENSOR, d.bias)):
        if tensor is not None:
            c.tensor(name, tensor, FLOATS, *_support(c, M, FL_3_1, name[:-6].lower()))
            _scale_bias(c, d, name, tensor)
    # "The number of axes. This field determines the size of the Axes array." DECISION: at least one axis.
    if not d.axes:
        c.fail("Axes", "must name at least one axis", f"{M}axis-count", decision=MVN_AXES)
    # "The axes along which to calculate the Mean and Variance." DECISION: each an axis of the input, once.
    for i, axis in enumerate(d.axes):
        if axis >= rank and axis not in d.axes[:i]:
            message = f"axis {axis} is not below the InputTensor's DimensionCount {rank}"
            c.fail(f"Axes.{i}", message, f"{M}axes", decision=MVN_AXES)
    if len(set(d.axes)) != len(d.axes):
        c.fail("Axes", f"axes must be unique, got {list(d.axes)}", f"{M}axes", decision=MVN_AXES)
    output = OutputRules(
        "This tensor's dimensions are { BatchCount, ChannelCount, Height, Width }: the InputTensor's",
        "the same DataType as the InputTensor",
        (f"{M}same-dimension-count", f"{M}output-dimensions"),
        (f"{M}output-dimensions",),
        (f"{M}same-data-type", *_support(c, M, FL_3_1, "output")),
    )
    c.output(OUTPUT_TENSOR, d.input.sizes, d.input.data_type, output)
    if usable:
        c.expected(OUTPUT_TENSOR, d.input.sizes, d.input.data_type)


def _slice_window(c: Checker, d: Slice1Desc) -> None:
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


def _slice(c: Checker, d: Slice1Desc) -> None:
    rank = len(d.input.sizes)
    support = _support(c, S, FL_3_0, "input")
    count_rule = f"{S}dimension-count-3_0" if c.case.feature_level >= FL_3_0 else f"{S}dimension-count-below-3_0"
    output_row = _support(c, S, FL_3_0, "output")
    c.dimension_count("InputTensor.Sizes", rank, SLICE_RANKS, *support, *output_row, count_rule)
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType), *support)
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
    _slice_window(c, d)
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


def validate(case: Case, max_elements: int = DEFAULT_MAX_ELEMENTS) -> list[Problem]:
    """Every constraint of the case's operator page at the case's feature level; [] when valid."""
    checker = Checker(case, max_elements)
    if case.feature_level < FL_2_1:
        # "This operator was introduced in DML_FEATURE_LEVEL_2_1."
        message = f"{case.operator} was introduced in feature level 2_1, not {case.feature_level}"
        checker.fail("feature_level", message, f"{case.operator}.introduced-2_1")
    d = case.descriptor
    if isinstance(d, TopK1Desc):
        _topk(checker, d)
    elif isinstance(d, Mvn1Desc):
        _mvn(checker, d)
    else:
        _slice(checker, d)
    _layouts(checker)
    return checker.problems


def _layouts(c: Checker) -> None:
    """DirectML's buffer-tensor rules on every tensor the case gives a layout. An input's once its Sizes are usable;
    the outputs' once the rest of the case is valid (their Sizes are derived from it)."""
    for name, tensor in input_tensors(c.case).items():
        if (tensor.strides is None and tensor.total_bytes is None) or any(size < 1 for size in tensor.sizes):
            continue
        readable = not any(p.field.startswith(f"{name}.") for p in c.problems)  # its Data can be materialized
        laid_out = check_layout(c, name, tensor.sizes, tensor.data_type, tensor.strides, tensor.total_bytes, False)
        if laid_out and readable:
            check_broadcast_data(c, name, tensor)
    if c.problems:
        return
    for name, layout in output_layouts(c.case).items():
        if layout.given:
            check_layout(c, name, layout.sizes, layout.data_type, layout.strides, layout.total_bytes, output=True)

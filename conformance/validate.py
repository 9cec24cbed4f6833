"""The spec's constraints, checked at the case's feature level, as one-line problems.

Each rule quotes the sentence of ../shared/spec it enforces. Decisions where the spec is ambiguous are
marked DECISION and documented in the README ("Spec decisions").
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from conformance.dtypes import value_range
from conformance.generate import GENERATOR_KINDS
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

DEFAULT_MAX_ELEMENTS = 1 << 28
FL_2_1, FL_3_0, FL_3_1, FL_4_0 = FeatureLevel(2, 1), FeatureLevel(3, 0), FeatureLevel(3, 1), FeatureLevel(4, 0)
FLOATS = (DataType.FLOAT32, DataType.FLOAT16)


class _Checker:
    def __init__(self, case: Case, max_elements: int) -> None:
        self.case = case
        self.max_elements = max_elements
        self.problems: list[Problem] = []

    def fail(self, field: str, message: str) -> None:
        self.problems.append(Problem(self.case.pos(field), field, message))

    def dimension_count(
        self, field: str, rank: int, table: str, since: FeatureLevel, new: tuple[int, int], old: tuple[int, int]
    ) -> None:
        """``table``'s supported DimensionCount: ``new`` from feature level ``since`` on, ``old`` below it."""
        low, high = new if self.case.feature_level >= since else old
        if not low <= rank <= high:
            self.fail(
                field,
                f"DimensionCount {rank} is not supported at feature level {self.case.feature_level} "
                f"({table}: {_span(old)} below {since}, {_span(new)} from {since})",
            )

    def tensor(self, field: str, tensor: TensorSpec, data_types: Sequence[DataType]) -> bool:
        """Sizes, element limit, data type and Data; False when the tensor's data cannot be used."""
        if tensor.data_type not in data_types:
            self.fail(
                f"{field}.DataType",
                f"{tensor.data_type} is not supported (tensor support table: {', '.join(data_types)})",
            )
        if any(size < 1 for size in tensor.sizes):
            # DECISION: the spec pages never allow an empty tensor; a zero size is refused.
            self.fail(f"{field}.Sizes", f"every size must be at least 1, got {list(tensor.sizes)}")
            return False
        if tensor.element_count > self.max_elements:
            self.fail(
                f"{field}.Sizes",
                f"{tensor.element_count} elements is over the limit of {self.max_elements} (--max-elements)",
            )
            return False
        if tensor.generator is not None:
            return self.generator(field, tensor)
        return self.data(f"{field}.Data", tensor.data or (), tensor.data_shape or (), tensor.sizes, tensor.data_type)

    def generator(self, field: str, tensor: TensorSpec) -> bool:
        assert tensor.generator is not None
        kind = tensor.generator.kind
        if kind not in GENERATOR_KINDS:
            self.fail(f"{field}.Generator.Kind", f"unknown generator {kind!r} (one of: {', '.join(GENERATOR_KINDS)})")
            return False
        unknown = sorted(set(tensor.generator.params) - set(GENERATOR_KINDS[kind]))
        if unknown:
            self.fail(
                f"{field}.Generator", f"{kind} takes {sorted(GENERATOR_KINDS[kind]) or 'no parameters'}, not {unknown}"
            )
            return False
        wrong = _generator_params(kind, tensor.generator.params, tensor.data_type)
        if wrong is not None:
            self.fail(f"{field}.Generator.{wrong[0]}", wrong[1])
            return False
        return True

    def data(
        self, field: str, values: Sequence[float], shape: tuple[int, ...], sizes: tuple[int, ...], data_type: DataType
    ) -> bool:
        count = math.prod(sizes)
        if shape != sizes and not (len(shape) == 1 and shape[0] == count):
            self.fail(field, f"has shape {shape}, Sizes say {sizes} (give nested lists like Sizes, or {count} values)")
            return False
        low, high = value_range(data_type)
        for index, value in enumerate(values):
            if data_type.is_float:
                if math.isfinite(value) and not low <= value <= high:
                    self.fail(
                        f"{field}",
                        f"value {value!r} at flat index {index} is outside the {data_type} range "
                        f"(largest finite magnitude {high:g})",
                    )
                    return False
            elif not (math.isfinite(value) and float(value).is_integer() and low <= value <= high):
                self.fail(
                    f"{field}",
                    f"value {value!r} at flat index {index} is not an integer in the "
                    f"{data_type} range [{int(low)}, {int(high)}]",
                )
                return False
        return True

    def expected(self, name: str, sizes: tuple[int, ...], data_type: DataType) -> bool:
        """Check the expected output ``name`` (if given) against its sizes and type; False when it is wrong."""
        if name not in self.case.expected:
            return True
        return self.data(
            f"expected.{name}", self.case.expected[name], self.case.expected_shapes[name], sizes, data_type
        )


def _span(allowed: tuple[int, int]) -> str:
    return str(allowed[0]) if allowed[0] == allowed[1] else f"{allowed[0]} to {allowed[1]}"


def _generator_params(kind: str, params: Mapping[str, float], data_type: DataType) -> tuple[str, str] | None:
    """The first parameter of a generator that ``generate`` would refuse, and why (see its docstring)."""
    low, high = params.get("Low"), params.get("High")
    integral = kind == "integers" or (kind in ("uniform", "special") and not data_type.is_float)
    if low is not None and high is not None:
        if integral and math.ceil(low) > math.floor(high):
            return "High", f"[Low, High] = [{low}, {high}] holds no integer"
        if low > high:
            return "High", f"must be at least Low ({low}), got {high}"
    if kind == "normal" and params.get("Std", 1.0) < 0:
        return "Std", f"must be >= 0, got {params['Std']}"
    if kind == "ties":
        distinct = params.get("Distinct", 4.0)
        if distinct < 1 or not float(distinct).is_integer():
            return "Distinct", f"must be an integer >= 1, got {distinct}"
        if params.get("Step", 1.0) == 0:
            return "Step", "must not be 0"
    if kind == "special" and not 0.0 <= params.get("Fraction", 0.5) <= 1.0:
        return "Fraction", f"must lie in [0, 1], got {params['Fraction']}"
    if kind == "arange" and not data_type.is_float:
        for name in ("Start", "Step"):
            if not float(params.get(name, 0.0)).is_integer():
                return name, f"must be an integer for {data_type}, got {params[name]}"
    return None


def _topk(c: _Checker, d: TopK1Desc) -> None:
    rank = len(d.input.sizes)
    # Tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
    c.dimension_count("InputTensor.Sizes", rank, "TOP_K1 tensor support", FL_3_1, (1, 8), (4, 4))
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType))
    # "This value must be less than the DimensionCount of the InputTensor."
    if d.axis >= rank:
        c.fail("Axis", f"must be less than the InputTensor's DimensionCount {rank}, got {d.axis}")
        return
    axis_size = d.input.sizes[d.axis]
    # "K must be greater than 0, but less than the number of elements in the InputTensor along ... Axis."
    # DECISION: read literally, K equal to the axis size is invalid.
    if not 0 < d.k < axis_size:
        c.fail("K", f"must be greater than 0 but less than the axis size {axis_size} (the spec's words), got {d.k}")
        return
    if usable:
        out = tuple(d.k if i == d.axis else s for i, s in enumerate(d.input.sizes))
        # "InputTensor and OutputValueTensor must have the same DataType"; OutputIndexTensor is UINT32.
        c.expected(OUTPUT_VALUE_TENSOR, out, d.input.data_type)
        if not c.expected(OUTPUT_INDEX_TENSOR, out, DataType.UINT32):
            return
        # "The indices returned in this tensor are measured relative to the beginning of their sequence".
        indices = c.case.expected.get(OUTPUT_INDEX_TENSOR, ())
        if any(not 0 <= i < axis_size for i in indices):
            c.fail(f"expected.{OUTPUT_INDEX_TENSOR}", f"indices must lie in [0, {axis_size})")


def _scale_bias(c: _Checker, d: Mvn1Desc, name: str, tensor: TensorSpec) -> None:
    # "BiasTensor, InputTensor, OutputTensor, and ScaleTensor must have the same DataType and DimensionCount."
    if tensor.data_type != d.input.data_type:
        c.fail(f"{name}.DataType", f"must equal the InputTensor's {d.input.data_type}, got {tensor.data_type}")
    if len(tensor.sizes) != len(d.input.sizes):
        c.fail(f"{name}.Sizes", f"DimensionCount must equal the InputTensor's {len(d.input.sizes)}")
        return
    for i, (size, in_size) in enumerate(zip(tensor.sizes, d.input.sizes, strict=True)):
        if c.case.feature_level >= FL_4_0:
            # ">= DML_FEATURE_LEVEL_4_0, then any dimension can be set to 1, and be automatically broadcast".
            ok, rule = size in (1, in_size), f"be the InputTensor's {in_size} or 1 (feature level 4_0 and above)"
        elif i == 1:
            # "< DML_FEATURE_LEVEL_4_0 ... { ScaleBatchCount, ChannelCount, ScaleHeight, ScaleWidth }".
            ok, rule = size == in_size, f"equal the InputTensor's ChannelCount {in_size} below feature level 4_0"
        else:
            ok, rule = size in (1, in_size), f"be the InputTensor's {in_size} or 1"
        if not ok:
            c.fail(f"{name}.Sizes.{i}", f"dimension {i} is {size}; it must {rule}")
            return


def _mvn(c: _Checker, d: Mvn1Desc) -> None:
    rank = len(d.input.sizes)
    # Tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
    c.dimension_count("InputTensor.Sizes", rank, "MEAN_VARIANCE_NORMALIZATION1 tensor support", FL_3_1, (1, 8), (4, 4))
    usable = c.tensor(INPUT_TENSOR, d.input, FLOATS)
    # ScaleTensor: "This tensor is required if the BiasTensor is used." (and the same of BiasTensor)
    if (d.scale is None) != (d.bias is None):
        present, missing = (SCALE_TENSOR, BIAS_TENSOR) if d.bias is None else (BIAS_TENSOR, SCALE_TENSOR)
        c.fail(present, f"{missing} is required when {present} is used (the spec pairs them)")
    for name, tensor in ((SCALE_TENSOR, d.scale), (BIAS_TENSOR, d.bias)):
        if tensor is not None:
            c.tensor(name, tensor, FLOATS)
            _scale_bias(c, d, name, tensor)
    # "The axes along which to calculate the Mean and Variance." DECISION: at least one axis, each once.
    if not d.axes:
        c.fail("Axes", "must name at least one axis")
    for i, axis in enumerate(d.axes):
        if axis >= rank and axis not in d.axes[:i]:
            c.fail(f"Axes.{i}", f"axis {axis} is not below the InputTensor's DimensionCount {rank}")
    if len(set(d.axes)) != len(d.axes):
        c.fail("Axes", f"axes must be unique, got {list(d.axes)}")
    if usable:
        c.expected(OUTPUT_TENSOR, d.input.sizes, d.input.data_type)


def _slice(c: _Checker, d: Slice1Desc) -> None:
    rank = len(d.input.sizes)
    # DimensionCount: "must match the DimensionCount of the input and output tensors ... between 1 and 8,
    # inclusively, starting from DML_FEATURE_LEVEL_3_0; earlier feature levels require a value of either 4 or 5."
    c.dimension_count("InputTensor.Sizes", rank, "SLICE1 DimensionCount", FL_3_0, (1, 8), (4, 5))
    usable = c.tensor(INPUT_TENSOR, d.input, list(DataType))
    arrays = {"InputWindowOffsets": d.offsets, "InputWindowSizes": d.sizes, "InputWindowStrides": d.strides}
    if d.output_sizes is not None:
        arrays["OutputSizes"] = d.output_sizes
    wrong = [name for name, values in arrays.items() if len(values) != rank]
    for name in wrong:
        c.fail(name, f"has {len(arrays[name])} entries; DimensionCount is {rank} (the InputTensor's)")
    if wrong:
        return
    max_copied = []
    for i, (offset, size, stride) in enumerate(zip(d.offsets, d.sizes, d.strides, strict=True)):
        # "The input window mustn't be empty in any dimension"
        if size < 1:
            c.fail(f"InputWindowSizes.{i}", f"dimension {i}: the window mustn't be empty, got size {size}")
        # "InputWindowOffsets[i] + InputWindowSizes[i] <= InputTensor.Sizes[i]"
        elif offset + size > d.input.sizes[i]:
            c.fail(
                f"InputWindowOffsets.{i}",
                f"dimension {i}: offset {offset} + size {size} exceeds the input's "
                f"{d.input.sizes[i]} (out-of-bounds reads aren't permitted)",
            )
        # "Strides may not be 0."
        if stride == 0:
            c.fail(f"InputWindowStrides.{i}", f"dimension {i}: strides may not be 0")
        # "MaxCopiedElements[i] = 1 + (InputWindowSize[i] - 1) / InputWindowStrides[i]" (stride's magnitude)
        max_copied.append(1 + (max(size, 1) - 1) // abs(stride) if stride else 1)
    output = d.output_sizes or tuple(max_copied)
    for i, (out, most) in enumerate(zip(output, max_copied, strict=True)):
        # "The slice is valid so long as 1 <= OutputSizes[i] <= MaxCopiedElements[i]."
        if not 1 <= out <= most:
            where = f"OutputSizes.{i}" if d.output_sizes is not None else f"InputWindowSizes.{i}"
            c.fail(where, f"dimension {i}: {out} is outside 1 to MaxCopiedElements {most}")
    if usable and not c.problems:
        c.expected(OUTPUT_TENSOR, tuple(output), d.input.data_type)


def validate(case: Case, max_elements: int = DEFAULT_MAX_ELEMENTS) -> list[Problem]:
    """Every constraint of the case's operator page at the case's feature level; [] when valid."""
    checker = _Checker(case, max_elements)
    if case.feature_level < FL_2_1:
        # "This operator was introduced in DML_FEATURE_LEVEL_2_1."
        checker.fail("feature_level", f"{case.operator} was introduced in feature level 2_1, not {case.feature_level}")
    d = case.descriptor
    if isinstance(d, TopK1Desc):
        _topk(checker, d)
    elif isinstance(d, Mvn1Desc):
        _mvn(checker, d)
    else:
        _slice(checker, d)
    return checker.problems

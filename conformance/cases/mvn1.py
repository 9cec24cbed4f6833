"""DML_MEAN_VARIANCE_NORMALIZATION1_OPERATOR_DESC in the cases stage: its keys, how a case's fields are read into an
``Mvn1Desc`` (its fused activation too), the spec page's rules (reference/spec/), its tensors, its oracle and its
figure of memory (``ENTRY``)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.cases.case_operator import CaseOperator, DerivedOutput, Described
from conformance.cases.decisions import MVN_AXES
from conformance.cases.fields import Fields
from conformance.cases.keys import (
    ACTIVATION_KEYS,
    ACTIVATION_PREFIX,
    ACTIVATION_TYPE,
    INPUT_TENSOR_KEY,
    Key,
    Kind,
    activation_keys,
)
from conformance.cases.parse_tensor import read_tensor
from conformance.cases.validate_checker import Checker, DimensionRule, OutputRules
from conformance.model import (
    ACTIVATION_PARAMS,
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_TENSOR,
    SCALE_TENSOR,
    Activation,
    DataType,
    Descriptor,
    FeatureLevel,
    Mvn1Desc,
    Operator,
    OutputDesc,
    TensorSpec,
)
from reference.mean_variance_normalization1 import mean_variance_normalization1

KEYS = (
    INPUT_TENSOR_KEY,
    Key("ScaleTensor", Kind.TENSOR, "Scale, broadcast over the input; required if BiasTensor is given."),
    Key("BiasTensor", Kind.TENSOR, "Bias, broadcast over the input; required if ScaleTensor is given."),
    Key("Axes", Kind.UINTS, "The axes to compute the mean and variance over, each once.", required=True),
    Key("NormalizeVariance", Kind.BOOLEAN, "Divide by the standard deviation (default true)."),
    Key("Epsilon", Kind.NUMBER, "Added to the variance to avoid dividing by zero (default 1e-5)."),
    Key("FusedActivation", Kind.ACTIVATION, "An activation applied to the output."),
    Key("OutputTensor", Kind.OUTPUT, "The output tensor: Sizes and DataType (derived if left out)."),
)

M = f"{Operator.MEAN_VARIANCE_NORMALIZATION1}."  # its clause ids' prefix (reference/clauses/)
FL_3_1, FL_4_0 = FeatureLevel(3, 1), FeatureLevel(4, 0)
FLOATS = (DataType.FLOAT32, DataType.FLOAT16)
# Tensor support: "DML_FEATURE_LEVEL_3_1 and above ... 1 to 8"; "DML_FEATURE_LEVEL_2_1 and above ... 4".
MVN_RANKS = DimensionRule("MEAN_VARIANCE_NORMALIZATION1 tensor support", FL_3_1, (1, 8), (4, 4))


def _activation(f: Fields | None) -> Activation | None:
    if f is None:
        return None
    name = f.text(ACTIVATION_TYPE.name, required=True).upper().removeprefix(ACTIVATION_PREFIX)
    if name not in ACTIVATION_PARAMS:
        f.problem(ACTIVATION_TYPE.name, f"unknown activation {name!r} (one of: {', '.join(ACTIVATION_PARAMS)})")
        return None
    defaults = ACTIVATION_PARAMS[name]
    f.check_known((ACTIVATION_TYPE.name, *activation_keys(name)))
    params = {
        key: f.number(yaml_key, default=defaults[key]) for yaml_key, key in ACTIVATION_KEYS.items() if key in defaults
    }
    return Activation(name, {k: v for k, v in params.items() if v is not None})


def read(f: Fields, outputs: Mapping[str, OutputDesc]) -> Descriptor | None:
    tensors = {
        name: f.sub(name, required=name == "InputTensor") for name in ("InputTensor", "ScaleTensor", "BiasTensor")
    }
    found = {name: read_tensor(sub) if sub else None for name, sub in tensors.items()}
    axes = f.int_list("Axes")
    normalize = f.boolean("NormalizeVariance", True)
    epsilon = f.number("Epsilon", default=1e-5)
    activation = _activation(f.sub("FusedActivation", required=False))
    unreadable = any(found[n] is None and tensors[n] is not None for n in found)
    if found["InputTensor"] is None or axes is None or epsilon is None or unreadable:
        return None
    if f.has("FusedActivation") and f.raw["FusedActivation"] is not None and activation is None:
        return None
    scale, bias = found["ScaleTensor"], found["BiasTensor"]
    return Mvn1Desc(found["InputTensor"], scale, bias, axes, normalize, epsilon, activation)


def _support(c: Checker, row: str) -> str:
    return c.support(M, FL_3_1, row)


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


def validate(c: Checker, d: Descriptor) -> None:
    assert isinstance(d, Mvn1Desc)
    rank = len(d.input.sizes)
    below = (f"{M}input-dimensions-below-3_1",) if c.case.feature_level < FL_3_1 else ()
    rows = [_support(c, "input"), _support(c, "output"), *below]
    c.dimension_count("InputTensor.Sizes", rank, MVN_RANKS, *rows)
    usable = c.tensor(INPUT_TENSOR, d.input, FLOATS, _support(c, "input"))
    # ScaleTensor: "This tensor is required if the BiasTensor is used." (and the same of BiasTensor)
    if (d.scale is None) != (d.bias is None):
        present, missing = (SCALE_TENSOR, BIAS_TENSOR) if d.bias is None else (BIAS_TENSOR, SCALE_TENSOR)
        clause = f"{M}{missing[:-6].lower()}-requires-{present[:-6].lower()}"
        c.fail(present, f"{missing} is required when {present} is used (the spec pairs them)", clause)
    for name, tensor in ((SCALE_TENSOR, d.scale), (BIAS_TENSOR, d.bias)):
        if tensor is not None:
            c.tensor(name, tensor, FLOATS, _support(c, name[:-6].lower()))
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
        (f"{M}same-data-type", _support(c, "output")),
    )
    c.output(OUTPUT_TENSOR, d.input.sizes, d.input.data_type, output)
    if usable:
        c.expected(OUTPUT_TENSOR, d.input.sizes, d.input.data_type)


def inputs(d: Descriptor) -> dict[str, TensorSpec]:
    """InputTensor, then ScaleTensor and BiasTensor where given."""
    assert isinstance(d, Mvn1Desc)
    tensors = {INPUT_TENSOR: d.input}
    return tensors | {name: t for name, t in ((SCALE_TENSOR, d.scale), (BIAS_TENSOR, d.bias)) if t is not None}


def outputs(d: Descriptor) -> dict[str, DerivedOutput]:
    """OutputTensor: the InputTensor's Sizes and DataType."""
    assert isinstance(d, Mvn1Desc)
    return {OUTPUT_TENSOR: DerivedOutput(d.input.sizes, d.input.data_type)}


def oracle(d: Descriptor, arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    assert isinstance(d, Mvn1Desc)
    activation = None
    if d.fused_activation is not None:
        activation = {"type": d.fused_activation.type, **d.fused_activation.params}
    out = mean_variance_normalization1(
        arrays[INPUT_TENSOR],
        d.axes,
        scale=arrays.get(SCALE_TENSOR),
        bias=arrays.get(BIAS_TENSOR),
        normalize_variance=d.normalize_variance,
        epsilon=d.epsilon,
        fused_activation=activation,
    )
    return {OUTPUT_TENSOR: out}


def describe(d: Descriptor) -> dict[str, Described]:
    assert isinstance(d, Mvn1Desc)
    described: dict[str, Described] = {}
    if d.scale is not None:
        described["ScaleTensor"] = d.scale
    if d.bias is not None:
        described["BiasTensor"] = d.bias
    described |= {
        "Axes": d.axes,
        "NormalizeVariance": str(d.normalize_variance).lower(),
        "Epsilon": f"{d.epsilon:g}",
    }
    if d.fused_activation is not None:
        params = "".join(f", {key} {value:g}" for key, value in d.fused_activation.params.items())
        described["FusedActivation"] = d.fused_activation.type + params
    return described


ENTRY = CaseOperator(
    operator=Operator.MEAN_VARIANCE_NORMALIZATION1,
    descriptor=Mvn1Desc,
    keys=KEYS,
    read=read,
    validate=validate,
    inputs=inputs,
    outputs=outputs,
    oracle=oracle,
    describe=describe,
    # Measured peak per InputTensor element (benchmarks/case_memory.py): 99 (Scale and Bias full-size; 91 without them
    # or broadcast).
    bytes_per_element=112,
    introduced=FeatureLevel(2, 1),  # its page: "This operator was introduced in DML_FEATURE_LEVEL_2_1."
)

"""A case's descriptor fields -> the operator's descriptor (TopK1Desc, Mvn1Desc, Slice1Desc), in the spec's field
names; parse.py reads the rest of the case around it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from conformance.cases.fields import Fields
from conformance.cases.keys import (
    ACTIVATION_KEYS,
    ACTIVATION_PREFIX,
    ACTIVATION_TYPE,
    AXIS_DIRECTION_PREFIX,
    activation_keys,
)
from conformance.cases.parse_tensor import read_tensor
from conformance.model import (
    ACTIVATION_PARAMS,
    Activation,
    AxisDirection,
    Descriptor,
    Mvn1Desc,
    Operator,
    OutputDesc,
    Slice1Desc,
    TopK1Desc,
)


def _topk(f: Fields) -> Descriptor | None:
    tensor = f.sub("InputTensor")
    input_ = read_tensor(tensor) if tensor else None
    axis, k = f.uint("Axis"), f.uint("K")
    direction = f.choice("AxisDirection", AxisDirection, required=False, strip=AXIS_DIRECTION_PREFIX)
    if input_ is None or axis is None or k is None:
        return None
    return TopK1Desc(input_, axis, k, direction or AxisDirection.DECREASING)


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


def _mvn(f: Fields) -> Descriptor | None:
    tensors = {
        name: f.sub(name, required=name == "InputTensor") for name in ("InputTensor", "ScaleTensor", "BiasTensor")
    }
    read = {name: read_tensor(sub) if sub else None for name, sub in tensors.items()}
    axes = f.int_list("Axes")
    normalize = f.boolean("NormalizeVariance", True)
    epsilon = f.number("Epsilon", default=1e-5)
    activation = _activation(f.sub("FusedActivation", required=False))
    unreadable = any(read[n] is None and tensors[n] is not None for n in read)
    if read["InputTensor"] is None or axes is None or epsilon is None or unreadable:
        return None
    if f.has("FusedActivation") and f.raw["FusedActivation"] is not None and activation is None:
        return None
    return Mvn1Desc(read["InputTensor"], read["ScaleTensor"], read["BiasTensor"], axes, normalize, epsilon, activation)


def _slice(f: Fields) -> Descriptor | None:
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
    return Slice1Desc(input_, offsets, sizes, strides, output_sizes)


_READERS = {Operator.TOP_K1: _topk, Operator.MEAN_VARIANCE_NORMALIZATION1: _mvn, Operator.SLICE1: _slice}


def read_descriptor(operator: Operator, f: Fields, outputs: Mapping[str, OutputDesc]) -> Descriptor | None:
    """The operator's descriptor from a case's fields, or None once a problem says why it cannot be read."""
    return _slice_output_sizes(f, _READERS[operator](f), outputs)


def _slice_output_sizes(
    f: Fields, descriptor: Descriptor | None, outputs: Mapping[str, OutputDesc]
) -> Descriptor | None:
    """SLICE1's OutputTensor.Sizes is the descriptor's own way of giving OutputSizes; both must then agree."""
    output = outputs.get("OutputTensor")
    if not isinstance(descriptor, Slice1Desc) or output is None or output.sizes is None:
        return descriptor
    if descriptor.given_output_sizes is not None and descriptor.given_output_sizes != output.sizes:
        f.problem("OutputTensor.Sizes", f"differs from OutputSizes {list(descriptor.given_output_sizes)}; give one")
        return None
    return replace(descriptor, given_output_sizes=output.sizes)

"""A case's descriptor as short texts in the spec's field names, for reports ("InputTensor": "[2, 300] UINT8,
ties seed 102"): every result carries them, so a report can say what ran without the case file."""

from __future__ import annotations

from conformance.model import Descriptor, Mvn1Desc, Slice1Desc, TensorSpec, TopK1Desc

Parameters = dict[str, str]


def _tensor(spec: TensorSpec) -> str:
    sizes = _ints(spec.sizes)
    if spec.generator is not None:
        knobs = "".join(f", {key} {value:g}" for key, value in spec.generator.params.items())
        source = f"{spec.generator.kind} seed {spec.generator.seed}{knobs}"
    else:
        source = "Data"
    return f"{sizes} {spec.data_type.value}, {source}"


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def describe(descriptor: Descriptor) -> Parameters:
    """The descriptor's fields as texts, in the order the spec's struct lists them."""
    described: Parameters = {"InputTensor": _tensor(descriptor.input)}
    if isinstance(descriptor, TopK1Desc):
        described |= {
            "Axis": str(descriptor.axis),
            "K": str(descriptor.k),
            "AxisDirection": descriptor.axis_direction.value,
        }
    elif isinstance(descriptor, Mvn1Desc):
        if descriptor.scale is not None:
            described["ScaleTensor"] = _tensor(descriptor.scale)
        if descriptor.bias is not None:
            described["BiasTensor"] = _tensor(descriptor.bias)
        described |= {
            "Axes": _ints(descriptor.axes),
            "NormalizeVariance": str(descriptor.normalize_variance).lower(),
            "Epsilon": f"{descriptor.epsilon:g}",
        }
        activation = descriptor.fused_activation
        if activation is not None:
            params = "".join(f", {key} {value:g}" for key, value in activation.params.items())
            described["FusedActivation"] = activation.type + params
    elif isinstance(descriptor, Slice1Desc):
        described |= {
            "InputWindowOffsets": _ints(descriptor.offsets),
            "InputWindowSizes": _ints(descriptor.sizes),
            "InputWindowStrides": _ints(descriptor.strides),
        }
        if descriptor.given_output_sizes is not None:
            described["OutputSizes"] = _ints(descriptor.given_output_sizes)
    return described

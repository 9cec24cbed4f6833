"""A case's descriptor as short texts in the spec's field names, for reports ("InputTensor": "[2, 300] UINT8,
ties seed 102"): every result carries them, so a report can say what ran without the case file."""

from __future__ import annotations

from collections.abc import Mapping

from conformance.model import Descriptor, Mvn1Desc, OutputDesc, Slice1Desc, TensorSpec, TopK1Desc

Parameters = dict[str, str]


def _tensor(spec: TensorSpec) -> str:
    sizes = _ints(spec.sizes)
    if spec.generator is not None:
        knobs = "".join(f", {key} {value:g}" for key, value in spec.generator.params.items())
        source = f"{spec.generator.kind} seed {spec.generator.seed}{knobs}"
    else:
        source = "Data"
    return f"{sizes} {spec.data_type.value}, {source}{_layout(spec.strides, spec.total_bytes)}"


def _layout(strides: tuple[int, ...] | None, total_bytes: int | None) -> str:
    """A tensor's DML_BUFFER_TENSOR_DESC layout where the case gives one: ", Strides [4, 1], 64 bytes"."""
    text = f", Strides {_ints(strides)}" if strides is not None else ""
    return text + (f", TotalTensorSizeInBytes {total_bytes}" if total_bytes is not None else "")


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(v) for v in values) + "]"


def describe(descriptor: Descriptor, outputs: Mapping[str, OutputDesc] | None = None) -> Parameters:
    """The descriptor's fields as texts, in the order the spec's struct lists them; then each output the case gives a
    layout (``outputs``: ``Case.outputs``), as its Strides and TotalTensorSizeInBytes."""
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
    for name, output in (outputs or {}).items():
        layout = _layout(output.strides, output.total_bytes)
        if layout:
            described[name] = layout.removeprefix(", ")
    return described

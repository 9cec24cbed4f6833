"""A case's descriptor as short texts in the spec's field names, for reports ("InputTensor": "[2, 300] UINT8,
ties seed 102"): every result carries them, so a report can say what ran without the case file."""

from __future__ import annotations

from collections.abc import Mapping

from conformance.cases.case_operator import CaseOperator, Described
from conformance.cases.operators import OPERATORS
from conformance.model import Descriptor, OutputDesc, TensorSpec
from conformance.operators import MissingOperator

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
    """The descriptor's fields as texts, in the order the spec's struct lists them (InputTensor, then its operator's
    others: ``CaseOperator.describe``); then each output the case gives a layout (``outputs``: ``Case.outputs``), as
    its Strides and TotalTensorSizeInBytes."""
    described: Parameters = {"InputTensor": _tensor(descriptor.input)}
    for name, value in _operator(descriptor).describe(descriptor).items():
        described[name] = _text(value)
    for name, output in (outputs or {}).items():
        layout = _layout(output.strides, output.total_bytes)
        if layout:
            described[name] = layout.removeprefix(", ")
    return described


def _text(value: Described) -> str:
    if isinstance(value, TensorSpec):
        return _tensor(value)
    return _ints(value) if isinstance(value, tuple) else value


def _operator(descriptor: Descriptor) -> CaseOperator:
    """The operator whose descriptor this is (a report's parameters are made from the descriptor alone)."""
    for entry in OPERATORS.values():
        if isinstance(descriptor, entry.descriptor):
            return entry
    raise MissingOperator(f"{OPERATORS.name} has no entry for a {type(descriptor).__name__}")

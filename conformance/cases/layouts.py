"""Each tensor of a case as DirectML holds it: Sizes, DataType, Strides and TotalTensorSizeInBytes, inputs and outputs
alike (an output's Sizes and DataType derived from the descriptor as the spec pages say), and its buffer's size.

``case_layouts`` derives them, once, when a case is built (parse.py; a test's Case is given them the same way), and
the case carries them (``model.Case.layouts``); ``input_layouts`` and ``output_layouts`` read them from it. What a
buffer tensor's layout means is reference/layout.py's (``Layout``, conformance/layout.py, applies it); what layouts a
case may give, validate_layout.py's.
"""

from __future__ import annotations

from collections.abc import Mapping

from conformance.cases.operators import OPERATORS
from conformance.layout import Layout as Layout  # re-exported: the stages ask this module for a case's layouts
from conformance.model import Case, CaseLayouts, Descriptor, Operator, OutputDesc, TensorSpec


def input_tensors(case: Case) -> dict[str, TensorSpec]:
    """The case's input tensors by DML name: InputTensor, then those of its operator's others that it gives."""
    return OPERATORS[case.operator].inputs(case.descriptor)


def case_layouts(
    operator: Operator, descriptor: Descriptor, outputs: Mapping[str, OutputDesc] | None = None
) -> CaseLayouts:
    """Every tensor's layout of a case of ``operator`` with ``descriptor`` and the output descriptors it writes
    (``outputs``; None: none), by DML name. An input's is its tensor's. An output's Sizes and DataType are the ones
    the case writes, else those the descriptor gives it (its operator's ``outputs``: the spec page's rules; a valid
    case's written ones are these), with the Strides and TotalTensorSizeInBytes the case writes."""
    written: Mapping[str, OutputDesc] = outputs if outputs is not None else {}
    entry = OPERATORS[operator]
    inputs = {
        name: Layout(name, t.sizes, t.data_type, t.strides, t.total_bytes)
        for name, t in entry.inputs(descriptor).items()
    }
    try:
        derived = entry.outputs(descriptor)
    except ValueError as error:
        # No output Sizes follow from the descriptor (SLICE1's window arrays of unequal lengths): the validator refuses
        # it before they are asked for; where they are asked for anyway, output_layouts raises this same error.
        return CaseLayouts(inputs, {}, operator, descriptor, written, no_outputs=str(error))
    layouts = {}
    for name, output in derived.items():
        given = written.get(name)
        if given is None:
            layouts[name] = Layout(name, tuple(output.sizes), output.data_type)
            continue
        # The case's own where it writes them (a negative case's may differ from the descriptor's), else derived.
        sizes = given.sizes if given.sizes is not None else output.sizes
        data_type = given.data_type if given.data_type is not None else output.data_type
        layouts[name] = Layout(name, tuple(sizes), data_type, given.strides, given.total_bytes)
    return CaseLayouts(inputs, layouts, operator, descriptor, written)


def input_layouts(case: Case) -> dict[str, Layout]:
    """Every input tensor's layout, by DML name: those the case carries."""
    return dict(case.layouts.inputs)


def output_layouts(case: Case) -> dict[str, Layout]:
    """Every output tensor's layout, by DML name: those the case carries (``case_layouts``). ValueError for a
    descriptor that derives no output Sizes (``CaseLayouts.no_outputs``), which the validator refuses."""
    if case.layouts.no_outputs:
        raise ValueError(case.layouts.no_outputs)
    return dict(case.layouts.outputs)


def has_layouts(case: Case) -> bool:
    """Whether any tensor of the case, input or output, has a layout of its own."""
    return any(layout.given for layout in (*input_layouts(case).values(), *output_layouts(case).values()))


def packed_note(case: Case) -> str:
    """What an execution through onnxruntime (whose tensors are packed) leaves out of a case with layouts: its inputs
    were given as the logical arrays its strides read, and no output's layout or padding was checked. "" without."""
    inputs = [name for name, layout in input_layouts(case).items() if layout.given]
    outputs = [name for name, layout in output_layouts(case).items() if layout.given]
    parts = []
    if inputs:
        parts.append(f"{', '.join(inputs)} fed packed (the values read through the strides)")
    if outputs:
        parts.append(f"{', '.join(outputs)} read packed (strides and padding not checked)")
    return f"layouts not exercised through onnxruntime: {'; '.join(parts)}" if parts else ""

"""Each tensor of a case as DirectML holds it: Sizes, DataType, Strides and TotalTensorSizeInBytes, inputs and outputs
alike (an output's Sizes and DataType derived from the descriptor as the spec pages say), and its buffer's size.

What a buffer tensor's layout means is reference/layout.py's (``Layout``, conformance/layout.py, applies it); what
layouts a case may give, validate_layout.py's.
"""

from __future__ import annotations

from conformance.cases.operators import OPERATORS
from conformance.layout import Layout as Layout  # re-exported: the stages ask this module for a case's layouts
from conformance.model import Case, TensorSpec


def input_tensors(case: Case) -> dict[str, TensorSpec]:
    """The case's input tensors by DML name: InputTensor, then those of its operator's others that it gives."""
    return OPERATORS[case.operator].inputs(case.descriptor)


def input_layouts(case: Case) -> dict[str, Layout]:
    """Every input tensor's layout, by DML name."""
    return {
        name: Layout(name, t.sizes, t.data_type, t.strides, t.total_bytes) for name, t in input_tensors(case).items()
    }


def output_layouts(case: Case) -> dict[str, Layout]:
    """Every output tensor's layout, by DML name: the Sizes and DataType the case writes, else those the descriptor
    gives it (its operator's ``outputs``: the spec page's rules; a valid case's written ones are these), with the
    Strides and TotalTensorSizeInBytes the case writes."""
    derived = OPERATORS[case.operator].outputs(case.descriptor)
    layouts = {}
    for name, output in derived.items():
        given = case.outputs.get(name)
        if given is None:
            layouts[name] = Layout(name, tuple(output.sizes), output.data_type)
            continue
        # The case's own where it writes them (a negative case's may differ from the descriptor's), else derived.
        sizes = given.sizes if given.sizes is not None else output.sizes
        data_type = given.data_type if given.data_type is not None else output.data_type
        layouts[name] = Layout(name, tuple(sizes), data_type, given.strides, given.total_bytes)
    return layouts


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

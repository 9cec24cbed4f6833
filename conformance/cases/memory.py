"""What a case holds and costs, from its descriptor's sizes before anything is allocated: its tensors' elements
(--max-run-elements) and its estimated peak memory (--max-case-bytes).

A case's memory is its InputTensor's elements times its operator's ``BYTES_PER_ELEMENT``: the InputTensor is the
largest tensor of each of the three operators (outputs, Scale and Bias are at most its size), and what a case
allocates grows with it: the input as generated (float64 draws, then its own type), the oracle's float64 copies and
its outputs, the EP's copies of inputs and outputs, the comparison's float64 errors and int64 ULPs and indices.
Each figure is the largest peak, per InputTensor element, that ``benchmarks/case_memory.py`` measured for the
operator over its data types and shapes (8 M-element inputs on the CPU EP, whose buffers share the process with the
oracle's: the most memory a case takes in one process), rounded up by about a sixth (docs/case-format.md#limits).
A tensor given a layout (Strides, TotalTensorSizeInBytes) adds its buffer's bytes: the oracle writes an input into
it and reads it back (case_inputs), and a padded buffer can be far larger than its elements.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from conformance.cases.layouts import input_layouts, output_layouts
from conformance.cases.parse import Entry, Rejected
from conformance.model import Mvn1Desc, Operator, TopK1Desc
from conformance.problems import Problem

# Measured peaks per InputTensor element (benchmarks/case_memory.py): MVN1 99 (Scale and Bias full-size; 91 without
# them or broadcast), TOP_K1 44 (K near the axis size; 24 for K 8), SLICE1 24 (float32 and float16; int8 17).
BYTES_PER_ELEMENT: Mapping[Operator, int] = MappingProxyType(
    {
        Operator.TOP_K1: 52,
        Operator.MEAN_VARIANCE_NORMALIZATION1: 112,
        Operator.SLICE1: 28,
    }
)


def case_elements(entry: Entry) -> int:
    """Elements of a case's tensors, inputs and outputs, from its descriptor's sizes (nothing is allocated); 0 for
    an ``expect: invalid`` case, which the validator refuses before any tensor is made. For a case that validates."""
    if isinstance(entry, Rejected) or entry.expect_invalid is not None:
        return 0
    d = entry.descriptor
    if isinstance(d, TopK1Desc):
        shapes = [d.input.sizes, d.output_sizes, d.output_sizes]  # OutputValueTensor and OutputIndexTensor
    elif isinstance(d, Mvn1Desc):
        shapes = [t.sizes for t in (d.input, d.scale, d.bias) if t is not None] + [d.input.sizes]
    else:
        shapes = [d.input.sizes, d.output_sizes]
    return sum(math.prod(shape) for shape in shapes)


def case_bytes(entry: Entry) -> int:
    """The estimated peak memory of running a case (module docstring); 0 for an ``expect: invalid`` case, which
    allocates nothing. For a case that validates."""
    if isinstance(entry, Rejected) or entry.expect_invalid is not None:
        return 0
    return BYTES_PER_ELEMENT[entry.operator] * math.prod(entry.descriptor.input.sizes) + layout_bytes(entry)


def layout_bytes(entry: Entry) -> int:
    """The buffers' bytes of a case's tensors that give a layout of their own (0 for packed ones, and for an
    ``expect: invalid`` case). For a case that validates."""
    if isinstance(entry, Rejected) or entry.expect_invalid is not None:
        return 0
    layouts = (*input_layouts(entry).values(), *output_layouts(entry).values())
    return sum(layout.buffer_bytes for layout in layouts if layout.given)


def size_text(count: int) -> str:
    """Bytes for a person: "20.5 GiB", "96.0 MiB", "512 bytes"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count} bytes"


def memory_problem(entry: Entry, max_case_bytes: int) -> Problem | None:
    """A case whose estimated memory is over --max-case-bytes, as a problem at its InputTensor's Sizes (what sets
    it), refused like a tensor over --max-elements: before anything is allocated. None within the limit."""
    estimate = case_bytes(entry)
    if estimate <= max_case_bytes or isinstance(entry, Rejected):
        return None
    elements = math.prod(entry.descriptor.input.sizes)
    per = BYTES_PER_ELEMENT[entry.operator]
    buffers = layout_bytes(entry)
    layouts = f" plus {size_text(buffers)} of buffers with layouts" if buffers else ""
    message = (
        f"the case would take an estimated {size_text(estimate)} ({elements} elements x {per} bytes for "
        f"{entry.operator.value}{layouts}), over --max-case-bytes {max_case_bytes} ({size_text(max_case_bytes)})"
    )
    return Problem(entry.pos("InputTensor.Sizes"), "InputTensor.Sizes", message)

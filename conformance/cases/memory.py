"""What a case holds and costs, from its descriptor's sizes before anything is allocated: its tensors' elements
(--max-run-elements), its estimated peak memory on each way of executing it (--max-case-bytes), and whether the
DirectML runner's frames can carry it.

A case's memory is the harness's own work on it, the same on every EP, plus what its execution path holds
(model.MemoryPath, each described in ep/memory.py). The harness's part is its InputTensor's elements times its
operator's ``BYTES_PER_ELEMENT`` (each operator's module's ``bytes_per_element``): the InputTensor is the largest tensor
of each operator (its outputs and other inputs are at most its size), and what a case allocates grows with it: the input
as generated (float64 draws, then its own type), the oracle's float64 copies and its outputs, the comparison's float64
errors and int64 ULPs and indices, and an EP's copies of inputs and outputs in the harness's process. Each figure is the
largest peak, per InputTensor element, that ``benchmarks/case_memory.py`` measured for the operator over its data types
and shapes (8 M-element inputs on the CPU EP, whose buffers share the process with the oracle's), rounded up by about a
sixth (docs/case-format.md#limits). An input given a layout (Strides, TotalTensorSizeInBytes) adds its buffer's bytes:
the oracle writes it into that buffer and reads it back (case_inputs), and a padded buffer can be far larger than its
elements. How a path's part counts beside it is model.MemoryPath's to say.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

from conformance.cases.layouts import Layout, input_layouts, output_layouts
from conformance.cases.limits import FileLimits
from conformance.cases.operators import OPERATORS
from conformance.cases.parse import Entry, Rejected
from conformance.model import IN_PROCESS, Case, Copies, MemoryPath, Operator
from conformance.problems import Problem

# Each operator's figure, as its module states it with the peak measured (benchmarks/case_memory.py).
BYTES_PER_ELEMENT: Mapping[Operator, int] = MappingProxyType(
    {operator: entry.bytes_per_element for operator, entry in OPERATORS.items()}
)


def case_elements(entry: Entry) -> int:
    """Elements of a case's tensors, inputs and outputs, from its descriptor's sizes (nothing is allocated); 0 for
    an ``expect: invalid`` case, which the validator refuses before any tensor is made. For a case that validates."""
    if isinstance(entry, Rejected) or entry.expect_invalid is not None:
        return 0
    operator = OPERATORS[entry.operator]
    inputs = operator.inputs(entry.descriptor).values()
    outputs = operator.outputs(entry.descriptor).values()
    return sum(math.prod(tensor.sizes) for tensor in inputs) + sum(math.prod(output.sizes) for output in outputs)


def tensor_bytes(case: Case) -> Copies:
    """A case's tensors in bytes, as a path's ``Copies`` count them: its inputs and outputs packed, and their
    buffers."""
    inputs, outputs = input_layouts(case).values(), output_layouts(case).values()
    return Copies(
        inputs=sum(_packed(layout) for layout in inputs),
        outputs=sum(_packed(layout) for layout in outputs),
        input_buffers=sum(layout.buffer_bytes for layout in inputs),
        output_buffers=sum(layout.buffer_bytes for layout in outputs),
    )


def _bytes(sizes: Copies, copies: Copies) -> float:
    """The bytes ``copies`` of tensors of ``sizes`` (tensor_bytes) take."""
    return (
        copies.inputs * sizes.inputs
        + copies.outputs * sizes.outputs
        + copies.input_buffers * sizes.input_buffers
        + copies.output_buffers * sizes.output_buffers
    )


def _packed(layout: Layout) -> int:
    return math.prod(layout.sizes) * layout.element_size


def _counted(entry: Entry) -> Case | None:
    """The case whose memory counts: None for an ``expect: invalid`` case, which allocates nothing."""
    if isinstance(entry, Rejected) or entry.expect_invalid is not None:
        return None
    return entry


def harness_bytes(entry: Entry) -> int:
    """The harness's own work on a case, on every path (module docstring); 0 for an ``expect: invalid`` case. For a
    case that validates."""
    case = _counted(entry)
    if case is None:
        return 0
    return OPERATORS[case.operator].bytes_per_element * math.prod(case.descriptor.input.sizes) + layout_bytes(case)


@dataclass(frozen=True)
class Estimate:
    """A case's estimated peak memory on one path: the harness's process (the larger of its own work and the path's
    phase there) and the path's own process (the DirectML runner), which ``total`` adds."""

    path: MemoryPath
    own: int  # the harness's own work (harness_bytes)
    phase: int  # the path's phase in the harness's process
    runner: int  # the path's own process

    @property
    def total(self) -> int:
        return max(self.own, self.phase) + self.runner


def estimate(entry: Entry, path: MemoryPath) -> Estimate:
    """A case's estimated peak memory on ``path`` (model.MemoryPath says how each part counts); zeros for an
    ``expect: invalid`` case, which allocates nothing. For a case that validates."""
    case = _counted(entry)
    if case is None:
        return Estimate(path, 0, 0, 0)
    return _estimate(case, path, tensor_bytes(case), harness_bytes(case))


def _estimate(case: Case, path: MemoryPath, sizes: Copies, own: int) -> Estimate:
    """``estimate`` from the case's tensor_bytes and harness_bytes, which do not depend on the path."""
    scratch = path.scratch.get(case.operator, 0.0) * math.prod(case.descriptor.input.sizes)
    return Estimate(path, own, math.ceil(_bytes(sizes, path.harness)), math.ceil(_bytes(sizes, path.runner) + scratch))


def case_bytes(entry: Entry, path: MemoryPath) -> int:
    """The estimated peak memory of running a case on ``path`` (``estimate``); 0 for an ``expect: invalid`` case,
    which allocates nothing. For a case that validates."""
    return estimate(entry, path).total


def layout_bytes(entry: Entry) -> int:
    """The buffers' bytes of a case's inputs that give a layout of their own (0 for packed ones, and for an
    ``expect: invalid`` case): the oracle reads each through its buffer. For a case that validates."""
    case = _counted(entry)
    if case is None:
        return 0
    return sum(layout.buffer_bytes for layout in input_layouts(case).values() if layout.given)


def size_text(count: float) -> str:
    """Bytes for a person: "20.5 GiB", "96.0 MiB", "512 bytes"."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if count >= scale:
            return f"{count / scale:.1f} {unit}"
    return f"{count:.0f} bytes"


def cost_problem(entry: Entry, limits: FileLimits) -> Problem | None:
    """A valid case that a frame of one of ``limits.paths`` cannot carry, or that would take more memory on one of
    them than --max-case-bytes (one problem: a frame too large comes first, since no limit raised lets it through);
    None for a case within both, and for an ``expect: invalid`` case. Its tensors' sizes are found once for every
    path."""
    case = _counted(entry)
    if case is None:
        return None
    sizes = tensor_bytes(case)
    return _frame_problem(case, limits.paths, sizes) or _memory_problem(case, limits, sizes)


def _memory_problem(case: Case, limits: FileLimits, sizes: Copies) -> Problem | None:
    """A case whose estimated memory on one of ``limits.paths`` is over --max-case-bytes, as a problem at its
    InputTensor's Sizes (what sets it, but for a padded buffer), refused like a tensor over --max-elements: before
    anything is allocated. It names the path of the largest estimate (none given: the harness's process) and its
    parts. None within the limit."""
    own, max_case_bytes = harness_bytes(case), limits.max_case_bytes
    found = max((_estimate(case, path, sizes, own) for path in limits.paths or (IN_PROCESS,)), key=lambda e: e.total)
    if found.total <= max_case_bytes:
        return None
    elements = math.prod(case.descriptor.input.sizes)
    per = OPERATORS[case.operator].bytes_per_element
    buffers = layout_bytes(case)
    parts = f"{elements} elements x {per} bytes for {case.operator.value}"
    parts += f" plus {size_text(buffers)} of buffers with layouts" if buffers else ""
    if found.phase > found.own:
        parts = f"{size_text(found.phase)} of the tensors' copies in the harness's process, more than {parts}"
    parts += f"; {size_text(found.runner)} in the DirectML runner" if found.runner else ""
    message = (
        f"the case would take an estimated {size_text(found.total)} {found.path.name} ({parts}), over "
        f"--max-case-bytes {max_case_bytes} ({size_text(max_case_bytes)})"
    )
    return Problem(case.pos("InputTensor.Sizes"), "InputTensor.Sizes", message)


def _frame_problem(case: Case, paths: Sequence[MemoryPath], sizes: Copies) -> Problem | None:
    """A case whose tensors one frame of a path's protocol cannot carry (``MemoryPath.frame_limit``: the DirectML
    runner's u32 frames), at the largest tensor's field that sets its size, saying what to change; None where
    every frame fits."""
    for path in paths:
        for frame in path.frames:
            carried = _bytes(sizes, frame)
            if carried > path.frame_limit:
                return _too_large(case, path, carried)
    return None


def _too_large(case: Case, path: MemoryPath, carried: float) -> Problem:
    layouts = input_layouts(case) | output_layouts(case)
    name, layout = max(layouts.items(), key=lambda item: item[1].buffer_bytes)
    field = "TotalTensorSizeInBytes" if layout.total_bytes is not None else "Strides" if layout.strides else "Sizes"
    where = f"{name}.{field}" if f"{name}.{field}" in case.positions else "InputTensor.Sizes"
    message = (
        f"a request of {carried:.0f} bytes {path.name}, over the {path.frame_limit} bytes that one frame of the "
        f"DirectML runner's protocol carries (a u32 length): make {name} (a {size_text(layout.buffer_bytes)} buffer) "
        "or the case's other tensors smaller"
    )
    return Problem(case.pos(where), where, message)

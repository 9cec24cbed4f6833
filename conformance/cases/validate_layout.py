"""DirectML's buffer-tensor rules on a case's Strides and TotalTensorSizeInBytes (DML_BUFFER_TENSOR_DESC and
DMLCalcBufferTensorSize, DirectML helper functions), as one-line problems at the field that breaks them.

The layout itself (offsets, the size formula) is reference/layout.py's; this module says which layouts a case may
give. DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT (16 bytes) constrains a binding's Offset, which a case does not choose:
the DirectML runner binds every tensor at a 256-byte aligned offset of its buffer pool (an output 64 guard bytes
further), so no case breaks it (docs/case-format.md).
"""

from __future__ import annotations

import numpy as np

from conformance.cases.decisions import ONE_VALUE_PER_ADDRESS, OUTPUTS_DO_NOT_OVERLAP
from conformance.cases.generate import materialize
from conformance.cases.validate_checker import Checker
from conformance.dtypes import numpy_dtype
from conformance.model import DataType, TensorSpec
from reference.layout import (
    BUFFER_SIZE_ALIGNMENT,
    UINT_MAX,
    calc_buffer_tensor_size,
    first_alias,
    index_of_last_element,
    through_buffer,
)

SHARED_ADDRESS = "at one address"  # in each message about elements that strides put at one place


def _ints(values: tuple[int, ...]) -> str:
    return "[" + ", ".join(map(str, values)) + "]"


def check_layout(
    c: Checker,
    name: str,
    sizes: tuple[int, ...],
    data_type: DataType,
    strides: tuple[int, ...] | None,
    total_bytes: int | None,
    output: bool,
) -> bool:
    """The tensor ``name``'s Strides and TotalTensorSizeInBytes against ``sizes`` (every size at least 1) and its
    data type; False where a rule is broken."""
    before = len(c.problems)
    element = numpy_dtype(data_type).itemsize
    if strides is not None and len(strides) != len(sizes):
        # "This member determines the size of the Sizes and Strides arrays".
        message = f"has {len(strides)} entries; DimensionCount is {len(sizes)} (Sizes {_ints(sizes)})"
        c.fail(f"{name}.Strides", message)
        return False
    last = index_of_last_element(sizes, strides)
    if last > UINT_MAX:
        # DMLCalcBufferTensorSize: "UINT indexOfLastElement": the last element's offset must fit a UINT.
        c.fail(f"{name}.Strides", f"put the last element at offset {last}, past UINT's {UINT_MAX}")
        return False
    if last + 1 > c.max_elements:
        c.fail(
            f"{name}.Strides",
            f"the buffer spans {last + 1} elements, over the limit of {c.max_elements} (--max-elements)",
        )
        return False
    if output and strides is not None:
        _no_overlap(c, name, sizes, strides)
    minimum = calc_buffer_tensor_size(element, sizes, strides)
    if total_bytes is not None:
        # "TotalTensorSizeInBytes must be at least as large as the minimum implied size given the sizes, strides,
        # and data type of the tensor"; "all bound buffers must have a total size that is DWORD-aligned".
        where = f"{name}.TotalTensorSizeInBytes"
        if total_bytes < minimum:
            c.fail(
                where,
                f"is {total_bytes}, below DMLCalcBufferTensorSize's {minimum} bytes "
                f"(Sizes {_ints(sizes)}, Strides {_ints(strides) if strides is not None else 'packed'}, "
                f"{element}-byte {data_type})",
            )
        elif total_bytes % BUFFER_SIZE_ALIGNMENT:
            c.fail(where, f"is {total_bytes}, not a multiple of {BUFFER_SIZE_ALIGNMENT} (a DWORD-aligned buffer size)")
        elif total_bytes // element > c.max_elements:
            c.fail(where, f"{total_bytes} bytes is over the limit of {c.max_elements} elements (--max-elements)")
    return len(c.problems) == before


def _no_overlap(c: Checker, name: str, sizes: tuple[int, ...], strides: tuple[int, ...]) -> None:
    """DECISION: an output's elements each need an address of their own: two results written to one place leave
    one of them lost, whichever the operator writes last (zero strides broadcast inputs only)."""
    alias = first_alias(sizes, strides)
    if alias is None:
        return
    first, second = alias
    zero = next((i for i, (n, s) in enumerate(zip(sizes, strides, strict=True)) if s == 0 and n > 1), None)
    why = f"a zero stride in dimension {zero}" if zero is not None else "the strides alias"
    c.fail(
        f"{name}.Strides",
        f"put output elements {list(first)} and {list(second)} {SHARED_ADDRESS} ({why}): an output's elements "
        f"must not overlap",
        decision=OUTPUTS_DO_NOT_OVERLAP,
    )


def check_broadcast_data(c: Checker, name: str, tensor: TensorSpec) -> None:
    """DECISION: Data that gives different values to elements the strides put at one address (a zero stride) is
    refused: the buffer holds one value there (the first, reference/layout.py), and the case would read as if the
    others counted. A generator's values are not checked: its stream is written the same way, first one wins."""
    if tensor.strides is None or tensor.data is None:
        return
    values = materialize(tensor, name)
    kept = through_buffer(values, tensor.strides, tensor.total_bytes)
    # Bit for bit (a NaN's payload, -0.0 against 0.0): what the buffer holds is bytes.
    wrong = np.flatnonzero((values.reshape(-1, 1).view(np.uint8) != kept.reshape(-1, 1).view(np.uint8)).any(axis=1))
    if wrong.size:
        index = tuple(int(i) for i in np.unravel_index(int(wrong[0]), values.shape))
        c.fail(
            f"{name}.Data",
            f"gives {values[index].item()!r} at {list(index)}, where the strides {_ints(tensor.strides)} place an "
            f"earlier element holding {kept[index].item()!r}: elements {SHARED_ADDRESS} must hold one value",
            decision=ONE_VALUE_PER_ADDRESS,
        )

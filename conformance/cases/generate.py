"""Tensor data: from a case's ``Data`` or from a seeded ``Generator`` (its kinds: generate_kinds.py); the same case
gives the same bytes everywhere.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from conformance.cases.generate_kinds import generate
from conformance.cases.layouts import input_tensors
from conformance.dtypes import numpy_dtype
from conformance.model import INPUT_TENSOR, Case, DataType, Generator, TensorSpec
from reference.layout import through_buffer


def materialize(tensor: TensorSpec, name: str = INPUT_TENSOR) -> np.ndarray:
    """The tensor's values, shape ``tensor.sizes``, NumPy dtype of ``tensor.data_type``.

    ``name`` (the DML tensor name) selects the generator's stream; ``case_inputs`` passes each tensor's own.
    """
    dtype = numpy_dtype(tensor.data_type)
    count = tensor.element_count
    if tensor.data is not None:
        flat = _from_data(tensor.data, tensor.data_type, count)
    elif tensor.generator is not None:
        flat = _generated(tensor.generator, tensor.data_type, count, name)
    else:
        raise ValueError("tensor has neither Data nor Generator")
    if flat.dtype != dtype or flat.shape != (count,):
        raise AssertionError(f"generated {flat.dtype}{flat.shape}, expected {dtype}({count},)")
    return flat.reshape(tensor.sizes)


def case_inputs(case: Case) -> dict[str, np.ndarray]:
    """The case's input tensors keyed by DML name (layouts.input_tensors: InputTensor, then its operator's others).

    Each is the logical array the operator reads (shape Sizes). A tensor given Strides is first written into its
    buffer through them and read back the same way (reference/layout.py), so that where a zero stride puts several
    elements at one address, every one of them holds the value DirectML reads there: the first written."""
    inputs = {}
    for name, tensor in input_tensors(case).items():
        values = materialize(tensor, name)
        inputs[name] = values if tensor.strides is None else through_buffer(values, tensor.strides, tensor.total_bytes)
    return inputs


def _from_data(data: tuple[float, ...], data_type: DataType, count: int) -> np.ndarray:
    if len(data) != count:
        raise ValueError(f"Data has {len(data)} elements, Sizes need {count}")
    values = np.array(data, dtype=np.float64).reshape(count)
    if data_type.is_float:
        return values.astype(numpy_dtype(data_type))
    info = np.iinfo(numpy_dtype(data_type))
    bad = ~np.isfinite(values) | (values != np.floor(values)) | (values < info.min) | (values > info.max)
    if bad.any():
        raise ValueError(f"Data value {values[bad][0]!r} is not a {data_type} value")
    return values.astype(numpy_dtype(data_type))


# Generated values are a function of (generator, data type, count, tensor name) alone, and a sweep's cases share
# theirs: the whole library generates 1,904 tensors, 429 of them distinct, and on the CPU EP generating them was 0.38 s
# of a 3.7 s run (a stable argsort of 64-bit draws, each ``ties`` tensor). The last ones are kept, read-only, so that
# a caller that writes into an input fails loudly instead of changing the next case's.
_KEPT_BYTES = 64 << 20
_kept: OrderedDict[tuple[object, ...], np.ndarray] = OrderedDict()
_kept_bytes = [0]  # their bytes together


def _generated(gen: Generator, data_type: DataType, count: int, name: str) -> np.ndarray:
    """``generate``'s values, the same array for the same generator, type, count and name while it is kept."""
    key = (gen.kind, gen.seed, tuple(sorted(gen.params.items())), data_type, count, name)
    values = _kept.get(key)
    if values is not None:
        _kept.move_to_end(key)
        return values
    values = generate(gen, data_type, count, name)
    values.setflags(write=False)
    if values.nbytes <= _KEPT_BYTES:
        _kept[key] = values
        _kept_bytes[0] += values.nbytes
        while _kept_bytes[0] > _KEPT_BYTES:
            _kept_bytes[0] -= _kept.popitem(last=False)[1].nbytes
    return values

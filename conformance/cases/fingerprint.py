"""A machine-independent fingerprint of each generated input and each output an EP returned, recorded in every
result (``Result.inputs_sha256``, ``Result.outputs_sha256``).

The harness promises that a case and its seed give byte-identical inputs on every machine (generate.py); a hash
of those bytes in results.json lets two runs, on two machines or two NumPy versions, show that they ran the same
data, and ``dmlconf diff`` names the cases whose inputs differ. The outputs' hashes show what a verdict cannot:
two DirectML releases that both pass a case within its tolerance may still return other bits, and ``dmlconf diff``
names those cases too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

import numpy as np

# Numeric kinds only: bool, signed and unsigned integers, floats, complex. The bytes of an object array are
# pointers and those of strings or records depend on how NumPy lays them out, so none of them has a fingerprint.
_NUMERIC_KINDS = frozenset("biufc")


def tensor_sha256(array: np.ndarray) -> str:
    """The lower-case hex SHA-256 of ``header + body``, where

    * ``header`` is the ASCII text ``"<dtype>;<d0>,<d1>,...;"``: the dtype's NumPy name, which does not depend on
      byte order (``float32``, ``float16``, ``int8``, ``uint32``, ...), then the shape's sizes in decimal,
      comma-separated (empty for a 0-d array), each part ended by ``;``; e.g. ``float32;1,1,3,4;``;
    * ``body`` is the elements in C (row-major) order, each in its little-endian bytes (``tobytes`` of the array
      made C-contiguous and little-endian).

    So the digest depends on the values, dtype and shape alone, not on the machine's byte order or the array's
    memory layout (strides, a big-endian dtype), and two tensors of equal bytes but another dtype or shape differ.
    ValueError for a non-numeric dtype.
    """
    dtype = array.dtype
    if dtype.kind not in _NUMERIC_KINDS:
        raise ValueError(f"no fingerprint for dtype {dtype}: only numeric tensors have one")
    # Hashed through the buffer rather than tobytes(): no copy of a large input that is C-contiguous and
    # little-endian already, as every generated one is on a little-endian machine.
    little = np.ascontiguousarray(array.astype(dtype.newbyteorder("<"), copy=False))
    header = f"{dtype.name};{','.join(str(size) for size in array.shape)};".encode("ascii")
    digest = hashlib.sha256(header)
    digest.update(little.data)
    return digest.hexdigest()


def tensor_hashes(tensors: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Each numeric tensor's ``tensor_sha256``, keyed by its DML tensor name (InputTensor, ScaleTensor,
    OutputValueTensor, ...), in the tensors' order. One without a fingerprint (an EP that returned strings, say) is
    left out rather than raising: recording hashes must not replace the verdict an EP's outputs already got."""
    arrays = {name: np.asarray(array) for name, array in tensors.items()}
    return {name: tensor_sha256(array) for name, array in arrays.items() if array.dtype.kind in _NUMERIC_KINDS}


def value_hashes(tensors: Mapping[str, np.ndarray]) -> dict[str, str]:
    """Each output's value hash, keyed by its DML tensor name: the ``tensor_sha256`` of its logical elements in C
    order as one row, integers as int64 and booleans as uint8, so that the same values give the same digest on every
    execution path whatever buffer, shape or index type carried them (onnxruntime's int64 TopK indices and DirectML's
    UINT32 ones, a DirectML buffer's padding and strides read away). ``dmlconf diff`` compares these where both runs
    recorded them (gate/diff.py)."""
    found = {}
    for name, array in tensors.items():
        values = logical_values(array)
        if values.dtype.kind in _NUMERIC_KINDS:
            found[name] = tensor_sha256(values)
    return found


def logical_values(array: np.ndarray) -> np.ndarray:
    """An output's logical elements as its value hash reads them: in C order as one row, integers as int64 and
    booleans as uint8 (run/modes.py compares two outputs element by element this way)."""
    values = np.ascontiguousarray(np.asarray(array)).reshape(-1)
    if values.dtype.kind in "iu":
        return values.astype(np.int64)
    return values.astype(np.uint8) if values.dtype.kind == "b" else values

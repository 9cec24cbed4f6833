"""Out-of-bounds writes, benchdnn-style: an output buffer starts filled with a canary pattern over its whole size and
a guard region on each side; after the operator ran, any byte that no element of the output's strides addresses
(padding between strided elements, bytes up to TotalTensorSizeInBytes, the guards) and that changed is a FAIL
``out_of_bounds_write``: the operator wrote memory it does not own.

The pattern is the 4 bytes ``A5 C3 5A E7`` repeated from the buffer's start (offset 0 is 16-byte aligned, so every
element of 1, 2 or 4 bytes sees the same bytes at every position):

* no 0x00 and no 0xFF byte: what a cleared buffer, a memset to -1 or an all-ones NaN hold, the commonest stray writes;
* four different bytes: a write shifted by 1 to 3 bytes, or an element of another width, changes what it covers;
* finite and no NaN in every element type (float32 -1.03e24; float16 -3.82 and -1882; int8 -91, -61, 90, -25): a
  kernel that copies padding through float registers (a read-modify-write of a vector) gives back the same bits,
  where a signaling NaN could come back quieted and be reported as a write it was not;
* float32 -1.03e24 is no value the three operators produce from the library's inputs.

GUARD_BYTES is 64 bytes: four 16-byte vector stores (DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT) before the start and past
the end (the buffers of one dispatch are slices of one pool in the runner: a stray write before an output's start
would otherwise land in another binding, unseen). The guard before the binding is its ``lead``: GUARD_BYTES unless a
binding offset is chosen (``--ep dmlop:binding_offset=16``: 16 bytes before it, a multiple of 16 and of the
pattern's 4 bytes, so that the binding still sees the pattern from its first byte).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from conformance.compare.common import Verdict
from conformance.model import OUT_OF_BOUNDS_WRITE, Status
from reference.layout import addressed_view

CANARY = bytes((0xA5, 0xC3, 0x5A, 0xE7))
_PATTERN = np.frombuffer(CANARY, dtype=np.uint8)
GUARD_BYTES = 64
SHOWN = 8  # offsets listed per message


def canary_bytes(size: int) -> bytes:
    """``size`` bytes of the canary pattern, from its first byte."""
    return (CANARY * (size // len(CANARY) + 1))[:size]


def initial_output_bytes(buffer_bytes: int, lead: int = GUARD_BYTES) -> bytes:
    """An output buffer's bytes before the operator runs: the canary over ``lead`` bytes before it, its
    ``buffer_bytes`` (its TotalTensorSizeInBytes) and GUARD_BYTES past them. Bind ``[lead, lead + buffer_bytes)``; a
    guard lies on each side (``lead`` is a multiple of 16 and of the pattern's 4 bytes, so the binding is aligned
    and sees the pattern from its first byte)."""
    return canary_bytes(lead + buffer_bytes + GUARD_BYTES)


def binding_bytes(read_back: bytes, buffer_bytes: int, lead: int = GUARD_BYTES) -> bytes:
    """The binding's bytes out of a read back buffer with its guards (``initial_output_bytes``'s layout)."""
    return read_back[lead : lead + buffer_bytes]


def _differs(raw: np.ndarray) -> np.ndarray:
    """A byte per byte of ``raw``: nonzero where it is not the canary pattern's byte at its place (the pattern from
    ``raw``'s first byte). One XOR of 4-byte words against the pattern as a word: the bytes of a word XOR apart."""
    whole = raw.size - raw.size % len(CANARY)
    differs = np.empty(raw.size, dtype=np.uint8)
    np.bitwise_xor(raw[:whole].view(np.uint32), _PATTERN.view(np.uint32)[0], out=differs[:whole].view(np.uint32))
    np.bitwise_xor(raw[whole:], _PATTERN[: raw.size - whole], out=differs[whole:])
    return differs


def stray_writes(
    name: str,
    read_back: bytes | np.ndarray,
    sizes: Sequence[int],
    strides: Sequence[int] | None,
    element_size: int,
    buffer_bytes: int,
    lead: int = GUARD_BYTES,
) -> str:
    """What changed in ``read_back`` (the whole buffer with its guards, ``initial_output_bytes``'s layout for
    ``lead``, after the operator ran) that no element of ``name`` addresses through ``strides``: one message, ""
    when nothing did. Offsets are from the binding's start (a guard byte before it is negative)."""
    raw = np.frombuffer(read_back, dtype=np.uint8) if isinstance(read_back, bytes | bytearray) else read_back
    raw = np.ascontiguousarray(raw)
    expected_size = lead + buffer_bytes + GUARD_BYTES
    if raw.size != expected_size:
        return f"{name}: read back {raw.size} bytes, the buffer and its guards hold {expected_size}"
    # A few passes over the bytes, none per element in Python and no offsets listed: which bytes differ from the
    # pattern, then the bytes the output's elements own cleared through their strides.
    differs = _differs(raw)
    addressed_view(differs[lead : lead + buffer_bytes], sizes, strides, element_size)[...] = 0
    changed = np.flatnonzero(differs)
    if not changed.size:
        return ""
    before = changed[changed < lead]
    inside = changed[(changed >= lead) & (changed < lead + buffer_bytes)]
    after = changed[changed >= lead + buffer_bytes]
    parts = []
    if before.size:
        parts.append(f"{before.size} of the {lead} guard byte(s) before its start")
    if inside.size:
        parts.append(f"{inside.size} byte(s) no element addresses in its {buffer_bytes}-byte buffer")
    if after.size:
        parts.append(f"{after.size} of the {GUARD_BYTES} guard byte(s) past its end")
    first = ", ".join(
        f"{int(offset) - lead} (0x{int(raw[offset]):02x}, was 0x{CANARY[offset % len(CANARY)]:02x})"
        for offset in changed[:SHOWN]
    )
    more = ", ..." if changed.size > SHOWN else ""
    return f"{name}: the operator wrote {' and '.join(parts)}; first at byte offset(s) {first}{more}"


def canary_verdict(messages: Sequence[str]) -> Verdict | None:
    """FAIL ``out_of_bounds_write`` for the outputs' ``stray_writes`` messages (those not empty), else None: it
    stands whatever the values compare to, since memory outside the tensor is the worse fault."""
    found = [message for message in messages if message]
    if not found:
        return None
    return Verdict(Status.FAIL, OUT_OF_BOUNDS_WRITE, "\n".join(found), {"out_of_bounds_outputs": len(found)})

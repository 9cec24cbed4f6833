"""The canary check of an output buffer: bytes no element owns (padding, past the minimum size, the guard) that
changed are an out_of_bounds_write; the elements themselves may change freely."""

from __future__ import annotations

import numpy as np

from conformance.compare.canary import (
    CANARY,
    GUARD_BYTES,
    canary_verdict,
    initial_output_bytes,
    stray_writes,
)
from conformance.model import OUT_OF_BOUNDS_WRITE, Status

# An int16 [2, 3] output with rows padded to 4 elements: elements at byte offsets 0-5 and 8-13 of the binding; 6-7
# padding; a TotalTensorSizeInBytes of 20 leaves bytes 14-19 after the last element. The read back buffer holds a
# 64-byte guard before the binding (its bytes 0-63) and one after it (84-147).
SIZES, STRIDES, ELEMENT, TOTAL = (2, 3), (4, 1), 2, 20
G = GUARD_BYTES


def _written() -> np.ndarray:
    """The buffer after an operator that wrote every element (and nothing else)."""
    buffer = np.frombuffer(initial_output_bytes(TOTAL), dtype=np.uint8).copy()
    for start in (0, 2, 4, 8, 10, 12):
        buffer[G + start : G + start + 2] = (0x01, 0x00)
    return buffer


def test_the_initial_bytes_are_the_pattern_over_the_buffer_and_its_guards() -> None:
    initial = initial_output_bytes(TOTAL)
    assert len(initial) == G + TOTAL + G and G % 16 == 0
    assert initial[G : G + 8] == CANARY * 2 and initial[-4:] == CANARY  # the binding sees the pattern from its start
    assert 0x00 not in CANARY and 0xFF not in CANARY and len(set(CANARY)) == 4
    assert not np.isnan(np.frombuffer(CANARY, np.float32)).any()
    assert not np.isnan(np.frombuffer(CANARY, np.float16)).any()


def test_an_untouched_buffer_and_a_buffer_with_only_its_elements_written_are_clean() -> None:
    assert stray_writes("OutputTensor", initial_output_bytes(TOTAL), SIZES, STRIDES, ELEMENT, TOTAL) == ""
    assert stray_writes("OutputTensor", _written(), SIZES, STRIDES, ELEMENT, TOTAL) == ""
    assert canary_verdict(["", ""]) is None


def test_a_corrupted_guard_byte_is_reported() -> None:
    buffer = _written()
    buffer[G + TOTAL + 5] ^= 0xFF
    message = stray_writes("OutputTensor", buffer, SIZES, STRIDES, ELEMENT, TOTAL)
    assert message == (
        "OutputTensor: the operator wrote 1 of the 64 guard byte(s) past its end; first at byte offset(s) "
        f"25 (0x{CANARY[1] ^ 0xFF:02x}, was 0x{CANARY[1]:02x})"
    )


def test_a_corrupted_byte_before_the_start_is_reported() -> None:
    buffer = _written()
    buffer[G - 2] ^= 0xFF  # two bytes before the binding's first
    message = stray_writes("OutputTensor", buffer, SIZES, STRIDES, ELEMENT, TOTAL)
    assert message == (
        "OutputTensor: the operator wrote 1 of the 64 guard byte(s) before its start; first at byte offset(s) "
        f"-2 (0x{CANARY[2] ^ 0xFF:02x}, was 0x{CANARY[2]:02x})"
    )


def test_a_corrupted_padding_element_and_the_tail_are_reported() -> None:
    buffer = _written()
    buffer[G + 6 : G + 8] = (0, 0)  # the padding element after row 0
    buffer[G + 16] = 7  # after the last element, inside TotalTensorSizeInBytes
    message = stray_writes("OutputTensor", buffer, SIZES, STRIDES, ELEMENT, TOTAL)
    assert message.startswith(
        "OutputTensor: the operator wrote 3 byte(s) no element addresses in its 20-byte buffer; first at byte "
        "offset(s) 6 (0x00, was 0x5a), 7 (0x00, was 0xe7), 16 (0x07, was 0xa5)"
    )
    verdict = canary_verdict([message, ""])
    assert verdict is not None
    assert (verdict.status, verdict.failure_kind, verdict.message) == (Status.FAIL, OUT_OF_BOUNDS_WRITE, message)


def test_a_read_back_of_the_wrong_length_is_said_so() -> None:
    short = initial_output_bytes(TOTAL)[:-1]
    assert (
        stray_writes("X", short, SIZES, STRIDES, ELEMENT, TOTAL)
        == "X: read back 147 bytes, the buffer and its guards hold 148"
    )

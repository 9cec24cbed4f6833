"""The canary check of an output buffer: bytes no element owns (padding, past the minimum size, the guard) that
changed are an out_of_bounds_write; the elements themselves may change freely."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest

from conformance.compare.canary import (
    CANARY,
    GUARD_BYTES,
    canary_verdict,
    initial_output_bytes,
    stray_writes,
)
from conformance.model import OUT_OF_BOUNDS_WRITE, Status
from reference.layout import addressed_bytes, read_strided, write_strided

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


# --- the addressed bytes against a brute force ---------------------------------------------------------------------
# Random layouts, each element's offset found by walking its indices one by one in Python (no NumPy strides): packed,
# padded, permuted, zero strides (broadcast) and interleaved strides that put several elements at one offset, in
# elements of 1, 2 and 4 bytes, in buffers of DMLCalcBufferTensorSize's minimum and larger.


def _random_layout(rng: np.random.Generator) -> tuple[tuple[int, ...], tuple[int, ...] | None, int, int]:
    """(sizes, strides, element size, TotalTensorSizeInBytes) of a random valid layout."""
    rank = int(rng.integers(1, 5))
    sizes = tuple(int(size) for size in rng.integers(1, 5, rank))
    kind = int(rng.integers(4))
    if kind == 0:
        strides = None
    elif kind == 1:  # small strides: collisions (aliasing), zero strides and interleaving are common
        strides = tuple(int(stride) for stride in rng.integers(0, 4, rank))
    elif kind == 2:  # permuted and padded: each dimension past the ones below it, in a random order
        strides_list, step = [0] * rank, 1
        for axis in rng.permutation(rank):
            strides_list[axis] = step
            step *= sizes[axis] + int(rng.integers(0, 3))
        strides = tuple(strides_list)
    else:  # anything up to a dozen elements a step
        strides = tuple(int(stride) for stride in rng.integers(0, 13, rank))
    element = int(rng.choice([1, 2, 4]))
    last = sum((size - 1) * stride for size, stride in zip(sizes, strides or _packed(sizes), strict=True))
    minimum = -(-(last + 1) * element // 4) * 4
    return sizes, strides, element, minimum + 4 * int(rng.integers(0, 4))


def _packed(sizes: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(int(np.prod(sizes[axis + 1 :], dtype=np.int64)) for axis in range(len(sizes)))


def _brute_offsets(sizes: tuple[int, ...], strides: tuple[int, ...] | None) -> list[int]:
    """Each element's offset in logical (row-major) order, one index at a time."""
    steps = strides or _packed(sizes)
    return [sum(i * s for i, s in zip(index, steps, strict=True)) for index in itertools.product(*map(range, sizes))]


LAYOUTS = [_random_layout(np.random.default_rng(seed)) for seed in range(400)]


def test_the_random_layouts_include_every_kind_the_mask_must_handle() -> None:
    """The sample is not all packed: zero strides, aliasing without a zero stride, padding and larger buffers."""
    aliasing = [len(set(o)) < len(o) for o in (_brute_offsets(s, st) for s, st, _, _ in LAYOUTS)]
    assert any(st is not None and 0 in st and max(s) > 1 for s, st, _, _ in LAYOUTS)
    assert any(a and st is not None and 0 not in st for a, (_, st, _, _) in zip(aliasing, LAYOUTS, strict=True))
    assert any(total > (max(_brute_offsets(s, st)) + 1) * e for s, st, e, total in LAYOUTS)
    assert {e for _, _, e, _ in LAYOUTS} == {1, 2, 4}


@pytest.mark.parametrize("layout", LAYOUTS[:200])
def test_addressed_bytes_are_those_a_brute_force_finds(layout: tuple[tuple[int, ...], Any, int, int]) -> None:
    sizes, strides, element, total = layout
    owned = np.zeros(total, dtype=bool)
    for offset in _brute_offsets(sizes, strides):
        owned[offset * element : (offset + 1) * element] = True
    assert addressed_bytes(sizes, strides, element, total).tolist() == owned.tolist()


@pytest.mark.parametrize("layout", LAYOUTS[200:])
def test_stray_writes_report_exactly_the_changed_bytes_no_element_owns(
    layout: tuple[tuple[int, ...], Any, int, int],
) -> None:
    """Random bytes of the buffer and its guards changed: the message counts and lists those that no element owns
    (by the brute force), wherever they are, and is empty where every change is inside an element."""
    sizes, strides, element, total = layout
    rng = np.random.default_rng(total * 7919 + len(sizes))
    owned = set()
    for offset in _brute_offsets(sizes, strides):
        owned.update(range(G + offset * element, G + (offset + 1) * element))
    buffer = np.frombuffer(initial_output_bytes(total), dtype=np.uint8).copy()
    hit = sorted({int(at) for at in rng.integers(0, buffer.size, int(rng.integers(1, 6)))})
    for at in hit:
        buffer[at] ^= int(rng.integers(1, 256))
    stray = [at for at in hit if at not in owned]
    message = stray_writes("Y", buffer, sizes, strides, element, total)
    if not stray:
        assert message == ""
        return
    counts = (
        sum(at < G for at in stray),
        sum(G <= at < G + total for at in stray),
        sum(at >= G + total for at in stray),
    )
    said = (
        f"{counts[0]} of the {G} guard byte(s) before its start",
        f"{counts[1]} byte(s) no element addresses in its {total}-byte buffer",
        f"{counts[2]} of the {G} guard byte(s) past its end",
    )
    parts = " and ".join(text for count, text in zip(counts, said, strict=True) if count)
    listed = ", ".join(f"{at - G} (0x{buffer[at]:02x}, was 0x{CANARY[at % 4]:02x})" for at in stray)
    assert message == f"Y: the operator wrote {parts}; first at byte offset(s) {listed}"


@pytest.mark.parametrize("layout", LAYOUTS[::4])
def test_write_and_read_strided_agree_with_a_brute_force(layout: tuple[tuple[int, ...], Any, int, int]) -> None:
    """Writing puts each offset's first element in logical order there and leaves every other byte; reading gives
    each element the value at its offset."""
    sizes, strides, element, total = layout
    dtype = {1: np.uint8, 2: np.uint16, 4: np.uint32}[element]
    values = np.arange(1, int(np.prod(sizes)) + 1, dtype=dtype).reshape(sizes)
    buffer = np.full(total, 0xAB, dtype=np.uint8)
    expected = buffer.copy()
    held: dict[int, int] = {}
    for value, offset in zip(values.ravel().tolist(), _brute_offsets(sizes, strides), strict=True):
        held.setdefault(offset, value)
    for offset, value in held.items():
        expected[offset * element : (offset + 1) * element] = np.frombuffer(np.array(value, dtype).tobytes(), np.uint8)
    assert write_strided(buffer, values, strides).tolist() == expected.tolist()
    read = read_strided(buffer, dtype, sizes, strides)
    assert read.ravel().tolist() == [held[offset] for offset in _brute_offsets(sizes, strides)]

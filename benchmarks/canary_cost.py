"""Benchmark: the canary check of an output buffer (``compare/canary.py``'s ``stray_writes``) against reading the
output once through its strides (``cases/layouts.py``'s ``Layout.read``, what every dmlop verdict does anyway), on
packed, padded and transposed outputs of 2^20 to 2^27 elements. Issue 35's target: the check costs about as much as
the read (before, ``np.unique`` over every element offset made most of the 282 s spent judging a 2^27-element UINT8
SLICE1 on dmlop). ``--old`` adds that former mask (``np.unique`` of the offsets), at up to 2^22 elements. Prints the
median of each and their ratios.

    python benchmarks/canary_cost.py                  # 5 runs, 2^20 2^24 2^27
    python benchmarks/canary_cost.py --log2 20 22 --old
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from functools import partial

import numpy as np
from tabulate import tabulate

from conformance.cases.layouts import Layout
from conformance.compare.canary import GUARD_BYTES, initial_output_bytes, stray_writes
from conformance.model import DataType
from reference.layout import addressed_view, element_offsets

OLD_LIMIT = 22  # log2 of the largest output the former mask is timed on


def layouts(log2: int) -> list[tuple[str, Layout]]:
    """Outputs of 2^log2 elements: packed UINT8, FLOAT32 rows padded by a quarter, INT16 stored transposed."""
    rows = 1 << (log2 // 2)
    cols = (1 << log2) // rows
    return [
        ("packed UINT8", Layout("OutputTensor", (1, 1, rows, cols), DataType.UINT8)),
        ("padded FLOAT32", Layout("OutputTensor", (rows, cols), DataType.FLOAT32, (cols + cols // 4, 1))),
        ("transposed INT16", Layout("OutputTensor", (rows, cols), DataType.INT16, (1, rows))),
    ]


def read_back(layout: Layout) -> bytes:
    """The buffer with its guards as an operator that wrote 0x11 to every byte of every element, and nothing else,
    leaves it."""
    buffer = np.frombuffer(initial_output_bytes(layout.buffer_bytes), dtype=np.uint8).copy()
    binding = buffer[GUARD_BYTES : GUARD_BYTES + layout.buffer_bytes]
    addressed_view(binding, layout.sizes, layout.strides, layout.element_size)[...] = 0x11
    return buffer.tobytes()


def old_mask(layout: Layout) -> np.ndarray:
    """The mask as it was before issue 35: every element offset listed, made unique, then each byte set."""
    mask = np.zeros(layout.buffer_bytes, dtype=bool)
    starts = np.unique(element_offsets(layout.sizes, layout.strides).ravel()) * layout.element_size
    for byte in range(layout.element_size):
        mask[starts + byte] = True
    return mask


def median_seconds(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, nargs="+", default=[20, 24, 27], help="output sizes, log2 of elements")
    parser.add_argument("--runs", type=int, default=5, help="runs of each (default 5; the median is printed)")
    parser.add_argument("--old", action="store_true", help=f"time the former mask too (up to 2^{OLD_LIMIT})")
    args = parser.parse_args()
    rows = []
    for log2 in args.log2:
        for name, layout in layouts(log2):
            raw = read_back(layout)
            binding = raw[GUARD_BYTES : GUARD_BYTES + layout.buffer_bytes]
            shape = (layout.sizes, layout.strides, layout.element_size, layout.buffer_bytes)
            check = partial(stray_writes, "OutputTensor", raw, *shape)
            assert check() == ""  # the operator wrote its elements only
            read_s = median_seconds(partial(layout.read, binding), args.runs)
            check_s = median_seconds(check, args.runs)
            old = median_seconds(partial(old_mask, layout), 1) if args.old and log2 <= OLD_LIMIT else None
            former = "" if old is None else f"{old:.3f} ({old / check_s:.0f}x)"
            rows.append([f"2^{log2}", name, f"{read_s:.4f}", f"{check_s:.4f}", f"{check_s / read_s:.2f}", former])
    headers = ["elements", "output", "read s", "canary check s", "check / read", "former mask s (x the check)"]
    print(tabulate(rows, headers=headers))


if __name__ == "__main__":
    main()

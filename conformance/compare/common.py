"""Shared pieces of ``compare``: the verdict, bit-level equality, ULP distance, and the message's building blocks."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from tabulate import tabulate

from conformance.model import Status

Metrics = dict[str, float | int | str]
Details = dict[str, Any]
BoolArray = npt.NDArray[np.bool_]
Int64Array = npt.NDArray[np.int64]
TABLE_ROWS = 10
MAX_POSITIONS = 1024  # mismatch positions kept for a report's map: enough to show the pattern, small in JSON


@dataclass(frozen=True)
class Verdict:
    """One (case, EP) comparison: ``failure_kind`` and ``message`` say what differs (None and "" on PASS)."""

    status: Status
    failure_kind: str | None
    message: str
    metrics: Mapping[str, float | int | str] = field(default_factory=dict)
    details: Mapping[str, Any] = field(default_factory=dict)  # what a report draws: see mismatch_details


def passed(metrics: Metrics) -> Verdict:
    return Verdict(Status.PASS, None, "", metrics)


def json_float(value: float) -> float | str:
    """A metric value: finite floats as such, NaN and infinities as "nan", "inf", "-inf"."""
    value = float(value)
    return value if math.isfinite(value) else str(value)


def format_value(value: object) -> str:
    """Text for one element: float32 at its shortest round-trip precision ("0.1"), float16 exactly
    ("4.01171875", not the round-trip "4.01" that hides how far apart two float16 values are), integers as such."""
    if isinstance(value, np.float16):
        return repr(float(value))
    if isinstance(value, np.floating):
        if np.isnan(value) or np.isinf(value):
            return str(float(value))
        magnitude = abs(float(value))
        if magnitude != 0 and not 1e-4 <= magnitude < 1e16:
            return np.format_float_scientific(value, unique=True, trim="0")
        return np.format_float_positional(value, unique=True, trim="0")
    if isinstance(value, np.integer | int):
        return str(int(value))
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_list(values: np.ndarray, limit: int = 16) -> str:
    items = [format_value(v) for v in values[:limit]]
    more = f", ... ({values.size - limit} more)" if values.size > limit else ""
    return "[" + ", ".join(items) + more + "]"


def format_coords(coords: Sequence[int | str]) -> str:
    return "[" + ", ".join(str(c) for c in coords) + "]"


def first_mismatch(mismatched: BoolArray) -> tuple[int, ...]:
    """The coordinates of the first mismatch in row-major order (``mismatched`` has one)."""
    return tuple(int(c) for c in np.argwhere(mismatched)[0])


def headline(count: int, total: int, what: str, at: Sequence[int], expected: str, actual: str) -> str:
    """A failure's first line, all a console, summary.md, report.html's rows and junit's message show: how many
    elements failed of how many, and the first of them, "2/12 elements differ: first at [0,0,1,2]: expected 3,
    got 2". Coordinates are written without spaces: the line must fit a table cell."""
    where = "[" + ",".join(str(c) for c in at) + "]"
    return f"{count}/{total} elements {what}: first at {where}: expected {expected}, got {actual}"


def same_bits(actual: np.ndarray, expected: np.ndarray) -> BoolArray:
    """Elementwise identity: the same bit pattern, except that any NaN matches any NaN (integers: equality)."""
    if expected.dtype.kind != "f":
        return np.asarray(actual == expected)
    unsigned = np.dtype(f"u{expected.dtype.itemsize}")
    identical = actual.view(unsigned) == expected.view(unsigned)
    return np.asarray(identical | (np.isnan(actual) & np.isnan(expected)))


def ordered_ints(values: np.ndarray) -> Int64Array:
    """Float bits mapped to integers that count ULPs: +0 and -0 both map to 0, -x maps to minus x's integer."""
    bits = values.view(np.dtype(f"u{values.dtype.itemsize}")).astype(np.int64)
    sign_bit = 1 << (values.dtype.itemsize * 8 - 1)
    magnitude = bits & (sign_bit - 1)
    return np.where(bits & sign_bit, -magnitude, magnitude)


def ulp_distance(actual: np.ndarray, expected: np.ndarray) -> Int64Array:
    """Number of representable values of the (shared) float dtype between actual and expected, NaN excluded."""
    return np.asarray(np.abs(ordered_ints(actual) - ordered_ints(expected)), dtype=np.int64)


def abs_error(actual: np.ndarray, expected: np.ndarray) -> npt.NDArray[np.float64]:
    with np.errstate(invalid="ignore", over="ignore"):
        return np.asarray(np.abs(actual.astype(np.float64) - expected.astype(np.float64)))


def structure_problem(name: str, expected: np.ndarray, actual: Mapping[str, np.ndarray], index: bool) -> Verdict | None:
    """A FAIL verdict when the output ``name`` is missing or has the wrong shape or dtype, else None.

    ``index``: an index output, where any integer dtype is accepted (ONNX returns int64; DML's is uint32).
    """
    if name not in actual:
        return Verdict(Status.FAIL, "missing_output", f"{name}: missing from the EP's outputs", {})
    got = actual[name]
    lines = header_lines(expected, got)
    if got.shape != expected.shape:
        metrics: Metrics = {"expected_shape": str(expected.shape), "actual_shape": str(got.shape)}
        first = f"{name}: shape differs: expected {expected.shape}, got {got.shape}"
        return Verdict(Status.FAIL, "shape", "\n".join([first, *lines]), metrics)
    dtype_ok = got.dtype.kind in "iu" if index else got.dtype == expected.dtype
    if not dtype_ok:
        metrics = {"expected_dtype": str(expected.dtype), "actual_dtype": str(got.dtype)}
        first = f"{name}: dtype differs: expected {expected.dtype}, got {got.dtype}"
        return Verdict(Status.FAIL, "dtype", "\n".join([first, *lines]), metrics)
    return None


def header_lines(expected: np.ndarray, actual: np.ndarray) -> list[str]:
    return [
        f"  shape: expected {expected.shape}, actual {actual.shape}",
        f"  dtype: expected {expected.dtype}, actual {actual.dtype}",
    ]


def count_line(what: str, count: int, total: int) -> str:
    share = 100.0 * count / total if total else 0.0
    return f"  {what}: {count} / {total} ({share:.3g}%)"


def indent_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    text = tabulate(rows, headers=list(headers), tablefmt="simple", disable_numparse=True)
    return ["    " + line for line in text.splitlines()]


def elementwise_rows(
    expected: np.ndarray, actual: np.ndarray, mismatched: BoolArray, with_ulp: bool
) -> tuple[list[str], list[list[str]]]:
    """The table of the first mismatches in row-major order: coordinates, expected, actual, abs error (ULP error)."""
    headers = ["index", "expected", "actual", "abs error"] + (["ULP error"] if with_ulp else [])
    rows: list[list[str]] = []
    for coords in np.argwhere(mismatched)[:TABLE_ROWS]:
        at = tuple(int(c) for c in coords)
        e, a = expected[at], actual[at]
        row = [str(at), format_value(e), format_value(a), _error_text(e, a)]
        if with_ulp:
            finite = bool(np.isfinite(e) and np.isfinite(a))
            row.append(str(int(ulp_distance(np.asarray(a), np.asarray(e)))) if finite else "-")
        rows.append(row)
    return headers, rows


def _error_text(expected: np.generic, actual: np.generic) -> str:
    if isinstance(expected, np.floating):
        return format_value(abs_error(np.asarray(actual), np.asarray(expected)).item())
    return str(abs(int(actual) - int(expected)))


def ulp_histogram(ulps: Int64Array) -> list[list[int | str]]:
    """[label, count, lowest ULP] per power-of-two bucket of ULP errors ("0", "1", "2-3", ..., "512-1023", then
    "2^10+" and so on): the shape of an error distribution, which a report draws as a histogram."""
    values = ulps.reshape(-1).astype(np.int64)
    # The bucket of v > 0 is 2^floor(log2 v), computed exactly from the bit length (frexp's exponent is it).
    lows = np.where(values > 0, np.left_shift(1, np.frexp(np.maximum(values, 1).astype(np.float64))[1] - 1), 0)
    buckets, counts = np.unique(lows, return_counts=True)
    return [[_bucket_label(int(low)), int(count), int(low)] for low, count in zip(buckets, counts, strict=True)]


def _bucket_label(low: int) -> str:
    if low <= 1:
        return str(low)
    return f"{low}-{2 * low - 1}" if low < 1024 else f"2^{low.bit_length() - 1}+"


def mismatch_details(
    tensor: str,
    mismatched: BoolArray,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    ulps: Int64Array | None = None,
) -> Details:
    """The data a report draws for one failing tensor: its shape, where the mismatches are (flat row-major
    indices, the first MAX_POSITIONS), the table of first mismatches, and the ULP errors' histogram."""
    flat = np.flatnonzero(mismatched.reshape(-1))
    details: Details = {
        "tensor": tensor,
        "shape": [int(s) for s in mismatched.shape],
        "positions": [int(i) for i in flat[:MAX_POSITIONS]],
        "mismatches": int(flat.size),
        "table": {"headers": list(headers), "rows": [list(row) for row in rows]},
    }
    if ulps is not None and ulps.size:
        details["ulp_histogram"] = ulp_histogram(ulps)
    return details

"""A case's own ``expected:`` outputs (a spec example's, a finding's) against the oracle's, by the rule the EP's
outputs get: TOP_K1's and SLICE1's values bit for bit (``same_bits``: -0 differs from +0, any NaN matches any NaN),
integers (TOP_K1's indices) exactly, MVN1's values within the case's MVN1 tolerance (``beyond_tolerance``, with the
case's ``tolerance:`` if it gives one). A golden written in decimal means the nearest value of the output's type.

A disagreement is a harness or case-file bug, never the EP's fault: the runner reports it as ERROR, first with a
line that names the ``expected:`` field's file:line:col, the first element that differs and both values.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from conformance.compare.common import abs_error, format_value, same_bits, ulp_distance
from conformance.compare.mvn1 import beyond_tolerance, case_tolerance
from conformance.model import Case, Mvn1Desc

_BLAME = "the case file or the harness is wrong"


def golden_differences(
    case: Case, inputs: Mapping[str, np.ndarray], oracle: Mapping[str, np.ndarray]
) -> dict[str, str]:
    """Output name -> how the case's ``expected[name]`` disagrees with the oracle's output; empty when every golden
    agrees. ``inputs``: the case's inputs (MVN1's tolerance depends on them).

    Each is two lines: the first short enough for a console's one line (where the ``expected:`` field is written,
    the first element that differs, both values), the second how many differ and by which rule."""
    lines = {name: _difference(case, inputs, name, oracle[name]) for name in case.expected}
    return {name: line for name, line in lines.items() if line is not None}


def _difference(case: Case, inputs: Mapping[str, np.ndarray], name: str, got: np.ndarray) -> str | None:
    """How ``expected[name]`` disagrees with the oracle's ``got`` (golden_differences), or None. The golden is read
    into ``got``'s type first: the EP's output is compared in that type too."""
    where = f"{case.pos(f'expected.{name}')}: expected.{name}"
    values = case.expected[name]
    if len(values) != got.size:
        return f"{where} gives {len(values)} values, the oracle's output has {got.size} (shape {got.shape})\n  {_BLAME}"
    want = np.asarray(values, dtype=np.float64).reshape(got.shape).astype(got.dtype)
    mvn = isinstance(case.descriptor, Mvn1Desc)
    if mvn:
        max_ulp, atol, _ = case_tolerance(case, inputs)
        differs = beyond_tolerance(got, want, max_ulp, atol)
    else:
        differs = ~same_bits(want, got)
    if not differs.any():
        return None
    at = tuple(int(i) for i in np.argwhere(differs)[0])
    e, o = want[at], got[at]
    count = f"{int(np.count_nonzero(differs))} of {got.size} elements differ"
    if mvn:
        first = f"{format_value(e)}, the oracle gives {format_value(o)}{_distance(e, o)}"
        rule = f"{count} beyond MVN1's tolerance (|difference| <= {atol:.3g} or <= {max_ulp} ULP)"
    elif got.dtype.kind == "f":
        first = f"{_with_bits(e)}, the oracle gives {_with_bits(o)}"
        rule = f"{count} ({got.dtype}, compared bit for bit: -0 differs from +0, any NaN matches any NaN)"
    else:
        first = f"{format_value(e)}, the oracle gives {format_value(o)}"
        rule = f"{count} ({got.dtype}, compared exactly)"
    return f"{where}[{', '.join(map(str, at))}] = {first}\n  {rule}: {_BLAME}"


def _with_bits(value: np.generic) -> str:
    """A float as the case would write it, with its bits, which tell -0 from +0 (and one float16 from its neighbour,
    where the decimal text looks alike)."""
    width = value.dtype.itemsize
    bits = int(np.asarray(value).view(np.dtype(f"u{width}")))
    return f"{format_value(value)} (0x{bits:0{2 * width}x})"


def _distance(want: np.generic, got: np.generic) -> str:
    """How far apart two finite floats are, in value and in ULPs of their type; nothing where either is not finite."""
    if not bool(np.isfinite(np.asarray([want, got])).all()):
        return ""
    error = float(abs_error(np.asarray(got), np.asarray(want)))
    ulps = int(ulp_distance(np.asarray(got), np.asarray(want)))
    return f" ({error:.2g} apart, {ulps} ULP)"

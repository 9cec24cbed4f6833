"""A case's own ``expected:`` outputs (a spec example's, a finding's) against the oracle's, by the rule the EP's
outputs get: TOP_K1's and SLICE1's values bit for bit (``same_bits``: -0 differs from +0, any NaN matches any NaN),
integers (TOP_K1's indices) exactly, MVN1's values within the case's MVN1 tolerance (``beyond_tolerance``, with the
case's ``tolerance:`` if it gives one). A golden written in decimal means the nearest value of the output's type.

A disagreement is a harness or case-file bug, never the EP's fault: the runner reports it as ERROR, first with a
line that names the ``expected:`` field's file:line:col, the first element that differs and both values;
``dmlconf validate`` reports it as a problem at that position, one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from conformance.compare.common import abs_error, format_value, same_bits, ulp_distance
from conformance.compare.mvn1 import beyond_tolerance, case_tolerance
from conformance.model import Case, Mvn1Desc, SourcePos
from conformance.problems import Problem

_BLAME = "the case file or the harness is wrong"


@dataclass(frozen=True)
class GoldenDifference:
    """How one ``expected:`` output disagrees with the oracle's: where it is written, the first element that
    differs with both values (``first``, as it follows the field's name), and how many differ by which rule
    (``rule``; empty where the golden has another number of values)."""

    pos: SourcePos
    name: str
    first: str
    rule: str

    @property
    def field(self) -> str:
        return f"expected.{self.name}"

    def message(self) -> str:
        """The runner's ERROR message: two lines, the first short enough for a console's one line."""
        return f"{self.pos}: {self.field}{self.first}\n  {f'{self.rule}: ' if self.rule else ''}{_BLAME}"

    def problem(self) -> Problem:
        """``dmlconf validate``'s one line: ``file:line:col: expected.NAME: [i, j] = ..., the oracle gives ...``."""
        what = self.first.removeprefix(" ")  # "gives 3 values, ..." or "[0, 1] = 2.0, the oracle gives ..."
        return Problem(self.pos, self.field, f"{what}; {self.rule}" if self.rule else what)


def golden_differences(
    case: Case, inputs: Mapping[str, np.ndarray], oracle: Mapping[str, np.ndarray]
) -> dict[str, str]:
    """Output name -> how the case's ``expected[name]`` disagrees with the oracle's output (GoldenDifference's
    message); empty when every golden agrees. ``inputs``: the case's inputs (MVN1's tolerance depends on them)."""
    return {d.name: d.message() for d in golden_mismatches(case, inputs, oracle)}


def golden_mismatches(
    case: Case, inputs: Mapping[str, np.ndarray], oracle: Mapping[str, np.ndarray]
) -> list[GoldenDifference]:
    """Each ``expected:`` output that disagrees with the oracle's, in the case's order."""
    found = (_difference(case, inputs, name, oracle[name]) for name in case.expected)
    return [d for d in found if d is not None]


def _difference(case: Case, inputs: Mapping[str, np.ndarray], name: str, got: np.ndarray) -> GoldenDifference | None:
    """How ``expected[name]`` disagrees with the oracle's ``got``, or None. The golden is read into ``got``'s type
    first: the EP's output is compared in that type too."""
    pos = case.pos(f"expected.{name}")
    values = case.expected[name]
    if len(values) != got.size:
        count = f" gives {len(values)} values, the oracle's output has {got.size} (shape {got.shape})"
        return GoldenDifference(pos, name, count, "")
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
    return GoldenDifference(pos, name, f"[{', '.join(map(str, at))}] = {first}", rule)


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

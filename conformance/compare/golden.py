"""A case's own ``expected:`` outputs (a spec example's, a finding's) against the oracle's, by the rule the EP's
outputs get: each operator's golden rule (its ``CompareEntry.golden``, in each operator's module: bit for bit and
exactly, or within a tolerance). A golden written in decimal means the nearest value of the output's type.

A disagreement is a harness or case-file bug, never the EP's fault: the runner reports it as ERROR, first with a
line that names the ``expected:`` field's file:line:col, the first element that differs and both values;
``dmlconf validate`` reports it as a problem at that position, one line.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from conformance.compare.operators import OPERATORS
from conformance.model import Case, SourcePos
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
    message); empty when every golden agrees. ``inputs``: the case's inputs (a tolerance may depend on them)."""
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
    ruling = OPERATORS[case.operator].golden(case, inputs, want, got)
    if not ruling.differs.any():
        return None
    at = tuple(int(i) for i in np.argwhere(ruling.differs)[0])
    count = f"{int(np.count_nonzero(ruling.differs))} of {got.size} elements differ"
    first = ruling.first(want[at], got[at])
    return GoldenDifference(pos, name, f"[{', '.join(map(str, at))}] = {first}", f"{count} {ruling.rule}")

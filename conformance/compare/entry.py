"""What the compare stage knows of one operator: ``CompareEntry``, the entry each operator's module exposes (and
compare/operators.py tables), its verdict rule and its golden rule; ``GoldenRuling``, what a golden rule says of one
``expected:`` output; and ``golden_bit_for_bit``, the golden rule of an operator that creates no values."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from conformance.compare.common import BoolArray, Verdict, format_value, same_bits
from conformance.model import Case, Operator

Tensors = Mapping[str, np.ndarray]  # DML tensor name (InputTensor, OutputTensor, ...) -> its values
# (case, inputs, expected: the oracle's outputs, actual: the EP's) -> the verdict on the EP's outputs
VerdictRule = Callable[[Case, Tensors, Tensors, Tensors], Verdict]


@dataclass(frozen=True)
class GoldenRuling:
    """An operator's rule applied to one ``expected:`` output (read into the type of the oracle's output):
    ``differs``, which elements the rule tells apart from the oracle's; ``first``, how one differing element reads
    (golden, oracle's -> "2.0, the oracle gives 3.0 ..."); ``rule``, the rule's words after the count of differing
    elements."""

    differs: BoolArray
    first: Callable[[np.generic, np.generic], str]
    rule: str


# (case, inputs, golden, oracle's output) -> the ruling; the inputs are there for a rule that depends on them
GoldenRule = Callable[[Case, Tensors, np.ndarray, np.ndarray], GoldenRuling]


@dataclass(frozen=True)
class CompareEntry:
    """How the EP's outputs of ``operator`` are judged (``verdict``) and how a case's own ``expected:`` outputs are
    checked against the oracle's (``golden``): by the same rule, so that a golden the EP would pass agrees."""

    operator: Operator
    verdict: VerdictRule
    golden: GoldenRule


def golden_bit_for_bit(case: Case, inputs: Tensors, want: np.ndarray, got: np.ndarray) -> GoldenRuling:
    """The rule of an operator that copies or selects: floats bit for bit (-0 differs from +0, any NaN matches any
    NaN), integers exactly. ``want``: the golden; ``got``: the oracle's output."""
    differs = ~same_bits(want, got)
    if got.dtype.kind == "f":
        rule = f"({got.dtype}, compared bit for bit: -0 differs from +0, any NaN matches any NaN)"
        return GoldenRuling(differs, _both_with_bits, rule)
    return GoldenRuling(differs, both_values, f"({got.dtype}, compared exactly)")


def both_values(golden: np.generic, oracle: np.generic) -> str:
    """A differing element as a golden rule's ``first`` reads it: both values, as the case would write them."""
    return f"{format_value(golden)}, the oracle gives {format_value(oracle)}"


def _both_with_bits(golden: np.generic, oracle: np.generic) -> str:
    return f"{_with_bits(golden)}, the oracle gives {_with_bits(oracle)}"


def _with_bits(value: np.generic) -> str:
    """A float as the case would write it, with its bits, which tell -0 from +0 (and one float16 from its neighbour,
    where the decimal text looks alike)."""
    width = value.dtype.itemsize
    bits = int(np.asarray(value).view(np.dtype(f"u{width}")))
    return f"{format_value(value)} (0x{bits:0{2 * width}x})"

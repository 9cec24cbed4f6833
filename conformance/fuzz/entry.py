"""What the fuzz stage knows of one operator: ``FuzzEntry``, the entry each operator's module exposes (and
fuzz/operators.py tables)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from hypothesis import strategies as st

from conformance.fuzz.strategies import CaseDict
from conformance.model import FeatureLevel, Operator


@dataclass(frozen=True)
class FuzzEntry:
    """``draw_case``: the Hypothesis strategy of the operator's valid case entries, as a case file writes them (its
    argument: whether to draw NaN and infinities too); ``draw_level``: the feature level its candidates are drawn and
    run at, one at which every draw is valid (a finding is written at the lowest level that admits it, level.py)."""

    operator: Operator
    draw_case: Callable[[bool], st.SearchStrategy[CaseDict]]
    draw_level: FeatureLevel

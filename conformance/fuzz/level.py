"""The feature level a finding is tagged with: the lowest at which the validator admits its case.

The fuzzer draws each operator's candidates at its ``FuzzEntry.draw_level`` (where every draw of its strategy is
valid: each operator's module says why), but a minimal case usually needs less, and a case file's ``feature_level``
decides where it runs: a target below it makes the case NOT_SUPPORTED. Tagged with the lowest level that admits it,
a finding runs on every DirectML that can take it. Which feature needs which level is the validator's to say (each
operator's rules are in its module of cases/, which cases/operators.py lists; cases/validate.py applies them),
so it is asked at each level rather than restated here.
"""

from __future__ import annotations

from dataclasses import replace

from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.validate import validate
from conformance.model import FEATURE_LEVELS, Case, FeatureLevel


def lowest_feature_level(case: Case, max_elements: int = DEFAULT_MAX_ELEMENTS) -> FeatureLevel:
    """The lowest of DirectML's feature levels (model.FEATURE_LEVELS, every one a case may name, not only those a
    DirectML release tops out at) at which ``case`` validates; its own level where none below it does."""
    for level in sorted(FEATURE_LEVELS):
        if level >= case.feature_level:
            break
        if not validate(replace(case, feature_level=level), max_elements):
            return level
    return case.feature_level

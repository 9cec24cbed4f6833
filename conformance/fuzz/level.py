"""The feature level a finding is tagged with: the lowest at which the validator admits its case.

The fuzzer draws every candidate at ``strategies.FEATURE_LEVEL`` (where any rank and a broadcast scale or bias are
valid), but a minimal case usually needs less, and a case file's ``feature_level`` decides where it runs: a target
below it makes the case NOT_SUPPORTED. Tagged with the lowest level that admits it, a finding runs on every DirectML
that can take it. Which feature needs which level is the validator's to say (cases/validate.py: each operator from
2_1; TOP_K1 and MEAN_VARIANCE_NORMALIZATION1 of rank other than 4 from 3_1; SLICE1 of rank other than 4 or 5 from
3_0; a scale or bias broadcast along the channel from 4_0), so it is asked at each level rather than restated here.
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

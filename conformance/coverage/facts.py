"""What a case's descriptor and data show, as facets the coverage rules attach to clauses.

A facet is a short phrase ("rank 5 axis 2", "FLOAT16", "long axis (>= 65,536)"). A clause with
required facets is covered only when every one of them was seen in some case; the rules read the
case's real inputs, so a case covers what its data provokes, not what its name claims.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

import numpy as np

from conformance.dtypes import value_range
from conformance.model import DataType, FeatureLevel

Facets = defaultdict[str, set[str]]
DATA_TYPES = tuple(t.value for t in DataType)
FLOAT_TYPES = (DataType.FLOAT32.value, DataType.FLOAT16.value)
ANY = ""  # the facet of a clause that only needs to be exercised
RANKS = tuple(f"rank {r}" for r in range(1, 9))
RANK_AXES = tuple(f"rank {r} axis {a}" for r in range(1, 9) for a in range(r))


def new_facets() -> Facets:
    return defaultdict(set)


def level_at_least(level: FeatureLevel, since: str) -> bool:
    return level >= FeatureLevel.parse(since)


def special_values(x: np.ndarray, data_type: DataType) -> set[str]:
    """NaN, +Inf, -Inf where present, and "min and max of T" when both finite extremes of T occur."""
    seen = set()
    if x.dtype.kind == "f":
        seen |= {"NaN"} if np.isnan(x).any() else set()
        seen |= {"+Inf"} if np.isposinf(x).any() else set()
        seen |= {"-Inf"} if np.isneginf(x).any() else set()
    low, high = value_range(data_type)
    if (x == low).any() and (x == high).any():
        seen.add(f"min and max of {data_type}")
    return seen


def support_facets(facets: Facets, clause: str, data_types: Iterable[str], rank: int | None) -> None:
    """A tensor-support row exercised by these data types (and this DimensionCount, when the row lists several)."""
    facets[clause].update(data_types)
    if rank is not None:
        facets[clause].add(f"rank {rank}")

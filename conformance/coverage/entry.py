"""What the coverage stage knows of one operator: ``CoverageEntry``, the entry each operator's module exposes (and
coverage/operators.py tables)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from conformance.coverage.facts import Facets
from conformance.model import Case, Operator


@dataclass(frozen=True)
class CoverageEntry:
    """``catalogue``: its clause catalogue's file name under ``reference/clauses/``; ``required``: clause name
    (without the operator prefix) -> the facets that must all be seen before the clause counts as covered;
    ``exercised``: clause name -> the facets a valid case shows, read from its descriptor and its real inputs."""

    operator: Operator
    catalogue: str
    required: Mapping[str, frozenset[str]]
    exercised: Callable[[Case, Mapping[str, np.ndarray]], Facets]

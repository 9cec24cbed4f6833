"""Sweeps: a case's ``matrix:`` maps dotted field paths to lists and expands to their product.

``matrix: {InputTensor.DataType: [FLOAT32, FLOAT16], AxisDirection: [DECREASING, INCREASING]}`` on case
``sweep`` gives ``sweep[FLOAT32-DECREASING]``, ``sweep[FLOAT32-INCREASING]``, ... in the order written.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.model import SourcePos
from conformance.problems import Problem


@dataclass(frozen=True)
class Variant:
    """One expansion of a case: its id suffix, its raw fields, and where each field was written."""

    suffix: str
    raw: dict[str, Any]
    positions: dict[str, SourcePos]


def _label(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "x".join(_label(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k}={_label(v)}" for k, v in value.items())
    return str(value)


def _assign(raw: dict[str, Any], dotted: str, value: Any) -> bool:
    """Set ``raw[a][b]... = value`` for "a.b..."; False where a step on the way is not a mapping."""
    *parents, last = dotted.split(".")
    target: Any = raw
    for name in parents:
        target = target.setdefault(name, {}) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            return False
    target[last] = copy.deepcopy(value)
    return True


def expand(raw: dict[str, Any], positions: Mapping[str, SourcePos]) -> tuple[list[Variant], list[Problem]]:
    """Expand ``raw``'s matrix (removing it); a case without one is its own single variant."""
    matrix = raw.get("matrix")
    base = {k: v for k, v in raw.items() if k != "matrix"}
    if "matrix" not in raw:
        return [Variant("", base, dict(positions))], []
    where = positions.get("matrix", positions.get("", SourcePos("?", 1, 1)))
    if not isinstance(matrix, dict) or not matrix:
        return [], [Problem(where, "matrix", "must map field paths to non-empty lists")]
    problems = [
        Problem(positions.get(f"matrix.{k}", where), f"matrix.{k}", "must be a non-empty list")
        for k, v in matrix.items()
        if not isinstance(v, list) or not v
    ]
    if problems:
        return [], problems
    variants = []
    for combo in itertools.product(*matrix.values()):
        variant_raw = copy.deepcopy(base)
        variant_pos = dict(positions)
        for dotted, value in zip(matrix, combo, strict=True):
            if not _assign(variant_raw, dotted, value):
                pos = positions.get(f"matrix.{dotted}", where)
                return [], [Problem(pos, f"matrix.{dotted}", "path does not lead to a field of the case")]
            for key in [k for k in variant_pos if k == dotted or k.startswith(dotted + ".")]:
                del variant_pos[key]
            variant_pos[dotted] = positions.get(f"matrix.{dotted}", where)
        variants.append(Variant("[" + "-".join(_label(v) for v in combo) + "]", variant_raw, variant_pos))
    return variants, []

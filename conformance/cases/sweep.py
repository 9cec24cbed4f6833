"""Sweeps: a case's ``matrix:`` maps dotted field paths to lists and expands to their product.

``matrix: {InputTensor.DataType: [FLOAT32, FLOAT16], AxisDirection: [DECREASING, INCREASING]}`` on case
``sweep`` gives ``sweep[FLOAT32-DECREASING]``, ``sweep[FLOAT32-INCREASING]``, ... in the order written.
The key ``each`` (or ``each_<anything>``, to have several) takes a list of mappings, each setting several
fields together (e.g. a rank's Sizes with one of its axes): ``each: [{InputTensor.Sizes: [5, 3], Axis: 1}]``
labels its variant ``[5x3,1]``.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from conformance.cases.keys import EACH, MATRIX
from conformance.model import SourcePos
from conformance.problems import Problem

# What one file's sweeps may expand to, checked before expanding: a few lists multiply to any number of cases.
MAX_VARIANTS = 20_000  # the case library's largest file has under 1,000 cases
MAX_VARIANT_VALUES = 2_000_000  # YAML values copied into variants: each variant's (its matrix left out), summed
MAX_PATH_PARTS = 8  # a field path is a few names deep (InputTensor.Generator.Low); more would nest without end


@dataclass
class Budget:
    """What is left of one file's MAX_VARIANTS and MAX_VARIANT_VALUES; ``expand`` takes from it."""

    variants: int = MAX_VARIANTS
    values: int = MAX_VARIANT_VALUES


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
    """Set ``raw[a][b]... = value`` for "a.b..."; False where a step on the way is not a mapping, or the path
    leads into the matrix itself."""
    if dotted.count(".") >= MAX_PATH_PARTS or dotted.partition(".")[0] == MATRIX:
        return False
    *parents, last = dotted.split(".")
    target: Any = raw
    for name in parents:
        target = target.setdefault(name, {}) if isinstance(target, dict) else None
        if not isinstance(target, dict):
            return False
    target[last] = _tree_copy(value)
    return True


_IMMUTABLE = (str, int, float, bool, type(None))


def _tree_copy(value: Any) -> Any:
    """A deep copy of a YAML tree (mappings, lists and scalars), as copy.deepcopy gives, at a fraction of its cost:
    each variant of a matrix copies its case, and 20,000 variants spent most of their expansion in deepcopy."""
    if isinstance(value, dict):
        return {key: _tree_copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tree_copy(item) for item in value]
    return value if isinstance(value, _IMMUTABLE) else copy.deepcopy(value)


def expand(
    raw: dict[str, Any], positions: Mapping[str, SourcePos], budget: Budget | None = None
) -> tuple[list[Variant], list[Problem]]:
    """Expand ``raw``'s matrix (removing it); a case without one is its own single variant.

    ``budget``: what the file's earlier sweeps left (a fresh one when None); a matrix over it is refused unexpanded.
    """
    matrix = raw.get(MATRIX)
    base = {k: v for k, v in raw.items() if k != MATRIX}
    if MATRIX not in raw:
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
    for key in filter(_is_each, matrix):
        if not all(isinstance(v, dict) and v for v in matrix[key]):
            return [], [Problem(positions.get(f"matrix.{key}", where), f"matrix.{key}", "must list non-empty mappings")]
    # A variant holds the case without its matrix and one value of each entry: what it costs is linear in the
    # matrix's values (a matrix of N seeds is N variants of a few values each, not N variants of N values).
    per_variant = _values(base) + sum(max(_values(v) for v in values) for values in matrix.values())
    over = _over_budget(math.prod(len(v) for v in matrix.values()), per_variant, budget or Budget())
    if over is not None:
        return [], [Problem(where, "matrix", over)]
    variants = []
    # A variant's positions: the case's, and each matrix entry's own (where a variant's field points); not those of
    # every value the matrix lists, which each variant would copy.
    entries = {f"{MATRIX}.{key}" for key in matrix}
    case_positions = {k: v for k, v in positions.items() if not _is_under(k, MATRIX) or k in entries or k == MATRIX}
    under = _Under(case_positions)
    for combo in itertools.product(*matrix.values()):
        variant_raw = _tree_copy(base)
        variant_pos = dict(case_positions)
        applied: list[str] = []
        for key, value in zip(matrix, combo, strict=True):
            for dotted, field_value in _settings(key, value):
                problem = _apply(variant_raw, variant_pos, under, applied, where, dotted, field_value, key)
                if problem is not None:
                    return [], [problem]
        labels = [_entry_label(key, value) for key, value in zip(matrix, combo, strict=True)]
        variants.append(Variant("[" + "-".join(labels) + "]", variant_raw, variant_pos))
    return variants, []


def _values(value: Any) -> int:
    """How many YAML values ``value`` holds, itself included."""
    if isinstance(value, dict):
        return 1 + sum(_values(v) for v in value.values())
    return 1 + sum(_values(v) for v in value) if isinstance(value, list) else 1


def _over_budget(count: int, values: int, budget: Budget) -> str | None:
    """Why ``count`` variants of a case of ``values`` values are too many for ``budget``, else None (taken)."""
    if count > budget.variants:
        return f"expands to {count} cases, over the limit of {MAX_VARIANTS} per file"
    if count * values > budget.values:
        return f"expands to {count} cases of {values} values each, over the limit of {MAX_VARIANT_VALUES} per file"
    budget.variants -= count
    budget.values -= count * values
    return None


def _is_each(key: str) -> bool:
    return key == EACH or key.startswith(EACH + "_")


def _entry_label(key: str, value: Any) -> str:
    return ",".join(_label(v) for v in value.values()) if _is_each(key) else _label(value)


def _settings(key: str, value: Any) -> list[tuple[str, Any]]:
    """The (field path, value) pairs one matrix entry sets."""
    return list(value.items()) if _is_each(key) else [(key, value)]


class _Under:
    """The case's positions under each field path (the path itself and every key below it), found once per path
    for all of a matrix's variants: a sweep of hundreds of variants would otherwise scan every position again for
    each field it sets."""

    def __init__(self, positions: Mapping[str, SourcePos]) -> None:
        self.positions = positions
        self._found: dict[str, list[str]] = {}

    def keys(self, dotted: str) -> list[str]:
        found = self._found.get(dotted)
        if found is None:
            found = self._found[dotted] = [k for k in self.positions if _is_under(k, dotted)]
        return found


def _is_under(key: str, dotted: str) -> bool:
    return key == dotted or key.startswith(dotted + ".")


def _apply(
    raw: dict[str, Any],
    variant_pos: dict[str, SourcePos],
    under: _Under,
    applied: list[str],
    where: SourcePos,
    dotted: str,
    value: Any,
    key: str,
) -> Problem | None:
    """Set one field of a variant and point its position at the matrix entry; a Problem if the path is bad.
    ``applied``: the paths this variant has set so far (a later path may hold an earlier one's position)."""
    positions = under.positions
    if not _assign(raw, dotted, value):
        pos = positions.get(f"matrix.{key}", where)
        path = f"path {dotted!r}" if _is_each(key) else "path"
        return Problem(pos, f"matrix.{key}", f"{path} does not lead to a field of the case")
    for stale in (*under.keys(dotted), *(k for k in applied if _is_under(k, dotted))):
        variant_pos.pop(stale, None)
    variant_pos[dotted] = positions.get(f"matrix.{key}", where)
    applied.append(dotted)
    return None

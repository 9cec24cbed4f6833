"""The validator's bookkeeping: one case's problems, each citing the spec clauses it enforces."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from conformance.cases.decisions import NO_EMPTY_TENSOR
from conformance.cases.generate_kinds import GENERATOR_KINDS, tie_levels
from conformance.dtypes import value_range
from conformance.model import Case, DataType, FeatureLevel, TensorSpec
from conformance.problems import Problem


@dataclass(frozen=True)
class DimensionRule:
    """A tensor-support table's DimensionCount: ``new`` from feature level ``since`` on, ``old`` below it."""

    table: str
    since: FeatureLevel
    new: tuple[int, int]
    old: tuple[int, int]


@dataclass(frozen=True)
class OutputRules:
    """What an output descriptor must be, and the clauses that say so (rank, sizes, data type)."""

    sizes_rule: str
    type_rule: str
    rank: tuple[str, ...]
    sizes: tuple[str, ...]
    type: tuple[str, ...]


class Checker:
    """Collects one case's problems; each spec rule cites the clause ids it enforces."""

    def __init__(self, case: Case, max_elements: int) -> None:
        self.case = case
        self.max_elements = max_elements
        self.problems: list[Problem] = []

    def fail(self, field: str, message: str, *clauses: str, decision: str = "") -> None:
        """A problem at ``field``, citing ``clauses``; ``decision``: the harness's decision it enforces (decisions.py),
        where the spec's words do not refuse it."""
        self.problems.append(Problem(self.case.pos(field), field, message, clauses, decision))

    def support(self, prefix: str, since: FeatureLevel, row: str) -> str:
        """The clause of the tensor-support row ``row`` (``prefix``: the operator's clause prefix, "SLICE1.") in the
        table that applies at the case's feature level: the one of ``since`` and above, else 2_1's."""
        level = str(since) if self.case.feature_level >= since else "2_1"
        return f"{prefix}support-{level}-{row}"

    def dimension_count(self, field: str, rank: int, rule: DimensionRule, *clauses: str) -> None:
        """The rule's supported DimensionCount at the case's feature level."""
        low, high = rule.new if self.case.feature_level >= rule.since else rule.old
        if not low <= rank <= high:
            self.fail(
                field,
                f"DimensionCount {rank} is not supported at feature level {self.case.feature_level} "
                f"({rule.table}: {_span(rule.old)} below {rule.since}, {_span(rule.new)} from {rule.since})",
                *clauses,
            )

    def tensor(self, field: str, tensor: TensorSpec, data_types: Sequence[DataType], *clauses: str) -> bool:
        """Sizes, element limit, data type and Data; False when the tensor's data cannot be used.

        ``clauses``: the tensor-support rows that list ``data_types``."""
        if tensor.data_type not in data_types:
            self.fail(
                f"{field}.DataType",
                f"{tensor.data_type} is not supported (tensor support table: {', '.join(data_types)})",
                *clauses,
            )
        if any(size < 1 for size in tensor.sizes):
            # DECISION: the spec pages never allow an empty tensor; a zero size is refused.
            message = f"every size must be at least 1, got {list(tensor.sizes)}"
            self.fail(f"{field}.Sizes", message, decision=NO_EMPTY_TENSOR)
            return False
        if tensor.element_count > self.max_elements:
            self.fail(
                f"{field}.Sizes",
                f"{tensor.element_count} elements is over the limit of {self.max_elements} (--max-elements)",
            )
            return False
        if tensor.generator is not None:
            return self.generator(field, tensor)
        return self.data(f"{field}.Data", tensor.data or (), tensor.data_shape or (), tensor.sizes, tensor.data_type)

    def generator(self, field: str, tensor: TensorSpec) -> bool:
        assert tensor.generator is not None
        kind = tensor.generator.kind
        if kind not in GENERATOR_KINDS:
            self.fail(f"{field}.Generator.Kind", f"unknown generator {kind!r} (one of: {', '.join(GENERATOR_KINDS)})")
            return False
        unknown = sorted(set(tensor.generator.params) - set(GENERATOR_KINDS[kind]))
        if unknown:
            self.fail(
                f"{field}.Generator", f"{kind} takes {sorted(GENERATOR_KINDS[kind]) or 'no parameters'}, not {unknown}"
            )
            return False
        wrong = _generator_params(kind, tensor.generator.params, tensor.data_type)
        if wrong is not None:
            self.fail(f"{field}.Generator.{wrong[0]}", wrong[1])
            return False
        return True

    def data(
        self, field: str, values: Sequence[float], shape: tuple[int, ...], sizes: tuple[int, ...], data_type: DataType
    ) -> bool:
        count = math.prod(sizes)
        if shape != sizes and not (len(shape) == 1 and shape[0] == count):
            self.fail(field, f"has shape {shape}, Sizes say {sizes} (give nested lists like Sizes, or {count} values)")
            return False
        low, high = value_range(data_type)
        for index, value in enumerate(values):
            if data_type.is_float:
                if math.isfinite(value) and not low <= value <= high:
                    self.fail(
                        f"{field}",
                        f"value {value!r} at flat index {index} is outside the {data_type} range "
                        f"(largest finite magnitude {high:g})",
                    )
                    return False
            elif not (math.isfinite(value) and float(value).is_integer() and low <= value <= high):
                self.fail(
                    f"{field}",
                    f"value {value!r} at flat index {index} is not an integer in the "
                    f"{data_type} range [{int(low)}, {int(high)}]",
                )
                return False
        return True

    def output(self, name: str, sizes: tuple[int, ...], data_type: DataType, rules: OutputRules) -> None:
        """The output tensor descriptor ``name``, where the case writes one, against what the spec derives."""
        desc = self.case.outputs.get(name)
        if desc is None:
            return
        if desc.sizes is not None and len(desc.sizes) != len(sizes):
            self.fail(
                f"{name}.Sizes",
                f"DimensionCount {len(desc.sizes)} differs from the InputTensor's {len(sizes)}",
                *rules.rank,
            )
        elif desc.sizes is not None and desc.sizes != sizes:
            self.fail(
                f"{name}.Sizes", f"must be {list(sizes)} ({rules.sizes_rule}), got {list(desc.sizes)}", *rules.sizes
            )
        if desc.data_type is not None and desc.data_type != data_type:
            self.fail(f"{name}.DataType", f"must be {data_type} ({rules.type_rule}), got {desc.data_type}", *rules.type)

    def expected(self, name: str, sizes: tuple[int, ...], data_type: DataType) -> bool:
        """Check the expected output ``name`` (if given) against its sizes and type; False when it is wrong."""
        if name not in self.case.expected:
            return True
        return self.data(
            f"expected.{name}", self.case.expected[name], self.case.expected_shapes[name], sizes, data_type
        )


def _span(allowed: tuple[int, int]) -> str:
    return str(allowed[0]) if allowed[0] == allowed[1] else f"{allowed[0]} to {allowed[1]}"


def _generator_params(kind: str, params: Mapping[str, float], data_type: DataType) -> tuple[str, str] | None:
    """The first parameter of a generator that ``generate`` would refuse, and why (see its docstring)."""
    low, high = params.get("Low"), params.get("High")
    integral = kind == "integers" or (kind in ("uniform", "special") and not data_type.is_float)
    if low is not None and high is not None:
        if integral and math.ceil(low) > math.floor(high):
            return "High", f"[Low, High] = [{low}, {high}] holds no integer"
        if low > high:
            return "High", f"must be at least Low ({low}), got {high}"
    if kind == "normal" and params.get("Std", 1.0) < 0:
        return "Std", f"must be >= 0, got {params['Std']}"
    if kind == "ties":
        distinct = params.get("Distinct", 4.0)
        if distinct < 1 or not float(distinct).is_integer():
            return "Distinct", f"must be an integer >= 1, got {distinct}"
        if params.get("Step", 1.0) == 0:
            return "Step", "must not be 0"
        if distinct <= 1 << 16:  # a larger Distinct is checked when generated (it is not worth the memory here)
            try:
                with np.errstate(all="ignore"):  # levels that overflow are refused below, not warned about
                    tie_levels(params, data_type)
            except ValueError as error:
                return "Low", str(error)
    if kind == "special" and not 0.0 <= params.get("Fraction", 0.5) <= 1.0:
        return "Fraction", f"must lie in [0, 1], got {params['Fraction']}"
    if kind == "arange" and not data_type.is_float:
        for name in ("Start", "Step"):
            if not float(params.get(name, 0.0)).is_integer():
                return name, f"must be an integer for {data_type}, got {params[name]}"
    return None

"""Typed reading of one YAML mapping's fields, collecting one-line problems instead of raising."""

from __future__ import annotations

import difflib
import enum
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from conformance.model import Operator, SourcePos
from conformance.problems import Problem

E = TypeVar("E", bound=enum.Enum)
_MISSING = object()
UINT_MAX = 2**32 - 1
INT_MIN, INT_MAX = -(2**31), 2**31 - 1
UNKNOWN_FIELD = "unknown field"  # how every unknown-key problem begins (parse.py tells a typo from a negative case)


def as_number(value: Any) -> float | None:
    """A YAML number, or a string that spells one (PyYAML reads ``1e-5`` as a string), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str) and "_" not in value:  # float() would take "1_000"; YAML's core schema does not
        try:
            return float(value.strip())
        except ValueError:
            return None
    return None


def member(kind: type[E], value: Any, strip: str = "") -> E | None:
    """The member of ``kind`` a case file's text names, as every choice is read: any case, surrounding blanks and the
    DirectML prefix ``strip`` ("DML_") optional, so ``top_k1`` and ``DML_TOP_K1`` name TOP_K1; None for another."""
    text = str(value).strip().upper().removeprefix(strip) if isinstance(value, str) else None
    return next((m for m in kind if m.value == text), None)


def closest_member(kind: type[E], value: Any, strip: str = "") -> E | None:
    """The member of ``kind`` whose name, with or without the prefix ``strip``, is nearest ``value``'s text in any case
    (difflib's closest match), for a did-you-mean; None where none is near."""
    spellings = {spelling: m for m in kind for spelling in (f"{strip}{m.value}", str(m.value))}
    close = difflib.get_close_matches(str(value).strip().upper(), list(spellings), n=1)
    return spellings[close[0]] if close else None


def unknown_operator(value: Any, strip: str) -> str:
    """The message for an ``operator:`` that names none of model.Operator's (``strip``: the optional prefix), with
    the nearest one where one is near (TOPK1, DML_SLICE), else the list of them."""
    near = closest_member(Operator, value, strip)
    hint = f"did you mean {near.value}?" if near is not None else f"one of: {', '.join(op.value for op in Operator)}"
    return f"unknown operator {value!r} ({hint})"


def unknown_field(name: str, allowed: Iterable[str]) -> str:
    """The message for a key that is not one of ``allowed``, with the closest allowed key when one is near (a
    typo such as Axiz, or axis in the wrong case)."""
    allowed = list(allowed)
    by_folded = {key.casefold(): key for key in allowed}
    close = difflib.get_close_matches(name.casefold(), list(by_folded), n=1)
    hint = f", did you mean {by_folded[close[0]]}?" if close else ""
    return f"{UNKNOWN_FIELD}{hint} (expected one of: {', '.join(allowed)})"


class Fields:
    """The fields of one mapping at ``prefix`` (a dotted path inside the case)."""

    def __init__(self, raw: Any, prefix: str, positions: Mapping[str, SourcePos], problems: list[Problem]) -> None:
        self.raw: dict[str, Any] = raw if isinstance(raw, dict) else {}
        self.prefix = prefix
        self.positions = positions
        self.problems = problems

    def path(self, name: str) -> str:
        if not name:
            return self.prefix
        return f"{self.prefix}.{name}" if self.prefix else name

    def pos(self, name: str = "") -> SourcePos:
        probe = self.path(name) if name else self.prefix
        while probe:
            if probe in self.positions:
                return self.positions[probe]
            probe = probe.rpartition(".")[0]
        return self.positions.get("", SourcePos("?", 1, 1))

    def problem(self, name: str, message: str) -> None:
        self.problems.append(Problem(self.pos(name), self.path(name), message))

    def has(self, name: str) -> bool:
        return name in self.raw

    def check_known(self, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for name in self.raw:
            if name not in allowed:
                self.problem(name, unknown_field(str(name), allowed))

    def get(self, name: str, required: bool) -> Any:
        if name in self.raw:
            return self.raw[name]
        if required:
            self.problem(name, "missing required field")
        return _MISSING

    def sub(self, name: str, required: bool = True) -> Fields | None:
        value = self.get(name, required)
        if value is _MISSING:
            return None
        if value is None:
            if required:
                self.problem(name, "must be a mapping, got an empty value")
            return None
        if not isinstance(value, dict):
            self.problem(name, "must be a mapping")
            return None
        return Fields(value, self.path(name), self.positions, self.problems)

    def text(self, name: str, required: bool = False, default: str = "") -> str:
        value = self.get(name, required)
        if value is _MISSING:
            return default
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            self.problem(name, "must be text")
            return default
        return str(value)

    def integer(self, name: str, low: int, high: int, required: bool = True, what: str = "") -> int | None:
        value = self.get(name, required)
        if value is _MISSING:
            return None
        return self._integer(name, value, low, high, what)

    def _integer(self, name: str, value: Any, low: int, high: int, what: str) -> int | None:
        if isinstance(value, bool) or not isinstance(value, int):
            self.problem(name, f"must be an integer{what}, got {value!r}")
            return None
        if not low <= value <= high:
            self.problem(name, f"must be an integer{what} in [{low}, {high}], got {value}")
            return None
        return value

    def uint(self, name: str, required: bool = True) -> int | None:
        return self.integer(name, 0, UINT_MAX, required, " (UINT)")

    def int_list(self, name: str, signed: bool = False, required: bool = True) -> tuple[int, ...] | None:
        value = self.get(name, required)
        if value is _MISSING:
            return None
        if not isinstance(value, list):
            self.problem(name, "must be a list of integers")
            return None
        low, high, what = (INT_MIN, INT_MAX, " (INT)") if signed else (0, UINT_MAX, " (UINT)")
        items = [self._integer(f"{name}.{i}", v, low, high, what) for i, v in enumerate(value)]
        if any(item is None for item in items):
            return None
        return tuple(item for item in items if item is not None)

    def number(self, name: str, default: float | None = None, required: bool = False) -> float | None:
        value = self.get(name, required and default is None)
        if value is _MISSING:
            return default
        number = as_number(value)
        if number is None or not math.isfinite(number):
            self.problem(name, f"must be a finite number, got {value!r}")
            return default
        return float(number)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.get(name, False)
        if value is _MISSING:
            return default
        if not isinstance(value, bool):
            self.problem(name, f"must be true or false, got {value!r}")
            return default
        return value

    def choice(self, name: str, kind: type[E], required: bool = True, strip: str = "") -> E | None:
        value = self.get(name, required)
        if value is _MISSING:
            return None
        found = member(kind, value, strip)
        if found is None:
            self.problem(name, f"must be one of {', '.join(str(m.value) for m in kind)}, got {value!r}")
        return found

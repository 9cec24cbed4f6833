"""JSON read into frozen dataclasses, and written back: the one place where results.json's structure is checked.

A record class says what each field holds by its type hint (text, an integer, a number, true or false, a status,
a list of records, an object of texts, free JSON, another record, or one of these or null); ``read_record`` builds it
from parsed JSON or raises RecordError, one line saying where in the document and what is wrong
("results[3].status: 'BOGUS' is not a status"). A field the JSON lacks, or gives as null where the field has a
default, takes the default (an older writer's file); a key the class does not know is left out (a newer writer's).
Texts must be valid Unicode (a lone surrogate, which JSON's escapes can spell, cannot be written to a report), and
free JSON (metrics, details) may nest only MAX_DEPTH deep: nothing after the boundary has to guard against either.
A field's ``metadata["check"]`` may refuse a value its type allows (a negative size), returning what is wrong or
raising RecordError itself where it knows better where.

``record_json`` writes a record back: a record read from a file, each field away from its default (a default there
may stand for a field the file lacked, which is unknown, not none); a record made ``whole`` by its writer (a run's
environment), every field, null and empty ones included (there they say "none"), but for those whose
``metadata["at_default"]`` says otherwise (``WHERE_SET``: what only some runs have, a stop or a shard).
"""

from __future__ import annotations

import enum
import functools
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, TypeAlias, TypeVar

T = TypeVar("T")
MAX_DEPTH = 64  # levels of free JSON: a report draws a few; deeper is a hostile file, not a writer's


# Where a value is in the document, built as the reader descends and spelt out only for a message: (the parent's
# place, a member's name or an item's index), or a text (the top).
Where: TypeAlias = "tuple[Where, str | int] | str"
Check = Callable[
    [Any, Where], "str | None"
]  # a field's own rule on (value, where): None where fine, else what is wrong


def spelt(where: Where) -> str:
    """A place as a message names it: "results[3].status", "environment.eps[0].options['a b']"."""
    parts: list[str | int] = []
    while isinstance(where, tuple):
        where, key = where
        parts.append(key)
    text = where
    for key in reversed(parts):
        if isinstance(key, int):
            text += f"[{key}]"
        elif key.isidentifier():
            text += f".{key}" if text else key
        else:
            text += f"[{shown(key)}]"
    return text


class RecordError(ValueError):
    """Parsed JSON that does not hold the record it should: ``where`` in the document, and ``what`` is wrong."""

    def __init__(self, where: Where, what: str) -> None:
        self.where, self.what = spelt(where), what
        super().__init__(f"{self.where}: {what}" if self.where else what)


def kind(value: object) -> str:
    """What a JSON value is, in a message's words: "null", "text", "a number", "a list", "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float):
        return "a number"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, dict) else type(value).__name__


def shown(value: object, limit: int = 60) -> str:
    """A value as a message quotes it: its repr (one line, whatever it holds), cut at ``limit`` characters."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _text(value: object, where: Where) -> str:
    if not isinstance(value, str):
        raise RecordError(where, f"expected text, got {kind(value)}")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise RecordError(where, f"not valid Unicode (a lone surrogate): {shown(value)}") from None
    return value


def free_json(value: object, where: Where) -> Any:
    """Free JSON (a result's metrics, details) as it is, once its texts and depth are checked."""
    _free(value, where, where, 0)
    return value


def _free(value: object, where: Where, top: Where, depth: int) -> None:
    if depth > MAX_DEPTH:  # named where the free JSON starts: the path down would be the whole depth long
        raise RecordError(top, f"nested deeper than {MAX_DEPTH} levels")
    if isinstance(value, str):
        _text(value, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if not isinstance(item, int | float):
                _free(item, (where, index), top, depth + 1)
    elif isinstance(value, dict):
        for key, item in value.items():
            _free(item, (where, _text(key, where)), top, depth + 1)


Reader = Callable[[object, Where], Any]


def _named(hint: Any) -> str:
    """A type in a message's words."""
    names = {str: "text", int: "an integer", float: "a number", bool: "true or false"}
    if hint in names:
        return str(names[hint])
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return f"a {hint.__name__.lower()}"
    return "a list" if typing.get_origin(hint) is tuple else "an object"


def _same_kind(value: object, hint: Any) -> bool:
    if hint is str or (isinstance(hint, type) and issubclass(hint, enum.Enum)):
        return isinstance(value, str)
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float):
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, list) if typing.get_origin(hint) is tuple else isinstance(value, dict)


def _union_reader(arms: tuple[Any, ...]) -> Reader:
    """One of several types: null where allowed, else the first arm of the value's own JSON kind."""
    nullable = types.NoneType in arms
    others = tuple(arm for arm in arms if arm is not types.NoneType)
    readers = tuple(reader(arm) for arm in others)
    expected = " or ".join(_named(arm) for arm in others)

    def read(value: object, where: Where) -> Any:
        if value is None and nullable:
            return None
        if len(others) == 1:
            return readers[0](value, where)
        for arm, read_arm in zip(others, readers, strict=True):
            if _same_kind(value, arm):
                return read_arm(value, where)
        raise RecordError(where, f"expected {expected}, got {kind(value)}")

    return read


def _enum_reader(hint: type[enum.Enum]) -> Reader:
    def read(value: object, where: Where) -> Any:
        try:
            return hint(_text(value, where))
        except ValueError:
            raise RecordError(where, f"{shown(value)} is not {_named(hint)}") from None

    return read


def _bool(value: object, where: Where) -> bool:
    if not isinstance(value, bool):
        raise RecordError(where, f"expected true or false, got {kind(value)}")
    return value


def _int(value: object, where: Where) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise RecordError(where, f"expected an integer, got {kind(value)}")
    return value


def _float(value: object, where: Where) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise RecordError(where, f"expected a number, got {kind(value)}")
    return float(value)


def _sequence_reader(arguments: tuple[Any, ...]) -> Reader:
    if len(arguments) == 2 and arguments[1] is Ellipsis:
        item = reader(arguments[0])

        def read_all(value: object, where: Where) -> tuple[Any, ...]:
            if not isinstance(value, list):
                raise RecordError(where, f"expected a list, got {kind(value)}")
            return tuple(item(each, (where, index)) for index, each in enumerate(value))

        return read_all
    items = tuple(reader(hint) for hint in arguments)

    def read_fixed(value: object, where: Where) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise RecordError(where, f"expected a list, got {kind(value)}")
        if len(value) != len(items):
            raise RecordError(where, f"expected a list of {len(items)} items, got {len(value)}")
        return tuple(read(each, (where, index)) for index, (each, read) in enumerate(zip(value, items, strict=True)))

    return read_fixed


def _mapping_reader(item_hint: Any) -> Reader:
    item = reader(item_hint)

    def read(value: object, where: Where) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise RecordError(where, f"expected an object, got {kind(value)}")
        return {_text(key, where): item(each, (where, key)) for key, each in value.items()}

    return read


@functools.cache
def reader(hint: Any) -> Reader:
    """The function that reads a value of the type ``hint`` (made once per type)."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return free_json
    if origin in (typing.Union, types.UnionType):
        return _union_reader(typing.get_args(hint))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_reader(hint)
    simple: dict[Any, Reader] = {str: _text, int: _int, float: _float, bool: _bool}
    if hint in simple:
        return simple[hint]
    if origin is tuple:
        return _sequence_reader(typing.get_args(hint))
    if origin in (Mapping, dict):
        return _mapping_reader(typing.get_args(hint)[1])
    if isinstance(hint, type) and is_dataclass(hint):
        return _record_reader(hint)
    raise TypeError(f"no reader for {hint!r}")  # a record class this module cannot read: a bug, not input


def read_value(value: object, hint: Any, where: Where) -> Any:
    """``value`` (parsed JSON) as the type ``hint`` says, or RecordError naming ``where``."""
    return reader(hint)(value, where)


def _allows_none(hint: Any) -> bool:
    return typing.get_origin(hint) in (typing.Union, types.UnionType) and types.NoneType in typing.get_args(hint)


def _record_reader(cls: type) -> Reader:
    """A record class's reader; its fields' readers are made on first use (a record may hold itself)."""
    made: list[tuple[str, Reader, bool, bool, Check | None]] = []

    def read(data: object, where: Where) -> Any:
        if not made:
            hints = typing.get_type_hints(cls)
            for each in fields(cls):
                defaulted = each.default is not MISSING or each.default_factory is not MISSING
                skip_null = defaulted and not _allows_none(hints[each.name])
                made.append((each.name, reader(hints[each.name]), defaulted, skip_null, each.metadata.get("check")))
        if not isinstance(data, dict):
            raise RecordError(where, f"expected an object, got {kind(data)}")
        values: dict[str, Any] = {}
        for name, read_field, defaulted, skip_null, check in made:
            raw = data.get(name)
            if raw is None:
                if skip_null:
                    continue  # absent, or null for a field that has a default: an older writer's file
                if not defaulted and name not in data:
                    raise RecordError((where, name), "missing")
            value = read_field(raw, (where, name))
            problem = check(value, (where, name)) if check is not None and value is not None else None
            if problem:
                raise RecordError((where, name), problem)
            values[name] = value
        return cls(**values)

    return read


def read_record(cls: type[T], data: object, where: Where) -> T:
    """A record of class ``cls`` from a JSON object; RecordError for what does not fit, naming where it is."""
    found: T = reader(typing.cast(Any, cls))(data, where)
    return found


AT_DEFAULT = (
    "at_default"  # a field's metadata: given its record, whether a whole record writes the field at its default
)


def _never(record: object) -> bool:
    return False


def _always(record: object) -> bool:
    return True


WHERE_SET: dict[str, Callable[[Any], bool]] = {AT_DEFAULT: _never}  # written only away from its default


def record_json(record: object, whole: bool = False) -> dict[str, Any]:
    """A record as the JSON ``read_record`` reads back, records and tuples within it converted too: each field that
    differs from its default; ``whole`` (a record its writer made, not read): every field but those that its
    ``AT_DEFAULT`` leaves out at their default."""
    found: dict[str, Any] = {}
    for field in fields(record):  # type: ignore[arg-type]
        value = getattr(record, field.name)
        default = field.default_factory() if field.default_factory is not MISSING else field.default
        at_default = default is not MISSING and value == default
        if at_default and not (whole and field.metadata.get(AT_DEFAULT, _always)(record)):
            continue
        found[field.name] = _json(value, whole)
    return found


def _json(value: Any, whole: bool) -> Any:
    if is_dataclass(value) and not isinstance(value, type):
        return record_json(value, whole)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_json(item, whole) for item in value]
    if isinstance(value, Mapping):
        return {key: _json(item, whole) for key, item in value.items()}
    return value

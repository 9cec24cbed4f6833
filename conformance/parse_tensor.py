"""Reading tensors from case files: Sizes, DataType, and Data (nested lists) or a seeded Generator."""

from __future__ import annotations

from typing import Any

from conformance.fields import Fields, as_number
from conformance.model import DataType, Generator, TensorSpec

TENSOR_FIELDS = ("Sizes", "DataType", "Data", "Generator")


def flatten(value: Any) -> tuple[list[float], tuple[int, ...]] | str:
    """Row-major values and the nesting shape of a (possibly nested) list, or what is wrong with it."""
    if not isinstance(value, list):
        return "must be a list (nested like Sizes, or flat)"
    shape: list[int] = []
    level: list[Any] = value
    while isinstance(level, list):
        shape.append(len(level))
        level = level[0] if level else None
    flat: list[float] = []
    if not _collect(value, shape, 0, flat):
        return f"is ragged: every nesting level must have the same length (first rows give {tuple(shape)})"
    bad = next((v for v in flat if isinstance(v, str)), None)
    if bad is not None:
        return f"holds {bad!r}, which is not a number (use .nan, .inf, -.inf for special values)"
    return flat, tuple(shape)


def _collect(value: Any, shape: list[int], depth: int, out: list[Any]) -> bool:
    if depth == len(shape):
        if isinstance(value, list):
            return False
        number = as_number(value)
        out.append(number if number is not None else repr(value))
        return True
    if not isinstance(value, list) or len(value) != shape[depth]:
        return False
    return all(_collect(item, shape, depth + 1, out) for item in value)


def read_generator(fields: Fields) -> Generator | None:
    kind = fields.text("Kind", required=True)
    # A Seed is needed by every random kind; arange ignores it, so it defaults to 0.
    seed = fields.integer("Seed", 0, 2**64 - 1, required=False, what=" (seed)")
    seed = 0 if seed is None and not fields.has("Seed") else seed
    params: dict[str, float] = {}
    for name in fields.raw:
        if name in ("Kind", "Seed"):
            continue
        value = fields.number(name)
        if value is not None:
            params[name] = value
    if not kind or seed is None:
        return None
    return Generator(kind=kind.lower(), seed=seed, params=params)


def read_tensor(fields: Fields) -> TensorSpec | None:
    """A tensor mapping; None (with problems recorded) when it cannot be read."""
    fields.check_known(TENSOR_FIELDS)
    sizes = fields.int_list("Sizes")
    if sizes is not None and not sizes:
        fields.problem("Sizes", "must list at least one dimension")
        sizes = None
    data_type = fields.choice("DataType", DataType, strip="DML_TENSOR_DATA_TYPE_")
    has_data, has_generator = fields.has("Data"), fields.has("Generator")
    if has_data == has_generator:
        fields.problem("", "needs exactly one of Data or Generator")
        return None
    if sizes is None or data_type is None:
        return None
    if has_generator:
        sub = fields.sub("Generator")
        generator = read_generator(sub) if sub is not None else None
        return TensorSpec(sizes, data_type, generator=generator) if generator is not None else None
    flat = flatten(fields.raw["Data"])
    if isinstance(flat, str):
        fields.problem("Data", flat)
        return None
    values, shape = flat
    return TensorSpec(sizes, data_type, data=tuple(values), data_shape=shape)


def read_values(fields: Fields, name: str) -> tuple[tuple[float, ...], tuple[int, ...]] | None:
    """An expected output: nested numbers with their shape."""
    flat = flatten(fields.raw[name])
    if isinstance(flat, str):
        fields.problem(name, flat)
        return None
    values, shape = flat
    return tuple(values), shape

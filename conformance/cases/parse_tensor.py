"""Reading tensors from case files: Sizes, DataType, and Data (nested lists) or a seeded Generator."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from conformance.cases.fields import Fields, as_number
from conformance.cases.generate_kinds import GENERATOR_KINDS
from conformance.cases.keys import (
    DATA_TYPE_PREFIX,
    GENERATOR_KEYS,
    OUTPUT_KEYS,
    SEED_MAX,
    SEEDLESS_KINDS,
    TENSOR_KEYS,
    UINT64_MAX,
    names,
)
from conformance.model import DataType, Generator, OutputDesc, TensorSpec

TENSOR_FIELDS = names(TENSOR_KEYS)


def flatten(value: Any) -> tuple[list[float], tuple[int, ...]] | str:
    """Row-major values and the nesting shape of a (possibly nested) list, or what is wrong with it."""
    if not isinstance(value, list):
        return "must be a list (nested like Sizes, or flat)"
    shape: list[int] = []
    level: Any = value
    while isinstance(level, list):
        shape.append(len(level))
        level = level[0] if level else None
    flat: list[float] = []
    wrong = _collect(value, shape, (), flat)
    return wrong if wrong is not None else (flat, tuple(shape))


def _collect(value: Any, shape: list[int], index: tuple[int, ...], out: list[float]) -> str | None:
    """Append ``value``'s numbers to ``out``; what is wrong at the first bad ``index`` (e.g. [1][0]), else None."""
    depth = len(index)
    if depth == len(shape):
        where = "".join(f"[{i}]" for i in index)
        if isinstance(value, list):
            levels = "level" if len(shape) == 1 else "levels"
            return f"is ragged: {where} is a list, but the first entries nest {len(shape)} {levels} deep"
        number = as_number(value)
        if number is None:
            return f"holds {value!r} at {where}, which is not a number (use .nan, .inf, -.inf for special values)"
        out.append(number)
        return None
    if not isinstance(value, list) or len(value) != shape[depth]:
        where = "".join(f"[{i}]" for i in index)
        got = f"has {len(value)} entries" if isinstance(value, list) else f"is {value!r}"
        return (
            f"is ragged: {where} {got} where the first rows have a list of {shape[depth]} "
            f"(every nesting level must have the same length)"
        )
    if depth == len(shape) - 1 and all(type(item) in (int, float) for item in value):
        out.extend(value)  # a row of plain numbers, the common case: Data can hold millions of them
        return None
    for i, item in enumerate(value):
        wrong = _collect(item, shape, (*index, i), out)
        if wrong is not None:
            return wrong
    return None


def read_generator(fields: Fields) -> Generator | None:
    kind = fields.text("Kind", required=True)
    params_of_kind = GENERATOR_KINDS.get(kind.lower())
    if params_of_kind is not None:  # an unknown kind is validate's to report (with the kinds there are)
        # Checked here, as every key is, rather than left to validate: a misspelt parameter must refuse a negative
        # case (parse.py), not make it "invalid as expected" for the wrong reason.
        fields.check_known((*names(GENERATOR_KEYS), *sorted(params_of_kind)))
    # A Seed is needed by every random kind; arange ignores it, so there it defaults to 0.
    random = params_of_kind is not None and kind.lower() not in SEEDLESS_KINDS  # an unknown kind: validate's
    seed = fields.integer("Seed", 0, SEED_MAX, required=random and bool(kind), what=" (seed)")
    seed = 0 if seed is None and not fields.has("Seed") and not random else seed
    params: dict[str, float] = {}
    read_above = names(GENERATOR_KEYS)  # Kind and Seed
    for name in fields.raw:
        if name in read_above or (params_of_kind is not None and name not in params_of_kind):
            continue  # a parameter the kind does not take: an unknown field, said above
        value = fields.number(name)
        if value is not None:
            params[name] = value
    if not kind or seed is None:
        return None
    return Generator(kind=kind.lower(), seed=seed, params=params)


def read_layout(fields: Fields) -> tuple[bool, tuple[int, ...] | None, int | None]:
    """A tensor's Strides and TotalTensorSizeInBytes (each None where not given), and whether both could be read.
    What they must be is validate_layout.py's to say, at their positions."""
    strides = fields.int_list("Strides", required=False)
    total = fields.integer("TotalTensorSizeInBytes", 0, UINT64_MAX, required=False, what=" (UINT64)")
    readable = (strides is not None or not fields.has("Strides")) and (
        total is not None or not fields.has("TotalTensorSizeInBytes")
    )
    return readable, strides, total


def read_tensor(fields: Fields) -> TensorSpec | None:
    """A tensor mapping; None (with problems recorded) when it cannot be read."""
    fields.check_known(TENSOR_FIELDS)
    readable, strides, total = read_layout(fields)
    sizes = fields.int_list("Sizes")
    if sizes is not None and not sizes:
        fields.problem("Sizes", "must list at least one dimension")
        sizes = None
    data_type = fields.choice("DataType", DataType, strip=DATA_TYPE_PREFIX)
    has_data, has_generator = fields.has("Data"), fields.has("Generator")
    if has_data == has_generator:
        fields.problem("", "needs exactly one of Data or Generator")
        return None
    if sizes is None or data_type is None or not readable:
        return None
    if has_generator:
        sub = fields.sub("Generator")
        generator = read_generator(sub) if sub is not None else None
        if generator is None:
            return None
        return TensorSpec(sizes, data_type, generator=generator, strides=strides, total_bytes=total)
    flat = flatten(fields.raw["Data"])
    if isinstance(flat, str):
        fields.problem("Data", flat)
        return None
    values, shape = flat
    return TensorSpec(sizes, data_type, data=tuple(values), data_shape=shape, strides=strides, total_bytes=total)


def read_values(fields: Fields, name: str) -> tuple[tuple[float, ...], tuple[int, ...]] | None:
    """An expected output: nested numbers with their shape."""
    flat = flatten(fields.raw[name])
    if isinstance(flat, str):
        fields.problem(name, flat)
        return None
    values, shape = flat
    return tuple(values), shape


def read_output(fields: Fields) -> OutputDesc | None:
    """An output tensor's descriptor: optional Sizes, DataType, Strides and TotalTensorSizeInBytes (no data: the
    operator writes it)."""
    fields.check_known(names(OUTPUT_KEYS))
    readable, strides, total = read_layout(fields)
    sizes = fields.int_list("Sizes", required=False)
    if sizes is not None and not sizes:
        fields.problem("Sizes", "must list at least one dimension")
        return None
    data_type = fields.choice("DataType", DataType, required=False, strip=DATA_TYPE_PREFIX)
    if (fields.has("Sizes") and sizes is None) or (fields.has("DataType") and data_type is None) or not readable:
        return None
    return OutputDesc(sizes, data_type, strides, total)


def read_outputs(fields: Fields, names: Sequence[str]) -> dict[str, OutputDesc]:
    """The output tensors' descriptors a case writes, by name."""
    read = {}
    for name in names:
        sub = fields.sub(name, required=False)
        desc = read_output(sub) if sub is not None else None
        if desc is not None:
            read[name] = desc
    return read

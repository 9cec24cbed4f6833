"""The generator kinds: how a seeded ``Generator`` makes a tensor's values (generate.py materializes tensors).

Random numbers come from ``generate_streams`` (raw PCG64 words, one stream per (Seed, tensor name), with
our own documented transforms), so the same case gives the same bytes on every machine and NumPy version.

Values are computed in float64 and then cast to the tensor's type: floats round to nearest even (float16 directly
from float64, no double rounding through float32), integer types take exact integers (rounded half-to-even and
clamped to the type's range where a kind can produce others).

Kinds (parameters as written in YAML; all optional):

* ``uniform`` Low, High: floats continuous in [Low, High] (default -1, 1; clamped to the finite range);
  integer types: every integer in [ceil(Low), floor(High)] equally likely (default: the type's whole range).
* ``normal`` Mean (0), Std (1): floats clamped to the finite range; integer types rounded and clamped.
* ``integers`` Low, High, inclusive: uniform integers in any type (default: the type's range for integer
  types, +-2**11 for FLOAT16 and +-2**24 for FLOAT32, where every integer is exact).
* ``ties`` Distinct (4), Low (0), Step (1): values ``Low + Step * k``, k in 0..Distinct-1, placed by a random
  permutation so that each value occurs floor or ceil of size/Distinct times (all Distinct of them as soon as
  the tensor has Distinct elements). Every value must be exact in the type (else ValueError).
* ``special`` Fraction (0.5), Low, High: round(Fraction * size) elements, at randomly permuted positions, take
  special values in turn (floats: NaN, +Inf, -Inf, +0, -0, +-smallest and +-largest denormal, the most negative
  and the largest finite value; integer types: min, max, 0, 1 and -1 where representable), so each occurs once
  the count reaches the list's length; the other elements are ``uniform`` with Low/High.
* ``arange`` Start (0), Step (1): element i is ``Start + Step * i``. Integer types need integral Start and Step
  and wrap modulo 2**bits (two's complement), e.g. INT8 arange 0..299 gives 0..127, -128..-1, 0..43. Floats are
  computed in float64 (one rounding for the product, one for the sum) and rounded to the type; a value that
  overflows to infinity is a ValueError.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from types import MappingProxyType

import numpy as np

from conformance.cases.generate_streams import TWO64, Float64Array, Streams, below, permutation, standard_normal, unit
from conformance.dtypes import numpy_dtype
from conformance.model import DataType, Generator

GENERATOR_KINDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        "uniform": frozenset({"Low", "High"}),
        "normal": frozenset({"Mean", "Std"}),
        "integers": frozenset({"Low", "High"}),
        "ties": frozenset({"Distinct", "Low", "Step"}),
        "special": frozenset({"Fraction", "Low", "High"}),
        "arange": frozenset({"Start", "Step"}),
    }
)


def generate(gen: Generator, data_type: DataType, count: int, name: str) -> np.ndarray:
    """``count`` values of ``gen``'s kind in ``data_type``, from the stream of (its Seed, the tensor ``name``)."""
    maker = _KINDS.get(gen.kind)
    if maker is None:
        raise ValueError(f"unknown generator kind {gen.kind!r}; known: {', '.join(sorted(GENERATOR_KINDS))}")
    unknown = sorted(set(gen.params) - GENERATOR_KINDS[gen.kind])
    if unknown:
        raise ValueError(f"generator {gen.kind!r} has no parameter {', '.join(unknown)}")
    return maker(gen.params, data_type, count, Streams(gen.seed, name))


def _param(params: Mapping[str, float], key: str, default: float) -> float:
    value = float(params.get(key, default))
    if not math.isfinite(value):
        raise ValueError(f"generator parameter {key} must be finite, got {value}")
    return value


def _to_float(values: Float64Array, data_type: DataType, clamp: bool) -> np.ndarray:
    dtype = numpy_dtype(data_type)
    if clamp:
        top = float(np.finfo(dtype).max)
        values = np.clip(values, -top, top)
    return values.astype(dtype)


def _to_int(values: Float64Array, data_type: DataType) -> np.ndarray:
    info = np.iinfo(numpy_dtype(data_type))
    return np.clip(np.rint(values), info.min, info.max).astype(numpy_dtype(data_type))


def _integer_range(params: Mapping[str, float], data_type: DataType) -> tuple[int, int]:
    """Inclusive [Low, High] of ``integers`` (and of ``uniform`` on integer types), clamped to the type's range."""
    dtype = numpy_dtype(data_type)
    if data_type.is_float:
        exact = float(2**11 if data_type == DataType.FLOAT16 else 2**24)
        default_low, default_high = -exact, exact
        floor, ceiling = float(np.finfo(dtype).min), float(np.finfo(dtype).max)
    else:
        floor, ceiling = float(np.iinfo(dtype).min), float(np.iinfo(dtype).max)
        default_low, default_high = floor, ceiling
    low = math.ceil(max(_param(params, "Low", default_low), floor))
    high = math.floor(min(_param(params, "High", default_high), ceiling))
    if low > high:
        raise ValueError(f"empty integer range [{low}, {high}] for {data_type}")
    if high - low + 1 > 2**63:
        raise ValueError(f"integer range [{low}, {high}] is wider than 2**63")
    return low, high


def _integers(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    low, high = _integer_range(params, data_type)
    offsets = below(streams.bitgen(0), count, high - low + 1)
    if data_type.is_float:
        return _to_float(offsets.astype(np.float64) + float(low), data_type, clamp=True)
    return (offsets.astype(np.int64) + np.int64(low)).astype(numpy_dtype(data_type))


def _uniform(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    if not data_type.is_float:
        return _integers(params, data_type, count, streams)
    top = float(np.finfo(numpy_dtype(data_type)).max)
    low = max(_param(params, "Low", -1.0), -top)
    high = min(_param(params, "High", 1.0), top)
    if low > high:
        raise ValueError(f"uniform needs Low <= High, got Low={low}, High={high}")
    return _to_float(low + (high - low) * unit(streams.raw(0, count)), data_type, clamp=True)


def _normal(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    mean, std = _param(params, "Mean", 0.0), _param(params, "Std", 1.0)
    if std < 0:
        raise ValueError(f"normal needs Std >= 0, got {std}")
    values = mean + std * standard_normal(streams, count)
    return _to_float(values, data_type, clamp=True) if data_type.is_float else _to_int(values, data_type)


def _exact_values(values: Float64Array, data_type: DataType, what: str) -> np.ndarray:
    if data_type.is_float:
        cast = values.astype(numpy_dtype(data_type))
        if np.array_equal(cast.astype(np.float64), values):
            return cast
    elif np.array_equal(_to_int(values, data_type).astype(np.float64), values):
        return _to_int(values, data_type)
    raise ValueError(f"{what}: not all of {values.tolist()[:8]} are exact {data_type} values")


def tie_levels(params: Mapping[str, float], data_type: DataType) -> np.ndarray:
    """The ``ties`` generator's distinct values, Low + Step * i; ValueError unless each is exact in the type."""
    distinct = _param(params, "Distinct", 4.0)
    low, step = _param(params, "Low", 0.0), _param(params, "Step", 1.0)
    if distinct < 1 or not distinct.is_integer() or step == 0:
        raise ValueError(f"ties needs an integral Distinct >= 1 and Step != 0, got Distinct={distinct}, Step={step}")
    return _exact_values(low + step * np.arange(int(distinct), dtype=np.float64), data_type, "ties")


def _ties(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    levels = tie_levels(params, data_type)
    return levels[permutation(streams.raw(0, count)) % levels.size]


def _special_values(data_type: DataType) -> np.ndarray:
    dtype = numpy_dtype(data_type)
    if data_type.is_float:
        finfo = np.finfo(dtype)
        tiny, normal = float(finfo.smallest_subnormal), float(finfo.smallest_normal)
        biggest_denormal = normal - tiny
        values = [math.nan, math.inf, -math.inf, 0.0, -0.0, tiny, -tiny, biggest_denormal, -biggest_denormal]
        return np.array([*values, float(finfo.min), float(finfo.max)], dtype=np.float64).astype(dtype)
    info = np.iinfo(dtype)
    return np.array([v for v in (info.min, info.max, 0, 1, -1) if info.min <= v <= info.max], dtype=dtype)


def _special(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    fraction = _param(params, "Fraction", 0.5)
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"special needs 0 <= Fraction <= 1, got {fraction}")
    ordinary = {key: value for key, value in params.items() if key in ("Low", "High")}
    out = _uniform(ordinary, data_type, count, streams)
    chosen = permutation(streams.raw(1, count))[: math.floor(fraction * count + 0.5)]
    specials = _special_values(data_type)
    out[chosen] = specials[np.arange(chosen.size) % specials.size]
    return out


def _arange(params: Mapping[str, float], data_type: DataType, count: int, streams: Streams) -> np.ndarray:
    start, step = _param(params, "Start", 0.0), _param(params, "Step", 1.0)
    if data_type.is_float:
        with np.errstate(over="ignore"):
            values = (start + step * np.arange(count, dtype=np.float64)).astype(numpy_dtype(data_type))
        if not np.isfinite(values).all():
            raise ValueError(f"arange overflows {data_type}: Start={start}, Step={step}, {count} elements")
        return values
    if not (start.is_integer() and step.is_integer()):
        raise ValueError(f"arange on {data_type} needs integral Start and Step, got {start}, {step}")
    dtype = numpy_dtype(data_type)
    wrapped = np.uint64(int(start) % TWO64) + np.arange(count, dtype=np.uint64) * np.uint64(int(step) % TWO64)
    bits = dtype.itemsize * 8
    unsigned = (wrapped & np.uint64((1 << bits) - 1)).astype(np.dtype(f"u{dtype.itemsize}"))
    return unsigned.view(dtype)


_KindMaker = Callable[[Mapping[str, float], DataType, int, Streams], np.ndarray]
_KINDS: Mapping[str, _KindMaker] = MappingProxyType(
    {
        "uniform": _uniform,
        "normal": _normal,
        "integers": _integers,
        "ties": _ties,
        "special": _special,
        "arange": _arange,
    }
)

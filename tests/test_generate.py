"""Tensor data generation: determinism, the documented transforms, each kind's properties, the Data path."""

from __future__ import annotations

import math
import zlib
from collections.abc import Mapping

import numpy as np
import pytest

from conformance.cases.generate import case_inputs, materialize
from conformance.cases.generate_kinds import GENERATOR_KINDS
from conformance.cases.layouts import case_layouts
from conformance.dtypes import numpy_dtype
from conformance.model import (
    AxisDirection,
    Case,
    DataType,
    FeatureLevel,
    Generator,
    Mvn1Desc,
    Operator,
    TensorSpec,
    TopK1Desc,
)

ALL_TYPES = list(DataType)
FLOAT_TYPES = [DataType.FLOAT32, DataType.FLOAT16]
INT_TYPES = [t for t in DataType if not t.is_float]
KIND_PARAMS: dict[str, dict[str, float]] = {
    "uniform": {},
    "normal": {},
    "integers": {},
    "ties": {},
    "special": {},
    "arange": {},
}


def gen(
    kind: str,
    data_type: DataType = DataType.FLOAT32,
    sizes: tuple[int, ...] = (1000,),
    seed: int = 7,
    params: Mapping[str, float] | None = None,
    name: str = "InputTensor",
) -> np.ndarray:
    spec = TensorSpec(sizes, data_type, generator=Generator(kind, seed, dict(params or {})))
    return materialize(spec, name)


def raw(seed: int, name: str, part: int, count: int) -> np.ndarray:
    """The documented stream, computed independently: PCG64 seeded with [Seed, crc32(name), part]."""
    return np.random.PCG64([seed, zlib.crc32(name.encode()), part]).random_raw(count)


def test_kinds_table_matches_the_implemented_kinds() -> None:
    assert set(GENERATOR_KINDS) == set(KIND_PARAMS)
    assert GENERATOR_KINDS["ties"] == {"Distinct", "Low", "Step"}


@pytest.mark.parametrize("kind", sorted(KIND_PARAMS))
@pytest.mark.parametrize("data_type", ALL_TYPES)
def test_dtype_shape_and_determinism(kind: str, data_type: DataType) -> None:
    sizes = (2, 3, 50) if kind != "arange" or data_type != DataType.FLOAT16 else (2, 3, 5)
    first = gen(kind, data_type, sizes)
    second = gen(kind, data_type, sizes)
    assert first.dtype == numpy_dtype(data_type)
    assert first.shape == sizes
    assert first.tobytes() == second.tobytes()


@pytest.mark.parametrize("kind", sorted(set(KIND_PARAMS) - {"arange"}))
@pytest.mark.parametrize("data_type", [DataType.FLOAT32, DataType.INT16])
def test_different_seeds_and_names_differ(kind: str, data_type: DataType) -> None:
    base = gen(kind, data_type, seed=1)
    assert base.tobytes() != gen(kind, data_type, seed=2).tobytes()
    assert base.tobytes() != gen(kind, data_type, seed=1, name="ScaleTensor").tobytes()


def test_uniform_golden_formula() -> None:
    words = raw(7, "InputTensor", 0, 6)
    unit = (words >> np.uint64(11)).astype(np.float64) * 2.0**-53
    expected = (-1.0 + 2.0 * unit).astype(np.float32)
    assert gen("uniform", sizes=(6,)).tobytes() == expected.tobytes()


def test_uniform_golden_bits_are_pinned() -> None:
    # Pinned once: a change here means a NumPy (PCG64/SeedSequence) or formula change broke old cases' data.
    bits = gen("uniform", sizes=(4,)).view(np.uint32).tolist()
    assert bits == [0x3F0B686E, 0xBEE3AE71, 0x3B309569, 0xBF6D3368]
    assert [hex(int(w)) for w in raw(7, "InputTensor", 0, 2)] == ["0xc5b436dec6254004", "0x471463bc4114b37c"]


def test_integers_golden_formula() -> None:
    words = raw(3, "InputTensor", 0, 8)
    expected = (words % np.uint64(11)).astype(np.int64) - 5  # Low=-5, High=5: span 11, rejection ~never fires
    assert gen("integers", DataType.INT32, (8,), 3, {"Low": -5, "High": 5}).tolist() == expected.tolist()


def test_normal_matches_box_muller_and_moments() -> None:
    u1 = (raw(7, "InputTensor", 0, 10_000) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    u2 = (raw(7, "InputTensor", 1, 10_000) >> np.uint64(11)).astype(np.float64) * 2.0**-53
    z = np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(2.0 * np.pi * u2)
    got = gen("normal", DataType.FLOAT32, (10_000,), params={"Mean": 3.0, "Std": 2.0})
    np.testing.assert_allclose(got, (3.0 + 2.0 * z).astype(np.float32), rtol=1e-6, atol=1e-6)
    assert abs(float(got.mean()) - 3.0) < 0.1
    assert abs(float(got.std()) - 2.0) < 0.1


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_uniform_float_range(data_type: DataType) -> None:
    values = gen("uniform", data_type, (5000,), params={"Low": 2.0, "High": 3.0})
    assert values.min() >= 2.0 and values.max() <= 3.0
    assert len(np.unique(values)) > 100


@pytest.mark.parametrize("data_type", INT_TYPES)
def test_uniform_int_clamps_to_dtype_range(data_type: DataType) -> None:
    info = np.iinfo(numpy_dtype(data_type))
    values = gen("uniform", data_type, (5000,), params={"Low": -1e12, "High": 1e12}).astype(np.int64)
    assert values.min() >= info.min and values.max() <= info.max
    assert values.min() < 0 if info.min < 0 else values.min() >= 0


@pytest.mark.parametrize("data_type", ALL_TYPES)
def test_integers_inclusive_bounds(data_type: DataType) -> None:
    values = gen("integers", data_type, (2000,), params={"Low": 3, "High": 6})
    assert set(values.astype(np.float64).tolist()) == {3.0, 4.0, 5.0, 6.0}


@pytest.mark.parametrize("data_type", ALL_TYPES)
@pytest.mark.parametrize("distinct", [1, 2, 4, 7])
def test_ties_really_tie(data_type: DataType, distinct: int) -> None:
    values = gen("ties", data_type, (3, 70), params={"Distinct": distinct, "Low": 1, "Step": 2})
    levels, counts = np.unique(values, return_counts=True)
    assert levels.astype(np.float64).tolist() == [1.0 + 2.0 * k for k in range(distinct)]
    assert counts.max() - counts.min() <= 1  # balanced: every value present, many equal elements


def test_ties_default_and_unrepresentable() -> None:
    assert len(np.unique(gen("ties", DataType.UINT8, (16,)))) == 4
    with pytest.raises(ValueError, match="exact"):
        gen("ties", DataType.FLOAT16, params={"Low": 2049})
    with pytest.raises(ValueError, match="exact"):
        gen("ties", DataType.UINT8, params={"Low": -1})


def _bits(values: np.ndarray) -> set[int]:
    width = np.dtype(f"u{values.dtype.itemsize}")
    return set(values.view(width).tolist())


@pytest.mark.parametrize("data_type", FLOAT_TYPES)
def test_special_floats_contain_every_special_value(data_type: DataType) -> None:
    dtype = numpy_dtype(data_type)
    info = np.finfo(dtype)
    tiny, normal, top = float(info.smallest_subnormal), float(info.smallest_normal), float(info.max)
    values = gen("special", data_type, (200,))
    wanted = np.array([np.inf, -np.inf, 0.0, -0.0, tiny, normal - tiny, -top, top], dtype=dtype)
    assert _bits(wanted) <= _bits(values)
    assert np.count_nonzero(np.isnan(values)) == 10  # 100 special slots dealt round-robin over 11 values
    finite = values[np.isfinite(values)]
    assert ((np.abs(finite) <= 1.0) | (np.abs(finite) == top)).all()  # ordinary values: uniform(-1, 1)


@pytest.mark.parametrize("data_type", INT_TYPES)
def test_special_ints_contain_min_max_and_small(data_type: DataType) -> None:
    info = np.iinfo(numpy_dtype(data_type))
    values = set(gen("special", data_type, (100,)).astype(np.int64).tolist())
    assert {int(info.min), int(info.max), 0, 1} <= values
    assert (-1 in values) == (info.min < 0)


def test_special_fraction() -> None:
    assert np.isfinite(gen("special", DataType.FLOAT16, (500,), params={"Fraction": 0.0})).all()
    every = gen("special", DataType.FLOAT32, (22,), params={"Fraction": 1.0})
    assert np.count_nonzero(np.isnan(every)) == 2  # 11 special values, each used twice
    with pytest.raises(ValueError, match="Fraction"):
        gen("special", params={"Fraction": 1.5})


def test_arange_exact_and_wrapping() -> None:
    assert gen("arange", DataType.FLOAT32, (2, 3), params={"Start": -1, "Step": 0.5}).tolist() == [
        [-1.0, -0.5, 0.0],
        [0.5, 1.0, 1.5],
    ]
    wrapped = gen("arange", DataType.INT8, (300,)).astype(np.int64)
    assert wrapped.tolist() == [(i + 128) % 256 - 128 for i in range(300)]
    down = gen("arange", DataType.UINT8, (4,), params={"Start": 1, "Step": -1})
    assert down.tolist() == [1, 0, 255, 254]
    big = gen("arange", DataType.UINT32, (3,), params={"Start": 4294967295, "Step": 1})
    assert big.tolist() == [4294967295, 0, 1]


def test_arange_errors() -> None:
    with pytest.raises(ValueError, match="overflows"):
        gen("arange", DataType.FLOAT16, (70_000,))
    with pytest.raises(ValueError, match="integral"):
        gen("arange", DataType.INT32, params={"Step": 0.5})


def test_bad_generators() -> None:
    with pytest.raises(ValueError, match="unknown generator kind"):
        gen("gaussian")
    with pytest.raises(ValueError, match="no parameter Mean"):
        gen("uniform", params={"Mean": 1})
    with pytest.raises(ValueError, match="non-negative"):
        gen("uniform", seed=-1)


def test_data_is_row_major_and_keeps_negative_zero() -> None:
    spec = TensorSpec((1, 2, 3), DataType.FLOAT32, data=(1.0, 2.0, 3.0, 4.0, -0.0, math.nan))
    values = materialize(spec)
    assert values.shape == (1, 2, 3)
    assert values[0, 1, 0] == 4.0 and values[0, 0, 2] == 3.0
    assert math.copysign(1.0, float(values[0, 1, 1])) == -1.0
    assert np.isnan(values[0, 1, 2])


def test_data_float16_rounds_directly_from_float64() -> None:
    # 1 + 2**-11 + 2**-40 is just above the halfway point between float16 1.0 and 1 + 2**-10: it must round up
    # (via float32 it would first become the exact tie 1 + 2**-11 and round to even, down to 1.0).
    values = materialize(TensorSpec((1,), DataType.FLOAT16, data=(1 + 2**-11 + 2**-40,)))
    assert float(values[0]) == 1 + 2**-10


@pytest.mark.parametrize("data_type", ALL_TYPES)
def test_data_all_types(data_type: DataType) -> None:
    values = materialize(TensorSpec((2, 2), data_type, data=(0, 1, 2, 100)))
    assert values.dtype == numpy_dtype(data_type)
    assert values.tolist() == [[0, 1], [2, 100]]


def test_data_errors() -> None:
    with pytest.raises(ValueError, match="3 elements"):
        materialize(TensorSpec((2, 2), DataType.FLOAT32, data=(1.0, 2.0, 3.0)))
    with pytest.raises(ValueError, match="not a UINT8"):
        materialize(TensorSpec((2,), DataType.UINT8, data=(1.0, 256.0)))
    with pytest.raises(ValueError, match="not a INT32"):
        materialize(TensorSpec((2,), DataType.INT32, data=(1.5, 2.0)))


def _case(descriptor: TopK1Desc | Mvn1Desc, operator: Operator) -> Case:
    return Case("c", "c.yaml", operator, FeatureLevel(4, 0), descriptor, layouts=case_layouts(operator, descriptor))


def test_case_inputs_names_and_distinct_streams() -> None:
    uniform = Generator("uniform", 5, {})
    spec = TensorSpec((1, 2, 8), DataType.FLOAT16, generator=uniform)
    topk = _case(TopK1Desc(spec, 2, 3, AxisDirection.DECREASING), Operator.TOP_K1)
    assert set(case_inputs(topk)) == {"InputTensor"}
    mvn = _case(Mvn1Desc(spec, spec, spec, (2,), True, 1e-5, None), Operator.MEAN_VARIANCE_NORMALIZATION1)
    inputs = case_inputs(mvn)
    assert set(inputs) == {"InputTensor", "ScaleTensor", "BiasTensor"}
    assert inputs["InputTensor"].tobytes() == materialize(spec).tobytes()
    blobs = {name: array.tobytes() for name, array in inputs.items()}
    assert len(set(blobs.values())) == 3
    no_scale = _case(Mvn1Desc(spec, None, None, (2,), True, 1e-5, None), Operator.MEAN_VARIANCE_NORMALIZATION1)
    assert set(case_inputs(no_scale)) == {"InputTensor"}


# -- generated values kept for the next case with the same generator (a sweep's cases share their inputs) ----------


def test_a_generator_s_values_are_kept_read_only_and_equal_to_a_fresh_generation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from collections import OrderedDict

    from conformance.cases import generate, generate_kinds

    monkeypatch.setattr(generate, "_kept", OrderedDict())
    monkeypatch.setattr(generate, "_kept_bytes", [0])
    ties = Generator("ties", 7, {"Distinct": 3.0})
    first = generate._generated(ties, DataType.FLOAT32, 1000, "InputTensor")
    again = generate._generated(ties, DataType.FLOAT32, 1000, "InputTensor")
    assert again is first  # kept: the argsort behind "ties" is not done again
    assert np.array_equal(first, generate_kinds.generate(ties, DataType.FLOAT32, 1000, "InputTensor"))
    with pytest.raises(ValueError, match="read-only"):  # a caller that writes into an input fails, not the next case
        first[0] = 1.0
    other = generate._generated(Generator("ties", 8, {"Distinct": 3.0}), DataType.FLOAT32, 1000, "InputTensor")
    scale = generate._generated(ties, DataType.FLOAT32, 1000, "ScaleTensor")
    assert not np.array_equal(other, first) and not np.array_equal(scale, first)  # seed and name are in the key


def test_the_kept_values_are_bounded_in_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    from collections import OrderedDict

    from conformance.cases import generate

    monkeypatch.setattr(generate, "_kept", OrderedDict())
    monkeypatch.setattr(generate, "_kept_bytes", [0])
    monkeypatch.setattr(generate, "_KEPT_BYTES", 3 * 4000)  # three 1000-element float32 tensors
    for seed in range(5):
        generate._generated(Generator("uniform", seed), DataType.FLOAT32, 1000, "InputTensor")
    assert [key[1] for key in generate._kept] == [2, 3, 4] and generate._kept_bytes == [12000]

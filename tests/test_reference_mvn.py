"""reference.mean_variance_normalization1 against onnxruntime's InstanceNormalization and an independent
per-group float64 formula (math.fsum)."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from numpy.typing import NDArray
from onnx import TensorProto, helper

from reference.mean_variance_normalization1 import mean_variance_normalization1

F32_EPS_1E5 = float(np.float32(1e-5))  # Epsilon is a FLOAT field: the operator receives float32(1e-5)


def _ort_instance_norm(x: NDArray[Any], scale: NDArray[Any], bias: NDArray[Any], epsilon: float) -> Any:
    node = helper.make_node("InstanceNormalization", ["X", "S", "B"], ["Y"], epsilon=epsilon)
    channels = x.shape[1]
    graph = helper.make_graph(
        [node],
        "instance_norm",
        [
            helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape)),
            helper.make_tensor_value_info("S", TensorProto.FLOAT, [channels]),
            helper.make_tensor_value_info("B", TensorProto.FLOAT, [channels]),
        ],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(x.shape))],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 6)])
    model.ir_version = 9
    options = ort.SessionOptions()
    options.log_severity_level = 3  # opset 6 is "legacy support" to onnxruntime: keep its warnings out of the log
    session = ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
    return session.run(None, {"X": x, "S": scale, "B": bias})[0]


@pytest.mark.parametrize("seed", range(6))
def test_spatial_axes_match_onnxruntime_instance_normalization(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, c, h, w = (int(v) for v in rng.integers(1, 9, size=4))
    x = (rng.standard_normal((n, c, h, w)) * rng.uniform(0.1, 10) + rng.uniform(-5, 5)).astype(np.float32)
    scale = rng.uniform(-2, 2, size=c).astype(np.float32)
    bias = rng.uniform(-2, 2, size=c).astype(np.float32)
    epsilon = [1e-5, 1e-3, 0.5][seed % 3]
    ours = mean_variance_normalization1(x, (2, 3), scale.reshape(1, c, 1, 1), bias.reshape(1, c, 1, 1), epsilon=epsilon)
    assert ours.dtype == np.float32 and ours.shape == x.shape
    # onnxruntime accumulates in float32 (observed: <= 1.4e-6 here): ~16 float32 ulps at 1.0.
    np.testing.assert_allclose(ours, _ort_instance_norm(x, scale, bias, epsilon), rtol=2e-6, atol=2e-6)


def _independent(
    x: NDArray[Any],
    axes: tuple[int, ...],
    scale: NDArray[Any] | None,
    bias: NDArray[Any] | None,
    normalize_variance: bool,
    epsilon: float,
    activation: Any = None,
) -> NDArray[np.float64]:
    """One group at a time with exactly rounded sums: mean = fsum/n, variance = fsum((v - mean)^2)/n."""
    x64 = x.astype(np.float64)
    s = np.broadcast_to(1.0 if scale is None else scale.astype(np.float64), x.shape)
    b = np.broadcast_to(0.0 if bias is None else bias.astype(np.float64), x.shape)
    kept = [d for d in range(x.ndim) if d not in axes]
    out = np.empty(x.shape, dtype=np.float64)
    for group in np.ndindex(*[x.shape[d] for d in kept]):
        where: list[Any] = [slice(None)] * x.ndim
        for d, i in zip(kept, group, strict=True):
            where[d] = i
        index = tuple(where)
        values = x64[index].ravel().tolist()
        mean = math.fsum(values) / len(values)
        centered = x64[index] - mean
        if normalize_variance:
            variance = math.fsum((v - mean) ** 2 for v in values) / len(values)
            centered = centered / math.sqrt(variance + float(np.float32(epsilon)))
        out[index] = s[index] * centered + b[index]
    return out if activation is None else np.vectorize(activation, otypes=[np.float64])(out)


CASES = {
    "nchw_cross_channel": ((2, 3, 4, 5), (1, 2, 3), (1, 3, 1, 1), (1, 3, 1, 1), True),
    "nchw_not_cross_channel": ((2, 3, 4, 5), (0, 2, 3), (1, 3, 1, 1), (1, 3, 1, 1), True),
    "no_variance": ((2, 3, 4, 5), (2, 3), (1, 3, 1, 1), (1, 3, 1, 1), False),
    "scale_broadcast_hw": ((2, 3, 4, 5), (1,), (1, 1, 4, 5), (2, 1, 1, 5), True),
    "full_scale": ((2, 3, 4, 5), (3,), (2, 3, 4, 5), (1, 1, 1, 1), True),
    "scale_only": ((3, 7), (1,), (1, 7), None, True),
    "bias_only": ((3, 7), (0,), None, (3, 1), False),
    "neither": ((4, 6), (0, 1), None, None, True),
    "rank1": ((17,), (0,), (1,), (1,), True),
    "rank8": ((2, 1, 3, 1, 2, 2, 1, 3), (0, 4, 7), (1, 1, 3, 1, 1, 1, 1, 1), (1, 1, 1, 1, 2, 1, 1, 1), True),
}


@pytest.mark.parametrize("name", CASES)
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_matches_independent_formula(name: str, dtype: str) -> None:
    shape, axes, scale_shape, bias_shape, normalize_variance = CASES[name]
    rng = np.random.default_rng(len(name))
    x = (rng.standard_normal(shape) * 3 + 1).astype(dtype)
    scale = None if scale_shape is None else rng.uniform(-2, 2, scale_shape).astype(dtype)
    bias = None if bias_shape is None else rng.uniform(-2, 2, bias_shape).astype(dtype)
    ours = mean_variance_normalization1(x, axes, scale, bias, normalize_variance, epsilon=1e-5)
    want = _independent(x, axes, scale, bias, normalize_variance, 1e-5)
    assert ours.dtype == x.dtype
    # Both are float64 results rounded once; they may straddle a rounding boundary, hence 1 ulp.
    np.testing.assert_array_max_ulp(ours, want.astype(dtype), maxulp=1)


ACTIVATIONS: Mapping[str, tuple[dict[str, Any], Any]] = {
    "relu": ({"type": "RELU"}, lambda v: max(v, 0.0)),
    "leaky": ({"type": "LEAKY_RELU", "alpha": 0.1}, lambda v: v if v >= 0 else float(np.float32(0.1)) * v),
    "elu_default": ({"type": "ELU"}, lambda v: v if v >= 0 else math.expm1(v)),
    "sigmoid": ({"type": "SIGMOID"}, lambda v: 1 / (1 + math.exp(-v))),
}


@pytest.mark.parametrize("name", ACTIVATIONS)
def test_fused_activation_is_applied_last(name: str) -> None:
    activation, scalar = ACTIVATIONS[name]
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 3, 5)).astype(np.float32)
    scale = rng.uniform(-2, 2, (1, 3, 1)).astype(np.float32)
    bias = rng.uniform(-1, 1, (1, 3, 1)).astype(np.float32)
    ours = mean_variance_normalization1(x, (2,), scale, bias, fused_activation=activation)
    want = _independent(x, (2,), scale, bias, True, 1e-5, scalar)
    np.testing.assert_array_max_ulp(ours, want.astype(np.float32), maxulp=1)


@pytest.mark.parametrize("axes", [(1,), (0,)])
def test_many_blocks_on_threads_match_one_block(axes: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((37, 50)) * 3 + 1).astype(np.float32)
    scale = rng.uniform(-2, 2, (37, 1) if axes == (1,) else (1, 50)).astype(np.float32)
    whole = [
        mean_variance_normalization1(x, axes),
        mean_variance_normalization1(x, axes, scale, scale, fused_activation={"type": "RELU"}),
    ]
    # One group a block: 37 or 50 blocks, on threads (cut across columns when axes == (0,)).
    monkeypatch.setattr(sys.modules["reference.mean_variance_normalization1"], "_BLOCK", 1)
    blocked = [
        mean_variance_normalization1(x, axes),
        mean_variance_normalization1(x, axes, scale, scale, fused_activation={"type": "RELU"}),
    ]
    want = _independent(x, axes, None, None, True, 1e-5)
    np.testing.assert_array_max_ulp(blocked[0], want.astype(np.float32), maxulp=1)
    if axes == (1,):  # contiguous groups: each is reduced alone either way, so the bits agree
        assert all(a.tobytes() == b.tobytes() for a, b in zip(whole, blocked, strict=True))


def test_two_pass_variance_survives_a_large_offset() -> None:
    rng = np.random.default_rng(5)
    # Values ~1e4 with spread ~1e-2: E[x^2] - E[x]^2 would lose most digits to cancellation.
    x = (1e4 + rng.standard_normal((1, 2, 64)) * 1e-2).astype(np.float32)
    ours = mean_variance_normalization1(x, (2,), epsilon=0.0)
    want = _independent(x, (2,), None, None, True, 0.0)
    np.testing.assert_array_max_ulp(ours, want.astype(np.float32), maxulp=1)
    assert abs(float(np.std(ours.astype(np.float64))) - 1.0) < 1e-5


def test_constant_input_gives_bias() -> None:
    x = np.full((1, 2, 3, 3), 7.25, dtype=np.float32)
    bias = np.array([1.5, -2.0], dtype=np.float32).reshape(1, 2, 1, 1)
    scale = np.ones((1, 2, 1, 1), dtype=np.float32)
    out = mean_variance_normalization1(x, (2, 3), scale, bias)
    np.testing.assert_array_equal(out, np.broadcast_to(bias, x.shape))


def test_epsilon_is_rounded_to_float32() -> None:
    x = np.array([[0.0, 2.0e-3]], dtype=np.float64)  # variance 1e-6, comparable to epsilon
    out = mean_variance_normalization1(x, (1,), epsilon=1e-6)
    assert out[0, 1] == 1e-3 / math.sqrt(1e-6 + float(np.float32(1e-6)))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"axes": (4,)}, "out of range"),
        ({"axes": (1, 1)}, "repeat"),
        ({"axes": (1,), "scale": np.ones((1, 3, 1, 2), np.float32)}, "broadcast"),
        ({"axes": (1,), "bias": np.ones((3,), np.float32)}, "dimension"),
    ],
)
def test_invalid_arguments(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        mean_variance_normalization1(np.zeros((1, 3, 2, 3), dtype=np.float32), **kwargs)


def test_integer_input_is_rejected() -> None:
    with pytest.raises(ValueError, match="floating-point"):
        mean_variance_normalization1(np.zeros((2, 2), dtype=np.int32), (1,))

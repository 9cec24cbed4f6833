"""DML_MEAN_VARIANCE_NORMALIZATION1 as ONNX.

Candidates, in order; the first that conveys the descriptor exactly to the EP wins:

1. ``InstanceNormalization-6``: rank >= 3, Axes == {2..rank-1}, NormalizeVariance, Scale/Bias absent (ones/zeros)
   or per-channel (fed as [C]). ONNX semantics are the descriptor's (population variance, Epsilon added to the
   variance). CUDA clamps epsilon up to CUDNN_BN_MIN_EPSILON (onnxruntime/core/providers/cuda/nn/instance_norm.cc,
   ClampCudnnBatchNormEpsilon; 1e-5 in older cuDNN headers), so CUDA gets it only when float32(Epsilon) >= 1e-5
   (each EP's floor is its row's ``instance_norm_min_epsilon`` in conformance/ep_table.py).
2. ``MeanVarianceNormalization-13``: only where the EP's kernel is known to compute the descriptor, since the ONNX
   function body, (X - mean) / (sqrt(E[X^2] - E[X]^2) + 1e-9), matches no Epsilon (each EP's kernel epsilon is its
   row's ``mvn_epsilon`` in conformance/ep_table.py):
   - DmlExecutionProvider: DmlOperatorMeanVarianceNormalization.cpp builds DML MVN1 with Epsilon = DefaultEpsilon
     = 0.00001f (Operators/OperatorUtility.h), no Scale/Bias: exact when float32(Epsilon) == float32(1e-5).
   - CPUExecutionProvider: cpu/tensor/mean_variance_normalization.cc divides by sqrt(mean((X-mean)^2)) with no
     epsilon, float32 only: exact when Epsilon == 0 and the data is FLOAT32.
   - CUDA and WebGPU have no MVN kernel (onnxruntime inlines the function body); other EPs are unknown: never.
   - FLOAT32 only: the function body's float Constant makes a float16 MVN model fail ONNX's checker (full_check)
     and onnxruntime's inlining ("Type parameter (T) of Optype (Add) bound to different types").
3. ``decomposed-MVN``: ReduceMean (axes input, opset 18), Sub, Mul, ReduceMean, Add eps, Sqrt, Div, Mul Scale, Add
   Bias: any descriptor, any EP. FLOAT16 data is Cast to float32 first (Scale/Bias are fed as their exact float32
   values) and the result, activation included, Cast back once at the end: the descriptor's result is float16, and
   computing in half would add error the descriptor does not imply.

Scale and Bias, where the case has them, are graph inputs like the data; only stand-ins (ones, zeros) are constants.

The fused activation follows as a node (or a few); mvn1.py's ``DML_FUSED_ACTIVATIONS`` says which of them
DirectML's EP folds back into the MVN1 operator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from onnx import TensorProto

from conformance.dtypes import numpy_dtype
from conformance.ep.graph import Array, CannotLower, GraphBuilder, LoweredGraph, onnx_type
from conformance.ep_table import ep_facts
from conformance.model import (
    ACTIVATION_PARAMS,
    BIAS_TENSOR,
    INPUT_TENSOR,
    OUTPUT_TENSOR,
    SCALE_TENSOR,
    Activation,
    DataType,
    Descriptor,
    Mvn1Desc,
)

INSTANCE_NORM = "InstanceNormalization-6"
MVN_13 = "MeanVarianceNormalization-13"
DECOMPOSED = "decomposed-MVN"


def per_channel(sizes: Sequence[int], spec_sizes: Sequence[int]) -> bool:
    """Every dimension but 1 is size 1, and dimension 1 is 1 or C."""
    return (
        len(spec_sizes) == len(sizes) >= 2
        and all(s == 1 for i, s in enumerate(spec_sizes) if i != 1)
        and spec_sizes[1] in (1, sizes[1])
    )


def mvn_candidate(desc: Mvn1Desc, ep_name: str) -> str:
    """The lowering that conveys ``desc`` exactly to ``ep_name`` (INSTANCE_NORM, MVN_13 or DECOMPOSED), by what the
    EP table says its kernels compute."""
    kernels = ep_facts(ep_name)
    sizes, eps = desc.input.sizes, np.float32(desc.epsilon)
    plain = desc.normalize_variance and desc.scale is None and desc.bias is None
    spatial = len(sizes) >= 3 and sorted(desc.axes) == list(range(2, len(sizes)))
    channel_ok = all(t is None or per_channel(sizes, t.sizes) for t in (desc.scale, desc.bias))
    if (
        spatial
        and desc.normalize_variance
        and channel_ok
        and (kernels.instance_norm_min_epsilon is None or eps >= np.float32(kernels.instance_norm_min_epsilon))
    ):
        return INSTANCE_NORM
    if (
        plain
        and desc.input.data_type is DataType.FLOAT32
        and kernels.mvn_epsilon is not None
        and eps == np.float32(kernels.mvn_epsilon)
    ):
        return MVN_13
    return DECOMPOSED


def _channel_vector(array: Array | None, channels: int, fill: float, dtype: np.dtype[Any]) -> Array:
    if array is None:
        return np.full(channels, fill, dtype)
    return np.ascontiguousarray(np.broadcast_to(np.asarray(array, dtype).reshape(-1), (channels,)))


def _instance_norm(g: GraphBuilder, desc: Mvn1Desc, inputs: Mapping[str, Array]) -> str:
    dtype, channels = numpy_dtype(desc.input.data_type), desc.input.sizes[1]
    x = g.input(INPUT_TENSOR, np.asarray(inputs[INPUT_TENSOR], dtype))
    params = []
    for key, spec, fill in ((SCALE_TENSOR, desc.scale, 1.0), (BIAS_TENSOR, desc.bias, 0.0)):
        vector = _channel_vector(inputs.get(key) if spec is not None else None, channels, fill, dtype)
        params.append(g.input(key, vector) if spec is not None else g.const(key, vector))
    return g.op("InstanceNormalization", x, *params, epsilon=float(np.float32(desc.epsilon)))


def _decomposed(g: GraphBuilder, desc: Mvn1Desc, inputs: Mapping[str, Array]) -> str:
    x = g.input(INPUT_TENSOR, np.asarray(inputs[INPUT_TENSOR], numpy_dtype(desc.input.data_type)))
    if desc.input.data_type is DataType.FLOAT16:
        x = g.op("Cast", x, to=TensorProto.FLOAT)
    axes = g.const("axes", np.array(sorted(set(desc.axes)), np.int64))
    y = g.op("Sub", x, g.op("ReduceMean", x, axes, noop_with_empty_axes=1))
    if desc.normalize_variance:
        var = g.op("ReduceMean", g.op("Mul", y, y), axes, noop_with_empty_axes=1)
        y = g.op("Div", y, g.op("Sqrt", g.op("Add", var, g.const("epsilon", np.array(desc.epsilon, np.float32)))))
    if desc.scale is not None:
        y = g.op("Mul", y, g.input(SCALE_TENSOR, np.asarray(inputs[SCALE_TENSOR], np.float32)))
    if desc.bias is not None:
        y = g.op("Add", y, g.input(BIAS_TENSOR, np.asarray(inputs[BIAS_TENSOR], np.float32)))
    return y


def _decomposition(g: GraphBuilder, kind: str, x: str, p: Mapping[str, float], dtype: np.dtype[Any]) -> str | None:
    """Activations without a one-node ONNX twin (at these parameters); None for the others."""

    def k(key: str) -> str:
        return g.const(key, np.array(p[key], dtype))

    if kind == "LINEAR":
        return g.op("Add", g.op("Mul", x, k("alpha")), k("beta"))
    if kind == "SCALED_TANH":
        return g.op("Mul", g.op("Tanh", g.op("Mul", x, k("beta"))), k("alpha"))
    if kind == "PARAMETRIC_SOFTPLUS":
        return g.op("Mul", g.op("Softplus", g.op("Mul", x, k("beta"))), k("alpha"))
    if kind == "SWISH":
        return g.op("Mul", x, g.op("Sigmoid", g.op("Mul", x, k("sigmoid_input_scale"))))
    if kind == "SOFTPLUS" and np.float32(p["steepness"]) != 1:
        steepness = k("steepness")
        return g.op("Div", g.op("Softplus", g.op("Mul", x, steepness)), steepness)
    if kind == "HARD_SWISH" and (np.float32(p["alpha"]), np.float32(p["beta"])) != (np.float32(1 / 6), np.float32(0.5)):
        return g.op("Mul", x, g.op("HardSigmoid", x, alpha=p["alpha"], beta=p["beta"]))
    if kind == "PARAMETERIZED_RELU":
        return g.op("PRelu", x, k("alpha"))
    if kind == "GELU":
        g.opset = max(g.opset, 20)
        return g.op("Gelu", x, approximate="none")
    if kind == "SHRINK" and np.float32(p["threshold"]) < 0:
        return _shrink_below_zero(g, x, p, dtype)
    return None


def _shrink_below_zero(g: GraphBuilder, x: str, p: Mapping[str, float], dtype: np.dtype[Any]) -> str:
    # DML's SHRINK reads "x - Bias, if x > Threshold; x + Bias, if x < -Threshold; 0, otherwise" and ONNX Shrink
    # tests x < -lambd first. The two pieces overlap only when Threshold < 0 (between Threshold and -Threshold),
    # where the first piece written wins (the fuzzer found ONNX's order there). So DML's pieces are spelled out
    # in its order; NaN, in neither piece, gives 0 as in both.
    # Threshold and Bias are FLOAT: a float16 input is compared and shifted in float32, then rounded once.
    y = g.op("Cast", x, to=TensorProto.FLOAT) if dtype == np.float16 else x
    threshold, bias = p["threshold"], g.const("bias", np.array(p["bias"], np.float32))
    below = g.op("Less", y, g.const("negative_threshold", np.array(-threshold, np.float32)))
    otherwise = g.op("Where", below, g.op("Add", y, bias), g.const("zero", np.array(0, np.float32)))
    above = g.op("Greater", y, g.const("threshold", np.array(threshold, np.float32)))
    y = g.op("Where", above, g.op("Sub", y, bias), otherwise)
    return g.op("Cast", y, to=TensorProto.FLOAT16) if dtype == np.float16 else y


# DML activation -> (ONNX op, ((ONNX attribute, DML parameter), ...)) where one node is the activation's twin.
_ONE_NODE: Mapping[str, tuple[str, tuple[tuple[str, str], ...]]] = {
    "IDENTITY": ("Identity", ()),
    "RELU": ("Relu", ()),
    "SIGMOID": ("Sigmoid", ()),
    "TANH": ("Tanh", ()),
    "SOFTSIGN": ("Softsign", ()),
    "SOFTPLUS": ("Softplus", ()),
    "HARD_SWISH": ("HardSwish", ()),
    "ELU": ("Elu", (("alpha", "alpha"),)),
    "CELU": ("Celu", (("alpha", "alpha"),)),
    "LEAKY_RELU": ("LeakyRelu", (("alpha", "alpha"),)),
    "THRESHOLDED_RELU": ("ThresholdedRelu", (("alpha", "alpha"),)),
    "HARD_SIGMOID": ("HardSigmoid", (("alpha", "alpha"), ("beta", "beta"))),
    "SCALED_ELU": ("Selu", (("alpha", "alpha"), ("gamma", "gamma"))),
    "SHRINK": ("Shrink", (("bias", "bias"), ("lambd", "threshold"))),
}


def add_activation(g: GraphBuilder, x: str, act: Activation, dtype: np.dtype[Any]) -> tuple[str, str]:
    """Append ``act`` after tensor ``x`` (of ``dtype``); returns (output tensor, name suffix such as "+Relu")."""
    if act.type not in ACTIVATION_PARAMS:
        raise CannotLower(f"unknown fused activation {act.type}")
    if act.type == "CELU" and dtype == np.float16:
        # ONNX Celu-12: "T : tensor(float)"; any rewrite in float16 would round where DML's CELU does not.
        raise CannotLower("ONNX Celu takes float32 only, so a FLOAT16 CELU has no ONNX form")
    p = {**ACTIVATION_PARAMS[act.type], **act.params}
    start = len(g.nodes)
    y = _decomposition(g, act.type, x, p, dtype)
    if y is None:
        op, attrs = _ONE_NODE[act.type]
        y = g.op(op, x, **{attr: p[key] for attr, key in attrs})
    return y, "".join(f"+{n.op_type}" for n in g.nodes[start:])


def lower_mvn1(desc: Descriptor, inputs: Mapping[str, Array], ep_name: str) -> LoweredGraph:
    assert isinstance(desc, Mvn1Desc)
    if not desc.input.data_type.is_float:
        raise CannotLower(
            f"MEAN_VARIANCE_NORMALIZATION1 on {desc.input.data_type.value} data has no ONNX form "
            "(InstanceNormalization, MeanVarianceNormalization and the decomposition take floats)"
        )
    g, kind = GraphBuilder(), mvn_candidate(desc, ep_name)
    dtype = numpy_dtype(desc.input.data_type)
    if kind == INSTANCE_NORM:
        y = _instance_norm(g, desc, inputs)
    elif kind == MVN_13:
        y = g.op(
            "MeanVarianceNormalization",
            g.input(INPUT_TENSOR, np.asarray(inputs[INPUT_TENSOR], dtype)),
            axes=sorted(set(desc.axes)),
        )
    else:
        y = _decomposed(g, desc, inputs)
    compute = np.dtype(np.float32) if kind == DECOMPOSED else dtype
    suffix = ""
    if desc.fused_activation is not None:
        y, suffix = add_activation(g, y, desc.fused_activation, compute)
    if compute != dtype:
        y = g.op("Cast", y, to=TensorProto.FLOAT16)
    return LoweredGraph(kind + suffix, g, ((OUTPUT_TENSOR, y, onnx_type(desc.input.data_type), desc.input.sizes),))

"""Benchmark: the oracle (reference/) against onnxruntime's CPU EP doing the same work on the same data, in the
same process. Prints a table of times, ratios and the oracle's peak memory against the input's size.

    python benchmarks/oracle.py            # the issue's sizes (about 2 GB of memory, a minute)
    python benchmarks/oracle.py --small    # a quick look (sizes / 16)

Targets (issue 6): TOP_K1 within 3x of onnxruntime TopK, MVN1 within 3x of InstanceNormalization, SLICE1 within
2x of a NumPy strided copy, peak memory at most 3x the input.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import TensorProto, helper
from tabulate import tabulate

from conformance.ep.graph import IR_VERSION  # what onnxruntime 1.31 (the GPU machine's) still reads
from reference.mean_variance_normalization1 import mean_variance_normalization1
from reference.slice1 import slice1
from reference.top_k1 import top_k1


def seconds(function: Callable[[], Any]) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start


def race(oracle: Callable[[], Any], reference: Callable[[], Any], rounds: int) -> tuple[float, float]:
    """Each side's best time over ``rounds`` interleaved rounds, the two taking turns to go first: on a small, shared
    machine a burst of load then slows both sides alike instead of one side's whole series."""
    oracle_times, reference_times = [], []
    for round_ in range(rounds):
        if round_ % 2:
            reference_times.append(seconds(reference))
        oracle_times.append(seconds(oracle))
        if not round_ % 2:
            reference_times.append(seconds(reference))
    return min(oracle_times), min(reference_times)


def peak_ratio(function: Callable[[], Any], input_bytes: int) -> float:
    """The peak of NumPy's allocations while ``function`` runs, as a multiple of the input's size."""
    tracemalloc.start()
    function()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak / input_bytes


def session(
    node: onnx.NodeProto,
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    initializers: list[onnx.TensorProto],
    opset: int,
) -> Any:
    graph = helper.make_graph([node], "bench", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_VERSION)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])


def top_k_row(rows: int, n: int, k: int, rounds: int) -> list[object]:
    x = np.random.default_rng(1).integers(0, 100, (rows, n)).astype(np.float32)  # heavy ties: 100 values
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=1, sorted=1)
    s = session(
        node,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [
            helper.make_tensor_value_info("v", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("i", TensorProto.INT64, None),
        ],
        [helper.make_tensor("k", TensorProto.INT64, [1], [k])],
        11,
    )
    oracle, onnxruntime = race(lambda: top_k1(x, 1, k), lambda: s.run(None, {"x": x}), rounds)
    argsort = seconds(lambda: np.argsort(-x, axis=1, kind="stable")[:, :k])
    return [
        f"TOP_K1 {rows}x{n}, K {k}, 100 values",
        oracle,
        onnxruntime,
        oracle / onnxruntime,
        f"stable argsort {argsort / onnxruntime:.1f}x",
        peak_ratio(lambda: top_k1(x, 1, k), x.nbytes),
    ]


def mvn_row(n: int, c: int, spatial: int, rounds: int) -> list[object]:
    x = np.random.default_rng(2).normal(3, 2, (n, c, spatial)).astype(np.float32)
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)
    s = session(
        node,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [
            helper.make_tensor("s", TensorProto.FLOAT, [c], [1.0] * c),
            helper.make_tensor("b", TensorProto.FLOAT, [c], [0.0] * c),
        ],
        6,
    )
    oracle, onnxruntime = race(lambda: mean_variance_normalization1(x, (2,)), lambda: s.run(None, {"x": x}), rounds)
    return [
        f"MVN1 {n}x{c}x{spatial} ({x.size / 2**20:.0f} M), axes [2]",
        oracle,
        onnxruntime,
        oracle / onnxruntime,
        "",
        peak_ratio(lambda: mean_variance_normalization1(x, (2,)), x.nbytes),
    ]


def slice_row(shape: tuple[int, ...], rounds: int) -> list[object]:
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    offsets, sizes, strides = [1] * len(shape), [s - 2 for s in shape], [-2] + [3] * (len(shape) - 1)
    oracle, numpy = race(lambda: slice1(x, offsets, sizes, strides), lambda: x[::-2, 1:-1:3, 1:-1:3].copy(), rounds)
    return [
        f"SLICE1 {'x'.join(map(str, shape))}, strides -2/3/3",
        oracle,
        numpy,
        oracle / numpy,
        "vs NumPy copy",
        peak_ratio(lambda: slice1(x, offsets, sizes, strides), x.nbytes),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="sizes / 16, for a quick look")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds per row, best kept (default 7)")
    args = parser.parse_args()
    scale = 16 if args.small else 1
    rows = [
        top_k_row(256 // scale, 65_536, 1_000, args.rounds),
        mvn_row(4, 64 // scale, 262_144, args.rounds),
        slice_row((512 // scale, 1024, 64), args.rounds),
    ]
    headers = ["case", "oracle s", "reference s", "ratio", "note", "oracle peak / input"]
    print(tabulate(rows, headers, floatfmt=".3f"))


if __name__ == "__main__":
    main()

"""Benchmark: how cost grows with tensor size. For each operator, over float32 inputs of 2^8 to 2^24 elements, the
oracle (reference/), onnxruntime's CPU EP running the equivalent ONNX op (TopK-11, InstanceNormalization-6,
Slice-13; session created outside the timing) and the whole pipeline for one case of that size (a case file read,
validated, generated, the oracle, lowered, a session, the run, compared, recorded), in one process, on the same
data. Prints a table and writes a log-log plot of time per element (docs/scaling.svg) and the numbers (.csv).

    python benchmarks/scaling.py                 # 2^8 .. 2^24 elements, every 2 powers, 2 rounds (5 minutes)
    python benchmarks/scaling.py --max-log2 20   # stop at 2^20
    python benchmarks/scaling.py --quick         # 2^8 .. 2^20 every 4 powers, few repeats; writes no file

Shapes: TOP_K1 rows x axis (rows 2^(L/3)), K = axis / 64, 100 distinct values (heavy ties); MVN1 2 x C x H x W
normalised over H and W; SLICE1 a 3-D window of all but the edges, strides -2/3/3 (about 1/18 of the input copied).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import TensorProto, helper
from oracle import race, seconds, session  # benchmarks/oracle.py: this script's folder is on sys.path
from tabulate import tabulate

from conformance.cases.generate import case_inputs
from conformance.cases.suite import collect
from conformance.ep.providers import EpSpec, parse_ep
from conformance.model import INPUT_TENSOR, Case, Status
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.run.runner import execute_prepared, prepare
from reference.mean_variance_normalization1 import mean_variance_normalization1
from reference.slice1 import slice1
from reference.top_k1 import top_k1

WHATS = ("oracle", "onnxruntime", "pipeline")
COLOURS = {"oracle": "#1f77b4", "onnxruntime": "#ff7f0e", "pipeline": "#2ca02c"}
# TopK-11, InstanceNormalization-6 and Slice-13 are the versions in force at opset 13 (opset 6 makes onnxruntime warn).
OPSET = 13
DOCS = Path(__file__).resolve().parent.parent / "docs"


@dataclass(frozen=True)
class Workload:
    """One operator at one size: its case file, the oracle's call and onnxruntime's run on the case's own data."""

    operator: str
    shape: tuple[int, ...]
    note: str
    path: str
    oracle: Callable[[], Any]
    onnxruntime: Callable[[], Any]
    agree: Callable[[], bool]  # whether the oracle and onnxruntime gave the same answer


def _case(folder: str, operator: str, level: str, fields: dict[str, Any]) -> tuple[str, np.ndarray]:
    """A one-case file (JSON is YAML) and the input the harness generates for it."""
    path = str(Path(folder) / f"{operator.lower()}-{math.prod(fields['InputTensor']['Sizes'])}.yaml")
    Path(path).write_text(json.dumps({"operator": operator, "feature_level": level, "cases": [{"id": "c", **fields}]}))
    (entry,) = collect([path]).entries
    assert isinstance(entry, Case), entry
    return path, case_inputs(entry)[INPUT_TENSOR]


def _input(name: str, shape: Sequence[int]) -> Any:
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, list(shape))


def _output(name: str, kind: int = TensorProto.FLOAT) -> Any:
    return helper.make_tensor_value_info(name, kind, None)


def top_k_workload(folder: str, log2: int) -> Workload:
    rows, axis = 2 ** (log2 // 3), 2 ** (log2 - log2 // 3)
    k = max(1, axis // 64)
    generator = {"Kind": "ties", "Seed": 1, "Distinct": 100}
    tensor = {"Sizes": [rows, axis], "DataType": "FLOAT32", "Generator": generator}
    path, x = _case(folder, "TOP_K1", "3_1", {"InputTensor": tensor, "Axis": 1, "K": k})
    node = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1, largest=1, sorted=1)
    k_tensor = helper.make_tensor("k", TensorProto.INT64, [1], [k])
    s = session(node, [_input("x", x.shape)], [_output("v"), _output("i", TensorProto.INT64)], [k_tensor], OPSET)
    return Workload(
        "TOP_K1",
        x.shape,
        f"K {k}",
        path,
        lambda: top_k1(x, 1, k),
        lambda: s.run(None, {"x": x}),
        lambda: bool(np.array_equal(top_k1(x, 1, k)[0], s.run(None, {"x": x})[0])),
    )


def mvn_workload(folder: str, log2: int) -> Workload:
    channels, rest = 2 ** (log2 // 4), log2 - 1 - log2 // 4
    shape = [2, channels, 2 ** (rest // 2), 2 ** (rest - rest // 2)]
    generator = {"Kind": "normal", "Seed": 2, "Mean": 3, "Std": 2}
    tensor = {"Sizes": shape, "DataType": "FLOAT32", "Generator": generator}
    path, x = _case(folder, "MEAN_VARIANCE_NORMALIZATION1", "3_1", {"InputTensor": tensor, "Axes": [2, 3]})
    node = helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"], epsilon=1e-5)
    scale = helper.make_tensor("s", TensorProto.FLOAT, [channels], [1.0] * channels)
    bias = helper.make_tensor("b", TensorProto.FLOAT, [channels], [0.0] * channels)
    s = session(node, [_input("x", x.shape)], [_output("y")], [scale, bias], OPSET)
    return Workload(
        "MVN1",
        x.shape,
        "axes 2, 3",
        path,
        lambda: mean_variance_normalization1(x, (2, 3)),
        lambda: s.run(None, {"x": x}),
        lambda: bool(np.allclose(mean_variance_normalization1(x, (2, 3)), s.run(None, {"x": x})[0], atol=1e-4)),
    )


def slice_workload(folder: str, log2: int) -> Workload:
    first, second = log2 // 3, (log2 - log2 // 3) // 2
    shape = [2**first, 2**second, 2 ** (log2 - first - second)]
    offsets, sizes, strides = [1, 1, 1], [n - 2 for n in shape], [-2, 3, 3]
    tensor = {"Sizes": shape, "DataType": "FLOAT32", "Generator": {"Kind": "uniform", "Seed": 3}}
    window = {"InputWindowOffsets": offsets, "InputWindowSizes": sizes, "InputWindowStrides": strides}
    path, x = _case(folder, "SLICE1", "3_0", {"InputTensor": tensor, **window})
    # The same window in ONNX's terms: the reversed dimension starts at its last element and stops before offset 0.
    starts, ends = [shape[0] - 2, 1, 1], [0, shape[1] - 1, shape[2] - 1]
    named = zip("sead", (starts, ends, [0, 1, 2], strides), strict=True)
    ints = [helper.make_tensor(name, TensorProto.INT64, [3], values) for name, values in named]
    node = helper.make_node("Slice", ["x", "s", "e", "a", "d"], ["y"])
    s = session(node, [_input("x", shape)], [_output("y")], ints, OPSET)
    return Workload(
        "SLICE1",
        x.shape,
        "strides -2/3/3",
        path,
        lambda: slice1(x, offsets, sizes, strides),
        lambda: s.run(None, {"x": x}),
        lambda: bool(np.array_equal(slice1(x, offsets, sizes, strides), s.run(None, {"x": x})[0])),
    )


def pipeline(path: str, ep: EpSpec) -> Result:
    """One case through the whole pipeline, as ``dmlconf run --pack 1`` takes it: read and validate the file,
    generate, the oracle, lower, open a session, run, compare, and record the result."""
    options = RunOptions(pack=1)
    (entry,) = collect([path]).entries
    prepared = prepare(entry, ep, options)
    result = prepared if isinstance(prepared, Result) else execute_prepared(prepared, ep, options)
    json.dumps(result.to_json())
    return result


def measure(workload: Workload, ep: EpSpec, quick: bool) -> dict[str, Any]:
    elements = math.prod(workload.shape)
    repeat = 3 if quick else max(5, min(50, 2**22 // elements))  # more repeats where one is short and noisy
    status = pipeline(workload.path, ep).status
    if status is not Status.PASS or not workload.agree():
        print(f"warning: {workload.operator} {elements}: pipeline {status.value}, agree {workload.agree()}")
    oracle, onnxruntime = race(workload.oracle, workload.onnxruntime, repeat)
    return {
        "operator": workload.operator,
        "elements": elements,
        "shape": "x".join(map(str, workload.shape)),
        "note": workload.note,
        "oracle": oracle,
        "onnxruntime": onnxruntime,
        "pipeline": min(seconds(lambda: pipeline(workload.path, ep)) for _ in range(max(3, repeat // 3))),
    }


def _label(elements: float) -> str:
    for value, suffix in ((2**20, "M"), (2**10, "K")):
        if elements >= value:
            return f"{elements / value:g}{suffix}"
    return f"{elements:g}"


def _decade(power: int) -> str:
    return f"{10.0**power:g}" if -3 <= power <= 3 else f"1e{power}"


def _text(x: float, y: float, words: str, size: int = 13, anchor: str = "middle", extra: str = "") -> str:
    font = 'font-family="Helvetica, Arial, sans-serif"'
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" {font} font-size="{size}" text-anchor="{anchor}"{extra}>{escape(words)}</text>'
    )


def svg_plot(rows: Sequence[dict[str, Any]], title: str, subtitle: str) -> str:
    """Log-log panels, one per operator, of nanoseconds per element against elements, a line per what."""
    operators = list(dict.fromkeys(r["operator"] for r in rows))
    ns = [r[w] * 1e9 / r["elements"] for r in rows for w in WHATS]
    low, high = math.floor(math.log10(min(ns))), math.ceil(math.log10(max(ns)))
    x_low, x_high = (math.log2(f(r["elements"] for r in rows)) for f in (min, max))
    panel, gap, left, top, height = 270, 36, 76, 92, 300
    width, total = left + len(operators) * (panel + gap), top + height + 48

    def x_at(i: int, elements: float) -> float:
        return left + i * (panel + gap) + panel * (math.log2(elements) - x_low) / max(x_high - x_low, 1)

    def y_at(value: float) -> float:
        return top + height * (high - math.log10(value)) / max(high - low, 1)

    middle = top + height / 2
    body = [
        f'<rect width="{width}" height="{total}" fill="white"/>',
        _text(width / 2, 24, title, 16),
        _text(width / 2, 44, subtitle, 12),
        _text(20, middle, "nanoseconds per element (log scale)", extra=f' transform="rotate(-90 20 {middle})"'),
    ]
    for j, what in enumerate(WHATS):  # the legend, across the top
        x = width / 2 - 200 + j * 140
        body.append(f'<line x1="{x}" y1="62" x2="{x + 24}" y2="62" stroke="{COLOURS[what]}" stroke-width="2.5"/>')
        body.append(_text(x + 30, 66, what, anchor="start"))
    for i, operator in enumerate(operators):
        x0, x1 = x_at(i, 2**x_low), x_at(i, 2**x_high)
        body.append(f'<rect x="{x0}" y="{top}" width="{panel}" height="{height}" fill="none" stroke="#888"/>')
        body.append(_text((x0 + x1) / 2, top - 6, operator, 14))
        body.append(_text((x0 + x1) / 2, top + height + 36, "elements (log scale)"))
        for power in range(low, high + 1):
            y = y_at(10.0**power)
            body.append(f'<line x1="{x0}" y1="{y}" x2="{x1}" y2="{y}" stroke="#ddd"/>')
            body.append(_text(x0 - 5, y + 4, _decade(power), 11, "end") if i == 0 else "")
        for power in range(math.ceil(x_low), math.floor(x_high) + 1, 4):
            x = x_at(i, 2**power)
            body.append(f'<line x1="{x}" y1="{top}" x2="{x}" y2="{top + height}" stroke="#ddd"/>')
            body.append(_text(x, top + height + 16, _label(2**power), 11))
        for what in WHATS:
            mine = [r for r in rows if r["operator"] == operator]
            points = [(x_at(i, r["elements"]), y_at(r[what] * 1e9 / r["elements"])) for r in mine]
            line = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(f'<polyline points="{line}" fill="none" stroke="{COLOURS[what]}" stroke-width="2"/>')
            body.extend(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{COLOURS[what]}"/>' for x, y in points)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total}" viewBox="0 0 {width} {total}" '
        f'role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>{"".join(body)}</svg>\n'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-log2", type=int, default=24, help="the largest size, 2^N elements (default 24)")
    parser.add_argument("--quick", action="store_true", help="every 4 powers up to 2^20, 3 repeats, no file written")
    parser.add_argument("--svg", help="the plot's path (default docs/scaling.svg, none with --quick)")
    parser.add_argument("--csv", help="the numbers' path (default docs/scaling.csv, none with --quick)")
    parser.add_argument("--rounds", type=int, help="sweeps, each cell's best kept (default 2, 1 with --quick)")
    args = parser.parse_args()
    args.rounds = args.rounds or (1 if args.quick else 2)
    svg_path = args.svg or (None if args.quick else str(DOCS / "scaling.svg"))
    csv_path = args.csv or (None if args.quick else str(DOCS / "scaling.csv"))
    top, step = (min(args.max_log2, 20), 4) if args.quick else (args.max_log2, 2)
    ep = parse_ep("cpu")
    best: dict[tuple[str, int], dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(args.rounds):  # rounds minutes apart: a burst of load on a shared machine spoils one at most
            for build in (top_k_workload, mvn_workload, slice_workload):
                pipeline(build(folder, 8).path, ep)  # imports and onnxruntime's first session outside the timing
                for log2 in range(8, top + 1, step):
                    row = measure(build(folder, log2), ep, args.quick)
                    seen = best.setdefault((row["operator"], row["elements"]), row)
                    seen.update({w: min(seen[w], row[w]) for w in WHATS})
                    print(".", end="", flush=True)
    print()
    rows = list(best.values())
    table = []
    for r in rows:
        times = [r[w] for w in WHATS]
        derived = [times[0] / times[1], times[2] / times[1], times[2] * 1e9 / r["elements"]]
        table.append([r["operator"], r["elements"], r["shape"], *times, *derived])
    what = "operator|elements|shape|oracle s|onnxruntime s|pipeline s"
    headers = f"{what}|oracle / ort|pipeline / ort|pipeline ns/el".split("|")
    print(tabulate(table, headers, floatfmt=".3g", intfmt=","))
    if csv_path:
        with open(csv_path, "w", newline="") as handle:
            writer = csv.DictWriter(handle, ["operator", "elements", "shape", "note", *WHATS], lineterminator="\n")
            writer.writeheader()
            writer.writerows({**r, **{w: f"{r[w]:.6g}" for w in WHATS}} for r in rows)
    if svg_path:
        title = "Time per element against tensor size (float32, one process, best of N runs)"
        machine = f"onnxruntime {ort.__version__} CPU EP, NumPy {np.__version__}, {os.cpu_count()} cores"
        Path(svg_path).write_text(svg_plot(rows, title, f"{machine}; pipeline: one case, load to verdict"))


if __name__ == "__main__":
    main()

"""Benchmark: the peak memory one case takes, per tensor element, for each operator (cases/memory.py's
BYTES_PER_ELEMENT, issue 26 item 15).

Each measurement runs in a fresh process: a small case first (onnxruntime, its session machinery and NumPy loaded and
warm), then the peak resident set size (VmHWM) is reset (``/proc/self/clear_refs``) and one large case goes through the
whole pipeline on the CPU EP in that process, as ``dmlconf run -j 0`` runs it (inputs generated, the oracle in
float64, the one-node model lowered and executed, the outputs compared and hashed). The growth of the peak over the
resident size before the case, divided by the elements of the case's InputTensor (every other tensor of the three
operators is at most its size), is the case's bytes per element; the table gives it per tensor element (inputs and
outputs, cases/memory.py's ``case_elements``) too. The CPU EP is the worst place: its buffers live in the process
that also holds the oracle's arrays (a GPU EP's are on the device; DirectML's runner is a process of its own).

    python benchmarks/case_memory.py              # 2^23-element inputs (about 1 GB at most, a minute)
    python benchmarks/case_memory.py --log2 20    # a quick look

Linux only (/proc).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

from tabulate import tabulate

# The shapes measured: each operator at its most memory-hungry (full-size Scale and Bias, K near the axis size,
# a window of the whole input), and at its usual (broadcast Scale and Bias, small K, half a window).
CASES = {
    "MVN1 scale and bias full-size": (
        "MEAN_VARIANCE_NORMALIZATION1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: normal, Seed: 1}}}}\n"
        "    ScaleTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: normal, Seed: 2}}}}\n"
        "    BiasTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: normal, Seed: 3}}}}\n"
        "    Axes: [2, 3]",
    ),
    "MVN1 scale and bias broadcast": (
        "MEAN_VARIANCE_NORMALIZATION1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: normal, Seed: 1}}}}\n"
        "    ScaleTensor: {{Sizes: [1, 1, 1, 1], DataType: {t}, Data: [2]}}\n"
        "    BiasTensor: {{Sizes: [1, 1, 1, 1], DataType: {t}, Data: [1]}}\n"
        "    Axes: [3]",
    ),
    "MVN1 no scale or bias": (
        "MEAN_VARIANCE_NORMALIZATION1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: normal, Seed: 1}}}}\n"
        "    Axes: [2, 3]",
    ),
    "TOP_K1 K = axis size - 1": (
        "TOP_K1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
        "    Axis: 3\n    K: {k}",
    ),
    "TOP_K1 K = 8": (
        "TOP_K1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
        "    Axis: 3\n    K: 8",
    ),
    "SLICE1 whole input": (
        "SLICE1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
        "    InputWindowOffsets: [0, 0, 0, 0]\n    InputWindowSizes: [1, 1, {h}, {w}]\n"
        "    InputWindowStrides: [1, 1, 1, 1]",
    ),
    "SLICE1 every other row": (
        "SLICE1",
        "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
        "    InputWindowOffsets: [0, 0, 0, 0]\n    InputWindowSizes: [1, 1, {h}, {w}]\n"
        "    InputWindowStrides: [1, 1, 2, 1]",
    ),
}
TYPES = {
    "MEAN_VARIANCE_NORMALIZATION1": ["FLOAT32", "FLOAT16"],
    "TOP_K1": ["FLOAT32", "FLOAT16", "INT8", "UINT32"],
    "SLICE1": ["FLOAT32", "FLOAT16", "INT8"],
}
FEATURE_LEVEL = "4_0"

# Run in the child: the case file named on the command line, one warm-up case then the measured one.
CHILD = r"""
import json, math, sys
from conformance.cases.memory import case_elements
from conformance.cases.suite import read_file
from conformance.ep.providers import parse_ep
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

def status(field):
    with open("/proc/self/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field + ":"))

entries, problems = read_file(sys.argv[1], 1 << 30)
assert not problems, problems
warm, case = entries
cpu, options = parse_ep("cpu"), RunOptions(max_elements=1 << 30)
run_entry(warm, cpu, options)
before = status("VmRSS")
with open("/proc/self/clear_refs", "w") as handle:
    handle.write("5")  # the peak (VmHWM) starts again from the resident size now
result = run_entry(case, cpu, options)
grew = status("VmHWM") - before
inputs = math.prod(case.descriptor.input.sizes)
print(json.dumps({"status": result.status.value, "grew": grew, "elements": case_elements(case), "inputs": inputs}))
"""


def measure(operator: str, body: str, data_type: str, log2: int) -> dict[str, int | str]:
    """One case of ``2**log2`` input elements, measured in a fresh process."""
    h = 1 << (log2 // 2)
    w = 1 << (log2 - log2 // 2)
    case = body.format(h=h, w=w, t=data_type, k=w - 1)
    warm = body.format(h=2, w=16, t=data_type, k=15)
    text = (
        f'operator: {operator}\nfeature_level: "{FEATURE_LEVEL}"\ncases:\n'
        f"  - id: warm\n    {warm}\n  - id: measured\n    {case}\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        handle.write(text)
    try:
        done = subprocess.run([sys.executable, "-c", CHILD, handle.name], capture_output=True, text=True)
    finally:
        os.unlink(handle.name)
    if done.returncode:
        raise SystemExit(f"{operator} {data_type}: the measuring process failed:\n{done.stderr}")
    found: dict[str, int | str] = json.loads(done.stdout.splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log2", type=int, default=23, help="log2 of the input's elements (default 23)")
    args = parser.parse_args()
    rows = []
    for name, (operator, body) in CASES.items():
        for data_type in TYPES[operator]:
            found = measure(operator, body, data_type, args.log2)
            grew, inputs, elements = int(found["grew"]), int(found["inputs"]), int(found["elements"])
            row = [name, data_type, found["status"], inputs, elements, f"{grew / 2**20:.0f}"]
            rows.append([*row, f"{grew / inputs:.1f}", f"{grew / elements:.1f}"])
            print(*rows[-1], sep="\t", file=sys.stderr, flush=True)
    headers = ["case", "type", "status", "input elements", "tensor elements", "peak growth (MiB)", "per input element"]
    print(tabulate(rows, headers=[*headers, "per tensor element"], tablefmt="github"))


if __name__ == "__main__":
    main()

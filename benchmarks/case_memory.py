"""Benchmark: the peak memory one case takes, against cases/memory.py's estimate (issue 26 item 15, issue 35 item 2).

Two tables, each measurement in a fresh process: a small case of the same operator and data type first (onnxruntime,
its session machinery, NumPy and, on a DirectML EP, the DirectML runner and its device loaded and warm), then the peak
resident set size (VmHWM) of the process and of each DirectML runner it started is reset (``/proc/PID/clear_refs``)
and one large case goes through the whole pipeline in that process, as ``dmlconf run -j 0`` runs it (inputs
generated, the oracle in float64, the case executed, the outputs compared and hashed). Its peak is the growth of the
process's peak over its resident size before the case, plus the same growth of the runner's (a process of its own,
under Wine: what neither getrusage nor GNU time counts), each process's peak summed.

``estimate`` (the default): the issue's cases, each on each --ep (default cpu, dml and dmlop), the estimate of
cases/memory.py on that EP's path (ep/memory.py) against the measured peak. A case refused by default on a path
(--max-case-bytes' default) says so; one whose estimate is over --budget is not run at all (the refusal is what is
shown). Ratios are given where the measured peak is over 64 MiB (below it a case's peak is the allocator's noise).

``elements``: the harness's own work per InputTensor element for each operator on the CPU EP, where the EP's buffers
share the process with the oracle's (cases/memory.py's BYTES_PER_ELEMENT), over the operators' data types and their
most and least memory-hungry shapes.

    python benchmarks/case_memory.py                        # the issue's cases on cpu, dml, dmlop (~14 GiB at most)
    python benchmarks/case_memory.py --ep dmlop --case topk  # one case (a substring of its name), one EP
    python benchmarks/case_memory.py elements --log2 20     # the per-element table, a quick look (2^23 by default)

Linux only (/proc). Run the estimate table alone on the machine (flock /tmp/bigmem.lock ...): it takes up to ~10 GiB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

from tabulate import tabulate

FEATURE_LEVEL = "4_0"
NOISE = 64 << 20  # below this a measured peak is the allocators' noise: no ratio is given

# The cases: (name, operator, the measured case's body and its sizes), all FLOAT32.
SLICE_WHOLE = (
    "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
    "    InputWindowOffsets: [0, 0, 0, 0]\n    InputWindowSizes: [1, 1, {h}, {w}]\n    InputWindowStrides: [1, 1, 1, 1]"
)
TOPK = (
    "InputTensor: {{Sizes: [1, 1, {h}, {w}], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
    "    Axis: 3\n    K: {k}"
)
PADDED_OUTPUT = (
    "InputTensor: {{Sizes: [1, 1, 2, 2], DataType: {t}, Generator: {{Kind: uniform, Seed: 1}}}}\n"
    "    InputWindowOffsets: [0, 0, 0, 0]\n    InputWindowSizes: [1, 1, 2, 2]\n    InputWindowStrides: [1, 1, 1, 1]\n"
    "    OutputTensor: {{TotalTensorSizeInBytes: {total}}}"
)
ESTIMATED = [
    ("topk 1x1x4096x8192 K 8191", "TOP_K1", TOPK, {"h": 4096, "w": 8192, "k": 8191}),
    ("slice 8192^2", "SLICE1", SLICE_WHOLE, {"h": 8192, "w": 8192}),
    ("slice 16384^2", "SLICE1", SLICE_WHOLE, {"h": 16384, "w": 16384}),
    ("slice 4 elements, output 2^30 bytes", "SLICE1", PADDED_OUTPUT, {"total": 1 << 30}),
]
MVN_WARM = "InputTensor: {{Sizes: [1, 1, 2, 16], DataType: {t}, Generator: {{Kind: normal, Seed: 1}}}}\n    Axes: [3]"
WARM = {"TOP_K1": TOPK, "SLICE1": SLICE_WHOLE, "MEAN_VARIANCE_NORMALIZATION1": MVN_WARM}  # sizes: WARM_SIZES
WARM_SIZES = {"h": 2, "w": 16, "k": 15}

# The per-element table's shapes: each operator at its most memory-hungry (full-size Scale and Bias, K near the axis
# size, a window of the whole input), and at its usual (broadcast Scale and Bias, small K, half a window).
PER_ELEMENT = {
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
    "TOP_K1 K = axis size - 1": ("TOP_K1", TOPK),
    "TOP_K1 K = 8": ("TOP_K1", TOPK.replace("{k}", "8")),  # a K of 8 whatever the sizes
    "SLICE1 whole input": ("SLICE1", SLICE_WHOLE),
    "SLICE1 every other row": ("SLICE1", SLICE_WHOLE.replace("[1, 1, 1, 1]", "[1, 1, 2, 1]")),
}
TYPES = {
    "MEAN_VARIANCE_NORMALIZATION1": ["FLOAT32", "FLOAT16"],
    "TOP_K1": ["FLOAT32", "FLOAT16", "INT8", "UINT32"],
    "SLICE1": ["FLOAT32", "FLOAT16", "INT8"],
}

# Run in the child: the case file and the EP named on the command line, one warm-up case then the measured one.
CHILD = r"""
import json, math, os, sys, time
from conformance.cases.limits import FileLimits
from conformance.cases.memory import case_elements
from conformance.cases.suite import read_file
from conformance.ep.providers import parse_ep
from conformance.ep.sessions import Sessions
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

def status(pid, field):
    with open(f"/proc/{pid}/status") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith(field + ":"))

def reset(pid):  # the peak (VmHWM) starts again from the resident size now
    with open(f"/proc/{pid}/clear_refs", "w") as handle:
        handle.write("5")

entries, problems = read_file(sys.argv[1], 1 << 30, FileLimits(max_case_bytes=1 << 50))
assert not problems, problems
warm, case = entries
ep, options = parse_ep(sys.argv[2]), RunOptions(max_elements=1 << 30)
sessions = Sessions(capacity=0)  # no session outlives its case, as a run's
run_entry(warm, ep, options, sessions)
pids = [os.getpid(), *(runner.pid for runner in sessions.runners.held())]
before = {pid: status(pid, "VmRSS") for pid in pids}
for pid in pids:
    reset(pid)
start = time.perf_counter()
result = run_entry(case, ep, options, sessions)
seconds = time.perf_counter() - start
grew = [status(pid, "VmHWM") - before[pid] for pid in pids]
inputs = math.prod(case.descriptor.input.sizes)
print(json.dumps({"status": result.status.value, "harness": grew[0], "runner": sum(grew[1:]), "seconds": seconds,
                  "elements": case_elements(case), "inputs": inputs}))
sessions.runners.close()
"""


def case_file(operator: str, body: str, sizes: dict[str, int], data_type: str) -> str:
    """A case file of a warm-up case and the measured one (``body`` with ``sizes``), of ``data_type``."""
    warm = WARM[operator].format(t=data_type, **WARM_SIZES)
    text = (
        f'operator: {operator}\nfeature_level: "{FEATURE_LEVEL}"\ncases:\n'
        f"  - id: warm\n    {warm}\n  - id: measured\n    {body.format(t=data_type, **sizes)}\n"
    )
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False) as handle:
        handle.write(text)
    return handle.name


def measure(path: str, ep: str) -> dict[str, int | float | str]:
    """The case file's measured case on ``ep``, in a fresh process."""
    done = subprocess.run([sys.executable, "-c", CHILD, path, ep], capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{path} on {ep}: the measuring process failed:\n{done.stderr[-3000:]}")
    found: dict[str, int | float | str] = json.loads(done.stdout.splitlines()[-1])
    return found


def mib(count: float) -> str:
    return f"{count / 2**20:,.0f}"


def estimate_table(eps: Sequence[str], chosen: str | None, budget: int) -> None:
    """The issue's cases: estimate against measured peak on each EP."""
    from conformance.cases.limits import DEFAULT_LIMITS, FileLimits
    from conformance.cases.memory import cost_problem, estimate
    from conformance.cases.suite import read_file
    from conformance.ep.memory import memory_path
    from conformance.ep.providers import parse_ep

    rows = []
    for name, operator, body, sizes in ESTIMATED:
        if chosen is not None and chosen not in name:
            continue
        path = case_file(operator, body, sizes, "FLOAT32")
        try:
            entries, problems = read_file(path, 1 << 30, FileLimits(max_case_bytes=1 << 50))
            assert not problems, problems
            for text in eps:
                ep = parse_ep(text)
                found = estimate(entries[1], memory_path(ep))
                by_default = cost_problem(entries[1], FileLimits(paths=(memory_path(ep),)))
                verdict = "refused" if by_default is not None else "accepted"
                row = [name, text, mib(found.total), verdict]
                if found.total > budget:
                    rows.append([*row, "", "", "", "", "", "not run: over --budget"])
                    print(*rows[-1], sep="\t", file=sys.stderr, flush=True)
                    if by_default is not None:
                        print(f"  {by_default}", file=sys.stderr, flush=True)
                    continue
                got = measure(path, text)
                harness, runner = int(got["harness"]), int(got["runner"])
                peak = harness + runner
                ratio = f"{found.total / peak:.2f}" if peak > NOISE else "(noise)"
                rows.append([*row, mib(harness), mib(runner), mib(peak), ratio, f"{float(got['seconds']):.1f}",
                             str(got["status"])])  # fmt: skip
                print(*rows[-1], sep="\t", file=sys.stderr, flush=True)
        finally:
            os.unlink(path)
    headers = ["case", "EP", "estimate (MiB)", f"by default ({DEFAULT_LIMITS.max_case_bytes >> 30} GiB)"]
    headers += ["harness (MiB)", "runner (MiB)", "measured (MiB)", "estimate / measured", "seconds", "status"]
    print(tabulate(rows, headers=headers, tablefmt="github", disable_numparse=True))


def elements_table(log2: int) -> None:
    """The harness's own work per element on the CPU EP (BYTES_PER_ELEMENT)."""
    rows = []
    h, w = 1 << (log2 // 2), 1 << (log2 - log2 // 2)
    for name, (operator, body) in PER_ELEMENT.items():
        for data_type in TYPES[operator]:
            path = case_file(operator, body, {"h": h, "w": w, "k": w - 1}, data_type)
            try:
                found = measure(path, "cpu")
            finally:
                os.unlink(path)
            grew, inputs, elements = int(found["harness"]), int(found["inputs"]), int(found["elements"])
            row = [name, data_type, found["status"], inputs, elements, f"{grew / 2**20:.0f}"]
            rows.append([*row, f"{grew / inputs:.1f}", f"{grew / elements:.1f}"])
            print(*rows[-1], sep="\t", file=sys.stderr, flush=True)
    headers = ["case", "type", "status", "input elements", "tensor elements", "peak growth (MiB)", "per input element"]
    print(tabulate(rows, headers=[*headers, "per tensor element"], tablefmt="github"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("table", nargs="?", choices=("estimate", "elements"), default="estimate")
    parser.add_argument("--ep", action="append", help="estimate: an EP to measure on (default cpu, dml, dmlop)")
    parser.add_argument("--case", help="estimate: only the cases whose name holds this text")
    parser.add_argument("--budget", type=int, default=12 << 30, help="estimate: run no case estimated over N bytes")
    parser.add_argument("--log2", type=int, default=23, help="elements: log2 of the input's elements (default 23)")
    args = parser.parse_args()
    if args.table == "elements":
        elements_table(args.log2)
    else:
        estimate_table(args.ep or ["cpu", "dml", "dmlop"], args.case, args.budget)


if __name__ == "__main__":
    main()

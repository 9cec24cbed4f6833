"""Benchmark: the whole case library on the CPU EP (``python -m conformance run cases --ep cpu``) against its floor, a
process that does only the irreducible work: for each case that reaches onnxruntime, one session with the harness's
settings (conformance/ep/execute.py's ``_session``: session options, config entries, disabled optimizers, the
intra-op threads of ``RunOptions.session_threads``), its run on the case's feeds, and the oracle on its inputs.

    python benchmarks/cpu_floor.py               # 5 runs of each, alternating
    python benchmarks/cpu_floor.py --runs 9 cases/top_k1

The cases' models, feeds and inputs are prepared once, before any timing, and handed to the floor's process in a
file. Both are timed as whole processes from start to exit (interpreter start and imports included, the floor's
reading of that file too); the floor's loop alone is printed as well. Runs alternate, the order swapped each round,
so that other work on a shared machine weighs on both alike; the figures are medians with their range.
Target (issue 28): the harness within 2x of the floor.
"""

from __future__ import annotations

import argparse
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tabulate import tabulate

FLOOR_FLAG = "--floor-of"


def floor(prepared_file: str) -> None:
    """The floor's process: the oracle, one session and its run per case; prints its loop's seconds."""
    from conformance.cases.oracle import expected_outputs
    from conformance.ep.execute import _session
    from conformance.ep.providers import parse_ep

    ep = parse_ep("cpu")
    with open(prepared_file, "rb") as handle:
        cases = pickle.load(handle)
    start = time.perf_counter()
    for case, inputs, lowering, threads in cases:
        expected_outputs(case, inputs)
        try:
            session = _session(lowering, ep, [], strict=True, threads=threads)
            session.run(None, dict(lowering.feeds))
        except Exception:  # a model the CPU EP refuses costs its attempt, as in the harness
            pass
    print(time.perf_counter() - start)


def prepare_all(paths: Sequence[str]) -> tuple[list[tuple[Any, ...]], int]:
    """Each case that reaches onnxruntime on the CPU EP: its case, inputs, lowering and session threads; and the
    number of cases in the library."""
    from conformance.cases.suite import collect
    from conformance.ep.lower import Lowering
    from conformance.ep.pack import small
    from conformance.ep.providers import parse_ep
    from conformance.run.options import RunOptions
    from conformance.run.runner import Prepared, prepare

    ep, options = parse_ep("cpu"), RunOptions()
    suite = collect(list(paths))
    chosen = []
    for entry in suite.entries:
        prepared = prepare(entry, ep, options)
        if isinstance(prepared, Prepared) and isinstance(prepared.lowering, Lowering):
            threads = options.session_threads(small(prepared.lowering))
            chosen.append((prepared.case, prepared.inputs, prepared.lowering, threads))
    return chosen, len(suite.entries)


def timed(command: list[str]) -> tuple[float, str, int]:
    """Wall seconds of ``command``, its stdout and its exit code."""
    start = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    return time.perf_counter() - start, done.stdout, done.returncode


@dataclass(frozen=True)
class Floor:
    """The harness and its floor, each run ``runs`` times, alternating: wall seconds of each run."""

    total: int  # cases in the paths
    reaching: int  # of them, those that reach onnxruntime
    harness: list[float]
    whole: list[float]  # the floor's whole process
    loop: list[float]  # the floor's loop alone
    codes: set[int]  # the harness's exit codes

    @property
    def ratio(self) -> float:
        """The harness's median over the floor's (its whole process)."""
        return statistics.median(self.harness) / statistics.median(self.whole)


def measure(paths: Sequence[str], runs: int) -> Floor:
    with tempfile.TemporaryDirectory() as folder:
        chosen, total = prepare_all(paths)
        prepared_file = str(Path(folder) / "prepared.pickle")
        with open(prepared_file, "wb") as handle:
            pickle.dump(chosen, handle, protocol=pickle.HIGHEST_PROTOCOL)
        harness_command = [sys.executable, "-m", "conformance", "run", *paths, "--ep", "cpu"]
        harness_command += ["--report-dir", str(Path(folder) / "reports")]
        floor_command = [sys.executable, __file__, FLOOR_FLAG, prepared_file]
        found = Floor(total, len(chosen), [], [], [], set())
        for i in range(runs):
            for which in ("harness", "floor") if i % 2 == 0 else ("floor", "harness"):
                if which == "harness":
                    seconds, _, code = timed(harness_command)
                    found.harness.append(seconds)
                    found.codes.add(code)
                else:
                    seconds, said, code = timed(floor_command)
                    if code != 0:
                        raise SystemExit(f"the floor's process failed (exit {code})")
                    found.whole.append(seconds)
                    found.loop.append(float(said.split()[-1]))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--runs", type=int, default=5, help="runs of each, alternating (default 5)")
    parser.add_argument(FLOOR_FLAG, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.floor_of:
        floor(args.floor_of)
        return
    found = measure(args.paths, args.runs)
    median = statistics.median
    harness, whole, loop = found.harness, found.whole, found.loop
    rows = [
        ["harness: dmlconf run --ep cpu", median(harness), min(harness), max(harness)],
        ["floor: its whole process", median(whole), min(whole), max(whole)],
        ["floor: its loop alone", median(loop), min(loop), max(loop)],
    ]
    print(f"{found.total} cases, {found.reaching} reaching onnxruntime; {args.runs} runs of each, alternating")
    print(f"harness exit codes: {sorted(found.codes)}")
    print(tabulate(rows, ["what", "median s", "min s", "max s"], floatfmt=".2f"))
    print(
        f"harness / floor (medians): {found.ratio:.2f}x (against the floor's loop alone: "
        f"{median(harness) / median(loop):.2f}x); target: at most 2x"
    )


if __name__ == "__main__":
    main()

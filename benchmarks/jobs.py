"""Benchmark: what -j N gains. Prints a table of seconds and speed-ups against -j 1, two ways:

- the run stage alone: every case of the suite (``--repeat R`` times, for a longer run) through ``run_pairs`` on N
  warm workers (started, everything imported and a first session made on the EP before the timing), against one
  such worker (-j 1); this is the part -j N spreads;
- the whole command, ``python -m conformance run PATHS --ep EP -j N``, from start to exit: Python's start, the
  imports, reading the case files, the workers' start and writing the reports included (``--no-command`` skips it).

Each -j N run must give the results of -j 1 (all but the times); the table says whether it did.

    python benchmarks/jobs.py                               # the library on the CPU EP, -j 1 2 4 8 16
    python benchmarks/jobs.py --ep webgpu --jobs 1 4 8 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from tabulate import tabulate

from conformance.cases.parse import Entry
from conformance.cases.suite import collect
from conformance.ep.providers import EpSpec, parse_ep
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.survive.pool import run_pairs
from conformance.survive.supervisor import Supervisor, Task


def _warm(supervisor: Supervisor, entries: Sequence[Entry], ep: EpSpec) -> None:
    """Every worker started, and its first session on the EP (its device context) made, before the timing."""
    supervisor.wait_ready()
    warm_up = [Task([entries[0]], [i], ep, pack=1) for i in range(supervisor.jobs)]  # one to each idle worker
    supervisor.run(warm_up, RunOptions(pack=1), lambda pair, result: None)


def run_stage(entries: Sequence[Entry], ep: EpSpec, jobs: int) -> tuple[float, list[Result]]:
    """Seconds for the run stage on ``jobs`` warm workers, and the results."""
    with Supervisor(jobs, None) as supervisor:
        _warm(supervisor, entries, ep)
        start = time.perf_counter()
        results = run_pairs(entries, [ep], RunOptions(), jobs, lambda: None, supervisor).results
        return time.perf_counter() - start, results


def whole_command(
    paths: Sequence[str], ep: str, jobs: int, folder: str, extra: Sequence[str] = ()
) -> tuple[float, list[object]]:
    """Seconds for ``dmlconf run`` (with ``extra`` arguments) from start to exit, and its results (without times)."""
    report_dir = os.path.join(folder, f"j{jobs}")
    command = [sys.executable, "-m", "conformance", "run", *paths, "--ep", ep, "-j", str(jobs), *extra]
    start = time.perf_counter()
    subprocess.run([*command, "--report-dir", report_dir], check=False, capture_output=True)
    seconds = time.perf_counter() - start
    with open(os.path.join(report_dir, "results.json"), encoding="utf-8") as file:
        results = json.load(file)["results"]
    return seconds, [_comparable(r) for r in results]


# What differs between two runs of the same cases by their timing alone: each result's seconds, and on dmlop each
# step's milliseconds and whether the worker had compiled the descriptor before (each worker keeps its own).
DIRECTML_TIMING = ("milliseconds", "compiled_operator_reused", "dispatches_in_list")


def _comparable(result: dict[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in result.items() if k != "seconds"}
    if "directml" in kept:
        kept["directml"] = {k: v for k, v in kept["directml"].items() if k not in DIRECTML_TIMING}
    return kept


def _untimed(results: Sequence[Result]) -> list[Result]:
    return [replace(result, seconds=0.0) for result in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--ep", default="cpu")
    parser.add_argument("--jobs", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--repeat", type=int, default=4, help="the run stage runs the suite's cases R times")
    parser.add_argument("--no-command", action="store_true", help="time the run stage only")
    args = parser.parse_args()
    ep = parse_ep(args.ep)
    entries = list(collect(args.paths).entries) * args.repeat
    rows: list[list[object]] = []
    first: dict[str, tuple[float, object]] = {}
    with tempfile.TemporaryDirectory() as folder:
        for jobs in args.jobs:
            stage, results = run_stage(entries, ep, jobs)
            row: list[object] = [jobs, stage]
            first.setdefault("stage", (stage, _untimed(results)))
            row += [first["stage"][0] / stage, _untimed(results) == first["stage"][1]]
            if not args.no_command:
                command, verdicts = whole_command(args.paths, args.ep, jobs, folder)
                first.setdefault("command", (command, verdicts))
                row += [command, first["command"][0] / command, verdicts == first["command"][1]]
            rows.append(row)
            print(f"-j {jobs} done", file=sys.stderr)
    headers = ["-j", "run stage s", "speed-up", "same results"]
    headers += [] if args.no_command else ["whole command s", "speed-up", "same results"]
    print(f"{len(entries)} case runs ({args.repeat} x the suite) on {ep.name}, {os.cpu_count()} cores")
    print(tabulate(rows, headers, floatfmt=".2f"))


if __name__ == "__main__":
    main()

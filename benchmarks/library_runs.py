"""Benchmark: whole ``dmlconf run`` commands over the case library, interleaved, as issue 28's targets were measured
(docs/performance.md#directml-at-scale-issue-28): wall time, results.json's duration and peak memory (runners
included) per run, the ratios of their medians, and each run diffed against an older run of the same EP.

    python benchmarks/library_runs.py --rounds 3 --warm "--ep dml -k spec_examples" \\
        --run dml-j1="--ep dml" --run cuda-j1="--ep cuda" --run dml-j8="--ep dml -j 8" --run webgpu="--ep webgpu" \\
        --ratio dml-j1/dml-j8 --ratio dml-j1/cuda-j1 --against dml-j1=OLD/dml/results.json

Each round runs every ``--run`` once, in the order given, so that a machine whose load changes (or warms up) weighs
on all of them alike; ``--warm`` runs once before the first round, untimed (a machine's first DirectML run compiles
its shaders, and the first after a start pays the driver's). ``--ratio A/B``: A's median wall time over B's (how many
times faster B is). ``--against LABEL=PATH``: ``dmlconf diff`` of each of LABEL's runs against the results.json at
PATH, printed as its counts (0 changes: the same verdicts and the same output bits); ``--strip PREFIX`` removes
PREFIX from that file's case ids first (an older tree run from its own folder names its cases from there). A run's
exit code is printed, not judged: the library's known findings fail the gate on a conformant build too.
``--keep DIR`` keeps every run's report folder (default: a temporary one).
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

from tabulate import tabulate

from conformance.gate.diff import RunDiff, diff_runs
from conformance.results import ResultsFile, read_results


@dataclass(frozen=True)
class Timed:
    """One run: its wall seconds, exit code and results.json (None where it wrote none)."""

    label: str
    seconds: float
    code: int
    results: ResultsFile | None


def _pair(text: str, separator: str, what: str) -> tuple[str, str]:
    left, found, right = text.partition(separator)
    if not found or not left or not right:
        raise argparse.ArgumentTypeError(f"{what}: expected LEFT{separator}RIGHT, got {text!r}")
    return left, right


def run_once(label: str, paths: Sequence[str], arguments: Sequence[str], report_dir: str) -> Timed:
    """``dmlconf run PATHS ARGUMENTS`` from start to exit, its reports in ``report_dir``."""
    command = [sys.executable, "-m", "conformance", "run", *paths, *arguments, "--report-dir", report_dir, "--quiet"]
    start = time.perf_counter()
    code = subprocess.run(command, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode
    seconds = time.perf_counter() - start
    path = os.path.join(report_dir, "results.json")
    return Timed(label, seconds, code, read_results(path) if os.path.exists(path) else None)


def _stripped(baseline: ResultsFile, prefix: str) -> ResultsFile:
    if not prefix:
        return baseline
    cases = (replace(r, case=r.case.removeprefix(prefix)) for r in baseline.results)
    return replace(baseline, results=tuple(cases))


def changes(diff: RunDiff) -> str:
    """The diff's counts that are not 0 (``dmlconf diff``'s, RunDiff.counts), in a line; "0 changes" where there
    is nothing to tell."""
    if diff.nothing_compared:
        return "nothing compared: no (case, EP) is in both (another EP, or other case ids: --strip)"
    told = ", ".join(f"{name} {count}" for name, count in diff.counts if count)
    compared = f"{diff.compared} compared, {diff.outputs_compared} outputs bit for bit"
    return f"{told or '0 changes'} ({compared})"


def _spread(values: Sequence[float]) -> tuple[float, float, float]:
    return statistics.median(values), min(values), max(values)


def report(runs: Sequence[Timed], ratios: Sequence[tuple[str, str]]) -> list[str]:
    """The table of runs by label, then each ratio of medians."""
    labels = list(dict.fromkeys(run.label for run in runs))
    rows = []
    walls: dict[str, float] = {}
    for label in labels:
        mine = [run for run in runs if run.label == label]
        wall = _spread([run.seconds for run in mine])
        walls[label] = wall[0]
        read = [run.results for run in mine if run.results is not None]
        durations = [r.environment.duration_s for r in read if r.environment.duration_s is not None]
        peaks = [r.environment.peak_memory.total_mib for r in read if r.environment.peak_memory is not None]
        duration = f"{statistics.median(durations):.2f}" if durations else "-"
        peak = f"{min(peaks)}-{max(peaks)}" if peaks else "-"
        codes = ",".join(str(code) for code in sorted({run.code for run in mine}))
        rows.append([label, len(mine), *wall, duration, peak, codes])
    header = ["run", "runs", "median s", "min s", "max s", "duration_s (median)", "peak MiB", "exit"]
    lines = tabulate(rows, header, floatfmt=".2f").splitlines()
    for numerator, denominator in ratios:
        if numerator in walls and denominator in walls:
            lines.append(f"{numerator} / {denominator} (medians): {walls[numerator] / walls[denominator]:.2f}x")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--run", action="append", required=True, metavar="LABEL=ARGS", help="a run's label and options")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of every --run (default 3)")
    parser.add_argument("--warm", metavar="ARGS", help="options of one untimed run before the first round")
    parser.add_argument("--ratio", action="append", default=[], metavar="A/B", help="A's median wall time over B's")
    parser.add_argument("--against", action="append", default=[], metavar="LABEL=PATH", help="diff LABEL's runs")
    parser.add_argument("--strip", default="", metavar="PREFIX", help="removed from --against files' case ids")
    parser.add_argument("--keep", metavar="DIR", help="keep the report folders here")
    args = parser.parse_args()
    planned = [(label, shlex.split(options)) for label, options in (_pair(r, "=", "--run") for r in args.run)]
    ratios = [_pair(r, "/", "--ratio") for r in args.ratio]
    pairs = [_pair(a, "=", "--against") for a in args.against]
    against = [(label, path, _stripped(read_results(path), args.strip)) for label, path in pairs]
    folder = args.keep or tempfile.mkdtemp(prefix="library-runs-")
    if args.warm:
        run_once("warm", args.paths, shlex.split(args.warm), os.path.join(folder, "warm"))
    runs: list[Timed] = []
    for round_number in range(1, args.rounds + 1):
        for label, options in planned:
            timed = run_once(label, args.paths, options, os.path.join(folder, f"{label}-{round_number}"))
            runs.append(timed)
            print(f"{label} round {round_number}: {timed.seconds:.2f} s, exit {timed.code}", flush=True)
    print("\n".join(report(runs, ratios)))
    for label, path, baseline in against:
        for number, run in enumerate((run for run in runs if run.label == label), 1):
            if run.results is not None:
                diff = diff_runs(baseline.results, run.results.results, baseline.environment, run.results.environment)
                print(f"{label} round {number} against {path}: {changes(diff)}")
    print(f"report folders: {folder}")
    return 1 if any(run.results is None for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())

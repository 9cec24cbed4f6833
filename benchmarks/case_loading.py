"""Benchmark: loading the whole case library (``collect(["cases"])``: reading, composing, parsing, validating every
file), with libyaml composing what it reads as the pure-Python composer does, against the pure composer alone (the
loader before issue 28). Runs alternate between the two in one process; prints the median and range of each, their
ratio, and whether both gave identical suites.

    python benchmarks/case_loading.py              # 15 runs of each
    python benchmarks/case_loading.py --runs 31 cases/top_k1
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Sequence

from tabulate import tabulate

from conformance.cases import load
from conformance.cases.suite import Suite, collect

LIBYAML = load._CLoader  # the loader's one choice, switched here


def timed(paths: Sequence[str], loader: object) -> tuple[float, Suite]:
    """Seconds to collect ``paths`` with ``loader`` as libyaml's loader (None: the pure composer only)."""
    load._CLoader = loader
    try:
        start = time.perf_counter()
        suite = collect(list(paths))
        return time.perf_counter() - start, suite
    finally:
        load._CLoader = LIBYAML


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--runs", type=int, default=15, help="runs of each, alternating (default 15)")
    args = parser.parse_args()
    if LIBYAML is None:
        raise SystemExit("PyYAML was built without libyaml: only the pure composer can run")
    timed(args.paths, LIBYAML)  # imports and first-use costs out of the timing
    pure: list[float] = []
    fast: list[float] = []
    suites: dict[str, Suite] = {}
    runs: list[tuple[str, list[float], object]] = [("pure", pure, None), ("libyaml", fast, LIBYAML)]
    for i in range(args.runs):
        for name, times, loader in runs if i % 2 else runs[::-1]:
            seconds, suites[name] = timed(args.paths, loader)
            times.append(seconds)
    median: Callable[[list[float]], float] = statistics.median
    rows = [[name, median(times), min(times), max(times)] for name, times, _ in runs]
    print(f"collect({args.paths}): {len(suites['pure'].entries)} cases, {args.runs} runs of each, alternating")
    print(tabulate(rows, ["composer", "median s", "min s", "max s"], floatfmt=".3f"))
    print(f"pure / libyaml (medians): {median(pure) / median(fast):.2f}x")
    print(f"identical suites: {suites['pure'] == suites['libyaml']}")


if __name__ == "__main__":
    main()

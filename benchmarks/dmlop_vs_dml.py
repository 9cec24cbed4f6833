"""Benchmark: DirectML's operator API (``--ep dmlop``: each case's descriptor created, compiled and dispatched) against
onnxruntime's DirectML EP (``--ep dml``: a one-node ONNX model's session per case), over the same cases on the same
DirectML. Prints each path's time and the ratio dmlop / dml; the target (issue 27) is a ratio of at most 1.0 over the
whole library on the H100.

    python benchmarks/dmlop_vs_dml.py cases                 # both paths timed, one after the other, each alone
    python benchmarks/dmlop_vs_dml.py --results DIR/results.json   # from one run of --ep dml --ep dmlop

Timed alone, each path's wall time is the whole ``dmlconf run`` (loading, oracle, comparing and reports included,
alike for both). From a results.json, each EP's time is the sum of its results' ``seconds`` (the case's share of
preparing, executing and judging), so both paths are measured in the same run on the same device.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from tabulate import tabulate


def timed_run(paths: list[str], ep: str, extra: list[str]) -> tuple[float, int]:
    """A ``dmlconf run`` of ``paths`` on ``ep`` alone: its wall seconds and the number of results."""
    with tempfile.TemporaryDirectory() as folder:
        start = time.perf_counter()
        command = [sys.executable, "-m", "conformance", "run", *paths, "--ep", ep, "--report-dir", folder, *extra]
        subprocess.run(command, capture_output=True, check=False)
        seconds = time.perf_counter() - start
        results = json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))["results"]
    return seconds, len(results)


def from_results(path: Path) -> dict[str, tuple[float, int]]:
    """Each EP label's summed result seconds and result count in one results.json."""
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for result in json.loads(path.read_text(encoding="utf-8"))["results"]:
        seconds[result["ep"]] += float(result.get("seconds") or 0.0)
        counts[result["ep"]] += 1
    return {ep: (seconds[ep], counts[ep]) for ep in seconds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--results", type=Path, help="a results.json of one --ep dml --ep dmlop run")
    parser.add_argument("--dml", default="dml", help="the onnxruntime path's --ep text")
    parser.add_argument("--dmlop", default="dmlop", help="the operator API's --ep text")
    args, extra = parser.parse_known_args()
    if args.results is not None:
        found = from_results(args.results)
        times = {ep: found[ep] for ep in (args.dml, args.dmlop) if ep in found}
        how = f"summed result seconds in {args.results}"
    else:
        times = {ep: timed_run(args.paths, ep, extra) for ep in (args.dml, args.dmlop)}
        how = "wall seconds of each run alone"
    rows = [
        [ep, f"{seconds:.1f}", count, f"{1000 * seconds / max(count, 1):.1f}"] for ep, (seconds, count) in times.items()
    ]
    print(tabulate(rows, headers=["--ep", "seconds", "results", "ms/result"]))
    if len(times) == 2:
        ratio = times[args.dmlop][0] / max(times[args.dml][0], 1e-9)
        print(f"\ndmlop / dml = {ratio:.2f} ({how}); target: at most 1.0")
    return 0


if __name__ == "__main__":
    sys.exit(main())

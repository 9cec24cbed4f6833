"""Benchmark: what ``dmlconf report`` costs as a run grows (issue 39 item 1: results and reports stay bounded in time
and memory at 100,000 results). Prints one row per size: the seconds ``python -m conformance report RESULTS.json
--out-dir D`` takes from start to exit, its peak resident set size, and the size of results.json and of each report
it writes (report.html, summary.md, junit.xml), with how many of its result rows report.html lists (its bounds,
conformance/report/html.py's MAX_ROWS and MAX_NAMES).

Each results.json is synthesized from a committed run's (default reports/h200-dmlop-modes: 13,552 results on 7 EP
columns, 93% PASS, 3.6% FAIL with their messages and details, INVALID, QUALITY_WARNING, NOT_EXPRESSIBLE): its
environment as it is, its results cycled until there are N, each copy's case renamed (``name~k``) so that every
(case, EP) stays one result; the mix of statuses, EPs, failure kinds and details is the committed run's.

    python benchmarks/report_scale.py                       # 10,000 and 100,000 results
    python benchmarks/report_scale.py --sizes 1000 100000 --template reports/h100-dml-cuda-webgpu/results.json
    python benchmarks/report_scale.py --keep /tmp/scale     # keep the results.json files and reports

Each report runs in a process of its own, from this checkout (its root as the working directory); its peak is its
own (os.wait4's rusage: getrusage(RUSAGE_CHILDREN) would give the largest of every child so far).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from tabulate import tabulate

from conformance.results import Result, read_results, write_results

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "reports" / "h200-dmlop-modes" / "results.json.gz"
REPORTS = ("report.html", "summary.md", "junit.xml")
LISTED = re.compile(r"report\.html lists (\d+) of (\d+) result rows")


def synthesize(template: Sequence[Result], size: int) -> list[Result]:
    """``size`` results: the template's, cycled, each copy after the first renamed ``case~k``."""
    results = []
    for index in range(size):
        copy, result = divmod(index, len(template))
        r = template[result]
        results.append(r if copy == 0 else replace(r, case=f"{r.case}~{copy}"))
    return results


def _megabytes(path: Path) -> str:
    return f"{path.stat().st_size / 1e6:.2f}" if path.exists() else "—"


def _listed(page: Path) -> str:
    """How many of its result rows report.html lists: "21000 of 100014", or "all"."""
    if not page.exists():
        return "—"
    with page.open(encoding="utf-8") as file:
        found = LISTED.search(file.read())
    return f"{found.group(1)} of {found.group(2)}" if found else "all"


def measure(results_json: Path, out_dir: Path) -> tuple[float, float, int]:
    """Seconds and peak RSS (MiB) of ``python -m conformance report`` on ``results_json``, and its exit code (1: a
    verdict that fails, as the committed runs' do without a waiver file)."""
    command = [sys.executable, "-m", "conformance", "report", str(results_json), "--out-dir", str(out_dir)]
    errors = out_dir / "stderr.txt"  # a file, not a pipe: nobody reads a pipe while the report runs
    with errors.open("wb") as stderr:
        start = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL, stderr=stderr)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - start
    process.returncode = code = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait for it again
    if code not in (0, 1):
        raise SystemExit(f"{' '.join(command)} exited {code}:\n{errors.read_text(errors='replace')[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, code  # Linux gives ru_maxrss in KiB


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000], help="results per run")
    parser.add_argument("--template", type=Path, default=TEMPLATE, help="a committed run's results.json(.gz)")
    parser.add_argument("--keep", type=Path, help="a folder to keep each size's results.json and reports in")
    args = parser.parse_args()
    template = read_results(str(args.template))
    with tempfile.TemporaryDirectory() as temporary:
        root = args.keep or Path(temporary)
        rows = []
        for size in args.sizes:
            folder = root / str(size)
            folder.mkdir(parents=True, exist_ok=True)
            results = synthesize(template.results, size)
            results_json = folder / "results.json"
            write_results(str(results_json), template.environment.to_json(), results)
            statuses = Counter(r.status.value for r in results)
            seconds, peak, code = measure(results_json, folder)
            rows.append(
                [
                    size,
                    f"{statuses['PASS']} / {statuses['FAIL']}",
                    len({r.ep for r in results}),
                    f"{seconds:.1f}",
                    f"{peak:.0f}",
                    code,
                    _megabytes(results_json),
                    *(_megabytes(folder / name) for name in REPORTS),
                    _listed(folder / "report.html"),
                ]
            )
    print(f"template: {args.template} ({len(template.results)} results); python {sys.version.split()[0]}")
    headers = ["results", "PASS / FAIL", "EPs", "seconds", "peak RSS MiB", "exit", "results.json MB"]
    headers += [f"{name} MB" for name in REPORTS] + ["report.html rows listed"]
    print(tabulate(rows, headers=headers, disable_numparse=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())

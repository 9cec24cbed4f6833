"""Reliability on a real EP: the same verdicts and input hashes run after run, a crashed worker that costs only
its case, and a run killed with SIGKILL that --resume finishes to the same results. Prints a table.

For each EP it runs ``dmlconf run PATHS --ep EP -j N`` (each a child process, results in --out):

- ``first`` and ``second``: two clean runs; their verdicts (every field but the times) and input hashes must match;
- ``crash``: a worker killed by SIGSEGV (``DMLCONF_TEST_FAULT``) while on one case: that case must be CRASH and every
  other result the first run's;
- ``killed + resume``: the whole run's process group gets SIGKILL after --kill-after seconds, then ``--resume``
  finishes it: the results must be the first run's.

``--hashes-from RESULTS.json`` (a run on another machine) also compares the input hashes of the cases both hold: the
same case file and seed must give byte-identical inputs everywhere.

    python benchmarks/reliability.py cases --ep cpu
    python benchmarks/reliability.py cases --ep cuda --ep webgpu -j 8 --hashes-from reports/x86-cpu/results.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tabulate import tabulate

from conformance.survive.faults import TEST_FAULT

Results = list[dict[str, Any]]


def dmlconf(args: list[str], out: Path, fault: str | None = None, kill_after: float | None = None) -> float:
    """Seconds a ``dmlconf run`` took; killed (its whole process group) after ``kill_after`` seconds if given."""
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULT} | ({TEST_FAULT: fault} if fault else {})
    command = [sys.executable, "-m", "conformance", "run", *args, "--report-dir", str(out)]
    start = time.perf_counter()
    with open(out.with_suffix(".log"), "w") as log:
        run = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            run.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    return time.perf_counter() - start


def results(out: Path) -> Results:
    return list(json.loads((out / "results.json").read_text())["results"])


def untimed(runs: Results) -> Results:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in runs]


def hashes(runs: Results) -> dict[tuple[str, str], Any]:
    return {(r["case"], r["ep"]): r.get("inputs_sha256", {}) for r in runs}


def by_case(runs: Results) -> dict[str, Any]:
    return {r["case"]: r["inputs_sha256"] for r in runs if r.get("inputs_sha256")}


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") - 1 if path.exists() else 0


def check_ep(paths: list[str], ep: str, jobs: int, out: Path, kill_after: float, other: Results | None) -> list[Any]:
    common = [*paths, "--ep", ep, "-j", str(jobs)]
    rows: list[Any] = []
    seconds = dmlconf(common, out / "first")
    first = untimed(results(out / "first"))
    rows.append([ep, "first", len(first), f"{seconds:.1f}", "", ""])
    seconds = dmlconf(common, out / "second")
    second = untimed(results(out / "second"))
    same_hashes = hashes(second) == hashes(first)
    rows.append([ep, "second", len(second), f"{seconds:.1f}", second == first, f"input hashes equal: {same_hashes}"])
    victim = first[len(first) // 2]["case"]
    seconds = dmlconf(common, out / "crash", fault=f"segv:{victim}")
    crash = untimed(results(out / "crash"))
    others = [r for r in crash if r["case"] != victim] == [r for r in first if r["case"] != victim]
    statuses = sorted({r["status"] for r in crash if r["case"] == victim})
    rows.append([ep, "crash", len(crash), f"{seconds:.1f}", others, f"{victim}: {statuses}"])
    seconds = dmlconf(common, out / "resumed", kill_after=kill_after)
    kept = lines(out / "resumed" / "results.jsonl")
    seconds += dmlconf([*common, "--resume"], out / "resumed")
    resumed = untimed(results(out / "resumed"))
    rows.append(
        [
            ep,
            f"killed at {kill_after:g} s + resume",
            len(resumed),
            f"{seconds:.1f}",
            resumed == first,
            f"{kept} result(s) kept",
        ]
    )
    if other is not None:  # inputs depend on the case alone, not on the EP: compare by case
        theirs, mine = by_case(other), by_case(first)
        shared = sorted(set(theirs) & set(mine))
        equal = sum(theirs[case] == mine[case] for case in shared)
        rows.append([ep, "hashes vs --hashes-from", len(shared), "", equal == len(shared), f"{equal} equal"])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--ep", action="append", default=[])
    parser.add_argument("-j", "--jobs", type=int, default=1)
    parser.add_argument("--kill-after", type=float, default=3.0, help="seconds before the SIGKILL")
    parser.add_argument("--hashes-from", type=Path, help="a results.json from another machine")
    parser.add_argument("--out", type=Path, default=Path("reliability"))
    args = parser.parse_args()
    other = json.loads(args.hashes_from.read_text())["results"] if args.hashes_from else None
    rows = []
    for ep in args.ep or ["cpu"]:
        folder = args.out / ep.replace(":", "_").replace("/", "_")
        folder.mkdir(parents=True, exist_ok=True)
        rows += check_ep(args.paths, ep, args.jobs, folder, args.kill_after, other)
        print(f"{ep} done", file=sys.stderr)
    print(tabulate(rows, ["EP", "run", "results", "seconds", "same as first", "note"]))


if __name__ == "__main__":
    main()

"""Benchmark: issue 39's targets, each with what this machine measures and its ratio to the target, from one run.

- the sweep (benchmarks/sweeps: 21,000 small cases) as a whole command, ``dmlconf run`` from start to exit, at -j 1
  and -j 8 on each EP: -j 8 at least 6 times as fast as -j 1 (cpu, dml, dmlop);
- ``dmlop`` a case at most CUDA's a case on that sweep (-j 1 each); and, beside it, ``dmlop:batch=64`` (its batch
  mode: 64 cases' dispatches in one command list, as onnxruntime's EPs pack 64 small cases into one session);
- the whole case library at -j 1: ``dml`` at most 8 s, ``dmlop`` at most 6 s (the H100's and H200's 16 cores);
- the CPU EP's library at most 2 times its floor (benchmarks/cpu_floor.py, medians of alternating runs).

Each command's results must match its -j 1 run's (all but the times); the table says whether they did. An EP that
this machine lacks is left out, and said so. ``--json FILE`` keeps every figure.

    python benchmarks/targets.py                                  # cpu only, here
    python benchmarks/targets.py --eps cpu dml dmlop cuda --json targets.json   # the GPU machine
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from tabulate import tabulate

sys.path.insert(0, str(Path(__file__).resolve().parent))
import cpu_floor
from jobs import whole_command

SWEEPS = str(Path(__file__).resolve().parent / "sweeps")
SPEED_UP = 6.0  # -j 8 over -j 1, at least
LIBRARY_SECONDS = {"dml": 8.0, "dmlop": 6.0}  # the library at -j 1, at most
FLOOR_RATIO = 2.0  # the CPU EP's library over its floor, at most
BATCHED = "dmlop:batch=64"  # dmlop with its batch mode at the runner's most (ep_table.BATCH_MAX)


@dataclass(frozen=True)
class Target:
    what: str
    measured: str
    ratio: float  # measured over the target's bound (a speed-up: the bound over the measured), 1 or less: reached
    same_results: bool | None = None

    @property
    def reached(self) -> bool:
        return self.ratio <= 1.0


def measure(
    eps: Sequence[str], library: str, floor_runs: int, keep: str | None, expect_device: str | None
) -> tuple[list[Target], dict[str, float]]:
    targets: list[Target] = []
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as temporary:
        folder = keep or temporary

        def _timed(paths: Sequence[str], ep: str, jobs: int) -> tuple[float, list[object]]:
            what = "sweep" if paths == [SWEEPS] else "library"
            print(f"{what} on {ep} at -j {jobs}", file=sys.stderr)
            extra = ["--expect-device", expect_device] if expect_device and ep.startswith("dml") else []
            took = whole_command(paths, ep, jobs, os.path.join(folder, f"{what}-{ep.replace(':', '-')}"), extra)
            print(f"  {took[0]:.2f} s, {len(took[1])} results", file=sys.stderr)  # as it goes: a run cut short keeps it
            return took

        sweep_cases = 0
        for ep in eps:
            one, first = _timed([SWEEPS], ep, 1)
            sweep_cases = len(first)
            seconds[f"sweep {ep} -j 1"] = one
            if ep == "cuda":
                continue
            eight, results = _timed([SWEEPS], ep, 8)
            seconds[f"sweep {ep} -j 8"] = eight
            speed_up = one / eight
            what = f"sweep on {ep}: -j 8 at least {SPEED_UP:g}x -j 1"
            measured = f"{one:.1f} s / {eight:.1f} s = {speed_up:.2f}x"
            targets.append(Target(what, measured, SPEED_UP / speed_up, results == first))
        if "dmlop" in eps and "cuda" in eps and sweep_cases:
            cuda = seconds["sweep cuda -j 1"] / sweep_cases
            # dmlop as it runs by default, and with its batch mode (BATCHED: a command list of that many cases'
            # dispatches, as onnxruntime's EPs pack small cases into one session by default), for comparison
            batched, _ = _timed([SWEEPS], BATCHED, 1)
            seconds[f"sweep {BATCHED} -j 1"] = batched
            for label, took in (("dmlop", seconds["sweep dmlop -j 1"]), (BATCHED, batched)):
                measured = f"{took / sweep_cases * 1e3:.2f} ms against {cuda * 1e3:.2f} ms"
                ratio = took / sweep_cases / cuda
                targets.append(Target(f"sweep: {label} a case at most cuda's (-j 1)", measured, ratio))
        for ep, bound in LIBRARY_SECONDS.items():
            if ep in eps:
                took, _ = _timed([library], ep, 1)
                seconds[f"library {ep} -j 1"] = took
                targets.append(Target(f"library on {ep} at -j 1: at most {bound:g} s", f"{took:.1f} s", took / bound))
    if "cpu" in eps and floor_runs:
        print(f"the CPU EP's library against its floor, {floor_runs} runs each", file=sys.stderr)
        found = cpu_floor.measure([library], floor_runs)
        seconds["library cpu (median)"] = statistics.median(found.harness)
        seconds["library cpu floor (median)"] = statistics.median(found.whole)
        measured = f"{statistics.median(found.harness):.1f} s / {statistics.median(found.whole):.1f} s"
        targets.append(
            Target(
                f"library on cpu: at most {FLOOR_RATIO:g}x its floor",
                f"{measured} = {found.ratio:.2f}x",
                found.ratio / FLOOR_RATIO,
            )
        )
    return targets, seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--eps", nargs="+", default=["cpu"], help="of cpu, dml, dmlop, cuda (default cpu)")
    parser.add_argument("--library", default="cases")
    parser.add_argument("--floor-runs", type=int, default=3, help="cpu_floor.py's runs (0: leave it out)")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--keep", metavar="FOLDER", help="keep each run's report folder here")
    parser.add_argument("--expect-device", help="given to the DirectML EPs' runs (dmlconf run --expect-device)")
    args = parser.parse_args()
    targets, seconds = measure(args.eps, args.library, args.floor_runs, args.keep, args.expect_device)
    rows = [
        [
            t.what,
            t.measured,
            f"{t.ratio:.2f}",
            "yes" if t.reached else "NO",
            {None: "", True: "yes", False: "NO"}[t.same_results],
        ]
        for t in targets
    ]
    print(f"{os.cpu_count()} cores; EPs measured: {', '.join(args.eps)}")
    print(tabulate(rows, ["target", "measured", "ratio to target", "reached", "same results as -j 1"]))
    if args.json:
        figures = {
            "cores": os.cpu_count(),
            "seconds": seconds,
            "targets": [asdict(t) | {"reached": t.reached} for t in targets],
        }
        Path(args.json).write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

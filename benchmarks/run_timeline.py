"""Benchmark: where a ``dmlconf run``'s time goes, sampled in its own process as it runs (Linux).

Every ``--every`` seconds (0.25) it prints one line: the seconds since the run began (after the harness's imports),
the cases handed to the run so far (those of the files read, when it reads them while its first cases run:
cli/run_stream.py), the results so far, and the CPU of the run's main thread, of its reading thread and of all its
child processes (its workers, their DirectML runners, the processes that read case files), each in percent of one
core over the interval (the first line's main thread counts the imports before it; a child that ends takes its CPU
out of the sum, a negative share). A line that comes late says that something held the interpreter's lock that
long.

    python benchmarks/run_timeline.py run benchmarks/sweeps --ep cpu -j 8 --quiet

Issue 39's closing measurements (docs/performance.md, "Where -j 8's time goes") come from it.
"""

from __future__ import annotations

import atexit
import os
import runpy
import sys
import threading
import time
from typing import Any

TICKS = os.sysconf("SC_CLK_TCK")


def _descendants_cpu(root: int, known: set[int]) -> float:
    """CPU seconds of ``root``'s descendants alive now (``known``: every one seen, kept so that grandchildren are
    found once their parent is)."""
    total = 0.0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == root or int(fields[1]) in known:
            known.add(int(name))
            total += (int(fields[11]) + int(fields[12])) / TICKS
    return total


def main(argv: list[str]) -> None:
    every = 0.25
    if argv[:1] == ["--every"]:
        every, argv = float(argv[1]), argv[2:]
    from conformance.cli import run_stream

    results = [0]
    reading: list[Any] = []
    clocks = {"main": time.pthread_getcpuclockid(threading.get_ident())}
    record, read = run_stream.Held.record, run_stream.Reading.run

    def counted(self: Any, pair: int, result: Any) -> None:
        results[0] += 1
        record(self, pair, result)

    def reading_thread(self: Any) -> None:
        reading.append(self)
        clocks["reading"] = time.pthread_getcpuclockid(threading.get_ident())
        read(self)

    run_stream.Held.record = counted  # type: ignore[method-assign]
    run_stream.Reading.run = reading_thread  # type: ignore[method-assign]
    began = time.perf_counter()
    lines: list[str] = []

    def sample() -> None:
        known: set[int] = set()
        last: dict[str, float] = {}
        then = began
        while True:
            time.sleep(every)
            now = time.perf_counter()
            spent = {}
            for name, clock in list(clocks.items()):
                try:
                    spent[name] = time.clock_gettime(clock)
                except OSError:  # the thread ended
                    spent[name] = last.get(name, 0.0)
            spent["children"] = _descendants_cpu(os.getpid(), known)
            share = {name: 100 * (value - last.get(name, 0.0)) / (now - then) for name, value in spent.items()}
            last, then = spent, now
            handed = len(reading[0]._queued) if reading else 0
            lines.append(
                f"{now - began:6.2f} s  handed {handed:7d}  results {results[0]:7d}  main {share['main']:4.0f}%  "
                f"reading {share.get('reading', 0):4.0f}%  children {share['children']:5.0f}%"
            )

    threading.Thread(target=sample, name="timeline", daemon=True).start()
    atexit.register(lambda: print("\n".join(lines), file=sys.stderr))
    sys.argv = ["dmlconf", *argv]
    runpy.run_module("conformance", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])

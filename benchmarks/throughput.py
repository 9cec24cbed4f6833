"""Benchmark: small cases through the whole pipeline, one session per case against packed, and against
onnxruntime's own session creation plus run of the same models, in one process. Prints a table and whether the
two pipelines gave identical results.

    python benchmarks/throughput.py                      # the library's small cases on the CPU EP
    python benchmarks/throughput.py --ep cuda --pack 64  # on a GPU EP (reference rows only for built-in EPs)
    python benchmarks/throughput.py --ep cuda --passing  # only the cases that PASS: no pack falls back
    python benchmarks/throughput.py --ep cuda --jobs 8   # both pipelines on 8 worker processes (-j 8's windows)
    python benchmarks/throughput.py --ep dml             # DirectML: in-process on Windows, else its runner under Wine

With ``--jobs N`` both pipelines run in N spawned workers, in windows of ``--pack`` cases as ``-j N`` does; each
worker imports everything and makes a first session on the EP (a device context) before the timing, as the
single-process runs make theirs before it.

"Small" is at most conformance/ep/pack.py's SMALL_ELEMENTS (packing also takes larger cases, up to
PACK_MAX_ELEMENTS). The pipeline's time covers loading the case files (pro rata), generating, the oracle, lowering,
the session, the run, comparing and recording a result.
Targets (issue 6): the pipeline, one session per case, within 2x of onnxruntime's session plus run on the CPU EP;
packed at least 10x the cases per second of one session per case on the CUDA EP, with identical verdicts.
"""

from __future__ import annotations

import argparse
import functools
import json
import multiprocessing
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from typing import Any

import onnxruntime as ort  # type: ignore[import-untyped]
from tabulate import tabulate

from conformance.cases.parse import Entry
from conformance.cases.suite import collect
from conformance.ep.dml_here import dml_through_wine
from conformance.ep.execute import _providers
from conformance.ep.pack import small
from conformance.ep.providers import EpSpec, is_plugin, parse_ep
from conformance.ep.sessions import Sessions
from conformance.ep.wine.client import Runners
from conformance.model import Status
from conformance.results import Result
from conformance.run.batch import run_batch
from conformance.run.options import RunOptions
from conformance.run.runner import Prepared, prepare
from conformance.survive.pool import window_size


def small_cases(paths: Sequence[str], ep: EpSpec, limit: int | None) -> tuple[list[Entry], list[Prepared], float]:
    """The positive cases small enough to pack, their prepared form, and their share of the loading time."""
    start = time.perf_counter()
    suite = collect(list(paths))
    load = time.perf_counter() - start
    chosen: list[tuple[Entry, Prepared]] = []
    for entry in suite.entries:
        prepared = prepare(entry, ep, RunOptions())
        if isinstance(prepared, Prepared) and small(prepared.lowering):
            chosen.append((entry, prepared))
    chosen = chosen[:limit] if limit else chosen
    return [e for e, _ in chosen], [p for _, p in chosen], load * len(chosen) / max(len(suite.entries), 1)


def onnxruntime_alone(prepared: Sequence[Prepared], ep: EpSpec) -> float:
    """onnxruntime's default session for each case's model, plus one run: what the pipeline is measured against."""
    start = time.perf_counter()
    for case in prepared:
        try:
            session = ort.InferenceSession(case.lowering.model, providers=_providers(ep))
            session.run(None, dict(case.lowering.feeds))
        except Exception:  # a model this EP refuses costs its attempt, as in the pipeline
            pass
    return time.perf_counter() - start


@functools.cache
def _runners() -> Runners:
    """This process's DirectML runner (under Wine), shared by every window as a worker shares it."""
    return Runners()


def _window(entries: Sequence[Entry], ep: EpSpec, pack: int, reuse: bool) -> tuple[list[Result], int]:
    sessions = Sessions(runners=_runners()) if reuse else Sessions(capacity=0, runners=_runners())
    results = run_batch(entries, ep, RunOptions(pack=pack), sessions)
    for result in results:
        json.dumps(result.to_json())  # recording a result is part of the per-case cost
    return results, sessions.created


def _warm(entries: Sequence[Entry], ep: EpSpec) -> None:
    """A worker's first session on the EP, before the timing."""
    _window(entries, ep, 1, reuse=False)


def start_workers(jobs: int, entries: Sequence[Entry], ep: EpSpec) -> ProcessPoolExecutor:
    """``jobs`` spawned processes, each warm (``_warm``) and idle before the timing: a pool of its own, which has
    none of the supervisor's crash handling (no case here crashes) and so times the two pipelines alone."""
    pool = ProcessPoolExecutor(jobs, multiprocessing.get_context("spawn"), _warm, (entries, ep))
    list(pool.map(time.sleep, [0.0] * jobs))  # the pool starts a worker for each task no idle worker can take
    return pool


def pipeline(
    entries: Sequence[Entry], ep: EpSpec, pack: int, reuse: bool, pool: ProcessPoolExecutor | None = None
) -> tuple[float, list[Result], int]:
    """The seconds, results and sessions created: in this process, or in windows of ``window_size`` on ``pool``."""
    start = time.perf_counter()
    if pool is None:
        results, created = _window(entries, ep, pack, reuse)
        return time.perf_counter() - start, results, created
    size = window_size(RunOptions(pack=pack))
    windows = [entries[i : i + size] for i in range(0, len(entries), size)]
    done = list(pool.map(partial(_window, ep=ep, pack=pack, reuse=reuse), windows))
    results = [result for part, _ in done for result in part]
    return time.perf_counter() - start, results, sum(created for _, created in done)


def _verdicts(results: Sequence[Result]) -> list[Any]:
    """Results as compared: all but the time, and the placement record, whose node names a pack changes (DirectML
    records a pack's partitions, a case alone its own)."""
    return [replace(result, seconds=0.0, placement={}) for result in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["cases"])
    parser.add_argument("--ep", default="cpu")
    parser.add_argument("--pack", type=int, default=RunOptions.pack)
    parser.add_argument("--jobs", type=int, default=1, help="run both pipelines on N worker processes")
    parser.add_argument("--limit", type=int, default=None, help="only the first N small cases")
    parser.add_argument(
        "--passing",
        action="store_true",
        help="only the cases that PASS one per session: a conformant build's run, where no pack falls back",
    )
    args = parser.parse_args()
    ep = parse_ep(args.ep)
    entries, prepared, load = small_cases(args.paths, ep, args.limit)
    _warm(entries[:1], ep)  # the EP's first session (a device context) outside the timing
    pool = start_workers(args.jobs, entries[:1], ep) if args.jobs > 1 else None
    one_time, one, _ = pipeline(entries, ep, 1, reuse=False, pool=pool)
    if args.passing:
        passing = [i for i, result in enumerate(one) if result.status is Status.PASS]
        load *= len(passing) / max(len(entries), 1)
        entries, prepared = [entries[i] for i in passing], [prepared[i] for i in passing]
        one_time, one, _ = pipeline(entries, ep, 1, reuse=False, pool=pool)
    rows: list[list[object]] = []
    alone = None
    if not is_plugin(ep) and not dml_through_wine(ep) and pool is None:  # in this process, in one process only
        alone = onnxruntime_alone(prepared, ep)
        rows.append(["onnxruntime: session + run per case", alone, len(prepared) / alone, 1.0, "", ""])
    packed_time, packed, packed_sessions = pipeline(entries, ep, args.pack, reuse=True, pool=pool)
    if pool is not None:
        pool.shutdown()
    for name, seconds, made in (
        ("pipeline, one session per case", one_time + load, len(prepared)),
        (f"pipeline, packed (--pack {args.pack})", packed_time + load, packed_sessions),
    ):
        ratio = seconds / alone if alone else ""
        rows.append([name, seconds, len(prepared) / seconds, ratio, (one_time + load) / seconds, made])
    headers = ["what", "seconds", "cases/s", "x onnxruntime", "speed-up", "sessions"]
    workers = f", {args.jobs} workers" if args.jobs > 1 else ""
    print(f"{len(prepared)} small cases on {ep.name}{workers}, onnxruntime {ort.__version__}")
    print(tabulate(rows, headers, floatfmt=".3f"))
    differing = [a for a, b in zip(_verdicts(one), _verdicts(packed), strict=True) if a != b]
    statuses = {status: sum(r.status.value == status for r in packed) for status in {r.status.value for r in packed}}
    print(f"verdicts: {statuses}; results differing between the two pipelines: {len(differing)}")
    for result in differing[:20]:
        print(f"  {result.case}: {result.status.value} one per session")


if __name__ == "__main__":
    main()

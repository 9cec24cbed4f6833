"""Cases on one EP in few sessions: small cases run packed many to a session (pack.py), the rest one by one.

A pack stands only when everything in it went right: the packed session was created, ran, placed every node of
every case on the EP, and every case PASSed. Anything else (a session refused, a run that throws, a stray node, a
single FAIL or NOT_SUPPORTED) splits the pack in halves and runs each again, down to one case per session, which is
exactly how a run without packing runs it. So every verdict but PASS comes from a case's own session, and a case
can only differ from an unpacked run by passing in a pack and failing alone, which the GPU comparison in
docs/performance.md looks for. DirectML is not packed: its EP fuses a partition into one DML graph and may record
it as one node, so the record could not be split per case (and it has not been run: no Windows machine).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import replace

from conformance.eps import DML, EpSpec
from conformance.execute import open_session, run_session
from conformance.model import Status
from conformance.pack import opset_of, pack, packable, unpack
from conformance.parse import Entry
from conformance.results import Result
from conformance.runner import Prepared, RunOptions, execute_prepared, finish, prepare
from conformance.sessions import Sessions

log = logging.getLogger(__name__)


def _packed(group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions) -> list[Result] | None:
    """The group's results from one packed session; None where anything failed."""
    start = time.perf_counter()
    lowerings = [p.lowering for p in group]
    try:
        packed = pack(lowerings)
        opened = sessions.open(packed, ep, open_session)
        executions = unpack(lowerings, run_session(opened, packed), opened.records, opened.ep_name)
    except Exception as error:  # any failure of the pack: the halves run again
        log.debug("a pack of %d failed: %s", len(group), error)
        return None
    share = (time.perf_counter() - start) / len(group)
    quiet = replace(options, artifacts=None)  # a FAIL here runs again alone, and that run keeps the artifacts
    results = [finish(p, execution, ep, quiet, share) for p, execution in zip(group, executions, strict=True)]
    if any(result.status is not Status.PASS for result in results):
        log.debug("a pack of %d had a non-PASS verdict: its halves run again", len(group))
        return None
    return results


def _run_group(group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions) -> list[Result]:
    if len(group) == 1:
        return [execute_prepared(group[0], ep, options, sessions)]
    results = _packed(group, ep, options, sessions)
    if results is not None:
        return results
    half = len(group) // 2
    return _run_group(group[:half], ep, options, sessions) + _run_group(group[half:], ep, options, sessions)


def _packing(ep: EpSpec, options: RunOptions) -> bool:
    return options.pack > 1 and ep.name != DML


def run_batch(entries: Sequence[Entry], ep: EpSpec, options: RunOptions, sessions: Sessions) -> list[Result]:
    """Every entry's result on ``ep``, in order. Small cases wait to be packed, at most ``options.pack`` per pack,
    grouped by opset; the others run at once, so that a large case's arrays are never held while others run."""
    results: dict[int, Result] = {}
    waiting: dict[tuple[tuple[str, int], ...], list[tuple[int, Prepared]]] = {}
    for index, entry in enumerate(entries):
        prepared = prepare(entry, ep, options)
        if isinstance(prepared, Result):
            results[index] = prepared
        elif _packing(ep, options) and packable(prepared.lowering):
            waiting.setdefault(opset_of(prepared.lowering), []).append((index, prepared))
        else:
            results[index] = execute_prepared(prepared, ep, options, sessions)
    for members in waiting.values():
        for start in range(0, len(members), options.pack):
            chunk = members[start : start + options.pack]
            group_results = _run_group([p for _, p in chunk], ep, options, sessions)
            results |= {index: result for (index, _), result in zip(chunk, group_results, strict=True)}
    return [results[index] for index in range(len(entries))]

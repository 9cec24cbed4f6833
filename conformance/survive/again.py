"""--rerun-failures N: the failures chosen run again, up to N times each, as the run ran them (``run_pairs``): in its
workers (-j N; a crash or hang again costs only its case), or in this process (-j 0). Each round runs, per EP, the
chosen (case, EP) pairs that have not passed yet, each case alone in its own session (no pack, no --repeat); a pair
that passes drops out. What the runs make of each failure is run/again.py's ``settled``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from conformance.cases.parse import Entry
from conformance.ep.providers import EpSpec
from conformance.results import Result
from conformance.run.again import passed, settled
from conformance.run.options import RunOptions
from conformance.survive.faults import RunLog
from conformance.survive.pool import Ran, run_pairs
from conformance.survive.supervisor import Supervisor

Pair = tuple[str, str]  # (case id, --ep text)


def _nothing() -> None:
    """No progress line: each failure is told once it is settled."""


def rerun_failures(
    ran: Ran,
    chosen: Collection[Pair],
    entries: Sequence[Entry],
    eps: Sequence[EpSpec],
    times: int,
    options: RunOptions,
    jobs: int,
    supervisor: Supervisor | None,
    log: RunLog,
    told: Callable[[Result], None] | None = None,
) -> Ran:
    """``ran`` with each (case, EP) of ``chosen`` run again up to ``times`` times and settled; ``log``: the run's
    (its EPs' executions, its runner deaths, which the runs again add to). A Ctrl-C, or workers that cannot start,
    end the runs again: what ran so far settles its failure, the rest keep their verdicts."""
    pending = {(entry.id, ep.text) for entry in entries for ep in eps} & set(chosen)
    again: dict[Pair, list[Result]] = {pair: [] for pair in pending}
    alone = replace(options, pack=1, repeat=1)
    interrupted, stopped = False, None
    for _ in range(times):
        for ep in eps:
            failing = [entry for entry in entries if (entry.id, ep.text) in pending]
            if not failing or interrupted or stopped is not None:
                continue
            round_ = run_pairs(failing, [ep], alone, jobs, _nothing, supervisor, log=log)
            interrupted, stopped = round_.interrupted, round_.stopped
            for result in round_.results:
                again[(result.case, result.ep)].append(result)
                if passed(result):
                    pending.discard((result.case, result.ep))
    results = []
    for result in ran.results:
        runs = again.get((result.case, result.ep))
        if runs:
            result = settled(result, runs, times)
            if told is not None:
                told(result)
        results.append(result)
    return replace(
        ran,
        results=tuple(results),
        interrupted=ran.interrupted or interrupted,
        stopped=ran.stopped or stopped,
        runner_deaths=log.runner_deaths(),
    )

"""dmlconf merge: results.json files from several machines or shards (``--shard I/N``, one per GPU of a CI matrix)
combined into one run, so that one report covers the whole suite.

Results are taken as they are; a (case, EP) present in two files is refused, since the merged verdict would
depend on the order of the files. The environment of the first file is the base; the GPUs and EPs of all of them
are listed (EPs once per label), and each file's own environment is kept under ``shards``. What any file's run did
not run is the merged run's: interrupted (with the M of "N of M"), and the case files --keep-going skipped, with
their problems, so that no report of the merge shows a complete run where a shard was not.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from conformance.environment import Environment, Shard
from conformance.results import Result

T = TypeVar("T")


class MergeError(ValueError):
    """Files that cannot be merged: one line saying why."""


def _unique(items: Sequence[T], key: Callable[[T], object] = repr) -> tuple[T, ...]:
    seen, kept = set(), []
    for item in items:
        mark = key(item)
        if mark not in seen:
            seen.add(mark)
            kept.append(item)
    return tuple(kept)


def _planned(env: Environment, results: Sequence[Result]) -> int:
    """The (case, EP) results a file's run planned: its ``planned_results`` where interrupted, else all it has."""
    planned = env.planned_results if env.interrupted else None
    return planned if planned is not None else len(results)


def merge_runs(runs: Sequence[tuple[str, Environment, Sequence[Result]]]) -> tuple[Environment, list[Result]]:
    """(path, environment, results) per file -> one environment and all results, in file order."""
    if not runs:
        raise MergeError("nothing to merge")
    owner: dict[tuple[str, str], int] = {}
    merged: list[Result] = []
    for index, (path, _, results) in enumerate(runs):
        for r in results:
            first = owner.setdefault((r.case, r.ep), index)
            if first != index:
                raise MergeError(f"{r.case} [{r.ep}] is in both {runs[first][0]} and {path}")
            merged.append(r)
    environments = [env for _, env, _ in runs]
    interrupted = any(e.interrupted for e in environments)
    env = replace(
        environments[0],
        gpus=_unique([gpu for e in environments for gpu in e.gpus]),
        eps=_unique([ep for e in environments for ep in e.eps], key=lambda ep: ep.label),
        interrupted=interrupted,
        # the M of "N of M cases run": each file's plan, or what a complete one ran
        planned_results=(
            sum(_planned(e, results) for (_, _, results), e in zip(runs, environments, strict=True))
            if interrupted
            else environments[0].planned_results
        ),
        problems=_unique([problem for e in environments for problem in e.problems]),
        skipped_files=_unique([entry for e in environments for entry in e.skipped_files]),
        runner_deaths=tuple(death for e in environments for death in e.runner_deaths),
        shards=tuple(
            Shard(
                file=path,
                command=e.command,
                gpus=e.gpus,
                cuda_visible_devices=e.cuda_visible_devices,
                eps=e.eps,
                started_at=e.started_at,
                duration_s=e.duration_s,
                harness=e.harness,
            )
            for (path, _, _), e in zip(runs, environments, strict=True)
        ),
    )
    return env, merged

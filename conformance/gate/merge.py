"""dmlconf merge: results.json files from several machines or shards (``--shard I/N``, one per GPU of a CI matrix)
combined into one run, so that one report covers the whole suite.

Results are taken as they are; a (case, EP) present in two files is refused, since the merged verdict would depend on
the order of the files. Files that record a shard (``environment.shard``, written by ``run --shard``) must make whole
splits: for each plan (``plan_sha256``: the selection and EPs before the split) every shard 1..N once, all of one N. A
missing shard, one given twice or shards of one plan split two ways are refused (MergeError, one line naming them): a
merge of some shards is no run of the suite, and would pass as one. Files without a shard record (an unsharded run,
another machine's EP, an older file) merge as they always did. The environment of the first file is the base; the GPUs
and EPs of all of them are listed (EPs once per label), and each file's own environment is kept under ``shards``. What
any file's run did not run is the merged run's: interrupted (with the M of "N of M"), and the case files --keep-going
skipped, with their problems, so that no report of the merge shows a complete run where a shard was not.

Waivers: files gated with one waiver file (``environment.waivers``; files gated with none do not count) make a run
gated with it, applied again to every merged result; files gated with different ones are refused unless the merge
is given its own (``waivers_given``: ``--waivers``), which then gates every result (and the command says so).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeVar

from conformance.environment import Environment, GatedWith, Shard, ShardRecord
from conformance.gate.recorded import named
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


def _shard(record: ShardRecord) -> str:
    return f"{record.index}/{record.count}"


def _whole_split(files: Sequence[tuple[str, ShardRecord]], others: Sequence[str]) -> None:
    """The shard files of one plan: each of 1..N once, all of one N; MergeError naming what is wrong otherwise.
    ``others``: files that are shards of other plans, named where a shard is missing (a shard of another
    selection is no stand-in for it)."""
    first_path, first = files[0]
    for path, record in files:
        if record.count != first.count:
            raise MergeError(
                f"{first_path} is shard {_shard(first)} and {path} shard {_shard(record)} of the same cases and EPs: "
                "merge the shards of one split"
            )
        if not 1 <= record.index <= record.count:
            raise MergeError(
                f"{path}: shard {_shard(record)} is not one of 1/{record.count} to {record.count}/{record.count}"
            )
    given: dict[int, str] = {}
    for path, record in files:
        if record.index in given:
            raise MergeError(f"shard {_shard(record)} is given twice: {given[record.index]} and {path}")
        given[record.index] = path
    missing = [f"{index}/{first.count}" for index in range(1, first.count + 1) if index not in given]
    if missing:
        have = ", ".join(f"{_shard(record)} {path}" for path, record in sorted(files, key=lambda f: f[1].index))
        other = f"; {', '.join(others)} hold shards of other cases or EPs" if others else ""
        raise MergeError(
            f"incomplete set of shards: {', '.join(missing)} missing (given: {have}){other}; merge every shard of "
            "the split"
        )


def check_shards(runs: Sequence[tuple[str, Environment, Sequence[Result]]]) -> None:
    """Each plan's shard files make a whole split (``_whole_split``); files without a shard record are not looked
    at. A record without ``plan_sha256`` (written by hand) is grouped by its count and planned results."""
    plans: dict[object, list[tuple[str, ShardRecord]]] = {}
    for path, env, _ in runs:
        if env.shard is not None:
            record = env.shard
            key: object = record.plan_sha256 or (record.count, record.planned_results)
            plans.setdefault(key, []).append((path, record))
    for plan, files in plans.items():
        others = [path for other, rest in plans.items() if other != plan for path, _ in rest]
        _whole_split(files, others)


def recorded_waivers(runs: Sequence[tuple[str, Environment, Sequence[Result]]]) -> tuple[GatedWith, ...]:
    """Each distinct waiver file the files were gated with (by its SHA-256), in file order."""
    found = {env.waivers.sha256: env.waivers for _, env, _ in runs if env.waivers is not None}
    return tuple(found.values())


def _one_waiver_file(runs: Sequence[tuple[str, Environment, Sequence[Result]]], given: bool) -> GatedWith | None:
    """The waiver file the merged run records before it is gated again: the one its files were gated with; None
    where they were gated with none, or where ``given`` replaces theirs; MergeError where they were gated with
    several and none is given."""
    recorded = recorded_waivers(runs)
    if given or not recorded:
        return None
    if len(recorded) > 1:
        gated = [(path, env.waivers) for path, env, _ in runs if env.waivers is not None]
        first_path, first = gated[0]
        other_path, other = next((path, w) for path, w in gated if w.sha256 != first.sha256)
        raise MergeError(
            f"{first_path} was gated with {named(first)} and {other_path} with {named(other)}: give --waivers FILE "
            "to gate the merged run with one file"
        )
    return replace(recorded[0], applied_lines=())


def merge_runs(
    runs: Sequence[tuple[str, Environment, Sequence[Result]]], waivers_given: bool = False
) -> tuple[Environment, list[Result]]:
    """(path, environment, results) per file -> one environment and all results, in file order."""
    if not runs:
        raise MergeError("nothing to merge")
    check_shards(runs)
    waivers = _one_waiver_file(runs, waivers_given)
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
        shard=None,  # the whole split: no part of one
        # the M of "N of M cases run": each file's plan, or what a complete one ran
        planned_results=(
            sum(_planned(e, results) for (_, _, results), e in zip(runs, environments, strict=True))
            if interrupted
            else environments[0].planned_results
        ),
        problems=_unique([problem for e in environments for problem in e.problems]),
        skipped_files=_unique([entry for e in environments for entry in e.skipped_files]),
        runner_deaths=tuple(death for e in environments for death in e.runner_deaths),
        waivers=waivers,
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

"""dmlconf merge: results.json files from several machines or shards (``--shard I/N``, one per GPU of a CI matrix)
combined into one run, so that one report covers the whole suite.

Results are taken as they are; a (case, EP) present in two files is refused, since the merged verdict would
depend on the order of the files. The environment of the first file is the base; the GPUs and EPs of all of them
are listed (EPs once per label), and each file's own environment is kept under ``shards``. What any file's run did
not run is the merged run's: interrupted (with the M of "N of M"), and the case files --keep-going skipped, with
their problems (``_SKIPPED``), so that no report of the merge shows a complete run where a shard was not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from conformance.results import Result

_RUN_FACTS = ("started_at", "duration_s", "harness")  # each file's own: kept per shard
_SKIPPED = ("problems", "skipped_files")  # lists, each file's entries once, in file order


class MergeError(ValueError):
    """Files that cannot be merged: one line saying why."""


def _unique(items: Sequence[Any], key: str | None = None) -> list[Any]:
    seen, kept = set(), []
    for item in items:
        mark = repr(item.get(key) if key and isinstance(item, Mapping) else item)
        if mark not in seen:
            seen.add(mark)
            kept.append(item)
    return kept


def _planned(env: Mapping[str, Any], results: Sequence[Result]) -> int:
    """The (case, EP) results a file's run planned: its ``planned_results`` where interrupted, else all it has."""
    planned = env.get("planned_results") if env.get("interrupted") else None
    return planned if isinstance(planned, int) else len(results)


def merge_runs(runs: Sequence[tuple[str, Mapping[str, Any], Sequence[Result]]]) -> tuple[dict[str, Any], list[Result]]:
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
    environments = [dict(env) for _, env, _ in runs]
    env = dict(environments[0])
    env["gpus"] = _unique([gpu for e in environments for gpu in e.get("gpus") or []])
    env["eps"] = _unique([ep for e in environments for ep in e.get("eps") or []], key="label")
    env["interrupted"] = any(e.get("interrupted") for e in environments)
    if env["interrupted"]:  # the M of "N of M cases run": each file's plan, or what a complete one ran
        env["planned_results"] = sum(
            _planned(e, results) for (_, _, results), e in zip(runs, environments, strict=True)
        )
    for key in _SKIPPED:
        env.pop(key, None)
        entries = _unique([entry for e in environments if isinstance(e.get(key), list) for entry in e[key]])
        env |= {key: entries} if entries else {}
    env["shards"] = [
        {"file": path, **{k: e.get(k) for k in ("command", "gpus", "cuda_visible_devices", "eps", *_RUN_FACTS)}}
        for (path, _, _), e in zip(runs, environments, strict=True)
    ]
    return env, merged

"""What changed between two runs of the same cases (a new driver against the old one): data only, no text.

Results are matched by (case, EP). The rules, in the order they apply to a (case, EP) found in both runs:

* regression: PASS, QUALITY_WARNING or INVALID before and failing now (``failing``: a status of
  ``results.FAILING``: FAIL, FLAKY, ERROR, CRASH, TIMEOUT, DEVICE_LOST; or NOT_SUPPORTED ``ep_not_started``, a case
  the EP could not open a session for: a device that went away mid-run turns every later PASS into it); or failing
  in both runs with a failure kind that got more severe in TOP_K1's order (``model.TOP_K1_FAILURE_KINDS``, most
  severe first: index_out_of_range > duplicate_indices > values > wrong_elements > not_sorted > tie_order), or
  failing now with ``out_of_bounds_write`` (``model.OUT_OF_BOUNDS_WRITE``: bytes of an output's buffer no element
  owns were written), which ranks above every other kind of every operator. Other kinds (tolerance, execution...)
  are not ranked, so a change between them is no regression.
* fix: failing before and PASS, QUALITY_WARNING or INVALID now.
* other change: any other change of status or failure kind (PASS -> NOT_SUPPORTED for a case the EP declines,
  NOT_SUPPORTED -> FAIL, FAIL -> ERROR, a kind getting less severe...): a gate shows it and does not fail on it.
* metric drift: the same status in both runs, FAIL or PASS, and a metric of ``DRIFT_METRICS`` that grew (a NaN
  counts as larger than any number). Drift is reported beside the above, never a regression by itself.

Beside these, a (case, EP) whose inputs' hashes (``Result.inputs_sha256``) are recorded in both runs and differ is
listed under inputs differ: its two verdicts were reached on different data (another generator, or a NumPy that
broke generation's promise of the same bytes everywhere), so a change there is not the EP's alone. Runs written
before the hashes existed record none, and nothing is listed for them. A (case, EP) given the same inputs whose
outputs' hashes differ is listed under outputs differ, whatever its verdicts: the EP returned other values (a
DirectML release whose MVN rounds otherwise still passes within the tolerance), which no verdict shows. The hashes
compared are the value hashes (``Result.values_sha256``: the logical elements, integers as int64) where both runs
recorded them, so that ``dml`` against ``dmlop`` (``--match case``) counts only values that differ; else the hashes of
what each EP returned (``Result.outputs_sha256``: on ``dmlop`` its whole buffers), as older files have them.
Neither list is a regression by itself.

A regression whose new result a ``flaky:`` entry tolerates (the new run's waiver file: recorded, or ``--waivers``;
gate/recorded.py) is listed apart as flaky, and is no regression: such a case fails some runs and passes others.

A (case, EP) in only one run is a new or removed case. A removed result is a regression unless removals are allowed
(``allow_removed``): a new run that lost most of the old one's results must not pass as "no regressions". Two runs with
nothing in common regress whatever is allowed: a diff that compared nothing cannot vouch for the new run. So does a
new run that is incomplete (``Completeness``: interrupted, case files skipped with --keep-going, an EP that executed
none of its cases): its cases that the old run did not have are no regression, and an interrupted run's missing
results would pass under ``allow_removed``.

``by_case`` pairs results by case alone, for runs of different EPs: one driver's DirectML against another's (the same
EP text on other devices, or ``dml`` against ``dml:device_id=1``), DirectML against CUDA. Each run must then hold
one EP: with several, which of the old run's EPs a new EP answers to would be a guess. Each side says which EPs
and device it is (``Side``), and environments are compared through ``identity_lines``: both in sides.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from conformance.environment import Environment
from conformance.gate.sides import EnvChange, Side, environment_changes, side
from conformance.gate.summary import completeness, idle, unwaivable
from conformance.model import OUT_OF_BOUNDS_WRITE, TOP_K1_FAILURE_KINDS, Status
from conformance.results import FAILING, Result, differing_tensors, ep_not_started

# Statuses that count as working: a negative case rejected as it should be (INVALID) works too.
WORKING = frozenset({Status.PASS, Status.QUALITY_WARNING, Status.INVALID})
DRIFT_METRICS = ("max_ulp_error", "max_abs_error", "mismatches", "failing_sequences")
DRIFT_STATUSES = frozenset({Status.FAIL, Status.PASS})
_SEVERITY = {kind: rank for rank, kind in enumerate(TOP_K1_FAILURE_KINDS)}  # lower is more severe

Key = tuple[str, str]  # (case, EP); (case, "") when pairing by case alone


class SeveralEps(ValueError):
    """A run of several EPs where results are paired by case alone: one line naming its EPs."""


@dataclass(frozen=True)
class Changed:
    """One (case, EP) in both runs, with both results (the new one's message and repro go in a report)."""

    old: Result
    new: Result


@dataclass(frozen=True)
class Drift:
    """Metrics that grew between two results of the same status: (metric, old value, new value)."""

    old: Result
    new: Result
    metrics: tuple[tuple[str, Any, Any], ...]


@dataclass(frozen=True)
class RunDiff:
    regressions: tuple[Changed, ...]
    fixes: tuple[Changed, ...]
    other_changes: tuple[Changed, ...]
    new_cases: tuple[Result, ...]
    removed_cases: tuple[Result, ...]
    metric_drift: tuple[Drift, ...]
    compared: int  # (case, EP) pairs found in both runs (cases, by case)
    environment: tuple[EnvChange, ...] | None = None  # None: the environments were not given, so not compared
    inputs_differ: tuple[Changed, ...] = ()
    outputs_differ: tuple[Changed, ...] = ()  # the same inputs (or none recorded), other output bytes
    outputs_compared: int = 0  # pairs whose outputs' hashes both runs recorded: compared bit for bit
    by_case: bool = False  # paired by case alone (one EP a side), not by (case, EP)
    allow_removed: bool = False  # removed results are shown, not counted against the new run
    old_side: Side = field(default_factory=Side)
    new_side: Side = field(default_factory=Side)
    # What fails the new run whatever its results (summary.unwaivable: incomplete, a runner death under a pack)
    new_unwaivable: tuple[str, ...] = ()
    flaky: tuple[Changed, ...] = ()  # regressions a flaky entry of the new run's waiver file tolerates
    new_gate: str = ""  # the new run's verdict under its waiver file (verdict.py's headline); empty without one

    @property
    def nothing_compared(self) -> bool:
        """No (case, EP) (or case, by case) in both runs: nothing was compared, so nothing can pass."""
        return self.compared == 0

    @property
    def counts(self) -> tuple[tuple[str, int], ...]:
        """Each kind of difference and how many, in the order reports give them. Inputs and outputs differ only where
        hashes were compared (runs from before the hashes cannot tell): those two are left out where there is no
        such count to give."""
        return (
            ("regressions", len(self.regressions)),
            *([("flaky, tolerated", len(self.flaky))] if self.flaky else []),
            ("fixes", len(self.fixes)),
            ("metric drift", len(self.metric_drift)),
            *([("inputs differ", len(self.inputs_differ))] if self.inputs_differ else []),
            *([("outputs differ", len(self.outputs_differ))] if self.outputs_compared else []),
            ("new", len(self.new_cases)),
            ("removed", len(self.removed_cases)),
            ("other changes", len(self.other_changes)),
        )

    @property
    def removed_regress(self) -> bool:
        return bool(self.removed_cases) and not self.allow_removed

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the gate fails the new run, one phrase per rule that failed it: a regression, a removed result (unless
        allowed), nothing compared, a new run that fails whatever its results (as ``report`` fails it: incomplete, a
        runner death under a pack). Drift, new cases and other changes are only shown."""
        why = ["nothing compared"] if self.nothing_compared else []
        why += ["the new run fails"] if self.new_unwaivable else []
        why += [f"{len(self.regressions)} regression(s)"] if self.regressions else []
        why += [f"{len(self.removed_cases)} removed result(s)"] if self.removed_regress else []
        return tuple(why)

    @property
    def regressed(self) -> bool:
        return bool(self.reasons)


def _one_ep(results: Sequence[Result], which: str) -> None:
    eps = list(dict.fromkeys(r.ep for r in results))
    if len(eps) > 1:
        raise SeveralEps(
            f"the {which} run has results on {len(eps)} EPs ({', '.join(eps)}); pairing by case needs one EP a run"
        )


def _keyed(results: Sequence[Result], which: str, by_case: bool) -> dict[Key, Result]:
    if by_case:
        _one_ep(results, which)
    keyed: dict[Key, Result] = {}
    for r in results:
        key = (r.case, "" if by_case else r.ep)
        # Two results under one key would make one of them silently win and could hide a regression.
        if key in keyed:
            raise ValueError(f"{which} run has two results for {r.case} [{r.ep}]")
        keyed[key] = r
    return keyed


def failing(r: Result) -> bool:
    """A failing status, or a case its EP could not even open a session for (``ep_not_started``): that case lost
    its verdict to the machine (a device gone mid-run, a broken install), which a diff must not pass as a mere
    change of status; NOT_SUPPORTED for a case the EP declines is no failure."""
    return r.status in FAILING or ep_not_started(r)


def more_severe(old: Result, new: Result) -> bool:
    """Both failing, and the new kind ranks before the old one: ``out_of_bounds_write`` before any other kind (a
    write outside the tensor corrupts memory the operator does not own), then TOP_K1's order."""
    if not failing(old) or not failing(new):
        return False
    if OUT_OF_BOUNDS_WRITE in (old.failure_kind, new.failure_kind):
        return new.failure_kind == OUT_OF_BOUNDS_WRITE != old.failure_kind
    old_rank, new_rank = _SEVERITY.get(old.failure_kind or ""), _SEVERITY.get(new.failure_kind or "")
    return old_rank is not None and new_rank is not None and new_rank < old_rank


def _differing(old: Mapping[str, str], new: Mapping[str, str]) -> tuple[str, ...]:
    """``differing_tensors``, and none where either result recorded no hashes (an older file, a run that returned
    nothing): an absent record says nothing about the data."""
    return differing_tensors(old, new) if old and new else ()


def differing_inputs(old: Result, new: Result) -> tuple[str, ...]:
    """The input tensors whose hashes differ between two results that both recorded them."""
    return _differing(old.inputs_sha256, new.inputs_sha256)


def compared_hashes(old: Result, new: Result) -> tuple[Mapping[str, str], Mapping[str, str]]:
    """The output hashes ``diff`` compares: the value hashes where both results recorded them (the same values on any
    path hash alike: ``dml``'s int64 indices and ``dmlop``'s UINT32 ones in its padded buffer), else the hashes of
    what each EP returned (results.json files written before value hashes existed)."""
    if old.values_sha256 and new.values_sha256:
        return old.values_sha256, new.values_sha256
    return old.outputs_sha256, new.outputs_sha256


def differing_outputs(old: Result, new: Result) -> tuple[str, ...]:
    """The output tensors whose hashes (``compared_hashes``) differ between two results that both recorded them."""
    return _differing(*compared_hashes(old, new))


def _number(value: object) -> float | None:
    if isinstance(value, int | float | str) and not isinstance(value, bool):
        try:  # a str: results.json writes non-finite floats as "nan", "inf", "-inf"
            return float(value)
        except ValueError:
            return None
    return None


def _grew(old: object, new: object) -> bool:
    before, after = _number(old), _number(new)
    if before is None or after is None or math.isnan(before):
        return False
    return math.isnan(after) or after > before


def drifted(old: Result, new: Result) -> tuple[tuple[str, Any, Any], ...]:
    """The ``DRIFT_METRICS`` that grew, when both results have the same drift-tracked status."""
    if old.status != new.status or new.status not in DRIFT_STATUSES:
        return ()
    return tuple(
        (name, old.metrics[name], new.metrics[name])
        for name in DRIFT_METRICS
        if name in old.metrics and name in new.metrics and _grew(old.metrics[name], new.metrics[name])
    )


def only_ep(results: Sequence[Result], environment: Environment, label: str) -> tuple[list[Result], Environment]:
    """One EP's results (``label``, the EP text the run wrote) and the environment with that EP's record alone: one
    DirectML build of a run of several (``--ep dml:directml=1.13.1 --ep dml:directml=1.14.1``), to be diffed case by
    case against another. ValueError naming the run's EPs where none of its results is on ``label``.

    An interrupted run planned the same cases for each of its EPs, so the EP's share of the planned results is the
    plan divided by its EPs (as recorded, else as its results name them); an EP that ran its whole share is not
    interrupted, though the run was."""
    chosen = [r for r in results if r.ep == label]
    labels = list(dict.fromkeys(r.ep for r in results))
    if not chosen:
        raise ValueError(f"no result on EP {label} (its results are on: {', '.join(labels) or 'none'})")
    records = environment.eps
    deaths = tuple(death for death in environment.runner_deaths if death.ep == label)  # another EP's are not its
    env = replace(environment, eps=tuple(record for record in records if record.label == label), runner_deaths=deaths)
    planned = environment.planned_results
    if planned is not None:
        share = planned // (len(records) or len(labels))
        env = replace(env, planned_results=share)
        if len(chosen) >= share:
            env = replace(env, interrupted=False, planned_results=None, stopped=None)
    return chosen, env


@dataclass
class _Pairs:
    """The (case, EP)s found in both runs, sorted by the module docstring's rules as each is added."""

    flaky_keys: frozenset[tuple[str, str]] = frozenset()  # (case, EP) of the new results a flaky entry tolerates
    regressions: list[Changed] = field(default_factory=list)
    flaky: list[Changed] = field(default_factory=list)
    fixes: list[Changed] = field(default_factory=list)
    other: list[Changed] = field(default_factory=list)
    drift: list[Drift] = field(default_factory=list)
    inputs: list[Changed] = field(default_factory=list)
    outputs: list[Changed] = field(default_factory=list)
    bits: int = 0  # pairs whose outputs' hashes both runs recorded

    def add(self, was: Result, now: Result) -> None:
        regressed = (was.status in WORKING and failing(now)) or more_severe(was, now)
        if regressed and (now.case, now.ep) in self.flaky_keys:
            self.flaky.append(Changed(was, now))
        elif regressed:
            self.regressions.append(Changed(was, now))
        elif failing(was) and now.status in WORKING:
            self.fixes.append(Changed(was, now))
        elif (was.status, was.failure_kind) != (now.status, now.failure_kind):
            self.other.append(Changed(was, now))
        grown = drifted(was, now)
        if grown:
            self.drift.append(Drift(was, now, grown))
        if differing_inputs(was, now):
            self.inputs.append(Changed(was, now))
        elif all(compared_hashes(was, now)):
            self.bits += 1
            if differing_outputs(was, now):
                self.outputs.append(Changed(was, now))


def diff_runs(
    old: Sequence[Result],
    new: Sequence[Result],
    old_environment: Environment | None = None,
    new_environment: Environment | None = None,
    by_case: bool = False,
    allow_removed: bool = False,
    flaky: frozenset[tuple[str, str]] = frozenset(),
) -> RunDiff:
    """Compare two runs by (case, EP), or by case alone (``by_case``: SeveralEps where a run holds several EPs);
    entries follow the new run's order (removed cases: the old run's). ``flaky``: (case, EP) of the new results
    that a flaky entry tolerates."""
    before, after = _keyed(old, "old", by_case), _keyed(new, "new", by_case)
    pairs = _Pairs(flaky)
    for key, now in after.items():
        was = before.get(key)
        if was is not None:
            pairs.add(was, now)
    env = None
    if old_environment is not None and new_environment is not None:
        env = environment_changes(old_environment, new_environment, by_case)
    new_eps = len(dict.fromkeys(r.ep for r in new))
    recorded = new_environment or Environment()
    fails = unwaivable(recorded, completeness(recorded, len(new), idle(new), new_eps))
    return RunDiff(
        regressions=tuple(pairs.regressions),
        flaky=tuple(pairs.flaky),
        fixes=tuple(pairs.fixes),
        other_changes=tuple(pairs.other),
        new_cases=tuple(r for key, r in after.items() if key not in before),
        removed_cases=tuple(r for key, r in before.items() if key not in after),
        metric_drift=tuple(pairs.drift),
        compared=sum(1 for key in after if key in before),
        environment=env,
        inputs_differ=tuple(pairs.inputs),
        outputs_differ=tuple(pairs.outputs),
        outputs_compared=pairs.bits,
        by_case=by_case,
        allow_removed=allow_removed,
        old_side=side(old, old_environment),
        new_side=side(new, new_environment),
        new_unwaivable=fails,
    )

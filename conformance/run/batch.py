"""Cases on one EP in few sessions: small cases run packed many to a session (pack.py), the rest one by one. Which cases
may share a packed session is their execution path's say (``pack_group``): onnxruntime's packs by opset, DirectML's
operator API dispatches each descriptor alone.

A packed case's result stands only when it is a clean PASS: the packed session was created, ran, placed every node
of that case on the EP, and the case PASSed. Every other case runs again alone, one case per session, exactly as a
run without packing runs it:

- a case that did not PASS in the pack runs alone (the others keep their PASS); its verdict alone is its verdict,
  and where the packed one differed the result says so (``Result.packed``): the EP's output depended on the other
  nodes of the model, which is a finding of its own (the WebGPU EP's shader cache, reports/README.md);
- a refused packed session runs alone the cases onnxruntime's refusal names, with every case of the same signature
  (op types and input data types: a missing kernel refuses them all), and packs the rest again;
- a failure that names no case (a run that throws) splits the pack in halves instead, down to single cases;
- a lost device, or a DirectML runner that died under the pack, runs every case of it alone (the case that kills
  the runner again is then a CRASH, the others run as they would have).

So every verdict but PASS comes from a case's own session, and a case can only differ from an unpacked run by
passing in a pack and failing alone, which benchmarks/throughput.py looks for on the GPUs (docs/performance.md).
DirectML fuses its partition into one DML graph and records it as one ``DmlFusedNode_*``, which is every case's
record (pack.py): with CPU fallback disabled, a case DirectML cannot take refuses the packed session instead.

With ``--repeat N`` each group (a pack, or a case alone) runs N times in a row, each time exactly as above and in
sessions of its own (a new session for every run, none kept open between runs, so that a run is what a new run of
the case would give: a kernel chosen, a shader compiled or memory allocated anew); a case's runs then give its one
result (repeat.py), FLAKY where they differ. Inputs and the oracle are computed once: they are NumPy's, bit-exact.
A fault ends a case's runs; the others of its pack go on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Protocol

from conformance.cases.parse import Entry
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.model import Status
from conformance.problems import first_line
from conformance.results import Result
from conformance.run.execution_path import Regroup
from conformance.run.options import RunOptions
from conformance.run.paths import path_for
from conformance.run.repeat import FAULTS, merged
from conformance.run.runner import Prepared, execute_prepared, finish, prepare

log = logging.getLogger(__name__)


class Watch(Protocol):
    """Told what a batch works on, so that a supervisor knows which cases a crash or a hang belongs to, and which side
    it waited for (worker.py): ``begin`` before a case is prepared and before each session runs (the entries' places,
    several for a pack, and before a session the hashes of their inputs, which a CRASH or TIMEOUT result then
    records), ``judging`` once the EP answered and the harness judges what it returned (its own work again, no
    longer the EP's), ``finished`` as results become final (by place; a pack's clean PASSes at once),
    ``device_lost`` when a packed session says the device is gone. A worker exits there: its device context is
    dead, and each case of the pack must run alone on a fresh one to find the case that lost it. In this process
    (-j 0), the batch goes on with each case of the pack alone."""

    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None: ...

    def judging(self, places: Sequence[int]) -> None: ...

    def finished(self, results: Mapping[int, Result]) -> None: ...

    def device_lost(self, places: Sequence[int], message: str) -> None: ...


class Unwatched:
    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None:
        pass

    def judging(self, places: Sequence[int]) -> None:
        pass

    def finished(self, results: Mapping[int, Result]) -> None:
        pass

    def device_lost(self, places: Sequence[int], message: str) -> None:
        pass


@dataclass(frozen=True)
class Split:
    """What a pack gave: ``kept``, the results that stand (clean PASSes); of the rest, ``alone`` run one case per
    session, ``apart`` as a group of their own, and the others as another group."""

    kept: Mapping[int, Result] = field(default_factory=dict)
    tried: Mapping[int, Result] = field(default_factory=dict)  # the packed results of the cases that run again
    alone: frozenset[int] = frozenset()
    apart: frozenset[int] = frozenset()
    lost: str = ""  # the packed session's error, where it says the device was lost


def _packed(
    group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions, answered: Callable[[], None]
) -> Split:
    """The group run as one pack (its path's ``run_pack``): the clean PASSes kept, and how the rest runs again;
    ``answered`` is called once the pack ran, before the harness judges its outputs."""
    start = time.perf_counter()
    outcomes = path_for(ep).run_pack(group, ep, options, sessions)
    if isinstance(outcomes, Regroup):
        return Split(alone=outcomes.alone, apart=outcomes.apart, lost=outcomes.lost)
    answered()
    share = (time.perf_counter() - start) / len(group)
    quiet = replace(options, artifacts=None)  # a FAIL here runs again alone, and that run keeps the artifacts
    results = [finish(p, outcome, ep, quiet, share) for p, outcome in zip(group, outcomes, strict=True)]
    kept = {place: result for place, result in enumerate(results) if result.status is Status.PASS}
    tried = {place: result for place, result in enumerate(results) if place not in kept}
    return Split(kept=kept, tried=tried, alone=frozenset(tried))


def _noted(alone: Result, packed: Result | None, others: int) -> Result:
    """The case's own result, saying so where packed with ``others`` cases it got another verdict."""
    if packed is None or packed.status is alone.status:
        return alone
    what = f"{packed.failure_kind}: " if packed.failure_kind else ""
    note = f"{packed.status.value} when packed with {others} other case(s), {alone.status.value} alone"
    return replace(alone, packed=f"{note}: {what}{first_line(packed.message)}")


def _alone(prepared: Prepared, place: int, ep: EpSpec, options: RunOptions, sessions: Sessions, watch: Watch) -> Result:
    watch.begin([place], True, [prepared.base.inputs_sha256])
    return execute_prepared(prepared, ep, options, sessions, partial(watch.judging, [place]))


def _run_group(
    group: Sequence[Prepared], places: Sequence[int], ep: EpSpec, options: RunOptions, sessions: Sessions, watch: Watch
) -> list[Result]:
    """The group's results in order: packed where they PASS, else run again as ``_packed`` says; each result is
    given to ``watch`` as it becomes final (``places``: the group's places in the batch)."""
    if len(group) == 1:
        result = _alone(group[0], places[0], ep, options, sessions, watch)
        watch.finished({places[0]: result})
        return [result]
    watch.begin(places, True, [p.base.inputs_sha256 for p in group])
    outcome = _packed(group, ep, options, sessions, partial(watch.judging, list(places)))
    if outcome.lost:
        watch.device_lost(places, outcome.lost)
    results = dict(outcome.kept)
    watch.finished({places[place]: result for place, result in outcome.kept.items()})
    for place in sorted(outcome.alone):
        alone = _alone(group[place], places[place], ep, options, sessions, watch)
        results[place] = _noted(alone, outcome.tried.get(place), len(group) - 1)
        watch.finished({places[place]: results[place]})
    rest = [place for place in range(len(group)) if place not in results]
    for part in ([p for p in rest if p in outcome.apart], [p for p in rest if p not in outcome.apart]):
        if part:
            again = _run_group([group[p] for p in part], [places[p] for p in part], ep, options, sessions, watch)
            results |= dict(zip(part, again, strict=True))
    return [results[place] for place in range(len(group))]


class _Repeats(Unwatched):
    """The Watch of a repeated group's runs: what runs is told to the batch's Watch at once (a supervisor's timeout
    and crash handling need it); each run's results are kept, and a case's one result (repeat.py) is given to the
    batch's Watch after its last run, or at once where a run ends in a fault (a worker exits on a lost device)."""

    def __init__(self, group: Sequence[Prepared], places: Sequence[int], planned: int, watch: Watch) -> None:
        self.group, self.places, self.planned, self.watch = group, places, planned, watch
        self.at = {place: i for i, place in enumerate(places)}
        self.runs: list[list[Result]] = [[] for _ in group]
        self.final: dict[int, Result] = {}

    def begin(self, places: Sequence[int], executing: bool, inputs: Sequence[Mapping[str, str]] = ()) -> None:
        self.watch.begin(places, executing, inputs)

    def judging(self, places: Sequence[int]) -> None:
        self.watch.judging(places)

    def device_lost(self, places: Sequence[int], message: str) -> None:
        self.watch.device_lost(places, message)

    def finished(self, results: Mapping[int, Result]) -> None:
        for place, result in results.items():
            i = self.at[place]
            self.runs[i].append(result)
            if result.status in FAULTS:
                self._settle(i)

    def live(self) -> list[int]:
        """The group's cases still to run again (in the group's order)."""
        return [i for i in range(len(self.group)) if i not in self.final]

    def _settle(self, i: int) -> None:
        self.final[i] = merged(self.runs[i], self.planned, self.group[i].seconds)
        self.watch.finished({self.places[i]: self.final[i]})

    def results(self) -> list[Result]:
        """Every case's one result, in the group's order, those not yet given to the batch's Watch given now."""
        for i in self.live():
            self._settle(i)
        return [self.final[i] for i in range(len(self.group))]


def _repeated(
    group: Sequence[Prepared], places: Sequence[int], ep: EpSpec, options: RunOptions, sessions: Sessions, watch: Watch
) -> list[Result]:
    """The group's results as ``_run_group`` gives them, each case's from ``options.repeat`` runs of the group (its
    pack run again, or the case alone again), each run in sessions of its own; a case whose run ends in a fault is
    not run again."""
    if options.repeat == 1:
        return _run_group(group, places, ep, options, sessions, watch)
    repeats = _Repeats(group, places, options.repeat, watch)
    fresh = Sessions(capacity=0, runners=sessions.runners)  # none kept: each run opens its own
    for _ in range(options.repeat):
        live = repeats.live()
        if not live:
            break
        _run_group([group[i] for i in live], [places[i] for i in live], ep, options, fresh, repeats)
    return repeats.results()


def _pack_group(prepared: Prepared, ep: EpSpec, options: RunOptions) -> tuple[tuple[str, int], ...] | None:
    """The pack the case waits for (its EP's path says which cases may be packed: onnxruntime's, by opset, up to
    --pack a session; DirectML's operator API's, up to its batch option a command list); None: it runs at once,
    alone, as every case does with --pack 1 (and --rerun-failures' runs again)."""
    return path_for(ep).pack_group(prepared, ep, options) if options.pack > 1 else None


def run_batch(
    entries: Sequence[Entry], ep: EpSpec, options: RunOptions, sessions: Sessions, watch: Watch | None = None
) -> list[Result]:
    """Every entry's result on ``ep``, in order. Cases up to pack.PACK_MAX_ELEMENTS wait to be packed, grouped by
    opset, at most ``options.pack`` per pack, within pack.PACK_MAX_COST and PACK_MAX_TOTAL (pack_spans); the others
    run at once, so that a large case's arrays are never held while others run."""
    watch = watch or Unwatched()
    results: dict[int, Result] = {}
    waiting: dict[tuple[tuple[str, int], ...], list[tuple[int, Prepared]]] = {}
    for index, entry in enumerate(entries):
        watch.begin([index], executing=False)
        prepared = prepare(entry, ep, options)
        if isinstance(prepared, Result):  # no execution: nothing to repeat
            results[index] = prepared
            watch.finished({index: prepared})
        elif (group := _pack_group(prepared, ep, options)) is not None:
            waiting.setdefault(group, []).append((index, prepared))
        else:
            results[index] = _repeated([prepared], [index], ep, options, sessions, watch)[0]
    for members in waiting.values():
        for span in path_for(ep).pack_spans([p for _, p in members], ep, options):
            chunk = members[span.start : span.stop]
            places = [index for index, _ in chunk]
            group_results = _repeated([p for _, p in chunk], places, ep, options, sessions, watch)
            results |= dict(zip(places, group_results, strict=True))
    return [results[index] for index in range(len(entries))]

"""Summary data built from results first; the Markdown and console reports only format it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from conformance import ep_table
from conformance.environment import (
    Environment,
    RunnerDeath,
    SkippedFile,
)
from conformance.gate.header import identity_lines, run_lines
from conformance.model import LAYOUTS_NOT_EXERCISED, MODE_MISMATCH, Status
from conformance.results import EXECUTED, FAILING, Result, ep_not_started

STATUS_ORDER = tuple(Status)
# INVALID is a negative case rejected as it should be; the rest, worth a line each in a report, are NOTABLE.
OK = frozenset({Status.PASS, Status.INVALID})
NOTABLE = frozenset(Status) - OK
# The EP gave no verdict: it declined the case, or ONNX cannot express it. Reports count these by reason.
NO_VERDICT = frozenset({Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE})
IN_FLIGHT_SHOWN = 5  # cases in flight named in a runner death's reason line; the rest counted


def severity(status: Status) -> tuple[int, int]:
    """A sort key, most severe first: FAIL, every other failing status, the other verdicts (QUALITY_WARNING), no
    verdict, then PASS and INVALID; each in the enum's order, so that a status added to the enum sorts without a
    change here."""
    if status is Status.FAIL:
        rank = 0
    elif status in FAILING:
        rank = 1
    elif status in NO_VERDICT:
        rank = 3
    elif status in OK:
        rank = 4
    else:
        rank = 2
    return rank, STATUS_ORDER.index(status)


def plural(count: int, noun: str, nouns: str | None = None) -> str:
    """ "1 known failure", "52 known failures"."""
    return f"{count} {noun if count == 1 else nouns or noun + 's'}"


@dataclass(frozen=True)
class Completeness:
    """How much of the planned run results.json holds: a run interrupted (Ctrl-C, workers that would not start)
    records ``interrupted`` and ``planned_results`` ((case, EP) pairs); one with --keep-going records the case files'
    ``problems`` (their cases never ran, so no count of them exists); ``skipped_files``, where a run records it, names
    files it did not read. An interrupted run, skipped case files' problems or an EP that executed nothing fail the
    run; ``skipped_files`` alone is only reported."""

    ran: int
    planned: int | None
    eps: int
    interrupted: bool
    problems: tuple[str, ...]
    idle_eps: tuple[str, ...]
    skipped_files: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return not (self.interrupted or self.problems or self.idle_eps)

    @property
    def cases_run(self) -> str:
        """ "120 of 1881 cases run"; with several EPs a case counts once per EP, and the line says so."""
        if self.planned is None:
            return f"{plural(self.ran, 'case')} run"
        line = f"{self.ran} of {self.planned} cases run"
        if self.eps > 1 and self.planned % self.eps == 0:
            line += f" ({plural(self.planned // self.eps, 'case')}, each on {self.eps} EPs)"
        return line

    @property
    def reasons(self) -> tuple[str, ...]:
        """Why the run is incomplete, one line each ("interrupted: 120 of 1881 cases run"); empty when complete."""
        reasons = []
        if self.interrupted:
            reasons.append(f"interrupted: {self.cases_run}")
        if self.problems:
            counted = f"{self.cases_run}; " if not self.interrupted else ""
            skipped = f"case files skipped for {len(self.problems)} problem(s) (--keep-going)"
            reasons.append(f"{counted}{skipped}: their cases did not run")
        reasons += [f"EP {ep} executed none of its cases" for ep in self.idle_eps]
        return tuple(reasons)

    @property
    def skipped_line(self) -> str:
        """ "files skipped: 2 (a.yaml, b.yaml)", where the run recorded files it skipped; else empty."""
        if not self.skipped_files:
            return ""
        return f"files skipped: {len(self.skipped_files)} ({', '.join(self.skipped_files)})"


def completeness(environment: Environment, ran: int, idle_eps: Sequence[str], eps: int) -> Completeness:
    """``ran`` results of ``eps`` EPs (those with results: results.json's own list where it has one)."""
    return Completeness(
        ran=ran,
        planned=environment.planned_results,
        eps=len(environment.eps) or eps,
        interrupted=environment.interrupted,
        problems=environment.problems,
        idle_eps=tuple(idle_eps),
        skipped_files=tuple(_skipped_file(entry) for entry in environment.skipped_files),
    )


def _skipped_file(entry: SkippedFile) -> str:
    """One of results.json's ``skipped_files`` as a report shows it: "cases/b.yaml: 2 problems"."""
    return f"{entry.path}: {plural(entry.problems, 'problem')}" if entry.problems is not None else entry.path


@dataclass(frozen=True)
class Placement:
    """How many results ran (PASS, FAIL, FLAKY, QUALITY_WARNING) with every node recorded on their own EP, and which did
    not: a verdict without onnxruntime's placement record on the EP (on dmlop, the operator DirectML's CreateOperator
    returned) proves nothing."""

    proven: int
    unproven: tuple[str, ...]  # "case [ep]: why"

    @property
    def line(self) -> str:
        if not self.unproven and not self.proven:
            return "no executed results"
        if not self.unproven:
            return (
                f"{self.proven} executed result(s), every node recorded on its own EP (by onnxruntime; on dmlop, the"
                " operator DirectML created)"
            )
        return f"{len(self.unproven)} executed result(s) WITHOUT placement proof; {self.proven} proven"


@dataclass(frozen=True)
class ModeColumn:
    """One EP of a run that ran an EP in several execution modes (run/modes.py): the mode matrix's column."""

    ep: str  # its --ep text
    modes: str  # the modes apart from the EP's defaults, in words ("compile=graph"); "defaults" for none
    executed: int  # results with outputs to compare
    mismatched: int  # of them, FAIL mode_mismatch: bit-different from the defaults' outputs
    verdicts: Mapping[Status, int]  # every result's verdict (a mode_mismatch counted as its FAIL)

    @property
    def base(self) -> bool:
        """The defaults: what the other modes are compared with."""
        return self.modes == DEFAULT_MODES


DEFAULT_MODES = "defaults"


def _modes_apart(result: Result) -> str | None:
    """The result's execution modes apart from its EP's defaults, in words (None: an EP without modes)."""
    recorded = (result.directml or {}).get("modes")
    known = ep_table.known_ep(result.ep.split(":", 1)[0])
    if not isinstance(recorded, dict) or known is None or not known.modes:
        return None
    apart = ep_table.modes_apart(known, {str(key): str(value) for key, value in recorded.items()})
    return ", ".join(f"{key}={value}" for key, value in apart.items()) or DEFAULT_MODES


def mode_columns(results: Sequence[Result]) -> tuple[ModeColumn, ...]:
    """The mode matrix: a column per EP that ran in an execution mode, where the run has several; () otherwise."""
    modes: dict[str, str] = {}
    for r in results:
        apart = _modes_apart(r)
        if apart is not None:
            modes.setdefault(r.ep, apart)
    if len(modes) < 2:
        return ()
    columns = []
    for ep, apart in modes.items():
        mine = [r for r in results if r.ep == ep]
        columns.append(
            ModeColumn(
                ep,
                apart,
                executed=sum(1 for r in mine if r.values_sha256),
                mismatched=sum(1 for r in mine if r.failure_kind == MODE_MISMATCH),
                verdicts=dict(Counter(r.status for r in mine)),
            )
        )
    return tuple(columns)


@dataclass(frozen=True)
class Summary:
    environment: Environment
    totals: Mapping[Status, int]
    eps: tuple[str, ...]
    by_operator: tuple[tuple[str, str, Mapping[Status, int]], ...]  # (operator, ep, counts)
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...]  # (case, status per ep), only with several EPs
    notable: tuple[Result, ...]
    identity: tuple[tuple[str, str], ...] = ()  # (what, which): device, software, EPs; from the environment
    dml_operators: tuple[tuple[str, str, int], ...] = ()  # (operator, DML operator(s) reached, cases)
    placement: Placement | None = None
    idle_eps: tuple[str, ...] = ()  # EPs that never started a session and so executed nothing
    packed_differences: tuple[str, ...] = ()  # "case [ep]: FAIL when packed ..., PASS alone: ..." (Result.packed)
    # (operator, data type, EP, counts): the report's matrix, a row per operator and data type
    by_data_type: tuple[tuple[str, str, str, Mapping[Status, int]], ...] = ()
    modes: tuple[ModeColumn, ...] = ()  # the mode matrix (mode_columns)
    # (EP, results): the results whose case has layouts that the EP was fed packed (model.LAYOUTS_NOT_EXERCISED)
    unexercised: tuple[tuple[str, int], ...] = ()

    @property
    def run(self) -> tuple[tuple[str, str], ...]:
        """(what, which): the command line, the feature level, when, the harness (run_lines)."""
        return run_lines(self.environment)

    @property
    def devices(self) -> tuple[tuple[str, str], ...]:
        """(what, which): what each EP ran on, the first lines of ``identity`` (identity_lines puts them first)."""
        return self.identity[: len(self.environment.eps)]

    @property
    def completeness(self) -> Completeness:
        return completeness(self.environment, sum(self.totals.values()), self.idle_eps, len(self.eps))

    @property
    def failed(self) -> bool:
        """A FAIL or ERROR, an EP that ran nothing (a gate must not pass on an EP that never started), a run
        that was interrupted (results.json says so), or a runner that died."""
        return any(self.totals.get(s, 0) for s in FAILING) or bool(self.unwaivable)

    @property
    def unwaivable(self) -> tuple[str, ...]:
        """What fails a run whatever its results and the waivers say, one reason each: why it is incomplete, and each
        EP whose runner or worker died while serving a pack of cases (each case was run again alone and may have
        passed, so no result stands for the death, and no waiver of a case can). A death with one case in flight is
        that case's CRASH or TIMEOUT result, waivable as any; runner starts that keep failing stop the run."""
        return unwaivable(self.environment, self.completeness)


def placement_proof(environment: Environment, results: Sequence[Result]) -> Placement:
    names = {ep.label: str(ep.name) for ep in environment.eps}
    proven, unproven = 0, []
    for r in results:
        if r.status not in EXECUTED:
            continue
        where = set(r.placement.values())
        if not where or where != {names.get(r.ep)}:
            unproven.append(f"{r.case} [{r.ep}]: placed on {', '.join(sorted(where)) or 'nothing recorded'}")
        else:
            proven += 1
    return Placement(proven, tuple(unproven))


def unwaivable(environment: Environment, complete: Completeness) -> tuple[str, ...]:
    """What fails a run whatever its results and the waivers say (Summary.unwaivable), from its environment and its
    completeness: one function for report, run, merge and diff alike."""
    deaths = (death_reason(death) for death in environment.runner_deaths if fails_the_run(death))
    return (*complete.reasons, *deaths)


def fails_the_run(death: RunnerDeath) -> bool:
    """Whether an EP's runner deaths fail the run whatever the waivers say: some came while serving a pack."""
    return death.pack_deaths > 0


def death_verdict(death: RunnerDeath) -> str:
    """What a report says after ``death``'s reason line."""
    return "the run fails" if fails_the_run(death) else "the cases' own results stand for them"


def death_reason(death: RunnerDeath) -> str:
    """What the record says: "EP dml: the runner died 4 times while serving packs (cases in flight: a, b); each case
    was run again alone", or with deaths of the other kinds (one case in flight, between requests, a start) counted
    apart: "EP dml: the runner died 1 time while serving packs and 2 times that a case's own fault result, a gap
    between requests or a start accounts for (...)"."""
    shown = ", ".join(death.cases[:IN_FLIGHT_SHOWN])
    more = len(death.cases) - IN_FLIGHT_SHOWN
    cases = f"cases in flight: {shown}" + (f" and {more} more" if more > 0 else "") if death.cases else "no case named"
    packs, others = death.pack_deaths, death.count - death.pack_deaths
    counted = [f"{plural(packs, 'time')} while serving packs"] if packs else []
    counted += (
        [f"{plural(others, 'time')} that a case's own fault result, a gap between requests or a start accounts for"]
        if others
        else []
    )
    then = "; each case of a pack was run again alone" if packs else ""
    return f"EP {death.ep}: the runner died {' and '.join(counted) or '0 times'} ({cases}){then}"


def data_type_counts(results: Sequence[Result]) -> tuple[tuple[str, str, str, Mapping[Status, int]], ...]:
    cells: dict[tuple[str, str, str], Counter[Status]] = {}
    for r in results:
        cells.setdefault((r.operator, r.data_type or "—", r.ep), Counter())[r.status] += 1
    return tuple((op, data_type, ep, dict(counts)) for (op, data_type, ep), counts in sorted(cells.items()))


def idle(results: Sequence[Result]) -> tuple[str, ...]:
    """EPs that could not create a session ("ep_not_started") and executed no case at all."""
    not_started = dict.fromkeys(r.ep for r in results if ep_not_started(r))
    executed = {r.ep for r in results if r.status in EXECUTED}
    return tuple(ep for ep in not_started if ep not in executed)


def dml_operator_counts(results: Sequence[Result]) -> tuple[tuple[str, str, int], ...]:
    """How many cases reach each DML operator on DirectML (each case once, whatever the EPs)."""
    reached = {r.case: (r.operator, r.dml_operator) for r in results if r.dml_operator}
    return tuple((op, dml, n) for (op, dml), n in sorted(Counter(reached.values()).items()))


def summarize(environment: Environment, results: Sequence[Result]) -> Summary:
    eps = tuple(dict.fromkeys(r.ep for r in results))
    grouped: dict[tuple[str, str], Counter[Status]] = {}
    for r in results:
        grouped.setdefault((r.operator, r.ep), Counter())[r.status] += 1
    by_operator = tuple((op, ep, dict(c)) for (op, ep), c in sorted(grouped.items()))
    matrix: tuple[tuple[str, tuple[Status | None, ...]], ...] = ()
    if len(eps) > 1:
        statuses: dict[str, dict[str, Status]] = {}
        for r in results:
            statuses.setdefault(r.case, {})[r.ep] = r.status
        matrix = tuple((case, tuple(row.get(ep) for ep in eps)) for case, row in statuses.items())
    return Summary(
        environment=environment,
        totals=dict(Counter(r.status for r in results)),
        eps=eps,
        by_operator=by_operator,
        matrix=matrix,
        notable=tuple(r for r in results if r.status in NOTABLE),
        identity=identity_lines(environment),
        dml_operators=dml_operator_counts(results),
        idle_eps=idle(results),
        placement=placement_proof(environment, results),
        packed_differences=tuple(f"{r.case} [{r.ep}]: {r.packed}" for r in results if r.packed),
        by_data_type=data_type_counts(results),
        modes=mode_columns(results),
        unexercised=tuple(Counter(r.ep for r in results if r.details.get(LAYOUTS_NOT_EXERCISED)).items()),
    )


def unexercised_line(summary: Summary) -> str:
    """One line, every report's: how many results on each EP had layouts that it was fed packed; "" for none."""
    if not summary.unexercised:
        return ""
    counts = ", ".join(f"{count} on {ep}" for ep, count in summary.unexercised)
    return (
        f"layouts not exercised: {counts} result(s) of cases with strides or padding were fed to the EP packed "
        "through onnxruntime, so those layouts were not checked there (--ep dmlop binds each tensor as the case "
        "lays it out)"
    )

"""Spec coverage: which clauses each case exercises, the map of every clause's cases, and the quick selection.

A valid case exercises the clauses (and facets) its operator's rules read off its descriptor and real inputs
(each operator's ``CoverageEntry``, from coverage/operators.py); a negative case covers the clauses the validator
cites when it rejects it.
Nothing is taken from a case's id or description, so a case cannot claim coverage it does not provide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from conformance.cases.generate import case_inputs
from conformance.cases.layouts import input_layouts
from conformance.cases.limits import DEFAULT_MAX_ELEMENTS
from conformance.cases.parse import Entry
from conformance.cases.suite import Suite
from conformance.cases.validate import validate
from conformance.coverage.clauses import Clause, all_clauses
from conformance.coverage.facts import ANY
from conformance.coverage.layouts import LAYOUT_FACETS, REJECTED, breaks_layout, layout_facets
from conformance.coverage.operators import OPERATORS
from conformance.ep_table import KNOWN_EPS, OWNED_BY_DML
from conformance.model import CONSTANT_INPUTS, Case, Operator

NEGATIVE = "rejected"  # the item a negative case gives its clauses in the quick selection's cover


@dataclass(frozen=True)
class CaseCoverage:
    """What one case covers: clause id -> facets it shows (valid case), or the clauses it breaks (negative)."""

    case_id: str
    positive: Mapping[str, frozenset[str]]
    negative: frozenset[str]
    layouts: frozenset[str] = frozenset()  # coverage/layouts.py's facets: what its tensors' layouts show
    operator: str = ""
    constants: bool = False  # a valid case that gives a constant input (model.CONSTANT_INPUTS): owned_by_dml's

    def items(self) -> set[tuple[str, str]]:
        """(clause id, facet) pairs, with (clause id, NEGATIVE) for each clause it is a negative case of, and
        ("<operator> layout: <facet>", ANY) for each layout facet it shows (so that quick keeps one case of each)."""
        pairs = {(c, f) for c, facets in self.positive.items() for f in facets} | {(c, NEGATIVE) for c in self.negative}
        return pairs | {(f"{self.operator} layout: {facet}", ANY) for facet in self.layouts}


@dataclass(frozen=True)
class ClauseCoverage:
    clause: Clause
    positive: tuple[str, ...]
    negative: tuple[str, ...]
    missing: tuple[str, ...]  # required facets no case shows

    @property
    def covered(self) -> bool:
        return bool(self.positive) and not self.missing and (bool(self.negative) or not self.clause.needs_negative)


@dataclass(frozen=True)
class ModeCoverage:
    """One execution mode (ep_table.Mode's other value): what it exercises in a driver, the valid cases of each
    operator it changes how they execute, and how many clauses those cases exercise."""

    ep: str
    mode: str  # "queue=compute"
    exercises: str
    cases: Mapping[str, int]  # operator -> valid cases
    clauses: int


@dataclass(frozen=True)
class CoverageMap:
    clauses: tuple[ClauseCoverage, ...]
    cases: int
    unknown: tuple[str, ...]  # clause ids cited by a rule or the validator that no catalogue has (a bug)
    # (operator, layout facet) -> the cases that show it, for every operator and facet (coverage/layouts.py)
    layouts: Mapping[tuple[str, str], tuple[str, ...]] = field(default_factory=dict)
    modes: tuple[ModeCoverage, ...] = ()  # each execution mode's reach (mode_coverage)

    @property
    def uncovered(self) -> tuple[ClauseCoverage, ...]:
        return tuple(c for c in self.clauses if not c.covered)


def case_coverage(entry: Entry, max_elements: int = DEFAULT_MAX_ELEMENTS) -> CaseCoverage:
    """The clauses ``entry`` exercises; a case that cannot be read or run covers nothing."""
    if not isinstance(entry, Case):
        return CaseCoverage(entry.id, {}, frozenset())
    problems = validate(entry, max_elements)
    operator = entry.operator.value
    if entry.expect_invalid is not None or problems:
        negative = entry.expect_invalid is not None
        cited = {c for p in problems for c in p.clauses} if negative else set()
        rejected = frozenset({REJECTED}) if negative and breaks_layout(problems) else frozenset()
        return CaseCoverage(entry.id, {}, frozenset(cited), rejected, operator)
    prefix = f"{operator}."
    facets = OPERATORS[entry.operator].exercised(entry, case_inputs(entry))
    positive = {prefix + name: frozenset(seen) for name, seen in facets.items()}
    constants = bool(set(CONSTANT_INPUTS[entry.operator]) & set(input_layouts(entry)))
    return CaseCoverage(entry.id, positive, frozenset(), layout_facets(entry), operator, constants)


def mode_coverage(coverages: Sequence[CaseCoverage], operators: Iterable[Operator]) -> tuple[ModeCoverage, ...]:
    """Each execution mode of each EP that has modes (the EP table's): the valid cases it reaches, by operator (every
    valid case, but owned_by_dml's: those that give a constant input, whose tensors DirectML then owns), and the
    clauses those cases exercise."""
    wanted = set(operators)
    names = [op.value for op in Operator if op in wanted]
    valid = [c for c in coverages if c.positive and c.operator in names]
    found = []
    for ep in KNOWN_EPS:
        for mode in ep.modes:
            reached = [c for c in valid if c.constants] if mode.option == OWNED_BY_DML else valid
            for value in mode.others:
                found.append(
                    ModeCoverage(
                        ep.alias,
                        f"{mode.option}={value}",
                        mode.exercises,
                        {name: sum(1 for c in reached if c.operator == name) for name in names},
                        len({cid for c in reached for cid in c.positive}),
                    )
                )
    return tuple(found)


def required_facets() -> dict[str, frozenset[str]]:
    """Clause id -> the facets that must all be seen before the clause counts as covered."""
    return {f"{op.value}.{name}": facets for op, rules in OPERATORS.items() for name, facets in rules.required.items()}


def build_map(coverages: Sequence[CaseCoverage], operators: Iterable[Operator] = tuple(Operator)) -> CoverageMap:
    wanted = set(operators)
    clauses = {cid: c for cid, c in all_clauses().items() if c.operator in wanted}
    required = required_facets()
    positive: dict[str, list[str]] = {cid: [] for cid in clauses}
    negative: dict[str, list[str]] = {cid: [] for cid in clauses}
    seen: dict[str, set[str]] = {cid: set() for cid in clauses}
    unknown: set[str] = set()
    for coverage in coverages:
        for cid, facets in coverage.positive.items():
            if cid not in clauses:
                unknown.add(cid)
                continue
            positive[cid].append(coverage.case_id)
            seen[cid] |= facets
        for cid in coverage.negative:
            if cid in clauses:
                negative[cid].append(coverage.case_id)
            else:
                unknown.add(cid)
    unknown |= set(required) - set(all_clauses())
    rows = tuple(
        ClauseCoverage(
            clause,
            tuple(positive[cid]),
            tuple(negative[cid]),
            tuple(sorted(required.get(cid, frozenset()) - seen[cid])),
        )
        for cid, clause in clauses.items()
    )
    layouts = {
        (op.value, facet): tuple(c.case_id for c in coverages if c.operator == op.value and facet in c.layouts)
        for op in Operator
        if op in wanted
        for facet in LAYOUT_FACETS
    }
    return CoverageMap(rows, len(coverages), tuple(sorted(unknown)), layouts, mode_coverage(coverages, wanted))


def quick_selection(coverages: Sequence[CaseCoverage], always: Iterable[str] = ()) -> list[str]:
    """A small set of cases that covers every (clause, facet) the given cases cover, in their order.

    Greedy set cover (deterministic: ties go to the earlier case), plus every case that covers a clause as a
    negative case and the ids in ``always`` (``quick`` gives every negative case and the regressions in
    cases/found/)."""
    required = required_facets()

    def useful(coverage: CaseCoverage) -> set[tuple[str, str]]:
        # A clause without required facets needs one case, whatever facet it shows.
        return {(c, f if c in required or f == NEGATIVE else ANY) for c, f in coverage.items()}

    items = {c.case_id: useful(c) for c in coverages}
    chosen = {c.case_id for c in coverages if c.negative} | set(always)
    remaining = set().union(*items.values()) - set().union(*(items[i] for i in chosen if i in items))
    candidates = {i: found & remaining for i, found in items.items() if i not in chosen}
    while remaining:
        best = max(candidates, key=lambda cid: len(candidates[cid] & remaining))
        gained = candidates.pop(best) & remaining
        if not gained:
            break
        chosen.add(best)
        remaining -= gained
    return [c.case_id for c in coverages if c.case_id in chosen]


def is_found(entry: Entry) -> bool:
    """A case under a ``found/`` folder: the smallest form of something a GPU run found (a regression test)."""
    return "found" in PurePosixPath(entry.path).parent.parts


def is_negative(entry: Entry) -> bool:
    """A case marked ``expect: invalid``."""
    return entry.expect_invalid is not None


def quick(suite: Suite, max_elements: int = DEFAULT_MAX_ELEMENTS) -> Suite:
    """The quick selection: few cases covering every clause and facet the suite covers, plus every negative case and
    every found one. Every negative case, not only those whose rejection cites a spec clause: the validator's
    refusal of a malformed case file (data that do not match Sizes, a value outside its data type) is as much a part
    of the gate, and a negative case only validates, so it costs nothing (it never reaches an EP)."""
    coverages = [case_coverage(entry, max_elements) for entry in suite.entries]
    always = [e.id for e in suite.entries if is_found(e) or is_negative(e)]
    chosen = set(quick_selection(coverages, always))
    return replace(suite, entries=tuple(e for e in suite.entries if e.id in chosen))

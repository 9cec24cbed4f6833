"""dmlconf fuzz: random valid descriptors and data run on an EP against the oracle; a mismatch is shrunk by
Hypothesis to a minimal case and written as a case file that ``dmlconf run`` reproduces.

The run is a sequence of batches of examples, batch i seeded from (seed, i), until the time is spent: the same
seed draws the same examples in the same order on every machine, and a longer --time only draws more of them.
The first FAIL or ERROR fixes the failure's signature (status and failure kind); shrinking keeps to that signature
and runs at most ``shrink_examples`` candidates, a count rather than a time, so that the same seed on the same EP
shrinks to the same case however fast the machine is (Hypothesis itself also stops shrinking after 5 minutes,
which only candidates slower than 0.75 s each, at the default budget, can reach).

Candidates are parsed from the same document the case file is written from (no YAML round trip per draw); the
written file, tagged with the lowest feature level that admits its case (level.py), is then read back and run
again, and the outcome says whether it reproduces. It is written under ``--out`` (reports/fuzz/ by default), not
into cases/found/, which every run reads: a finding joins the library only once a person has reviewed it.

Each candidate runs in this process through ``run.runner.run_entry``, not through the worker pool that
``dmlconf run`` and pytest share: Hypothesis calls it thousands of times and must see its result at once, and a
crash here ends a search that its reproduce command then runs under ``dmlconf run``'s protection.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed

from conformance.cases.load import Document, load_document
from conformance.cases.parse import Entry, parse_document
from conformance.cases.schema import EDITOR_COMMENT, SCHEMA_FILE
from conformance.cases.validate import validate
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.fuzz.level import lowest_feature_level
from conformance.fuzz.operators import OPERATORS
from conformance.fuzz.strategies import CaseDict
from conformance.model import Case, Operator, Status
from conformance.problems import first_line
from conformance.results import Result, own_folder, write_text_atomic
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry

log = logging.getLogger(__name__)
BATCH = 25  # examples per seeded batch: short enough that --time is kept to within a few seconds
FAILING = (Status.FAIL, Status.ERROR)  # a fault (CRASH, ...) cannot happen: fuzz runs in this process
FOUND = "cases/found/"  # the library's regression tests, which every run (and --quick) reads
SHRINK_EXAMPLES = 400  # candidates run while shrinking: enough for the strategies' shapes to reach their minimum
PROMOTE = f"To keep it as a regression test, review it, then copy it to {FOUND} (every run reads that folder)."


class _Mismatch(Exception):
    """Raised inside the property so that Hypothesis shrinks the example."""


@dataclass(frozen=True)
class FuzzOutcome:
    examples: int  # candidates run, shrinking's included
    seconds: float
    shrunk: int = 0  # of which while shrinking
    result: Result | None = None  # the minimal failing example's verdict, as the search saw it
    case_file: str | None = None
    reproduced: bool = False  # the written file, run again, gives the same status and failure kind
    rerun: Result | None = None  # the written file's verdict when run again
    reproduce: str = ""  # the command that runs the written file
    feature_level: str = ""  # the written file's: the lowest that admits its case


def case_document(
    operator: Operator, case: CaseDict, case_id: str, description: str, feature_level: str
) -> dict[str, Any]:
    return {
        "operator": operator.value,
        "feature_level": feature_level,
        "cases": [{"id": case_id, "description": description, **case}],
    }


def case_text(operator: Operator, case: CaseDict, case_id: str, description: str, feature_level: str) -> str:
    document = case_document(operator, case, case_id, description, feature_level)
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True)


def _only_entry(where: str, document: Document) -> Entry:
    entries, problems = parse_document(document)
    if problems or len(entries) != 1:
        raise ValueError(f"{where}: the fuzzer wrote a case it cannot read back: {problems or entries}")
    return entries[0]


def read_case(path: str) -> Entry:
    return _only_entry(path, load_document(path))


def _candidate(operator: Operator, case: CaseDict) -> Entry:
    """A drawn case as the pipeline reads it (at the level its operator's strategy draws at)."""
    document = case_document(operator, case, "candidate", "", str(OPERATORS[operator].draw_level))
    return _only_entry("<fuzz candidate>", Document("<fuzz candidate>", document, {}))


def _level(operator: Operator, case: dict[str, Any], options: RunOptions) -> str:
    """The feature level a finding's file is written with: the lowest that admits its case (level.py), so that it
    runs on every DirectML that can take it."""
    entry = _candidate(operator, case)
    if not isinstance(entry, Case):  # a candidate that did not parse never ran, so it cannot have failed
        raise TypeError(f"the fuzzer's failing case did not parse: {entry}")
    return str(lowest_feature_level(entry, options.max_elements))


@dataclass
class _Search:
    operator: Operator
    ep: EpSpec
    options: RunOptions
    shrink_examples: int = SHRINK_EXAMPLES
    # each candidate in a session of its own (none kept), in one DirectML runner for the whole search where needed
    sessions: Sessions = field(default_factory=lambda: Sessions(capacity=0))
    examples: int = 0
    shrunk: int = 0  # candidates run since the first failure
    signature: tuple[Status, str | None] | None = None
    failing: tuple[dict[str, Any], Result] | None = None  # the failure Hypothesis settled on (see _batch)
    failed: dict[str, tuple[dict[str, Any], Result]] = field(default_factory=dict)  # replayed, not run again

    def check(self, case: dict[str, Any]) -> None:
        # One raise for every failure, so that Hypothesis sees one bug, not one per line that raises.
        key = json.dumps(case, sort_keys=True)
        if key in self.failed or self._fails(case, key):
            raise _Mismatch(key)

    def _fails(self, case: dict[str, Any], key: str) -> bool:
        if self.failed:
            if self.shrunk >= self.shrink_examples:
                return False  # shrinking has had its budget: the smallest failure so far stands
            self.shrunk += 1
        entry = _candidate(self.operator, case)
        problems = validate(entry, self.options.max_elements) if isinstance(entry, Case) else []
        if problems:
            raise AssertionError(f"the strategy drew an invalid case: {problems[0]}")
        result = run_entry(entry, self.ep, self.options, self.sessions)
        self.examples += 1
        signature = (result.status, result.failure_kind)
        if result.status in FAILING and self.signature in (None, signature):
            self.signature = signature
            self.failed[key] = (case, result)
            return True
        return False


def _batch(search: _Search, batch_seed: int, special: bool) -> bool:
    """One seeded batch; True when it found (and shrank) a mismatch."""
    config = settings(
        database=None,
        deadline=None,
        max_examples=BATCH,
        phases=[Phase.generate, Phase.shrink],
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
        report_multiple_bugs=False,
        print_blob=False,
    )
    strategy = OPERATORS[search.operator].draw_case(special)
    prop = hypothesis_seed(batch_seed)(config(given(strategy)(search.check)))
    try:
        prop()
    except _Mismatch as mismatch:
        # Hypothesis ends by replaying the smallest failing example it found and raising its exception, so the
        # key the exception carries is the shrunk case (the last one run may be a larger one that also failed).
        search.failing = search.failed[mismatch.args[0]]
        return True
    return False


def fuzz(
    operator: Operator,
    ep: EpSpec,
    seconds: float,
    seed: int,
    out_dir: str,
    special: bool = False,
    shrink_examples: int = SHRINK_EXAMPLES,
    progress: Callable[[int, float], None] | None = None,
) -> FuzzOutcome:
    """Draw and run cases for ``seconds``; the first mismatch is shrunk (running at most ``shrink_examples``
    candidates) and written under ``out_dir``. ``progress`` is told after each batch how many examples ran in how
    many seconds."""
    start = time.monotonic()
    options = RunOptions()
    search = _Search(operator, ep, options, shrink_examples)
    try:
        return _search(search, seconds, seed, special, out_dir, start, progress)
    finally:
        search.sessions.runners.close()


def _search(
    search: _Search,
    seconds: float,
    seed: int,
    special: bool,
    out_dir: str,
    start: float,
    progress: Callable[[int, float], None] | None = None,
) -> FuzzOutcome:
    """The search's batches until a mismatch or the time is up; the mismatch written and run again."""
    operator, ep, options, shrink_examples = search.operator, search.ep, search.options, search.shrink_examples
    batch = 0
    while time.monotonic() - start < seconds:
        if _batch(search, seed * 1_000_003 + batch, special):
            break
        batch += 1
        if progress is not None:
            progress(search.examples, time.monotonic() - start)
    elapsed = time.monotonic() - start
    if search.failing is None:
        return FuzzOutcome(search.examples, elapsed, search.shrunk)
    command = fuzz_command(operator, ep, seconds, seed, special, shrink_examples)
    level = _level(operator, search.failing[0], options)
    run = f"seed{seed}{'-special' if special else ''}"
    path = _write_found(operator, ep, search.failing, out_dir, run, command, level)
    found = search.failing[1]
    again = run_entry(read_case(path), ep, options, search.sessions)
    reproduced = (again.status, again.failure_kind) == (found.status, found.failure_kind)
    reproduce = _reproduce(path, ep)
    return FuzzOutcome(search.examples, elapsed, search.shrunk, found, path, reproduced, again, reproduce, level)


def _alias(ep: EpSpec) -> str:
    return ep.alias if ep.library is None else ep.name  # a library path makes no file name


def _reproduce(path: str, ep: EpSpec) -> str:
    return f"dmlconf run {path} --ep {ep.alias}"  # the --ep text as given (a library path stays a path)


def fuzz_command(operator: Operator, ep: EpSpec, seconds: float, seed: int, special: bool, shrink: int) -> str:
    """The command line that repeats a fuzz run: every option that changes what it draws or keeps."""
    command = f"dmlconf fuzz --operator {operator.value} --ep {_alias(ep)} --seed {seed} --time {seconds:g}"
    command += " --special" if special else ""
    return command + (f" --shrink-examples {shrink}" if shrink != SHRINK_EXAMPLES else "")


def _write_found(
    operator: Operator,
    ep: EpSpec,
    failing: tuple[dict[str, Any], Result],
    out_dir: str,
    run: str,
    command: str,
    feature_level: str,
) -> str:
    case, result = failing
    name = f"fuzz-{operator.value.lower()}-{_alias(ep)}-{run}"
    headline = first_line(result.message, None) or result.status.value
    description = f"Found by `{command}`: {result.status.value} ({result.failure_kind}) on {_alias(ep)}: {headline}"
    path = os.path.join(out_dir, f"{name}.yaml")
    own_folder(out_dir)  # reports/fuzz by default: in a checkout, whose links are never followed
    # The file's header speaks of it where a reviewed finding is promoted to, cases/found/, and is right once it is
    # there: the schema's path as seen from that folder, the command that runs it from the checkout's root (not the
    # folder it was written to, which the console's reproduce line names).
    schema = os.path.relpath(SCHEMA_FILE, FOUND).replace(os.sep, "/")
    header = (
        f"{EDITOR_COMMENT}{schema}\n"
        f"# Written by `{command}`.\n# Reproduce: {_reproduce(f'{FOUND}{name}.yaml', ep)}\n"
        f"# feature_level: {feature_level}, the lowest that admits this case.\n"
        f"# {PROMOTE}\n"
    )
    write_text_atomic(path, header + case_text(operator, case, name, description, feature_level), in_place_device=False)
    return path

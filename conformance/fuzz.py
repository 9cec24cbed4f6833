"""dmlconf fuzz: random valid descriptors and data run on an EP against the oracle; a mismatch is shrunk by
Hypothesis to a minimal case and written as a case file that ``dmlconf run`` reproduces.

The run is a sequence of batches of examples, batch i seeded from (seed, i), until the time is spent: the same
seed draws the same examples in the same order on every machine, and a longer --time only draws more of them.
The first FAIL or ERROR fixes the failure's signature (status and failure kind); shrinking keeps to that signature.
"""

from __future__ import annotations

import logging
import os
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import yaml
from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from conformance import fuzz_strategies
from conformance.eps import EpSpec
from conformance.load import load_document
from conformance.model import Case, Operator, Status
from conformance.parse import Entry, parse_document
from conformance.results import Result, write_text_atomic
from conformance.runner import RunOptions, run_entry
from conformance.validate import validate

log = logging.getLogger(__name__)
STRATEGIES: dict[Operator, Callable[[bool], st.SearchStrategy[dict[str, Any]]]] = {
    Operator.TOP_K1: fuzz_strategies.top_k1,
    Operator.MEAN_VARIANCE_NORMALIZATION1: fuzz_strategies.mean_variance_normalization1,
    Operator.SLICE1: fuzz_strategies.slice1,
}
BATCH = 25  # examples per seeded batch: short enough that --time is kept to within a few seconds
FAILING = (Status.FAIL, Status.ERROR)


class _Mismatch(Exception):
    """Raised inside the property so that Hypothesis shrinks the example."""


@dataclass(frozen=True)
class FuzzOutcome:
    examples: int
    seconds: float
    result: Result | None = None  # the minimal failing example's verdict
    case_file: str | None = None
    reproduced: bool = False  # the written file, run again, gives the same status and failure kind


def case_text(operator: Operator, case: dict[str, Any], case_id: str, description: str) -> str:
    document = {
        "operator": operator.value,
        "feature_level": fuzz_strategies.FEATURE_LEVEL,
        "cases": [{"id": case_id, "description": description, **case}],
    }
    return yaml.safe_dump(document, sort_keys=False, default_flow_style=None, width=120, allow_unicode=True)


def read_case(path: str) -> Entry:
    entries, problems = parse_document(load_document(path))
    if problems or len(entries) != 1:
        raise ValueError(f"{path}: the fuzzer wrote a case it cannot read back: {problems or entries}")
    return entries[0]


@dataclass
class _Search:
    operator: Operator
    ep: EpSpec
    options: RunOptions
    scratch: str
    shrink_seconds: float = 60.0
    examples: int = 0
    signature: tuple[Status, str | None] | None = None
    failing: tuple[dict[str, Any], Result] | None = None
    failed: set[str] = field(default_factory=set)  # case texts seen failing: replayed without running again
    found_at: float = 0.0

    def check(self, case: dict[str, Any]) -> None:
        # One raise for every failure, so that Hypothesis sees one bug, not one per line that raises.
        text = case_text(self.operator, case, "candidate", "")
        if text in self.failed or self._fails(case, text):
            raise _Mismatch(text)

    def _fails(self, case: dict[str, Any], text: str) -> bool:
        if self.failing is not None and time.monotonic() - self.found_at > self.shrink_seconds:
            return False  # shrinking has had its time: the smallest failure so far stands
        path = os.path.join(self.scratch, "candidate.yaml")
        write_text_atomic(path, text)
        entry = read_case(path)
        problems = validate(entry, self.options.max_elements) if isinstance(entry, Case) else []
        if problems:
            raise AssertionError(f"the strategy drew an invalid case: {problems[0]}")
        result = run_entry(entry, self.ep, self.options)
        self.examples += 1
        signature = (result.status, result.failure_kind)
        if result.status in FAILING and self.signature in (None, signature):
            if self.failing is None:
                self.found_at = time.monotonic()
            self.signature, self.failing = signature, (case, result)
            self.failed.add(text)
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
    prop = hypothesis_seed(batch_seed)(config(given(STRATEGIES[search.operator](special))(search.check)))
    try:
        prop()
    except _Mismatch:
        return True
    return False


def fuzz(
    operator: Operator,
    ep: EpSpec,
    seconds: float,
    seed: int,
    out_dir: str,
    special: bool = False,
    shrink_seconds: float = 60.0,
) -> FuzzOutcome:
    """Draw and run cases for ``seconds``; the first mismatch is shrunk (for at most ``shrink_seconds``) and
    written under ``out_dir``."""
    start = time.monotonic()
    options = RunOptions()
    with tempfile.TemporaryDirectory(prefix="dmlconf-fuzz-") as scratch:
        search = _Search(operator, ep, options, scratch, shrink_seconds)
        batch = 0
        while time.monotonic() - start < seconds:
            if _batch(search, seed * 1_000_003 + batch, special):
                break
            batch += 1
    elapsed = time.monotonic() - start
    if search.failing is None:
        return FuzzOutcome(search.examples, elapsed)
    case, result = search.failing
    alias = ep.alias if ep.library is None else ep.name  # a library path makes no file name
    name = f"fuzz-{operator.value.lower()}-{alias}-seed{seed}"
    path = os.path.join(out_dir, f"{name}.yaml")
    first_line = result.message.splitlines()[0] if result.message else result.status.value
    command = f"dmlconf fuzz --operator {operator.value} --ep {alias} --seed {seed} --time {seconds:g}"
    description = f"Found by `{command}`: {result.status.value} ({result.failure_kind}) on {alias}: {first_line}"
    os.makedirs(out_dir, exist_ok=True)
    write_text_atomic(path, case_text(operator, case, name, description))
    again = run_entry(read_case(path), ep, options)
    reproduced = (again.status, again.failure_kind) == (result.status, result.failure_kind)
    return FuzzOutcome(search.examples, elapsed, again, path, reproduced)

"""One (case, EP) through the pipeline: validate, generate, oracle, then the EP's execution path (prepare, execute,
judge; run/execution_path.py) -> Result. The path is the one the EP table names for the EP (run/paths.py); what is
the same on every path (the verdicts of failures, a harness error, the timing) is here."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import assert_never

import numpy as np

from conformance.cases.fingerprint import tensor_hashes
from conformance.cases.generate import case_inputs
from conformance.cases.oracle import expected_outputs
from conformance.cases.parameters import describe
from conformance.cases.parse import Entry, Rejected
from conformance.cases.validate import validate
from conformance.compare.golden import golden_differences
from conformance.ep.dmlop import Created, DescriptorRefused, Dispatched
from conformance.ep.errors import InfrastructureError, device_lost
from conformance.ep.execute import Execution
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.model import FAULT_KINDS, Case, Status
from conformance.results import Result
from conformance.run.execution_path import (
    Died,
    Failed,
    HarnessFault,
    Outcome,
    Prepared,
    Unsupported,
    failure_of,
)
from conformance.run.options import RunOptions, repro_command
from conformance.run.paths import path_for

__all__ = [
    "GOLDEN_MISMATCH",
    "HARNESS",
    "Outcome",
    "Prepared",
    "base_result",
    "execute_prepared",
    "finish",
    "prepare",
    "run_entry",
]

GOLDEN_MISMATCH = "golden_mismatch"  # an ERROR's kind: the case's expected: goldens disagree with the oracle
HARNESS = "harness"  # an ERROR's kind: the harness's own exception, not the EP's

log = logging.getLogger(__name__)


def base_result(entry: Entry, ep: EpSpec, options: RunOptions | None = None) -> Result:
    """A result's fields known before running; its ``ep`` is the --ep text (options included, so that two
    configurations of one EP stay apart)."""
    repro = repro_command(entry, ep, options)
    if isinstance(entry, Rejected):
        return Result(entry.id, entry.operator, ep.text, Status.INVALID, repro=repro)
    return Result(
        entry.id,
        entry.operator.value,
        ep.text,
        Status.PASS,
        data_type=entry.descriptor.input.data_type.value,
        feature_level=str(entry.feature_level),
        repro=repro,
        parameters=describe(entry.descriptor, entry.outputs),
    )


def _negative(entry: Entry, base: Result, ep: EpSpec, options: RunOptions) -> Result | Prepared:
    """A case marked ``expect: invalid``: INVALID when rejected (as it should be), FAIL when accepted; then, where
    the EP's path can show it to the EP (DirectML's CreateOperator), the case shown (a Prepared)."""
    problems = list(entry.problems) if isinstance(entry, Rejected) else validate(entry, options.max_elements)
    if problems:
        verdict = replace(base, status=Status.INVALID, message="\n".join(dict.fromkeys(str(p) for p in problems)))
    else:
        verdict = replace(
            base,
            status=Status.FAIL,
            failure_kind="validator_accepted",
            message=f"marked expect: invalid ({entry.expect_invalid}) but the validator accepts it",
        )
    if isinstance(entry, Rejected):
        return verdict
    return path_for(ep).negative(entry, problems, verdict, ep, options)


def _prepare(case: Case, ep: EpSpec, base: Result, options: RunOptions) -> Result | Prepared:
    """Generate, oracle, then the EP's path prepares it; a Result where the verdict is known without executing."""
    target = options.target_level(ep)
    if target is not None and case.feature_level > target:
        return replace(
            base,
            status=Status.NOT_SUPPORTED,
            failure_kind="feature_level",
            message=f"needs feature level {case.feature_level}; the target is {target}",
        )
    inputs = case_inputs(case)
    # Every verdict from here on was reached on these bytes, so each carries their hashes (packed ones too: a
    # pack's feeds are renamed, never changed, and batch.py finishes each case from its own Prepared.base). Each
    # verdict is one replace of ``base``: thousands of cases make each copy count.
    hashes = tensor_hashes(inputs)
    expected = expected_outputs(case, inputs)
    wrong = golden_differences(case, inputs, expected)
    if wrong:  # one self-contained line per output, so that the first (all a console shows) names where and what
        message = "\n".join(wrong.values())
        return replace(base, inputs_sha256=hashes, status=Status.ERROR, failure_kind=GOLDEN_MISMATCH, message=message)
    return path_for(ep).prepare(case, inputs, expected, hashes, base, ep)


def _judge(prepared: Prepared, outcome: Outcome, ep: EpSpec, options: RunOptions) -> Result:
    """The verdict on what the EP returned (its path judges an answer), or on why it returned nothing."""
    base = prepared.base
    match outcome:
        case Died():  # the process that ran it (the DirectML runner) died or hung, as a worker can
            status = Status.TIMEOUT if outcome.hung else Status.CRASH
            status = Status.DEVICE_LOST if device_lost(outcome.message) else status
            return replace(base, status=status, failure_kind=FAULT_KINDS[status], message=outcome.message)
        case Unsupported() | Failed() if device_lost(outcome.message):
            lost = Status.DEVICE_LOST
            return replace(base, status=lost, failure_kind=FAULT_KINDS[lost], message=outcome.message)
        case Unsupported():
            return replace(base, status=Status.NOT_SUPPORTED, failure_kind=outcome.kind, message=outcome.message)
        case Failed():
            return replace(base, status=Status.ERROR, failure_kind="execution", message=outcome.message)
        case HarnessFault() if prepared.case.expect_invalid is not None:
            # The validator's verdict stands; DirectML could not be asked (a runner that died is told apart: faults.py).
            first = next(iter(outcome.text.splitlines()), outcome.kind)
            return replace(base, message=f"{base.message}\n(DirectML could not be asked: {first})")
        case HarnessFault():
            return replace(base, status=Status.ERROR, failure_kind=HARNESS, message=outcome.message)
        case Execution() | Dispatched() | Created() | DescriptorRefused():
            return path_for(ep).judge(prepared, outcome, ep, options)
        case _:
            assert_never(outcome)


def _fallback_base(entry: Entry, ep: EpSpec) -> Result:
    """The least a result can say, for when even ``base_result`` failed."""
    operator = getattr(entry, "operator", "")
    return Result(
        str(getattr(entry, "id", "?")),
        str(getattr(operator, "value", operator)),
        getattr(ep, "alias", str(ep)),
        Status.ERROR,
    )


def _harness_error(base: Result, entry: Entry, error: Exception) -> Result:
    """A bug of the harness (or an exception nobody expected) as this case's ERROR: the run goes on."""
    log.debug("harness error on %s", getattr(entry, "id", "?"), exc_info=True)
    detail = next((line.strip() for line in str(error).splitlines() if line.strip()), "")
    message = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    return replace(base, status=Status.ERROR, failure_kind=HARNESS, message=message)


def prepare(entry: Entry, ep: EpSpec, options: RunOptions) -> Result | Prepared:
    """Everything before execution; the Result already, where no execution is needed. Never raises."""
    start = time.perf_counter()
    base: Result | None = None
    try:
        base = base_result(entry, ep, options)
        if isinstance(entry, Rejected) or entry.expect_invalid is not None:
            outcome: Result | Prepared = _negative(entry, base, ep, options)
        else:
            with np.errstate(all="ignore"):
                outcome = _prepare(entry, ep, base, options)
    except Exception as error:
        outcome = _harness_error(base or _fallback_base(entry, ep), entry, error)
    seconds = time.perf_counter() - start
    if isinstance(outcome, Prepared):
        return replace(outcome, seconds=seconds)
    return replace(outcome, seconds=round(seconds, 6))


def finish(prepared: Prepared, outcome: Outcome, ep: EpSpec, options: RunOptions, seconds: float) -> Result:
    """The Result for a prepared case given its execution (or the exception that replaced it); ``seconds`` is its
    share of the execution time. Never raises."""
    start = time.perf_counter()
    outputs: dict[str, str] | None = None  # the outputs' hashes, set in the one replace below with the seconds
    try:
        with np.errstate(all="ignore"):
            result = _judge(prepared, outcome, ep, options)
        if not isinstance(outcome, Died | Unsupported | Failed | HarnessFault):  # what repeat.py compares run by run
            outputs = path_for(ep).outputs_sha256(outcome)
    except Exception as error:
        result, outputs = _harness_error(prepared.base, prepared.case, error), None
    total = round(prepared.seconds + seconds + time.perf_counter() - start, 6)
    if outputs is None:
        return replace(result, seconds=total)
    return replace(result, seconds=total, outputs_sha256=outputs)


def _nothing() -> None:
    pass


def execute_prepared(
    prepared: Prepared,
    ep: EpSpec,
    options: RunOptions,
    sessions: Sessions | None = None,
    answered: Callable[[], None] = _nothing,
) -> Result:
    """A prepared case executed alone, on its EP's path (``sessions`` may hold its session already); ``answered`` is
    called once the EP has answered (or failed), before the harness judges its answer."""
    start = time.perf_counter()
    sessions = sessions if sessions is not None else Sessions(capacity=0)
    outcome: Outcome
    try:
        outcome = path_for(ep).execute(prepared, ep, options, sessions)
    except InfrastructureError:  # no verdict of this case: the run stops (pool.py)
        raise
    except Exception as error:  # judged in finish: NotSupported, ExecutionError, a dead runner, or a harness error
        # Typed, holding no exception: an exception kept would be in a cycle with its own traceback, holding the
        # case's arrays and onnxruntime's objects (a session, its thread pool) until a garbage collection.
        outcome = failure_of(error)
    answered()
    return finish(prepared, outcome, ep, options, time.perf_counter() - start)


def run_entry(entry: Entry, ep: EpSpec, options: RunOptions, sessions: Sessions | None = None) -> Result:
    """The verdict for one (case, EP), alone in its session; never raises: a harness exception becomes ERROR."""
    prepared = prepare(entry, ep, options)
    if isinstance(prepared, Result):
        return prepared
    return execute_prepared(prepared, ep, options, sessions)

"""One (case, EP) through the pipeline: validate, generate, oracle, lower, execute, compare -> Result."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

import numpy as np

from conformance.cases.fingerprint import tensor_hashes
from conformance.cases.generate import case_inputs
from conformance.cases.layouts import packed_note
from conformance.cases.oracle import expected_outputs
from conformance.cases.parameters import describe
from conformance.cases.parse import Entry, Rejected
from conformance.cases.validate import validate
from conformance.compare.golden import golden_differences
from conformance.compare.outputs import compare
from conformance.ep import dmlop
from conformance.ep.dml_descriptor import DmlOperator, Inexpressible
from conformance.ep.dml_operators import expected_dml_operators
from conformance.ep.errors import (
    ExecutionError,
    InfrastructureError,
    NotSupported,
    ProcessDied,
    ProcessHung,
    device_lost,
)
from conformance.ep.execute import Execution, execute
from conformance.ep.lower import Lowering, NotExpressible, lower, same_for_every_ep
from conformance.ep.pack import small
from conformance.ep.providers import DML, DMLOP, EpSpec
from conformance.ep.sessions import Sessions
from conformance.model import FAULT_KINDS, Case, Status
from conformance.problems import Problem
from conformance.results import Result
from conformance.run import operator_api
from conformance.run.artifacts import save_artifacts
from conformance.run.options import RunOptions, repro_command

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
    """A case marked ``expect: invalid``: INVALID when rejected (as it should be), FAIL when accepted. On
    ``--ep dmlop`` a descriptor that can be written is then shown to DirectML's CreateOperator
    (``operator_api.shown`` judges its answer)."""
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
    if ep.name != DMLOP or isinstance(entry, Rejected):
        return verdict
    judged = operator_api.for_directml(entry, problems, options.target_level(ep))
    if not isinstance(judged, str):
        try:
            return Prepared(entry, {}, {}, operator_api.describe(entry), verdict, judged=judged)
        except Inexpressible as inexpressible:
            judged = str(inexpressible)
    return replace(verdict, message=f"{verdict.message}\n(not shown to DirectML: {judged})")


def _dml_operator(case: Case, inputs: Mapping[str, np.ndarray], lowering: Lowering | NotExpressible, ep: EpSpec) -> str:
    """What the case reaches on DirectML (its DirectML lowering through the EP's operator mapping), whatever EP
    runs it: a CUDA or WebGPU report still says which DML operator the case stands for."""
    try:
        on_dml = lowering if ep.name == DML or same_for_every_ep(case) else lower(case, inputs, DML)
        if isinstance(on_dml, NotExpressible):
            return "none: not expressible in ONNX"
        return expected_dml_operators(on_dml.model)
    except Exception as error:  # a label for the report: it must never change this EP's verdict
        log.debug("no DML operator for %s", case.id, exc_info=True)
        return f"unknown ({type(error).__name__})"


@dataclass(frozen=True)
class Prepared:
    """A case ready to execute on one EP: what ``finish`` needs to judge the EP's outputs."""

    case: Case
    inputs: Mapping[str, np.ndarray]
    expected: Mapping[str, np.ndarray]
    lowering: Lowering | DmlOperator  # the ONNX model, or on --ep dmlop the DML operator descriptor
    base: Result
    seconds: float = 0.0  # spent preparing it
    judged: tuple[Problem, ...] = ()  # a negative case shown to DirectML: what its answer is judged against


def _prepare(case: Case, ep: EpSpec, base: Result, options: RunOptions) -> Result | Prepared:
    """Generate, oracle, lower; a Result where the verdict is known without executing."""
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
        return replace(base, inputs_sha256=hashes, status=Status.ERROR, failure_kind="golden_mismatch", message=message)
    if ep.name == DMLOP:
        try:
            operator = operator_api.describe(case)
        except Inexpressible as why:
            return replace(base, inputs_sha256=hashes, status=Status.NOT_EXPRESSIBLE, message=str(why))
        return Prepared(
            case, inputs, expected, operator, replace(base, inputs_sha256=hashes, lowering=operator.operator)
        )
    lowering = lower(case, inputs, ep.name)
    dml_operator = _dml_operator(case, inputs, lowering, ep)
    if isinstance(lowering, NotExpressible):
        return replace(
            base,
            inputs_sha256=hashes,
            dml_operator=dml_operator,
            status=Status.NOT_EXPRESSIBLE,
            message=lowering.reason,
        )
    ready = replace(base, inputs_sha256=hashes, dml_operator=dml_operator, lowering=lowering.name)
    return Prepared(case, inputs, expected, lowering, ready)


# What executing a prepared case gave: onnxruntime's outputs, DirectML's operator API's, the HRESULT of a negative
# case's CreateOperator, or the exception that replaced them.
Outcome = Execution | dmlop.Dispatched | int | Exception


def _judge(prepared: Prepared, outcome: Outcome, ep: EpSpec, options: RunOptions) -> Result:
    """The verdict on what the EP returned (or why it returned nothing)."""
    base = prepared.base
    if isinstance(outcome, ProcessDied):  # the process that ran it (the DirectML runner) died or hung, as a worker can
        status = Status.TIMEOUT if isinstance(outcome, ProcessHung) else Status.CRASH
        status = Status.DEVICE_LOST if device_lost(str(outcome)) else status
        return replace(base, status=status, failure_kind=FAULT_KINDS[status], message=str(outcome))
    if isinstance(outcome, NotSupported | ExecutionError) and device_lost(str(outcome)):
        lost = Status.DEVICE_LOST
        return replace(base, status=lost, failure_kind=FAULT_KINDS[lost], message=str(outcome))
    if isinstance(outcome, NotSupported):
        return replace(base, status=Status.NOT_SUPPORTED, failure_kind=outcome.kind, message=str(outcome))
    if isinstance(outcome, ExecutionError):
        return replace(base, status=Status.ERROR, failure_kind="execution", message=str(outcome))
    if isinstance(outcome, int) and isinstance(prepared.lowering, DmlOperator):  # a negative case, shown
        return operator_api.shown(base, prepared.lowering.operator, outcome, ep, prepared.judged)
    if prepared.case.expect_invalid is not None and isinstance(outcome, Exception):
        # The validator's verdict stands; DirectML could not be asked (a runner that died is told apart: faults.py).
        return replace(base, message=f"{base.message}\n(DirectML could not be asked: {str(outcome).splitlines()[0]})")
    if isinstance(outcome, dmlop.DmlRefused) and isinstance(prepared.lowering, DmlOperator):
        return operator_api.refused(base, outcome, prepared.lowering.operator, ep)
    if isinstance(outcome, Exception | int):
        raise outcome if isinstance(outcome, Exception) else TypeError(f"an HRESULT for {prepared.case.id}")
    if isinstance(outcome, dmlop.Dispatched):
        by = options.executed_by(ep)
        p = prepared
        return operator_api.judge(p.case, p.inputs, p.expected, base, outcome, ep, options.artifacts, by)
    verdict = compare(prepared.case, prepared.inputs, prepared.expected, outcome.outputs)
    note = packed_note(prepared.case)  # onnxruntime's tensors are packed: a case's layouts were not exercised
    result = replace(
        base,
        status=verdict.status,
        failure_kind=verdict.failure_kind,
        message="\n".join(part for part in (verdict.message, note) if part),
        metrics=dict(verdict.metrics),
        details=dict(verdict.details),
        placement=dict(outcome.placement),
    )
    if options.artifacts is not None and result.status is Status.FAIL and isinstance(prepared.lowering, Lowering):
        low = prepared.lowering
        try:
            outputs = outcome.outputs
            by = options.executed_by(ep)
            expected, case, inputs = prepared.expected, prepared.case, prepared.inputs  # case: dxdispatch.json on DML
            save_artifacts(
                options.artifacts, result, low.model, low.feeds, expected, outputs, ep.name, by, case, inputs
            )
        except OSError as error:  # the verdict stands; the message says what could not be kept
            result = replace(result, message=f"{result.message}\n  (artifacts not saved: {error.strerror or error})")
    return result


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
    return replace(base, status=Status.ERROR, failure_kind="harness", message=message)


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
        if isinstance(outcome, Execution):  # under --repeat, what repeat.py compares run by run
            outputs = tensor_hashes(outcome.outputs)
        elif isinstance(outcome, dmlop.Dispatched):  # each output buffer's bytes, padding and guard included
            outputs = tensor_hashes({name: np.frombuffer(data, np.uint8) for name, data in outcome.buffers.items()})
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
    """A prepared case executed in a session of its own model (``sessions`` may hold one already); ``answered`` is
    called once the EP has answered (or failed), before the harness judges its answer."""
    start = time.perf_counter()
    sessions = sessions if sessions is not None else Sessions(capacity=0)
    try:
        outcome: Outcome
        if isinstance(prepared.lowering, DmlOperator):
            outcome = _dispatch(prepared, prepared.lowering, ep, sessions)
        else:
            threads = options.session_threads(small(prepared.lowering))
            outcome = execute(prepared.lowering, ep, sessions, threads)
    except InfrastructureError:  # no verdict of this case: the run stops (pool.py)
        raise
    except Exception as error:  # judged in finish: NotSupported, ExecutionError, or a harness error
        outcome = error
    try:
        answered()
        return finish(prepared, outcome, ep, options, time.perf_counter() - start)
    finally:
        # An exception kept in this frame is in a cycle with its own traceback, which would hold the case's arrays
        # and onnxruntime's objects (a session, its thread pool) until a garbage collection.
        del outcome


def _dispatch(prepared: Prepared, operator: DmlOperator, ep: EpSpec, sessions: Sessions) -> dmlop.Dispatched | int:
    """On --ep dmlop: a negative case's descriptor shown to CreateOperator alone (its HRESULT), else the case's
    operator dispatched on its inputs."""
    if prepared.case.expect_invalid is not None:
        return dmlop.create_only(operator, ep, sessions.runners)
    return operator_api.dispatch(prepared.case, operator, prepared.inputs, ep, sessions.runners)


def run_entry(entry: Entry, ep: EpSpec, options: RunOptions, sessions: Sessions | None = None) -> Result:
    """The verdict for one (case, EP), alone in its session; never raises: a harness exception becomes ERROR."""
    prepared = prepare(entry, ep, options)
    if isinstance(prepared, Result):
        return prepared
    return execute_prepared(prepared, ep, options, sessions)

"""onnxruntime's execution path: a case lowered to a one-node ONNX model (ep/lower.py), run in an onnxruntime session
on its EP (ep/execute.py: in this process, or for DirectML off Windows in the DirectML runner), its outputs compared
with the oracle's. Its tensors are packed: a case's layouts are not exercised here, and each verdict says so.
Small cases share packed sessions (batch.py, ep/pack.py)."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import assert_never

import numpy as np

from conformance.cases.fingerprint import tensor_hashes, value_hashes
from conformance.cases.layouts import packed_note
from conformance.compare.outputs import compare
from conformance.ep.dml_operators import expected_dml_operators
from conformance.ep.dmlop import Created, DescriptorRefused, Dispatched
from conformance.ep.errors import InfrastructureError, ProcessDied, device_lost
from conformance.ep.execute import Execution, execute, open_session, run_session
from conformance.ep.lower import Lowering, NotExpressible, lower, same_for_every_ep
from conformance.ep.pack import (
    Unattributed,
    compile_cost,
    elements,
    named_cases,
    opset_of,
    pack,
    pack_spans,
    packable,
    signature,
    small,
    unpack,
)
from conformance.ep.providers import DML, EpSpec, facts, uses_directml
from conformance.ep.sessions import Sessions
from conformance.model import LAYOUTS_NOT_EXERCISED, Case, Status
from conformance.problems import Problem
from conformance.results import Result
from conformance.run.artifacts import save_artifacts
from conformance.run.execution_path import Answer, Outcome, Prepared, Regroup, failure_of
from conformance.run.options import RunOptions

log = logging.getLogger(__name__)


def onnx_model(prepared: Prepared) -> Lowering:
    """A prepared case's ONNX model: what this path prepares (a DML descriptor never comes here)."""
    assert isinstance(prepared.lowering, Lowering), "a DML operator descriptor on onnxruntime's path"
    return prepared.lowering


def _dml_operator(case: Case, inputs: Mapping[str, np.ndarray], lowering: Lowering | NotExpressible, ep: EpSpec) -> str:
    """What the case reaches on DirectML (its DirectML lowering through the EP's operator mapping), whatever EP
    runs it: a CUDA or WebGPU report still says which DML operator the case stands for. On this path an EP that runs
    on DirectML is onnxruntime's DirectML EP, whose lowering is the one in hand."""
    try:
        on_dml = lowering if uses_directml(ep) or same_for_every_ep(case) else lower(case, inputs, DML)
        if isinstance(on_dml, NotExpressible):
            return "none: not expressible in ONNX"
        return expected_dml_operators(on_dml.model)
    except Exception as error:  # a label for the report: it must never change this EP's verdict
        log.debug("no DML operator for %s", case.id, exc_info=True)
        return f"unknown ({type(error).__name__})"


class OnnxruntimePath:
    """``ExecutionPath`` through onnxruntime: lower, run in a session, compare."""

    def negative(
        self, case: Case, problems: Sequence[Problem], verdict: Result, ep: EpSpec, options: RunOptions
    ) -> Result | Prepared:
        """The validator's verdict stands: an ONNX model cannot say what the validator refused."""
        return verdict

    def prepare(
        self,
        case: Case,
        inputs: Mapping[str, np.ndarray],
        expected: Mapping[str, np.ndarray],
        inputs_sha256: dict[str, str],
        base: Result,
        ep: EpSpec,
    ) -> Result | Prepared:
        lowering = lower(case, inputs, ep.name)
        dml_operator = _dml_operator(case, inputs, lowering, ep)
        hashes = inputs_sha256
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

    def execute(self, prepared: Prepared, ep: EpSpec, options: RunOptions, sessions: Sessions) -> Answer:
        lowering = onnx_model(prepared)
        return execute(lowering, ep, sessions, options.session_threads(small(lowering)))

    def judge(self, prepared: Prepared, answer: Answer, ep: EpSpec, options: RunOptions) -> Result:
        match answer:
            case Execution():
                return _judged(prepared, answer, ep, options)
            case Dispatched() | Created() | DescriptorRefused():
                raise TypeError(f"{type(answer).__name__} from onnxruntime's path for {prepared.case.id}")
            case _:
                assert_never(answer)

    def outputs_sha256(self, answer: Answer) -> dict[str, str] | None:
        return tensor_hashes(answer.outputs) if isinstance(answer, Execution) else None

    def pack_group(self, prepared: Prepared, ep: EpSpec, options: RunOptions) -> tuple[tuple[str, int], ...] | None:
        """Small cases, grouped by opset, up to --pack to a session (pack_spans)."""
        lowering = onnx_model(prepared)
        return opset_of(lowering) if packable(lowering) else None

    def pack_spans(self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions) -> list[range]:
        """At most --pack cases a session, within pack.PACK_MAX_COST and PACK_MAX_TOTAL (pack_spans)."""
        lowerings = [onnx_model(p) for p in group]
        costs = [compile_cost(low, ep) for low in lowerings]
        return pack_spans(costs, [elements(low) for low in lowerings], options.pack)

    def run_pack(
        self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions
    ) -> list[Outcome] | Regroup:
        """The group's models packed into one session (ep/pack.py) and run once; where the session fails: the cases
        its refusal names alone (with every case of their signature), halves where it names none, each case alone
        where the device was lost or the runner died."""
        lowerings = [onnx_model(p) for p in group]
        half = Regroup(apart=frozenset(range(len(group) // 2)))
        try:
            packed = pack(lowerings)
            opened = sessions.open(
                packed,
                ep,
                partial(
                    open_session,
                    threads=options.session_threads(all(small(low) for low in lowerings)),
                    runners=sessions.runners,
                ),
            )
            outputs = run_session(opened, packed)  # before the record: the DirectML runner's comes with the first run
            executions = unpack(lowerings, outputs, opened.records, opened.ep_name)
        except Unattributed as error:
            log.debug("a pack of %d failed: %s", len(group), error)
            return Regroup(apart=error.suspects) if 0 < len(error.suspects) < len(group) else half
        except InfrastructureError:  # no case's fault: the run stops
            raise
        except Exception as error:  # any failure of the pack: the cases it names run alone, or the halves again
            log.debug("a pack of %d failed: %s", len(group), error)
            lost = str(error) if device_lost(str(error)) else ""
            if lost or isinstance(error, ProcessDied):
                # Halves on a dead context would blame the cases that run first; a runner that died under the pack
                # is pinned, as a worker's death is, on the case that kills it again alone (at the cost of one more
                # death).
                return Regroup(alone=frozenset(range(len(group))), lost=lost)
            named = named_cases(str(error), len(group))
            return Regroup(alone=_blamed(lowerings, named)) if named else half
        return [done if isinstance(done, Execution) else failure_of(done) for done in executions]


def _blamed(lowerings: Sequence[Lowering], named: set[int]) -> frozenset[int]:
    """The cases a refusal names, and every case of the same signature."""
    signatures = [signature(low) for low in lowerings]
    refused = {signatures[place] for place in named}
    return frozenset(place for place, sig in enumerate(signatures) if sig in refused)


def _judged(prepared: Prepared, execution: Execution, ep: EpSpec, options: RunOptions) -> Result:
    """The outputs compared with the oracle's; a FAIL's artifacts kept where --artifacts asks."""
    base = prepared.base
    verdict = compare(prepared.case, prepared.inputs, prepared.expected, execution.outputs)
    # The EP got packed tensors, unless its path binds buffers as the case lays them out: say the layouts were not
    # exercised.
    note = "" if facts(ep).binds_layouts else packed_note(prepared.case)
    result = replace(
        base,
        status=verdict.status,
        failure_kind=verdict.failure_kind,
        message="\n".join(part for part in (verdict.message, note) if part),
        metrics=dict(verdict.metrics),
        details={**verdict.details, **({LAYOUTS_NOT_EXERCISED: note} if note else {})},
        placement=dict(execution.placement),
        values_sha256=value_hashes(execution.outputs),
    )
    if options.artifacts is not None and result.status is Status.FAIL and isinstance(prepared.lowering, Lowering):
        low = prepared.lowering
        try:
            outputs = execution.outputs
            by = options.executed_by(ep)
            expected, case, inputs = prepared.expected, prepared.case, prepared.inputs  # case: dxdispatch.json on DML
            save_artifacts(
                options.artifacts, result, low.model, low.feeds, expected, outputs, ep.name, by, case, inputs
            )
        except OSError as error:  # the verdict stands; the message says what could not be kept
            result = replace(result, message=f"{result.message}\n  (artifacts not saved: {error.strerror or error})")
    return result

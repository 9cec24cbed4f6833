"""DirectML's operator API as an execution path (``OperatorApiPath``, ``--ep dmlop``): a case's descriptor over its
tensors' layouts, the buffers DirectML binds (inputs through their strides; outputs filled with the canary and a
guard region), the outputs read back through their strides, the canary checked, and DirectML's answer to a negative
case, which is shown to CreateOperator alone.

ep/dmlop.py moves the bytes; the layouts are cases/layouts.py's and the canary compare/canary.py's, which the ep
stage does not import: their meeting place is here.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import assert_never

import numpy as np

from conformance.cases.decisions import WHERE
from conformance.cases.fingerprint import tensor_hashes, value_hashes
from conformance.cases.layouts import Layout, input_layouts, output_layouts
from conformance.cases.validate import validate
from conformance.compare.canary import (
    CANARY,
    binding_bytes,
    canary_bytes,
    canary_verdict,
    initial_output_bytes,
    stray_writes,
)
from conformance.compare.outputs import compare
from conformance.ep import dmlop
from conformance.ep.dml_descriptor import DmlOperator, Inexpressible, describe_operator
from conformance.ep.errors import InfrastructureError, device_lost
from conformance.ep.execute import Execution
from conformance.ep.providers import EpSpec, modes_of
from conformance.ep.sessions import Sessions
from conformance.ep.wine.client import Runners
from conformance.ep.wine.protocol import failed
from conformance.model import (
    DML_ACCEPTED_DECISION,
    DML_ACCEPTED_INVALID,
    DML_REJECTED_VALID,
    Case,
    FeatureLevel,
    Status,
)
from conformance.problems import Problem
from conformance.results import Result
from conformance.run.artifacts import save_operator_artifacts
from conformance.run.execution_path import Answer, Outcome, Prepared, Regroup, failure_of
from conformance.run.modes import keep_values
from conformance.run.options import RunOptions

log = logging.getLogger(__name__)

# Fields whose problems are in a case's data, goldens or level, not in its descriptor: nothing CreateOperator judges.
_NOT_DESCRIPTOR = ("Data", "Generator", "expected", "feature_level", "tolerance")


def layouts(case: Case) -> dict[str, Layout]:
    """Every tensor's layout by DML name, inputs and outputs."""
    return input_layouts(case) | output_layouts(case)


def mode_of(case: Case, ep: EpSpec) -> dmlop.DispatchMode:
    """How ``ep`` executes ``case``: the EP's modes, the case's own where the EP's options do not say."""
    return dmlop.dispatch_mode(ep, case.modes)


def describe(case: Case, ep: EpSpec) -> DmlOperator:
    """The case's DML operator descriptor over its layouts, in its modes on the EP (its constant inputs owned by
    DirectML or not); dml_descriptor.Inexpressible where it has none."""
    return describe_operator(case, layouts(case), mode_of(case, ep).owned_by_dml)


def for_directml(case: Case, problems: Sequence[Problem], level: FeatureLevel | None) -> tuple[Problem, ...] | str:
    """What DirectML's CreateOperator is judged against on a negative case: the validator's problems at DirectML's
    own feature level without the harness's size limit; or why its descriptor says nothing CreateOperator could judge
    (a str): a problem in its data, expected outputs or feature level is not in the descriptor; DirectML validates at
    its own feature level, so a case forbidden only below that level (rank 3 at 2_1) is valid there; and the
    harness's own size limit (--max-elements) is no rule of DirectML's."""
    fields = [part for problem in problems for part in problem.field.split(".")]
    if any(part in _NOT_DESCRIPTOR for part in fields):
        return "its problem is not in the descriptor"
    there = replace(case, feature_level=max(level or case.feature_level, case.feature_level))
    judged = validate(there, max_elements=sys.maxsize)
    if not judged:
        at = (
            f" at DirectML's own feature level, {there.feature_level},"
            if there.feature_level != case.feature_level
            else ""
        )
        return f"the spec allows it{at} without the harness's size limit"
    return tuple(judged)


def decided_only(problems: Sequence[Problem]) -> tuple[str, ...]:
    """The harness's decisions that alone refuse a case (cases/decisions.py): each problem enforces one; () where
    the spec's own words refuse it (a problem that names no decision), or nothing does."""
    if not problems or any(not problem.decision for problem in problems):
        return ()
    return tuple(dict.fromkeys(problem.decision for problem in problems))


def shown(base: Result, operator: str, hresult: int, ep: EpSpec, judged: Sequence[Problem]) -> Result:
    """A negative case after DirectML's CreateOperator saw its descriptor: refused, as the validator says it must be,
    or accepted, a finding about DirectML whose placement says DirectML made the operator: DML_ACCEPTED_INVALID where
    the spec forbids it, DML_ACCEPTED_DECISION where only the harness's decisions refuse it (``judged``: the problems
    it was judged against, for_directml's)."""
    directml = {"create_hresult": f"0x{hresult:08X}"}
    if failed(hresult):
        said = f"DirectML's CreateOperator refused it too (HRESULT 0x{hresult:08X})"
        return replace(base, message=f"{base.message}\n{said}", directml=directml)
    if base.status is not Status.INVALID:  # the validator's own FAIL stands; DirectML's answer is added
        return replace(base, message=f"{base.message}\nDirectML's CreateOperator accepted it too", directml=directml)
    decisions = decided_only(judged)
    kind, why = DML_ACCEPTED_INVALID, " though the spec forbids it"
    if decisions:
        named = " and ".join(f'"{decision}"' for decision in decisions)
        kind = DML_ACCEPTED_DECISION
        decision = "decisions" if len(decisions) > 1 else "decision"
        why = f", which the spec does not forbid: only the harness's {decision} {named} refuses it ({WHERE})"
    return replace(
        base,
        status=Status.FAIL,
        failure_kind=kind,
        dml_operator=operator,
        directml=directml,
        placement={operator: ep.name},
        message=f"DirectML's CreateOperator accepted {operator}{why}: {base.message}",
    )


def refused(base: Result, refusal: dmlop.DescriptorRefused, operator: str, ep: EpSpec) -> Result:
    """A valid case whose descriptor DirectML refused (DML_REJECTED_VALID, a finding about DirectML; its placement
    says DirectML was the one that refused it)."""
    return replace(
        base,
        status=Status.FAIL,
        failure_kind=DML_REJECTED_VALID,
        placement={operator: ep.name},
        dml_operator=f"none: {refusal.step} refused it",
        directml={f"{refusal.step.removesuffix('Operator').lower()}_hresult": f"0x{refusal.hresult:08X}"},
        message=f"DirectML's {refusal} though the spec allows it",
    )


def buffers(case: Case, inputs: Mapping[str, np.ndarray], lead: int) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """The bytes DirectML is given, each binding ``lead`` bytes in, the canary before it: each input written into its
    buffer through its strides (the bytes no element addresses hold the canary), each output's buffer and the guard
    regions around it filled with the canary."""
    feeds = {
        name: canary_bytes(lead) + layout.buffer(inputs[name], fill=CANARY)
        for name, layout in input_layouts(case).items()
    }
    outputs = {name: initial_output_bytes(layout.buffer_bytes, lead) for name, layout in output_layouts(case).items()}
    return feeds, outputs


def dispatch(
    case: Case, operator: DmlOperator, inputs: Mapping[str, np.ndarray], ep: EpSpec, runners: Runners
) -> dmlop.Dispatched | dmlop.DescriptorRefused:
    """The case's operator dispatched on its inputs' buffers in the EP's modes (or DirectML's refusal of its
    descriptor)."""
    mode = mode_of(case, ep)
    feeds, outputs = buffers(case, inputs, mode.binding_offset)
    return dmlop.dispatch(operator, ep, runners, feeds, outputs, mode)


def judge(
    case: Case,
    inputs: Mapping[str, np.ndarray],
    expected: Mapping[str, np.ndarray],
    base: Result,
    outcome: dmlop.Dispatched,
    ep: EpSpec,
    artifacts: str | None,
    executed_by: str | None,
    values_dir: str | None = None,
) -> Result:
    """The verdict on what DirectML's operator API wrote: a byte changed that no output element addresses is FAIL
    ``out_of_bounds_write`` whatever the values; else the outputs, read through their strides, are compared as
    every EP's are. A failure's artifacts (``artifacts``) hold the buffers and a DxDispatch model; ``values_dir``: where
    the outputs are kept for mode equality (run/modes.py)."""
    found = output_layouts(case)
    lead = mode_of(case, ep).binding_offset
    strays = [
        stray_writes(
            name, outcome.buffers[name], layout.sizes, layout.strides, layout.element_size, layout.buffer_bytes, lead
        )
        for name, layout in found.items()
    ]
    outputs = {
        name: layout.read(binding_bytes(outcome.buffers[name], layout.buffer_bytes, lead))
        for name, layout in found.items()
    }
    verdict = canary_verdict(strays) or compare(case, inputs, expected, outputs)
    reply = outcome.reply
    flags = dmlop.execution_flag_names(ep)
    directml = {
        "execution_flags": list(flags),
        # The execution modes it ran in, and the inputs whose descs said DML_TENSOR_FLAG_OWNED_BY_DML.
        "modes": modes_of(ep, case.modes),
        "owned_by_dml": sorted(outcome.owned),
        "dispatches_in_list": outcome.in_list,  # with batch=N, the cases recorded in its command list
        "compiled_operator_reused": reply.reused,  # the device's compiled operator for these descriptor bytes
        "create_hresult": f"0x{reply.create_hresult:08X}",
        "compile_hresult": f"0x{reply.compile_hresult or 0:08X}",
        "descriptors": reply.descriptors,
        "temporary_bytes": reply.temporary_bytes,
        "persistent_bytes": reply.persistent_bytes,
        "milliseconds": dict(zip(("create", "compile", "execute"), reply.milliseconds, strict=False)),
    }
    result = replace(
        base,
        status=verdict.status,
        failure_kind=verdict.failure_kind,
        message=verdict.message,
        metrics=dict(verdict.metrics),
        details=dict(verdict.details),
        dml_operator=outcome.operator,
        directml=directml,
        # Where it ran, by construction: the operator DirectML's CreateOperator returned, dispatched on its device.
        placement={outcome.operator: ep.name},
        values_sha256=value_hashes(outputs),
    )
    if values_dir is not None:
        try:
            keep_values(values_dir, outputs, result.values_sha256 or {})
        except OSError as error:  # the verdict stands; mode equality then names the hashes alone
            log.warning("%s: its outputs were not kept for mode equality: %s", case.id, error.strerror or error)
    if artifacts is not None and result.status is Status.FAIL:
        try:
            save_operator_artifacts(
                artifacts, result, case, inputs, expected, outputs, outcome.buffers, flags, executed_by
            )
        except OSError as error:  # the verdict stands; the message says what could not be kept
            result = replace(result, message=f"{result.message}\n  (artifacts not saved: {error.strerror or error})")
    return result


def _descriptor(prepared: Prepared) -> DmlOperator:
    """A prepared case's DML operator descriptor: what this path prepares (an ONNX model never comes here)."""
    assert isinstance(prepared.lowering, DmlOperator), "an ONNX model on DirectML's operator API"
    return prepared.lowering


class OperatorApiPath:
    """``ExecutionPath`` through DirectML's operator API: describe, create and dispatch in the runner, judge the
    buffers."""

    def negative(
        self, case: Case, problems: Sequence[Problem], verdict: Result, ep: EpSpec, options: RunOptions
    ) -> Result | Prepared:
        """A descriptor that can be written is shown to DirectML's CreateOperator (``shown`` judges its answer);
        otherwise the validator's verdict stands, saying why DirectML was not asked."""
        judged = for_directml(case, problems, options.target_level(ep))
        if not isinstance(judged, str):
            try:
                return Prepared(case, {}, {}, describe(case, ep), verdict, judged=judged)
            except Inexpressible as inexpressible:
                judged = str(inexpressible)
        return replace(verdict, message=f"{verdict.message}\n(not shown to DirectML: {judged})")

    def prepare(
        self,
        case: Case,
        inputs: Mapping[str, np.ndarray],
        expected: Mapping[str, np.ndarray],
        inputs_sha256: dict[str, str],
        base: Result,
        ep: EpSpec,
    ) -> Result | Prepared:
        try:
            operator = describe(case, ep)
        except Inexpressible as why:
            return replace(base, inputs_sha256=inputs_sha256, status=Status.NOT_EXPRESSIBLE, message=str(why))
        return Prepared(
            case, inputs, expected, operator, replace(base, inputs_sha256=inputs_sha256, lowering=operator.operator)
        )

    def execute(self, prepared: Prepared, ep: EpSpec, options: RunOptions, sessions: Sessions) -> Answer:
        """A negative case's descriptor shown to CreateOperator alone (its HRESULT), else the case's operator
        dispatched on its inputs."""
        operator = _descriptor(prepared)
        if prepared.case.expect_invalid is not None:
            return dmlop.create_only(operator, ep, sessions.runners)
        return dispatch(prepared.case, operator, prepared.inputs, ep, sessions.runners)

    def judge(self, prepared: Prepared, answer: Answer, ep: EpSpec, options: RunOptions) -> Result:
        base, operator = prepared.base, _descriptor(prepared).operator
        match answer:
            case dmlop.Created():
                return shown(base, operator, answer.hresult, ep, prepared.judged)
            case dmlop.DescriptorRefused() if prepared.case.expect_invalid is not None:
                # The validator's verdict stands; DirectML could not be asked.
                return replace(base, message=f"{base.message}\n(DirectML could not be asked: {answer})")
            case dmlop.DescriptorRefused():
                return refused(base, answer, operator, ep)
            case dmlop.Dispatched():
                p, by = prepared, options.executed_by(ep)
                return judge(p.case, p.inputs, p.expected, base, answer, ep, options.artifacts, by, options.values_dir)
            case Execution():
                raise TypeError(f"onnxruntime's outputs on DirectML's operator API for {prepared.case.id}")
            case _:
                assert_never(answer)

    def outputs_sha256(self, answer: Answer) -> dict[str, str] | None:
        """Each output buffer's bytes, padding and guard included."""
        if not isinstance(answer, dmlop.Dispatched):
            return None
        return tensor_hashes({name: np.frombuffer(data, np.uint8) for name, data in answer.buffers.items()})

    def pack_group(self, prepared: Prepared, ep: EpSpec, options: RunOptions) -> tuple[tuple[str, int], ...] | None:
        """With the EP's ``batch`` option above 1, a valid case whose buffers are small waits to be dispatched with
        others in one command list; else (and a negative case, shown to CreateOperator alone) it runs alone."""
        mode = mode_of(prepared.case, ep)
        if mode.batch < 2 or prepared.case.expect_invalid is not None or _buffer_bytes(prepared.case) > BATCH_MAX_BYTES:
            return None
        # One command list, one queue: cases whose own modes differ are batched apart.
        return (
            ("dispatch batch", mode.batch),
            *((f"{key}={value}", 0) for key, value in sorted(prepared.case.modes.items())),
        )

    def pack_spans(self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions) -> list[range]:
        """The group in batches of the EP's ``batch`` option."""
        size = mode_of(group[0].case, ep).batch  # the group's cases share their modes (pack_group)
        return [range(start, min(start + size, len(group))) for start in range(0, len(group), size)]

    def run_pack(
        self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions
    ) -> list[Outcome] | Regroup:
        """The group's descriptors dispatched in one command list, UAV barriers between them and one fence wait
        (dmlop.dispatch_batch); each case alone again where the batch failed as a whole."""
        mode = mode_of(group[0].case, ep)  # the group's cases share their modes (pack_group)
        batch = [dmlop.Batched(_descriptor(p), *buffers(p.case, p.inputs, mode.binding_offset)) for p in group]
        try:
            answers = dmlop.dispatch_batch(batch, ep, sessions.runners, mode)
        except InfrastructureError:  # no case's fault: the run stops
            raise
        except Exception as error:  # the batch as a whole: each case runs alone, which says whose it is
            log.debug("a batch of %d failed: %s", len(group), error)
            return Regroup(alone=frozenset(range(len(group))), lost=str(error) if device_lost(str(error)) else "")
        return [failure_of(answer) if isinstance(answer, Exception) else answer for answer in answers]


# A case whose buffers hold more bytes than this is dispatched alone, never batched: a batch's request carries every
# case's buffers in one frame (protocol.FRAME_LIMIT), and its pool holds them all at once.
BATCH_MAX_BYTES = 1 << 20


def _buffer_bytes(case: Case) -> int:
    """The bytes of a case's buffers, inputs and outputs."""
    return sum(layout.buffer_bytes for layout in layouts(case).values())

"""``--ep dmlop``: a case executed through DirectML's own operator API, as the descriptor it describes
(dml_descriptor.py), in the DirectML runner: IDMLDevice::CreateOperator, CompileOperator with the EP's execution
flags, an IDMLOperatorInitializer, a binding table over the case's buffers, IDMLCommandRecorder::RecordDispatch on the
runner's D3D12 queue, readback. The runner's one D3D12 and DirectML device per adapter serves both paths.

The EP's execution modes (ep_table.DMLOP.modes, ``DispatchMode``) change how, never what: the queue's type, a
one-node graph compiled instead of the operator, the constant inputs owned by DirectML, each binding's offset.

Each output buffer starts filled with a canary pattern over its whole size plus a guard region past its end; what
the output's elements do not cover must come back unchanged. A negative case that a descriptor can say is shown to
CreateOperator alone, which must refuse it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from conformance.ep import dml_abi as abi
from conformance.ep.directml import build_of
from conformance.ep.dml_descriptor import DmlOperator
from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.providers import EpSpec, flag_on, modes_of
from conformance.ep.rules import one_line
from conformance.ep.wine import protocol
from conformance.ep.wine.client import Runners
from conformance.ep.wine.session import adapter_index
from conformance.ep_table import ONE_ZERO, OWNED_BY_DML, REUSE_COMPILED
from conformance.model import EP_NOT_STARTED

# The --ep dmlop options that set a DML_EXECUTION_FLAG: the flags that change results (DESCRIPTORS_VOLATILE does not).
_FLAG_OPTIONS: Mapping[str, str] = {
    "allow_half_precision": "DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION",
    "disable_metacommands": "DML_EXECUTION_FLAG_DISABLE_META_COMMANDS",
}


def execution_flag_names(ep: EpSpec) -> tuple[str, ...]:
    """The EP's DML_EXECUTION_FLAGS by DirectML.h's names (a result's record, a DxDispatch model's)."""
    names = tuple(name for option, name in _FLAG_OPTIONS.items() if flag_on(ep, option))
    return names or ("DML_EXECUTION_FLAG_NONE",)


def execution_flags(ep: EpSpec) -> int:
    """DML_EXECUTION_FLAGS from the EP's options (CompileOperator's ``flags``)."""
    flags = 0
    for name in execution_flag_names(ep):
        flags |= abi.EXECUTION_FLAGS[name]
    return flags


@dataclass(frozen=True)
class DispatchMode:
    """How the runner executes a descriptor: the EP's execution modes (ep_table.DMLOP.modes) as it reads them."""

    compute_queue: bool  # a COMPUTE queue and list, else DIRECT ones
    graph: bool  # a one-node graph through IDMLDevice1::CompileGraph, else CompileOperator
    owned_by_dml: bool  # the operator's constant inputs flagged DML_TENSOR_FLAG_OWNED_BY_DML
    binding_offset: int  # each tensor's binding this many bytes into its buffer
    batch: int  # up to this many cases' dispatches recorded in one command list
    reuse_compiled: bool  # a descriptor compiled before on the device takes that compiled operator

    @property
    def compile_step(self) -> str:
        return "CompileGraph" if self.graph else "CompileOperator"

    @property
    def request(self) -> int:
        """The dispatch request's flags for these modes (protocol.DISPATCH_*)."""
        return (
            (protocol.DISPATCH_COMPUTE_QUEUE if self.compute_queue else 0)
            | (protocol.DISPATCH_COMPILE_GRAPH if self.graph else 0)
            | (0 if self.reuse_compiled else protocol.DISPATCH_NO_REUSE)
        )


def dispatch_mode(ep: EpSpec, case_modes: Mapping[str, str] | None = None) -> DispatchMode:
    """The modes ``ep`` runs a descriptor in: its options', else the case's own (``case_modes``: a case's
    ``modes``), else each mode's default."""
    modes = modes_of(ep, case_modes)
    return DispatchMode(
        compute_queue=modes["queue"] == "compute",
        graph=modes["compile"] == "graph",
        owned_by_dml=modes[OWNED_BY_DML] == ONE_ZERO.on,
        binding_offset=int(modes["binding_offset"]),
        batch=int(modes["batch"]),
        reuse_compiled=modes[REUSE_COMPILED] == ONE_ZERO.on,
    )


# The HRESULTs by which DirectML refuses a descriptor (its validation): E_INVALIDARG, and DXGI_ERROR_UNSUPPORTED for
# what the device does not support. Any other failure (a removed device, E_OUTOFMEMORY) is no verdict on the
# descriptor: an ExecutionError, or DEVICE_LOST where its text says so.
REFUSALS = frozenset({0x80070057, 0x887A0004})


def refused(hresult: int) -> bool:
    """Whether a failed CreateOperator or CompileOperator refused the descriptor itself."""
    return hresult in REFUSALS


@dataclass(frozen=True)
class DescriptorRefused:
    """DirectML refused the descriptor: ``step`` (CreateOperator or CompileOperator) and its HRESULT."""

    step: str
    hresult: int

    def __str__(self) -> str:
        return f"{self.step} refused it: HRESULT 0x{self.hresult:08X}"


@dataclass(frozen=True)
class Created:
    """CreateOperator's answer to a descriptor shown to it alone (a negative case): its HRESULT, S_OK where it
    accepted the descriptor, a refusal (``refused``) where it did not."""

    hresult: int


@dataclass(frozen=True)
class Dispatched:
    """What a dispatch returned: each output buffer's whole bytes by DML tensor name (guard region included), and
    what the runner measured."""

    buffers: Mapping[str, bytes]
    reply: protocol.DispatchReply
    operator: str
    owned: frozenset[str] = frozenset()  # the inputs DirectML owned (bound to its initializer alone)
    in_list: int = 1  # the dispatches recorded in its command list (dispatch_batch's: the batch's)


def _request(
    op: DmlOperator,
    ep: EpSpec,
    mode: DispatchMode | None,
    inputs: Mapping[str, bytes],
    outputs: Mapping[str, bytes],
) -> protocol.DispatchRequest:
    """The dispatch in ``mode`` (None: CreateOperator alone, which binds nothing): each buffer (an input's bytes,
    an output's initial ones) bound at its layout's size from the mode's binding offset on (the canary before and
    after), an input the descriptor flags owned by DirectML bound to the initializer alone."""
    create_only = mode is None
    lead = 0 if mode is None else mode.binding_offset
    feeds = [
        protocol.DispatchBuffer(b"", 0, bound=False)
        if layout is None
        else protocol.DispatchBuffer(
            inputs.get(layout.name, b""),
            0 if create_only else layout.buffer_bytes,
            lead=lead,
            owned=layout.name in op.owned,
        )
        for layout in op.inputs
    ]
    written = [
        protocol.DispatchBuffer(outputs.get(layout.name, b""), 0 if create_only else layout.buffer_bytes, lead=lead)
        for layout in op.outputs
    ]
    request = protocol.DISPATCH_CREATE_ONLY if mode is None else mode.request
    return protocol.DispatchRequest(
        adapter_index(ep), execution_flags(ep), request, op.block, op.pointers, op.desc_at, feeds, written
    )


def _not_asked(op: DmlOperator, error: protocol.Refused) -> Exception:
    """A refused request as the case's outcome: the DirectML device could not be made (NOT_SUPPORTED
    ``ep_not_started``, as onnxruntime's path says it), else an ExecutionError naming the failed step."""
    text = f"{op.operator} could not run on DirectML: {one_line(error)}"
    if error.status == protocol.ST_EP:
        return NotSupported(text, EP_NOT_STARTED)
    return ExecutionError(text)


def create_only(op: DmlOperator, ep: EpSpec, runners: Runners) -> Created:
    """CreateOperator's HRESULT for the descriptor (nothing compiled or run): a negative case shown to DirectML;
    ExecutionError where it failed for another reason than refusing the descriptor (``refused``)."""
    runner = runners.get(build_of(ep.options))
    try:
        hresult = runner.dispatch(_request(op, ep, None, {}, {})).create_hresult
    except protocol.Refused as error:
        raise _not_asked(op, error) from None
    if protocol.failed(hresult) and not refused(hresult):
        raise ExecutionError(f"CreateOperator failed on {op.operator}: HRESULT 0x{hresult:08X}")
    return Created(hresult)


def dispatch(
    op: DmlOperator,
    ep: EpSpec,
    runners: Runners,
    inputs: Mapping[str, bytes],
    outputs: Mapping[str, bytes],
    mode: DispatchMode,
) -> Dispatched | DescriptorRefused:
    """The operator created, compiled, initialized and dispatched on the ``inputs`` buffers, its ``outputs``
    starting with the bytes given (by DML tensor name; each binding the mode's binding offset in, inputs and outputs
    alike), in ``mode``; DescriptorRefused where CreateOperator or the compile (CompileOperator, CompileGraph) refused
    it; ExecutionError raised where a step failed otherwise (RunnerDied where the runner died)."""
    runner = runners.get(build_of(ep.options))
    try:
        reply = runner.dispatch(_request(op, ep, mode, inputs, outputs))
    except protocol.Refused as error:
        raise _not_asked(op, error) from None
    return _answered(op, mode, reply)


def _answered(op: DmlOperator, mode: DispatchMode, reply: protocol.DispatchReply) -> Dispatched | DescriptorRefused:
    """A dispatch's reply as its outcome: DescriptorRefused where CreateOperator or the compile refused the
    descriptor, ExecutionError raised where either failed otherwise, else the output buffers."""
    for step, hresult in (("CreateOperator", reply.create_hresult), (mode.compile_step, reply.compile_hresult)):
        if hresult is not None and protocol.failed(hresult):
            if refused(hresult):
                return DescriptorRefused(step, hresult)
            raise ExecutionError(f"{step} failed on {op.operator}: HRESULT 0x{hresult:08X}")
    buffers = {layout.name: data for layout, data in zip(op.outputs, reply.outputs, strict=True)}
    return Dispatched(buffers, reply, op.operator, op.owned)


@dataclass(frozen=True)
class Batched:
    """One dispatch of a batch: its operator and its buffers (``dispatch``'s ``inputs`` and ``outputs``)."""

    op: DmlOperator
    inputs: Mapping[str, bytes]
    outputs: Mapping[str, bytes]


def dispatch_batch(
    batch: Sequence[Batched], ep: EpSpec, runners: Runners, mode: DispatchMode
) -> list[Dispatched | DescriptorRefused | ExecutionError]:
    """The batch's operators created and compiled, those that compiled dispatched in one command list, UAV barriers
    between them, and waited for once; each one's outcome in order (an ExecutionError where its own step failed).
    ExecutionError raised where a step after the compiles failed, which fails the whole batch (RunnerDied where the
    runner died); each case then runs alone to find out which."""
    runner = runners.get(build_of(ep.options))
    asked = [_request(b.op, ep, mode, b.inputs, b.outputs) for b in batch]
    try:
        replies = runner.dispatch_batch(asked)
    except protocol.Refused as error:
        raise _not_asked(batch[0].op, error) from None
    in_list = sum(1 for r in replies if r.outputs)  # those that compiled were recorded
    outcomes: list[Dispatched | DescriptorRefused | ExecutionError] = []
    for b, reply in zip(batch, replies, strict=True):
        try:
            answer = _answered(b.op, mode, reply)
        except ExecutionError as error:
            outcomes.append(error)
            continue
        outcomes.append(replace(answer, in_list=in_list) if isinstance(answer, Dispatched) else answer)
    return outcomes

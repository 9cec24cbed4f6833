"""``--ep dmlop``: a case executed through DirectML's own operator API, as the descriptor it describes
(dml_descriptor.py), in the DirectML runner: IDMLDevice::CreateOperator, CompileOperator with the EP's execution
flags, an IDMLOperatorInitializer, a binding table over the case's buffers, IDMLCommandRecorder::RecordDispatch on the
runner's D3D12 queue, readback. The runner's one D3D12 and DirectML device per adapter serves both paths.

Each output buffer starts filled with a canary pattern over its whole size plus a guard region past its end; what
the output's elements do not cover must come back unchanged. A negative case that a descriptor can say is shown to
CreateOperator alone, which must refuse it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from conformance.ep import dml_abi as abi
from conformance.ep.directml import build_of
from conformance.ep.dml_descriptor import DmlOperator
from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.providers import EpSpec, flag_on
from conformance.ep.rules import one_line
from conformance.ep.wine import protocol
from conformance.ep.wine.client import Runners
from conformance.ep.wine.session import adapter_index
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


def _request(
    op: DmlOperator,
    ep: EpSpec,
    create_only: bool,
    inputs: Mapping[str, bytes],
    outputs: Mapping[str, bytes],
    lead: int = 0,
) -> protocol.Frame:
    """The dispatch frame: each input's buffer bound at its layout's size, each output's initial bytes (a guard
    region, the binding from ``lead`` on, a guard region) bound at its layout's size; CreateOperator alone binds
    nothing."""
    feeds = [
        protocol.DispatchBuffer(b"", 0, bound=False)
        if layout is None
        else protocol.DispatchBuffer(inputs.get(layout.name, b""), 0 if create_only else layout.buffer_bytes)
        for layout in op.inputs
    ]
    written = [
        protocol.DispatchBuffer(
            outputs.get(layout.name, b""), 0 if create_only else layout.buffer_bytes, lead=0 if create_only else lead
        )
        for layout in op.outputs
    ]
    return protocol.dispatch_request(
        adapter_index(ep), execution_flags(ep), create_only, op.block, op.pointers, op.desc_at, feeds, written
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
        hresult = runner.dispatch(_request(op, ep, True, {}, {}), create_only=True).create_hresult
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
    lead: int = 0,
) -> Dispatched | DescriptorRefused:
    """The operator created, compiled, initialized and dispatched on the ``inputs`` buffers, its ``outputs``
    starting with the bytes given (by DML tensor name; each binding ``lead`` bytes in); DescriptorRefused where
    CreateOperator or CompileOperator refused it; ExecutionError raised where a step failed otherwise (RunnerDied
    where the runner died)."""
    runner = runners.get(build_of(ep.options))
    try:
        reply = runner.dispatch(_request(op, ep, False, inputs, outputs, lead), create_only=False)
    except protocol.Refused as error:
        raise _not_asked(op, error) from None
    for step, hresult in (("CreateOperator", reply.create_hresult), ("CompileOperator", reply.compile_hresult)):
        if hresult is not None and protocol.failed(hresult):
            if refused(hresult):
                return DescriptorRefused(step, hresult)
            raise ExecutionError(f"{step} failed on {op.operator}: HRESULT 0x{hresult:08X}")
    buffers = {layout.name: data for layout, data in zip(op.outputs, reply.outputs, strict=True)}
    return Dispatched(buffers, reply, op.operator)

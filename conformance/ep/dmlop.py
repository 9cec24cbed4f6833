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
from conformance.ep.errors import ExecutionError
from conformance.ep.providers import EpSpec
from conformance.ep.rules import one_line
from conformance.ep.wine import protocol
from conformance.ep.wine.client import Runners


def execution_flags(ep: EpSpec) -> int:
    """DML_EXECUTION_FLAGS from the EP's options (CompileOperator's ``flags``)."""
    flags = 0
    if ep.options.get("disable_metacommands") == "1":
        flags |= abi.DISABLE_META_COMMANDS
    if ep.options.get("allow_half_precision") == "1":
        flags |= abi.ALLOW_HALF_PRECISION_COMPUTATION
    return flags


def execution_flag_names(ep: EpSpec) -> tuple[str, ...]:
    """The EP's DML_EXECUTION_FLAGS by DirectML.h's names (a result's record, a DxDispatch model's)."""
    flags = execution_flags(ep)
    names = ((abi.ALLOW_HALF_PRECISION_COMPUTATION, "ALLOW_HALF_PRECISION_COMPUTATION"),
             (abi.DISABLE_META_COMMANDS, "DISABLE_META_COMMANDS"))  # fmt: skip
    return tuple(f"DML_EXECUTION_FLAG_{name}" for bit, name in names if flags & bit) or ("DML_EXECUTION_FLAG_NONE",)


def adapter_index(ep: EpSpec) -> int:
    return int(ep.options.get("device_id", "0"))


class DmlRefused(Exception):
    """DirectML refused the descriptor: ``step`` (CreateOperator or CompileOperator) and its HRESULT."""

    def __init__(self, step: str, hresult: int) -> None:
        super().__init__(f"{step} refused it: HRESULT 0x{hresult:08X}")
        self.step, self.hresult = step, hresult


@dataclass(frozen=True)
class Dispatched:
    """What a dispatch returned: each output buffer's whole bytes by DML tensor name (guard region included), and
    what the runner measured."""

    buffers: Mapping[str, bytes]
    reply: protocol.DispatchReply
    operator: str


def _request(
    op: DmlOperator, ep: EpSpec, create_only: bool, inputs: Mapping[str, bytes], outputs: Mapping[str, bytes]
) -> bytes:
    """The dispatch frame: each input's buffer bound at its layout's size, each output's initial bytes (its
    binding, then the guard region) bound at its layout's size; CreateOperator alone binds nothing."""
    feeds = [
        protocol.DispatchBuffer(b"", 0, bound=False)
        if layout is None
        else protocol.DispatchBuffer(inputs.get(layout.name, b""), 0 if create_only else layout.buffer_bytes)
        for layout in op.inputs
    ]
    written = [
        protocol.DispatchBuffer(outputs.get(layout.name, b""), 0 if create_only else layout.buffer_bytes)
        for layout in op.outputs
    ]
    return protocol.dispatch_request(
        adapter_index(ep), execution_flags(ep), create_only, op.block, op.pointers, op.desc_at, feeds, written
    )


def create_only(op: DmlOperator, ep: EpSpec, runners: Runners) -> int:
    """CreateOperator's HRESULT for the descriptor (nothing compiled or run): a negative case shown to DirectML."""
    runner = runners.get(build_of(ep.options))
    try:
        return runner.dispatch(_request(op, ep, True, {}, {}), create_only=True).create_hresult
    except protocol.Refused as error:
        raise ExecutionError(f"DirectML could not be asked about {op.operator}: {one_line(error)}") from None


def dispatch(
    op: DmlOperator, ep: EpSpec, runners: Runners, inputs: Mapping[str, bytes], outputs: Mapping[str, bytes]
) -> Dispatched:
    """The operator created, compiled, initialized and dispatched on the ``inputs`` buffers, its ``outputs``
    starting with the bytes given (by DML tensor name); DmlRefused where CreateOperator or CompileOperator refused
    it, ExecutionError where a later step failed (RunnerDied where the runner died)."""
    runner = runners.get(build_of(ep.options))
    try:
        reply = runner.dispatch(_request(op, ep, False, inputs, outputs), create_only=False)
    except protocol.Refused as error:
        raise ExecutionError(f"{op.operator} failed on DirectML: {one_line(error)}") from None
    if protocol.failed(reply.create_hresult):
        raise DmlRefused("CreateOperator", reply.create_hresult)
    if reply.compile_hresult is not None and protocol.failed(reply.compile_hresult):
        raise DmlRefused("CompileOperator", reply.compile_hresult)
    buffers = {layout.name: data for layout, data in zip(op.outputs, reply.outputs, strict=True)}
    return Dispatched(buffers, reply, op.operator)

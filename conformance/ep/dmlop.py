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
from dataclasses import dataclass, field

import numpy as np

from conformance.ep import dml_abi as abi
from conformance.ep.directml import build_of
from conformance.ep.dml_descriptor import Binding, DmlOperator
from conformance.ep.errors import ExecutionError
from conformance.ep.providers import EpSpec
from conformance.ep.rules import one_line
from conformance.ep.wine import protocol
from conformance.ep.wine.client import Runners

GUARD_BYTES = 64  # past each output buffer's binding: a write there is out of bounds
CANARY = bytes.fromhex("a5")  # placeholder until the canary module is merged


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
    """What a dispatch returned: each output as the spec's tensor (read through its layout), each output buffer's
    whole bytes (guard region included, for the canary check), and what the runner measured."""

    outputs: Mapping[str, np.ndarray]
    buffers: Mapping[str, bytes]
    initial: Mapping[str, bytes]
    reply: protocol.DispatchReply
    operator: str
    extra: Mapping[str, str] = field(default_factory=dict)


def input_buffer(binding: Binding, array: np.ndarray) -> bytes:
    """The input's buffer: its elements where its layout puts them, TotalTensorSizeInBytes long."""
    data = np.ascontiguousarray(array, dtype=binding.dtype).tobytes()
    return data + bytes(max(binding.total_bytes - len(data), 0))


def output_initial(binding: Binding) -> bytes:
    """An output buffer's initial bytes: the canary over its binding and the guard region past it."""
    size = binding.total_bytes + GUARD_BYTES
    return (CANARY * size)[:size]


def output_tensor(binding: Binding, buffer: bytes) -> np.ndarray:
    """The output's elements read out of its buffer through its layout."""
    count = int(np.prod(binding.sizes, dtype=np.int64))
    return np.frombuffer(buffer[: count * binding.dtype.itemsize], binding.dtype).reshape(binding.sizes).copy()


def _request(
    op: DmlOperator, ep: EpSpec, create_only: bool, inputs: Mapping[str, np.ndarray]
) -> tuple[bytes, dict[str, bytes]]:
    feeds = []
    for binding in op.inputs:
        if binding is None:
            feeds.append(protocol.DispatchBuffer(b"", 0, bound=False))
        elif create_only:
            feeds.append(protocol.DispatchBuffer(b"", 0))
        else:
            feeds.append(protocol.DispatchBuffer(input_buffer(binding, inputs[binding.tensor]), binding.total_bytes))
    initial = {binding.tensor: b"" if create_only else output_initial(binding) for binding in op.outputs}
    outputs = [protocol.DispatchBuffer(initial[b.tensor], 0 if create_only else b.total_bytes) for b in op.outputs]
    frame = protocol.dispatch_request(
        adapter_index(ep), execution_flags(ep), create_only, op.block, op.pointers, op.desc_at, feeds, outputs
    )
    return frame, initial


def create_only(op: DmlOperator, ep: EpSpec, runners: Runners) -> int:
    """CreateOperator's HRESULT for the descriptor (nothing compiled or run): a negative case shown to DirectML."""
    runner = runners.get(build_of(ep.options))
    frame, _ = _request(op, ep, True, {})
    try:
        return runner.dispatch(frame, create_only=True).create_hresult
    except protocol.Refused as error:
        raise ExecutionError(f"DirectML could not be asked about {op.operator}: {one_line(error)}") from None


def dispatch(op: DmlOperator, ep: EpSpec, runners: Runners, inputs: Mapping[str, np.ndarray]) -> Dispatched:
    """The operator created, compiled, initialized and dispatched on ``inputs``; DmlRefused where CreateOperator or
    CompileOperator refused it, ExecutionError where a later step failed (RunnerDied where the runner died)."""
    runner = runners.get(build_of(ep.options))
    frame, initial = _request(op, ep, False, inputs)
    try:
        reply = runner.dispatch(frame, create_only=False)
    except protocol.Refused as error:
        raise ExecutionError(f"{op.operator} failed on DirectML: {one_line(error)}") from None
    if protocol.failed(reply.create_hresult):
        raise DmlRefused("CreateOperator", reply.create_hresult)
    if reply.compile_hresult is not None and protocol.failed(reply.compile_hresult):
        raise DmlRefused("CompileOperator", reply.compile_hresult)
    buffers = {binding.tensor: data for binding, data in zip(op.outputs, reply.outputs, strict=True)}
    outputs = {binding.tensor: output_tensor(binding, buffers[binding.tensor]) for binding in op.outputs}
    return Dispatched(outputs, buffers, initial, reply, op.operator)

"""The DirectML runner's framed protocol (dmlrunner.c is the other side), as bytes in and out: no process here.

A frame is a little-endian u32 length and that many bytes (at most FRAME_LIMIT: cases/memory.py refuses a case whose
frames would be larger before anything is made). A request's first byte is its operation (``OP_*``); a
reply's first byte is its status (``ST_*``), and an error reply holds one string, the message. Fields: u8, u32, u64,
i64; a string is a u32 length and UTF-8 bytes; a blob is a u64 length and bytes. The constants are named as
dmlrunner.c names them (tests/test_runner_protocol.py pins each to its twin there).

- ready (sent by the runner once started, unasked): ok, the onnxruntime version string.
- describe (1): u32 adapter index -> ok, a JSON object (adapters, D3D12 device, DirectML feature level, DLL versions).
- open (2): blob model, u32 n + n (key, value) EP options (``device_id`` alone: the runner's shared device for that
  adapter; else onnxruntime's provider-options path), u32 n + n (key, value) config entries, u32 graph
  optimization level, u32 intra-op threads (0: default) -> ok, u32 session.
- run (3): u32 session, u32 n + n inputs (string name, u32 ONNX element type, u32 rank, rank x i64 dims, blob
  bytes), u32 n + n output names -> ok, u32 n + n outputs (u32 type, u32 rank, dims, blob), string run
  milliseconds, and a u8: PROFILE_FOLLOWS and a blob, the profile's JSON (the session's first run only: profiling
  then ends); PROFILE_MISSING and a string saying why there is none; or PROFILE_NONE.
- close (4): u32 session -> ok.
- dispatch (5): u32 adapter index, u32 DML_EXECUTION_FLAGS, u32 request flags (DISPATCH_CREATE_ONLY: ask
  CreateOperator alone; DISPATCH_COMPUTE_QUEUE: record and execute on a COMPUTE queue, else the DIRECT one;
  DISPATCH_COMPILE_GRAPH: compile a one-node graph through IDMLDevice1::CompileGraph, else CompileOperator), blob
  descriptor block, u32 n + n u32 offsets of its pointer fields (each holds an offset into the block, made an
  address by the runner, and u32 the size of what it points to, which must lie in the block), u32 offset of its
  DML_OPERATOR_DESC, u32 n + n inputs (u32 how it is bound (INPUT_UNBOUND: an optional tensor left out; INPUT_BOUND;
  INPUT_OWNED: bound to the initializer alone, its desc flagged DML_TENSOR_FLAG_OWNED_BY_DML), u64 the binding's
  offset in the buffer (16-aligned), u64 binding size, blob the buffer's bytes), u32 n + n outputs (u64 the
  binding's offset in the buffer (16-aligned), u64 binding size, blob the buffer's initial bytes, guard regions
  included) -> ok, u32 CreateOperator's HRESULT; where it succeeded and more was asked, u32 CompileOperator's
  (CompileGraph's); where that succeeded, u32 n + n blobs (each output buffer's bytes after the dispatch), u32
  descriptors, u64 temporary and u64 persistent resource sizes (the compiled operator's binding properties), string
  milliseconds and reuse ("create compile execute reused": reused 1 where the device's compiled operator for the
  same descriptor bytes was dispatched, CreateOperator and the compile not asked again; DISPATCH_NO_REUSE: never). A
  D3D12 or DirectML step that failed after the compile is status 4, its message naming the step and HRESULT (and the
  device's removal reason).
- dispatch_batch (6): u32 n (1 to DISPATCH_BATCH_MAX), then n dispatches' fields as above, each on one adapter and
  queue type -> ok, u32 n, and each dispatch's answer as above (without its status); those that compiled are
  initialized and dispatched in order in one command list, UAV barriers between them, and waited for once (each
  one's "execute" milliseconds are the whole batch's). A step that failed after the compiles fails the whole batch
  (status 4).
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]  # as ep/graph.py's, which imports onnx: describing a device must not
# A request as its pieces, the length first: written one after another, never joined, since a request carries the
# case's buffers (a joined copy would hold them twice, and the join's result a third time).
Frame = list[bytes | memoryview]

FRAME_LIMIT = 2**32 - 1  # the most bytes one frame carries: its length is a u32
_SMALL = 1 << 16  # a frame's parts under this many bytes are joined into one piece

OP_DESCRIBE, OP_OPEN, OP_RUN, OP_CLOSE, OP_DISPATCH, OP_DISPATCH_BATCH = 1, 2, 3, 4, 5, 6
ST_OK = 0
ST_ORT = 1  # onnxruntime refused
ST_EP = 2  # the EP could not be appended: its device was not created
ST_BAD = 3  # a request the runner could not serve
ST_D3D = 4  # a D3D12 or DirectML step after the operator's compile failed
# A dispatch's request flags: ask CreateOperator alone; a COMPUTE queue; a one-node graph (CompileGraph); compile it
# even where the device kept a compiled operator for these descriptor bytes.
DISPATCH_CREATE_ONLY, DISPATCH_COMPUTE_QUEUE, DISPATCH_COMPILE_GRAPH, DISPATCH_NO_REUSE = 1, 2, 4, 8
INPUT_UNBOUND, INPUT_BOUND, INPUT_OWNED = 0, 1, 2  # how a dispatch's input is bound
DISPATCH_BATCH_MAX = 64  # the most dispatches one dispatch_batch request holds
ADAPTER_WARP = 65535  # the adapter index that names WARP natively (EnumWarpAdapter): the reference adapter
PROFILE_NONE, PROFILE_FOLLOWS, PROFILE_MISSING = 0, 1, 2  # after a run's outputs: whether its profile follows

# ONNX element types (onnx.proto's TensorProto.DataType) <-> NumPy: what crosses the pipe.
ELEMENT_TYPES: Mapping[int, np.dtype] = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    4: np.dtype(np.uint16),
    5: np.dtype(np.int16),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
    12: np.dtype(np.uint32),
    13: np.dtype(np.uint64),
}
_TYPE_OF = {dtype: code for code, dtype in ELEMENT_TYPES.items()}


class ProtocolError(Exception):
    """A reply that does not parse: the runner and the harness disagree on the protocol."""


class Refused(Exception):
    """An error reply: ``status`` says whose refusal (ST_ORT, ST_EP, ST_BAD)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Writer:
    def __init__(self, operation: int) -> None:
        self.parts: Frame = [struct.pack("<B", operation)]

    def u32(self, value: int) -> Writer:
        self.parts.append(struct.pack("<I", value))
        return self

    def text(self, value: str) -> Writer:
        data = value.encode("utf-8")
        self.parts += [struct.pack("<I", len(data)), data]
        return self

    def blob(self, value: bytes | memoryview) -> Writer:
        """``value`` itself (a memoryview of an array is not copied: it must not change until the frame is sent)."""
        self.parts += [struct.pack("<Q", len(value)), value]
        return self

    def pairs(self, items: Mapping[str, str]) -> Writer:
        self.u32(len(items))
        for key, value in items.items():
            self.text(key).text(value)
        return self

    def frame(self) -> Frame:
        """The request's pieces, its length first; ValueError for one over FRAME_LIMIT (the validator refuses the
        cases that would make one: this is the last guard)."""
        size = sum(len(part) for part in self.parts)
        if size > FRAME_LIMIT:
            raise ValueError(f"a request of {size} bytes, over the runner protocol's {FRAME_LIMIT}-byte frames")
        pieces: Frame = []
        small: list[bytes | memoryview] = [struct.pack("<I", size)]  # the fields between large blobs, joined
        for part in self.parts:
            if len(part) < _SMALL:
                small.append(part)
                continue
            pieces += [b"".join(small), part]
            small = []
        return [*pieces, b"".join(small)] if small else pieces


class Reader:
    """A reply's fields in order; ProtocolError where it is shorter than they say."""

    def __init__(self, payload: bytes | bytearray) -> None:
        self.data, self.at = memoryview(payload), 0

    def _take(self, size: int) -> memoryview:
        if self.at + size > len(self.data):
            raise ProtocolError(f"a reply of {len(self.data)} bytes ended early (wanted {size} at {self.at})")
        chunk = self.data[self.at : self.at + size]
        self.at += size
        return chunk

    def u8(self) -> int:
        return int(self._take(1)[0])

    def u32(self) -> int:
        return int(struct.unpack("<I", self._take(4))[0])

    def i64(self) -> int:
        return int(struct.unpack("<q", self._take(8))[0])

    def text(self) -> str:
        return bytes(self._take(self.u32())).decode("utf-8", "replace")

    def blob(self) -> memoryview:
        return self._take(int(struct.unpack("<Q", self._take(8))[0]))


def checked(payload: bytes | bytearray) -> Reader:
    """The reply's reader past an ok status; Refused for an error reply."""
    reader = Reader(payload)
    status = reader.u8()
    if status != ST_OK:
        raise Refused(status, reader.text())
    return reader


def describe_request(adapter: int) -> Frame:
    return Writer(OP_DESCRIBE).u32(adapter).frame()


def open_request(
    model: bytes, ep_options: Mapping[str, str], config: Mapping[str, str], optimization_level: int, threads: int
) -> Frame:
    return Writer(OP_OPEN).blob(model).pairs(ep_options).pairs(config).u32(optimization_level).u32(threads).frame()


def element_type(array: Array) -> int:
    try:
        return _TYPE_OF[array.dtype]
    except KeyError:
        raise ValueError(f"the runner takes no {array.dtype} tensor") from None


def run_request(session: int, feeds: Mapping[str, Array], names: Sequence[str]) -> Frame:
    writer = Writer(OP_RUN).u32(session).u32(len(feeds))
    for name, value in feeds.items():
        array = np.ascontiguousarray(value)
        writer.text(name).u32(element_type(array)).u32(array.ndim)
        writer.parts.append(struct.pack(f"<{array.ndim}q", *array.shape))
        writer.blob(array.data.cast("B") if array.size else b"")
    writer.u32(len(names))
    for name in names:
        writer.text(name)
    return writer.frame()


def close_request(session: int) -> Frame:
    return Writer(OP_CLOSE).u32(session).frame()


@dataclass(frozen=True)
class RunReply:
    outputs: list[Array]
    milliseconds: float
    profile: str | None  # the profile's JSON after a session's first run
    no_profile: str | None = None  # why there is none, where one was due


def read_run(payload: bytes | bytearray) -> RunReply:
    """The run's reply; its outputs are arrays over ``payload``'s bytes, not copies of them."""
    reader = checked(payload)
    outputs = []
    for _ in range(reader.u32()):
        code = reader.u32()
        if code not in ELEMENT_TYPES:
            raise ProtocolError(f"an output of ONNX element type {code}")
        dims = [reader.i64() for _ in range(reader.u32())]
        data = reader.blob()
        outputs.append(np.frombuffer(data, ELEMENT_TYPES[code]).reshape(dims))
    milliseconds = float(reader.text())
    flag = reader.u8()
    if flag == PROFILE_FOLLOWS:
        return RunReply(outputs, milliseconds, bytes(reader.blob()).decode("utf-8", "replace"))
    if flag == PROFILE_MISSING:
        return RunReply(outputs, milliseconds, None, reader.text())
    return RunReply(outputs, milliseconds, None)


@dataclass(frozen=True)
class DispatchBuffer:
    """A buffer of a dispatch: its bytes (for an output, the initial ones) and the binding's size and its offset in
    them (``lead``, a multiple of 16: the bytes before and after the binding hold the canary); ``bound`` False: an
    optional input left unbound; ``owned``: an input DirectML owns (bound to the initializer alone)."""

    data: bytes
    binding_size: int
    bound: bool = True
    lead: int = 0
    owned: bool = False

    @property
    def input_binding(self) -> int:
        """How the runner binds it as an input (INPUT_*)."""
        if not self.bound:
            return INPUT_UNBOUND
        return INPUT_OWNED if self.owned else INPUT_BOUND


@dataclass(frozen=True)
class DispatchRequest:
    """One operator dispatch as the runner is asked it (the fields of a dispatch request, or of one of a batch's)."""

    adapter: int
    flags: int  # DML_EXECUTION_FLAGS
    request: int  # DISPATCH_* request flags
    block: bytes
    pointers: Sequence[tuple[int, int]]
    desc_at: int
    inputs: Sequence[DispatchBuffer]
    outputs: Sequence[DispatchBuffer]

    @property
    def create_only(self) -> bool:
        return bool(self.request & DISPATCH_CREATE_ONLY)


def _dispatch_fields(writer: Writer, asked: DispatchRequest) -> None:
    writer.u32(asked.adapter).u32(asked.flags).u32(asked.request).blob(asked.block)
    writer.u32(len(asked.pointers))
    for at, size in asked.pointers:
        writer.u32(at).u32(size)
    writer.u32(asked.desc_at).u32(len(asked.inputs))
    for buffer in asked.inputs:
        writer.u32(buffer.input_binding).parts.append(struct.pack("<QQ", buffer.lead, buffer.binding_size))
        writer.blob(buffer.data)
    writer.u32(len(asked.outputs))
    for buffer in asked.outputs:
        writer.parts.append(struct.pack("<QQ", buffer.lead, buffer.binding_size))
        writer.blob(buffer.data)


def dispatch_request(asked: DispatchRequest) -> Frame:
    writer = Writer(OP_DISPATCH)
    _dispatch_fields(writer, asked)
    return writer.frame()


def dispatch_batch_request(batch: Sequence[DispatchRequest]) -> Frame:
    """Several dispatches recorded in one command list and waited for once (at most DISPATCH_BATCH_MAX, each on one
    adapter and queue type)."""
    if not 0 < len(batch) <= DISPATCH_BATCH_MAX:
        raise ValueError(f"a batch of {len(batch)} dispatches: 1 to {DISPATCH_BATCH_MAX} go in one")
    writer = Writer(OP_DISPATCH_BATCH).u32(len(batch))
    for asked in batch:
        _dispatch_fields(writer, asked)
    return writer.frame()


@dataclass(frozen=True)
class DispatchReply:
    """CreateOperator's HRESULT, CompileOperator's (None: not asked), and after a dispatch each output buffer's
    bytes, the compiled operator's binding properties and the milliseconds each step took."""

    create_hresult: int
    compile_hresult: int | None = None
    outputs: tuple[bytes, ...] = ()
    descriptors: int = 0
    temporary_bytes: int = 0
    persistent_bytes: int = 0
    milliseconds: tuple[float, ...] = ()
    reused: bool = False  # the device's compiled operator for these descriptor bytes was dispatched: none compiled


def failed(hresult: int) -> bool:
    """An HRESULT's severity bit: the call failed."""
    return bool(hresult & 0x80000000)


def _one_dispatch(reader: Reader, create_only: bool) -> DispatchReply:
    created = reader.u32()
    if failed(created) or create_only:
        return DispatchReply(created)
    compiled = reader.u32()
    if failed(compiled):
        return DispatchReply(created, compiled)
    outputs = tuple(bytes(reader.blob()) for _ in range(reader.u32()))
    descriptors = reader.u32()
    temporary, persistent = (int(struct.unpack("<Q", bytes(reader._take(8)))[0]) for _ in range(2))
    timing = reader.text().split()  # create, compile and execute milliseconds, then 1 where the operator was reused
    milliseconds = tuple(float(part) for part in timing[:3])
    reused = len(timing) > 3 and timing[3] == "1"
    return DispatchReply(created, compiled, outputs, descriptors, temporary, persistent, milliseconds, reused)


def read_dispatch(payload: bytes | bytearray, create_only: bool) -> DispatchReply:
    return _one_dispatch(checked(payload), create_only)


def read_dispatch_batch(payload: bytes | bytearray, batch: Sequence[DispatchRequest]) -> list[DispatchReply]:
    """Each dispatch's reply, in the batch's order (its milliseconds' last, the execution, is the whole batch's)."""
    reader = checked(payload)
    count = reader.u32()
    if count != len(batch):
        raise ProtocolError(f"a batch of {len(batch)} dispatches answered with {count}")
    return [_one_dispatch(reader, asked.create_only) for asked in batch]

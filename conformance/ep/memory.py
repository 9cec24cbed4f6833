"""What each way of executing a case holds in memory (model.MemoryPath), described once for cases/memory.py's
estimate (--max-case-bytes), and which way each EP takes (``memory_path``).

An EP in the harness's process (cpu, cuda, webgpu; dml on Windows) is ``IN_PROCESS``: its copies of the tensors are
in the per-element figures, measured on the CPU EP. A DirectML EP under Wine, and ``dmlop`` everywhere, runs in the
DirectML runner, a process of its own. The figures are what ``benchmarks/case_memory.py`` measured on lavapipe
(vkd3d-proton on Mesa's software Vulkan), where the device's memory is the runner's own, as on an integrated GPU;
on a discrete GPU the default-heap buffers are on the device, and the estimate holds there with room to spare.

- ``RUNNER_SESSION`` (``--ep dml`` under Wine): the harness sends the packed inputs as they lie (protocol.Frame) and
  reads the reply into one buffer its output arrays are views of. The runner holds the request, a copy of each
  input that onnxruntime reads in place, the DML EP's device buffers and upload heap, and the outputs' device
  buffers, readback heap and CPU tensors, which it sends from where they lie. The scratch an operator holds on the
  device is its entry's ``session_scratch`` (each operator's module, ep/operators.py).
- ``RUNNER_DISPATCH`` (``--ep dmlop``): the harness holds the input buffers (the canary where no element lies), the
  output buffers' initial bytes and what came back, and the canary check (compare/canary.py) a byte mask of each
  output buffer and its words' XOR with the pattern: three output buffers in all (the 4-element SLICE1 whose output
  buffer is 2^30 bytes measured 3,073 MiB in the harness). The runner holds the request and its pool: the bindings
  in an upload, a default-heap and a readback buffer, and DirectML's temporary resource on the device alone (the
  entry's ``dispatch_scratch``).

A frame is at most protocol.FRAME_LIMIT bytes, of which FRAME_FIELDS are left to what it carries besides the tensors'
bytes (fields, the descriptor block, the canary's guard regions). Onnxruntime gives TOP_K1's indices as INT64 where
DirectML's are UINT32, so a session's reply counts the outputs twice.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from conformance.ep.dml_here import dml_through_wine
from conformance.ep.operators import OPERATORS
from conformance.ep.providers import EpSpec, facts
from conformance.ep.wine.protocol import FRAME_LIMIT
from conformance.ep_table import PathKind
from conformance.model import IN_PROCESS, Copies, MemoryPath

FRAME_FIELDS = 1 << 20  # a frame's bytes besides its tensors': far less than this

RUNNER_SESSION = MemoryPath(
    "on --ep dml under Wine",
    harness=Copies(outputs=2),
    runner=Copies(inputs=4, outputs=4),
    scratch=MappingProxyType({operator: entry.session_scratch for operator, entry in OPERATORS.items()}),
    frames=(Copies(inputs=1), Copies(outputs=2)),
    frame_limit=FRAME_LIMIT - FRAME_FIELDS,
)
RUNNER_DISPATCH = MemoryPath(
    "on --ep dmlop",
    harness=Copies(input_buffers=2, output_buffers=3),
    runner=Copies(input_buffers=4, output_buffers=4),
    scratch=MappingProxyType({operator: entry.dispatch_scratch for operator, entry in OPERATORS.items()}),
    frames=(Copies(input_buffers=1, output_buffers=1),),
    frame_limit=FRAME_LIMIT - FRAME_FIELDS,
)
PATHS = (IN_PROCESS, RUNNER_SESSION, RUNNER_DISPATCH)  # every path: what validate, list and coverage check

# In the runner, by the execution path that runs the EP there (ep_table.py): a session, or a dispatch.
_IN_THE_RUNNER: Mapping[PathKind, MemoryPath] = MappingProxyType(
    {PathKind.ONNXRUNTIME: RUNNER_SESSION, PathKind.OPERATOR_API: RUNNER_DISPATCH}
)


def memory_path(ep: EpSpec) -> MemoryPath:
    """The way ``ep`` executes a case, as the estimate counts it: in the runner where DirectML runs there
    (dml_here.dml_through_wine), else in the harness's process."""
    return _IN_THE_RUNNER[facts(ep).path] if dml_through_wine(ep) else IN_PROCESS

"""Many small lowerings as one ONNX model, so that one session runs them all, and the packed run's outputs and
placement record split back per case.

On a GPU EP, creating a session costs far more than running a small case (issue 6), so small cases are packed:

- Each lowering's graph is copied in with every name (nodes, edges, inputs, outputs, initializers) prefixed by its
  place in the pack (``onnx.compose.add_prefix``). No tensor is shared: every node reads only its own case's
  inputs and constants, so each case computes what it computes alone.
- Only models of one opset are packed together, so that every node keeps the operator version it has alone.
- onnxruntime's placement record is split by prefix and checked per case against that case's own nodes and op
  types (``check_placement``): a node recorded under no case's prefix, on another EP, or of an op type its case
  does not have (an inserted Cast) makes the whole pack fail, and the caller falls back (batch.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import onnx
from onnx import compose, helper

from conformance.execute import Execution
from conformance.lower import Lowering
from conformance.lower_mvn import IR_VERSION, Array
from conformance.placement import ExecutionError, PlacedNode, check_placement, lowering_op_types

PACK_MAX_ELEMENTS = 1 << 16  # a case is packed only when its inputs and outputs hold at most this many elements
PACKED = "packed"


def prefix(place: int) -> str:
    """The names of the case at ``place``: "p3_" never begins "p30_", so a name belongs to one case only."""
    return f"p{place}_"


def opset_of(lowering: Lowering) -> tuple[tuple[str, int], ...]:
    model = onnx.load_from_string(lowering.model)
    return tuple(sorted((o.domain, o.version) for o in model.opset_import))


def elements(lowering: Lowering) -> int:
    """Elements the case's session reads and writes: no lowering's outputs are larger than its inputs."""
    return 2 * sum(int(np.asarray(array).size) for array in lowering.feeds.values())


def packable(lowering: Lowering) -> bool:
    return elements(lowering) <= PACK_MAX_ELEMENTS


def pack(lowerings: Sequence[Lowering]) -> Lowering:
    """One model running every lowering side by side, each under its own prefix; all of one opset."""
    models = [compose.add_prefix(onnx.load_from_string(low.model), prefix(i)) for i, low in enumerate(lowerings)]
    opsets = {tuple(sorted((o.domain, o.version) for o in m.opset_import)) for m in models}
    if len(opsets) != 1:
        raise ValueError(f"cannot pack models of different opsets: {sorted(opsets)}")
    graph = helper.make_graph(
        [node for m in models for node in m.graph.node],
        PACKED,
        [value for m in models for value in m.graph.input],
        [value for m in models for value in m.graph.output],
        [tensor for m in models for tensor in m.graph.initializer],
    )
    model = helper.make_model(
        graph, opset_imports=list(models[0].opset_import), ir_version=IR_VERSION, producer_name="dml-conformance"
    )
    feeds: dict[str, Array] = {}
    outputs: dict[str, str] = {}
    nodes: list[str] = []
    for i, low in enumerate(lowerings):
        feeds |= {prefix(i) + name: array for name, array in low.feeds.items()}
        outputs |= {prefix(i) + name: prefix(i) + name for name in low.outputs}
        nodes += [prefix(i) + name for name in low.nodes]
    return Lowering(PACKED, bytes(model.SerializeToString()), feeds, outputs, tuple(nodes))


def _own_records(records: Sequence[PlacedNode], count: int) -> list[list[PlacedNode]]:
    """The record split by case, names without their prefix; ExecutionError for a node of no case."""
    owned: list[list[PlacedNode]] = [[] for _ in range(count)]
    for record in records:
        place = next((i for i in range(count) if record.name.startswith(prefix(i))), None)
        if place is None:
            raise ExecutionError(f"the packed session recorded {record.op_type} node '{record.name}' of no case")
        owned[place].append(replace(record, name=record.name[len(prefix(place)) :]))
    return owned


def unpack(
    lowerings: Sequence[Lowering], outputs: Mapping[str, Array], records: Sequence[PlacedNode], ep_name: str
) -> list[Execution]:
    """Each case's Execution from the packed run; NotSupported or ExecutionError where any case's own check fails."""
    executions = []
    for i, (low, own) in enumerate(zip(lowerings, _own_records(records, len(lowerings)), strict=True)):
        placement = check_placement(own, low.nodes, ep_name, lowering_op_types(low))
        own_outputs = {dml: outputs[prefix(i) + name] for name, dml in low.outputs.items()}
        executions.append(Execution(outputs=own_outputs, placement=placement))
    return executions

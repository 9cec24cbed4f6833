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

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace

import numpy as np
import onnx
from onnx import TensorProto, compose, helper

from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.execute import Execution
from conformance.ep.graph import IR_VERSION, Array
from conformance.ep.lower import Lowering
from conformance.ep.placement import DML_FUSED, PlacedNode, check_placement, lowering_op_types

PACK_MAX_ELEMENTS = 1 << 16  # a case is packed only when its inputs and outputs hold at most this many elements
# What one pack may cost to compile, in units of one elementwise node. Each node is an operator DirectML compiles
# into shaders (vkd3d-proton and the Vulkan driver then build a pipeline for each), all held by the runner until the
# session closes: a pack's memory and session time grow with its nodes, faster than linearly. Issue 28, on lavapipe:
# 60 MVN1 cases in one pack took 18 s and 7.6 GB, as four packs of 16 7.3 s and 2.8 GB; the whole library peaked at
# 11.7 GB. With TopK and Slice at a unit (64 to a pack, --pack's default) and MVN1's operators at 8 (DirectML's MVN,
# InstanceNormalization, and the decomposition's two ReduceMean: each a reduction, a pass per statistic), an MVN1
# pack holds 8 cases, or 3 decomposed ones: MVN1's library.yaml alone then peaks at 2.75 GB and takes 36 s, against
# 4.25 GB and 28 s at 16 MVN1 cases a pack; at 4 a pack it took 48 s for the same 2.75 GB, which one session of
# that file reaches whatever its pack (docs/performance.md#memory). A pack only groups cases: no verdict depends on
# where a pack ends.
PACK_MAX_COST = 64
REDUCTION = 8  # MVN1's operators: each a reduction DirectML compiles in several passes
COMPILE_COST = {"InstanceNormalization": REDUCTION, "MeanVarianceNormalization": REDUCTION, "ReduceMean": REDUCTION}
PACKED = "packed"
_PREFIXED = re.compile(r"(?<![A-Za-z0-9])p([0-9]+)_")
_QUOTED = re.compile(r"'p([0-9]+)_")


def prefix(place: int) -> str:
    """The names of the case at ``place``: "p3_" never begins "p30_", so a name belongs to one case only."""
    return f"p{place}_"


def opset_of(lowering: Lowering) -> tuple[tuple[str, int], ...]:
    model = onnx.load_from_string(lowering.model)
    return tuple(sorted((o.domain, o.version) for o in model.opset_import))


def signature(lowering: Lowering) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """What decides whether an EP has kernels for a lowering: its op types and its inputs' element types. Cases of
    one signature are refused together (a missing kernel), so a refusal that names one sends them all alone."""
    graph = onnx.load_from_string(lowering.model).graph
    return tuple(node.op_type for node in graph.node), tuple(i.type.tensor_type.elem_type for i in graph.input)


def elements(lowering: Lowering) -> int:
    """Elements the case's session reads and writes: no lowering's outputs are larger than its inputs."""
    return 2 * sum(int(np.asarray(array).size) for array in lowering.feeds.values())


def packable(lowering: Lowering) -> bool:
    return elements(lowering) <= PACK_MAX_ELEMENTS


def compile_cost(lowering: Lowering) -> int:
    """What the case adds to its pack's compile (PACK_MAX_COST's units): its nodes, each at its op type's cost."""
    graph = onnx.load_from_string(lowering.model).graph
    return sum(COMPILE_COST.get(node.op_type, 1) for node in graph.node)


def pack_spans(costs: Sequence[int], most: int) -> list[range]:
    """Consecutive packs of the cases whose compile costs are ``costs``: at most ``most`` cases (--pack) and at most
    PACK_MAX_COST units each, the one place a pack's size is decided (a case dearer than that is a pack alone)."""
    spans: list[range] = []
    start = total = 0
    for index, cost in enumerate(costs):
        if index > start and (index - start >= most or total + cost > PACK_MAX_COST):
            spans.append(range(start, index))
            start, total = index, 0
        total += cost
    if start < len(costs):
        spans.append(range(start, len(costs)))
    return spans


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


def _place(name: str, count: int) -> int | None:
    """The case a recorded node is of: its name begins with the case's prefix, or holds exactly one case's
    prefixed name (a node onnxruntime inserted and named after one of ours, InsertedPrecisionFreeCast_p3_...)."""
    places = {int(place) for place in _PREFIXED.findall(name) if int(place) < count}
    return places.pop() if len(places) == 1 else None


class Unattributed(ExecutionError):
    """A recorded node that no case can be given; ``suspects`` are the cases that could own it (none: any)."""

    def __init__(self, message: str, suspects: frozenset[int]) -> None:
        super().__init__(message)
        self.suspects = suspects


def _expanded_op_types(lowering: Lowering) -> frozenset[str]:
    """The op types of the ONNX function bodies of the lowering's ops, minus its own nodes' op types."""
    own = {node.op_type for node in onnx.load_from_string(lowering.model).graph.node}
    return lowering_op_types(lowering) - own


def _has_float16(lowering: Lowering) -> bool:
    graph = onnx.load_from_string(lowering.model).graph
    return any(v.type.tensor_type.elem_type == TensorProto.FLOAT16 for v in [*graph.input, *graph.output])


def _suspects(record: PlacedNode, lowerings: Sequence[Lowering]) -> frozenset[int]:
    """The cases an unnamed node could be of: a function body with its op type, or, for a Cast, float16 data."""
    return frozenset(
        i
        for i, low in enumerate(lowerings)
        if record.op_type in _expanded_op_types(low) or (record.op_type == "Cast" and _has_float16(low))
    )


def _shared_partitions(fused: Sequence[PlacedNode]) -> list[PlacedNode]:
    """The pack's DirectML partitions as each case records them: one entry naming the first and last partition where
    all ran on one EP (a case's record need not list the 64 partitions of its pack), else each partition."""
    if len(fused) < 2 or len({r.ep for r in fused}) != 1:
        return list(fused)
    name = f"{fused[0].name}..{fused[-1].name} ({len(fused)} partitions of the pack)"
    return [PlacedNode(name, DML_FUSED, fused[0].ep)]


def _own_records(records: Sequence[PlacedNode], lowerings: Sequence[Lowering]) -> list[list[PlacedNode]]:
    """The record split by case, names without their prefix.

    DirectML records the partition it fused as one ``DmlFusedNode_*`` of no case's name: it is every case's record
    (with CPU fallback disabled, a node DirectML did not take would have refused the session instead).
    onnxruntime leaves unnamed both the nodes it expands from an ONNX function (HardSwish -> HardSigmoid, Mul) and
    the Casts it inserts around an op with no float16 kernel. Such a node goes to the one case that could have it
    (``_suspects``); with several, Unattributed names them (the caller packs them apart), with none, the pack fails.
    """
    owned: list[list[PlacedNode]] = [[] for _ in lowerings]
    fused: list[PlacedNode] = []  # DirectML's partitions, nodes of no one case: every case's record
    for record in records:
        place = _place(record.name, len(lowerings))
        if place is None and record.op_type.startswith(DML_FUSED):
            fused.append(record)
            continue
        if place is None:
            suspects = _suspects(record, lowerings)
            if len(suspects) != 1:
                message = f"the packed session recorded {record.op_type} node '{record.name}' of no one case"
                raise Unattributed(message, suspects)
            (place,) = suspects
        owned[place].append(replace(record, name=record.name.removeprefix(prefix(place))))
    shared = _shared_partitions(fused)
    return [shared + own for own in owned]


def unpack(
    lowerings: Sequence[Lowering], outputs: Mapping[str, Array], records: Sequence[PlacedNode], ep_name: str
) -> list[Execution | NotSupported | ExecutionError]:
    """Each case's Execution from the packed run, or why its own placement check failed; ExecutionError (for the
    whole pack) for a recorded node of no case."""
    results: list[Execution | NotSupported | ExecutionError] = []
    for i, (low, own) in enumerate(zip(lowerings, _own_records(records, lowerings), strict=True)):
        try:
            placement = check_placement(own, low.nodes, ep_name, lowering_op_types(low))
        except (NotSupported, ExecutionError) as error:
            results.append(error)
            continue
        own_outputs = {dml: outputs[prefix(i) + name] for name, dml in low.outputs.items()}
        results.append(Execution(outputs=own_outputs, placement=placement))
    return results


def named_cases(text: str, count: int) -> set[int]:
    """The places of the cases whose nodes a refusal names, quoted ("node with name 'p3_TopK_0'", "TopK node
    'p3_TopK_0' was placed on ..."); the unquoted input names that a message may list all are not counted."""
    return {int(place) for place in _QUOTED.findall(text) if int(place) < count}

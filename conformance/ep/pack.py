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
from conformance.ep.providers import EpSpec, uses_directml

SMALL_ELEMENTS = 1 << 16  # a small case (its session's threads: RunOptions.session_threads)
# A case is packed when its inputs and outputs hold at most PACK_MAX_ELEMENTS, and a pack's cases at most
# PACK_MAX_TOTAL together (16 MiB as float32; a pack's expected outputs are held beside them). Issue 28:
# the library's 44 cases of 2^17 to 2^18 elements ran alone, a session each; a session on lavapipe costs a
# shader-visible descriptor heap (below), so packing them took the whole library from 77 s to 63 s there.
PACK_MAX_ELEMENTS = 1 << 19
PACK_MAX_TOTAL = 1 << 22
# What one pack may cost DirectML, in units of which a pack holds PACK_MAX_COST. On lavapipe nearly all of a DirectML
# session's time and memory is its shader-visible descriptor heaps: vkd3d-proton makes each a descriptor set of
# 1,000,000 descriptors whatever the heap's size, and lavapipe zeroes them, 2 x 244 MiB, about 0.27 s a heap
# (docs/performance.md#directml-at-scale-issue-28). onnxruntime's DirectML EP makes one heap a session, and one
# more for each partition (connected nodes) of 5 nodes or more, which it records once as a reusable command list:
# MVN1's decomposition with variance (two ReduceMean and at least five more nodes) costs a heap of its own wherever
# it runs. InstanceNormalization and MeanVarianceNormalization cases, a node each, stay in the session's one heap up
# to 16 a pack (measured); TopK and Slice take none of their own (64 a pack, one heap). So MVN1's single operators
# cost 4 units (16 a pack), a ReduceMean 10: three decompositions with variance a pack (four heaps, about 2 GB), six
# of the mean alone (two nodes: no heap of their own); every other node costs nothing, and --pack bounds the count.
# The whole library had peaked at 11.7 GB with 64-case MVN1 packs. No verdict depends on where a pack ends.
PACK_MAX_COST = 64
COMPILE_COST = {"InstanceNormalization": 4, "MeanVarianceNormalization": 4, "ReduceMean": 10}
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


def small(lowering: Lowering) -> bool:
    return elements(lowering) <= SMALL_ELEMENTS


def packable(lowering: Lowering) -> bool:
    return elements(lowering) <= PACK_MAX_ELEMENTS


def compile_cost(lowering: Lowering, ep: EpSpec) -> int:
    """What the case adds to its pack's cost on ``ep`` (PACK_MAX_COST's units): on DirectML its nodes, each at its op
    type's cost (none for an op type not in COMPILE_COST); on another EP nothing, since the costs are DirectML's
    descriptor heaps (on WebGPU they took 52 more sessions, about 6 s of the library on the H100)."""
    if not uses_directml(ep):
        return 0
    graph = onnx.load_from_string(lowering.model).graph
    return sum(COMPILE_COST.get(node.op_type, 0) for node in graph.node)


def pack_spans(costs: Sequence[int], sizes: Sequence[int], most: int) -> list[range]:
    """Consecutive packs of the cases whose compile costs are ``costs`` and whose elements are ``sizes``: at most
    ``most`` cases (--pack), PACK_MAX_COST units and PACK_MAX_TOTAL elements each, the one place a pack's size is
    decided (a case dearer than that is a pack alone)."""
    spans: list[range] = []
    start = total = held = 0
    for index, (cost, size) in enumerate(zip(costs, sizes, strict=True)):
        full = total + cost > PACK_MAX_COST or held + size > PACK_MAX_TOTAL
        if index > start and (index - start >= most or full):
            spans.append(range(start, index))
            start, total, held = index, 0, 0
        total, held = total + cost, held + size
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

"""onnxruntime's record of where each node ran, checked against the lowering: the proof that a verdict is about
the requested EP's own kernels (execute.py records it; this module reads it)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import onnx

from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.graph import BASE_OPSET
from conformance.ep.lower import Lowering

log = logging.getLogger(__name__)

DML_FUSED = (
    "DmlFused"  # DirectML's EP names what it fused: DmlFused<Op> (an activation fused in), DmlFusedNode_* (a partition)
)


@dataclass(frozen=True)
class PlacedNode:
    """One node of onnxruntime's placement record."""

    name: str
    op_type: str
    ep: str


def recorded_placement(session: Any) -> list[PlacedNode]:
    return [
        PlacedNode(str(node.name), str(node.op_type), str(sub.ep_name))
        for sub in session.get_provider_graph_assignment_info()
        for node in sub.get_nodes()
    ]


def lowering_op_types(lowering: Lowering) -> frozenset[str]:
    """The lowering's op types, plus those of the ONNX function bodies of its ops (HardSwish -> HardSigmoid, Mul):
    onnxruntime expands a function op that no kernel takes into its definition, which is still the op."""
    model = onnx.load_from_string(lowering.model)
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), BASE_OPSET)
    found = set()
    for node in model.graph.node:
        found.add(node.op_type)
        schema = onnx.defs.get_schema(node.op_type, opset)
        if getattr(schema, "has_function", False):  # onnx's stubs lack it
            found.update(inner.op_type for inner in schema.function_body.node)
    return frozenset(found)


def _of_lowering(op_type: str, op_types: frozenset[str]) -> bool:
    """A recorded node is the lowering's: one of its op types, or DirectML's fusion of them (``DmlFused*``)."""
    return op_type in op_types or op_type.startswith(DML_FUSED)


def check_placement(
    records: Sequence[PlacedNode], nodes: Sequence[str], ep_name: str, op_types: frozenset[str] | None = None
) -> dict[str, str]:
    """node -> EP from the record; NotSupported for a node elsewhere, ExecutionError for an empty record.

    A recorded node need not carry one of our names: DirectML's EP fuses an activation into the node before it
    (``DmlFused<Op>``, "fused op (...)") and may record its partition as ``DmlFusedNode_*``; what counts is that
    every node recorded ran on ``ep_name``."""
    strays = [r for r in records if r.ep != ep_name]
    if strays:
        raise NotSupported(
            "; ".join(f"{r.op_type} node '{r.name}' was placed on {r.ep}, not {ep_name}" for r in strays),
            "placed_elsewhere",
        )
    if nodes and not records:
        raise ExecutionError(f"onnxruntime recorded no placement for any of {', '.join(nodes)} on {ep_name}")
    foreign = [r for r in records if op_types is not None and not _of_lowering(r.op_type, op_types)]
    casts = [r for r in foreign if r.op_type == "Cast"]
    if casts:
        # onnxruntime's InsertCastTransformer: an op with no float16 kernel on this EP is computed in float32
        # (after expanding it into its function body, if it has one); that is not this EP's float16 operator.
        raise NotSupported(
            f"{ep_name} has no float16 kernel for part of the lowering: onnxruntime inserted "
            f"{len(casts)} Cast node(s) to compute it in float32",
            "no_kernel",
        )
    if foreign:  # an optimizer replaced our nodes: what ran is not the lowering the verdict would be about
        raise ExecutionError(
            "onnxruntime rewrote the lowering before placing it: "
            + "; ".join(f"{r.op_type} node '{r.name}' is not in the lowering" for r in foreign)
        )
    placement = {r.name: r.ep for r in records}
    for node in nodes:
        if node not in placement:
            log.debug("node %s is not in the record: fused into another node, or removed before placement", node)
    return placement

"""A case's descriptor as a small ONNX model that one execution provider can run: each operator's ``lower``
(ep/operators.py's table; the graph itself is its ``*_lowering`` module's), built into a ``Lowering``.

The data tensors are graph inputs, never initializers, so that the EP really reads them; every node is named, and
``Lowering.nodes`` lists them all so that ``execute`` can prove where each one ran.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from conformance.ep.graph import Array, CannotLower, LoweredGraph
from conformance.ep.operators import OPERATORS
from conformance.model import Case


@dataclass(frozen=True)
class Lowering:
    name: str  # e.g. "TopK-11", "InstanceNormalization-6+Relu", "decomposed-MVN+Mul+Add"
    model: bytes  # a serialized onnx.ModelProto
    feeds: Mapping[str, Array]  # graph input name -> array
    outputs: Mapping[str, str]  # ONNX graph output name -> DML output tensor name
    nodes: tuple[str, ...]  # every node's (unique) name


@dataclass(frozen=True)
class NotExpressible:
    reason: str


def _lowering(built: LoweredGraph) -> Lowering:
    g = built.graph
    return Lowering(
        name=built.name,
        model=g.model(built.outputs),
        feeds=dict(g.feeds),
        outputs={out: out for out, _, _, _ in built.outputs},
        nodes=tuple(n.name for n in g.nodes),
    )


def same_for_every_ep(case: Case) -> bool:
    """Whether ``case`` lowers to one model whatever the EP, as its operator's entry says."""
    return OPERATORS[case.operator].same_for_every_ep


def lower(case: Case, inputs: Mapping[str, Array], ep_name: str) -> Lowering | NotExpressible:
    """``case``'s descriptor as an ONNX model for ``ep_name`` (a full onnxruntime EP name).

    ``inputs`` holds "InputTensor" (and "ScaleTensor"/"BiasTensor" where the case has them) in the case's data
    type and Sizes. NotExpressible says why no ONNX model conveys the descriptor.
    """
    try:
        return _lowering(OPERATORS[case.operator].lower(case.descriptor, inputs, ep_name))
    except CannotLower as reason:
        return NotExpressible(str(reason))

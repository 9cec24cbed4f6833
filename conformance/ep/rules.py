"""The rules every session follows, in this process or in the DirectML runner, and what a refused session means.

- For a non-CPU EP, ``session.disable_cpu_ep_fallback=1`` makes session creation fail instead of handing nodes to the
  CPU; the CPU EP itself refuses that entry.
- Graph optimizations are off (we test kernels, not rewrites), except on DirectML: level 2 lets its EP fuse the
  activation into MVN1 (DmlExecutionProvider/src/GraphTransformer.cpp). The level-1 rules that would delete or
  rewrite our nodes are disabled there (``KEEP_NODES``).
- A refusal (``refusal``, in this order) is a missing kernel (``missing_kernel``), nodes left to the CPU
  (``FALLBACK_REFUSED``, diagnosed by the caller), an EP that could not start (``wrapper_fallback``), or else an ERROR
  of the case.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import onnx

from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.lower import Lowering
from conformance.ep.providers import CPU, EpSpec, facts
from conformance.model import EP_NOT_STARTED

RECORD_ASSIGNMENT = "session.record_ep_graph_assignment_info"
DISABLE_CPU_FALLBACK = "session.disable_cpu_ep_fallback"
# The C API's way to name optimizers to skip (the Python API's disabled_optimizers argument does the same).
DISABLE_OPTIMIZERS = "optimization.disable_specified_optimizers"
FALLBACK_REFUSED = "fallback to CPU EP has been explicitly disabled"
ENABLE_EXTENDED, DISABLE_ALL = 2, 0  # onnxruntime's GraphOptimizationLevel values
# Every session's settings (dmlrunner.c names them alike): onnxruntime's ExecutionMode ORT_SEQUENTIAL, which the
# DirectML EP requires; log severity 4, fatal only (failures come back as exceptions; ORT's log would only repeat them).
SESSION_EXECUTION_MODE, SESSION_LOG_SEVERITY = 0, 4
_NO_KERNEL = re.compile(r"Could not find an implementation for (\S+?) node")
# With CPU fallback disabled, a node that no allowed EP can take is left unassigned and the session fails here.
_UNASSIGNED = re.compile(r"Provider type for (\S+) node with name '([^']*)' is not set")
# Level-1 rules that would delete our nodes before they are placed (DirectML runs at level 2).
KEEP_NODES = (
    "EliminateIdentity",
    "EliminateSlice",
    "NoopElimination",
    "ConstantFolding",
    "EliminateDropout",
    "LayerNormFusion",  # would turn the MVN decomposition into LayerNormalization (DirectML's MVN2) at level 2
    "SimplifiedLayerNormFusion",
)


def optimization_level(ep: EpSpec) -> int:
    return ENABLE_EXTENDED if facts(ep).fuses_activations else DISABLE_ALL


def config_entries(ep: EpSpec, strict: bool) -> dict[str, str]:
    """The session config entries for ``ep`` (``strict``: CPU fallback disabled, where the EP allows it)."""
    entries = {RECORD_ASSIGNMENT: "1"}
    if strict and not facts(ep).fallback:
        entries[DISABLE_CPU_FALLBACK] = "1"
    return entries


def one_line(error: BaseException) -> str:
    return " ".join(str(error).split())


def input_types(lowering: Lowering) -> str:
    graph = onnx.load_from_string(lowering.model).graph
    return ", ".join(
        f"{onnx.helper.tensor_dtype_to_np_dtype(i.type.tensor_type.elem_type)} {i.name}" for i in graph.input
    )


_WRAPPER_WOULD = "; onnxruntime's Python wrapper would fall back"
_NOT_STARTED = re.compile(r"could not create a session for \S+ \((.*)\)" + re.escape(_WRAPPER_WOULD))


def wrapper_fallback(lowering: Lowering, ep_name: str, text: str) -> NotSupported:
    """The EP could not create the session: onnxruntime's Python wrapper would print "Falling back to
    ['CPUExecutionProvider'] and retrying" and run every node on the CPU; here that is NOT_SUPPORTED, saying so."""
    return NotSupported(
        f"{ep_name} could not create a session for {lowering.name} ({text}){_WRAPPER_WOULD} "
        f"to {CPU} and retry (switched off here): {', '.join(lowering.nodes)} would have run on {CPU}",
        EP_NOT_STARTED,
    )


def not_started_cause(message: str) -> str:
    """The EP's own error inside ``wrapper_fallback``'s message (the message itself where it is not one)."""
    found = _NOT_STARTED.search(message)
    return found.group(1) if found else message


def missing_kernel(text: str, lowering: Lowering, ep_name: str) -> NotSupported | None:
    """NotSupported when onnxruntime's message says no kernel took a node (on the EP, or on any EP allowed)."""
    missing = _NO_KERNEL.search(text)
    if missing:
        return NotSupported(f"no {missing.group(1)} kernel for {input_types(lowering)} on {ep_name}: {text}")
    unassigned = _UNASSIGNED.search(text)
    if unassigned:
        return NotSupported(
            f"{ep_name} took no {unassigned.group(1)} node '{unassigned.group(2)}' for "
            f"{input_types(lowering)} (no kernel; CPU fallback is disabled): {text}"
        )
    return None


def refusal(
    text: str, lowering: Lowering, ep_name: str, diagnose: Callable[[], Exception], not_started: Callable[[], bool]
) -> Exception:
    """What a refused session (onnxruntime's one-line ``text``) means, decided in one order for both paths, in this
    process and in the DirectML runner, so that the same refusal gets the same verdict on either: a missing kernel;
    nodes the EP left to the CPU (``diagnose`` names them); an EP that did not start (``not_started``: each path
    tells it its own way, asked only here, since in this process that costs a probe session); else an ERROR."""
    missing = missing_kernel(text, lowering, ep_name)
    if missing is not None:
        return missing
    if FALLBACK_REFUSED in text:
        return diagnose()
    if not_started():
        return wrapper_fallback(lowering, ep_name, text)
    return ExecutionError(f"onnxruntime could not create a {ep_name} session for {lowering.name}: {text}")

"""Run a Lowering on one execution provider and prove, from onnxruntime's own record, where every node ran.

Nothing may silently run on the CPU instead:

- ``session.record_ep_graph_assignment_info=1``: ``get_provider_graph_assignment_info()`` lists each node's EP
  (recorded when the graph is partitioned; ``get_providers()`` proves nothing). Any node on another EP than the
  requested one is NotSupported.
- For a non-CPU EP, ``session.disable_cpu_ep_fallback=1`` makes session creation fail instead of handing nodes to
  the CPU (a second session, never run, then names them); the Python wrapper's "Falling back to CPU and retrying"
  (onnxruntime_inference_collection.py) is switched off with ``enable_fallback=0`` and ``disable_fallback()``. The
  CPU EP itself refuses ``disable_cpu_ep_fallback``, so CPU runs only record.
- Graph optimizations are off (we test kernels, not rewrites), except on DirectML: level 2 lets its EP fuse the
  activation into MVN1 (DmlExecutionProvider/src/GraphTransformer.cpp). Level-1 rules that delete nodes are disabled
  there; a node still deleted before partitioning is absent from the record and ran nowhere.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
import onnxruntime as ort  # type: ignore[import-untyped]
from onnx import TensorProto, helper

from conformance.ep.dml_here import dml_through_wine
from conformance.ep.errors import ExecutionError, NotSupported, ProcessDied
from conformance.ep.graph import IR_VERSION, Array
from conformance.ep.lower import Lowering
from conformance.ep.placement import check_placement, lowering_op_types, recorded_placement
from conformance.ep.providers import EpSpec, ep_options, facts, is_plugin, plugin_devices
from conformance.ep.rules import (
    DISABLE_CPU_FALLBACK,  # noqa: F401 - tests read the rules' names here
    KEEP_NODES,
    RECORD_ASSIGNMENT,  # noqa: F401
    SESSION_EXECUTION_MODE,
    SESSION_LOG_SEVERITY,
    config_entries,
    missing_kernel,
    one_line,
    optimization_level,
    refusal,
    wrapper_fallback,
)
from conformance.ep.sessions import REFUSALS, Opened, Sessions
from conformance.ep.wine.client import Runners
from conformance.ep.wine.session import open_in_runner

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Execution:
    outputs: Mapping[str, Array]  # keyed by DML output name
    placement: Mapping[str, str]  # node name -> EP name that ran it, from onnxruntime's record


def _session_options(ep: EpSpec, devices: Sequence[Any], strict: bool, threads: int | None = None) -> Any:
    options = ort.SessionOptions()
    if threads is not None:  # else onnxruntime's default: one intra-op thread per physical core
        options.intra_op_num_threads = threads
    options.log_severity_level = SESSION_LOG_SEVERITY
    for key, value in config_entries(ep, strict).items():
        options.add_session_config_entry(key, value)
    options.graph_optimization_level = ort.GraphOptimizationLevel(optimization_level(ep))
    if facts(ep).sequential:  # required by the DirectML EP
        options.execution_mode = ort.ExecutionMode(SESSION_EXECUTION_MODE)
        options.enable_mem_pattern = False
    if devices:
        options.add_provider_for_devices(list(devices), ep_options(ep))
    return options


def _providers(ep: EpSpec) -> list[tuple[str, dict[str, str]]] | None:
    if is_plugin(ep):
        return None  # given by add_provider_for_devices
    options = ep_options(ep)
    for key, value in facts(ep).provider_defaults.items():  # CUDA's device_id
        options.setdefault(key, value)
    return [(ep.name, options)]


def _session(lowering: Lowering, ep: EpSpec, devices: Sequence[Any], strict: bool, threads: int | None) -> Any:
    session = ort.InferenceSession(
        lowering.model,
        _session_options(ep, devices, strict, threads),
        providers=_providers(ep),
        enable_fallback=0,
        disabled_optimizers=list(KEEP_NODES),
    )
    session.disable_fallback()
    return session


def _diagnose(
    lowering: Lowering, ep: EpSpec, ep_name: str, devices: Sequence[Any], error: Exception, threads: int | None
) -> Exception:
    """Why a fallback-free session was refused: which nodes the EP left to the CPU, or that it did not start."""
    try:
        session = _session(lowering, ep, devices, strict=False, threads=threads)
    except Exception as second:  # onnxruntime's own exception types
        missing = missing_kernel(one_line(second), lowering, ep_name)
        if missing is not None:
            return missing
        return ExecutionError(f"{ep_name} refused {lowering.name}: {one_line(error)} ({one_line(second)})")
    if not is_plugin(ep) and ep_name not in session.get_providers():
        return wrapper_fallback(lowering, ep_name, one_line(error))
    try:
        check_placement(recorded_placement(session), lowering.nodes, ep_name)
    except (NotSupported, ExecutionError) as found:
        return found
    return ExecutionError(f"{ep_name} refused {lowering.name}: {one_line(error)}")


def _create(lowering: Lowering, ep: EpSpec, ep_name: str, devices: Sequence[Any], threads: int | None) -> Any:
    """The fallback-free session, or the refusal raised. On an EP whose context lives while its sessions do, after a
    refusal the attempts share a never-run keeper's context until one succeeds, which is made again in a fresh one
    (sessions.py's RefusalContext)."""
    refusals = REFUSALS if facts(ep).context_per_live_sessions else None
    sharing = refusals is not None and refusals.keeper is not None
    try:
        session = _session(lowering, ep, devices, strict=True, threads=threads)
    except Exception as error:  # onnxruntime's own exception types
        if refusals is not None and refusals.keeper is None:  # the next attempts, and this diagnosis, share it
            refusals.keeper = _never_run(ep, devices)
        refusal = _refusal(lowering, ep, ep_name, devices, error, threads)
    else:
        if not sharing:
            return session
        del session  # made in the keeper's context, and it would run there: the keeper closed, then made afresh
        REFUSALS.keeper = None
        return _create(lowering, ep, ep_name, devices, threads)
    # Raised outside the except block, so that onnxruntime's exception (whose traceback holds the half-created
    # session and its thread pool) is not kept as the context; and not kept in this frame, which would put the
    # refusal in a cycle with its own traceback. Either would keep them until a garbage collection.
    try:
        raise refusal
    finally:
        del refusal


def _refusal(
    lowering: Lowering, ep: EpSpec, ep_name: str, devices: Sequence[Any], error: Exception, threads: int | None
) -> Exception:
    """What a refused session means (rules.refusal), told this process's way: a second session, with fallback
    allowed, names the nodes left to the CPU; a probe session says whether the EP starts (the fallback EP, the
    CPU's, always does)."""
    return refusal(
        one_line(error),
        lowering,
        ep_name,
        diagnose=lambda: _diagnose(lowering, ep, ep_name, devices, error, threads),
        not_started=lambda: not facts(ep).fallback and not _starts(ep, devices),
    )


def _probe_model() -> bytes:
    """One float32 Identity: a session any working EP can create."""
    tensor = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["y"], name="probe")],
        "probe",
        [tensor],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = IR_VERSION
    return bytes(model.SerializeToString())


def _never_run(ep: EpSpec, devices: Sequence[Any]) -> Any:
    """A session of the probe model, on one thread, that is never run (CPU fallback allowed: only the EP's start is
    in question); None where the EP does not start. It says whether the EP starts (``_starts``), and it holds the
    EP's device context for refused attempts (``_create``)."""
    try:
        return ort.InferenceSession(
            _probe_model(), _session_options(ep, devices, strict=False, threads=1), providers=_providers(ep)
        )
    except Exception as error:  # onnxruntime's own exception types: the refusal's diagnosis says what is wrong
        log.debug("%s does not start: %s", ep.name, error)
        return None


def _starts(ep: EpSpec, devices: Sequence[Any]) -> bool:
    """Whether the EP can create a session at all. A case whose session fails on an EP that starts is an ERROR of
    that case, not an EP that never started."""
    return _never_run(ep, devices) is not None


def _target(ep: EpSpec) -> tuple[str, list[Any]]:
    """The EP name to expect in the record, and the plugin devices (empty for a built-in EP)."""
    if not is_plugin(ep):
        available = ort.get_available_providers()
        if ep.name not in available:
            raise ExecutionError(
                f"{ep.name} is not available in this onnxruntime build (available: {', '.join(available)})"
            )
        return ep.name, []
    try:
        name, devices = plugin_devices(ep)
    except Exception as error:  # ImportError or onnxruntime's registration error
        raise ExecutionError(f"the {ep.alias} plugin EP could not be loaded: {one_line(error)}") from error
    if not devices:
        raise ExecutionError(f"the {ep.alias} plugin EP ({name}) found no device on this machine")
    return name, devices[:1]


def open_session(lowering: Lowering, ep: EpSpec, threads: int | None = None, runners: Runners | None = None) -> Opened:
    """A fallback-free session for ``lowering`` on ``ep``; NotSupported or ExecutionError saying why there is none.

    ``threads``: the session's intra-op threads (None: onnxruntime's default). ``runners``: the process's DirectML
    runner, where DirectML is not native (a runner of its own otherwise, for this session alone)."""
    if dml_through_wine(ep):
        return open_in_runner(lowering, ep, runners if runners is not None else Runners(), threads)
    ep_name, devices = _target(ep)
    session = _create(lowering, ep, ep_name, devices, threads)
    return Opened(session, ep_name, tuple(recorded_placement(session)))


def run_session(opened: Opened, lowering: Lowering) -> dict[str, Array]:
    """``lowering``'s feeds through an open session of its model; outputs keyed by DML output name."""
    names = list(lowering.outputs)
    try:
        values = opened.session.run(names, dict(lowering.feeds))
    except ProcessDied:  # the runner that ran it died (or hung): a CRASH (TIMEOUT) of the case, not its ERROR
        raise
    except Exception as error:  # onnxruntime's own exception types
        raise ExecutionError(f"{lowering.name} failed on {opened.ep_name}: {one_line(error)}") from error
    return {lowering.outputs[name]: np.asarray(value) for name, value in zip(names, values, strict=True)}


def execute(lowering: Lowering, ep: EpSpec, sessions: Sessions | None = None, threads: int | None = None) -> Execution:
    """Run ``lowering`` on ``ep`` alone; outputs keyed by DML output names, with each node's recorded EP.

    ``sessions`` keeps sessions for reuse: a case whose model is one already opened on ``ep`` runs in that session.
    ``threads``: a new session's intra-op threads (None: onnxruntime's default)."""
    sessions = sessions if sessions is not None else Sessions(capacity=0)
    opened = sessions.open(lowering, ep, partial(open_session, threads=threads, runners=sessions.runners))
    op_types = lowering_op_types(lowering)
    if opened.known is not None:  # checked before running, where the record comes with the session
        placement = check_placement(opened.known, lowering.nodes, opened.ep_name, op_types)
        return Execution(outputs=run_session(opened, lowering), placement=placement)
    outputs = run_session(opened, lowering)  # the DirectML runner's record comes from the run's profile
    return Execution(
        outputs=outputs, placement=check_placement(opened.records, lowering.nodes, opened.ep_name, op_types)
    )

"""Sessions in the DirectML runner, opened with the rules every session follows (rules.py) and refused in the same
words as in-process sessions; where their nodes ran is read from the profile of each session's first run.

Where the options pick no adapter (no ``device_id``, ``performance_preference`` or ``device_filter``), ``device_id=0``
is named, because onnxruntime would enumerate adapters through DXCore, which Wine does not have; ``device_id`` takes
DXGI's adapter of that index, the one ``describe`` describes. With ``device_id`` alone the runner hands every session
its one device for that adapter (``SessionOptionsAppendExecutionProvider_DML1``); with other options it appends the EP
as onnxruntime-directml's Python API does, through ``SessionOptionsAppendExecutionProvider("DML", options)``, which
makes a device per session (dmlrunner.c says why the shared device is the default).
"""

from __future__ import annotations

import json
import sys
import weakref
from collections.abc import Mapping, Sequence

from conformance.ep.directml import build_of
from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.graph import Array
from conformance.ep.lower import Lowering
from conformance.ep.placement import PlacedNode, check_placement
from conformance.ep.providers import DML, EpSpec, ep_options
from conformance.ep.rules import (
    DISABLE_OPTIMIZERS,
    KEEP_NODES,
    config_entries,
    one_line,
    optimization_level,
    refusal,
)
from conformance.ep.sessions import Opened
from conformance.ep.wine import protocol
from conformance.ep.wine.client import Runner, Runners

ADAPTER_OPTIONS = ("device_id", "performance_preference", "device_filter")


def provider_options(ep: EpSpec) -> dict[str, str]:
    """The EP's options as the runner appends them: ``device_id=0`` where they pick no adapter (see above); the
    harness's own options (which DLLs, which adapter's runner) stay out, since they chose the runner, not the EP's
    behaviour."""
    options = ep_options(ep)
    if sys.platform == "win32" and build_of(ep.options).reference:  # WARP, which no EnumAdapters1 index names
        return {key: value for key, value in options.items() if key not in ADAPTER_OPTIONS} | {
            "device_id": str(protocol.ADAPTER_WARP)
        }
    if not any(key in options for key in ADAPTER_OPTIONS):
        options["device_id"] = "0"
    return options


def adapter_index(ep: EpSpec) -> int:
    """The DXGI adapter the EP's session uses, which describe describes (0 where DXCore would choose)."""
    return int(provider_options(ep).get("device_id", "0"))


def placement_from_profile(text: str) -> list[PlacedNode]:
    """Each node of onnxruntime's profile (its "Node" events: ``<node>_kernel_time`` with args.op_name and
    args.provider), once, in the order first seen. DirectML records its partition as one ``DmlFusedNode_*``."""
    events = json.loads(text)
    seen: dict[str, PlacedNode] = {}
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or event.get("cat") != "Node":
            continue
        args = event.get("args") or {}
        name = str(event.get("name", "")).removesuffix("_kernel_time")
        if name and "provider" in args and name not in seen:
            seen[name] = PlacedNode(name, str(args.get("op_name", "")), str(args["provider"]))
    return list(seen.values())


class RunnerSession:
    """A session in the runner, used as an onnxruntime InferenceSession is (``run``); where its nodes ran is known
    after its first run (``records``), from the profile that run ended. Closed in the runner when dropped."""

    def __init__(self, runner: Runner, number: int) -> None:
        self.runner, self.number = runner, number
        self.records: tuple[PlacedNode, ...] | None = None
        weakref.finalize(self, runner.release, number)

    def run(self, names: Sequence[str], feeds: Mapping[str, Array]) -> list[Array]:
        try:
            reply = self.runner.run(self.number, feeds, names)
        except protocol.Refused as error:
            raise ExecutionError(one_line(error)) from None
        if reply.profile is not None:
            self.records = tuple(placement_from_profile(reply.profile))
        elif reply.no_profile is not None:
            raise ExecutionError(f"the session ran, but its profile (where its nodes ran) was lost: {reply.no_profile}")
        return reply.outputs


def _config(ep: EpSpec, strict: bool) -> dict[str, str]:
    return config_entries(ep, strict) | {DISABLE_OPTIMIZERS: ";".join(KEEP_NODES)}


def open_model(runner: Runner, model: bytes, ep: EpSpec, strict: bool, threads: int | None = None) -> RunnerSession:
    """A session of ``model`` in ``runner`` under the session rules (``strict``: CPU fallback disabled);
    protocol.Refused where the EP or onnxruntime refused it."""
    number = runner.open(model, provider_options(ep), _config(ep, strict), optimization_level(ep), threads or 0)
    return RunnerSession(runner, number)


def _diagnose(runner: Runner, lowering: Lowering, ep: EpSpec, text: str, threads: int | None) -> Exception:
    """Which nodes the EP left to the CPU: a session with fallback allowed, run once on the case's own inputs so
    that its profile says where each node ran."""
    try:
        session = open_model(runner, lowering.model, ep, strict=False, threads=threads)
        session.run(list(lowering.outputs), lowering.feeds)
        check_placement(session.records or (), lowering.nodes, DML)
    except (NotSupported, ExecutionError) as found:
        return found
    except protocol.Refused as second:
        return ExecutionError(f"{DML} refused {lowering.name}: {text} ({one_line(second)})")
    return ExecutionError(f"{DML} refused {lowering.name}: {text}")


def _refusal(runner: Runner, lowering: Lowering, ep: EpSpec, error: protocol.Refused, threads: int | None) -> Exception:
    """What a refused session means (rules.refusal), told the runner's way: a session with fallback allowed, run
    once, names the nodes left to the CPU; the runner's ST_EP status says the EP did not start."""
    text = one_line(error)
    return refusal(
        text,
        lowering,
        DML,
        diagnose=lambda: _diagnose(runner, lowering, ep, text, threads),
        not_started=lambda: error.status == protocol.ST_EP,
    )


def open_in_runner(lowering: Lowering, ep: EpSpec, runners: Runners, threads: int | None = None) -> Opened:
    """A fallback-free DirectML session for ``lowering`` in this process's runner; NotSupported or ExecutionError
    saying why there is none (RunnerDied where the runner ended)."""
    runner = runners.get(build_of(ep.options))
    try:
        session = open_model(runner, lowering.model, ep, strict=True, threads=threads)
    except protocol.Refused as error:
        refusal = _refusal(runner, lowering, ep, error, threads)
    else:
        return Opened(session, DML, None)
    raise refusal

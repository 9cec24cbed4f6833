"""Where DirectML runs on this machine, and the DirectML a run uses: onnxruntime-directml in this process on Windows,
the runner under Wine elsewhere (conformance/ep/wine, imported only when a run names DirectML); DirectML's operator
API (``dmlop``) in the runner everywhere, natively on Windows (docs/architecture.md says why ``dml`` stays
in-process there)."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from conformance.ep import directml as dml
from conformance.ep.providers import EpSpec, facts, uses_directml
from conformance.ep_table import Runner

if TYPE_CHECKING:  # the Wine client is imported only when a run names DirectML off Windows
    from conformance.ep.wine.client import Runners


def dml_through_wine(ep: EpSpec) -> bool:
    """Whether ``ep`` runs in the DirectML runner (conformance/ep/wine), as its row's ``runner`` says: ``dml`` is
    native on Windows (onnxruntime-directml in this process) and in the runner under Wine elsewhere; DirectML's
    operator API (``dmlop``) is the runner's alone, which on Windows runs natively (chain.find_chain picks its
    chain); so is ``dml`` on the reference adapter."""
    runner = facts(ep).runner
    if runner is Runner.OFF_WINDOWS and dml.build_of(ep.options).reference:
        return True  # WARP on Windows: an adapter the runner makes its device on, which onnxruntime's options cannot
    return runner is Runner.ALWAYS or (runner is Runner.OFF_WINDOWS and sys.platform != "win32")


def directml_for(eps: Sequence[EpSpec], runners: Runners | None = None) -> dict[str, dml.DirectML]:
    """The DirectML each of ``eps`` that is DirectML uses (version, feature level), by its ``--ep`` text. On Windows,
    the installed onnxruntime-directml's (``dml``) or the native runner's on its DLLs (``dmlop``); elsewhere the
    runner's under Wine for that EP's build; the runner's device answers the feature level (ChainMissing, one line,
    where a piece of that chain is absent or a build option is given on Windows: nothing has run yet).

    ``runners``: a worker's own, kept for its cases, so that describing starts its runner and makes the device its
    first session uses (a warm-up, worker.py); None: runners started for this alone and stopped after."""
    chosen = [ep for ep in eps if uses_directml(ep)]
    if not any(dml_through_wine(ep) for ep in chosen):
        return {ep.text: _installed(ep) for ep in chosen}
    from conformance.ep.wine.client import Runners

    used = runners if runners is not None else Runners()  # one runner per build, however many of the EPs use it
    try:
        # On Windows ``dml`` beside ``dmlop`` is still the installed package in this process
        return {ep.text: _through_wine(ep, used) if dml_through_wine(ep) else _installed(ep) for ep in chosen}
    finally:
        if used is not runners:  # started for this alone
            used.close()


def check_chains(eps: Sequence[EpSpec]) -> None:
    """Each DirectML EP's chain found, its pieces there, its runner built and its prefix made, without starting a
    runner (that is the workers' describe, which warms their runners); ChainMissing (one line) naming the first
    piece missing, or a build option given on Windows. What only a runner can tell (an adapter index not on this
    machine, a build that does not start) is told by the describe."""
    from conformance.ep.wine.chain import find_chain

    found: set[dml.Build] = set()  # each build's chain once, however many EPs use it (dml and dmlop)
    for ep in eps:
        if not uses_directml(ep):
            continue
        if sys.platform == "win32":
            _refuse_build_options(ep)
        build = dml.build_of(ep.options)
        if dml_through_wine(ep) and build not in found:
            find_chain(build=build)
            found.add(build)


def _installed(ep: EpSpec) -> dml.DirectML:
    """Windows: the onnxruntime-directml installed in this process; it cannot pick another build."""
    _refuse_build_options(ep)
    return dml.detect()


def _refuse_build_options(ep: EpSpec) -> None:
    """Windows, in this process or in the native runner alike: the installed onnxruntime-directml is the one build;
    ChainMissing (one line) where ``ep`` picks another."""
    from conformance.ep.wine.chain import ChainMissing

    picked = [key for key in dml.DLL_OPTIONS if key in ep.options]
    if picked:
        raise ChainMissing(
            f"{', '.join(picked)}= picks DLLs for the runner under Wine; on Windows the installed onnxruntime-directml "
            "is used (pip install onnxruntime-directml==VERSION for another)"
        )


def _through_wine(ep: EpSpec, runners: Runners) -> dml.DirectML:
    """The DirectML of ``ep``'s build as its runner's device answers; ChainMissing where that build cannot start, or
    where the adapter its options pick (``device_id``) is not on this machine (naming those that are)."""
    from conformance.ep.errors import InfrastructureError, ProcessDied
    from conformance.ep.wine.chain import ChainMissing
    from conformance.ep.wine.device import chain_identity, directml_of
    from conformance.ep.wine.protocol import ProtocolError, Refused
    from conformance.ep.wine.session import adapter_index

    if sys.platform == "win32":  # the runner runs natively there, on the installed package's DLLs
        _refuse_build_options(ep)
    build = dml.build_of(ep.options)
    index = adapter_index(ep)
    try:
        runner = runners.get(build)
        described = runner.describe(index)
    except (ProcessDied, ProtocolError, Refused, InfrastructureError) as error:  # the chain is there, the build not
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        raise ChainMissing(
            f"DirectML {build.directml} with onnxruntime.dll {build.onnxruntime} could not describe the device "
            f"({first}): run dmlconf doctor; builds: directml={', '.join(dml.DIRECTML_VERSIONS)}, "
            f"ort={', '.join(dml.ONNXRUNTIME_DLL_VERSIONS)}"
        ) from None
    adapters = [a for a in described.get("adapters") or [] if isinstance(a, dict)]
    if not any(adapter.get("index") == index for adapter in adapters):
        here = "; ".join(f"{a.get('index')}: {a.get('description') or '?'}" for a in adapters) or "none"
        raise ChainMissing(f"{ep.text}: this machine has no DXGI adapter {index}; its adapters: {here}")
    return directml_of(chain_identity(runner.chain, described))

"""Where DirectML runs on this machine, and the DirectML a run uses: onnxruntime-directml in this process on Windows,
the runner under Wine elsewhere (conformance/ep/wine, imported only when a run names DirectML)."""

from __future__ import annotations

import sys

from conformance.ep import directml as dml
from conformance.ep.providers import DML, EpSpec


def dml_through_wine(ep: EpSpec) -> bool:
    """DirectML is native on Windows (onnxruntime-directml in this process); elsewhere it runs in the DirectML
    runner under Wine (conformance/ep/wine)."""
    return ep.name == DML and sys.platform != "win32"


def directml_for(eps: list[EpSpec]) -> dml.DirectML | None:
    """The DirectML a run uses (version, feature level) when one of ``eps`` is DirectML; else None. On Windows, the
    installed onnxruntime-directml's; elsewhere the runner's under Wine, whose device answers the feature level
    (ChainMissing, one line, where a piece of that chain is absent: nothing has run yet)."""
    ep = next((ep for ep in eps if ep.name == DML), None)
    if ep is None:
        return None
    if not dml_through_wine(ep):
        return dml.detect()
    from conformance.ep.errors import ProcessDied  # only for a DirectML run off Windows
    from conformance.ep.wine.chain import ChainMissing
    from conformance.ep.wine.client import Runners
    from conformance.ep.wine.device import describe
    from conformance.ep.wine.protocol import ProtocolError, Refused
    from conformance.ep.wine.session import adapter_index

    runners = Runners()
    try:
        return describe(runners.get(), adapter_index(ep))
    except (ProcessDied, ProtocolError, Refused) as error:  # the chain is there but does not work
        first = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
        raise ChainMissing(f"the DirectML runner could not describe the device ({first}): run dmlconf doctor") from None
    finally:
        runners.close()

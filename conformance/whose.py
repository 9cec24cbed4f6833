"""Whose failure it is: the triage verdicts (a closed set), the rungs of the ladder a failure is re-run on, and the
record triage adds to a failing result (docs/triage.md says how each verdict is reached and what each re-run costs).

Core and light: the readers (report, diff, merge, waivers) name a failure's owner from these records without
importing the code that re-runs cases (conformance/triage/).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from conformance.model import Status


class Whose(Enum):
    """A triage verdict: whose failure a (case, EP) result is, as the re-runs show it (docs/triage.md#verdicts)."""

    DRIVER = "driver"  # fails on the adapter, passes on the reference adapter with the same DirectML.dll
    DIRECTML = "directml"  # fails on the reference adapter too, on both paths
    DIRECTML_REGRESSION = "directml-regression"  # passes with the previous DirectML build on the same adapter
    LOWERING = "onnxruntime-lowering"  # the paths disagree: onnxruntime's graph and DirectML's own operator
    HALF_PRECISION = "half-precision"  # passes with DirectML's half-precision computation off, fails with it on
    METACOMMAND = "metacommand"  # passes with DirectML's metacommands off: the driver's metacommand
    SPEC_OR_ORACLE = "spec-or-oracle"  # fails everywhere, the CPU EP included: the spec's reading or the oracle
    UNDECIDED = "undecided"  # the re-runs could not tell (the why says what was missing)


# What each verdict says, in a report's words (docs/triage.md lists the same).
MEANING: Mapping[Whose, str] = {
    Whose.DRIVER: "the GPU driver: fails on this adapter, passes on the reference adapter with the same DirectML.dll",
    Whose.DIRECTML: "DirectML: fails on the reference adapter too",
    Whose.DIRECTML_REGRESSION: "a DirectML regression: passes with the previous DirectML build",
    Whose.LOWERING: "onnxruntime's lowering: its graph and DirectML's own operator disagree on the same device",
    Whose.HALF_PRECISION: "DirectML's half-precision flag: passes with half-precision computation off",
    Whose.METACOMMAND: "a metacommand: passes with DirectML's metacommands off",
    Whose.SPEC_OR_ORACLE: "the spec's reading or the oracle: fails everywhere, the CPU EP included",
    Whose.UNDECIDED: "undecided: the re-runs could not tell",
}


class Rung(Enum):
    """A rung of the ladder: what a re-run changes against the failing result."""

    REFERENCE = "reference"  # the reference adapter (WARP, lavapipe), the same DirectML.dll and path
    OTHER_PATH = "other-path"  # dml against dmlop: onnxruntime's lowering against DirectML's own operator
    HALF_PRECISION = "half-precision"  # DirectML's half-precision flag: off where the EP has an option for it, else
    # on, on the other path (onnxruntime's DirectML EP sets it on every all-float16 operator)
    METACOMMANDS = "metacommands"  # DirectML's metacommands off
    BUILD = "build"  # the previous DirectML build (the version matrix's)
    CPU = "cpu"  # onnxruntime's CPU EP
    GOLDENS = "goldens"  # the case's golden outputs, checked against the oracle


@dataclass(frozen=True)
class Rerun:
    """One re-run of a failing case: the rung, the ``--ep`` text it ran with, the adapter it ran on (where the path
    names one), and its verdict; ``status`` None where it could not run at all (``message`` says why), or where it
    would run on the failing result's own adapter (``same_device``: the device is the reference adapter itself)."""

    rung: Rung
    ep: str
    status: Status | None
    failure_kind: str | None = None
    adapter: str = ""
    message: str = ""
    metrics: Mapping[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    same_device: bool = False


@dataclass(frozen=True)
class Triage:
    """What triage found for one failing result: the verdict, why (one sentence from the evidence), and the
    evidence. The result's own status is never changed by it."""

    verdict: Whose
    why: str
    reruns: tuple[Rerun, ...] = ()
    seconds: float = 0.0

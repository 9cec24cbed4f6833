"""A refused session means the same on both paths: in this process (ep/execute.py) and in the DirectML runner
(ep/wine/session.py) the same refusal text gets the same verdict, in the order rules.py's docstring gives."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from conformance.cases.layouts import case_layouts
from conformance.ep import execute
from conformance.ep.errors import ExecutionError, NotSupported
from conformance.ep.lower import Lowering, lower
from conformance.ep.providers import CPU, DML, parse_ep
from conformance.ep.wine import protocol, session
from conformance.model import AxisDirection, Case, DataType, FeatureLevel, Operator, TensorSpec, TopK1Desc

# onnxruntime's own words for each kind of refusal (rules.py's patterns are not used to make them).
MISSING = "Could not find an implementation for TopK(11) node with name 'TopK_0'"
FALLBACK = (
    "This session contains graph nodes that are assigned to the default CPU EP, but fallback to CPU EP has been "
    "explicitly disabled by the user."
)
OTHER = "DmlOperatorTopk.cpp(42): the parameter is incorrect"
TEXTS = {"missing": MISSING, "fallback": FALLBACK, "missing+fallback": f"{MISSING}; {FALLBACK}", "other": OTHER}
DIAGNOSED = "the diagnosis: TopK_0 was left to the CPU"


def _lowering() -> Lowering:
    desc = TopK1Desc(TensorSpec((1, 1, 3, 4), DataType.FLOAT32), 3, 2, AxisDirection.DECREASING)
    x = np.arange(12, dtype=np.float32).reshape(1, 1, 3, 4)
    case = Case("t", "t.yaml", Operator.TOP_K1, FeatureLevel(3, 1), desc, layouts=case_layouts(Operator.TOP_K1, desc))
    lowered = lower(case, {"InputTensor": x}, CPU)
    assert isinstance(lowered, Lowering)
    return lowered


def _verdict(error: Exception) -> tuple[str, str, str | None]:
    return type(error).__name__, str(error), getattr(error, "kind", None)


def _in_process(monkeypatch: pytest.MonkeyPatch, lowering: Lowering, text: str, starts: bool) -> Exception:
    monkeypatch.setattr(execute, "_starts", lambda ep, devices: starts)
    monkeypatch.setattr(execute, "_diagnose", lambda *args: NotSupported(DIAGNOSED, "placed_elsewhere"))
    return execute._refusal(lowering, parse_ep("dml"), DML, [], RuntimeError(text), None)


def _in_runner(monkeypatch: pytest.MonkeyPatch, lowering: Lowering, text: str, starts: bool) -> Exception:
    monkeypatch.setattr(session, "_diagnose", lambda *args: NotSupported(DIAGNOSED, "placed_elsewhere"))
    status = protocol.ST_ORT if starts else protocol.ST_EP
    runner: Any = None  # only the diagnosis, stubbed here, would use it
    return session._refusal(runner, lowering, parse_ep("dml"), protocol.Refused(status, text), None)


@pytest.mark.parametrize("starts", [True, False], ids=["ep-starts", "ep-not-started"])
@pytest.mark.parametrize("which", list(TEXTS))
def test_both_paths_give_a_refusal_the_same_verdict(monkeypatch: pytest.MonkeyPatch, which: str, starts: bool) -> None:
    lowering, text = _lowering(), TEXTS[which]
    here = _in_process(monkeypatch, lowering, text, starts)
    there = _in_runner(monkeypatch, lowering, text, starts)
    assert _verdict(here) == _verdict(there)
    # The documented order: a missing kernel, then nodes left to the CPU, then an EP that did not start, else ERROR.
    if "missing" in which:
        assert isinstance(here, NotSupported) and here.kind == "no_kernel"
        assert str(here).startswith("no TopK(11) kernel for float32 InputTensor on ")
    elif which == "fallback":
        assert str(here) == DIAGNOSED
    elif not starts:
        assert isinstance(here, NotSupported) and here.kind == "ep_not_started"
        assert str(here).startswith(f"{DML} could not create a session for {lowering.name} ({text})")
    else:
        assert isinstance(here, ExecutionError)
        assert str(here) == f"onnxruntime could not create a {DML} session for {lowering.name}: {text}"

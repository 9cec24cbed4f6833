"""The execution-path seam: the EP table (conformance/ep_table.py) describes each EP once, every table path has its
implementation (run/paths.py), every front end lists the table's EPs, and nothing outside conformance/ep/ compares
EP names."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from conformance import ep_table
from conformance.cli.main import main
from conformance.ep.memory import RUNNER_DISPATCH, RUNNER_SESSION, memory_path
from conformance.ep.providers import parse_ep
from conformance.ep_table import KNOWN_EPS, Flag, PathKind
from conformance.model import IN_PROCESS
from conformance.run.execution_path import Died, Failed, HarnessFault, Unsupported, failure_of
from conformance.run.operator_api import OperatorApiPath
from conformance.run.paths import PATHS, path_for

REPO = Path(__file__).resolve().parent.parent
KINDS = (
    ep_table.WHOLE_NUMBER,
    ep_table.ANY_TEXT,
    ep_table.DIRECTML_DLL,
    ep_table.ONNXRUNTIME_DLL,
    ep_table.MULTIPLE_OF_16,
    ep_table.BATCH_SIZE,
)


def test_every_path_of_the_table_has_its_implementation() -> None:
    assert set(PATHS) == set(PathKind)
    assert isinstance(path_for(parse_ep("dmlop")), OperatorApiPath)
    assert path_for(parse_ep("TensorrtExecutionProvider")) is PATHS[PathKind.ONNXRUNTIME]  # outside the table
    assert path_for(parse_ep("/opt/ep/libfoo.so")) is PATHS[PathKind.ONNXRUNTIME]


def test_the_table_names_each_ep_once_and_each_row_holds_together() -> None:
    for field in ("alias", "name", "label"):
        values = [getattr(ep, field).lower() for ep in KNOWN_EPS]
        assert len(values) == len(set(values)), field
    assert [ep.alias for ep in KNOWN_EPS if ep.fallback] == ["cpu"]
    ranks = [ep.default_rank for ep in KNOWN_EPS if ep.default_rank is not None]
    assert len(ranks) == len(set(ranks))
    for ep in KNOWN_EPS:
        for key, values in ep.options.items():
            assert isinstance(values, tuple | Flag) or values in KINDS, (ep.alias, key)
        for rule in ep.exclusive:
            assert {rule.key, *rule.others} <= ep.options.keys(), ep.alias
        assert (ep.plugin_module is None) or (ep.package is not None), ep.alias
        # The operator API binds a case's buffers as laid out; onnxruntime's EPs get packed tensors.
        assert ep.binds_layouts is (ep.path is PathKind.OPERATOR_API), ep.alias


@pytest.mark.parametrize(
    ("text", "expected"), [("dml", RUNNER_SESSION), ("dmlop", RUNNER_DISPATCH), ("cpu", IN_PROCESS)]
)
def test_the_memory_path_follows_the_table_s_path_and_runner(text: str, expected: object) -> None:
    # Off Windows (where this suite runs) both DirectML EPs are served by the runner, each by its own path.
    assert memory_path(parse_ep(text)) == expected


def test_an_execution_s_exceptions_are_typed_outcomes() -> None:
    from conformance.ep.errors import ExecutionError, NotSupported, ProcessDied, ProcessHung

    assert failure_of(ProcessHung("no answer")) == Died("no answer", hung=True)
    assert failure_of(ProcessDied("gone")) == Died("gone")
    assert failure_of(NotSupported("no kernel", "no_kernel")) == Unsupported("no kernel", "no_kernel")
    assert failure_of(ExecutionError("said no")) == Failed("said no")
    fault = failure_of(KeyError("x"))
    assert isinstance(fault, HarnessFault) and fault.message == "KeyError: 'x'"


def test_run_help_lists_every_ep_of_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert f"--ep EP {ep_table.aliases_text()}, a full EP name" in help_text
    assert "dmlop" in ep_table.aliases_text()


@pytest.mark.parametrize("page", ["README.md", "docs/cli.md"])
def test_the_documented_ep_list_is_the_table_s(page: str) -> None:
    text = " ".join((REPO / page).read_text(encoding="utf-8").split())
    listed = ", ".join(f"`{ep.alias}`" for ep in KNOWN_EPS)
    assert listed in text, f"{page}: its --ep list is not {listed}"


def _metrics() -> Any:
    spec = importlib.util.spec_from_file_location("house_metrics", REPO / "benchmarks" / "house_metrics.py")
    assert spec is not None and spec.loader is not None
    metrics = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(metrics)
    return metrics


def test_nothing_but_the_ep_table_compares_ep_names() -> None:
    assert _metrics().ep_comparisons(REPO) == []


@pytest.mark.parametrize(
    "line",
    [
        'if ep.name == "CUDAExecutionProvider":',
        "if spec.name != DMLOP:",
        'if ep_name in ("DmlExecutionProvider", "CPUExecutionProvider"):',
        'if alias == "dmlop":',
        "if DML == ep.name:",
    ],
)
def test_a_planted_ep_name_comparison_is_found(tmp_path: Path, line: str) -> None:
    module = tmp_path / "conformance" / "run" / "planted.py"
    module.parent.mkdir(parents=True)
    module.write_text(f"def f(ep, ep_name, spec, alias):\n    {line}\n        pass\n", encoding="utf-8")
    (tmp_path / "reference").mkdir()
    assert _metrics().ep_comparisons(tmp_path) == ["conformance/run/planted.py:2"]

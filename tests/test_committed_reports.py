"""The GPU runs committed under reports/: each names its device and versions, proves where every executed result
ran, and has every non-PASS result explained in reports/README.md under its EP's heading."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conformance.gate.summary import placement_proof
from conformance.model import Status
from conformance.results import read_results

REPORTS = Path(__file__).resolve().parent.parent / "reports"
RUNS = sorted(path.parent for path in REPORTS.glob("*/results.json"))
EXPLAINED_ELSEWHERE = frozenset({Status.PASS, Status.INVALID})  # INVALID: a negative case rejected as it should be


def _sections(text: str) -> dict[str, str]:
    """README text under each "### <ep label>" heading, up to the next heading."""
    parts = re.split(r"^#{2,3} (.+)$", text, flags=re.MULTILINE)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_there_are_committed_gpu_runs_for_cuda_and_webgpu() -> None:
    names = {run.name for run in RUNS}
    assert any(name.endswith("-cuda") for name in names) and any(name.endswith("-webgpu") for name in names), names


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_run_names_its_device_and_software(run: Path) -> None:
    env, results = read_results(str(run / "results.json"))
    assert results
    # DirectML under Wine names the adapter it ran on through its chain (lavapipe is no GPU the OS lists)
    chains = [ep["directml"]["chain"] for ep in env["eps"] if (ep.get("directml") or {}).get("chain")]
    assert env["gpus"] or chains
    assert all(gpu["name"] and gpu["driver_version"] for gpu in env["gpus"])
    assert env["onnxruntime"] and env["onnxruntime_packages"]
    assert env["command"][:2] == ["dmlconf", "run"]
    assert {ep["label"] for ep in env["eps"]} == {r.ep for r in results}
    summary = (run / "summary.md").read_text(encoding="utf-8")
    if env["gpus"]:
        assert f"- GPU: {env['gpus'][0]['name']} (driver {env['gpus'][0]['driver_version']}" in summary
    for chain in chains:
        assert chain["transport"] == "wine+vkd3d-proton" and chain["wine"] and chain["directml_dll"]
        assert chain["dml_feature_level"] and chain["vkd3d_proton"]["version"]
        assert f"on '{chain['adapter']['description']}'" in summary.replace("\\", "")


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_executed_result_ran_on_its_own_ep(run: Path) -> None:
    env, results = read_results(str(run / "results.json"))
    placement = placement_proof(env, results)
    assert placement.unproven == ()
    assert placement.proven == sum(r.status in (Status.PASS, Status.FAIL, Status.QUALITY_WARNING) for r in results)
    names = {ep["label"]: ep["name"] for ep in env["eps"]}
    assert all(set(r.placement.values()) == {names[r.ep]} for r in results if r.status is Status.PASS)


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_non_pass_result_is_explained(run: Path) -> None:
    sections = _sections((REPORTS / "README.md").read_text(encoding="utf-8"))
    _, results = read_results(str(run / "results.json"))
    unexplained = sorted(
        {
            f"{r.ep}: {r.case}"
            for r in results
            if r.status not in EXPLAINED_ELSEWHERE and f"`{r.case.split('[')[0]}`" not in sections.get(r.ep, "")
        }
    )
    assert unexplained == []


NOT_SUPPORTED_KINDS = frozenset({"no_kernel", "placed_elsewhere", "ep_not_started", "feature_level"})


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_not_supported_says_why(run: Path) -> None:
    _, results = read_results(str(run / "results.json"))
    kinds = {r.failure_kind for r in results if r.status is Status.NOT_SUPPORTED}
    assert kinds <= NOT_SUPPORTED_KINDS
    assert all(r.message for r in results if r.status is Status.NOT_SUPPORTED)

"""The GPU runs committed under reports/: each names its device and versions, proves where every executed result
ran, and has every non-PASS result explained in reports/README.md under its EP's heading. The DirectML version
matrix's diffs are what ``dmlconf diff`` gives of its results today."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from conformance.environment import Environment
from conformance.ep.directml import NEWEST_BUILD
from conformance.gate.diff import diff_runs, only_ep
from conformance.gate.summary import placement_proof
from conformance.model import Status
from conformance.report.diff import render_diff_markdown
from conformance.results import Result, read_results

REPORTS = Path(__file__).resolve().parent.parent / "reports"
# A run's results.json, or results.json.gz where many EPs made it large (the version matrix).
RUNS = sorted({path.parent for pattern in ("*/results.json", "*/results.json.gz") for path in REPORTS.glob(pattern)})
MATRIX = REPORTS / "h100-dml-versions"
EXPLAINED_ELSEWHERE = frozenset({Status.PASS, Status.INVALID})  # INVALID: a negative case rejected as it should be


def _sections(text: str) -> dict[str, str]:
    """README text under each "### <ep label>" heading, up to the next heading."""
    parts = re.split(r"^#{2,3} (.+)$", text, flags=re.MULTILINE)
    return {title.strip(): body for title, body in zip(parts[1::2], parts[2::2], strict=True)}


def _section(sections: dict[str, str], ep: str) -> str:
    """The README text explaining ``ep``'s results: its own heading's, else its EP's ("dml" for
    "dml:directml=1.13.1": one DirectML build among several, whose findings the EP's heading explains)."""
    return sections.get(ep, sections.get(ep.split(":")[0], ""))


def _read(run: Path) -> tuple[Environment, tuple[Result, ...]]:
    plain = run / "results.json"
    document = read_results(str(plain if plain.is_file() else run / "results.json.gz"))
    return document.environment, document.results


def test_there_are_committed_gpu_runs_for_cuda_and_webgpu() -> None:
    names = {run.name for run in RUNS}
    assert any(name.endswith("-cuda") for name in names) and any(name.endswith("-webgpu") for name in names), names


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_run_names_its_device_and_software(run: Path) -> None:
    env, results = _read(run)
    assert results
    # DirectML under Wine names the adapter it ran on through its chain (lavapipe is no GPU the OS lists)
    chains = [ep.chain for ep in env.eps if ep.chain is not None]
    assert env.gpus or chains
    assert all(gpu.name and gpu.driver_version for gpu in env.gpus)
    assert env.onnxruntime and env.onnxruntime_packages
    assert env.command[:2] == ("dmlconf", "run")
    assert {ep.label for ep in env.eps} == {r.ep for r in results}
    summary = (run / "summary.md").read_text(encoding="utf-8")
    if env.gpus:
        assert f"- GPU: {env.gpus[0].name} (driver {env.gpus[0].driver_version}" in summary
    for chain in chains:
        assert chain.transport == "wine+vkd3d-proton" and chain.wine and chain.directml_dll
        assert chain.dml_feature_level and chain.vkd3d_proton and chain.vkd3d_proton.version
        assert chain.adapter and f"on '{chain.adapter.description}'" in summary.replace("\\", "")


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_executed_result_ran_on_its_own_ep(run: Path) -> None:
    env, results = _read(run)
    placement = placement_proof(env, results)
    assert placement.unproven == ()
    assert placement.proven == sum(r.status in (Status.PASS, Status.FAIL, Status.QUALITY_WARNING) for r in results)
    names = {ep.label: ep.name for ep in env.eps}
    assert all(set(r.placement.values()) == {names[r.ep]} for r in results if r.status is Status.PASS)


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_non_pass_result_is_explained(run: Path) -> None:
    sections = _sections((REPORTS / "README.md").read_text(encoding="utf-8"))
    _, results = _read(run)
    unexplained = sorted(
        {
            f"{r.ep}: {r.case}"
            for r in results
            if r.status not in EXPLAINED_ELSEWHERE and f"`{r.case.split('[')[0]}`" not in _section(sections, r.ep)
        }
    )
    assert unexplained == []


NOT_SUPPORTED_KINDS = frozenset({"no_kernel", "placed_elsewhere", "ep_not_started", "feature_level"})


@pytest.mark.parametrize("run", RUNS, ids=lambda path: path.name)
def test_every_not_supported_says_why(run: Path) -> None:
    _, results = _read(run)
    kinds = {r.failure_kind for r in results if r.status is Status.NOT_SUPPORTED}
    assert kinds <= NOT_SUPPORTED_KINDS
    assert all(r.message for r in results if r.status is Status.NOT_SUPPORTED)


def _matrix_diffs() -> list[tuple[str, str, str]]:
    """(file, old EP, new EP) of each diff the version matrix commits: each DirectML build against the next, beside
    the newest onnxruntime.dll; and each build run beside an older onnxruntime.dll against the same DirectML beside
    the newest."""
    env, _ = _read(MATRIX)
    builds = {
        ep.label: (str(ep.directml.version), str(ep.chain.onnxruntime))
        for ep in env.eps
        if ep.directml is not None and ep.chain is not None
    }
    newest = NEWEST_BUILD.onnxruntime
    by_directml = sorted(
        (tuple(int(part) for part in directml.split(".")), label)
        for label, (directml, ort) in builds.items()
        if ort == newest
    )
    same_ort = [label for _, label in by_directml]
    pairs = [
        (f"diff-directml-{builds[old][0]}-to-{builds[new][0]}.md", old, new)
        for old, new in itertools.pairwise(same_ort)
    ]
    for label, (directml, ort) in builds.items():
        if ort != newest:
            twin = next(other for other in same_ort if builds[other][0] == directml)
            pairs.append((f"diff-ort-{ort}-to-{newest}-directml-{directml}.md", label, twin))
    return pairs


def test_the_version_matrix_has_at_least_three_directml_builds_and_a_diff_for_each_step() -> None:
    env, _ = _read(MATRIX)
    versions = {ep.chain.directml_dll for ep in env.eps if ep.chain is not None}
    assert len(versions) >= 3
    committed = sorted(path.name for path in MATRIX.glob("diff-*.md"))
    assert committed == sorted(name for name, _, _ in _matrix_diffs())


@pytest.mark.parametrize("name, old, new", _matrix_diffs() if MATRIX.is_dir() else [])
def test_each_committed_version_diff_is_what_diff_gives_today(name: str, old: str, new: str) -> None:
    env, results = _read(MATRIX)
    (old_results, old_env), (new_results, new_env) = only_ep(results, env, old), only_ep(results, env, new)
    expected = render_diff_markdown(diff_runs(old_results, new_results, old_env, new_env, by_case=True))
    assert (MATRIX / name).read_text(encoding="utf-8") == expected, f"regenerate {name} with dmlconf diff --markdown"

"""Triage: the ladder each failing DirectML result is re-run on, the verdict its re-runs give, and both front-ends
(``run --triage``, ``dmlconf triage``) on the genuine DirectML on lavapipe.

The verdict rules' expected values are the documented rules (docs/triage.md#how-a-verdict-is-reached) applied by
hand to hand-made re-runs; the DirectML tests' expected verdicts are what lavapipe shows (the committed lavapipe run:
reports/README.md) for cases chosen for it.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.ep.providers import parse_ep
from conformance.model import Status
from conformance.results import Result, read_results
from conformance.triage.decide import decide
from conformance.triage.ladder import steps
from conformance.whose import MEANING, Rerun, Rung, Whose

REPO = Path(__file__).resolve().parent.parent
LAVAPIPE = "llvmpipe (LLVM 15.0.6, 256 bits)"
GPU = "NVIDIA H100 80GB HBM3"


def _failing(ep: str = "dmlop", kind: str = "tolerance") -> Result:
    return Result("cases/x.yaml::a", "MEAN_VARIANCE_NORMALIZATION1", ep, Status.FAIL, kind, "FLOAT16")


def _rerun(rung: Rung, ep: str, status: Status | None, adapter: str = GPU, same: bool = False) -> Rerun:
    kind = "tolerance" if status is Status.FAIL else None
    return Rerun(rung, ep, status, kind, adapter, same_device=same)


PASS, FAIL, DECLINED = Status.PASS, Status.FAIL, Status.NOT_EXPRESSIBLE


def _ladder(**changed: Status | None) -> list[Rerun]:
    """A dmlop failure's re-runs on a GPU, every one failing but those ``changed``."""
    plan = {
        "reference": (Rung.REFERENCE, "dmlop:reference=1", LAVAPIPE),
        "other": (Rung.OTHER_PATH, "dml", GPU),
        "half": (Rung.HALF_PRECISION, "dmlop:allow_half_precision=0", GPU),
        "meta": (Rung.METACOMMANDS, "dmlop:disable_metacommands=1", GPU),
        "build": (Rung.BUILD, "dmlop:directml=1.15.2,ort=1.24.4", GPU),
        "cpu": (Rung.CPU, "cpu", ""),
    }
    return [_rerun(rung, ep, changed.get(name, FAIL), adapter) for name, (rung, ep, adapter) in plan.items()]


@pytest.mark.parametrize(
    ("reruns", "verdict"),
    [
        (_ladder(), Whose.SPEC_OR_ORACLE),  # fails everywhere, the CPU EP included
        # ... but the case's goldens, written from the spec, vouch for the oracle: the reference rung decides
        ([*_ladder(), Rerun(Rung.GOLDENS, "goldens", PASS)], Whose.DIRECTML),
        (_ladder(cpu=DECLINED), Whose.DIRECTML),  # the CPU EP declines it: the reference rung decides
        (_ladder(meta=PASS), Whose.METACOMMAND),
        (_ladder(half=PASS), Whose.HALF_PRECISION),
        (_ladder(other=PASS), Whose.LOWERING),
        (_ladder(reference=PASS), Whose.DRIVER),
        (_ladder(build=PASS, cpu=PASS), Whose.DIRECTML_REGRESSION),
        (_ladder(cpu=PASS), Whose.DIRECTML),
        (_ladder(reference=None, cpu=PASS), Whose.UNDECIDED),  # the reference could not run: no verdict
        (_ladder(reference=DECLINED, cpu=PASS), Whose.UNDECIDED),
    ],
)
def test_each_verdict_follows_from_its_reruns(reruns: list[Rerun], verdict: Whose) -> None:
    found, why = decide(_failing(), reruns)
    assert found is verdict, why
    assert why


def test_the_most_specific_change_names_the_failure_before_the_reference_does() -> None:
    # Passing with metacommands off and on the reference too: the metacommand (the driver's) is the sharper answer.
    assert decide(_failing(), _ladder(meta=PASS, reference=PASS))[0] is Whose.METACOMMAND
    # The other path passing outranks the reference: the fault is where the paths differ.
    assert decide(_failing(), _ladder(other=PASS, reference=PASS))[0] is Whose.LOWERING


def test_dml_half_precision_is_read_from_the_other_path_with_and_without_the_flag() -> None:
    # onnxruntime sets the flag on every all-float16 operator and nothing turns it off: dmlop without the flag passes,
    # dmlop with it fails as dml does (the H100's SCALED_TANH and SCALED_ELU).
    reruns = [
        _rerun(Rung.REFERENCE, "dml:reference=1", PASS, LAVAPIPE),
        _rerun(Rung.OTHER_PATH, "dmlop", PASS),
        _rerun(Rung.HALF_PRECISION, "dmlop:allow_half_precision=1", FAIL),
    ]
    found, why = decide(_failing("dml"), reruns)
    assert found is Whose.HALF_PRECISION and "allow_half_precision=1" in why
    # With the flag dmlop passes too: then it is the lowering, not the flag.
    reruns[2] = _rerun(Rung.HALF_PRECISION, "dmlop:allow_half_precision=1", PASS)
    assert decide(_failing("dml"), reruns)[0] is Whose.LOWERING


def test_on_the_reference_itself_the_verdict_says_the_rung_could_not_separate_them() -> None:
    reruns = [_rerun(Rung.REFERENCE, "dmlop:reference=1", None, LAVAPIPE, same=True), _rerun(Rung.CPU, "cpu", PASS)]
    found, why = decide(_failing(), reruns)
    assert found is Whose.DIRECTML
    assert "reference adapter itself" in why and "cannot separate" in why


def test_goldens_and_harness_errors_need_no_rerun() -> None:
    assert decide(_failing(kind="golden_mismatch"), [])[0] is Whose.SPEC_OR_ORACLE
    assert decide(_failing(kind="harness"), [])[0] is Whose.UNDECIDED


def test_every_verdict_has_its_meaning_and_a_row_in_docs() -> None:
    text = (REPO / "docs" / "triage.md").read_text(encoding="utf-8")
    for verdict in Whose:
        assert verdict in MEANING
        assert f"| `{verdict.value}` |" in text


def _ladder_of(ep: str, float16: bool = False) -> list[tuple[str, str]]:
    return [(step.rung.value, step.ep.text) for step in steps(parse_ep(ep), float16)]


def test_the_ladder_changes_one_thing_at_a_time() -> None:
    assert _ladder_of("dmlop") == [
        ("reference", "dmlop:reference=1"),
        ("other-path", "dml"),
        ("metacommands", "dmlop:disable_metacommands=1"),
        ("build", "dmlop:directml=1.15.2,ort=1.24.4"),
        ("cpu", "cpu"),
    ]
    # dml on float16: onnxruntime computes with the half-precision flag, so the other path is asked with it too.
    assert ("half-precision", "dmlop:allow_half_precision=1") in _ladder_of("dml", float16=True)
    assert not any(rung == "half-precision" for rung, _ in _ladder_of("dml", float16=False))
    # dmlop with the flag: turned off on the EP itself; the options of the failing EP are kept on every rung.
    flagged = _ladder_of("dmlop:allow_half_precision=1,device_id=0")
    assert ("half-precision", "dmlop:allow_half_precision=0,device_id=0") in flagged
    assert ("reference", "dmlop:allow_half_precision=1,reference=1") in flagged  # the reference has one adapter
    # Metacommands already off: no rung changes them; the oldest DirectML has no earlier build.
    oldest = _ladder_of("dml:disable_metacommands=true,directml=1.13.1,ort=1.24.4")
    assert not any(rung in ("metacommands", "build") for rung, _ in oldest)


def test_a_triage_record_survives_results_json(tmp_path: Path) -> None:
    from conformance.results import write_results
    from conformance.whose import Triage

    record = Triage(Whose.DRIVER, "passes on lavapipe", tuple(_ladder(reference=PASS)), 1.5)
    result = Result("cases/x.yaml::a", "TOP_K1", "dmlop", Status.FAIL, "values", triage=record)
    write_results(str(tmp_path / "results.json"), {}, [result, _failing("dml")])
    back = read_results(str(tmp_path / "results.json")).results
    assert back[0].triage == record and back[1].triage is None
    assert "triage" not in json.loads((tmp_path / "results.json").read_text())["results"][1]


def _dmlconf(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


def test_triage_of_a_run_without_directml_failures_says_so(tmp_path: Path) -> None:
    from conformance.results import write_results

    write_results(str(tmp_path / "results.json"), {}, [_failing("cpu")])
    done = _dmlconf("triage", str(tmp_path / "results.json"))
    assert done.returncode == 0, done.stderr
    assert "nothing to triage" in done.stdout
    (tmp_path / "results.json.gz").write_bytes(gzip.compress((tmp_path / "results.json").read_bytes()))
    refused = _dmlconf("triage", str(tmp_path / "results.json.gz"))
    assert refused.returncode == 2 and "gunzip it first" in refused.stderr and "Traceback" not in refused.stderr


# On lavapipe (the reference adapter itself): the verdicts this machine can reach.
LOWERING_CASE = "cases/mean_variance_normalization1/library.yaml::axes-subsets[0-FLOAT16-true]"
DIRECTML_CASE = "cases/found/mean_variance_normalization1.yaml::float16-variance-below-the-smallest-half"


@pytest.fixture(scope="module")
def triaged(chain_ready: None, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[tuple[str, str], Result]]:
    """Each case run alone on dmlop with --triage (dml is its other-path rung): the second run's folder, and both
    runs' results by (case, EP)."""
    results: dict[tuple[str, str], Result] = {}
    for case in (LOWERING_CASE, DIRECTML_CASE):
        folder = tmp_path_factory.mktemp("triaged")
        done = _dmlconf(
            "run", case.partition("::")[0], "-k", case, "--ep", "dmlop", "--triage",
            "--report-dir", str(folder), "-j", "0",
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr  # the failures stay failures
        assert "triage: re-running" in done.stdout
        results |= {(r.case, r.ep): r for r in read_results(str(folder / "results.json")).results}
    return folder, results


def test_the_lowering_verdict_on_lavapipe(triaged: tuple[Path, dict[tuple[str, str], Result]]) -> None:
    """FLOAT16 MVN1 over axes onnxruntime lowers to a float32 graph: dml passes where DirectML's float16 operator
    fails, on the same DirectML.dll and device."""
    _, results = triaged
    failing = results[(LOWERING_CASE, "dmlop")]
    assert failing.status is Status.FAIL  # never changed by triage
    assert failing.triage is not None and failing.triage.verdict is Whose.LOWERING, failing.triage
    other = next(r for r in failing.triage.reruns if r.rung is Rung.OTHER_PATH)
    assert other.ep == "dml" and other.status is Status.PASS and "llvmpipe" in other.adapter


def test_directml_s_own_verdict_on_lavapipe(triaged: tuple[Path, dict[tuple[str, str], Result]]) -> None:
    """FLOAT16, Epsilon 0, inputs ±2^-13: DirectML's float16 MVN1 divides by sqrt(0) on both paths, with the flags
    changed too; lavapipe is the reference itself, which the verdict says."""
    _, results = triaged
    failing = results[(DIRECTML_CASE, "dmlop")]
    assert failing.triage is not None and failing.triage.verdict is Whose.DIRECTML, failing.triage
    reference = next(r for r in failing.triage.reruns if r.rung is Rung.REFERENCE)
    assert reference.same_device and reference.status is None
    assert "cannot separate" in failing.triage.why
    goldens = next(r for r in failing.triage.reruns if r.rung is Rung.GOLDENS)
    assert goldens.status is Status.PASS  # the case's goldens vouch for the oracle's ±1


def test_triage_afterwards_gives_the_run_s_verdicts(
    triaged: tuple[Path, dict[tuple[str, str], Result]], tmp_path: Path
) -> None:
    folder, _ = triaged
    results = {(r.case, r.ep): r for r in read_results(str(folder / "results.json")).results}
    data = json.loads((folder / "results.json").read_text())
    for result in data["results"]:
        result.pop("triage", None)
    (tmp_path / "results.json").write_text(json.dumps(data))
    done = _dmlconf("triage", str(tmp_path / "results.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    again = {(r.case, r.ep): r for r in read_results(str(tmp_path / "results.json")).results}
    assert {key: (r.status, r.triage.verdict if r.triage else None) for key, r in again.items()} == {
        key: (r.status, r.triage.verdict if r.triage else None) for key, r in results.items()
    }


def test_triage_refuses_results_from_another_adapter(
    triaged: tuple[Path, dict[tuple[str, str], Result]], tmp_path: Path
) -> None:
    folder, _ = triaged
    text = (folder / "results.json").read_text().replace(LAVAPIPE, GPU)
    (tmp_path / "results.json").write_text(text)
    done = _dmlconf("triage", str(tmp_path / "results.json"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"ran on {GPU}; here it runs on {LAVAPIPE}" in done.stderr


def test_the_reference_adapter_is_warp_natively_and_lavapipe_s_runner_under_wine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On Windows the reference is WARP, an adapter no EnumAdapters1 index names (the runner's ADAPTER_WARP); under
    Wine it is the one adapter of lavapipe's own runner. (No Windows machine here: the runner's side compiles and its
    constant is pinned by test_runner_protocol.py.)"""
    from conformance.ep.wine import protocol, session

    reference = parse_ep("dmlop:reference=1")
    assert session.adapter_index(reference) == 0
    monkeypatch.setattr(session.sys, "platform", "win32")
    assert session.adapter_index(reference) == protocol.ADAPTER_WARP == 65535
    assert session.provider_options(parse_ep("dml:reference=1,device_id=1")) == {"device_id": "65535"}
    assert session.provider_options(parse_ep("dml:device_id=1")) == {"device_id": "1"}

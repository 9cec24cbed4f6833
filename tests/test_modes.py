"""DirectML's execution modes (issue 38): ``--modes`` runs each mode as an EP of its own, and a case whose outputs
differ bit for bit between two modes of one EP is a FAIL ``mode_mismatch`` naming both modes and the first differing
element, whatever each mode's verdict against the oracle."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conformance.cases.fingerprint import value_hashes
from conformance.cli.main import main
from conformance.ep import dmlop
from conformance.ep.providers import parse_ep
from conformance.model import MODE_MISMATCH, Status
from conformance.results import Result
from conformance.run.modes import family, has_family, keep_values, mode_equality, prune_values, with_modes

REPO = Path(__file__).resolve().parent.parent


def test_modes_adds_one_ep_per_other_value_of_each_mode() -> None:
    texts = [ep.text for ep in with_modes([parse_ep("cpu"), parse_ep("dmlop:device_id=0")])]
    assert texts == [
        "cpu",
        "dmlop:device_id=0",
        "dmlop:device_id=0,queue=compute",
        "dmlop:device_id=0,compile=graph",
        "dmlop:device_id=0,owned_by_dml=1",
        "dmlop:device_id=0,binding_offset=16",
        "dmlop:device_id=0,batch=8",
        "dmlop:device_id=0,reuse_compiled=0",
    ]
    # From a mode given, the default is the other value; an EP named twice runs once.
    given = with_modes([parse_ep("dmlop:queue=compute"), parse_ep("dmlop")])
    assert "dmlop:queue=direct" in [ep.text for ep in given]
    assert len({ep.text for ep in given}) == len(given)


def test_a_family_is_one_ep_with_its_other_options_alike() -> None:
    assert family(parse_ep("dmlop:queue=compute")) == family(parse_ep("dmlop"))
    assert family(parse_ep("dmlop:disable_metacommands=1")) != family(parse_ep("dmlop"))
    assert family(parse_ep("cpu")) is None
    assert has_family([parse_ep("dmlop"), parse_ep("dmlop:compile=graph")])
    assert not has_family([parse_ep("dmlop"), parse_ep("dmlop:disable_metacommands=1"), parse_ep("cpu")])


@pytest.mark.parametrize("value", ["8", "-16", "x", "1e3"])
def test_a_binding_offset_must_be_a_multiple_of_16(value: str) -> None:
    with pytest.raises(ValueError, match=r"binding_offset=.*expected a multiple of 16"):
        parse_ep(f"dmlop:binding_offset={value}")
    assert parse_ep("dmlop:binding_offset=0").options["binding_offset"] == "0"


def _result(ep: str, outputs: Mapping[str, np.ndarray], status: Status = Status.PASS) -> Result:
    return Result("cases/x.yaml::a", "SLICE1", ep, status, values_sha256=value_hashes(outputs))


def test_a_mode_whose_outputs_differ_is_a_mode_mismatch_naming_the_first_differing_element(tmp_path: Path) -> None:
    values = str(tmp_path / "values")
    base = {"OutputTensor": np.arange(12, dtype=np.float32).reshape(3, 4)}
    altered = {"OutputTensor": base["OutputTensor"].copy()}
    altered["OutputTensor"][1, 2] = np.nextafter(np.float32(6), np.float32(7))  # one ulp: within any tolerance
    altered["OutputTensor"][2, 3] = 0
    runs = [
        ("dmlop", base),
        ("dmlop:queue=compute", {"OutputTensor": base["OutputTensor"].copy()}),
        ("dmlop:compile=graph", altered),
        ("dmlop:disable_metacommands=1", altered),  # another family: compared with nothing
    ]
    results = [_result(ep, outputs) for ep, outputs in runs]
    for (_, outputs), result in zip(runs, results, strict=True):
        keep_values(values, outputs, result.values_sha256 or {})
    judged, evidence = mode_equality(results, values)
    assert [r.status for r in judged] == [Status.PASS, Status.PASS, Status.FAIL, Status.PASS]
    mismatch = judged[2]
    assert mismatch.failure_kind == MODE_MISMATCH
    assert "compile=graph (dmlop:compile=graph) against compile=operator (dmlop)" in mismatch.message
    assert "2 of 12 element(s) differ, first at [1, 2]: 6.000000476837158 (0x40C00001) against 6.0 (0x40C00000)" in (
        mismatch.message
    )
    assert "(against the oracle: PASS)" in mismatch.message
    assert mismatch.details["mode_mismatch"] == {"against": "dmlop", "outputs": ["OutputTensor"]}
    # The two outputs the mismatch names stay as its evidence; the rest go.
    assert prune_values(values, evidence) == 2
    kept = {path.stem for path in (tmp_path / "values").iterdir()}
    assert kept == {*(results[0].values_sha256 or {}).values(), *(results[2].values_sha256 or {}).values()}


def test_a_mismatch_without_kept_values_names_the_hashes() -> None:
    results = [
        _result("dmlop", {"OutputTensor": np.zeros(3, np.float16)}),
        _result("dmlop:binding_offset=16", {"OutputTensor": np.ones(3, np.float16)}, Status.FAIL),
    ]
    judged, _ = mode_equality(results, None)
    assert judged[1].failure_kind == MODE_MISMATCH and "values_sha256" in judged[1].message
    assert judged[0] is results[0]


def test_a_deliberately_altered_output_in_one_mode_fails_the_run_as_a_mode_mismatch(
    chain_ready: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Both modes really run on DirectML (lavapipe in CI); the COMPUTE queue's read-back output is then altered in one
    element, as a driver that raced a queue would, before the harness judges it."""
    real = dmlop.dispatch

    def altered(*args: Any, **kwargs: Any) -> dmlop.Dispatched | dmlop.DescriptorRefused:
        done = real(*args, **kwargs)
        ep = args[1]
        if isinstance(done, dmlop.Dispatched) and dmlop.dispatch_mode(ep).compute_queue:
            name = "OutputTensor"
            data = bytearray(done.buffers[name])
            data[64] ^= 0x01  # the first element's lowest byte: the binding starts 64 bytes in (GUARD_BYTES)
            return dmlop.Dispatched({**done.buffers, name: bytes(data)}, done.reply, done.operator, done.owned)
        return done

    monkeypatch.setattr(dmlop, "dispatch", altered)
    case = "cases/slice1/spec_examples.yaml"
    code = main(["run", case, "--ep", "dmlop", "--ep", "dmlop:queue=compute", "-j", "0", "--report-dir", str(tmp_path)])
    assert code == 1
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    by_ep: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_ep.setdefault(r["ep"], []).append(r)
    assert {r["status"] for r in by_ep["dmlop"]} == {"PASS"}
    compute = by_ep["dmlop:queue=compute"]
    assert {(r["status"], r["failure_kind"]) for r in compute} == {("FAIL", MODE_MISMATCH)}
    for r in compute:
        assert "queue=compute (dmlop:queue=compute) against queue=direct (dmlop)" in r["message"]
        assert "first at [0, 0" in r["message"]  # the first element, whatever the output's rank
    summary = (tmp_path / "summary.md").read_text()
    assert "## Execution modes" in summary and "| dmlop:queue=compute | queue=compute |" in summary
    # The evidence: each mismatched output and the defaults' kept once.
    assert len(list((tmp_path / "values").iterdir())) == 2 * len(compute)


@pytest.mark.parametrize(
    "selection",
    [
        ["cases/top_k1/spec_examples.yaml", "cases/slice1/spec_examples.yaml"],
        [f"cases/{op}/layouts.yaml" for op in ("top_k1", "slice1", "mean_variance_normalization1")]
        + ["-k", "padded-rows"],  # a strided input per operator (rows padded past their elements)
    ],
    ids=["spec-examples", "strided-per-operator"],
)
def test_the_spec_examples_and_a_strided_case_per_operator_run_in_every_mode(
    chain_ready: None, tmp_path: Path, selection: list[str]
) -> None:
    """Every mode of dmlop executes each case, its outputs compared with the defaults' (the committed waiver file
    gates what DirectML is known to do, as reports/README.md says under its dmlop heading)."""
    waivers = str(REPO / "reports" / "known-failures.yaml")
    code = main(
        ["run", *selection, "--ep", "dmlop", "--modes", "--waivers", waivers, "-j", "2", "--report-dir", str(tmp_path)]
    )
    results = json.loads((tmp_path / "results.json").read_text())["results"]
    cases = {r["case"] for r in results}
    eps = {r["ep"] for r in results}
    assert eps == {ep.text for ep in with_modes([parse_ep("dmlop")])}
    assert len(results) == len(cases) * len(eps)
    assert all(r["values_sha256"] for r in results), "every case executed, its outputs hashed, in every mode"
    defaults = {
        "queue": "direct",
        "compile": "operator",
        "owned_by_dml": "0",
        "binding_offset": "64",
        "batch": "1",
        "reuse_compiled": "1",
    }
    changes: tuple[dict[str, str], ...] = (
        {},
        {"queue": "compute"},
        {"compile": "graph"},
        {"owned_by_dml": "1"},
        {"binding_offset": "16"},
        {"batch": "8"},
        {"reuse_compiled": "0"},
    )
    expected = {tuple(sorted((defaults | change).items())) for change in changes}
    assert {tuple(sorted(r["directml"]["modes"].items())) for r in results} == expected
    batched = [r["directml"]["dispatches_in_list"] for r in results if r["directml"]["modes"]["batch"] != "1"]
    assert max(batched) > 1, "batch=8 recorded several cases' dispatches in one command list"
    assert code == 0, (tmp_path / "summary.md").read_text()


def test_the_batch_option_takes_what_the_runner_takes() -> None:
    from conformance import ep_table
    from conformance.ep.wine import protocol

    assert ep_table.BATCH_MAX == protocol.DISPATCH_BATCH_MAX
    assert parse_ep(f"dmlop:batch={ep_table.BATCH_MAX}").options["batch"] == str(ep_table.BATCH_MAX)
    for value in ("0", str(ep_table.BATCH_MAX + 1), "two"):
        with pytest.raises(ValueError, match=r"batch=.*expected a whole number from 1 to"):
            parse_ep(f"dmlop:batch={value}")


def test_a_case_s_own_modes_apply_where_the_ep_s_options_leave_them_open() -> None:
    from conformance.ep.dmlop import dispatch_mode

    own = {"binding_offset": "16", "owned_by_dml": "1"}
    assert dispatch_mode(parse_ep("dmlop"), own).binding_offset == 16
    assert dispatch_mode(parse_ep("dmlop"), own).owned_by_dml
    assert dispatch_mode(parse_ep("dmlop:binding_offset=32"), own).binding_offset == 32  # the EP's options win
    assert dispatch_mode(parse_ep("dmlop"), {}).binding_offset == 64


@pytest.mark.parametrize(
    ("modes", "said"),
    [
        ("{binding_offset: 8}", "modes.binding_offset: expected a multiple of 16 (0, 16, 32, ...)"),
        ("{queue: sideways}", "modes.queue: expected one of direct, compute"),
        ("{owned_by_dml: 2}", "modes.owned_by_dml: expected 0, 1, true or false"),
        ("{qeue: compute}", "modes.qeue: unknown field, did you mean queue?"),
    ],
)
def test_a_case_s_modes_are_checked_as_its_ep_checks_them(tmp_path: Path, modes: str, said: str) -> None:
    from conformance.cases.suite import collect

    path = tmp_path / "case.yaml"
    path.write_text(
        "operator: TOP_K1\nfeature_level: '3_1'\ncases:\n  - id: a\n"
        "    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Data: [1, 2, 3, 4]}\n"
        f"    modes: {modes}\n    Axis: 1\n    K: 2\n"
    )
    suite = collect([str(path)])
    problems = [str(problem) for problem in suite.problems]
    assert [problem.split(" (expected one of")[0] for problem in problems] == [f"{path}:6:13: {said}"]


def test_layouts_not_exercised_are_said_in_every_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A strided case on an EP fed packed tensors PASSes, and the console, summary.md, report.html and junit.xml
    each say its layouts were not exercised."""
    case = "cases/slice1/layouts.yaml"
    code = main(["run", case, "-k", "padded-rows[FLOAT32]", "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path)])
    assert code == 0
    said = "layouts not exercised: 1 on cpu result(s) of cases with strides or padding were fed to the EP packed"
    assert said in capsys.readouterr().out
    assert said in (tmp_path / "summary.md").read_text()
    assert said in (tmp_path / "report.html").read_text()
    junit = (tmp_path / "junit.xml").read_text()
    note = "layouts not exercised through onnxruntime: InputTensor"
    assert f'<property name="layouts_not_exercised" value="{note}' in junit


def test_triage_leaves_a_mode_mismatch_to_its_two_modes_outputs() -> None:
    from conformance.triage.rerun import triageable

    failed = Result("cases/x.yaml::a", "SLICE1", "dmlop:compile=graph", Status.FAIL, failure_kind="tolerance")
    assert triageable(failed)
    assert not triageable(replace(failed, failure_kind=MODE_MISMATCH))


def test_a_descriptor_compiled_before_is_dispatched_again_giving_the_same_bits(
    chain_ready: None, tmp_path: Path
) -> None:
    """Six cases whose descriptors are byte for byte one (only their seeds differ): on dmlop the first compiles and
    the others take its compiled operator; on reuse_compiled=0 each compiles its own; mode equality holds the two."""
    cases = tmp_path / "seeds.yaml"
    cases.write_text(
        "operator: TOP_K1\nfeature_level: '3_1'\ncases:\n  - id: seeds\n"
        "    InputTensor: {Sizes: [1, 1, 4, 16], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 0}}\n"
        "    Axis: 3\n    K: 5\n    matrix: {InputTensor.Generator.Seed: [1, 2, 3, 4, 5, 6]}\n"
    )
    out = tmp_path / "out"
    code = main(
        ["run", str(cases), "--ep", "dmlop", "--ep", "dmlop:reuse_compiled=0", "-j", "0", "--report-dir", str(out)]
    )
    assert code == 0
    results = json.loads((out / "results.json").read_text())["results"]
    reused = {(r["case"].rsplit("::", 1)[1], r["ep"]): r["directml"]["compiled_operator_reused"] for r in results}
    assert [reused[(f"seeds[{i}]", "dmlop")] for i in range(1, 7)] == [False] + [True] * 5
    assert not any(reused[(f"seeds[{i}]", "dmlop:reuse_compiled=0")] for i in range(1, 7))
    assert {r["status"] for r in results} == {"PASS"}  # no mode_mismatch: the values are bit for bit the same


def test_pack_1_dispatches_each_case_alone_whatever_the_batch_option(chain_ready: None, tmp_path: Path) -> None:
    """--pack 1 is one case per submission on every path: --rerun-failures runs each failure again that way."""
    case = ["cases/top_k1/spec_examples.yaml", "--ep", "dmlop:batch=8", "-j", "0"]
    for pack, listed in (("64", {4}), ("1", {1})):
        out = tmp_path / pack
        assert main(["run", *case, "--pack", pack, "--report-dir", str(out)]) == 0
        results = json.loads((out / "results.json").read_text())["results"]
        assert {r["directml"]["dispatches_in_list"] for r in results} == listed

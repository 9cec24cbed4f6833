"""Hostile results.json files through every command that reads one (report, diff on either side, merge): each is
refused where it is read, in one line naming the file and what is wrong in it, exit 2, no traceback, nothing written.
"""

from __future__ import annotations

import copy
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conformance.cli.main import main
from conformance.model import Status
from conformance.results import Result, write_results

CHAIN = {
    "transport": "wine+vkd3d-proton",
    "wine": "wine-8.0",
    "vkd3d_proton": {"version": "3.0.1", "folder": "/x", "sha256": {"d3d12.dll": "00"}},
    "vulkan_devices": [{"deviceName": "llvmpipe", "driverName": "llvmpipe"}],
    "vulkan_driver": "llvmpipe Mesa 25.0.7",
    "adapter": {"index": 0, "description": "llvmpipe", "vendor_id": 65541, "device_id": 0},
    "d3d12_feature_level": "11_1",
    "dml_feature_level": "6_4",
    "onnxruntime_dll": "1.24.26.316",
    "directml_dll": "1.15.4.0",
    "onnxruntime": "1.24.4",
    "wheel": "onnxruntime_directml-1.24.4-cp312-cp312-win_amd64.whl",
}
ENV: dict[str, Any] = {
    "command": ["dmlconf", "run", "cases"],
    "gpus": [{"index": "0", "name": "NVIDIA H100 80GB HBM3", "driver_version": "580.159.04"}],
    "onnxruntime": "1.32.0",
    "onnxruntime_packages": {"onnxruntime": "1.32.0"},
    "eps": [
        {
            "label": "dml",
            "name": "DmlExecutionProvider",
            "options": {},
            "devices": [{"type": "GPU", "vendor_id": 4318, "device_id": 9008, "metadata": {"pci_bus_id": "0:6"}}],
            "directml": {"version": "1.15.4", "source": "under Wine", "feature_level": "6_4", "chain": CHAIN},
        }
    ],
    "harness": {"version": "1.0", "git_commit": None, "cases_sha256": "ab", "case_files": 1},
    "started_at": "2026-01-31T12:00:00Z",
    "duration_s": 1.5,
    "skipped_files": [{"path": "cases/b.yaml", "problems": 2}],
    "problems": [],
    "runner_deaths": [{"ep": "dml", "count": 1, "in_packs": 0, "cases": ["cases/t.yaml::a"], "stderr": ["err:d3d12"]}],
}
DETAILS = {
    "tensor": "OutputTensor",
    "shape": [1, 4],
    "positions": [1],
    "mismatches": 1,
    "table": {"headers": ["index", "expected", "actual"], "rows": [["[0, 1]", "1", "2"]]},
    "ulp_histogram": [["0", 3, 0], ["2^10+", 1, 1024]],
    "max_ulp": 2,
}
RESULTS = [
    Result("cases/t.yaml::a", "SLICE1", "dml", Status.PASS, data_type="FLOAT32", metrics={"max_ulp_error": 0}),
    Result("cases/t.yaml::b", "SLICE1", "dml", Status.FAIL, "values", "FLOAT32", details=DETAILS, seconds=0.1),
]
HEADER = '{"schema_version": 1, "environment": {}, "results": '
DEEP = 200_000
Edit = Callable[[dict[str, Any]], Any]


def _set(where: str, value: Any) -> Edit:
    """An edit that puts ``value`` at ``where`` ("environment.eps.0.options") of the document."""

    def edit(document: dict[str, Any]) -> None:
        *parents, last = where.split(".")
        node: Any = document
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


# (name, an edit of a valid document or the file's whole text, what the one line must say)
HOSTILE: list[tuple[str, Edit | str | bytes, str]] = [
    ("top-level list", "[]", "expected an object"),
    ("top-level string", '"results"', "expected an object"),
    ("results a string", _set("results", "everything passed"), "results: expected a list, got text"),
    ("results missing", lambda d: d.pop("results"), "results: missing"),
    ("environment a list", _set("environment", []), "environment: expected an object, got a list"),
    ("a null result", _set("results.1", None), "results[1]: expected an object, got null"),
    ("a result a number", _set("results.0", 7), "results[0]: expected an object, got a number"),
    ("status bogus", _set("results.1.status", "BOGUS"), "results[1].status: 'BOGUS' is not a status"),
    ("status missing", lambda d: d["results"][0].pop("status"), "results[0].status: missing"),
    ("case a number", _set("results.0.case", 5), "results[0].case: expected text, got a number"),
    ("case a lone surrogate", _set("results.0.case", "\ud800x"), "results[0].case: not valid Unicode"),
    ("seconds text", _set("results.0.seconds", "fast"), "results[0].seconds: expected a number, got text"),
    ("metrics a list", _set("results.0.metrics", [1]), "results[0].metrics: expected an object, got a list"),
    ("placement numbers", _set("results.0.placement", {"n": 1}), "results[0].placement.n: expected text"),
    ("repeat status", _set("results.0.repeats", [{"status": "MAYBE"}]), "results[0].repeats[0].status: 'MAYBE'"),
    ("details table text", _set("results.1.details.table", "t"), "results[1].details.table: expected an object"),
    ("details rows", _set("results.1.details.table.rows", [[1]]), "results[1].details.table.rows[0][0]: expected"),
    ("details shape", _set("results.1.details.shape", [-1, 4]), "results[1].details.shape: "),
    ("histogram bucket", _set("results.1.details.ulp_histogram", [["0"]]), "results[1].details.ulp_histogram[0]"),
    ("deep metrics", _set("results.1.metrics", {"m": json.loads("[" * 500 + "]" * 500)}), "nested deeper than"),
    ("schema version", _set("schema_version", 2), "schema_version: 2 is not 1"),
    ("schema version missing", lambda d: d.pop("schema_version"), "schema_version: missing"),
    ("eps a mapping", _set("environment.eps", {"dml": {}}), "environment.eps: expected a list, got an object"),
    ("an EP a string", _set("environment.eps.0", "dml"), "environment.eps[0]: expected an object, got text"),
    ("EP label missing", lambda d: d["environment"]["eps"][0].pop("label"), "environment.eps[0].label: missing"),
    ("options a list", _set("environment.eps.0.options", ["a"]), "environment.eps[0].options: expected an object"),
    ("option a number", _set("environment.eps.0.options", {"a": 1}), "environment.eps[0].options.a: expected text"),
    ("devices text", _set("environment.eps.0.devices", "GPU"), "environment.eps[0].devices: expected a list"),
    ("device id", _set("environment.eps.0.devices.0.vendor_id", "10de"), "devices[0].vendor_id: expected an integer"),
    ("directml text", _set("environment.eps.0.directml", "1.15"), "environment.eps[0].directml: expected an object"),
    ("chain a list", _set("environment.eps.0.directml.chain", []), "directml.chain: expected an object, got a list"),
    ("adapter text", _set("environment.eps.0.directml.chain.adapter", "gpu"), "chain.adapter: expected an object"),
    ("adapter id", _set("environment.eps.0.directml.chain.adapter.vendor_id", "x"), "adapter.vendor_id: expected"),
    ("vkd3d a list", _set("environment.eps.0.directml.chain.vkd3d_proton", [1]), "chain.vkd3d_proton: expected"),
    ("gpus a mapping", _set("environment.gpus", {"name": "x"}), "environment.gpus: expected a list"),
    ("a gpu a string", _set("environment.gpus.0", "H100"), "environment.gpus[0]: expected an object, got text"),
    ("gpu name a number", _set("environment.gpus.0.name", 100), "environment.gpus[0].name: expected text"),
    ("harness text", _set("environment.harness", "1.0"), "environment.harness: expected an object, got text"),
    ("planned text", _set("environment.planned_results", "9"), "environment.planned_results: expected an integer"),
    ("interrupted text", _set("environment.interrupted", "yes"), "environment.interrupted: expected true or false"),
    ("problems text", _set("environment.problems", "bad"), "environment.problems: expected a list, got text"),
    ("skipped file a number", _set("environment.skipped_files", [5]), "environment.skipped_files[0]: expected an"),
    ("duration text", _set("environment.duration_s", "1 min"), "environment.duration_s: expected a number"),
    ("command text", _set("environment.command", "dmlconf run"), "environment.command: expected a list"),
    ("packages a list", _set("environment.onnxruntime_packages", []), "onnxruntime_packages: expected an object"),
    ("deaths a mapping", _set("environment.runner_deaths", {"dml": 4}), "environment.runner_deaths: expected a list"),
    ("death count", _set("environment.runner_deaths.0.count", "4"), "runner_deaths[0].count: expected an integer"),
    ("deaths in packs", _set("environment.runner_deaths.0.in_packs", -1), "runner_deaths[0].in_packs: -1 is below"),
    ("shards numbers", _set("environment.shards", [1]), "environment.shards[0]: expected an object"),
    ("deep arrays", HEADER + "[" * DEEP + "]" * DEEP + "}", "nested too deeply"),
    ("deeper metrics", HEADER + '[{"metrics": ' + "[" * DEEP + "]" * DEEP + "}]}", "nested too deeply"),
    ("NaN", HEADER + '[{"case": "a", "operator": "S", "ep": "e", "status": "PASS", "seconds": NaN}]}', "NaN"),
    ("Infinity", '{"schema_version": 1, "environment": {"duration_s": Infinity}, "results": []}', "Infinity"),
    ("huge integer", '{"schema_version": 1, "environment": {}, "results": [' + "9" * 5000 + "]}", "not a readable"),
    ("not JSON", "{results: PASS}", "not a readable results.json"),
    ("empty", "", "not a readable results.json"),
    ("binary", b"\xff\xfe\x00garbage", "not a readable results.json"),
    ("cut gzip", gzip.compress(b'{"schema_version": 1}')[:15], "not a readable results.json"),
]


def _write_hostile(path: Path, hostile: Edit | str | bytes) -> None:
    if isinstance(hostile, bytes):
        path.write_bytes(hostile)
    elif isinstance(hostile, str):
        path.write_text(hostile, encoding="utf-8")
    else:
        write_results(str(path), ENV, RESULTS)
        document = json.loads(path.read_text(encoding="utf-8"))
        edited = copy.deepcopy(document)
        hostile(edited)
        path.write_text(json.dumps(edited, ensure_ascii=True), encoding="utf-8")


@pytest.fixture
def good(tmp_path: Path) -> Path:
    path = tmp_path / "good" / "results.json"
    path.parent.mkdir()
    write_results(str(path), ENV, RESULTS)
    return path


def test_the_valid_document_the_hostile_ones_start_from_is_read(
    good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(good), "--out-dir", str(tmp_path / "out")]) == 1  # one FAIL, no waivers
    assert main(["diff", str(good), str(good)]) == 0
    assert main(["merge", str(good), "--report-dir", str(tmp_path / "merged")]) == 1
    assert "Traceback" not in capsys.readouterr().err


@pytest.mark.parametrize(("name", "hostile", "says"), HOSTILE, ids=[name for name, _, _ in HOSTILE])
def test_a_hostile_results_json_is_one_line_and_exit_2_in_every_command(
    name: str, hostile: Edit | str | bytes, says: str, good: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "r.json"
    _write_hostile(bad, hostile)
    out_dir, merged = tmp_path / "out", tmp_path / "merged"
    commands = [
        ["report", str(bad), "--out-dir", str(out_dir)],
        ["diff", str(bad), str(good)],
        ["diff", str(good), str(bad), "--markdown", str(tmp_path / "diff.md")],
        ["merge", str(good), str(bad), "--report-dir", str(merged)],
    ]
    for argv in commands:
        code = main(argv)
        out, err = capsys.readouterr()
        assert code == 2, (argv, out, err)
        assert "Traceback" not in out + err
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith(f"dmlconf: {bad}: "), (argv, lines)
        assert says in lines[0], (says, lines[0])
    assert not out_dir.exists() and not merged.exists() and not (tmp_path / "diff.md").exists()


def test_what_a_run_writes_reads_back_and_writes_again_the_same() -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    from conformance.cases.suite import ShardOf
    from conformance.environment import environment_from_json
    from conformance.ep.providers import parse_ep
    from conformance.ep.wine.device import directml_of
    from conformance.run.identity import RunFacts, environment
    from conformance.run.options import RunOptions

    directml = {"dml": directml_of({**CHAIN, "dml_feature_level": "6_4", "directml_dll": "1.15.4.0"})}
    shard = ShardOf(1, 2, ("cases/a.yaml::1", "cases/a.yaml::2", "cases/a.yaml::3"))
    facts = RunFacts(datetime(2026, 1, 31, tzinfo=UTC), 1.5, "ab" * 32, 2, (("cases/b.yaml", 2),), shard)
    made = environment([parse_ep("cpu"), parse_ep("dml")], RunOptions(), ["dmlconf", "run"], directml, (), facts)
    made = replace(made, interrupted=True, planned_results=4, stopped="workers would not start")
    written = json.loads(json.dumps(made.to_json(whole=True)))
    recorded = environment_from_json(written)
    assert recorded == made  # what every report reads is what the run had in hand
    assert [ep.label for ep in recorded.eps] == ["cpu", "dml"] and recorded.eps[1].chain is not None
    assert recorded.harness is not None and recorded.harness.cases_sha256 == "ab" * 32
    assert recorded.skipped_files[0].path == "cases/b.yaml" and recorded.interrupted
    assert recorded.shard is not None and (recorded.shard.index, recorded.shard.count) == (1, 2)
    assert recorded.shard.planned_results == 6  # 3 cases on 2 EPs, before the split
    assert environment_from_json(recorded.to_json()) == recorded
    assert recorded.to_json(whole=True) == written
    # Every value the run writes is kept by the record, however deep: none is dropped (a merge writes the record).
    assert _kept(written, recorded.to_json()) == []


def _kept(written: Any, again: Any, where: str = "environment") -> list[str]:
    """The places where ``again`` lacks a value ``written`` holds (null, false and empty values aside)."""
    if isinstance(written, dict):
        return [
            lost
            for key, value in written.items()
            if value not in (None, False, [], {})
            for lost in (_kept(value, again.get(key), f"{where}.{key}") if isinstance(again, dict) else [where])
        ]
    if isinstance(written, list):
        if not isinstance(again, list) or len(again) != len(written):
            return [where]
        return [
            lost for i, (a, b) in enumerate(zip(written, again, strict=True)) for lost in _kept(a, b, f"{where}[{i}]")
        ]
    return [] if written == again else [where]

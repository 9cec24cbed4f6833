"""results.jsonl (stream.py): what a killed run leaves, read back for --resume."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.ep.directml import DirectML
from conformance.ep.providers import parse_ep
from conformance.model import FeatureLevel, Status
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.survive.stream import Stream, StreamError, read_stream, run_identity

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = REPO / "cases/top_k1/spec_examples.yaml"
PLAN = [("a", "cpu"), ("b", "cpu")]  # the (case, EP) pairs of the results these tests write, in order


def _result(case: str, status: Status) -> Result:
    return Result(case=case, operator="DML_OPERATOR_TOP_K1", ep="cpu", status=status, message=f"{case} said\nso")


@pytest.fixture
def identity() -> dict[str, Any]:
    return run_identity(collect([str(EXAMPLES)]).entries, [parse_ep("cpu")], RunOptions())


def _written(path: Path, identity: dict[str, object], results: list[Result]) -> None:
    stream = Stream(str(path), identity)
    for pair, result in enumerate(results):
        stream.add(pair, result)
    stream.close()


def test_every_line_is_one_record_and_reads_back(tmp_path: Path, identity: dict[str, object]) -> None:
    path = tmp_path / "results.jsonl"
    results = [_result("a", Status.PASS), _result("b", Status.CRASH)]
    _written(path, identity, results)
    lines = path.read_bytes().split(b"\n")
    assert lines[-1] == b"" and len(lines) == 4  # header, two results, and the last newline
    assert json.loads(lines[0]) == {"run": identity}
    assert json.loads(lines[2])["pair"] == 1
    done, keep = read_stream(str(path), identity, PLAN)
    assert done == {0: results[0], 1: results[1]}
    assert keep == path.stat().st_size


@pytest.mark.parametrize("cut", [1, 10, -1])
def test_a_line_cut_short_by_a_kill_is_dropped_and_cut_off_before_appending(
    tmp_path: Path, identity: dict[str, object], cut: int
) -> None:
    path = tmp_path / "results.jsonl"
    results = [_result("a", Status.PASS), _result("b", Status.FAIL)]
    _written(path, identity, results)
    whole = path.read_bytes()
    last = whole.rstrip(b"\n").rfind(b"\n") + 1  # where the last record begins
    path.write_bytes(whole[: last + cut] if cut > 0 else whole[:-1])  # part of it; or all but its newline
    done, keep = read_stream(str(path), identity, PLAN)
    assert done == {0: results[0]}
    assert keep == last
    stream = Stream(str(path), identity, keep)  # --resume appends after the whole lines
    stream.add(1, results[1])
    stream.close()
    assert path.read_bytes() == whole


def test_garbage_after_a_good_line_ends_the_reading(tmp_path: Path, identity: dict[str, object]) -> None:
    path = tmp_path / "results.jsonl"
    _written(path, identity, [_result("a", Status.PASS)])
    path.write_bytes(path.read_bytes() + b'{"pair": 1}\n' + b'{"pair": 2, "result": {}}\n')
    done, _ = read_stream(str(path), identity, PLAN)
    assert list(done) == [0]


def test_another_run_s_stream_is_refused(tmp_path: Path, identity: dict[str, object]) -> None:
    path = tmp_path / "results.jsonl"
    _written(path, identity, [_result("a", Status.PASS)])
    other = run_identity(collect([str(EXAMPLES)]).entries[:3], [parse_ep("cpu")], RunOptions())
    with pytest.raises(StreamError, match="from another run"):
        read_stream(str(path), other, PLAN)


@pytest.mark.parametrize("first", [b"", b'{"run": {"sch', b"not json\n", b'{"pair": 0}\n', b"\xff\xfe\n"])
def test_a_file_that_is_no_stream_is_refused_on_its_first_line(
    tmp_path: Path, identity: dict[str, object], first: bytes
) -> None:
    path = tmp_path / "results.jsonl"
    path.write_bytes(first)
    if first.endswith(b"\n"):
        with pytest.raises(StreamError, match=r"results.jsonl:1:1: not a results.jsonl header|another run"):
            read_stream(str(path), identity, PLAN)
    else:  # nothing or a header cut short: nothing kept, and resuming starts a new file with its header
        assert read_stream(str(path), identity, PLAN) == ({}, 0)
        Stream(str(path), identity, 0).close()
        assert json.loads(path.read_bytes()) == {"run": identity}


def test_the_identity_changes_with_the_case_files_bytes(tmp_path: Path) -> None:
    copy = tmp_path / "cases.yaml"
    copy.write_bytes(EXAMPLES.read_bytes())
    before = run_identity(collect([str(copy)]).entries, [parse_ep("cpu")], RunOptions())
    copy.write_bytes(EXAMPLES.read_bytes() + b"\n# a comment changes nothing the cases say, but it is another file\n")
    after = run_identity(collect([str(copy)]).entries, [parse_ep("cpu")], RunOptions())
    assert before["pairs_sha256"] == after["pairs_sha256"]
    assert before["case_files_sha256"] != after["case_files_sha256"]


def test_a_stream_written_with_another_onnxruntime_is_refused(tmp_path: Path, identity: dict[str, object]) -> None:
    path = tmp_path / "results.jsonl"
    _written(path, identity, [_result("a", Status.PASS)])
    header, rest = path.read_bytes().split(b"\n", 1)
    upgraded = json.loads(header)
    assert upgraded["run"]["software"]["onnxruntime"]  # this environment's version, recorded
    upgraded["run"]["software"]["onnxruntime"] = "0.0.1"  # as if the package changed between the kill and the resume
    path.write_bytes(json.dumps(upgraded).encode() + b"\n" + rest)
    with pytest.raises(StreamError, match="from another run"):
        read_stream(str(path), identity, PLAN)


def _header(path: Path) -> dict[str, Any]:
    run: dict[str, Any] = json.loads(path.read_bytes().split(b"\n", 1)[0])["run"]
    return run


def _rewritten(path: Path, header: dict[str, Any]) -> None:
    rest = path.read_bytes().split(b"\n", 1)[1]
    path.write_bytes(json.dumps({"run": header}).encode() + b"\n" + rest)


DLL_THEN, DLL_NOW = "a1" * 32, "b2" * 32  # two DirectML.dll files' SHA-256


def _directml(version: str, sha256: str, runner: str = "f6" * 32) -> DirectML:
    """A DirectML as the runner under Wine describes it (wine/device.py's chain record), with the parts that say
    what executes: the DLLs, the runner, the adapter and its Vulkan driver, Wine and vkd3d-proton."""
    chain = {
        "directml_dll": version,
        "onnxruntime_dll": "1.24.26.316",
        "dll_sha256": {"DirectML.dll": sha256, "onnxruntime.dll": "c3" * 32},
        "adapter": {"index": 0, "description": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor_id": 65541, "device_id": 0},
        "vulkan_driver": "llvmpipe Mesa 25.0.7",
        "wine": "wine-8.0",
        "vkd3d_proton": {"version": "3.0.1", "sha256": {"d3d12.dll": "d4" * 32, "d3d12core.dll": "e5" * 32}},
        "runner": {"compiler": "mingw", "version": "12-win32", "sha256": runner},
    }
    return DirectML(version.rsplit(".", 1)[0], "DirectML.dll file version under Wine", FeatureLevel(6, 4), chain)


RUNNER_THEN, RUNNER_NOW = "0a" * 32, "0b" * 32  # two dmlrunner.exe files' SHA-256


@pytest.mark.parametrize(
    ("then", "now", "said"),
    [
        (
            ("1.15.4.0", DLL_THEN, RUNNER_THEN),
            ("1.15.2.0", DLL_NOW, RUNNER_THEN),
            f"DirectML.dll 1.15.4.0 (sha256 {DLL_THEN[:12]}…) then, 1.15.2.0 (sha256 {DLL_NOW[:12]}…) now",
        ),
        # The same DLLs, device and chain, another dmlrunner.exe (rebuilt, or swapped between the kill and the
        # resume): the killed run's results would be credited to the program that runs now.
        (
            ("1.15.4.0", DLL_THEN, RUNNER_THEN),
            ("1.15.4.0", DLL_THEN, RUNNER_NOW),
            f"runner dmlrunner.exe (sha256 {RUNNER_THEN[:12]}…) then, dmlrunner.exe (sha256 {RUNNER_NOW[:12]}…) now",
        ),
    ],
    ids=["DirectML.dll", "runner"],
)
def test_a_stream_of_another_directml_build_or_runner_is_refused_naming_it(
    tmp_path: Path, then: tuple[str, str, str], now: tuple[str, str, str], said: str
) -> None:
    entries, dml = collect([str(EXAMPLES)]).entries, [parse_ep("dml")]
    killed = run_identity(entries, dml, RunOptions(), directml={"dml": _directml(*then)})
    path = tmp_path / "results.jsonl"
    _written(path, killed, [_result("a", Status.PASS)])
    with pytest.raises(StreamError) as refused:
        read_stream(str(path), run_identity(entries, dml, RunOptions(), directml={"dml": _directml(*now)}), PLAN)
    assert str(refused.value) == f"{path} is from another run: EP dml: {said}"
    assert read_stream(str(path), killed, PLAN)[0]  # on what it began with: resumed


@pytest.mark.parametrize(
    ("part", "then", "said"),
    [
        (("executing", "dml", "driver"), "llvmpipe Mesa 24.2.8", "EP dml: driver llvmpipe Mesa 24.2.8 then, {now} now"),
        (("executing", "dml", "adapter"), "NVIDIA H100", "EP dml: adapter NVIDIA H100 then, {now} now"),
        (("executing", "dml", "Wine"), "wine-9.0", "EP dml: Wine wine-9.0 then, {now} now"),
        (("software", "numpy"), "1.0.0", "numpy 1.0.0 then, {now} now"),
        (("max_elements",), 5, "--max-elements 5 then, {now} now"),
        (("pairs",), 3, "(case, EP) pairs: 3 then, {now} now"),
    ],
)
def test_the_refusal_names_the_first_part_that_differs(
    tmp_path: Path, part: tuple[str, ...], then: object, said: str
) -> None:
    entries, dml = collect([str(EXAMPLES)]).entries, [parse_ep("dml")]
    identity = run_identity(entries, dml, RunOptions(), directml={"dml": _directml("1.15.4.0", DLL_THEN)})
    path = tmp_path / "results.jsonl"
    _written(path, identity, [_result("a", Status.PASS)])
    header = _header(path)
    record = header
    for key in part[:-1]:
        record = record[key]
    now, record[part[-1]] = record[part[-1]], then
    _rewritten(path, header)
    with pytest.raises(StreamError) as refused:
        read_stream(str(path), identity, PLAN)
    assert str(refused.value) == f"{path} is from another run: {said.format(now=now)}"


def test_a_repeat_left_out_is_one(tmp_path: Path) -> None:
    entries = collect([str(EXAMPLES)]).entries
    path = tmp_path / "results.jsonl"
    _written(path, run_identity(entries, [parse_ep("cpu")], RunOptions(repeat=3)), [_result("a", Status.PASS)])
    with pytest.raises(StreamError, match=r"is from another run: --repeat 3 then, 1 now$"):
        read_stream(str(path), run_identity(entries, [parse_ep("cpu")], RunOptions()), PLAN)


def test_a_stream_of_a_dmlconf_that_recorded_no_ep_identity_is_refused(
    tmp_path: Path, identity: dict[str, Any]
) -> None:
    path = tmp_path / "results.jsonl"
    _written(path, identity, [_result("a", Status.PASS)])
    header = _header(path)
    del header["executing"]  # as a results.jsonl written before the EPs' identities were part of the run's
    _rewritten(path, header)
    with pytest.raises(StreamError) as refused:
        read_stream(str(path), identity, PLAN)
    cpu = identity["executing"]["cpu"]["CPU"]
    assert str(refused.value) == f"{path} is from another run: EP cpu: CPU not recorded then, {cpu} now"


@pytest.mark.parametrize(
    ("pair", "said"),
    [
        (1, "the result of a [cpu] stands at pair 1, which is b [cpu] in this run"),
        (2, "pair 2 is outside this run's 2 (case, EP) pair(s)"),
        (-1, "pair -1 is outside this run's 2 (case, EP) pair(s)"),
    ],
)
def test_a_result_out_of_its_place_in_the_plan_is_refused(
    tmp_path: Path, identity: dict[str, Any], pair: int, said: str
) -> None:
    path = tmp_path / "results.jsonl"
    stream = Stream(str(path), identity)
    stream.add(0, _result("a", Status.PASS))
    stream.add(pair, _result("a", Status.PASS))  # a line another writer, or a hand, put there
    stream.close()
    with pytest.raises(StreamError) as refused:
        read_stream(str(path), identity, PLAN)
    assert str(refused.value) == f"{path}:3: {said}"

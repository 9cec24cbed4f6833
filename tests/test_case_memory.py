"""A case's estimated memory on each way of executing it, and the frames of the DirectML runner's protocol (issue 35,
item 2): DirectML's buffers count where DirectML binds them, the runner's process adds to the harness's, a case that
one frame cannot carry is refused in one line saying what to change, and each EP takes its path. How close the
estimate comes to the measured peak is benchmarks/case_memory.py's business."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hostile import OK_CASE, refused, run_argv, write

from conformance.cases.limits import FileLimits
from conformance.cases.memory import estimate, harness_bytes
from conformance.cases.suite import read_file
from conformance.cli.main import main
from conformance.ep.memory import PATHS, RUNNER_DISPATCH, RUNNER_SESSION, memory_path
from conformance.ep.providers import parse_ep
from conformance.model import IN_PROCESS, Case

GIB = 1 << 30
FRAME = 2**32 - 1 - (1 << 20)  # a u32 length, less the 1 MiB a frame's fields may take (ep/memory.py)

# The issue's: a window of the whole of a 16384 x 16384 FLOAT32 input, 1 GiB in and 1 GiB out, accepted by default
# before the estimate knew the runner's copies; on --ep dmlop it ended E_OUTOFMEMORY after 10.6 GiB.
SLICE_16384 = """\
operator: SLICE1
feature_level: "4_0"
cases:
  - id: whole
    InputTensor: {Sizes: [1, 1, 16384, 16384], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    InputWindowOffsets: [0, 0, 0, 0]
    InputWindowSizes: [1, 1, 16384, 16384]
    InputWindowStrides: [1, 1, 1, 1]
"""

# Four elements in four buffers of 1 GiB each (TotalTensorSizeInBytes, within --max-elements for FLOAT32): the
# request of --ep dmlop carries them all, 4 GiB, past the u32 length of a frame (the 'I' format error).
FOUR_BUFFERS = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "4_0"
cases:
  - id: four-buffers
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [1, 2, 3, 4], TotalTensorSizeInBytes: 1073741824}
    ScaleTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [1, 1, 1, 1], TotalTensorSizeInBytes: 1073741824}
    BiasTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [0, 0, 0, 0], TotalTensorSizeInBytes: 1073741824}
    OutputTensor: {TotalTensorSizeInBytes: 1073741824}
    Axes: [2, 3]
"""

# A 2x2 FLOAT32 slice whose output buffer is 256 MiB: four elements, the rest padding the canary fills.
PADDED_OUTPUT = OK_CASE.replace(
    "    InputWindowStrides: [1, 1]\n",
    "    InputWindowStrides: [1, 1]\n    OutputTensor: {TotalTensorSizeInBytes: 268435456}\n",
)


def _case(tmp_path: Path, text: str) -> Case:
    entries, problems = read_file(str(write(tmp_path, text)), limits=FileLimits(max_case_bytes=1 << 50))
    assert problems == [] and isinstance(entries[0], Case)
    return entries[0]


def test_each_ep_takes_its_path(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.ep.dml_here as dml_here

    for text in ("cpu", "cuda", "webgpu", "/opt/libplugin_ep.so"):
        assert memory_path(parse_ep(text)) is IN_PROCESS
    assert memory_path(parse_ep("dmlop")) is RUNNER_DISPATCH
    monkeypatch.setattr(dml_here.sys, "platform", "linux")
    assert memory_path(parse_ep("dml")) is RUNNER_SESSION  # under Wine, in the runner
    monkeypatch.setattr(dml_here.sys, "platform", "win32")
    assert memory_path(parse_ep("dml")) is IN_PROCESS  # onnxruntime-directml in the harness's process
    assert memory_path(parse_ep("dmlop")) is RUNNER_DISPATCH  # the native runner
    assert {path.name for path in PATHS} == {IN_PROCESS.name, RUNNER_SESSION.name, RUNNER_DISPATCH.name}


def test_an_output_buffer_counts_where_directml_binds_it(tmp_path: Path) -> None:
    """Onnxruntime's tensors are packed: in the harness's process a padded output costs nothing. DirectML's operator
    API binds the whole buffer: the harness sends its initial bytes and gets them back, the runner receives them
    and uploads them, so each process holds the 256 MiB buffer at least twice."""
    case = _case(tmp_path, PADDED_OUTPUT)
    buffer = 256 << 20
    assert estimate(case, IN_PROCESS).total < 1 << 20
    found = estimate(case, RUNNER_DISPATCH)
    assert found.phase >= 2 * buffer and found.runner >= 2 * buffer
    assert found.total >= 4 * buffer
    assert estimate(case, RUNNER_SESSION).total < 1 << 20  # onnxruntime in the runner: packed too


def test_the_runner_adds_to_the_harness_and_the_harness_takes_the_larger_of_its_phases(tmp_path: Path) -> None:
    """The runner is a process of its own: its part adds. In the harness's process the dispatch's copies and the
    oracle's and the comparison's work come one after the other: the larger counts, not their sum."""
    case = _case(tmp_path, SLICE_16384)
    # 2^28 FLOAT32 elements: a 1 GiB input and a 1 GiB output. The harness's own work is SLICE1's 28 bytes an
    # element, 7 GiB (docs/case-format.md#limits); dmlop's copies there are 2 input and 3 output buffers, 5 GiB, dml's
    # 2 outputs, 2 GiB: less, so 7 GiB counts on both; the runner holds 4 copies of each, 8 GiB, added.
    for path in (RUNNER_SESSION, RUNNER_DISPATCH):
        found = estimate(case, path)
        assert (found.own, found.runner) == (7 * GIB, 8 * GIB)
        assert found.total == 15 * GIB
    assert estimate(case, RUNNER_DISPATCH).phase == 5 * GIB and estimate(case, RUNNER_SESSION).phase == 2 * GIB
    # Whatever the path, the runner holds at least the request it reads: the whole input, 1 GiB, on both paths.
    assert min(estimate(case, path).runner for path in (RUNNER_SESSION, RUNNER_DISPATCH)) >= GIB
    assert estimate(case, IN_PROCESS).total == harness_bytes(case)


def test_the_16384_squared_slice_is_refused_on_dmlop_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.run.runner as runner

    monkeypatch.setattr(runner, "case_inputs", lambda *_: pytest.fail("a tensor was made"))
    path = write(tmp_path, SLICE_16384)
    on = {text: FileLimits(paths=(memory_path(parse_ep(text)),)) for text in ("cpu", "dmlop")}
    assert read_file(str(path), limits=on["cpu"])[1] == []  # 7 GiB in the harness's process: within 8 GiB
    ((problem,), (line,)) = read_file(str(path), limits=on["dmlop"])[1], refused(capsys, "validate", str(path))
    # validate names no EP: it checks every path (dml under Wine estimates as much here, and may be the one named)
    assert line.startswith(f"{path}:5:19: InputTensor.Sizes: the case would take an estimated ")
    found = re.fullmatch(
        rf"{re.escape(str(path))}:5:19: InputTensor\.Sizes: the case would take an estimated ([0-9.]+) GiB on --ep "
        r"dmlop \(268435456 elements x 28 bytes for SLICE1; [0-9.]+ GiB in the DirectML runner\), over "
        r"--max-case-bytes 8589934592 \(8\.0 GiB\)",
        str(problem),
    )
    assert found is not None, problem
    assert float(found.group(1)) > 10.6  # what the issue saw it take before DirectML ran out of memory


def test_a_case_no_frame_can_carry_is_refused_in_one_line_saying_what_to_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, FOUR_BUFFERS)
    line = (
        f"{path}:5:79: InputTensor.TotalTensorSizeInBytes: a request of {4 * GIB} bytes on --ep dmlop, over the "
        f"{FRAME} bytes that one frame of the DirectML runner's protocol carries (a u32 length): make InputTensor "
        "(a 1.0 GiB buffer) or the case's other tensors smaller"
    )
    assert refused(capsys, "validate", str(path)) == [line]
    # No limit raised lets it through; --ep dml sends onnxruntime packed tensors, which one frame carries.
    assert refused(capsys, "validate", str(path), "--max-case-bytes", str(1 << 50)) == [line]
    assert read_file(str(path), limits=FileLimits(paths=(RUNNER_SESSION,)))[1] == []
    three = FOUR_BUFFERS.replace("    OutputTensor: {TotalTensorSizeInBytes: 1073741824}\n", "")
    assert main(["validate", str(write(tmp_path, three, "three.yaml")), "--max-case-bytes", str(1 << 50)]) == 0


@pytest.mark.skipif(sys.platform == "win32", reason="the Wine chain's tests")
def test_run_on_dmlop_refuses_it_before_anything_runs(
    chain_ready: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, reports = write(tmp_path, FOUR_BUFFERS), tmp_path / "reports"
    argv = [word if word != "cpu" else "dmlop" for word in run_argv(path, reports)]
    (line,) = refused(capsys, *argv)
    assert line.startswith(f"{path}:5:79: InputTensor.TotalTensorSizeInBytes: a request of {4 * GIB} bytes")
    assert not reports.exists()

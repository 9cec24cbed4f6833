"""The limits on what a run takes in (--keep-going over invalid files, folders without case files,
--max-run-elements, symbolic links out of the folder walked, --max-file-bytes and --max-nodes) and the escaping of
case-provided text in every report."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from xml.etree import ElementTree

import pytest
from hostile import OK_CASE, TWO_CASES, accepted, markdown_problems, refused, run_argv, write

from conformance.cases.suite import case_elements, collect, run_elements
from conformance.cli.main import main

pytest_plugins = ["pytester"]


def test_keep_going_runs_the_valid_files_and_records_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with any problem contributes no case, even its valid ones (c-mixed.yaml's ``ok``)."""
    cases, reports = tmp_path / "cases", tmp_path / "reports"
    cases.mkdir()
    write(cases, OK_CASE, "a-ok.yaml")
    write(cases, "operator: TOP_K1\n", "b-empty.yaml")  # a case file without its cases
    write(cases, TWO_CASES, "c-mixed.yaml")
    problems = [
        f"{cases}/b-empty.yaml:1:1: cases: missing required field",
        f"{cases}/c-mixed.yaml:13:29: InputWindowStrides.1: dimension 1: strides may not be 0",
    ]
    assert refused(capsys, *run_argv(cases, reports)) == problems  # without --keep-going: nothing runs
    assert not reports.exists()

    assert main(run_argv(cases, reports, "--keep-going")) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        *problems,
        "2 problem(s) in 2 file(s)",  # b-empty.yaml and c-mixed.yaml, of the three read
        "--keep-going: skipping the 2 file(s) with problems, running the others",
        "2 file(s) were skipped for 2 problem(s) (listed above and in results.json): exit code 2",
    ]
    assert "running 1 case(s) from 1 file(s) on cpu" in out
    document = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    # Outside a repository, ids name a file from the directory given (cases/ids.py).
    assert [(r["case"], r["status"]) for r in document["results"]] == [("a-ok.yaml::ok", "PASS")]
    assert document["environment"]["problems"] == problems
    assert {"report.html", "summary.md", "junit.xml"} <= {p.name for p in reports.iterdir()}
    summary_md = (reports / "summary.md").read_text(encoding="utf-8")
    skipped = "1 case run; case files skipped for 2 problem(s) (--keep-going): their cases did not run"
    assert f"- **{skipped}**: the run fails" in summary_md
    # Each file skipped by name, with its number of problems (results.json's skipped_files), not as a Python dict.
    files = f"files skipped: 2 ({cases}/b-empty.yaml: 1 problem, {cases}/c-mixed.yaml: 1 problem)"
    assert f"- {files}" in summary_md.replace("\\_", "_")
    assert "b-empty.yaml:1:1: cases: missing required field" in summary_md
    html = (reports / "report.html").read_text(encoding="utf-8")
    assert f"INCOMPLETE/FAILED</span> — {skipped}" in html
    assert f"{skipped}: the run fails" in out

    # Every later report of this results.json says the input was invalid; diff fails a new run that is incomplete.
    results = str(reports / "results.json")
    assert main(["report", results, "--out-dir", str(tmp_path / "again")]) == 2
    assert (tmp_path / "again" / "summary.md").exists()
    assert main(["merge", results, "--report-dir", str(tmp_path / "merged")]) == 2
    merged = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert merged["environment"]["problems"] == problems
    assert main(["diff", results, results]) == 1
    out, err = capsys.readouterr()
    assert f"the new run fails: {skipped}" in out.splitlines()
    assert err.count("the run skipped case files for 2 problem(s) (--keep-going): exit code 2") == 2


def test_keep_going_with_every_file_invalid_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "", "empty.yaml")
    assert main(run_argv(path, tmp_path / "reports", "--keep-going")) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "dmlconf: no cases selected"
    assert not (tmp_path / "reports" / "results.json").exists()


@pytest.mark.parametrize("command", ["validate", "run"])
def test_a_directory_without_case_files_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    (tmp_path / "folder.yaml").mkdir()  # a directory, not a case file
    write(tmp_path, OK_CASE, "notes.txt")
    argv = run_argv(tmp_path, tmp_path / "reports") if command == "run" else ["validate", str(tmp_path)]
    assert main(argv) == 2
    assert capsys.readouterr() == ("", f"dmlconf: {tmp_path}: no case files (*.yaml, *.yml) found\n")


TOPK_FILE = """\
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: topk
    InputTensor: {Sizes: [2, 3, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 2
    K: 2
  - id: negative
    expect: invalid
    reason: K must be below the axis size
    InputTensor: {Sizes: [2, 3, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 2
    K: 4
"""
MVN_FILE = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "4_0"
cases:
  - id: mvn
    InputTensor: {Sizes: [1, 2, 3], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 2}}
    ScaleTensor: {Sizes: [1, 2, 1], DataType: FLOAT32, Data: [1, 2]}
    BiasTensor: {Sizes: [1, 1, 1], DataType: FLOAT32, Data: [0]}
    Axes: [2]
"""
SLICE_FILE = """\
operator: SLICE1
feature_level: "3_0"
cases:
  - id: slice
    InputTensor: {Sizes: [4, 5], DataType: INT32, Generator: {Kind: arange}}
    InputWindowOffsets: [0, 1]
    InputWindowSizes: [4, 4]
    InputWindowStrides: [2, -3]
"""


def test_run_elements_counts_inputs_and_outputs_from_the_sizes(tmp_path: Path) -> None:
    for name, text in (("a-topk.yaml", TOPK_FILE), ("b-mvn.yaml", MVN_FILE), ("c-slice.yaml", SLICE_FILE)):
        write(tmp_path, text, name)
    suite = collect([str(tmp_path)])
    assert suite.problems == ()
    # TOP_K1: input 2*3*4 = 24, values and indices 2*3*2 = 12 each; the expect: invalid case makes nothing.
    # MVN1: input 6, scale 2, bias 1, output 6. SLICE1: input 20; MaxCopiedElements 1 + 3 // 2 = 2 and
    # 1 + 3 // 3 = 2, so the output is 2 * 2 = 4.
    assert [case_elements(e) for e in suite.entries] == [48, 0, 15, 24]
    assert run_elements(suite.entries, 1) == 87
    assert run_elements(suite.entries, 2) == 174


def test_a_run_over_max_run_elements_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, reports = write(tmp_path, OK_CASE), tmp_path / "reports"  # input 2 * 2, output 2 * 2: 8 elements
    assert main(run_argv(path, reports, "--max-run-elements", "7")) == 2
    assert capsys.readouterr() == (
        "",
        "dmlconf: the selected cases hold 8 elements, over --max-run-elements 7 "
        "(select fewer with -k, --shard or --quick, or raise the limit)\n",
    )
    assert not reports.exists()
    assert main(run_argv(path, reports, "--max-run-elements", "8")) == 0
    assert (reports / "results.json").exists()


def symlink(target: Path, link: Path) -> None:
    try:
        os.symlink(target, link, target_is_directory=target.is_dir())
    except OSError:
        pytest.skip("no symlinks here")


def test_symbolic_links_out_of_the_directory_walked_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    outside, root = tmp_path / "outside", tmp_path / "cases"
    (outside / "folder").mkdir(parents=True)
    (root / "sub").mkdir(parents=True)
    write(outside, OK_CASE, "secret.yaml")  # valid: were it read, validate would count it
    write(outside / "folder", OK_CASE, "more.yaml")
    write(root, OK_CASE, "ok.yaml")
    symlink(root / "ok.yaml", root / "inside.yaml")  # stays inside: read
    symlink(outside / "secret.yaml", root / "out.yaml")
    symlink(outside / "folder", root / "sub" / "folder")
    symlink(root, root / "sub" / "up")  # a loop through a directory inside: never followed
    symlink(root / "b.yaml", root / "a.yaml")  # a loop of two files
    symlink(root / "a.yaml", root / "b.yaml")
    real = os.path.realpath(outside)
    assert refused(capsys, "validate", str(root)) == [
        f"{root}/a.yaml:1:1: cannot read file: Too many levels of symbolic links",
        f"{root}/b.yaml:1:1: cannot read file: Too many levels of symbolic links",
        f"{root}/out.yaml:1:1: a symbolic link to outside {root} ({real}/secret.yaml): refused",
        f"{root}/sub/folder:1:1: a symbolic link to outside {root} ({real}/folder): refused",
    ]
    for link in ("a.yaml", "b.yaml", "out.yaml", "sub/folder"):
        (root / link).unlink()
    assert main(["validate", str(root)]) == 0  # ok.yaml and inside.yaml; sub/up is not followed
    assert capsys.readouterr().out == "ok: 2 case(s) in 2 file(s)\n"


def test_a_symbolic_link_named_on_the_command_line_is_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "outside").mkdir()
    symlink(write(tmp_path / "outside", OK_CASE), tmp_path / "link.yaml")
    accepted(capsys, tmp_path / "link.yaml")


def test_max_file_bytes_and_max_nodes_reach_the_loader(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE)
    size = len(OK_CASE.encode("utf-8"))
    for argv in (["validate", str(path)], run_argv(path, tmp_path / "reports")):
        lines = refused(capsys, *argv, "--max-file-bytes", str(size - 1))
        assert lines == [f"{path}:1:1: file is {size} bytes, over the limit of {size - 1}"]
    assert main(["validate", str(path), "--max-file-bytes", str(size)]) == 0
    capsys.readouterr()
    (line,) = refused(capsys, "validate", str(path), "--max-nodes", "10")
    assert line.startswith(f"{path}:") and line.endswith(": document has more than 10 nodes (alias bomb or huge file?)")


def test_case_provided_text_is_escaped_in_every_report_end_to_end(tmp_path: Path) -> None:
    """A case id written to attack the reports: markup, Markdown table and link syntax, a backquote."""
    case_id = "<script>alert(1)</script>|`x`*[a](javascript:alert(2))"
    hostile = OK_CASE.replace("  - id: ok", f"  - id: {json.dumps(case_id)}")
    hostile = hostile.replace(
        "    InputWindowStrides", "    expected: {OutputTensor: [[9, 9], [9, 9]]}\n    InputWindowStrides"
    )
    path = write(tmp_path, hostile)
    reports = tmp_path / "reports"
    assert main(run_argv(path, reports)) == 1  # an ERROR (the expected values are wrong): listed in every report
    html = (reports / "report.html").read_text(encoding="utf-8")
    # The page's one script is its own filter: the case id adds none.
    assert html.count("<script>") == 1 and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    markdown = (reports / "summary.md").read_text(encoding="utf-8")
    assert r"\<script\>alert(1)\</script\>\|\`x\`\*\[a\](javascript:alert(2))" in markdown
    assert markdown_problems(markdown) == []  # in the repro's code span it is text; nowhere else is it markup
    junit = ElementTree.parse(reports / "junit.xml").getroot()  # well-formed, the id a plain attribute value
    assert any(case_id in (element.get("name") or "") for element in junit.iter("testcase"))


def test_a_repro_command_keeps_the_file_limits_it_was_read_under(tmp_path: Path) -> None:
    wrong = OK_CASE.replace(
        "    InputWindowStrides", "    expected: {OutputTensor: [[9, 9], [9, 9]]}\n    InputWindowStrides"
    )
    path = write(tmp_path, wrong)
    reports = tmp_path / "reports"
    limits = ["--max-file-bytes", "2000000", "--max-nodes", "60000"]
    assert main(run_argv(path, reports, *limits)) == 1  # an ERROR: its repro line must read the file the same way
    [result] = json.loads((reports / "results.json").read_text(encoding="utf-8"))["results"]
    repro = f"dmlconf run {path} -k {Path(path).name}::ok --ep cpu --max-file-bytes 2000000 --max-nodes 60000"
    assert result["repro"] == repro


# --max-case-bytes (issue 26, item 15; per execution path, issue 35 item 2) -------------------------------------------

# The case: Input, Scale and Bias each 1x1x16384x16384 float32, which took 20.5 GiB on the CPU EP.
HUGE_MVN = """\
operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "4_0"
cases:
  - id: huge
    InputTensor: {Sizes: [1, 1, 16384, 16384], DataType: FLOAT32, Generator: {Kind: normal, Seed: 1}}
    ScaleTensor: {Sizes: [1, 1, 16384, 16384], DataType: FLOAT32, Generator: {Kind: normal, Seed: 2}}
    BiasTensor: {Sizes: [1, 1, 16384, 16384], DataType: FLOAT32, Generator: {Kind: normal, Seed: 3}}
    Axes: [2, 3]
"""
GIB = 1 << 30
# One frame of the DirectML runner's protocol: a u32 length, less the 1 MiB its fields may take (ep/memory.py).
FRAME = 2**32 - 1 - (1 << 20)


def _huge_line(path: Path, limit: int = 8 << 30) -> str:
    """HUGE_MVN's refusal in the harness's process (the CPU EP's path)."""
    from conformance.cases.memory import BYTES_PER_ELEMENT
    from conformance.model import Operator

    per = BYTES_PER_ELEMENT[Operator.MEAN_VARIANCE_NORMALIZATION1]
    assert per * 16384 * 16384 >= 20.5 * 2**30  # the estimate is at least what the issue measured
    return (
        f"{path}:5:19: InputTensor.Sizes: the case would take an estimated {per * 16384 * 16384 / 2**30:.1f} GiB "
        f"in the harness's process (268435456 elements x {per} bytes for MEAN_VARIANCE_NORMALIZATION1), over "
        f"--max-case-bytes {limit} ({limit / 2**30:.1f} GiB)"
    )


def _frame_line(path: Path, where: str, carried: int, tensor: str, buffer: str) -> str:
    """A case refused because one request of --ep dmlop would carry ``carried`` bytes."""
    return (
        f"{path}:{where}: a request of {carried} bytes on --ep dmlop, over the {FRAME} bytes that one frame of the "
        f"DirectML runner's protocol carries (a u32 length): make {tensor} (a {buffer} buffer) or the case's other "
        "tensors smaller"
    )


def test_a_case_over_max_case_bytes_is_refused_before_anything_is_allocated(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import conformance.run.runner as runner

    monkeypatch.setattr(runner, "case_inputs", lambda *_: pytest.fail("a tensor was made"))
    path, reports = write(tmp_path, HUGE_MVN), tmp_path / "reports"
    line = _huge_line(path)  # the default, 8 GiB, sized for a 16 GB CI machine
    assert refused(capsys, *run_argv(path, reports)) == [line]  # on the CPU EP
    assert not reports.exists()
    assert refused(capsys, *run_argv(path, reports, "--max-case-bytes", str(4 << 30))) == [_huge_line(path, 4 << 30)]
    # validate and list name no EP: they check every path, and --ep dmlop's request would carry the three inputs'
    # buffers and the output's, 4 GiB: more than one frame carries, whatever the memory limit.
    frame = _frame_line(path, "5:19: InputTensor.Sizes", 4 * GIB, "InputTensor", "1.0 GiB")
    assert refused(capsys, "validate", str(path)) == [frame]
    assert refused(capsys, "validate", str(path), "--max-case-bytes", str(1 << 50)) == [frame]
    assert main(["list", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[0] == frame


def test_max_case_bytes_is_a_bound_the_estimate_may_reach(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cases.memory import BYTES_PER_ELEMENT
    from conformance.model import Operator

    path, reports = write(tmp_path, OK_CASE), tmp_path / "reports"  # SLICE1 of a 2x2 input
    estimate = 4 * BYTES_PER_ELEMENT[Operator.SLICE1]  # in the harness's process: the CPU EP's path
    assert main(run_argv(path, reports, "--max-case-bytes", str(estimate))) == 0
    capsys.readouterr()
    (line,) = refused(capsys, *run_argv(path, reports, "--max-case-bytes", str(estimate - 1)))
    assert line.startswith(
        f"{path}:5:19: InputTensor.Sizes: the case would take an estimated {estimate} bytes in the harness's process"
    )


def test_a_padded_buffer_counts_in_the_estimate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cases.memory import BYTES_PER_ELEMENT
    from conformance.model import Operator

    # 4 elements, but rows 2**20 elements apart: the oracle writes them into a buffer of 2**20 + 2 floats.
    padded = OK_CASE.replace("Data: [[1, 2], [3, 4]]}", "Data: [[1, 2], [3, 4]], Strides: [1048576, 1]}")
    path, reports = write(tmp_path, padded), tmp_path / "reports"
    estimate = 4 * BYTES_PER_ELEMENT[Operator.SLICE1] + (2**20 + 2) * 4
    assert main(run_argv(path, reports, "--max-case-bytes", str(estimate))) == 0
    capsys.readouterr()
    (line,) = refused(capsys, *run_argv(path, reports, "--max-case-bytes", str(estimate - 1)))
    assert line.startswith(
        f"{path}:5:19: InputTensor.Sizes: the case would take an estimated 4.0 MiB in the harness's process (4 "
        "elements x 28 bytes for SLICE1 plus 4.0 MiB of buffers with layouts)"
    )


def test_run_j_counts_the_cases_that_may_run_at_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from conformance.cases.memory import BYTES_PER_ELEMENT
    from conformance.model import Operator

    two = OK_CASE + OK_CASE.split("cases:\n")[1].replace("id: ok", "id: ok-too")
    path, reports = write(tmp_path, two), tmp_path / "reports"
    one = 4 * BYTES_PER_ELEMENT[Operator.SLICE1]  # each case's estimate
    limit = ["--max-case-bytes", str(2 * one - 1)]  # one fits, two at once do not
    assert main(run_argv(path, reports, "-j", "2", *limit)) == 2
    assert capsys.readouterr().err == (
        f"dmlconf: -j 2: the 2 largest selected cases may run at once, an estimated {2 * one} bytes (the largest, "
        f"{Path(path).name}::ok-too: {one} bytes), over --max-case-bytes {2 * one - 1} ({2 * one - 1} bytes): "
        "lower -j, select fewer cases, or raise the limit\n"
    )
    assert not reports.exists()
    assert main(run_argv(path, reports, "-j", "1", *limit)) == 0


def test_a_repro_command_keeps_max_case_bytes(tmp_path: Path) -> None:
    wrong = OK_CASE.replace(
        "    InputWindowStrides", "    expected: {OutputTensor: [[9, 9], [9, 9]]}\n    InputWindowStrides"
    )
    path, reports = write(tmp_path, wrong), tmp_path / "reports"
    assert main(run_argv(path, reports, "--max-case-bytes", "1000000")) == 1
    [result] = json.loads((reports / "results.json").read_text(encoding="utf-8"))["results"]
    assert result["repro"] == f"dmlconf run {path} -k {Path(path).name}::ok --ep cpu --max-case-bytes 1000000"


def test_the_bytes_per_element_are_the_documented_ones() -> None:
    from conformance.cases.memory import BYTES_PER_ELEMENT

    text = (Path(__file__).resolve().parents[1] / "docs" / "case-format.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| `(\w+)` \| (\d+) \|", text, re.M))
    assert documented == {op.value: str(per) for op, per in BYTES_PER_ELEMENT.items()}


def test_pytest_refuses_a_case_over_max_case_bytes_at_collection(pytester: pytest.Pytester) -> None:
    path = pytester.makefile(".yaml", huge=HUGE_MVN)
    result = pytester.runpytest("-p", "no:hypothesispytest", "--ep", "cpu", "--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error stops the session
    result.stdout.fnmatch_lines([_huge_line(path).replace("[", "[[]")])
    raised = pytester.runpytest(
        "-p", "no:hypothesispytest", "--ep", "cpu", "--collect-only", "--max-case-bytes", "4e10"
    )
    raised.stderr.fnmatch_lines(["ERROR: --max-case-bytes: not a whole number: '4e10'"])
    raised = pytester.runpytest(
        "-p", "no:hypothesispytest", "--ep", "cpu", "--collect-only", "--max-case-bytes", "40000000000"
    )
    raised.stdout.fnmatch_lines(["*1 test collected*"])

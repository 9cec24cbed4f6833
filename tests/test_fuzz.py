"""The fuzzer: valid draws, seeded reproducibility, shrinking to a minimal case file that reads back."""

from __future__ import annotations

import contextlib
import math
import re
import struct
from dataclasses import replace
from pathlib import Path
from random import Random
from typing import Any

import pytest
from hypothesis import find, settings
from hypothesis.errors import NoSuchExample

from conformance.cases.load import load_document
from conformance.cases.parse import Entry
from conformance.cases.validate import validate
from conformance.cli import fuzz as cli_fuzz
from conformance.cli.main import main
from conformance.ep.providers import parse_ep
from conformance.fuzz import search as fuzz_module
from conformance.fuzz import top_k1 as fuzz_top_k1
from conformance.fuzz.level import lowest_feature_level
from conformance.fuzz.search import fuzz, read_case
from conformance.model import Case, Operator, Status, TopK1Desc
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry


def _mvn(channels: int) -> str:
    """A 4-D MEAN_VARIANCE_NORMALIZATION1 of 3 channels whose scale and bias have ``channels`` channels."""
    data = [1.0] * channels
    return (
        "InputTensor: {Sizes: [1, 3, 1, 2], DataType: FLOAT32, Data: [1, 2, 3, 4, 5, 6]}\n  Axes: [2, 3]\n"
        f"  ScaleTensor: {{Sizes: [1, {channels}, 1, 1], DataType: FLOAT32, Data: {data}}}\n"
        f"  BiasTensor: {{Sizes: [1, {channels}, 1, 1], DataType: FLOAT32, Data: {data}}}"
    )


def _k_over_one_fails(entry: Entry, ep: object, options: RunOptions, sessions: object = None) -> Result:
    """A stand-in EP that gets every K > 1 wrong; validity is still checked for real."""
    assert isinstance(entry, Case) and not validate(entry)
    result = Result(entry.id, entry.operator.value, "cpu", Status.PASS)
    assert isinstance(entry.descriptor, TopK1Desc)
    if entry.descriptor.k > 1:
        return replace(result, status=Status.FAIL, failure_kind="wrong_elements", message="K > 1 is wrong")
    return result


def test_a_mismatch_is_shrunk_to_a_minimal_case_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fuzz_module, "run_entry", _k_over_one_fails)
    outcome = fuzz(Operator.TOP_K1, parse_ep("cpu"), 30, seed=7, out_dir=str(tmp_path), shrink_examples=10_000)
    assert outcome.case_file == str(tmp_path / "fuzz-top_k1-cpu-seed7.yaml")
    assert outcome.reproduced
    entry = read_case(outcome.case_file)
    assert isinstance(entry, Case) and isinstance(entry.descriptor, TopK1Desc)
    # Shrunk to the smallest failing K and axis: K = 2 on an axis of 3, every element the same pool value.
    descriptor = entry.descriptor
    assert (descriptor.k, descriptor.input.sizes[descriptor.axis]) == (2, 3)
    assert len(set(entry.descriptor.input.data or ())) == 1
    text = Path(outcome.case_file).read_text(encoding="utf-8")
    assert text.splitlines()[1].startswith(
        "# Written by `dmlconf fuzz --operator TOP_K1 --ep cpu --seed 7 --time 30 --shrink-examples"
    )
    # The file's reproduce line runs it where a reviewed finding lives, from the checkout's root; the outcome's (the
    # console's) runs it where it was written.
    assert "# Reproduce: dmlconf run cases/found/fuzz-top_k1-cpu-seed7.yaml --ep cpu\n" in text
    assert outcome.reproduce == f"dmlconf run {outcome.case_file} --ep cpu"
    again = fuzz(Operator.TOP_K1, parse_ep("cpu"), 30, seed=7, out_dir=str(tmp_path / "again"), shrink_examples=10_000)
    assert again.case_file is not None
    # The same seed shrinks to the same case, and the file names nothing of the folder it was written to.
    assert Path(again.case_file).read_text(encoding="utf-8") == text


def test_shrinking_stops_at_its_budget_and_the_file_still_reproduces(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fuzz_module, "run_entry", _k_over_one_fails)
    outcome = fuzz(Operator.TOP_K1, parse_ep("cpu"), 30, seed=7, out_dir=str(tmp_path), shrink_examples=2)
    assert outcome.shrunk == 2 and outcome.reproduced
    entry = read_case(str(outcome.case_file))
    assert isinstance(entry, Case) and isinstance(entry.descriptor, TopK1Desc) and entry.descriptor.k > 1


@pytest.mark.parametrize("operator", list(Operator))
def test_every_draw_is_valid_and_runs(tmp_path: Path, operator: Operator, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[Status] = []

    def run_and_record(entry: Entry, ep: object, options: RunOptions, sessions: object = None) -> Result:
        assert isinstance(entry, Case) and not validate(entry)
        result = run_entry(entry, parse_ep("cpu"), options)
        seen.append(result.status)
        return replace(result, status=Status.PASS)  # keep drawing: this test is about the draws

    monkeypatch.setattr(fuzz_module, "run_entry", run_and_record)
    outcome = fuzz(operator, parse_ep("cpu"), 1.0, seed=1, out_dir=str(tmp_path))
    assert outcome.examples >= 5 and outcome.case_file is None
    assert Status.INVALID not in seen


def _first_with_nan(strategy: Any) -> Any:
    """A drawn case with NaN in its input: each of up to 20 seeded searches of 2,000 draws, in turn."""
    has_nan = lambda c: any(math.isnan(v) for v in c["InputTensor"]["Data"])  # noqa: E731
    for seed in range(20):
        with contextlib.suppress(NoSuchExample):
            return find(strategy, has_nan, settings=settings(max_examples=2000, database=None), random=Random(seed))
    raise AssertionError("20 seeded searches of 2,000 draws found no NaN")


def test_a_drawn_nan_has_the_bits_its_written_file_loads_as(tmp_path: Path) -> None:
    # Hypothesis draws NaNs of either sign and with payloads; an EP may tell them apart, so a candidate must run
    # with the NaN that the file it is written to will hold.
    path = tmp_path / "nan.yaml"
    path.write_text("operator: TOP_K1\ncases: [{id: a, Data: [.nan]}]\n", encoding="utf-8")
    loaded = load_document(str(path)).data["cases"][0]["Data"][0]
    # Seeded searches, one after another until one finds a NaN: a random search found none in 2,000 draws now and
    # then, and so did one derandomized search, whose draws follow the constants Hypothesis collects from the modules
    # already imported (the suite's order decides them). CI must not depend on luck or on that order.
    case = _first_with_nan(fuzz_top_k1.draw_case(True))
    nans = {struct.pack("<d", v) for v in case["InputTensor"]["Data"] if math.isnan(v)}
    assert nans == {struct.pack("<d", loaded)}


def _rank_four_fails(entry: Entry, ep: object, options: RunOptions, sessions: object = None) -> Result:
    """A stand-in EP that gets every 4-D TOP_K1 wrong: what it finds needs no more than 4-D tensors."""
    assert isinstance(entry, Case) and not validate(entry) and isinstance(entry.descriptor, TopK1Desc)
    result = Result(entry.id, entry.operator.value, "cpu", Status.PASS)
    if len(entry.descriptor.input.sizes) == 4:
        return replace(result, status=Status.FAIL, failure_kind="values", message="4-D is wrong")
    return result


def _file_level(path: str) -> str:
    return str(load_document(path).data["feature_level"])


def test_a_finding_is_tagged_with_the_lowest_feature_level_that_admits_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TOP_K1 "was introduced in DML_FEATURE_LEVEL_2_1", whose tensor support table lists DimensionCount 4 only;
    # 1 to 8 from 3_1. A 4-D finding runs from 2_1 on, anything else from 3_1.
    monkeypatch.setattr(fuzz_module, "run_entry", _rank_four_fails)
    outcome = fuzz(Operator.TOP_K1, parse_ep("cpu"), 30, seed=3, out_dir=str(tmp_path), shrink_examples=50)
    assert outcome.case_file is not None and outcome.reproduced
    entry = read_case(outcome.case_file)
    assert isinstance(entry, Case) and len(entry.descriptor.input.sizes) == 4
    assert _file_level(outcome.case_file) == "2_1"
    assert outcome.feature_level == "2_1"
    monkeypatch.setattr(fuzz_module, "run_entry", _k_over_one_fails)
    outcome = fuzz(Operator.TOP_K1, parse_ep("cpu"), 30, seed=7, out_dir=str(tmp_path), shrink_examples=10_000)
    assert outcome.case_file is not None
    entry = read_case(outcome.case_file)
    assert isinstance(entry, Case)
    assert _file_level(outcome.case_file) == ("2_1" if len(entry.descriptor.input.sizes) == 4 else "3_1")


@pytest.mark.parametrize(
    ("operator", "descriptor", "level"),
    [
        # Each expected level is read off the spec pages (reference/spec/), not computed by the harness.
        (
            "TOP_K1",
            "InputTensor: {Sizes: [1, 1, 2, 3], DataType: FLOAT32, Data: [1, 2, 3, 4, 5, 6]}\n  Axis: 3\n  K: 1",
            "2_1",
        ),
        ("TOP_K1", "InputTensor: {Sizes: [2, 3], DataType: UINT8, Data: [1, 2, 3, 4, 5, 6]}\n  Axis: 1\n  K: 2", "3_1"),
        # SLICE1: DimensionCount "between 1 and 8 ... starting from DML_FEATURE_LEVEL_3_0; earlier ... 4 or 5".
        (
            "SLICE1",
            "InputTensor: {Sizes: [1, 1, 1, 1, 3], DataType: INT32, Data: [1, 2, 3]}\n"
            "  InputWindowOffsets: [0, 0, 0, 0, 1]\n  InputWindowSizes: [1, 1, 1, 1, 2]\n"
            "  InputWindowStrides: [1, 1, 1, 1, 1]",
            "2_1",
        ),
        (
            "SLICE1",
            "InputTensor: {Sizes: [3], DataType: INT32, Data: [1, 2, 3]}\n"
            "  InputWindowOffsets: [1]\n  InputWindowSizes: [2]\n  InputWindowStrides: [-1]",
            "3_0",
        ),
        # MEAN_VARIANCE_NORMALIZATION1: 4-D from 2_1, 1 to 8 dimensions from 3_1; below 4_0 ScaleTensor and
        # BiasTensor are { ScaleBatchCount, ChannelCount, ScaleHeight, ScaleWidth }: the channel is not broadcast.
        ("MEAN_VARIANCE_NORMALIZATION1", _mvn(3), "2_1"),
        ("MEAN_VARIANCE_NORMALIZATION1", _mvn(1), "4_0"),
        (
            "MEAN_VARIANCE_NORMALIZATION1",
            "InputTensor: {Sizes: [2, 3], DataType: FLOAT32, Data: [1, 2, 3, 4, 5, 6]}\n  Axes: [1]",
            "3_1",
        ),
    ],
    ids=["topk-4d", "topk-2d", "slice-5d", "slice-1d", "mvn-channel-scale", "mvn-broadcast-scale", "mvn-2d"],
)
def test_the_lowest_feature_level_follows_the_spec(tmp_path: Path, operator: str, descriptor: str, level: str) -> None:
    path = tmp_path / "case.yaml"
    path.write_text(f'operator: {operator}\nfeature_level: "4_0"\ncases:\n- id: c\n  {descriptor}\n', encoding="utf-8")
    entry = read_case(str(path))
    assert isinstance(entry, Case) and not validate(entry)
    assert str(lowest_feature_level(entry)) == level


def test_fuzz_writes_to_reports_fuzz_not_to_cases_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # cases/found/ is part of the library every run reads: an unreviewed finding must not land there.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(fuzz_module, "run_entry", _k_over_one_fails)
    assert main(["fuzz", "--operator", "TOP_K1", "--ep", "cpu", "--time", "30", "--seed", "7"]) == 1
    out = capsys.readouterr().out
    written = tmp_path / "reports" / "fuzz" / "fuzz-top_k1-cpu-seed7.yaml"
    assert written.is_file() and not (tmp_path / "cases").exists()
    assert f"minimal case: {Path('reports', 'fuzz', written.name)}" in out
    assert "copy it to cases/found/" in out and "copy it to cases/found/" in written.read_text(encoding="utf-8")
    # Its first line names the schema as a case file in cases/found/ does (tests/test_schema.py checks those).
    first = written.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# yaml-language-server: $schema=../case.schema.json"


REPO = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("path", sorted((REPO / "cases" / "found").glob("*.yaml")), ids=lambda p: p.name)
def test_a_found_case_s_reproduce_line_runs_it_where_it_lives(path: Path) -> None:
    # A reproduce line is run from the checkout's root, so it names the file there, not the folder fuzz wrote it to.
    text = path.read_text(encoding="utf-8")
    named = re.findall(r"^# Reproduce: dmlconf run (\S+) --ep \S+$", text, re.MULTILINE)
    assert len(named) == text.count("# Reproduce:")
    assert set(named) <= {path.relative_to(REPO).as_posix()}


def test_the_search_tells_its_progress_as_it_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    told: list[tuple[int, float]] = []
    outcome = fuzz(
        Operator.SLICE1, parse_ep("cpu"), 1.0, seed=1, out_dir=str(tmp_path), progress=lambda n, s: told.append((n, s))
    )
    assert told and told[-1][0] <= outcome.examples
    assert [n for n, _ in told] == sorted(n for n, _ in told) and [s for _, s in told] == sorted(s for _, s in told)
    # The command prints a line every PROGRESS_EVERY seconds of the search (issue 39): here every half second.
    monkeypatch.setattr(cli_fuzz, "PROGRESS_EVERY", 0.5)
    assert main(["fuzz", "--operator", "SLICE1", "--ep", "cpu", "--time", "2", "--out", str(tmp_path / "cli")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.strip().endswith("s of 2, no mismatch yet") for line in lines[1:-1]), lines

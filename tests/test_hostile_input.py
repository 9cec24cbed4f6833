"""Hostile case files: whatever the bytes, the loader, parser and validator answer with one-line
``path:line:col: ...`` problems (exit code 2 from the CLI), quickly, without a traceback, and never run anything.

Part one fuzzes the pipeline (load_document -> parse_document -> validate, and suite.read_file) with Hypothesis:
arbitrary bytes, arbitrary text, YAML-ish token soup, and valid case documents with random mutations. Part two
sends each class of hostile input named in the issue through ``conformance.cli.main`` once.
"""

from __future__ import annotations

import copy
import json
import os
import random
import re
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cli import main
from conformance.load import load_document
from conformance.model import Case
from conformance.parse import Rejected, parse_document
from conformance.problems import CaseFileError, Problem
from conformance.suite import case_elements, collect, read_file, run_elements
from conformance.validate import validate

LINE = re.compile(r"^[^\n]+:\d+:\d+: [^\n]+$")
SUMMARY = re.compile(r"^\d+ problem\(s\) in \d+ file\(s\)$")
HANG_GUARD = 30.0  # seconds: what each refusal here takes is well under one; more means it expanded or read it all
FUZZ = settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# One valid case per operator, written by hand from the spec pages: the fuzz mutates these.
BASES: list[dict[str, Any]] = [
    {
        "operator": "TOP_K1",
        "feature_level": "3_1",
        "cases": [
            {
                "id": "topk",
                "InputTensor": {"Sizes": [1, 4], "DataType": "FLOAT32", "Data": [[1.0, 3.0, 2.0, 4.0]]},
                "Axis": 1,
                "K": 2,
                "AxisDirection": "INCREASING",
                "expected": {"OutputValueTensor": [[1.0, 2.0]], "OutputIndexTensor": [[0, 2]]},
            }
        ],
    },
    {
        "operator": "MEAN_VARIANCE_NORMALIZATION1",
        "feature_level": "4_0",
        "cases": [
            {
                "id": "mvn",
                "InputTensor": {"Sizes": [1, 2, 2], "DataType": "FLOAT32", "Generator": {"Kind": "uniform", "Seed": 7}},
                "ScaleTensor": {"Sizes": [1, 2, 1], "DataType": "FLOAT32", "Data": [1.0, 2.0]},
                "BiasTensor": {"Sizes": [1, 1, 1], "DataType": "FLOAT32", "Data": [0.5]},
                "Axes": [2],
                "NormalizeVariance": True,
                "Epsilon": 1.0e-5,
                "FusedActivation": {"Type": "LEAKY_RELU", "Alpha": 0.3},
                "tolerance": {"max_ulp": 4, "atol": 1.0e-3},
                "matrix": {"NormalizeVariance": [True, False], "Epsilon": [1.0e-5, 0.5]},
            }
        ],
    },
    {
        "operator": "SLICE1",
        "feature_level": "3_0",
        "cases": [
            {
                "id": "slice",
                "InputTensor": {"Sizes": [2, 3], "DataType": "INT32", "Data": [[1, 2, 3], [4, 5, 6]]},
                "InputWindowOffsets": [0, 1],
                "InputWindowSizes": [2, 2],
                "InputWindowStrides": [1, -1],
                "OutputSizes": [2, 2],
                "expected": {"OutputTensor": [[3, 2], [6, 5]]},
            }
        ],
    },
]

NUMBERS = st.sampled_from([1e308, -1e308, 3e38, 65504.0, 0.5, 0.0, -2.0]) | st.floats() | st.integers(-(2**70), 2**70)
GENERATORS = st.fixed_dictionaries(
    {
        "Kind": st.sampled_from(["uniform", "normal", "integers", "ties", "special", "arange", "zeros"]),
        "Seed": st.integers(0, 2**64 - 1) | NUMBERS,
    },
    optional={name: NUMBERS for name in ("Low", "High", "Mean", "Std", "Distinct", "Step", "Start", "Fraction")},
)
EXTREMES = st.sampled_from(
    [10**100, -(10**100), 2**64, 2**63, 2**32, 2**31, -1, 0, float("nan"), float("inf"), -0.0, 1e308, "", "\n", "\x00"]
)
HOSTILE_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text(max_size=8)
    | EXTREMES
    | st.sampled_from(["FLOAT32", "UINT32", "INCREASING", "uniform", "ties", "arange", "RELU", "3_1", ".nan"]),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=12,
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _paths(item, (*prefix, index))


@st.composite
def mutated_documents(draw: st.DrawFn) -> str:
    """A valid case document with a few random mutations: values replaced by wrong types or extreme numbers,
    fields removed, unknown fields added, a matrix, a field path or an alias, written back as YAML."""
    doc = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(doc))[1:]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent: Any = doc
        for step in path[:-1]:
            parent = parent[step]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add", "matrix", "generator"]))
        cases = doc.get("cases")
        if action == "generator" and isinstance(cases, list) and cases and isinstance(cases[0], dict):
            cases[0]["InputTensor"] = {"Sizes": [2, 3], "DataType": "FLOAT32", "Generator": draw(GENERATORS)}
        elif action == "replace":
            parent[path[-1]] = draw(HOSTILE_VALUE)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict) and action == "add":
            parent[draw(st.text(min_size=1, max_size=6))] = draw(HOSTILE_VALUE)
        elif isinstance(parent, dict):
            key = draw(st.sampled_from([".".join(map(str, path[2:])) or "id", "each", "Axis", "K.x.y"]))
            parent["matrix"] = {key: draw(st.lists(HOSTILE_VALUE, max_size=3) | HOSTILE_VALUE)}
    text = yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)
    return text.replace("cases:\n", "cases:\n- &a {id: anchored, x: 1}\n", 1) if draw(st.booleans()) else text


YAML_TOKENS = st.sampled_from(
    [
        *"ab01:-[]{},#&*!|>'\"?%@` \t\n.~",
        *("\r\n", "- ", ": ", "\n  ", "\ufeff", "\x85", "\u2028", "\x00", "\\", "&x ", "*x", "<<: ", "!!binary "),
        *("!!python/object/apply:os.system ['true'] ", "operator: ", "cases:\n", "TOP_K1", "SLICE1", "  - id: a\n"),
        *("Sizes: ", "[1, 2]", "DataType: FLOAT32", "Data: ", "1e999", "9" * 120),
    ]
)


def check_pipeline(path: Path, suite: bool = False) -> list[Problem]:
    """Every problem the pipeline finds in ``path``; fails the test on any exception but CaseFileError.
    ``suite``: also read it as a run does (suite.read_file), which must not raise at all."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning is a second line on stderr: as wrong as a traceback
        try:
            doc = load_document(path)
        except CaseFileError as error:
            problems = list(error.problems)
        else:
            entries, problems = parse_document(doc)
            for entry in entries:
                if isinstance(entry, Rejected):
                    problems.extend(entry.problems)
                else:
                    assert isinstance(entry, Case)
                    problems.extend(validate(entry, 1 << 20))
        file_problems = read_file(str(path), 1 << 20)[1] if suite else []
    for problem in [*problems, *file_problems]:
        assert LINE.fullmatch(str(problem)), str(problem)
    return problems


@pytest.fixture(scope="module")
def case_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz") / "case.yaml"


@pytest.mark.parametrize("index", range(len(BASES)))
def test_the_fuzzed_documents_start_valid(case_path: Path, index: int) -> None:
    """Without this the mutations below would only ever reach the loader's first refusals."""
    case_path.write_text(yaml.safe_dump(BASES[index], sort_keys=False), encoding="utf-8")
    assert check_pipeline(case_path) == []


@FUZZ
@given(st.binary(max_size=400))
def test_fuzz_arbitrary_bytes(case_path: Path, raw: bytes) -> None:
    case_path.write_bytes(raw)
    check_pipeline(case_path, suite=True)


@FUZZ
@given(st.text(max_size=200))
def test_fuzz_arbitrary_text(case_path: Path, text: str) -> None:
    case_path.write_bytes(text.encode("utf-8", "surrogatepass"))
    check_pipeline(case_path)


@FUZZ
@given(st.lists(YAML_TOKENS, max_size=60).map("".join))
def test_fuzz_yaml_token_soup(case_path: Path, text: str) -> None:
    case_path.write_bytes(text.encode("utf-8"))
    check_pipeline(case_path)


@settings(FUZZ, max_examples=100)
@given(mutated_documents())
def test_fuzz_mutated_case_documents(case_path: Path, text: str) -> None:
    case_path.write_text(text, encoding="utf-8")
    check_pipeline(case_path)


# --- each class of hostile input, through the CLI ------------------------------------------------------------------

OK_CASE = """\
operator: SLICE1
feature_level: "3_0"
cases:
  - id: ok
    InputTensor: {Sizes: [2, 2], DataType: FLOAT32, Data: [[1, 2], [3, 4]]}
    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 2]
    InputWindowStrides: [1, 1]
"""


def billion_laughs(levels: int) -> str:
    """An alias bomb: 10**levels strings once expanded, from a file of a few hundred bytes."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


def refused(capsys: pytest.CaptureFixture[str], *argv: str, seconds: float = HANG_GUARD) -> list[str]:
    """Run dmlconf; it must exit 2 with only one-line problems on stderr; returns them. ``seconds`` guards against
    a hang (an alias bomb expanded, an 8 GiB file read): not a speed target, which is a benchmark's business."""
    started = time.perf_counter()
    code = main(list(argv))
    elapsed = time.perf_counter() - started
    out, err = capsys.readouterr()
    assert code == 2, (out, err)
    assert "Traceback" not in out + err
    lines = err.splitlines()
    if argv[0] == "run":
        assert lines[-1] == "nothing was run: fix the problems above"
        lines = lines[:-1]
    assert SUMMARY.fullmatch(lines[-1]), lines
    problems = lines[:-1]
    assert problems and all(LINE.fullmatch(line) for line in problems), problems
    assert elapsed < seconds, f"took {elapsed:.1f} s"
    return problems


def accepted(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    assert main(["validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("ok: 1 case(s) in 1 file(s)")


def write(tmp_path: Path, content: str | bytes, name: str = "case.yaml") -> Path:
    path = tmp_path / name
    path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return path


def test_alias_bomb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, billion_laughs(9))  # 10**9 strings, ~50 GB once expanded
    (line,) = refused(capsys, "validate", str(path))
    assert line.startswith(f"{path}:") and "nodes (alias bomb or huge file?)" in line


@pytest.mark.parametrize("opening", ["[", "{a: ", "- "])
def test_deep_nesting(tmp_path: Path, capsys: pytest.CaptureFixture[str], opening: str) -> None:
    closing = {"[": "]", "{a: ": "}", "- ": ""}[opening]
    path = write(tmp_path, opening * 100_000 + "1" + closing * 100_000)
    (line,) = refused(capsys, "validate", str(path))
    assert line.startswith(f"{path}:1:") and "nesting is too deep" in line


def test_binary_garbage_is_not_utf8(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, random.Random(7).randbytes(500_000))
    (line,) = refused(capsys, "validate", str(path))
    assert "not UTF-8 text: byte 0x" in line


def test_latin1_byte_is_located(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE.replace("id: ok", "id: caf\xe9").encode("latin-1"))
    assert refused(capsys, "validate", str(path)) == [f"{path}:4:12: not UTF-8 text: byte 0xe9 at offset 56"]


def test_nul_byte_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE.replace("id: ok", "id: o\x00k"))
    assert refused(capsys, "validate", str(path)) == [
        f"{path}:4:10: YAML syntax error: unacceptable character #x0000: special characters are not allowed"
    ]


@pytest.mark.parametrize("content", ["", "\n\n", "# only\n# comments\n"])
def test_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str) -> None:
    path = write(tmp_path, content)
    assert refused(capsys, "validate", str(path)) == [f"{path}:1:1: empty file: expected 'operator:' and 'cases:'"]


@pytest.mark.parametrize(
    "payload",
    [
        "!!python/object/apply:os.system ['touch {marker}']",
        "!!python/object/apply:builtins.open ['{marker}', w]",
        "!!python/object/apply:builtins.exec [\"open('{marker}', 'w')\"]",
    ],
)
def test_python_tags_are_never_executed(tmp_path: Path, capsys: pytest.CaptureFixture[str], payload: str) -> None:
    if "os.system" in payload and os.name != "posix":
        pytest.skip("touch is a POSIX command")
    control, marker = tmp_path / "control", tmp_path / "marker"
    yaml.unsafe_load(payload.format(marker=control.as_posix()))  # the control: the payload is live when unsafe
    assert control.exists()
    path = write(tmp_path, OK_CASE.replace("id: ok", "id: " + payload.format(marker=marker.as_posix())))
    for argv in (["validate", str(path)], ["run", str(path), "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path)]):
        (line,) = refused(capsys, *argv)
        assert line.startswith(f"{path}:4:9: cases.0.id: unsupported YAML tag 'tag:yaml.org,2002:python/")
    assert not marker.exists()
    assert not (tmp_path / "results.json").exists()


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "huge.yaml"
    with path.open("wb") as handle:
        handle.truncate(8 << 30)  # 8 GiB, sparse: reading it would take far longer than the limit below
    (line,) = refused(capsys, "validate", str(path))
    assert line.startswith(f"{path}:1:1: file is 8589934592 bytes, over the limit of ")


def test_nodes_are_counted_while_composing_not_after(tmp_path: Path) -> None:
    """400,001 numbers take PyYAML ~15 s to compose and ~250 MB to hold: refused at the 1,001st, at once."""
    path = write(tmp_path, "a: [" + "0," * 400_000 + "0]\n")
    with pytest.raises(CaseFileError) as info:
        load_document(path, max_nodes=1000)
    # The mapping, its key "a", the list and 998 numbers make 1,001 nodes: the 998th number, "0," at column 5 + 2 * 997.
    assert [str(p) for p in info.value.problems] == [
        f"{path}:1:{5 + 2 * 997}: document has more than 1000 nodes (alias bomb or huge file?)"
    ]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX FIFOs")
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "pipe.yaml"
    os.mkfifo(path)
    # Should the loader wait on the FIFO after all, this writer releases it (after 10 s), and the test fails on
    # seeing that it had to.
    released = threading.Event()

    def release() -> None:
        released.set()
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    writer = threading.Timer(10.0, release)
    writer.start()
    try:
        (line,) = refused(capsys, "validate", str(path))
    finally:
        writer.cancel()
    assert not released.is_set()
    assert line == f"{path}:1:1: not a regular file (a directory, FIFO, device or socket)"


def test_a_symlink_and_a_directory_named_yaml(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outside = write(tmp_path, "root:x:0:0:root:/root:/bin/bash\n", "passwd")
    root = tmp_path / "cases"
    (root / "folder.yaml").mkdir(parents=True)
    write(root, OK_CASE, "ok.yaml")
    try:
        os.symlink(outside, root / "x.yaml")
    except OSError:
        pytest.skip("no symlinks here")
    (line,) = refused(capsys, "validate", str(root))
    target = os.path.realpath(outside)
    assert line == f"{root / 'x.yaml'}:1:1: a symbolic link to outside {root} ({target}): refused"


def test_bom_and_crlf_are_read(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    accepted(capsys, write(tmp_path, "\ufeff" + OK_CASE.replace("\n", "\r\n")))


@pytest.mark.parametrize(
    ("sizes", "message"),
    [
        (
            f"[{10**100}, 2]",
            "InputTensor.Sizes.0: integer of 101 characters is too large for any field (at most 100)",
        ),
        ("[4294967296, 2]", "InputTensor.Sizes.0: must be an integer (UINT) in [0, 4294967295], got 4294967296"),
        ("[-2, 2]", "InputTensor.Sizes.0: must be an integer (UINT) in [0, 4294967295], got -2"),
        ("[2.0, 2]", "InputTensor.Sizes.0: must be an integer (UINT), got 2.0"),
        ("[true, 2]", "InputTensor.Sizes.0: must be an integer (UINT), got True"),
        ("[.nan, 2]", "InputTensor.Sizes.0: must be an integer (UINT), got nan"),
        ("'2, 2'", "InputTensor.Sizes: must be a list of integers"),
    ],
)
def test_wrong_sizes(tmp_path: Path, capsys: pytest.CaptureFixture[str], sizes: str, message: str) -> None:
    path = write(tmp_path, OK_CASE.replace("Sizes: [2, 2]", f"Sizes: {sizes}"))
    assert message in refused(capsys, "validate", str(path))[0]


def test_a_5000_digit_integer_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE.replace("Sizes: [2, 2]", "Sizes: [" + "7" * 5000 + ", 2]"))
    assert refused(capsys, "validate", str(path)) == [
        f"{path}:5:27: cases.0.InputTensor.Sizes.0: integer of 5000 characters is too large for any field (at most 100)"
    ]


def test_elements_are_limited_before_anything_is_allocated(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """2**128 elements (the product overflows int64 too): refused by run as well, before any data is made."""
    text = OK_CASE.replace("Sizes: [2, 2]", "Sizes: [4294967295, 4294967295, 4294967295, 4294967295]")
    text = text.replace("Data: [[1, 2], [3, 4]]", "Generator: {Kind: uniform, Seed: 1}")
    path = write(
        tmp_path,
        text.replace("[0, 0]", "[0, 0, 0, 0]").replace("[2, 2]", "[2, 2, 2, 2]").replace("[1, 1]", "[1, 1, 1, 1]"),
    )
    elements = 4294967295**4
    for argv in (["validate", str(path)], ["run", str(path), "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path)]):
        lines = refused(capsys, *argv, "--max-elements", "1000")
        assert f"InputTensor.Sizes: {elements} elements is over the limit of 1000 (--max-elements)" in "\n".join(lines)


def test_data_longer_than_sizes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE.replace("Sizes: [2, 2]", "Sizes: [2, 200000]"))
    (line,) = refused(capsys, "validate", str(path))
    assert "InputTensor.Data: has shape (2, 2), Sizes say (2, 200000)" in line


def test_nan_and_infinity_are_data_for_floats_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = OK_CASE.replace("[[1, 2], [3, 4]]", "[[.nan, .inf], [-.inf, -0.0]]")
    accepted(capsys, write(tmp_path, text))
    path = write(tmp_path, text.replace("FLOAT32", "INT32"))
    (line,) = refused(capsys, "validate", str(path))
    assert "InputTensor.Data: value nan at flat index 0 is not an integer in the INT32 range" in line


def test_unknown_and_duplicate_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE + "    Bogus: 1\n")
    assert refused(capsys, "validate", str(path))[0].startswith(f"{path}:9:5: Bogus: unknown field (expected one of")
    path = write(tmp_path, OK_CASE + "    InputWindowStrides: [1, 1]\n")
    assert refused(capsys, "validate", str(path)) == [
        f"{path}:9:5: cases.0.InputWindowStrides: duplicate key 'InputWindowStrides' (first at line 8)"
    ]


def test_line_breaks_and_escapes_in_keys_stay_on_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, OK_CASE + '    "bad\\nkey\\e[31m\\u2028": 1\n')
    (line,) = refused(capsys, "validate", str(path))
    assert line.startswith(f"{path}:9:5: bad\\nkey\\x1b[31m\\u2028: unknown field")


def test_a_sweep_bomb_is_refused_before_expanding(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    six = ", ".join(f"{{InputWindowStrides: [1, {k}]}}" for k in range(1, 7))
    matrix = "      InputTensor.DataType: [FLOAT32, FLOAT16, INT32, UINT8, INT8]\n"
    matrix += "".join(f"      each_{i}: [{six}]\n" for i in range(24))
    path = write(tmp_path, OK_CASE + "    matrix:\n" + matrix)
    (line,) = refused(capsys, "validate", str(path))
    assert line == f"{path}:9:5: matrix: expands to {5 * 6**24} cases, over the limit of 20000 per file"


def test_ties_levels_that_overflow_are_one_line_without_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generator = "Generator: {Kind: ties, Seed: 1, Low: 1.0e308, Step: 1.0e308, Distinct: 3}"
    path = write(tmp_path, OK_CASE.replace("Data: [[1, 2], [3, 4]]", generator))
    (line,) = refused(capsys, "validate", str(path))
    assert "InputTensor.Generator.Low: ties: not all of [1e+308, inf, inf] are exact FLOAT32 values" in line


def test_one_bad_file_does_not_hide_the_problems_of_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, billion_laughs(9), "a-bomb.yaml")
    write(tmp_path, b"\xff\xfe garbage", "b-binary.yaml")
    write(tmp_path, OK_CASE, "c-ok.yaml")
    write(tmp_path, OK_CASE.replace("[1, 1]", "[1, 0]"), "d-zero-stride.yaml")
    lines = refused(capsys, "validate", str(tmp_path))
    assert [Path(line.split(":")[0]).name for line in lines] == ["a-bomb.yaml", "b-binary.yaml", "d-zero-stride.yaml"]


# --- --keep-going, empty directories, --max-run-elements, symbolic links, the loader's limits on the CLI -------------

TWO_CASES = (
    OK_CASE
    + """\
  - id: zero-stride
    InputTensor: {Sizes: [2, 2], DataType: FLOAT32, Data: [[1, 2], [3, 4]]}
    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 2]
    InputWindowStrides: [1, 0]
"""
)


def run_argv(path: Path, report_dir: Path, *more: str) -> list[str]:
    return ["run", str(path), "--ep", "cpu", "-j", "0", "--report-dir", str(report_dir), *more]


def test_keep_going_runs_the_valid_files_and_records_the_problems(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file with any problem contributes no case, even its valid ones (c-mixed.yaml's ``ok``)."""
    cases, reports = tmp_path / "cases", tmp_path / "reports"
    cases.mkdir()
    write(cases, OK_CASE, "a-ok.yaml")
    write(cases, "", "b-empty.yaml")
    write(cases, TWO_CASES, "c-mixed.yaml")
    problems = [
        f"{cases}/b-empty.yaml:1:1: empty file: expected 'operator:' and 'cases:'",
        f"{cases}/c-mixed.yaml:13:29: InputWindowStrides.1: dimension 1: strides may not be 0",
    ]
    assert refused(capsys, *run_argv(cases, reports)) == problems  # without --keep-going: nothing runs
    assert not reports.exists()

    assert main(run_argv(cases, reports, "--keep-going")) == 2
    out, err = capsys.readouterr()
    assert err.splitlines() == [
        *problems,
        "2 problem(s) in 3 file(s)",
        "--keep-going: skipping the 2 file(s) with problems, running the others",
        "2 file(s) were skipped for 2 problem(s) (listed above and in results.json): exit code 2",
    ]
    assert "running 1 case(s) from 1 file(s) on cpu" in out
    document = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    assert [(r["case"], r["status"]) for r in document["results"]] == [(f"{cases}/a-ok.yaml::ok", "PASS")]
    assert document["environment"]["problems"] == problems
    assert {"report.html", "summary.md", "junit.xml"} <= {p.name for p in reports.iterdir()}
    summary_md = (reports / "summary.md").read_text(encoding="utf-8")
    assert "- **case files skipped** (`--keep-going`) for 2 problem(s): the run fails" in summary_md
    assert "b-empty.yaml:1:1: empty file" in summary_md
    html = (reports / "report.html").read_text(encoding="utf-8")
    assert "Case files skipped for their problems (2)" in html and "FAILED" in html
    assert "case files skipped (--keep-going) for 2 problem(s): the run fails" in out

    # Every later report of this results.json says the input was invalid; diff compares it like any other run.
    results = str(reports / "results.json")
    assert main(["report", results, "--out-dir", str(tmp_path / "again")]) == 2
    assert (tmp_path / "again" / "summary.md").exists()
    assert main(["merge", results, "--report-dir", str(tmp_path / "merged")]) == 2
    merged = json.loads((tmp_path / "merged" / "results.json").read_text(encoding="utf-8"))
    assert merged["environment"]["problems"] == problems
    assert main(["diff", results, results]) == 0
    err = capsys.readouterr().err
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

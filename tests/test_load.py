"""Loading case files: one-line ``path:line:col`` problems for unusable YAML, safety limits, and the case library.

Every expected position below is counted by hand in the YAML text of the test (lines and columns are 1-based).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
import yaml

from conformance.cases import load
from conformance.cases.load import load_document
from conformance.cases.parse import Rejected
from conformance.cases.suite import collect, find_case_files, read_file
from conformance.cases.validate import validate
from conformance.problems import CaseFileError

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"


def write(tmp_path: Path, content: str | bytes, name: str = "case.yaml") -> str:
    path = tmp_path / name
    path.write_bytes(content.encode() if isinstance(content, str) else content)
    return str(path)


def refusal(path: str, **limits: int) -> list[str]:
    """The one-line problems load_document raises for ``path``."""
    with pytest.raises(CaseFileError) as info:
        load_document(path, **limits)
    lines = [str(problem) for problem in info.value.problems]
    assert all("\n" not in line for line in lines)
    assert str(info.value) == "\n".join(lines)
    return lines


# --- YAML syntax ------------------------------------------------------------------------------------------------


def test_unclosed_flow_sequence_points_at_the_end_and_names_where_it_began(tmp_path: Path) -> None:
    path = write(tmp_path, "operator: TOP_K1\ncases:\n  - id: a\n    K: [1, 2\n")
    assert refusal(path) == [
        f"{path}:5:1: YAML syntax error: expected ',' or ']', but got '<stream end>' "
        "(while parsing a flow sequence at line 4, column 8)"
    ]


def test_mapping_value_in_the_wrong_place(tmp_path: Path) -> None:
    path = write(tmp_path, "operator: TOP_K1\n  bad: x\n")
    assert refusal(path) == [f"{path}:2:6: YAML syntax error: mapping values are not allowed here"]


def test_tab_indentation(tmp_path: Path) -> None:
    path = write(tmp_path, "operator: TOP_K1\ncases:\n\t- id: a\n")
    assert refusal(path) == [f"{path}:3:1: YAML syntax error: found character '\\t' that cannot start any token"]


# --- duplicate keys ---------------------------------------------------------------------------------------------


def test_duplicate_top_level_key(tmp_path: Path) -> None:
    path = write(tmp_path, "operator: TOP_K1\ncases: []\noperator: SLICE1\n")
    assert refusal(path) == [f"{path}:3:1: operator: duplicate key 'operator' (first at line 1)"]


def test_duplicate_key_inside_a_case(tmp_path: Path) -> None:
    text = "operator: TOP_K1\ncases:\n  - id: a\n    Axis: 1\n    K: 2\n    K: 3\n"
    path = write(tmp_path, text)
    assert refusal(path) == [f"{path}:6:5: cases.0.K: duplicate key 'K' (first at line 5)"]


def test_duplicate_key_in_a_flow_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "operator: TOP_K1\ncases:\n  - {id: a, id: b}\n")
    assert refusal(path) == [f"{path}:3:13: cases.0.id: duplicate key 'id' (first at line 3)"]


# --- tags: refused, never constructed ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "tag"),
    [
        ("!!python/object/apply:os.system ['true']", "tag:yaml.org,2002:python/object/apply:os.system"),
        ("!!python/name:os.system", "tag:yaml.org,2002:python/name:os.system"),
        ("!!binary aGVsbG8=", "tag:yaml.org,2002:binary"),
        ("!!timestamp 2024-01-01", "tag:yaml.org,2002:timestamp"),
        ("!foo bar", "!foo"),
        ("!foo {a: 1}", "!foo"),
        ("!foo [1, 2]", "!foo"),
        ("!!set {a, b}", "tag:yaml.org,2002:set"),
    ],
)
def test_tags_beyond_the_core_schema_are_refused_at_the_tagged_node(tmp_path: Path, value: str, tag: str) -> None:
    path = write(tmp_path, f"operator: TOP_K1\ncases:\n  - id: a\n    description: {value}\n")
    assert refusal(path) == [f"{path}:4:18: cases.0.description: unsupported YAML tag {tag!r}"]


def test_python_object_apply_is_never_executed(tmp_path: Path) -> None:
    """The same payload creates its marker file under yaml.unsafe_load, and nothing under load_document."""
    control, marker = tmp_path / "control-marker", tmp_path / "marker"
    payload = "operator: TOP_K1\ncases:\n  - id: a\n    description: !!python/object/apply:builtins.open [{}, w]\n"
    yaml.unsafe_load(payload.format(control))
    assert control.exists(), "the payload must be live for this test to mean anything"
    path = write(tmp_path, payload.format(marker))
    assert refusal(path) == [
        f"{path}:4:18: cases.0.description: unsupported YAML tag 'tag:yaml.org,2002:python/object/apply:builtins.open'"
    ]
    assert not marker.exists()


@pytest.mark.parametrize("key", ["!!python/name:os.system k", "!!binary aGVsbG8=", "[a, b]", "<<"])
def test_mapping_keys_must_be_plain_names(tmp_path: Path, key: str) -> None:
    path = write(tmp_path, f"operator: TOP_K1\n{key}: 1\n")
    assert refusal(path) == [f"{path}:2:1: mapping keys must be plain names (no tags, merges or collections)"]


# --- plain scalars: YAML 1.2 core-schema resolution --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("3_1", "3_1"),  # YAML 1.1 would read the integer 31
        ("1:30", "1:30"),  # ... and the base-60 integer 90
        ("2024-01-01", "2024-01-01"),  # ... and a timestamp (then refused as an unsupported tag)
        ("1e-5", 1e-5),  # ... and a string
        ("-1E+3", -1000.0),
        ("0x1f", 31),
        ("-7", -7),
        ("-0.0", -0.0),
        ("true", True),
        ("~", None),
    ],
)
def test_plain_scalars(tmp_path: Path, text: str, value: object) -> None:
    data = load_document(write(tmp_path, f"v: {text}\n")).data
    assert data == {"v": value} and type(data["v"]) is type(value)


# --- file-level refusals ----------------------------------------------------------------------------------------


def test_non_utf8_byte_is_located(tmp_path: Path) -> None:
    path = write(tmp_path, b"operator: TOP_K1\ncases: []\n# \xff\xfe\n")
    assert refusal(path) == [f"{path}:3:3: not UTF-8 text: byte 0xff at offset 29"]


def test_non_utf8_column_counts_characters_not_bytes(tmp_path: Path) -> None:
    path = write(tmp_path, "# é".encode() + b"\xc3(\n")  # 'é' is two bytes, one column
    assert refusal(path) == [f"{path}:1:4: not UTF-8 text: byte 0xc3 at offset 4"]


LONE_SURROGATE_ID = """\
operator: TOP_K1
feature_level: "2_1"
cases:
  - id: "\\ud800x"
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
"""


def test_a_lone_surrogate_in_a_string_or_a_key_is_refused_where_written(tmp_path: Path) -> None:
    # YAML's "\ud800" escape makes a lone surrogate, which no UTF-8 file can hold: the id is at line 4, column 9.
    path = write(tmp_path, LONE_SURROGATE_ID)
    assert refusal(path) == [
        f"{path}:4:9: cases.0.id: \\ud800 is a lone surrogate, not a character: write valid Unicode"
    ]
    key = write(tmp_path, 'operator: TOP_K1\ncases:\n  - id: a\n    "K\\udfff": 1\n', "key.yaml")
    assert refusal(key) == [f"{key}:4:5: cases.0: \\udfff is a lone surrogate, not a character: write valid Unicode"]


def test_a_lone_surrogate_id_is_refused_by_validate_and_run_runs_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.cli.main import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "s.yaml").write_text(LONE_SURROGATE_ID, encoding="utf-8")
    line = "s.yaml:4:9: cases.0.id: \\ud800 is a lone surrogate, not a character: write valid Unicode"
    assert main(["validate", "s.yaml"]) == 2
    assert capsys.readouterr().err.splitlines()[0] == line
    assert main(["run", "s.yaml", "--ep", "cpu", "-j", "0", "--report-dir", "r"]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[0] == line and "Traceback" not in err
    assert not (tmp_path / "r" / "results.jsonl").exists()


def test_a_file_name_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    name = os.fsdecode(b"\xffcase.yaml")  # as a directory walk on Linux would give it: a surrogate-escaped byte
    path = write(tmp_path, LONE_SURROGATE_ID.replace("\\ud800x", "x"), name)
    shown = f"{tmp_path}/\\xffcase.yaml"
    assert refusal(path) == [
        f"{shown}:1:1: the file's name is not valid UTF-8: case ids name their file, and "
        "results.json is UTF-8; rename it"
    ]


@pytest.mark.parametrize("content", ["", "\n\n", "# only a comment\n"])
def test_empty_file(tmp_path: Path, content: str) -> None:
    path = write(tmp_path, content)
    assert refusal(path) == [f"{path}:1:1: empty file: expected 'operator:' and 'cases:'"]


def test_missing_file(tmp_path: Path) -> None:
    path = str(tmp_path / "absent.yaml")
    assert refusal(path) == [f"{path}:1:1: cannot read file: No such file or directory"]


def test_file_over_max_file_bytes_is_refused_before_reading(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write(tmp_path, "description: " + "x" * 187 + "\n")  # 201 bytes

    def no_open(*args: object, **kwargs: object) -> None:
        raise AssertionError("the file was opened")

    monkeypatch.setattr(load, "open", no_open, raising=False)
    assert refusal(path, max_file_bytes=200) == [f"{path}:1:1: file is 201 bytes, over the limit of 200"]


def test_file_at_max_file_bytes_is_read(tmp_path: Path) -> None:
    path = write(tmp_path, "description: " + "x" * 187 + "\n")
    assert load_document(path, max_file_bytes=201).data == {"description": "x" * 187}


# --- size and shape of the document -----------------------------------------------------------------------------


def billion_laughs(levels: int) -> str:
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def test_alias_bomb_is_refused_fast_with_a_small_node_limit(tmp_path: Path) -> None:
    path = write(tmp_path, billion_laughs(9))  # 10**9 strings once expanded
    started = time.perf_counter()
    lines = refusal(path, max_nodes=1000)
    assert time.perf_counter() - started < 1.0
    # a0 holds 11 nodes, a1 111, a2 1111: a2 (line 3, its anchor at column 5) is the first over 1000.
    assert lines == [f"{path}:3:5: a2: document has more than 1000 nodes (alias bomb or huge file?)"]


def test_alias_bomb_is_refused_fast_under_the_default_limit(tmp_path: Path) -> None:
    started = time.perf_counter()
    lines = refusal(write(tmp_path, billion_laughs(9)))
    assert time.perf_counter() - started < 2.0
    assert lines[0].endswith(f"document has more than {load.DEFAULT_MAX_NODES} nodes (alias bomb or huge file?)")


def test_node_limit_counts_aliases_each_time_they_are_used(tmp_path: Path) -> None:
    # The mapping, its 2 keys, a = [1, 2, 3] (4 nodes) and b = [*x, *x] (1 + 2 * 4): 16 nodes once expanded.
    path = write(tmp_path, "a: &x [1, 2, 3]\nb: [*x, *x]\n")
    assert load_document(path, max_nodes=16).data == {"a": [1, 2, 3], "b": [[1, 2, 3], [1, 2, 3]]}
    assert refusal(path, max_nodes=15) == [f"{path}:1:1: document has more than 15 nodes (alias bomb or huge file?)"]
    assert refusal(path, max_nodes=8) == [f"{path}:2:4: b: document has more than 8 nodes (alias bomb or huge file?)"]


@pytest.mark.parametrize("text", ["a: &a [*a]\n", "a: &a {b: *a}\n"])
def test_recursive_alias_is_refused(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text)
    assert refusal(path)[0].endswith("an alias refers to a node that contains it (recursive document)")


def test_deep_nesting_is_refused_without_a_traceback(tmp_path: Path) -> None:
    path = write(tmp_path, "a: " + "[" * 100 + "]" * 100 + "\n")
    lines = refusal(path)
    assert lines[0].startswith(f"{path}:1:") and lines[0].endswith(f"nesting is deeper than {load.MAX_DEPTH} levels")


def test_nesting_too_deep_for_the_yaml_parser_is_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "a: " + "[" * 20000 + "]" * 20000 + "\n")
    (line,) = refusal(path)
    assert line.startswith(f"{path}:1:") and "YAML nesting is too deep to read" in line


def test_positions_are_recorded_for_keys_and_list_items(tmp_path: Path) -> None:
    doc = load_document(write(tmp_path, "operator: TOP_K1\ncases:\n  - id: a\n    Sizes: [1,  4]\n"))
    assert str(doc.pos(("cases", 0, "Sizes"))) == f"{doc.path}:4:5"
    assert str(doc.pos(("cases", 0, "Sizes", 1))) == f"{doc.path}:4:17"
    assert str(doc.pos(("cases", 0, "nowhere", 3))) == f"{doc.path}:3:5"  # nearest recorded ancestor


def test_find_case_files_finds_yaml_sorted(tmp_path: Path) -> None:
    for name in ("b/z.yml", "b/a.yaml", "a.yaml", "notes.txt"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("operator: TOP_K1\ncases: []\n")
    found = [Path(f.path).relative_to(tmp_path).as_posix() for f in find_case_files([str(tmp_path)]).files]
    assert found == ["a.yaml", "b/a.yaml", "b/z.yml"]


# --- the case library -------------------------------------------------------------------------------------------


def library_files() -> list[str]:
    return [found.path for found in find_case_files([str(CASES_DIR)]).files]


def test_the_case_library_has_every_operator() -> None:
    operators = {"top_k1", "mean_variance_normalization1", "slice1"}
    assert {Path(p).parent.name for p in library_files()} == {*operators, "found"}
    found = {Path(p).stem for p in library_files() if Path(p).parent.name == "found"}
    written_by_fuzz = {stem for stem in found if stem.startswith("fuzz-")}
    assert found - written_by_fuzz == operators
    assert all(stem.split("-")[1] in operators for stem in written_by_fuzz)


def test_every_case_file_loads_and_validates_without_problems() -> None:
    suite = collect([str(CASES_DIR)])
    assert [str(p) for p in suite.problems] == []
    assert suite.files == len(library_files()) and len(suite.entries) > 100


@pytest.mark.parametrize("path", library_files(), ids=lambda p: Path(p).relative_to(CASES_DIR).as_posix())
def test_every_expect_invalid_case_is_rejected(path: str) -> None:
    """A negative case that parse and validate both accept would silently test nothing."""
    entries, problems = read_file(path)
    assert problems == []
    for entry in entries:
        if isinstance(entry, Rejected):
            assert entry.expect_invalid is not None, entry.id
            assert entry.problems, f"{entry.id} was rejected without a reason"
        elif entry.expect_invalid is not None:
            assert validate(entry), f"{entry.id} is expect: invalid but validates clean"
        else:
            assert validate(entry) == []

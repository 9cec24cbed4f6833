"""Hostile case files, each class named in the issue sent once through ``conformance.cli.main.main``: one-line
``path:line:col: ...`` problems, exit code 2, no traceback, nothing run (the fuzzing is in test_fuzz_input.py)."""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path

import pytest
import yaml
from hostile import OK_CASE, accepted, billion_laughs, refused, write

from conformance.cases.load import load_document
from conformance.problems import CaseFileError


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
    write(tmp_path, "operator: TOP_K1\n" + billion_laughs(9), "a-bomb.yaml")  # a case file, as far as its start goes
    write(tmp_path, b"\xff\xfe garbage", "b-binary.yaml")
    write(tmp_path, OK_CASE, "c-ok.yaml")
    write(tmp_path, OK_CASE.replace("[1, 1]", "[1, 0]"), "d-zero-stride.yaml")
    lines = refused(capsys, "validate", str(tmp_path))
    assert [Path(line.split(":")[0]).name for line in lines] == ["a-bomb.yaml", "b-binary.yaml", "d-zero-stride.yaml"]

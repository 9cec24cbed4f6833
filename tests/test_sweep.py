"""Sweeps: ``matrix:`` expands a case to the product of its lists, in the order written, with readable ids.

Positions are counted by hand: the header takes lines 1-3, the case starts at line 4, its ``matrix:`` entries
are at column 7.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from conformance.cases.load import load_document
from conformance.cases.parse import Entry, Rejected, parse_document
from conformance.cases.sweep import MAX_VARIANT_VALUES, Budget, expand
from conformance.model import Case, DataType, Mvn1Desc, SourcePos, TopK1Desc

TOPK = """operator: TOP_K1
feature_level: '3_1'
cases:
  - id: sweep
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 1
    K: 2
    matrix:
"""
MVN = """operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: '3_1'
cases:
  - id: act
    InputTensor: {Sizes: [1, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axes: [1]
    FusedActivation: {Type: LEAKY_RELU, Alpha: 0.3}
    matrix:
"""


def parse(tmp_path: Path, text: str) -> tuple[str, list[Entry], list[str]]:
    path = tmp_path / "sweep.yaml"
    path.write_text(text)
    entries, problems = parse_document(load_document(path))
    return str(path), entries, [str(p) for p in problems]


def cases(tmp_path: Path, text: str) -> list[Case]:
    _, entries, problems = parse(tmp_path, text)
    assert problems == []
    assert all(isinstance(e, Case) for e in entries), entries
    return [e for e in entries if isinstance(e, Case)]


def suffixes(found: list[Case]) -> list[str]:
    return [c.id.rpartition("::")[2] for c in found]


def test_product_in_the_written_order(tmp_path: Path) -> None:
    found = cases(
        tmp_path,
        TOPK + "      InputTensor.DataType: [FLOAT16, FLOAT32]\n      AxisDirection: [INCREASING, DECREASING]\n",
    )
    assert suffixes(found) == [
        "sweep[FLOAT16-INCREASING]",
        "sweep[FLOAT16-DECREASING]",
        "sweep[FLOAT32-INCREASING]",
        "sweep[FLOAT32-DECREASING]",
    ]
    descs = [c.descriptor for c in found]
    assert all(isinstance(d, TopK1Desc) for d in descs)
    assert [(d.input.data_type, d.axis_direction) for d in descs if isinstance(d, TopK1Desc)] == [
        (DataType.FLOAT16, "INCREASING"),
        (DataType.FLOAT16, "DECREASING"),
        (DataType.FLOAT32, "INCREASING"),
        (DataType.FLOAT32, "DECREASING"),
    ]


def test_list_values_label_with_x(tmp_path: Path) -> None:
    found = cases(tmp_path, TOPK.replace("Axis: 1", "Axis: 0") + "      InputTensor.Sizes: [[4, 2, 3], [5]]\n")
    assert suffixes(found) == ["sweep[4x2x3]", "sweep[5]"]
    assert [c.descriptor.input.sizes for c in found] == [(4, 2, 3), (5,)]


def test_mapping_values_label_as_key_equals_value(tmp_path: Path) -> None:
    found = cases(
        tmp_path,
        MVN + "      FusedActivation: [{Type: RELU}, {Type: HARD_SIGMOID, Alpha: 0.3, Beta: 0.4}]\n"
        "      NormalizeVariance: [true, false]\n",
    )
    assert suffixes(found) == [
        "act[Type=RELU-true]",
        "act[Type=RELU-false]",
        "act[Type=HARD_SIGMOID,Alpha=0.3,Beta=0.4-true]",
        "act[Type=HARD_SIGMOID,Alpha=0.3,Beta=0.4-false]",
    ]
    activations = [c.descriptor.fused_activation for c in found if isinstance(c.descriptor, Mvn1Desc)]
    assert [(a.type, dict(a.params)) for a in activations if a is not None] == [
        ("RELU", {}),
        ("RELU", {}),
        ("HARD_SIGMOID", {"alpha": 0.3, "beta": 0.4}),
        ("HARD_SIGMOID", {"alpha": 0.3, "beta": 0.4}),
    ]


def test_a_value_replaces_the_whole_field(tmp_path: Path) -> None:
    """The base case's Alpha: 0.3 does not leak into a swept {Type: RELU}, which takes no Alpha."""
    found = cases(tmp_path, MVN + "      FusedActivation: [{Type: RELU}]\n")
    assert isinstance(found[0].descriptor, Mvn1Desc) and found[0].descriptor.fused_activation is not None
    assert dict(found[0].descriptor.fused_activation.params) == {}


def test_dotted_path_sets_one_field_of_a_tensor(tmp_path: Path) -> None:
    found = cases(tmp_path, MVN + "      FusedActivation.Alpha: [0.1, 0.2]\n")
    assert suffixes(found) == ["act[0.1]", "act[0.2]"]
    params = [
        dict(c.descriptor.fused_activation.params)
        for c in found
        if isinstance(c.descriptor, Mvn1Desc) and c.descriptor.fused_activation is not None
    ]
    assert params == [{"alpha": 0.1}, {"alpha": 0.2}]


def test_overridden_field_position_points_to_the_matrix_entry(tmp_path: Path) -> None:
    found = cases(tmp_path, TOPK + "      InputTensor.Sizes: [[1, 4]]\n      K: [1]\n")
    case = found[0]
    assert str(case.pos("InputTensor.Sizes")) == f"{case.path}:9:7"
    assert str(case.pos("InputTensor.Sizes.1")) == f"{case.path}:9:7"  # the base case's item positions are gone
    assert str(case.pos("K")) == f"{case.path}:10:7"
    assert str(case.pos("InputTensor.DataType")) == f"{case.path}:5:34"  # not swept: where the case wrote it
    assert str(case.pos("Axis")) == f"{case.path}:6:5"


def test_a_bad_variant_is_rejected_at_the_matrix_entry(tmp_path: Path) -> None:
    path, entries, problems = parse(tmp_path, TOPK + "      InputTensor.DataType: [FLOAT32, INT9]\n")
    assert problems == []
    good, bad = entries
    assert isinstance(good, Case) and good.id.endswith("sweep[FLOAT32]")
    assert isinstance(bad, Rejected) and bad.id.endswith("sweep[INT9]")
    assert [str(p) for p in bad.problems] == [
        f"{path}:9:7: InputTensor.DataType: must be one of FLOAT32, FLOAT16, INT32, INT16, INT8, UINT32, UINT16, "
        "UINT8, got 'INT9'"
    ]


def test_an_unknown_field_introduced_by_the_matrix_is_refused_there(tmp_path: Path) -> None:
    path, entries, _ = parse(tmp_path, TOPK + "      Bogus: [1]\n")
    assert isinstance(entries[0], Rejected)
    assert str(entries[0].problems[0]).startswith(f"{path}:9:7: Bogus: unknown field")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ("      K.x: [1]\n", "9:7: matrix.K.x: path does not lead to a field of the case"),
        ("      Axis.Sizes.0: [1]\n", "9:7: matrix.Axis.Sizes.0: path does not lead to a field of the case"),
        (
            "      InputTensor.Sizes.0: [1]\n",
            "9:7: matrix.InputTensor.Sizes.0: path does not lead to a field of the case",
        ),
        ("      matrix.K: [1]\n", "9:7: matrix.matrix.K: path does not lead to a field of the case"),
        ("      K: []\n", "9:7: matrix.K: must be a non-empty list"),
        ("      K: 3\n", "9:7: matrix.K: must be a non-empty list"),
        ("      K: [1, 1]\n", "8:5: matrix: gives the id '{path}::sweep[1]' twice (repeated values?)"),
    ],
)
def test_bad_matrix_entries_are_file_problems(tmp_path: Path, entry: str, problem: str) -> None:
    path, entries, problems = parse(tmp_path, TOPK + entry)
    display = entries[0].id.partition("::")[0] if entries else ""  # the file as ids name it
    assert problems == [f"{path}:{problem.format(path=display)}"]
    assert len(entries) <= 1


@pytest.mark.parametrize("matrix", [" {}", " []", "", " 7"])
def test_matrix_must_map_paths_to_lists(tmp_path: Path, matrix: str) -> None:
    path, entries, problems = parse(tmp_path, TOPK.replace("    matrix:\n", f"    matrix:{matrix}\n"))
    assert (entries, problems) == ([], [f"{path}:8:5: matrix: must map field paths to non-empty lists"])


def test_a_case_without_matrix_is_one_variant_with_no_suffix() -> None:
    raw: dict[str, Any] = {"id": "a", "K": 2}
    positions = {"K": SourcePos("f.yaml", 3, 5)}
    (variant,), problems = expand(raw, positions)
    assert (variant.suffix, variant.raw, variant.positions, problems) == ("", raw, positions, [])


def test_expand_leaves_its_input_alone_and_variants_independent() -> None:
    raw: dict[str, Any] = {"InputTensor": {"Sizes": [2]}, "matrix": {"InputTensor.Sizes": [[1], [3, 4]]}}
    where = SourcePos("f.yaml", 9, 7)
    variants, problems = expand(raw, {"matrix.InputTensor.Sizes": where, "InputTensor.Sizes": SourcePos("f", 1, 1)})
    assert problems == []
    assert raw == {"InputTensor": {"Sizes": [2]}, "matrix": {"InputTensor.Sizes": [[1], [3, 4]]}}
    assert [v.raw for v in variants] == [{"InputTensor": {"Sizes": [1]}}, {"InputTensor": {"Sizes": [3, 4]}}]
    assert [v.suffix for v in variants] == ["[1]", "[3x4]"]
    assert all(v.positions["InputTensor.Sizes"] == where for v in variants)
    variants[0].raw["InputTensor"]["Sizes"].append(9)
    assert variants[1].raw["InputTensor"]["Sizes"] == [3, 4]


def test_each_sets_several_fields_together(tmp_path: Path) -> None:
    text = """
operator: TOP_K1
feature_level: "3_1"
cases:
  - id: ranks
    InputTensor: {Sizes: [5], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 0
    K: 2
    matrix:
      each:
        - {InputTensor.Sizes: [5], Axis: 0}
        - {InputTensor.Sizes: [2, 5], Axis: 1}
      each_k:
        - {K: 1}
        - {K: 3}
"""
    path = tmp_path / "c.yaml"
    path.write_text(text, encoding="utf-8")
    entries, problems = parse_document(load_document(str(path)))
    assert problems == []
    got = [(e.id.split("::")[1], e.descriptor.input.sizes, e.descriptor.axis, e.descriptor.k) for e in entries]
    assert got == [
        ("ranks[5,0-1]", (5,), 0, 1),
        ("ranks[5,0-3]", (5,), 0, 3),
        ("ranks[2x5,1-1]", (2, 5), 1, 1),
        ("ranks[2x5,1-3]", (2, 5), 1, 3),
    ]


def test_a_later_matrix_path_over_an_earlier_one_takes_its_positions() -> None:
    """Positions are by hand (the mapping, not a file): where one matrix entry sets ``A.E`` (a field the case
    lacks) and a later one sets ``A`` itself, the variant's position for ``A`` is the later entry's and ``A.E``'s,
    which no longer exists in the variant, is gone, as are the case's own positions under ``A``; a path beside them
    keeps its own."""
    at = {name: SourcePos("f.yaml", line, 1) for line, name in enumerate(("", "A", "A.B", "A.C", "AB", "matrix"), 1)}
    at |= {"matrix.A.E": SourcePos("f.yaml", 7, 7), "matrix.A": SourcePos("f.yaml", 8, 7)}
    raw = {"A": {"B": 1, "C": 2}, "AB": 3, "matrix": {"A.E": [5], "A": [{"D": 4}]}}
    [variant], problems = expand(raw, at)
    assert problems == []
    assert variant.raw == {"A": {"D": 4}, "AB": 3}
    assert variant.positions == {
        "": at[""],
        "AB": at["AB"],
        "matrix": at["matrix"],
        "matrix.A.E": at["matrix.A.E"],
        "matrix.A": at["matrix.A"],
        "A": at["matrix.A"],
    }


def test_a_matrix_costs_its_variants_values_not_its_own_in_each() -> None:
    """A matrix of 20,000 seeds (issue 39) is 20,000 variants of the case's few values each: what it takes from the
    file's budget is linear in the matrix, where counting the matrix's 20,000 values in every variant refused it."""
    seeds = list(range(20_000))
    raw = {
        "id": "seeds",
        "InputTensor": {"Sizes": [1, 8], "DataType": "FLOAT32", "Generator": {"Kind": "uniform", "Seed": 0}},
        "Axis": 1,
        "K": 2,
        "matrix": {"InputTensor.Generator.Seed": seeds},
    }
    budget = Budget()
    variants, problems = expand(raw, {"": SourcePos("f.yaml", 1, 1)}, budget)
    assert problems == [] and len(variants) == 20_000
    assert variants[123].raw["InputTensor"]["Generator"]["Seed"] == 123 and "matrix" not in variants[123].raw
    # The case without its matrix holds 12 values (3 mappings, 1 list, 8 scalars), and each variant sets one more.
    assert MAX_VARIANT_VALUES - budget.values == 20_000 * (12 + 1)

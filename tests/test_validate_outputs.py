"""Output tensor descriptors a case writes, and the clause ids each validator problem cites."""

from __future__ import annotations

from pathlib import Path

from conformance.cases.load import load_document
from conformance.cases.parse import parse_document
from conformance.cases.validate import validate
from conformance.model import Case

HEAD = """
operator: {op}
feature_level: "{level}"
cases:
  - id: c
"""
TOPK = """    InputTensor: {Sizes: [1, 1, 3, 4], DataType: FLOAT32, Generator: {Kind: uniform, Seed: 1}}
    Axis: 3
    K: 2
"""
SLICE = """    InputTensor: {Sizes: [4, 6], DataType: INT32, Generator: {Kind: integers, Seed: 1, Low: 0, High: 9}}
    InputWindowOffsets: [1, 0]
    InputWindowSizes: [3, 6]
    InputWindowStrides: [-1, 2]
"""


def _problems(tmp_path: Path, op: str, body: str, level: str = "3_1") -> list[tuple[str, str, tuple[str, ...]]]:
    path = tmp_path / "c.yaml"
    path.write_text(HEAD.format(op=op, level=level) + body, encoding="utf-8")
    entries, problems = parse_document(load_document(str(path)))
    if problems or not isinstance(entries[0], Case):
        return [(p.field, p.message, ()) for p in problems or entries[0].problems]  # type: ignore[union-attr]
    return [(p.field, p.message, p.clauses) for p in validate(entries[0])]


def test_correct_output_descriptors_are_accepted(tmp_path: Path) -> None:
    body = TOPK + "    OutputValueTensor: {Sizes: [1, 1, 3, 2], DataType: FLOAT32}\n"
    body += "    OutputIndexTensor: {Sizes: [1, 1, 3, 2], DataType: UINT32}\n"
    assert _problems(tmp_path, "TOP_K1", body) == []


def test_value_sizes_must_have_k_along_the_axis(tmp_path: Path) -> None:
    body = TOPK + "    OutputValueTensor: {Sizes: [1, 1, 3, 3]}\n"
    ((field, message, clauses),) = _problems(tmp_path, "TOP_K1", body)
    assert field == "OutputValueTensor.Sizes"
    assert "must be [1, 1, 3, 2]" in message
    assert clauses == ("TOP_K1.value-sizes",)


def test_index_type_cites_the_table_of_the_feature_level(tmp_path: Path) -> None:
    body = TOPK + "    OutputIndexTensor: {DataType: INT32}\n"
    ((_, _, at_2_1),) = _problems(tmp_path, "TOP_K1", body, level="2_1")
    ((_, _, at_3_1),) = _problems(tmp_path, "TOP_K1", body, level="3_1")
    assert at_2_1 == ("TOP_K1.support-2_1-indices", "TOP_K1.support-older-indices")
    assert at_3_1 == ("TOP_K1.support-3_1-indices", "TOP_K1.support-older-indices")


def test_k_out_of_range_cites_its_sentence(tmp_path: Path) -> None:
    ((field, _, clauses),) = _problems(tmp_path, "TOP_K1", TOPK.replace("K: 2", "K: 4"))
    assert (field, clauses) == ("K", ("TOP_K1.k-range",))


def test_slice_output_tensor_sizes_are_its_output_sizes(tmp_path: Path) -> None:
    assert _problems(tmp_path, "SLICE1", SLICE + "    OutputTensor: {Sizes: [3, 2], DataType: INT32}\n") == []
    # [2, 3]: MaxCopiedElements is [3, 3] ((6 - 1) // 2 + 1), so 2 and 3 are both allowed.
    assert _problems(tmp_path, "SLICE1", SLICE + "    OutputTensor: {Sizes: [2, 3]}\n") == []
    ((field, message, clauses),) = _problems(tmp_path, "SLICE1", SLICE + "    OutputTensor: {Sizes: [3, 4]}\n")
    assert (field, clauses) == ("OutputSizes.1", ("SLICE1.output-sizes-range",))
    assert "MaxCopiedElements 3" in message


def test_slice_output_sizes_given_twice_must_agree(tmp_path: Path) -> None:
    body = SLICE + "    OutputSizes: [3, 3]\n    OutputTensor: {Sizes: [3, 2]}\n"
    ((field, message, _),) = _problems(tmp_path, "SLICE1", body)
    assert field == "OutputTensor.Sizes"
    assert "differs from OutputSizes [3, 3]" in message


def test_slice_output_data_type(tmp_path: Path) -> None:
    ((field, _, clauses),) = _problems(tmp_path, "SLICE1", SLICE + "    OutputTensor: {DataType: UINT8}\n")
    assert (field, clauses) == ("OutputTensor.DataType", ("SLICE1.same-data-type",))


def test_tie_levels_must_be_exact_in_the_data_type(tmp_path: Path) -> None:
    ties = "UINT8, Generator: {Kind: ties, Seed: 1, Low: -1}"
    body = TOPK.replace("FLOAT32, Generator: {Kind: uniform, Seed: 1}", ties)
    ((field, message, _),) = _problems(tmp_path, "TOP_K1", body)
    assert field == "InputTensor.Generator.Low"
    assert "not all of [-1.0, 0.0, 1.0, 2.0] are exact UINT8 values" in message

"""Buffer-tensor layouts: reference/layout.py against hand-worked buffers, the validator's rules for Strides and
TotalTensorSizeInBytes (DML_BUFFER_TENSOR_DESC, DMLCalcBufferTensorSize) at their positions, and the inputs the
oracle reads through them."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.generate import case_inputs
from conformance.cases.layouts import Layout, case_layouts, input_layouts, output_layouts, packed_note
from conformance.cases.load import load_document
from conformance.cases.parameters import describe
from conformance.cases.parse import parse_document
from conformance.cases.validate import validate
from conformance.coverage.layouts import BROADCAST, LARGER, PADDED, PERMUTED, REJECTED, STRIDED_OUTPUT
from conformance.coverage.mapping import build_map, case_coverage
from conformance.coverage.markdown import render_coverage
from conformance.model import Case, DataType, FeatureLevel, OutputDesc
from reference.layout import (
    calc_buffer_tensor_size,
    element_offsets,
    first_alias,
    packed_strides,
    read_strided,
    through_buffer,
    write_strided,
)

# --- reference/layout.py ----------------------------------------------------------------------------------------


def test_packed_strides_are_row_major() -> None:
    assert packed_strides((2, 3, 4)) == (12, 4, 1)
    assert packed_strides((5,)) == (1,)


@pytest.mark.parametrize(
    ("element_size", "sizes", "strides", "expected"),
    [
        (4, (2, 3), None, 24),  # 6 elements of 4 bytes
        (2, (1, 3), None, 8),  # 6 bytes, rounded up to a DWORD
        (1, (5,), None, 8),
        (4, (2, 3), (4, 1), 28),  # last element at 1*4 + 2*1 = 6: 7 elements
        (2, (2, 3), (1, 2), 12),  # transposed: last at 1 + 4 = 5: 6 elements, 12 bytes
        (4, (4, 3), (0, 1), 12),  # broadcast rows: 3 elements
        (2, (3,), (5,), 24),  # last at 10: 11 elements, 22 bytes -> 24
    ],
)
def test_calc_buffer_tensor_size_is_the_helpers_formula(
    element_size: int, sizes: tuple[int, ...], strides: tuple[int, ...] | None, expected: int
) -> None:
    assert calc_buffer_tensor_size(element_size, sizes, strides) == expected


def test_write_and_read_through_padded_strides_leave_other_bytes() -> None:
    values = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16)
    buffer = np.full(16, 0xAB, dtype=np.uint8)
    write_strided(buffer, values, (4, 1))
    # Elements at 0, 1, 2 and 4, 5, 6 (2 bytes each); element 3 and 7 keep their 0xABAB.
    assert buffer.view(np.int16).tolist() == [1, 2, 3, -21589, 4, 5, 6, -21589]
    assert read_strided(buffer, np.int16, (2, 3), (4, 1)).tolist() == values.tolist()


def test_transposed_strides_store_columns_first() -> None:
    values = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.float32)
    buffer = write_strided(np.zeros(24, dtype=np.uint8), values, (1, 2))
    assert buffer.view(np.float32).tolist() == [1, 4, 2, 5, 3, 6]


def test_a_zero_stride_keeps_the_first_element_and_reads_it_everywhere() -> None:
    values = np.array([[1, 2], [3, 4], [5, 6]], dtype=np.float32)
    assert through_buffer(values, (0, 1)).tolist() == [[1, 2], [1, 2], [1, 2]]
    assert element_offsets((3, 2), (0, 1)).tolist() == [[0, 1], [0, 1], [0, 1]]


def test_first_alias_finds_zero_strides_and_interleaved_collisions_only() -> None:
    assert first_alias((2, 3), (3, 1)) is None
    assert first_alias((2, 3), (3, 2)) is None  # offsets 0 2 4 3 5 7: interleaved, but all different
    assert first_alias((2, 3), (1, 2)) is None
    assert first_alias((3, 2), (0, 1)) == ((0, 0), (1, 0))
    assert first_alias((2, 3), (2, 1)) == ((0, 2), (1, 0))  # both at offset 2


# --- validation ---------------------------------------------------------------------------------------------------

SLICE = """operator: SLICE1
feature_level: "3_0"
cases:
  - id: c
    InputTensor:
      Sizes: [2, 3]
      DataType: {dtype}
      Data: [[1, 2, 3], [4, 5, 6]]
{input}    InputWindowOffsets: [0, 0]
    InputWindowSizes: [2, 3]
    InputWindowStrides: [1, 1]
{output}"""


def _case(tmp_path: Path, input: str = "", output: str = "", dtype: str = "FLOAT32") -> Case:
    path = tmp_path / "c.yaml"
    path.write_text(SLICE.format(input=input, output=output, dtype=dtype), encoding="utf-8")
    entries, problems = parse_document(load_document(str(path)))
    assert problems == [] and isinstance(entries[0], Case), problems or entries[0]
    return entries[0]


def _lines(tmp_path: Path, input: str = "", output: str = "", dtype: str = "FLOAT32") -> list[str]:
    return [str(p) for p in validate(_case(tmp_path, input, output, dtype))]


def test_valid_layouts_are_accepted(tmp_path: Path) -> None:
    input = "      Strides: [4, 1]\n      TotalTensorSizeInBytes: 64\n"
    output = "    OutputTensor: {Strides: [1, 2], TotalTensorSizeInBytes: 32}\n"
    assert _lines(tmp_path, input, output) == []


def test_strides_must_give_one_entry_per_dimension(tmp_path: Path) -> None:
    lines = _lines(tmp_path, "      Strides: [4]\n")
    assert lines == [f"{tmp_path}/c.yaml:9:7: InputTensor.Strides: has 1 entries; DimensionCount is 2 (Sizes [2, 3])"]


def test_total_size_below_the_helpers_minimum_is_refused(tmp_path: Path) -> None:
    lines = _lines(tmp_path, "      Strides: [4, 1]\n      TotalTensorSizeInBytes: 24\n")
    assert lines == [
        f"{tmp_path}/c.yaml:10:7: InputTensor.TotalTensorSizeInBytes: is 24, below DMLCalcBufferTensorSize's 28 "
        "bytes (Sizes [2, 3], Strides [4, 1], 4-byte FLOAT32)"
    ]


def test_total_size_must_be_dword_aligned(tmp_path: Path) -> None:
    # FLOAT16 [2, 3] packed is 12 bytes: 14 is above the minimum but no multiple of 4.
    lines = _lines(tmp_path, "      TotalTensorSizeInBytes: 14\n", dtype="FLOAT16")
    assert lines == [
        f"{tmp_path}/c.yaml:9:7: InputTensor.TotalTensorSizeInBytes: is 14, not a multiple of 4 (a DWORD-aligned "
        "buffer size)"
    ]


def test_an_output_with_a_zero_stride_overlaps(tmp_path: Path) -> None:
    lines = _lines(tmp_path, output="    OutputTensor:\n      Strides: [0, 1]\n")
    assert lines == [
        f"{tmp_path}/c.yaml:13:7: OutputTensor.Strides: put output elements [0, 0] and [1, 0] at one address "
        "(a zero stride in dimension 0): an output's elements must not overlap"
    ]


def test_an_output_whose_strides_alias_overlaps(tmp_path: Path) -> None:
    (line,) = _lines(tmp_path, output="    OutputTensor: {Strides: [2, 1]}\n")
    assert "OutputTensor.Strides: put output elements [0, 2] and [1, 0] at one address (the strides alias)" in line


def test_a_zero_stride_on_an_input_is_a_broadcast(tmp_path: Path) -> None:
    problems = _lines(tmp_path, "      Strides: [0, 1]\n")
    # Allowed, but Data giving the two rows different values would be read as one row: refused at Data.
    assert problems == [
        f"{tmp_path}/c.yaml:8:7: InputTensor.Data: gives 4.0 at [1, 0], where the strides [0, 1] place an earlier "
        "element holding 1.0: elements at one address must hold one value"
    ]


def test_the_layout_decisions_are_named_on_their_problems(tmp_path: Path) -> None:
    # Neither is the spec's: DirectML's pages forbid neither overlapping outputs nor a Data that a broadcast loses.
    [overlap] = validate(_case(tmp_path, output="    OutputTensor: {Strides: [2, 1]}\n"))
    [broadcast] = validate(_case(tmp_path, "      Strides: [0, 1]\n"))
    assert (overlap.decision, broadcast.decision) == ("Output elements do not overlap", "One value per address")
    [total] = validate(_case(tmp_path, "      Strides: [4, 1]\n      TotalTensorSizeInBytes: 24\n"))
    assert total.decision == ""  # DML_BUFFER_TENSOR_DESC's own rule


def test_strides_spanning_more_than_max_elements_are_refused(tmp_path: Path) -> None:
    case = _case(tmp_path, "      Strides: [4000, 1]\n")
    (problem,) = validate(case, max_elements=1000)
    assert problem.field == "InputTensor.Strides" and "spans 4003 elements, over the limit of 1000" in problem.message


def test_a_layout_is_read_at_a_negative_case_too(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    text = SLICE.format(input="      Strides: [4, -1]\n", output="", dtype="FLOAT32")
    path.write_text(text, encoding="utf-8")
    entries, _ = parse_document(load_document(str(path)))
    (problem,) = entries[0].problems  # type: ignore[union-attr]
    assert str(problem).endswith("InputTensor.Strides.1: must be an integer (UINT) in [0, 4294967295], got -1")


# --- what the oracle reads, and what a result says ----------------------------------------------------------------


def test_inputs_are_read_through_their_strides(tmp_path: Path) -> None:
    mvn = tmp_path / "m.yaml"
    mvn.write_text(
        """operator: MEAN_VARIANCE_NORMALIZATION1
feature_level: "4_0"
cases:
  - id: m
    InputTensor: {Sizes: [1, 2, 2, 2], DataType: FLOAT32, Generator: {Kind: arange, Start: 1}}
    ScaleTensor: {Sizes: [1, 2, 2, 2], DataType: FLOAT32, Generator: {Kind: arange, Start: 10}, Strides: [0, 1, 0, 0]}
    BiasTensor: {Sizes: [1, 2, 2, 2], DataType: FLOAT32, Generator: {Kind: arange}, Strides: [8, 4, 2, 1]}
    Axes: [2, 3]
""",
        encoding="utf-8",
    )
    entries, problems = parse_document(load_document(str(mvn)))
    case = entries[0]
    assert problems == [] and isinstance(case, Case) and validate(case) == []
    inputs = case_inputs(case)
    # The Scale buffer holds one value per channel: the first element of each (10 and 14), broadcast over H and W.
    assert inputs["ScaleTensor"].ravel().tolist() == [10, 10, 10, 10, 14, 14, 14, 14]
    assert inputs["BiasTensor"].ravel().tolist() == list(range(8))  # packed strides: the values as generated
    assert inputs["InputTensor"].ravel().tolist() == list(range(1, 9))


def test_outputs_get_derived_sizes_and_types_with_the_case_layout(tmp_path: Path) -> None:
    case = _case(tmp_path, output="    OutputTensor: {Strides: [1, 2]}\n", dtype="INT8")
    (layout,) = output_layouts(case).values()
    assert (layout.sizes, layout.data_type, layout.strides, layout.buffer_bytes) == ((2, 3), DataType.INT8, (1, 2), 8)


def test_a_case_with_layouts_says_what_onnxruntime_leaves_out(tmp_path: Path) -> None:
    case = _case(tmp_path, "      Strides: [4, 1]\n", "    OutputTensor: {Strides: [1, 2]}\n")
    assert packed_note(case) == (
        "layouts not exercised through onnxruntime: InputTensor fed packed (the values read through the strides); "
        "OutputTensor read packed (strides and padding not checked)"
    )
    assert packed_note(_case(tmp_path)) == ""
    described = describe(case.descriptor, case.outputs)
    assert described["InputTensor"] == "[2, 3] FLOAT32, Data, Strides [4, 1]"
    assert described["OutputTensor"] == "Strides [1, 2]"


def test_coverage_reads_each_layout_off_the_case(tmp_path: Path) -> None:
    padded = _case(tmp_path, "      Strides: [4, 1]\n      TotalTensorSizeInBytes: 64\n")
    transposed_out = _case(tmp_path, output="    OutputTensor: {Strides: [1, 2]}\n")
    broadcast = _case(tmp_path, "      Strides: [0, 1]\n").descriptor.input
    assert case_coverage(padded).layouts == {PADDED, LARGER}
    assert case_coverage(transposed_out).layouts == {PERMUTED, STRIDED_OUTPUT}
    assert case_coverage(_case(tmp_path)).layouts == frozenset()
    assert broadcast.strides == (0, 1)  # (its Data disagrees: refused below, as a negative case)
    negative = tmp_path / "n.yaml"
    negative.write_text(
        SLICE.format(input="      Strides: [0, 1]\n", output="", dtype="FLOAT32").replace(
            "  - id: c\n", "  - id: c\n    expect: invalid\n"
        ),
        encoding="utf-8",
    )
    (entry,), _ = parse_document(load_document(str(negative)))
    assert case_coverage(entry).layouts == {REJECTED}
    coverage = build_map([case_coverage(padded), case_coverage(entry)])
    assert coverage.layouts[("SLICE1", PADDED)] == (padded.id,)
    assert coverage.layouts[("SLICE1", BROADCAST)] == ()
    assert "## Tensor layouts" in render_coverage(coverage, "t", "c")


def test_a_layout_writes_its_buffer_and_reads_it_back(tmp_path: Path) -> None:
    case = _case(tmp_path, "      Strides: [1, 2]\n      TotalTensorSizeInBytes: 32\n", dtype="INT16")
    layout = input_layouts(case)["InputTensor"]
    array = np.array([[1, 2, 3], [4, 5, 6]], dtype=np.int16)
    buffer = layout.buffer(array, fill=b"\xa5\xc3")
    # Column-major: 1 4 2 5 3 6 (12 bytes), then the fill up to 32 bytes.
    assert buffer[:12] == np.array([1, 4, 2, 5, 3, 6], dtype=np.int16).tobytes()
    assert buffer[12:] == b"\xa5\xc3" * 10
    assert layout.read(buffer + b"guard").tolist() == array.tolist()


# --- layouts carried by the case ----------------------------------------------------------------------------------


def test_a_case_carries_its_layouts_derived_once(tmp_path: Path) -> None:
    """parse derives every tensor's layout when it builds the case; the accessors hand out those, none made anew."""
    case = _case(tmp_path, "      Strides: [4, 1]\n", "    OutputTensor: {Strides: [1, 2]}\n")
    assert list(case.layouts.inputs) == ["InputTensor"] and list(case.layouts.outputs) == ["OutputTensor"]
    assert all(input_layouts(case)[name] is layout for name, layout in case.layouts.inputs.items())
    assert all(output_layouts(case)[name] is layout for name, layout in case.layouts.outputs.items())
    assert case.layouts.inputs["InputTensor"] == Layout("InputTensor", (2, 3), DataType.FLOAT32, (4, 1))
    assert case.layouts.outputs["OutputTensor"] == Layout("OutputTensor", (2, 3), DataType.FLOAT32, (1, 2))
    assert case.layouts == case_layouts(case.operator, case.descriptor, case.outputs)  # the one rule, as tests use it


def test_a_case_refuses_layouts_of_another_descriptor(tmp_path: Path) -> None:
    """Nothing builds a case whose layouts disagree with its descriptor or outputs: a replaced descriptor or outputs
    without their own layouts is refused; a replaced feature level (fuzz/level.py, run/operator_api.py) keeps them."""
    case = _case(tmp_path)
    other = dataclasses.replace(case.descriptor, input=dataclasses.replace(case.descriptor.input, sizes=(4, 3)))
    with pytest.raises(ValueError, match=r"c\.yaml::c: its layouts were derived from another"):
        dataclasses.replace(case, descriptor=other)
    with pytest.raises(ValueError, match=r"derived from another"):
        dataclasses.replace(case, outputs={"OutputTensor": OutputDesc(strides=(1, 2))})
    with pytest.raises(ValueError, match=r"derived from another"):
        Case(case.id, case.path, case.operator, case.feature_level, other, layouts=case.layouts)
    with pytest.raises(TypeError, match=r"layouts"):
        Case(case.id, case.path, case.operator, case.feature_level, other)  # type: ignore[call-arg]
    moved = dataclasses.replace(case, descriptor=other, layouts=case_layouts(case.operator, other))
    assert input_layouts(moved)["InputTensor"].sizes == (4, 3)
    assert dataclasses.replace(case, feature_level=FeatureLevel(4, 0)).layouts is case.layouts


def test_a_window_without_output_sizes_is_read_and_refused(tmp_path: Path) -> None:
    """A SLICE1 window whose arrays differ in length derives no output Sizes: the case is still read (its problems are
    the validator's to say), and only asking for its output layouts fails, as it did when they were derived on
    demand."""
    path = tmp_path / "c.yaml"
    text = SLICE.format(input="", output="", dtype="FLOAT32").replace("Strides: [1, 1]", "Strides: [1, 1, 1]")
    path.write_text(text, encoding="utf-8")
    (case,), problems = parse_document(load_document(str(path)))
    assert problems == [] and isinstance(case, Case)
    assert case.layouts.outputs == {} and case.layouts.no_outputs
    assert [p.field for p in validate(case)] == ["InputWindowStrides"]
    with pytest.raises(ValueError, match=r"zip\(\)"):
        output_layouts(case)

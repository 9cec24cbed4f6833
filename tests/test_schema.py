"""The case files' JSON Schema (conformance/cases/schema.py, committed as cases/case.schema.json): it is what
``dmlconf schema`` prints, every committed case file names it and is valid under it, and it refuses what the loader
(``dmlconf validate``) refuses, checked with the jsonschema library:

* on the hostile-input tests' files (tests/test_hostile_input.py): each is listed with what both say of it, and
  those only the loader can refuse say why the schema cannot (a spec rule, a rule over several fields);
* on every key of the table the schema is generated from (conformance/cases/keys.py): a case of each operator
  holding every key, each key removed, misspelt or given a value of the wrong kind, in a plain case, a sweep and a
  negative case.
"""

from __future__ import annotations

import ast
import copy
import enum
import json
import os
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from hostile import OK_CASE, TWO_CASES, billion_laughs

from conformance.cases.keys import (
    ACTIVATION_TYPE,
    CASE_KEYS,
    FILE_KEYS,
    GENERATOR_KEYS,
    MODE_KEYS,
    OUTPUT_KEYS,
    TENSOR_KEYS,
    TOLERANCE_KEYS,
    Key,
    Kind,
    activation_keys,
    expected_keys,
)
from conformance.cases.load import load_document
from conformance.cases.operators import OPERATORS
from conformance.cases.parse import case_keys
from conformance.cli.main import main
from conformance.model import Operator
from conformance.problems import CaseFileError

REPO = Path(__file__).resolve().parent.parent
CASES = REPO / "cases"
SCHEMA = CASES / "case.schema.json"
CASE_FILES = sorted(CASES.rglob("*.yaml"))
EDITOR_LINE = "# yaml-language-server: $schema="


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator.check_schema(schema)
    return jsonschema.Draft7Validator(schema)


def test_the_committed_schema_is_what_dmlconf_schema_prints(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    printed = capsys.readouterr().out
    assert json.loads(printed)["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert SCHEMA.read_text(encoding="utf-8") == printed, "run: dmlconf schema > cases/case.schema.json"


def test_the_case_library_has_files_and_schema_lists_every_operator(validator: jsonschema.Draft7Validator) -> None:
    assert len(CASE_FILES) > 20
    assert {Operator(op) for op in validator.schema["definitions"]["operator"]["anyOf"][0]["enum"]} == set(Operator)


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda path: path.relative_to(CASES).as_posix())
def test_every_case_file_names_the_schema_on_its_first_line(path: Path) -> None:
    first = path.read_text(encoding="utf-8").splitlines()[0]
    assert first == EDITOR_LINE + os.path.relpath(SCHEMA, path.parent).replace(os.sep, "/")
    assert (path.parent / first.removeprefix(EDITOR_LINE)).resolve() == SCHEMA


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda path: path.relative_to(CASES).as_posix())
def test_every_case_file_is_valid_under_the_schema(path: Path, validator: jsonschema.Draft7Validator) -> None:
    """As the loader reads it, and as a plain YAML 1.1 reader does (PyYAML's, like an editor's, reads 1e-5 as text)."""
    for document in (load_document(path).data, yaml.safe_load(path.read_text(encoding="utf-8"))):
        assert [error.message for error in validator.iter_errors(document)] == []


def test_positions_count_the_schema_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The loader's line:col still points at the key in a committed file that starts with the editor's line."""
    text = (CASES / "top_k1" / "spec_examples.yaml").read_text(encoding="utf-8")
    broken = text.replace("    K: ", "    Kk: ", 1)
    line = broken.splitlines().index(next(row for row in broken.splitlines() if row.startswith("    Kk: "))) + 1
    path = tmp_path / "spec_examples.yaml"
    path.write_text(broken, encoding="utf-8")
    assert main(["validate", str(path)]) == 2
    assert f"{path}:{line}:5: Kk: unknown field, did you mean K? (" in capsys.readouterr().err
    assert line > 2 and broken.startswith(EDITOR_LINE)


# --- the loader and the schema agree ------------------------------------------------------------------------------


def loader_refuses(path: Path, capsys: pytest.CaptureFixture[str]) -> bool:
    """Whether ``dmlconf validate`` refuses the file for its keys and values. An ``expected:`` golden the oracle
    disagrees with does not count: a mutation that changes the inputs (a generator's parameter dropped) leaves the
    full case's goldens behind, which is the data's problem, not a key's, and one no schema could see."""
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    assert code in (0, 2) and "Traceback" not in out + err, (out, err)
    problems = [line for line in err.splitlines()[:-1] if ", the oracle gives " not in line]
    return code == 2 and bool(problems)


def schema_refuses(document: Any, validator: jsonschema.Draft7Validator) -> bool:
    return not validator.is_valid(document)


class Verdict(enum.Enum):
    BOTH_REFUSE = "both refuse"
    BOTH_ACCEPT = "both accept"
    LOADER_ONLY = "the loader refuses by a rule no JSON Schema can state"  # the reason says which
    UNREADABLE = "refused while reading bytes or YAML, before there is a document a schema could check"


@dataclass(frozen=True)
class Hostile:
    test: str  # the test of tests/test_hostile_input.py that writes it
    name: str
    content: str | bytes
    verdict: Verdict
    why: str = ""  # for LOADER_ONLY and UNREADABLE


def _with(old: str, new: str, text: str = OK_CASE) -> str:
    assert old in text
    return text.replace(old, new)


_STRIDE_ZERO = "a spec rule (validate.py, SLICE1 'Strides may not be 0'): the schema holds the format, not the spec"
HOSTILE = [
    Hostile("test_alias_bomb", "alias-bomb", billion_laughs(9), Verdict.UNREADABLE, "its nodes are counted as read"),
    *(
        Hostile("test_deep_nesting", f"deep-{o}", o * 100_000 + "1" + c * 100_000, Verdict.UNREADABLE, "too deep")
        for o, c in (("[", "]"), ("{a: ", "}"), ("- ", ""))
    ),
    Hostile(
        "test_binary_garbage_is_not_utf8", "garbage", random.Random(7).randbytes(500_000), Verdict.UNREADABLE, "bytes"
    ),
    Hostile(
        "test_latin1_byte_is_located",
        "latin1",
        _with("id: ok", "id: caf\xe9").encode("latin-1"),
        Verdict.UNREADABLE,
        "not UTF-8",
    ),
    Hostile("test_nul_byte_is_one_line", "nul", _with("id: ok", "id: o\x00k"), Verdict.UNREADABLE, "YAML refuses NUL"),
    *(
        Hostile("test_empty_file", f"empty-{i}", text, Verdict.UNREADABLE, "no document at all")
        for i, text in enumerate(["", "\n\n", "# only\n# comments\n"])
    ),
    *(
        Hostile(
            "test_python_tags_are_never_executed",
            f"tag-{i}",
            _with("id: ok", f"id: {tag}"),
            Verdict.UNREADABLE,
            "a YAML tag beyond the core schema (JSON has no tags)",
        )
        for i, tag in enumerate(
            [
                "!!python/object/apply:os.system ['touch marker']",
                "!!python/object/apply:builtins.open ['marker', w]",
                "!!python/object/apply:builtins.exec [\"open('marker', 'w')\"]",
            ]
        )
    ),
    Hostile(
        "test_nodes_are_counted_while_composing_not_after",
        "many-nodes",
        "a: [" + "0," * 400_000 + "0]\n",
        Verdict.UNREADABLE,
        "over the node limit while composing",
    ),
    Hostile("test_bom_and_crlf_are_read", "bom-crlf", "\ufeff" + OK_CASE.replace("\n", "\r\n"), Verdict.BOTH_ACCEPT),
    Hostile(
        "test_wrong_sizes",
        "sizes-long-integer",
        _with("Sizes: [2, 2]", f"Sizes: [{10**100}, 2]"),
        Verdict.UNREADABLE,
        "an integer literal of over 100 characters is refused while reading",
    ),
    *(
        Hostile("test_wrong_sizes", f"sizes-{sizes}", _with("Sizes: [2, 2]", f"Sizes: {sizes}"), Verdict.BOTH_REFUSE)
        for sizes in ("[4294967296, 2]", "[-2, 2]", "[true, 2]", "[.nan, 2]", "'2, 2'")
    ),
    Hostile(
        "test_wrong_sizes",
        "sizes-2.0",
        _with("Sizes: [2, 2]", "Sizes: [2.0, 2]"),
        Verdict.LOADER_ONLY,
        "JSON Schema (draft 6 and later) counts 2.0 as an integer; the loader wants an integer literal",
    ),
    Hostile(
        "test_a_5000_digit_integer_is_one_line",
        "5000-digits",
        _with("Sizes: [2, 2]", "Sizes: [" + "7" * 5000 + ", 2]"),
        Verdict.UNREADABLE,
        "an integer literal of over 100 characters is refused while reading",
    ),
    Hostile(
        "test_elements_are_limited_before_anything_is_allocated",
        "elements",
        _with("Sizes: [2, 2]", "Sizes: [4294967295, 4294967295, 4294967295, 4294967295]")
        .replace("Data: [[1, 2], [3, 4]]", "Generator: {Kind: uniform, Seed: 1}")
        .replace("[0, 0]", "[0, 0, 0, 0]")
        .replace("[2, 2]", "[2, 2, 2, 2]")
        .replace("[1, 1]", "[1, 1, 1, 1]"),
        Verdict.LOADER_ONLY,
        "the product of Sizes against --max-elements: a rule over a list's values and an option",
    ),
    Hostile(
        "test_data_longer_than_sizes_is_refused",
        "data-vs-sizes",
        _with("Sizes: [2, 2]", "Sizes: [2, 200000]"),
        Verdict.LOADER_ONLY,
        "Data's shape against Sizes: a rule over two fields",
    ),
    Hostile(
        "test_nan_and_infinity_are_data_for_floats_only",
        "nan-float32",
        _with("[[1, 2], [3, 4]]", "[[.nan, .inf], [-.inf, -0.0]]"),
        Verdict.BOTH_ACCEPT,
    ),
    Hostile(
        "test_nan_and_infinity_are_data_for_floats_only",
        "nan-int32",
        _with("[[1, 2], [3, 4]]", "[[.nan, .inf], [-.inf, -0.0]]").replace("FLOAT32", "INT32"),
        Verdict.LOADER_ONLY,
        "which values Data may hold depends on DataType: a rule over two fields",
    ),
    Hostile("test_unknown_and_duplicate_keys", "unknown-key", OK_CASE + "    Bogus: 1\n", Verdict.BOTH_REFUSE),
    Hostile(
        "test_unknown_and_duplicate_keys",
        "duplicate-key",
        OK_CASE + "    InputWindowStrides: [1, 1]\n",
        Verdict.UNREADABLE,
        "a key written twice is refused while reading YAML (a JSON object keeps one of them)",
    ),
    Hostile(
        "test_line_breaks_and_escapes_in_keys_stay_on_one_line",
        "escaped-key",
        OK_CASE + '    "bad\\nkey\\e[31m\\u2028": 1\n',
        Verdict.BOTH_REFUSE,
    ),
    Hostile(
        "test_a_sweep_bomb_is_refused_before_expanding",
        "sweep-bomb",
        OK_CASE
        + "    matrix:\n      InputTensor.DataType: [FLOAT32, FLOAT16, INT32, UINT8, INT8]\n"
        + "".join(
            f"      each_{i}: [{', '.join(f'{{InputWindowStrides: [1, {k}]}}' for k in range(1, 7))}]\n"
            for i in range(24)
        ),
        Verdict.LOADER_ONLY,
        "how many cases a matrix expands to: the product of its lists' lengths",
    ),
    Hostile(
        "test_ties_levels_that_overflow_are_one_line_without_a_warning",
        "ties-overflow",
        _with("Data: [[1, 2], [3, 4]]", "Generator: {Kind: ties, Seed: 1, Low: 1.0e308, Step: 1.0e308, Distinct: 3}"),
        Verdict.LOADER_ONLY,
        "whether a generator's values are exact in the DataType: a rule over several fields",
    ),
    Hostile(
        "test_one_bad_file_does_not_hide_the_problems_of_the_others",
        "d-zero-stride",
        _with("[1, 1]", "[1, 0]"),
        Verdict.LOADER_ONLY,
        _STRIDE_ZERO,
    ),
    Hostile("test_one_bad_file_does_not_hide_the_problems_of_the_others", "c-ok", OK_CASE, Verdict.BOTH_ACCEPT),
    Hostile("(hostile.py)", "two-cases", TWO_CASES, Verdict.LOADER_ONLY, _STRIDE_ZERO),
]
# The tests whose refusals come before any text is read, or are about where files are: no document to compare.
NO_DOCUMENT = {
    "test_a_file_over_the_size_limit_is_refused_before_it_is_read": "an 8 GiB file is refused by its size, unread",
    "test_a_fifo_is_refused_without_waiting_for_a_writer": "a FIFO is refused before it is opened",
    "test_a_symlink_and_a_directory_named_yaml": "where a directory walk may go: not a file's content",
}
# Also in test_one_bad_file_does_not_hide_the_problems_of_the_others: the alias bomb and the garbage bytes above.


def test_every_hostile_input_test_is_listed_here() -> None:
    """A hostile test added to test_hostile_input.py must say here what the schema makes of its files."""
    tree = ast.parse((Path(__file__).parent / "test_hostile_input.py").read_text(encoding="utf-8"))
    tests = {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and node.name.startswith("test_")}
    listed = {hostile.test for hostile in HOSTILE} | set(NO_DOCUMENT)
    assert tests == listed - {"(hostile.py)"}
    assert all(h.why for h in HOSTILE if h.verdict in (Verdict.LOADER_ONLY, Verdict.UNREADABLE))


@pytest.mark.parametrize("hostile", HOSTILE, ids=lambda hostile: hostile.name)
def test_the_loader_and_the_schema_agree_on_the_hostile_files(
    hostile: Hostile, tmp_path: Path, capsys: pytest.CaptureFixture[str], validator: jsonschema.Draft7Validator
) -> None:
    path = tmp_path / f"{hostile.name}.yaml"
    path.write_bytes(hostile.content.encode("utf-8") if isinstance(hostile.content, str) else hostile.content)
    refused = loader_refuses(path, capsys)
    try:
        document = load_document(path).data
    except CaseFileError:
        assert hostile.verdict is Verdict.UNREADABLE and refused
        return
    assert hostile.verdict is not Verdict.UNREADABLE
    verdicts = {
        (True, True): Verdict.BOTH_REFUSE,
        (False, False): Verdict.BOTH_ACCEPT,
        (True, False): Verdict.LOADER_ONLY,
    }
    assert verdicts.get((refused, schema_refuses(document, validator))) is hostile.verdict


# --- every key of the table, in the loader and in the schema ------------------------------------------------------

# One case of each operator holding every key of the table (the tensors between them both Data and Generator, and
# the generators a seeded and a seedless kind); the goldens are worked out by hand.
FULL: dict[Operator, dict[str, Any]] = {
    Operator.TOP_K1: {
        "id": "full",
        "description": "every key",
        "feature_level": "3_1",
        "InputTensor": {
            "Sizes": [1, 4],
            "DataType": "FLOAT32",
            "Generator": {"Kind": "arange", "Seed": 0, "Start": 1, "Step": 1},
            "Strides": [8, 2],  # every other element of a padded buffer: the same logical values
            "TotalTensorSizeInBytes": 32,
        },
        "Axis": 1,
        "K": 2,
        "AxisDirection": "DECREASING",
        "OutputValueTensor": {"Sizes": [1, 2], "DataType": "FLOAT32", "Strides": [4, 2], "TotalTensorSizeInBytes": 16},
        "OutputIndexTensor": {"Sizes": [1, 2], "DataType": "UINT32"},
        "expected": {"OutputValueTensor": [[4, 3]], "OutputIndexTensor": [[3, 2]]},
        "tolerance": {"max_ulp": 0, "atol": 0},
        "modes": {"queue": "compute", "compile": "graph", "owned_by_dml": 1, "binding_offset": 16, "batch": 8},
        "expect": "valid",
        "reason": "none",
    },
    Operator.MEAN_VARIANCE_NORMALIZATION1: {
        "id": "full",
        "feature_level": "3_1",
        "InputTensor": {"Sizes": [1, 2, 2], "DataType": "FLOAT32", "Data": [[[1, 3], [5, 7]]]},
        "ScaleTensor": {
            "Sizes": [1, 2, 2],
            "DataType": "FLOAT32",
            "Generator": {"Kind": "ties", "Seed": 7, "Distinct": 1, "Low": 1, "Step": 1},
        },
        "BiasTensor": {"Sizes": [1, 2, 2], "DataType": "FLOAT32", "Generator": {"Kind": "arange", "Step": 1}},
        "Axes": [2],
        "NormalizeVariance": False,  # x - mean: [-1, 1] in each row, times 1, plus 0..3
        "Epsilon": 1e-5,
        "FusedActivation": {"Type": "LINEAR", "Alpha": 1, "Beta": 0},
        "OutputTensor": {"Sizes": [1, 2, 2], "DataType": "FLOAT32"},
        "expected": {"OutputTensor": [[[-1, 2], [1, 4]]]},
    },
    Operator.SLICE1: {
        "id": "full",
        "feature_level": "3_0",
        "InputTensor": {"Sizes": [2, 4], "DataType": "INT32", "Data": [[1, 2, 3, 4], [5, 6, 7, 8]]},
        "InputWindowOffsets": [0, 1],
        "InputWindowSizes": [2, 3],
        "InputWindowStrides": [1, -1],
        "OutputSizes": [2, 3],
        "OutputTensor": {"Sizes": [2, 3], "DataType": "INT32"},
        "expected": {"OutputTensor": [[4, 3, 2], [8, 7, 6]]},
    },
}
# The same, swept: a key the base leaves out is given by its matrix (a required one among them).
SWEEPS: dict[Operator, tuple[tuple[str, ...], dict[str, Any]]] = {
    Operator.TOP_K1: (("K", "AxisDirection"), {"K": [2], "each": [{"AxisDirection": "DECREASING"}]}),
    Operator.MEAN_VARIANCE_NORMALIZATION1: (("Axes", "Epsilon"), {"each_axes": [{"Axes": [2], "Epsilon": 0.5}]}),
    Operator.SLICE1: (("InputTensor.DataType",), {"InputTensor.DataType": ["INT32"]}),
}
# And negative: a value of the wrong kind, which both refuse once the case is no longer marked invalid.
NEGATIVE: dict[Operator, tuple[str, Any]] = {
    Operator.TOP_K1: ("K", -1),
    Operator.MEAN_VARIANCE_NORMALIZATION1: ("Axes", [-1]),
    Operator.SLICE1: ("InputWindowStrides", [1, "x"]),
}
FILE = {"operator": "", "feature_level": "3_1", "description": "generated", "cases": []}

WRONG: dict[Kind, Any] = {  # a value of another kind than each kind's
    Kind.TEXT: ["text"],
    Kind.ID: [],
    Kind.UINT: -1,
    Kind.UINT64: -1,
    Kind.SIZES: [],
    Kind.UINTS: [-1],
    Kind.INTS: [2**31],
    Kind.SEED: -1,
    Kind.ULP: -1,
    Kind.NUMBER: "1e-5x",
    Kind.NON_NEGATIVE: -1,
    Kind.BOOLEAN: 1,
    Kind.VALUES: 5,
    Kind.FEATURE_LEVEL: "3",
    Kind.CHOICE: "NOPE",
    Kind.TENSOR: 5,
    Kind.OUTPUT: 5,
    Kind.GENERATOR: 5,
    Kind.ACTIVATION: 5,
    Kind.TOLERANCE: 5,
    Kind.MODES: 5,
    Kind.EXPECTED: 5,
    Kind.MATRIX: [],
    Kind.CASES: {},
}


def _generator_keys(generator: dict[str, Any]) -> tuple[Key, ...]:
    params = tuple(name for name in generator if name not in ("Kind", "Seed"))
    return (*GENERATOR_KEYS, *(Key(name, Kind.NUMBER, "") for name in params))


def _mappings(case: dict[str, Any], operator: Operator) -> Iterator[tuple[tuple[str, ...], tuple[Key, ...]]]:
    """Each mapping of a case with the table's keys for it."""
    yield (), case_keys(operator)
    inside: dict[Kind, Callable[[dict[str, Any]], tuple[Key, ...]]] = {
        Kind.TENSOR: lambda _: TENSOR_KEYS,
        Kind.OUTPUT: lambda _: OUTPUT_KEYS,
        Kind.TOLERANCE: lambda _: TOLERANCE_KEYS,
        Kind.MODES: lambda _: MODE_KEYS,
        Kind.EXPECTED: lambda _: expected_keys(operator),
        Kind.ACTIVATION: lambda value: (
            ACTIVATION_TYPE,
            *(Key(k, Kind.NUMBER, "") for k in activation_keys(value["Type"])),
        ),
    }
    for key in case_keys(operator):
        value = case.get(key.name)
        if isinstance(value, dict) and key.kind in inside:
            yield (key.name,), inside[key.kind](value)
            if key.kind is Kind.TENSOR and isinstance(value.get("Generator"), dict):
                yield (key.name, "Generator"), _generator_keys(value["Generator"])


def _at(case: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for name in path:
        case = case[name]
    return case


@dataclass(frozen=True)
class Mutation:
    """One change to a case (or, ``whole``, to its file). ``refused``: both must refuse it; else they must agree."""

    name: str
    document: dict[str, Any]
    refused: bool = False
    whole: bool = False


def _mutations(case: dict[str, Any], operator: Operator, negative: bool) -> Iterator[Mutation]:
    """Each mapping given an unknown key, and each of its keys removed and given a value of another kind.

    A plain or swept case must be refused for each unknown key, each value of the wrong kind and each required key
    removed; a negative case (its values are meant to be wrong) for each unknown key (a misspelt key is never what
    it is meant to show: a generator's parameter included)."""
    for path, keys in _mappings(case, operator):
        where = ".".join(path)
        bogus = copy.deepcopy(case)
        _at(bogus, path)["Bogus"] = 1
        yield Mutation(f"{where}.Bogus", bogus, refused=True)
        for key in keys:
            if key.name not in _at(case, path):
                continue
            dropped = copy.deepcopy(case)
            del _at(dropped, path)[key.name]
            yield Mutation(f"{where}-{key.name}", dropped, refused=key.required and not negative)
            wrong = copy.deepcopy(case)
            _at(wrong, path)[key.name] = WRONG[key.kind]
            yield Mutation(f"{where}.{key.name}={WRONG[key.kind]!r}", wrong, refused=not negative)


def _document(operator: Operator, case: dict[str, Any]) -> dict[str, Any]:
    return {**FILE, "operator": operator.value, "cases": [case]}


def _swept(operator: Operator) -> dict[str, Any]:
    left_out, matrix = SWEEPS[operator]
    case = copy.deepcopy(FULL[operator])
    for dotted in left_out:
        *parents, last = dotted.split(".")
        del _at(case, tuple(parents))[last]
    return {**case, "matrix": matrix}


def _negative(operator: Operator) -> dict[str, Any]:
    key, value = NEGATIVE[operator]
    return {**FULL[operator], key: value, "expect": "invalid", "reason": "a value of the wrong kind"}


BASES = {"full": lambda op: copy.deepcopy(FULL[op]), "swept": _swept, "negative": _negative}
# The mutations only the loader refuses, and why the schema cannot.
_PAIRED = "a spec rule (validate.py, MEAN_VARIANCE_NORMALIZATION1.*-requires-*): ScaleTensor and BiasTensor go together"
SPEC_ONLY = {
    (Operator.MEAN_VARIANCE_NORMALIZATION1, base, f"-{name}"): _PAIRED
    for base in ("full", "swept")
    for name in ("ScaleTensor", "BiasTensor")
}


def test_the_full_cases_hold_every_key_of_the_table() -> None:
    """So that the mutations below reach every key: each operator's own in its case, the keys every case and every
    mapping may hold in some case."""
    held: set[tuple[Kind, str]] = set()
    for operator, case in FULL.items():
        assert {key.name for key in OPERATORS[operator].keys} <= set(case), operator
        assert {key.name for key in expected_keys(operator)} == set(case["expected"]), operator
        held |= {(Kind.CASES, name) for name in case}
        for key in case_keys(operator):
            value = case.get(key.name)
            if isinstance(value, dict):
                held |= {(key.kind, name) for name in value}
                held |= {(Kind.GENERATOR, name) for name in value.get("Generator", {})}
    table = {(Kind.CASES, key.name) for key in CASE_KEYS if key.kind is not Kind.MATRIX}  # matrix: SWEEPS
    table |= {(Kind.TENSOR, key.name) for key in TENSOR_KEYS} | {(Kind.GENERATOR, key.name) for key in GENERATOR_KEYS}
    table |= {(Kind.OUTPUT, key.name) for key in OUTPUT_KEYS} | {(Kind.TOLERANCE, key.name) for key in TOLERANCE_KEYS}
    table |= {(Kind.ACTIVATION, ACTIVATION_TYPE.name)}
    assert table <= held
    assert [key.name for key in FILE_KEYS] == list(FILE)


@pytest.mark.parametrize("operator", list(Operator))
@pytest.mark.parametrize("base", list(BASES))
def test_the_loader_and_the_schema_agree_on_every_key(
    operator: Operator,
    base: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validator: jsonschema.Draft7Validator,
) -> None:
    case = BASES[base](operator)
    mutations = [Mutation("as it is", case), *_mutations(case, operator, negative=base == "negative")]
    for key in FILE_KEYS if base == "full" else ():  # the file's own keys, once
        dropped = _document(operator, case)
        del dropped[key.name]
        mutations.append(Mutation(f"file-{key.name}", dropped, refused=key.required, whole=True))
        wrong = {**_document(operator, case), key.name: WRONG[key.kind]}
        mutations.append(Mutation(f"file.{key.name}={WRONG[key.kind]!r}", wrong, refused=True, whole=True))
    path = tmp_path / "case.yaml"
    verdicts = {}
    for mutation in mutations:
        document = mutation.document if mutation.whole else _document(operator, mutation.document)
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        loader, schema = loader_refuses(path, capsys), schema_refuses(load_document(path).data, validator)
        if loader != schema or (mutation.refused and not loader):
            said = {True: "refuses", False: "accepts"}
            verdicts[mutation.name] = f"the loader {said[loader]}, the schema {said[schema]}"
    spec_only = [name for (op, at, name) in SPEC_ONLY if (op, at) == (operator, base)]
    assert verdicts == {name: "the loader refuses, the schema accepts" for name in spec_only}
    assert len(mutations) > 20


@pytest.mark.parametrize(
    ("matrix", "refused"),
    [
        ({"K": [1, 2]}, False),
        ({"each": [{"K": 1, "AxisDirection": "INCREASING"}, {"K": 2}]}, False),
        ({"InputTensor.Generator.Start": [1, 5]}, False),
        ({"InputTensor": [{"Sizes": [3], "DataType": "INT8", "Data": [1, 2, 3]}], "Axis": [0]}, False),
        ({"Bogus": [1]}, True),
        ({"K": []}, True),
        ({"K": 2}, True),
        ({"K": ["x"]}, True),
        ({"each": []}, True),
        ({"each": [{}]}, True),
        ({"each_k": [{"K": 1}, 3]}, True),
        ({"each": [{"Kk": 1}]}, True),
        ({"K.x": [1]}, True),
        ({"matrix.K": [1]}, True),
        ({"InputTensor.Generator.Bogus": [1]}, True),
        ({}, True),
    ],
)
def test_the_loader_and_the_schema_agree_on_matrices(
    matrix: dict[str, Any],
    refused: bool,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validator: jsonschema.Draft7Validator,
) -> None:
    case = {**FULL[Operator.TOP_K1], "matrix": matrix}
    del case["expected"], case["OutputValueTensor"], case["OutputIndexTensor"]  # the matrix changes their shapes
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(_document(Operator.TOP_K1, case), sort_keys=False), encoding="utf-8")
    assert (loader_refuses(path, capsys), schema_refuses(load_document(path).data, validator)) == (refused, refused)


@pytest.mark.parametrize(
    ("field", "spellings"),
    [
        ("operator", ["TOP_K1", "top_k1", " DML_TOP_K1 ", "dml_Top_K1"]),
        ("AxisDirection", ["DECREASING", "decreasing", "DML_AXIS_DIRECTION_DECREASING", " Decreasing"]),
        ("InputTensor.DataType", ["FLOAT32", "float32", "DML_TENSOR_DATA_TYPE_FLOAT32", "Float32 "]),
        ("InputTensor.Generator.Kind", ["arange", "ARANGE", "Arange"]),
        ("feature_level", ["3_1", "3.1", "DML_FEATURE_LEVEL_3_1", "dml_feature_level_3_1"]),
        ("Epsilon", [1e-5, "1e-5", " 0.5 ", 3]),
    ],
)
def test_the_loader_and_the_schema_read_the_same_spellings(
    field: str,
    spellings: list[Any],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    validator: jsonschema.Draft7Validator,
) -> None:
    """The names are matched in any case, after their DML_ prefix; numbers may be written as text (1e-5)."""
    operator = Operator.MEAN_VARIANCE_NORMALIZATION1 if field == "Epsilon" else Operator.TOP_K1
    path = tmp_path / "case.yaml"
    for spelling in [*spellings, "NOPE", " ", "1e-5.5" if field == "Epsilon" else spellings[0] + "X"]:
        document = _document(operator, copy.deepcopy(FULL[operator]))
        *parents, last = field.split(".")
        target = document if field in ("operator",) else _at(document["cases"][0], tuple(parents))
        target[last] = spelling
        path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
        accepted = spelling in spellings
        assert loader_refuses(path, capsys) is not accepted, spelling
        assert schema_refuses(load_document(path).data, validator) is not accepted, spelling

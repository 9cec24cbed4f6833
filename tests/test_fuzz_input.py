"""Fuzzing the loader, parser and validator with Hypothesis: whatever the bytes (arbitrary bytes, arbitrary text,
YAML-ish token soup, valid case documents with random mutations), load_document -> parse_document -> validate and
suite.read_file answer with one-line ``path:line:col: ...`` problems, never an exception."""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostile import LINE
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cases.load import load_document
from conformance.cases.parse import Rejected, parse_document
from conformance.cases.suite import read_file
from conformance.cases.validate import validate
from conformance.model import Case
from conformance.problems import CaseFileError, Problem

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

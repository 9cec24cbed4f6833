"""dmlrunner.c (C, compiled under Wine) and protocol.py/rules.py speak one protocol: every named constant of the runner
is pinned to its Python twin of the same name, found by name on both sides, so that a constant added to either (an
opcode for a new request, say) is checked without this test being told of it."""

from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
from onnx import TensorProto

from conformance.ep import rules
from conformance.ep.wine import protocol

REPO = Path(__file__).resolve().parents[1]
RUNNER = Path("conformance/ep/wine/dmlrunner.c")
PROTOCOL, RULES = Path("conformance/ep/wine/protocol.py"), Path("conformance/ep/rules.py")
# Where each pinned prefix's twins live (same name, same value).
TWINS = {
    "OP_": PROTOCOL,  # request operations
    "ST_": PROTOCOL,  # reply statuses
    "PROFILE_": PROTOCOL,  # whether a run's profile follows
    "DISPATCH_": PROTOCOL,  # a dispatch request's flags
    "INPUT_": PROTOCOL,  # how a dispatch's input is bound
    "ADAPTER_": PROTOCOL,  # adapter indices with a meaning of their own (WARP)
    "SESSION_": RULES,  # every session's settings
}
ELEMENT = "ET_"  # ONNX element types: onnx.proto's names, protocol.ELEMENT_TYPES's codes, element_size's sizes
# The runner's own: onnxruntime's C API slots, its limits, the ORT API version it asks for, DirectML's query codes.
RUNNER_OWN = ("SLOT_", "MAX_", "RUNNER_", "DML_")


def _without_comments(source: str) -> str:
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", source, flags=re.DOTALL)


def runner_constants(source: str) -> dict[str, int]:
    """Every enum member (implicit values counted on) and every ``#define NAME <integer>`` of the C source."""
    code = _without_comments(source)
    found: dict[str, int] = {}
    for body in re.findall(r"\benum\b[^{;]*\{([^}]*)\}", code):
        value = -1
        for member in filter(None, (part.strip() for part in body.split(","))):
            name, _, given = (part.strip() for part in member.partition("="))
            value = int(given, 0) if given else value + 1
            found[name] = value
    for name, given in re.findall(r"^\s*#\s*define\s+(\w+)\s+(0x[0-9a-fA-F]+|\d+)\s*$", code, flags=re.MULTILINE):
        found[name] = int(given, 0)
    return found


def element_sizes(source: str) -> dict[str, int]:
    """``element_size``'s table: each ``case ET_*:`` and the size it returns."""
    body = re.search(r"\belement_size\s*\([^)]*\)\s*\{(.*?)\n\}", _without_comments(source), flags=re.DOTALL)
    assert body is not None, "dmlrunner.c has no element_size function"
    sizes: dict[str, int] = {}
    for cases, size in re.findall(r"((?:case\s+\w+\s*:\s*)+)return\s+(\d+)\s*;", body.group(1)):
        sizes |= {name: int(size) for name in re.findall(r"case\s+(\w+)\s*:", cases)}
    return sizes


def python_constants(source: str) -> dict[str, int]:
    """A module's top-level integer constants (``A = 1`` and ``A, B = 1, 2``)."""
    found: dict[str, int] = {}
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                names = target.elts if isinstance(target, ast.Tuple) else [target]
                values = node.value.elts if isinstance(node.value, ast.Tuple) else [node.value]
                for name, value in zip(names, values, strict=False):
                    if isinstance(name, ast.Name) and isinstance(value, ast.Constant) and type(value.value) is int:
                        found[name.id] = value.value
    return found


def element_types(source: str) -> dict[int, np.dtype]:
    """protocol.py's ELEMENT_TYPES as written: ``code: np.dtype(np.<name>)``."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "ELEMENT_TYPES":
            assert isinstance(node.value, ast.Dict)
            table = {}
            for key, value in zip(node.value.keys, node.value.values, strict=True):
                assert isinstance(key, ast.Constant) and isinstance(value, ast.Call)
                assert isinstance(value.args[0], ast.Attribute)
                table[int(key.value)] = np.dtype(value.args[0].attr)
            return table
    raise AssertionError("protocol.py has no ELEMENT_TYPES")


def mismatches(root: Path) -> list[str]:
    """Where the runner under ``root`` and its Python twins disagree, one line each."""
    source = (root / RUNNER).read_text(encoding="utf-8")
    runner = runner_constants(source)
    said = [
        f"dmlrunner.c: {name} is neither pinned (TWINS, {ELEMENT}) nor the runner's own (RUNNER_OWN)"
        for name in runner
        if not name.startswith((*TWINS, ELEMENT, *RUNNER_OWN))
    ]
    for prefix, path in TWINS.items():
        python = python_constants((root / path).read_text(encoding="utf-8"))
        ours = {name: value for name, value in runner.items() if name.startswith(prefix)}
        twins = {name: value for name, value in python.items() if name.startswith(prefix)}
        said += [f"{path}: no {name} (dmlrunner.c: {value})" for name, value in ours.items() if name not in twins]
        said += [f"dmlrunner.c: no {name} ({path}: {value})" for name, value in twins.items() if name not in ours]
        said += [
            f"{name}: dmlrunner.c {value}, {path} {twins[name]}"
            for name, value in ours.items()
            if name in twins and twins[name] != value
        ]
    table = element_types((root / PROTOCOL).read_text(encoding="utf-8"))
    elements = {name: value for name, value in runner.items() if name.startswith(ELEMENT)}
    sizes = element_sizes(source)
    for name, value in elements.items():
        onnx_name = name.removeprefix(ELEMENT)
        if getattr(TensorProto.DataType, onnx_name, None) != value:
            said.append(f"dmlrunner.c: {name} = {value} is not onnx.proto's TensorProto.{onnx_name}")
        if value not in table:
            said.append(f"{PROTOCOL}: ELEMENT_TYPES has no {value} (dmlrunner.c's {name})")
        elif sizes.get(name) != table[value].itemsize:
            said.append(f"dmlrunner.c: element_size({name}) is {sizes.get(name)}, not {table[value].itemsize}")
    said += [
        f"dmlrunner.c: no {ELEMENT}* of ELEMENT_TYPES's {code} ({dtype})"
        for code, dtype in table.items()
        if code not in elements.values()
    ]
    said += [
        f"dmlrunner.c: element_size takes {name}, not an {ELEMENT} constant" for name in sizes if name not in elements
    ]
    return said


def test_the_runner_s_constants_are_protocol_py_s_and_rules_py_s() -> None:
    assert mismatches(REPO) == []


def test_the_pins_are_found_on_both_sides() -> None:
    """The parsers see what the modules hold (a parser that finds nothing would pin nothing)."""
    runner = runner_constants((REPO / RUNNER).read_text(encoding="utf-8"))
    assert {"OP_DESCRIBE", "OP_OPEN", "OP_RUN", "OP_CLOSE", "ST_OK", "ST_EP", "SESSION_LOG_SEVERITY"} <= set(runner)
    assert runner["OP_RUN"] == protocol.OP_RUN and runner["ST_EP"] == protocol.ST_EP
    assert runner["SESSION_EXECUTION_MODE"] == rules.SESSION_EXECUTION_MODE
    assert element_types((REPO / PROTOCOL).read_text(encoding="utf-8")) == dict(protocol.ELEMENT_TYPES)
    assert len(element_sizes((REPO / RUNNER).read_text(encoding="utf-8"))) == len(protocol.ELEMENT_TYPES)


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    for path in {RUNNER, *TWINS.values()}:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / path, tmp_path / path)
    return tmp_path


def _edit(root: Path, path: Path, old: str, new: str) -> None:
    text = (root / path).read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{path} no longer holds {old!r} once"
    (root / path).write_text(text.replace(old, new), encoding="utf-8")


@pytest.mark.parametrize(
    ("path", "old", "new", "said"),
    [
        (
            RUNNER,
            "OP_DISPATCH_BATCH = 6 }",
            "OP_DISPATCH_BATCH = 6, OP_COMPILE = 7 }",
            "conformance/ep/wine/protocol.py: no OP_COMPILE",
        ),
        (RUNNER, "OP_RUN = 3", "OP_RUN = 7", "OP_RUN: dmlrunner.c 7, conformance/ep/wine/protocol.py 3"),
        (RUNNER, "ST_BAD = 3", "ST_BAD = 4", "ST_BAD: dmlrunner.c 4"),
        (RUNNER, "PROFILE_MISSING = 2", "PROFILE_MISSING = 3", "PROFILE_MISSING: dmlrunner.c 3"),
        (RUNNER, "SESSION_LOG_SEVERITY = 4", "SESSION_LOG_SEVERITY = 3", "SESSION_LOG_SEVERITY: dmlrunner.c 3"),
        (RUNNER, "ET_FLOAT16 = 10", "ET_FLOAT16 = 16", "ET_FLOAT16 = 16 is not onnx.proto's TensorProto.FLOAT16"),
        (
            RUNNER,
            "case ET_UINT16: case ET_INT16: case ET_FLOAT16: return 2;",
            "case ET_UINT16: case ET_INT16: return 2;",
            "element_size(ET_FLOAT16) is None, not 2",
        ),
        (RUNNER, "case ET_INT64: case ET_DOUBLE:", "case ET_INT64: case 11:", "element_size takes 11"),
        (RUNNER, "MAX_DIMS = 16 }", "MAX_DIMS = 16, CHUNK_BYTES = 4096 }", "CHUNK_BYTES is neither pinned"),
        (
            PROTOCOL,
            "OP_DESCRIBE, OP_OPEN, OP_RUN, OP_CLOSE, OP_DISPATCH, OP_DISPATCH_BATCH = 1, 2, 3, 4, 5, 6",
            "OP_DESCRIBE, OP_OPEN, OP_RUN, OP_CLOSE, OP_DISPATCH, OP_DISPATCH_BATCH, OP_SPARE = 1, 2, 3, 4, 5, 6, 9",
            "dmlrunner.c: no OP_SPARE",
        ),
        (PROTOCOL, "ST_EP = 2", "ST_EP = 5", "ST_EP: dmlrunner.c 2, conformance/ep/wine/protocol.py 5"),
        (PROTOCOL, "    9: np.dtype(np.bool_),\n", "", "ELEMENT_TYPES has no 9 (dmlrunner.c's ET_BOOL)"),
        (
            PROTOCOL,
            "    13: np.dtype(np.uint64),\n",
            "    13: np.dtype(np.uint64),\n    14: np.dtype(np.complex64),\n",
            "no ET_* of ELEMENT_TYPES's 14",
        ),
        (
            RULES,
            "SESSION_EXECUTION_MODE, SESSION_LOG_SEVERITY = 0, 4",
            "SESSION_EXECUTION_MODE, SESSION_LOG_SEVERITY = 1, 4",
            "SESSION_EXECUTION_MODE: dmlrunner.c 0",
        ),
    ],
)
def test_a_constant_changed_on_one_side_is_found(copy: Path, path: Path, old: str, new: str, said: str) -> None:
    assert mismatches(copy) == []
    _edit(copy, path, old, new)
    found = mismatches(copy)
    assert any(said in line for line in found), found

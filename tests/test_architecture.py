"""The dependency rule between the pipeline's stages (tests/architecture.py reads it from each subpackage's
docstring): every import of the package keeps it, there is no import cycle, and the check does fail on a wrong
import."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from architecture import PACKAGE, PIPELINE, cycles, graph, layout_rows, modules, rules, violations

REPO = Path(__file__).resolve().parent.parent
CORE_MODULES = {
    "__init__.py",
    "__main__.py",
    "model.py",
    "data_type.py",
    "layout.py",
    "problems.py",
    "dtypes.py",
    "results.py",
    "environment.py",
    "records.py",
    "operators.py",
    "ep_table.py",
    "whose.py",
}


def test_every_import_keeps_the_dependency_rule() -> None:
    assert violations(REPO) == []


def test_there_is_no_import_cycle() -> None:
    assert cycles(graph(REPO)) == []


def test_the_tree_shows_the_stages_and_a_small_core() -> None:
    assert rules(REPO).stages == set(PIPELINE)
    assert {p.name for p in (REPO / PACKAGE).glob("*.py")} == CORE_MODULES


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    shutil.copytree(REPO / PACKAGE, tmp_path / PACKAGE, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def _append(root: Path, module: str, line: str) -> None:
    path = root / PACKAGE / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n\ndef _wrong() -> None:\n    {line}\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("module", "line", "why"),
    [
        ("cases/validate.py", "from conformance.run.runner import run_entry", "stage cases may import"),
        ("gate/diff.py", "from conformance.compare.top_k1 import compare_top_k1", "stage gate may import"),
        ("model.py", "from conformance.cases import load", "stage core may import"),
        ("report/html.py", "import onnxruntime", "only ep imports onnx"),
        ("survive/pool.py", "from conformance.cli.main import main", "nothing imports cli"),
        ("ep/lower.py", "from conformance.pytest_plugin import plugin", "nothing imports pytest_plugin"),
        ("cli/reports.py", "import onnx", "only ep imports onnx"),
        ("pytest_plugin/plugin.py", "import onnxruntime", "only ep imports onnx"),
        ("report/html.py", "__import__('onnxruntime')", "only ep imports onnx"),
        ("survive/pool.py", "importlib.import_module('conformance.cli.main')", "nothing imports cli"),
        ("gate/merge.py", "importlib.import_module(name)", "a module named at run time"),
        ("compare/mvn1.py", "from ..cases import validate", "stage compare may import"),
    ],
)
def test_a_wrong_import_is_found_wherever_it_hides(copy: Path, module: str, line: str, why: str) -> None:
    _append(copy, module, line)  # inside a function: a lazy import counts as much as one at the top
    found = violations(copy)
    assert len(found) == 1 and why in found[0] and found[0].startswith(f"{PACKAGE}/{module}:"), found


def test_a_cycle_is_found(copy: Path) -> None:
    _append(copy, "ep/lower.py", "from conformance.ep import execute")  # execute imports lower
    assert any({"conformance.ep.execute", "conformance.ep.lower"} <= set(cycle) for cycle in cycles(graph(copy)))


def test_a_folder_that_is_not_a_package_is_refused(copy: Path) -> None:
    (copy / PACKAGE / "extra").mkdir()
    (copy / PACKAGE / "extra" / "helpers.py").write_text("import onnx\n", encoding="utf-8")
    found = violations(copy)
    assert any("a folder without __init__.py" in line for line in found), found


def test_a_rule_naming_no_stage_is_refused(copy: Path) -> None:
    init = copy / PACKAGE / "gate" / "__init__.py"
    init.write_text(init.read_text(encoding="utf-8").replace("the core, cases.", "the core, casess."), encoding="utf-8")
    with pytest.raises(ValueError, match="names no stage: casess"):
        rules(copy)


def test_a_stage_without_a_rule_is_refused(copy: Path) -> None:
    (copy / PACKAGE / "gate" / "__init__.py").write_text('"""Data over results.json."""\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"no 'May import: \.\.\.' line"):
        rules(copy)


def test_every_module_is_seen() -> None:
    names = modules(REPO)
    assert "conformance.ep.execute" in names and "conformance.cases" in names and "conformance.model" in names


def test_the_architecture_page_s_package_table_is_the_docstrings() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [row for row in layout_rows(REPO) if row not in page]
    assert missing == [], "docs/architecture.md's package table differs from the subpackages' docstrings"


def test_the_fault_kinds_and_ep_not_started_are_spelt_in_one_place() -> None:
    # Each domain fact in one place: the failure kinds a run's faults and an EP that cannot start are given are
    # spelt in model.py alone (FAULT_KINDS, EP_NOT_STARTED), and every other module names them from there.
    spelt = re.compile(r"""["'](ep_not_started|worker_died|device_lost|timeout)["']""")
    found = []
    for path in sorted((REPO / "conformance").rglob("*.py")):
        if path.name == "model.py" and path.parent.name == "conformance":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if (spelt.search(code) and "failure_kind" in code) or "EP_NOT_STARTED =" in code or "FAULT_KINDS =" in code:
                found.append(f"{path.relative_to(REPO)}:{number}: {line.strip()}")
    assert found == []

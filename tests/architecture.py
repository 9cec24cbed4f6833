"""The package's dependency rule, read from the code itself: each stage subpackage's ``__init__`` docstring says what
it may import ("May import: the core, cases, ep."), and every import in the package is checked against it: import
statements at module level, in a function or under TYPE_CHECKING, and ``importlib.import_module``/``__import__``
calls naming a module. Shared by test_architecture.py and the package table of docs/architecture.md."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "conformance"
CORE = "core"  # the top-level modules (test_architecture.py's CORE_MODULES names them)
MAIN = f"{PACKAGE}.__main__"  # ``python -m conformance``: the command line's second door, so of the cli stage
REFERENCE = "reference"  # the oracle's package, beside this one
HEAVY = ("onnx", "onnxruntime")  # imported by the ep stage alone
HEAVY_HOME = "ep"
ANYTHING = "anything"
# Modules that import a module named at run time: the CLI's commands (from its command table) and the WebGPU EP's
# package; anywhere else a computed name would hide an import from this check.
DYNAMIC = frozenset({f"{PACKAGE}.cli.main", f"{PACKAGE}.ep.providers"})
PIPELINE = (
    "cases",
    "ep",
    "compare",
    "run",
    "survive",
    "triage",
    "gate",
    "report",
    "coverage",
    "fuzz",
    "cli",
    "pytest_plugin",
)
_RULE = re.compile(r"^May import: (.+?)\.?$", re.MULTILINE)


@dataclass(frozen=True)
class Edge:
    """One import: ``module`` (a dotted name) imports ``target`` at ``line``; ``target`` is None where a call names
    its module at run time."""

    module: str
    target: str | None
    line: int


@dataclass(frozen=True)
class Rules:
    """Each stage's allowed stages (None: anything), read from the docstrings."""

    allowed: Mapping[str, frozenset[str] | None]

    @property
    def stages(self) -> frozenset[str]:
        return frozenset(self.allowed) - {CORE}

    def stage(self, name: str) -> str | None:
        """The stage a dotted name belongs to: a subpackage's name, CORE for the top-level modules, REFERENCE for
        the oracle's package, None outside the project."""
        parts = name.split(".")
        if name == MAIN:
            return "cli"
        if parts[0] == REFERENCE:
            return REFERENCE
        if parts[0] != PACKAGE:
            return None
        return parts[1] if len(parts) > 1 and parts[1] in self.stages else CORE


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (the folder that holds ``conformance/``), by dotted name."""
    return {module_name(root, path): path for path in sorted((root / PACKAGE).rglob("*.py"))}


def _called_module(node: ast.Call) -> tuple[bool, str | None]:
    """(whether the call imports a module, the module's name where it is written out)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    if name not in ("import_module", "__import__") or not node.args:
        return False, None
    first = node.args[0]
    return True, first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None


def imports(name: str, path: Path) -> Iterator[Edge]:
    """Every import in the file, resolved to absolute dotted names (``from a import b`` gives ``a.b``: b may be a
    module, and where it is not, its stage is a's all the same)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Edge(name, alias.name, node.lineno)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                yield Edge(name, f"{base}.{alias.name}" if alias.name != "*" else base, node.lineno)
        elif isinstance(node, ast.Call):
            is_import, target = _called_module(node)
            if is_import:
                yield Edge(name, target, node.lineno)


def rules(root: Path) -> Rules:
    """Each stage's rule, from its ``__init__`` docstring; the core may import itself and the oracle's package (the
    layout a case carries is reference/layout.py's arithmetic: conformance/layout.py), no stage. ValueError for a
    stage without a rule, or a rule that names no stage."""
    found: dict[str, frozenset[str] | None] = {CORE: frozenset({CORE, REFERENCE})}
    inits = sorted((root / PACKAGE).glob("*/__init__.py"))
    names = {init.parent.name for init in inits} | {CORE, REFERENCE}
    for init in inits:
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        match = _RULE.search(docstring)
        if match is None:
            raise ValueError(f"{init}: its docstring has no 'May import: ...' line")
        text = match.group(1)
        if text.startswith(ANYTHING):
            found[init.parent.name] = None
            continue
        words = [w.strip() for w in text.replace("the core only", CORE).replace("the core", CORE).split(",")]
        unknown = [word for word in words if word not in names]
        if unknown:
            raise ValueError(f"{init}: 'May import' names no stage: {', '.join(unknown)}")
        found[init.parent.name] = frozenset(words) | {CORE}
    return Rules(found)


def folders_without_init(root: Path) -> list[str]:
    """Folders of the package that are not packages: their modules would pass for the core."""
    return sorted(
        str(folder.relative_to(root))
        for folder in (root / PACKAGE).rglob("*")
        if folder.is_dir() and folder.name != "__pycache__" and not (folder / "__init__.py").exists()
    )


def violations(root: Path) -> list[str]:
    """Every import that runs against the rule, as ``path:line: module imports target (why)``."""
    found = rules(root)
    open_to_all = {name for name, rule in found.allowed.items() if rule is None}
    problems = [f"{folder}: a folder without __init__.py" for folder in folders_without_init(root)]
    for name, path in modules(root).items():
        mine = found.stage(name)
        assert mine is not None
        for edge in imports(name, path):
            at = f"{path.relative_to(root)}:{edge.line}: {name}"
            if edge.target is None:
                if name not in DYNAMIC:
                    problems.append(f"{at} imports a module named at run time (only {', '.join(sorted(DYNAMIC))})")
                continue
            where = f"{at} imports {edge.target}"
            theirs = found.stage(edge.target)
            if edge.target.split(".")[0] in HEAVY and mine != HEAVY_HOME:
                problems.append(f"{where} (only {HEAVY_HOME} imports {', '.join(HEAVY)})")
            if theirs is None or theirs == mine:
                continue
            if theirs in open_to_all:
                problems.append(f"{where} (nothing imports {theirs})")
                continue
            rule = found.allowed[mine]
            if rule is not None and theirs not in rule:
                problems.append(f"{where} (stage {mine} may import {', '.join(sorted(rule))})")
    return problems


def graph(root: Path) -> dict[str, set[str]]:
    """The package's modules and the package modules each imports (every import found)."""
    names = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for edge in imports(name, path):
            target = edge.target or ""
            while target and target not in names:  # ``from a.b import name``: the module a.b
                target = target.rpartition(".")[0]
            if target and target != name and target != PACKAGE:
                edges[name].add(target)
    return edges


def cycles(edges: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def purpose(root: Path, stage_name: str) -> str:
    """A stage's purpose: the first paragraph of its ``__init__`` docstring, on one line."""
    init = root / PACKAGE / stage_name / "__init__.py"
    docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    return " ".join(docstring.split("\n\n")[0].split())


def layout_rows(root: Path) -> list[str]:
    """docs/architecture.md's package table, one row per stage, in the pipeline's order: what it does, what it may
    import (each package linked relative to docs/)."""
    found = rules(root)
    rows = []
    for name in PIPELINE:
        rule = found.allowed[name]
        may = "anything; nothing imports it" if rule is None else ", ".join(sorted(rule - {CORE})) or "the core only"
        rows.append(f"| [`{name}/`](../conformance/{name}/) | {purpose(root, name)} | {may} |")
    return rows

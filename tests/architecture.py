"""The package's dependency rule, read from the code itself: each stage subpackage's ``__init__`` docstring says what
it may import ("May import: the core, cases, ep."), and every import statement in the package (at module level, in a
function, or under TYPE_CHECKING) is checked against it. Shared by test_architecture.py and the closing figures."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

PACKAGE = "conformance"
CORE = "core"  # the top-level modules: model, problems, dtypes, results
MAIN = f"{PACKAGE}.__main__"  # ``python -m conformance``: the command line's second door, so of the cli stage
HEAVY = ("onnx", "onnxruntime")  # imported by the ep stage alone
HEAVY_HOME = "ep"
ANYTHING = "anything"
_RULE = re.compile(r"^May import: (.+?)\.?$", re.MULTILINE)


@dataclass(frozen=True)
class Edge:
    """One import statement: ``module`` (a dotted name) imports ``target`` at ``line``."""

    module: str
    target: str
    line: int


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path) -> dict[str, Path]:
    """Every module of the package under ``root`` (the folder that holds ``conformance/``), by dotted name."""
    return {module_name(root, path): path for path in sorted((root / PACKAGE).rglob("*.py"))}


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


def stage(name: str) -> str | None:
    """The stage a dotted name belongs to: a subpackage's name, CORE for the top-level modules, ``reference`` for the
    oracle's package, None outside the project."""
    parts = name.split(".")
    if name == MAIN:
        return "cli"
    if parts[0] == "reference":
        return "reference"
    if parts[0] != PACKAGE or len(parts) == 1:
        return None if parts[0] != PACKAGE else CORE
    return parts[1] if parts[1] in _subpackages_seen else CORE


_subpackages_seen: set[str] = set()


def rules(root: Path) -> dict[str, frozenset[str] | None]:
    """Each stage's allowed stages, from its ``__init__`` docstring; None: anything. The core may import only itself."""
    found: dict[str, frozenset[str] | None] = {CORE: frozenset({CORE})}
    for init in sorted((root / PACKAGE).glob("*/__init__.py")):
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        match = _RULE.search(docstring)
        if match is None:
            raise ValueError(f"{init}: its docstring has no 'May import: ...' line")
        text = match.group(1)
        allowed: frozenset[str] | None
        if text.startswith(ANYTHING):
            allowed = None
        else:
            words = [w.strip() for w in text.replace("the core only", CORE).replace("the core", CORE).split(",")]
            allowed = frozenset(words) | {CORE}
        found[init.parent.name] = allowed
    _subpackages_seen.clear()
    _subpackages_seen.update(name for name in found if name != CORE)
    return found


def violations(root: Path) -> list[str]:
    """Every import that runs against the rule, as ``path:line: module imports target (stage X may import ...)``."""
    allowed = rules(root)
    open_to_all = {name for name, rule in allowed.items() if rule is None}
    problems = []
    for name, path in modules(root).items():
        mine = stage(name)
        assert mine is not None
        for edge in imports(name, path):
            top = edge.target.split(".")[0]
            theirs = stage(edge.target)
            where = f"{path.relative_to(root)}:{edge.line}: {name} imports {edge.target}"
            if top in HEAVY and mine != HEAVY_HOME and allowed.get(mine) is not None:
                problems.append(f"{where} (only {HEAVY_HOME} imports {', '.join(HEAVY)})")
            if theirs is None or theirs == mine:
                continue
            if theirs in open_to_all:
                problems.append(f"{where} (nothing imports {theirs})")
                continue
            rule = allowed[mine]
            if rule is not None and theirs not in rule:
                problems.append(f"{where} (stage {mine} may import {', '.join(sorted(rule))})")
    return problems


def graph(root: Path) -> dict[str, set[str]]:
    """The package's modules and the package modules each imports (every import statement)."""
    names = modules(root)
    edges: dict[str, set[str]] = {name: set() for name in names}
    for name, path in names.items():
        for edge in imports(name, path):
            target = edge.target
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
    """The README's package table, one row per stage, in the pipeline's order: what it does, what it may import."""
    allowed = rules(root)
    order = ["cases", "ep", "compare", "run", "survive", "gate", "report", "coverage", "fuzz", "cli", "pytest_plugin"]
    rows = []
    for name in order:
        rule = allowed[name]
        may = "anything; nothing imports it" if rule is None else ", ".join(sorted(rule - {CORE})) or "the core only"
        rows.append(f"| [`{name}/`](conformance/{name}/) | {purpose(root, name)} | {may} |")
    return rows

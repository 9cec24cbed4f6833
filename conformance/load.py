"""Load a case file: YAML text -> plain Python values plus where each field was written.

Safety first: the file size is checked before reading, YAML is only *composed* (no object is ever
constructed from a tag), any tag beyond the core schema is refused, duplicate keys are refused, and
the node count is bounded so that alias bombs cannot expand without limit.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from conformance.model import SourcePos
from conformance.problems import CaseFileError, Problem

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_NODES = 20_000_000

# Positions are kept only for the first levels of a document; Data lists can hold millions of values.
_POSITION_DEPTH = 6
_SCALAR_TAGS = {
    "tag:yaml.org,2002:str",
    "tag:yaml.org,2002:int",
    "tag:yaml.org,2002:float",
    "tag:yaml.org,2002:bool",
    "tag:yaml.org,2002:null",
}

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Document:
    path: str
    data: Any
    positions: dict[Path, SourcePos]

    def pos(self, key: Path) -> SourcePos:
        """Where ``key`` was written, or its nearest recorded ancestor."""
        for end in range(len(key), -1, -1):
            found = self.positions.get(key[:end])
            if found is not None:
                return found
        return SourcePos(self.path, 1, 1)


class _Converter:
    """Turns composed nodes into plain values, recording marks and counting nodes."""

    def __init__(self, path: str, max_nodes: int) -> None:
        self.path = path
        self.max_nodes = max_nodes
        self.count = 0
        self.positions: dict[Path, SourcePos] = {}
        self._scalars = SafeConstructor()

    def where(self, node: yaml.Node) -> SourcePos:
        return SourcePos(self.path, node.start_mark.line + 1, node.start_mark.column + 1)

    def fail(self, node: yaml.Node, key: Path, message: str) -> CaseFileError:
        return CaseFileError([Problem(self.where(node), _dotted(key), message)])

    def convert(self, node: yaml.Node, key: Path) -> Any:
        self.count += 1
        if self.count > self.max_nodes:
            raise self.fail(node, key, f"document has more than {self.max_nodes} nodes (alias bomb or huge file?)")
        if _keeps_position(key):
            self.positions.setdefault(key, self.where(node))
        if isinstance(node, yaml.MappingNode):
            return self._mapping(node, key)
        if isinstance(node, yaml.SequenceNode):
            if node.tag != "tag:yaml.org,2002:seq":
                raise self.fail(node, key, f"unsupported YAML tag {node.tag!r}")
            return [self.convert(item, (*key, i)) for i, item in enumerate(node.value)]
        if node.tag not in _SCALAR_TAGS:
            raise self.fail(node, key, f"unsupported YAML tag {node.tag!r}")
        return self._scalars.construct_object(node, deep=True)

    def _mapping(self, node: yaml.MappingNode, key: Path) -> dict[str, Any]:
        if node.tag != "tag:yaml.org,2002:map":
            raise self.fail(node, key, f"unsupported YAML tag {node.tag!r}")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                raise self.fail(key_node, key, "mapping keys must be plain names")
            name = str(key_node.value)
            if name in result:
                raise self.fail(key_node, (*key, name), "duplicate key")
            self.positions[(*key, name)] = self.where(key_node)
            result[name] = self.convert(value_node, (*key, name))
        return result


def _keeps_position(key: Path) -> bool:
    """Positions of data values are not kept: a Data list can hold millions of them."""
    return len(key) <= _POSITION_DEPTH and "Data" not in key[:-1] and "expected" not in key[:-2]


def _dotted(key: Path) -> str:
    return ".".join(str(part) for part in key)


def _yaml_problem(path: str, error: yaml.YAMLError) -> Problem:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return Problem(SourcePos(path, line, col), "", f"YAML syntax error: {problem}")


def _compose(path: str, text: str) -> yaml.Node | None:
    try:
        return yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.composer.ComposerError as error:
        raise CaseFileError([_yaml_problem(path, error)]) from None
    except yaml.YAMLError as error:
        raise CaseFileError([_yaml_problem(path, error)]) from None


def load_document(
    path: str | os.PathLike[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Document:
    """Read and compose one case file; raise CaseFileError with one-line problems when it is unusable."""
    name = os.fspath(path)
    start = SourcePos(name, 1, 1)
    try:
        size = os.path.getsize(name)
        if size > max_file_bytes:
            raise CaseFileError([Problem(start, "", f"file is {size} bytes, over the limit of {max_file_bytes}")])
        with open(name, "rb") as handle:
            raw = handle.read(max_file_bytes + 1)
    except OSError as error:
        raise CaseFileError([Problem(start, "", f"cannot read file: {error.strerror or error}")]) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CaseFileError([Problem(start, "", f"not UTF-8 text (byte {error.start})")]) from None
    node = _compose(name, text)
    if node is None:
        raise CaseFileError([Problem(start, "", "empty file: expected 'operator:' and 'cases:'")])
    converter = _Converter(name, max_nodes)
    data = converter.convert(node, ())
    return Document(name, data, converter.positions)


def iter_case_files(paths: list[str]) -> Iterator[str]:
    """Case files named by ``paths`` (files as given, directories searched for *.yaml/*.yml), sorted."""
    for path in paths:
        if os.path.isdir(path):
            found = []
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in files if f.endswith((".yaml", ".yml")))
            yield from sorted(found)
        else:
            yield path

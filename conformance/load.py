"""Load a case file: YAML text -> plain Python values plus where each field was written.

Safety first: the file size is checked before reading, YAML is only *composed* (no object is ever
constructed from a tag), any tag beyond the core schema is refused, duplicate keys are refused, and
the node count is bounded so that alias bombs cannot expand without limit.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO

import yaml
from yaml.constructor import SafeConstructor

from conformance.model import SourcePos
from conformance.problems import CaseFileError, Problem

DEFAULT_MAX_FILE_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_NODES = 20_000_000
# Case files nest a few levels (cases / case / tensor / Data of up to 8 dimensions); anything far deeper is refused
# before PyYAML's or our own recursion could overflow the stack.
MAX_DEPTH = 64

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

# Plain scalars resolve by YAML 1.2's core schema rather than PyYAML's YAML 1.1 one, whose surprises would reach
# case files silently: ``3_1`` is the integer 31 and ``1:30`` the integer 90 (underscores, base 60), ``1e-5`` is
# a string, and ``2024-01-01`` a timestamp. Here those are strings, except ``1e-5``, which is a float.
_INT = re.compile(r"^[-+]?(?:0|[1-9][0-9]*|0b[01]+|0o?[0-7]+|0x[0-9a-fA-F]+)$")
_FLOAT = re.compile(
    r"""^(?:[-+]?(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?
                    |[-+]?[0-9]+[eE][-+]?[0-9]+
                    |[-+]?\.(?:inf|Inf|INF)
                    |\.(?:nan|NaN|NAN))$""",
    re.X,
)
_RESOLVED = {"tag:yaml.org,2002:int": _INT, "tag:yaml.org,2002:float": _FLOAT}
_KEPT = {"tag:yaml.org,2002:bool", "tag:yaml.org,2002:null", "tag:yaml.org,2002:merge"}


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the plain-scalar resolution above; only ``compose`` is ever used."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, _RESOLVED.get(tag, regexp)) for tag, regexp in resolvers if tag in _RESOLVED or tag in _KEPT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


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

    def measure(self, root: yaml.Node) -> None:
        """Refuse a document whose expanded size (aliases counted each time they are used) is over ``max_nodes``,
        or that nests deeper than MAX_DEPTH or refers to itself, before anything is converted.

        Each distinct node is measured once, so an alias bomb is refused in time linear in the file's size.
        """
        sizes: dict[int, int] = {}
        open_nodes: set[int] = set()

        def size(node: yaml.Node, key: Path) -> int:
            known = sizes.get(id(node))
            if known is not None:
                return known
            if id(node) in open_nodes:
                raise self.fail(node, key, "an alias refers to a node that contains it (recursive document)")
            if len(key) > MAX_DEPTH:
                raise self.fail(node, key, f"nesting is deeper than {MAX_DEPTH} levels")
            open_nodes.add(id(node))
            total = 1
            if isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    total += size(item, (*key, i))
                    if total > self.max_nodes:
                        break
            elif isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    total += 1 + size(value_node, (*key, str(key_node.value)))
                    if total > self.max_nodes:
                        break
            open_nodes.discard(id(node))
            if total > self.max_nodes:
                raise self.fail(node, key, f"document has more than {self.max_nodes} nodes (alias bomb or huge file?)")
            sizes[id(node)] = total
            return total

        size(root, ())

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
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                raise self.fail(key_node, key, "mapping keys must be plain names (no tags, merges or collections)")
            name = str(key_node.value)
            if name in result:
                first = self.positions[(*key, name)]
                raise self.fail(key_node, (*key, name), f"duplicate key {name!r} (first at line {first.line})")
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
    context, context_mark = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        problem += f" ({context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
    return Problem(SourcePos(path, line, col), "", f"YAML syntax error: {problem}")


def _compose(path: str, text: str) -> yaml.Node | None:
    """Parse to nodes only: composing never constructs a Python object from a tag."""
    loader = _Loader(text)
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    except yaml.YAMLError as error:
        raise CaseFileError([_yaml_problem(path, error)]) from None
    except RecursionError:
        mark = loader.get_mark()
        problem = f"YAML nesting is too deep to read (case files nest at most {MAX_DEPTH} levels)"
        raise CaseFileError([Problem(SourcePos(path, mark.line + 1, mark.column + 1), "", problem)]) from None
    finally:
        loader.dispose()


def _undecodable(path: str, raw: bytes, error: UnicodeDecodeError) -> Problem:
    """Where the first byte that is not UTF-8 is, as line and column (in characters) of the text before it."""
    before = raw[: error.start].decode("utf-8")
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    message = f"not UTF-8 text: byte 0x{raw[error.start]:02x} at offset {error.start}"
    return Problem(SourcePos(path, line, col), "", message)


def _read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes, read in chunks: ``read(limit)`` would allocate the whole limit up front."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = handle.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


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
            raw = _read_at_most(handle, max_file_bytes + 1)
    except OSError as error:
        raise CaseFileError([Problem(start, "", f"cannot read file: {error.strerror or error}")]) from None
    if len(raw) > max_file_bytes:  # a file that grew after the size check, or a device or pipe
        raise CaseFileError([Problem(start, "", f"file is over the limit of {max_file_bytes} bytes")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CaseFileError([_undecodable(name, raw, error)]) from None
    node = _compose(name, text)
    if node is None:
        raise CaseFileError([Problem(start, "", "empty file: expected 'operator:' and 'cases:'")])
    converter = _Converter(name, max_nodes)
    converter.measure(node)
    data = converter.convert(node, ())
    return Document(name, data, converter.positions)


def iter_case_files(paths: list[str]) -> Iterator[str]:
    """Case files named by ``paths`` (files as given, directories searched for *.yaml/*.yml), sorted."""
    for path in paths:
        if os.path.isdir(path):
            found: list[str] = []
            for root, dirs, files in os.walk(path):
                dirs.sort()
                found.extend(os.path.join(root, f) for f in files if f.endswith((".yaml", ".yml")))
            yield from sorted(found)
        else:
            yield path

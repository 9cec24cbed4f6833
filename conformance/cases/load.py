"""Load a case file: YAML text -> plain Python values plus where each field was written.

Safety first: the file size is checked before reading, YAML is only *composed* (no object is ever
constructed from a tag), any tag beyond the core schema is refused, duplicate keys are refused, and
the node count is bounded so that alias bombs cannot expand without limit.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

import yaml
from yaml.constructor import SafeConstructor

from conformance.cases.limits import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_NODES
from conformance.cases.load_file import check_file, open_without_waiting, read_at_most, undecodable
from conformance.model import SourcePos
from conformance.problems import CaseFileError, Problem, first_line

# Case files nest a few levels (cases / case / tensor / Data of up to 8 dimensions); anything far deeper is refused
# before PyYAML's or our own recursion could overflow the stack.
MAX_DEPTH = 64
# The composer recurses about three frames a level: deeper than this is refused while composing, well inside
# Python's recursion limit; MAX_DEPTH is then checked on the composed nodes, with the field's name.
_COMPOSE_DEPTH = 2 * MAX_DEPTH
# An integer literal longer than this fits no field (the largest, a 64-bit Seed or a FLOAT32 written as an integer,
# takes 39 digits), and one of over 4,300 digits cannot even be converted or printed.
MAX_INT_CHARS = 100

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
_TOO_DEEP = f"YAML nesting is too deep to read (case files nest at most {MAX_DEPTH} levels)"


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader with the plain-scalar resolution above; only ``compose`` is ever used.

    Composing counts the nodes it makes and how deep it is, so that a huge or deeply nested document is refused
    while it is read, before its nodes fill memory or its nesting the stack."""

    def __init__(self, path: str, text: str, max_nodes: int) -> None:
        super().__init__(text)
        self.path = path
        self.max_nodes = max_nodes
        self.nodes = 0
        self.depth = 0

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        event = self.peek_event()  # type: ignore[no-untyped-call]
        self.nodes += not isinstance(event, yaml.AliasEvent)  # an alias makes no node; measure() counts its uses
        if self.nodes > self.max_nodes or self.depth >= _COMPOSE_DEPTH:
            where = SourcePos(self.path, event.start_mark.line + 1, event.start_mark.column + 1)
            too_many = f"document has more than {self.max_nodes} nodes (alias bomb or huge file?)"
            raise CaseFileError([Problem(where, "", too_many if self.nodes > self.max_nodes else _TOO_DEEP)])
        self.depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1


_Loader.yaml_implicit_resolvers = {
    first: [(tag, _RESOLVED.get(tag, regexp)) for tag, regexp in resolvers if tag in _RESOLVED or tag in _KEPT]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


# libyaml (PyYAML's C composer) builds the same nodes with the same marks some ten times faster, but it accepts and
# words differently documents the pure-Python parser refuses, and recurses on the C stack. So it composes only text of
# printable ASCII and line feeds, only after its event stream (no recursion) showed the document within the node and
# depth limits, and only when it raises nothing: every other document, and every error, is the pure composer's.
_LIBYAML_TEXT = re.compile(r"[\n\x20-\x7e]*")
_NODE_START = (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


def _libyaml_loader() -> Any:
    """libyaml's safe loader with the plain-scalar resolution above, or None where PyYAML was built without it."""
    base = getattr(yaml, "CSafeLoader", None)
    if base is None or not yaml.__with_libyaml__:
        return None
    return type("_CLoader", (base,), {"yaml_implicit_resolvers": _Loader.yaml_implicit_resolvers})


_CLoader = _libyaml_loader()


def _plain_differs(event: yaml.Event) -> bool:
    """A plain scalar libyaml reads otherwise: one with a "?" (the pure scanner ends it there in a flow collection,
    then refuses the document) or an empty one (libyaml marks it a column further on). Explicit tags differ too."""
    return isinstance(event, yaml.ScalarEvent) and not event.style and ("?" in event.value or not event.value)


def _libyaml_reads_as_pure(text: str, max_nodes: int) -> bool:
    """Whether libyaml reads ``text`` as the pure composer does, within the node and depth limits (counted as
    _Loader.compose_node counts them), judged on libyaml's events, which it makes without recursing."""
    events = _CLoader(text)
    nodes = depth = 0
    try:
        while (event := events.get_event()) is not None:
            if isinstance(event, _NODE_START) and (event.tag is not None or _plain_differs(event)):
                return False
            if isinstance(event, (*_NODE_START, yaml.AliasEvent)):
                nodes += isinstance(event, _NODE_START)
                if nodes > max_nodes or depth >= _COMPOSE_DEPTH:
                    return False
                depth += isinstance(event, _COLLECTION_START)
            elif isinstance(event, _COLLECTION_END):
                depth -= 1
    finally:
        events.dispose()
    return True


def _compose_with_libyaml(text: str, max_nodes: int) -> tuple[bool, yaml.Node | None]:
    """libyaml's node tree for ``text`` and True, or False where the pure composer must compose it."""
    if _CLoader is None or not _LIBYAML_TEXT.fullmatch(text):
        return False, None
    try:
        if not _libyaml_reads_as_pure(text, max_nodes):
            return False, None
        loader = _CLoader(text)
        try:
            node: yaml.Node | None = loader.get_single_node()
        finally:
            loader.dispose()
    except yaml.YAMLError:  # its wording and marks differ: the pure composer says what is wrong
        return False, None
    return True, node


@dataclass(frozen=True)
class Document:
    path: str
    data: Any
    positions: dict[Path, SourcePos]
    text: str = ""  # the file's text as read (a waiver file's is recorded with the run it gated)

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
        if node.tag == "tag:yaml.org,2002:int" and len(node.value) > MAX_INT_CHARS:
            message = f"integer of {len(node.value)} characters is too large for any field (at most {MAX_INT_CHARS})"
            raise self.fail(node, key, message)
        # The constructor is called directly: construct_object would keep every scalar node alive in its cache.
        value = SafeConstructor.yaml_constructors[node.tag](self._scalars, node)
        if isinstance(value, str):
            self._unicode(node, key, value)
        return value

    def _unicode(self, node: yaml.Node, key: Path, text: str) -> None:
        """Refuse a string with a lone surrogate (a double-quoted "\\ud800"): it is no character, so no UTF-8
        file (results.json, a report) and no hash could hold the id or text it is part of."""
        if not _encodable(text):
            code = next(ord(c) for c in text if not _encodable(c))
            raise self.fail(node, key, f"\\u{code:04x} is a lone surrogate, not a character: write valid Unicode")

    def _mapping(self, node: yaml.MappingNode, key: Path) -> dict[str, Any]:
        if node.tag != "tag:yaml.org,2002:map":
            raise self.fail(node, key, f"unsupported YAML tag {node.tag!r}")
        result: dict[str, Any] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag not in _SCALAR_TAGS:
                raise self.fail(key_node, key, "mapping keys must be plain names (no tags, merges or collections)")
            name = str(key_node.value)
            self._unicode(key_node, key, name)
            if name in result:
                first = self.positions[(*key, name)]
                raise self.fail(key_node, (*key, name), f"duplicate key {name!r} (first at line {first.line})")
            self.positions[(*key, name)] = self.where(key_node)
            result[name] = self.convert(value_node, (*key, name))
        return result


def _keeps_position(key: Path) -> bool:
    """Positions of data values are not kept: a Data list can hold millions of them."""
    return len(key) <= _POSITION_DEPTH and "Data" not in key[:-1] and "expected" not in key[:-2]


def _encodable(text: str) -> bool:
    """Whether ``text`` is valid Unicode: a lone surrogate (a YAML "\\ud800", or a file name's undecodable byte
    as Python escapes it) is no character, and no UTF-8 file or hash can hold it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _dotted(key: Path) -> str:
    return ".".join(str(part) for part in key)


def _yaml_problem(path: str, error: yaml.YAMLError) -> Problem:
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = getattr(error, "problem", None) or first_line(str(error), None)
    context, context_mark = getattr(error, "context", None), getattr(error, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        problem += f" ({context} at line {context_mark.line + 1}, column {context_mark.column + 1})"
    return Problem(SourcePos(path, line, col), "", f"YAML syntax error: {problem}")


def _reader_problem(path: str, text: str, error: yaml.reader.ReaderError) -> Problem:
    """A character YAML does not allow (NUL, most control characters): located from its offset in the text."""
    before = text[: error.position]
    line, col = before.count("\n") + 1, error.position - (before.rfind("\n") + 1) + 1
    message = f"YAML syntax error: unacceptable character #x{error.character:04x}: {error.reason}"
    return Problem(SourcePos(path, line, col), "", message)


def _compose(path: str, text: str, max_nodes: int) -> yaml.Node | None:
    """Parse to nodes only: composing never constructs a Python object from a tag."""
    composed, node = _compose_with_libyaml(text, max_nodes)
    if composed:
        return node
    loader: _Loader | None = None
    try:
        loader = _Loader(path, text, max_nodes)  # the reader checks every character here
        node = loader.get_single_node()
        return node
    except yaml.reader.ReaderError as error:
        raise CaseFileError([_reader_problem(path, text, error)]) from None
    except yaml.YAMLError as error:
        raise CaseFileError([_yaml_problem(path, error)]) from None
    except RecursionError:  # only if the caller's own stack was already nearly full
        mark = loader.get_mark() if loader is not None else None
        where = SourcePos(path, mark.line + 1, mark.column + 1) if mark is not None else SourcePos(path, 1, 1)
        raise CaseFileError([Problem(where, "", _TOO_DEEP)]) from None
    finally:
        if loader is not None:
            loader.dispose()


def load_document(
    path: str | os.PathLike[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_nodes: int = DEFAULT_MAX_NODES,
) -> Document:
    """Read and compose one case file; raise CaseFileError with one-line problems when it is unusable."""
    name = os.fspath(path)
    start = SourcePos(name, 1, 1)
    if not _encodable(name):  # a name of bytes that are not UTF-8 (surrogate-escaped by Python)
        shown = os.fsencode(name).decode("utf-8", "backslashreplace")
        message = "the file's name is not valid UTF-8: case ids name their file, and results.json is UTF-8; rename it"
        raise CaseFileError([Problem(SourcePos(shown, 1, 1), "", message)])
    try:
        check_file(start, os.stat(name), max_file_bytes)  # before opening: opening a FIFO would wait for a writer
        with open(name, "rb", opener=open_without_waiting) as handle:
            check_file(start, os.fstat(handle.fileno()), max_file_bytes)  # the file opened, if it was replaced
            raw = read_at_most(handle, max_file_bytes + 1)
    except OSError as error:
        raise CaseFileError([Problem(start, "", f"cannot read file: {error.strerror or error}")]) from None
    if len(raw) > max_file_bytes:  # a file that grew after the size check, or a device or pipe
        raise CaseFileError([Problem(start, "", f"file is over the limit of {max_file_bytes} bytes")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CaseFileError([undecodable(name, raw, error)]) from None
    return parse_document(name, text, max_nodes=max_nodes)


def parse_document(name: str, text: str, *, max_nodes: int = DEFAULT_MAX_NODES) -> Document:
    """Compose ``text``, read from (or recorded as) the file ``name``, under the same rules as ``load_document``: a
    waiver file recorded in a results.json is read again from its text."""
    node = _compose(name, text, max_nodes)
    if node is None:
        raise CaseFileError([Problem(SourcePos(name, 1, 1), "", "empty file: expected 'operator:' and 'cases:'")])
    converter = _Converter(name, max_nodes)
    converter.measure(node)
    data = converter.convert(node, ())
    return Document(name, data, converter.positions, text)

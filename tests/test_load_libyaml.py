"""libyaml composes case files where it reads them as PyYAML's pure-Python composer does (conformance/cases/load.py):
the same nodes, tags and marks; everywhere else, and for every error, the pure composer's own message.

The expected trees and messages come from the pure composer (PyYAML's other, independent implementation), read
through the same loader with libyaml switched off; the messages quoted below are the pure composer's wording.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from conformance.cases import load
from conformance.cases.load import load_document
from conformance.problems import CaseFileError

CASES_DIR = Path(__file__).resolve().parent.parent / "cases"
LIBRARY = sorted(CASES_DIR.rglob("*.yaml"))
needs_libyaml = pytest.mark.skipif(not yaml.__with_libyaml__, reason="PyYAML was built without libyaml")

# Documents libyaml reads otherwise than the pure composer, each with the pure composer's message (or None: it loads).
READ_OTHERWISE = {
    "a: [1, 0?.0, 2]\n": "1:9: YAML syntax error: expected ',' or ']', but got '?' (while parsing a flow sequence at "
    "line 1, column 4)",  # libyaml reads the scalar 0?.0
    "a: {b: 1, c: }\n": None,  # libyaml marks the empty value a column later
    "a: [1, !x, 2]\n": "1:8: a.1: unsupported YAML tag '!x,'",  # libyaml's tag is '!x'
    "a:\n\t- 1\n": "2:1: YAML syntax error: found character '\\t' that cannot start any token",
    "a: [1,\r\n 2]\r\nb: 3\r\n": None,  # line breaks other than a line feed: not given to libyaml
    "a: \u00b1 \u2028 1\nb: [\u00e9, 2]\n": None,  # nor characters beyond ASCII
    # the mapping and 127 sequences enclose the 128th "[", at column 3 + 128: the pure composer refuses it
    "a: " + "[" * 200 + "]" * 200 + "\n": f"1:131: {load._TOO_DEEP}",
}


def tree(node: yaml.Node | None) -> Any:
    """A node as plain values: its kind, tag, where it starts and its value or children."""
    if node is None:
        return None
    head = (type(node).__name__, node.tag, node.start_mark.line, node.start_mark.column)
    if isinstance(node, yaml.ScalarNode):
        return (*head, node.value)
    if isinstance(node, yaml.SequenceNode):
        return (*head, [tree(item) for item in node.value])
    return (*head, [(tree(key), tree(value)) for key, value in node.value])


def pure_tree(path: str, text: str) -> Any:
    """The pure composer's tree for ``text``."""
    loader = load._Loader(path, text, load.DEFAULT_MAX_NODES)
    try:
        return tree(loader.get_single_node())
    finally:
        loader.dispose()


def problems(path: Path, **limits: int) -> list[str]:
    """The one-line problems load_document raises for ``path``, without the path."""
    with pytest.raises(CaseFileError) as info:
        load_document(path, **limits)
    return [str(problem).removeprefix(f"{path}:") for problem in info.value.problems]


@needs_libyaml
def test_libyaml_composes_every_file_of_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_pure_composer(*args: object) -> None:
        raise AssertionError("the pure composer was used")

    monkeypatch.setattr(load, "_Loader", no_pure_composer)
    assert len(LIBRARY) > 20
    for path in LIBRARY:
        text = path.read_text(encoding="utf-8")
        if load._LIBYAML_TEXT.fullmatch(text):  # the files of printable ASCII: all but one
            assert load_document(path).data


@needs_libyaml
@pytest.mark.parametrize("path", LIBRARY, ids=lambda path: path.name)
def test_libyaml_builds_the_pure_composers_nodes_and_marks(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert tree(load._compose(str(path), text, load.DEFAULT_MAX_NODES)) == pure_tree(str(path), text)


@needs_libyaml
@pytest.mark.parametrize("text", list(READ_OTHERWISE), ids=range(len(READ_OTHERWISE)))
def test_what_libyaml_reads_otherwise_is_the_pure_composers(tmp_path: Path, text: str) -> None:
    path = tmp_path / "case.yaml"
    path.write_bytes(text.encode("utf-8"))
    assert not load._compose_with_libyaml(text, load.DEFAULT_MAX_NODES)[0]
    expected = READ_OTHERWISE[text]
    if expected is None:
        assert tree(load._compose(str(path), text, load.DEFAULT_MAX_NODES)) == pure_tree(str(path), text)
    else:
        assert problems(path) == [expected]


@needs_libyaml
def test_the_node_limit_is_counted_before_libyaml_composes(tmp_path: Path) -> None:
    # The mapping, its key, the sequence and its 3 items: 6 nodes; under a limit of 5 the pure composer stops at
    # the 6th, the 3 at column 11.
    path = tmp_path / "case.yaml"
    path.write_text("a: [1, 2, 3]\n", encoding="utf-8")
    assert load._compose_with_libyaml("a: [1, 2, 3]\n", 6)[0]
    assert not load._compose_with_libyaml("a: [1, 2, 3]\n", 5)[0]
    assert problems(path, max_nodes=5) == ["1:11: document has more than 5 nodes (alias bomb or huge file?)"]


@needs_libyaml
def test_deep_nesting_never_reaches_libyaml_on_a_small_thread_stack() -> None:
    # libyaml's composer recurses on the C stack: 2,000 levels overflow a 256 KiB thread stack (a crash, not an
    # exception), so this runs in a child process; the depth is refused from libyaml's events first.
    script = f"""
import sys, threading
sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
from conformance.cases import load
from conformance.problems import CaseFileError
said = []
def compose():
    try:
        load._compose("deep.yaml", "a: " + "[" * 100000 + "]" * 100000 + "\\n", 50000)
    except CaseFileError as error:
        said.append(str(error))
threading.stack_size(256 * 1024)
thread = threading.Thread(target=compose)
thread.start()
thread.join()
print(said[0])
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"deep.yaml:1:131: {load._TOO_DEEP}"


def test_without_libyaml_every_file_loads_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    with_libyaml = {path: load_document(path) for path in LIBRARY}
    monkeypatch.setattr(load, "_CLoader", None)
    for path in LIBRARY:
        assert load_document(path) == with_libyaml[path]

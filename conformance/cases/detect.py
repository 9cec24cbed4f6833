"""Whether a YAML file met while walking a directory is a case file: the one rule of the CLI's walk (suite.py) and
of the pytest plugin's collection. A file named on the command line is read whatever it holds (the callers' part).

A case file's top level is a mapping with ``operator:`` and ``cases:``. A YAML file whose top level has neither is
another kind of file (a CI workflow, a waiver file) and is skipped. So are the harness's own clause files
(reference/clauses/*.yaml), which name their operator too: their ``clauses:`` tells them apart. Any other file with
either key is read, so that a case file with a problem is reported, never skipped: one whose ``cases:`` is misspelt,
whose ``operator:`` is missing, or that holds no case. So is a file that cannot be told apart (unreadable, not YAML,
or undecided within its first PEEK_BYTES): reading it reports why. (A file without ``cases:`` holds no case, so
skipping one can never drop a case; ``cases:`` alone always reads.)

Only YAML events are parsed (nothing is constructed, no alias expanded), from the start of the file, and parsing
stops as soon as the top level's keys decide: a case file names its operator or its cases within its first lines.
"""

from __future__ import annotations

import os
import stat

import yaml

from conformance.cases.load_file import open_without_waiting, read_at_most

CASE_FILE_SUFFIXES = (".yaml", ".yml")
PEEK_BYTES = 1 << 20

_COLLECTION_START = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_COLLECTION_END = (yaml.MappingEndEvent, yaml.SequenceEndEvent)
_NODE = (yaml.ScalarEvent, yaml.AliasEvent)


def is_case_file(path: str) -> bool:
    """Whether a directory walk reads ``path`` as a case file (module docstring)."""
    try:
        with open(path, "rb", opener=open_without_waiting) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode):
                return True  # reading it refuses it, with the reason
            head = read_at_most(handle, PEEK_BYTES + 1)
    except OSError:
        return True
    try:
        text = head[:PEEK_BYTES].decode("utf-8")
    except UnicodeDecodeError:
        return True
    decided = _top_level_decides(text, complete=len(head) <= PEEK_BYTES)
    return decided if decided is not None else True


def _top_level_decides(text: str, complete: bool) -> bool | None:
    """The rule applied to the first document's top-level keys; None where ``text`` does not decide: YAML that does
    not parse, or the start of a longer file (``complete`` false) whose top-level keys seen so far do not."""
    depth = 0  # how deep in collections the next event is
    at_key = True  # whether the next top-level node is a key (else a value)
    names_operator = False
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, _COLLECTION_START):
                if depth == 0 and not isinstance(event, yaml.MappingStartEvent):
                    return False  # a list at the top
                depth += 1
            elif isinstance(event, _COLLECTION_END):
                depth -= 1
                if depth == 0:  # the top-level mapping's end, or only the end of the text read
                    return names_operator if complete or names_operator else None
                if depth == 1:  # a collection that was a top-level key or value has ended
                    at_key = not at_key
            elif isinstance(event, _NODE):
                if depth == 0:
                    return False  # a scalar at the top
                if depth == 1:
                    key = event.value if at_key and isinstance(event, yaml.ScalarEvent) else None
                    if key in ("cases", "clauses"):
                        return key == "cases"
                    names_operator = names_operator or key == "operator"
                    at_key = not at_key
            elif isinstance(event, yaml.DocumentEndEvent):
                return False  # an empty document
    except yaml.YAMLError:
        return True if names_operator else None
    return False if complete else None  # no document at all

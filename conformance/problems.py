"""What is wrong with a case file, as ``path:line:col: field: message`` lines."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from conformance.model import SourcePos

# Control characters and every other character that ``str.splitlines`` breaks at: a key, value or file name
# holding one (they come from the case file) must not split a problem's line or drive the terminal.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with each control character or line break escaped as Python writes it (\\n, \\x1b, \\u2028)."""
    return _UNPRINTABLE.sub(lambda match: repr(match.group())[1:-1], text)


def first_line(text: str, limit: int | None = 160) -> str:
    """A message's first line, for a table cell or a headline: cut to ``limit`` characters (an ellipsis marks the
    cut; None: never cut)."""
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if limit is None or len(line) <= limit else line[: limit - 1] + "…"


@dataclass(frozen=True)
class Problem:
    """``clauses``: the ids of the spec clauses (conformance/coverage/clauses.py) the problem breaks, if any;
    ``decision``: the name of the harness's decision it enforces where the spec itself says nothing
    (cases/decisions.py), empty where the spec's own words refuse it."""

    pos: SourcePos
    field: str
    message: str
    clauses: tuple[str, ...] = ()
    decision: str = ""

    def __str__(self) -> str:
        where = f"{one_line(self.pos.path)}:{self.pos.line}:{self.pos.col}: "
        field = f"{one_line(self.field)}: " if self.field else ""
        return where + field + one_line(self.message)


class CaseFileError(Exception):
    """A case file that cannot be used; carries every problem found, each a one-line message."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = tuple(problems)

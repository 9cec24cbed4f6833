"""What is wrong with a case file, as ``path:line:col: field: message`` lines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from conformance.model import SourcePos


@dataclass(frozen=True)
class Problem:
    """``clauses``: the ids of the spec clauses (conformance/clauses.py) the problem breaks, if any."""

    pos: SourcePos
    field: str
    message: str
    clauses: tuple[str, ...] = ()

    def __str__(self) -> str:
        where = f"{self.pos}: {self.field}: " if self.field else f"{self.pos}: "
        return where + self.message


class CaseFileError(Exception):
    """A case file that cannot be used; carries every problem found, each a one-line message."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        super().__init__("\n".join(str(p) for p in problems))
        self.problems = tuple(problems)

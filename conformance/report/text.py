"""Case-provided text made safe for each format's cells, and the Markdown tables summary.md and the diff share.

A case id, EP option or message comes from a case file or a results.json: it must not drive a terminal, break a
table or render as markup.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from tabulate import tabulate


def plain(text: object) -> str:
    """Case-provided text with control characters shown escaped: a case id must not drive the terminal."""
    return "".join(char if char.isprintable() else ascii(char)[1:-1] for char in str(text))


_LINE_BREAKS = re.compile(r"\r\n|\r|\n")
# ASCII punctuation that Markdown (GitHub's included) gives a meaning to inside a table cell; each is escaped with
# a backslash, which CommonMark defines for every ASCII punctuation character.
_MARKUP = "\\`*_<>[]|&~"


def cell(text: object) -> str:
    """Case-provided text is escaped: a pipe or newline must not break the table, nor markup render."""
    value = _LINE_BREAKS.sub(" ", str(text))
    return "".join("\\" + char if char in _MARKUP else char for char in value)


def code(text: str) -> str:
    """``text`` as an inline code span that no backtick inside it can close early (CommonMark 6.1)."""
    text = _LINE_BREAKS.sub(" ", text)
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(rows: Sequence[Sequence[object]], headers: Sequence[str], text: bool = True) -> str:
    """A GitHub table, padded (summary.md)."""
    # Text tables parse no numbers: a case id or message that looks like one ("1e5", "nan") is shown as written.
    return tabulate(rows, list(headers), tablefmt="github", disable_numparse=text)


def code_cell(text: str) -> str:
    # GFM splits a table row on every unescaped pipe, inside a code span too: the backslash is taken out first.
    return code(text).replace("|", "\\|") if text else ""


def compact_table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """A GitHub table without padding (the diff's PR comment)."""
    # Unpadded, unlike tabulate's: a PR comment has a size limit, and column padding would spend it on spaces.
    lines = [headers, ["---"] * len(headers), *rows]
    return "\n".join("| " + " | ".join(line) + " |" for line in lines)

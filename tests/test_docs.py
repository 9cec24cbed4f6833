"""The README and docs/ as a reader meets them: every relative link leads to a file that exists (and, with ``#anchor``,
to a heading of that file, by GitHub's slug rule); every repository path they name in code spans exists in a clone
(nothing points at folders beside the checkout); every README or docs section the code's comments cite exists; the
README stays short, has a table of contents, gives the test command CI runs, and lists every command, option, exit
code and status of the code itself."""

from __future__ import annotations

import glob
import re
import unicodedata
from collections.abc import Iterator
from pathlib import Path

import pytest

from conformance.cases.suite import collect
from conformance.cli.main import COMMAND_TABLE
from conformance.coverage.mapping import quick
from conformance.model import Operator, Status
from conformance.pytest_plugin.plugin import PLUGIN_OPTIONS

REPO = Path(__file__).resolve().parent.parent
README = REPO / "README.md"
README_LIMIT = 15_000  # bytes: what a user reads first; the rest belongs in docs/
DOCUMENTS = sorted([README, REPO / "reports" / "README.md", *(REPO / "docs").glob("*.md")])
# Code spans naming a path in the repository: a top-level folder of a clone, or a path relative to the document.
REPO_PATH = re.compile(r"^(?:\.\./|\.ci/|(?:conformance|tests|cases|reports|docs|benchmarks|reference)/)[^\s]*$")
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.MULTILINE | re.DOTALL)
CODE_SPAN = re.compile(r"`([^`\n]+)`")
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(([^()\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$", re.MULTILINE)
# Where code and configuration cite a documentation section: README.md#slug, docs/page.md#slug, or a section
# named in quotes after "README" (README: "Running on a GPU"; the README ("Spec decisions")).
CITED_ANCHOR = re.compile(r"(?<![\w./])((?:[\w-]+/)*[\w.-]+\.md)#([\w-]+)")
CITED_TITLE = re.compile(r"\bREADME(?:\.md)?[ :,(]{1,3}\"([A-Za-z][^\"\n]*)\"")


def _prose(text: str) -> str:
    """The text without fenced code blocks, where nothing is a link or a heading."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text (code, links and emphasis reduced to their words) in lower case,
    letters, digits, ``_``, spaces and hyphens kept, each space a hyphen."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = text.replace("`", "").replace("*", "")
    kept = "".join(c for c in text.lower() if c in " -" or unicodedata.category(c)[0] in "LMN" or c == "_")
    return kept.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading anchor of a Markdown file, repeated headings numbered as GitHub numbers them."""
    seen: dict[str, int] = {}
    found = set()
    for match in HEADING.finditer(_prose(path.read_text(encoding="utf-8"))):
        base = slug(match.group(1))
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(path: Path) -> Iterator[str]:
    """The targets of a Markdown file's links, outside code (a code span in a link's text stays a link)."""
    prose = _prose(path.read_text(encoding="utf-8"))
    prose = CODE_SPAN.sub(lambda m: "code" if "](" in m.group(1) or "[" in m.group(1) else m.group(0), prose)
    for match in LINK.finditer(prose):
        yield match.group(1)


def broken_link(document: Path, target: str) -> str | None:
    """Why a link of ``document`` leads nowhere, or None where it resolves."""
    if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not this test's business
        return None
    file_part, _, anchor = target.partition("#")
    linked = (document.parent / file_part).resolve() if file_part else document
    if REPO not in linked.parents and linked != REPO:
        return f"{target}: outside the repository"
    if not linked.exists():
        return f"{target}: no such file"
    if anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
        return f"{target}: no heading #{anchor} in {linked.relative_to(REPO)}"
    return None


def _relative(path: Path) -> str:
    return str(path.relative_to(REPO))


@pytest.mark.parametrize("document", DOCUMENTS, ids=_relative)
def test_every_relative_link_resolves(document: Path) -> None:
    broken = [why for target in links(document) if (why := broken_link(document, target)) is not None]
    assert broken == []


def missing_path(document: Path, span: str) -> str | None:
    """Why a code span naming a repository path names nothing in a clone; ``<operator>`` and ``[...]`` stand for
    any text, ``::id`` and ``:options`` after the path are not part of it."""
    path = span.split("::")[0].split(":")[0].rstrip(".,;")
    pattern = re.sub(r"<[^>]*>|\[[^\]]*\]", "*", path)
    base = document.parent if path.startswith("../") else REPO
    resolved = Path(glob.escape(str(base.resolve()))) / pattern
    inside = (base / path.split("*")[0].split("<")[0]).resolve()
    if REPO not in inside.parents and inside != REPO:
        return f"`{span}`: outside the repository (not in a clone)"
    if not glob.glob(str(resolved)):
        return f"`{span}`: no such path"
    return None


@pytest.mark.parametrize("document", DOCUMENTS, ids=_relative)
def test_every_repository_path_named_exists(document: Path) -> None:
    spans = CODE_SPAN.findall(_prose(document.read_text(encoding="utf-8")))
    missing = [why for span in spans if REPO_PATH.match(span) and (why := missing_path(document, span)) is not None]
    assert missing == []


def _citing_files() -> list[Path]:
    """The files whose comments cite documentation: the package, the tests, the benchmarks, CI and the project's
    configuration, and the documents themselves."""
    found = [REPO / "pyproject.toml", REPO / "tox.ini", *DOCUMENTS, *(REPO / ".ci").glob("*")]
    for folder in ("conformance", "tests", "benchmarks", "reference"):
        found += [p for p in (REPO / folder).rglob("*") if p.suffix in {".py", ".sh", ".c", ".yml", ".yaml"}]
    found += (REPO / "docs").glob("*.yml")
    return sorted(p for p in set(found) if p.is_file() and p != Path(__file__).resolve())


def test_every_cited_section_exists() -> None:
    readme = anchors(README)
    wrong = []
    for path in _citing_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for page, anchor in CITED_ANCHOR.findall(text) if path not in DOCUMENTS else ():  # links: tested above
            target = REPO / page
            if not target.is_file() or anchor not in anchors(target):
                wrong.append(f"{_relative(path)}: {page}#{anchor}")
        wrong += [f'{_relative(path)}: README "{t}"' for t in CITED_TITLE.findall(text) if slug(t) not in readme]
    assert wrong == []


def test_the_readme_is_short_and_has_a_table_of_contents() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.encode("utf-8")) <= README_LIMIT, f"README.md is over {README_LIMIT} bytes: move detail to docs/"
    sections = [slug(m.group(1)) for m in re.finditer(r"^## (.+)$", _prose(text), re.MULTILINE)]
    assert sections[0] == "contents"
    contents = text.split("## Contents", 1)[1].split("\n## ", 1)[0]
    assert [target.lstrip("#") for target in LINK.findall(contents)] == sections[1:]


def _ci_commands() -> list[str]:
    """The commands .ci/run runs after setting up DirectML, ``-q`` aside (CI's logs are shorter; the README's
    reader sees the progress)."""
    lines = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in lines if line.startswith("python3 ")]
    return [re.sub(r" -q\b", "", line) for line in commands]


def test_the_readme_gives_the_test_command_ci_runs() -> None:
    commands = _ci_commands()
    assert commands, ".ci/run runs no python3 command"
    text = README.read_text(encoding="utf-8")
    assert [c for c in commands if c not in text] == []
    assert "source .ci/dml-chain.sh" in (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert "source .ci/dml-chain.sh" in text


def _synopsis() -> dict[str, str]:
    """The README's synopsis: each command's lines (a ``dmlconf NAME`` or ``pytest`` line and its continuations)."""
    text = README.read_text(encoding="utf-8")
    assert "\n## Command line\n" in text, "README.md has no 'Command line' section"
    block = text.split("\n## Command line\n", 1)[1].split("```", 2)[1]
    found: dict[str, str] = {}
    name = ""
    for line in block.splitlines():
        start = re.match(r"^(?:dmlconf (\w+)|(pytest)) ", line)
        if start:
            name = start.group(1) or start.group(2)
        if name:
            found[name] = found.get(name, "") + line + "\n"
    return found


def _flags_of(where: str) -> list[tuple[str, ...]]:
    from conformance.cli.main import options_of

    return [option.flags for option in (PLUGIN_OPTIONS if where == "pytest" else options_of(where))]


def test_the_synopsis_shows_every_command_and_option() -> None:
    synopsis = _synopsis()
    assert [name for name in COMMAND_TABLE if name not in synopsis] == []
    missing = [
        f"{where}: {'/'.join(flags)}"
        for where, lines in synopsis.items()
        if where in COMMAND_TABLE or where == "pytest"
        for flags in _flags_of(where)
        if not any(re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", lines) for flag in flags)
    ]
    assert missing == []


def _table_rows(heading: str) -> list[str]:
    """The first cell of each row of the table under a README heading."""
    text = README.read_text(encoding="utf-8")
    assert f"\n## {heading}\n" in text, f"README.md has no {heading!r} section"
    section = text.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")]
    return [cell.strip("`") for cell in cells[1:]]  # the header row aside


def test_every_command_has_its_exit_codes() -> None:
    rows = _table_rows("Exit codes")
    assert [name for name in [*COMMAND_TABLE, "pytest"] if name not in rows] == []


def test_every_status_is_explained() -> None:
    rows = _table_rows("Statuses")
    assert [status.value for status in Status if status.value not in rows] == []


# Where the README and docs/ state the library's current size (other documents' counts are dated measurements):
# each pattern must match once, so that a reworded claim is found again rather than left unchecked.
SUITE_COUNT = re.compile(r"whole suite \((\d+) cases,")
LIBRARY_COUNT = re.compile(r"`cases/` holds the library \((\d+) cases\)")
LIBRARY = re.compile(
    r"`cases/` holds \*\*(?P<cases>\d+) cases\*\* in (?P<files>\d+) files \((?P<operators>[^)]*)\), "
    r"(?P<negative>\d+) of them\s+negative"
)
CPU_RUN = re.compile(
    r"(?P<PASS>\d+) PASS, (?P<NOT_SUPPORTED>\d+) NOT_SUPPORTED \([^)]*\), (?P<NOT_EXPRESSIBLE>\d+) NOT_EXPRESSIBLE "
    r"\([^)]*\), (?P<INVALID>\d+) INVALID"
)
QUICK = re.compile(r"`--quick` selects \*\*(\d+) cases\*\*[^(]*\(`expect: invalid`, all (\d+):")


def _one(pattern: re.Pattern[str], path: Path) -> re.Match[str]:
    found = list(pattern.finditer(" ".join(path.read_text(encoding="utf-8").split())))
    assert len(found) == 1, f"{_relative(path)}: {pattern.pattern!r} matches {len(found)} time(s), not once"
    return found[0]


def test_the_docs_give_the_library_s_counts() -> None:
    suite = collect([str(REPO / "cases")])
    cases, negative = len(suite.entries), sum(e.expect_invalid is not None for e in suite.entries)
    per_operator = {str(op): sum(e.operator == op for e in suite.entries) for op in Operator}
    files = len({e.path for e in suite.entries})
    assert int(_one(SUITE_COUNT, README)[1]) == cases
    assert int(_one(LIBRARY_COUNT, README)[1]) == cases
    case_format = REPO / "docs" / "case-format.md"
    library = _one(LIBRARY, case_format)
    written = dict(item.rsplit(" ", 1) for item in library["operators"].split(", "))
    assert (int(library["cases"]), int(library["files"]), int(library["negative"])) == (cases, files, negative)
    assert {op: int(count) for op, count in written.items()} == per_operator
    # The CPU run's verdicts come from a run, not from loading the cases; they must still add up to the library.
    run = {status: int(count) for status, count in _one(CPU_RUN, case_format).groupdict().items()}
    assert (sum(run.values()), run["INVALID"]) == (cases, negative)
    selected = _one(QUICK, case_format)
    assert (int(selected[1]), int(selected[2])) == (len(quick(suite).entries), negative)

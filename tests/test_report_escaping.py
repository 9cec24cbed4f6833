"""Every text of a results.json, in its environment and its results, reaches the reports as text: none renders as
markup in summary.md (a pull-request comment), report.html or junit.xml. The fields are enumerated from the record
classes (tests/hostile.py's ``filled``), so a field added to them is covered without a change here."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hostile import MARKER, hostile_results_document, markdown_problems

from conformance.cli.main import main


class _Page(HTMLParser):
    """The elements and attributes of an HTML page, as a browser's tokenizer finds them."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.attributes: list[tuple[str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        self.attributes += [(name, value or "") for name, value in attrs]


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("hostile")
    document = hostile_results_document()
    (folder / "results.json").write_text(json.dumps(document), encoding="utf-8")
    assert main(["report", str(folder / "results.json")]) == 2  # it records skipped case files: exit 2
    return folder


def test_the_document_holds_the_marker_in_every_record_field_it_is_built_from() -> None:
    document = json.dumps(hostile_results_document())
    for field in ("environment.eps[0].directml.chain.adapter.description", "environment.runner_deaths[0].stderr[0]"):
        assert json.dumps(field + MARKER)[1:-1] in document
    assert json.dumps("results[0].details.sequence.input[0]" + MARKER)[1:-1] in document


def test_no_text_of_results_json_renders_as_markup_in_summary_md(reports: Path) -> None:
    markdown = (reports / "summary.md").read_text(encoding="utf-8")
    assert markdown.count("INJECTED") > 20  # the fields are there, as text
    assert markdown_problems(markdown) == []


def test_markdown_problems_finds_what_a_raw_field_would_do() -> None:
    assert markdown_problems(f"- EP {MARKER}: x") != []
    assert markdown_problems("| a | b |\n|---|---|\n| x | y |z |") != []
    assert markdown_problems("- `<script>` \\<b\\> ``a ` b``") == []


def test_report_html_keeps_every_text_out_of_its_markup(reports: Path) -> None:
    page = (reports / "report.html").read_text(encoding="utf-8")
    parsed = _Page()
    parsed.feed(page)
    assert parsed.tags.count("script") == 1  # the page's own filter script
    assert not [name for name, _ in parsed.attributes if name.startswith("on")]
    assert not [value for name, value in parsed.attributes if value.strip().lower().startswith("javascript:")]
    assert page.count("INJECTED") > 20


def test_junit_xml_stays_well_formed_with_every_case_named(reports: Path) -> None:
    root = ET.parse(reports / "junit.xml").getroot()
    names = {case.get("name") for case in root.iter("testcase")}
    cases = {result["case"] for result in hostile_results_document()["results"]}
    assert {name.replace("\r\n", "\n") for name in cases} <= {str(name).replace("\r\n", "\n") for name in names}

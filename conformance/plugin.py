"""pytest plugin: ``pytest cases/ --ep cpu`` collects every case as a test with the harness's own id.

A collector (CaseFile), an item (CaseItem) and a custom failure report, as in pytest's "YAML tests" example.
Verdicts are the CLI's: FAIL/ERROR fail, NOT_SUPPORTED/NOT_EXPRESSIBLE skip, QUALITY_WARNING warns.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.eps import EpSpec, best_available_ep, parse_ep
from conformance.model import FeatureLevel, Status
from conformance.parse import Entry, Rejected
from conformance.results import Result
from conformance.runner import RunOptions, run_entry
from conformance.suite import read_file
from conformance.validate import DEFAULT_MAX_ELEMENTS


class ConformanceWarning(UserWarning):
    """Behaviour the spec leaves open differs from the oracle's choice (QUALITY_WARNING)."""


class CaseFailure(Exception):
    def __init__(self, result: Result) -> None:
        super().__init__(result.message)
        self.result = result


class CaseFileProblems(Exception):
    """A case file the harness refuses: its one-line problems."""


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dml-conformance")
    group.addoption("--ep", action="append", default=[], metavar="EP",
                    help="execution provider for YAML cases (cpu, cuda, dml, webgpu, ...); repeatable")
    group.addoption("--feature-level", default=None, metavar="FL", help="the target's DML feature level")
    group.addoption("--max-elements", type=int, default=DEFAULT_MAX_ELEMENTS, metavar="N",
                    help="refuse case tensors over N elements")


def _is_case_file(path: Path) -> bool:
    """A YAML file whose top level names an operator: other YAML in the tree is left alone."""
    if path.suffix not in (".yaml", ".yml"):
        return False
    try:
        with path.open(encoding="utf-8", errors="replace") as handle:
            return any(line.startswith("operator:") for line, _ in zip(handle, range(50), strict=False))
    except OSError:
        return False


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    if _is_case_file(file_path):
        return CaseFile.from_parent(parent, path=file_path)
    return None


class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        config = self.config
        max_elements = config.getoption("max_elements")
        try:
            eps = [parse_ep(text) for text in config.getoption("ep")] or [best_available_ep()]
        except ValueError as error:
            raise pytest.UsageError(f"--ep: {error}") from None
        level_text = config.getoption("feature_level")
        options = RunOptions(FeatureLevel.parse(level_text) if level_text else None, max_elements)
        entries, problems = read_file(str(self.path), max_elements)
        if problems:
            raise CaseFileProblems("\n".join(str(p) for p in problems))
        for entry in entries:
            local = entry.id.rpartition("::")[2]
            for ep in eps:
                name = local if len(eps) == 1 else f"{local}@{ep.alias}"
                yield CaseItem.from_parent(self, name=name, entry=entry, ep=ep, options=options)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFileProblems):
            return str(excinfo.value)
        return str(super().repr_failure(excinfo))


class CaseItem(pytest.Item):
    def __init__(self, *, entry: Entry, ep: EpSpec, options: RunOptions, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.entry = entry
        self.ep = ep
        self.options = options

    def runtest(self) -> None:
        result = run_entry(self.entry, self.ep, self.options)
        self.user_properties.append(("status", result.status.value))
        if result.status in (Status.FAIL, Status.ERROR):
            raise CaseFailure(result)
        if result.status in (Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE):
            pytest.skip(f"{result.status.value}: {result.message}")
        if result.status == Status.QUALITY_WARNING:
            warnings.warn(ConformanceWarning(f"{self.entry.id} [{self.ep.alias}]: {result.message}"), stacklevel=1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            r = excinfo.value.result
            kind = f" ({r.failure_kind})" if r.failure_kind else ""
            return (f"{r.status.value}{kind} on {r.ep}, lowering {r.lowering or '-'}\n{r.message}\n\n"
                    f"reproduce: {r.repro}")
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        pos = self.entry.pos if isinstance(self.entry, Rejected) else self.entry.pos("")
        return self.path, pos.line - 1, self.entry.id

"""pytest plugin: ``pytest cases/ --ep cpu`` collects every case as a test with the harness's own id.

A collector (CaseFile), an item (CaseItem) and a custom failure report, as in pytest's "YAML tests" example.
Verdicts are the CLI's: FAIL/ERROR/CRASH/TIMEOUT/DEVICE_LOST fail, NOT_SUPPORTED/NOT_EXPRESSIBLE skip (except an
EP that could not start, which fails), QUALITY_WARNING warns. ``-n N`` (pytest-xdist) gives the same items and
outcomes: plugin_xdist.py. As in the CLI, each case runs in a worker process (supervisor.py), so that a driver that
crashes or hangs fails that case and not the session; ``--in-process`` runs them in pytest's own (a debugger's).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from conformance.cases.parse import Entry, Rejected
from conformance.cases.suite import outside, read_file
from conformance.cases.validate import DEFAULT_MAX_ELEMENTS
from conformance.ep.providers import EpSpec, best_available_ep, directml_for, parse_ep
from conformance.model import FeatureLevel, Status
from conformance.pytest_plugin.xdist import CaseFileCollectionStop, worker_threads
from conformance.results import FAILING, Result
from conformance.run.options import RunOptions, distinct_eps
from conformance.run.runner import run_entry
from conformance.survive.supervisor import DEFAULT_TIMEOUT, Supervisor, Task, WorkerStartError


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
    group.addoption(
        "--ep",
        action="append",
        default=[],
        metavar="EP",
        help="execution provider for YAML cases (cpu, cuda, dml, webgpu, ...); repeatable",
    )
    group.addoption("--feature-level", default=None, metavar="FL", help="the target's DML feature level")
    group.addoption(
        "--max-elements",
        type=int,
        default=DEFAULT_MAX_ELEMENTS,
        metavar="N",
        help="refuse case tensors over N elements",
    )
    group.addoption(
        "--case-timeout",
        type=float,
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        help=f"a case's worker silent this long is killed, the case a TIMEOUT (default {DEFAULT_TIMEOUT:g}; 0: none)",
    )
    group.addoption(
        "--in-process",
        action="store_true",
        help="run the cases in pytest's own process, not a worker (for a debugger: a crash ends the session)",
    )


@dataclass(frozen=True)
class _Settings:
    eps: tuple[EpSpec, ...]  # empty: the best available, found when the first case file is collected
    options: RunOptions


_SETTINGS = pytest.StashKey[_Settings]()
_SUPERVISOR = pytest.StashKey[Supervisor]()


def pytest_configure(config: pytest.Config) -> None:
    """Check --ep and --feature-level once, up front: a bad value is a usage error, not a collection error per file."""
    try:
        eps = [parse_ep(text) for text in config.getoption("ep")]
    except ValueError as error:
        raise pytest.UsageError(f"--ep: {error}") from None
    level_text = config.getoption("feature_level")
    try:
        level = FeatureLevel.parse(level_text) if level_text else None
    except ValueError as error:
        raise pytest.UsageError(f"--feature-level: {error}") from None
    max_elements = config.getoption("max_elements")
    if max_elements < 1:
        raise pytest.UsageError(f"--max-elements: must be at least 1, got {max_elements}")
    if config.getoption("case_timeout") < 0:
        raise pytest.UsageError(f"--case-timeout: must be at least 0, got {config.getoption('case_timeout'):g}")
    directml = directml_for(eps)
    options = RunOptions(
        level, max_elements, directml.feature_level if directml else None, threads=worker_threads(config)
    )
    config.stash[_SETTINGS] = _Settings(tuple(distinct_eps(eps)), options)
    if not hasattr(config, "workerinput"):  # not an xdist worker: perhaps its controller (plugin_xdist.py)
        config.pluginmanager.register(CaseFileCollectionStop(config, _is_case_file), "dml_conformance_xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    supervisor = config.stash.get(_SUPERVISOR, None)
    if supervisor is not None:
        supervisor.close()


def _supervisor(config: pytest.Config) -> Supervisor | None:
    """The session's worker process, started with its first case (a collection alone starts none); None with
    --in-process."""
    if config.getoption("in_process"):
        return None
    if _SUPERVISOR not in config.stash:
        config.stash[_SUPERVISOR] = Supervisor(1, config.getoption("case_timeout") or None)
    return config.stash[_SUPERVISOR]


def _run_isolated(supervisor: Supervisor, entry: Entry, ep: EpSpec, options: RunOptions) -> Result:
    got: list[Result] = []
    try:
        supervisor.run([Task([entry], [0], ep, pack=1)], options, lambda pair, result: got.append(result))
    except WorkerStartError as error:  # nothing more can run: the session ends, with the reason
        pytest.exit(f"dml-conformance: {error}", returncode=pytest.ExitCode.INTERNAL_ERROR)
    return got[0]


def _settings(config: pytest.Config) -> _Settings:
    settings = config.stash[_SETTINGS]
    if not settings.eps:
        settings = _Settings((best_available_ep(),), settings.options)
        config.stash[_SETTINGS] = settings
    return settings


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


def _skip(reason: str) -> NoReturn:
    """pytest.skip, reported at the case's file and line rather than at this module's."""
    try:
        error = pytest.skip.Exception(reason, _use_item_location=True)
    except TypeError:  # a pytest without the keyword
        error = pytest.skip.Exception(reason)
    raise error


def _outside_the_arguments(config: pytest.Config, path: Path) -> str | None:
    """Where ``path`` really is, if that lies outside every folder pytest was pointed at (a symbolic link out of the
    cases folder, followed by pytest's collection): the CLI's rule (suite.py). A file named as an argument is the
    user's choice."""
    for argument in config.args or ["."]:
        named = config.invocation_params.dir / argument.split("::")[0]
        if named == path or (named.is_dir() and outside(os.path.realpath(named), str(path)) is None):
            return None
    return os.path.realpath(path)


class CaseFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        outside = _outside_the_arguments(self.config, self.path)
        if outside is not None:
            raise CaseFileProblems(
                f"{self.path}:1:1: a symbolic link to outside the folders collected ({outside}): refused"
            )
        settings = _settings(self.config)
        entries, problems = read_file(str(self.path), settings.options.max_elements)
        if problems:
            raise CaseFileProblems("\n".join(str(p) for p in problems))
        for entry in entries:
            local = entry.id.rpartition("::")[2]
            for ep in settings.eps:
                name = local if len(settings.eps) == 1 else f"{local}@{ep.text}"
                yield CaseItem.from_parent(self, name=name, entry=entry, ep=ep, options=settings.options)

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
        supervisor = _supervisor(self.config)
        if supervisor is None:
            result = run_entry(self.entry, self.ep, self.options)
        else:
            result = _run_isolated(supervisor, self.entry, self.ep, self.options)
        self.user_properties.append(("status", result.status.value))
        if result.status in FAILING or result.failure_kind == "ep_not_started":
            raise CaseFailure(result)  # an EP that cannot start must not turn a gate green by skipping
        if result.status in (Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE):
            _skip(f"{result.status.value}: {result.message}")
        if result.status == Status.QUALITY_WARNING:
            warnings.warn(ConformanceWarning(f"{self.entry.id} [{self.ep.text}]: {result.message}"), stacklevel=1)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            r = excinfo.value.result
            kind = f" ({r.failure_kind})" if r.failure_kind else ""
            return (
                f"{r.status.value}{kind} on {r.ep}, lowering {r.lowering or '-'}\n{r.message}\n\nreproduce: {r.repro}"
            )
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        pos = self.entry.pos if isinstance(self.entry, Rejected) else self.entry.pos("")
        # The domain is the failure headline. It must not end the node id: pytest's verbose line would then
        # rewrite its dots as "::" ("spec_examples::yaml::example-1").
        return self.path, pos.line - 1, f"{self.entry.id} [{self.ep.text}]"

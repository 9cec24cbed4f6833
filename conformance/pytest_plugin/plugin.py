"""pytest plugin: ``pytest cases/ --ep cpu`` collects every case as a test with the harness's own id.

A collector (CaseFile), an item (CaseItem) and a custom failure report, as in pytest's "YAML tests" example.
Verdicts are the CLI's: FAIL/FLAKY/ERROR/CRASH/TIMEOUT/DEVICE_LOST fail, NOT_SUPPORTED/NOT_EXPRESSIBLE skip
(except an EP that could not start, which fails), QUALITY_WARNING warns. ``-n N`` (pytest-xdist) gives the same items
and outcomes: xdist.py. As in the CLI, each case runs in a worker process, through the CLI's own entry point
(survive/pool.py's ``run_pairs``), so that a driver that crashes or hangs fails that case and not the session;
``--in-process`` runs them in pytest's own (a debugger's). The options are ``PLUGIN_OPTIONS``: the run's, as ``dmlconf
run`` takes them (run/options.py), and --in-process.

Importing this module (pytest does at every start, in any environment that has the package installed) loads
neither onnxruntime nor onnx, nor NumPy: they load with the first case collected or run.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Generator, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import pytest

from conformance import ep_table
from conformance.ep.dml_here import directml_for
from conformance.ep.installed import NotInstalled, check_installed
from conformance.ep.providers import EpSpec, best_available_ep
from conformance.model import Status
from conformance.pytest_plugin.waivers import CASE, EP, STATUS, KnownFailures, UnexpectedPasses, read_waivers
from conformance.pytest_plugin.xdist import CASE_FILE_REFUSED, CaseFileCollectionStop, worker_threads
from conformance.results import verdict_text
from conformance.run import options as run_settings
from conformance.run.command_line import Option, OptionError, add_options, checked
from conformance.run.options import RunOptions, distinct_eps, run_options

if TYPE_CHECKING:
    from conformance.cases.parse import Entry
    from conformance.environment import Environment
    from conformance.ep.directml import DirectML
    from conformance.results import Result
    from conformance.survive.faults import RunLog
    from conformance.survive.supervisor import Supervisor


class ConformanceWarning(UserWarning):
    """Behaviour the spec leaves open differs from the oracle's choice (QUALITY_WARNING)."""


class CaseFailure(Exception):
    def __init__(self, result: Result) -> None:
        super().__init__(result.message)
        self.result = result


class CaseFileProblems(Exception):
    """A case file the harness refuses: its one-line problems."""


IN_PROCESS = Option(
    ("--in-process",),
    "run the cases in pytest's own process, not a worker (for a debugger: a crash ends the session)",
    flag=True,
)
PLUGIN_OPTIONS = (
    run_settings.EP,
    run_settings.MODES,
    run_settings.FEATURE_LEVEL,
    run_settings.MAX_ELEMENTS,
    run_settings.MAX_CASE_BYTES,
    run_settings.CASE_TIMEOUT,
    IN_PROCESS,
    run_settings.REPEAT,
    run_settings.WAIVERS,
    run_settings.EXPECT_DEVICE,
    run_settings.RERUN_FAILURES,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser.getgroup("dml-conformance").addoption, PLUGIN_OPTIONS, old_spellings=False)


@dataclass(frozen=True)
class _Settings:
    eps: tuple[EpSpec, ...]  # empty: the best available, found when the first case file is collected
    options: RunOptions
    in_process: bool
    known: KnownFailures | None = None  # --waivers
    rerun_failures: int = 0  # --rerun-failures: each unexpected failure run again up to this many times
    compare_modes: bool = False  # two modes of one EP run: each case's outputs held equal across them (_mode_checked)


_SETTINGS = pytest.StashKey[_Settings]()
_NAMED = pytest.StashKey[dict[str, str]]()  # each case file's name in ids -> its path: two files must not share one
_SUPERVISOR = pytest.StashKey["Supervisor"]()
_LOG = pytest.StashKey["RunLog"]()  # the session's: EPs that executed cases (a device lost later), runner deaths
_MODES_SEEN = pytest.StashKey["list[Result]"]()  # the case's results so far in this process, where modes are compared


def pytest_configure(config: pytest.Config) -> None:
    """Check the options once, up front: a bad value is a usage error, not a collection error per file."""
    given = {option.dest: config.getoption(option.dest) for option in PLUGIN_OPTIONS}
    try:
        values = checked(given, PLUGIN_OPTIONS)
    except OptionError as error:
        raise pytest.UsageError(str(error)) from None
    waiver_file = values[run_settings.WAIVERS.dest]
    waivers = read_waivers(waiver_file) if waiver_file is not None else None  # a bad file: before anything runs
    eps = distinct_eps(values[run_settings.EP.dest])
    compare_modes = False
    if values[run_settings.MODES.dest] or len(eps) > 1:  # run/modes.py imports NumPy: only where modes may run
        from conformance.run.modes import has_family, with_modes

        eps = with_modes(eps) if values[run_settings.MODES.dest] else eps
        compare_modes = has_family(eps)
    try:
        check_installed(eps)  # an EP whose package or library is absent: before any case is collected
    except NotInstalled as error:
        raise pytest.UsageError(str(error)) from None
    try:
        directml = directml_for(eps)  # a missing piece of the DirectML chain (a ValueError) is a usage error too
    except ValueError as error:
        raise pytest.UsageError(f"--ep {ep_table.DML.alias}: {error}") from None
    options = run_options(values, directml, threads=worker_threads(config))
    from conformance.run.expect import UnexpectedDevice, check_devices  # the GPU list: asked only where named

    try:  # a session meant for one GPU that would run elsewhere: stopped before any case is collected
        check_devices(eps, directml, options.expect_device)
    except UnexpectedDevice as error:
        raise pytest.UsageError(str(error)) from None
    in_process = bool(values[IN_PROCESS.dest])
    known = None
    if waivers is not None:
        known = KnownFailures(waiver_file, waivers, partial(_machine, config, eps, options, directml))
    rerun = int(values[run_settings.RERUN_FAILURES.dest])
    config.stash[_SETTINGS] = _Settings(tuple(eps), options, in_process, known, rerun, compare_modes)
    if not hasattr(config, "workerinput"):  # not an xdist worker: perhaps its controller (xdist.py)
        config.pluginmanager.register(CaseFileCollectionStop(config), "dml_conformance_xdist")
        if known is not None:  # where every report arrives
            config.pluginmanager.register(UnexpectedPasses(known), "dml_conformance_waivers")


def _machine(
    config: pytest.Config, eps: list[EpSpec], options: RunOptions, directml: dict[str, DirectML]
) -> Environment:
    """What waivers naming a device or driver are matched against: the environment ``dmlconf run`` records (the
    machine's GPUs, the adapter DirectML runs on), the record it writes."""
    from conformance.run.identity import environment

    return environment(eps, options, config.invocation_params.args, directml)


def pytest_unconfigure(config: pytest.Config) -> None:
    supervisor = config.stash.get(_SUPERVISOR, None)
    if supervisor is not None:
        supervisor.close()


def _supervisor(config: pytest.Config) -> Supervisor | None:
    """The session's worker process, started with its first case (a collection alone starts none); None with
    --in-process."""
    settings = config.stash[_SETTINGS]
    if settings.in_process:
        return None
    if _SUPERVISOR not in config.stash:
        from conformance.survive.supervisor import Supervisor

        config.stash[_SUPERVISOR] = Supervisor(1, settings.options.case_timeout)
    return config.stash[_SUPERVISOR]


def _run(config: pytest.Config, entry: Entry, ep: EpSpec, options: RunOptions) -> Result:
    """One (case, EP) through the CLI's entry point: in the session's worker, or in this process (--in-process)."""
    from conformance.survive.pool import run_pairs

    supervisor = _supervisor(config)
    if _LOG not in config.stash:
        from conformance.survive.faults import RunLog

        config.stash[_LOG] = RunLog()
    log: RunLog = config.stash[_LOG]
    ran = run_pairs([entry], [ep], options, 0 if supervisor is None else 1, _nothing, supervisor, log=log)
    if ran.stopped is not None:  # nothing more can run: the session ends, with the reason
        pytest.exit(f"dml-conformance: {ran.stopped}", returncode=pytest.ExitCode.INTERNAL_ERROR)
    if ran.interrupted:
        raise KeyboardInterrupt
    return ran.results[0]


def _mode_checked(config: pytest.Config, result: Result) -> Result:
    """``result`` held to the modes of its EP that ran its case before it in this process (run/modes.py, as
    ``dmlconf run`` holds a run's): a FAIL ``mode_mismatch`` where its outputs differ from the defaults' (else the
    first's), naming the outputs' hashes (pytest keeps no values to name the element). A case's items run one after
    another, its EPs in --ep order; under xdist its modes may run in other workers, where they are not compared."""
    if not config.stash[_SETTINGS].compare_modes:
        return result
    from conformance.run.modes import mode_equality

    seen = config.stash.setdefault(_MODES_SEEN, [])
    if seen and seen[0].case != result.case:
        seen.clear()
    seen.append(result)
    judged, _ = mode_equality(seen, None)
    return judged[-1]


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The runner deaths of the session (results.json's ``runner_deaths`` under ``dmlconf run``), in the words of
    every report. pytest runs each case in a call of its own, never packed: a death there is its case's failure."""
    from conformance.gate.summary import death_reason, death_verdict

    log = config.stash.get(_LOG, None)
    for death in log.runner_deaths() if log is not None else ():
        terminalreporter.write_line(f"dml-conformance: {death_reason(death)}: {death_verdict(death)}", red=True)


def _nothing() -> None:
    """No progress line under pytest: pytest shows its own."""


def _settings(config: pytest.Config) -> _Settings:
    settings = config.stash[_SETTINGS]
    if not settings.eps:
        settings = replace(settings, eps=(best_available_ep(),))
        config.stash[_SETTINGS] = settings
    return settings


def _arguments(config: pytest.Config) -> list[Path]:
    """The paths pytest was given (the current folder where none), absolute and normal as pytest makes the paths it
    collects (``sub/../x.yaml`` is ``x.yaml``), so that a file given is known however it is spelt."""
    given = config.args or ["."]
    return [Path(os.path.abspath(config.invocation_params.dir / argument.split("::")[0])) for argument in given]


def _named(config: pytest.Config, path: Path) -> bool:
    """Whether ``path`` is one of the files pytest was given (not met while walking a folder)."""
    return path in _arguments(config)


def _reads(config: pytest.Config, path: Path) -> bool:
    """The CLI's rule (cases/detect.py): a YAML file given is read whatever it holds; one met in a folder is read
    when it is a case file, and other YAML in the tree is left alone."""
    from conformance.cases.detect import CASE_FILE_SUFFIXES, is_case_file

    return path.suffix in CASE_FILE_SUFFIXES and (_named(config, path) or is_case_file(str(path)))


def _given(config: pytest.Config, path: Path) -> str:
    """The directory given that ``path`` was found under (a file given itself: its folder; none: where pytest was
    started), which its cases' ids name it from outside a repository, as in the CLI (cases/ids.py)."""
    for named in _arguments(config):
        if named == path:
            return str(path.parent)
        if named in path.parents:
            return str(named)
    return str(config.invocation_params.dir)


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> CaseFile | None:
    """A case file as a collector whose node id is the path its cases' ids give it (cases/ids.py), wherever pytest's
    rootdir is: pytest's own, relative to the rootdir, would differ with the folder pytest is started from."""
    if not _reads(parent.config, file_path):
        return None
    from conformance.cases.ids import file_id

    named = file_id(str(file_path), _given(parent.config, file_path))
    return CaseFile.from_parent(parent, path=file_path, nodeid=named, named=named)


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """A case file that failed to collect says so on its report, for xdist's controller (xdist.py)."""
    report = yield
    if isinstance(collector, CaseFile) and report.failed:
        setattr(report, CASE_FILE_REFUSED, True)
    return report


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
    from conformance.cases.suite import outside

    for named in _arguments(config):
        if named == path or (named.is_dir() and outside(os.path.realpath(named), str(path)) is None):
            return None
    return os.path.realpath(path)


class CaseFile(pytest.File):
    """A case file; ``named``: the file as its cases' ids name it, also its node id."""

    def __init__(self, *, named: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.named = named

    def collect(self) -> Iterator[pytest.Item]:
        outside = _outside_the_arguments(self.config, self.path)
        if outside is not None:
            raise CaseFileProblems(
                f"{self.path}:1:1: a symbolic link to outside the folders collected ({outside}): refused"
            )
        from conformance.cases.suite import read_file, same_ids
        from conformance.ep.memory import memory_path

        clash = same_ids(self.config.stash.setdefault(_NAMED, {}), str(self.path), self.named)
        if clash is not None:
            raise CaseFileProblems(str(clash))
        settings = _settings(self.config)
        limits = replace(settings.options.file_limits, paths=tuple(memory_path(ep) for ep in settings.eps))
        entries, problems = read_file(str(self.path), settings.options.max_elements, limits, named=self.named)
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
        from conformance.results import FAILING, ep_not_started

        result = _run(self.config, self.entry, self.ep, self.options)
        settings = self.config.stash[_SETTINGS]
        known = settings.known
        reason = known.reason(result) if known is not None else None
        if reason is None and settings.rerun_failures:  # an unexpected failure: FLAKY where it passes again
            result = self._again(result, settings.rerun_failures)
            reason = known.reason(result) if known is not None else None  # a FLAKY the flaky: section lists
        if settings.compare_modes:  # after the re-runs, as dmlconf run does: a mismatch is no verdict a re-run changes
            result = _mode_checked(self.config, result)
            reason = known.reason(result) if known is not None else None
        self.user_properties += [(CASE, result.case), (EP, result.ep), (STATUS, result.status.value)]
        if reason is not None:  # a FAILING status a waiver names: an expected failure, as for run --waivers
            pytest.xfail(f"{verdict_text(result.status, result.failure_kind)}: {reason}")
        if result.status in FAILING or ep_not_started(result):
            raise CaseFailure(result)  # an EP that cannot start must not turn a gate green by skipping
        if result.status in (Status.NOT_SUPPORTED, Status.NOT_EXPRESSIBLE):
            _skip(f"{result.status.value}: {result.message}")
        if result.status == Status.QUALITY_WARNING:
            warnings.warn(ConformanceWarning(f"{self.entry.id} [{self.ep.text}]: {result.message}"), stacklevel=1)

    def _again(self, first: Result, times: int) -> Result:
        """--rerun-failures: ``first`` run again, each time as it ran (the session's worker), up to ``times`` times
        or until it passes; run/again.py's ``settled`` says what the runs make of it."""
        from conformance.run.again import passed, settled, worth_running_again

        if not worth_running_again(first):
            return first
        again: list[Result] = []
        while len(again) < times and not (again and passed(again[-1])):
            again.append(_run(self.config, self.entry, self.ep, replace(self.options, repeat=1)))
        return settled(first, again, times)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        if isinstance(excinfo.value, CaseFailure):
            r = excinfo.value.result
            # The first line is the one pytest's short summary (-ra) keeps: what went wrong, as every report's row.
            head, _, rest = r.message.partition("\n")
            lines = [f"{verdict_text(r.status, r.failure_kind)} on {r.ep}: {head}", *([rest] if rest else [])]
            return "\n".join([*lines, "", f"lowering: {r.lowering or '-'}", f"reproduce: {r.repro}"])
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int | None, str]:
        from conformance.cases.parse import Rejected

        pos = self.entry.pos if isinstance(self.entry, Rejected) else self.entry.pos("")
        # The domain is the failure headline. It must not end the node id: pytest's verbose line would then
        # rewrite its dots as "::" ("spec_examples::yaml::example-1").
        return self.path, pos.line - 1, f"{self.entry.id} [{self.ep.text}]"

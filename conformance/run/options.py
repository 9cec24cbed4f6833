"""Every option of ``dmlconf`` and of the pytest plugin, declared once, and what a run is run under.

``OPTIONS`` is the one table: each option's flags, help, default, where it appears (a ``dmlconf`` command or
``pytest``) and its check, a function from the text given to the value used (ValueError with a one-line reason).
``add_options`` renders it for argparse and for pytest's ``addoption`` alike; ``checked`` applies the checks to what
either parsed, so that a bad value is the same one-line usage error, ``--max-elements: must be at least 1, got 0``,
from both. ``run_options`` builds ``RunOptions`` from the checked values: the only place one is built from options.

A spelling that changed is kept as a deprecated alias for one release (``--timeout`` for ``--case-timeout``: the
pytest plugin's name, which pytest-timeout's own ``--timeout`` would clash with); using it prints a warning.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Protocol

from conformance.cases.limits import (
    DEFAULT_LIMITS,
    DEFAULT_MAX_CASE_BYTES,
    DEFAULT_MAX_ELEMENTS,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_NODES,
    DEFAULT_MAX_RUN_ELEMENTS,
    FileLimits,
)
from conformance.ep.providers import EpSpec, parse_ep, uses_directml
from conformance.ep_table import aliases_text
from conformance.model import FeatureLevel, Operator

if TYPE_CHECKING:  # this module is imported by the pytest plugin's import, which must stay cheap
    from conformance.cases.parse import Entry
    from conformance.ep.directml import DirectML

DEFAULT_TIMEOUT = 300.0  # seconds without progress: above the largest library case (about 10 s) by far
HARNESS_TIMEOUT_FACTOR = 4  # the harness's own work on a case (preparing, judging) may take this many timeouts
DEFAULT_PACK = 64
SHRINK_EXAMPLES = 400  # candidates run while shrinking: enough for the strategies' shapes to reach their minimum
PYTEST = "pytest"  # the plugin's options, beside the dmlconf commands'
REPORT_FORMATS: Mapping[str, str] = MappingProxyType({"html": "report.html", "md": "summary.md", "junit": "junit.xml"})


def shard(text: str) -> tuple[int, int]:
    """--shard's check: "I/N" -> (I, N) (cases/suite.py's, loaded when a --shard is given)."""
    from conformance.cases.suite import parse_shard

    return parse_shard(text)


class OptionError(ValueError):
    """An option's value that its check refused: ``--flag: reason``, one line."""


def whole_number(least: int | None) -> Callable[[str], int]:
    """A whole number's check, with a lower bound where ``least`` is one."""

    def check(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise ValueError(f"not a whole number: {text!r}") from None
        if least is not None and value < least:
            raise ValueError(f"must be at least {least}, got {value}")
        return value

    return check


def operator(text: str) -> Operator:
    """fuzz --operator's check: an operator named as a case file's ``operator:`` names it (cases/fields.py's
    ``member``: any case, the DML_ prefix optional)."""
    from conformance.cases.fields import member
    from conformance.cases.keys import OPERATOR_PREFIX

    found = member(Operator, text, OPERATOR_PREFIX)
    if found is None:
        raise ValueError(f"must be one of {', '.join(op.value for op in Operator)}, got {text!r}")
    return found


def feature_level(text: str) -> FeatureLevel | None:
    """--feature-level's check; an empty value is no target, as the option left out (``--feature-level "$FL"``)."""
    return FeatureLevel.parse(text) if text.strip() else None


def seconds(above_zero: bool) -> Callable[[str], float]:
    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ValueError(f"not a number of seconds: {text!r}") from None
        if value != value or (value <= 0 if above_zero else value < 0):
            raise ValueError(f"must be {'above' if above_zero else 'at least'} 0, got {value:g}")
        return value

    return check


@dataclass(frozen=True)
class Option:
    """One option: ``flags`` as typed (the last names its value), where it appears, its default and help.

    ``check`` turns the text given into the value used; an option without one keeps the text. ``flag``: takes no
    value (true when given); ``repeat``: may be given again, the values listed. ``required_in``: the commands where
    it must be given. ``deprecated``: old spellings, accepted with a warning for one release."""

    flags: tuple[str, ...]
    help: str
    where: frozenset[str]
    default: Any = None
    metavar: str | None = None
    check: Callable[[str], Any] | None = None
    flag: bool = False
    repeat: bool = False
    choices: tuple[str, ...] | None = None
    required_in: frozenset[str] = frozenset()
    deprecated: tuple[str, ...] = ()
    key: str = ""  # the value's name where the flag's would not say it (-k: keyword)

    @property
    def dest(self) -> str:
        return self.key or self.flags[-1].lstrip("-").replace("-", "_")

    @property
    def name(self) -> str:
        return self.flags[-1]

    def value(self, given: Any) -> Any:
        """The checked value of what a parser stored: the default as it is (a repeatable option's, none given, is
        an empty list), anything else through ``check``, as text (a conftest may have set a number)."""
        if self.repeat:
            items = [] if given is None else list(given)
            return [self._checked(item) for item in items]
        if given is None or given == self.default or self.check is None:
            return given
        return self._checked(given)

    def _checked(self, given: Any) -> Any:
        if self.check is None or not isinstance(given, str | int | float):
            return given  # already a value (a list given by a conftest, of EpSpec say)
        try:
            return self.check(str(given))
        except ValueError as error:
            raise OptionError(f"{self.name}: {error}") from None


def _options(*rows: Option) -> Mapping[str, Option]:
    return MappingProxyType({row.dest: row for row in rows})


COMMANDS = (
    "validate",
    "run",
    "list",
    "coverage",
    "report",
    "diff",
    "merge",
    "fuzz",
    "doctor",
    "schema",
)  # dmlconf's, in its help's order
_VALIDATE, _RUN, _LIST, _COVERAGE, _REPORT, _DIFF, _MERGE, _FUZZ, _DOCTOR, _SCHEMA = COMMANDS
_READING = frozenset({_VALIDATE, _RUN, _LIST, _COVERAGE})  # the commands that read case files
_SELECTING = frozenset({_RUN, _LIST})  # the commands that select cases as a run does (cli/selection.py)

OPTIONS: Mapping[str, Option] = _options(
    Option(
        ("--ep",),
        f"{aliases_text()}, a full EP name or a plugin library path, with options as ALIAS:key=value,...; "
        "repeatable (default: the best available)",
        frozenset({_RUN, PYTEST}),
        metavar="EP",
        check=parse_ep,
        repeat=True,
    ),
    Option(
        ("--feature-level",),
        "the target's DML feature level, e.g. 4_1: cases needing more are NOT_SUPPORTED "
        "(default: for dml, what the installed DirectML supports; for other EPs, none)",
        frozenset({_RUN, PYTEST}),
        metavar="FL",
        check=feature_level,
    ),
    Option(
        ("--max-elements",),
        f"refuse tensors over N elements before allocating (default {DEFAULT_MAX_ELEMENTS})",
        _READING | {PYTEST},
        default=DEFAULT_MAX_ELEMENTS,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--max-case-bytes",),
        "refuse a case whose estimated memory is over N bytes, before allocating (on each EP's path, the DirectML "
        f"runner's copies included; default {DEFAULT_MAX_CASE_BYTES}, 8 GiB, for a 16 GB machine; run -j: the cases "
        "that may run at once, together)",
        _READING | {PYTEST},
        default=DEFAULT_MAX_CASE_BYTES,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--max-file-bytes",),
        f"refuse case files over N bytes before reading them (default {DEFAULT_MAX_FILE_BYTES})",
        _READING,
        default=DEFAULT_MAX_FILE_BYTES,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--max-nodes",),
        f"refuse case files of over N YAML nodes, aliases counted each time used (default {DEFAULT_MAX_NODES})",
        _READING,
        default=DEFAULT_MAX_NODES,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--case-timeout",),
        f"a worker silent this long while the EP executes a case, or a DirectML runner this long without an answer, "
        f"is killed, the case a TIMEOUT; the harness's own work on a case may take {HARNESS_TIMEOUT_FACTOR} times as "
        f"long (default {DEFAULT_TIMEOUT:g}; 0: none)",
        frozenset({_RUN, PYTEST}),
        default=DEFAULT_TIMEOUT,
        metavar="SECONDS",
        check=seconds(above_zero=False),
        deprecated=("--timeout",),
    ),
    Option(
        ("--in-process",),
        "run the cases in pytest's own process, not a worker (for a debugger: a crash ends the session)",
        frozenset({PYTEST}),
        flag=True,
    ),
    Option(
        ("-j", "--jobs"),
        "run in N worker processes; a worker that crashes or hangs costs only its case (default 1; "
        "0: in this process, unprotected)",
        frozenset({_RUN}),
        default=1,
        metavar="N",
        check=whole_number(0),
    ),
    Option(
        ("--pack",),
        f"run small cases up to N to a session; any non-PASS is run again alone (default {DEFAULT_PACK}; "
        "1: one case per session)",
        frozenset({_RUN}),
        default=DEFAULT_PACK,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--repeat",),
        "run each (case, EP) N times, each time in a new session; a case whose verdicts or outputs differ between "
        "the runs is FLAKY, which fails the run (default 1)",
        frozenset({_RUN, PYTEST}),
        default=1,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--report-dir",),
        "where the results and reports go (run's default: reports/; merge needs it)",
        frozenset({_RUN, _MERGE}),
        default="reports",
        metavar="DIR",
        required_in=frozenset({_MERGE}),
    ),
    Option(
        ("-k",),
        "only cases whose id contains SUBSTRING; a case's full id selects that case alone",
        _SELECTING,
        metavar="SUBSTRING",
        key="keyword",
    ),
    Option(
        ("--quick",),
        "only the quick selection: few cases that cover every clause the suite covers, plus the found ones",
        _SELECTING | {_COVERAGE},
        flag=True,
    ),
    Option(
        ("--waivers",),
        "known failures (YAML): matched failures count as expected (under pytest: xfail), the exit code gates on "
        "the rest",
        frozenset({_RUN, _REPORT, _MERGE, PYTEST}),
        metavar="FILE",
    ),
    Option(
        ("--quiet",),
        "print only the unexpected results and the verdict (no tables, known failures or files written)",
        frozenset({_RUN, _REPORT, _MERGE}),
        flag=True,
    ),
    Option(
        ("--artifacts",),
        "for each FAIL, save the ONNX model, inputs, expected and actual outputs (.onnx, .npy) under DIR",
        frozenset({_RUN}),
        metavar="DIR",
    ),
    Option(
        ("--shard",),
        "only shard I of N (by a hash of each case id; merge them after)",
        _SELECTING,
        metavar="I/N",
        check=shard,
    ),
    Option(
        ("--resume",),
        "finish a run that was killed: keep the results in --report-dir's results.jsonl, run the rest",
        frozenset({_RUN}),
        flag=True,
    ),
    Option(
        ("--keep-going",),
        "run the cases of the valid files even if other files have problems (printed and recorded; exit 2)",
        _SELECTING,
        flag=True,
    ),
    Option(
        ("--max-run-elements",),
        "refuse to start a run whose (case, EP) pairs hold over N tensor elements in all, inputs and outputs "
        f"(default {DEFAULT_MAX_RUN_ELEMENTS}: some 600 times the case library on one EP)",
        frozenset({_RUN}),
        default=DEFAULT_MAX_RUN_ELEMENTS,
        metavar="N",
        check=whole_number(1),
    ),
    Option(
        ("--json",),
        "print a JSON list of the selected cases (id, path, operator, data_type, feature_level, negative)",
        frozenset({_LIST}),
        flag=True,
    ),
    Option(
        ("--output",),
        "the coverage map's file (default: reports/coverage.md)",
        frozenset({_COVERAGE}),
        default="reports/coverage.md",
        metavar="FILE",
    ),
    Option(
        ("--format",),
        "repeatable (default: html, md and junit)",
        frozenset({_REPORT}),
        repeat=True,
        choices=tuple(sorted(REPORT_FORMATS)),
    ),
    Option(
        ("--out-dir",),
        "where reports go (default: beside RESULTS.json)",
        frozenset({_REPORT}),
        metavar="DIR",
    ),
    Option(
        ("--markdown",),
        "also write the comparison as Markdown to FILE",
        frozenset({_DIFF}),
        metavar="FILE",
    ),
    Option(
        ("--match",),
        "pair results by case and EP (case-ep), or by case alone (case: runs of different EPs or devices, one EP "
        "a run; default case-ep)",
        frozenset({_DIFF}),
        default="case-ep",
        choices=("case-ep", "case"),
    ),
    Option(
        ("--old-ep",),
        "take only OLD's results on this EP (its text as run wrote it, e.g. dml:directml=1.13.1): one build of a "
        "run of several, diffed against another",
        frozenset({_DIFF}),
        metavar="EP",
    ),
    Option(
        ("--new-ep",),
        "take only NEW's results on this EP (OLD and NEW may be one file; two EPs need --match case)",
        frozenset({_DIFF}),
        metavar="EP",
    ),
    Option(
        ("--allow-removed",),
        "a result in OLD that NEW lacks is shown, not a regression (two runs with nothing in common still are)",
        frozenset({_DIFF}),
        flag=True,
    ),
    Option(
        ("--ep",),
        "the EP, as for run (default: the best available); given more than once, the last",
        frozenset({_FUZZ}),
        metavar="EP",
        check=parse_ep,
        key="fuzz_ep",
    ),
    Option(
        ("--operator",),
        f"the operator to fuzz: {', '.join(op.value for op in Operator)} (as in a case file: any case, DML_ optional)",
        frozenset({_FUZZ}),
        metavar="OP",
        check=operator,
        required_in=frozenset({_FUZZ}),
    ),
    Option(
        ("--time",),
        "how long to search (default 60)",
        frozenset({_FUZZ}),
        default=60.0,
        metavar="SECONDS",
        check=seconds(above_zero=True),
    ),
    Option(
        ("--seed",),
        "the same seed draws the same cases (default 0)",
        frozenset({_FUZZ}),
        default=0,
        metavar="N",
        check=whole_number(None),
    ),
    Option(
        ("--out",),
        "where a minimal case goes (default: reports/fuzz); review it, then copy it to cases/found/ to keep it as a "
        "regression test that every run reads",
        frozenset({_FUZZ}),
        default="reports/fuzz",
        metavar="DIR",
    ),
    Option(
        ("--special",),
        "draw NaN, infinities and denormals too",
        frozenset({_FUZZ}),
        flag=True,
    ),
    Option(
        ("--shrink-examples",),
        f"candidates run while shrinking a mismatch (default {SHRINK_EXAMPLES})",
        frozenset({_FUZZ}),
        default=SHRINK_EXAMPLES,
        metavar="N",
        check=whole_number(1),
    ),
)


class _Adder(Protocol):
    """argparse's ``add_argument`` and pytest's ``OptionGroup.addoption``: one signature, so one renderer."""

    def __call__(self, *flags: str, **settings: Any) -> Any: ...


def _deprecated(option: Option) -> type[argparse.Action]:
    """An argparse action that stores the value and, where one of ``option``'s old spellings was typed, says on
    stderr which spelling replaces it (argparse's own ``deprecated`` keyword is Python 3.13's)."""

    class Deprecated(argparse.Action):
        def __call__(
            self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, typed: str | None = None
        ) -> None:
            if typed in option.deprecated:
                print(f"{parser.prog}: warning: {typed} is deprecated, use {option.name}", file=sys.stderr)
            setattr(namespace, self.dest, values)

    return Deprecated


def _settings(option: Option, where: str) -> dict[str, Any]:
    """What ``add_argument``/``addoption`` is told of ``option`` in ``where``: values are kept as text, and
    checked by ``checked``, so that both front-ends report a bad value in the same words."""
    settings: dict[str, Any] = {"dest": option.dest, "help": option.help}
    if option.flag:
        return settings | {"action": "store_true", "default": False}
    settings |= {"default": option.default, "metavar": option.metavar}
    settings |= {"action": "append"} if option.repeat else {}
    settings |= {"choices": option.choices} if option.choices else {}
    settings |= {"required": True} if where in option.required_in else {}
    return settings


def add_options(add: _Adder, where: str) -> None:
    """Every option of ``where`` (a dmlconf command or PYTEST), through ``add``: a parser's ``add_argument`` or a
    pytest group's ``addoption``. Old spellings are offered to dmlconf only: pytest's names did not change."""
    for option in OPTIONS.values():
        if where not in option.where:
            continue
        settings = _settings(option, where)
        if not option.deprecated or where == PYTEST:
            add(*option.flags, **settings)
            continue
        if option.flag or option.repeat:
            raise ValueError(f"{option.name}: an old spelling is supported for options that take one value")
        settings["help"] += f" ({', '.join(option.deprecated)}: the old spelling, deprecated)"
        add(*option.flags, *option.deprecated, **settings | {"action": _deprecated(option)})


def checked(values: Mapping[str, Any], where: str) -> dict[str, Any]:
    """``values`` (a parser's, by dest) with each option of ``where`` checked: OptionError (one line) for the
    first refused."""
    result = dict(values)
    for option in OPTIONS.values():
        if where in option.where and option.dest in result:
            result[option.dest] = option.value(result[option.dest])
    return result


def run_options(values: Mapping[str, Any], directml: Mapping[str, DirectML], threads: int | None = None) -> RunOptions:
    """``RunOptions`` from checked option values (``dmlconf run``'s or pytest's: an option a front-end lacks takes
    its default) and the installed DirectML, where an EP of the run is DirectML."""

    def get(name: str) -> Any:
        return values.get(name, OPTIONS[name].default)

    builds: tuple[tuple[str, str], ...] = ()
    # Only an --artifacts README reads them (executed_by), and they ask the machine (nvidia-smi, onnx): not at every
    # run's start. artifacts.py loads NumPy, which a run without DirectML (pytest's configure) need not load yet.
    if directml and get("artifacts") is not None:
        from conformance.run.artifacts import directml_text

        builds = tuple((label, directml_text(found)) for label, found in directml.items())
    return RunOptions(
        feature_level=get("feature_level"),
        max_elements=get("max_elements"),
        directml_levels=tuple((label, found.feature_level) for label, found in directml.items() if found.feature_level),
        directml_builds=builds,
        artifacts=get("artifacts"),
        pack=get("pack"),
        repeat=get("repeat"),
        threads=threads,
        file_limits=FileLimits(get("max_file_bytes"), get("max_nodes"), get("max_case_bytes")),
        case_timeout=get("case_timeout") or None,
    )


@dataclass(frozen=True)
class RunOptions:
    feature_level: FeatureLevel | None = None  # --feature-level: every EP's target; cases needing more: NOT_SUPPORTED
    max_elements: int = DEFAULT_MAX_ELEMENTS
    # Each DirectML EP's level by its --ep text: what its DirectML build answered (directml.detect, or the device
    # under Wine); pairs, so that the options stay hashable and cross to the workers as they are.
    directml_levels: tuple[tuple[str, FeatureLevel], ...] = ()
    # Each DirectML EP's build and device in words, by its --ep text: what an --artifacts README names.
    directml_builds: tuple[tuple[str, str], ...] = ()
    artifacts: str | None = None  # --artifacts: a folder per FAIL with the model, inputs and outputs (artifacts.py)
    pack: int = DEFAULT_PACK  # --pack: small cases run up to this many to a session (batch.py); 1: each case in its own
    repeat: int = 1  # --repeat: each executed case run this many times, FLAKY where the runs differ (batch.py)
    threads: int | None = None  # intra-op threads of a larger case's session; None: onnxruntime's (pytest -n)
    file_limits: FileLimits = DEFAULT_LIMITS  # what the case files were read under (for repro commands)
    case_timeout: float | None = None  # --case-timeout: the longest wait on the DirectML runner's answer; None: none

    def session_threads(self, small: bool) -> int | None:
        """A session's intra-op threads: one for small cases (pack.small, alone or in a pack of them), which a thread
        pool cannot speed up and whose pool's spinning threads cost more to start and stop than the case itself (most
        of the CPU EP's per-case overhead, docs/performance.md); else ``threads``, None being onnxruntime's default of
        one per physical core."""
        return 1 if small else self.threads

    def executed_by(self, ep: EpSpec) -> str | None:
        """The DirectML build and device that ``ep`` runs on, in words (artifacts.directml_text); None for others."""
        return dict(self.directml_builds).get(ep.text)

    def target_level(self, ep: EpSpec) -> FeatureLevel | None:
        """--feature-level where given; else, for DirectML, the installed DirectML's level; else none (all run)."""
        if self.feature_level is not None:
            return self.feature_level
        return dict(self.directml_levels).get(ep.text) if uses_directml(ep) else None


def distinct_eps(eps: Iterable[EpSpec]) -> list[EpSpec]:
    """Each EP once, in order: ``--ep cpu --ep CPUExecutionProvider`` names one EP, so it runs once."""
    unique: dict[str, EpSpec] = {}
    for ep in eps:
        unique.setdefault(ep.text, ep)
    return list(unique.values())


def repro_command(entry: Entry, ep: EpSpec, options: RunOptions | None = None) -> str:
    """The ``dmlconf run`` command that runs this one (case, EP) again, under the same target, limits and repeats.

    ``-k`` is given the full case id, which selects that case alone even where it is a prefix of another id.
    """
    words = ["dmlconf", "run", entry.path, "-k", entry.id, "--ep", ep.text]
    if options is not None and options.feature_level is not None:
        words += ["--feature-level", str(options.feature_level)]
    if options is not None and options.max_elements != DEFAULT_MAX_ELEMENTS:
        words += ["--max-elements", str(options.max_elements)]
    if options is not None and options.file_limits.max_file_bytes != DEFAULT_LIMITS.max_file_bytes:
        words += ["--max-file-bytes", str(options.file_limits.max_file_bytes)]
    if options is not None and options.file_limits.max_nodes != DEFAULT_LIMITS.max_nodes:
        words += ["--max-nodes", str(options.file_limits.max_nodes)]
    if options is not None and options.file_limits.max_case_bytes != DEFAULT_LIMITS.max_case_bytes:
        words += ["--max-case-bytes", str(options.file_limits.max_case_bytes)]
    if options is not None and options.repeat > 1:  # a FLAKY case shows only when run again
        words += ["--repeat", str(options.repeat)]
    return shlex.join(words)


def cores_share(workers: int) -> int:
    """One of ``workers`` processes' share of the CPUs this process may run on (at least one): the intra-op threads
    of a worker's sessions for larger cases. N workers each with onnxruntime's default of a spinning thread per
    core would fight over the cores (the library with -j 8 on 16 cores: slower than -j 4)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(1, cores // max(1, workers))

"""``--waivers`` under pytest: the known-failure gate of ``dmlconf run --waivers`` (gate/waivers.py, its one
implementation) as pytest outcomes.

- A failure that a waiver names is an xfail, with the waiver's reason and tracking: decided in the process that ran
  the case, from its result alone (a failure is known or it is not, whatever the other cases gave).
- A waived case that passes is XPASS(strict), a failure. The gate decides this per waiver and EP, not per case: a
  pattern that also covers passing variants (a sweep's other sizes) is no unexpected pass while one of its cases
  still fails on that EP. So it is decided once every case has run, where every report arrives (pytest's own
  process; with ``-n``, xdist's controller), by the gate over the session's results; the case's report becomes the
  failure pytest's ``xfail(strict=True)`` gives (``[XPASS(strict)] reason``) before the summary is written, and the
  exit status 1. pytest's ``--junitxml`` file was written from the reports as they came, so it keeps such a case as
  passed.
- A case a flaky entry matches is an xfail where it fails, and passes where it passes.
- Waivers naming a device or a driver are matched against the GPUs of this machine and the adapter DirectML ran on,
  as ``run`` records them (run/identity.py's ``environment``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conformance.environment import Environment
    from conformance.gate.waivers import Waiver
    from conformance.results import Result

# The user properties a case's report carries (plugin.py), from which the gate's results are rebuilt where the
# report arrives: an xdist controller has the reports, not the items.
CASE, EP, STATUS = "case", "ep", "status"


@dataclass(frozen=True)
class KnownFailures:
    """A waiver file's entries and the environment they are matched in: ``machine`` gives it, asked once and only
    where a waiver is matched (it runs nvidia-smi and imports onnx: not at every xdist worker's start)."""

    path: str
    waivers: tuple[Waiver, ...]
    machine: Callable[[], Environment]

    @cached_property
    def environment(self) -> Environment:
        return self.machine()

    def reason(self, result: Result) -> str | None:
        """Why a failing ``result`` is expected: its waiver's reason and tracking; None where no waiver names it, or
        where it does not fail (no waiver can expect it then: the machine is not asked)."""
        from conformance.gate.waivers import apply_waivers, waived_keys
        from conformance.results import FAILING

        if result.status not in FAILING:
            return None
        gate = apply_waivers(self.environment, [result], self.waivers)
        return waived_keys(gate).get((result.case, result.ep))


def read_waivers(path: str) -> tuple[Waiver, ...]:
    """The waiver file at ``path``; pytest.UsageError (exit 4) with its problems, one line each, as ``dmlconf run``
    prints them, where it cannot be used (no such file, not YAML, a field missing)."""
    from conformance.gate.waivers import load_waivers
    from conformance.problems import CaseFileError

    try:
        return tuple(load_waivers(path))
    except CaseFileError as error:
        raise pytest.UsageError("\n".join(str(problem) for problem in error.problems)) from None


class UnexpectedPasses:
    """Where the reports arrive: collects each case's result, and at the session's end turns the passes that the
    gate finds unexpected into XPASS(strict) failures."""

    def __init__(self, known: KnownFailures) -> None:
        self.known = known
        self.reports: list[tuple[pytest.TestReport, Result]] = []

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        result = _result(report)
        if result is not None:
            self.reports.append((report, result))

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from conformance.gate.waivers import apply_waivers

        gate = apply_waivers(self.known.environment, [result for _, result in self.reports], self.known.waivers)
        if not gate.unexpected_passes_fail:
            return
        passing = {(result.case, result.ep): waiver for result, waiver in gate.unexpected_passes}
        turned = [
            (report, passing[(result.case, result.ep)])
            for report, result in self.reports
            if (result.case, result.ep) in passing
        ]
        for report, waiver in turned:
            _xpass_strict(session, report, waiver)
        if turned:
            session.testsfailed += len(turned)
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _result(report: pytest.TestReport) -> Result | None:
    """The gate's view of a case's call-phase report (its id, EP and status); None for any other report."""
    from conformance.model import Status
    from conformance.results import Result

    properties = dict(report.user_properties)
    if report.when != "call" or not {CASE, EP, STATUS} <= properties.keys():
        return None
    return Result(str(properties[CASE]), "", str(properties[EP]), Status(str(properties[STATUS])))


def _xpass_strict(session: pytest.Session, report: pytest.TestReport, waiver: Waiver) -> None:
    """``report``, a pass, becomes the failure pytest's strict xfail gives, in the counts the summary is made of."""
    report.outcome = "failed"
    report.longrepr = (
        f"[XPASS(strict)] {waiver.reason} ({waiver.tracking}): the known failure passes now; remove its waiver "
        f"({waiver.pos})"
    )
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    stats: dict[str, list[Any]] | None = getattr(reporter, "stats", None)
    if stats is not None:
        stats["passed"] = [other for other in stats.get("passed", []) if other is not report]
        stats.setdefault("failed", []).append(report)

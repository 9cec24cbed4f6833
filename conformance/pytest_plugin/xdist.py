"""What the pytest plugin does differently under pytest-xdist (``pytest -n N``), so that a run with ``-n`` gives the
items, outcomes and exit status of a run without it.

- Workers share the machine, one of N processes each, so a worker's sessions for larger cases get ``cores // N``
  intra-op threads instead of onnxruntime's one per core (a small case's session takes one anywhere, runner.py):
  N workers each with a spinning thread per core took a ``-n 2`` run of the library on 2 cores from about 20-25 s
  of CPU time to 29-35 s, and its wall time with it.
  The verdicts do not depend on it (the whole library gives identical Results with 1 thread and the default).
- A refused case file stops the run before any case runs, as it does without ``-n``. pytest interrupts a session
  whose collection failed, but under xdist only the controller could, and it does not: it would run every other
  file's cases and exit 1 instead of 2. The controller hears of each collection error before any worker has
  finished collecting (every worker collects the same files and sends its errors before its list of items),
  hence before anything is scheduled, and xdist's own stop (the one ``--maxfail`` uses) shuts the workers down.

Nothing here acts in a run without xdist: the hooks look for xdist's worker input or its controller plugin.
"""

from __future__ import annotations

import pytest

from conformance.run.options import cores_share

# Set on the report of a case file whose collection failed (plugin.py), where the failure happens: the controller
# receives the report, and its node id is the file's name in case ids, not a path from pytest's rootdir. xdist
# carries a report's attributes to the controller (pytest's report serialization keeps its __dict__).
CASE_FILE_REFUSED = "dml_conformance_case_file"


def worker_threads(config: pytest.Config) -> int | None:
    """The intra-op threads for a larger case's session in this xdist worker: this worker's share of the cores;
    None when this process is not an xdist worker (onnxruntime's default then)."""
    workerinput = getattr(config, "workerinput", None)
    if not isinstance(workerinput, dict):
        return None
    return cores_share(int(workerinput.get("workercount", 1)))


def collection_error_message(errors: int) -> str:
    """pytest's own words for an interrupted collection ("Interrupted: 1 error during collection")."""
    return f"{errors} error{'s' if errors != 1 else ''} during collection"


class CaseFileCollectionStop:
    """On the xdist controller: a collection error in a case file stops the run, as pytest stops a serial one."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.errors = 0
        self.case_file_refused = False

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        dsession = self.config.pluginmanager.getplugin("dsession")
        if dsession is None or not report.failed or self.config.option.continue_on_collection_errors:
            return
        self.errors += 1  # every failed collection counts, as in pytest's message; case files alone stop the run
        self.case_file_refused = self.case_file_refused or bool(getattr(report, CASE_FILE_REFUSED, False))
        if self.case_file_refused:
            # DSession.shouldstop is the flag its run loop checks after each event (maxfail sets it the same way).
            dsession.shouldstop = collection_error_message(self.errors)

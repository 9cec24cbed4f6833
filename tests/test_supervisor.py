"""How the supervisor settles a worker that is gone (supervisor.Supervisor._lost), for the cases that
tests/test_faults.py cannot cause on purpose: a worker that dies between cases, twice, and one that exits after
reporting a lost device. The worker here is a stand-in (no process is started); what it had finished and had in
flight is set as its messages would have set it."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.ep.providers import parse_ep
from conformance.model import Status
from conformance.results import Result
from conformance.survive.supervisor import Supervisor, Task, _Worker

EXAMPLES = Path(__file__).resolve().parent.parent / "cases/top_k1/spec_examples.yaml"
CPU = parse_ep("cpu")


class _Gone:
    pid = 12345


@pytest.fixture
def supervisor() -> Any:
    with Supervisor(0, None) as made:  # no workers: _lost is called by hand
        results: list[tuple[int, Result]] = []
        made.on_result = lambda pair, result: results.append((pair, result))
        made.results = results
        yield made


def _worker(supervisor: Supervisor, task: Task, finished: set[int], in_flight: list[int]) -> _Worker:
    mine, _ = multiprocessing.Pipe()
    worker = _Worker(_Gone(), mine, str(Path(supervisor.folder.name) / "none.stderr"), ready=True, task=task)
    worker.finished, worker.in_flight = finished, in_flight
    supervisor.workers.append(worker)
    return worker


def _task(pack: int = 64) -> Task:
    entries = list(collect([str(EXAMPLES)]).entries)
    return Task(entries, [10, 11, 12, 13], CPU, pack)


def test_the_case_in_flight_is_blamed_and_the_rest_run_again(supervisor: Any) -> None:
    task = _task()
    supervisor._lost(_worker(supervisor, task, {0}, [1]), Status.CRASH, "the worker process was killed by SIGSEGV")
    [(pair, result)] = supervisor.results
    assert (pair, result.case, result.status) == (11, task.entries[1].id, Status.CRASH)
    assert result.message == "the worker process was killed by SIGSEGV"
    [again] = supervisor.pending
    assert (again.pairs, again.pack) == ([12, 13], 64)


def test_a_pack_in_flight_runs_again_one_case_per_session(supervisor: Any) -> None:
    supervisor._lost(_worker(supervisor, _task(), set(), [0, 1, 2]), Status.CRASH, "died")
    assert supervisor.results == []  # which of the three caused it is found by running each alone
    assert [(t.pairs, t.pack) for t in supervisor.pending] == [([13], 64), ([10, 11, 12], 1)]


def test_a_worker_dying_between_cases_is_retried_once_then_its_next_case_blamed(supervisor: Any) -> None:
    task = _task()
    supervisor._lost(_worker(supervisor, task, {0}, [0]), Status.CRASH, "died")  # after case 0, before case 1
    assert supervisor.results == []
    [retry] = supervisor.pending
    assert (retry.pairs, retry.attempts) == ([11, 12, 13], 1)
    supervisor.pending.clear()
    supervisor._lost(_worker(supervisor, retry, set(), []), Status.CRASH, "died")  # again, before its first case
    [(pair, result)] = supervisor.results
    assert (pair, result.status) == (11, Status.CRASH)
    [rest] = supervisor.pending
    assert rest.pairs == [12, 13]


def test_an_exit_after_reporting_a_lost_device_costs_no_attempt(supervisor: Any) -> None:
    task = _task()
    task.attempts = 1  # it would be blamed next time, were this exit counted
    supervisor._lost(_worker(supervisor, task, {0, 1}, [1]), Status.CRASH, "exited with status 3", meant=True)
    assert supervisor.results == []  # case 1's DEVICE_LOST came from the worker itself
    [rest] = supervisor.pending
    assert rest.pairs == [12, 13]


def test_a_dead_worker_s_stderr_that_says_the_device_was_lost(supervisor: Any) -> None:
    worker = _worker(supervisor, _task(), set(), [2])
    Path(worker.stderr_path).write_text("D3D12: Removing Device.\nDXGI_ERROR_DEVICE_HUNG\n", encoding="utf-8")
    supervisor._lost(worker, Status.CRASH, "the worker process was killed by SIGABRT")
    [(pair, result)] = supervisor.results
    assert (pair, result.status, result.failure_kind) == (12, Status.DEVICE_LOST, "device_lost")
    assert result.message.splitlines()[-1] == "  DXGI_ERROR_DEVICE_HUNG"


class _Exited:
    pid = 12345
    exitcode = 3

    def is_alive(self) -> bool:
        return False

    def join(self, timeout: float | None = None) -> None:
        pass


@pytest.mark.parametrize("reported", [True, False])
def test_exit_status_3_is_the_lost_device_exit_only_after_a_device_lost_result(supervisor: Any, reported: bool) -> None:
    # On Windows abort() exits with 3 too: without a DEVICE_LOST result sent first, it is a death like any other.
    task = _task()
    task.attempts = 1
    worker = _worker(supervisor, task, {0, 1}, [1])
    worker.process, worker.reported_lost = _Exited(), reported
    supervisor._check(worker)
    [rest] = supervisor.pending
    assert rest.pairs == [12, 13]
    assert rest.attempts == (0 if reported else 1)  # progress was made: the count starts again either way
    assert supervisor.results == []


@pytest.mark.skipif(os.name != "posix", reason="stale folders are found by pid on POSIX only")
def test_a_killed_supervisor_s_folder_is_removed_by_the_next(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead, alive = int(ended.stdout), os.getpid()
    for pid in (dead, alive):
        (tmp_path / f"dmlconf-workers-{pid}-abc").mkdir()
        (tmp_path / f"dmlconf-workers-{pid}-abc" / "worker-1.stderr").write_text("left by a kill -9")
    (tmp_path / "dmlconf-workers-notapid").mkdir()
    with Supervisor(0, None) as supervisor:
        mine = Path(supervisor.folder.name).name
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
            [f"dmlconf-workers-{alive}-abc", "dmlconf-workers-notapid", mine]
        )
    assert mine.startswith(f"dmlconf-workers-{alive}-")

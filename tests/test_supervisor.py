"""How the supervisor settles a worker that is gone (supervisor.Supervisor._lost), for the cases that
tests/test_faults.py cannot cause on purpose: a worker that dies between cases, twice, and one that exits after
reporting a lost device. The worker here is a stand-in (no process is started); what it had finished and had in
flight is set as its messages would have set it."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.environment import PeakMemory
from conformance.ep.providers import parse_ep
from conformance.ep.wine.chain import ChainMissing
from conformance.model import Status
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.survive.messages import (
    Began,
    Board,
    CannotRun,
    DirectMLDescribed,
    Finished,
    MemoryPeak,
    Phase,
    PhaseChanged,
    Ready,
    RunnerDeathTold,
    RunTask,
    Stop,
    TaskFinished,
)
from conformance.survive.supervisor import Supervisor
from conformance.survive.workers import Task, Worker

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


def _worker(supervisor: Supervisor, task: Task, finished: set[int], in_flight: list[int]) -> Worker:
    mine, _ = multiprocessing.Pipe()
    worker = Worker(_Gone(), mine, str(Path(supervisor.folder.name) / "none.stderr"), ready=True, task=task)
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


# -- what a run learns across its results (faults.RunLog), whatever process gave them ----------------------------

NOT_STARTED_TEXT = "D3D12CreateDevice on adapter 0 failed: HRESULT 0x887a0004"


def _not_started(case: str, ep: str = "dml") -> Result:
    """A result as an EP that cannot create a session gives it (rules.wrapper_fallback's words, via the runner)."""
    from conformance.model import EP_NOT_STARTED

    message = (
        f"DmlExecutionProvider could not create a session for TopK-11 ({NOT_STARTED_TEXT}); onnxruntime's Python "
        "wrapper would fall back to CPUExecutionProvider and retry (switched off here): TopK_0 would have run on "
        "CPUExecutionProvider"
    )
    return Result(case, "TOP_K1", ep, Status.NOT_SUPPORTED, EP_NOT_STARTED, message=message)


def _passed(case: str, ep: str = "dml") -> Result:
    return Result(case, "TOP_K1", ep, Status.PASS)


def test_an_ep_that_executed_cases_and_then_cannot_create_a_session_lost_its_device() -> None:
    from conformance.survive.faults import RunLog

    log = RunLog()
    arrived = [log.judged(r) for r in [_passed("a"), _passed("b"), _not_started("c"), _not_started("d")]]
    assert [r.status for r in arrived] == [Status.PASS, Status.PASS, Status.DEVICE_LOST, Status.DEVICE_LOST]
    assert {(r.failure_kind, r.message) for r in arrived[2:]} == {
        (
            "device_lost",
            f"the EP executed 2 case(s) before; from this case on it could not create a session: {NOT_STARTED_TEXT}",
        )
    }


def test_an_ep_that_never_executed_a_case_stays_not_started_for_the_gate() -> None:
    from conformance.survive.faults import RunLog

    log = RunLog()
    # Another EP's executions do not count: each EP is judged by its own.
    results = [log.judged(r) for r in [_passed("a", "cpu"), _not_started("a"), _not_started("b")]]
    assert [(r.status, r.failure_kind) for r in results[1:]] == [(Status.NOT_SUPPORTED, "ep_not_started")] * 2
    assert [log.settled(r) for r in results] == results


def test_started_means_anywhere_in_the_run_whatever_arrives_first() -> None:
    # -j N: worker 2's "cannot start" may arrive before worker 1's first execution; the run's end settles it.
    from conformance.survive.faults import RunLog

    log = RunLog()
    early = log.judged(_not_started("z"))
    assert early.status is Status.NOT_SUPPORTED
    log.judged(_passed("a"))
    settled = log.settled(early)
    assert (settled.status, settled.message) == (
        Status.DEVICE_LOST,
        "the EP executed 1 case(s) elsewhere in this run; from this case on it could not create a session: "
        + NOT_STARTED_TEXT,
    )


def test_a_device_lost_after_cases_ran_fails_a_run_through_the_run_s_own_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CPU EP stands in for a device taken away after two cases: from the third on, its session cannot be
    # created as an EP that does not start says (rules.wrapper_fallback), through dmlconf run (-j 0: in this process).
    import conformance.run.onnxruntime_path as onnxruntime_path
    from conformance.cli.main import main
    from conformance.ep.rules import wrapper_fallback

    executed = onnxruntime_path.execute
    calls: list[str] = []

    def vanishing(lowering: Any, ep: Any, *args: Any) -> Any:
        calls.append(lowering.name)
        if len(calls) > 2:
            raise wrapper_fallback(lowering, "CPUExecutionProvider", NOT_STARTED_TEXT)
        return executed(lowering, ep, *args)

    monkeypatch.setattr(onnxruntime_path, "execute", vanishing)
    code = main(["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--pack", "1", "--report-dir", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1 and "PASSED" not in out
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert [r["status"] for r in results] == ["PASS", "PASS", "DEVICE_LOST", "DEVICE_LOST"]
    assert results[2]["message"] == (
        f"the EP executed 2 case(s) before; from this case on it could not create a session: {NOT_STARTED_TEXT}"
    )


def test_the_run_log_counts_apart_the_deaths_under_a_pack() -> None:
    from conformance.environment import RunnerDeath
    from conformance.survive.faults import RunLog

    log = RunLog()
    log.runner_died("dml", ["a", "b"], ["first"])  # under a pack of two
    log.runner_died("dml", ["b"], ["second"])  # under b alone: b's CRASH
    log.runner_died("dml", [], ["third"])  # between requests, or a start
    log.runner_died("cpu", ["c", "d", "e"], [])
    assert log.runner_deaths() == (
        RunnerDeath("dml", 3, 1, ("a", "b"), ("third",)),
        RunnerDeath("cpu", 1, 1, ("c", "d", "e"), ()),
    )


def test_a_resumed_run_counts_the_executions_it_kept() -> None:
    from conformance.survive.faults import RunLog

    log = RunLog()
    log.seen([_passed("a"), _not_started("b", "cpu")])
    assert log.judged(_not_started("c")).status is Status.DEVICE_LOST


# -- runner deaths and a stop, as a worker reports them --------------------------------------------------------


def _listening(supervisor: Supervisor) -> tuple[Worker, Any]:
    """A worker stand-in whose messages come from the returned end of a real pipe."""
    mine, theirs = multiprocessing.Pipe()
    worker = Worker(_Exited(), mine, str(Path(supervisor.folder.name) / "none.stderr"), ready=True, task=_task())
    worker.task_id = 7
    supervisor.workers.append(worker)
    return worker, theirs


def test_every_kind_of_message_crosses_a_pipe_as_it_is() -> None:
    # Spawned workers: each message is pickled across, and arrives equal to what was sent.
    entry = collect([str(EXAMPLES)]).entries[0]
    result = _passed(entry.id, "cpu")
    sent = [
        RunTask(7, (entry,), CPU, RunOptions(pack=1)),
        Stop(),
        Ready(),
        DirectMLDescribed(None, "no DXGI adapter"),
        Began(7, (0, 1), Phase.EXECUTING, ({"X": "ab"}, {"X": "cd"}), 2),
        PhaseChanged(7, Phase.JUDGING, 2),
        Finished(7, (0,), (result,)),
        TaskFinished(7),
        MemoryPeak(7, 1, 2, 3),
        RunnerDeathTold(7, "dml", ("a.yaml::x",), ("err",)),
        CannotRun(7, "the DirectML runner failed to start"),
    ]
    mine, theirs = multiprocessing.Pipe()
    for message in sent:
        theirs.send(message)
    assert [mine.recv() for _ in sent] == sent


def test_a_message_about_an_earlier_task_is_dropped(supervisor: Any) -> None:
    worker, theirs = _listening(supervisor)
    theirs.send(Finished(6, (0,), (_passed("a.yaml::x"),)))  # task 6's, settled already: the worker is on 7
    theirs.send(TaskFinished(6))
    supervisor._receive(worker)
    assert supervisor.results == [] and worker.task is not None and not worker.finished


def test_runner_deaths_a_worker_reports_reach_the_run(supervisor: Any) -> None:
    deaths: list[tuple[str, list[str], list[str]]] = []
    supervisor.on_death = lambda ep, cases, stderr: deaths.append((ep, list(cases), list(stderr)))
    worker, theirs = _listening(supervisor)
    theirs.send(RunnerDeathTold(7, "dml", ("a.yaml::x", "a.yaml::y"), ("err: vkd3d: device lost",)))
    theirs.send(RunnerDeathTold(7, "dml", (), ()))
    supervisor._receive(worker)
    assert deaths == [("dml", ["a.yaml::x", "a.yaml::y"], ["err: vkd3d: device lost"]), ("dml", [], [])]


def test_a_worker_that_cannot_run_cases_stops_the_run(supervisor: Any) -> None:
    from conformance.survive.supervisor import RunStopped

    worker, theirs = _listening(supervisor)
    theirs.send(CannotRun(7, "the DirectML runner failed to start 3 times in a row"))
    with pytest.raises(RunStopped, match=r"^the DirectML runner failed to start 3 times in a row$"):
        supervisor._receive(worker)


def test_runner_deaths_and_a_stop_reach_results_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # In this process (-j 0): the second case's runner dies while serving it (told as Runners tells a death), the
    # third cannot start a runner any more. results.json records the death with its case, and the stop.
    import conformance.run.onnxruntime_path as onnxruntime_path
    from conformance.cli.main import main
    from conformance.ep.wine.client import RunnerDied, RunnerStartFailed

    executed = onnxruntime_path.execute
    calls: list[str] = []

    def failing(lowering: Any, ep: Any, sessions: Any, *args: Any) -> Any:
        calls.append(lowering.name)
        if len(calls) == 2:
            died = RunnerDied("the DirectML runner (pid 9) was killed by SIGKILL", ["err: the last word"], True)
            sessions.runners._tell(died)
            raise died
        if len(calls) == 3:
            raise RunnerStartFailed("the DirectML runner failed to start 3 times in a row")
        return executed(lowering, ep, sessions, *args)

    monkeypatch.setattr(onnxruntime_path, "execute", failing)
    code = main(["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--pack", "1", "--report-dir", str(tmp_path)])
    assert code == 1
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert [(r["status"], r["failure_kind"]) for r in document["results"]] == [("PASS", None), ("CRASH", "worker_died")]
    second = document["results"][1]["case"]
    assert document["environment"]["runner_deaths"] == [
        {"ep": "cpu", "count": 1, "in_packs": 0, "cases": [second], "stderr": ["err: the last word"]}
    ]
    assert document["environment"]["stopped"] == "the DirectML runner failed to start 3 times in a row"


def test_a_waived_crash_of_a_runner_that_died_under_its_case_alone_passes_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A known CRASH on DirectML: the runner dies under one case (no pack). Its CRASH result stands for the death, so
    # a waiver of it passes the run; the death is recorded and shown, not counted against the run a second time.
    import conformance.run.onnxruntime_path as onnxruntime_path
    from conformance.cli.main import main
    from conformance.ep.wine.client import RunnerDied

    executed = onnxruntime_path.execute
    calls: list[str] = []

    def failing(lowering: Any, ep: Any, sessions: Any, *args: Any) -> Any:
        calls.append(lowering.name)
        if len(calls) == 2:
            died = RunnerDied("the DirectML runner (pid 9) was killed by SIGKILL", ["err: the last word"], True)
            sessions.runners._tell(died)
            raise died
        return executed(lowering, ep, sessions, *args)

    monkeypatch.setattr(onnxruntime_path, "execute", failing)
    victim = collect([str(EXAMPLES)]).entries[1].id
    waivers = tmp_path / "known.yaml"
    waivers.write_text(
        f"known_failures:\n  - case: '{victim}'\n    ep: cpu\n    reason: known crash\n    tracking: BUG-1\n",
        encoding="utf-8",
    )
    args = ["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--pack", "1", "--waivers", str(waivers)]
    assert main([*args, "--report-dir", str(tmp_path / "out")]) == 0
    document = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert [r["status"] for r in document["results"]] == ["PASS", "CRASH", "PASS", "PASS"]
    assert [(d["count"], d["in_packs"]) for d in document["environment"]["runner_deaths"]] == [(1, 0)]


def test_a_full_disk_keeps_the_runs_runner_deaths_and_its_lost_device(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # In this process: the first case cannot create a session (ep_not_started), the second PASSes (so the device was
    # there, and is lost at the end: DEVICE_LOST), the third's runner dies (CRASH, a death recorded); then
    # results.jsonl cannot take the fourth result (a full disk). results.json keeps the death and the relabelling.
    import conformance.run.onnxruntime_path as onnxruntime_path
    from conformance.cli.main import main
    from conformance.ep.errors import NotSupported
    from conformance.ep.wine.client import RunnerDied
    from conformance.model import EP_NOT_STARTED
    from conformance.survive.stream import Stream, StreamWriteError

    executed = onnxruntime_path.execute
    calls: list[str] = []

    def failing(lowering: Any, ep: Any, sessions: Any, *args: Any) -> Any:
        calls.append(lowering.name)
        if len(calls) == 1:
            raise NotSupported(f"CPU could not create a session ({NOT_STARTED_TEXT})", EP_NOT_STARTED)
        if len(calls) == 3:
            died = RunnerDied("the DirectML runner (pid 9) was killed by SIGKILL", ["err: the last word"], True)
            sessions.runners._tell(died)
            raise died
        return executed(lowering, ep, sessions, *args)

    added = Stream.add

    def full(stream: Stream, pair: int, result: Result) -> None:
        if pair == 3:
            raise StreamWriteError(f"cannot write {stream.path}: No space left on device")
        added(stream, pair, result)

    monkeypatch.setattr(onnxruntime_path, "execute", failing)
    monkeypatch.setattr(Stream, "add", full)
    code = main(["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--pack", "1", "--report-dir", str(tmp_path)])
    assert code == 1
    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    statuses = [r["status"] for r in document["results"]]
    assert statuses == ["DEVICE_LOST", "PASS", "CRASH", "PASS"]  # the fourth is in results.json, not results.jsonl
    assert document["results"][0]["message"].startswith("the EP executed 2 case(s) elsewhere in this run;")
    assert document["environment"]["runner_deaths"] == [
        {
            "ep": "cpu",
            "count": 1,
            "in_packs": 0,
            "cases": [document["results"][2]["case"]],
            "stderr": ["err: the last word"],
        }
    ]
    assert "No space left on device: the run stops here" in document["environment"]["stopped"]


def test_a_run_without_runner_deaths_records_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.cli.main import main

    assert main(["run", str(EXAMPLES), "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path)]) == 0
    assert "runner_deaths" not in json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["environment"]


# -- a worker's runners end with it ----------------------------------------------------------------------------


class _Closing:
    """A Runners stand-in that notes whether it was closed."""

    closed = False

    def close(self) -> None:
        self.closed = True


@pytest.mark.parametrize("ending", ["stop", "supervisor gone"])
def test_a_worker_stops_its_runners_when_it_ends(ending: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A runner the worker does not stop outlives it unwaited: its memory is nobody's (GNU time never sees it).
    from conformance.survive import worker

    runners = _Closing()
    monkeypatch.setattr(worker, "Runners", lambda: runners)
    monkeypatch.setattr(worker, "_stderr_to", lambda path: None)  # this process's stderr stays the test's
    board = Board(multiprocessing.RawValue("q", 0))
    worker.worker_main(_Supervisor(ending), os.devnull, board)  # type: ignore[arg-type]
    assert runners.closed


class _Supervisor:
    """The worker's end of the pipe: its messages taken, then "stop" or a pipe closed under it."""

    def __init__(self, ending: str) -> None:
        self.ending = ending

    def send(self, message: object) -> None:
        pass

    def recv(self) -> object:
        if self.ending == "stop":
            return Stop()
        raise EOFError


# -- DirectML described by the workers as they start -----------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="dml is onnxruntime-directml in process there: no chain to miss")
def test_a_worker_that_cannot_describe_directml_tells_why_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The run's describe is the first worker's (its runner started as it starts): a chain it cannot start is the
    # run's usage error, one line, not a worker death retried for ever.
    monkeypatch.setenv("DMLCONF_WINE", str(tmp_path / "no-wine"))
    with Supervisor(1, None, [parse_ep("dml")]) as supervisor, pytest.raises(ChainMissing) as raised:
        supervisor.directml()
    assert str(raised.value) == f"DMLCONF_WINE={tmp_path / 'no-wine'}: no such program"


def test_the_workers_runners_start_a_few_at_a_time_and_a_turn_never_given_back_holds_none_for_long(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """early.py: a worker starts its runners in its turn (a semaphore its supervisor shares), at most
    RUNNER_STARTS_AT_ONCE at once; one that waits past RUNNER_START_WAIT starts anyway."""
    import multiprocessing
    import threading
    import time

    from conformance.ep import dml_here
    from conformance.survive import early

    at_once, most = [0], [0]
    lock = threading.Lock()

    def starting(eps: Any, runners: Any) -> dict[str, Any]:
        with lock:
            at_once[0] += 1
            most[0] = max(most[0], at_once[0])
        time.sleep(0.05)
        with lock:
            at_once[0] -= 1
        return {"dml": "described"}

    monkeypatch.setattr(dml_here, "directml_for", starting)
    turns = multiprocessing.get_context("spawn").Semaphore(early.RUNNER_STARTS_AT_ONCE)
    said: list[Any] = []
    workers = [
        threading.Thread(target=lambda: said.append(early.describe_while_importing([], "json", turns).directml))
        for _ in range(6)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert early.RUNNER_STARTS_AT_ONCE == 2 and most[0] == 2 and said == [{"dml": "described"}] * 6
    with Supervisor(0, None, [parse_ep("dml")]) as supervisor:  # the turns its workers are given
        assert supervisor.runner_turns is not None and supervisor.runner_turns.get_value() == 2  # type: ignore[attr-defined]

    monkeypatch.setattr(early, "RUNNER_START_WAIT", 0.2)
    never_given = multiprocessing.get_context("spawn").Semaphore(0)  # a worker died in its turn
    started = time.monotonic()
    assert early.describe_while_importing([], "json", never_given).directml == {"dml": "described"}
    assert 0.2 <= time.monotonic() - started < 5


def _describes(supervisor: Supervisor, *answers: tuple[Any, Any]) -> list[Worker]:
    """Workers that each said they are ready, then described as ``answers`` say ((directml, why) each)."""
    workers = []
    for directml, why in answers:
        worker, theirs = _listening(supervisor)
        worker.task = None
        theirs.send(Ready())
        theirs.send(DirectMLDescribed(directml, why))
        supervisor._receive(worker)
        workers.append(worker)
    return workers


def test_the_first_describe_is_the_run_s_and_one_worker_s_failure_does_not_decide_it(supervisor: Any) -> None:
    supervisor.describe = [parse_ep("dml")]
    _describes(supervisor, (None, "the runner failed to start"), ({"dml": "first"}, None), ({"dml": "second"}, None))
    assert supervisor.directml() == {"dml": "first"}


def test_directml_fails_with_the_first_why_once_every_worker_has_answered(supervisor: Any) -> None:
    supervisor.describe = [parse_ep("dml")]
    supervisor.jobs = 2
    _describes(supervisor, (None, "no DXGI adapter 7"), (None, "no DXGI adapter 7 either"))
    with pytest.raises(ChainMissing, match=r"^no DXGI adapter 7$"):
        supervisor.directml()


def test_a_worker_that_dies_before_its_describe_is_a_failed_start(supervisor: Any) -> None:
    supervisor.describe = [parse_ep("dml")]
    worker, theirs = _listening(supervisor)
    worker.task = None
    theirs.send(Ready())  # ready, then gone before its describe: a failed start, as one not ready
    supervisor._receive(worker)
    supervisor._lost(worker, Status.CRASH, "died")
    assert supervisor.failed_starts == 1
    _describes(supervisor, ({"dml": "level"}, None))  # a describe ends a start: the count restarts
    assert supervisor.failed_starts == 0


# -- peak memory, runners included -----------------------------------------------------------------------------


def test_each_worker_s_latest_peak_memory_reaches_the_run(supervisor: Any) -> None:
    # Two workers' reports (own KiB, their runners' KiB, runners), the first one's twice: its latest counts.
    worker, theirs = _listening(supervisor)
    worker.number = 1
    theirs.send(MemoryPeak(7, 100 * 1024, 900 * 1024, 1))
    theirs.send(MemoryPeak(7, 120 * 1024, 2000 * 1024, 1))
    supervisor._receive(worker)
    other, theirs_too = _listening(supervisor)
    other.number = 2
    theirs_too.send(MemoryPeak(7, 80 * 1024, 1000 * 1024, 2))
    supervisor._receive(other)
    # This process: 50 MiB and one runner (describe's) of 300 MiB, plus one KiB that rounds up to a MiB.
    record = supervisor.peaks.record(50 * 1024, 300 * 1024 + 1, 1)
    harness, runners = 50 + 120 + 80, 301 + 2000 + 1000
    assert record == PeakMemory(total_mib=harness + runners, harness_mib=harness, runners_mib=runners, runners=4)


def test_stopped_workers_exit_without_being_reaped_and_take_no_more_tasks() -> None:
    """``stop`` ends the workers while the caller writes its reports (cli/run.py): each exits on its own, before
    ``close`` joins it; a later ``run`` is refused rather than waiting on workers that will never answer."""
    with Supervisor(2, None) as supervisor:
        supervisor.wait_ready()
        processes = [worker.process for worker in supervisor.workers]
        supervisor.stop()
        for process in processes:
            process.join(60)
        assert [process.exitcode for process in processes] == [0, 0]
        with pytest.raises(RuntimeError, match="after stop"):
            supervisor.run([_task()], supervisor.options, lambda pair, result: None)


def test_a_worker_s_pipe_says_when_it_holds_a_message_and_when_it_ended() -> None:
    """Worker.has_message, the supervisor's question at every turn: as Connection.poll answers it."""
    mine, theirs = multiprocessing.Pipe()
    worker = Worker(None, mine, "none.stderr")
    assert not worker.has_message() and not mine.poll()
    theirs.send(Ready())
    theirs.send(Stop())
    assert worker.has_message() and mine.poll()
    assert mine.recv() == Ready()
    assert worker.has_message()  # the second is still there
    assert mine.recv() == Stop()
    assert not worker.has_message()
    theirs.close()
    assert worker.has_message() and mine.poll()  # the end: recv says so
    with pytest.raises(EOFError):
        mine.recv()
    mine.close()
    with pytest.raises(OSError):
        worker.has_message()

"""How a run behaves when DirectML's machinery fails under it: the device taken away mid-run, the runner killed while
it serves a pack or a case, a runner that cannot start any more, an adapter that is not there.

Two halves. The first speaks to stand-in runners (a Python script in the runner's place, speaking its protocol, that
dies, hangs or loses its main thread where it is told to): the client's own behaviour, fast, everywhere. The
second runs the genuine DirectML chain under Wine (lavapipe in CI), taking the device away and killing the runner
for real (``DMLCONF_TEST_FAULT``, faults.provoke): skipped off the chain, a failure in CI (as tests/test_wine_chain.py).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.ep.directml import NEWEST_BUILD
from conformance.ep.providers import parse_ep
from conformance.ep.sessions import Sessions
from conformance.ep.wine import client
from conformance.ep.wine.chain import RUNNER, Chain
from conformance.ep.wine.client import START_ATTEMPTS, RunnerDied, Runners, RunnerStartFailed
from conformance.model import Status
from conformance.run.options import RunOptions
from conformance.run.runner import run_entry
from conformance.survive.faults import TEST_FAULT, TEST_UNPLUG

REPO = Path(__file__).resolve().parent.parent
TOP_K = "cases/top_k1/spec_examples.yaml"
SPEC_EXAMPLES = [TOP_K, "cases/slice1/spec_examples.yaml"]

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no runner under Wine")

# A stand-in runner: the protocol's ready frame, then open (one session), run and close answered, except where
# FAKE_RUNNER says otherwise: "dies" (killed by SIGKILL on a run request, after a last word on stderr), "hangs" (on a
# run request), "headless" (on a run request, its main thread ends while another waits for good: what the runner
# does when wineserver is killed, a process that never exits, its pipes never closed), "no_start" (exits at once, as
# Wine does in a broken prefix).
FAKE_RUNNER = textwrap.dedent(
    """
    import ctypes, os, platform, signal, struct, sys, threading, time

    mode = os.environ.get("FAKE_RUNNER", "")
    def send(payload):
        os.write(1, struct.pack("<I", len(payload)) + payload)
    if mode == "no_start":
        sys.stderr.write("wine: could not load kernel32.dll, status c0000135\\n")
        sys.exit(1)
    version = b"1.24.4"
    send(b"\\0" + struct.pack("<I", len(version)) + version)
    while True:
        head = sys.stdin.buffer.read(4)
        if len(head) < 4:
            break
        frame = sys.stdin.buffer.read(struct.unpack("<I", head)[0])
        if frame[0] == 2:
            send(b"\\0" + struct.pack("<I", 1))
        elif frame[0] == 4:
            send(b"\\0")
        elif frame[0] == 3 and mode == "hangs":
            time.sleep(3600)
        elif frame[0] == 3:
            sys.stderr.write("the driver fell over\\n")
            sys.stderr.flush()
            if mode == "headless":  # the main thread alone exits (SYS_exit, not exit_group)
                threading.Thread(target=time.sleep, args=(600,)).start()
                ctypes.CDLL(None).syscall({"x86_64": 60, "aarch64": 93}[platform.machine()], 0)
            os.kill(os.getpid(), signal.SIGKILL)
    """
)


@pytest.fixture
def stand_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The stand-in runner as every build's chain: its folder."""
    (tmp_path / RUNNER).write_text(FAKE_RUNNER, encoding="utf-8")
    chain = Chain(sys.executable, tmp_path, tmp_path, ":0", tmp_path, tmp_path)
    monkeypatch.setattr(client, "find_chain", lambda build: chain)
    return tmp_path


def _example(name: str) -> Any:
    return next(e for e in collect([str(REPO / TOP_K)]).entries if e.id.endswith(name))


def _in_stand_in(
    mode: str, monkeypatch: pytest.MonkeyPatch, limit: float | None = None
) -> tuple[Any, list[RunnerDied]]:
    """example-1 on "dml" in the stand-in runner told to behave as ``mode``; the deaths told to ``on_death``."""
    monkeypatch.setenv("FAKE_RUNNER", mode)
    deaths: list[RunnerDied] = []
    runners = Runners(limit=limit, on_death=deaths.append)
    try:
        result = run_entry(_example("::example-1"), parse_ep("dml"), RunOptions(pack=1), Sessions(runners=runners))
    finally:
        runners.close()
    return result, deaths


def test_a_runner_killed_while_it_runs_a_case_is_a_crash_of_that_case(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result, deaths = _in_stand_in("dies", monkeypatch)
    assert (result.status, result.failure_kind) == (Status.CRASH, "worker_died")  # not ERROR "execution"
    first, *rest = result.message.splitlines()
    assert first.startswith("the DirectML runner (pid ") and first.endswith(
        " was killed by SIGKILL while the harness waited for its answer"
    )
    assert rest == ["last lines of its stderr:", "  the driver fell over"]
    [death] = deaths
    assert (death.serving, death.lines) == (True, ("the driver fell over",))


@contextlib.contextmanager
def _within(seconds: int) -> Iterator[None]:
    """A wait that would never end fails the test instead (SIGALRM)."""

    def stalled(*_: object) -> None:
        raise AssertionError(f"still waiting on the runner after {seconds} s")

    previous = signal.signal(signal.SIGALRM, stalled)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a thread's own exit: Linux's SYS_exit")
def test_a_runner_whose_main_thread_ended_is_found_dead_and_killed(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As when wineserver is killed: the runner's main thread ends, its other threads wait for good, so its process
    # never exits and its pipes never close: no end of file ever comes. (Before: the run stalled for minutes, until
    # the worker's timeout.)
    with _within(60):
        result, deaths = _in_stand_in("headless", monkeypatch)
    assert (result.status, result.failure_kind) == (Status.CRASH, "worker_died")
    first = result.message.splitlines()[0]
    assert first.endswith(
        " lost its main thread (the threads left waiting were killed) while the harness waited for its answer"
    )
    assert len(deaths) == 1
    pid = int(first.split("(pid ")[1].split(")")[0])
    assert not Path(f"/proc/{pid}").exists()  # killed and reaped: nothing of it is left running


def test_every_wait_on_the_runner_is_bounded_by_the_case_timeout(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with _within(60):
        result, deaths = _in_stand_in("hangs", monkeypatch, limit=1.0)
    assert (result.status, result.failure_kind) == (Status.TIMEOUT, "timeout")
    assert result.message.splitlines()[0].endswith(" was killed by SIGKILL and gave no answer in time (killed)")
    assert len(deaths) == 1


@pytest.mark.parametrize("mode", ["dies", "hangs"])
def test_where_select_cannot_wait_on_pipes_a_death_and_a_hang_are_told_the_same(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # As on Windows, where the runner runs natively: select() waits on sockets only (WinError 10038 on a pipe).
    def sockets_only(*_: object) -> None:
        raise OSError(10038, "An operation was attempted on something that is not a socket")

    monkeypatch.setattr(client, "SELECTABLE_PIPES", False)
    monkeypatch.setattr(client.select, "select", sockets_only)
    with _within(60):
        result, deaths = _in_stand_in(mode, monkeypatch, limit=1.0 if mode == "hangs" else None)
    expected = {"dies": (Status.CRASH, "worker_died"), "hangs": (Status.TIMEOUT, "timeout")}[mode]
    assert (result.status, result.failure_kind) == expected
    assert len(deaths) == 1
    if mode == "dies":
        assert result.message.splitlines()[1:] == ["last lines of its stderr:", "  the driver fell over"]


class _Unkillable:
    """A runner's process stuck in the kernel: SIGKILL does not end it, so no wait for it ever returns."""

    pid = 4242
    killed = 0

    def kill(self) -> None:
        self.killed += 1

    def wait(self, timeout: float | None = None) -> int:
        if timeout is None:
            raise AssertionError("a wait without a limit on a process that never ends: the run would hang here")
        raise subprocess.TimeoutExpired("dmlrunner.exe", timeout)


def test_a_runner_that_survives_sigkill_is_left_behind_not_waited_on_for_good() -> None:
    runner = object.__new__(client.Runner)
    process = _Unkillable()
    runner._process = process  # type: ignore[assignment]
    runner._stdin = runner._stdout = open(os.devnull, "rb")  # type: ignore[assignment]  # noqa: SIM115
    runner.kill()
    runner.stop()  # it does not exit at the end of its input either: killed, then left
    assert process.killed == 2


def test_a_runner_that_keeps_failing_to_start_stops_with_one_line(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_RUNNER", "no_start")
    deaths: list[RunnerDied] = []
    runners = Runners(on_death=deaths.append)
    with pytest.raises(RunnerStartFailed) as raised:
        runners.get()
    message = str(raised.value)
    assert "\n" not in message
    assert message.startswith(
        f"the DirectML runner (DirectML {NEWEST_BUILD.directml}, onnxruntime.dll {NEWEST_BUILD.onnxruntime}) failed "
        f"to start {START_ATTEMPTS} times in a row (the DirectML runner (pid "
    )
    assert message.endswith(
        "exited with status 1 while the harness waited for it to start; its last words: wine: could not load "
        "kernel32.dll, status c0000135): nothing more can run on it; run dmlconf doctor"
    )
    assert [(death.serving, death.lines) for death in deaths] == [
        (False, ("wine: could not load kernel32.dll, status c0000135",))
    ] * START_ATTEMPTS
    monkeypatch.setenv("FAKE_RUNNER", "")
    assert runners.get().onnxruntime == "1.24.4"  # the failures were counted in a row: a good start is a start
    runners.close()


def test_a_start_failure_of_a_case_s_runner_is_no_verdict_of_the_case(
    stand_in: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A broken Wine prefix mid-run made every later case a CRASH charged to the driver; now the run stops.
    with pytest.raises(RunnerStartFailed):
        _in_stand_in("no_start", monkeypatch)


# -- the genuine DirectML chain -----------------------------------------------------------------------------------


def _run(*args: str, env: dict[str, str] | None = None, tool: str = "conformance") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", tool, *args],
        cwd=REPO,
        env={k: v for k, v in os.environ.items() if k != TEST_FAULT} | (env or {}),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _results(folder: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return loaded


def _unplugged(tmp_path: Path, victim: str) -> dict[str, str]:
    """The environment of a run whose Vulkan driver (lavapipe, or whatever the machine has) is a copy that the worker
    removes, killing its runner, just before case ``victim`` runs: every runner started after has no device."""
    drivers = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    found = (
        drivers.split(os.pathsep)[0] if drivers else next(iter(sorted(Path("/usr/share/vulkan/icd.d").glob("lvp*"))))
    )
    icd = tmp_path / "icd.json"
    shutil.copyfile(found, icd)
    return {"VK_DRIVER_FILES": str(icd), TEST_UNPLUG: str(icd), TEST_FAULT: f"unplug:{victim}"}


def test_a_device_taken_away_mid_run_fails_the_run_from_that_case_on(chain_ready: None, tmp_path: Path) -> None:
    env = _unplugged(tmp_path, "example-1-positive-strides")
    out = tmp_path / "out"
    done = _run("run", *SPEC_EXAMPLES, "--ep", "dml", "--pack", "1", "--report-dir", str(out), env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    results = _results(out)["results"]
    assert [r["status"] for r in results] == ["PASS"] * 4 + ["DEVICE_LOST"] * 2  # not NOT_SUPPORTED: a gate passed
    for lost in results[4:]:
        assert lost["failure_kind"] == "device_lost"
        assert lost["message"].startswith(
            "the EP executed 4 case(s) before; from this case on it could not create a session: D3D12CreateDevice"
        )
    assert "PASSED" not in done.stdout


def test_a_runner_killed_under_a_pack_is_recorded_and_only_its_case_crashes(chain_ready: None, tmp_path: Path) -> None:
    victim = f"{TOP_K}::example-3-tied-values"
    done = _run(
        "run", *SPEC_EXAMPLES, "--ep", "dml", "--report-dir", str(tmp_path), env={TEST_FAULT: f"runner_dies:{victim}"}
    )
    found = _results(tmp_path)
    statuses = {r["case"]: (r["status"], r["failure_kind"]) for r in found["results"]}
    assert statuses.pop(victim) == ("CRASH", "worker_died"), done.stderr[-2000:]
    assert set(statuses.values()) == {("PASS", None)}  # the pack ran again one case per session
    [deaths] = found["environment"]["runner_deaths"]
    # Killed under the pack (all six in flight), then under the victim alone: two deaths, both recorded; the victim's
    # CRASH stands for the pack's death too, so only that CRASH fails the run.
    assert (deaths["ep"], deaths["count"], deaths["in_packs"]) == ("dml", 2, 0)
    assert done.returncode == 1
    assert sorted(deaths["cases"]) == sorted(r["case"] for r in found["results"])
    [crash] = [r for r in found["results"] if r["case"] == victim]
    assert " was killed by SIGKILL while the harness waited for its answer" in crash["message"]


def test_the_pytest_plugin_fails_a_lost_device_and_reports_runner_deaths(chain_ready: None, tmp_path: Path) -> None:
    env = _unplugged(tmp_path, "example-3-tied-values")
    done = _run("-q", "-p", "no:cacheprovider", "-rN", TOP_K, "--ep", "dml", env=env, tool="pytest")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "2 failed, 2 passed" in done.stdout
    assert "DEVICE_LOST (device_lost) on dml" in done.stdout
    assert "the EP executed 2 case(s) before; from this case on it could not create a session" in done.stdout
    assert (
        "dml-conformance: EP dml: the runner died 1 time that a case's own fault result, a gap between requests"
        in done.stdout
    )


def test_a_runner_that_cannot_start_any_more_stops_the_run_with_one_line(chain_ready: None, tmp_path: Path) -> None:
    # A Wine that breaks mid-run (a corrupted prefix): a wrapper that runs the real one while a file is there.
    wine = shutil.which("wine64") or shutil.which("wine")
    assert wine is not None
    healthy = tmp_path / "healthy"
    healthy.touch()
    wrapper = tmp_path / "wine"
    wrapper.write_text(
        f'#!/bin/sh\n[ -e "{healthy}" ] && exec "{wine}" "$@"\necho "wine: {tmp_path}/prefix is not a prefix" >&2\n'
        "exit 1\n",
        encoding="utf-8",
    )
    wrapper.chmod(0o755)
    env = {"DMLCONF_WINE": str(wrapper), TEST_UNPLUG: str(healthy), TEST_FAULT: "unplug:example-3-tied-values"}
    out = tmp_path / "out"
    done = _run("run", TOP_K, "--ep", "dml", "--pack", "1", "--report-dir", str(out), env=env)
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    [said] = [line for line in done.stderr.splitlines() if "failed to start" in line]
    assert re.search(
        r"failed to start 3 times in a row \(the DirectML runner \(pid \d+\) exited with status 1 while the harness "
        rf"waited for it to start; its last words: wine: {re.escape(str(tmp_path))}/prefix is not a prefix\): nothing "
        r"more can run on it; run dmlconf doctor$",
        said,
    ), said
    found = _results(out)
    assert [r["status"] for r in found["results"]] == ["PASS", "PASS"]  # the results so far; none charged a CRASH
    assert found["environment"]["interrupted"] and "failed to start" in found["environment"]["stopped"]
    [deaths] = found["environment"]["runner_deaths"]
    # The one killed between cases, then three starts: none under a pack (the stop fails the run).
    assert (deaths["count"], deaths["in_packs"], deaths["cases"]) == (1 + 3, 0, [])


def test_an_adapter_that_is_not_there_is_a_usage_error_before_any_case(chain_ready: None, tmp_path: Path) -> None:
    done = _run("run", TOP_K, "--ep", "dml:device_id=7", "--report-dir", str(tmp_path))
    assert done.returncode == 2, done.stdout[-3000:] + done.stderr[-2000:]
    [line] = done.stderr.splitlines()
    assert line.startswith("dmlconf: --ep dml: dml:device_id=7: this machine has no DXGI adapter 7; its adapters: 0: ")
    assert not (tmp_path / "results.json").exists() and "running" not in done.stdout


def test_workers_that_die_starting_while_the_run_waits_for_their_describe_stop_it_with_one_line(
    chain_ready: None, tmp_path: Path
) -> None:
    # The run's DirectML is described by its workers as they start: workers that die before they are ready (each
    # after its describe) stop the run there, as without DirectML, with nothing run and no traceback.
    done = _run("run", TOP_K, "--ep", "dml", "--report-dir", str(tmp_path), env={TEST_FAULT: "start:"})
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-2000:]
    [line] = done.stderr.splitlines()
    # 690 s: 120 for its imports, 3 runner starts of 180 s each, and 30 s waiting for its turn to start them
    assert line == (
        "ERROR 3 worker processes in a row died, or hung for 690 s, before they were ready: nothing more can run "
        "(try -j 0 to run in this process)"
    )
    assert not (tmp_path / "results.json").exists()


def test_a_stopped_runner_s_peak_memory_is_counted(stand_in: Path) -> None:
    # The runner's own high-water mark, read here from /proc while it lives, is in what the process's runners peaked
    # at once it is stopped: its process is gone by then, and no getrusage of the harness's counts it.
    before_kib, before_runners = client.runners_peak()
    runners = Runners()
    runner = runners.get()
    status = Path(f"/proc/{runner.pid}/status").read_text(encoding="utf-8")
    seen_kib = int(next(line for line in status.splitlines() if line.startswith("VmHWM:")).split()[1])
    runners.close()
    after_kib, after_runners = client.runners_peak()
    assert after_runners == before_runners + 1
    assert after_kib - before_kib >= seen_kib > 0

"""Ctrl-C is the supervisor's, from the first moment (conformance/survive/interrupt.py): a SIGINT to the process group
while the workers are still starting (importing NumPy, onnx and onnxruntime) prints no traceback from them, and a run
says the same one line as later, with results.json saying how far it got. Ctrl-C at a terminal signals the whole
foreground process group; each run here is a real process in a session of its own, signalled the same way."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.survive.faults import TEST_FAULT

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX's")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
SWEEP = REPO / "cases" / "slice1" / "sweep.yaml"
INTERRUPTED = re.compile(r"interrupted by SIG(?:INT|TERM|HUP): writing the (\d+) result\(s\) finished so far")

# Workers are spawned, and the group signalled every 0.1 s for 0.8 s: the workers are then starting their interpreter
# or importing. The supervisor counts its own SIGINTs; its workers must all come up, and say nothing.
STARTING_WORKERS = textwrap.dedent(
    """
    import os, signal, sys, time
    from conformance.survive.supervisor import Supervisor

    received = []
    signal.signal(signal.SIGINT, lambda number, frame: received.append(number))
    supervisor = Supervisor(2, None)
    try:
        for _ in range(8):
            time.sleep(0.1)
            os.killpg(0, signal.SIGINT)
        supervisor.wait_ready()
        print(f"ready, {len(received)} SIGINT(s) here, {supervisor.started} worker(s) started")
    finally:
        supervisor.close()
    """
)


def test_ctrl_c_while_workers_start_is_the_supervisor_s_alone(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", STARTING_WORKERS],
        capture_output=True,
        text=True,
        timeout=300,
        start_new_session=True,
        cwd=tmp_path,
    )
    assert done.stderr == ""  # no worker's KeyboardInterrupt traceback
    assert done.stdout == "ready, 8 SIGINT(s) here, 2 worker(s) started\n"  # none was lost, none died
    assert done.returncode == 0


def test_ctrl_c_as_a_run_starts_is_one_line_and_results_json_says_how_far_it_got(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    command = [sys.executable, "-m", "conformance", "run", str(EXAMPLES), "--ep", "cpu", "-j", "2"]
    with subprocess.Popen(
        [*command, "--report-dir", str(reports)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        cwd=REPO,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()  # printed after the workers were spawned, while they import
        os.killpg(process.pid, signal.SIGINT)
        stdout = first + process.stdout.read()
        stderr = process.stderr.read()
        code = process.wait(timeout=120)
    assert first.startswith("running 4 case(s)"), stdout + stderr
    (line,) = stderr.splitlines()  # no traceback, no second line
    finished = INTERRUPTED.fullmatch(line)
    assert finished is not None, stderr
    assert code == 1
    document = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    env = document["environment"]
    assert (env["interrupted"], env["planned_results"]) == (True, 4)  # "N of M cases run": N results, M planned
    assert len(document["results"]) == int(finished.group(1)) < 4


def _statuses(document: dict[str, Any]) -> list[tuple[str, str, str, Any]]:
    """Each result's case, EP, verdict and output hashes: what a complete run and a resumed one must share."""
    return [(r["case"], r["ep"], r["status"], r["outputs_sha256"]) for r in document["results"]]


@pytest.mark.parametrize("sent", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_are_ctrl_c_and_resume_completes_the_run_exactly(tmp_path: Path, sent: int) -> None:
    """A CI job cancelled or timed out signals the run (its whole process group here): the results so far, every
    report marked interrupted (junit.xml with the run's own error), exit 1, and --resume gives the same results as a
    run never interrupted."""
    clean = tmp_path / "clean"
    command = [sys.executable, "-m", "conformance", "run", str(SWEEP), "--ep", "cpu", "-j", "2", "--pack", "1"]
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULT}
    subprocess.run([*command, "--report-dir", str(clean)], cwd=REPO, env=env, capture_output=True, timeout=300)
    reports = tmp_path / "reports"
    victim = json.loads((clean / "results.json").read_text(encoding="utf-8"))["results"][20]["case"]
    with subprocess.Popen(
        [*command, "--report-dir", str(reports)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**env, TEST_FAULT: f"hang:{victim}"},  # the run is surely going when the signal comes
        cwd=REPO,
    ) as process:
        stream = reports / "results.jsonl"
        deadline = time.monotonic() + 120
        while (stream.read_bytes().count(b"\n") if stream.exists() else 0) < 10:
            assert process.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        os.killpg(process.pid, sent)
        stdout, stderr = process.communicate(timeout=120)
    name = signal.Signals(sent).name
    (line,) = stderr.splitlines()  # no traceback, no worker's death
    finished = INTERRUPTED.fullmatch(line)
    assert finished is not None and name in line, stderr
    assert process.returncode == 1 and "add --resume to finish" in stdout
    document = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    assert document["environment"]["interrupted"] is True
    assert len(document["results"]) == int(finished.group(1))
    assert all(r["status"] == "PASS" for r in document["results"])  # no case charged with the signal
    junit = (reports / "junit.xml").read_text(encoding="utf-8")
    assert "interrupted" in junit and "<error" in junit
    resumed = subprocess.run(
        [*command, "--report-dir", str(reports), "--resume"], cwd=REPO, env=env, capture_output=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr
    complete = json.loads((reports / "results.json").read_text(encoding="utf-8"))
    assert _statuses(complete) == _statuses(json.loads((clean / "results.json").read_text(encoding="utf-8")))


SECOND_SIGNAL = textwrap.dedent(
    """
    import os, signal, sys, time
    from conformance.survive.interrupt import interrupts_stop_the_run

    with interrupts_stop_the_run() as interrupts:
        try:
            print("waiting", flush=True)
            time.sleep(60)
        except KeyboardInterrupt:
            print(f"first: {interrupts.received}; writing the reports", flush=True)
            time.sleep(60)  # what a second signal must not wait for
    print("never here", flush=True)
    """
)


def test_a_second_signal_stops_at_once(tmp_path: Path) -> None:
    with subprocess.Popen(
        [sys.executable, "-c", SECOND_SIGNAL], stdout=subprocess.PIPE, text=True, cwd=REPO, start_new_session=True
    ) as process:
        assert process.stdout is not None
        assert process.stdout.readline() == "waiting\n"
        process.send_signal(signal.SIGTERM)
        assert process.stdout.readline() == "first: SIGTERM; writing the reports\n"
        sent = time.monotonic()
        process.send_signal(signal.SIGHUP)
        code = process.wait(timeout=30)
        assert time.monotonic() - sent < 10
    assert code == -signal.SIGHUP

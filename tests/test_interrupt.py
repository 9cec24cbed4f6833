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
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="process groups and SIGINT are POSIX's")

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
INTERRUPTED = re.compile(r"interrupted: writing the (\d+) result\(s\) finished so far")

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

"""Faults in the worker processes, caused for real: a worker killed by a signal, one that hangs, one whose device is
lost, and a kill -9 of the whole run followed by --resume. Each run is ``python -m conformance run`` in a child
process; ``DMLCONF_TEST_FAULT`` (faults.provoke) makes the worker running one case id fault, and everything after
that (the supervisor noticing, the stderr read, the case's result, a fresh worker, the exit code) is the production
path."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.cli.main import main
from conformance.ep.errors import ExecutionError, device_lost
from conformance.ep.providers import parse_ep
from conformance.model import Status
from conformance.run.options import HARNESS_TIMEOUT_FACTOR, RunOptions
from conformance.run.runner import run_entry
from conformance.survive.faults import JUDGING_SECONDS, TEST_FAULT, telling_lines

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = "cases/top_k1/spec_examples.yaml"
VICTIM = f"{EXAMPLES}::example-3-tied-values"
SWEEP = "cases/slice1/sweep.yaml"  # 55 small cases: packed into one session on the CPU EP


def _dmlconf(
    args: list[str], report_dir: Path, fault: str | None = None, **popen: Any
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULT}
    if fault is not None:
        env[TEST_FAULT] = fault
    command = [sys.executable, "-m", "conformance", "run", *args, "--ep", "cpu", "--report-dir", str(report_dir)]
    return subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=240, **popen)


def _results(report_dir: Path) -> list[dict[str, Any]]:
    return list(json.loads((report_dir / "results.json").read_text())["results"])


def _untimed(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in result.items() if k != "seconds"} for result in results]


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[dict[str, Any]]]:
    """The results of runs with no fault: what every case but the faulting one must still give."""
    out = {}
    for name in (EXAMPLES, SWEEP):
        folder = tmp_path_factory.mktemp("clean")
        assert _dmlconf([name], folder).returncode == 0
        out[name] = _untimed(_results(folder))
    return out


def _check_only_the_victim(
    results: list[dict[str, Any]], clean: list[dict[str, Any]], victim: str, status: Status
) -> dict[str, Any]:
    assert [r["case"] for r in results] == [r["case"] for r in clean]
    faulted = [r for r in results if r["status"] != "PASS"]
    assert [r["case"] for r in faulted] == [victim]
    assert faulted[0]["status"] == status.value
    # The bytes it faulted on: the same inputs as the clean run's (sent with the case's start, before the fault).
    [unfaulted] = [r for r in clean if r["case"] == victim]
    assert faulted[0]["inputs_sha256"] == unfaulted["inputs_sha256"] and unfaulted["inputs_sha256"]
    others = [r for r in _untimed(results) if r["case"] != victim]
    assert others == [r for r in clean if r["case"] != victim]
    return faulted[0]


@pytest.mark.parametrize(("kind", "name"), [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_worker_killed_by_a_signal_costs_only_its_case(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]], kind: str, name: str
) -> None:
    done = _dmlconf([EXAMPLES], tmp_path, f"{kind}:{VICTIM}")
    assert done.returncode == 1, done.stderr
    crash = _check_only_the_victim(_results(tmp_path), clean[EXAMPLES], VICTIM, Status.CRASH)
    message = crash["message"].splitlines()
    assert message[0] == f"the worker process running it was killed by {name}"
    assert "Fatal Python error" in crash["message"]  # faulthandler's dump, from the dead worker's stderr
    assert f"CRASH (worker_died) {VICTIM} [cpu]" in done.stdout


def test_a_crash_in_a_pack_is_pinned_on_its_case_with_several_workers(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]]
) -> None:
    victim = collect([str(REPO / SWEEP)]).entries[30].id.replace(str(REPO) + "/", "")
    done = _dmlconf([SWEEP, "-j", "2"], tmp_path, f"segv:{victim}")
    assert done.returncode == 1, done.stderr
    _check_only_the_victim(_results(tmp_path), clean[SWEEP], victim, Status.CRASH)
    # The worker killed under the pack is recorded; the victim, run again alone, died again: its CRASH stands for
    # the pack's death, which therefore fails nothing by itself (the CRASH does, unless waived).
    [death] = json.loads((tmp_path / "results.json").read_text())["environment"]["runner_deaths"]
    assert (death["ep"], death["count"], death["in_packs"]) == ("cpu", 1, 0)
    assert victim in death["cases"] and len(death["cases"]) > 1
    assert any(line.startswith("Fatal Python error: Segmentation fault") for line in death["stderr"])
    assert "EP cpu: the runner died 1 time that a case's own fault result, a gap between requests" in done.stdout


def test_a_crash_that_only_packing_causes_fails_the_run_though_every_case_passes(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]]
) -> None:
    victim = collect([str(REPO / SWEEP)]).entries[30].id.replace(str(REPO) + "/", "")
    done = _dmlconf([SWEEP, "-j", "2"], tmp_path, f"segv_in_pack:{victim}")
    assert _untimed(_results(tmp_path)) == clean[SWEEP]  # every case, run again alone, passed as in a clean run
    [death] = json.loads((tmp_path / "results.json").read_text())["environment"]["runner_deaths"]
    assert (death["ep"], death["count"], death["in_packs"]) == ("cpu", 1, 1)  # no result stands for it
    assert done.returncode == 1, done.stdout
    assert "FAILED — EP cpu: the runner died 1 time while serving packs (cases in flight: " in done.stdout


def test_a_waived_crash_under_a_pack_passes_the_run(tmp_path: Path) -> None:
    waivers = tmp_path / "waivers.yaml"
    waivers.write_text(
        f"known_failures:\n  - case: '{VICTIM}'\n    ep: cpu\n    reason: a crash known here\n    tracking: BUG-1\n",
        encoding="utf-8",
    )
    done = _dmlconf([EXAMPLES, "--waivers", str(waivers)], tmp_path / "reports", f"segv:{VICTIM}")
    [death] = json.loads((tmp_path / "reports" / "results.json").read_text())["environment"]["runner_deaths"]
    assert (death["count"], death["in_packs"]) == (1, 0)  # the default packing put the four examples in one pack
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_hanging_worker_is_killed_after_the_timeout(tmp_path: Path, clean: dict[str, list[dict[str, Any]]]) -> None:
    done = _dmlconf([EXAMPLES, "--case-timeout", "2"], tmp_path, f"hang:{VICTIM}")
    assert done.returncode == 1, done.stderr
    timeout = _check_only_the_victim(_results(tmp_path), clean[EXAMPLES], VICTIM, Status.TIMEOUT)
    assert timeout["message"].splitlines()[0] == (
        "no progress for 2 s while the EP executed it (the harness waited for the EP's answer): the worker was killed"
    )
    assert 2 <= timeout["seconds"] < 2 * HARNESS_TIMEOUT_FACTOR  # the EP's limit, not the harness's


def test_the_harness_s_own_slow_judging_is_no_timeout_of_the_ep(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]]
) -> None:
    """Judging the EP's answer (the compare, the canary check) for longer than --case-timeout is the harness's own
    work, not a silence of the device: the case gets its verdict."""
    assert JUDGING_SECONDS > 2
    done = _dmlconf([EXAMPLES, "--case-timeout", "2", "--pack", "1"], tmp_path, f"slow_judging:{VICTIM}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _untimed(_results(tmp_path)) == clean[EXAMPLES]
    [victim] = [r for r in _results(tmp_path) if r["case"] == VICTIM]
    assert victim["seconds"] >= JUDGING_SECONDS  # it did take longer than the case timeout


def test_a_harness_that_hangs_judging_is_killed_at_its_own_limit_and_says_so(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]]
) -> None:
    """A harness bug that never ends still ends the case, after the harness's own longer limit, in a TIMEOUT that
    says the harness was at work, not the EP."""
    done = _dmlconf([EXAMPLES, "--case-timeout", "1"], tmp_path, f"hang_judging:{VICTIM}")
    assert done.returncode == 1, done.stderr
    timeout = _check_only_the_victim(_results(tmp_path), clean[EXAMPLES], VICTIM, Status.TIMEOUT)
    limit = 1 * HARNESS_TIMEOUT_FACTOR
    assert timeout["message"].splitlines()[0] == (
        f"no progress for {limit} s while the harness judged the EP's answer (its own work after the EP answered: the "
        "compare, the canary check; not the EP's): the worker was killed"
    )
    assert timeout["seconds"] >= limit


@pytest.mark.parametrize(
    ("fault", "first_line"),
    [
        ("segv_preparing", "the worker process running it was killed by SIGSEGV"),
        (
            "hang_preparing",
            f"no progress for {HARNESS_TIMEOUT_FACTOR} s while the harness prepared it (its own work: the inputs, the "
            "oracle, the lowering; not the EP's): the worker was killed",
        ),
    ],
)
def test_a_fault_while_the_harness_prepares_a_case_is_that_case_s(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]], fault: str, first_line: str
) -> None:
    """Which case a worker prepares goes without a message (messages.Board): a crash or a hang there is still pinned
    on that case, in a pack's window (-j 2, the default packing) as alone, and the others give their clean results."""
    ids = [entry.id.replace(str(REPO) + "/", "") for entry in collect([str(REPO / SWEEP)]).entries]
    victim = ids[30]
    assert [case for case in ids if victim in case] == [victim]  # the fault's text names it alone
    done = _dmlconf([SWEEP, "-j", "2", "--case-timeout", "1"], tmp_path, f"{fault}:{victim}")
    assert done.returncode == 1, done.stderr
    results = _results(tmp_path)
    assert [r["case"] for r in results] == ids
    faulted = [r for r in results if r["status"] != "PASS"]
    assert [r["case"] for r in faulted] == [victim]
    assert faulted[0]["status"] == ("CRASH" if fault.startswith("segv") else "TIMEOUT")
    assert faulted[0]["message"].splitlines()[0] == first_line
    others = [r for r in _untimed(results) if r["case"] != victim]
    assert others == [r for r in clean[SWEEP] if r["case"] != victim]


def test_a_lost_device_is_device_lost(tmp_path: Path, clean: dict[str, list[dict[str, Any]]]) -> None:
    done = _dmlconf([EXAMPLES], tmp_path, f"device_lost:{VICTIM}")
    assert done.returncode == 1, done.stderr
    lost = _check_only_the_victim(_results(tmp_path), clean[EXAMPLES], VICTIM, Status.DEVICE_LOST)
    assert "DXGI_ERROR_DEVICE_REMOVED (0x887A0005)" in lost["message"]


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_a_run_killed_with_sigkill_resumes_to_the_same_results(
    tmp_path: Path, clean: dict[str, list[dict[str, Any]]]
) -> None:
    # The worker hangs on the last case (no timeout), so the run is still going when it is killed, whatever the
    # machine's speed; the whole process group (the CLI and its workers) gets SIGKILL, as from a CI's job timeout.
    victim = collect([str(REPO / SWEEP)]).entries[-1].id.replace(str(REPO) + "/", "")
    stream = tmp_path / "results.jsonl"
    env = {**os.environ, TEST_FAULT: f"hang:{victim}"}
    command = [sys.executable, "-m", "conformance", "run", SWEEP, "--ep", "cpu", "--pack", "1", "--case-timeout", "0"]
    run = subprocess.Popen(
        [*command, "--report-dir", str(tmp_path)],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while _lines(stream) < 1 + 20 and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert run.poll() is None, "the run ended by itself: it should hang on its last case"
    os.killpg(run.pid, signal.SIGKILL)
    run.wait()
    kept = _lines(stream) - 1
    assert 20 <= kept < len(clean[SWEEP])
    assert not (tmp_path / "results.json").exists()

    resumed = _dmlconf([SWEEP, "--pack", "1", "--resume"], tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming: {kept} result(s) kept" in resumed.stdout
    assert _untimed(_results(tmp_path)) == clean[SWEEP]
    records = [json.loads(line) for line in stream.read_text().splitlines()[1:]]
    assert sorted(r["pair"] for r in records) == list(range(len(clean[SWEEP])))  # each pair once: none run twice


def test_resume_refuses_the_stream_of_another_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    assert main(["run", EXAMPLES, "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path)]) == 0
    capsys.readouterr()
    assert main(["run", SWEEP, "--ep", "cpu", "-j", "0", "--report-dir", str(tmp_path), "--resume"]) == 2
    error = capsys.readouterr().err.strip()
    then, now = (len(collect([str(REPO / name)]).entries) for name in (EXAMPLES, SWEEP))
    assert error == (
        f"dmlconf: --resume: {tmp_path / 'results.jsonl'} is from another run: (case, EP) pairs: {then} then, {now} "
        "now; run without --resume to start again"
    )


@pytest.mark.parametrize(
    "text",
    [
        "D3D12: Removing Device. DXGI_ERROR_DEVICE_REMOVED",
        "The GPU device instance has been suspended. Use GetDeviceRemovedReason: 887A0005",
        "CUDA failure 700: an illegal memory access was encountered",
        "CUDA error cudaErrorLaunchFailure:unspecified launch failure",
        "Device was lost. Reason: Destroyed",
    ],
)
def test_the_eps_words_for_a_lost_device(text: str) -> None:
    assert device_lost(text)


@pytest.mark.parametrize("text", ["[E:onnxruntime] Non-zero status code returned while running TopK node", "lost 3"])
def test_other_errors_are_not_a_lost_device(text: str) -> None:
    assert not device_lost(text)


def test_an_execution_error_that_says_the_device_is_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    import conformance.run.onnxruntime_path as onnxruntime_path

    def lost(*args: object) -> None:
        raise ExecutionError("CUDA failure 700: an illegal memory access was encountered")

    monkeypatch.setattr(onnxruntime_path, "execute", lost)
    entry = collect([str(REPO / EXAMPLES)]).entries[0]
    result = run_entry(entry, parse_ep("cpu"), RunOptions(pack=1))
    assert (result.status, result.failure_kind) == (Status.DEVICE_LOST, "device_lost")
    assert "illegal memory access" in result.message


def test_the_lines_kept_of_a_fatal_signal_are_the_driver_s_and_the_top_of_the_stack() -> None:
    stderr = "\n".join(
        [
            *(f"noise {i}" for i in range(20)),
            "driver: gone",
            "Fatal Python error: Segmentation fault",
            "",
            "Current thread 0x1 (most recent call first):",
            *(f'  File "f{i}.py", line {i}' for i in range(30)),
        ]
    )
    kept = telling_lines(stderr, count=12)
    assert kept[:6] == [
        "noise 17",
        "noise 18",
        "noise 19",
        "driver: gone",
        "Fatal Python error: Segmentation fault",
        "Current thread 0x1 (most recent call first):",
    ]
    assert kept[6:] == [f'  File "f{i}.py", line {i}' for i in range(6)]
    assert telling_lines("a\n\nb\nc", count=2) == ["b", "c"]


def test_workers_that_cannot_start_end_the_run_with_one_line(tmp_path: Path) -> None:
    done = _dmlconf([EXAMPLES], tmp_path, "start:")
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert "3 worker processes in a row died, or hung for 120 s, before they were ready" in done.stderr
    assert json.loads((tmp_path / "results.json").read_text())["environment"]["interrupted"] is True


def _children(pid: int) -> list[int]:
    children = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rpartition(")")[2].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            children.append(int(stat.parent.name))
    return children


def _gone(pid: int) -> bool:
    try:  # a zombie (state Z) is gone too: in a container nothing may reap an orphan
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_worker_exits_when_its_supervisor_is_killed_alone(tmp_path: Path) -> None:
    # kill -9 of the CLI's pid alone (not its group: SIGTERM from a CI timeout, the OOM killer) while a worker
    # hangs in a case: the worker must not live on, holding the device.
    victim = collect([str(REPO / SWEEP)]).entries[-1].id.replace(str(REPO) + "/", "")
    env = {**os.environ, TEST_FAULT: f"hang:{victim}"}
    command = [sys.executable, "-m", "conformance", "run", SWEEP, "--ep", "cpu", "-j", "2", "--pack", "1"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    run = subprocess.Popen([*command, "--case-timeout", "0", "--report-dir", str(tmp_path)], cwd=REPO, env=env, **quiet)
    others = len(collect([str(REPO / SWEEP)]).entries) - 1
    deadline = time.monotonic() + 120
    while _lines(tmp_path / "results.jsonl") < 1 + others and run.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)  # until every case but the hanging one is done: the hang is certainly under way
    workers = _children(run.pid)
    assert _lines(tmp_path / "results.jsonl") == 1 + others
    assert run.poll() is None and workers
    run.kill()
    run.wait()
    deadline = time.monotonic() + 30
    while not all(_gone(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert [pid for pid in workers if not _gone(pid)] == []

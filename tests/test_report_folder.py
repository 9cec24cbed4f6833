"""One run at a time in a report folder, and no report that outlives its run (cli/run.py, survive/lock.py): a second
run into a folder a run is writing is refused with one line while the first goes on unaffected; a run killed midway
leaves no results.json or report of the run before it; --resume refuses a results.jsonl whose line stands at another
case's place; a disk that fills while results stream stops the run with one line, keeping what was written. Every
run is ``python -m conformance run`` in a child process, killed or stopped with real signals."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.suite import collect
from conformance.survive.faults import TEST_FAULT
from conformance.survive.lock import LOCK_NAME, FolderBusy, FolderLock

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = "cases/top_k1/spec_examples.yaml"
SWEEP = "cases/slice1/sweep.yaml"
REPORTS = ("results.json", "summary.md", "junit.xml", "report.html")
posix = pytest.mark.skipif(sys.platform == "win32", reason="signals, process groups and resource limits of POSIX")


def _case_ids(name: str) -> list[str]:
    return [entry.id.replace(str(REPO) + "/", "") for entry in collect([str(REPO / name)]).entries]


def _command(name: str, folder: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "conformance", "run", name, "--ep", "cpu", "--report-dir", str(folder), *more]


def _dmlconf(name: str, folder: Path, *more: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != TEST_FAULT}
    return subprocess.run(_command(name, folder, *more), cwd=REPO, env=env, capture_output=True, text=True, timeout=300)


def _hanging(name: str, folder: Path, victim: str, *more: str) -> subprocess.Popen[bytes]:
    """A run whose worker hangs on ``victim`` (faults.provoke), in its own process group."""
    return subprocess.Popen(
        _command(name, folder, "--pack", "1", *more),
        cwd=REPO,
        env={**os.environ, TEST_FAULT: f"hang:{victim}"},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _wait_for_lines(stream: Path, count: int, run: subprocess.Popen[bytes]) -> None:
    """Until results.jsonl holds ``count`` whole lines (the header and results); the run must still be going."""
    deadline = time.monotonic() + 120
    while (stream.read_bytes().count(b"\n") if stream.exists() else 0) < count:
        assert run.poll() is None and time.monotonic() < deadline, "the run ended, or never wrote its results"
        time.sleep(0.05)


def _results(folder: Path) -> list[dict[str, Any]]:
    return list(json.loads((folder / "results.json").read_text(encoding="utf-8"))["results"])


@posix
def test_a_second_run_into_a_folder_being_written_is_refused_and_the_first_goes_on(tmp_path: Path) -> None:
    cases = _case_ids(SWEEP)
    victim = cases[-1]  # the first run hangs on its last case: it is surely still going when the second starts
    first = _hanging(SWEEP, tmp_path, victim, "--case-timeout", "5")
    try:
        _wait_for_lines(tmp_path / "results.jsonl", 1 + 20, first)
        os.kill(first.pid, signal.SIGSTOP)  # its timeout cannot fire while the second run tries
        second = _dmlconf(SWEEP, tmp_path)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert second.returncode == 2, second.stdout + second.stderr
    assert second.stderr.splitlines() == [
        f"dmlconf: --report-dir {tmp_path}: another dmlconf command (pid {first.pid}) is writing its results there: "
        "wait for it to end, or give another folder"
    ]
    assert first.wait(timeout=120) == 1  # its hanging case timed out; nothing else changed
    results = _results(tmp_path)
    assert [r["case"] for r in results] == cases
    assert [r["case"] for r in results if r["status"] != "PASS"] == [victim]
    lines = (tmp_path / "results.jsonl").read_bytes().split(b"\n")
    assert lines[-1] == b""  # whole lines only: the header, then each pair once
    assert sorted(json.loads(line)["pair"] for line in lines[1:-1]) == list(range(len(cases)))


@posix
def test_a_killed_run_leaves_no_report_of_the_run_before_it(tmp_path: Path) -> None:
    assert _dmlconf(EXAMPLES, tmp_path).returncode == 0
    assert all((tmp_path / name).exists() for name in REPORTS)  # the previous run's PASSED reports
    (tmp_path / "results.jsonl").unlink()  # so that the lines waited for below are the next run's
    cases = _case_ids(EXAMPLES)
    run = _hanging(EXAMPLES, tmp_path, cases[-1], "--case-timeout", "0")
    _wait_for_lines(tmp_path / "results.jsonl", len(cases), run)  # the header and all but the last case
    os.killpg(run.pid, signal.SIGKILL)  # a CI job's timeout: the run and its workers
    run.wait()
    assert [name for name in REPORTS if (tmp_path / name).exists()] == []
    report = subprocess.run(
        [sys.executable, "-m", "conformance", "report", str(tmp_path / "results.json")],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert report.returncode == 2 and "PASSED" not in report.stdout + report.stderr

    resumed = _dmlconf(EXAMPLES, tmp_path, "--resume")  # the killed run's lock went with it
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming: {len(cases) - 1} result(s) kept" in resumed.stdout
    assert [r["case"] for r in _results(tmp_path)] == cases
    assert all((tmp_path / name).exists() for name in REPORTS)


def test_resume_refuses_a_line_at_another_case_s_place(tmp_path: Path) -> None:
    assert _dmlconf(EXAMPLES, tmp_path).returncode == 0
    stream = tmp_path / "results.jsonl"
    header, *lines = stream.read_text(encoding="utf-8").splitlines()
    records = [json.loads(line) for line in lines]
    records[0]["pair"], records[1]["pair"] = 1, 0  # two results each at the other's place
    stream.write_text("\n".join([header, *(json.dumps(r) for r in records)]) + "\n", encoding="utf-8")
    before = stream.read_bytes()
    resumed = _dmlconf(EXAMPLES, tmp_path, "--resume")
    assert resumed.returncode == 2, resumed.stdout + resumed.stderr
    first, second = _case_ids(EXAMPLES)[:2]
    assert resumed.stderr.splitlines() == [
        f"dmlconf: --resume: {stream}:2: the result of {first} [cpu] stands at pair 1, which is {second} [cpu] in "
        "this run; run without --resume to start again"
    ]
    assert stream.read_bytes() == before and (tmp_path / "results.json").exists()  # a refusal changes nothing


def test_the_lock_is_one_holder_s_until_it_is_released(tmp_path: Path) -> None:
    held = FolderLock(str(tmp_path))
    with pytest.raises(FolderBusy, match=rf"another dmlconf command \(pid {os.getpid()}\) is writing"):
        FolderLock(str(tmp_path))
    held.release()
    FolderLock(str(tmp_path)).release()
    assert (tmp_path / LOCK_NAME).read_text(encoding="ascii") == f"{os.getpid()}\n"


def test_on_windows_the_lock_is_unlocked_before_the_file_is_closed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows may drop a byte lock some time after its file is closed, and a ``--resume`` started at once would be
    refused: release unlocks the byte it locked (msvcrt locks from the file's position) while the file is open."""
    calls: list[tuple[int, int, int]] = []
    fds: list[int] = []

    def locking(fd: int, mode: int, nbytes: int) -> None:
        os.fstat(fd)  # the file is still open: an OSError here otherwise
        calls.append((mode, os.lseek(fd, 0, os.SEEK_CUR), nbytes))
        fds.append(fd)

    monkeypatch.setitem(sys.modules, "msvcrt", types.SimpleNamespace(LK_NBLCK=2, LK_UNLCK=0, locking=locking))
    monkeypatch.setattr(sys, "platform", "win32")
    lock = FolderLock(str(tmp_path))
    lock.release()
    assert calls == [(2, 0, 1), (0, 0, 1)]  # the first byte locked, then that byte unlocked
    with pytest.raises(OSError):  # then closed
        os.fstat(fds[-1])


@posix
def test_a_killed_holder_s_lock_is_free(tmp_path: Path) -> None:
    # The operating system drops the lock with its process: kill -9 leaves no lock behind for --resume to trip on.
    script = (
        "import sys, time\n"
        "from conformance.survive.lock import FolderLock\n"
        f"lock = FolderLock({str(tmp_path)!r})\n"
        "print('held', flush=True)\n"
        "time.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", script], cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(FolderBusy, match=rf"\(pid {holder.pid}\)"):
            FolderLock(str(tmp_path))
    finally:
        holder.kill()
        holder.wait()
    FolderLock(str(tmp_path)).release()


@dataclass(frozen=True)
class SmallDisk:
    """A report folder whose writes fail once some KiB are written: ``limit`` runs in the run's process before it
    starts, ``make_room`` gives it room again, ``words`` are the error's (strerror)."""

    folder: Path
    limit: Callable[[], None]
    make_room: Callable[[], None]
    words: str


def _file_size_limit() -> None:
    import resource  # POSIX only

    resource.setrlimit(resource.RLIMIT_FSIZE, (16 * 1024, 16 * 1024))


@pytest.fixture(params=["tmpfs", "file_size_limit"])
def small_disk(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SmallDisk]:
    """A real failing write: a 32 KiB tmpfs (a full disk, ENOSPC; where this process may mount one: root in CI), or
    RLIMIT_FSIZE on the run's process (EFBIG, anywhere on POSIX: each file stops at 16 KiB)."""
    folder = tmp_path / "reports"
    folder.mkdir()
    if request.param == "file_size_limit":
        yield SmallDisk(folder, _file_size_limit, lambda: None, os.strerror(errno.EFBIG))  # the resume runs unlimited
        return
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=32k", "tmpfs", str(folder)], capture_output=True)
    if mount.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mount.stderr.decode(errors='replace').strip()}")
    try:
        room = ["mount", "-o", "remount,size=4m", str(folder)]
        yield SmallDisk(folder, lambda: None, lambda: subprocess.run(room, check=True), os.strerror(errno.ENOSPC))
    finally:
        subprocess.run(["umount", str(folder)], check=False)


@posix
def test_a_disk_full_while_streaming_stops_the_run_with_one_line_and_keeps_what_was_written(
    small_disk: SmallDisk,
) -> None:
    folder, words = small_disk.folder, small_disk.words
    command = _command(SWEEP, folder, "--pack", "1")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, preexec_fn=small_disk.limit)
    stream = folder / "results.jsonl"
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith(("ERROR", "dmlconf:"))]
    assert errors == [
        f"ERROR cannot write {stream}: {words}: the run stops here (the results before are kept there: --resume "
        f"finishes the run once {folder} has room)",
        f"dmlconf: cannot write {folder / 'results.json'}: {words}: exit code 1",
    ]
    assert done.stdout.splitlines()[-1].startswith("INCOMPLETE/FAILED — interrupted: ")  # the verdict line
    kept = stream.read_bytes().count(b"\n") - 1  # whole lines: the header, then the results written before
    assert 0 < kept < len(_case_ids(SWEEP))

    small_disk.make_room()
    resumed = _dmlconf(SWEEP, folder, "--pack", "1", "--resume")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"resuming: {kept} result(s) kept" in resumed.stdout
    assert [r["case"] for r in _results(folder)] == _case_ids(SWEEP)

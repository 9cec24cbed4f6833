"""A gate run on a checkout it does not trust (issue 35): nothing the harness writes follows a link or a non-regular
file it did not make (results.open_own_file, own_folder, artifacts.py's own folders); the report folder's lock holds
when its file is removed, and ``report`` and ``merge`` respect it; a path that is not UTF-8 is recorded escaped; an
stdout that fails costs neither the reports nor the exit code. Every attack aims at decoy files made here, in
temporary folders, and every run is ``python -m conformance`` in a child process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conformance.results import NotOurFile, open_own_file, own_folder, write_text_atomic
from conformance.run.artifacts import folder_name
from conformance.survive.faults import TEST_FAULT
from conformance.survive.lock import LOCK_NAME, FolderBusy, FolderLock

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = "cases/top_k1/spec_examples.yaml"
SWEEP = "cases/slice1/sweep.yaml"
posix = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links, FIFOs and flock are POSIX's here")
DECOY = b"a decoy the harness must leave as it is\n"


def _dmlconf(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    environment = {k: v for k, v in os.environ.items() if k != TEST_FAULT} if env is None else env
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=cwd, env=environment, capture_output=True, timeout=300
    )


def _run(folder: Path | str, *more: str, cwd: Path = REPO) -> subprocess.CompletedProcess[bytes]:
    return _dmlconf("run", str(REPO / EXAMPLES), "--ep", "cpu", "-j", "0", "--report-dir", str(folder), *more, cwd=cwd)


def _decoy(tmp_path: Path) -> Path:
    decoy = tmp_path / "decoy.txt"
    decoy.write_bytes(DECOY)
    return decoy


@posix
@pytest.mark.parametrize("name", ["results.jsonl", LOCK_NAME])
def test_a_link_planted_in_the_report_folder_is_refused_and_its_target_untouched(tmp_path: Path, name: str) -> None:
    decoy = _decoy(tmp_path)
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / name).symlink_to(decoy)
    done = _run(reports)
    assert done.returncode == 2, done.stderr
    assert done.stderr.decode().splitlines() == [
        f"dmlconf: --report-dir: {reports / name}: a symbolic link to {decoy}, not a regular file: dmlconf does not "
        "write through it; remove it"
    ]
    assert decoy.read_bytes() == DECOY
    assert (reports / name).is_symlink()  # refused, not replaced: the user sees what was planted


@posix
def test_a_dangling_link_is_refused_too_and_creates_nothing(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    target = tmp_path / "would-be-created"
    (reports / "results.jsonl").symlink_to(target)
    assert _run(reports).returncode == 2
    assert not target.exists()


@posix
@pytest.mark.parametrize("name", ["results.jsonl", LOCK_NAME])
def test_a_fifo_in_the_report_folder_is_refused_at_once(tmp_path: Path, name: str) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    os.mkfifo(reports / name)
    done = _run(reports)  # a FIFO opened for writing would wait for a reader for ever (the timeout would fail it)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"dmlconf: --report-dir: {reports / name}: a FIFO, not a regular file: dmlconf does not write through it; "
        "remove it"
    ]


@posix
def test_a_report_folder_that_is_a_link_in_the_checkout_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "reports").symlink_to(elsewhere)  # what a pull request can commit in place of the default folder
    done = _run("reports", cwd=checkout)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"dmlconf: --report-dir: reports: a symbolic link to {elsewhere}, not a folder: dmlconf does not write through "
        "it; remove it"
    ]
    assert list(elsewhere.iterdir()) == []


@posix
def test_an_artifacts_folder_name_taken_by_a_link_is_refused_before_anything_runs(tmp_path: Path) -> None:
    decoys = tmp_path / "decoys"
    decoys.mkdir()
    artifacts = tmp_path / "artifacts"
    artifacts.mkdir()
    planted = artifacts / folder_name(f"{EXAMPLES}::example-1", "cpu")  # the name a failure of this case would get
    planted.symlink_to(decoys)
    done = _run(tmp_path / "reports", "--artifacts", str(artifacts))
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"dmlconf: --artifacts: {planted}: a symbolic link to {decoys}, not a folder: dmlconf does not write through "
        "it; remove it"
    ]
    assert list(decoys.iterdir()) == [] and not (tmp_path / "reports" / "results.jsonl").exists()


@posix
def test_an_artifacts_folder_is_the_harness_s_own_even_where_a_link_came_later(tmp_path: Path) -> None:
    """The check before the run is not all: a failure's files are written into a folder the harness made, then put
    in place by renaming it; a link that took the name meanwhile is refused there, its target untouched."""
    from conformance.model import Status
    from conformance.results import Result
    from conformance.run.artifacts import save_artifacts

    result = Result("a.yaml::x", "SLICE1", "cpu", Status.FAIL)
    decoys = tmp_path / "decoys"
    decoys.mkdir()
    name = tmp_path / folder_name(result.case, result.ep)
    os.symlink(decoys, name)
    with pytest.raises(NotOurFile, match="a symbolic link to"):
        save_artifacts(str(tmp_path), result, b"model", {}, {}, {}, "CPUExecutionProvider")
    assert list(decoys.iterdir()) == []
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["decoys", name.name])  # its staging folder removed


@posix
def test_open_own_file_and_write_text_atomic_never_write_through_a_link(tmp_path: Path) -> None:
    decoy = _decoy(tmp_path)
    link = tmp_path / "out.json"
    link.symlink_to(decoy)
    with pytest.raises(NotOurFile):
        open_own_file(str(link), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    write_text_atomic(str(link), "new", in_place_device=False)  # the link itself replaced
    assert decoy.read_bytes() == DECOY and link.read_text(encoding="utf-8") == "new" and not link.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["decoy.txt", "out.json"]  # no temporary left
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotOurFile, match="a FIFO, not a regular file"):
        open_own_file(str(tmp_path / "fifo"), os.O_WRONLY)
    (tmp_path / "folder").symlink_to(tmp_path)
    with pytest.raises(NotOurFile, match=r"a symbolic link to .*, not a folder"):
        own_folder(str(tmp_path / "folder"))


@posix
def test_an_absolute_report_folder_through_a_link_in_the_checkout_is_refused(tmp_path: Path) -> None:
    """A gate that names its folders absolutely (``--report-dir "$PWD/out/reports"``) is refused where a folder of
    the checkout on the way is a link, as a relative path is; the folders above the checkout are the machine's."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    (checkout / "out").symlink_to(elsewhere)
    done = _run(checkout / "out" / "reports", cwd=checkout)
    assert done.returncode == 2
    assert done.stderr.decode().splitlines() == [
        f"dmlconf: --report-dir: {checkout / 'out'}: a symbolic link to {elsewhere}, not a folder: dmlconf does not "
        "write through it; remove it"
    ]
    assert list(elsewhere.iterdir()) == []
    linked = tmp_path / "linked-checkout"  # a working folder reached through a link is no planted link
    linked.symlink_to(checkout)
    assert _run(linked / "reports", cwd=linked).returncode == 0


@posix
def test_coverage_s_default_output_is_not_written_through_a_planted_link(tmp_path: Path) -> None:
    decoy = _decoy(tmp_path)
    checkout = tmp_path / "checkout"
    (checkout / "reports").mkdir(parents=True)
    (checkout / "reports" / "coverage.md").symlink_to(decoy)
    done = _dmlconf("coverage", str(REPO / EXAMPLES), cwd=checkout)
    assert b"Traceback" not in done.stderr
    assert decoy.read_bytes() == DECOY
    assert not (checkout / "reports" / "coverage.md").is_symlink()  # replaced by the map, the link gone
    (checkout / "reports").rename(checkout / "old")
    (checkout / "reports").symlink_to(tmp_path)  # the folder itself a link: refused
    done = _dmlconf("coverage", str(REPO / EXAMPLES), cwd=checkout)
    assert done.returncode == 2 and b"reports: a symbolic link to" in done.stderr
    assert not (tmp_path / "coverage.md").exists()


@posix
def test_a_link_the_user_names_outside_the_checkout_is_written_where_it_leads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--markdown /dev/stdout`` with stdout on a file: /dev/stdout is a link; the file it leads to is written,
    the link kept (renaming a file over it would replace the machine's /dev/stdout). Shown on a decoy link."""
    decoy = _decoy(tmp_path)
    outside = tmp_path / "stdout"
    outside.symlink_to(decoy)
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    monkeypatch.chdir(checkout)
    write_text_atomic(str(outside), "written")
    assert outside.is_symlink() and decoy.read_text(encoding="utf-8") == "written"
    (checkout / "out.md").symlink_to(decoy)
    write_text_atomic("out.md", "replaced")  # in the checkout: the link is replaced, never followed
    assert decoy.read_text(encoding="utf-8") == "written" and not (checkout / "out.md").is_symlink()


@posix
def test_a_refusal_names_no_pid_of_a_process_that_is_gone(tmp_path: Path) -> None:
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    (tmp_path / LOCK_NAME).write_text(gone.stdout, encoding="ascii")  # what a finished run left
    held = FolderLock(str(tmp_path), names_holder=False)  # report and merge write no pid
    try:
        with pytest.raises(FolderBusy) as refused:
            FolderLock(str(tmp_path))
    finally:
        held.release()
    assert str(refused.value).startswith(f"{tmp_path}: another dmlconf command is writing")


@posix
def test_the_lock_holds_when_its_file_is_removed_and_report_and_merge_respect_it(tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    done = _run(tmp_path / "earlier")  # a results.json for report and merge to render
    assert done.returncode == 0, done.stderr
    env = {**os.environ, TEST_FAULT: f"hang:{SWEEP}::" + _first_id(SWEEP)}
    first = subprocess.Popen(
        [sys.executable, "-m", "conformance", "run", SWEEP, "--ep", "cpu", "--report-dir", str(reports)],
        cwd=REPO,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not (reports / "results.jsonl").exists():
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)
        (reports / LOCK_NAME).unlink()  # a cleanup step while the run goes on
        second = _dmlconf("run", SWEEP, "--ep", "cpu", "--report-dir", str(reports))
        report = _dmlconf("report", str(tmp_path / "earlier" / "results.json"), "--out-dir", str(reports))
        merge = _dmlconf("merge", str(tmp_path / "earlier" / "results.json"), "--report-dir", str(reports))
        assert first.poll() is None  # still running, its hanging case not yet timed out
    finally:
        os.killpg(first.pid, signal.SIGKILL)
        first.wait()
    for refused, option in ((second, "--report-dir"), (report, "--out-dir"), (merge, "--report-dir")):
        assert refused.returncode == 2
        assert refused.stderr.decode().splitlines() == [
            f"dmlconf: {option} {reports}: another dmlconf command is writing its results there: wait for it to end, "
            "or give another folder"
        ]
    assert not (reports / "results.json").exists() and not (reports / "report.html").exists()


def _first_id(name: str) -> str:
    listed = _dmlconf("list", name)
    return listed.stdout.decode().splitlines()[0].split("::", 1)[1]


@posix
def test_a_report_folder_replaced_during_the_run_is_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "reports"
    folder.mkdir()
    lock = FolderLock(str(folder))
    try:
        assert lock.still_ours()
        folder.rename(tmp_path / "moved")
        folder.mkdir()
        assert not lock.still_ours()
    finally:
        lock.release()


@posix
def test_paths_that_are_not_utf8_are_recorded_escaped(tmp_path: Path) -> None:
    root = os.fsencode(tmp_path)
    work = root + b"/w\xe9rk"  # Latin-1, as a folder made on an older system names itself
    os.mkdir(work)
    done = subprocess.run(
        [
            sys.executable,
            b"-m",
            b"conformance",
            b"run",
            os.fsencode(REPO / EXAMPLES),
            b"--ep",
            b"cpu",
            b"-j",
            b"0",
            b"--report-dir",
            b"r\xe9ports",
            b"--artifacts",
            b"\xe0rtifacts",
        ],
        cwd=work,
        env={**{k: v for k, v in os.environ.items() if k != TEST_FAULT}, "PYTHONPATH": str(REPO)},
        capture_output=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert b"Traceback" not in done.stderr
    document = json.loads(Path(os.fsdecode(work + b"/r\xe9ports/results.json")).read_bytes())
    env = document["environment"]
    assert env["cwd"] == os.fsdecode(root) + "/w\\xe9rk"
    assert "r\\xe9ports" in env["command"] and env["artifacts"].endswith("/w\\xe9rk/\\xe0rtifacts")
    assert all(os.path.exists(work + b"/r\xe9ports/" + name) for name in (b"report.html", b"junit.xml", b"summary.md"))
    report = _dmlconf("report", os.fsdecode(work + b"/r\xe9ports/results.json"))
    assert report.returncode == 0, report.stderr


@posix
def test_an_stdout_that_fails_costs_neither_the_reports_nor_the_exit_code(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "conformance", "run", EXAMPLES, "--ep", "cpu", "--report-dir", str(tmp_path)],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    assert done.returncode == 0
    assert done.stderr.decode().splitlines() == [
        "dmlconf: stdout: No space left on device: nothing more is shown there; the exit code and files stand"
    ]
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))["results"]
    assert [r["status"] for r in results] == ["PASS"] * 4
    assert (tmp_path / "junit.xml").exists()

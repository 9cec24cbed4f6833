"""A run with workers reads its case files while the workers run the cases read so far (cli/run_stream.py): the
workers start with the first cases, and the run is the one that reading every file first gives (the same results,
the same refusal of a bad file, nothing written then; --keep-going and --shard select the same cases). Expected
values come from a run that reads first (``-j 0``, or ``--quick``'s path) and from ``dmlconf list``."""

from __future__ import annotations

import io
import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from conformance.cases.parse import Entry
from conformance.cases.suite import collect
from conformance.cli import run as run_module
from conformance.cli.main import main
from conformance.cli.progress import Progress
from conformance.ep.providers import parse_ep
from conformance.results import Result
from conformance.run.options import RunOptions
from conformance.survive.faults import RunLog
from conformance.survive.pool import run_arriving, run_pairs
from conformance.survive.supervisor import Supervisor

REPO = Path(__file__).resolve().parents[1]
TOPK = REPO / "cases" / "top_k1" / "spec_examples.yaml"
SLICE = REPO / "cases" / "slice1" / "spec_examples.yaml"
MVN = REPO / "cases" / "mean_variance_normalization1" / "lowerings.yaml"
BAD = """\
operator: TOP_K1
cases:
  - id: bad-axis
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 4
    K: 2
"""


class _Slow:
    """The first entries at once; the rest only once a result of the first has been recorded (a run that waited
    for every entry before it started would wait here until the deadline, and say so in ``late``)."""

    def __init__(self, first: Sequence[Entry], rest: Sequence[Entry], recorded: dict[int, Result]) -> None:
        self.batches = [list(first), list(rest)]
        self.recorded = recorded
        self.deadline = time.monotonic() + 120.0
        self.late = False

    def take(self) -> list[Entry] | None:
        if not self.batches:
            return None
        if len(self.batches) == 2 or self.recorded or time.monotonic() > self.deadline:
            self.late = self.late or (len(self.batches) == 1 and not self.recorded)
            return self.batches.pop(0)
        return []


def _untimed(results: Sequence[Result]) -> list[tuple[str, str, str, dict[str, str]]]:
    return [(r.case, r.ep, r.status.value, dict(r.outputs_sha256)) for r in results]


def test_the_workers_start_with_the_first_cases_and_give_what_a_whole_run_gives() -> None:
    entries = list(collect([str(TOPK), str(SLICE)]).entries)
    first, rest = entries[:2], entries[2:]
    eps = [parse_ep("cpu")]
    recorded: dict[int, Result] = {}
    slow = _Slow(first, rest, recorded)
    with Supervisor(2, None) as supervisor:
        ran = run_arriving(
            slow, eps, RunOptions(), supervisor, lambda: None, lambda pair, r: recorded.setdefault(pair, r), RunLog()
        )
        whole = run_pairs(entries, eps, RunOptions(), 2, lambda: None, supervisor)
    assert not slow.late, "the first cases did not run before the rest came"
    assert [r.case for r in ran.results] == [e.id for e in entries]  # every entry came, in order
    assert sorted(recorded) == list(range(len(entries)))
    assert _untimed(ran.results) == _untimed(whole.results)
    assert all(r.status.value == "PASS" for r in ran.results)


def _results(folder: Path) -> list[dict[str, Any]]:
    document = json.loads((folder / "results.json").read_text(encoding="utf-8"))
    return [{k: v for k, v in r.items() if k != "seconds"} for r in document["results"]]


@pytest.fixture
def streamed_runs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many runs took the streamed path (run_arriving), counted."""
    calls: list[int] = []
    real = run_module.run_arriving

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "run_arriving", counted)
    return calls


def _files(folder: Path, *sources: Path) -> Path:
    cases = folder / "cases"
    cases.mkdir()
    for number, source in enumerate(sources):
        shutil.copy(source, cases / f"{number}-{source.parent.name}.yaml")
    return cases


def test_a_streamed_run_gives_the_results_of_a_run_that_reads_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed_runs: list[int]
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = _files(tmp_path, TOPK, SLICE, MVN)
    assert main(["run", str(cases), "--ep", "cpu", "-j", "0", "--report-dir", "first", "--quiet"]) == 0
    assert not streamed_runs
    assert main(["run", str(cases), "--ep", "cpu", "-j", "2", "--report-dir", "streamed", "--quiet"]) == 0
    assert streamed_runs == [1]
    assert _results(tmp_path / "streamed") == _results(tmp_path / "first")
    lines = (tmp_path / "streamed" / "results.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + len(_results(tmp_path / "first"))  # the header, then every result


def test_a_bad_file_read_after_cases_started_refuses_the_run_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], streamed_runs: list[int]
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = _files(tmp_path, TOPK, SLICE)
    (cases / "9-bad.yaml").write_text(BAD, encoding="utf-8")
    assert main(["run", str(cases), "--ep", "cpu", "-j", "0", "--report-dir", "first"]) == 2
    first = capsys.readouterr()
    assert main(["run", str(cases), "--ep", "cpu", "-j", "2", "--report-dir", "streamed"]) == 2
    streamed = capsys.readouterr()
    assert streamed_runs == [1]
    assert (streamed.out, streamed.err) == (first.out, first.err) == ("", streamed.err)
    assert streamed.err.splitlines()[-1] == "nothing was run: fix the problems above"
    assert "9-bad.yaml:" in streamed.err
    assert not (tmp_path / "streamed").exists() and not (tmp_path / "first").exists()


def test_keep_going_and_a_shard_select_what_a_run_that_reads_first_selects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], streamed_runs: list[int]
) -> None:
    monkeypatch.chdir(tmp_path)
    cases = _files(tmp_path, TOPK, SLICE, MVN)
    (cases / "1b-bad.yaml").write_text(BAD, encoding="utf-8")  # between two good files
    for shard in ("1/2", "2/2"):
        assert main(["list", str(cases), "--keep-going", "--shard", shard]) == 2
        listed = capsys.readouterr().out.split()
        report = tmp_path / f"r{shard[0]}"
        run = ["run", str(cases), "--ep", "cpu", "-j", "2", "--keep-going", "--shard", shard]
        assert main([*run, "--report-dir", str(report)]) == 2
        capsys.readouterr()
        assert [r["case"] for r in _results(report)] == listed
        assert listed  # each shard holds some of the cases
    assert streamed_runs == [1, 1]


def test_the_progress_line_counts_while_the_total_is_not_known() -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    now = [0.0]
    progress = Progress(None, stream, lambda: now[0])
    now[0] = 5.0
    progress.advance()
    assert stream.getvalue().endswith("] 1 done, 5s; reading the case files")
    progress.known(4)
    progress.advance()
    assert stream.getvalue().endswith("] 2/4 (50%) 5s, ETA 0s")
    log = io.StringIO()
    plain = Progress(None, log, lambda: 0.0)
    for _ in range(150):
        plain.advance()
    assert log.getvalue() == ""  # no tenth of an unknown total
    plain.known(200)
    for _ in range(50):
        plain.advance()
    assert log.getvalue().splitlines()[0].startswith("[") and "160/200" in log.getvalue().splitlines()[0]


def test_files_read_by_several_processes_give_what_one_reader_gives(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, streamed_runs: list[int]
) -> None:
    """Where the cores the workers leave allow, a process pool reads the files after the first (a file each at a
    time) while the first is read here, and gives them in order: the run is the one a run that reads first gives,
    a bad file among them included."""
    from concurrent.futures import ProcessPoolExecutor

    from conformance.cli import run_stream

    pools: list[int] = []

    class Counted(ProcessPoolExecutor):
        def __init__(self, workers: int, **kwargs: Any) -> None:
            pools.append(workers)
            super().__init__(workers, **kwargs)

    monkeypatch.chdir(tmp_path)
    cases = _files(tmp_path, TOPK, SLICE, MVN, TOPK)
    (cases / "2b-bad.yaml").write_text(BAD, encoding="utf-8")
    run = ["run", str(cases), "--ep", "cpu", "--keep-going", "--quiet"]
    assert main([*run, "-j", "0", "--report-dir", "first"]) == 2
    monkeypatch.setattr(run_stream.os, "cpu_count", lambda: 16)
    monkeypatch.setattr(run_stream, "ProcessPoolExecutor", Counted)
    assert main([*run, "-j", "2", "--report-dir", "pooled"]) == 2
    assert pools == [4] and streamed_runs == [1]  # five files, the first read here, and 16 cores leave 13
    assert _results(tmp_path / "pooled") == _results(tmp_path / "first")


def test_the_first_file_is_read_here_and_the_rest_by_the_pool_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first job runs in this thread, the rest in the pool; what the pool's jobs give comes back in several
    pickles (PACKED_ENTRIES each) and is what they gave, in the jobs' order."""
    import threading
    from concurrent.futures import ThreadPoolExecutor

    from conformance.cli import run_stream

    monkeypatch.setattr(run_stream, "PACKED_ENTRIES", 2)
    sent: list[int] = []
    real_unpacked = run_stream.unpacked

    def counted(packed: Any) -> Any:
        sent.append(len(packed[0]))
        return real_unpacked(packed)

    monkeypatch.setattr(run_stream, "unpacked", counted)

    def where(job: int) -> Any:
        time.sleep(0.01 * (5 - job))  # the later jobs end first: the order given is still the jobs'
        return [(job, threading.get_ident() == here, n) for n in range(job + 1)], [f"problem {job}"]

    here = threading.get_ident()
    with ThreadPoolExecutor(4) as pool:
        got = list(run_stream.first_here(pool, where, range(5)))
        assert list(run_stream.first_here(pool, where, [])) == []
    assert got == [([(0, True, 0)], ["problem 0"])] + [
        ([(job, False, n) for n in range(job + 1)], [f"problem {job}"]) for job in range(1, 5)
    ]
    assert sent == [1, 2, 2, 3]  # 2, 3, 4 and 5 entries, two to a pickle


def test_every_execution_path_s_limits_reach_a_reading_process() -> None:
    """A reading process's job is pickled, the limits of every path (DirectML's runner's too) with it; what it reads
    is what this process reads."""
    from concurrent.futures import ProcessPoolExecutor

    from conformance.cases.limits import FileLimits
    from conformance.cases.suite import find_case_files, read_files
    from conformance.cli.run_stream import sendable
    from conformance.ep.memory import PATHS

    limits = FileLimits(paths=PATHS)
    found = find_case_files([str(TOPK), str(SLICE)])
    here = list(read_files(found.files, limits=limits))
    with ProcessPoolExecutor(2) as pool:
        there = list(read_files(found.files, limits=sendable(limits), mapper=pool.map))
    assert [(r.path, [e.id for e in r.entries], r.problems) for r in there] == [
        (r.path, [e.id for e in r.entries], r.problems) for r in here
    ]
    assert sum(len(r.entries) for r in here) == 6


def test_ctrl_c_while_the_files_are_read_keeps_what_finished_and_resume_finishes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A Ctrl-C that comes while later files are still being read ends the run as any Ctrl-C does: the files are
    read to the end (what finished is recorded against the whole plan), what finished is written, and --resume runs
    the rest, to what a run that reads first gives."""
    import _thread
    import threading

    from conformance.cli import run_stream

    monkeypatch.chdir(tmp_path)
    cases = _files(tmp_path, TOPK, SLICE, MVN)
    assert main(["run", str(cases), "--ep", "cpu", "-j", "0", "--report-dir", "first", "--quiet"]) == 0
    recorded = threading.Event()
    real_record, real_read = run_stream.Held.record, run_stream.read_files

    def record(self: Any, pair: int, result: Result) -> None:
        recorded.set()
        real_record(self, pair, result)

    def read_files(*args: Any, **kwargs: Any) -> Any:
        reads = real_read(*args, **kwargs)
        yield next(reads)  # the first file: its cases start
        assert recorded.wait(120), "no result came while the later files waited"
        _thread.interrupt_main()  # Ctrl-C, while the later files are still to be read
        yield from reads

    monkeypatch.setattr(run_stream.Held, "record", record)
    monkeypatch.setattr(run_stream, "read_files", read_files)
    assert main(["run", str(cases), "--ep", "cpu", "-j", "1", "--report-dir", "cut"]) == 1
    err = capsys.readouterr().err
    assert "interrupted by SIGINT" in err
    document = json.loads((tmp_path / "cut" / "results.json").read_text(encoding="utf-8"))
    whole = _results(tmp_path / "first")
    assert document["environment"]["interrupted"] and document["environment"]["planned_results"] == len(whole)
    assert 1 <= len(document["results"]) < len(whole)
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    assert main(["run", str(cases), "--ep", "cpu", "-j", "1", "--report-dir", "cut", "--resume", "--quiet"]) == 0
    assert _results(tmp_path / "cut") == whole

"""Progress: a redrawn bar with an ETA on a terminal, plain lines at each tenth elsewhere."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from conformance.cli.main import main
from conformance.cli.progress import Progress

REPO = Path(__file__).resolve().parent.parent


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_one_redrawn_line_with_an_eta() -> None:
    now = [100.0]
    stream = _Terminal()
    progress = Progress(5, stream, lambda: now[0])
    now[0] = 160.0  # the first of 5 after a minute of starting up: no rate yet
    progress.advance()
    assert stream.getvalue() == "\r[" + "#" * 6 + "." * 24 + "] 1/5 (20%) 1m00s, ETA --"
    now[0] = 170.0
    progress.advance()  # 10 s a result since the first (the start left out): 3 to go, 30 s
    assert stream.getvalue().endswith("] 2/5 (40%) 1m10s, ETA 30s")
    now[0] = 190.0
    progress.advance()  # 30 s for the 2 after the first: 15 s each, 2 to go
    assert stream.getvalue().endswith("] 3/5 (60%) 1m30s, ETA 30s")
    assert "\n" not in stream.getvalue()


def test_a_log_gets_a_plain_line_at_each_tenth() -> None:
    stream = io.StringIO()
    progress = Progress(200, stream, lambda: 0.0)
    for _ in range(200):
        progress.advance()
    lines = stream.getvalue().splitlines()
    assert [line.split("] ")[1].split(" ")[0] for line in lines] == [f"{20 * i}/200" for i in range(1, 11)]


def test_a_short_run_in_a_log_prints_nothing() -> None:
    stream = io.StringIO()
    progress = Progress(10, stream, lambda: 0.0)
    for _ in range(10):
        progress.advance()
    progress.close()
    assert stream.getvalue() == ""


def test_quiet_draws_and_prints_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for stream in (_Terminal(), io.StringIO()):
        progress = Progress(200, stream, lambda: 0.0, silent=True)
        for _ in range(200):
            progress.advance()
        progress.close()
        assert stream.getvalue() == ""
    # A run of over 100 results with --quiet: no progress line in the log, only the verdict (issue 39).
    code = main(["run", str(REPO / "cases" / "slice1" / "library.yaml"), "--ep", "cpu", "--quiet", "-j", "0",
                 "--report-dir", str(tmp_path)])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0 and "ETA" not in captured.err and "ETA" not in captured.out
    assert captured.out.strip().splitlines()[-1].startswith("PASSED")

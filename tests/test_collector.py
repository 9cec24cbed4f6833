"""A run defers Python's full collection to its end (conformance/cli/collector.py): none runs while it holds its
cases and results, young cyclic garbage is still collected, the collector is as it was after, and the command's
process freezes what is left before it ends."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from conformance.cli import collector
from conformance.cli import run as run_module
from conformance.cli.main import main

REPO = Path(__file__).resolve().parent.parent


class Node:
    """An object that can be put in a cycle and watched through a weak reference."""

    def __init__(self) -> None:
        self.other: Any = None


@pytest.fixture
def collector_restored() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)


def test_no_full_collection_runs_in_the_block_and_young_cycles_are_still_collected(
    collector_restored: None,
) -> None:
    gc.collect()
    before = gc.get_threshold()
    gc.set_threshold(before[0], before[1], 1)  # a full collection at every chance, unless deferred
    full = gc.get_stats()[2]["collections"]
    with collector.full_collection_deferred():
        kept = [Node() for _ in range(200_000)]  # long-lived, as a run's cases: they reach the oldest generation
        cycle = Node()
        cycle.other = Node()
        cycle.other.other = cycle
        watched = weakref.ref(cycle)
        del cycle
        young: list[list[int]] = [
            [] for _ in range(50_000)
        ]  # allocations enough for young collections (kept: net allocations count)
        assert watched() is None, "a young cycle was not collected"
        assert gc.get_stats()[2]["collections"] == full, "a full collection ran in the block"
    assert gc.get_threshold() == (before[0], before[1], 1)
    young.extend([] for _ in range(50_000))
    assert gc.get_stats()[2]["collections"] > full, "full collections did not come back after the block"
    assert len(kept) + len(young) == 300_000


def test_a_run_defers_the_full_collection_while_it_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, collector_restored: None
) -> None:
    seen: list[int] = []
    real = run_module._run_command

    def watched(*args: Any) -> int:
        seen.append(gc.get_threshold()[2])
        return real(*args)

    monkeypatch.setattr(run_module, "_run_command", watched)
    before = gc.get_threshold()
    case = REPO / "cases" / "top_k1" / "spec_examples.yaml"
    assert main(["run", str(case), "--ep", "cpu", "-j", "0", "--quiet", "--report-dir", str(tmp_path / "r")]) == 0
    assert seen == [collector.FULL_COLLECTION_DEFERRED]
    assert gc.get_threshold() == before


def test_a_reading_process_never_runs_a_full_collection() -> None:
    code = (
        "import gc\n"
        "from conformance.cli.run_stream import _reader_start\n"
        "_reader_start()\n"
        "kept = [[] for _ in range(300_000)]\n"
        "print(gc.get_stats()[2]['collections'], gc.get_threshold()[2])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", str(collector.FULL_COLLECTION_DEFERRED)]


def test_the_command_s_process_freezes_what_is_left_and_main_alone_does_not(tmp_path: Path) -> None:
    code = (
        "import gc, sys\n"
        "from conformance.cli.main import entry, main\n"
        "sys.argv = ['dmlconf', 'list', 'cases/top_k1/library.yaml']\n"
        "sys.stderr.write(f'frozen: {main()} {gc.get_freeze_count()}\\n')\n"
        "code = entry()\n"
        "sys.stderr.write(f'frozen: {code} {gc.get_freeze_count() > 1000}\\n')\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    told = [line for line in run.stderr.splitlines() if line.startswith("frozen: ")]
    assert told == ["frozen: 0 0", "frozen: 0 True"]

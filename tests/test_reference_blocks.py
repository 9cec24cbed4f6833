"""reference._blocks: every block worked once, the caller's np.errstate in the workers, errors re-raised."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Sequence

import numpy as np
import pytest

from reference import _blocks
from reference._blocks import run_shares


def test_every_block_once_split_between_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blocks, "cores", lambda: 3)
    seen: list[int] = []
    threads: set[int] = set()
    lock = threading.Lock()

    def task(share: Sequence[int]) -> None:
        with lock:
            seen.extend(share)
            threads.add(threading.get_ident())

    run_shares(task, list(range(10)))
    assert sorted(seen) == list(range(10))
    assert threading.get_ident() not in threads


def test_one_block_runs_in_the_caller() -> None:
    threads: list[int] = []
    run_shares(lambda share: threads.append(threading.get_ident()), [0])
    assert threads == [threading.get_ident()]


def test_errstate_and_errors_reach_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_blocks, "cores", lambda: 2)

    def task(share: Sequence[int]) -> None:
        np.divide(np.ones(2), np.zeros(2))

    with np.errstate(divide="raise"), pytest.raises(FloatingPointError):
        run_shares(task, [0, 1])
    with np.errstate(divide="ignore"), warnings.catch_warnings():
        warnings.simplefilter("error")  # a RuntimeWarning from a worker would now be raised here
        run_shares(task, [0, 1])

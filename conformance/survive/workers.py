"""The supervisor's view of its workers: a task (a window of cases on one EP), a worker process's state as its
messages left it, the tail of its stderr file, and the folder that holds those files."""

from __future__ import annotations

import ctypes
import os
import select
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from typing import Any

from conformance.cases.parse import Entry
from conformance.ep.providers import EpSpec
from conformance.survive.lock import alive
from conformance.survive.messages import Board, Phase

STDERR_TAIL_BYTES = 64 * 1024
FOLDER_PREFIX = "dmlconf-workers-"  # then the supervisor's pid: a killed one's folder is removed by the next


@dataclass
class Task:
    """Entries to run on one EP; ``pairs[i]`` is entry i's (case, EP) index in the run."""

    entries: list[Entry]
    pairs: list[int]
    ep: EpSpec
    pack: int
    attempts: int = 0  # workers that died on it with nothing in flight (before its first case)


@dataclass
class Worker:
    """One worker process as the supervisor knows it: its pipe, its stderr file, its task and what it last said."""

    process: Any  # multiprocessing's SpawnProcess
    conn: Connection
    stderr_path: str
    ready: bool = False
    described: bool = False  # it sent its describe (Supervisor.describe), which ends its start
    task: Task | None = None
    task_id: int = -1
    in_flight: list[int] = field(default_factory=list)  # places in the task
    inputs: dict[int, dict[str, str]] = field(default_factory=dict)  # their inputs' hashes, once generated
    finished: set[int] = field(default_factory=set)
    heard: float = field(default_factory=time.monotonic)
    began: float = field(default_factory=time.monotonic)  # when the case (or pack) in flight began
    phase: Phase = Phase.PREPARING  # what it does on the case in flight, as it last said
    closed: bool = False  # its end of the pipe is closed: it is exiting, and only its sentinel is waited on
    reported_lost: bool = False  # it sent a DEVICE_LOST result, after which it exits on purpose (worker.py)
    stopped: bool = False  # told to stop (Supervisor.stop): it takes no more tasks
    number: int = 0  # the how-manieth worker started: whose peak memory a report is
    # where it writes which case it prepares (messages.Board; a worker made without one has a board nobody writes)
    board: Board = field(default_factory=lambda: Board(ctypes.c_int64(0)))
    told_prepared: int = 0  # the board's count as of the state above (a message's, or the board's read)
    seen_prepared: int = 0  # the board's count when last read: a new one is news from the worker
    _poller: Any = field(default=None, repr=False)  # select.poll on its end of the pipe, once asked (has_message)

    def has_message(self) -> bool:
        """Whether its end of the pipe holds a message, or is at its end (EOF: recv says so). Asked before each
        message the supervisor reads, so not through Connection.poll, which builds and fills a selector for each
        question. Where the system has no poll (Windows' pipes are handles), Connection.poll. OSError once the pipe
        is closed."""
        if not hasattr(select, "poll"):
            return self.conn.poll()
        fd = self.conn.fileno()  # OSError once closed: its number may be another file's by now
        if self._poller is None:
            poller = select.poll()
            poller.register(fd, select.POLLIN)
            self._poller = poller
        return bool(self._poller.poll(0))


def remove_stale_folders() -> None:
    """The stderr folders of supervisors that were killed (kill -9 leaves them): those whose process is gone. POSIX
    only: on Windows ``os.kill(pid, 0)`` would terminate the process it asks about."""
    if os.name != "posix":
        return
    root = tempfile.gettempdir()
    for name in os.listdir(root):
        pid = name[len(FOLDER_PREFIX) :].partition("-")[0]
        if not name.startswith(FOLDER_PREFIX) or not pid.isdigit() or alive(int(pid)):
            continue
        shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def stderr_tail(worker: Worker) -> str:
    """The last STDERR_TAIL_BYTES of the worker's stderr file ("" where it cannot be read)."""
    try:
        with open(worker.stderr_path, "rb") as file:
            file.seek(max(0, os.path.getsize(worker.stderr_path) - STDERR_TAIL_BYTES))
            return file.read().decode("utf-8", "replace")
    except OSError:
        return ""

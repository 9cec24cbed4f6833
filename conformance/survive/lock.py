"""One run at a time in a report folder: ``dmlconf run`` holds a lock on ``.dmlconf.lock`` there while it writes
results.jsonl, results.json and the reports, so that a second run into the same folder is refused at once rather
than interleave its results with the first's.

The lock is the operating system's (``flock`` on POSIX, a byte-range lock through ``msvcrt.locking`` on Windows),
held by an open file: a run killed in any way (kill -9, the OOM killer) loses it with its process, and the next run
or ``--resume`` takes it. The file itself stays (removing it would let two runs lock two files of the same name); it
holds the holder's process id, which the refusal names.
"""

from __future__ import annotations

import os
import sys
from typing import IO

LOCK_NAME = ".dmlconf.lock"


class FolderBusy(Exception):
    """Another process holds the folder's lock: one line."""


def _try_lock(handle: IO[bytes]) -> bool:
    """Locks ``handle``'s file without waiting; False where another process holds it."""
    try:
        if sys.platform == "win32":
            import msvcrt

            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:  # BlockingIOError on POSIX, PermissionError (EACCES) on Windows: held elsewhere
        return False
    return True


def _holder(path: str) -> str:
    """ " (pid N)" as the holder wrote it; empty where it cannot be read (Windows keeps a locked byte unreadable)."""
    try:
        with open(path, "rb") as file:
            text = file.read(32).decode("ascii", "replace").strip()
    except OSError:
        return ""
    return f" (pid {text})" if text.isdigit() else ""


class FolderLock:
    """The lock on ``folder`` (which exists), taken at once or refused: ``FolderBusy`` names the folder and the
    holder. Released by ``release``, or by the operating system when the process ends."""

    def __init__(self, folder: str) -> None:
        self.path = os.path.join(folder, LOCK_NAME)
        self.handle: IO[bytes] = open(self.path, "a+b")  # noqa: SIM115 (closed in release): "a" truncates nothing
        if not _try_lock(self.handle):
            self.handle.close()
            raise FolderBusy(
                f"{folder}: another dmlconf run{_holder(self.path)} is writing its results there: wait for it to end, "
                "or give another --report-dir"
            )
        try:  # who holds it, for the refusal of the next run: only once it is ours
            self.handle.seek(0)
            self.handle.truncate()
            self.handle.write(f"{os.getpid()}\n".encode())
            self.handle.flush()
        except OSError:  # a full disk, say: the lock holds without the process id
            pass

    def release(self) -> None:
        """The lock given up: unlocked, then closed (closing alone gives it up on every platform, but Windows may
        release a byte lock some time after the close, and a ``--resume`` started at once would be refused)."""
        if not self.handle.closed:
            _unlock(self.handle)
            self.handle.close()


def _unlock(handle: IO[bytes]) -> None:
    """Windows: the byte ``_try_lock`` locked, unlocked now; on POSIX ``flock`` is given up with the close."""
    if sys.platform == "win32":
        import msvcrt

        try:
            handle.flush()
            handle.seek(0)
            msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        except OSError:  # not ours after all, or the file is gone: the close gives it up, later
            pass

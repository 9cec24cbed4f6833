"""One writer at a time in a report folder: ``dmlconf run`` holds a lock on the folder while it writes results.jsonl,
results.json and the reports (``report`` and ``merge`` while they write theirs), so that a second writer into the
same folder is refused at once rather than interleave its results with the first's.

The lock is the operating system's, held by an open descriptor: a run killed in any way (kill -9, the OOM killer)
loses it with its process, and the next run or ``--resume`` takes it.

* POSIX: ``flock`` on the folder itself. A lock on a file in it would be lost to anything that removes the file while
  the run holds it (a cleanup step, ``git clean -fdx``): the next run would make a new file of the same name, lock
  it, and write into the first run's results.jsonl. A folder cannot be unlinked while it holds files, and a folder
  removed or replaced is seen before the reports are written (``still_ours``).
* Windows: a byte-range lock (``msvcrt.locking``) on ``.dmlconf.lock``; a file Python holds open cannot be removed
  there.

``.dmlconf.lock`` holds the holder's process id, which the refusal names. It is opened without following a link and
only as a regular file (results.open_own_file): a pull request's checkout may commit a link in its place
(docs/reliability.md#planted-links).
"""

from __future__ import annotations

import contextlib
import os
import sys

from conformance.results import open_own_file

LOCK_NAME = ".dmlconf.lock"


class FolderBusy(Exception):
    """Another process holds the folder's lock: one line."""


def _holder(path: str) -> str:
    """ " (pid N)" as the holder wrote it; empty where it cannot be read (Windows keeps a locked byte unreadable; a
    link or a FIFO there is not read)."""
    try:
        with os.fdopen(open_own_file(path, os.O_RDONLY), "rb") as file:
            text = file.read(32).decode("ascii", "replace").strip()
    except OSError:
        return ""
    if not text.isdigit() or not alive(int(text)):  # report and merge name no pid: a gone run's is not theirs
        return ""
    return f" (pid {text})"


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists; True where that cannot be asked (Windows: os.kill would end it)."""
    if sys.platform == "win32":
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: it exists
        return True
    return True


def _busy(folder: str, path: str) -> FolderBusy:
    return FolderBusy(
        f"{folder}: another dmlconf command{_holder(path)} is writing its results there: wait for it to end, "
        "or give another folder"
    )


class FolderLock:
    """The lock on ``folder`` (which exists), taken at once or refused: ``FolderBusy`` names the folder and the
    holder; results.NotOurFile where ``.dmlconf.lock`` is a link or not a regular file. Released by ``release``, or
    by the operating system when the process ends. ``names_holder`` False (``report``, ``merge``): on POSIX no
    ``.dmlconf.lock`` is made, so that rendering a committed run's reports leaves no new file beside them."""

    def __init__(self, folder: str, names_holder: bool = True) -> None:
        self.folder = folder
        self.path = os.path.join(folder, LOCK_NAME)
        self._folder_fd: int | None = None
        self._file_fd: int | None = None
        if sys.platform == "win32":
            self._file_fd = open_own_file(self.path, os.O_RDWR | os.O_CREAT)
            if not _lock_byte(self._file_fd):
                self._close()
                raise _busy(folder, self.path)
        else:
            import fcntl

            self._folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                fcntl.flock(self._folder_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:  # BlockingIOError: held elsewhere
                self._close()
                raise _busy(folder, self.path) from None
            try:
                self._file_fd = open_own_file(self.path, os.O_RDWR | os.O_CREAT) if names_holder else None
            except BaseException:
                self._close()
                raise
        held = self._folder_fd if self._folder_fd is not None else self._file_fd
        assert held is not None
        self._identity = os.fstat(held)
        if self._file_fd is None:
            return
        try:  # who holds it, for the refusal of the next run: only once it is ours
            os.ftruncate(self._file_fd, 0)
            os.lseek(self._file_fd, 0, os.SEEK_SET)
            os.write(self._file_fd, f"{os.getpid()}\n".encode())
        except OSError:  # a full disk, say: the lock holds without the process id
            pass
        if self._folder_fd is not None:  # POSIX: the folder's lock is the lock; the file only names its holder
            os.close(self._file_fd)
            self._file_fd = None

    def still_ours(self) -> bool:
        """Whether ``folder`` is still the folder (or, on Windows, the lock file) this lock holds: False once it was
        removed or replaced while the run went on (a second run may then hold the new one)."""
        try:
            now = os.stat(self.folder if self._folder_fd is not None else self.path)
        except OSError:
            return False
        return (now.st_dev, now.st_ino) == (self._identity.st_dev, self._identity.st_ino)

    def release(self) -> None:
        """The lock given up: unlocked, then closed (closing alone gives it up on every platform, but Windows may
        release a byte lock some time after the close, and a ``--resume`` started at once would be refused)."""
        if self._file_fd is not None and sys.platform == "win32":
            _unlock_byte(self._file_fd)
        self._close()

    def _close(self) -> None:
        for fd in (self._file_fd, self._folder_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._file_fd = self._folder_fd = None


def _lock_byte(fd: int) -> bool:
    """Windows: the file's first byte locked without waiting; False where another process holds it."""
    import msvcrt

    try:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)  # type: ignore[attr-defined,unused-ignore]
    except OSError:  # PermissionError (EACCES): held elsewhere
        return False
    return True


def _unlock_byte(fd: int) -> None:
    """Windows: the byte ``_lock_byte`` locked, unlocked now."""
    import msvcrt

    try:
        os.lseek(fd, 0, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)  # type: ignore[attr-defined,unused-ignore]
    except OSError:  # not ours after all, or the file is gone: the close gives it up, later
        pass

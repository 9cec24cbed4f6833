"""Reading a case file's bytes: a regular file only, within a size limit checked before reading, in bounded chunks;
and where its first byte that is not UTF-8 is. load.py opens the file itself (``open(..., opener=...)``)."""

from __future__ import annotations

import os
import stat
from typing import BinaryIO

from conformance.model import SourcePos
from conformance.problems import CaseFileError, Problem


def undecodable(path: str, raw: bytes, error: UnicodeDecodeError) -> Problem:
    """Where the first byte that is not UTF-8 is, as line and column (in characters) of the text before it."""
    before = raw[: error.start].decode("utf-8")
    line = before.count("\n") + 1
    col = len(before) - (before.rfind("\n") + 1) + 1
    message = f"not UTF-8 text: byte 0x{raw[error.start]:02x} at offset {error.start}"
    return Problem(SourcePos(path, line, col), "", message)


def check_file(start: SourcePos, info: os.stat_result, max_file_bytes: int) -> None:
    """A regular file within the size limit; a FIFO, device or socket is refused (it could block or never end)."""
    if not stat.S_ISREG(info.st_mode):
        raise CaseFileError([Problem(start, "", "not a regular file (a directory, FIFO, device or socket)")])
    if info.st_size > max_file_bytes:
        message = f"file is {info.st_size} bytes, over the limit of {max_file_bytes}"
        raise CaseFileError([Problem(start, "", message)])


def open_without_waiting(name: str, flags: int) -> int:
    """``open``'s opener: a FIFO opened to read without O_NONBLOCK waits for a writer, possibly forever."""
    return os.open(name, flags | getattr(os, "O_NONBLOCK", 0))


def read_at_most(handle: BinaryIO, limit: int) -> bytes:
    """Up to ``limit`` bytes, read in chunks: ``read(limit)`` would allocate the whole limit up front."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = handle.read(min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)

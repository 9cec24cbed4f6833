"""The commands' lines, for a reader that may go away: ``dmlconf run ... | head -1`` closes the pipe after one line
(``2>&1 | head -1`` closes stderr's too), and nothing the command still does (a run's reports above all) may depend
on it. A reader that went away is not an error of the command: its exit code stays what the command decided.

Python's documented way ("Note on SIGPIPE", the signal module's docs): on BrokenPipeError, the stream's descriptor
goes to the null device, so that what is still buffered, every later line and the flush at exit go there instead of
raising again.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TextIO


def to_devnull(stream: TextIO | None) -> None:
    """``stream``'s descriptor on the null device (nothing to do for a stream without one)."""
    if stream is None:
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # no descriptor, or closed: it cannot break
            os.dup2(devnull, stream.fileno())
    finally:
        os.close(devnull)


def write(stream: TextIO | None, text: str) -> None:
    """``text`` written to ``stream`` and flushed at once; a reader that went away sends the stream to the null
    device, and the command goes on. So does a stream that fails otherwise (``> /dev/full``, a log on a disk that
    filled): said once on stderr where the failed stream was another; the command's exit code and files stand."""
    if stream is None:  # started without the descriptor (``>&-``): print would drop the line anyway
        return
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        to_devnull(stream)
    except OSError as error:
        to_devnull(stream)
        if stream is not sys.stderr:
            name = "stdout" if stream is sys.stdout else "an output"
            why = error.strerror or str(error)
            write(sys.stderr, f"dmlconf: {name}: {why}: nothing more is shown there; the exit code and files stand\n")


def _line(stream: TextIO | None, text: str) -> None:
    write(stream, text + "\n")


def say(text: str = "") -> None:
    """``text`` and a newline on stdout, flushed at once (a reader sees each line as it happens); a reader that went
    away sends stdout to the null device, and the command goes on."""
    _line(sys.stdout, text)


def warn(text: str) -> None:
    """``text`` and a newline on stderr, as ``say`` does on stdout."""
    _line(sys.stderr, text)

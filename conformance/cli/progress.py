"""Progress of a run on stderr: a bar with an ETA that redraws itself on a terminal, and plain lines at every
tenth of the run elsewhere (CI logs keep every line, so a redrawn bar would fill them with carriage returns)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

from conformance.cli.output import write

WIDTH = 30
PLAIN_MINIMUM = 100  # runs shorter than this print no plain progress lines: they finish before anyone looks


def _duration(seconds: float) -> str:
    seconds = max(0, round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class Progress:
    """``advance()`` after each result; ``close()`` at the end (or on an interrupt). ``silent`` (--quiet): nothing is
    drawn or printed. ``total`` None: not known yet (a run whose case files are still being read), until ``known``."""

    def __init__(
        self,
        total: int | None,
        stream: TextIO | None = None,
        clock: Callable[[], float] = time.monotonic,
        silent: bool = False,
    ) -> None:
        self.total, self.done, self.silent = total, 0, silent
        self.stream = stream if stream is not None else sys.stderr
        self.interactive = bool(getattr(self.stream, "isatty", lambda: False)())
        self._clock = clock
        self.started = self._clock()
        self._first_at: float | None = None  # when the first result came: the rate is measured from there
        self._next_tenth = 1

    def line(self) -> str:
        """The bar, the count, the time so far and the ETA: the rate of the results after the first, which leaves out
        the start (workers, runners, the first compiles: a run's first ETA was over three times its length)."""
        now = self._clock()
        elapsed = now - self.started
        if self.total is None:
            return f"[{'?' * WIDTH}] {self.done} done, {_duration(elapsed)}; reading the case files"
        share = self.done / self.total if self.total else 1.0
        eta = "--"
        if self.done >= 2 and self._first_at is not None:
            eta = _duration((now - self._first_at) / (self.done - 1) * (self.total - self.done))
        bar = "#" * round(WIDTH * share) + "." * (WIDTH - round(WIDTH * share))
        return f"[{bar}] {self.done}/{self.total} ({share:.0%}) {_duration(elapsed)}, ETA {eta}"

    def _write(self, text: str) -> None:
        """A reader of the stream that went away (``2>&1 | head``) stops the drawing, not the run (output.py)."""
        write(self.stream, text)

    def advance(self, count: int = 1) -> None:
        if self._first_at is None:
            self._first_at = self._clock()
        self.done += count
        if self.silent:
            return
        if self.interactive:
            self._write("\r" + self.line())
        elif self.total is not None and self.total >= PLAIN_MINIMUM and self.done * 10 >= self._next_tenth * self.total:
            self._next_tenth = self.done * 10 // self.total + 1
            self._write(self.line() + "\n")

    def known(self, total: int) -> None:
        """The total, once known; the tenths already passed are not printed again."""
        self.total = total
        self._next_tenth = self.done * 10 // total + 1 if total else 1

    def clear(self) -> None:
        """The bar taken off its line, so that a line printed next stands alone (the next advance draws it again)."""
        if self.interactive and not self.silent:
            self._write("\r" + " " * (WIDTH + 60) + "\r")

    def close(self) -> None:
        self.clear()

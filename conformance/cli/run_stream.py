"""``dmlconf run -j N`` started with the first case file read: the files are read in a thread of their own while the
workers run the cases read so far, instead of all of them being read, validated and expanded first (21,000 cases
of a sweep took seconds to read, which every worker waited for).

The run starts what the selection will hold (selection.py's ``streamed_selection``: the cases of each valid file,
the rest of a --shard by hash), and holds back what a whole selection decides. Once the last file is read, the
selection is made from all of them exactly as a run that reads first makes it (``settled``): a file with a problem
refuses the run (without --keep-going) as it would have, before anything is written, and the workers are stopped;
the selection must be the cases started, in order (a harness bug otherwise, not a verdict). Then the rest is
checked and made as before its first case (run_start.py: the run's size, the folders, results.jsonl), and the
results that came meanwhile are written to results.jsonl, in the order they came, before any later one.

A selection that needs every case before it can choose any (--quick, --shard-by-time, -k), --resume (its
results.jsonl is matched to the whole plan), --artifacts and --modes (folders made before the first case runs) and
``-j 0`` read every file first.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pickle
import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor
from dataclasses import replace
from functools import partial
from typing import TypeVar

from conformance.cases.limits import FileLimits
from conformance.cases.parse import Entry
from conformance.cases.suite import FileRead, Found, Mapper, Suite, gathered, read_files
from conformance.cli.collector import no_full_collection
from conformance.cli.selection import settled, streamed_selection
from conformance.ep.providers import EpSpec
from conformance.problems import Problem
from conformance.results import Result
from conformance.run.modes import has_family
from conformance.survive.interrupt import ignore_interrupts
from conformance.survive.stream import Stream

# At most this many processes read the case files after the first, a file each at a time, where the cores the
# workers leave allow: one thread read a sweep's 21,000 cases in 2.5 s on the H200's 16 cores, slower than eight
# workers ran them.
READERS_MAX = 8


_Job = TypeVar("_Job")


class SelectionRefused(Exception):
    """The files read have problems and no --keep-going: the run refuses them (printed), as a run that reads first."""


def streams(args: argparse.Namespace, eps: Sequence[EpSpec]) -> bool:
    """Whether this run reads its case files while its first cases run (the module's docstring says when not)."""
    whole_first = args.resume or args.artifacts or has_family(eps) or args.jobs < 1
    return not whole_first and streamed_selection(args) is not None


class Reading(threading.Thread):
    """The case files read in turn, each valid file's selected cases given to ``take`` as soon as it is read. A file
    with a problem gives none, and without --keep-going none after it either: the run will be refused. Once all are
    read, the selection is made here too, and ``check`` checks it (the run's size: run_start.within_limit), beside
    the workers rather than while they wait for their next cases."""

    def __init__(
        self, args: argparse.Namespace, found: Found, limits: FileLimits, check: Callable[[Suite], None]
    ) -> None:
        super().__init__(name="dmlconf-reading", daemon=True)
        self.args, self.found, self.limits, self.check = args, found, limits, check
        chosen = streamed_selection(args)
        assert chosen is not None, "streams() said this selection cannot stream"
        self.chosen: Callable[[Entry], bool] = chosen
        self.reads: list[FileRead] = []  # every file as read, for the selection made once all are
        self.taken = 0  # the entries the run has taken so far
        self._queued: list[Entry] = []  # every entry put for the run to take, in order
        self._came: queue.SimpleQueue[tuple[Entry, ...]] = queue.SimpleQueue()
        self._done = threading.Event()
        self._error: BaseException | None = None
        self._suite: Suite | None = None
        self._taken_all = False

    def run(self) -> None:
        readers = min(len(self.found.files) - 1, (os.cpu_count() or 1) - max(self.args.jobs, 1) - 1, READERS_MAX)
        try:
            if readers < 1:
                self._read(map, self.limits)
                return
            spawn = multiprocessing.get_context("spawn")  # no fork of a process with threads (this one)
            with ProcessPoolExecutor(readers, mp_context=spawn, initializer=_reader_start) as pool:
                self._read(partial(first_here, pool), sendable(self.limits))
        except BaseException as error:  # raised again in the run's thread, by take
            self._error = error
        finally:
            self._done.set()

    def _read(self, mapper: Mapper, limits: FileLimits) -> None:
        giving = True
        for read in read_files(self.found.files, self.args.max_elements, None, limits, mapper):
            self.reads.append(read)
            giving = giving and (not read.problems or self.args.keep_going)
            if giving and not read.problems:
                came = tuple(entry for entry in read.entries if self.chosen(entry))
                if came:
                    self._queued.extend(came)
                    self._came.put(came)
        self._suite = self._selection()
        if self._suite is not None:
            self.check(self._suite)

    def _selection(self) -> Suite | None:
        """The selection a run that reads first makes of these files (``settled``, which prints their problems:
        None where it refuses them); a harness error where it is not the cases given to the run."""
        suite = settled(self.args, gathered(self.reads, self.found))
        if suite is not None and [e.id for e in suite.entries] != [e.id for e in self._queued]:
            raise RuntimeError("the cases run as their files were read are not the run's selection (a harness bug)")
        return suite

    def take(self) -> list[Entry] | None:
        """The entries read since the last take; None once the files are all read, the selection made and checked,
        and every entry taken. SelectionRefused where the files have problems; what ``check`` raised, raised."""
        done = self._done.is_set()  # before draining: an entry put before the end is then drained below
        came: list[Entry] = []
        while True:
            try:
                came.extend(self._came.get_nowait())
            except queue.Empty:
                break
        self.taken += len(came)
        if came or not done:
            return came
        if self._error is not None:
            raise self._error
        if self._suite is None:
            raise SelectionRefused
        self._taken_all = True
        return None

    def finish(self) -> None:
        """Every file read (the run was cut short while they were: what finished is still written, which needs the
        whole selection), and every entry read taken."""
        self.join()
        while self.take() is not None:
            pass

    def selection(self) -> Suite:
        """The run's selection, once ``take`` said every entry was taken."""
        assert self._taken_all and self._suite is not None, "the selection is known once every entry is taken"
        return self._suite


def first_here(pool: Executor, function: Callable[[_Job], FileEntries], jobs: Iterable[_Job]) -> Iterator[FileEntries]:
    """``map`` of ``function`` over ``jobs`` in order: the first in this thread, at once, the rest in ``pool``'s
    processes meanwhile. A reading process is slow to start (its Python and imports, beside the workers' own), and
    the first file's cases can run in that time."""
    jobs = list(jobs)
    later = [pool.submit(packed, function, job) for job in jobs[1:]]
    if jobs:
        yield function(jobs[0])
    for future in later:
        yield unpacked(future.result())


# Entries per pickle a reading process sends. A file's 7,000 entries in one pickle took the run's process 0.3 s to
# load, in one call that holds the interpreter's lock throughout: no worker was handed its next cases meanwhile.
PACKED_ENTRIES = 256

FileEntries = tuple[list[Entry], list[Problem]]  # a file's entries and problems, as suite.read_file gives them


def packed(function: Callable[[_Job], FileEntries], job: _Job) -> tuple[list[bytes], list[Problem]]:
    """``function(job)`` in a reading process, its entries pickled PACKED_ENTRIES at a time (``unpacked``)."""
    entries, problems = function(job)
    spans = range(0, len(entries), PACKED_ENTRIES)
    return [pickle.dumps(entries[i : i + PACKED_ENTRIES], pickle.HIGHEST_PROTOCOL) for i in spans], problems


def unpacked(sent: tuple[list[bytes], list[Problem]]) -> FileEntries:
    """What ``packed`` sent, loaded a pickle at a time: the lock is let go between them."""
    chunks, problems = sent
    entries: list[Entry] = []
    for chunk in chunks:
        entries.extend(pickle.loads(chunk))  # this run's own reading process pickled it
    return entries, problems


def _reader_start() -> None:
    """A reading process: Ctrl-C is the run's to handle, and it collects no old garbage (collector.py)."""
    ignore_interrupts()
    no_full_collection()


def sendable(limits: FileLimits) -> FileLimits:
    """The limits as a reading process's job carries them (pickled): each path's scratch a dict, not the read-only
    view ep/memory.py keeps, which does not pickle."""
    return replace(limits, paths=tuple(replace(path, scratch=dict(path.scratch)) for path in limits.paths))


class Held:
    """The run's results until results.jsonl is open (once every file is read and the run is found valid), then
    each written there as it comes."""

    def __init__(self) -> None:
        self.waiting: list[tuple[int, Result]] = []
        self.stream: Stream | None = None

    def record(self, pair: int, result: Result) -> None:
        if self.stream is None:
            self.waiting.append((pair, result))
        else:
            self.stream.add(pair, result)

    def open(self, stream: Stream) -> None:
        """Results go to ``stream`` from now on, those held first, in the order they came."""
        self.stream = stream
        waiting, self.waiting = self.waiting, []
        for pair, result in waiting:
            stream.add(pair, result)

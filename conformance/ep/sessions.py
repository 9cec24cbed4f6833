"""Sessions kept for reuse within a run, and the DirectML runner they are opened in where DirectML is not native:
cases whose lowering is the same model (the same structure: operator, attributes, shapes and data types; only the
data differs, since data are graph inputs) run in one session.

At most one session is open at a time (besides a refused attempt's keeper, below, which never runs), and it is
closed before a session for another model is created, so that no case runs beside another case's session. An EP
may keep state for as long as any of its sessions lives: the WebGPU EP's program cache belongs to its device
context, and it keys InstanceNormalization's shader by shape while the shader has epsilon written into it, so a
second session with another epsilon computed with the first one's (found on the H100; reports/README.md). A
verdict must not depend on which cases ran before it.

A cache belongs to one run, or to one worker's share of it; nothing is kept between runs. Only sessions that were
created are kept: a model that failed to open is tried again (and diagnosed again) for each case, as alone.

Refused sessions share a context (``RefusalContext``): on WebGPU most of the library's session attempts are refused
(a node the EP does not take: NOT_SUPPORTED), and each made and destroyed a device context of its own, about 90 ms on
the H100, 85 % of the library's time there. A refused attempt runs nothing, so sharing a context among the attempts
and their diagnosis shares no program; a session that is created will run, and is made again in a fresh context.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.ep.lower import Lowering
from conformance.ep.placement import PlacedNode
from conformance.ep.providers import EpSpec
from conformance.ep.wine.client import Runners

CAPACITY = 1  # open sessions held at once: one, so that no case runs beside another case's session


@dataclass(frozen=True)
class Opened:
    """A session created for one model on one EP, with onnxruntime's record of where its nodes were placed."""

    session: Any
    ep_name: str  # the EP name the record must show
    known: tuple[PlacedNode, ...] | None  # recorded as the session was created; None: known after its first run

    @property
    def records(self) -> tuple[PlacedNode, ...]:
        """Where the session's nodes ran: as created, or (the DirectML runner's, from a profile) after a run."""
        if self.known is not None:
            return self.known
        return tuple(self.session.records or ())


@dataclass
class RefusalContext:
    """For an EP whose device context lives while any of its sessions does (its row's
    ``context_per_live_sessions``, ep_table.py): once a session is refused, ``keeper``, a session that is never run,
    holds a context open, and the next attempts and their diagnosis are made in it instead of a context each.
    Nothing runs there, so its program cache stays empty. An attempt that succeeds will run: it is dropped, the
    keeper closed, and it is created again in a fresh context (execute.py's ``_create``), so that every case still
    runs in a context no other case has run in.

    One for the process (``REFUSALS``), not one per ``Sessions``: every session of such an EP, a pack's, a repeat's or
    a lone case's, is made through ``_create``, which closes the keeper before making a session that will run."""

    keeper: Any = None  # the never-run session while attempts are being refused; None: the next attempt is fresh


REFUSALS = RefusalContext()


class Sessions:
    """At most ``capacity`` open sessions (0: none kept), the least recently used closed before another is created;
    counts what it saved."""

    def __init__(self, capacity: int = CAPACITY, runners: Runners | None = None) -> None:
        self._open: OrderedDict[tuple[str, str, bytes], Opened] = OrderedDict()
        self._capacity = capacity
        self.runners = runners if runners is not None else Runners()  # the process's DirectML runner, where needed
        self.created = 0
        self.reused = 0

    def open(self, lowering: Lowering, ep: EpSpec, create: Callable[[Lowering, EpSpec], Opened]) -> Opened:
        """The open session for ``lowering``'s model on ``ep``, created by ``create`` the first time."""
        key = (ep.alias, repr(sorted(ep.options.items())), hashlib.sha256(lowering.model).digest())
        if key in self._open:
            self._open.move_to_end(key)
            self.reused += 1
            return self._open[key]
        while self._open and len(self._open) >= self._capacity:
            self._open.popitem(last=False)  # closed before the next one is created
        opened = create(lowering, ep)
        self.created += 1
        if self._capacity > 0:
            self._open[key] = opened
        return opened

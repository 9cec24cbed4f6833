"""Sessions kept for reuse within a run: cases whose lowering is the same model (the same structure: operator,
attributes, shapes and data types; only the data differs, since data are graph inputs) run in one session.

A cache belongs to one run, or to one worker's share of it; nothing is kept between runs. Only sessions that were
created are kept: a model that failed to open is tried again (and diagnosed again) for each case, as alone.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable

from conformance.eps import EpSpec
from conformance.execute import Opened
from conformance.lower import Lowering

CAPACITY = 16  # open sessions held at once: each may hold device memory


class Sessions:
    """At most ``capacity`` open sessions, least recently used dropped first; counts what it saved."""

    def __init__(self, capacity: int = CAPACITY) -> None:
        self._open: OrderedDict[tuple[str, str, bytes], Opened] = OrderedDict()
        self._capacity = capacity
        self.created = 0
        self.reused = 0

    def open(self, lowering: Lowering, ep: EpSpec, create: Callable[[Lowering, EpSpec], Opened]) -> Opened:
        """The open session for ``lowering``'s model on ``ep``, created by ``create`` the first time."""
        key = (ep.alias, repr(sorted(ep.options.items())), hashlib.sha256(lowering.model).digest())
        if key in self._open:
            self._open.move_to_end(key)
            self.reused += 1
            return self._open[key]
        opened = create(lowering, ep)
        self.created += 1
        self._open[key] = opened
        if len(self._open) > self._capacity:
            self._open.popitem(last=False)
        return opened

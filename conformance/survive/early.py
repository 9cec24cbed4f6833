"""A starting worker's DirectML described before its heavy imports are done (supervisor.py's ``describe``).

The describe starts the worker's runner under Wine and makes its D3D12 device, which the runner keeps for every
session after (the first session then finds it made). Both are mostly waiting on Wine and the driver, so the rest of
the worker (NumPy, onnx, onnxruntime, the pipeline) is imported in a second thread meanwhile. The describe itself
stays in the worker's main thread: a runner is killed when the thread that started it ends (client.py's
``PR_SET_PDEATHSIG``, which Linux ties to the thread), and the main thread lives as long as the worker.

The workers' runners start a few at a time (``RUNNER_STARTS_AT_ONCE``, a semaphore the supervisor shares with its
workers), not all at once: eight started together on the H200 each took about 7 s, and none served a case before
then. Their starts wait on something they share, not on the CPU (the children's stayed under two cores; opening
sessions on one GPU serializes across runners too: docs/performance.md), while one start alone takes about 2 s. A
few at a time, the first workers run cases while the last still start. A worker that waits longer than
``RUNNER_START_WAIT`` for its turn starts anyway: one that died in its start (its turn never given back) holds
nobody up for long.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

RUNNER_STARTS_AT_ONCE = 2
RUNNER_START_WAIT = 30.0  # seconds a worker waits for its turn to start its runners, then starts them anyway

if TYPE_CHECKING:  # imported in describe_while_importing, once the other thread's imports have started
    from conformance.ep.directml import DirectML
    from conformance.ep.providers import EpSpec
    from conformance.ep.wine.client import Runners


@dataclass(frozen=True)
class Described:
    """What a worker tells the supervisor once started: each DirectML EP's DirectML by its ``--ep`` text, or why
    (one line) it could not be described; and the runners it started, which serve the worker's cases after."""

    runners: Runners
    directml: dict[str, DirectML] | None
    why: str | None


def describe_while_importing(eps: Sequence[EpSpec], worker_module: str, turns: Any = None) -> Described:
    """``eps``' DirectML described in this thread while ``worker_module`` is imported in another; ``turns``: the
    semaphore of the workers' runner starts (the module's docstring), None for no wait."""
    importing = threading.Thread(target=importlib.import_module, args=(worker_module,), name="imports", daemon=True)
    importing.start()
    turn = turns is not None and turns.acquire(timeout=RUNNER_START_WAIT)
    try:
        return _described(eps, importing)
    finally:
        if turn:
            turns.release()


def _described(eps: Sequence[EpSpec], importing: threading.Thread) -> Described:
    from conformance.ep.dml_here import directml_for
    from conformance.ep.wine.chain import ChainMissing
    from conformance.ep.wine.client import Runners

    runners = Runners()
    try:
        described = Described(runners, directml_for(eps, runners), None)
    except ChainMissing as error:
        described = Described(runners, None, str(error))
    except Exception as error:  # anything else: the run's one line, not a traceback at each worker's start
        why = f"the DirectML device could not be described ({type(error).__name__}: {error})"
        described = Described(runners, None, " ".join(why.split()))
    importing.join()
    return described

"""The execution-path seam: one interface for "execute this case here", and the typed outcomes it gives.

An execution path is one way of executing a case: onnxruntime's (the case lowered to a one-node ONNX model, run in a
session in this process or, for DirectML off Windows, in the DirectML runner: onnxruntime_path.py) or DirectML's
operator API (the case's own descriptor created and dispatched in the runner: operator_api.py). Each implements
``ExecutionPath``; the EP table (conformance/ep_table.py) says which path runs each EP, and paths.py maps each
``PathKind`` to its implementation. The runner (runner.py) and the batch (batch.py) drive every path through the same
steps:

- ``negative``: a case marked ``expect: invalid``, once the validator judged it: that verdict, or the case shown to
  the EP (a ``Prepared``);
- ``prepare``: the case's executable form (an ONNX lowering, a DML operator descriptor), or the Result where it has
  none;
- ``execute``: the prepared case executed, returning one of ``Answer``; an EP's failure is raised as ep/errors.py's
  exceptions, which the runner turns into a ``Failure`` (``failure_of``), the same for every path;
- ``judge``: the verdict on an answer, and ``outputs_sha256`` the hashes --repeat compares run by run;
- ``pack_group``: which pack a prepared case may share (None: it runs alone); ``pack_spans`` cuts a group into
  packs; ``run_pack`` runs one pack at once (onnxruntime's: one packed session; DirectML's operator API's: one
  command list of dispatches), each case's outcome, or how to run its cases again (``Regroup``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from conformance.ep.dml_descriptor import DmlOperator
from conformance.ep.dmlop import Created, DescriptorRefused, Dispatched
from conformance.ep.errors import ExecutionError, NotSupported, ProcessDied, ProcessHung
from conformance.ep.execute import Execution
from conformance.ep.lower import Lowering
from conformance.ep.providers import EpSpec
from conformance.ep.sessions import Sessions
from conformance.model import Case
from conformance.problems import Problem
from conformance.results import Result
from conformance.run.options import RunOptions

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prepared:
    """A case ready to execute on one EP: what ``finish`` needs to judge the EP's outputs."""

    case: Case
    inputs: Mapping[str, np.ndarray]
    expected: Mapping[str, np.ndarray]
    lowering: Lowering | DmlOperator  # the ONNX model, or on DirectML's operator API the DML operator descriptor
    base: Result
    seconds: float = 0.0  # spent preparing it
    judged: tuple[Problem, ...] = ()  # a negative case shown to DirectML: what its answer is judged against


# What an EP gave back, each kind from the path that gives it: onnxruntime's outputs (Execution); DirectML's operator
# API's buffers (Dispatched), its CreateOperator's answer to a negative case (Created), or its refusal of a valid
# case's descriptor (DescriptorRefused).
Answer = Execution | Dispatched | Created | DescriptorRefused


@dataclass(frozen=True)
class Died:
    """The process that ran the case for us (the DirectML runner) died, or gave no answer in time and was killed
    (``hung``): a CRASH or a TIMEOUT of the case, or DEVICE_LOST where its last words say so."""

    message: str
    hung: bool = False


@dataclass(frozen=True)
class Unsupported:
    """The EP does not run the case itself (NotSupported's ``kind``: no_kernel, placed_elsewhere, ep_not_started)."""

    message: str
    kind: str


@dataclass(frozen=True)
class Failed:
    """The EP failed otherwise (an ExecutionError)."""

    message: str


@dataclass(frozen=True)
class HarnessFault:
    """An exception nobody expected where the EP's answer should be: a bug of the harness (``kind``: its type's
    name; ``text``: what it said)."""

    kind: str
    text: str

    @property
    def message(self) -> str:
        """``Kind: first line``, as every harness ERROR says it."""
        detail = next((line.strip() for line in self.text.splitlines() if line.strip()), "")
        return f"{self.kind}: {detail}" if detail else self.kind


Failure = Died | Unsupported | Failed | HarnessFault
Outcome = Answer | Failure


@dataclass(frozen=True)
class Regroup:
    """A pack that gave no outcome per case: its cases run again, ``alone`` one by one, ``apart`` as a pack of their
    own and the others as another; ``lost``: the error that said the device was lost (batch.py's Watch is told)."""

    alone: frozenset[int] = frozenset()
    apart: frozenset[int] = frozenset()
    lost: str = ""


def failure_of(error: Exception) -> Failure:
    """An execution's exception as its typed outcome (InfrastructureError is no case's outcome: never given here)."""
    if isinstance(error, ProcessDied):  # an ExecutionError too: told apart first
        return Died(str(error), hung=isinstance(error, ProcessHung))
    if isinstance(error, NotSupported):
        return Unsupported(str(error), error.kind)
    if isinstance(error, ExecutionError):
        return Failed(str(error))
    log.debug("harness error while executing", exc_info=error)
    return HarnessFault(type(error).__name__, str(error))


class ExecutionPath(Protocol):
    """One way of executing a case on an EP: the steps the runner and the batch drive (see the module's docstring)."""

    def negative(
        self, case: Case, problems: Sequence[Problem], verdict: Result, ep: EpSpec, options: RunOptions
    ) -> Result | Prepared:
        """A negative case the validator judged (``problems``, its ``verdict``): the verdict, or the case shown to
        the EP, to be executed and judged against it."""
        ...

    def prepare(
        self,
        case: Case,
        inputs: Mapping[str, np.ndarray],
        expected: Mapping[str, np.ndarray],
        inputs_sha256: dict[str, str],
        base: Result,
        ep: EpSpec,
    ) -> Result | Prepared:
        """The case on its inputs, ready to execute; the Result (carrying ``inputs_sha256``) where it cannot be."""
        ...

    def execute(self, prepared: Prepared, ep: EpSpec, options: RunOptions, sessions: Sessions) -> Answer:
        """What the EP gave back for the prepared case; ep/errors.py's exceptions where it failed."""
        ...

    def judge(self, prepared: Prepared, answer: Answer, ep: EpSpec, options: RunOptions) -> Result:
        """The verdict on what the EP gave back."""
        ...

    def outputs_sha256(self, answer: Answer) -> dict[str, str] | None:
        """Each output's hash, as --repeat compares them run by run; None where the answer holds no outputs."""
        ...

    def pack_group(self, prepared: Prepared, ep: EpSpec, options: RunOptions) -> tuple[tuple[str, int], ...] | None:
        """The group of cases that may be packed with this one (run at once: one packed session, one command list);
        None: it runs alone."""
        ...

    def pack_spans(self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions) -> list[range]:
        """A group's packs, in order."""
        ...

    def run_pack(
        self, group: Sequence[Prepared], ep: EpSpec, options: RunOptions, sessions: Sessions
    ) -> list[Outcome] | Regroup:
        """One pack run at once: each case's outcome in order, or how its cases run again; InfrastructureError
        raised where no case is at fault."""
        ...

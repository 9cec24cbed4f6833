"""Plain typed objects that flow one way through the pipeline, from the YAML boundary on.

load -> validate -> generate -> oracle -> lower -> execute -> compare -> results -> report.
Everything here is frozen; the YAML-facing field names live in ``load``/``parse``, the spec's
meaning in ``validate`` and ``reference``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from conformance.data_type import DataType as DataType  # re-exported: the package imports it from here

if TYPE_CHECKING:  # layout.py loads NumPy, which this module's importers (the pytest plugin's) must not
    from conformance.layout import Layout


class Operator(enum.StrEnum):
    TOP_K1 = "TOP_K1"
    MEAN_VARIANCE_NORMALIZATION1 = "MEAN_VARIANCE_NORMALIZATION1"
    SLICE1 = "SLICE1"


class AxisDirection(enum.StrEnum):
    DECREASING = "DECREASING"
    INCREASING = "INCREASING"


# DirectML's feature levels, a closed list: the DML_FEATURE_LEVEL enumeration of DirectML.h (DirectML 1.15 adds 6_4,
# the newest). A level outside it names nothing DirectML has, so a case or a --feature-level giving one is refused.
# (The DirectML runner asks the device for these same levels: ep/wine/dmlrunner.c's DML_LEVELS.)
_DIRECTML_LEVELS = (
    (1, 0), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), (4, 1), (5, 0), (5, 1), (5, 2),
    (6, 0), (6, 1), (6, 2), (6, 3), (6, 4),
)  # fmt: skip


@dataclass(frozen=True, order=True)
class FeatureLevel:
    """A DML_FEATURE_LEVEL such as 2_1 or 4_0; ordered so that ``fl >= FeatureLevel(4, 0)`` reads like the spec.
    Only DirectML's own levels exist (FEATURE_LEVELS): any other raises ValueError."""

    major: int
    minor: int

    def __post_init__(self) -> None:
        if (self.major, self.minor) not in _DIRECTML_LEVELS:
            raise ValueError(f"not a DirectML feature level: {self.major}_{self.minor} (known: {known_levels()})")

    @classmethod
    def parse(cls, text: str) -> FeatureLevel:
        """Parse "2_1", "2.1" or "DML_FEATURE_LEVEL_2_1"; raise ValueError (one line) for text that is not a feature
        level or names one DirectML does not have."""
        body = text.strip().upper().removeprefix("DML_FEATURE_LEVEL_").replace(".", "_")
        parts = body.split("_")
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise ValueError(f'not a feature level: {text!r} (expected e.g. "3_1")')
        if (int(parts[0]), int(parts[1])) not in _DIRECTML_LEVELS:
            raise ValueError(f"not a DirectML feature level: {text!r} (known: {known_levels()})")
        return cls(int(parts[0]), int(parts[1]))

    def __str__(self) -> str:
        return f"{self.major}_{self.minor}"


def known_levels() -> str:
    """DirectML's feature levels as a message lists them: "1_0, 2_0, ..., 6_4"."""
    return ", ".join(f"{major}_{minor}" for major, minor in _DIRECTML_LEVELS)


FEATURE_LEVELS: tuple[FeatureLevel, ...] = tuple(FeatureLevel(major, minor) for major, minor in _DIRECTML_LEVELS)


@dataclass(frozen=True)
class SourcePos:
    """Where something came from in a case file; line and col are 1-based."""

    path: str
    line: int
    col: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Generator:
    """A seeded data generator; ``params`` holds the kind's own knobs (Low, High, Mean, Std, Distinct...)."""

    kind: str
    seed: int
    params: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class TensorSpec:
    """A DML_TENSOR_DESC plus where its data comes from: exactly one of ``data``/``generator`` is set.

    ``data`` is the row-major flattening of the YAML nested lists; ``data_shape`` is the nesting
    the YAML had, so that validation can say "Data has shape (3, 4), Sizes say (1, 1, 3, 4)".
    ``strides`` and ``total_bytes`` are DML_BUFFER_TENSOR_DESC's Strides (in elements; None: packed) and
    TotalTensorSizeInBytes (None: DMLCalcBufferTensorSize's minimum), as the case gives them (reference/layout.py).
    """

    sizes: tuple[int, ...]
    data_type: DataType
    data: tuple[float, ...] | None = None
    data_shape: tuple[int, ...] | None = None
    generator: Generator | None = None
    strides: tuple[int, ...] | None = None
    total_bytes: int | None = None

    @property
    def element_count(self) -> int:
        count = 1
        for size in self.sizes:
            count *= size
        return count


@dataclass(frozen=True)
class OutputDesc:
    """An output tensor's DML_TENSOR_DESC as a case wrote it (each part optional: derived when omitted; Strides None:
    packed, TotalTensorSizeInBytes None: DMLCalcBufferTensorSize's minimum)."""

    sizes: tuple[int, ...] | None = None
    data_type: DataType | None = None
    strides: tuple[int, ...] | None = None
    total_bytes: int | None = None


@dataclass(frozen=True)
class TopK1Desc:
    input: TensorSpec
    axis: int
    k: int
    axis_direction: AxisDirection

    @property
    def output_sizes(self) -> tuple[int, ...]:
        """OutputValueTensor's and OutputIndexTensor's Sizes: the input's, with K along Axis."""
        return tuple(self.k if i == self.axis else size for i, size in enumerate(self.input.sizes))


@dataclass(frozen=True)
class Activation:
    """A fused DML activation: ``type`` is the DML name without prefix (RELU, LEAKY_RELU, ...).

    ``params`` uses the oracle's lower-case keys: alpha, beta, gamma, steepness, ...
    """

    type: str
    params: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Mvn1Desc:
    input: TensorSpec
    scale: TensorSpec | None
    bias: TensorSpec | None
    axes: tuple[int, ...]
    normalize_variance: bool
    epsilon: float
    fused_activation: Activation | None


@dataclass(frozen=True)
class Slice1Desc:
    input: TensorSpec
    offsets: tuple[int, ...]
    sizes: tuple[int, ...]
    strides: tuple[int, ...]
    given_output_sizes: tuple[int, ...] | None  # the case's OutputSizes (or OutputTensor.Sizes); None: neither given

    @property
    def max_copied_elements(self) -> tuple[int, ...]:
        """ "MaxCopiedElements[i] = 1 + (InputWindowSize[i] - 1) / InputWindowStrides[i]", by the stride's magnitude;
        1 for an empty window or a zero stride, which the validator refuses."""
        return tuple(
            1 + (max(size, 1) - 1) // abs(stride) if stride else 1
            for size, stride in zip(self.sizes, self.strides, strict=True)
        )

    @property
    def output_sizes(self) -> tuple[int, ...]:
        """OutputTensor's Sizes: OutputSizes where the case gives them, else MaxCopiedElements."""
        return self.given_output_sizes if self.given_output_sizes is not None else self.max_copied_elements


Descriptor = TopK1Desc | Mvn1Desc | Slice1Desc


@dataclass(frozen=True)
class Tolerance:
    """Per-case override of the comparison tolerance (None: the data type's documented default)."""

    max_ulp: int | None = None
    atol: float | None = None


@dataclass(frozen=True)
class CaseLayouts:
    """Each tensor's layout by DML name, derived once, when the case is built (cases/layouts.py's ``case_layouts``):
    ``inputs`` from the descriptor (InputTensor first), ``outputs`` from the descriptor and the output descriptors the
    case writes (OUTPUT_NAMES' order). ``operator``, ``descriptor`` and ``written`` are what they were derived from,
    so that a Case refuses another's (``dataclasses.replace(case, descriptor=...)`` without new layouts).
    ``no_outputs``: why the descriptor derives no output Sizes (a SLICE1 window whose arrays differ in length, which
    the validator refuses), then ``outputs`` is empty; "" where it derives them."""

    inputs: Mapping[str, Layout]
    outputs: Mapping[str, Layout]
    operator: Operator
    descriptor: Descriptor
    written: Mapping[str, OutputDesc]
    no_outputs: str = ""


@dataclass(frozen=True)
class Case:
    """One expanded, parsed case. ``positions`` maps dotted field paths ("InputTensor.Sizes", "K",
    "expected.OutputTensor") to where they were written, for ``path:line:col`` messages. ``layouts``: its tensors'
    layouts, derived from its operator, descriptor and ``outputs`` (cases/layouts.py's ``case_layouts``, which every
    Case is built with); layouts derived from anything else are refused (ValueError)."""

    id: str  # <the file, from its repository's root or the directory given (cases/ids.py)>::<id>[variant]
    path: str  # the file as the shell reached it (relative to the working directory when inside it): to open it
    operator: Operator
    feature_level: FeatureLevel
    descriptor: Descriptor
    description: str = ""
    expected: Mapping[str, tuple[float, ...]] = field(default_factory=dict)
    expected_shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    tolerance: Tolerance | None = None
    expect_invalid: str | None = None
    positions: Mapping[str, SourcePos] = field(default_factory=dict)
    outputs: Mapping[str, OutputDesc] = field(default_factory=dict)
    # The execution modes it runs in on an EP that has them, unless the EP's options say (ep_table.Mode): what it
    # needs exercised, e.g. {"binding_offset": "16"}.
    modes: Mapping[str, str] = field(default_factory=dict)
    layouts: CaseLayouts = field(kw_only=True, repr=False)

    def __post_init__(self) -> None:
        # One derivation, at the case's building: anything that changes what the layouts follow from brings its own.
        derived_from = (self.layouts.operator, self.layouts.descriptor, self.layouts.written)
        if derived_from != (self.operator, self.descriptor, self.outputs):
            raise ValueError(
                f"{self.id}: its layouts were derived from another operator, descriptor or outputs "
                "(give it cases/layouts.py's case_layouts of its own)"
            )

    def pos(self, field_path: str) -> SourcePos:
        """The position of ``field_path``, or of its nearest written ancestor, or of the case itself."""
        probe = field_path
        while probe:
            if probe in self.positions:
                return self.positions[probe]
            probe = probe.rpartition(".")[0]
        return self.positions.get("", SourcePos(self.path, 1, 1))


@dataclass(frozen=True)
class Copies:
    """Bytes per byte of a case's tensors: its inputs and outputs packed (as onnxruntime is fed them and gives them
    back) and its buffers (as DirectML binds them: each layout's TotalTensorSizeInBytes)."""

    inputs: float = 0.0
    outputs: float = 0.0
    input_buffers: float = 0.0
    output_buffers: float = 0.0


@dataclass(frozen=True)
class MemoryPath:
    """What one way of executing a case holds in memory, for the estimate of its peak (--max-case-bytes), beside the
    harness's own work on it (its inputs, the oracle, the comparison: cases/memory.py's figures per element). In the
    harness's process, the path's phase (``harness`` copies of the tensors) comes before or after that work, so the
    larger of the two counts; a process of the path's own (the DirectML runner) adds its ``runner`` copies and the
    ``scratch`` an operator asks for on the device, bytes per InputTensor element. A path through the runner sends
    ``frames`` (what each carries) of at most ``frame_limit`` bytes. The ep stage describes each path once
    (ep/memory.py); cases/memory.py does the sums."""

    name: str  # how a refusal names it: "in the harness's process", "on --ep dmlop"
    harness: Copies = Copies()
    runner: Copies = Copies()
    scratch: Mapping[Operator, float] = field(default_factory=dict)
    frames: tuple[Copies, ...] = ()
    frame_limit: int = 0


# The path of the EPs in the harness's process (cpu, cuda, webgpu; dml on Windows): their copies of the tensors are
# in the per-element figures, measured on the CPU EP, whose buffers share the process with the oracle's.
IN_PROCESS = MemoryPath("in the harness's process")


class Status(enum.StrEnum):
    """A (case, EP) verdict. QUALITY_WARNING: behaviour the spec leaves open differs from the oracle's choice.
    FLAKY: run N times (--repeat), the case's verdicts or output bytes differed between runs (run/repeat.py).
    CRASH, TIMEOUT and DEVICE_LOST: the worker process running the case died, hung past the per-case timeout, or
    lost the GPU device (faults.py); the run goes on in a fresh worker."""

    PASS = "PASS"
    FAIL = "FAIL"
    FLAKY = "FLAKY"
    NOT_SUPPORTED = "NOT_SUPPORTED"
    NOT_EXPRESSIBLE = "NOT_EXPRESSIBLE"
    ERROR = "ERROR"
    INVALID = "INVALID"
    QUALITY_WARNING = "QUALITY_WARNING"
    CRASH = "CRASH"
    TIMEOUT = "TIMEOUT"
    DEVICE_LOST = "DEVICE_LOST"


# The failure kind of each fault: the process running the case (a worker, or the DirectML runner) died, hung, or lost
# the device (run/runner.py, survive/faults.py).
FAULT_KINDS = {Status.CRASH: "worker_died", Status.TIMEOUT: "timeout", Status.DEVICE_LOST: "device_lost"}
# NOT_SUPPORTED's failure kind where the EP could not create a session at all (ep/rules.py): no verdict on the case,
# which a gate fails where the EP executed nothing (gate/summary.py) and a diff counts as failing (gate/diff.py).
EP_NOT_STARTED = "ep_not_started"


# DirectML's own validation set against the spec's reading (the validator), through its operator API (ep/dmlop.py):
# CreateOperator accepted a descriptor the spec forbids (a FAIL of the negative case), or refused one the spec allows
# (a FAIL of the case). Both are findings about DirectML, waivable like any FAIL (docs/tolerances.md).
DML_ACCEPTED_INVALID = "dml_accepted_invalid"
DML_REJECTED_VALID = "dml_rejected_valid"
# CreateOperator accepted a descriptor that only the harness's decisions refuse, where the spec's words forbid nothing
# (cases/decisions.py, docs/tolerances.md#spec-decisions): a FAIL against the harness's reading, not the spec's.
DML_ACCEPTED_DECISION = "dml_accepted_decision"

# FAIL's failure kind where the EP wrote an output buffer's bytes that no element of the output's strides addresses
# (padding between strided elements, bytes up to TotalTensorSizeInBytes) or the guard bytes past its end
# (compare/canary.py). It ranks above every operator's own kinds (gate/diff.py): memory the operator does not own.
OUT_OF_BOUNDS_WRITE = "out_of_bounds_write"

# FAIL's failure kind where a case's outputs in one execution mode of an EP (ep_table.Mode: the queue, the compile,
# who owns the constants, the binding offsets) differ bit for bit from its outputs in another (run/modes.py),
# whatever each is against the oracle: an operator's output must not depend on how it was bound or scheduled.
MODE_MISMATCH = "mode_mismatch"

# A result's details key: what an EP fed packed left out of a case with layouts (cases/layouts.packed_note), which
# every report says (gate/summary.py's unexercised_line).
LAYOUTS_NOT_EXERCISED = "layouts_not_exercised"

# TOP_K1's failure kinds, most severe first: a sequence's kind is the first that applies (compare/top_k1.py), and a
# kind that moves up this order between two runs is a regression (gate/diff.py).
TOP_K1_FAILURE_KINDS = (
    "index_out_of_range",
    "duplicate_indices",
    "values",
    "wrong_elements",
    "not_sorted",
    "tie_order",
)

# Names of the descriptors' tensors, as the spec pages spell them; inputs and outputs are keyed by these.
INPUT_TENSOR = "InputTensor"
SCALE_TENSOR = "ScaleTensor"
BIAS_TENSOR = "BiasTensor"
OUTPUT_TENSOR = "OutputTensor"
OUTPUT_VALUE_TENSOR = "OutputValueTensor"
OUTPUT_INDEX_TENSOR = "OutputIndexTensor"

# The inputs a workload gives as constants (weights), which DirectML may own (DML_TENSOR_FLAG_OWNED_BY_DML:
# ``--ep dmlop:owned_by_dml=1``, ep/dml_descriptor.py; what coverage counts for that mode).
CONSTANT_INPUTS: Mapping[Operator, tuple[str, ...]] = {
    Operator.TOP_K1: (),
    Operator.MEAN_VARIANCE_NORMALIZATION1: (SCALE_TENSOR, BIAS_TENSOR),
    Operator.SLICE1: (),
}

OUTPUT_NAMES: Mapping[Operator, tuple[str, ...]] = {
    Operator.TOP_K1: (OUTPUT_VALUE_TENSOR, OUTPUT_INDEX_TENSOR),
    Operator.MEAN_VARIANCE_NORMALIZATION1: (OUTPUT_TENSOR,),
    Operator.SLICE1: (OUTPUT_TENSOR,),
}

# Fused activations of DML_MEAN_VARIANCE_NORMALIZATION1: DML name -> its parameters (oracle's lower-case
# keys) with the default used when a case omits one (ONNX's defaults for the ONNX twin of each).
ACTIVATION_PARAMS: Mapping[str, Mapping[str, float]] = {
    "IDENTITY": {},
    "RELU": {},
    "SIGMOID": {},
    "TANH": {},
    "SOFTSIGN": {},
    "GELU": {},
    "ELU": {"alpha": 1.0},
    "CELU": {"alpha": 1.0},
    "LEAKY_RELU": {"alpha": 0.01},
    "PARAMETERIZED_RELU": {"alpha": 0.01},  # a scalar slope: a fused activation carries no tensor
    "THRESHOLDED_RELU": {"alpha": 1.0},
    "HARD_SIGMOID": {"alpha": 0.2, "beta": 0.5},
    "LINEAR": {"alpha": 1.0, "beta": 0.0},
    "SCALED_TANH": {"alpha": 1.0, "beta": 1.0},
    "PARAMETRIC_SOFTPLUS": {"alpha": 1.0, "beta": 1.0},
    "SCALED_ELU": {"alpha": 1.6732632423543772, "gamma": 1.0507009873554805},
    "SOFTPLUS": {"steepness": 1.0},
    "SHRINK": {"bias": 0.0, "threshold": 0.5},
    "SWISH": {"sigmoid_input_scale": 1.0},
    "HARD_SWISH": {"alpha": 1.0 / 6.0, "beta": 0.5},
}

"""The execution providers the harness knows, one row each: the execution-path seam's one table.

A row says everything the harness knows of one EP: its onnxruntime name and its ``--ep`` alias, its label in
messages, the provider options it reads (the values each takes, a boolean's spelling), what it executes on, which
execution path runs it (``PathKind``: run/paths.py maps each to its implementation), whether that path binds a
case's layouts, where the DirectML runner serves it, what brings it onto a machine, and the session settings
onnxruntime needs for it. Every front end reads it (``--ep`` parsing and help, the pytest plugin, the default EP,
identity and reports, doctor), and nothing else compares EP names or aliases: code asks a row for the fact it acts
on. An EP outside the table (a full onnxruntime name such as TensorrtExecutionProvider, or a plugin library path)
runs on onnxruntime's path with its options passed through (``other_ep``).

A boolean option (``Flag``) takes ``0``/``1`` and ``true``/``false`` (any case) on every EP; the row keeps the
spelling its EP reads (the DirectML EP's ``ParseBoolean`` takes only ``true``/``false``, the WebGPU EP and DirectML's
operator API ``1``/``0``), which is the one a result records.

Adding an EP that an existing path runs is a row here; adding an execution path is a ``PathKind``, its module in
``conformance/run/`` and one line of run/paths.py (docs/architecture.md#adding-an-execution-path).

Light: it imports only the standard library, so that the commands that only read (report, diff, merge) and the
pytest plugin's import can read it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from types import MappingProxyType


class ExecutesOn(Enum):
    """What an EP's kernels run on: what a run's identity names for it."""

    CPU = "the CPU"
    GPU = "the machine's GPUs"  # as the OS lists them (nvidia-smi, Win32_VideoController)
    DIRECTML = "a DirectML device"  # a D3D12 adapter: DirectML's own record names it


class PathKind(Enum):
    """Which execution path runs an EP's cases (run/paths.py's ``PATHS`` holds each one's implementation)."""

    # The case lowered to a one-node ONNX model and run in an onnxruntime session: its tensors packed, row-major.
    ONNXRUNTIME = "onnxruntime"
    # The case's own descriptor created, compiled and dispatched by DirectML over its buffers, strides included.
    OPERATOR_API = "DirectML's operator API"


class Runner(Enum):
    """Where the DirectML runner (conformance/ep/wine) serves an EP; dml_here.py decides from it."""

    NEVER = "never: the EP runs in the harness's process"
    OFF_WINDOWS = "off Windows, under Wine; on Windows the EP runs in the harness's process"
    ALWAYS = "always: under Wine, and natively on Windows"


@dataclass(frozen=True)
class Flag:
    """A boolean option: ``0``, ``1``, ``true`` or ``false`` (any case) given, ``on`` or ``off`` kept, the spelling
    the EP reads."""

    on: str
    off: str

    def spelt(self, text: str) -> str | None:
        """``text`` in this flag's spelling; None where it is no boolean."""
        if text.lower() in ("1", "true"):
            return self.on
        if text.lower() in ("0", "false"):
            return self.off
        return None


ONE_ZERO = Flag("1", "0")
TRUE_FALSE = Flag("true", "false")
# What an option takes besides exact values and flags: a kind of value.
WHOLE_NUMBER = "a non-negative whole number"
ANY_TEXT = "any text"  # the EP checks the value itself, and refuses a bad one when the session starts
DIRECTML_DLL = "a DirectML.dll version"  # ep/directml.py's DIRECTML_VERSIONS: the builds the runner can load
ONNXRUNTIME_DLL = "an onnxruntime.dll version"  # ep/directml.py's ONNXRUNTIME_DLL_VERSIONS
# A buffer offset DirectML takes for a tensor: DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT.
MULTIPLE_OF_16 = "a multiple of 16"
# The mode that hands DirectML the operators' constant inputs (model.CONSTANT_INPUTS) to own.
OWNED_BY_DML = "owned_by_dml"
# The mode that lets a case whose descriptor is byte for byte one compiled before take that compiled operator.
REUSE_COMPILED = "reuse_compiled"
# How many dispatches one command list records: at most BATCH_MAX, the runner's DISPATCH_BATCH_MAX
# (tests/test_modes.py pins the two equal).
BATCH_MAX = 64
BATCH_SIZE = f"a whole number from 1 to {BATCH_MAX}"
# The harness's own DirectML option that runs the EP on the reference adapter, with the same DLLs: WARP on Windows,
# lavapipe under Wine (a runner of its own: ep/wine/chain.py). Triage's first rung (docs/triage.md).
REFERENCE = "reference"
# The harness's own option of every EP that runs on a GPU: a glob its adapter must match, else the run stops before
# its first case (run/expect.py; --expect-device gives it to every such EP at once).
EXPECT_DEVICE = "expect_device"
# The options the harness reads and never hands to an EP (or to DirectML's runner): which DLLs, which adapter's
# runner, which adapter is expected.
HARNESS_OPTIONS = ("directml", "ort", REFERENCE, EXPECT_DEVICE)
OptionValues = tuple[str, ...] | str | Flag


@dataclass(frozen=True)
class Mode:
    """One execution mode of an EP: an option each of whose values executes a case another way, and all of which must
    give a case bit-equal outputs (run/modes.py compares them; docs/execution-providers.md#execution-modes says what
    each exercises in a driver). ``default`` is the EP's way where the option is not given; ``others`` are the
    values ``--modes`` runs besides it, one mode changed at a time."""

    option: str
    default: str
    others: tuple[str, ...]
    exercises: str


@dataclass(frozen=True)
class Exclusive:
    """An option that the EP takes alone: given with any of ``others``, they would be silently ignored."""

    key: str
    others: tuple[str, ...]
    why: str


_NONE: Mapping[str, str] = MappingProxyType({})


def _none() -> Mapping[str, str]:
    return _NONE


@dataclass(frozen=True)
class KnownEp:
    """One execution provider the harness knows."""

    alias: str  # the --ep name: cpu, cuda, ...
    name: str  # onnxruntime's EP name (DmlOperatorApi, DirectML's operator API, is no onnxruntime EP)
    label: str  # in messages: "unknown CUDA option ..."
    executes_on: ExecutesOn
    path: PathKind
    # Whether the path hands the EP each tensor's buffer as the case lays it out (strides, offsets, padding), so
    # that the case's layouts are exercised; onnxruntime's EPs get packed tensors.
    binds_layouts: bool
    # The provider options it reads, from its sources; a key outside them is refused (the DirectML and WebGPU EPs
    # ignore unknown keys silently, the CPU EP ignores every option). Options that carry a pointer (a CUDA stream, an
    # allocator, a WGPUDevice) are left out: a number typed on a command line is no pointer.
    options: Mapping[str, OptionValues] = field(default_factory=_none)
    exclusive: tuple[Exclusive, ...] = ()
    runner: Runner = Runner.NEVER
    package: str | None = None  # the distribution that brings it (pip install NAME), where one does
    plugin_module: str | None = None  # a plugin EP's package: its module gives the library onnxruntime registers
    # Given to onnxruntime where the --ep text leaves them out; not part of the EP's text (a result's ``ep``).
    provider_defaults: Mapping[str, str] = field(default_factory=_none)
    # onnxruntime's fallback EP: in every build, it always starts, and it refuses the entry disabling fallback to it.
    fallback: bool = False
    # Graph optimizations at level 2 (else off: we test kernels, not rewrites): the DirectML EP fuses an activation
    # into MVN1 there (DmlExecutionProvider/src/GraphTransformer.cpp).
    fuses_activations: bool = False
    # ORT_SEQUENTIAL execution and no memory pattern, which the DirectML EP's documentation requires.
    sequential: bool = False
    # Its device context, with its program cache, lives as long as any of its sessions, a session made while none is
    # open getting a fresh one: the WebGPU EP (its context factory keeps a context per deviceId, counted by the
    # sessions on it). ep/sessions.py's rule and its RefusalContext are about these.
    context_per_live_sessions: bool = False
    default_rank: int | None = None  # its place in the default's order (the best available first); None: never
    # What its ONNX kernels are known to compute, where an operator's lowering picks a form by it (ep/mvn1_lowering.py):
    # the floor its InstanceNormalization clamps epsilon up to (None: none known), and the epsilon its
    # MeanVarianceNormalization kernel adds to the deviation (None: no kernel known to compute a descriptor).
    instance_norm_min_epsilon: float | None = None
    mvn_epsilon: float | None = None
    # DirectML's execution flags as the EP sets them, where triage changes them (docs/triage.md): the option that
    # allows half-precision computation (None: none), whether the EP allows it on every all-float16 operator
    # without being asked, and the option that turns metacommands off.
    half_precision_option: str | None = None
    half_precision_on_float16: bool = False
    metacommands_off_option: str | None = None
    # The option that picks the EP's adapter by its index in the OS's GPU list (None: it picks none, or another way).
    device_index_option: str | None = None
    # Its execution modes (each an option of ``options``): what --modes runs and run/modes.py holds equal.
    modes: tuple[Mode, ...] = ()


CPU = KnownEp(
    "cpu",
    "CPUExecutionProvider",
    "CPU",
    ExecutesOn.CPU,
    PathKind.ONNXRUNTIME,
    binds_layouts=False,
    # onnxruntime's Python binding creates the CPU EP from the session options alone: it reads no provider option.
    fallback=True,
    default_rank=3,
    # cpu/tensor/mean_variance_normalization.cc divides by sqrt(mean((X-mean)^2)): no epsilon, float32 only.
    mvn_epsilon=0.0,
)
CUDA = KnownEp(
    "cuda",
    "CUDAExecutionProvider",
    "CUDA",
    ExecutesOn.GPU,
    PathKind.ONNXRUNTIME,
    binds_layouts=False,
    # CUDAExecutionProviderInfo::FromProviderOptions (cuda_execution_provider_info.cc); sdpa_kernel from 1.19,
    # fuse_conv_bias from 1.20.
    options=MappingProxyType(
        {
            "device_id": WHOLE_NUMBER,
            "gpu_mem_limit": WHOLE_NUMBER,
            "arena_extend_strategy": ("kNextPowerOfTwo", "kSameAsRequested"),
            "cudnn_conv_algo_search": ("EXHAUSTIVE", "HEURISTIC", "DEFAULT"),
            "do_copy_in_default_stream": ANY_TEXT,
            "cudnn_conv_use_max_workspace": ANY_TEXT,
            "enable_cuda_graph": ANY_TEXT,
            "cudnn_conv1d_pad_to_nc1d": ANY_TEXT,
            "tunable_op_enable": ANY_TEXT,
            "tunable_op_tuning_enable": ANY_TEXT,
            "tunable_op_max_tuning_duration_ms": WHOLE_NUMBER,
            "enable_skip_layer_norm_strict_mode": ANY_TEXT,
            "prefer_nhwc": ANY_TEXT,
            "use_ep_level_unified_stream": ANY_TEXT,
            "use_tf32": ANY_TEXT,
            "sdpa_kernel": WHOLE_NUMBER,
            "fuse_conv_bias": ANY_TEXT,
            EXPECT_DEVICE: ANY_TEXT,  # the harness's own
        }
    ),
    package="onnxruntime-gpu",
    provider_defaults=MappingProxyType({"device_id": "0"}),
    default_rank=1,
    device_index_option="device_id",
    # cuda/nn/instance_norm.cc clamps epsilon to CUDNN_BN_MIN_EPSILON (ClampCudnnBatchNormEpsilon; 1e-5 in older
    # cuDNN headers). It has no MeanVarianceNormalization kernel: onnxruntime inlines the ONNX function body.
    instance_norm_min_epsilon=1e-5,
)
# dml_provider_factory.cc, CreateFromProviderOptions: it throws on other values. performance_preference and
# device_filter exist from 1.17.
DML = KnownEp(
    "dml",
    "DmlExecutionProvider",
    "DirectML",
    ExecutesOn.DIRECTML,
    PathKind.ONNXRUNTIME,
    binds_layouts=False,
    options=MappingProxyType(
        {
            "device_id": WHOLE_NUMBER,  # an IDXGIFactory::EnumAdapters1 index
            "performance_preference": ("default", "high_performance", "minimum_power"),
            "device_filter": ("gpu", "npu", "any"),
            "disable_metacommands": TRUE_FALSE,  # ParseBoolean: "1" or "0" throws
            # The harness's own, not the EP's: which DirectML.dll and onnxruntime.dll the runner loads, and whether
            # it runs on the reference adapter.
            "directml": DIRECTML_DLL,
            "ort": ONNXRUNTIME_DLL,
            REFERENCE: ONE_ZERO,
            EXPECT_DEVICE: ANY_TEXT,
        }
    ),
    exclusive=(
        Exclusive("device_id", ("performance_preference", "device_filter"), "picks the adapter itself"),
        Exclusive(REFERENCE, ("performance_preference", "device_filter"), "picks the reference adapter"),
    ),
    runner=Runner.OFF_WINDOWS,
    package="onnxruntime-directml",
    fuses_activations=True,
    sequential=True,
    default_rank=0,
    # DmlOperatorMeanVarianceNormalization.cpp builds DML MVN1 with Epsilon = Dml::DefaultEpsilon = 0.00001f
    # (DmlExecutionProvider/src/Operators/OperatorUtility.h), and no Scale or Bias.
    mvn_epsilon=0.00001,
    # DmlOperator::GetExecutionFlags (DmlOperator.cpp) allows half precision on every operator whose tensors are all
    # float16; no provider option turns it off.
    half_precision_on_float16=True,
    metacommands_off_option="disable_metacommands",
    device_index_option="device_id",
)
# DirectML's own operator API, each case's descriptor created as written (ep/dmlop.py): the adapter, the DLLs (as
# DML's), and the DML_EXECUTION_FLAGS that change results, given to CompileOperator.
DMLOP = KnownEp(
    "dmlop",
    "DmlOperatorApi",
    "DirectML operator API",
    ExecutesOn.DIRECTML,
    PathKind.OPERATOR_API,
    binds_layouts=True,
    options=MappingProxyType(
        {
            "device_id": WHOLE_NUMBER,  # an IDXGIFactory::EnumAdapters1 index
            "disable_metacommands": ONE_ZERO,  # DML_EXECUTION_FLAG_DISABLE_META_COMMANDS
            "allow_half_precision": ONE_ZERO,  # DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION
            "queue": ("direct", "compute"),  # the D3D12 command queue's type (modes below)
            "compile": ("operator", "graph"),  # CompileOperator, or a one-node graph through CompileGraph
            OWNED_BY_DML: ONE_ZERO,  # DML_TENSOR_FLAG_OWNED_BY_DML on the operator's constant inputs
            "binding_offset": MULTIPLE_OF_16,  # each tensor's offset in its buffer (the canary before it)
            "batch": BATCH_SIZE,  # up to this many cases' dispatches in one command list
            REUSE_COMPILED: ONE_ZERO,  # 0: every case's operator created and compiled anew
            "directml": DIRECTML_DLL,
            "ort": ONNXRUNTIME_DLL,
            REFERENCE: ONE_ZERO,
            EXPECT_DEVICE: ANY_TEXT,
        }
    ),
    runner=Runner.ALWAYS,
    half_precision_option="allow_half_precision",
    metacommands_off_option="disable_metacommands",
    device_index_option="device_id",
    modes=(
        Mode("queue", "direct", ("compute",), "a COMPUTE command queue and list instead of a DIRECT one"),
        Mode(
            "compile",
            "operator",
            ("graph",),
            "a one-node DML_GRAPH_DESC compiled by IDMLDevice1::CompileGraph, where DirectML may pick other kernels",
        ),
        Mode(
            OWNED_BY_DML,
            "0",
            ("1",),
            "the constant inputs (MVN1's ScaleTensor and BiasTensor) flagged DML_TENSOR_FLAG_OWNED_BY_DML, bound to "
            "the operator initializer alone and read from the persistent resource",
        ),
        Mode(
            "binding_offset",
            "64",
            ("16",),
            "every tensor bound that many bytes into its buffer, the canary before it: 16 is "
            "DML_MINIMUM_BUFFER_TENSOR_ALIGNMENT, the least DirectML takes",
        ),
        Mode(
            "batch",
            "1",
            ("8",),
            "up to that many cases' dispatches recorded in one command list, UAV barriers between them, one fence "
            "wait: a workload's many dispatches per submission, each output still canary-checked",
        ),
        Mode(
            REUSE_COMPILED,
            "1",
            ("0",),
            "a compiled operator dispatched again for every case whose descriptor is byte for byte the same (0: each "
            "case's operator created and compiled anew), its initializer run again on the case's own bindings",
        ),
    ),
)
_CACHE_MODES = ("disabled", "lazyRelease", "simple", "bucket")
# webgpu_provider_options.h (the short names: onnxruntime prefixes them with "ep.webgpuexecutionprovider.").
WEBGPU = KnownEp(
    "webgpu",
    "WebGpuExecutionProvider",
    "WebGPU",
    ExecutesOn.GPU,
    PathKind.ONNXRUNTIME,
    binds_layouts=False,
    options=MappingProxyType(
        {
            "deviceId": WHOLE_NUMBER,
            "adapterIndex": WHOLE_NUMBER,
            "preferredLayout": ("NCHW", "NHWC"),
            "enableGraphCapture": ONE_ZERO,
            "enableInt64": ONE_ZERO,
            "enableMatmulFp32Accumulation": ONE_ZERO,
            "enablePIXCapture": ONE_ZERO,
            "enableRobustness": ONE_ZERO,
            "preserveDevice": ONE_ZERO,
            "weightLoadAcceleration": ("off", "preferred", "required"),
            "kvCacheQuantizationBits": ("0", "4", "8"),
            "multiRotaryCacheConcatOffset": WHOLE_NUMBER,
            "sessionBufferPoolGenerations": WHOLE_NUMBER,
            "dawnBackendType": ("D3D12", "Vulkan"),
            "powerPreference": ("high-performance", "low-power"),
            "storageBufferCacheMode": _CACHE_MODES,
            "uniformBufferCacheMode": _CACHE_MODES,
            "queryResolveBufferCacheMode": _CACHE_MODES,
            "defaultBufferCacheMode": _CACHE_MODES,
            "validationMode": ("disabled", "wgpuOnly", "basic", "full"),
            "forceCpuNodeNames": ANY_TEXT,
            "maxStorageBufferBindingSize": WHOLE_NUMBER,
            "maxStorageBuffersPerShaderStage": WHOLE_NUMBER,
            "maxNumPendingDispatches": WHOLE_NUMBER,
            EXPECT_DEVICE: ANY_TEXT,  # the harness's own
        }
    ),
    package="onnxruntime-ep-webgpu",
    plugin_module="onnxruntime_ep_webgpu",
    context_per_live_sessions=True,
    default_rank=2,
    device_index_option="deviceId",
)

KNOWN_EPS: tuple[KnownEp, ...] = (CPU, CUDA, DML, DMLOP, WEBGPU)  # in the order --ep's help lists them


def checked_value(accepted: OptionValues, text: str) -> str:
    """``text`` as an option that takes ``accepted`` reads it (a flag in its own spelling); ValueError saying what it
    expects. A kind checked elsewhere (a DLL version: providers.py maps it to the builds) takes any text here."""
    if isinstance(accepted, Flag):
        spelt = accepted.spelt(text)
        if spelt is None:
            raise ValueError("expected 0, 1, true or false")
        return spelt
    if isinstance(accepted, tuple):
        if text not in accepted:
            raise ValueError(f"expected one of {', '.join(accepted)}")
        return text
    if accepted == WHOLE_NUMBER and not re.fullmatch(r"[0-9]+", text):
        raise ValueError(f"expected {WHOLE_NUMBER}")
    if accepted == MULTIPLE_OF_16 and not (re.fullmatch(r"[0-9]{1,9}", text) and int(text) % 16 == 0):
        raise ValueError(f"expected {MULTIPLE_OF_16} (0, 16, 32, ...)")
    if accepted == BATCH_SIZE and not (re.fullmatch(r"[0-9]{1,2}", text) and 1 <= int(text) <= BATCH_MAX):
        raise ValueError(f"expected {BATCH_SIZE}")
    return text


def modes_apart(known: KnownEp, modes: Mapping[str, str]) -> dict[str, str]:
    """Of ``modes`` (a run's execution modes, by option), those of ``known``'s modes not at their default: {} for a
    run in the defaults."""
    defaults = {mode.option: mode.default for mode in known.modes}
    return {key: value for key, value in modes.items() if key in defaults and defaults[key] != value}


def modes_text() -> str:
    """Each EP's execution modes, for help: "dmlop: queue, compile, ..."."""
    return "; ".join(f"{ep.alias}: {', '.join(mode.option for mode in ep.modes)}" for ep in KNOWN_EPS if ep.modes)


def mode_options() -> dict[str, OptionValues]:
    """Every execution mode's option, of every EP that has modes, and the values it takes: what a case's ``modes``
    may say."""
    return {mode.option: ep.options[mode.option] for ep in KNOWN_EPS for mode in ep.modes}


def known_ep(name: str) -> KnownEp | None:
    """The row of the EP called ``name`` (onnxruntime's name, or an alias, in any case); None for another EP."""
    wanted = name.lower()
    return next((ep for ep in KNOWN_EPS if wanted in (ep.alias, ep.name.lower())), None)


def other_ep(name: str) -> KnownEp:
    """What the harness assumes of an EP outside the table (a full onnxruntime name, a plugin library): onnxruntime's
    path, on the machine's GPUs, its options passed through."""
    return KnownEp(name, name, name, ExecutesOn.GPU, PathKind.ONNXRUNTIME, binds_layouts=False)


def ep_facts(name: str) -> KnownEp:
    """The row of the EP called ``name``, or what is assumed of an EP outside the table."""
    return known_ep(name) or other_ep(name)


def aliases_text() -> str:
    """The known EPs' aliases, for help and messages: "cpu, cuda, dml, dmlop, webgpu"."""
    return ", ".join(ep.alias for ep in KNOWN_EPS)

"""Which onnxruntime execution provider a run targets: ``--ep`` text, defaults, plugin EP libraries.

``--ep`` text is ``NAME[:key=value,key=value...]`` where NAME is an alias (cpu, cuda, dml, webgpu), a full
onnxruntime EP name (CUDAExecutionProvider) or the path of a plugin EP library (its EP name is learnt when the
library is registered). The options are the EP's provider options, passed through as strings. For the EPs the
harness knows (cpu, cuda, dml, webgpu), every key and value is checked against that EP's table of the options it
reads (PROVIDER_OPTIONS), so that a misspelt option is refused rather than silently ignored; other EPs' options pass
through to onnxruntime unchecked.
"""

from __future__ import annotations

import functools
import importlib
import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from typing import Any

from conformance.ep import directml as dml

log = logging.getLogger(__name__)

CPU = "CPUExecutionProvider"
CUDA = "CUDAExecutionProvider"
DML = "DmlExecutionProvider"
WEBGPU = "WebGpuExecutionProvider"
# Not an onnxruntime EP: DirectML's own operator API, each case's descriptor created as written (ep/dmlop.py).
DMLOP = "DmlOperatorApi"
ALIASES: Mapping[str, str] = {"cpu": CPU, "cuda": CUDA, "dml": DML, "webgpu": WEBGPU, "dmlop": DMLOP}
WEBGPU_PACKAGE = "onnxruntime_ep_webgpu"
_LIBRARY_SUFFIXES = (".so", ".dll", ".dylib")
_OPTION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")

# What an option accepts: the exact values the EP takes, or a kind of value.
WHOLE_NUMBER = "a non-negative whole number"
ANY_TEXT = "any text"  # the EP checks the value itself, and refuses a bad one when the session starts
OptionValues = tuple[str, ...] | str
_FLAG = ("0", "1")

# The provider options each known EP reads, from onnxruntime's sources; a key outside its EP's table is refused (the
# DirectML and WebGPU EPs ignore unknown keys silently, the CPU EP ignores every option). Options that carry a
# pointer (a CUDA stream, an allocator, a WGPUDevice) are left out: a number typed on a command line is no pointer.
PROVIDER_OPTIONS: Mapping[str, Mapping[str, OptionValues]] = {
    # onnxruntime's Python binding creates the CPU EP from the session options alone: it reads no provider option.
    CPU: {},
    # CUDAExecutionProviderInfo::FromProviderOptions (cuda_execution_provider_info.cc); sdpa_kernel from 1.19,
    # fuse_conv_bias from 1.20.
    CUDA: {
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
    },
    # dml_provider_factory.cc, CreateFromProviderOptions: it throws on other values. performance_preference and
    # device_filter exist from 1.17.
    DML: {
        "device_id": WHOLE_NUMBER,  # an IDXGIFactory::EnumAdapters1 index
        "performance_preference": ("default", "high_performance", "minimum_power"),
        "device_filter": ("gpu", "npu", "any"),
        "disable_metacommands": ("true", "True", "false", "False"),  # ParseBoolean: "1" or "0" throws
        # The harness's own, not the EP's: which DirectML.dll and onnxruntime.dll the runner under Wine loads.
        "directml": dml.DIRECTML_VERSIONS,
        "ort": dml.ONNXRUNTIME_DLL_VERSIONS,
    },
    # The DirectML operator API's settings: the adapter, the DLLs (as DML's), and the DML_EXECUTION_FLAGS that change
    # results, given to CompileOperator.
    DMLOP: {
        "device_id": WHOLE_NUMBER,  # an IDXGIFactory::EnumAdapters1 index
        "disable_metacommands": _FLAG,  # DML_EXECUTION_FLAG_DISABLE_META_COMMANDS
        "allow_half_precision": _FLAG,  # DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION
        "directml": dml.DIRECTML_VERSIONS,
        "ort": dml.ONNXRUNTIME_DLL_VERSIONS,
    },
    # webgpu_provider_options.h (the short names: onnxruntime prefixes them with "ep.webgpuexecutionprovider.").
    WEBGPU: {
        "deviceId": WHOLE_NUMBER,
        "adapterIndex": WHOLE_NUMBER,
        "preferredLayout": ("NCHW", "NHWC"),
        "enableGraphCapture": _FLAG,
        "enableInt64": _FLAG,
        "enableMatmulFp32Accumulation": _FLAG,
        "enablePIXCapture": _FLAG,
        "enableRobustness": _FLAG,
        "preserveDevice": _FLAG,
        "weightLoadAcceleration": ("off", "preferred", "required"),
        "kvCacheQuantizationBits": ("0", "4", "8"),
        "multiRotaryCacheConcatOffset": WHOLE_NUMBER,
        "sessionBufferPoolGenerations": WHOLE_NUMBER,
        "dawnBackendType": ("D3D12", "Vulkan"),
        "powerPreference": ("high-performance", "low-power"),
        "storageBufferCacheMode": ("disabled", "lazyRelease", "simple", "bucket"),
        "uniformBufferCacheMode": ("disabled", "lazyRelease", "simple", "bucket"),
        "queryResolveBufferCacheMode": ("disabled", "lazyRelease", "simple", "bucket"),
        "defaultBufferCacheMode": ("disabled", "lazyRelease", "simple", "bucket"),
        "validationMode": ("disabled", "wgpuOnly", "basic", "full"),
        "forceCpuNodeNames": ANY_TEXT,
        "maxStorageBufferBindingSize": WHOLE_NUMBER,
        "maxStorageBuffersPerShaderStage": WHOLE_NUMBER,
        "maxNumPendingDispatches": WHOLE_NUMBER,
    },
}
EP_LABELS: Mapping[str, str] = {
    CPU: "CPU",
    CUDA: "CUDA",
    DML: "DirectML",
    WEBGPU: "WebGPU",
    DMLOP: "DirectML operator API",
}


# EPs whose device context, with its program cache, lives as long as any of their sessions, a session made while none
# is open getting a fresh one: WebGPU (its context factory keeps a context per deviceId, counted by the sessions on
# it). sessions.py's rule and its RefusalContext are about these.
CONTEXT_PER_LIVE_SESSIONS = frozenset({WEBGPU})


def uses_directml(ep: EpSpec) -> bool:
    """Whether ``ep`` runs on DirectML: onnxruntime's DirectML EP, or DirectML's own operator API."""
    return ep.name in (DML, DMLOP)


@dataclass(frozen=True)
class EpSpec:
    alias: str  # "cpu" | "cuda" | "dml" | "webgpu" | the full name | the library path
    name: str  # full onnxruntime EP name; for a library path, a name derived from the file until it is registered
    options: Mapping[str, str] = field(default_factory=dict)
    library: str | None = None  # a plugin EP library path, when given by path

    @property
    def text(self) -> str:
        """The --ep text that selects this EP again, options included (a result's ``ep``: two configurations of
        one EP stay apart)."""
        options = ",".join(f"{k}={v}" for k, v in self.options.items())
        return f"{self.alias}:{options}" if options else self.alias


def _onnxruntime() -> Any:
    import onnxruntime  # type: ignore[import-untyped]

    return onnxruntime


def _is_path(text: str) -> bool:
    return "/" in text or "\\" in text or text.lower().endswith(_LIBRARY_SUFFIXES)


def _split(text: str) -> tuple[str, str | None]:
    """(head, options text or None). A name ends at its first colon; a path at its last colon followed by
    key=value text without path separators, so that its own colons (C:\\...) stay in the head."""
    named = re.fullmatch(r"([A-Za-z][A-Za-z0-9_]*)(?::(.*))?", text, re.DOTALL)
    if named and not (len(named.group(1)) == 1 and _is_path(text)):  # not a drive letter
        return named.group(1), named.group(2)
    cut = text.rfind(":")
    tail = text[cut + 1 :]
    if cut < 0 or "/" in tail or "\\" in tail or ("=" not in tail and tail.strip()):
        return text, None
    return text[:cut], tail


def _options(text: str | None, whole: str) -> dict[str, str]:
    options: dict[str, str] = {}
    if text is None or not text.strip():
        return options
    for item in text.split(","):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not _OPTION_KEY.fullmatch(key) or not value:
            raise ValueError(f"bad EP option {item.strip()!r} in {whole!r}: expected key=value[,key=value...]")
        if key in options:
            raise ValueError(f"EP option {key!r} given twice in {whole!r}")
        options[key] = value
    return options


def _library_name(path: str) -> str:
    pure: PurePath = PureWindowsPath(path) if "\\" in path else PurePosixPath(path)
    stem = pure.name
    for suffix in _LIBRARY_SUFFIXES:
        stem = stem.removesuffix(suffix)
    return stem.removeprefix("lib") or stem


def parse_ep(text: str) -> EpSpec:
    """``cpu``, ``cuda:device_id=1``, ``dml:device_id=1,disable_metacommands=true``, ``CUDAExecutionProvider``,
    ``/path/libfoo.so[:key=value]``; ValueError (one line) for anything else."""
    whole = text.strip()
    head, option_text = _split(whole)
    head = head.strip()
    options = _options(option_text, whole)
    if not head:
        raise ValueError(f"no execution provider named in {text!r}")
    if _is_path(head):
        return EpSpec(alias=head, name=_library_name(head), options=options, library=head)
    for alias, name in ALIASES.items():
        if head.lower() in (alias, name.lower()):
            check_options(name, options)
            return EpSpec(alias=alias, name=name, options=options)
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*ExecutionProvider", head):
        return EpSpec(alias=head, name=head, options=options)
    raise ValueError(
        f"unknown execution provider {head!r}: expected cpu, cuda, dml, dmlop, webgpu, a full onnxruntime name "
        "such as CUDAExecutionProvider, or the path of a plugin EP library"
    )


def check_options(name: str, options: Mapping[str, str]) -> None:
    """ValueError (one line) for a provider option the EP ``name`` does not read, or a value it does not accept,
    where the harness knows the EP (PROVIDER_OPTIONS); other EPs' options pass through to onnxruntime."""
    known = PROVIDER_OPTIONS.get(name)
    if known is None:
        return
    label = EP_LABELS[name]
    for key, value in options.items():
        if key not in known:
            listed = f"known are {', '.join(known)}" if known else f"the {label} EP reads no provider options"
            raise ValueError(f"unknown {label} option {key!r}: {listed}")
        accepted = known[key]
        if accepted == WHOLE_NUMBER and not re.fullmatch(r"[0-9]+", value):
            raise ValueError(f"{label} option {key}={value!r}: expected {WHOLE_NUMBER}")
        if isinstance(accepted, tuple) and value not in accepted:
            raise ValueError(f"{label} option {key}={value!r}: expected one of {', '.join(accepted)}")
    if name == DML:
        dml.check_adapter_choice(options)


@functools.cache
def register_library(registration_name: str, path: str) -> tuple[str, ...]:
    """Register a plugin EP library once per process; the EP names whose devices it brought."""
    ort = _onnxruntime()
    before = {device.ep_name for device in ort.get_ep_devices()}
    try:
        ort.register_execution_provider_library(registration_name, path)
    except Exception as error:  # onnxruntime's own exception types
        if "already registered" not in str(error):
            raise
    return tuple(sorted({str(device.ep_name) for device in ort.get_ep_devices()} - before))


def webgpu_library() -> str:
    """The WebGPU plugin library's path; ImportError when its package is not installed."""
    module = importlib.import_module(WEBGPU_PACKAGE)
    return str(module.get_library_path())


def plugin_devices(spec: EpSpec) -> tuple[str, list[Any]]:
    """(EP name, its OrtEpDevices) for a plugin EP (webgpu or a library path), registering its library first.

    Raises ImportError (package missing) or onnxruntime's error (registration failed); the list may be empty.
    """
    if spec.library is None:
        register_library("webgpu", webgpu_library())
        name = WEBGPU
    else:
        brought = register_library(spec.name, spec.library)
        name = spec.name if spec.name in brought or len(brought) != 1 else brought[0]
    return name, [device for device in _onnxruntime().get_ep_devices() if device.ep_name == name]


def is_plugin(spec: EpSpec) -> bool:
    return spec.library is not None or spec.name == WEBGPU


def _webgpu_usable() -> bool:
    try:
        return bool(plugin_devices(EpSpec("webgpu", WEBGPU))[1])
    except Exception as error:  # missing package, incompatible onnxruntime, no adapter: not usable
        log.debug("WebGPU EP not usable: %s", error)
        return False


def best_available_ep() -> EpSpec:
    """The first of dml, cuda (from onnxruntime's available providers) and webgpu (its package imports and has a
    device) that this machine has; else cpu."""
    available = set(_onnxruntime().get_available_providers())
    for alias in ("dml", "cuda"):
        if ALIASES[alias] in available:
            return EpSpec(alias, ALIASES[alias])
    if _webgpu_usable():
        return EpSpec("webgpu", WEBGPU)
    return EpSpec("cpu", CPU)

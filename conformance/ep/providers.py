"""Which execution provider a run targets: ``--ep`` text, defaults, plugin EP libraries.

``--ep`` text is ``NAME[:key=value,key=value...]`` where NAME is an alias of the EP table (conformance/ep_table.py),
a full onnxruntime EP name (CUDAExecutionProvider) or the path of a plugin EP library (its EP name is learnt when the
library is registered). The options are the EP's provider options, passed as strings. For the EPs of the table,
every key and value is checked against the options its row says the EP reads, so that a misspelt option is refused
rather than silently ignored, and a boolean is kept in the spelling the EP reads; other EPs' options pass through to
onnxruntime unchecked. The facts the rest of the harness asks of an EP (``facts``, ``uses_directml``, ``is_plugin``)
are read from its row here.
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

from conformance import ep_table as table
from conformance.ep import directml as dml
from conformance.ep_table import ExecutesOn, KnownEp

log = logging.getLogger(__name__)

# The known EPs' onnxruntime names, from the table (messages and records name them; nothing compares them).
CPU, CUDA, DML, WEBGPU, DMLOP = (ep.name for ep in (table.CPU, table.CUDA, table.DML, table.WEBGPU, table.DMLOP))
WHOLE_NUMBER, ANY_TEXT = table.WHOLE_NUMBER, table.ANY_TEXT
_LIBRARY_SUFFIXES = (".so", ".dll", ".dylib")
_OPTION_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*")
# The values of the option kinds whose list is ep/directml.py's: the DirectML builds the runner can load.
_BUILDS: Mapping[str, tuple[str, ...]] = {
    table.DIRECTML_DLL: dml.DIRECTML_VERSIONS,
    table.ONNXRUNTIME_DLL: dml.ONNXRUNTIME_DLL_VERSIONS,
}


@dataclass(frozen=True)
class EpSpec:
    alias: str  # a known EP's alias (ep_table.py) | the full name | the library path
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
    known = table.known_ep(head)
    if known is not None:
        return EpSpec(alias=known.alias, name=known.name, options=check_options(known.name, options))
    if re.fullmatch(r"[A-Za-z][A-Za-z0-9]*ExecutionProvider", head):
        return EpSpec(alias=head, name=head, options=options)
    raise ValueError(
        f"unknown execution provider {head!r}: expected {table.aliases_text()}, a full onnxruntime name "
        "such as CUDAExecutionProvider, or the path of a plugin EP library"
    )


def _accepted(known: KnownEp, key: str, value: str) -> str:
    """``value`` as the EP ``known`` reads its option ``key`` (a boolean in its own spelling); ValueError (one
    line) where it does not take it."""
    accepted = known.options[key]
    builds = _BUILDS.get(accepted) if isinstance(accepted, str) else None
    try:
        return table.checked_value(builds or accepted, value)
    except ValueError as error:
        raise ValueError(f"{known.label} option {key}={value!r}: {error}") from None


def check_options(name: str, options: Mapping[str, str]) -> dict[str, str]:
    """``options`` as the EP ``name`` reads them, where the harness knows the EP (ep_table.py), each boolean in the
    EP's own spelling; ValueError (one line) for an option it does not read, a value it does not accept, or options
    it would ignore together. Other EPs' options pass through to onnxruntime as given."""
    known = table.known_ep(name)
    if known is None:
        return dict(options)
    label = known.label
    checked: dict[str, str] = {}
    for key, value in options.items():
        if key not in known.options:
            listed = (
                f"known are {', '.join(known.options)}"
                if known.options
                else f"the {label} EP reads no provider options"
            )
            raise ValueError(f"unknown {label} option {key!r}: {listed}")
        checked[key] = _accepted(known, key, value)
    for rule in known.exclusive:
        if rule.key in checked and set(rule.others) & checked.keys():
            raise ValueError(f"{label} option {rule.key} {rule.why}: give it without {'/'.join(rule.others)}")
    return checked


def facts(ep: EpSpec) -> KnownEp:
    """What the harness knows of ``ep``: its row of the EP table, or what it assumes of another EP."""
    return table.ep_facts(ep.name) if ep.library is None else table.other_ep(ep.name)


def ep_options(ep: EpSpec) -> dict[str, str]:
    """The options ``ep`` itself is given: its options but the harness's own (ep_table.HARNESS_OPTIONS)."""
    return {key: value for key, value in ep.options.items() if key not in table.HARNESS_OPTIONS}


def flag_on(ep: EpSpec, key: str) -> bool:
    """Whether the boolean option ``key`` of ``ep`` is given and on (in any of the spellings a flag takes)."""
    flag = facts(ep).options.get(key)
    value = ep.options.get(key)
    return isinstance(flag, table.Flag) and value is not None and flag.spelt(value) == flag.on


def modes_of(ep: EpSpec, case_modes: Mapping[str, str] | None = None) -> dict[str, str]:
    """The execution modes ``ep`` runs in (its row's ``modes``): each mode's option and its value, given in the EP's
    options, else in ``case_modes`` (a case's own ``modes``, which the EP's options override), else the mode's
    default; {} for an EP without modes."""
    case_modes = case_modes or {}
    return {
        mode.option: ep.options.get(mode.option, case_modes.get(mode.option, mode.default)) for mode in facts(ep).modes
    }


def uses_directml(ep: EpSpec) -> bool:
    """Whether ``ep`` runs on DirectML: onnxruntime's DirectML EP, or DirectML's own operator API."""
    return facts(ep).executes_on is ExecutesOn.DIRECTML


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


def plugin_library(module_name: str) -> str:
    """The library a plugin EP's package brings (its module's ``get_library_path()``); ImportError when the package
    is not installed."""
    module = importlib.import_module(module_name)
    return str(module.get_library_path())


def plugin_devices(spec: EpSpec) -> tuple[str, list[Any]]:
    """(EP name, its OrtEpDevices) for a plugin EP (one whose package the table names, or a library path),
    registering its library first.

    Raises ImportError (package missing) or onnxruntime's error (registration failed); the list may be empty.
    """
    known = facts(spec)
    if spec.library is None and known.plugin_module is not None:
        register_library(known.alias, plugin_library(known.plugin_module))
        name = known.name
    else:
        brought = register_library(spec.name, spec.library or spec.name)
        name = spec.name if spec.name in brought or len(brought) != 1 else brought[0]
    return name, [device for device in _onnxruntime().get_ep_devices() if device.ep_name == name]


def is_plugin(spec: EpSpec) -> bool:
    """Whether ``spec`` is a plugin EP: a library path, or an EP whose package brings its library."""
    return spec.library is not None or facts(spec).plugin_module is not None


def _plugin_usable(known: KnownEp) -> bool:
    """Whether a plugin EP of the table is usable here: its package imports and it brings a device."""
    try:
        return bool(plugin_devices(EpSpec(known.alias, known.name))[1])
    except Exception as error:  # missing package, incompatible onnxruntime, no adapter: not usable
        log.debug("%s EP not usable: %s", known.label, error)
        return False


def best_available_ep() -> EpSpec:
    """The first EP of the table's default order that this machine has: a built-in one where onnxruntime's
    available providers list it (dml, cuda), a plugin where its package imports and has a device (webgpu); else the
    fallback (cpu)."""
    available = set(_onnxruntime().get_available_providers())
    ranked = sorted((ep for ep in table.KNOWN_EPS if ep.default_rank is not None), key=lambda ep: ep.default_rank or 0)
    for known in ranked:
        usable = known.fallback or (
            _plugin_usable(known) if known.plugin_module is not None else known.name in available
        )
        if usable:
            return EpSpec(known.alias, known.name)
    raise LookupError("the EP table has no fallback EP")  # the table's CPU row always is one

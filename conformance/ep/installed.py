"""Whether an EP's package or library is on this machine: the one place that says what each EP needs installed.

An EP whose package or library is absent is a usage error, decided before anything runs (``check_installed``: one
line naming what to install): running the library on it would only give every case the same ERROR. An EP that is
installed but cannot start (no GPU, a driver too old, a plugin that does not load) is each case's NOT_SUPPORTED
``ep_not_started`` instead (rules.py), which fails the run: that is a finding about the machine, not a typo.

- cpu: always there (asking nothing, so that a CPU run's setup loads no onnxruntime).
- A built-in EP (CUDA, DirectML on Windows, any full name): in onnxruntime's ``get_available_providers()``, the EPs
  the installed onnxruntime build has; each comes with its own package (onnxruntime-gpu, onnxruntime-directml), and
  these all install the module ``onnxruntime``, so one replaces another.
- DirectML off Windows: the runner under Wine, whose pieces the chain checks itself (wine/chain.py's ChainMissing).
- WebGPU: its plugin package, found without importing it.
- A plugin EP library given by path: the file (a bare file name is left to the loader's search path).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from conformance.ep.directml import package_version
from conformance.ep.dml_here import dml_through_wine
from conformance.ep.providers import CPU, CUDA, DML, WEBGPU, WEBGPU_PACKAGE, EpSpec

# The package that brings each built-in EP; each installs the module ``onnxruntime`` in place of the others'.
PACKAGE_OF: Mapping[str, str] = MappingProxyType({CUDA: "onnxruntime-gpu", DML: "onnxruntime-directml"})
ONNXRUNTIME_PACKAGES = ("onnxruntime", "onnxruntime-gpu", "onnxruntime-directml")
WEBGPU_DISTRIBUTION = "onnxruntime-ep-webgpu"


class NotInstalled(ValueError):
    """An EP whose package or library is not on this machine: ``--ep TEXT: what is absent: what to install``."""


def _built_in_providers() -> tuple[str, list[str]]:
    """(onnxruntime's version, the EPs its build has)."""
    import onnxruntime  # type: ignore[import-untyped]  # only where a built-in EP other than the CPU is named

    return str(onnxruntime.__version__), list(onnxruntime.get_available_providers())


def _onnxruntime_packages() -> list[str]:
    """The installed packages that bring the module ``onnxruntime``."""
    return [name for name in ONNXRUNTIME_PACKAGES if package_version(name) is not None]


def _built_in_missing(name: str) -> str | None:
    """What is absent for a built-in EP: which onnxruntime is here (and from which package, since each EP's package
    installs the same module in place of the others') and the one to install instead; None where its build has it."""
    version, available = _built_in_providers()
    if name in available:
        return None
    packages = _onnxruntime_packages()
    named = " and ".join(packages)
    source = f"the {named} package{'s' if len(packages) > 1 else ''}" if packages else "no known package"
    what = f"this onnxruntime has no {name} (version {version} from {source}; it has {', '.join(available)})"
    package = PACKAGE_OF.get(name)
    if package is None:
        return f"{what}: install an onnxruntime build that has it"
    return f"{what}: pip install {package}" + (f" in place of {named}" if packages else "")


def missing(ep: EpSpec) -> str | None:
    """What is absent for ``ep`` and what to install, in one line; None where its package or library is there."""
    if ep.library is not None:
        bare = os.path.basename(ep.library) == ep.library
        return None if bare or os.path.isfile(ep.library) else f"no plugin EP library at {ep.library}"
    if ep.name == CPU or dml_through_wine(ep):
        return None
    if ep.name == WEBGPU:
        if importlib.util.find_spec(WEBGPU_PACKAGE) is not None:
            return None
        return f"the WebGPU EP's package ({WEBGPU_PACKAGE}) is not installed: pip install {WEBGPU_DISTRIBUTION}"
    return _built_in_missing(ep.name)


def check_installed(eps: Iterable[EpSpec]) -> None:
    """NotInstalled (one line) for the first of ``eps`` whose package or library is absent."""
    for ep in eps:
        absent = missing(ep)
        if absent is not None:
            raise NotInstalled(f"--ep {ep.text}: {absent}")

"""Whether an EP's package or library is on this machine: the one place that says what each EP needs installed.

An EP whose package or library is absent is a usage error, decided before anything runs (``check_installed``: one
line naming what to install): running the library on it would only give every case the same ERROR. An EP that is
installed but cannot start (no GPU, a driver too old, a plugin that does not load) is each case's NOT_SUPPORTED
``ep_not_started`` instead (rules.py), which fails the run: that is a finding about the machine, not a typo.

What each EP of the table needs is its row's (ep_table.py: ``fallback``, ``runner``, ``plugin_module``,
``package``):

- The fallback EP (cpu): always there (asking nothing, so that a CPU run's setup loads no onnxruntime).
- An EP the DirectML runner serves here (dml off Windows, dmlop): the runner, whose pieces the chain checks itself
  (wine/chain.py's ChainMissing).
- A plugin EP of the table (webgpu): its package, found without importing it.
- A built-in EP (CUDA, DirectML on Windows, any full name): in onnxruntime's ``get_available_providers()``, the EPs
  the installed onnxruntime build has; each comes with its own package (onnxruntime-gpu, onnxruntime-directml), and
  these all install the module ``onnxruntime``, so one replaces another.
- A plugin EP library given by path: the file (a bare file name is left to the loader's search path).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterable

from conformance.ep.directml import package_version
from conformance.ep.dml_here import dml_through_wine
from conformance.ep.providers import EpSpec, facts
from conformance.ep_table import KNOWN_EPS, KnownEp

# The distributions that install the module ``onnxruntime`` (each in place of the others'): the CPU build, and the
# package of each built-in EP of the table; and those of its plugin EPs, beside it.
ONNXRUNTIME_PACKAGES = ("onnxruntime", *(ep.package for ep in KNOWN_EPS if ep.package and ep.plugin_module is None))
PLUGIN_PACKAGES = tuple(ep.package for ep in KNOWN_EPS if ep.package and ep.plugin_module is not None)


class NotInstalled(ValueError):
    """An EP whose package or library is not on this machine: ``--ep TEXT: what is absent: what to install``."""


def _built_in_providers() -> tuple[str, list[str]]:
    """(onnxruntime's version, the EPs its build has)."""
    import onnxruntime  # type: ignore[import-untyped]  # only where a built-in EP other than the CPU is named

    return str(onnxruntime.__version__), list(onnxruntime.get_available_providers())


def _onnxruntime_packages() -> list[str]:
    """The installed packages that bring the module ``onnxruntime``."""
    return [name for name in ONNXRUNTIME_PACKAGES if package_version(name) is not None]


def _built_in_missing(name: str, known: KnownEp) -> str | None:
    """What is absent for a built-in EP: which onnxruntime is here (and from which package, since each EP's package
    installs the same module in place of the others') and the one to install instead; None where its build has it."""
    version, available = _built_in_providers()
    if name in available:
        return None
    packages = _onnxruntime_packages()
    named = " and ".join(packages)
    source = f"the {named} package{'s' if len(packages) > 1 else ''}" if packages else "no known package"
    what = f"this onnxruntime has no {name} (version {version} from {source}; it has {', '.join(available)})"
    package = known.package  # None for an EP outside the table
    if package is None:
        return f"{what}: install an onnxruntime build that has it"
    return f"{what}: pip install {package}" + (f" in place of {named}" if packages else "")


def missing(ep: EpSpec) -> str | None:
    """What is absent for ``ep`` and what to install, in one line; None where its package or library is there."""
    if ep.library is not None:
        bare = os.path.basename(ep.library) == ep.library
        return None if bare or os.path.isfile(ep.library) else f"no plugin EP library at {ep.library}"
    known = facts(ep)
    if known.fallback or dml_through_wine(ep):
        return None
    if known.plugin_module is not None:
        if importlib.util.find_spec(known.plugin_module) is not None:
            return None
        return f"the {known.label} EP's package ({known.plugin_module}) is not installed: pip install {known.package}"
    return _built_in_missing(ep.name, known)


def check_installed(eps: Iterable[EpSpec]) -> None:
    """NotInstalled (one line) for the first of ``eps`` whose package or library is absent."""
    for ep in eps:
        absent = missing(ep)
        if absent is not None:
            raise NotInstalled(f"--ep {ep.text}: {absent}")

"""Every link of the DirectML-under-Wine chain checked in order, one ``Link`` each, stopping at the first broken one:
what ``dmlconf doctor`` prints; on Windows the native runner's links (the installed DLLs, the runner's build, its
start, the D3D12 and DirectML devices), which ``--ep dmlop`` runs on there. Checking also prepares: the wheel is
downloaded, the runner built and the Wine prefix made, so that a run after a clean doctor starts at once.

Some links check more than a run does, since doctor is where a broken chain is diagnosed: that vkd3d-proton's DLLs are
vkd3d-proton's (a run only checks that they are x86-64 PE files), that the wheel reads whole, that vulkaninfo finds a
device; and a D3D12 device that cannot be created is asked again with Wine's err channel on (diagnose.py).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from conformance.ep.graph import GraphBuilder
from conformance.ep.providers import parse_ep
from conformance.ep.wine import chain as parts
from conformance.ep.wine.client import Runner, RunnerDied
from conformance.ep.wine.device import (
    chain_identity,
    parse_vulkaninfo,
    vkd3d_proton_version,
    vulkaninfo_environment,
    wine_version,
)
from conformance.ep.wine.diagnose import device_failure, named_hresults
from conformance.ep.wine.protocol import ProtocolError, Refused
from conformance.ep.wine.session import open_model
from conformance.ep_table import DML

# DML_TOP_K1's example 3 (the spec page): ties take the lower index first.
_TOPK_INPUT = np.array([[[[1, 2, 2, 3], [3, 4, 5, 5], [6, 6, 6, 6]]]], np.float32)
_TOPK_VALUES = np.array([[[[3, 2, 2], [5, 5, 4], [6, 6, 6]]]], np.float32)
_TOPK_INDICES = np.array([[[[3, 1, 2], [2, 3, 1], [0, 1, 2]]]], np.int64)


_VKD3D_PROTON_MARK = b"vkd3d-proton"  # in both DLLs' own messages ("%s:vkd3d-proton:%s: "); not in Wine's d3d12
_VULKANINFO_SECONDS = 30


@dataclass(frozen=True)
class Link:
    """One link's verdict: its one line, and for a broken one what helps diagnose it (printed indented below)."""

    name: str
    ok: bool
    detail: str
    notes: tuple[str, ...] = ()

    def __str__(self) -> str:
        line = f"{'ok  ' if self.ok else 'FAIL'} {self.name + ':':<22} {self.detail}"
        return "\n".join([line, *(f"     {note}" for note in self.notes)])


class Broken(Exception):
    """A link that does not hold: its one-line reason, and notes that help diagnose it."""

    def __init__(self, reason: str, notes: tuple[str, ...] = ()) -> None:
        super().__init__(reason)
        self.notes = notes


def vkd3d_proton(environ: Mapping[str, str]) -> str:
    """The vkd3d-proton folder's two DLLs: x86-64 PE files (as a run checks), vkd3d-proton's own (not Wine's d3d12,
    which is a PE file too), and d3d12core.dll's version string."""
    folder = parts.find_vkd3d_proton(environ)
    foreign = [name for name in parts.VKD3D_DLLS if _VKD3D_PROTON_MARK not in (folder / name).read_bytes()]
    if foreign:
        raise Broken(
            f"{folder}: {' and '.join(foreign)} {'is' if len(foreign) == 1 else 'are'} x86-64 PE but not "
            "vkd3d-proton's (no 'vkd3d-proton' in it: Wine's own d3d12?)"
        )
    version = vkd3d_proton_version(folder)
    if version is None:
        raise Broken(f"{folder / 'd3d12core.dll'}: no vkd3d-proton version string in it")
    return f"vkd3d-proton {version} in {folder} (d3d12.dll, d3d12core.dll: x86-64 PE)"


def _vulkan(environ: Mapping[str, str]) -> str:
    """The Vulkan devices vulkaninfo finds with the runner's environment; none is a broken link (Wine's Vulkan is the
    same loader's), with the loader's own words."""
    icd = environ.get("VK_DRIVER_FILES") or environ.get("VK_ICD_FILENAMES") or "the loader's default ICDs"
    program = shutil.which("vulkaninfo", path=environ.get("PATH", os.defpath))
    if program is None:
        return f"vulkaninfo not installed: devices not listed; ICD: {icd}"
    try:
        done = subprocess.run([program, "--summary"], env=vulkaninfo_environment(environ), capture_output=True,
                              text=True, timeout=_VULKANINFO_SECONDS, check=False)  # fmt: skip
    except (OSError, subprocess.SubprocessError) as error:
        raise Broken(f"vulkaninfo --summary: {error}") from None
    devices = parse_vulkaninfo(done.stdout)
    if not devices:
        said = done.stderr.splitlines() + done.stdout.splitlines()
        loader = [line.split(" : ", 1)[-1].strip() for line in said if "[Loader Message]" in line]
        why = "; ".join(loader) or next((line.strip() for line in reversed(said) if line.strip()), "no message")
        raise Broken(
            f"vulkaninfo finds no Vulkan device ({why}); ICD: {icd}: install a Vulkan driver (Mesa 23 or newer's "
            "lavapipe will do) or point VK_DRIVER_FILES at one's ICD json"
        )
    named = "; ".join(f"{d.get('deviceName', '?')} ({d.get('driverName', '?')} {d.get('driverInfo', '')})".strip()
                      for d in devices)  # fmt: skip
    return f"{named}; ICD: {icd}"


def _display(environ: Mapping[str, str]) -> str:
    display = parts.find_display(environ)
    number = display.rpartition(":")[2].split(".")[0]
    if display.startswith(":") and number.isdigit() and not Path(f"/tmp/.X11-unix/X{number}").exists():
        raise Broken(f"DISPLAY={display}, but no X server listens there (start Xvfb {display} -screen 0 640x480x24 &)")
    return f"DISPLAY={display}"


def _topk_model() -> bytes:
    g = GraphBuilder()
    x = g.input("X", _TOPK_INPUT)
    k = g.const("K", np.array([3], np.int64))
    values, indices = g.node("TopK", [x, k], 2, axis=3, largest=1, sorted=1)
    return g.model([("V", values, 1, [1, 1, 3, 3]), ("I", indices, 7, [1, 1, 3, 3])])


def _topk(runner: Runner) -> str:
    start = time.perf_counter()
    session = open_model(runner, _topk_model(), parse_ep(DML.alias), strict=True)  # as a run opens its sessions
    values, indices = session.run(["V", "I"], {"X": _TOPK_INPUT})
    seconds = time.perf_counter() - start
    if not (np.array_equal(values, _TOPK_VALUES) and np.array_equal(indices, _TOPK_INDICES)):
        raise Broken(f"TopK gave {values.tolist()} / {indices.tolist()}, not the spec's example 3")
    where = ", ".join(f"{r.op_type} on {r.ep}" for r in session.records or ())
    return f"spec example 3 exact (values and indices) in {seconds * 1000:.0f} ms; {where or 'no placement record'}"


class _Chain:
    """The links' checks, one method each, in the order the chain uses them; what an earlier link found (Wine's
    program, the started runner, the device's identity) is kept for the later ones."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self.env = environ
        self.cache = parts.cache_folder(environ)
        self.wine_program = ""
        self.runner: Runner | None = None
        self.identity: dict[str, Any] = {}

    def steps(self) -> list[tuple[str, Callable[[], str]]]:
        """Each link's name and check; on Windows no Wine, vkd3d-proton, wheel, display, prefix or Vulkan: the
        system's D3D12."""
        if sys.platform == "win32":
            return [
                ("onnxruntime-directml", self.installed),
                ("runner", self.runner_build),
                ("runner start", self.start),
                ("D3D12 device", self.d3d12),
                ("DirectML device", self.directml),
            ]
        return [
            ("Wine", self.wine),
            ("vkd3d-proton", lambda: vkd3d_proton(self.env)),
            ("onnxruntime-directml", self.wheel),
            ("runner", self.runner_build),
            ("display", lambda: _display(self.env)),
            ("Wine prefix", self.prefix),
            ("Vulkan", lambda: _vulkan(self.env)),
            ("runner start", self.start),
            ("D3D12 device", self.d3d12),
            ("DirectML device", self.directml),
            ("one-node TopK", self.topk),
        ]

    def wine(self) -> str:
        self.wine_program = parts.find_wine(self.env)
        return f"{wine_version(self.wine_program) or 'version unknown'} ({self.wine_program})"

    def wheel(self) -> str:
        wheel = parts.find_wheel(self.env, parts.make_cache(self.env), download=True)
        parts.check_wheel(wheel, self.cache)  # a damaged one fails here, not when the runner's folder is staged
        return str(wheel)

    def runner_build(self) -> str:
        compiler = parts.find_compiler(self.env)
        built = parts.build_runner(self.cache, compiler)
        return f"{built} (built with {compiler}, since {compiler.why}; cached by its source's hash and the compiler)"

    def prefix(self) -> str:
        where = Path(self.env.get("WINEPREFIX") or self.cache / "wine-prefix")
        parts.ensure_prefix(self.wine_program, where, self.env)
        return str(where)

    def installed(self) -> str:
        capi = parts.installed_capi()
        return f"{capi} ({', '.join(parts.WHEEL_DLLS)}: x86-64 PE, copied beside the runner)"

    def start(self) -> str:
        chain = parts.find_chain(self.env)
        runner = self.runner = Runner(chain)
        how = "natively" if isinstance(chain, parts.NativeChain) else "under Wine"
        return f"dmlrunner.exe started {how} in {runner.start_seconds:.2f} s; onnxruntime {runner.onnxruntime}"

    def _started(self) -> Runner:
        assert self.runner is not None  # the runner start link held
        return self.runner

    def d3d12(self) -> str:
        runner = self._started()
        described = runner.describe(0)
        identity = self.identity = chain_identity(runner.chain, described)
        adapter = identity["adapter"] or {}
        if "d3d12_feature_level" not in described:
            runner.stop()  # its device failed; under Wine a fresh one is asked again, with Wine's err channel on
            notes = device_failure(runner.chain, self.env) if isinstance(runner.chain, parts.Chain) else []
            raise Broken(named_hresults(str(described.get("error") or "no D3D12 device")), tuple(notes))
        return (
            f"adapter 0 '{adapter.get('description', '?')}' (vendor 0x{int(adapter.get('vendor_id', 0)):04x}); "
            f"feature level {described['d3d12_feature_level']}, shader model {described.get('shader_model', '?')}, "
            f"created in {described.get('d3d12_create_ms', 0):.0f} ms"
        )

    def directml(self) -> str:
        identity = self.identity
        if not identity.get("dml_feature_level"):
            raise Broken(str(identity.get("error") or "DirectML answered no feature level"))
        return (
            f"DirectML.dll {identity['directml_dll']}, onnxruntime.dll {identity['onnxruntime_dll']}: "
            f"feature level {identity['dml_feature_level']} (asked of the device)"
        )

    def topk(self) -> str:
        runner = self._started()
        try:
            return _topk(runner)
        finally:
            runner.stop()


def links(environ: Mapping[str, str] | None = None) -> Iterator[Link]:
    """Each link, in the order the chain uses them; after a broken one, nothing more is tried."""
    chain = _Chain(os.environ if environ is None else environ)
    for name, step in chain.steps():
        try:
            yield Link(name, True, step())
        except (Broken, parts.ChainMissing, RunnerDied, Refused, ProtocolError, OSError) as error:
            notes = error.notes if isinstance(error, Broken) else ()
            yield Link(name, False, " ".join(str(error).split()) or type(error).__name__, notes)
            if chain.runner is not None:
                chain.runner.stop()
            return

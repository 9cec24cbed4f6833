"""The pieces of DirectML on Linux, found and staged: Wine, vkd3d-proton, the onnxruntime-directml wheel's DLLs, an X
display, a Wine prefix and the runner built from dmlrunner.c.

Where each piece comes from (docs/directml-on-linux.md says why each is needed):

- ``DMLCONF_WINE``: the Wine loader; default ``wine64``, else ``wine``, on PATH.
- ``DMLCONF_VKD3D_PROTON``: a folder with vkd3d-proton's x64 ``d3d12.dll`` and ``d3d12core.dll``, always loaded with
  ``WINEDLLOVERRIDES=d3d12,d3d12core=n`` (Wine's own d3d12 hung InstanceNormalization on the H100).
- ``DMLCONF_ORT_DIRECTML_WHEEL``: the onnxruntime-directml ``win_amd64`` wheel of the newest build; default, the one
  in the cache, downloaded with pip on first use. Another build (``--ep dml:directml=1.13.1,ort=1.19.2``) takes
  DirectML.dll and onnxruntime.dll from the wheels of those versions, from the cache or downloaded the same way (a
  machine without network is given them in ``$DMLCONF_CACHE/wheels``).
- ``DISPLAY``: Wine reaches Vulkan through its X11 driver, so an X server (Xvfb will do) must be there.
- ``WINEPREFIX``: default, a prefix in the cache, made with ``wineboot -i`` on first use.
- ``DMLCONF_REFERENCE_ICD``: under Wine, the reference adapter's Vulkan driver (``--ep dmlop:reference=1``, triage's
  first rung; natively the reference is WARP, session.py):
  lavapipe's ICD json; default ``DMLWINE_LAVAPIPE_ICD`` (which ../shared/dml-wine's env scripts export). Its runner
  gets ``VK_DRIVER_FILES`` naming it and a Wine prefix of its own (``DMLCONF_REFERENCE_PREFIX``, default the prefix's
  path with ``-reference`` added): one prefix shows Wine's DXGI only its first Vulkan device.
- ``DMLCONF_RUNNER_CC``: the C compiler that builds the runner once (the cache keeps it by the source's hash and the
  compiler): ``mingw`` (``x86_64-w64-mingw32-gcc`` on PATH) or ``zig`` (``python -m ziglang cc``, the ``ziglang``
  distribution's clang with its own MinGW headers and libraries: a compiler from pip alone, where no mingw-w64 package
  is, as on Windows); default, mingw-w64 where it is on PATH, else zig where the ziglang module is installed.

On Windows there is no Wine: ``find_chain`` gives a ``NativeChain`` instead (``find_native_chain``), the runner run
as itself beside copies of the installed onnxruntime-directml's own DLLs (its ``onnxruntime/capi`` folder), on the
system's D3D12; only the compiler (as above: pip's ziglang, or mingw-w64) and the cache are needed there.

The cache is ``DMLCONF_CACHE``, default ``$XDG_CACHE_HOME/dml-conformance`` (``~/.cache/dml-conformance``). A missing
piece is a ``ChainMissing``: one line naming it and what to do, which the CLI turns into a usage error; so is a piece
that is there but unusable (a cache or prefix that cannot be created, a damaged wheel, a DLL that is no x86-64 PE file).
What the cache keeps is checked by its SHA-256 whenever a process finds the chain (each file hashed once per process:
``file_digest``): the runner against the one its built-by.txt records (a damaged one is built again), the staged
folder's files against their sources (the runner, vkd3d-proton's DLLs, and the wheels' RECORD for theirs: a damaged
folder is staged again), each said in one line; the DLLs taken from a wheel against its RECORD.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import ClassVar

from conformance.environment import NATIVE_TRANSPORT
from conformance.ep import directml
from conformance.ep.directml import NEWEST_BUILD, Build

log = logging.getLogger(__name__)

RUNNER_SOURCE = "dmlrunner.c"
RUNNER = "dmlrunner.exe"
MINGW = "x86_64-w64-mingw32-gcc"
ZIG_TARGET = "x86_64-windows-gnu"  # zig cc's name for mingw-w64's target: the same headers, CRT and import libraries
RUNNER_CC = "DMLCONF_RUNNER_CC"
COMPILERS = ("mingw", "zig")
_RUNNER_FLAGS = ("-O2", "-s")
_RUNNER_LIBRARIES = ("-lversion",)  # d3d12, dxgi, DirectML and onnxruntime are loaded at run time (LoadLibrary)
ONNXRUNTIME_DLLS = ("onnxruntime.dll", "onnxruntime_providers_shared.dll")  # from the ort= wheel
DIRECTML_DLL = "DirectML.dll"  # from the directml= wheel
WHEEL_DLLS = (*ONNXRUNTIME_DLLS, DIRECTML_DLL)
VKD3D_DLLS = ("d3d12.dll", "d3d12core.dll")
DLL_OVERRIDE = "d3d12,d3d12core=n"
TRANSPORT = "wine+vkd3d-proton"
_PE_X86_64 = 0x8664  # IMAGE_FILE_MACHINE_AMD64
_WINEBOOT_SECONDS = 300
_BUILD_SECONDS = 600  # zig's first build also compiles the MinGW C runtime into its cache: a minute on 2 cores
_VERSION_SECONDS = 30


# What a user without the chain runs first: the script that installs and starts every piece (Debian 12, as root) and
# exports what the harness reads; each missing piece's line names it before the piece's own remedy.
SET_UP = "source .ci/dml-chain.sh sets up the whole chain (Debian 12, as root; docs/directml-on-linux.md)"


class ChainMissing(ValueError):
    """A piece of the chain is absent or unusable: one line naming it and what to do."""


@dataclass(frozen=True)
class Compiler:
    """The C compiler that builds the runner: its ``name`` as DMLCONF_RUNNER_CC says it, the command that runs it, its
    version (part of the cached runner's key: another compiler's runner is another program) and why it was chosen."""

    name: str
    command: tuple[str, ...]
    version: str
    why: str

    def __str__(self) -> str:
        """How doctor and the identity name it: the program and its version."""
        if self.name == "zig":
            return f"zig cc {self.version} (python -m ziglang, -target {ZIG_TARGET})"
        if self.name == "cached":  # the version is the text of the compiler that built it elsewhere
            return self.version
        return f"{MINGW} {self.version}"

    def record(self) -> dict[str, str]:
        """The compiler in a run's DirectML chain identity (device.py's ``runner``)."""
        return {"compiler": self.name, "version": self.version, "program": str(self), "chosen": self.why}


@dataclass(frozen=True)
class Chain:
    """Where each piece of the chain is; ``folder`` holds the runner and the five DLLs side by side: DirectML.dll from
    ``directml_wheel``, onnxruntime's two from ``wheel`` (one wheel for the newest build)."""

    wine: str
    vkd3d_proton: Path
    wheel: Path
    display: str
    prefix: Path
    folder: Path
    build: Build = NEWEST_BUILD
    directml_wheel: Path | None = None  # None: ``wheel``'s own DirectML.dll
    winedebug: str | None = None  # None: the user's WINEDEBUG, else none of Wine's messages
    compiler: Compiler | None = None  # the one that built the runner; None: not known (a chain made by hand)
    vulkan_icd: str | None = None  # the one Vulkan driver the runner may use (the reference's); None: the loader's
    transport: ClassVar[str] = TRANSPORT

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The runner's environment: ``base`` with the prefix, the display and the DLL override that keeps Wine's
        own d3d12 out (appended, so that it wins over any override the user has); Wine's messages off unless the
        user or ``winedebug`` (doctor's diagnosis of a failed device) turns them on."""
        env = dict(base)
        overrides = env.get("WINEDLLOVERRIDES", "")
        env["WINEDLLOVERRIDES"] = f"{overrides};{DLL_OVERRIDE}" if overrides else DLL_OVERRIDE
        env["WINEPREFIX"] = str(self.prefix)
        env["DISPLAY"] = self.display
        if self.winedebug is not None:
            env["WINEDEBUG"] = self.winedebug
        env.setdefault("WINEDEBUG", "-all")
        env.setdefault("WINE_D3D_CONFIG", "renderer=vulkan")  # DXGI names the real Vulkan device
        env.setdefault("VKD3D_SHADER_CACHE_PATH", "0")  # no shared cache file between concurrent runners
        if self.vulkan_icd is not None:  # the reference adapter's driver alone (VK_ICD_FILENAMES: the older name)
            env.pop("VK_ICD_FILENAMES", None)
            env["VK_DRIVER_FILES"] = self.vulkan_icd
        return env

    def command(self) -> list[str]:
        return [self.wine, str(self.folder / RUNNER), "."]


@dataclass(frozen=True)
class NativeChain:
    """Windows: ``folder`` holds the runner and copies of the installed onnxruntime-directml's three DLLs (from its
    ``capi`` folder), which the runner loads from its own folder first; D3D12 and DXGI are the system's. Copies, not
    the capi folder on PATH: what a run records (their hashes, beside the runner) is then exactly what was loaded.
    ``build`` is only the key the runner is kept by: on Windows the installed package is the one build."""

    capi: Path
    folder: Path
    build: Build = NEWEST_BUILD
    compiler: Compiler | None = None
    transport: ClassVar[str] = NATIVE_TRANSPORT  # the runner on Windows' own D3D12

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """``base`` as it is: nothing stands between the runner and Windows."""
        return dict(base)

    def command(self) -> list[str]:
        return [str(self.folder / RUNNER), "."]


RunnerChain = Chain | NativeChain  # what a runner is started from (client.Runner)


def cache_folder(environ: Mapping[str, str]) -> Path:
    given = environ.get("DMLCONF_CACHE")
    if given:
        return Path(given)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "dml-conformance"


def _why_not(folder: Path, error: OSError) -> str:
    """Why ``folder`` cannot be made, in the user's terms: the nearest existing ancestor when it is a file (the
    system says only "File exists" or "Not a directory"), else the system's own word."""
    for parent in (folder, *folder.parents):
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, not a folder"
            break
    return error.strerror or str(error)


def make_folder(folder: Path, variable: str | None = None) -> Path:
    """``folder`` made with its parents; ChainMissing naming it (as ``variable=folder`` where the user gave it that
    way) and what stands in the way."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        named = f"{variable}={folder}" if variable else str(folder)
        raise ChainMissing(f"{named}: cannot create it: {_why_not(folder, error)}") from None
    return folder


def make_cache(environ: Mapping[str, str]) -> Path:
    """The cache folder (``DMLCONF_CACHE`` or the default), made; ChainMissing where it cannot be."""
    return make_folder(cache_folder(environ), "DMLCONF_CACHE" if environ.get("DMLCONF_CACHE") else None)


def find_wine(environ: Mapping[str, str]) -> str:
    given = environ.get("DMLCONF_WINE")
    path = environ.get("PATH", os.defpath)
    if given:
        found = shutil.which(given, path=path)
        if found is None:
            raise ChainMissing(f"DMLCONF_WINE={given}: no such program")
        return found
    for name in ("wine64", "wine"):
        found = shutil.which(name, path=path)
        if found is not None:
            return found
    raise ChainMissing(
        f"Wine is not installed (no wine64 or wine on PATH, DMLCONF_WINE unset): {SET_UP}; "
        "or apt-get install wine wine64 (Wine 8 or newer)"
    )


def pe_problem(path: Path) -> str | None:
    """What keeps ``path`` from being a 64-bit Windows DLL, by its headers (Microsoft's PE format: "MZ", the offset
    of "PE\\0\\0" at 0x3C, then the COFF header's machine); None where it is one. Wine would only say that it
    could not load it."""
    try:
        with open(path, "rb") as file:
            head = file.read(64)
            offset = int.from_bytes(head[0x3C:0x40], "little") if len(head) == 64 else 0
            file.seek(offset)
            coff = file.read(6)
    except OSError as error:
        return f"unreadable ({error.strerror or error})"
    if head[:2] != b"MZ":
        return "not a PE file (no MZ header)"
    if coff[:4] != b"PE\0\0":
        return "not a PE file (no PE signature)"
    machine = int.from_bytes(coff[4:6], "little")
    if machine != _PE_X86_64:
        return f"a PE file for machine 0x{machine:04x}, not x86-64 (the runner is 64-bit: take the x64 folder)"
    return None


def find_vkd3d_proton(environ: Mapping[str, str]) -> Path:
    given = environ.get("DMLCONF_VKD3D_PROTON")
    if not given:
        raise ChainMissing(
            f"DMLCONF_VKD3D_PROTON is not set: {SET_UP}; or name a folder holding vkd3d-proton's x64 d3d12.dll "
            "and d3d12core.dll (docs/directml-on-linux.md#vkd3d-proton: .ci/vkd3d-proton/build.sh builds it for Wine 8)"
        )
    folder = Path(given)
    missing = [name for name in VKD3D_DLLS if not (folder / name).is_file()]
    if missing:
        raise ChainMissing(f"DMLCONF_VKD3D_PROTON={given}: no {' or '.join(missing)} there")
    for name in VKD3D_DLLS:
        problem = pe_problem(folder / name)
        if problem:
            raise ChainMissing(f"DMLCONF_VKD3D_PROTON={given}: {name} is {problem}")
    return folder


def find_display(environ: Mapping[str, str]) -> str:
    display = environ.get("DISPLAY", "")
    if not display:
        raise ChainMissing(
            f"DISPLAY is not set: Wine reaches Vulkan through X11; {SET_UP}, or start one "
            "(Xvfb :93 -screen 0 640x480x24 &) and export DISPLAY=:93"
        )
    return display


def _downloaded(cache: Path, version: str) -> Path | None:
    found = sorted((cache / "wheels").glob(f"onnxruntime_directml-{version}-*win_amd64.whl"))
    return found[-1] if found else None


def find_wheel(
    environ: Mapping[str, str], cache: Path, download: bool, version: str = NEWEST_BUILD.onnxruntime
) -> Path:
    """The onnxruntime-directml ``version`` wheel: for the newest build, the one DMLCONF_ORT_DIRECTML_WHEEL names;
    else the cache's; else (``download``) one pip fetches into the cache."""
    given = environ.get("DMLCONF_ORT_DIRECTML_WHEEL")
    if given and version == NEWEST_BUILD.onnxruntime:
        if not zipfile.is_zipfile(given):
            raise ChainMissing(f"DMLCONF_ORT_DIRECTML_WHEEL={given}: not a wheel")
        return Path(given)
    found = _downloaded(cache, version)
    if found is not None or not download:
        if found is None:
            raise ChainMissing(f"no onnxruntime-directml {version} wheel in {cache / 'wheels'}")
        return found
    log.info("downloading onnxruntime-directml %s (win_amd64) into %s", version, cache / "wheels")
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
        "--platform", "win_amd64", "--python-version", "3.12", "--implementation", "cp",
        "--dest", str(cache / "wheels"), f"onnxruntime-directml=={version}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    found = _downloaded(cache, version)
    if done.returncode != 0 or found is None:
        last = (done.stderr.strip().splitlines() or ["no wheel came"])[-1]
        raise ChainMissing(
            f"cannot download onnxruntime-directml {version} for win_amd64 ({last}); put its wheel in "
            f"{cache / 'wheels'}"
            + (" or set DMLCONF_ORT_DIRECTML_WHEEL" if version == NEWEST_BUILD.onnxruntime else "")
        )
    return found


def _runner_source() -> bytes:
    return resources.files("conformance.ep.wine").joinpath(RUNNER_SOURCE).read_bytes()


def _digest(*parts: bytes) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part).digest())
    return digest.hexdigest()[:16]


_DIGESTS: dict[tuple[str, int, int, int, int], bytes] = {}  # file_digest's, by the file's path and stat


def file_digest(path: Path) -> bytes:
    """The file's SHA-256, hashed once per process: kept by its path, device, inode, size and modification time, so
    that a file replaced or written since is hashed again (staging verifies a folder that a run's identity then
    hashes too: device.py)."""
    with open(path, "rb") as file:
        stat = os.fstat(file.fileno())
        key = (os.fspath(path), stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if key not in _DIGESTS:
            _DIGESTS[key] = hashlib.file_digest(file, "sha256").digest()
        return _DIGESTS[key]


def _ziglang_installed() -> bool:
    """Whether this Python can run ``-m ziglang`` (the ziglang distribution's zig)."""
    return importlib.util.find_spec("ziglang") is not None


def _mingw_version(program: str) -> str:
    try:
        done = subprocess.run(
            [program, "-dumpversion"], capture_output=True, text=True, timeout=_VERSION_SECONDS, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return "version unknown"
    return done.stdout.strip() or "version unknown"


def _zig_version() -> str:
    try:
        return importlib.metadata.version("ziglang")
    except importlib.metadata.PackageNotFoundError:
        return "version unknown"


def _mingw(environ: Mapping[str, str], why: str) -> Compiler | None:
    found = shutil.which(MINGW, path=environ.get("PATH", os.defpath))
    return Compiler("mingw", (found,), _mingw_version(found), why) if found else None


def _zig(why: str) -> Compiler | None:
    if not _ziglang_installed():
        return None
    return Compiler("zig", (sys.executable, "-m", "ziglang", "cc", "-target", ZIG_TARGET), _zig_version(), why)


def find_compiler(environ: Mapping[str, str]) -> Compiler:
    """The compiler that builds the runner, chosen here only: the one DMLCONF_RUNNER_CC names; else mingw-w64's gcc
    where it is on PATH; else zig where the ziglang module is installed; else ChainMissing naming both ways to get
    one."""
    given = environ.get(RUNNER_CC, "")
    if given == "mingw":
        named = _mingw(environ, f"{RUNNER_CC}=mingw")
        if named is None:
            raise ChainMissing(f"{RUNNER_CC}=mingw: {MINGW} is not on PATH: apt-get install gcc-mingw-w64-x86-64")
        return named
    if given == "zig":
        named = _zig(f"{RUNNER_CC}=zig")
        if named is None:
            raise ChainMissing(f"{RUNNER_CC}=zig: the ziglang module is not installed: pip install ziglang")
        return named
    if given:
        raise ChainMissing(f"{RUNNER_CC}={given}: not one of {', '.join(COMPILERS)}")
    found = _mingw(environ, f"{MINGW} is on PATH") or _zig(f"{MINGW} is not on PATH and ziglang is installed")
    found = found or _built_elsewhere(make_cache(environ))
    if found is None:
        raise ChainMissing(
            f"no C compiler for the runner (it is built once): {MINGW} is not on PATH and the ziglang module is not "
            f"installed: apt-get install gcc-mingw-w64-x86-64, or pip install ziglang"
        )
    return found


BUILT_BY = "built-by.txt"  # beside a cached runner: its source's SHA-256, the compiler that built it, its SHA-256


def _built_from_this_source(cache: Path) -> tuple[Path, str] | None:
    """A runner in the cache whose built-by.txt names this very source's hash, and the compiler that built it."""
    digest = hashlib.sha256(_runner_source()).hexdigest()
    for record in sorted((cache / "runner").glob(f"*/{BUILT_BY}")):
        lines = record.read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) >= 2 and lines[0] == digest and (record.parent / RUNNER).is_file():
            return record.parent / RUNNER, lines[1]
    return None


def _built_elsewhere(cache: Path) -> Compiler | None:
    """Where no compiler is here (a GPU machine, say): a runner built from this very source on another machine and
    copied into this cache's runner folder (its built-by.txt names the source's hash), used as it is."""
    found = _built_from_this_source(cache)
    if found is None:
        return None
    why = f"no compiler here; a runner built from this source by {found[1]} is in the cache"
    return Compiler("cached", (), found[1], why)


def _runner_damage(built: Path) -> str | None:
    """How the cached runner ``built`` differs from the program that was built (its SHA-256 against the one its
    built-by.txt records), or None: the same, or a built-by.txt of an older dmlconf that records none."""
    try:
        lines = (built.parent / BUILT_BY).read_text(encoding="utf-8", errors="replace").splitlines()
        if len(lines) < 3:
            return None
        got = file_digest(built).hex()
    except OSError as error:
        return f"unreadable ({error.strerror or error})"
    return None if got == lines[2] else f"sha256 {got[:12]}…, not the {lines[2][:12]}… that {BUILT_BY} records"


def compile_runner(
    compiler: Compiler, work: Path, cache: Path, flags: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    """``work``'s dmlrunner.c compiled there into dmlrunner.exe, with ``flags`` besides the build's own (a test's
    warning flags); zig keeps what it builds once (the MinGW C runtime) in the harness's cache unless the user named
    a zig cache."""
    command = [*compiler.command, *_RUNNER_FLAGS, *flags, RUNNER_SOURCE, "-o", RUNNER, *_RUNNER_LIBRARIES]
    env = dict(os.environ)
    if compiler.name == "zig":
        env.setdefault("ZIG_GLOBAL_CACHE_DIR", str(cache / "zig"))
        env.setdefault("ZIG_LOCAL_CACHE_DIR", str(cache / "zig"))
    try:
        return subprocess.run(
            command, cwd=work, env=env, capture_output=True, text=True, timeout=_BUILD_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise ChainMissing(f"{compiler} did not build the runner in {_BUILD_SECONDS} s") from None


def build_runner(cache: Path, compiler: Compiler) -> Path:
    """dmlrunner.exe built from the shipped source by ``compiler``, kept in the cache by the source's hash and the
    compiler."""
    source = _runner_source()
    if compiler.name == "cached":  # built elsewhere from this source (_built_elsewhere)
        found = _built_from_this_source(cache)
        if found is None:
            raise ChainMissing(
                f"{cache / 'runner'}: the runner built elsewhere from this source is gone; build it again"
            )
        damage = _runner_damage(found[0])
        if damage is not None:
            raise ChainMissing(
                f"{found[0]} is damaged ({damage}) and no compiler here builds it again: copy it again from where "
                f"it was built, or install one ({MINGW}, or pip install ziglang)"
            )
        return found[0]
    built = cache / "runner" / _digest(source, f"{compiler.name} {compiler.version}".encode()) / RUNNER
    if built.is_file():
        damage = _runner_damage(built)
        if damage is None:
            return built
        log.warning("%s is damaged (%s): built again", built, damage)
    make_folder(built.parent)
    try:
        with tempfile.TemporaryDirectory(dir=built.parent) as work:
            (Path(work) / RUNNER_SOURCE).write_bytes(source)
            done = compile_runner(compiler, Path(work), cache)
            if done.returncode != 0:
                last = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise ChainMissing(f"{compiler} could not build the runner: {last}")
            digest = file_digest(Path(work) / RUNNER).hex()
            os.replace(Path(work) / RUNNER, built)
            (built.parent / BUILT_BY).write_text(
                f"{hashlib.sha256(source).hexdigest()}\n{compiler}\n{digest}\n", encoding="utf-8"
            )
    except OSError as error:  # a full disk or a read-only cache
        raise ChainMissing(f"{built.parent}: cannot build the runner there: {error.strerror or error}") from None
    return built


_WHEEL_ERRORS = (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, OSError)


def _damaged_wheel(wheel: Path, cache: Path, what: str) -> ChainMissing:
    downloaded = wheel.parent == cache / "wheels"
    again = "delete it: it is downloaded again" if downloaded else "replace it with a good copy"
    return ChainMissing(f"{wheel}: a damaged wheel ({what}): {again}")


def _record(archive: zipfile.ZipFile) -> dict[str, bytes]:
    """The SHA-256 the wheel's RECORD (its .dist-info's, PEP 427) gives each of its files, by the file's path."""
    records = [name for name in archive.namelist() if name.count("/") == 1 and name.endswith(".dist-info/RECORD")]
    found: dict[str, bytes] = {}
    for row in csv.reader(archive.read(records[0]).decode("utf-8", "replace").splitlines() if records else []):
        if len(row) >= 2 and row[1].startswith("sha256="):
            text = row[1].removeprefix("sha256=")
            with contextlib.suppress(ValueError):  # not base64: that file is not recorded
                found[row[0]] = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return found


def _wheel_dlls(
    wheel: Path, names: tuple[str, ...], cache: Path, read: bool = True
) -> tuple[dict[str, bytes], dict[str, bytes]]:
    """(The SHA-256 of each of ``names``, their bytes) from the wheel's onnxruntime/capi: the SHA-256 its RECORD
    gives, else that of the bytes. A DLL is read where ``read`` (or to hash one RECORD does not list), and its bytes
    checked against RECORD. ChainMissing where the wheel lacks one or is damaged (a download cut short, a flipped
    byte: reading a member checks its CRC, and RECORD its SHA-256)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            members = {Path(name).name: name for name in archive.namelist() if name.startswith("onnxruntime/capi/")}
            absent = [name for name in names if name not in members]
            if absent:
                raise ChainMissing(f"{wheel}: not an onnxruntime-directml win_amd64 wheel (no {', '.join(absent)})")
            record = _record(archive)
            digests = {name: record[members[name]] for name in names if members[name] in record}
            data: dict[str, bytes] = {}
            for name in names:
                if read or name not in digests:
                    data[name] = archive.read(members[name])
                    got = hashlib.sha256(data[name]).digest()
                    if digests.setdefault(name, got) != got:
                        raise _damaged_wheel(wheel, cache, f"{name}'s sha256 is not the one its RECORD gives")
            return digests, data
    except _WHEEL_ERRORS as error:
        raise _damaged_wheel(wheel, cache, " ".join(str(error).split()) or type(error).__name__) from None


def check_wheel(wheel: Path, cache: Path) -> None:
    """ChainMissing where ``wheel`` lacks one of the three DLLs or cannot be read whole (what staging it would find)."""
    _wheel_dlls(wheel, WHEEL_DLLS, cache)


def _unlike(folder: Path, expected: Mapping[str, bytes]) -> list[str] | None:
    """How a staged ``folder`` differs from what staging it wrote (``expected``: each file's SHA-256): [] where every
    file is there with its SHA-256, None where there is no folder (nothing was staged)."""
    if not os.path.lexists(folder):
        return None
    if not folder.is_dir():
        return ["it is not a folder"]
    wrong = []
    for name, digest in expected.items():
        try:
            got = file_digest(folder / name)
        except FileNotFoundError:
            wrong.append(f"{name} is missing")
        except OSError as error:
            wrong.append(f"{name} is unreadable ({error.strerror or error})")
        else:
            if got != digest:
                wrong.append(f"{name} is damaged (sha256 {got.hex()[:12]}…, not {digest.hex()[:12]}…)")
    return wrong


def _stage(runner: Path, wheel: Path, directml_wheel: Path, vkd3d: Path, cache: Path) -> Path:
    """A folder with the runner, onnxruntime's two DLLs from ``wheel``, DirectML.dll from ``directml_wheel`` and
    vkd3d-proton's two, named by their contents' hash. One that is there is used once each file in it has its
    source's SHA-256 (the runner's and vkd3d-proton's own, the DLLs' in their wheel's RECORD); else it is staged
    again, which is said in one line."""
    parts = (runner, wheel, directml_wheel, *(vkd3d / name for name in VKD3D_DLLS))
    digests = {part: file_digest(part) for part in dict.fromkeys(parts)}  # the newest build's one wheel: hashed once
    folder = cache / "staged" / _digest(*(digests[part] for part in parts))
    taken = {wheel: ONNXRUNTIME_DLLS}  # each wheel's DLLs, so that the newest build's one wheel is opened once
    taken[directml_wheel] = (*taken.get(directml_wheel, ()), DIRECTML_DLL)
    expected = {RUNNER: digests[runner]} | {name: digests[vkd3d / name] for name in VKD3D_DLLS}
    for source, names in taken.items():
        expected |= _wheel_dlls(source, names, cache, read=False)[0]
    wrong = _unlike(folder, expected)
    if wrong == []:
        return folder
    dlls: dict[str, bytes] = {}
    for source, names in taken.items():
        dlls |= _wheel_dlls(source, names, cache)[1]

    def fill(work: Path) -> None:
        for name, data in dlls.items():
            (work / name).write_bytes(data)
        for name in VKD3D_DLLS:
            shutil.copyfile(vkd3d / name, work / name)
        shutil.copyfile(runner, work / RUNNER)

    return _publish(folder, fill, wrong)


def _publish(folder: Path, fill: Callable[[Path], None], wrong: list[str] | None = None) -> Path:
    """``folder`` made whole at once: ``fill`` writes a fresh folder beside it, which is then renamed to it, so that
    a half-staged folder is never taken for a staged one (another process staging the same one first wins). A folder
    there that is ``wrong`` (damaged: _unlike) is set aside first, and its staging again said in one line."""
    make_folder(folder.parent)
    try:
        work = Path(tempfile.mkdtemp(dir=folder.parent))
    except OSError as error:
        raise ChainMissing(f"{folder.parent}: cannot stage the DLLs there: {error.strerror or error}") from None
    try:
        fill(work)
    except OSError as error:  # a full disk: nothing half-staged is left to be taken for a staged folder
        shutil.rmtree(work, ignore_errors=True)
        raise ChainMissing(f"{folder.parent}: cannot stage the DLLs there: {error.strerror or error}") from None
    if wrong:
        _set_aside(folder, work, "; ".join(wrong))
    try:
        work.rename(folder)
    except OSError:  # another process staged it first
        shutil.rmtree(work, ignore_errors=True)
    if wrong:
        log.warning("%s: %s: staged again", folder, "; ".join(wrong))
    return folder


def _set_aside(folder: Path, work: Path, wrong: str) -> None:
    """The damaged staged ``folder`` moved out of the way and deleted, so that ``work`` takes its name (where another
    process staging it again moved it first, nothing is left to move); ChainMissing saying to delete it where it
    cannot be moved (a DLL in use on Windows)."""
    aside = folder.with_name(f"{folder.name}.damaged-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        folder.rename(aside)
    except FileNotFoundError:
        return
    except OSError as error:
        shutil.rmtree(work, ignore_errors=True)
        raise ChainMissing(
            f"{folder}: {wrong}, and it cannot be staged again ({error.strerror or error}): delete that folder"
        ) from None
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def installed_capi(folder: str | None = None) -> Path:
    """Windows: the installed onnxruntime-directml's capi folder (``folder``, else directml.capi_folder's), holding
    the three DLLs the runner loads, each an x86-64 PE file; ChainMissing naming what is not there."""
    if folder is None:
        try:
            folder = directml.capi_folder()
        except ImportError:
            raise ChainMissing(
                'onnxruntime-directml is not installed: pip install -e ".[directml]" (the runner loads its DLLs)'
            ) from None
    capi = Path(folder)
    missing = [name for name in WHEEL_DLLS if not (capi / name).is_file()]
    if missing:
        raise ChainMissing(
            f"{capi}: no {' or '.join(missing)} there: the installed onnxruntime is not onnxruntime-directml "
            "(pip uninstall onnxruntime, then pip install onnxruntime-directml)"
        )
    for name in WHEEL_DLLS:
        problem = pe_problem(capi / name)
        if problem:
            raise ChainMissing(f"{capi / name}: {problem}")
    return capi


def _stage_native(runner: Path, capi: Path, cache: Path) -> Path:
    """A folder with the runner and copies of ``capi``'s three DLLs, named by their contents' hash; one that is there
    is used once each file in it has its source's SHA-256, else staged again (as _stage's)."""
    parts = (runner, *(capi / name for name in WHEEL_DLLS))
    digests = [file_digest(part) for part in parts]
    folder = cache / "staged" / _digest(*digests)
    wrong = _unlike(folder, dict(zip((RUNNER, *WHEEL_DLLS), digests, strict=True)))
    if wrong == []:
        return folder

    def fill(work: Path) -> None:
        for name in WHEEL_DLLS:
            shutil.copyfile(capi / name, work / name)
        shutil.copy(runner, work / RUNNER)  # run as itself: its mode kept (an executable bit where there is one)

    return _publish(folder, fill, wrong)


def ensure_prefix(wine: str, prefix: Path, environ: Mapping[str, str]) -> None:
    """A Wine prefix at ``prefix``: one that is there is used as it is; else ``wineboot -i`` makes it (seconds).
    A prefix is there once it has ``drive_c``: wineserver writes the registry files (system.reg) only later, when it
    exits, so a prefix made a moment ago may not have them yet."""
    if (prefix / "drive_c").is_dir():
        return
    make_folder(prefix, "WINEPREFIX" if environ.get("WINEPREFIX") else None)  # Wine makes a prefix in an empty one
    env = dict(environ) | {"WINEPREFIX": str(prefix), "WINEDLLOVERRIDES": "mscoree,mshtml=", "WINEDEBUG": "-all"}
    log.info("creating the Wine prefix %s", prefix)
    try:
        done = subprocess.run(
            [wine, "wineboot", "-i"], env=env, capture_output=True, text=True, timeout=_WINEBOOT_SECONDS, check=False
        )
    except subprocess.TimeoutExpired:
        raise ChainMissing(f"wineboot -i did not finish in {_WINEBOOT_SECONDS} s making the prefix {prefix}") from None
    if done.returncode != 0 or not (prefix / "drive_c").is_dir():
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        raise ChainMissing(f"wineboot could not make the Wine prefix {prefix}: {last}")


def find_chain(environ: Mapping[str, str] | None = None, build: Build = NEWEST_BUILD) -> RunnerChain:
    """The chain the runner runs on here, chosen here only: on Windows the native one (find_native_chain); elsewhere
    every piece found, the runner built, ``build``'s folder staged and the prefix made. ChainMissing naming the first
    piece that is not there."""
    env = os.environ if environ is None else environ
    if sys.platform == "win32":
        return find_native_chain(env, build)
    cache = make_cache(env)
    wine = find_wine(env)
    vkd3d = find_vkd3d_proton(env)
    display = find_display(env)
    wheel = find_wheel(env, cache, True, build.onnxruntime)
    same = build.directml_wheel == build.onnxruntime  # both DLLs from one wheel, as in the newest build
    directml_wheel = wheel if same else find_wheel(env, cache, True, build.directml_wheel)
    prefix = Path(env.get("WINEPREFIX") or cache / "wine-prefix")
    icd = None
    if build.reference:
        icd = reference_icd(env)
        prefix = Path(env.get(REFERENCE_PREFIX) or f"{prefix}-reference")
    compiler = find_compiler(env)
    runner = build_runner(cache, compiler)
    folder = _stage(runner, wheel, directml_wheel, vkd3d, cache)
    ensure_prefix(wine, prefix, env)
    return Chain(wine, vkd3d, wheel, display, prefix, folder, build, directml_wheel, compiler=compiler, vulkan_icd=icd)


REFERENCE_ICD = "DMLCONF_REFERENCE_ICD"
REFERENCE_PREFIX = "DMLCONF_REFERENCE_PREFIX"
LAVAPIPE_ICD = "DMLWINE_LAVAPIPE_ICD"  # what ../shared/dml-wine's env.sh and local-env.sh export
_ICD_FOLDERS = ("/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d")  # the Vulkan loader's system folders


def reference_icd(environ: Mapping[str, str]) -> str:
    """The reference adapter's Vulkan driver under Wine: lavapipe's ICD json, as DMLCONF_REFERENCE_ICD (else
    DMLWINE_LAVAPIPE_ICD) names it, else the system's lavapipe; ChainMissing where there is none."""
    for variable in (REFERENCE_ICD, LAVAPIPE_ICD):
        given = environ.get(variable)
        if given:
            if not Path(given).is_file():
                raise ChainMissing(f"{variable}={given}: no such file (the reference adapter's Vulkan ICD json)")
            return given
    for folder in _ICD_FOLDERS:  # Mesa's packaged lavapipe, where the system has one
        found = sorted(Path(folder).glob("lvp_icd*.json"))
        if found:
            return str(found[0])
    raise ChainMissing(
        f"the reference adapter under Wine is lavapipe: set {REFERENCE_ICD} to its Vulkan ICD json "
        "(lvp_icd.json of a Mesa recent enough for vkd3d-proton; docs/triage.md#the-reference-adapter)"
    )


def find_native_chain(
    environ: Mapping[str, str] | None = None, build: Build = NEWEST_BUILD, capi: str | None = None
) -> NativeChain:
    """Windows: the runner built (find_compiler: mingw-w64 or pip's ziglang) and staged beside copies of the installed
    onnxruntime-directml's DLLs (``capi``, else its capi folder). A build other than the installed one is refused
    before this (dml_here), so ``build`` is only the runner's key."""
    env = os.environ if environ is None else environ
    cache = make_cache(env)
    found = installed_capi(capi)
    compiler = find_compiler(env)
    runner = build_runner(cache, compiler)
    return NativeChain(found, _stage_native(runner, found, cache), build, compiler)

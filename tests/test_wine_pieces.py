"""The DirectML chain's pieces when they are there but unusable: a cache or Wine prefix that cannot be created, a
damaged onnxruntime-directml wheel, DLLs that are not vkd3d-proton's, and a D3D12 device that cannot be created.
``dmlconf run --ep dml`` says so in one line (exit 2, a usage error: nothing has run), ``dmlconf doctor`` on the
broken link's line (exit 1); never a traceback.

Most of these need no Wine: the chain is made of stand-ins (a Wine that is never started, DLLs that are only PE
headers, a compiler that writes a file), since every check here happens before the runner starts. The ones that
need the real chain say so and are skipped without it (failed in CI), as tests/test_wine_chain.py's are.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conformance.ep.directml import NEWEST_BUILD

REPO = Path(__file__).resolve().parent.parent
CASES = "cases/top_k1/spec_examples.yaml"
WHEEL_NAME = f"onnxruntime_directml-{NEWEST_BUILD.onnxruntime}-cp312-cp312-win_amd64.whl"
WHEEL_DLLS = ("onnxruntime.dll", "onnxruntime_providers_shared.dll", "DirectML.dll")

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no Wine chain")


def pe_file(machine: int = 0x8664, text: bytes = b"") -> bytes:
    """The smallest file the PE format recognises: an MZ header whose e_lfanew (at 0x3C) points at "PE\\0\\0" and a
    COFF header's machine field (Microsoft's PE format specification), then ``text``."""
    mz = b"MZ" + bytes(0x3A) + (0x40).to_bytes(4, "little")
    return mz + b"PE\0\0" + machine.to_bytes(2, "little") + bytes(18) + text


VKD3D_TEXT = b"\0err:vkd3d-proton:%s\0vkd3d\x003.0.1\0"  # as vkd3d-proton's DLLs carry them (log prefix, engine)


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755)


def _wheel(path: Path) -> Path:
    """A stand-in wheel: the three DLLs (incompressible enough that a flipped byte breaks the deflate stream or the
    CRC) under onnxruntime/capi/."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for index, name in enumerate(WHEEL_DLLS):
            archive.writestr(f"onnxruntime/capi/{name}", pe_file() + os.urandom(20000) + bytes([index]) * 20000)
    return path


def _damaged(wheel: Path) -> Path:
    """``wheel`` with bytes flipped in the middle of its first member's compressed data (the central directory is
    intact, so it is still a zip file by its end record)."""
    with zipfile.ZipFile(wheel) as archive:
        first = archive.infolist()[0]
    data = bytearray(wheel.read_bytes())
    start = first.header_offset + 30 + len(first.filename) + 200
    for offset in range(start, start + 64):
        data[offset] ^= 0xFF
    damaged = wheel.with_name("damaged-" + wheel.name)
    damaged.write_bytes(bytes(data))
    return damaged


@pytest.fixture
def stand_ins(tmp_path: Path) -> dict[str, str]:
    """The environment of a chain made of stand-ins: every piece there and of the right kind."""
    bin_dir, vkd3d = tmp_path / "bin", tmp_path / "vkd3d"
    bin_dir.mkdir()
    vkd3d.mkdir()
    _script(bin_dir / "wine", 'echo "wine-9.0 (stand-in)"')
    _script(bin_dir / "x86_64-w64-mingw32-gcc", 'while [ $# -gt 1 ]; do [ "$1" = -o ] && printf MZ > "$2"; shift; done')
    for name in ("d3d12.dll", "d3d12core.dll"):
        (vkd3d / name).write_bytes(pe_file(text=VKD3D_TEXT))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("DMLCONF_", "WINE"))}
    return env | {
        "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', os.defpath)}",
        "PYTHONPATH": str(REPO),
        "DMLCONF_WINE": str(bin_dir / "wine"),
        "DMLCONF_VKD3D_PROTON": str(vkd3d),
        "DMLCONF_ORT_DIRECTML_WHEEL": str(_wheel(tmp_path / WHEEL_NAME)),
        "DMLCONF_CACHE": str(tmp_path / "cache"),
        "WINEPREFIX": str(tmp_path / "prefix"),
        "DISPLAY": "localhost:7",  # not a local one: doctor does not look for its socket
    }


def _dmlconf(env: dict[str, str], *args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
        check=False,
    )  # fmt: skip


def _run_refuses(env: dict[str, str], tmp_path: Path, expected: str) -> None:
    """``dmlconf run --ep dml`` stops before anything runs: exit 2, one line on stderr, ``expected`` in it."""
    done = _dmlconf(env, "run", CASES, "--ep", "dml", "--report-dir", str(tmp_path / "report"))
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.splitlines() == [f"dmlconf: --ep dml: {expected}"]


def _doctor_fails_at(env: dict[str, str], link: str, expected: str) -> None:
    """``dmlconf doctor`` stops at ``link``: exit 1, its line FAIL with ``expected``, no traceback."""
    done = _dmlconf(env, "doctor")
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stdout + done.stderr
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [f"FAIL {link + ':':<22} {expected}"], done.stdout


def test_a_wine_prefix_that_cannot_be_created_is_one_line(stand_ins: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    env = stand_ins | {"WINEPREFIX": str(tmp_path / "a-file" / "prefix")}
    expected = f"WINEPREFIX={tmp_path}/a-file/prefix: cannot create it: {tmp_path}/a-file is a file, not a folder"
    _run_refuses(env, tmp_path, expected)
    _doctor_fails_at(env, "Wine prefix", expected)


def test_a_cache_that_cannot_be_created_is_one_line(stand_ins: dict[str, str], tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    env = stand_ins | {"DMLCONF_CACHE": str(tmp_path / "a-file" / "cache")}
    expected = f"DMLCONF_CACHE={tmp_path}/a-file/cache: cannot create it: {tmp_path}/a-file is a file, not a folder"
    _run_refuses(env, tmp_path, expected)
    _doctor_fails_at(env, "onnxruntime-directml", expected)


def test_a_damaged_wheel_that_was_given_is_one_line(stand_ins: dict[str, str], tmp_path: Path) -> None:
    damaged = _damaged(Path(stand_ins["DMLCONF_ORT_DIRECTML_WHEEL"]))
    assert zipfile.is_zipfile(damaged)  # the damage is inside: only reading a member finds it
    env = stand_ins | {"DMLCONF_ORT_DIRECTML_WHEEL": str(damaged)}
    done = _dmlconf(env, "run", CASES, "--ep", "dml", "--report-dir", str(tmp_path / "report"))
    assert "Traceback" not in done.stderr and done.returncode == 2, done.stderr
    [line] = done.stderr.splitlines()
    assert line.startswith(f"dmlconf: --ep dml: {damaged}: a damaged wheel (") and line.endswith(
        "): replace it with a good copy"
    )
    done = _dmlconf(env, "doctor")
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stderr
    [failed] = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert failed.startswith(f"FAIL onnxruntime-directml:  {damaged}: a damaged wheel (")


def test_a_damaged_wheel_in_the_cache_is_one_line_saying_to_delete_it(
    stand_ins: dict[str, str], tmp_path: Path
) -> None:
    cached = tmp_path / "cache" / "wheels" / WHEEL_NAME
    cached.parent.mkdir(parents=True)
    whole = Path(stand_ins["DMLCONF_ORT_DIRECTML_WHEEL"]).read_bytes()
    cached.write_bytes(whole[: len(whole) // 2])  # a download cut short
    env = {key: value for key, value in stand_ins.items() if key != "DMLCONF_ORT_DIRECTML_WHEEL"}
    expected = f"{cached}: a damaged wheel (File is not a zip file): delete it: it is downloaded again"
    _run_refuses(env, tmp_path, expected)
    _doctor_fails_at(env, "onnxruntime-directml", expected)

"""The DirectML chain's pieces when they are there but unusable: a cache or Wine prefix that cannot be created, a
damaged onnxruntime-directml wheel, DLLs that are not vkd3d-proton's, and a D3D12 device that cannot be created.
``dmlconf run --ep dml`` says so in one line (exit 2, a usage error: nothing has run), ``dmlconf doctor`` on the
broken link's line (exit 1); never a traceback.

Most of these need no Wine: the chain is made of stand-ins (a Wine that is never started, DLLs that are only PE
headers, a compiler that writes a file), since every check here happens before the runner starts. The ones that
need the real chain say so and are skipped without it (failed in CI), as tests/test_wine_chain.py's are.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from chain_fakes import pe_file

from conformance.ep.directml import NEWEST_BUILD
from conformance.ep.wine import chain
from conformance.ep.wine.diagnose import likely_cause, named_hresults
from conformance.ep.wine.doctor import Link, links

REPO = Path(__file__).resolve().parent.parent
CASES = "cases/top_k1/spec_examples.yaml"
WHEEL_NAME = f"onnxruntime_directml-{NEWEST_BUILD.onnxruntime}-cp312-cp312-win_amd64.whl"
WHEEL_DLLS = ("onnxruntime.dll", "onnxruntime_providers_shared.dll", "DirectML.dll")
MINGW = "x86_64-w64-mingw32-gcc"

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no Wine chain")


VKD3D_TEXT = b"\0err:vkd3d-proton:%s\0vkd3d\x003.0.1\0"  # as vkd3d-proton's DLLs carry them (log prefix, engine)


def _script(path: Path, body: str) -> None:
    path.write_text("#!/bin/sh\n" + body + "\n", encoding="utf-8")
    path.chmod(0o755)


def _recorded(data: bytes) -> str:
    """A file's hash as a wheel's RECORD writes it (PEP 376): sha256=, urlsafe base64 without padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def _wheel(path: Path, record: bool = True, wrong: str = "") -> Path:
    """A stand-in wheel: the three DLLs (incompressible enough that a flipped byte breaks the deflate stream or the
    CRC) under onnxruntime/capi/, and (``record``) a RECORD with their hashes, ``wrong``'s not its own."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        rows = []
        for index, name in enumerate(WHEEL_DLLS):
            data = pe_file() + os.urandom(20000) + bytes([index]) * 20000
            archive.writestr(f"onnxruntime/capi/{name}", data)
            rows.append(f"onnxruntime/capi/{name},{_recorded(data + b'!' if name == wrong else data)},{len(data)}\n")
        if record:
            info = f"onnxruntime_directml-{NEWEST_BUILD.onnxruntime}.dist-info"
            archive.writestr(f"{info}/RECORD", "".join(rows) + f"{info}/RECORD,,\n")
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


def _stand_in_mingw(bin_dir: Path) -> None:
    """A mingw-w64 gcc that says its version and writes "MZ" where -o says."""
    _script(
        bin_dir / MINGW,
        '[ "$1" = -dumpversion ] && { echo 12-stand-in; exit 0; }\n'
        'while [ $# -gt 1 ]; do [ "$1" = -o ] && printf MZ > "$2"; shift; done',
    )


def _stand_in_ziglang(folder: Path) -> Path:
    """A ziglang distribution (0.0.1) whose ``python -m ziglang cc`` writes "MZ zig" where -o says; ``folder`` is
    for PYTHONPATH, before any real one."""
    (folder / "ziglang").mkdir(parents=True)
    (folder / "ziglang" / "__init__.py").write_text("", encoding="utf-8")
    (folder / "ziglang" / "__main__.py").write_text(
        "import sys\nargs = sys.argv[1:]\nopen(args[args.index('-o') + 1], 'wb').write(b'MZ zig')\n", encoding="utf-8"
    )
    (folder / "ziglang-0.0.1.dist-info").mkdir()
    (folder / "ziglang-0.0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ziglang\nVersion: 0.0.1\n", encoding="utf-8"
    )
    return folder


@pytest.fixture
def stand_ins(tmp_path: Path) -> dict[str, str]:
    """The environment of a chain made of stand-ins: every piece there and of the right kind."""
    bin_dir, vkd3d = tmp_path / "bin", tmp_path / "vkd3d"
    bin_dir.mkdir()
    vkd3d.mkdir()
    _script(bin_dir / "wine", 'echo "wine-9.0 (stand-in)"')
    _stand_in_mingw(bin_dir)
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


def test_a_dll_unlike_its_wheel_s_record_is_a_damaged_wheel(stand_ins: dict[str, str], tmp_path: Path) -> None:
    # The member reads whole (its CRC holds), but its bytes are not those the wheel's RECORD gives the hash of.
    (tmp_path / "recorded").mkdir()
    wheel = _wheel(tmp_path / "recorded" / WHEEL_NAME, wrong="DirectML.dll")
    env = stand_ins | {"DMLCONF_ORT_DIRECTML_WHEEL": str(wheel)}
    expected = (
        f"{wheel}: a damaged wheel (DirectML.dll's sha256 is not the one its RECORD gives): replace it with a good copy"
    )
    _run_refuses(env, tmp_path, expected)
    _doctor_fails_at(env, "onnxruntime-directml", expected)


# What the cache keeps is checked by its SHA-256 each time a process finds the chain: a damaged piece is made again.


def _found(env: dict[str, str]) -> chain.Chain:
    """The chain of the stand-ins, found as a new process finds it: every file hashed afresh (chain.file_digest keeps
    each file's hash for the rest of a process), the prefix there (the stand-in Wine makes none)."""
    chain._DIGESTS.clear()
    (Path(env["WINEPREFIX"]) / "drive_c").mkdir(parents=True, exist_ok=True)
    found = chain.find_chain(env)
    assert isinstance(found, chain.Chain)
    return found


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    ("name", "record", "damage"),
    [
        ("dmlrunner.exe", True, "flip"),
        ("DirectML.dll", True, "flip"),
        ("DirectML.dll", False, "flip"),  # a wheel whose RECORD lists nothing: the DLL's own bytes in it are the hash
        ("d3d12core.dll", True, "delete"),
    ],
)
def test_a_damaged_staged_file_is_staged_again_in_one_line(
    stand_ins: dict[str, str], tmp_path: Path, caplog: pytest.LogCaptureFixture, name: str, record: bool, damage: str
) -> None:
    (tmp_path / "given").mkdir()
    env = stand_ins | {"DMLCONF_ORT_DIRECTML_WHEEL": str(_wheel(tmp_path / "given" / WHEEL_NAME, record))}
    staged = _found(env).folder
    sources = {  # what staging copies into the folder, read here from where each comes from
        "dmlrunner.exe": next((tmp_path / "cache" / "runner").glob("*/dmlrunner.exe")).read_bytes(),
        "DirectML.dll": zipfile.ZipFile(env["DMLCONF_ORT_DIRECTML_WHEEL"]).read("onnxruntime/capi/DirectML.dll"),
        "d3d12core.dll": (Path(env["DMLCONF_VKD3D_PROTON"]) / "d3d12core.dll").read_bytes(),
    }
    assert (staged / name).read_bytes() == sources[name]
    if damage == "flip":
        data = bytearray(sources[name])
        data[1] ^= 0xFF
        (staged / name).write_bytes(bytes(data))
        said = f"{name} is damaged (sha256 {_sha256(bytes(data))[:12]}…, not {_sha256(sources[name])[:12]}…)"
    else:
        (staged / name).unlink()
        said = f"{name} is missing"
    caplog.clear()
    assert _found(env).folder == staged  # the same sources: the same folder, made whole again
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [f"{staged}: {said}: staged again"]
    assert (staged / name).read_bytes() == sources[name]
    assert [path.name for path in staged.parent.iterdir()] == [staged.name]  # the damaged folder is not left behind
    caplog.clear()
    assert _found(env).folder == staged and not caplog.records  # whole now: nothing more to say


def test_a_damaged_built_runner_is_built_again_in_one_line(
    stand_ins: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    staged = _found(stand_ins).folder
    [built] = (Path(stand_ins["DMLCONF_CACHE"]) / "runner").glob("*/dmlrunner.exe")
    assert built.read_bytes() == b"MZ"  # what the stand-in gcc writes
    assert (built.parent / "built-by.txt").read_text().splitlines()[2] == _sha256(b"MZ")
    built.write_bytes(b"MX")
    caplog.clear()
    assert _found(stand_ins).folder == staged  # built again, the same program: the same staged folder
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == [
        f"{built} is damaged (sha256 {_sha256(b'MX')[:12]}…, not the {_sha256(b'MZ')[:12]}… that built-by.txt "
        "records): built again"
    ]
    assert built.read_bytes() == (staged / "dmlrunner.exe").read_bytes() == b"MZ"


# vkd3d-proton's DLLs: x86-64 PE files (a run checks), vkd3d-proton's own with a version string (doctor checks).


def _vkd3d_link(env: dict[str, str]) -> Link:
    """doctor's vkd3d-proton link, reached through the Wine link before it (a stand-in Wine does)."""
    for link in links(env):
        if link.name == "vkd3d-proton" or not link.ok:
            return link
    raise AssertionError("doctor has no vkd3d-proton link")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (b"this is text, not a DLL\n", "not a PE file (no MZ header)"),
        (b"MZ" + bytes(0x3A) + (0x40).to_bytes(4, "little") + b"NE\0\0", "not a PE file (no PE signature)"),
        (pe_file(machine=0x014C, text=VKD3D_TEXT),
         "a PE file for machine 0x014c, not x86-64 (the runner is 64-bit: take the x64 folder)"),
    ],
)  # fmt: skip
def test_a_vkd3d_proton_dll_that_is_no_x86_64_pe_file_is_named(
    stand_ins: dict[str, str], tmp_path: Path, content: bytes, problem: str
) -> None:
    folder = Path(stand_ins["DMLCONF_VKD3D_PROTON"])
    (folder / "d3d12core.dll").write_bytes(content)
    expected = f"DMLCONF_VKD3D_PROTON={folder}: d3d12core.dll is {problem}"
    assert _vkd3d_link(stand_ins) == Link("vkd3d-proton", False, expected)
    _run_refuses(stand_ins, tmp_path, expected)


WINE_D3D12 = Path("/usr/lib/x86_64-linux-gnu/wine/x86_64-windows/d3d12.dll")  # Debian's Wine 8: its own d3d12


@pytest.mark.parametrize("wine_s", ["stand-in", "Debian's"])
def test_wine_s_own_d3d12_is_refused_as_not_vkd3d_proton_s(stand_ins: dict[str, str], wine_s: str) -> None:
    folder = Path(stand_ins["DMLCONF_VKD3D_PROTON"])
    if wine_s == "stand-in":
        (folder / "d3d12.dll").write_bytes(pe_file(text=b"\0Wine builtin DLL\0Failed to create vkd3d instance\0"))
    elif WINE_D3D12.is_file():
        shutil.copyfile(WINE_D3D12, folder / "d3d12.dll")
    else:
        pytest.skip(f"no {WINE_D3D12} here")
    assert _vkd3d_link(stand_ins) == Link(
        "vkd3d-proton", False,
        f"{folder}: d3d12.dll is x86-64 PE but not vkd3d-proton's (no 'vkd3d-proton' in it: Wine's own d3d12?)",
    )  # fmt: skip


def test_a_d3d12core_without_a_version_string_is_refused(stand_ins: dict[str, str]) -> None:
    folder = Path(stand_ins["DMLCONF_VKD3D_PROTON"])
    (folder / "d3d12core.dll").write_bytes(pe_file(text=b"\0err:vkd3d-proton:%s\0"))
    assert _vkd3d_link(stand_ins) == Link(
        "vkd3d-proton", False, f"{folder / 'd3d12core.dll'}: no vkd3d-proton version string in it"
    )


def _recipe_fact(name: str) -> str:
    text = (REPO / ".ci" / "vkd3d-proton" / "SOURCE.md").read_text(encoding="utf-8")
    found = re.search(rf"^\| {re.escape(name)} \| `([^`]+)` \|$", text, re.MULTILINE)
    assert found
    return found.group(1)


def test_the_real_vkd3d_proton_s_version_is_named(stand_ins: dict[str, str]) -> None:
    given = os.environ.get("DMLCONF_VKD3D_PROTON")
    if not given:
        if os.environ.get("CI") == "true":
            pytest.fail("CI must have DMLCONF_VKD3D_PROTON (source .ci/dml-chain.sh)")
        pytest.skip("DMLCONF_VKD3D_PROTON is not set (source .ci/dml-chain.sh)")
    link = _vkd3d_link(stand_ins | {"DMLCONF_VKD3D_PROTON": given})
    assert link.ok, link
    version = re.fullmatch(rf"vkd3d-proton (\S+) in {re.escape(given)} \(d3d12\.dll, d3d12core\.dll: x86-64 PE\)",
                           link.detail)  # fmt: skip
    assert version, link.detail
    pinned = all(
        hashlib.sha256((Path(given) / name).read_bytes()).hexdigest() == _recipe_fact(f"{name} sha256")
        for name in ("d3d12.dll", "d3d12core.dll")
    )
    if pinned:  # the recipe's build: its version is the pinned tag's
        assert "v" + version.group(1) == _recipe_fact("tag")
    else:
        assert re.fullmatch(r"\d+\.\d+\.\d+", version.group(1))


# The runner's compiler: mingw-w64's gcc where it is on PATH, else zig from the ziglang distribution (a compiler from
# pip alone, as on Windows), DMLCONF_RUNNER_CC naming one; none is one line naming both ways to get one.


def test_the_runner_s_compiler_is_mingw_on_path_else_zig_else_one_line_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with_mingw, without = tmp_path / "with", tmp_path / "without"
    with_mingw.mkdir()
    without.mkdir()
    _stand_in_mingw(with_mingw)
    monkeypatch.setattr(chain, "_ziglang_installed", lambda: True)
    found = chain.find_compiler({"PATH": str(with_mingw)})
    assert (found.name, found.command, found.version, found.why) == (
        "mingw", (str(with_mingw / MINGW),), "12-stand-in", f"{MINGW} is on PATH",
    )  # fmt: skip
    found = chain.find_compiler({"PATH": str(without)})
    assert (found.name, found.command, found.why) == (
        "zig", (sys.executable, "-m", "ziglang", "cc", "-target", "x86_64-windows-gnu"),
        f"{MINGW} is not on PATH and ziglang is installed",
    )  # fmt: skip
    monkeypatch.setattr(chain, "_ziglang_installed", lambda: False)
    with pytest.raises(chain.ChainMissing) as missing:
        chain.find_compiler({"PATH": str(without), "DMLCONF_CACHE": str(tmp_path / "cache")})
    assert str(missing.value) == (
        f"no C compiler for the runner (it is built once): {MINGW} is not on PATH and the ziglang module is not "
        "installed: apt-get install gcc-mingw-w64-x86-64, or pip install ziglang"
    )


def test_without_a_compiler_a_runner_built_elsewhere_from_this_source_is_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A GPU machine has no compiler: the runner built on another machine, copied into its cache, serves."""
    monkeypatch.setattr(chain, "_ziglang_installed", lambda: False)
    cache, source = tmp_path / "cache", (REPO / "conformance/ep/wine/dmlrunner.c").read_bytes()
    built = cache / "runner" / "from-elsewhere"
    built.mkdir(parents=True)
    (built / "dmlrunner.exe").write_bytes(b"MZ stand-in")
    (built / "built-by.txt").write_text(f"{hashlib.sha256(source + b' ').hexdigest()}\ngcc 12\n")  # another source
    environ = {"PATH": str(tmp_path), "DMLCONF_CACHE": str(cache)}
    with pytest.raises(chain.ChainMissing, match="no C compiler"):
        chain.find_compiler(environ)
    (built / "built-by.txt").write_text(f"{hashlib.sha256(source).hexdigest()}\n{MINGW} 12-win32\n")
    found = chain.find_compiler(environ)
    assert (found.name, str(found)) == ("cached", f"{MINGW} 12-win32") and "built from this source" in found.why
    assert chain.build_runner(cache, found) == built / "dmlrunner.exe"


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("zig", "DMLCONF_RUNNER_CC=zig: the ziglang module is not installed: pip install ziglang"),
        ("mingw", f"DMLCONF_RUNNER_CC=mingw: {MINGW} is not on PATH: apt-get install gcc-mingw-w64-x86-64"),
        ("gcc", "DMLCONF_RUNNER_CC=gcc: not one of mingw, zig"),
    ],
)
def test_a_named_compiler_that_is_not_there_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, expected: str
) -> None:
    monkeypatch.setattr(chain, "_ziglang_installed", lambda: given != "zig")
    with pytest.raises(chain.ChainMissing) as missing:
        chain.find_compiler({"PATH": str(tmp_path), "DMLCONF_RUNNER_CC": given})
    assert str(missing.value) == expected


def test_a_compiler_the_harness_does_not_know_is_refused_by_run_and_doctor(
    stand_ins: dict[str, str], tmp_path: Path
) -> None:
    env = stand_ins | {"DMLCONF_RUNNER_CC": "gcc"}
    _run_refuses(env, tmp_path, "DMLCONF_RUNNER_CC=gcc: not one of mingw, zig")
    _doctor_fails_at(env, "runner", "DMLCONF_RUNNER_CC=gcc: not one of mingw, zig")


def _runner_line(env: dict[str, str]) -> tuple[Path, str]:
    """doctor's runner link: the runner's path and what it says of its build."""
    done = _dmlconf(env, "doctor")
    [line] = [line for line in done.stdout.splitlines() if line.startswith("ok   runner: ")]
    found = re.fullmatch(r"ok   runner: +(\S+) \((.*)\)", line)
    assert found, line
    return Path(found.group(1)), found.group(2)


def test_doctor_names_the_compiler_that_built_the_runner_and_why(stand_ins: dict[str, str], tmp_path: Path) -> None:
    mingw_built, said = _runner_line(stand_ins)
    assert (
        said
        == f"built with {MINGW} 12-stand-in, since {MINGW} is on PATH; cached by its source's hash and the compiler"
    )
    assert mingw_built.read_bytes() == b"MZ"  # what the stand-in gcc wrote
    zig = stand_ins | {
        "DMLCONF_RUNNER_CC": "zig",
        "PYTHONPATH": f"{_stand_in_ziglang(tmp_path / 'ziglang')}{os.pathsep}{REPO}",
    }
    zig_built, said = _runner_line(zig)
    assert said == (
        "built with zig cc 0.0.1 (python -m ziglang, -target x86_64-windows-gnu), since DMLCONF_RUNNER_CC=zig; "
        "cached by its source's hash and the compiler"
    )
    assert zig_built.read_bytes() == b"MZ zig"  # not the runner gcc built, found in the cache
    assert zig_built.parent.parent == mingw_built.parent.parent == tmp_path / "cache" / "runner"


# Vulkan and the D3D12 device: a broken one says what the loader, Wine and vkd3d-proton said, and the likely cause.


def test_no_vulkan_device_is_a_broken_link_with_the_loader_s_words(stand_ins: dict[str, str], tmp_path: Path) -> None:
    if shutil.which("vulkaninfo") is None:
        pytest.skip("no vulkaninfo here")
    (tmp_path / "prefix" / "drive_c").mkdir(parents=True)  # a prefix that is there: the stand-in Wine makes none
    nothing = tmp_path / "no-such-icd.json"
    env = stand_ins | {"VK_DRIVER_FILES": str(nothing)}
    found = list(links(env))
    assert [link.name for link in found if link.ok] == [
        "Wine", "vkd3d-proton", "onnxruntime-directml", "runner", "display", "Wine prefix",
    ]  # fmt: skip
    assert (found[-1].name, found[-1].ok) == ("Vulkan", False)
    assert found[-1].detail.startswith("vulkaninfo finds no Vulkan device (")
    assert str(nothing) in found[-1].detail.split(";")[0]  # the loader's own line names the file it could not open
    assert found[-1].detail.endswith(
        f"; ICD: {nothing}: install a Vulkan driver (Mesa 23 or newer's lavapipe will do) or point VK_DRIVER_FILES "
        "at one's ICD json"
    )


# The lines docs/directml-on-linux.md quotes for each cause (as Wine 8.0, vkd3d-proton 3.0.1 and the loader print them).
UNPATCHED = [
    "err:vkd3d-proton:vkd3d_load_vk_instance_procs: Could not get instance proc addr for "
    "'vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR'.",
    "err:vkd3d-proton:vkd3d_instance_init: Failed to load instance procs, hr 0x80004005.",
]
MESA_22 = [
    "info:vkd3d-proton:vkd3d_bindless_state_get_bindless_flags: Device does not support VK_EXT_mutable_descriptor_type "
    "(or VALVE).",
    "err:vkd3d-proton:vkd3d_bindless_state_init: Insufficient descriptor indexing support.",
]
NO_DRIVER = ["0024:err:winediag:wined3d_dll_init Using the Vulkan renderer.", "Failed to create DXGI factory."]


@pytest.mark.parametrize(
    ("lines", "environ", "cause"),
    [
        (UNPATCHED, {}, "vkd3d-proton 3.x without the Wine 8 patch"),
        (MESA_22, {}, "the Vulkan driver lacks VK_EXT_mutable_descriptor_type"),
        (NO_DRIVER, {"VK_DRIVER_FILES": "/x.json"}, "no Vulkan driver under Wine"),
        (["something else entirely"], {}, "none of the known ones"),
        ([], {}, "not one the runner names: it printed nothing"),
    ],
)
def test_each_known_cause_is_named_from_the_runner_s_lines(
    lines: list[str], environ: dict[str, str], cause: str
) -> None:
    assert likely_cause(lines, environ).startswith(cause)


def test_a_common_hresult_is_named() -> None:
    assert named_hresults("D3D12CreateDevice failed: HRESULT 0x80004002") == (
        "D3D12CreateDevice failed: HRESULT 0x80004002 (E_NOINTERFACE)"
    )
    assert named_hresults("HRESULT 0x12345678") == "HRESULT 0x12345678"


def test_a_d3d12_device_that_cannot_be_created_shows_the_runner_s_errors_and_the_cause(chain_ready: None) -> None:
    # vkd3d-proton requires push descriptors; hiding the extension from it fails D3D12CreateDevice for real, on any
    # Vulkan driver (as a driver without it would), while vulkaninfo still lists the device.
    env = dict(os.environ, PYTHONPATH=str(REPO), VKD3D_DISABLE_EXTENSIONS="VK_KHR_push_descriptor")
    done = _dmlconf(env, "doctor")
    assert "Traceback" not in done.stderr and done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FAIL"))
    assert lines[at] == f"FAIL {'D3D12 device:':<22} D3D12CreateDevice failed: HRESULT 0x80070057 (E_INVALIDARG)"
    assert lines[at + 1] == "     the runner's last stderr lines, asked again with WINEDEBUG=-all,err+all:"
    said = lines[at + 2 : -2]
    # vkd3d-proton's own words (libs/vkd3d/device.c), which WINEDEBUG=-all kept out of the run's runner
    assert any(":err:vkd3d-proton:" in line and "Push descriptors are not supported" in line for line in said), said
    assert lines[-2] == (
        "     likely cause: the Vulkan device lacks a feature vkd3d-proton requires (the err line above names it); "
        "VKD3D_DISABLE_EXTENSIONS=VK_KHR_push_descriptor hides extensions from vkd3d-proton"
    )
    assert lines[-1] == (
        "the DirectML chain is broken at its 'D3D12 device' link: docs/directml-on-linux.md#when-doctor-fails says "
        "what each failure means"
    )


def test_the_vulkan_link_lists_devices_whatever_becomes_of_the_display() -> None:
    """vulkaninfo opens a surface on the display it is given; an X server that refuses a client (gone, or at its
    client limit under load) must not read as a machine without a Vulkan device: the display is a link of its own."""
    import shutil
    import subprocess

    from conformance.ep.wine.doctor import _vulkan

    program = shutil.which("vulkaninfo")
    if program is None:
        pytest.skip("vulkaninfo is not installed (source .ci/dml-chain.sh)")
    headless = {key: value for key, value in os.environ.items() if key not in ("DISPLAY", "WAYLAND_DISPLAY")}
    listed = subprocess.run([program, "--summary"], env=headless, capture_output=True, text=True, check=False)
    if "deviceName" not in listed.stdout:
        pytest.skip("no Vulkan device here (source .ci/dml-chain.sh)")
    name = next(line.split("=", 1)[1].strip() for line in listed.stdout.splitlines() if "deviceName" in line)
    assert name in _vulkan({**headless, "DISPLAY": ":987"})  # no X server answers there; Broken where none is found


@pytest.mark.skipif(sys.platform == "win32", reason="the chain under Wine")
def test_a_run_checks_each_build_s_chain_once_before_its_workers_start(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.ep import dml_here
    from conformance.ep.providers import parse_ep

    asked: list[object] = []
    monkeypatch.setattr(chain, "find_chain", lambda build: asked.append(build))
    eps = [parse_ep(text) for text in ("cpu", "dml", "dmlop", "dml:directml=1.13.1")]
    dml_here.check_chains(eps)
    assert asked == [NEWEST_BUILD, dml_here.dml.build_of({"directml": "1.13.1"})]  # dml and dmlop share one build

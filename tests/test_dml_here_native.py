"""DirectML's runner on Windows, run natively (no Wine): its chain, the DLLs it is staged beside, its identity, the
build options refused there, which EP goes where, and doctor's links. Windows itself cannot run here: ``sys.platform``
is set to "win32" where the code asks it, the installed onnxruntime-directml's capi folder is a folder of PE
stand-ins, the compiler a script, and the "runner" a Python script that answers the runner's protocol (the client's
Windows way of reading its pipes, ``SELECTABLE_PIPES`` off, is what reads it).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from chain_fakes import pe_file

from conformance.environment import Adapter, Chain, DirectMLRecord, Environment, EpRecord, ran_on
from conformance.ep import directml as dml
from conformance.ep import dml_here
from conformance.ep.providers import parse_ep
from conformance.ep.wine import chain, client
from conformance.ep.wine.device import chain_identity
from conformance.ep.wine.doctor import links
from conformance.gate.header import chain_line
from conformance.gate.sides import _ep_device

CAPI_DLLS = ("onnxruntime.dll", "onnxruntime_providers_shared.dll", "DirectML.dll")  # onnxruntime-directml's capi/

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="stands Windows in on another system")

# The runner's stand-in: its start frame, then one JSON description for every request (describe is all doctor and
# directml_for ask of it), the protocol's framing (u32 size, status byte, u32-sized text).
DESCRIBING_RUNNER = textwrap.dedent(
    """\
    #!{python}
    import os, struct, sys

    def send(text):
        data = text.encode()
        payload = b"\\0" + struct.pack("<I", len(data)) + data
        os.write(1, struct.pack("<I", len(payload)) + payload)

    send("1.22.0")
    while True:
        head = sys.stdin.buffer.read(4)
        if len(head) < 4:
            break
        sys.stdin.buffer.read(struct.unpack("<I", head)[0])
        send({described!r})
    """
)
DESCRIBED = {
    "adapter_index": 0,
    "adapters": [{"index": 0, "description": "Stand-in GPU", "vendor_id": 0x10DE, "device_id": 0x2330}],
    "d3d12_feature_level": "12_1",
    "shader_model": "6.6",
    "dml_feature_level": "6_4",
    "files": {"DirectML.dll": "1.15.4.0", "onnxruntime.dll": "1.22.0.0"},
    "onnxruntime": "1.22.0",
}


@pytest.fixture
def windows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Windows as the code sees it: the platform, a capi folder of PE stand-ins as directml.capi_folder's, a compiler
    that "builds" the describing runner, a cache, and no Wine, vkd3d-proton or display anywhere. Its environment."""
    capi = tmp_path / "site-packages" / "onnxruntime" / "capi"
    capi.mkdir(parents=True)
    for index, name in enumerate(CAPI_DLLS):
        (capi / name).write_bytes(pe_file(text=bytes([index]) * 64))
    runner = DESCRIBING_RUNNER.format(python=sys.executable, described=json.dumps(DESCRIBED))
    compiler = tmp_path / "cc"
    compiler.write_text(
        f"#!/bin/sh\ncat > dmlrunner.exe <<'EOF'\n{runner}EOF\nchmod +x dmlrunner.exe\n", encoding="utf-8"
    )
    compiler.chmod(0o755)
    stand_in = chain.Compiler("mingw", (str(compiler),), "13-stand-in", "a stand-in")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(dml, "capi_folder", lambda: str(capi))
    monkeypatch.setattr(chain, "find_compiler", lambda environ: stand_in)
    monkeypatch.setattr(client, "SELECTABLE_PIPES", False)  # as on Windows: no select() on pipes
    env = {"PATH": str(tmp_path / "nothing-here"), "DMLCONF_CACHE": str(tmp_path / "cache")}
    for name in ("DISPLAY", "DMLCONF_VKD3D_PROTON", "DMLCONF_WINE", "WINEPREFIX"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DMLCONF_CACHE", env["DMLCONF_CACHE"])
    return env | {"capi": str(capi)}


def test_on_windows_the_chain_is_the_runner_itself_beside_copies_of_the_installed_dlls(
    windows: dict[str, str],
) -> None:
    found = chain.find_chain(windows)  # no Wine, no vkd3d-proton, no display: none is asked for
    runner = found.folder / "dmlrunner.exe"
    assert found.command() == [str(runner), "."]  # the program itself, not wine's argument
    base = {"PATH": "C:\\Windows", "SYSTEMROOT": "C:\\Windows"}
    assert found.environment(base) == base  # no WINEPREFIX, DISPLAY or DLL override
    assert runner.is_file()
    capi = Path(windows["capi"])
    staged = sorted(path.name for path in found.folder.iterdir())
    assert staged == sorted([*CAPI_DLLS, "dmlrunner.exe"])  # d3d12.dll is the system's: none staged
    for name in CAPI_DLLS:  # the very bytes of the installed package's DLLs, loaded from the runner's folder first
        assert (found.folder / name).read_bytes() == (capi / name).read_bytes()


def test_a_capi_folder_without_directml_is_one_line_naming_it(windows: dict[str, str]) -> None:
    (Path(windows["capi"]) / "DirectML.dll").unlink()  # the CPU package's onnxruntime, say
    with pytest.raises(chain.ChainMissing) as raised:
        chain.find_chain(windows)
    assert str(raised.value).startswith(f"{windows['capi']}: no DirectML.dll there")
    assert "\n" not in str(raised.value)


def test_the_native_chain_s_identity_says_native_and_hashes_the_dlls_that_ran(windows: dict[str, str]) -> None:
    found = chain.find_chain(windows)
    identity = chain_identity(found, DESCRIBED)
    assert identity["transport"] == "native"
    assert not {"wine", "vkd3d_proton", "vulkan_driver"} & identity.keys()
    capi = Path(windows["capi"])
    expected = {name: hashlib.sha256((capi / name).read_bytes()).hexdigest() for name in CAPI_DLLS}
    assert identity["dll_sha256"] == expected
    assert (identity["wheel"], identity["directml_wheel"]) == (None, None)  # the installed package, not a wheel
    assert identity["runner"]["compiler"] == "mingw"


def test_a_native_chain_is_worded_without_wine_or_vkd3d_proton() -> None:
    native = Chain(
        transport="native",
        adapter=Adapter(description="NVIDIA H100", vendor_id=0x10DE, device_id=0x2330),
        directml_dll="1.15.4.0",
        onnxruntime_dll="1.22.0.0",
        onnxruntime="1.22.0",
    )
    line = chain_line(native)
    ep = EpRecord("dmlop", directml=DirectMLRecord(version="1.15.4", chain=native))
    worded = ran_on(ep, Environment(eps=(ep,)))
    assert _ep_device(ep) == "natively on NVIDIA H100"  # how dmlconf diff names the EP's device
    for text in (line, worded):
        assert "vkd3d" not in text and "Wine" not in text
        assert "natively" in text


def test_build_options_are_refused_on_windows_before_any_runner_starts(
    windows: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_: Any, **__: Any) -> Any:
        raise AssertionError("a runner was asked for")

    monkeypatch.setattr(client, "find_chain", never)
    for text in ("dmlop:directml=1.13.1", "dml:ort=1.19.2"):
        with pytest.raises(chain.ChainMissing) as raised:
            dml_here.directml_for([parse_ep(text)])
        said = str(raised.value)
        assert said.startswith(("directml= picks DLLs for the runner under Wine", "ort= picks DLLs for the runner"))
        assert "on Windows the installed onnxruntime-directml is used" in said


def test_on_windows_dml_beside_dmlop_is_still_the_installed_package_in_this_process(
    windows: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = dml.DirectML("1.15.4", "DirectML.dll file version", None)
    monkeypatch.setattr(dml, "detect", lambda: installed)
    found = dml_here.directml_for([parse_ep("dml"), parse_ep("dmlop")])
    assert found["dml"] is installed  # in this process, as it runs
    assert found["dmlop"].identity is not None and found["dmlop"].identity["transport"] == "native"
    assert str(found["dmlop"].feature_level) == DESCRIBED["dml_feature_level"]  # asked of the runner's device


def test_doctor_on_windows_checks_the_native_runner_s_links(windows: dict[str, str]) -> None:
    checked = list(links(windows))
    assert [(link.name, link.ok) for link in checked] == [
        ("onnxruntime-directml", True),
        ("runner", True),
        ("runner start", True),
        ("D3D12 device", True),
        ("DirectML device", True),
    ]
    assert "started natively" in checked[2].detail
    assert "'Stand-in GPU'" in checked[3].detail
    assert "feature level 6_4" in checked[4].detail


def test_doctor_on_windows_stops_at_a_missing_installed_package(
    windows: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def absent() -> str:
        raise ImportError("No module named 'onnxruntime'")

    monkeypatch.setattr(dml, "capi_folder", absent)
    [link] = list(links(windows))
    assert (link.name, link.ok) == ("onnxruntime-directml", False)
    assert link.detail.startswith("onnxruntime-directml is not installed: pip install")


def test_dmlconf_doctor_on_windows_checks_dml_in_process_then_the_runner_dmlop_uses(
    windows: dict[str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from conformance.cli.doctor import doctor_command
    from conformance.cli.shared import EXIT_FAILED, EXIT_OK
    from conformance.model import FeatureLevel

    monkeypatch.setattr(dml, "detect", lambda: dml.DirectML("1.15.4", "DirectML.dll file version", FeatureLevel(6, 4)))
    assert doctor_command(argparse.Namespace(), []) == EXIT_OK
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("native DirectML 1.15.4 (DirectML.dll file version): feature level 6")
    assert [line.split(":")[0].split()[-1] for line in lines[1:-1]] == ["onnxruntime-directml", "runner", "start",
                                                                       "device", "device"]  # fmt: skip
    assert lines[-1] == "the native runner works: --ep dmlop runs DirectML's operator API here"

    (Path(windows["capi"]) / "DirectML.dll").unlink()
    assert doctor_command(argparse.Namespace(), []) == EXIT_FAILED
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.startswith("the DirectML chain is broken at its 'onnxruntime-directml' link: docs/execution-providers")

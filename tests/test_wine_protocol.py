"""The DirectML runner's protocol, chain look-up and placement record, without Wine: bytes, files and environments
built here (the runner itself is tested live in test_wine_chain.py)."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from conformance.cases.suite import read_file
from conformance.ep.errors import ProcessDied
from conformance.ep.lower import Lowering
from conformance.ep.pack import unpack
from conformance.ep.placement import PlacedNode
from conformance.ep.providers import DML, parse_ep
from conformance.ep.wine import chain, protocol
from conformance.ep.wine.device import directml_of, parse_vulkaninfo
from conformance.ep.wine.session import adapter_index, placement_from_profile, provider_options
from conformance.run.execution_path import Died, failure_of
from conformance.run.options import RunOptions
from conformance.run.runner import Prepared, finish, prepare

SPEC_EXAMPLES = Path(__file__).resolve().parent.parent / "cases" / "top_k1" / "spec_examples.yaml"


def _prepared() -> list[Prepared]:
    """TOP_K1's spec examples prepared for DirectML: generated, computed by the oracle, lowered (nothing runs)."""
    entries, problems = read_file(str(SPEC_EXAMPLES))
    assert problems == []
    found = [prepare(entry, parse_ep("dml"), RunOptions()) for entry in entries]
    return [p for p in found if isinstance(p, Prepared)]


def _fields(frame: protocol.Frame) -> protocol.Reader:
    data = b"".join(frame)
    (size,) = struct.unpack("<I", data[:4])
    assert size == len(data) - 4
    return protocol.Reader(data[4:])


def test_a_run_request_carries_names_types_shapes_and_bytes() -> None:
    x = np.arange(6, dtype=np.float16).reshape(2, 3)
    k = np.array([7], np.int64)
    reader = _fields(protocol.run_request(5, {"X": x, "K": k}, ["V", "I"]))
    assert reader.u8() == protocol.OP_RUN
    assert reader.u32() == 5
    assert reader.u32() == 2
    assert (reader.text(), reader.u32(), reader.u32()) == ("X", 10, 2)  # ONNX FLOAT16 is 10
    assert (reader.i64(), reader.i64()) == (2, 3)
    assert bytes(reader.blob()) == x.tobytes()
    assert (reader.text(), reader.u32(), reader.u32(), reader.i64()) == ("K", 7, 1, 1)
    assert bytes(reader.blob()) == struct.pack("<q", 7)
    assert [reader.u32(), reader.text(), reader.text()] == [2, "V", "I"]
    assert reader.at == len(reader.data)


def test_a_request_carries_each_input_s_own_bytes_and_is_never_joined() -> None:
    """A frame's pieces are written one after another: a large input is sent from its array, not from a copy of it
    (a joined frame would hold the case's inputs twice, the join's result a third time: issue 35)."""
    x = np.arange(1 << 16, dtype=np.float32)
    frame = protocol.run_request(0, {"X": x}, ["Y"])
    (piece,) = [p for p in frame if len(p) == x.nbytes]
    assert isinstance(piece, memoryview) and np.shares_memory(np.frombuffer(piece, np.float32), x)
    assert len(frame) == 3  # the fields before it joined, the array, the fields after it joined


def test_a_request_over_one_frame_is_refused_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(protocol, "FRAME_LIMIT", 100)
    assert sum(len(p) for p in protocol.run_request(0, {"X": np.zeros(8, np.float32)}, ["Y"])) - 4 <= 100
    with pytest.raises(ValueError, match=r"^a request of 1[0-9]{2} bytes, over the runner protocol's 100-byte frames$"):
        protocol.run_request(0, {"X": np.zeros(32, np.float32)}, ["Y"])


def test_a_run_reply_s_arrays_are_views_of_the_reply() -> None:
    values = np.array([[3.0, 2.0]], np.float32)
    payload = bytearray(
        _reply(b"\x00", struct.pack("<IIIqq", 1, 1, 2, 1, 2), _blob(values.tobytes()), _text("1"), b"\x00")
    )
    (output,) = protocol.read_run(payload).outputs
    assert output.tolist() == [[3.0, 2.0]] and np.shares_memory(output, np.frombuffer(payload, np.uint8))


def _reply(*parts: bytes) -> bytes:
    return b"".join(parts)


def _text(value: str) -> bytes:
    data = value.encode()
    return struct.pack("<I", len(data)) + data


def _blob(data: bytes) -> bytes:
    return struct.pack("<Q", len(data)) + data


def test_a_run_reply_gives_arrays_and_the_first_run_s_profile() -> None:
    values = np.array([[3.0, 2.0]], np.float32)
    payload = _reply(
        b"\x00",
        struct.pack("<I", 1),
        struct.pack("<IIqq", 1, 2, 1, 2),
        _blob(values.tobytes()),
        _text("0.250"),
        b"\x01",
        _blob(b"[]"),
    )
    reply = protocol.read_run(payload)
    assert reply.outputs[0].dtype == np.float32
    assert reply.outputs[0].tolist() == [[3.0, 2.0]]
    assert (reply.milliseconds, reply.profile) == (0.25, "[]")


def test_an_error_reply_is_refused_with_its_status() -> None:
    with pytest.raises(protocol.Refused, match=r"^no such node$") as raised:
        protocol.read_run(b"\x01" + _text("no such node"))
    assert raised.value.status == protocol.ST_ORT


def test_a_short_reply_is_a_protocol_error() -> None:
    with pytest.raises(protocol.ProtocolError, match=r"ended early"):
        protocol.read_run(b"\x00" + struct.pack("<I", 1) + struct.pack("<I", 1))


def test_an_unknown_dtype_is_refused_before_anything_is_sent() -> None:
    with pytest.raises(ValueError, match=r"takes no complex64"):
        protocol.run_request(0, {"X": np.zeros(2, np.complex64)}, ["Y"])


# onnxruntime 1.24.4's profile of a TopK model on DirectML (under Wine, lavapipe), trimmed to its event kinds.
PROFILE = [
    {"cat": "Session", "name": "model_loading_array", "args": {}},
    {"cat": "Node", "name": "DmlFusedNode_0_0_kernel_time",
     "args": {"provider": "DmlExecutionProvider", "op_name": "DmlFusedNode_0_0", "node_index": "1"}},
    {"cat": "Node", "name": "DmlFusedNode_0_0_kernel_time",
     "args": {"provider": "DmlExecutionProvider", "op_name": "DmlFusedNode_0_0", "node_index": "1"}},
    {"cat": "Node", "name": "p1_TopK_0_kernel_time",
     "args": {"provider": "CPUExecutionProvider", "op_name": "TopK"}},
]  # fmt: skip


def test_placement_is_read_from_the_profile_once_per_node() -> None:
    assert placement_from_profile(json.dumps(PROFILE)) == [
        PlacedNode("DmlFusedNode_0_0", "DmlFusedNode_0_0", DML),
        PlacedNode("p1_TopK_0", "TopK", "CPUExecutionProvider"),
    ]


def test_a_packed_directml_partition_is_every_case_s_record() -> None:
    lowerings: list[Lowering] = [p.lowering for p in _prepared()[:2]]
    outputs = {f"p{i}_{name}": np.zeros(1) for i, low in enumerate(lowerings) for name in low.outputs}
    fused = [PlacedNode("DmlFusedNode_0_0", "DmlFusedNode_0_0", DML)]
    executions = unpack(lowerings, outputs, fused, DML)
    assert [getattr(e, "placement", e) for e in executions] == [{"DmlFusedNode_0_0": DML}] * 2
    two = [*fused, PlacedNode("DmlFusedNode_1_1", "DmlFusedNode_1_1", DML)]
    named = "DmlFusedNode_0_0..DmlFusedNode_1_1 (2 partitions of the pack)"
    assert [getattr(e, "placement", e) for e in unpack(lowerings, outputs, two, DML)] == [{named: DML}] * 2
    elsewhere = [*fused, PlacedNode("p1_TopK_0", "TopK", "CPUExecutionProvider")]
    second = unpack(lowerings, outputs, elsewhere, DML)[1]
    assert str(second) == "TopK node 'TopK_0' was placed on CPUExecutionProvider, not DmlExecutionProvider"


def test_the_adapter_is_named_where_the_options_pick_none() -> None:
    assert provider_options(parse_ep("dml")) == {"device_id": "0"}
    assert provider_options(parse_ep("dml:disable_metacommands=true")) == {
        "disable_metacommands": "true",
        "device_id": "0",
    }
    assert provider_options(parse_ep("dml:performance_preference=minimum_power")) == {
        "performance_preference": "minimum_power"
    }
    assert adapter_index(parse_ep("dml:device_id=2")) == 2


def test_vulkaninfo_summary_devices() -> None:
    text = """Devices:
========
GPU0:
\tapiVersion         = 1.4.305
\tdriverVersion      = 25.0.7
\tdeviceType         = PHYSICAL_DEVICE_TYPE_CPU
\tdeviceName         = llvmpipe (LLVM 15.0.6, 256 bits)
\tdriverName         = llvmpipe
\tdriverInfo         = Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)
"""
    assert parse_vulkaninfo(text) == [
        {
            "apiVersion": "1.4.305",
            "driverVersion": "25.0.7",
            "deviceType": "PHYSICAL_DEVICE_TYPE_CPU",
            "deviceName": "llvmpipe (LLVM 15.0.6, 256 bits)",
            "driverName": "llvmpipe",
            "driverInfo": "Mesa 25.0.7-2~bpo12+1 (LLVM 15.0.6)",
        }
    ]


def test_the_feature_level_is_the_device_s_answer_not_the_version_table_s() -> None:
    found = directml_of({"directml_dll": "1.13.1.0", "dml_feature_level": "6_0", "error": None})
    assert (found.version, str(found.feature_level)) == ("1.13.1", "6_0")
    assert found.identity is not None and found.identity["feature_level_by_version_table"] == "6_2"
    unanswered = directml_of({"directml_dll": "1.15.4.0", "dml_feature_level": None, "error": "DMLCreateDevice failed"})
    assert unanswered.feature_level is None
    assert "DMLCreateDevice failed" in unanswered.source


def _environment(**values: str) -> dict[str, str]:
    return {"PATH": "/nonexistent", **values}


def test_each_missing_piece_of_the_chain_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(chain.ChainMissing, match=r"^Wine is not installed [^:]*: source \.ci/dml-chain\.sh .*apt-get"):
        chain.find_wine(_environment())
    with pytest.raises(chain.ChainMissing, match=r"^DMLCONF_WINE=/no/wine: no such program$"):
        chain.find_wine(_environment(DMLCONF_WINE="/no/wine"))
    (tmp_path / "d3d12.dll").write_bytes(b"MZ")
    with pytest.raises(chain.ChainMissing, match=rf"^DMLCONF_VKD3D_PROTON={tmp_path}: no d3d12core\.dll there$"):
        chain.find_vkd3d_proton(_environment(DMLCONF_VKD3D_PROTON=str(tmp_path)))
    with pytest.raises(chain.ChainMissing, match=r"^DISPLAY is not set: Wine reaches Vulkan through X11; source \.ci/"):
        chain.find_display(_environment())
    not_a_wheel = tmp_path / "x.whl"
    not_a_wheel.write_text("no zip")
    with pytest.raises(chain.ChainMissing, match=r"not a wheel$"):
        chain.find_wheel(_environment(DMLCONF_ORT_DIRECTML_WHEEL=str(not_a_wheel)), tmp_path, download=False)
    with pytest.raises(chain.ChainMissing, match=r"^no onnxruntime-directml 1\.24\.4 wheel in"):
        chain.find_wheel(_environment(), tmp_path, download=False)


def test_a_wheel_without_the_dlls_is_refused_naming_them(tmp_path: Path) -> None:
    wheel = tmp_path / "onnxruntime_directml-1.24.4-cp312-cp312-win_amd64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("onnxruntime/capi/onnxruntime.dll", b"MZ")
    vkd3d = tmp_path / "vkd3d"
    vkd3d.mkdir()
    for name in chain.VKD3D_DLLS:
        (vkd3d / name).write_bytes(b"MZ")
    runner = tmp_path / "dmlrunner.exe"
    runner.write_bytes(b"MZ")
    with pytest.raises(chain.ChainMissing, match=r"no onnxruntime_providers_shared\.dll"):
        chain._stage(runner, wheel, wheel, vkd3d, tmp_path / "cache")


def test_the_runner_s_environment_keeps_wine_s_own_d3d12_out() -> None:
    found = chain.Chain("wine", Path("v"), Path("w"), ":93", Path("/p"), Path("/f"))
    env = found.environment({"WINEDLLOVERRIDES": "mscoree=", "WINEDEBUG": "+loaddll"})
    assert env["WINEDLLOVERRIDES"] == "mscoree=;d3d12,d3d12core=n"  # ours last: it wins
    assert (env["WINEPREFIX"], env["DISPLAY"], env["WINEDEBUG"]) == ("/p", ":93", "+loaddll")
    assert env["WINE_D3D_CONFIG"] == "renderer=vulkan"


def test_a_dead_runner_is_a_crash_of_its_case_or_a_lost_device() -> None:
    prepared, dml, options = _prepared()[0], parse_ep("dml"), RunOptions()
    crash = finish(prepared, Died("the DirectML runner (pid 7) was killed by SIGSEGV"), dml, options, 0.0)
    assert (crash.status.value, crash.failure_kind) == ("CRASH", "worker_died")
    assert crash.message == "the DirectML runner (pid 7) was killed by SIGSEGV"
    said = "the DirectML runner (pid 7) exited with status 1\n  DXGI_ERROR_DEVICE_REMOVED"
    lost = finish(prepared, failure_of(ProcessDied(said)), dml, options, 0.0)
    assert (lost.status.value, lost.failure_kind) == ("DEVICE_LOST", "device_lost")


@pytest.mark.parametrize("compiler", chain.COMPILERS)
def test_the_runner_builds_without_a_warning_under_wall_wextra(compiler: str, tmp_path: Path) -> None:
    """The brief's rule for the C runner, checked with each compiler the chain can build it with (mingw-w64's gcc,
    zig's clang), where it is installed: -Wall -Wextra, every warning an error. CI has both (.ci/run)."""
    import os
    import shutil

    try:
        found = chain.find_compiler({**os.environ, chain.RUNNER_CC: compiler})
    except chain.ChainMissing as error:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must build the runner with {compiler}: {error}")
        pytest.skip(str(error))
    shutil.copyfile(Path(chain.__file__).with_name(chain.RUNNER_SOURCE), tmp_path / chain.RUNNER_SOURCE)
    built = chain.compile_runner(found, tmp_path, chain.cache_folder(os.environ), ("-Wall", "-Wextra", "-Werror"))
    assert built.returncode == 0, built.stderr
    assert chain.pe_problem(tmp_path / chain.RUNNER) is None

"""conformance.ep.providers: --ep text, the default EP, plugin registration."""

from __future__ import annotations

import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from conformance.ep import providers as eps
from conformance.ep.providers import CPU, CUDA, DML, WEBGPU, EpSpec, best_available_ep, parse_ep


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cpu", EpSpec("cpu", CPU)),
        (" CPU ", EpSpec("cpu", CPU)),
        ("cuda:device_id=1", EpSpec("cuda", CUDA, {"device_id": "1"})),
        (
            "dml:device_id=1,disable_metacommands=true",
            EpSpec("dml", DML, {"device_id": "1", "disable_metacommands": "true"}),
        ),
        ("dml: device_id = 0 ", EpSpec("dml", DML, {"device_id": "0"})),
        ("webgpu", EpSpec("webgpu", WEBGPU)),
        ("webgpu:", EpSpec("webgpu", WEBGPU)),
        ("CUDAExecutionProvider", EpSpec("cuda", CUDA)),
        ("DmlExecutionProvider:device_id=2", EpSpec("dml", DML, {"device_id": "2"})),
        (
            "QNNExecutionProvider:backend_path=QnnHtp.dll",
            EpSpec("QNNExecutionProvider", "QNNExecutionProvider", {"backend_path": "QnnHtp.dll"}),
        ),
        ("cuda:cache_dir=C:\\tmp", EpSpec("cuda", CUDA, {"cache_dir": "C:\\tmp"})),
        (
            "/opt/ep/libonnxruntime_providers_foo.so",
            EpSpec(
                "/opt/ep/libonnxruntime_providers_foo.so",
                "onnxruntime_providers_foo",
                {},
                "/opt/ep/libonnxruntime_providers_foo.so",
            ),
        ),
        ("/opt/ep/libfoo.so:mode=fast", EpSpec("/opt/ep/libfoo.so", "foo", {"mode": "fast"}, "/opt/ep/libfoo.so")),
        ("/opt/a:b/libfoo.so", EpSpec("/opt/a:b/libfoo.so", "foo", {}, "/opt/a:b/libfoo.so")),
        ("C:\\eps\\foo_ep.dll", EpSpec("C:\\eps\\foo_ep.dll", "foo_ep", {}, "C:\\eps\\foo_ep.dll")),
        ("C:\\eps\\foo_ep.dll:k=v", EpSpec("C:\\eps\\foo_ep.dll", "foo_ep", {"k": "v"}, "C:\\eps\\foo_ep.dll")),
        ("libbar.dylib:x=1", EpSpec("libbar.dylib", "bar", {"x": "1"}, "libbar.dylib")),
    ],
)
def test_parse_ep(text: str, expected: EpSpec) -> None:
    assert parse_ep(text) == expected


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("", "no execution provider"),
        (":device_id=1", "no execution provider"),
        ("cuda2", "unknown execution provider 'cuda2'"),
        ("tensorrt", "unknown execution provider"),
        ("cuda:device_id", "bad EP option 'device_id'"),
        ("cuda:=1", "bad EP option '=1'"),
        ("cuda:device_id=", "bad EP option 'device_id='"),
        ("cuda:a=1,,b=2", "bad EP option ''"),
        ("cuda:a b=1", "bad EP option 'a b=1'"),
        ("cuda:a=1,a=2", "EP option 'a' given twice"),
    ],
)
def test_parse_ep_rejects_bad_text_in_one_line(text: str, fragment: str) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]*$") as raised:
        parse_ep(text)
    assert fragment in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "cpu",
        "cuda:device_id=1",
        "dml:device_id=1,disable_metacommands=true",
        "/opt/ep/libfoo.so:mode=fast",
        "C:\\eps\\foo.dll:k=v",
    ],
)
def test_alias_and_options_give_the_same_spec_back(text: str) -> None:
    spec = parse_ep(text)
    options = ",".join(f"{k}={v}" for k, v in spec.options.items())
    assert parse_ep(f"{spec.alias}:{options}" if options else spec.alias) == spec


@pytest.mark.parametrize(
    ("available", "webgpu", "expected"),
    [
        (["DmlExecutionProvider", "CUDAExecutionProvider", "CPUExecutionProvider"], True, "dml"),
        (["CUDAExecutionProvider", "CPUExecutionProvider"], True, "cuda"),
        (["AzureExecutionProvider", "CPUExecutionProvider"], True, "webgpu"),
        (["AzureExecutionProvider", "CPUExecutionProvider"], False, "cpu"),
    ],
)
def test_best_available_ep_order(
    monkeypatch: pytest.MonkeyPatch, available: list[str], webgpu: bool, expected: str
) -> None:
    monkeypatch.setattr(ort, "get_available_providers", lambda: available)
    monkeypatch.setattr(eps, "_webgpu_usable", lambda: webgpu)
    spec = best_available_ep()
    assert spec == parse_ep(expected)


def test_best_available_ep_here_is_one_this_machine_has() -> None:
    spec = best_available_ep()
    assert spec.name in set(ort.get_available_providers()) | {WEBGPU}
    assert spec.options == {} and spec.library is None


def test_webgpu_without_its_package_is_not_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> str:
        raise ImportError("No module named 'onnxruntime_ep_webgpu'")

    monkeypatch.setattr(eps, "webgpu_library", missing)
    assert eps._webgpu_usable() is False


def test_a_library_that_does_not_load_raises_every_time() -> None:
    spec = parse_ep("/nonexistent/libnothing_ep.so")
    for _ in range(2):  # a failed registration is not cached as a success
        with pytest.raises(Exception, match="nonexistent"):
            eps.plugin_devices(spec)

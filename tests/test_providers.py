"""conformance.ep.providers: --ep text, the default EP, plugin registration."""

from __future__ import annotations

import onnxruntime as ort  # type: ignore[import-untyped]
import pytest

from conformance import ep_table
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
        (
            "QNNExecutionProvider:backend_path=C:\\qnn\\QnnHtp.dll",
            EpSpec("QNNExecutionProvider", "QNNExecutionProvider", {"backend_path": "C:\\qnn\\QnnHtp.dll"}),
        ),
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


# Each known EP's provider options, from onnxruntime's sources (the CPU EP reads none: onnxruntime's Python binding
# drops them; the CUDA EP's CUDAExecutionProviderInfo::FromProviderOptions; the WebGPU EP's
# webgpu_provider_options.h and the WebGPU EP page of onnxruntime's documentation), written out here.
@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("cpu:foo=bar", "unknown CPU option 'foo': the CPU EP reads no provider options"),
        ("CPUExecutionProvider:probe=1", "unknown CPU option 'probe': the CPU EP reads no provider options"),
        ("cpu:device_id=0", "unknown CPU option 'device_id'"),
        ("cuda:cache_dir=/tmp", "unknown CUDA option 'cache_dir': known are device_id, gpu_mem_limit,"),
        ("cuda:deviceId=0", "unknown CUDA option 'deviceId'"),
        ("cuda:cudnn_conv_algo_search=FAST", "CUDA option cudnn_conv_algo_search='FAST': expected one of EXHAUSTIVE"),
        ("cuda:arena_extend_strategy=grow", "expected one of kNextPowerOfTwo, kSameAsRequested"),
        ("cuda:gpu_mem_limit=2G", "CUDA option gpu_mem_limit='2G': expected a non-negative whole number"),
        ("cuda:user_compute_stream=140000", "unknown CUDA option 'user_compute_stream'"),  # a pointer
        ("webgpu:anything=1", "unknown WebGPU option 'anything': known are"),
        ("webgpu:device_id=1", "unknown WebGPU option 'device_id'"),  # the WebGPU EP spells it deviceId
        ("webgpu:preferredLayout=nchw", "WebGPU option preferredLayout='nchw': expected one of NCHW, NHWC"),
        ("webgpu:validationMode=on", "expected one of disabled, wgpuOnly, basic, full"),
        ("webgpu:deviceId=first", "WebGPU option deviceId='first': expected a non-negative whole number"),
        ("webgpu:webgpuDevice=1234", "unknown WebGPU option 'webgpuDevice'"),  # a pointer
    ],
)
def test_every_known_ep_refuses_options_it_does_not_read(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]*$") as raised:
        parse_ep(text)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("text", "options"),
    [
        (
            "cuda:device_id=1,cudnn_conv_algo_search=HEURISTIC",
            {"device_id": "1", "cudnn_conv_algo_search": "HEURISTIC"},
        ),
        ("cuda:gpu_mem_limit=2147483648,arena_extend_strategy=kSameAsRequested,use_tf32=0", None),
        ("cuda:enable_cuda_graph=1,prefer_nhwc=1,tunable_op_enable=1,sdpa_kernel=1,fuse_conv_bias=0", None),
        ("webgpu:deviceId=1,preferredLayout=NCHW,validationMode=full", None),
        ("webgpu:storageBufferCacheMode=bucket,dawnBackendType=Vulkan,powerPreference=high-performance", None),
        ("webgpu:enableGraphCapture=0,enableInt64=1,forceCpuNodeNames=node_a", None),
    ],
)
def test_options_each_known_ep_reads_are_kept(text: str, options: dict[str, str] | None) -> None:
    spec = parse_ep(text)
    written = dict(item.split("=") for item in text.partition(":")[2].split(","))
    assert spec.options == (options if options is not None else written)


def test_eps_the_harness_does_not_know_take_any_option() -> None:
    assert parse_ep("QNNExecutionProvider:backend_path=QnnHtp.dll,anything=1").options == {
        "backend_path": "QnnHtp.dll",
        "anything": "1",
    }
    assert parse_ep("/opt/ep/libfoo.so:mode=fast").options == {"mode": "fast"}


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
    monkeypatch.setattr(eps, "_plugin_usable", lambda known: webgpu and known is ep_table.WEBGPU)
    spec = best_available_ep()
    assert spec == parse_ep(expected)


def test_best_available_ep_here_is_one_this_machine_has() -> None:
    spec = best_available_ep()
    assert spec.name in set(ort.get_available_providers()) | {WEBGPU}
    assert spec.options == {} and spec.library is None


def test_webgpu_without_its_package_is_not_usable(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> str:
        raise ImportError("No module named 'onnxruntime_ep_webgpu'")

    monkeypatch.setattr(eps, "plugin_library", lambda module: missing())
    assert eps._plugin_usable(ep_table.WEBGPU) is False


def test_a_library_that_does_not_load_raises_every_time() -> None:
    spec = parse_ep("/nonexistent/libnothing_ep.so")
    for _ in range(2):  # a failed registration is not cached as a success
        with pytest.raises(Exception, match="nonexistent"):
            eps.plugin_devices(spec)


@pytest.mark.parametrize(
    ("text", "kept"),
    [
        ("dmlop:disable_metacommands=true", "dmlop:disable_metacommands=1"),
        (
            "dmlop:disable_metacommands=1,allow_half_precision=False",
            "dmlop:disable_metacommands=1,allow_half_precision=0",
        ),
        ("dml:disable_metacommands=1", "dml:disable_metacommands=true"),
        ("dml:disable_metacommands=False", "dml:disable_metacommands=false"),
        ("webgpu:enableInt64=true,enableRobustness=0", "webgpu:enableInt64=1,enableRobustness=0"),
    ],
)
def test_a_boolean_takes_one_syntax_on_every_ep_and_is_kept_as_its_ep_reads_it(text: str, kept: str) -> None:
    # 0/1 and true/false on every EP; a result's ``ep`` keeps the spelling the EP reads (DirectML's ParseBoolean:
    # true/false; the WebGPU EP and DirectML's operator API: 1/0), so two spellings of one option are one EP.
    assert parse_ep(text).text == kept
    assert parse_ep(kept) == parse_ep(text)


@pytest.mark.parametrize("text", ["dmlop:allow_half_precision=yes", "webgpu:enableInt64=on"])
def test_a_boolean_that_is_none_is_refused_in_one_line(text: str) -> None:
    with pytest.raises(ValueError, match=r"^[^\n]*expected 0, 1, true or false$"):
        parse_ep(text)


def test_every_alias_of_the_table_is_parsed_and_listed_when_one_is_unknown() -> None:
    for known in ep_table.KNOWN_EPS:
        assert parse_ep(known.alias) == EpSpec(known.alias, known.name)
        assert parse_ep(known.name.upper()) == EpSpec(known.alias, known.name)
    with pytest.raises(ValueError, match="expected cpu, cuda, dml, dmlop, webgpu, a full onnxruntime name"):
        parse_ep("tpu")

"""The DirectML EP's options, DirectML's version and the feature level it gives: everything that runs without
Windows. The version -> feature level rows are Microsoft's "DirectML version history" table."""

from __future__ import annotations

import re
import struct
from pathlib import Path

import pytest

from conformance.ep import directml as dml
from conformance.ep.directml import DirectML, detect, feature_level_for, fixed_file_version
from conformance.ep.providers import DML, check_options, parse_ep
from conformance.model import FEATURE_LEVELS, FeatureLevel


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"device_id": "0"},
        {"device_id": "1", "disable_metacommands": "true"},
        {"disable_metacommands": "false"},
        {"performance_preference": "high_performance", "device_filter": "gpu"},
        {"performance_preference": "minimum_power", "device_filter": "npu"},
        {"performance_preference": "default", "device_filter": "any"},
    ],
)
def test_options_the_dml_ep_reads(options: dict[str, str]) -> None:
    assert check_options(DML, options) == options
    assert parse_ep("dml:" + ",".join(f"{k}={v}" for k, v in options.items())).options == options


@pytest.mark.parametrize(
    ("given", "kept"), [("1", "true"), ("true", "true"), ("True", "true"), ("0", "false"), ("FALSE", "false")]
)
def test_disable_metacommands_takes_any_boolean_and_keeps_the_spelling_the_dml_ep_reads(given: str, kept: str) -> None:
    # The DirectML EP's ParseBoolean takes only true/false (and throws on 1/0): what it is given and what a result
    # records is that spelling, however the flag was written.
    assert parse_ep(f"dml:disable_metacommands={given}").text == f"dml:disable_metacommands={kept}"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("dml:device=1", "unknown DirectML option 'device'"),
        ("dml:device_id=-1", "device_id='-1': expected a non-negative whole number"),
        ("dml:device_id=gpu0", "device_id='gpu0': expected a non-negative whole number"),
        ("dml:disable_metacommands=on", "disable_metacommands='on': expected 0, 1, true or false"),
        ("dml:enable_graph_capture=true", "unknown DirectML option 'enable_graph_capture'"),
        ("dml:performance_preference=High_Performance", "expected one of default, high_performance"),
        ("dml:performance_preference=fast", "expected one of default, high_performance, minimum_power"),
        ("dml:device_filter=cpu", "expected one of gpu, npu, any"),
        ("dml:device_id=0,device_filter=gpu", "device_id picks the adapter itself"),
        ("DmlExecutionProvider:disable_metacommands=yes", "expected 0, 1, true or false"),
        ("cuda:device_id=first", "CUDA option device_id='first'"),
    ],
)
def test_bad_options_are_one_line_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message) as error:
        parse_ep(text)
    assert "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("version", "level"),
    [
        ("1.0.0", "1_0"),
        ("1.1.0", "2_0"),
        ("1.2.0", "2_1"),
        ("1.3.0", "2_1"),
        ("1.4.0", "3_0"),
        ("1.4.3", "3_0"),
        ("1.5.1", "3_1"),
        ("1.6.0", "4_0"),
        ("1.7.0", "4_1"),
        ("1.8.2", "5_0"),
        ("1.9.1", "5_1"),
        ("1.10.1", "5_2"),
        ("1.11.0", "6_0"),
        ("1.12.1", "6_1"),
        ("1.13.1", "6_2"),
        ("1.13.0", "6_2"),
        ("1.14.1", "6_3"),  # no 1.14 row in Microsoft's table: what DirectML 1.14.1 answers itself
        ("1.15.0", "6_4"),
        ("1.15.4", "6_4"),
        ("1.15.4.0", "6_4"),
        ("1.99.0", "6_4"),  # newer than the table: at least what the newest known release supports
    ],
)
def test_feature_level_of_each_directml_release(version: str, level: str) -> None:
    assert feature_level_for(version) == FeatureLevel.parse(level)


@pytest.mark.parametrize("version", ["0.9.1", "DirectML", ""])
def test_feature_level_of_unknown_versions_is_refused(version: str) -> None:
    with pytest.raises(ValueError):
        feature_level_for(version)


def _version_block(major: int, minor: int, build: int, revision: int) -> bytes:
    """A VS_VERSIONINFO block as GetFileVersionInfoW returns it: a header, then VS_FIXEDFILEINFO."""
    header = struct.pack("<HHH", 0x5C, 0x34, 0) + "VS_VERSION_INFO".encode("utf-16-le") + b"\0\0\0\0"
    fixed = struct.pack("<IIII", 0xFEEF04BD, 0x00010000, (major << 16) | minor, (build << 16) | revision)
    return header + fixed + bytes(36)


def test_fixed_file_version_reads_the_dll_resource() -> None:
    assert fixed_file_version(_version_block(1, 15, 4, 0)) == "1.15.4.0"
    assert fixed_file_version(b"no signature here") is None


def test_detect_prefers_the_dll_version() -> None:
    found = detect(dll_version=lambda: "1.15.4.0", package_version=lambda name: "1.24.1")
    assert found == DirectML("1.15.4.0", "DirectML.dll file version", FeatureLevel(6, 4))
    assert found.to_json() == {"version": "1.15.4.0", "source": "DirectML.dll file version", "feature_level": "6_4"}


@pytest.mark.parametrize(
    ("package", "directml", "level"),
    [
        ("1.24.4", "1.15.4", "6_4"),
        ("1.21.1", "1.15.4", "6_4"),
        ("1.19.2", "1.15.1", "6_4"),
        ("1.17.3", "1.13.1", "6_2"),
    ],
)
def test_detect_falls_back_to_the_bundled_version(package: str, directml: str, level: str) -> None:
    found = detect(dll_version=lambda: None, package_version=lambda name: package)
    assert found == DirectML(directml, f"bundled with onnxruntime-directml {package}", FeatureLevel.parse(level))


def test_detect_without_directml() -> None:
    found = detect(dll_version=lambda: None, package_version=lambda name: None)
    assert found == DirectML(None, "onnxruntime-directml is not installed", None)
    unknown = detect(dll_version=lambda: None, package_version=lambda name: "9.1.0")
    assert (unknown.version, unknown.feature_level) == (None, None)
    assert "bundled DirectML version unknown" in unknown.source


def test_detect_on_this_machine_reads_no_dll_off_windows() -> None:
    if dml.sys.platform == "win32":
        pytest.skip("reads the real DirectML.dll on Windows")
    assert dml._dll_version("/nonexistent") is None


def test_the_directml_runner_asks_the_device_for_directml_s_feature_levels() -> None:
    """dmlrunner.c (C, compiled under Wine) keeps its own copy of the list: it must be model.py's, newest first."""
    source = (Path(dml.__file__).parent / "wine" / "dmlrunner.c").read_text(encoding="utf-8")
    listed = re.search(r"static const int DML_LEVELS\[\] = \{([^}]*)\}", source)
    assert listed is not None
    levels = [int(value, 16) for value in re.findall(r"0x[0-9a-fA-F]+", listed.group(1))]
    assert [f"{value >> 12}_{(value >> 8) & 15}" for value in reversed(levels)] == [str(fl) for fl in FEATURE_LEVELS]


def test_a_feature_level_directml_does_not_have_cannot_be_made() -> None:
    with pytest.raises(ValueError, match=r"not a DirectML feature level: 9_9 \(known: 1_0, 2_0, "):
        FeatureLevel(9, 9)
    with pytest.raises(ValueError, match="not a DirectML feature level: '5_3'"):
        FeatureLevel.parse("5_3")

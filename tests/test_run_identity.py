"""results.json's environment says when a run started, how long it took, which harness ran it (version, the git commit
of its checkout, a hash of the case files its cases came from), on which CPU, and which case files --keep-going
skipped (conformance/run/identity.py). Expected values come from git itself, hashlib and /proc/cpuinfo."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

import conformance
from conformance.ep import device
from conformance.ep.device import cpu_model, parse_cpuinfo
from conformance.ep.directml import DirectML
from conformance.ep.providers import parse_ep
from conformance.run.identity import cases_sha256, executing, git_commit

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "cases" / "top_k1" / "spec_examples.yaml"
SLICE_EXAMPLES = REPO / "cases" / "slice1" / "spec_examples.yaml"
GIT = shutil.which("git")
needs_git = pytest.mark.skipif(GIT is None, reason="git is not installed")
# Two cases, one problem each: an unknown data type (read) and an Axis past the rank (validated).
BAD = """\
operator: TOP_K1
cases:
  - id: bad-type
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT99, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 3
    K: 2
  - id: bad-axis
    InputTensor: {Sizes: [1, 1, 1, 4], DataType: FLOAT32, Data: [[[[1, 2, 3, 4]]]]}
    Axis: 4
    K: 2
"""


def _run(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "conformance", "run", *args, "--ep", "cpu", "-j", "0", "--report-dir", "reports"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
    results = json.loads((cwd / "reports" / "results.json").read_text(encoding="utf-8"))
    return done, results["environment"]


def _git(cwd: Path, *args: str) -> str:
    assert GIT is not None
    command = [GIT, "-c", "user.name=test", "-c", "user.email=test@example.com", "-c", "safe.directory=*", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True, timeout=60).stdout.strip()


def _expected_hash(*files: Path) -> str:
    """The documented definition, computed here: SHA-256 of the sorted per-file hex digests, one per line."""
    digests = sorted({hashlib.sha256(file.read_bytes()).hexdigest() for file in files})
    return hashlib.sha256("".join(f"{d}\n" for d in digests).encode()).hexdigest()


def _cpuinfo_model() -> str | None:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    return " ".join(found.group(1).split()) if found else None


def test_results_json_says_when_for_how_long_with_which_harness_and_cpu(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES, tmp_path / "a.yaml")
    shutil.copy(SLICE_EXAMPLES, tmp_path / "b.yaml")
    before = datetime.now(UTC).replace(microsecond=0)
    done, env = _run(tmp_path, "a.yaml", "b.yaml")
    after = datetime.now(UTC)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", env["started_at"])
    started = datetime.strptime(env["started_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    assert before <= started <= after
    assert 0 < env["duration_s"] <= (after - started + timedelta(seconds=1)).total_seconds()
    harness = env["harness"]
    assert harness["cases_sha256"] == _expected_hash(tmp_path / "a.yaml", tmp_path / "b.yaml")
    assert harness["case_files"] == 2
    assert harness["version"] == env["dml_conformance"]
    expected_cpu = _cpuinfo_model()
    if expected_cpu is not None:
        assert env["cpu"] == expected_cpu


@needs_git
def test_the_git_commit_is_the_checkout_s_head_the_package_was_imported_from(tmp_path: Path) -> None:
    if subprocess.run([GIT or "git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("the repository is not a git checkout here")
    if Path(conformance.__file__).resolve().parents[1] != REPO:
        pytest.skip("the package is imported from elsewhere than this checkout")
    _, env = _run(tmp_path, str(EXAMPLES))
    assert env["harness"]["git_commit"] == _git(REPO, "rev-parse", "HEAD")


@needs_git
def test_git_commit_reads_branches_packed_refs_worktrees_and_detached_heads(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    assert git_commit(repo) is None  # a branch without a commit
    (repo / "file").write_text("one")
    _git(repo, "add", "file")
    _git(repo, "commit", "-q", "-m", "one")
    assert git_commit(repo) == _git(repo, "rev-parse", "HEAD")
    _git(repo, "pack-refs", "--all")  # the branch now only in packed-refs
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert git_commit(repo) == _git(repo, "rev-parse", "HEAD")
    (repo / "file").write_text("two")
    _git(repo, "commit", "-q", "-am", "two")
    linked = tmp_path / "linked"
    _git(repo, "worktree", "add", "-q", "-b", "side", str(linked), "HEAD~1")  # .git is a file there
    assert (linked / ".git").is_file()
    assert git_commit(linked) == _git(linked, "rev-parse", "HEAD") != git_commit(repo)
    _git(repo, "checkout", "-q", "--detach", "HEAD~1")
    assert git_commit(repo) == _git(repo, "rev-parse", "HEAD")
    plain = tmp_path / "installed"
    plain.mkdir()
    assert git_commit(plain) is None  # not a checkout: an installed package


def test_the_cases_hash_depends_on_the_bytes_not_on_how_the_files_were_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_bytes(EXAMPLES.read_bytes())
    b.write_bytes(SLICE_EXAMPLES.read_bytes())
    monkeypatch.chdir(tmp_path)
    expected = (_expected_hash(a, b), 2)
    assert cases_sha256([str(a), str(b)]) == expected
    assert cases_sha256(["b.yaml", "a.yaml", "./a.yaml", str(a)]) == expected  # order, spelling, repeats
    b.write_bytes(SLICE_EXAMPLES.read_bytes().replace(b"example", b"exampIe", 1))
    assert cases_sha256([str(a), str(b)])[0] != expected[0]


def test_keep_going_records_each_skipped_file_with_its_number_of_problems(tmp_path: Path) -> None:
    shutil.copy(EXAMPLES, tmp_path / "good.yaml")
    (tmp_path / "bad.yaml").write_text(BAD, encoding="utf-8")
    done, env = _run(tmp_path, "good.yaml", "bad.yaml", "--keep-going")
    assert done.returncode == 2
    assert env["skipped_files"] == [{"path": "bad.yaml", "problems": 2}]
    assert len(env["problems"]) == 2
    assert env["harness"]["case_files"] == 1  # the cases run came from good.yaml alone
    assert env["harness"]["cases_sha256"] == _expected_hash(tmp_path / "good.yaml")
    assert "interrupted" not in env


def test_the_cpu_model_comes_from_cpuinfo_else_from_the_platform(tmp_path: Path) -> None:
    x86 = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R)  Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\n"
    arm = "processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"
    assert parse_cpuinfo(x86) == "Intel(R) Xeon(R) CPU @ 2.20GHz"
    assert parse_cpuinfo(arm) is None
    (tmp_path / "arm").write_text(arm)
    assert cpu_model(str(tmp_path / "arm"), lambda: "aarch64") == "aarch64"
    assert cpu_model(str(tmp_path / "none"), lambda: "Intel64 Family 6 Model 85, GenuineIntel") == (
        "Intel64 Family 6 Model 85, GenuineIntel"
    )
    assert cpu_model(str(tmp_path / "none"), lambda: "") is None


def test_what_each_ep_executes_on_is_named_in_parts(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The resume identity's parts (survive/stream.py): DirectML under Wine as its chain record says (wine/device.py),
    # the CPU EP's CPU, another EP's GPUs with their drivers, a plugin library's bytes.
    chain = {
        "directml_dll": "1.15.4.0",
        "onnxruntime_dll": "1.24.26.316",
        "dll_sha256": {"DirectML.dll": "a1" * 32, "onnxruntime.dll": "b2" * 32},
        "adapter": {"index": 0, "description": "llvmpipe (LLVM 15.0.6, 256 bits)", "vendor_id": 65541, "device_id": 0},
        "vulkan_driver": "llvmpipe Mesa 25.0.7",
        "wine": "wine-8.0",
        "vkd3d_proton": {"version": "3.0.1", "sha256": {"d3d12core.dll": "c3" * 32, "d3d12.dll": "d4" * 32}},
        "runner": {"compiler": "mingw", "version": "12-win32", "sha256": "e5" * 32},
    }
    monkeypatch.setattr(device, "gpus", lambda: [{"name": "NVIDIA H100 80GB HBM3", "driver_version": "550.54.15"}])
    library = tmp_path / "plugin.so"
    library.write_bytes(b"a plugin EP's library")
    eps = [parse_ep("cpu"), parse_ep("dml"), parse_ep("cuda"), parse_ep(str(library))]
    parts = executing(eps, {"dml": DirectML("1.15.4", "DirectML.dll file version under Wine", None, chain)})
    assert parts["cpu"] == {"CPU": cpu_model() or "unknown"}
    assert parts["dml"] == {
        "DirectML.dll": f"1.15.4.0 (sha256 {'a1' * 32})",
        "onnxruntime.dll": f"1.24.26.316 (sha256 {'b2' * 32})",
        "runner": f"dmlrunner.exe (sha256 {'e5' * 32})",
        "adapter": "llvmpipe (LLVM 15.0.6, 256 bits) (vendor 0x10005, device 0x0000)",
        "driver": "llvmpipe Mesa 25.0.7",
        "Wine": "wine-8.0",
        "vkd3d-proton": f"3.0.1 (d3d12.dll {'d4' * 32}, d3d12core.dll {'c3' * 32})",
    }
    assert parts["cuda"] == {"GPUs": "NVIDIA H100 80GB HBM3 (driver 550.54.15)"}
    digest = hashlib.sha256(library.read_bytes()).hexdigest()
    assert parts[eps[3].text]["library"] == f"{library} (sha256 {digest})"


# -- results.json's environment written from the run's record ---------------------------------------------------

# Runs on DirectML under Wine (lavapipe and an H100) committed by this harness as it writes today: each environment is
# its record written whole, key for key and in order, so that no key a run writes is one the record lacks.
WRITTEN_WHOLE = ("h100-dml-dmlop", "h100-dmlop-flags", "lavapipe-dml-dmlop", "lavapipe-dmlop-flags")


@pytest.mark.parametrize("run", WRITTEN_WHOLE)
def test_a_committed_run_s_environment_is_its_record_written_whole(run: str) -> None:
    import gzip

    from conformance.environment import environment_from_json

    with gzip.open(REPO / "reports" / run / "results.json.gz", "rt", encoding="utf-8") as file:
        written = json.load(file)["environment"]
    assert json.dumps(environment_from_json(written).to_json(whole=True)) == json.dumps(written)


def test_a_run_s_environment_says_none_where_it_found_none_and_leaves_out_what_it_did_not_do(tmp_path: Path) -> None:
    # Written whole: null and empty say "none" (no CUDA_VISIBLE_DEVICES, no --artifacts, an EP's empty options); what
    # the run did not do or have (a stop, runner deaths, a shard, an interruption) is left out.
    from conformance.environment import environment_from_json

    shutil.copy(EXAMPLES, tmp_path / "a.yaml")
    done, env = _run(tmp_path, "a.yaml")
    assert done.returncode == 0, done.stderr
    assert {"cuda_visible_devices", "artifacts", "target_feature_level", "gpus"} <= set(env)
    assert {"library", "options", "devices", "target_feature_level"} <= set(env["eps"][0])
    assert not {"stopped", "runner_deaths", "shard", "interrupted", "planned_results", "problems"} & set(env)
    assert environment_from_json(env).to_json(whole=True) == env


def test_a_native_chain_written_whole_has_nothing_beneath_it() -> None:
    # On Windows the runner runs natively: no Wine, vkd3d-proton or Vulkan, so the chain's record of them is left out.
    from conformance.environment import NATIVE_TRANSPORT, Chain
    from conformance.records import read_record, record_json

    written = {
        "transport": NATIVE_TRANSPORT,
        "adapter": None,
        "d3d12_feature_level": "12_1",
        "shader_model": "6_6",
        "dml_feature_level": "6_4",
        "onnxruntime_dll": None,
        "directml_dll": "1.15.4.0",
        "dll_sha256": {"DirectML.dll": "00"},
        "onnxruntime": None,
        "wheel": None,
        "directml_wheel": None,
        "runner": {"sha256": "11"},
        "error": None,
        "feature_level_by_version_table": "6_4",
    }
    assert record_json(read_record(Chain, written, "chain"), whole=True) == written
    under_wine = record_json(read_record(Chain, {**written, "transport": "wine+vkd3d-proton"}, "chain"), whole=True)
    assert [key for key in under_wine if key not in written] == [
        "wine",
        "vkd3d_proton",
        "vulkan_driver_files",
        "vulkan_devices",
        "vulkan_driver",
    ]

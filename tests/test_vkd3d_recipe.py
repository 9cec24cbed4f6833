"""The vkd3d-proton recipe in .ci/vkd3d-proton: the pins (SOURCE.md), the patch and build.sh agree with each other,
the patch is a well-formed unified diff, and the pinned build's DLLs are the ones CI takes prebuilt. A full build
takes minutes and the network, so it is not run here; what the script decides before building is."""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RECIPE = REPO / ".ci" / "vkd3d-proton"
BUILD = RECIPE / "build.sh"
BASH = shutil.which("bash") or "bash"
PREBUILT = REPO.parent / "shared" / "dml-wine" / "vkd3d-proton" / "x64"  # CI's cache of the same build
COMMIT = re.compile(r"\b[0-9a-f]{40}\b")
BUILD_TOOLS = [
    "x86_64-w64-mingw32-gcc-posix", "x86_64-w64-mingw32-g++-posix", "x86_64-w64-mingw32-ar",
    "x86_64-w64-mingw32-strip", "x86_64-w64-mingw32-widl", "meson", "ninja", "glslangValidator", "patch", "sha256sum",
]  # fmt: skip

pytestmark = pytest.mark.skipif(BASH == "bash", reason="the recipe is a bash script")


def _source_rows() -> list[tuple[str, str, str]]:
    """SOURCE.md's Sources table, read here on its own: rows of three backticked cells ending in a commit."""
    text = (RECIPE / "SOURCE.md").read_text(encoding="utf-8")
    row = re.compile(r"^\| `([^`]+)` \| `([^`]+)` \| `([0-9a-f]{40})` \|$", re.MULTILINE)
    return [(m.group(1), m.group(2), m.group(3)) for m in row.finditer(text)]


def _fact(name: str) -> str:
    text = (RECIPE / "SOURCE.md").read_text(encoding="utf-8")
    found = re.search(rf"^\| {re.escape(name)} \| `([^`]+)` \|$", text, re.MULTILINE)
    assert found, f"SOURCE.md's Build table has no {name} row"
    return found.group(1)


def _build(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [BASH, str(BUILD), *args], capture_output=True, text=True, timeout=60, check=False,
        env=env if env is not None else dict(os.environ),
    )  # fmt: skip


def test_the_build_script_takes_every_pin_from_source_md() -> None:
    rows = _source_rows()
    assert rows[0][:2] == (".", "HansKristian-Work/vkd3d-proton")
    assert {path for path, _, _ in rows} >= {"subprojects/dxil-spirv", "khronos/Vulkan-Headers"}
    done = _build("--pins")
    assert done.returncode == 0, done.stderr
    assert [tuple(line.split(" ")) for line in done.stdout.splitlines()] == rows
    script = BUILD.read_text(encoding="utf-8")
    # nothing pinned twice: no commit, tag, epoch or hash of its own that could drift from SOURCE.md's
    assert COMMIT.findall(script) == []
    assert _fact("tag") not in script and _fact("SOURCE_DATE_EPOCH") not in script
    assert re.match(r"^v\d+\.\d+\.\d+$", _fact("tag")) and _fact("SOURCE_DATE_EPOCH").isdigit()


def test_the_patch_source_md_names_is_a_one_line_unified_diff_that_patch_applies(tmp_path: Path) -> None:
    patch = RECIPE / _fact("patch")
    lines = patch.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("--- "))
    old_name, new_name, hunk = lines[start], lines[start + 1], lines[start + 2]
    assert (old_name, new_name) == ("--- a/libs/vkd3d/vulkan_procs.h", "+++ b/libs/vkd3d/vulkan_procs.h")
    counts = re.fullmatch(r"@@ -(\d+),(\d+) \+(\d+),(\d+) @@.*", hunk)
    assert counts, hunk
    body = lines[start + 3 :]
    assert all(line[:1] in (" ", "-", "+") or line == "" for line in body)
    old = [line[1:] for line in body if not line.startswith("+")]
    new = [line[1:] for line in body if not line.startswith("-")]
    assert (len(old), len(new)) == (int(counts.group(2)), int(counts.group(4)))  # the hunk's own counts
    removed = [line for line in body if line.startswith("-")]
    added = [line for line in body if line.startswith("+")]
    assert removed == ["-VK_INSTANCE_PFN(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)"]
    assert added == ["+VK_INSTANCE_EXT_PFN(vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)"]
    if shutil.which("patch") is None:
        pytest.skip("no patch program to apply it with")
    target = tmp_path / "libs" / "vkd3d" / "vulkan_procs.h"  # the hunk's old side at its line
    target.parent.mkdir(parents=True)
    before = [f"/* line {n} */" for n in range(1, int(counts.group(1)))]
    target.write_text("\n".join([*before, *old, "/* after */"]) + "\n", encoding="utf-8")
    applied = subprocess.run(["patch", "-p1", "--forward"], cwd=tmp_path, stdin=patch.open("rb"),
                             capture_output=True, timeout=30, check=False)  # fmt: skip
    assert applied.returncode == 0, applied.stdout + applied.stderr
    assert target.read_text(encoding="utf-8").splitlines() == [*before, *new, "/* after */"]


@pytest.mark.skipif(not PREBUILT.is_dir(), reason="no prebuilt vkd3d-proton beside the checkout (CI's cache)")
def test_the_pinned_build_is_the_prebuilt_one_ci_takes() -> None:
    for name in ("d3d12.dll", "d3d12core.dll"):
        assert hashlib.sha256((PREBUILT / name).read_bytes()).hexdigest() == _fact(f"{name} sha256"), name


def _bin(tmp_path: Path, *programs: str) -> Path:
    """A PATH folder with only ``programs`` (links to this machine's)."""
    folder = tmp_path / "bin"
    folder.mkdir()
    for program in programs:
        found = shutil.which(program)
        if found is None:
            pytest.skip(f"no {program} here")
        (folder / program).symlink_to(found)
    return folder


def test_the_build_names_every_missing_tool_and_how_to_install_it(tmp_path: Path) -> None:
    path = _bin(tmp_path, "awk", "dirname", "git")
    done = _build(env={"PATH": str(path), "HOME": str(tmp_path), "TMPDIR": str(tmp_path)})
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        f"build.sh: missing {' '.join(BUILD_TOOLS)}: apt-get install gcc-mingw-w64-x86-64-posix "
        "g++-mingw-w64-x86-64-posix mingw-w64-tools meson ninja-build glslang-tools patch (SOURCE.md)"
    ]


def test_the_build_refuses_a_source_at_another_commit_before_it_starts(tmp_path: Path) -> None:
    source = tmp_path / "vkd3d-proton"
    source.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(source)]
    subprocess.run([*git, "init", "-q"], check=True, timeout=30)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "not v3.0.1"], check=True, timeout=30)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = _build("--source", str(source), env=dict(os.environ, TMPDIR=str(scratch)))
    assert done.returncode == 1, done.stdout + done.stderr
    [line] = done.stderr.splitlines()
    pinned = _source_rows()[0][2]
    assert line.startswith(f"build.sh: {source} is at {head}; SOURCE.md pins HansKristian-Work/vkd3d-proton {pinned}")
    assert list(scratch.iterdir()) == []  # nothing copied, nothing left


def test_a_usage_error_is_exit_2_with_the_usage() -> None:
    done = _build("--frobnicate")
    assert done.returncode == 2
    assert done.stderr.splitlines()[0] == "build.sh: unknown argument '--frobnicate'"
    assert "--source DIR" in done.stderr

"""The DirectML runner's cache, for real (the genuine DLLs under Wine + vkd3d-proton, lavapipe in CI): a staged
dmlrunner.exe that was damaged after staging is staged again, said in one line, and the run works; a runner swapped
between a kill and ``--resume`` is refused, naming the runner's hash then and now.

Each test has a cache of its own (``DMLCONF_CACHE`` in a temporary folder, never the user's), given the user's
onnxruntime-directml wheel and Wine prefix as they are. The runner in it is "built" by a stand-in mingw-w64 gcc that
writes the real runner's bytes followed by a few bytes of its own (data past a PE file's last section, which Windows
does not load): a working program whose hash the test knows, and another one where the stand-in says another version.

Skipped, with the missing piece named, where the chain is not set up; in CI (CI=true) an absent chain is a failure.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conformance.ep.wine.chain import MINGW, RUNNER, cache_folder, find_chain, find_wheel

REPO = Path(__file__).resolve().parent.parent
SLICE_EXAMPLES = "cases/slice1/spec_examples.yaml"  # two cases: one kept, one left for the resume

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="DirectML is native on Windows: no Wine chain")


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _runner(variant: str) -> bytes:
    """What the stand-in gcc of ``variant`` builds: the real runner (the user's chain's) and a tail of its own."""
    return (find_chain().folder / RUNNER).read_bytes() + f"stand-in build {variant}".encode()


def _decoy(tmp_path: Path, variant: str) -> dict[str, str]:
    """The environment of a run on a cache in ``tmp_path``, its runner built by the stand-in gcc ``variant``."""
    bin_dir = tmp_path / f"bin-{variant}"
    bin_dir.mkdir(exist_ok=True)
    program = bin_dir / "program.exe"
    program.write_bytes(_runner(variant))
    gcc = bin_dir / MINGW
    gcc.write_text(
        "#!/bin/sh\n"
        f'[ "$1" = -dumpversion ] && {{ echo 12-stand-in-{variant}; exit 0; }}\n'
        f'while [ $# -gt 1 ]; do [ "$1" = -o ] && cp "{program}" "$2"; shift; done\n',
        encoding="utf-8",
    )
    gcc.chmod(0o755)
    user_cache = cache_folder(os.environ)
    return {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
        "PYTHONPATH": str(REPO),
        "DMLCONF_RUNNER_CC": "mingw",
        "DMLCONF_CACHE": str(tmp_path / "cache"),
        "DMLCONF_ORT_DIRECTML_WHEEL": str(find_wheel(os.environ, user_cache, True)),
        "WINEPREFIX": os.environ.get("WINEPREFIX") or str(user_cache / "wine-prefix"),
    }


def _dmlconf(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "conformance", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
        check=False,
    )  # fmt: skip


def _statuses(folder: Path) -> list[str]:
    return [r["status"] for r in json.loads((folder / "results.json").read_text(encoding="utf-8"))["results"]]


def test_a_corrupted_staged_runner_is_staged_again_and_the_run_works(chain_ready: None, tmp_path: Path) -> None:
    env = _decoy(tmp_path, "1")
    first = _dmlconf(env, "run", SLICE_EXAMPLES, "--ep", "dmlop", "--report-dir", str(tmp_path / "first"))
    assert first.returncode == 0 and first.stderr == "", first.stdout[-3000:] + first.stderr[-2000:]
    [staged] = (tmp_path / "cache" / "staged").glob(f"*/{RUNNER}")
    built = _runner("1")
    assert staged.read_bytes() == built
    damaged = bytes(64) + built[64:]  # its DOS and PE headers gone: Wine cannot load it
    staged.write_bytes(damaged)

    again = _dmlconf(env, "run", SLICE_EXAMPLES, "--ep", "dmlop", "--report-dir", str(tmp_path / "again"))
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert again.stderr.splitlines() == [
        f"WARNING {staged.parent}: {RUNNER} is damaged (sha256 {_sha256(damaged)[:12]}…, not "
        f"{_sha256(built)[:12]}…): staged again"
    ]
    assert _statuses(tmp_path / "again") == ["PASS", "PASS"]
    assert staged.read_bytes() == built


def test_a_resume_after_the_runner_changed_is_refused_naming_it(chain_ready: None, tmp_path: Path) -> None:
    first = _dmlconf(_decoy(tmp_path, "1"), "run", SLICE_EXAMPLES, "--ep", "dmlop", "--report-dir", str(tmp_path))
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-2000:]
    stream = tmp_path / "results.jsonl"
    lines = stream.read_bytes().splitlines(keepends=True)
    assert len(lines) == 3  # the header and the two results
    stream.write_bytes(b"".join(lines[:2]))  # what a kill after the first case leaves
    killed = stream.read_bytes()

    # Another compiler version: another runner in the cache, staged beside the same DLLs.
    swapped = _dmlconf(
        _decoy(tmp_path, "2"), "run", SLICE_EXAMPLES, "--ep", "dmlop", "--report-dir", str(tmp_path), "--resume"
    )
    assert swapped.returncode == 2, swapped.stdout[-3000:] + swapped.stderr[-2000:]
    then, now = _sha256(_runner("1"))[:12], _sha256(_runner("2"))[:12]
    assert swapped.stderr.splitlines() == [
        f"dmlconf: --resume: {stream} is from another run: EP dmlop: runner {RUNNER} (sha256 {then}…) then, "
        f"{RUNNER} (sha256 {now}…) now; run without --resume to start again"
    ]
    assert stream.read_bytes() == killed  # a refusal changes nothing

    # With the runner it began with, the same resume is accepted and finishes the run.
    again = _dmlconf(
        _decoy(tmp_path, "1"), "run", SLICE_EXAMPLES, "--ep", "dmlop", "--report-dir", str(tmp_path), "--resume"
    )
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "resuming: 1 result(s) kept" in again.stdout
    assert _statuses(tmp_path) == ["PASS", "PASS"]

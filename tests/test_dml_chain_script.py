""".ci/dml-chain.sh on machines other than CI's: another distribution, an apt step that fails, a Mesa that is new
enough, a real GPU. It runs here on a pretend system (DMLCHAIN_SYSROOT before every system file it reads or writes)
with stand-ins for apt-get, dpkg-query, vulkaninfo and the tools it looks for, each of which notes its calls; this
machine's apt, X server and packages are never touched.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / ".ci" / "dml-chain.sh"
BASH = shutil.which("bash") or "bash"
DISPLAY = "93"
UTILITIES = ("bash", "dirname", "sed", "tr", "awk", "grep", "rm", "seq", "sleep", "setsid")  # what the script runs
TOOLS = ("wine", "Xvfb", "x86_64-w64-mingw32-gcc", "vulkaninfo")  # what it installs where missing

UBUNTU = 'PRETTY_NAME="Ubuntu 24.04.1 LTS"\nNAME="Ubuntu"\nVERSION_ID="24.04"\nID=ubuntu\nID_LIKE=debian\n'
DEBIAN_12 = 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n'
DEBIAN_SOURCES = """Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
"""
NODESOURCE = "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\nComponents: main\n"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
BACKPORTS = f"deb [signed-by={KEYRING}] http://deb.debian.org/debian bookworm-backports main"


def _summary(device_type: str, name: str, driver_info: str) -> str:
    """vulkaninfo --summary's device block, as vulkaninfo 1.3 prints it."""
    return (
        "Devices:\n========\nGPU0:\n\tapiVersion         = 1.3.277\n"
        f"\tdeviceType         = PHYSICAL_DEVICE_TYPE_{device_type}\n\tdeviceName         = {name}\n"
        f"\tdriverInfo         = {driver_info}\n"
    )


LAVAPIPE_22 = _summary("CPU", "llvmpipe (LLVM 15.0.6, 256 bits)", "Mesa 22.3.6 (LLVM 15.0.6)")
LAVAPIPE_24 = _summary("CPU", "llvmpipe (LLVM 17.0.6, 256 bits)", "Mesa 24.2.8-1ubuntu1~24.04.1 (LLVM 17.0.6)")
NVIDIA = _summary("DISCRETE_GPU", "NVIDIA H100 80GB HBM3", "580.65.06")


class Machine:
    """A pretend system: its root folder, a PATH of stand-ins, and what they were asked."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bin = root / "bin"
        self.log = root / "calls.log"
        self.bin.mkdir()
        (root / "etc" / "apt" / "sources.list.d").mkdir(parents=True)
        self.prebuilt = root / "vkd3d"
        self.prebuilt.mkdir()
        for name in ("d3d12.dll", "d3d12core.dll"):
            (self.prebuilt / name).write_bytes(b"MZ")
        for utility in UTILITIES:
            found = shutil.which(utility)
            if found is None:
                pytest.skip(f"no {utility} here")
            (self.bin / utility).symlink_to(found)
        self.env = {
            "PATH": str(self.bin), "HOME": str(root), "DMLCHAIN_SYSROOT": str(root), "DMLWINE_DISPLAY": DISPLAY,
            "DMLCHAIN_PREBUILT": str(self.prebuilt), "DMLCONF_CACHE": str(root / "cache"),
        }  # fmt: skip

    def os_release(self, text: str) -> None:
        (self.root / "etc" / "os-release").write_text(text, encoding="utf-8")

    def source(self, name: str, text: str) -> None:
        (self.root / "etc" / "apt" / "sources.list.d" / name).write_text(text, encoding="utf-8")

    def stand_in(self, name: str, body: str = "") -> None:
        """``name`` on PATH: it notes its arguments, then runs ``body``."""
        script = self.bin / name
        script.write_text(f'#!{BASH}\necho "{name} $*" >> "{self.log}"\n{body}\n', encoding="utf-8")
        script.chmod(0o755)

    def tools(self, vulkaninfo: str | None) -> None:
        """The four tools there; vulkaninfo prints ``vulkaninfo`` (None: it finds no driver, as the loader says)."""
        for tool in TOOLS[:-1]:
            self.stand_in(tool)
        if vulkaninfo is None:
            self.stand_in("vulkaninfo", 'echo "Cannot create Vulkan instance." >&2; exit 1')
        else:
            self.stand_in("vulkaninfo", f"printf '%s' '{vulkaninfo}'")  # bash's own printf: no cat on PATH

    def mesa_package(self, version: str | None) -> None:
        """dpkg-query's answer for mesa-vulkan-drivers: installed at ``version``, or not installed."""
        if version is None:
            self.stand_in("dpkg-query", 'echo "dpkg-query: no packages found matching $3" >&2; exit 1')
        else:
            self.stand_in("dpkg-query", f'printf "installed {version}"')

    def apt(self, update_fails: bool = False) -> None:
        failing = 'echo "E: The repository does not have a Release file." >&2; exit 100'
        self.stand_in("apt-get", f'[ "$1" = update ] && {{ {failing if update_fails else "exit 0"}; }}; exit 0')

    def calls(self, program: str) -> list[str]:
        lines = self.log.read_text(encoding="utf-8").splitlines() if self.log.exists() else []
        return [line for line in lines if line.split(" ", 1)[0] == program]

    def files(self) -> dict[str, str]:
        etc = self.root / "etc"
        return {str(p.relative_to(etc)): p.read_text(encoding="utf-8") for p in etc.rglob("*") if p.is_file()}

    def run(self) -> subprocess.CompletedProcess[str]:
        """The script sourced as CI sources it; then its status and what it exported."""
        shell = 'source "$1"; echo "rc=$?"; echo "DISPLAY=${DISPLAY:-}"; echo "VKD3D=${DMLCONF_VKD3D_PROTON:-}"'
        return subprocess.run([BASH, "-c", shell, "bash", str(SCRIPT)], env=self.env, capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip


@pytest.fixture
def machine() -> Iterator[Machine]:
    # A short root: the X socket's path must fit a sockaddr_un (108 bytes).
    root = Path(tempfile.mkdtemp(prefix="dc-", dir="/tmp"))
    found = Machine(root)
    x11 = root / "tmp" / ".X11-unix"
    x11.mkdir(parents=True)
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(x11 / f"X{DISPLAY}"))  # an X server already there: the script reuses it
    (root / "tmp" / f".X{DISPLAY}-lock").write_text(f"{os.getpid():>10}\n", encoding="ascii")
    try:
        yield found
    finally:
        server.close()
        shutil.rmtree(root, ignore_errors=True)


def _exported(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    return dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)


def test_off_debian_12_a_missing_tool_is_one_line_and_nothing_is_installed_or_written(machine: Machine) -> None:
    machine.os_release(UBUNTU)
    machine.apt()
    before = machine.files()
    done = machine.run()
    assert _exported(done)["rc"] == "1", done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "dml-chain: wine Xvfb x86_64-w64-mingw32-gcc vulkaninfo would be installed from Debian 12's packages, but "
        "this is Ubuntu 24.04.1 LTS: install that with this system's own packages "
        "(docs/directml-on-linux.md#setting-it-up)"
    ]
    assert machine.calls("apt-get") == []
    assert machine.files() == before


def test_off_debian_12_an_old_mesa_is_one_line_and_no_debian_suite_is_written(machine: Machine) -> None:
    machine.os_release(UBUNTU)
    machine.tools(LAVAPIPE_22)
    machine.mesa_package("22.3.6-1+deb12u1")
    machine.apt()
    machine.source("ubuntu.sources", "Types: deb\nURIs: http://archive.ubuntu.com/ubuntu\nSuites: noble\n")
    before = machine.files()
    done = machine.run()
    assert _exported(done)["rc"] == "1", done.stdout + done.stderr
    assert done.stderr.splitlines() == [
        "dml-chain: no Vulkan GPU and only Mesa 22.3.6: Mesa 23 or newer's lavapipe would be installed from Debian "
        "12's packages, but this is Ubuntu 24.04.1 LTS: install that with this system's own packages "
        "(docs/directml-on-linux.md#setting-it-up)"
    ]
    assert machine.calls("apt-get") == [] and machine.files() == before


def test_off_debian_12_with_every_piece_there_it_sets_the_chain_up(machine: Machine) -> None:
    machine.os_release(UBUNTU)
    machine.tools(LAVAPIPE_24)  # Ubuntu 24.04's own Mesa 24 is new enough
    machine.mesa_package(None)
    machine.apt()
    done = machine.run()
    assert _exported(done) == {"rc": "0", "DISPLAY": f":{DISPLAY}", "VKD3D": str(machine.prebuilt)}, done.stderr
    assert machine.calls("apt-get") == []


def test_a_failing_apt_update_leaves_no_backports_source_behind(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(LAVAPIPE_22)
    machine.mesa_package("22.3.6-1+deb12u1")
    machine.apt(update_fails=True)
    machine.source("debian.sources", DEBIAN_SOURCES)
    before = machine.files()
    done = machine.run()
    assert _exported(done)["rc"] == "1", done.stdout + done.stderr
    written = machine.root / "etc" / "apt" / "sources.list.d" / "dmlconf-backports.list"
    assert done.stderr.splitlines() == [
        "E: The repository does not have a Release file.",
        f"dml-chain: Mesa from bookworm-backports could not be installed (apt-get's words above); {written} "
        "removed again",
    ]
    assert machine.calls("apt-get") == ["apt-get update -qq"]
    assert machine.files() == before  # the source it wrote for that update is gone


def test_debian_12_s_mesa_22_gets_mesa_from_backports_on_the_mirror_apt_uses_for_bookworm(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(None)  # a fresh machine: no Vulkan driver yet, no Mesa package
    machine.mesa_package(None)
    machine.apt()
    machine.source("a-nodesource.sources", NODESOURCE)  # read first, but not Debian's bookworm
    machine.source("debian.sources", DEBIAN_SOURCES)
    done = machine.run()
    assert _exported(done)["rc"] == "0", done.stdout + done.stderr
    assert machine.files()["apt/sources.list.d/dmlconf-backports.list"] == BACKPORTS + "\n"
    assert machine.calls("apt-get") == [
        "apt-get update -qq",
        "apt-get install -y -qq --no-install-recommends -t bookworm-backports mesa-vulkan-drivers",
    ]


def test_backports_that_apt_s_sources_already_name_are_not_added_again(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(LAVAPIPE_22)
    machine.mesa_package("22.3.6-1+deb12u1")
    machine.apt()
    machine.source("debian.sources", DEBIAN_SOURCES.replace("bookworm-updates", "bookworm-updates bookworm-backports"))
    before = machine.files()
    done = machine.run()
    assert _exported(done)["rc"] == "0", done.stdout + done.stderr
    assert machine.files() == before
    assert machine.calls("apt-get")[-1].endswith("-t bookworm-backports mesa-vulkan-drivers")


@pytest.mark.parametrize(
    ("vulkaninfo", "package"),
    [(None, "23.2.1-1~bpo12+1"), (None, "1:24.0.0-1"), (LAVAPIPE_24, None)],
    ids=["dpkg says 23", "dpkg says 24, with an epoch", "vulkaninfo says 24"],
)
def test_mesa_23_or_newer_is_enough(machine: Machine, vulkaninfo: str | None, package: str | None) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(vulkaninfo)
    machine.mesa_package(package)
    machine.apt()
    machine.source("debian.sources", DEBIAN_SOURCES)
    done = machine.run()
    assert _exported(done)["rc"] == "0", done.stdout + done.stderr
    assert machine.calls("apt-get") == []
    assert "apt/sources.list.d/dmlconf-backports.list" not in machine.files()


def test_a_real_gpu_gets_no_lavapipe(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(NVIDIA)
    machine.mesa_package(None)
    machine.apt()
    machine.source("debian.sources", DEBIAN_SOURCES)
    done = machine.run()
    assert _exported(done)["rc"] == "0", done.stdout + done.stderr
    assert machine.calls("apt-get") == []
    assert "apt/sources.list.d/dmlconf-backports.list" not in machine.files()


def test_missing_tools_on_debian_12_are_installed_without_lavapipe(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.stand_in("vulkaninfo", f"printf '%s' '{NVIDIA}'")  # the GPU's driver is there; Wine and the rest not
    machine.mesa_package(None)
    machine.apt()
    machine.source("debian.sources", DEBIAN_SOURCES)
    done = machine.run()
    assert _exported(done)["rc"] == "0", done.stdout + done.stderr
    [install] = [call for call in machine.calls("apt-get") if " install " in call]
    assert "wine64" in install and "vulkan-tools" in install and "mesa-vulkan-drivers" not in install


def test_vkd3d_proton_comes_from_the_recipe_s_build_where_ci_s_prebuilt_one_is_absent(machine: Machine) -> None:
    machine.os_release(DEBIAN_12)
    machine.tools(NVIDIA)
    machine.mesa_package(None)
    machine.env["DMLCHAIN_PREBUILT"] = str(machine.root / "no-such-folder")
    done = machine.run()
    assert _exported(done)["rc"] == "1"
    where = subprocess.run([BASH, str(REPO / ".ci" / "vkd3d-proton" / "build.sh"), "--where"], env=machine.env,
                           capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    assert where.startswith(str(machine.root / "cache"))
    assert done.stderr.splitlines() == [
        f"dml-chain: no vkd3d-proton for Wine 8.0 here: build it from the pinned sources "
        f"(bash {REPO}/.ci/vkd3d-proton/build.sh: about 4 minutes, into {where}/x64, found there next time) or set "
        "DMLCONF_VKD3D_PROTON to an x64 folder (docs/directml-on-linux.md#vkd3d-proton)"
    ]
    built = Path(where) / "x64"
    built.mkdir(parents=True)
    for name in ("d3d12.dll", "d3d12core.dll"):
        (built / name).write_bytes(b"MZ")
    done = machine.run()
    assert _exported(done) == {"rc": "0", "DISPLAY": f":{DISPLAY}", "VKD3D": str(built)}, done.stderr

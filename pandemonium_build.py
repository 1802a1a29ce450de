"""Building scx_pandemonium: the system packages it needs, cargo, and locating what cargo built.

Standard library only. Package installation happens only as root and only for what is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from pandemonium_common import PROJECT_ROOT, PandemoniumError, cargo_target_dir, log

# Debian package -> how to tell it is already there (a command on PATH, or a file).
BUILD_PACKAGES = {
    "clang-19": ("cmd", "clang-19"),
    "libclang1-19": ("file", "/usr/lib/llvm-19/lib/libclang-19.so.1"),
    "libelf-dev": ("file", "/usr/include/libelf.h"),
    "zlib1g-dev": ("file", "/usr/include/zlib.h"),
    "pkg-config": ("cmd", "pkg-config"),
    "make": ("cmd", "make"),
}
VM_PACKAGES = {
    "qemu-system-x86": ("cmd", "qemu-system-x86_64"),
    "busybox-static": ("file", "/bin/busybox"),
    # The unit test runs systemd-analyze verify on systemd/pandemonium.service.
    "systemd": ("cmd", "systemd-analyze"),
}
# The benchmarks put these host tools into the guest (tests/bench/driver.py TOOLS).
BENCH_PACKAGES = {
    "stress-ng": ("cmd", "stress-ng"),
    "linux-perf": ("cmd", "perf"),
    "rt-tests": ("cmd", "cyclictest"),
    "gcc": ("cmd", "cc"),
}
MIN_CLANG = 18


def _present(kind: str, what: str) -> bool:
    return shutil.which(what) is not None if kind == "cmd" else Path(what).exists()


def _usable_clang() -> str | None:
    """An already-installed clang >= 18 makes clang-19 unnecessary (BPF_CLANG names it)."""
    wanted = os.environ.get("BPF_CLANG")
    names = [wanted] if wanted else [f"clang-{v}" for v in range(30, MIN_CLANG - 1, -1)]
    for name in names:
        path = shutil.which(name)
        if not path:
            continue
        try:
            out = subprocess.run([path, "--version"], capture_output=True, text=True).stdout
        except OSError:
            continue
        words = out.split()
        if "version" in words:
            major = words[words.index("version") + 1].split(".")[0]
            if major.isdigit() and int(major) >= MIN_CLANG:
                return name
    return None


def missing_packages(vm: bool, extra: dict[str, tuple[str, str]] | None = None) -> list[str]:
    wanted = dict(BUILD_PACKAGES)
    if vm:
        wanted.update(VM_PACKAGES)
    wanted.update(extra or {})
    clang = _usable_clang()
    missing = [pkg for pkg, (kind, what) in wanted.items() if not _present(kind, what)]
    if clang and clang != "clang-19":
        missing = [p for p in missing if p not in ("clang-19", "libclang1-19")]
    return missing


def ensure_packages(vm: bool, extra: dict[str, tuple[str, str]] | None = None) -> None:
    """Installs missing Debian packages as root; otherwise names them and stops. `extra`: more
    packages in BUILD_PACKAGES' form (a benchmark's tools)."""
    missing = missing_packages(vm, extra)
    if not missing:
        return
    if os.geteuid() != 0:
        raise PandemoniumError(
            "missing system packages: " + " ".join(missing)
            + "\ninstall them (sudo apt-get install " + " ".join(missing) + ") or run as root")
    log.info("installing system packages: %s", " ".join(missing))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *missing]):
        if subprocess.run(cmd, env=env).returncode != 0:
            raise PandemoniumError(f"{' '.join(cmd[:2])} failed; see the output above")


def cargo_env() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("BPF_CLANG", _usable_clang() or "clang-19")
    cargo_bin = Path.home() / ".cargo" / "bin"
    if cargo_bin.is_dir() and str(cargo_bin) not in env.get("PATH", ""):
        env["PATH"] = f"{cargo_bin}:{env.get('PATH', '')}"
    return env


def cargo(*args: str) -> None:
    if not shutil.which("cargo", path=cargo_env()["PATH"]):
        raise PandemoniumError("cargo not found: install Rust (https://rustup.rs) first")
    cmd = ["cargo", *args]
    log.info("$ %s", " ".join(cmd))
    if subprocess.run(cmd, cwd=PROJECT_ROOT, env=cargo_env()).returncode != 0:
        raise PandemoniumError(f"`{' '.join(cmd)}` failed")


def build_release() -> Path:
    cargo("build", "--release", "--locked")
    binary = cargo_target_dir() / "release" / "scx_pandemonium"
    if not binary.is_file():
        raise PandemoniumError(f"cargo finished but {binary} is missing")
    return binary


def test_executable(name: str) -> Path:
    """Builds the integration test `name` (release) and returns its executable."""
    cmd = ["cargo", "test", "--release", "--locked", "--test", name, "--no-run",
           "--message-format=json-render-diagnostics"]
    proc = subprocess.run(cmd, cwd=PROJECT_ROOT, env=cargo_env(), stdout=subprocess.PIPE,
                          text=True)
    if proc.returncode != 0:
        raise PandemoniumError(f"`{' '.join(cmd)}` failed")
    for line in proc.stdout.splitlines():
        try:
            msg = json.loads(line)
        except json.JSONDecodeError:
            continue
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
                and msg.get("target", {}).get("name") == name:
            return Path(msg["executable"])
    raise PandemoniumError(f"cargo did not report an executable for test {name!r}")


"""Building scx_pandemonium: the system packages it needs, cargo, and locating what cargo built.

Standard library only. Package installation happens only as root, with apt-get, and only for what
is missing; elsewhere the missing packages are named (src/build_support/system_packages.tsv).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import packages as pkgs
from .common import (
    PROJECT_ROOT,
    PandemoniumError,
    log,
    scheduler_binary,
    sudo_command,
    tools_binary,
)


def required_tools(vm: bool, extra: list[str] | None = None) -> list[str]:
    """The table's build tools, its VM tools when the VM runs, then `extra` (tool names)."""
    table = pkgs.load()
    tools = pkgs.group("build", table) + (pkgs.group("vm", table) if vm else []) + (extra or [])
    return list(dict.fromkeys(tools))


def missing_packages(vm: bool, extra: list[str] | None = None) -> list[str]:
    """The missing tools (system_packages.tsv names), not package names: those differ by
    distribution."""
    return pkgs.missing(required_tools(vm, extra))


def ensure_packages(vm: bool, extra: list[str] | None = None) -> None:
    """Installs what is missing with apt-get when root on Debian/Ubuntu; otherwise names the
    packages for apt, pacman and dnf and stops. `extra`: more tools by name (a benchmark's)."""
    missing = missing_packages(vm, extra)
    if not missing:
        return
    apt = shutil.which("apt-get")
    if os.geteuid() != 0 or not apt:
        how = pkgs.missing_message(missing)
        if apt:
            how += ("\nor let this tool install them with apt-get, as root: "
                    + sudo_command(*sys.argv[1:]))
        raise PandemoniumError(how)
    apt_names = pkgs.packages(missing, "apt")
    log.info("installing system packages: %s", " ".join(apt_names))
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    for cmd in (["apt-get", "update", "-q"],
                ["apt-get", "install", "-y", "-q", "--no-install-recommends", *apt_names]):
        if subprocess.run(cmd, env=env).returncode != 0:
            raise PandemoniumError(f"{' '.join(cmd[:2])} failed; see the output above")


def cargo_env() -> dict[str, str]:
    """The environment for cargo. BPF_CLANG, unless the caller set it, is the clang build.rs would
    pick: the dependencies' build scripts (scx_utils) run $BPF_CLANG, else a plain `clang`."""
    env = dict(os.environ)
    if not env.get("BPF_CLANG"):
        clang = pkgs.usable_clang(env)
        if clang:
            env["BPF_CLANG"] = clang
    cargo_bin = Path.home() / ".cargo" / "bin"
    if cargo_bin.is_dir() and str(cargo_bin) not in env.get("PATH", ""):
        env["PATH"] = f"{cargo_bin}:{env.get('PATH', '')}"
    return env


def cargo(*args: str) -> None:
    if not shutil.which("cargo", path=cargo_env()["PATH"]):
        raise PandemoniumError("cargo not found: install Rust (https://rustup.rs) first")
    cmd = ["cargo", *args]
    if os.environ.get("SUDO_USER") and "BPF_CLANG" not in os.environ:
        log.warning("BPF_CLANG is not set: sudo drops the caller's unless told to keep it (%s); "
                    "building with %s", sudo_command("..."),
                    cargo_env().get("BPF_CLANG", "no clang found"))
    log.info("$ %s", " ".join(cmd))
    if subprocess.run(cmd, cwd=PROJECT_ROOT, env=cargo_env()).returncode != 0:
        raise PandemoniumError(f"`{' '.join(cmd)}` failed")


def build_release() -> Path:
    """Builds every binary target (the scheduler and pandemonium-tools); returns the scheduler."""
    cargo("build", "--release", "--locked")
    for binary in (scheduler_binary(), tools_binary()):
        if not binary.is_file():
            raise PandemoniumError(f"cargo finished but {binary} is missing")
    return scheduler_binary()


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


"""BPF_CLANG (and CARGO_TARGET_DIR) survive the sudo the tools tell people to run: every suggested
root command keeps them, and cargo, run as root, gets what was kept."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tools.pandemonium import build
from tools.pandemonium import install
from tools.pandemonium.common import (
    SUDO_KEEP_ENV,
    PandemoniumError,
    sudo_argv,
    sudo_command,
)

ROOT = Path(__file__).resolve().parents[1]

KEEP = "sudo --preserve-env=BPF_CLANG,CARGO_TARGET_DIR"


def test_the_root_command_keeps_bpf_clang_and_the_target_dir():
    assert SUDO_KEEP_ENV == ("BPF_CLANG", "CARGO_TARGET_DIR")
    assert sudo_argv("env")[:2] == KEEP.split() and sudo_argv("env")[-1] == "env"
    assert sudo_command("install", "--no-build") == f"{KEEP} ./pandemonium.py install --no-build"


def test_install_without_root_suggests_the_keeping_sudo():
    with pytest.raises(PandemoniumError) as exc:
        install.install_files(install.Layout(), ROOT / "README.md", euid=1000)
    msg = str(exc.value)
    assert f"`{KEEP} ./pandemonium.py install`" in msg
    assert f"`{KEEP} ./pandemonium.py install --no-build`" in msg
    with pytest.raises(PandemoniumError) as exc:
        install.uninstall_files(install.Layout(), euid=1000)
    assert f"`{KEEP} ./pandemonium.py uninstall`" in str(exc.value)
    assert "--no-build" not in str(exc.value)  # uninstall has no such option


def test_the_install_help_shows_the_keeping_sudo():
    proc = subprocess.run([sys.executable, str(ROOT / "pandemonium.py"), "install", "--help"],
                          capture_output=True, text=True)
    assert proc.returncode == 0
    assert f"{KEEP} ./pandemonium.py install" in proc.stdout
    assert "sudo ./pandemonium.py" not in proc.stdout


def test_docs_suggest_only_the_keeping_sudo():
    for doc in (ROOT / "README.md", ROOT / "systemd/README.md"):
        text = doc.read_text()
        assert "sudo ./pandemonium.py" not in text, doc


def test_cargo_run_as_root_gets_the_kept_bpf_clang(monkeypatch, tmp_path):
    """What sudo kept reaches cargo, hence build.rs: cargo_env() never overrides it."""
    seen = {}

    def fake_run(cmd, cwd=None, env=None, **_):
        seen.update(cmd=cmd, env=env)
        return subprocess.CompletedProcess(cmd, 0)

    monkeypatch.setattr(build.subprocess, "run", fake_run)
    monkeypatch.setattr(build.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    monkeypatch.setattr(build.pkgs, "usable_clang", lambda env=None: "clang-19")
    monkeypatch.setenv("SUDO_USER", "someone")
    monkeypatch.setenv("BPF_CLANG", "clang-42")
    build.cargo("build", "--release", "--locked")
    assert seen["cmd"][:2] == ["cargo", "build"] and seen["env"]["BPF_CLANG"] == "clang-42"


def test_a_root_build_that_lost_bpf_clang_says_so(monkeypatch):
    warnings = []
    monkeypatch.setattr(build.subprocess, "run",
                        lambda cmd, **k: subprocess.CompletedProcess(cmd, 0))
    monkeypatch.setattr(build.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    monkeypatch.setattr(build.pkgs, "usable_clang", lambda env=None: "clang-19")
    monkeypatch.setattr(build.log, "warning", lambda fmt, *args: warnings.append(fmt % args))
    monkeypatch.delenv("BPF_CLANG", raising=False)
    monkeypatch.setenv("SUDO_USER", "someone")
    build.cargo("build")
    assert len(warnings) == 1 and "BPF_CLANG is not set" in warnings[0] and KEEP in warnings[0]
    assert warnings[0].endswith("building with clang-19")
    monkeypatch.delenv("SUDO_USER")
    build.cargo("build")
    assert len(warnings) == 1  # not under sudo: nothing was lost


@pytest.mark.skipif(not shutil.which("sudo"), reason="sudo is not installed here")
def test_real_sudo_keeps_bpf_clang():
    env = dict(os.environ, BPF_CLANG="clang-42")
    probe = [*sudo_argv("env")]
    probe.insert(1, "-n")  # never prompt for a password
    kept = subprocess.run(probe, env=env, capture_output=True, text=True)
    if kept.returncode != 0:
        pytest.skip(f"sudo -n cannot run here: {kept.stderr.strip()}")
    plain = subprocess.run(["sudo", "-n", "env"], env=env, capture_output=True, text=True)
    if "BPF_CLANG=clang-42" in plain.stdout:
        pytest.skip("this sudo keeps the whole environment: nothing to show")
    assert "BPF_CLANG=clang-42" in kept.stdout

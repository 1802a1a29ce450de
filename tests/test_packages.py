"""src/build_support/system_packages.tsv as the Python tools read it: the table, the hint every
"missing ..." message uses, presence checks, and which clang counts as usable."""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest

from tools.pandemonium import build
from tools.pandemonium import packages as pkgs
from tools.pandemonium.common import PandemoniumError

ROOT = Path(__file__).resolve().parents[1]

HEADER = "tool check group apt pacman dnf\n"


def fake_tool(directory: Path, name: str, stdout: str = "") -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\ncat <<'EOF'\n{stdout}\nEOF\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


# -- the table ------------------------------------------------------------------------

def test_the_table_names_a_package_for_every_manager():
    table = pkgs.load()
    assert len(table) >= 10
    for row in table.values():
        assert row.group in pkgs.GROUPS, row
        assert re.fullmatch(r"(clang|cmd|file|py):\S+", row.check), row
        assert all(name and name != pkgs.AUR for name in (row.apt, row.pacman, row.dnf)), row
    assert set(pkgs.group("build", table)) == {"clang", "libclang", "libelf", "zlib",
                                               "pkg-config", "make"}


def test_every_tool_the_code_asks_for_by_name_is_in_the_table():
    from tools.pandemonium import gate_runner
    from tools.pandemonium.bench import driver
    from tools.pandemonium.stress import workloads

    table = pkgs.load()
    for tool in [*gate_runner.GUEST_TOOLS, *workloads.GUEST_TOOLS, *driver.TOOLS, "cc",
                 "busybox", "qemu-system-x86_64", "matplotlib", "mmdebstrap", "mke2fs"]:
        assert tool in table, tool


def test_no_message_spells_out_an_apt_command_of_its_own():
    """The table is the one place package names live; apt-get may only be run, not advised."""
    spelled_out = re.compile(r"(apt-get install|pacman -S|dnf install) [\w-]")
    offenders = []
    for path in [*ROOT.glob("*.py"), *ROOT.glob("tools/**/*.py"), *ROOT.glob("tests/**/*.py"),
                 ROOT / "build.rs", *ROOT.glob("src/build_support/*.rs")]:
        if path.name.startswith("test_"):
            continue
        for no, line in enumerate(path.read_text().splitlines(), 1):
            if spelled_out.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{no}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_the_readme_names_every_build_package_for_arch_and_fedora():
    lines = (ROOT / "README.md").read_text().splitlines()
    build = pkgs.group("build")
    for manager, marker, base in (("pacman", "# Arch, CachyOS", {"make", "pkgconf"}),
                                  ("dnf", "# Fedora", set())):
        line = next(line for line in lines if line.rstrip().endswith(marker))
        words = set(line.split())
        assert set(pkgs.packages(build, manager)) - base <= words, (manager, line)
    assert "base-devel" in next(line for line in lines if "# Arch, CachyOS" in line)


@pytest.mark.parametrize("text, error", [
    ("# nothing but a comment\n", "no header"),
    ("tool check apt\n", "header"),
    (HEADER + "make cmd:make build make make\n", "line 2: 5 columns"),
    (HEADER + "make cmd:make build a b c\nmake cmd:make build a b c\n", "make listed twice"),
    (HEADER + "make cmd:make tools a b c\n", "group 'tools'"),
])
def test_a_broken_table_is_refused(text, error):
    with pytest.raises(PandemoniumError, match=error):
        pkgs.parse(text)


# -- hints --------------------------------------------------------------------------

def test_a_hint_names_each_package_once_and_sets_aur_packages_apart():
    assert pkgs.install_hint(["cyclictest", "perf", "hackbench"]) == (
        "  apt-get install rt-tests linux-perf\n  pacman -S perf (AUR: rt-tests)\n"
        "  dnf install realtime-tests perf")
    assert "\n  (AUR: rt-tests)\n" in pkgs.install_hint(["hackbench"])


def test_missing_message_and_errors():
    msg = pkgs.missing_message(["busybox"], "the guest's shell")
    assert msg == ("missing busybox (the guest's shell); install with one of:\n"
                   "  apt-get install busybox-static\n  pacman -S busybox\n  dnf install busybox")
    with pytest.raises(PandemoniumError, match="no tool nope"):
        pkgs.install_hint(["nope"])
    with pytest.raises(PandemoniumError, match="no tools"):
        pkgs.install_hint([])


# -- presence -------------------------------------------------------------------------

def test_presence_checks(tmp_path):
    fake_tool(tmp_path, "frobnicate")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/libfoo.so.1").write_text("")
    table = {r.tool: r for r in pkgs.parse(
        HEADER
        + "frobnicate cmd:frobnicate build a b c\n"
        + "absent cmd:no-such-program-here build a b c\n"
        + f"foo file:{tmp_path}/nowhere/*.so|{tmp_path}/lib/libfoo.so* build a b c\n"
        + f"bar file:{tmp_path}/lib/libbar.so* build a b c\n"
        + "json py:json build a b c\n"
        + "nomod py:no_such_module_here build a b c\n")}
    env = {"PATH": str(tmp_path)}
    assert pkgs.missing(list(table), table, env) == ["absent", "bar", "nomod"]


def test_the_clang_versions_are_the_tables():
    assert pkgs.clang_versions(pkgs.load()["clang"].check) == (18, 30)
    for bad in ("clang", "clang:18", "clang:30-18", "clang:x-30", "cmd:clang-18-30"):
        with pytest.raises(PandemoniumError, match="expected clang:MIN-NEWEST"):
            pkgs.clang_versions(bad)


def test_usable_clang_follows_build_rs(tmp_path):
    def clangs(*pairs):
        d = tmp_path / "-".join(f"{n}={v}" for n, v in pairs)
        d.mkdir()
        for name, ver in pairs:
            fake_tool(d, name, f"clang version {ver}\nTarget: x86_64-pc-linux-gnu")
        return {"PATH": str(d)}

    assert pkgs.usable_clang(clangs(("clang", "14.0.6"), ("clang-19", "19.1.7"),
                                    ("clang-18", "18.1.8"))) == "clang-19"
    assert pkgs.usable_clang(clangs(("clang", "21.1.6"))) == "clang"  # Arch, Fedora
    assert pkgs.usable_clang(clangs(("clang", "17.0.6"))) is None
    env = clangs(("clang-17", "17.0.6"), ("clang-20", "20.1.2"))
    assert pkgs.usable_clang(env) == "clang-20"
    # an explicit BPF_CLANG is not replaced by a better clang
    assert pkgs.usable_clang(dict(env, BPF_CLANG="clang-17")) is None
    # the versions are the row's: clang-20 is past NEWEST, clang-17 below MIN
    assert pkgs.usable_clang(env, "clang:18-19") is None
    assert pkgs.usable_clang(env, "clang:17-19") == "clang-17"


# -- ensure_packages ------------------------------------------------------------------

def _pretend(monkeypatch, *, euid, apt, missing):
    monkeypatch.setattr(build.os, "geteuid", lambda: euid)
    monkeypatch.setattr(build.shutil, "which",
                        lambda name, *a, **k: "/usr/bin/apt-get" if apt and name == "apt-get"
                        else None)
    monkeypatch.setattr(build, "missing_packages", lambda vm, extra=None: missing)
    ran = []
    monkeypatch.setattr(build.subprocess, "run",
                        lambda cmd, **k: ran.append(cmd) or type("P", (), {"returncode": 0})())
    return ran


def test_without_root_the_packages_are_named_for_every_manager(monkeypatch):
    ran = _pretend(monkeypatch, euid=1000, apt=True, missing=["libelf", "cc"])
    monkeypatch.setattr(build.sys, "argv", ["./pandemonium.py", "build"])
    with pytest.raises(PandemoniumError) as exc:
        build.ensure_packages(vm=False)
    msg = str(exc.value)
    assert msg.startswith("missing libelf, cc; install with one of:\n")
    assert "  apt-get install libelf-dev gcc\n  pacman -S libelf gcc\n" \
           "  dnf install elfutils-libelf-devel gcc" in msg
    assert msg.endswith("as root: sudo --preserve-env=BPF_CLANG,CARGO_TARGET_DIR "
                        "./pandemonium.py build")
    assert ran == []


def test_root_without_apt_names_the_packages_instead_of_installing(monkeypatch):
    ran = _pretend(monkeypatch, euid=0, apt=False, missing=["zlib"])
    with pytest.raises(PandemoniumError) as exc:
        build.ensure_packages(vm=False)
    assert "pacman -S zlib" in str(exc.value) and "sudo" not in str(exc.value)
    assert ran == []


def test_root_with_apt_installs_the_debian_names(monkeypatch):
    ran = _pretend(monkeypatch, euid=0, apt=True, missing=["cyclictest", "hackbench", "perf"])
    build.ensure_packages(vm=False)
    assert ran == [["apt-get", "update", "-q"],
                   ["apt-get", "install", "-y", "-q", "--no-install-recommends", "rt-tests",
                    "linux-perf"]]


def test_required_tools_by_group():
    assert build.required_tools(vm=False) == pkgs.group("build")
    with_vm = build.required_tools(vm=True, extra=["cyclictest", "make"])
    assert with_vm[:len(pkgs.group("build"))] == pkgs.group("build")
    assert "qemu-system-x86_64" in with_vm and with_vm[-1] == "cyclictest"
    assert with_vm.count("make") == 1

"""systemd/pandemonium.service: its directives, and `systemd-analyze verify` of the unit as
install renders it (ExecStart= pointing at a real executable in a tmp prefix)."""

from __future__ import annotations

import re
import shutil
import subprocess
import warnings
from pathlib import Path

import pytest

from tools.pandemonium import install as inst

ROOT = Path(__file__).resolve().parents[1]

UNIT = ROOT / "systemd" / "pandemonium.service"
ANALYZE = shutil.which("systemd-analyze")


def directives(text: str) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values]}} of a unit file (comments and blank lines skipped)."""
    out: dict[str, dict[str, list[str]]] = {}
    section = None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith(("#", ";")):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            out[section] = {}
            continue
        key, _, value = line.partition("=")
        out[section].setdefault(key, []).append(value)
    return out


@pytest.fixture(scope="module")
def unit() -> dict[str, dict[str, list[str]]]:
    return directives(UNIT.read_text())


def test_runs_the_scheduler_with_options_from_the_environment_file(unit):
    svc = unit["Service"]
    assert svc["EnvironmentFile"] == ["-/etc/default/pandemonium"]
    assert svc["ExecStart"] == ["/usr/local/bin/scx_pandemonium $PANDEMONIUM_ARGS"]
    assert svc["Type"] == ["simple"]
    default = (ROOT / "systemd" / "pandemonium.default").read_text()
    assert re.search(r"(?m)^PANDEMONIUM_ARGS=", default)


def test_restart_policy(unit):
    svc, u = unit["Service"], unit["Unit"]
    assert svc["Restart"] == ["on-failure"]
    assert svc["RestartSec"] == ["2s"]
    # The start limit lives in [Unit] (systemd ignores it in [Service] since v230).
    assert u["StartLimitIntervalSec"] == ["60"] and u["StartLimitBurst"] == ["5"]
    assert svc["RestartPreventExitStatus"] == ["2"]


def test_conflicts_with_other_sched_ext_services(unit):
    for key in ("Conflicts", "After"):
        names = " ".join(unit["Unit"][key]).split()
        assert "scx.service" in names and "scx_loader.service" in names
    assert unit["Unit"]["ConditionPathIsDirectory"] == ["/sys/kernel/sched_ext"]


def test_journal_state_and_runtime_directories(unit):
    svc = unit["Service"]
    assert svc["StandardOutput"] == ["journal"] and svc["StandardError"] == ["journal"]
    # /var/lib/pandemonium for the procdb, /run/scx for the stats socket: both would be read-only
    # under ProtectSystem=strict otherwise.
    assert svc["StateDirectory"] == ["pandemonium"] and svc["StateDirectoryMode"] == ["0700"]
    assert svc["RuntimeDirectory"] == ["scx"]
    assert "CacheDirectory" not in svc and "Environment" not in svc


def test_privileges_a_bpf_scheduler_needs_are_kept(unit):
    svc = unit["Service"]
    caps = set(" ".join(svc["CapabilityBoundingSet"]).split())
    assert {"CAP_SYS_ADMIN", "CAP_BPF", "CAP_PERFMON"} <= caps
    assert svc["LimitMEMLOCK"] == ["infinity"]
    assert "User" not in svc and "DynamicUser" not in svc  # it checks for euid 0
    # /sys must stay writable (tracefs, bpffs) and /proc/kallsyms readable.
    for key in ("ProtectKernelTunables", "ProtectProc", "ProcSubset", "PrivateNetwork"):
        assert key not in svc, key
    assert svc["ProtectSystem"] == ["strict"]


def test_every_directive_is_explained(unit):
    """Each directive sits in a block (lines without a blank one between) that has a comment."""
    blocks = UNIT.read_text().split("\n\n")
    for block in blocks:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        keys = [ln for ln in lines if re.match(r"^[A-Za-z]+=", ln)]
        if keys and not any(ln.startswith("[") for ln in lines):
            assert any(ln.startswith("#") for ln in lines), f"uncommented: {keys}"


def _need_analyze() -> str:
    if ANALYZE is None:
        reason = ("systemd-analyze not installed (Debian package `systemd`): the unit was not "
                  "verified")
        warnings.warn(reason)
        pytest.skip(reason)
    return ANALYZE


def test_syscall_filter_keeps_bpf_and_perf_event_open(unit):
    analyze = _need_analyze()
    denied = unit["Service"]["SystemCallFilter"][0]
    assert denied.startswith("~")
    groups = denied[1:].split()
    out = subprocess.run([analyze, "syscall-filter", *groups], capture_output=True, text=True,
                         check=True).stdout
    names = {ln.strip() for ln in out.splitlines() if ln.startswith("    ")}
    for needed in ("bpf", "perf_event_open", "mmap", "ioctl", "setrlimit", "prlimit64",
                   "sched_setaffinity", "openat", "read", "fsync", "fdatasync"):
        assert needed not in names, f"{needed} is denied by {denied}"
    assert "init_module" in names  # the check itself works


def _verify(unit_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([_need_analyze(), "verify", "--man=no", str(unit_path)],
                          capture_output=True, text=True)


def _installed_unit(prefix: Path) -> Path:
    """The unit as install renders it, with ExecStart= pointing at a real executable."""
    binary = prefix.parent / "build" / "scx_pandemonium"
    binary.parent.mkdir(parents=True)
    binary.write_text("#!/bin/sh\nexit 0\n")
    binary.chmod(0o755)
    layout = inst.Layout(prefix=str(prefix), sysconfdir=str(prefix.parent / "etc"))
    inst.install_files(layout, binary, euid=0, manage_systemd=False)
    return Path(layout.unit)


@pytest.mark.parametrize("prefix", ["usr", "opt with spaces"])
def test_systemd_analyze_verify(tmp_path, prefix):
    path = _installed_unit(tmp_path / prefix)
    assert Path(re.search(r'(?m)^ExecStart="?(.*?scx_pandemonium)"? ',
                          path.read_text()).group(1)).is_file()
    proc = _verify(path)
    complaints = [ln for ln in (proc.stdout + proc.stderr).splitlines()
                  if "pandemonium" in ln]
    assert proc.returncode == 0 and not complaints, proc.stdout + proc.stderr


def test_systemd_analyze_verify_catches_a_broken_unit(tmp_path):
    path = _installed_unit(tmp_path / "usr")
    path.write_text(path.read_text().replace("Restart=on-failure", "Restart=sometimes"))
    proc = _verify(path)
    # a bad value is only a warning (exit 0): hence the "no complaints" check above
    assert any("pandemonium" in ln and "sometimes" in ln
               for ln in (proc.stdout + proc.stderr).splitlines())
    (tmp_path / "usr/bin/scx_pandemonium").unlink()
    proc = _verify(path)
    assert proc.returncode != 0 and "not executable" in proc.stdout + proc.stderr

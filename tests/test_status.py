"""status: sched_ext detection and the report, against fixture sysfs trees built in tmp dirs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tools.pandemonium import install as inst
from tools.pandemonium.common import SchedExtState, sched_ext_state

ROOT = Path(__file__).resolve().parents[1]


def make_sysfs(root: Path, state: str | None, ops: str | None = None) -> Path:
    """A sysfs root; state None means a kernel without sched_ext (no kernel/sched_ext dir)."""
    (root / "kernel").mkdir(parents=True)
    if state is not None:
        d = root / "kernel/sched_ext"
        (d / "root").mkdir(parents=True)
        (d / "state").write_text(state + "\n")
        if ops is not None:
            (d / "root/ops").write_text(ops + "\n")
    return root


def fake_binary(path: Path, version: str, rc: int = 0) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho 'scx_pandemonium {version} (git fixture)'\n"
                    f"echo 'target: x86_64-unknown-linux-gnu'\nexit {rc}\n")
    path.chmod(0o755)
    return path


# -- sched_ext_state ----------------------------------------------------------------

def test_no_sched_ext_dir(tmp_path):
    assert sched_ext_state(make_sysfs(tmp_path, None)) is None
    assert sched_ext_state(tmp_path / "does-not-exist") is None


def test_disabled(tmp_path):
    st = sched_ext_state(make_sysfs(tmp_path, "disabled"))
    assert st == SchedExtState("disabled", None) and not st.attached


def test_enabled_with_ops(tmp_path):
    st = sched_ext_state(make_sysfs(tmp_path, "enabled", "lavd_1.0.0_x86_64"))
    assert st == SchedExtState("enabled", "lavd_1.0.0_x86_64") and st.attached


def test_empty_ops_file_means_no_name(tmp_path):
    assert sched_ext_state(make_sysfs(tmp_path, "disabling", "")) == SchedExtState("disabling",
                                                                                   None)


# -- the report ---------------------------------------------------------------------

@pytest.fixture
def no_build(tmp_path) -> Path:
    return tmp_path / "no-build" / "scx_pandemonium"


def status(tmp_path, sysfs, build, layout=None) -> inst.Status:
    return inst.collect_status(layout or inst.Layout(destdir=str(tmp_path / "stage")),
                               sysfs_root=sysfs, build_binary=build,
                               systemd_run_dir=str(tmp_path / "no-systemd"))


def test_report_without_sched_ext(tmp_path, no_build):
    st = status(tmp_path, make_sysfs(tmp_path / "sys", None), no_build)
    assert st.sched_ext == "missing" and st.build is None and st.installed is None
    assert st.service.startswith("systemd not running")
    text = inst.format_status(st, inst.Layout(destdir=str(tmp_path / "stage")))
    assert "no /sys/kernel/sched_ext" in text and "CONFIG_SCHED_CLASS_EXT" in text
    assert "not built" in text and "installed:  no" in text
    assert "service:    pandemonium: systemd not running" in text


def test_report_idle_sched_ext(tmp_path, no_build):
    st = status(tmp_path, make_sysfs(tmp_path / "sys", "disabled"), no_build)
    assert st.sched_ext == "disabled" and not st.ours_attached
    assert "no sched_ext scheduler attached" in inst.describe_sched_ext(st)


def test_report_ours_attached(tmp_path, no_build):
    st = status(tmp_path, make_sysfs(tmp_path / "sys", "enabled", "pandemonium"), no_build)
    assert st.ours_attached
    assert inst.describe_sched_ext(st) == "enabled: pandemonium attached (that is scx_pandemonium)"


def test_report_other_scheduler_attached(tmp_path, no_build):
    st = status(tmp_path, make_sysfs(tmp_path / "sys", "enabled", "lavd_1.0.0_x86_64"), no_build)
    assert not st.ours_attached
    assert inst.describe_sched_ext(st) == "enabled: lavd_1.0.0_x86_64 attached"


def test_report_transitional_state(tmp_path, no_build):
    st = status(tmp_path, make_sysfs(tmp_path / "sys", "enabling", "rusty"), no_build)
    assert inst.describe_sched_ext(st) == "enabling: rusty"


def test_report_build_and_installed_versions(tmp_path):
    build = fake_binary(tmp_path / "target dir/release/scx_pandemonium", "0.2.0")
    lay = inst.Layout(destdir=str(tmp_path / "stage dir"))
    inst.install_files(lay, fake_binary(tmp_path / "old/scx_pandemonium", "0.1.0"), euid=1000)
    st = status(tmp_path, make_sysfs(tmp_path / "sys", "disabled"), build, lay)
    assert st.build == str(build)
    assert st.build_version.splitlines()[0] == "scx_pandemonium 0.2.0 (git fixture)"
    assert st.installed == str(tmp_path / "stage dir/usr/local/bin/scx_pandemonium")
    assert st.installed_version.startswith("scx_pandemonium 0.1.0")
    assert st.unit and st.unit.endswith("pandemonium.service")
    text = inst.format_status(st, lay)
    assert "[scx_pandemonium 0.2.0 (git fixture)]" in text
    assert "installed binary differs from the build" in text


def test_report_binary_that_does_not_run(tmp_path):
    build = fake_binary(tmp_path / "b/scx_pandemonium", "0.0.0", rc=1)
    st = status(tmp_path, make_sysfs(tmp_path / "sys", None), build)
    assert st.build and st.build_version is None
    assert "[did not run]" in inst.format_status(st)


def test_cli_status_with_fixture_sysfs(tmp_path):
    sysfs = make_sysfs(tmp_path / "sys", "enabled", "pandemonium")
    env = dict(os.environ, CARGO_TARGET_DIR=str(tmp_path / "no target"))
    env.pop("DESTDIR", None)
    cmd = [sys.executable, str(ROOT / "pandemonium.py"), "status", "--sysfs", str(sysfs),
           "--destdir", str(tmp_path / "stage")]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "sched_ext:  enabled: pandemonium attached (that is scx_pandemonium)" in proc.stdout
    proc = subprocess.run(cmd + ["--json"], capture_output=True, text=True, env=env)
    report = json.loads(proc.stdout)
    assert report["sched_ext"] == "enabled" and report["ops"] == "pandemonium"
    assert report["ours_attached"] is True and report["build"] is None


@pytest.mark.parametrize("active, enabled, enabled_rc, expected", [
    ("active", "enabled", 0, "active, enabled"),
    ("failed", "disabled", 1, "failed, disabled"),
    ("inactive", "", 1, "inactive, unit not installed"),
])
def test_service_state_from_systemctl(tmp_path, monkeypatch, no_build, active, enabled,
                                      enabled_rc, expected):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "systemctl"
    fake.write_text('#!/bin/sh\n[ "$2" = pandemonium.service ] || exit 9\n'
                    f'case "$1" in is-active) echo {active}; exit 3;;\n'
                    f'  is-enabled) [ -n "{enabled}" ] && echo {enabled}; exit {enabled_rc};;\n'
                    'esac\nexit 9\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    run_dir = tmp_path / "run-systemd-system"
    run_dir.mkdir()
    st = inst.collect_status(inst.Layout(destdir=str(tmp_path / "stage")),
                             sysfs_root=make_sysfs(tmp_path / "sys", None), build_binary=no_build,
                             systemd_run_dir=str(run_dir))
    assert st.service == expected
    assert f"service:    pandemonium: {expected}" in inst.format_status(st)


def test_systemctl_present_but_systemd_not_running(tmp_path, monkeypatch, no_build):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "systemctl").write_text("#!/bin/sh\nexit 1\n")
    (bindir / "systemctl").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    st = status(tmp_path, make_sysfs(tmp_path / "sys", None), no_build)
    assert st.service == "systemd not running"


# -- the gate's captures: status read back from real guest sysfs trees --------------

def _captures(tmp_path: Path, running: tuple, stopped: tuple) -> Path:
    from tools.pandemonium.gate_runner import STATUS_DIR
    for name, (state, ops) in (("running", running), ("stopped", stopped)):
        make_sysfs(tmp_path / STATUS_DIR / name, state, ops)
    return tmp_path


def test_gate_captures_read_as_attached_then_idle(tmp_path):
    from tools.pandemonium.gate_runner import check_status_captures
    root = _captures(tmp_path, ("enabled", "pandemonium_0.1.0_x86_64_unknown_linux_gnu"),
                     ("disabled", None))
    assert check_status_captures(root) == []


def test_gate_captures_catch_a_wrong_report(tmp_path):
    from tools.pandemonium.gate_runner import check_status_captures
    # Another scheduler attached while ours should have been, and still enabled after the stop.
    root = _captures(tmp_path, ("enabled", "lavd_1.0.0"), ("enabled", "pandemonium_0.1.0"))
    problems = check_status_captures(root)
    assert len(problems) == 2, problems
    assert "while running" in problems[0] and "lavd" in problems[0]
    assert "while stopped" in problems[1]


def test_gate_captures_missing_is_a_problem(tmp_path):
    from tools.pandemonium.gate_runner import check_status_captures
    problems = check_status_captures(tmp_path)
    assert len(problems) == 2 and all("no captured sched_ext tree" in p for p in problems)
    assert len(check_status_captures(None)) == 2


# -- which binary is attached: a fake /proc ---------------------------------------------

def fake_process(proc: Path, pid: int, argv: list[str], exe: str | None,
                 comm: str = "scx_pandemonium") -> Path:
    """/proc/PID with comm, cmdline and (unless None: unreadable without root) the exe link."""
    d = proc / str(pid)
    d.mkdir(parents=True)
    (d / "comm").write_text(comm + "\n")
    (d / "cmdline").write_bytes(b"\0".join(a.encode() for a in argv) + b"\0")
    if exe is not None:
        (d / "exe").symlink_to(exe)
    return d


def attached_status(tmp_path, proc, ops="pandemonium", installed_from=None):
    lay = inst.Layout(destdir=str(tmp_path / "stage"))
    if installed_from is not None:
        inst.install_files(lay, installed_from, euid=1000)
    st = inst.collect_status(lay, sysfs_root=make_sysfs(tmp_path / "sys", "enabled", ops),
                             build_binary=tmp_path / "no-build/scx_pandemonium",
                             systemd_run_dir=str(tmp_path / "no-systemd"), proc_root=proc)
    return st, inst.format_status(st, lay)


def test_attached_names_the_binary_and_its_version(tmp_path):
    upstream = fake_binary(tmp_path / "usr/bin/scx_pandemonium", "5.23.1")
    proc = tmp_path / "proc"
    fake_process(proc, 1, ["/sbin/init"], "/usr/lib/systemd/systemd", comm="systemd")
    fake_process(proc, 4242, ["scx_pandemonium", "-v"], str(upstream))
    st, text = attached_status(tmp_path, proc)
    assert [(a["pid"], a["exe"], a["exact"]) for a in st.attached] == [(4242, str(upstream), True)]
    assert f"  attached:   pid 4242: {upstream}\n" in text
    assert "               scx_pandemonium 5.23.1 (git fixture)\n" in text
    assert "               target: x86_64-unknown-linux-gnu\n" in text


def test_attached_other_than_the_installed_binary_is_noted(tmp_path):
    upstream = fake_binary(tmp_path / "usr/bin/scx_pandemonium", "5.23.1")
    proc = tmp_path / "proc"
    fake_process(proc, 77, ["/usr/bin/scx_pandemonium"], str(upstream))
    ours = fake_binary(tmp_path / "build/scx_pandemonium", "0.1.0")
    _, text = attached_status(tmp_path, proc, installed_from=ours)
    installed = tmp_path / "stage/usr/local/bin/scx_pandemonium"
    assert f"note:       the attached scheduler runs {upstream}, not the installed {installed}" \
        in text


def test_the_installed_binary_attached_gets_no_note(tmp_path):
    ours = fake_binary(tmp_path / "build/scx_pandemonium", "0.1.0")
    installed = tmp_path / "stage/usr/local/bin/scx_pandemonium"
    proc = tmp_path / "proc"
    fake_process(proc, 9, [str(installed)], str(installed))
    _, text = attached_status(tmp_path, proc, installed_from=ours)
    assert f"pid 9: {installed}\n" in text and "not the installed" not in text


def test_tools_and_monitors_are_not_the_scheduler(tmp_path):
    binary = fake_binary(tmp_path / "bin/scx_pandemonium", "0.1.0")
    proc = tmp_path / "proc"
    fake_process(proc, 10, ["scx_pandemonium", "probe", "--duration-s", "5"], str(binary))
    fake_process(proc, 11, ["scx_pandemonium", "stress-worker", "--cpu", "0"], str(binary))
    fake_process(proc, 12, ["scx_pandemonium", "--monitor", "1"], str(binary))
    fake_process(proc, 13, ["scx_pandemonium", "--no-adaptive"], str(binary))
    st, _ = attached_status(tmp_path, proc)
    assert [a["pid"] for a in st.attached] == [13]


def test_without_root_the_command_line_names_the_binary(tmp_path):
    binary = fake_binary(tmp_path / "opt/bin/scx_pandemonium", "0.1.0")
    proc = tmp_path / "proc"
    fake_process(proc, 5, [str(binary), "-v"], None)
    st, text = attached_status(tmp_path, proc)
    (a,) = st.attached
    assert a["exe"] == str(binary) and not a["exact"]
    assert a["version"].startswith("scx_pandemonium 0.1.0")
    assert "(argv[0]: reading /proc/PID/exe needs root)" in text


def test_a_binary_replaced_since_it_started_is_marked_and_asked_through_its_link(tmp_path):
    # The kernel shows a replaced file as "<path> (deleted)"; the process's own link still runs
    # the old program. Here a file with that literal name stands in for it.
    old = fake_binary(tmp_path / "usr/local/bin/scx_pandemonium (deleted)", "0.0.9")
    fake_binary(tmp_path / "usr/local/bin/scx_pandemonium", "0.1.0")
    proc = tmp_path / "proc"
    fake_process(proc, 6, ["scx_pandemonium"], str(old))
    st, text = attached_status(tmp_path, proc)
    (a,) = st.attached
    assert a["deleted"] and a["exe"] == str(tmp_path / "usr/local/bin/scx_pandemonium")
    assert a["version"].startswith("scx_pandemonium 0.0.9")
    assert "(deleted: replaced on disk since it started)" in text


def test_no_process_found_is_said(tmp_path):
    proc = tmp_path / "proc"
    fake_process(proc, 1, ["/sbin/init"], "/usr/lib/systemd/systemd", comm="systemd")
    st, text = attached_status(tmp_path, proc)
    assert st.attached == []
    assert "attached:   no scx_pandemonium process found" in text


def test_process_lookup_only_when_pandemonium_is_attached(tmp_path):
    binary = fake_binary(tmp_path / "bin/scx_pandemonium", "0.1.0")
    proc = tmp_path / "proc"
    fake_process(proc, 3, ["scx_pandemonium"], str(binary))
    st, text = attached_status(tmp_path, proc, ops="lavd_1.0.0")
    assert st.attached == [] and "attached:" not in text


def test_cli_status_json_has_the_attached_process(tmp_path, monkeypatch, capsys):
    from tools.pandemonium import attached

    binary = fake_binary(tmp_path / "bin/scx_pandemonium", "0.1.0")
    proc = tmp_path / "proc"
    fake_process(proc, 31, ["scx_pandemonium"], str(binary))
    real_find = attached.find
    monkeypatch.setattr(attached, "find", lambda _root="/proc": real_find(proc))
    monkeypatch.setenv("CARGO_TARGET_DIR", str(tmp_path / "no target"))
    from tools.pandemonium import cli
    sysfs = make_sysfs(tmp_path / "sys", "enabled", "pandemonium")
    assert cli.main(["status", "--json", "--sysfs", str(sysfs),
                             "--destdir", str(tmp_path / "stage")]) == 0
    (a,) = json.loads(capsys.readouterr().out)["attached"]
    assert a["pid"] == 31 and a["exe"] == str(binary) and a["exact"] is True
    assert a["deleted"] is False and a["version"].startswith("scx_pandemonium 0.1.0")

"""Host tests of the external anchors (parsing, installation), the guest driver's environment,
the native-vs-VM decision and matplotlib's installation (no VM, no cargo, no pip)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tools.pandemonium import cli
from tools.pandemonium.common import PandemoniumError
from tools.pandemonium.bench import anchors, commands, native, plots
from tools.pandemonium.bench import plan as P
from tools.pandemonium.bench.driver import GUEST_DIR, driver_env
from tools.pandemonium.bench.parse import parse_results


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PANDEMONIUM_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


def test_names_labels_and_paths():
    assert anchors.parse_external("scx_bpfland").label == "bpfland"
    assert anchors.parse_external("bpfland").anchor is anchors.ANCHORS["bpfland"]
    up = anchors.parse_external("upstream --slice-us 5000")
    assert (up.label, up.anchor.crate, up.args) == ("upstream", "scx_pandemonium",
                                                    ("--slice-us", "5000"))
    assert anchors.parse_external("scx_lavd").anchor.version == "1.1.4"
    x = anchors.parse_external("'/opt/my sched/scx_x+1' -v")
    assert (x.label, str(x.path), x.args) == ("ext:scx_x_1", "/opt/my sched/scx_x+1", ("-v",))
    sh = anchors.parse_external("sh")  # a name found on PATH is used like a path
    assert sh.label == "ext:sh" and sh.path.is_file()
    two = anchors.parse_externals(["/a/scx_x", "/b/scx_x", "scx_bpfland"])
    assert [e.label for e in two] == ["ext:scx_x", "ext:scx_x-2", "bpfland"]


def test_install_runs_cargo_install_into_a_per_label_root(cache, monkeypatch):
    calls = []
    anchor = anchors.ANCHORS["upstream"]
    monkeypatch.setenv("BPF_CLANG", "clang-42")

    def fake_run(cmd, env, **kw):
        calls.append((cmd, env["BPF_CLANG"]))
        binary = Path(cmd[cmd.index("--root") + 1]) / "bin" / "scx_pandemonium"
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        return SimpleNamespace(returncode=0, stdout="Installed")

    monkeypatch.setattr(anchors.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    ext = anchors.resolve(anchors.parse_external("upstream"), run=fake_run)
    root = cache / "anchors" / "upstream-5.23.1"
    assert calls == [(["cargo", "install", "--locked", "--root", str(root), "scx_pandemonium",
                       "--version", "5.23.1"], "clang-42")]
    assert ext.path == root / "bin" / "scx_pandemonium"
    anchors.resolve(anchors.parse_external("upstream"), run=fake_run)
    assert len(calls) == 1  # installed once


def test_flash_is_a_known_anchor():
    flash = anchors.parse_external("scx_flash")
    assert (flash.label, flash.anchor.crate, flash.anchor.version) == ("flash", "scx_flash", "1.1.4")
    assert anchors.parse_external("flash").anchor is flash.anchor


def test_a_plain_clang_is_put_on_path_for_build_scripts_that_call_it(cache, tmp_path):
    only19 = tmp_path / "bin"
    only19.mkdir()
    real = only19 / "clang-19"
    real.write_text("#!/bin/sh\n")
    real.chmod(0o755)
    env = anchors.clang_on_path({"PATH": str(only19), "BPF_CLANG": "clang-19"})
    shim = env["PATH"].split(os.pathsep)[0]
    assert (Path(shim) / "clang").resolve() == real.resolve()
    assert env["PATH"].endswith(str(only19))
    # A clang already on PATH is left alone; so is a machine with no clang at all.
    assert anchors.clang_on_path(env) == env
    empty = {"PATH": str(tmp_path / "none"), "BPF_CLANG": "clang-19"}
    assert anchors.clang_on_path(empty) == empty


def test_failed_install_names_cargos_last_lines(cache, monkeypatch):
    monkeypatch.setattr(anchors.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    out = "\n".join(f"line {i}" for i in range(40)) + "\nerror: failed to compile scx_bpfland"

    def fake_run(cmd, env, **kw):
        return SimpleNamespace(returncode=101, stdout=out)

    with pytest.raises(PandemoniumError, match="(?s)exit 101.*line 39.*failed to compile") as exc:
        anchors.install(anchors.ANCHORS["bpfland"], run=fake_run)
    assert "line 5\n" not in str(exc.value)
    with pytest.raises(PandemoniumError, match="no such file"):
        anchors.resolve(anchors.parse_external("/nonexistent/scx_x"))


def _fake_cargo(monkeypatch, script: str) -> None:
    """install_command replaced by a shell script: $1 is the anchor's install root."""
    monkeypatch.setattr(anchors.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    monkeypatch.setattr(anchors, "install_command",
                        lambda a: ["sh", "-c", script, "sh", str(a.root())])


def test_a_background_install_runs_at_idle_priority_and_wait_returns_its_binary(cache,
                                                                                monkeypatch):
    # Field 41 of /proc/PID/stat is the policy: 5 is SCHED_IDLE.
    _fake_cargo(monkeypatch, 'mkdir -p "$1/bin" && cut -d" " -f41 /proc/$$/stat > "$1/policy" '
                             '&& touch "$1/bin/scx_loader"')
    pending = anchors.BackgroundInstall.start(anchors.LOADER)
    assert pending.proc is not None
    pending.proc.wait()  # before wait(), which lifts a running install to the normal policy
    assert pending.wait() == anchors.LOADER.installed()
    assert (anchors.LOADER.root() / "policy").read_text().strip() == "5"
    # Installed already: nothing is started.
    assert anchors.BackgroundInstall.start(anchors.LOADER).proc is None


def test_a_failed_background_install_names_its_last_lines(cache, monkeypatch):
    _fake_cargo(monkeypatch, 'for i in $(seq 40); do echo "line $i"; done; '
                             'echo "error: failed to compile scx_loader"; exit 101')
    pending = anchors.BackgroundInstall.start(anchors.LOADER)
    with pytest.raises(PandemoniumError, match="(?s)exit 101.*line 40.*failed to compile"):
        pending.wait()


def test_install_builds_with_our_builds_clang_else_plain_clang(cache, monkeypatch):
    from tools.pandemonium import build

    monkeypatch.delenv("BPF_CLANG", raising=False)
    monkeypatch.setattr(anchors.shutil, "which", lambda *a, **k: "/usr/bin/cargo")
    seen = []

    def fake_run(cmd, env, **kw):
        seen.append(env["BPF_CLANG"])
        return SimpleNamespace(returncode=1, stdout="")

    for found, want in (("clang-20", "clang-20"), (None, "clang")):
        monkeypatch.setattr(build.pkgs, "usable_clang", lambda env=None, check=None: found)
        with pytest.raises(PandemoniumError):
            anchors.install(anchors.ANCHORS["bpfland"], run=fake_run)
        assert seen[-1] == want


def test_driver_env_lists_each_external_with_its_binary(tmp_path):
    binary = tmp_path / "scx_pandemonium"
    binary.write_text("")
    plan = P.Plan(phases=["ipc"], schedulers=[P.PANDEMONIUM, "upstream", "ext:scx_x"], cores=[2],
                  iterations=1)
    plan.external = [
        anchors.External("upstream", "upstream", (), anchors.ANCHORS["upstream"], binary),
        anchors.External("ext:scx_x", "/x/scx_x -v", ("-v",), None, binary)]
    env = driver_env(plan, anchors.guest_path)
    assert env["BENCH_EXTERNALS"] == ("upstream=/opt/external/upstream/scx_pandemonium;"
                                      "ext:scx_x=/opt/external/ext_scx_x/scx_pandemonium -v")
    assert env["BENCH_RUNS"].split()[:3] == ["2:0:eevdf", "2:1:pandemonium", "2:1:upstream"]
    assert env["BENCH_HB_GROUPS"] == "2" and env["BENCH_HB_LOOPS"] == "100"


@pytest.mark.parametrize("sched_ext,root,vm,expect", [
    (True, True, False, True), (True, True, True, False), (False, True, False, False),
    (True, False, False, False), (False, False, True, False)])
def test_native_only_with_sched_ext_as_root_without_vm(sched_ext, root, vm, expect):
    native_, why = native.decide(sched_ext, root, vm)
    assert native_ is expect and why


def test_native_runs_at_the_online_cpus_only(tmp_path):
    (tmp_path / "devices/system/cpu").mkdir(parents=True)
    (tmp_path / "devices/system/cpu/online").write_text("0-3,6\n")
    assert native.online_cpus(str(tmp_path)) == 5
    assert native.native_cores(None, 8, "bench-scale") == [8]
    assert native.native_cores([8], 8, "bench-scale") == [8]
    with pytest.raises(PandemoniumError, match="8 online CPUs only.*--vm"):
        native.native_cores([2, 4], 8, "bench-scale")
    spec = commands.BY_NAME["bench-scale"]
    args = cli.build_parser().parse_args(["bench-scale", "--quick"])
    assert commands.plan_from_args(spec, args, native_online=8).cores == [8]
    assert commands.plan_from_args(spec, args).cores == [2]  # VM: the smallest of 2,4
    args = cli.build_parser().parse_args(["bench-scale", "--cores", "2"])
    with pytest.raises(PandemoniumError, match="does not take your CPUs offline"):
        commands.plan_from_args(spec, args, native_online=8)


def test_ensure_matplotlib_installs_for_this_interpreter_or_says_why(monkeypatch):
    import builtins

    real_import = builtins.__import__
    monkeypatch.setattr(builtins, "__import__", lambda name, *a, **k: (
        (_ for _ in ()).throw(ImportError(name)) if name.startswith("matplotlib")
        else real_import(name, *a, **k)))
    calls = []

    def pip_fails(cmd, **kw):
        calls.append(cmd)
        return SimpleNamespace(returncode=1, stdout="error: externally-managed-environment")

    msg = plots.ensure_matplotlib(run=pip_fails)
    assert calls[0][:5] == [sys.executable, "-m", "pip", "install", "--quiet"]
    assert "could not be installed" in msg and "externally-managed" in msg
    assert plots.pip_command(root=False, in_venv=False)[-1] == "--user"
    assert "--user" not in plots.pip_command(root=True, in_venv=False)
    assert "--user" not in plots.pip_command(root=False, in_venv=True)


def _ncpu() -> int:
    return sum(1 for ln in Path("/proc/cpuinfo").read_text().splitlines()
               if ln.startswith("processor"))


def test_driver_sh_records_why_an_external_did_not_attach(tmp_path):
    """The real guest driver under the host's sh, natively (BENCH_RESULTS, no hotplug): an
    external that exits at once gets a row per phase with its last words; EEVDF runs."""
    fake = tmp_path / "scx_fake"
    fake.write_text("#!/bin/sh\necho starting\necho 'error: BPF load aborted: too slow' >&2\n"
                    "exit 3\n")
    fake.chmod(0o755)
    res = tmp_path / "results"
    n = _ncpu()
    env = dict(os.environ, BENCH_RESULTS=str(res), BENCH_NO_HOTPLUG="1",
               BENCH_RUNS=f"{n}:0:eevdf {n}:1:ext:scx_fake {n}:1:eevdf", BENCH_PHASES="idle",
               BENCH_D="1", BENCH_ATTACH_S="10", BENCH_STOP_S="10",
               BENCH_EXTERNALS=f"ext:scx_fake={fake} --flag")
    proc = subprocess.run(["sh", str(GUEST_DIR / "driver.sh")], env=env, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"BENCH-STEP 2 3 {n} 1 ext:scx_fake idle not-attached" in proc.stdout
    records, events, genv = parse_results(res)
    assert [(r.scheduler, r.error) for r in records] == [
        ("eevdf", None),
        ("ext:scx_fake", "did not attach: exited (status 3) before sched_ext was enabled: "
                         "error: BPF load aborted: too slow"),
        ("eevdf", None)]
    assert events == [f"attach-failed c{n}-i1-ext:scx_fake exited (status 3) before sched_ext "
                      "was enabled: error: BPF load aborted: too slow"]
    assert genv["externals"] == f"ext:scx_fake={fake} --flag"
    assert (res / "raw" / f"c{n}-i1-ext:scx_fake.sched.log").read_text().startswith("starting")


def test_driver_sh_without_hotplug_reports_a_core_count_it_cannot_have(tmp_path):
    res = tmp_path / "results"
    env = dict(os.environ, BENCH_RESULTS=str(res), BENCH_NO_HOTPLUG="1",
               BENCH_RUNS=f"{_ncpu() + 1}:0:eevdf", BENCH_PHASES="idle", BENCH_D="1",
               BENCH_ATTACH_S="10", BENCH_STOP_S="10")
    subprocess.run(["sh", str(GUEST_DIR / "driver.sh")], env=env, capture_output=True,
                   timeout=60)
    assert "no hotplug here" in (res / "events.log").read_text()

"""install / uninstall / clean and their argument handling, against temporary trees: no root, no
network, no cargo build (a fixture script stands in for the scheduler binary)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tools.pandemonium import cli
from tools.pandemonium import install as inst
from tools.pandemonium.common import PandemoniumError

ROOT = Path(__file__).resolve().parents[1]

TOOL = ROOT / "pandemonium.py"


def fake_binary(path: Path, version: str = "9.9.9", name: str = "scx_pandemonium") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho '{name} {version} (git fixture)'\n")
    path.chmod(0o755)
    return path


def fake_tools(directory: Path, version: str = "9.9.9") -> Path:
    """pandemonium-tools as cargo leaves it: beside the scheduler binary."""
    return fake_binary(directory / "pandemonium-tools", version, name="pandemonium-tools")


def tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).as_posix()
        mode = p.lstat().st_mode
        h.update(f"{rel}\0{stat.S_IFMT(mode)}\0{stat.S_IMODE(mode):o}\0".encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def run_tool(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.pop("DESTDIR", None)
    full_env.update(env or {})
    return subprocess.run([sys.executable, str(TOOL), *args], capture_output=True, text=True,
                          env=full_env, cwd=ROOT)


@pytest.fixture
def binary(tmp_path: Path) -> Path:
    """The scheduler binary of a build; its pandemonium-tools lies beside it (`tools`)."""
    fake_tools(tmp_path / "build")
    return fake_binary(tmp_path / "build" / "scx_pandemonium")


@pytest.fixture
def tools(binary: Path) -> Path:
    return binary.parent / "pandemonium-tools"


@pytest.fixture
def stage(tmp_path: Path) -> Path:
    d = tmp_path / "stage dir with spaces"
    d.mkdir()
    return d


# -- layout -------------------------------------------------------------------------

def test_default_layout_paths():
    lay = inst.Layout()
    assert lay.binary == "/usr/local/bin/scx_pandemonium"
    assert lay.tools == "/usr/local/bin/pandemonium-tools"
    assert lay.unit == "/usr/local/lib/systemd/system/pandemonium.service"
    assert lay.env_file == "/etc/default/pandemonium"
    assert lay.live


def test_layout_prefix_destdir_unitdir():
    lay = inst.Layout(prefix="/usr/", destdir="/tmp/a b/", unitdir="/etc/systemd/system")
    assert lay.binary == "/usr/bin/scx_pandemonium"
    assert lay.tools == "/usr/bin/pandemonium-tools"
    assert lay.unit == "/etc/systemd/system/pandemonium.service"
    assert lay.staged(lay.binary) == Path("/tmp/a b/usr/bin/scx_pandemonium")
    assert not lay.live
    assert inst.Layout(destdir="/").live


@pytest.mark.parametrize("field", ["prefix", "sysconfdir", "unitdir"])
def test_layout_rejects_relative_paths(field):
    with pytest.raises(PandemoniumError, match="absolute"):
        inst.Layout(**{field: "usr/local"})


def test_unit_follows_prefix_and_quotes_blanks():
    unit = inst.render_unit(inst.Layout(prefix="/usr"))
    assert "\nExecStart=/usr/bin/scx_pandemonium $PANDEMONIUM_ARGS\n" in unit
    assert "\nEnvironmentFile=-/etc/default/pandemonium\n" in unit
    unit = inst.render_unit(inst.Layout(prefix="/opt/my sched", sysconfdir="/etc/my conf"))
    assert '\nExecStart="/opt/my sched/bin/scx_pandemonium" $PANDEMONIUM_ARGS\n' in unit
    assert "\nEnvironmentFile=-/etc/my conf/default/pandemonium\n" in unit
    assert "/usr/local/bin" not in unit
    # systemd specifiers: a literal % must be doubled.
    assert 'ExecStart=/opt/100%%/bin/scx_pandemonium ' in inst.render_unit(
        inst.Layout(prefix="/opt/100%"))
    assert 'ExecStart=/opt/$$x/bin/scx_pandemonium ' in inst.render_unit(
        inst.Layout(prefix="/opt/$x"))


def test_unit_template_must_have_the_rewritten_lines():
    with pytest.raises(PandemoniumError, match="ExecStart"):
        inst.render_unit(inst.Layout(), template="[Service]\nExecStart=/bin/true\n")


# -- install / uninstall into a DESTDIR ---------------------------------------------

def test_install_into_destdir_with_spaces(stage, binary, tools):
    lay = inst.Layout(destdir=str(stage))
    actions = inst.install_files(lay, binary, tools=tools, euid=1000)
    assert [a.what for a in actions] == ["installed"] * 4
    bin_ = stage / "usr/local/bin/scx_pandemonium"
    tools_ = stage / "usr/local/bin/pandemonium-tools"
    unit = stage / "usr/local/lib/systemd/system/pandemonium.service"
    env = stage / "etc/default/pandemonium"
    assert bin_.read_bytes() == binary.read_bytes() and mode(bin_) == 0o755
    assert tools_.read_bytes() == tools.read_bytes() and mode(tools_) == 0o755
    assert mode(unit) == 0o644 and mode(env) == 0o644
    assert "ExecStart=/usr/local/bin/scx_pandemonium $PANDEMONIUM_ARGS" in unit.read_text()
    assert env.read_text() == (ROOT / "systemd/pandemonium.default").read_text()
    assert subprocess.run([bin_, "--version"], capture_output=True, text=True).stdout.startswith(
        "scx_pandemonium 9.9.9")
    # Nothing else is created, and no temporary files are left behind.
    files = sorted(p.relative_to(stage).as_posix() for p in stage.rglob("*") if p.is_file())
    assert files == ["etc/default/pandemonium", "usr/local/bin/pandemonium-tools",
                     "usr/local/bin/scx_pandemonium",
                     "usr/local/lib/systemd/system/pandemonium.service"]


def test_install_with_prefix_usr(stage, binary, tools):
    inst.install_files(inst.Layout(prefix="/usr", destdir=str(stage)), binary, tools=tools,
                       euid=1000)
    unit = stage / "usr/lib/systemd/system/pandemonium.service"
    assert (stage / "usr/bin/scx_pandemonium").is_file()
    assert (stage / "usr/bin/pandemonium-tools").is_file()
    assert "ExecStart=/usr/bin/scx_pandemonium $PANDEMONIUM_ARGS" in unit.read_text()


def test_install_is_idempotent(stage, binary, tools):
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, tools=tools, euid=1000)
    before = tree_hash(stage)
    again = inst.install_files(lay, binary, tools=tools, euid=1000)
    assert [a.what for a in again] == ["unchanged", "unchanged", "unchanged", "kept"]
    assert tree_hash(stage) == before


def test_install_updates_binary_and_restores_modes(stage, binary, tools, tmp_path):
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, tools=tools, euid=1000)
    (stage / "usr/local/bin/scx_pandemonium").chmod(0o700)
    (stage / "usr/local/bin/pandemonium-tools").chmod(0o700)
    newer = fake_binary(tmp_path / "newer" / "scx_pandemonium", version="10.0.0")
    newer_tools = fake_tools(tmp_path / "newer", version="10.0.0")
    actions = inst.install_files(lay, newer, tools=newer_tools, euid=1000)
    assert [a.what for a in actions[:2]] == ["updated", "updated"]
    for name in ("scx_pandemonium", "pandemonium-tools"):
        assert mode(stage / "usr/local/bin" / name) == 0o755
        assert b"10.0.0" in (stage / "usr/local/bin" / name).read_bytes()


def test_install_without_tools_installs_the_scheduler_alone(stage, binary):
    actions = inst.install_files(inst.Layout(destdir=str(stage)), binary, euid=1000)
    assert [a.path.name for a in actions] == ["scx_pandemonium", "pandemonium.service",
                                              "pandemonium"]
    assert not (stage / "usr/local/bin/pandemonium-tools").exists()


def test_missing_tools_binary_is_explained_and_nothing_is_written(stage, binary, tmp_path):
    with pytest.raises(PandemoniumError, match="no pandemonium-tools binary at .*build it"):
        inst.install_files(inst.Layout(destdir=str(stage)), binary,
                           tools=tmp_path / "nope" / "pandemonium-tools", euid=1000)
    assert list(stage.iterdir()) == []


def test_edited_env_file_is_never_overwritten(stage, binary, tools):
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, tools=tools, euid=1000)
    env = stage / "etc/default/pandemonium"
    env.write_text('PANDEMONIUM_ARGS="--no-adaptive"\n')
    assert inst.install_files(lay, binary, tools=tools, euid=1000)[-1].what == "kept"
    assert env.read_text() == 'PANDEMONIUM_ARGS="--no-adaptive"\n'
    # uninstall keeps an edited configuration file unless purged
    assert inst.uninstall_files(lay, euid=1000)[-1].what == "kept"
    assert env.exists()
    assert inst.uninstall_files(lay, purge=True, euid=1000)[-1].what == "removed"
    assert not env.exists()


def test_uninstall_removes_everything_and_is_idempotent(stage, binary, tools):
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, tools=tools, euid=1000)
    actions = inst.uninstall_files(lay, euid=1000)
    assert [a.what for a in actions] == ["removed"] * 4
    assert [a.path.name for a in actions] == ["scx_pandemonium", "pandemonium-tools",
                                              "pandemonium.service", "pandemonium"]
    assert list(stage.iterdir()) == []  # emptied directories are pruned, DESTDIR itself stays
    assert [a.what for a in inst.uninstall_files(lay, euid=1000)] == ["absent"] * 4
    assert stage.is_dir()


def test_uninstall_leaves_foreign_files(stage, binary, tools):
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, tools=tools, euid=1000)
    other = stage / "usr/local/bin/other-tool"
    other.write_text("x")
    inst.uninstall_files(lay, euid=1000)
    assert other.read_text() == "x"
    assert not (stage / "usr/local/bin/scx_pandemonium").exists()
    assert not (stage / "usr/local/bin/pandemonium-tools").exists()


def test_live_install_refuses_without_root(binary):
    with pytest.raises(PandemoniumError) as exc:
        inst.install_files(inst.Layout(), binary, euid=1000)
    msg = str(exc.value)
    assert "needs root" in msg and "sudo" in msg and "--destdir" in msg
    with pytest.raises(PandemoniumError, match="needs root"):
        inst.uninstall_files(inst.Layout(), euid=1000)


def test_missing_binary_is_explained(stage, tmp_path):
    with pytest.raises(PandemoniumError, match="no scheduler binary"):
        inst.install_files(inst.Layout(destdir=str(stage)), tmp_path / "nope", euid=1000)


# -- the CLI ------------------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["install", "uninstall", "status", "clean", "rebuild"])
def test_help(cmd):
    proc = run_tool(cmd, "--help")
    assert proc.returncode == 0, proc.stderr
    assert "usage: pandemonium.py " + cmd in proc.stdout


def test_commands_are_registered():
    names = set(cli.build_parser()._subparsers._group_actions[0].choices)
    assert {"install", "uninstall", "status", "clean", "rebuild"} <= names


def test_cli_install_and_uninstall_destdir_with_spaces(stage, binary, tools):
    proc = run_tool("install", "--destdir", str(stage), "--binary", str(binary))
    assert proc.returncode == 0, proc.stderr
    assert (stage / "usr/local/bin/scx_pandemonium").is_file()
    # --binary takes the tools from beside the scheduler
    assert (stage / "usr/local/bin/pandemonium-tools").read_bytes() == tools.read_bytes()
    assert "installed" in proc.stderr
    proc = run_tool("uninstall", "--destdir", str(stage))
    assert proc.returncode == 0, proc.stderr
    assert list(stage.iterdir()) == []


def test_cli_binary_without_tools_beside_it(stage, tmp_path):
    lone = fake_binary(tmp_path / "copied" / "scx_pandemonium")
    proc = run_tool("install", "--destdir", str(stage), "--binary", str(lone))
    assert proc.returncode == 0, proc.stderr
    assert (stage / "usr/local/bin/scx_pandemonium").is_file()
    assert not (stage / "usr/local/bin/pandemonium-tools").exists()
    assert f"no pandemonium-tools beside {lone}" in proc.stderr


def test_cli_no_build_uses_cargo_target_dir_with_spaces(stage, tmp_path):
    target = tmp_path / "cargo target with spaces"
    built = fake_binary(target / "release" / "scx_pandemonium", version="1.2.3")
    built_tools = fake_tools(target / "release", version="1.2.3")
    proc = run_tool("install", "--no-build", "--destdir", str(stage), "--prefix", "/usr",
                    env={"CARGO_TARGET_DIR": str(target)})
    assert proc.returncode == 0, proc.stderr
    assert (stage / "usr/bin/scx_pandemonium").read_bytes() == built.read_bytes()
    assert (stage / "usr/bin/pandemonium-tools").read_bytes() == built_tools.read_bytes()


def test_cli_no_build_needs_the_tools_too(stage, tmp_path):
    target = tmp_path / "target"
    fake_binary(target / "release" / "scx_pandemonium")
    proc = run_tool("install", "--no-build", "--destdir", str(stage),
                    env={"CARGO_TARGET_DIR": str(target)})
    assert proc.returncode == 1
    assert f"no pandemonium-tools binary at {target / 'release/pandemonium-tools'}" in proc.stderr
    assert list(stage.iterdir()) == []


def test_cli_no_build_without_a_build(stage, tmp_path):
    proc = run_tool("install", "--no-build", "--destdir", str(stage),
                    env={"CARGO_TARGET_DIR": str(tmp_path / "empty")})
    assert proc.returncode == 1
    assert "no scheduler binary" in proc.stderr and "./pandemonium.py build" in proc.stderr


def test_cli_destdir_from_environment(stage, binary):
    proc = run_tool("install", "--binary", str(binary), env={"DESTDIR": str(stage)})
    assert proc.returncode == 0, proc.stderr
    assert (stage / "usr/local/bin/scx_pandemonium").is_file()


def test_cli_usage_errors(binary):
    proc = run_tool("install", "--no-build", "--binary", str(binary))
    assert proc.returncode == 2 and "not allowed with" in proc.stderr
    proc = run_tool("install", "--prefix", "relative/dir", "--destdir", "/tmp/x",
                    "--binary", str(binary))
    assert proc.returncode == 1 and "must be an absolute path" in proc.stderr
    proc = run_tool("uninstall", "--bogus")
    assert proc.returncode == 2


def test_cli_refuses_live_install_without_root(monkeypatch, capsys, binary):
    monkeypatch.setattr(inst, "_euid", lambda: 1000)
    monkeypatch.delenv("DESTDIR", raising=False)
    with pytest.raises(SystemExit) as exc:
        cli.main(["install", "--binary", str(binary)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "needs root" in err and "--destdir" in err
    with pytest.raises(SystemExit) as exc:
        cli.main(["uninstall"])
    assert exc.value.code == 1
    assert "needs root" in capsys.readouterr().err


# -- clean --------------------------------------------------------------------------

@pytest.fixture
def project(tmp_path: Path, monkeypatch) -> Path:
    root = tmp_path / "project with spaces"
    (root / "include/scx/bpf-compat").mkdir(parents=True)
    (root / "include/scx/common.bpf.h").write_text("/* extracted */\n")
    (root / "target/release").mkdir(parents=True)
    cache = tmp_path / "cache"
    (cache / "kernels").mkdir(parents=True)
    monkeypatch.setenv("PANDEMONIUM_CACHE", str(cache))
    monkeypatch.setenv("FAKE_CARGO_LOG", str(tmp_path / "cargo.log"))
    return root


@pytest.fixture
def cargo(tmp_path: Path) -> str:
    path = tmp_path / "bin" / "cargo"
    path.parent.mkdir()
    path.write_text('#!/bin/sh\necho "$PWD|$*" >> "$FAKE_CARGO_LOG"\n')
    path.chmod(0o755)
    return str(path)


def test_clean_runs_cargo_clean_and_removes_headers_not_cache(project, cargo, tmp_path):
    inst.clean(project, cargo=cargo)
    assert (tmp_path / "cargo.log").read_text() == f"{project}|clean\n"
    assert not (project / "include").exists()
    assert (tmp_path / "cache/kernels").is_dir()


def test_clean_cache_on_request(project, cargo, tmp_path):
    inst.clean(project, cargo=cargo, cache=True)
    assert not (tmp_path / "cache").exists()


def test_clean_package_only_for_rebuild(project, cargo, tmp_path):
    inst.clean(project, cargo=cargo, package_only=True)
    assert (tmp_path / "cargo.log").read_text() == f"{project}|clean -p scx_pandemonium --release\n"


def test_clean_without_cargo_removes_the_target_dir(project, tmp_path):
    target = tmp_path / "custom target"
    (target / "release").mkdir(parents=True)
    inst.clean(project, cargo=str(tmp_path / "no-such-cargo"), target_dir=target)
    assert not target.exists()
    assert not (project / "include/scx").exists()
    assert (project / "target").exists()  # not the one in use


def test_clean_refuses_home_as_cache(project, cargo, monkeypatch):
    monkeypatch.setenv("PANDEMONIUM_CACHE", str(Path.home()))
    with pytest.raises(PandemoniumError, match="refusing"):
        inst.clean(project, cargo=cargo, cache=True)


# -- systemd on the running system (a fake systemctl) -------------------------------------------

@pytest.fixture
def systemctl(tmp_path, monkeypatch) -> Path:
    """A systemctl that logs its arguments (and whether the binary still exists) and reports the
    service as active."""
    log_file = tmp_path / "systemctl.log"
    bindir = tmp_path / "fakebin"
    bindir.mkdir()
    fake = bindir / "systemctl"
    fake.write_text('#!/bin/sh\n'
                    f'echo "$* binary=$(test -e "$WATCH" && echo yes || echo no)" >> "{log_file}"\n'
                    'exit 0\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr(inst, "systemd_running", lambda *a: True)
    return log_file


def test_live_install_reloads_systemd(stage, binary, systemctl, monkeypatch):
    monkeypatch.setenv("WATCH", str(stage / "usr/local/bin/scx_pandemonium"))
    inst.install_files(inst.Layout(destdir=str(stage)), binary, euid=1000, manage_systemd=True)
    assert systemctl.read_text().splitlines() == [
        "daemon-reload binary=yes", "is-active --quiet pandemonium.service binary=yes"]


def test_live_uninstall_stops_the_service_before_removing(stage, binary, systemctl,
                                                          monkeypatch):
    monkeypatch.setenv("WATCH", str(stage / "usr/local/bin/scx_pandemonium"))
    lay = inst.Layout(destdir=str(stage))
    inst.install_files(lay, binary, euid=1000)  # DESTDIR: systemd is left alone
    assert not systemctl.exists()
    inst.uninstall_files(lay, euid=1000, manage_systemd=True)
    assert systemctl.read_text().splitlines() == [
        "disable --now pandemonium.service binary=yes", "daemon-reload binary=no"]

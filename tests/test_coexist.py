"""install beside another scx_pandemonium: the other binaries it warns about and which binary each
unit starts, against a whole fake system built in a tmp dir (its root is passed as `root`)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tools.pandemonium import coexist
from tools.pandemonium import install as inst

ROOT = Path(__file__).resolve().parents[1]

OURS_VERSION = ("scx_pandemonium 0.1.0 (git 0123456789ab)\ntarget: x86_64-unknown-linux-gnu\n"
                "BPF: clang-19 19.1.7, -std=gnu23; vmlinux.h: scx_cargo bundle")
UPSTREAM_VERSION = "scx_pandemonium 5.23.1-g1a2b3c4 x86_64-unknown-linux-gnu"


def fake_binary(path: Path, version: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(f"echo '{line}'\n" for line in version.splitlines())
    path.write_text(f"#!/bin/sh\n{lines}")
    path.chmod(0o755)
    return path


def unit(root: Path, directory: str, name: str, text: str = "[Service]\n") -> Path:
    path = root / directory.lstrip("/") / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def logged(caplog):
    """The tool's log lines: its logger does not propagate once pandemonium.py set it up."""
    logger = logging.getLogger("pandemonium")
    logger.addHandler(caplog.handler)
    old = logger.level
    logger.setLevel(logging.INFO)
    yield caplog
    logger.removeHandler(caplog.handler)
    logger.setLevel(old)


@pytest.fixture
def system(tmp_path) -> Path:
    """A fake root with our binary and unit installed as `install` puts them."""
    root = tmp_path / "root"
    fake_binary(root / "usr/local/bin/scx_pandemonium", OURS_VERSION)
    unit(root, "/usr/local/lib/systemd/system", "pandemonium.service",
         "[Service]\nExecStart=/usr/local/bin/scx_pandemonium $PANDEMONIUM_ARGS\n")
    return root


def ours(root: Path) -> Path:
    return root / "usr/local/bin/scx_pandemonium"


def our_unit(root: Path) -> Path:
    return root / "usr/local/lib/systemd/system/pandemonium.service"


# -- other binaries -------------------------------------------------------------------

def test_alone_there_is_nothing_to_warn_about(system):
    assert coexist.other_binaries(ours(system), root=str(system), path_env="") == []
    warnings, info = coexist.report(ours(system), our_unit(system), root=str(system), path_env="")
    assert warnings == []
    assert info == ["which scx_pandemonium each unit starts:",
                    f"  pandemonium.service  {ours(system)}  (its ExecStart=)"]


def test_the_published_one_in_usr_bin_is_found_and_named(system):
    upstream = fake_binary(system / "usr/bin/scx_pandemonium", UPSTREAM_VERSION)
    assert coexist.other_binaries(ours(system), root=str(system), path_env="") == [upstream]
    warnings, _ = coexist.report(ours(system), our_unit(system), root=str(system), path_env="")
    assert len(warnings) == 1
    assert f"another scx_pandemonium is on this system: {upstream} [{UPSTREAM_VERSION}]" \
        in warnings[0]
    assert "probably the published scx_pandemonium" in warnings[0]


def test_one_on_the_users_path_counts_and_links_to_ours_do_not(system, tmp_path):
    home_bin = tmp_path / "home/bin"
    other = fake_binary(home_bin / "scx_pandemonium", OURS_VERSION)
    link_dir = tmp_path / "links"
    link_dir.mkdir()
    (link_dir / "scx_pandemonium").symlink_to(ours(system))
    path_env = f"{link_dir}:{home_bin}:{home_bin}"
    assert coexist.other_binaries(ours(system), root=str(system), path_env=path_env) == [other]
    warnings, _ = coexist.report(ours(system), our_unit(system), root=str(system),
                                 path_env=path_env)
    assert "another build of this project" in warnings[0]


def test_a_non_executable_file_is_not_a_binary(system):
    stray = system / "usr/bin/scx_pandemonium"
    stray.parent.mkdir(parents=True)
    stray.write_text("not a program\n")
    assert coexist.other_binaries(ours(system), root=str(system), path_env="") == []


@pytest.mark.parametrize("version, expected", [
    (OURS_VERSION, "another build of this project"),
    (UPSTREAM_VERSION, "probably the published scx_pandemonium"),
    (None, "origin unknown"),
])
def test_whose(version, expected):
    assert coexist.whose(version).startswith(expected)


# -- which binary each unit starts ------------------------------------------------------

def test_scx_service_by_name_takes_the_first_on_systemds_path(system):
    upstream = fake_binary(system / "usr/bin/scx_pandemonium", UPSTREAM_VERSION)
    unit(system, "/usr/lib/systemd/system", "scx.service")
    (system / "etc/default").mkdir(parents=True)
    (system / "etc/default/scx").write_text("# scx\nSCX_SCHEDULER=scx_pandemonium\n"
                                            "SCX_FLAGS='--compositor gamescope'\n")
    targets = {t.unit: t for t in coexist.unit_targets(our_unit(system), root=str(system))}
    # /usr/local/bin comes before /usr/bin on systemd's PATH.
    assert targets["scx.service"].binary == ours(system)
    ours(system).unlink()
    targets = {t.unit: t for t in coexist.unit_targets(our_unit(system), root=str(system))}
    assert targets["scx.service"].binary == upstream


def test_scx_service_with_an_absolute_path_to_the_other_binary_is_a_warning(system):
    upstream = fake_binary(system / "usr/bin/scx_pandemonium", UPSTREAM_VERSION)
    unit(system, "/etc/systemd/system", "scx.service")
    (system / "etc/default").mkdir(parents=True)
    (system / "etc/default/scx").write_text('SCX_SCHEDULER="/usr/bin/scx_pandemonium"\n')
    warnings, info = coexist.report(ours(system), our_unit(system), root=str(system),
                                    path_env="")
    assert f"  scx.service          {upstream}  (SCX_SCHEDULER=/usr/bin/scx_pandemonium)" in info
    unit_warning = [w for w in warnings if w.startswith("scx.service would start")]
    assert len(unit_warning) == 1
    assert f"set SCX_SCHEDULER={ours(system)} in /etc/default/scx" in unit_warning[0]


def test_scx_service_override_wins_over_the_scheduler(system):
    unit(system, "/usr/lib/systemd/system", "scx.service")
    (system / "etc/default").mkdir(parents=True)
    (system / "etc/default/scx").write_text("SCX_SCHEDULER=scx_pandemonium\n"
                                            "SCX_SCHEDULER_OVERRIDE=scx_lavd\n")
    (target,) = [t for t in coexist.unit_targets(None, root=str(system))]
    assert target.unit == "scx.service" and target.binary is None
    assert target.how == "runs scx_lavd (SCX_SCHEDULER in /etc/default/scx)"


def test_scx_service_without_a_scheduler_set(system):
    unit(system, "/usr/lib/systemd/system", "scx.service")
    (target,) = coexist.unit_targets(None, root=str(system))
    assert target.binary is None and "no SCX_SCHEDULER" in target.how


def test_scx_loader_takes_the_first_on_systemds_path(system):
    unit(system, "/usr/lib/systemd/system", "scx_loader.service")
    fake_binary(system / "usr/bin/scx_pandemonium", UPSTREAM_VERSION)
    warnings, info = coexist.report(ours(system), our_unit(system), root=str(system),
                                    path_env="")
    assert f"  scx_loader.service   {ours(system)}  (when asked for scx_pandemonium: the first " \
           "on systemd's PATH)" in info
    assert not any(w.startswith("scx_loader.service") for w in warnings)
    # Installed with --prefix /opt, ours is not on systemd's PATH: the loader runs the other one.
    opt = fake_binary(system / "opt/bin/scx_pandemonium", OURS_VERSION)
    warnings, _ = coexist.report(opt, None, root=str(system), path_env="")
    (loader,) = [w for w in warnings if w.startswith("scx_loader.service")]
    assert f"would start {system / 'usr/local/bin/scx_pandemonium'}" in loader
    assert "by name only" in loader


def test_units_that_are_absent_are_not_listed(system):
    targets = coexist.unit_targets(our_unit(system), root=str(system))
    assert [t.unit for t in targets] == ["pandemonium.service"]
    assert coexist.unit_targets(None, root=str(system)) == []


def test_exec_start_quoting_and_escapes(tmp_path):
    path = unit(tmp_path, "/u", "x.service",
                '[Service]\nExecStart=-"/opt/my sched/100%%/bin/scx_pandemonium" $ARGS\n')
    assert coexist._exec_start(path) == Path("/opt/my sched/100%/bin/scx_pandemonium")


def test_env_file_parsing(tmp_path):
    f = tmp_path / "scx"
    f.write_text("# comment\n\nSCX_SCHEDULER = scx_pandemonium\nSCX_FLAGS='-v --stats 1'\n"
                 'QUOTED="a b"\nnot a pair\n')
    assert coexist.read_env_file(f) == {"SCX_SCHEDULER": "scx_pandemonium",
                                        "SCX_FLAGS": "-v --stats 1", "QUOTED": "a b"}
    assert coexist.read_env_file(tmp_path / "missing") == {}


# -- install reports it -----------------------------------------------------------------

def test_install_into_a_system_with_the_published_one_warns(tmp_path, logged):
    root = tmp_path / "root"
    upstream = fake_binary(root / "usr/bin/scx_pandemonium", UPSTREAM_VERSION)
    unit(root, "/usr/lib/systemd/system", "scx.service")
    (root / "etc/default").mkdir(parents=True)
    (root / "etc/default/scx").write_text("SCX_SCHEDULER=/usr/bin/scx_pandemonium\n")
    build = fake_binary(tmp_path / "build/scx_pandemonium", OURS_VERSION)
    monkey_path = "/nonexistent-path-dir"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PATH", monkey_path)
        inst.install_files(inst.Layout(destdir=str(root)), build, euid=1000,
                           system_root=str(root))
    text = logged.text
    assert f"another scx_pandemonium is on this system: {upstream}" in text
    assert f"pandemonium.service  {ours(root)}  (its ExecStart=)" in text
    assert f"scx.service would start {upstream}" in text


def test_staging_for_a_package_says_nothing_about_this_system(tmp_path, logged):
    build = fake_binary(tmp_path / "build/scx_pandemonium", OURS_VERSION)
    inst.install_files(inst.Layout(destdir=str(tmp_path / "stage")), build, euid=1000)
    assert "installed" in logged.text
    assert "each unit starts" not in logged.text
    assert "another scx_pandemonium" not in logged.text

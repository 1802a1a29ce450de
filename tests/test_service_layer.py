"""Host tests of the service gate layer's pure parts: the Debian image's cache key and
customization, the guest's report and its parsing, the initramfs payload and /init."""

import io
import json
import os
import re
import shutil
import subprocess
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from tools.pandemonium.common import PandemoniumError
from tools.pandemonium.vm import rootfs, service
from tools.pandemonium.vm import service_guest as guest
from tools.pandemonium.vm.console import ConsoleState, extract_results

# -- the image -------------------------------------------------------------------------------


def test_the_cache_key_follows_what_decides_the_contents():
    a = rootfs.RootfsSpec()
    assert a.key() == rootfs.RootfsSpec().key()
    assert re.fullmatch(r"debian-trixie-[0-9a-f]{16}\.ext4", a.name)
    assert rootfs.RootfsSpec(suite="forky").key() != a.key()
    assert rootfs.RootfsSpec(packages=a.packages + ("strace",)).key() != a.key()
    # The order packages are listed in does not matter.
    assert rootfs.RootfsSpec(packages=tuple(reversed(a.packages))).key() == a.key()
    assert re.fullmatch(r"[0-9a-f]{32}", a.machine_id())


def test_the_image_has_what_the_guest_runs():
    pk = set(rootfs.PACKAGES)
    assert {"systemd", "systemd-sysv", "python3"} <= pk
    assert "polkitd" in pk  # scx_loader refuses every call that polkit did not authorize
    assert "libelf1t64" in rootfs.spec_for("trixie").packages
    assert "libelf1" in rootfs.spec_for("bookworm").packages


def test_suite_from_the_environment(monkeypatch):
    monkeypatch.delenv("PANDEMONIUM_ROOTFS_SUITE", raising=False)
    assert rootfs.spec_from_env().suite == "trixie"
    monkeypatch.setenv("PANDEMONIUM_ROOTFS_SUITE", "bookworm")
    assert rootfs.spec_from_env().suite == "bookworm"


def test_mmdebstrap_command():
    spec = rootfs.RootfsSpec()
    cmd = rootfs.mmdebstrap_command(spec, Path("/t/root"), "http://mirror/debian",
                                    "/usr/share/keyrings/k.gpg")
    assert cmd[0] == "mmdebstrap" and "--variant=minbase" in cmd
    assert cmd[-3:] == ["trixie", "/t/root", "http://mirror/debian"]
    inc = next(a for a in cmd if a.startswith("--include="))
    assert set(inc.removeprefix("--include=").split(",")) == set(spec.packages)
    assert "--keyring=/usr/share/keyrings/k.gpg" in cmd
    assert not any(a.startswith("--keyring") for a in
                   rootfs.mmdebstrap_command(spec, Path("/t"), "http://m"))


def test_customize_masks_units_and_writes_the_configuration(tmp_path):
    (tmp_path / "etc/systemd/system").mkdir(parents=True)
    (tmp_path / "etc/shadow").write_text("root:*:19000:0:99999:7:::\ndaemon:*:19000::::::\n")
    # A unit the package enabled is replaced by the mask.
    (tmp_path / "etc/systemd/system/getty.target").write_text("x")
    spec = rootfs.RootfsSpec()
    rootfs.customize(tmp_path, spec)
    for unit in rootfs.MASKED_UNITS:
        link = tmp_path / "etc/systemd/system" / unit
        assert link.is_symlink() and os.readlink(link) == "/dev/null", unit
    assert (tmp_path / "etc/machine-id").read_text() == spec.machine_id() + "\n"
    assert rootfs.ROOT_DEVICE in (tmp_path / "etc/fstab").read_text()
    assert (tmp_path / "var/log/journal").is_dir()
    assert (tmp_path / "etc/shadow").read_text().startswith("root::19000:")
    assert "daemon:*:" in (tmp_path / "etc/shadow").read_text()
    rootfs.customize(tmp_path, spec)  # idempotent


def test_prune_keeps_the_newest(tmp_path):
    for i, name in enumerate(["debian-a.ext4", "debian-b.ext4", "debian-c.ext4"]):
        (tmp_path / name).write_text(name)
        (tmp_path / name).with_suffix(".json").write_text("{}")
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    removed = rootfs.prune(tmp_path, keep=2)
    assert [p.name for p in removed] == ["debian-a.ext4"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "debian-b.ext4", "debian-b.json", "debian-c.ext4", "debian-c.json"]


def test_building_needs_root(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(PandemoniumError, match="needs root"):
        rootfs.build(rootfs.RootfsSpec(), tmp_path / "x.ext4")


# -- the guest's report ----------------------------------------------------------------------


def test_check_lines_round_trip():
    lines = [guest.check_line("n1", True, "start", "MainPID 12\n  (1.0 s)"),
             "noise " + guest.check_line("n1", False, "monitor", "0 samples"),
             guest.check_line("old", True, "install", "from an old log"),
             "[  OK  ] Started something."]
    assert "\n" not in lines[0]
    checks = service.parse_checks(lines, "n1")
    assert [(c.name, c.ok, c.detail) for c in checks] == [
        ("start", True, "MainPID 12 (1.0 s)"), ("monitor", False, "0 samples")]


def test_a_phase_passes_only_when_every_check_passed():
    names = guest.PHASE_CHECKS["reboot"]
    ok = [service.Check(n, True, "") for n in names]
    assert service.evaluate("reboot", ok, 0) == []
    # One that never ran fails the phase, even with exit status 0.
    assert service.evaluate("reboot", ok[:-1], 0) == [f"reboot: {names[-1]}: did not run"]
    failed = ok[:1] + [service.Check(names[1], False, "loaded 0")]
    problems = service.evaluate("reboot", failed, 1)
    assert f"reboot: {names[1]}: FAILED: loaded 0" in problems
    assert f"reboot: {names[2]}: did not run" in problems
    assert "reboot: the guest reported no exit status" in service.evaluate("reboot", ok, None)
    assert service.evaluate("reboot", ok, 3) == ["reboot: the guest exited 3"]
    assert service.evaluate("reboot", ok + [service.Check("x", True, "")], 0) == [
        "reboot: unexpected check x"]


def test_every_check_has_a_method():
    for phase, names in guest.PHASE_CHECKS.items():
        assert len(set(names)) == len(names), phase
        for name in names:
            assert callable(getattr(guest.Layer, name.replace("-", "_"))), name


def test_exposure_from_systemd_analyze():
    text = ("  NAME  DESCRIPTION  EXPOSURE\n✗ PrivateNetwork= ... 0.5\n\n"
            "→ Overall exposure level for pandemonium.service: 3.9 OK 🙂\n")
    assert guest.parse_exposure(text) == ("pandemonium.service", 3.9, "OK")
    assert guest.parse_exposure("nothing") is None


def test_procdb_counts_from_the_journal():
    msgs = ["pandemonium: procdb /var/lib/pandemonium/procdb.bin: no procdb yet; starting empty",
            "pandemonium: procdb /var/lib/pandemonium/procdb.bin: loaded 17 profiles",
            "d/s: 100  idle: 5% shared: 0 ... procdb: 3/1 sleep: io=- sjrn: -",
            "d/s: 100  idle: 5% shared: 0 ... procdb: 21/4 sleep: io=- sjrn: -",
            "pandemonium: procdb: saved 21 profiles to /var/lib/pandemonium/procdb.bin"]
    assert guest.loaded_count(msgs) == 17
    assert guest.telemetry_profiles(msgs) == 21
    assert guest.saved_count(msgs) == 21
    unsynced = ("pandemonium: warning: procdb: saved 23 profiles to /var/lib/pandemonium/"
                "procdb.bin, but fsync was refused (Operation not permitted (os error 1)): ...")
    assert guest.saved_count([unsynced]) == 23
    assert guest.loaded_count(["procdb -: loaded x profiles"]) is None
    assert guest.telemetry_profiles(["procdb: - sleep: io=-"]) is None


def test_journal_json_lines():
    lines = "\n".join([
        json.dumps({"MESSAGE": "pandemonium: scheduler attached", "PRIORITY": "6"}),
        json.dumps({"MESSAGE": list(b"bad \xff byte"), "PRIORITY": "4"}),
        "not json", ""])
    entries = guest.journal_messages(lines)
    assert [e["PRIORITY"] for e in entries] == ["6", "4"]
    assert entries[1]["MESSAGE"].startswith("bad ")


def test_capability_mask_of_the_unit():
    status = "Name:\tscx_pandemonium\nCapBnd:\t000000c001200000\nSeccomp:\t2\n"
    assert guest.cap_mask(status) == guest.UNIT_CAPS
    assert guest.cap_mask("Name: x\n") is None


def test_results_reach_the_host_through_the_console(tmp_path, monkeypatch):
    results = tmp_path / "results"
    results.mkdir()
    (results / "systemd-analyze-security.txt").write_text("exposure 3.9\n")
    monkeypatch.setattr(guest, "RESULTS", results)
    cfg = service.run_config("main", "abc123")
    out = io.StringIO()
    with redirect_stdout(out):
        guest.send_results("abc123", cfg["markers"], 1)
    console = ConsoleState("abc123")
    for line in out.getvalue().splitlines():
        console.feed(line + "\r\n")
    assert console.exit_code == 1
    files = extract_results(console.results_tar(), tmp_path / "back")
    assert (tmp_path / "back/systemd-analyze-security.txt").read_text() == "exposure 3.9\n"
    assert any(f.endswith("systemd-analyze-security.txt") for f in files)


# -- the boot --------------------------------------------------------------------------------


def test_payload_holds_the_scheduler_checks_units_and_tools(tmp_path):
    binary = tmp_path / "scx_pandemonium"
    binary.write_bytes(b"\x7fELF")
    loader = tmp_path / "loader/bin/scx_loader"
    files = {f.guest: f.host for f in service.payload_files(binary, loader)}
    assert files["/payload/bin/scx_pandemonium"] == binary
    assert files["/payload/bin/scx_loader"] == loader
    for name in service.LOADER_FILES:
        assert files[f"/payload/units/scx_loader/{name}"] == service.LOADER_DIR / name
    for need in ("/payload/service_guest.py", "/payload/bpf_map.py", "/payload/units/scx.service",
                 "/payload/units/pandemonium-gate.service",
                 "/payload/src/systemd/README.md",
                 "/payload/src/pandemonium.py", "/payload/src/tools/pandemonium/install.py",
                 "/payload/src/systemd/pandemonium.service",
                 "/payload/src/systemd/pandemonium.default",
                 "/payload/src/src/build_support/system_packages.tsv",
                 "/payload/src/tools/pandemonium/vm/service.py"):
        assert need in files, need
    assert not any("__pycache__" in g or g.endswith(".pyc") for g in files)
    assert "/payload/src/tools/__init__.py" in files
    assert not any(g.startswith("/payload/src/tools/packaging/") for g in files)
    assert "/payload/bin/pandemonium-tools" not in files  # none built beside this scheduler
    (tmp_path / "pandemonium-tools").write_bytes(b"\x7fELF")
    files = {f.guest: f.host for f in service.payload_files(binary)}
    assert files["/payload/bin/pandemonium-tools"] == tmp_path / "pandemonium-tools"


def test_the_init_script_parses_and_switches_to_systemd(tmp_path):
    init = service.SERVICE_INIT
    assert rootfs.ROOT_DEVICE in init and "exec switch_root /newroot /lib/systemd/systemd" in init
    for unit in ("scx.service", "pandemonium-gate.service"):
        assert unit in init and (service.UNITS_DIR / unit).is_file()
    assert "cp /payload/bin/scx_loader /newroot/usr/bin/scx_loader" in init
    for name, where in service.LOADER_FILES.items():
        assert f"/payload/units/scx_loader/{name} /newroot{where}/" in init
    sh = shutil.which("dash") or shutil.which("sh")
    script = tmp_path / "init"
    script.write_text(init)
    assert subprocess.run([sh, "-n", str(script)]).returncode == 0


def test_the_disk_is_an_nvme_drive(tmp_path):
    args = service.disk_args(tmp_path / "root.ext4")
    assert "-device" in args and args[args.index("-device") + 1].startswith("nvme,")
    assert f"file={tmp_path / 'root.ext4'},format=raw" in args[1]


def test_units_for_the_guest():
    loader = (service.LOADER_DIR / "scx_loader.service").read_text()
    assert re.search(r"^SystemCallFilter=~.*@sync:EPERM", loader, re.M)
    assert "ExecStart=/usr/bin/scx_loader" in loader and "BusName=org.scx.Loader" in loader
    activation = (service.LOADER_DIR / "org.scx.Loader.service").read_text()
    assert "SystemdService=scx_loader.service" in activation
    scx = (service.UNITS_DIR / "scx.service").read_text()
    assert "EnvironmentFile=/etc/default/scx" in scx and "$SCX_SCHEDULER $SCX_FLAGS" in scx
    runner = (service.UNITS_DIR / "pandemonium-gate.service").read_text()
    assert "ExecStart=/usr/bin/python3 /opt/pandemonium/service_guest.py" in runner
    assert "WantedBy=multi-user.target" in runner


def test_the_base_image_takes_another_init(tmp_path, monkeypatch):
    import gzip

    from tools.pandemonium.vm import guest_init, initramfs, qemu

    monkeypatch.setenv("PANDEMONIUM_CACHE", str(tmp_path / "cache"))
    config = tmp_path / "config"
    config.write_text("CONFIG_SCHED_CLASS_EXT=y\n")
    plain = initramfs.build_base("6.18.15+deb13-cloud-amd64", config, [])
    svc = initramfs.build_base("6.18.15+deb13-cloud-amd64", config, [], init=service.SERVICE_INIT)
    assert plain != svc
    assert service.SERVICE_INIT.encode() in gzip.decompress(svc.read_bytes())
    assert guest_init.INIT.encode() in gzip.decompress(plain.read_bytes())
    cmd = qemu.qemu_command(Path("/k"), Path("/i"), cpus=2, mem_mb=2048, accel="tcg-single",
                            extra_args=service.disk_args(Path("/d.ext4")))
    assert cmd.index("-device") < cmd.index("-kernel")
    assert cmd[cmd.index("-device") + 1] == "nvme,serial=pandroot,drive=root"


# -- scx_loader ------------------------------------------------------------------------------


def test_scx_loaders_files_are_what_its_package_installs():
    import xml.dom.minidom

    assert sorted(p.name for p in service.LOADER_DIR.iterdir()) == sorted(service.LOADER_FILES)
    policy = xml.dom.minidom.parse(str(service.LOADER_DIR / "org.scx.Loader.policy"))
    actions = [a.getAttribute("id") for a in policy.getElementsByTagName("action")]
    assert actions == ["org.scx.loader.manage-schedulers"]
    bus = xml.dom.minidom.parse(str(service.LOADER_DIR / "org.scx.Loader.conf"))
    owners = [a.getAttribute("own") for a in bus.getElementsByTagName("allow")]
    assert "org.scx.Loader" in owners
    for name in service.LOADER_FILES:  # each says where it comes from
        head = (service.LOADER_DIR / name).read_text().splitlines()[:3]
        assert any("github.com/sched-ext/scx" in line for line in head), name


def test_the_loader_is_installed_like_the_anchors():
    from tools.pandemonium.bench import anchors

    assert anchors.LOADER.crate == "scx_loader" and "loader" not in anchors.ANCHORS
    assert anchors.install_command(anchors.LOADER)[-3:] == ["scx_loader", "--version",
                                                            anchors.LOADER.version]
    assert anchors.LOADER.root().name == f"loader-{anchors.LOADER.version}"


README = Path(__file__).resolve().parents[1] / "systemd" / "README.md"
_MODE_ROW = re.compile(r"^\|\s*(\w+)\s*\|\s*`(\w+_mode)`\s*\|\s*`(\[[^`]*\])`", re.M)


def readme_mode_table(readme: str) -> dict[str, tuple[str, list[str]]]:
    """The scx_loader section's mode table: `*_mode` key -> (scx_loader mode, flags), the first
    flags given where a row offers two."""
    return {key: (mode, json.loads(flags))
            for mode, key, flags in _MODE_ROW.findall(guest._loader_section(readme))}


def test_the_guest_runs_the_loader_configuration_the_readme_documents():
    import tomllib

    text = README.read_text()
    config = tomllib.loads(guest.readme_loader_config(text))
    assert config["default_sched"] == "scx_pandemonium"
    assert config["default_mode"] in guest.SCHED_MODES
    table = readme_mode_table(text)
    # The README's table of modes and its example configuration say the same.
    assert {mode for mode, _ in table.values()} == set(guest.SCHED_MODES)
    for key, (mode, flags) in table.items():
        assert key == f"{mode.lower()}_mode"
        assert guest.mode_args(config, "scx_pandemonium", mode) == flags, mode
    assert guest.mode_args(config, "scx_pandemonium", "Gaming") == ["--mode", "gaming"]
    # A missing key: scx_loader's built-in flags, none for us.
    assert guest.mode_args({}, "scx_pandemonium", "PowerSave") == []
    with pytest.raises(ValueError):
        guest.readme_loader_config("# no loader section\n")


def test_busctl_values_and_command_lines():
    assert guest.busctl_value('s "scx_pandemonium"\n') == "scx_pandemonium"
    assert guest.busctl_value("u 2\n") == 2
    assert guest.busctl_value('as 3 "scx_bpfland" "scx_pandemonium" "a b"\n') == [
        "scx_bpfland", "scx_pandemonium", "a b"]
    assert guest.busctl_value("as 0\n") == []
    assert guest.busctl_value("b true") is True
    with pytest.raises(ValueError):
        guest.busctl_value("a(uas) 0")
    assert guest.parse_cmdline(b"scx_pandemonium\0--mode\0gaming\0") == [
        "scx_pandemonium", "--mode", "gaming"]
    assert guest.parse_cmdline(b"scx_pandemonium\0") == ["scx_pandemonium"]
    assert guest.parse_cmdline(b"") == []


def test_a_save_under_the_loader_must_be_the_refused_fsync_warning():
    msg = ("pandemonium: warning: procdb: saved 12 profiles to /var/lib/pandemonium/procdb.bin, "
           "but fsync was refused (Operation not permitted (os error 1)): the file is complete")
    assert guest.unsynced_save({"MESSAGE": msg, "PRIORITY": "4"}) == 12
    for bad in ({"MESSAGE": msg, "PRIORITY": "6"},
                {"MESSAGE": "pandemonium: procdb: saved 12 profiles to /x", "PRIORITY": "4"}):
        with pytest.raises(guest.CheckFailed):
            guest.unsynced_save(bad)


def test_monitor_samples_and_the_packed_wakeups_between_them():
    out = [
        "--- scx_pandemonium statistics (rates over 1.0 s) ---\n",
        "  knob_pack                   0\n",
        "  mode                        auto\n",
        "  nr_packed                   10 (+0/s)\n",
        "--- scx_pandemonium statistics (rates over 1.0 s) ---\n",
        "  knob_pack                   1\n",
        "  mode                        powersave\n",
        "  nr_packed                   25 (+15/s)\n",
        "  nr_dispatches               7 (+7/s)\n",
        "--- scx_pandemonium statistics (rates over 1.0 s) ---\n",
        "  knob_pack                   1\n",
        "  mode                        powersave\n",
        "  nr_packed                   37 (+12/s)\n",
    ]
    blocks = guest.monitor_blocks(out)
    assert blocks[1] == {"knob_pack": "1", "mode": "powersave", "nr_packed": "25",
                         "nr_dispatches": "7"}
    # From the second sample on: the first may precede the knob write of the switch.
    assert guest.packed_per_sample(blocks) == ({"powersave"}, {"1"}, 12)
    with pytest.raises(guest.CheckFailed, match="3 needed"):
        guest.packed_per_sample(blocks[:2])


def test_the_autopower_check_runs_after_the_loader_gave_our_unit_back():
    checks = guest.PHASE_CHECKS["main"]
    assert checks.index("loader-yields") < checks.index("autopower") < checks.index("enable")
    assert "power-profiles-daemon" in rootfs.PACKAGES


# -- a game as Steam starts one --------------------------------------------------------------


def test_the_stand_in_reaper_looks_like_steams_and_stays_the_games_parent(tmp_path):
    reaper = tmp_path / "reaper"
    reaper.write_text(guest.REAPER_SCRIPT)
    reaper.chmod(0o755)
    probe = "cat /proc/$PPID/comm; tr '\\0' ' ' < /proc/$PPID/cmdline; echo; echo $PPID"
    proc = subprocess.Popen([str(reaper), "SteamLaunch", "AppId=570", "--", "sh", "-c", probe],
                            stdout=subprocess.PIPE, text=True)
    out, _ = proc.communicate(timeout=30)
    comm, cmdline, parent = out.splitlines()
    # What src/games/ids.rs reads: comm `reaper`, then SteamLaunch AppId=N before `--`.
    assert comm == "reaper"
    assert f"{reaper} SteamLaunch AppId=570 -- sh -c" in cmdline
    assert int(parent) == proc.pid  # the script did not exec the game in its place
    assert proc.returncode == 0


def test_the_game_runs_unprivileged_and_frame_paced():
    cmd = guest.game_command()
    assert cmd[:4] == ["setpriv", "--reuid=1000", "--regid=1000", "--clear-groups"]
    assert guest.GAME_UID != 0
    rest = cmd[cmd.index("--") + 1:]
    assert rest[:4] == [str(guest.REAPER), "SteamLaunch", f"AppId={guest.STEAM_APP_ID}", "--"]
    assert rest[0].endswith("/reaper")
    compile(guest.FRAME_GAME, "game", "exec")
    assert "time.sleep(0.006)" in guest.FRAME_GAME and "< 0.001" in guest.FRAME_GAME
    # Its own comm, so BPF's per-comm profile is the game's alone (at most 15 bytes).
    assert f"write({guest.GAME_COMM!r})" in guest.FRAME_GAME and len(guest.GAME_COMM) <= 15


def test_the_boost_line_and_the_games_pid():
    line = "pandemonium: gaming: game 570: threads LAT_CRITICAL while interactive in 812 (reaper), 813 (python3)"
    assert re.search(guest.boost_pattern(813), line)
    assert re.search(guest.boost_pattern(812), line)
    assert not re.search(guest.boost_pattern(13), line)
    assert not re.search(guest.boost_pattern(813), line.replace("570", "571"))
    stats = {812: b"812 (reaper) S 1 812 812 0",
             813: b"813 (py) th(o)n 3) S 812 812 812 0",
             900: b"900 (x) S 8120 1 1 0"}
    assert guest.children_of(812, stats) == [813]
    denied = ("pandemonium: warning: gaming: cannot read /proc/1/environ (uid 0): Permission "
              "denied (os error 13). Another user's environment needs CAP_SYS_PTRACE, which ...")
    assert re.search(guest._DENIED, denied)


def test_the_game_check_runs_under_our_unit_before_scx_takes_over():
    checks = guest.PHASE_CHECKS["main"]
    assert checks.index("kill-restart") < checks.index("game-unprivileged") \
        < checks.index("scx-takes-over") < checks.index("loader-gaming")

#!/usr/bin/env python3
"""The `service` gate layer's checks, run inside the guest whose PID 1 is systemd (service.py).

Standard library only: it runs on the guest's Debian python3, from /opt/pandemonium, started by
pandemonium-gate.service at boot. Each check prints one line

    @@SERVICE-CHECK@@ <nonce> PASS|FAIL <name> <what it saw>

on the serial console; the host (service.py) requires every name in PHASE_CHECKS[phase] to have
passed, so a check that never ran is a failure too. The first failing check ends the phase (the
later ones build on it) after printing the unit's status and journal. Then the exit status and
/results go over the console as in the other layers (console.py's markers), and the guest powers
off through systemd (a clean shutdown: the daemon's last procdb save happens there).

Phases: `main` (first boot: install, start, monitor, journal priorities, procdb across a restart,
SIGKILL and Restart=on-failure, a game started as an unprivileged user boosted in gaming mode (under
our unit and under scx_loader), scx.service and Conflicts= both ways, the real scx_loader started by
D-Bus activation and driven over D-Bus through its modes, systemd-analyze security, enable) and
`reboot` (second boot of the same disk: started at boot, the procdb the last boot saved is loaded).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
from pathlib import Path

CHECK_MARKER = "@@SERVICE-CHECK@@"
PHASE_CHECKS = {
    "main": ["install", "security", "start", "sandbox", "monitor", "journal-priority",
             "procdb-restart", "kill-restart", "game-unprivileged", "scx-takes-over",
             "ours-takes-back",
             "loader-activation", "loader-gaming", "loader-powersave", "loader-stop",
             "loader-yields", "autopower", "enable"],
    "reboot": ["boot-start", "procdb-reboot", "clean-stop"],
}
PHASES = tuple(PHASE_CHECKS)

PAYLOAD = Path("/opt/pandemonium")
BINARY = "/usr/local/bin/scx_pandemonium"
UNIT = "pandemonium"
SCX_UNIT = "scx"
PPD_UNIT = "power-profiles-daemon"
PPD_BUS = ("net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles")
LOADER_UNIT = "scx_loader"
LOADER_BUS = ("org.scx.Loader", "/org/scx/Loader", "org.scx.Loader")  # name, object, interface
LOADER_CONFIG = Path("/etc/scx_loader.toml")
# The configuration systemd/README.md documents; the checks run exactly that.
LOADER_README = PAYLOAD / "src" / "systemd" / "README.md"
# scx_loader's SchedMode (src/lib.rs), a "u" on the bus; its config key is <lowercase>_mode.
SCHED_MODES = {"Auto": 0, "Gaming": 1, "PowerSave": 2, "LowLatency": 3, "Server": 4}
STATE_DIR = Path("/var/lib/pandemonium")
PROCDB = STATE_DIR / "procdb.bin"
SCHED_EXT = Path("/sys/kernel/sched_ext")
BLOCK_HEADER = "--- scx_pandemonium statistics"  # src/stats/format.rs
RESULTS = Path("/results")
# The exposure systemd-analyze gives our unit may not get worse than this (0 best, 10 worst). It
# was 2.6 ("OK") when the layer was written (Debian 13, systemd 257); a sandbox directive lost
# raises it past this.
MAX_EXPOSURE = 3.0
# Capabilities the unit keeps (CapabilityBoundingSet=): SYS_ADMIN 21, SYS_RESOURCE 24, PERFMON 38,
# BPF 39.
UNIT_CAPS = (1 << 21) | (1 << 24) | (1 << 38) | (1 << 39)

ATTACH_S = 240.0  # a BPF load under TCG on a loaded host
LEARN_S = 180.0

_LOADED = re.compile(r"procdb (\S+): loaded (\d+) profiles")
_SAVED = re.compile(r"procdb: saved (\d+) profiles to (\S+?)(?:,|$)")
_TELEMETRY_PROCDB = re.compile(r"\bprocdb: (\d+)/(\d+) ")
_EXPOSURE = re.compile(r"Overall exposure level for (\S+): ([0-9.]+) (\S+)")
_LOADED_LINE = r"procdb \S+: loaded \d+ profiles"
_SAVED_LINE = r"procdb: saved \d+ profiles"
_TOML_BLOCK = re.compile(r"^```toml\n(.*?)^```", re.M | re.S)


class CheckFailed(Exception):
    pass


# -- pure helpers (tested on the host) ---------------------------------------------------------

def check_line(nonce: str, ok: bool, name: str, detail: str) -> str:
    detail = " ".join(detail.split())  # one console line
    return f"{CHECK_MARKER} {nonce} {'PASS' if ok else 'FAIL'} {name} {detail}".rstrip()


def parse_exposure(text: str) -> tuple[str, float, str] | None:
    """(unit, score, level) from `systemd-analyze security UNIT`'s last line."""
    m = _EXPOSURE.search(text)
    return (m.group(1), float(m.group(2)), m.group(3)) if m else None


def _last_count(rx: re.Pattern, group: int):
    """The count `rx` finds in the last of a list of journal messages that matches it."""
    def count(messages: list[str]) -> int | None:
        found = [int(m.group(group)) for msg in messages if (m := rx.search(msg))]
        return found[-1] if found else None
    return count


loaded_count = _last_count(_LOADED, 2)  # profiles the daemon loaded
saved_count = _last_count(_SAVED, 1)
telemetry_profiles = _last_count(_TELEMETRY_PROCDB, 1)  # learned, from -v's "procdb: N/C"


def journal_messages(json_lines: str) -> list[dict]:
    """journalctl -o json output as dicts with MESSAGE always a str (the journal gives a list of
    bytes for a message that is not valid UTF-8)."""
    out = []
    for line in json_lines.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        msg = entry.get("MESSAGE")
        if isinstance(msg, list):
            msg = bytes(msg).decode(errors="replace")
        entry["MESSAGE"] = msg or ""
        out.append(entry)
    return out


def monitor_blocks(lines: list[str]) -> list[dict[str, str]]:
    """`--monitor`'s samples, each as {field: first word of its value} (src/stats/format.rs:
    one block per sample under BLOCK_HEADER, one `  name value` line per field)."""
    blocks: list[dict[str, str]] = []
    for line in lines:
        if BLOCK_HEADER in line:
            blocks.append({})
        elif blocks and line.startswith("  ") and len(line.split()) >= 2:
            name, value = line.split()[:2]
            blocks[-1][name] = value
    return blocks


def packed_per_sample(blocks: list[dict[str, str]]) -> tuple[set[str], set[str], int]:
    """The modes and `knob_pack` values the samples after the first show, and how many wakeups
    BPF packed between the second sample and the last. Not from the first: the daemon logs a
    switch before it writes the new mode's knobs in the same tick, so the first sample, taken
    as soon as the log line shows, can precede the write."""
    if len(blocks) < 3:
        raise CheckFailed(f"{len(blocks)} --monitor samples, 3 needed")
    later = blocks[1:]
    return ({b.get("mode", "?") for b in later}, {b.get("knob_pack", "?") for b in later},
            int(blocks[-1]["nr_packed"]) - int(blocks[1]["nr_packed"]))


def cap_mask(status_text: str, field: str = "CapBnd") -> int | None:
    m = re.search(rf"^{field}:\s*([0-9a-f]+)$", status_text, re.M)
    return int(m.group(1), 16) if m else None


def _loader_section(readme: str) -> str:
    start = readme.find("## Under scx_loader")
    if start < 0:
        raise ValueError("no '## Under scx_loader' section")
    end = readme.find("\n## ", start + 1)
    return readme[start:end if end > 0 else len(readme)]


def readme_loader_config(readme: str) -> str:
    """The /etc/scx_loader.toml that systemd/README.md's scx_loader section shows."""
    m = _TOML_BLOCK.search(_loader_section(readme))
    if not m:
        raise ValueError("no toml block in the scx_loader section")
    return m.group(1)


def mode_args(config: dict, sched: str, mode: str) -> list[str]:
    """The arguments scx_loader passes for `mode`: the configured list; for a key that is
    missing its built-in flags, which are none for scx_pandemonium."""
    return list(config.get("scheds", {}).get(sched, {}).get(f"{mode.lower()}_mode") or [])


def parse_cmdline(raw: bytes) -> list[str]:
    """/proc/PID/cmdline -> argv."""
    return [a.decode(errors="replace") for a in raw.split(b"\0")[:-1]] if raw else []


def busctl_value(text: str):
    """`busctl get-property` output ('s "x"', 'u 1', 'as 2 "a" "b"') -> str, int or list."""
    words = shlex.split(text.strip())
    if not words:
        raise ValueError("empty busctl output")
    sig, rest = words[0], words[1:]
    if sig in ("s", "o", "g"):
        return rest[0] if rest else ""
    if sig in ("y", "n", "q", "i", "u", "x", "t"):
        return int(rest[0])
    if sig == "b":
        return rest[0] == "true"
    if sig == "as":
        return rest[1:1 + int(rest[0])]
    raise ValueError(f"busctl type {sig!r} not handled: {text.strip()!r}")


# -- the guest ---------------------------------------------------------------------------------

def sh(*cmd: str, timeout: float = 120, check: bool = False) -> subprocess.CompletedProcess:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise CheckFailed(f"`{' '.join(cmd)}` exited {proc.returncode}: "
                          f"{(proc.stderr or proc.stdout).strip()[-400:]}")
    return proc


def say(text: str) -> None:
    # One write per line: systemd's status lines share the console and must not land inside it.
    sys.stdout.write(text.rstrip("\n") + "\n")
    sys.stdout.flush()


def show(unit: str, *props: str) -> dict[str, str]:
    out = sh("systemctl", "show", *[f"--property={p}" for p in props], f"{unit}.service").stdout
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def sched_state() -> tuple[str, str]:
    def read(p: Path) -> str:
        try:
            return p.read_text().strip()
        except OSError:
            return ""
    return read(SCHED_EXT / "state"), read(SCHED_EXT / "root" / "ops")


def wait_for(pred, timeout: float, what: str, interval: float = 0.5):
    deadline = time.monotonic() + timeout
    while True:
        value = pred()
        if value:
            return value
        if time.monotonic() > deadline:
            raise CheckFailed(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)


def journal(*match: str, namespace: str | None = None) -> list[dict]:
    cmd = ["journalctl", "--no-pager", "-o", "json"]
    if namespace:
        cmd.append(f"--namespace={namespace}")
    return journal_messages(sh(*cmd, *match).stdout)


def invocation(unit: str) -> str:
    inv = show(unit, "InvocationID").get("InvocationID", "")
    if not inv:
        raise CheckFailed(f"{unit}.service has no invocation ID")
    return inv


def invocation_messages(inv: str, namespace: str | None = None) -> list[dict]:
    return journal(f"_SYSTEMD_INVOCATION_ID={inv}", namespace=namespace)


def texts(entries: list[dict]) -> list[str]:
    return [e["MESSAGE"] for e in entries]


def wait_journal(inv: str, pattern: str, timeout: float, what: str) -> dict:
    """The first message of invocation `inv` matching `pattern` (journald may lag behind)."""
    return wait_new(inv, pattern, 0, timeout, what)


def attached_unit(unit: str, timeout: float = ATTACH_S) -> tuple[int, str]:
    """Waits until `unit` runs and the kernel says our scheduler is attached; (MainPID, ops)."""
    def ready():
        p = show(unit, "ActiveState", "MainPID")
        state, ops = sched_state()
        pid = int(p.get("MainPID", "0") or 0)
        if p.get("ActiveState") == "active" and pid and state == "enabled" \
                and ops.startswith("pandemonium"):
            return pid, ops
        if p.get("ActiveState") == "failed":
            raise CheckFailed(f"{unit}.service failed: {show(unit, 'Result')}")
        return None
    return wait_for(ready, timeout, f"{unit}.service to run with pandemonium attached")


def exe_of(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError as exc:
        return f"? ({exc})"


def detached(timeout: float = 60) -> None:
    wait_for(lambda: sched_state()[0] == "disabled", timeout, "sched_ext state disabled")


# A game as Steam starts one: under its launch helper, `reaper SteamLaunch AppId=N -- COMMAND`
# (a child subreaper; Steam's is a binary, this stand-in a script named reaper, so its comm is
# `reaper` and its command line holds the same arguments after the script's path), run by a user
# who is not root. The game is frame-paced like a real one: 1 ms of work every 7 ms.
STEAM_APP_ID = "570"
GAME_UID = 1000
REAPER = PAYLOAD / "steam" / "ubuntu12_32" / "reaper"
REAPER_SCRIPT = """#!/bin/sh
# Stands in for Steam's reaper: run what follows `--` and stay its parent (a command after it, so
# no shell execs the game in its own place).
while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
[ $# -gt 0 ] && shift
"$@"
exit $?
"""
# The game names itself, so BPF's per-comm profile (task_profiles) is its own.
GAME_COMM = "svc-game"
FRAME_GAME = ("import time\n"
              f"open('/proc/self/comm', 'w').write({GAME_COMM!r})\n"
              "while True:\n"
              "    t = time.perf_counter()\n"
              "    while time.perf_counter() - t < 0.001:\n"
              "        pass\n"
              "    time.sleep(0.006)\n")
GAME_START_S = 90.0


def game_command() -> list[str]:
    """The game's command line: setpriv drops to GAME_UID and execs the reaper."""
    return ["setpriv", f"--reuid={GAME_UID}", f"--regid={GAME_UID}", "--clear-groups", "--",
            str(REAPER), "SteamLaunch", f"AppId={STEAM_APP_ID}", "--", sys.executable, "-c",
            FRAME_GAME]


def boost_pattern(pid: int) -> str:
    """The daemon's line for a game process (src/games/boost.rs)."""
    return rf"gaming: game {STEAM_APP_ID}: threads LAT_CRITICAL while interactive in (.*, )?{pid} \("


def children_of(pid: int, stats: dict[int, bytes]) -> list[int]:
    """The pids whose /proc/PID/stat (`stats`) names `pid` as parent. The comm between the
    parentheses may hold anything, so the fields are counted from the last ')'."""
    out = []
    for child, raw in stats.items():
        rest = raw[raw.rfind(b")") + 1:].split()
        if len(rest) > 1 and rest[1] == str(pid).encode():
            out.append(child)
    return sorted(out)


def proc_stats() -> dict[int, bytes]:
    out = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = (d / "stat").read_bytes()
            except OSError:
                pass
    return out


def uid_of(pid: int) -> int | None:
    try:
        m = re.search(r"^Uid:\s*(\d+)", Path(f"/proc/{pid}/status").read_text(), re.M)
    except OSError:
        return None
    return int(m.group(1)) if m else None


def start_game() -> tuple[subprocess.Popen, int]:
    """Starts the game as GAME_UID under the stand-in reaper; (the reaper's process, the game's
    pid)."""
    REAPER.parent.mkdir(parents=True, exist_ok=True)
    REAPER.write_text(REAPER_SCRIPT)
    REAPER.chmod(0o755)
    for d in (REAPER.parent, REAPER.parent.parent, PAYLOAD):
        d.chmod(0o755)
    env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "SteamGameId": STEAM_APP_ID,
           "SteamAppId": STEAM_APP_ID}
    reaper = subprocess.Popen(game_command(), env=env)

    def game():
        if reaper.poll() is not None:
            raise CheckFailed(f"the reaper exited {reaper.returncode}")
        kids = children_of(reaper.pid, proc_stats())
        return kids[0] if kids else None
    pid = wait_for(game, 30, "the game under the reaper")
    if uid_of(pid) != GAME_UID or uid_of(reaper.pid) != GAME_UID:
        reaper.kill()
        raise CheckFailed(f"the game runs as uid {uid_of(pid)}, its reaper as "
                          f"{uid_of(reaper.pid)}, not {GAME_UID}")
    return reaper, pid


def wait_game_lat_critical(timeout: float) -> str:
    """Waits until BPF's task_profiles holds the game's comm as LAT_CRITICAL: what the scheduler
    decided, not what the daemon logged it asked for."""
    import bpf_map  # shipped beside this script (service.py's payload_files)

    seen = []

    def lat_critical() -> str | None:
        seen.append(bpf_map.task_tiers().get(GAME_COMM))
        return seen[-1] if seen[-1] == "LAT_CRITICAL" else None

    try:
        return wait_for(lat_critical, timeout, f"BPF's tier for {GAME_COMM} (task_profiles)")
    except CheckFailed as e:
        raise CheckFailed(f"{e}: it stayed {seen[-1] if seen else None}") from None


def stop_game(reaper: subprocess.Popen, pid: int) -> None:
    for p in (pid, reaper.pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    reaper.wait(timeout=30)


_DENIED = r"gaming: cannot read /proc/\d+/environ .*CAP_SYS_PTRACE"


def start_hog(name: str) -> subprocess.Popen:
    """A CPU hog under a name of its own (a copy of bash), for the daemon to profile."""
    hog = PAYLOAD / "hogs" / name
    hog.parent.mkdir(exist_ok=True)
    shutil.copy("/bin/bash", hog)
    return subprocess.Popen([str(hog), "-c", "while :; do :; done"])


def read_monitor(samples: int) -> tuple[list[str], int, str]:
    """`scx_pandemonium --monitor 1` until it printed `samples` samples, then SIGINT: its
    output lines, exit status and stderr."""
    proc = subprocess.Popen([BINARY, "--monitor", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out: list[str] = []

    def read() -> None:
        for line in proc.stdout:
            out.append(line)
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        wait_for(lambda: sum(BLOCK_HEADER in ln for ln in out) >= samples
                 or proc.poll() is not None, 30 + 10 * samples, f"{samples} --monitor samples")
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        rc = proc.wait(timeout=30)
        reader.join(timeout=5)
    return out, rc, proc.stderr.read().strip()


# Light periodic work, as the gate's powersave layer runs (tests/gate_support/powersave.rs): 300 us
# busy, 2 ms asleep. Such wakeups find their CPU busy with a short runner, which packing queues
# behind.
PERIODIC = ("import time\n"
            "while True:\n"
            "    t = time.perf_counter()\n"
            "    while time.perf_counter() - t < 0.0003:\n"
            "        pass\n"
            "    time.sleep(0.002)\n")


def set_power_profile(name: str) -> None:
    busctl("set-property", "ActiveProfile", "s", name, bus=PPD_BUS)
    got = busctl_value(busctl("get-property", "ActiveProfile", bus=PPD_BUS))
    if got != name:
        raise CheckFailed(f"power-profiles-daemon's ActiveProfile is {got!r} after setting {name}")


def wait_learned(inv: str, more_than: int, what: str) -> int:
    def learned():
        n = telemetry_profiles(texts(invocation_messages(inv)))
        return n if n is not None and n > more_than else None
    return wait_for(learned, LEARN_S, what, interval=2.0)


def run_ours(verb: str) -> tuple[int, str]:
    """`systemctl VERB` our unit, then attached_unit(UNIT)."""
    # Clears the start limit (StartLimitBurst=5 in 60 s) that this layer's many starts approach.
    sh("systemctl", "reset-failed", f"{UNIT}.service")
    sh("systemctl", verb, f"{UNIT}.service", check=True, timeout=300)
    return attached_unit(UNIT)


# -- scx_loader over D-Bus ---------------------------------------------------------------------

def busctl(*args: str, bus: tuple[str, str, str] = LOADER_BUS, timeout: float = 180) -> str:
    # busctl's own 25 s default is short for a call that waits for the D-Bus activation of the
    # loader, and of polkitd, under TCG.
    name, path, iface = bus
    return sh("busctl", f"--timeout={int(timeout)}", args[0], name, path, iface, *args[1:],
              timeout=timeout + 30, check=True).stdout


def loader_property(prop: str):
    return busctl_value(busctl("get-property", prop))


def unit_pids(unit: str) -> list[int]:
    cgroup = show(unit, "ControlGroup").get("ControlGroup", "")
    try:
        text = Path(f"/sys/fs/cgroup{cgroup}/cgroup.procs").read_text() if cgroup else ""
    except OSError:
        return []
    return [int(p) for p in text.split()]


def argv_of(pid: int) -> list[str]:
    try:
        return parse_cmdline(Path(f"/proc/{pid}/cmdline").read_bytes())
    except OSError:
        return []


def loader_child(gone: set[int], timeout: float = ATTACH_S) -> tuple[int, str]:
    """Waits until scx_loader runs a scheduler of ours that is none of `gone` (those have exited)
    and the kernel says it is attached; (pid, ops)."""
    def ready():
        if show(LOADER_UNIT, "ActiveState").get("ActiveState") == "failed":
            raise CheckFailed(f"{LOADER_UNIT}.service failed: {show(LOADER_UNIT, 'Result')}")
        pids = unit_pids(LOADER_UNIT)
        ours = [p for p in pids if exe_of(p) == BINARY]
        fresh = [p for p in ours if p not in gone]
        state, ops = sched_state()
        if len(fresh) == 1 and len(ours) == 1 and state == "enabled" \
                and ops.startswith("pandemonium"):
            return fresh[0], ops
        return None
    return wait_for(ready, timeout, f"{LOADER_UNIT}.service's scheduler to attach")


def matching(inv: str, pattern: str) -> list[dict]:
    rx = re.compile(pattern)
    return [e for e in invocation_messages(inv) if rx.search(e["MESSAGE"])]


def wait_new(inv: str, pattern: str, seen: int, timeout: float, what: str) -> dict:
    """The first message of invocation `inv` matching `pattern` after the `seen` earlier ones:
    every scheduler the loader starts logs through the loader's own journal stream."""
    def find():
        found = matching(inv, pattern)
        return found[seen] if len(found) > seen else None
    return wait_for(find, timeout, what, interval=1.0)


def unsynced_save(entry: dict) -> int:
    """Profiles in a save under scx_loader's unit, whose @sync filter refuses the fsync: the
    daemon's first such save says so at warning priority."""
    msg = entry["MESSAGE"]
    saved = saved_count([msg])
    if "fsync was refused" not in msg or entry.get("PRIORITY") != "4" or saved is None:
        raise CheckFailed(f"not a refused-fsync warning (PRIORITY {entry.get('PRIORITY')}): "
                          f"{msg!r}")
    return saved


# The exit save happens only when something changed since the load; a few seconds of the hogs and
# the checks' own processes make sure of that.
SETTLE_S = 5.0


class Layer:
    def __init__(self, nonce: str, phase: str):
        self.nonce, self.phase = nonce, phase
        self.passed: list[str] = []
        self.hogs: list[subprocess.Popen] = []

    def report(self, ok: bool, name: str, detail: str) -> None:
        say(check_line(self.nonce, ok, name, detail))
        if ok:
            self.passed.append(name)

    def check(self, name: str, fn) -> None:
        say(f"service {self.phase}: {name} ...")
        started = time.monotonic()
        try:
            detail = fn()
        except CheckFailed as exc:
            self.report(False, name, str(exc))
            raise
        except Exception as exc:  # noqa: BLE001 - any crash of a check is that check's failure
            self.report(False, name, f"{type(exc).__name__}: {exc}")
            raise CheckFailed(str(exc)) from exc
        self.report(True, name, f"{detail} ({time.monotonic() - started:.1f} s)")

    # -- phase main ------------------------------------------------------------------------

    def install(self) -> str:
        src = PAYLOAD / "src"
        proc = sh(sys.executable, str(src / "pandemonium.py"), "install", "--binary",
                  str(PAYLOAD / "bin" / "scx_pandemonium"), timeout=300)
        say(proc.stdout + proc.stderr)
        if proc.returncode != 0:
            raise CheckFailed(f"./pandemonium.py install exited {proc.returncode}")
        p = show(UNIT, "LoadState", "FragmentPath", "ExecStart")
        if p.get("LoadState") != "loaded":
            raise CheckFailed(f"systemd does not know {UNIT}.service after install: {p}")
        for f in (BINARY, "/etc/default/pandemonium"):
            if not Path(f).is_file():
                raise CheckFailed(f"install left no {f}")
        if Path(BINARY).read_bytes() != (PAYLOAD / "bin" / "scx_pandemonium").read_bytes():
            raise CheckFailed(f"{BINARY} is not the binary install was given")
        if BINARY not in p.get("ExecStart", ""):
            raise CheckFailed(f"the unit does not run {BINARY}: {p.get('ExecStart')}")
        tools = PAYLOAD / "bin" / "pandemonium-tools"
        installed = Path(BINARY).with_name("pandemonium-tools")
        if tools.is_file() and (not installed.is_file()
                                or installed.read_bytes() != tools.read_bytes()):
            raise CheckFailed(f"install did not put {tools.name} beside {BINARY}")
        return f"unit {p['FragmentPath']} loaded by systemd, runs {BINARY}"

    def security(self) -> str:
        proc = sh("systemd-analyze", "security", "--no-pager", f"{UNIT}.service", timeout=300)
        out = proc.stdout + proc.stderr
        (RESULTS / "systemd-analyze-security.txt").write_text(out)
        found = parse_exposure(out)
        if not found:
            raise CheckFailed(f"no exposure level in systemd-analyze's output: {out[-400:]}")
        unit, score, level = found
        say(f"service main: systemd-analyze security: Overall exposure level for {unit}: "
            f"{score} {level}")
        if score > MAX_EXPOSURE:
            raise CheckFailed(f"exposure {score} {level} is worse than {MAX_EXPOSURE}")
        return f"Overall exposure level for {unit}: {score} {level} (limit {MAX_EXPOSURE})"

    def start(self) -> str:
        # A damaged procdb makes the first start log a warning, which journal-priority looks for.
        STATE_DIR.mkdir(mode=0o700, exist_ok=True)
        PROCDB.write_bytes(b"not a procdb, planted by the service gate layer\n")
        # -v: the telemetry line ("procdb: N/C") tells when profiles have been learned.
        Path("/etc/default/pandemonium").write_text('PANDEMONIUM_ARGS="-v"\n')
        sh("systemctl", "start", f"{UNIT}.service", check=True)
        pid, ops = attached_unit(UNIT)
        self.first_inv = invocation(UNIT)
        if exe_of(pid) != BINARY:
            raise CheckFailed(f"MainPID {pid} runs {exe_of(pid)}, not {BINARY}")
        return f"MainPID {pid} ({BINARY}); /sys/kernel/sched_ext/root/ops = {ops}"

    def sandbox(self) -> str:
        pid = int(show(UNIT, "MainPID")["MainPID"])
        status = Path(f"/proc/{pid}/status").read_text()
        bnd = cap_mask(status)
        seccomp = re.search(r"^Seccomp:\s*(\d+)", status, re.M)
        nnp = re.search(r"^NoNewPrivs:\s*(\d+)", status, re.M)
        if bnd != UNIT_CAPS:
            raise CheckFailed(f"CapBnd {bnd:#x} is not the unit's {UNIT_CAPS:#x}")
        if not seccomp or seccomp.group(1) != "2" or not nnp or nnp.group(1) != "1":
            raise CheckFailed(f"no seccomp filter / NoNewPrivs: {seccomp and seccomp.group(0)} "
                              f"{nnp and nnp.group(0)}")
        st = STATE_DIR.stat()
        if st.st_uid != 0 or st.st_mode & 0o777 != 0o700:
            raise CheckFailed(f"{STATE_DIR}: uid {st.st_uid} mode {st.st_mode & 0o777:o}")
        if not Path("/run/scx").is_dir():
            raise CheckFailed("RuntimeDirectory=scx did not create /run/scx")
        return (f"CapBnd {bnd:#x}, seccomp filter, NoNewPrivs; {STATE_DIR} 0700 root; "
                "/run/scx present")

    def monitor(self) -> str:
        out, rc, err = read_monitor(3)
        blocks = sum(BLOCK_HEADER in line for line in out)
        if blocks < 3 or rc != 0:
            raise CheckFailed(f"--monitor 1 printed {blocks} samples, exit {rc}: {err[-300:]}")
        socket = Path("/run/scx/root/stats")
        return f"--monitor 1 printed {blocks} samples through {socket} and exited {rc} on SIGINT"

    def journal_priority(self) -> str:
        warn = wait_journal(self.first_inv, r"pandemonium: warning: procdb .*starting empty", 60,
                            "the damaged-procdb warning in the journal")
        info = wait_journal(self.first_inv, r"pandemonium: scheduler attached", 60,
                            "'scheduler attached' in the journal")
        if warn.get("PRIORITY") != "4" or info.get("PRIORITY") != "6":
            raise CheckFailed(f"priorities: warning line {warn.get('PRIORITY')}, info line "
                              f"{info.get('PRIORITY')} (want 4 and 6)")
        if warn.get("SYSLOG_IDENTIFIER") != "scx_pandemonium":
            raise CheckFailed(f"identifier {warn.get('SYSLOG_IDENTIFIER')!r}")
        # The issue's own command: our warning is there, our info lines are not.
        shown = sh("journalctl", "--no-pager", "-u", UNIT, "-p", "warning", "-o", "cat").stdout
        if warn["MESSAGE"] not in shown or "scheduler attached" in shown:
            raise CheckFailed(f"journalctl -u {UNIT} -p warning shows:\n{shown}")
        return (f"journalctl -u {UNIT} -p warning shows {warn['MESSAGE'][:90]!r} (PRIORITY 4) "
                "and not the info lines (PRIORITY 6)")

    def procdb_restart(self) -> str:
        # The damaged file was set aside: the unit's state directory is writable (StateDirectory=
        # under ProtectSystem=strict).
        aside = sorted(STATE_DIR.glob("procdb.bin.corrupt-*"))
        if not aside:
            said = [m for m in texts(invocation_messages(self.first_inv))
                    if m.startswith("pandemonium:") and "procdb" in m][:2]
            raise CheckFailed(f"the damaged procdb was not set aside: {said}")
        self.hogs.append(start_hog("pdb-svc-learn"))
        n = wait_learned(self.first_inv, 0, "learned profiles in the -v telemetry")
        run_ours("restart")
        wait_journal(self.first_inv, r"procdb: saved \d+ profiles", 60, "the save on stop")
        saved = saved_count(texts(invocation_messages(self.first_inv)))
        inv = invocation(UNIT)
        wait_journal(inv, r"procdb \S+: loaded \d+ profiles", 60, "the procdb load at start")
        loaded = loaded_count(texts(invocation_messages(inv)))
        if not saved or loaded != saved:
            raise CheckFailed(f"saved {saved} profiles on stop, loaded {loaded} at start")
        if not PROCDB.is_file() or PROCDB.stat().st_mode & 0o777 != 0o600:
            raise CheckFailed(f"{PROCDB} missing or not 0600")
        self.loaded = loaded
        return (f"damaged file set aside as {aside[0].name}; learned {n} profiles; restart saved "
                f"{saved} and loaded {loaded} from {PROCDB} (StateDirectory= under "
                "ProtectSystem=strict)")

    def kill_restart(self) -> str:
        before = show(UNIT, "MainPID", "NRestarts")
        old_pid, restarts = int(before["MainPID"]), int(before["NRestarts"])
        sh("systemctl", "kill", "-s", "KILL", f"{UNIT}.service", check=True)

        def new_main():
            p = show(UNIT, "MainPID", "NRestarts")
            pid = int(p.get("MainPID", "0") or 0)
            return (pid, int(p["NRestarts"])) if pid and pid != old_pid else None
        pid, now = wait_for(new_main, 120, "Restart=on-failure to start a new MainPID")
        attached_unit(UNIT)
        if now <= restarts:
            raise CheckFailed(f"NRestarts {restarts} -> {now}")
        inv = invocation(UNIT)
        wait_journal(inv, r"procdb \S+: loaded \d+ profiles", 60, "the procdb load after SIGKILL")
        loaded = loaded_count(texts(invocation_messages(inv)))
        if not loaded:
            raise CheckFailed(f"the restarted daemon loaded {loaded} profiles")
        return (f"SIGKILL to MainPID {old_pid}; systemd restarted it as {pid} (NRestarts "
                f"{restarts} -> {now}), attached again, loaded {loaded} profiles")

    def game_unprivileged(self) -> str:
        """Gaming mode under our unit (CAP_SYS_PTRACE dropped) boosts a game that a user who is
        not root started through Steam's reaper, and says once that it could not read an
        environment."""
        Path("/etc/default/pandemonium").write_text('PANDEMONIUM_ARGS="-v --mode gaming"\n')
        try:
            main, _ = run_ours("restart")
            inv = invocation(UNIT)
            wait_journal(inv, r"mode gaming: every thread of a game", 60, "the gaming mode's line")
            reaper, pid = start_game()
            try:
                boosted = wait_journal(inv, boost_pattern(pid), GAME_START_S,
                                       f"the boost of game PID {pid} (uid {GAME_UID})")
                tier = wait_game_lat_critical(30)
                time.sleep(3)  # a second report would show up by now
                again = matching(inv, boost_pattern(pid))
            finally:
                stop_game(reaper, pid)
            denied = matching(inv, _DENIED)
        finally:
            Path("/etc/default/pandemonium").write_text('PANDEMONIUM_ARGS="-v"\n')
        if len(again) != 1:
            raise CheckFailed(f"game PID {pid} reported {len(again)} times")
        if len(denied) != 1 or denied[0].get("PRIORITY") != "4":
            raise CheckFailed(f"{len(denied)} denied-environment warnings (want 1 at PRIORITY 4): "
                              f"{[e['MESSAGE'][:120] for e in denied]}")
        return (f"MainPID {main} in --mode gaming; game PID {pid} (uid {GAME_UID}) under "
                f"{REAPER.name} PID {reaper.pid} (SteamLaunch AppId={STEAM_APP_ID}): "
                f"{boosted['MESSAGE'][:120]!r}; BPF's tier for {GAME_COMM}: {tier}; warned "
                f"once: {denied[0]['MESSAGE'][:100]!r}")

    def scx_takes_over(self) -> str:
        Path("/etc/default/scx").write_text("SCX_SCHEDULER=scx_pandemonium\nSCX_FLAGS='-v'\n")
        sh("systemctl", "start", f"{SCX_UNIT}.service", check=True, timeout=300)
        pid, ops = attached_unit(SCX_UNIT)
        ours = show(UNIT, "ActiveState")["ActiveState"]
        if ours != "inactive":
            raise CheckFailed(f"{UNIT}.service is {ours} while scx.service runs")
        if exe_of(pid) != BINARY:
            raise CheckFailed(f"scx.service runs {exe_of(pid)}, not {BINARY}")
        time.sleep(2)  # still running: not a start that fails and is retried
        again = show(SCX_UNIT, "ActiveState", "MainPID")
        if again.get("ActiveState") != "active" or again.get("MainPID") != str(pid):
            raise CheckFailed(f"scx.service did not stay up: {again} (MainPID was {pid})")
        logged = texts(invocation_messages(invocation(SCX_UNIT), namespace="sched-ext"))
        attached = any("scheduler attached" in m for m in logged)
        return (f"starting scx.service (SCX_SCHEDULER=scx_pandemonium) stopped {UNIT}.service; "
                f"it runs {BINARY} as {pid}, ops {ops}; its log in the sched-ext namespace "
                f"{'has' if attached else 'lacks'} 'scheduler attached'")

    def ours_takes_back(self) -> str:
        pid, ops = run_ours("start")
        theirs = show(SCX_UNIT, "ActiveState")["ActiveState"]
        if theirs != "inactive":
            raise CheckFailed(f"scx.service is {theirs} while {UNIT}.service runs")
        return f"starting {UNIT}.service stopped scx.service; MainPID {pid}, ops {ops}"

    def loader_activation(self) -> str:
        text = readme_loader_config(LOADER_README.read_text())
        self.loader_config = tomllib.loads(text)
        LOADER_CONFIG.write_text(text)
        if show(UNIT, "ActiveState").get("ActiveState") != "active":
            raise CheckFailed(f"{UNIT}.service is not running before the loader's activation")
        # Nothing has started scx_loader.service: this read makes dbus-daemon activate it.
        default = loader_property("DefaultScheduler")
        if default != "scx_pandemonium":
            raise CheckFailed(f"DefaultScheduler is {default!r} with {LOADER_CONFIG}")
        pid, ops = loader_child(set())
        ours = show(UNIT, "ActiveState")["ActiveState"]
        if ours != "inactive":
            raise CheckFailed(f"{UNIT}.service is {ours} while {LOADER_UNIT}.service runs")
        mode = self.loader_config.get("default_mode", "Auto")
        argv, want = argv_of(pid), mode_args(self.loader_config, "scx_pandemonium", mode)
        if argv[1:] != want:
            raise CheckFailed(f"default_sched runs {argv} in {mode}, not the {want} of "
                              f"{LOADER_CONFIG}")
        self.loader_inv = invocation(LOADER_UNIT)
        entry = wait_new(self.loader_inv, _LOADED_LINE, 0, 60, "the procdb load")
        loaded = loaded_count([entry["MESSAGE"]])
        if not loaded:
            raise CheckFailed(f"the loader's scheduler loaded {loaded} profiles")
        self.loader_pid = pid
        main = show(LOADER_UNIT, "MainPID")["MainPID"]
        return (f"reading DefaultScheduler ({default}) D-Bus-activated {LOADER_UNIT}.service "
                f"(MainPID {main}), which stopped {UNIT}.service (Conflicts=); default_sched "
                f"runs {argv[0]!r} from PATH as {pid}: {shlex.join([exe_of(pid), *argv[1:]])} "
                f"({mode}: {mode.lower()}_mode = {want}), ops {ops}; it loaded {loaded} profiles "
                "our unit saved")

    def _loader_mode(self, method: str, mode: str, replaces: str | None) -> str:
        """`method` (scx_pandemonium, mode) over D-Bus: the loader's new scheduler process runs
        the mode's arguments and is attached; the one it `replaces` saved what it loaded."""
        inv, old = self.loader_inv, self.loader_pid
        time.sleep(SETTLE_S)
        saved_before, loaded_before = len(matching(inv, _SAVED_LINE)), \
            len(matching(inv, _LOADED_LINE))
        busctl("call", method, "su", "scx_pandemonium", str(SCHED_MODES[mode]))
        pid, ops = loader_child({old})
        argv, want = argv_of(pid), mode_args(self.loader_config, "scx_pandemonium", mode)
        if exe_of(pid) != BINARY or argv[1:] != want:
            raise CheckFailed(f"{mode}: PID {pid} runs {exe_of(pid)} {argv[1:]}, not {BINARY} "
                              f"{want}")
        current, sched_mode = loader_property("CurrentScheduler"), \
            loader_property("SchedulerMode")
        if current != "scx_pandemonium" or sched_mode != SCHED_MODES[mode]:
            raise CheckFailed(f"the loader says CurrentScheduler {current!r}, SchedulerMode "
                              f"{sched_mode}")
        loaded = loaded_count([wait_new(inv, _LOADED_LINE, loaded_before, 60,
                                        f"the {mode} instance's procdb load")["MESSAGE"]])
        self.loader_pid = pid
        said = (f"{method}(scx_pandemonium, {SCHED_MODES[mode]}): PID {pid} runs "
                f"{shlex.join([exe_of(pid), *argv[1:]])}, ops {ops}; CurrentScheduler {current}, "
                f"SchedulerMode {sched_mode}")
        if replaces is None:
            return f"{said}; loaded {loaded} profiles"
        saved = unsynced_save(wait_new(inv, _SAVED_LINE, saved_before, 60,
                                       f"the {replaces} instance's save"))
        if loaded != saved:
            raise CheckFailed(f"the {replaces} instance saved {saved} profiles unsynced, the "
                              f"{mode} one loaded {loaded}")
        return (f"{said}; the {replaces} instance (PID {old}) saved {saved} profiles with fsync "
                f"refused, this one loaded {loaded}")

    def loader_gaming(self) -> str:
        said = self._loader_mode("SwitchScheduler", "Gaming", "Auto")
        # scx_loader's unit drops CAP_SYS_PTRACE too: the reaper must find the game there.
        inv = self.loader_inv
        reaper, pid = start_game()
        try:
            boosted = wait_journal(inv, boost_pattern(pid), GAME_START_S,
                                   f"the boost of game PID {pid} (uid {GAME_UID}) under the loader")
        finally:
            stop_game(reaper, pid)
        return f"{said}; game PID {pid} (uid {GAME_UID}): {boosted['MESSAGE'][:100]!r}"

    def loader_powersave(self) -> str:
        return self._loader_mode("SwitchScheduler", "PowerSave", "Gaming")

    def loader_stop(self) -> str:
        inv, old = self.loader_inv, self.loader_pid
        time.sleep(SETTLE_S)
        saved_before = len(matching(inv, _SAVED_LINE))
        busctl("call", "StopScheduler")
        detached()
        wait_for(lambda: old not in unit_pids(LOADER_UNIT), 60, f"PID {old} to exit")
        entry = wait_new(inv, _SAVED_LINE, saved_before, 60, "the save on StopScheduler")
        saved = unsynced_save(entry)
        failed = [m for m in texts(invocation_messages(inv)) if "cannot save" in m]
        if failed:
            raise CheckFailed(f"a save failed under {LOADER_UNIT}.service: {failed[0]}")
        state = show(LOADER_UNIT, "ActiveState")["ActiveState"]
        current = loader_property("CurrentScheduler")
        if state != "active" or current != "unknown":
            raise CheckFailed(f"after StopScheduler the loader is {state}, CurrentScheduler "
                              f"{current!r}")
        return (f"StopScheduler: PID {old} detached (sched_ext disabled) and logged "
                f"{entry['MESSAGE'][:110]!r}... at PRIORITY 4 (fsync: EPERM from the unit's "
                f"@sync filter); {LOADER_UNIT}.service stays active, CurrentScheduler {current!r}")

    def loader_yields(self) -> str:
        started = self._loader_mode("StartScheduler", "LowLatency", None)
        inv, child = self.loader_inv, self.loader_pid
        time.sleep(SETTLE_S)
        saved_before = len(matching(inv, _SAVED_LINE))
        pid, ops = run_ours("start")
        loader = show(LOADER_UNIT, "ActiveState", "Result")
        if loader.get("ActiveState") != "inactive" or Path(f"/proc/{child}").exists():
            raise CheckFailed(f"{LOADER_UNIT}.service {loader}, its scheduler PID {child} "
                              f"{'still runs' if Path(f'/proc/{child}').exists() else 'is gone'}")
        saved = unsynced_save(wait_new(inv, _SAVED_LINE, saved_before, 60,
                                       "the loader's scheduler's save on stop"))
        ours = invocation(UNIT)
        wait_journal(ours, _LOADED_LINE, 60, "our unit's procdb load")
        loaded = loaded_count(texts(invocation_messages(ours)))
        if loaded != saved:
            raise CheckFailed(f"the loader's scheduler saved {saved}, {UNIT}.service loaded "
                              f"{loaded}")
        return (f"{started}; then systemctl start {UNIT}.service stopped {LOADER_UNIT}.service "
                f"(Conflicts=, Result {loader.get('Result')}): its scheduler saved {saved} and "
                f"detached before ours attached as MainPID {pid} (After=) and loaded {loaded}")

    def autopower(self) -> str:
        """--autopower under our unit: power-profiles-daemon's profile, set over D-Bus, switches
        the mode, and BPF packs wakeups under power-saver only."""
        # Its unit orders itself After=multi-user.target, which this layer's own boot-time start
        # job holds back: without ignore-dependencies the start waits for the layer to end.
        sh("systemctl", "start", "--job-mode=ignore-dependencies", f"{PPD_UNIT}.service",
           check=True, timeout=120)
        set_power_profile("balanced")
        Path("/etc/default/pandemonium").write_text('PANDEMONIUM_ARGS="-v --autopower"\n')
        pid, _ = run_ours("restart")
        inv = invocation(UNIT)
        # scx_utils names ppd's "balanced" balanced_performance; "unknown" would mean it read
        # neither ppd nor cpufreq.
        wait_journal(inv, r"autopower: power profile balanced_performance: mode auto \(unchanged\)",
                     60, "the first power-profile reading (ppd's balanced) in the journal")
        workers = [subprocess.Popen([sys.executable, "-c", PERIODIC])
                   for _ in range(2 * (os.cpu_count() or 1))]
        self.hogs.extend(workers)
        seen = []
        try:
            for profile, line, mode, pack in (
                    ("balanced", None, "auto", "0"),
                    ("power-saver", r"power profile powersave: mode auto -> powersave",
                     "powersave", "1"),
                    ("balanced", r"power profile balanced_performance: mode powersave -> auto",
                     "auto", "0")):
                if line:
                    before = len(matching(inv, line))
                    set_power_profile(profile)
                    wait_new(inv, line, before, 30, f"the switch to {mode} in the journal")
                out, rc, err = read_monitor(6)
                modes, packs, packed = packed_per_sample(monitor_blocks(out))
                seen.append(f"{profile}: mode {'/'.join(sorted(modes))}, knob_pack "
                            f"{'/'.join(sorted(packs))}, {packed} wakeups packed in 4 s")
                if modes != {mode} or packs != {pack}:
                    raise CheckFailed(f"under {profile} the stats say mode {modes}, knob_pack "
                                      f"{packs} (want {mode}, {pack}); so far: {seen}")
                if (packed > 0) != (pack == "1"):
                    raise CheckFailed(f"under {profile} BPF packed {packed} wakeups; so far: "
                                      f"{seen}")
        finally:
            for w in workers:
                w.kill()
            Path("/etc/default/pandemonium").write_text('PANDEMONIUM_ARGS="-v"\n')
        return (f"PANDEMONIUM_ARGS=--autopower, MainPID {pid}, {len(workers)} light periodic "
                f"workers; profiles set over D-Bus on {PPD_BUS[0]}: " + "; ".join(seen))

    def enable(self) -> str:
        sh("systemctl", "enable", f"{UNIT}.service", check=True)
        pid, ops = run_ours("start")
        enabled = sh("systemctl", "is-enabled", f"{UNIT}.service").stdout.strip()
        if enabled != "enabled":
            raise CheckFailed(f"is-enabled says {enabled!r}")
        return f"enabled and running (MainPID {pid}); the poweroff stops it and saves the procdb"

    # -- phase reboot ----------------------------------------------------------------------

    def boot_start(self) -> str:
        pid, ops = attached_unit(UNIT)
        if exe_of(pid) != BINARY:
            raise CheckFailed(f"MainPID {pid} runs {exe_of(pid)}")
        return f"started at boot by systemd (enabled): MainPID {pid}, ops {ops}"

    def procdb_reboot(self) -> str:
        inv = invocation(UNIT)
        wait_journal(inv, r"procdb \S+: loaded \d+ profiles", 60, "the procdb load at boot")
        loaded = loaded_count(texts(invocation_messages(inv)))
        previous = journal("--boot=-1")
        saved = saved_count(texts(previous))
        if not previous:
            raise CheckFailed("no journal of the previous boot (is it persistent?)")
        if not loaded or loaded != saved:
            raise CheckFailed(f"the previous boot last saved {saved} profiles; this boot loaded "
                              f"{loaded}")
        return f"the previous boot's last save had {saved} profiles; loaded {loaded} at boot"

    def clean_stop(self) -> str:
        sh("systemctl", "stop", f"{UNIT}.service", check=True, timeout=120)
        detached()
        p = show(UNIT, "Result", "ExecMainStatus", "ActiveState")
        if p.get("Result") != "success" or p.get("ExecMainStatus") != "0":
            raise CheckFailed(f"stop: {p}")
        return f"systemctl stop: exit status 0, {p.get('ActiveState')}, sched_ext disabled"

    # -- driver ----------------------------------------------------------------------------

    def run(self) -> int:
        names = PHASE_CHECKS[self.phase]
        try:
            for name in names:
                self.check(name, getattr(self, name.replace("-", "_")))
        except CheckFailed:
            self.diagnose()
        finally:
            for hog in self.hogs:
                hog.kill()
        return 0 if self.passed == names else 1

    def diagnose(self) -> None:
        for unit in (UNIT, SCX_UNIT, LOADER_UNIT, "polkit", PPD_UNIT):
            say(sh("systemctl", "status", "--no-pager", "-l", "-n", "40", f"{unit}.service").stdout)
        say(f"sched_ext: {sched_state()}")


def send_results(nonce: str, markers: dict[str, str], rc: int) -> None:
    """As guest_init.INIT does: the exit marker, then /results as base64 of a tar.gz."""
    say(f"{markers['exit']} {rc} {nonce}")
    try:
        Path("/proc/sys/kernel/printk").write_text("1\n")
    except OSError:
        pass
    if not any(RESULTS.iterdir()):
        return
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(RESULTS, arcname=".")
    data = buf.getvalue()
    lines = base64.encodebytes(data).decode()
    sys.stdout.write(f"{markers['begin']} {nonce}\n{lines}"
                     f"{markers['end']} {nonce} {hashlib.sha256(data).hexdigest()}\n")
    sys.stdout.flush()


def main() -> int:
    config = json.loads((PAYLOAD / "run.json").read_text())
    nonce, phase = config["nonce"], config["phase"]
    RESULTS.mkdir(exist_ok=True)
    for old in RESULTS.iterdir():  # the disk is shared by both boots
        if old.is_file():
            old.unlink()
    say(f"service {phase}: systemd {sh('systemctl', '--version').stdout.split()[1]}, "
        f"kernel {os.uname().release}")
    layer = Layer(nonce, phase)
    rc = layer.run()
    try:
        (RESULTS / f"journal-{phase}.txt").write_text(
            sh("journalctl", "--no-pager", "-b", "-o", "short-monotonic").stdout)
    except (OSError, subprocess.SubprocessError) as exc:
        say(f"service {phase}: could not save the journal: {exc}")
    send_results(nonce, config["markers"], rc)
    subprocess.run(["systemctl", "--no-block", "poweroff"])
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""Host tests of bench-soak's pure parts: shaping a run by its duration, parsing the guest's
window and event lines and the procdb file, and the verdicts."""

from __future__ import annotations

import re
import struct
import subprocess
import zlib

import pytest

from tools.pandemonium.common import PROJECT_ROOT
from tools.pandemonium.soak import plan
from tools.pandemonium.soak.parse import (ejection_context, ejections, loaded_profiles,
                                          parse_events, parse_windows, procdb_check)
from tools.pandemonium.soak.report import cpu_pct, markdown
from tools.pandemonium.soak.verdicts import judge, rss_growth

UNREG = '[33.9] sched_ext: BPF scheduler "pandemonium_5.0.0" disabled (unregistered from user space)'
STALL = '[44.3] sched_ext: BPF scheduler "pandemonium_5.0.0" disabled (runnable task stall)'


def _window(n: int, t: int, pid: int = 100, rss: int = 8000, mon: int = 20_000_000,
            wl: int = 30_000_000, ej: int = 0, cpu: int = 1000, phase: str = "build") -> str:
    return (f"window n={n} t={t} phase={phase} pid={pid} mon_ns={mon} p99_ns=900000 "
            f"probe_max_ns=2000000 wake_lat_max_ns={wl} rss_kb={rss} cpu_ms={cpu} procdb=40 "
            f"ejections={ej}")


def _procdb(entries: int, payload_tail: bytes = b"x" * 10) -> bytes:
    payload = bytes([entries]) + payload_tail if entries < 251 else (
        bytes([251]) + entries.to_bytes(2, "little") + payload_tail)
    return struct.pack("<8sIQI", b"PANDPDB\0", 1, len(payload), zlib.crc32(payload)) + payload


EVENTS = "\n".join([
    "soak: begin cpus=2 total_s=300 phase_s=60 window_s=50 windows=6 kernel=6.18.15",
    "soak: start pid=100 mode='' t=0 attach_s=9 procdb_load=no procdb yet; starting empty",
    "soak: phase build begin d=60 t=9",
    "soak: phase build end rc=0 t=70 sched_alive=1",
    "soak: stop signal=TERM pid=100 rc=0",
    "soak: start pid=200 mode='-m gaming' t=140 attach_s=8 procdb_load=loaded 31 profiles",
    "soak: stop signal=KILL pid=200 rc=137",
    "soak: start pid=300 mode='' t=200 attach_s=8 procdb_load=loaded 35 profiles",
    "soak: phase kill end rc=0 t=300 sched_alive=1",
    "soak: stop signal=INT pid=300 rc=0",
    "soak: start pid=400 mode='' t=320 attach_s=8 procdb_load=loaded 42 profiles",
    "soak: stop signal=INT pid=400 rc=0",
    "soak: end t=330 state=disabled",
])


def _windows(rss_last: int = 8100, mon_last: int = 20_000_000) -> list:
    return parse_windows("\n".join([
        _window(1, 50, pid=100, rss=7000),    # 50 s after its start: past warm-up
        _window(2, 100, pid=100, rss=7200),
        _window(3, 150, pid=200, rss=9000),
        _window(4, 200, pid=None, rss=0),      # restarting: sampled nothing
        _window(5, 250, pid=300, rss=8000),
        _window(6, 300, pid=300, rss=rss_last, mon=mon_last),
    ]).replace("pid=None", "pid=-").replace("rss_kb=0", "rss_kb=-"))


def test_phases_and_windows_scale_with_duration():
    assert plan.phase_seconds(300) == 60 and plan.phase_seconds(3600) == plan.MAX_PHASE_S
    assert plan.window_seconds(300) == 50 and plan.window_seconds(3600) == 60
    for d in (plan.MIN_DURATION_S, 300, 1000, 3600):
        assert plan.expected_windows(d) >= plan.MIN_WINDOWS
        # Every phase fits at least once.
        assert plan.phase_seconds(d) * len(plan.PHASES) <= d
    with pytest.raises(ValueError):
        plan.check_duration(plan.MIN_DURATION_S - 1)
    with pytest.raises(ValueError):
        plan.check_duration(plan.MAX_DURATION_S + 1)


def test_guest_script_has_every_phase_and_is_valid_sh():
    text = plan.SCRIPT.read_text()
    for name in plan.PHASES:
        assert f"ph_{name}()" in text, name
    assert 'PHASES="' + " ".join(plan.PHASES) + '"' in text
    assert subprocess.run(["sh", "-n", str(plan.SCRIPT)], cwd=PROJECT_ROOT).returncode == 0


def test_guest_script_uses_only_workloads_the_stress_driver_defines():
    from tools.pandemonium.stress import workloads as stress_wl

    used = set(re.findall(r"\b(wl_[a-z_]+)\b", plan.SCRIPT.read_text()))
    defined = set(re.findall(r"^(wl_[a-z_]+)\(\)", stress_wl.DRIVER.read_text(), re.M))
    assert used and used <= defined, used - defined


@pytest.mark.parametrize("args", [[], ["300", "60"], ["300", "0", "50"], ["x", "60", "50"]])
def test_guest_script_refuses_bad_usage(args):
    proc = subprocess.run(["sh", str(plan.SCRIPT), *args], capture_output=True, text=True)
    assert proc.returncode == 2 and "usage" in proc.stderr


def test_parse_windows_keeps_missing_values_as_none():
    ws = parse_windows("noise\n[ 12.0] " + _window(1, 50) + "\nwindow n=2 t=99 pid=- rss_kb=-\n")
    assert [w.n for w in ws] == [1, 2]
    assert ws[0].monitor_wait_ns == 20_000_000 and ws[0].rss_kb == 8000 and ws[0].procdb == 40
    assert ws[1].pid is None and ws[1].rss_kb is None and ws[1].monitor_wait_ns is None


def test_parse_events():
    ev = parse_events(EVENTS)
    assert [s.pid for s in ev.starts] == [100, 200, 300, 400]
    assert ev.starts[1].mode == "-m gaming" and ev.starts[1].load == "loaded 31 profiles"
    assert [(s.signal, s.rc) for s in ev.stops] == [("TERM", "0"), ("KILL", "137"),
                                                    ("INT", "0"), ("INT", "0")]
    assert ev.phases == [("build", "0"), ("kill", "0")] and ev.ended
    assert loaded_profiles("loaded 31 profiles (2 oldest dropped over capacity)") == 31
    assert loaded_profiles("procdb bad magic; moved it to /x and starting empty") is None


def test_ejections_ignore_our_own_unregister():
    assert ejections("\n".join([UNREG, "other", STALL])) == [STALL.strip()]


def test_procdb_check():
    assert procdb_check(_procdb(42)) == (42, "")
    assert procdb_check(_procdb(300)) == (300, "")
    data = bytearray(_procdb(42))
    data[-1] ^= 1
    assert procdb_check(bytes(data)) == (None, "CRC mismatch")
    assert procdb_check(_procdb(42)[:-3])[0] is None
    assert procdb_check(b"PANDPDB")[0] is None
    assert procdb_check(b"XANDPDB\0" + _procdb(4)[8:])[1] == "bad magic"


def _verdicts(windows, events=None, dmesg=(UNREG,), db=(42, "")):
    return {v.name: v for v in judge(windows, events or parse_events(EVENTS), ejections(
        "\n".join(dmesg)), db, 6)}


def test_all_pass():
    v = _verdicts(_windows())
    assert all(x.ok for x in v.values()), v


def test_an_ejection_fails():
    assert not _verdicts(_windows(), dmesg=(UNREG, STALL))["ejections"].ok
    ws = _windows()
    ws[-1].ejections = 1    # seen by the guest's count even if dmesg.txt is lost
    assert not _verdicts(ws, dmesg=())["ejections"].ok


def test_a_wait_at_the_watchdog_fails():
    assert not _verdicts(_windows(mon_last=5_000_000_000))["longest wait"].ok
    assert _verdicts(_windows(mon_last=4_999_000_000))["longest wait"].ok


def test_rss_growth_is_per_instance_after_warm_up():
    starts = {100: 0, 200: 140, 300: 200}
    growth = rss_growth(_windows(rss_last=9100), starts)
    # pid 200 has one sample and pid 300's first (t=250) is past warm-up: 2 instances.
    assert sorted((g[0], g[2] - g[1]) for g in growth) == [(100, 200), (300, 1100)]
    assert not _verdicts(_windows(rss_last=9100))["RSS growth"].ok
    assert _verdicts(_windows(rss_last=9000))["RSS growth"].ok
    # A sample inside the warm-up does not count as the start.
    late = rss_growth(parse_windows(_window(1, 40, rss=5000) + "\n" + _window(2, 90, rss=7000)
                                    + "\n" + _window(3, 140, rss=7100)), {100: 20})
    assert late == [(100, 7000, 7100, 50)]


def test_procdb_verdict():
    assert not _verdicts(_windows(), db=(None, "CRC mismatch"))["procdb intact"].ok
    assert not _verdicts(_windows(), db=None)["procdb intact"].ok
    assert not _verdicts(_windows(), db=(41, ""))["procdb intact"].ok   # last start loaded 42
    bad = parse_events(EVENTS.replace("procdb_load=loaded 35 profiles",
                                      "procdb_load=procdb CRC mismatch; moved it to /x"))
    assert not _verdicts(_windows(), events=bad)["procdb intact"].ok


def test_completed_verdict():
    assert not _verdicts(_windows()[:5])["completed"].ok
    hung = parse_events(EVENTS + "\nsoak: stop signal=TERM pid=500 rc=hang")
    assert not _verdicts(_windows(), events=hung)["completed"].ok
    unclean = parse_events(EVENTS.replace("signal=TERM pid=100 rc=0", "signal=TERM pid=100 rc=1"))
    assert not _verdicts(_windows(), events=unclean)["completed"].ok
    assert not _verdicts(_windows(), events=parse_events(EVENTS.replace("soak: end", "x")))[
        "completed"].ok
    every = {v.name: v for v in judge(_windows(), parse_events(EVENTS), [], (42, ""), 6,
                                      ["build", "kill"])}
    assert every["completed"].ok
    some = {v.name: v for v in judge(_windows(), parse_events(EVENTS), [], (42, ""), 6,
                                     list(plan.PHASES))}
    assert not some["completed"].ok and "gaming" in some["completed"].detail


def test_cpu_pct_only_within_one_instance():
    ws = parse_windows("\n".join([_window(1, 50, cpu=1000), _window(2, 100, cpu=3500),
                                  _window(3, 150, pid=7, cpu=100)]))
    assert cpu_pct(ws) == [None, 5.0, None]


def test_markdown_has_a_row_per_window_and_the_verdicts():
    ws = _windows()
    ev = parse_events(EVENTS)
    text = markdown(ws, ev, judge(ws, ev, [], (42, ""), 6), "t")
    assert text.count("\n| ") >= len(ws) + 5
    assert "| ejections | pass |" in text and "loaded 42 profiles" in text


def test_ejection_context_keeps_the_kernel_dump_and_the_daemon_last_words():
    dmesg = "\n".join([UNREG, STALL, "[44.4] scx_tick+0xa3/0xb0", "[44.5] later"])
    slog = "\n".join(["d/s: 9 rescue: 0 [HEAVY]", "pandemonium: EXIT: runnable task stall",
                      "d/s: 1", "@@ daemon gone before interactive: exit 1", "after"])
    ctx = ejection_context(dmesg, slog, lines=2)
    assert ctx == ["kernel:", f"    {STALL}", "    [44.4] scx_tick+0xa3/0xb0",
                   "daemon (daemon gone before interactive: exit 1):",
                   "    pandemonium: EXIT: runnable task stall"]
    assert ejection_context(UNREG, "") == []

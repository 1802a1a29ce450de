"""Host tests of bench-stress's pure parts: the guest result parsing, the verdicts, the report, the
argument checks, and that every workload the host names exists in the guest driver."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tools.pandemonium.common import PROJECT_ROOT
from tools.pandemonium.stress import workloads as wl
from tools.pandemonium.stress.report import (Run, markdown_table, pivot_table, summary,
                                            unexpected_count)
from tools.pandemonium.stress.workloads import is_progress
from tools.pandemonium.stress.results import (kernel_complaints, read_run, rescues_by_workload,
                                             split_kmsg)
from tools.pandemonium.vm import qemu
from tools.pandemonium.vm.console import ConsoleState

STALL = ('[44.3] sched_ext: BPF scheduler "pandemonium_0.1.0" disabled (runnable task stall)')
UNREG = ('[33.9] sched_ext: BPF scheduler "pandemonium_0.1.0" disabled '
         '(unregistered from user space)')
ENABLED = '[3.8] sched_ext: BPF scheduler "pandemonium_0.1.0" enabled'


def _cell(w: str, **kv: str) -> str:
    base = {"rc": "0", "monitor_rc": "0", "secs": "5", "sched_alive": "1", "sched_exit": "-",
            "prestop": "-", "state": "enabled"}
    base.update(kv)
    return "cell workload=" + w + " " + " ".join(f"{k}={v}" for k, v in base.items())


def _report(worst_ns: int) -> str:
    return json.dumps({"tool": "stress", "worst_gap_ns": worst_ns, "per_worker": []})


@pytest.fixture
def results(tmp_path):
    """A guest /results as driver.sh leaves it: hogs fine, pipe killed the scheduler, scxci
    failed the CI check after a stall ejection."""
    (tmp_path / "cells.txt").write_text("\n".join([
        _cell("hogs"),
        _cell("pipe", rc="1", sched_alive="0", sched_exit="1"),
        _cell("scxci", rc="1", sched_alive="0", sched_exit="1", prestop="0", state="disabled"),
        "final stop=none starts=2 state=disabled",
    ]) + "\n")
    (tmp_path / "dmesg.txt").write_text("\n".join([
        ENABLED, "[4.2] pandemonium-stress: begin hogs", "[5.0] random line",
        "[9.4] pandemonium-stress: end hogs", "[9.5] pandemonium-stress: begin pipe",
        "[10.0] WARNING: CPU: 1 PID: 7 at kernel/sched/ext.c:123", "[33.8] pandemonium-stress: "
        "begin scxci", UNREG, ENABLED, STALL]) + "\n")
    (tmp_path / "sched.log").write_text("\n".join([
        "pandemonium: scheduler attached", "d/s: 9 rescue: 4 [HEAVY]", "@@ begin hogs",
        "d/s: 10 idle: 0% rescue: 3 [HEAVY]", "d/s: 12 idle: 0% rescue: 5 [HEAVY]", "@@ end hogs",
        "@@ begin pipe", "d/s: 1 rescue: 0 [LIGHT]", "@@ end pipe"]) + "\n")
    (tmp_path / "hogs.monitor.json").write_text(_report(16_000_000))
    (tmp_path / "hogs.hogs.json").write_text(_report(216_000_000))
    (tmp_path / "hogs.other.json").write_text(_report(12_000_000))
    (tmp_path / "pipe.monitor.json").write_text("")  # killed before it printed
    return tmp_path


def test_complaints_are_stalls_error_disables_and_warnings_not_our_own_stop():
    rcu = "[111.1] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:"
    lines = [ENABLED, UNREG, STALL, "[1.0] BUG: unable to handle page fault", "[2.0] ordinary",
             rcu, "[111.2] rcu: \tTasks blocked on level-0 rcu_node (CPUs 0-1): P9440/1:b..l"]
    assert kernel_complaints(lines) == [STALL, "[1.0] BUG: unable to handle page fault", rcu]


def test_kernel_log_is_split_at_the_begin_markers():
    segs = split_kmsg(ENABLED + "\n[1] pandemonium-stress: begin a\nx\n"
                      "[2] pandemonium-stress: begin b\ny\nz\n", ["a", "b", "c"])
    assert segs == {"a": [ENABLED, "x"], "b": ["y", "z"], "c": []}


def test_rescues_are_summed_between_the_markers_only():
    assert rescues_by_workload("d/s: 1 rescue: 9\n@@ begin a\nd/s: 1 rescue: 2\nfoo rescue: 50\n"
                               "d/s: 2 rescue: 3\n@@ end a\nd/s: 1 rescue: 7\n") == {"a": 5}


def test_a_good_cell_completes_with_its_waits_and_rescues(results):
    cells, problems, _ = read_run(results, "6.18", 2, "adaptive", ["hogs", "pipe", "scxci"], 5, 0)
    hogs = cells[0]
    assert (hogs.completed, hogs.unexpected) == (True, [])
    assert (hogs.monitor_wait_ms, hogs.load_wait_ms, hogs.rescues) == (16.0, 216.0, 8)
    assert problems == []


def test_a_dead_scheduler_and_a_failed_ci_check_are_unexpected(results):
    cells, _, _ = read_run(results, "6.18", 2, "adaptive", ["hogs", "pipe", "scxci"], 5, 0)
    pipe, scxci = cells[1], cells[2]
    assert not pipe.completed
    assert pipe.unexpected[0] == "scheduler exited during the workload (status 1)"
    assert any("WARNING: CPU: 1" in u for u in pipe.unexpected)
    assert pipe.monitor_wait_ms is None and pipe.load_wait_ms is None
    assert scxci.unexpected == ["scx CI check: exit status 1 after SIGTERM", f"kernel: {STALL}"]


def test_workloads_the_guest_never_reached_and_hangs_are_counted(results):
    (results / "cells.txt").write_text(_cell("hogs", prestop="hang") + "\nfinal stop=hang\n")
    cells, problems, _ = read_run(results, "6.18", 2, "adaptive", ["hogs", "pipe"], 5, 124)
    assert cells[0].unexpected == ["scheduler hung on exit (SIGINT)"]
    assert cells[1].unexpected[0] == "not run: the guest ended before this workload"
    assert "WARNING: CPU: 1" in cells[1].unexpected[1]
    assert problems == ["scheduler hung on the final stop (SIGINT)",
                        "guest command exit status 124"]
    run = Run("6.18", 2, "adaptive", 124, 60.0, cells, problems)
    assert unexpected_count([run]) == 5


def test_no_results_at_all_is_a_failed_run_not_a_crash():
    cells, problems, _ = read_run(None, "7.3", 4, "no-adaptive", ["hogs"], 5, 125)
    assert cells[0].unexpected and not cells[0].completed
    assert problems == ["guest command exit status 125"]


def test_a_wedged_guest_is_read_from_its_console_log(tmp_path):
    console = tmp_path / "vm-console.log"
    console.write_text("\n".join([
        "[4.2] pandemonium-stress: begin hogs",
        _cell("hogs", mon_ns="17000000", load_ns="216000000", rescues="42",
              mem_avail_kb="2048000"),
        "[9.5] pandemonium-stress: begin threads", STALL,
        "timeout: vfork: Cannot allocate memory"]) + "\n")
    cells, problems, _ = read_run(None, "6.18", 2, "adaptive", ["hogs", "threads"], 5, 125,
                               console=console)
    hogs, threads = cells
    assert (hogs.completed, hogs.unexpected) == (True, [])
    assert (hogs.monitor_wait_ms, hogs.load_wait_ms, hogs.mem_avail_mb) == (17.0, 216.0, 2000)
    assert hogs.rescues == 42
    assert threads.unexpected == ["not run: the guest ended before this workload",
                                  f"kernel: {STALL}"]
    assert problems == ["guest command exit status 125"]


def test_report_table_and_summary(results):
    cells, problems, _ = read_run(results, "6.18", 2, "adaptive", ["hogs", "pipe", "scxci"], 5, 0)
    runs = [Run("6.18", 2, "adaptive", 0, 100.0, cells, problems)]
    table = markdown_table(runs).splitlines()
    assert table[0].startswith("| kernel | vCPUs | mode | workload |")
    assert len(table) == 2 + 3
    assert "| hogs | yes | 0 | - | 16 | 216 | 8 |" in table[2]
    assert "| pipe | NO | 2 | - | - | - | 0 |" in table[3]
    text = summary(runs)
    assert text.splitlines()[0] == "unexpected exits: 4"
    assert "incomplete workloads: 2" in text
    assert "kernel limits: 0" in text
    pivot = pivot_table(runs)
    assert "| hogs | 16 |" in pivot and "| pipe | FAIL |" in pivot and "| scxci | FAIL |" in pivot


def _rt_run(tmp_path, ext_server: str, wedge: bool = False):
    """hogs fine, then rt-hog ejected by a stall; the guest wedges in stressng-mutex if asked."""
    lines = [f"kernel release=6.18 ext_server={ext_server} rt_runtime_us=950000",
             "[4.2] pandemonium-stress: begin hogs", _cell("hogs"),
             "[9.5] pandemonium-stress: begin rt-hog", STALL,
             _cell("rt-hog", rc="1", sched_alive="0", sched_exit="1"),
             "[20.0] pandemonium-stress: begin stressng-mutex"]
    if not wedge:
        lines += [_cell("stressng-mutex"), "final stop=0 starts=2 state=disabled"]
    console = tmp_path / "vm-console.log"
    console.write_text("\n".join(lines) + "\n")
    return read_run(None, "6.18", 2, "adaptive", ["hogs", "rt-hog", "stressng-mutex"], 5,
                    125 if wedge else 0, console=console, rt_workloads=wl.RT_WORKLOADS,
                    host_problems=["the guest wedged"] if wedge else [])


def test_rt_starvation_without_the_ext_server_is_a_kernel_limit(tmp_path):
    cells, problems, limits = _rt_run(tmp_path, "0")
    hogs, rt, mutex = cells
    assert rt.unexpected == [] and rt.kernel_limit[1:] == [
        "scheduler exited during the workload (status 1)", f"kernel: {STALL}"]
    assert hogs.kernel_limit == [] and mutex.kernel_limit == [] and mutex.completed
    run = Run("6.18", 2, "adaptive", 0, 60.0, cells, problems, kernel_limits=limits)
    assert unexpected_count([run]) == 0 and problems == [] and limits == []
    text = summary([run])
    assert "kernel limits: 1 (RT starvation without the sched_ext DL server: 6.18/2/adaptive/rt-hog)" in text
    assert "incomplete workloads: 0" in text
    assert "| rt-hog | NO | 0 | yes |" in markdown_table([run])
    pivot = pivot_table([run, Run("7.3+deb", 4, "no-adaptive", 0, 60.0, cells[:1], [])])
    assert pivot.splitlines()[0] == "| workload | 6.18 2c adaptive | 7.3 4c no-adaptive |"
    assert "| rt-hog | KL | - |" in pivot and "| hogs | - | - |" in pivot


def test_a_final_stop_reporting_the_last_workloads_kernel_limit_is_one(tmp_path):
    """stressng-mutex ejected the scheduler (RT starvation, no ext DL server) and ended; the
    final stop then exits 1, the ejection reported once more: a kernel limit, not unexpected."""
    lines = ["kernel release=6.18 ext_server=0 rt_runtime_us=950000",
             "[4.2] pandemonium-stress: begin hogs", _cell("hogs"),
             "[20.0] pandemonium-stress: begin stressng-mutex", STALL,
             _cell("stressng-mutex", sched_alive="1"), "final stop=1 starts=1 state=disabled"]
    console = tmp_path / "vm-console.log"
    console.write_text("\n".join(lines) + "\n")
    cells, problems, limits = read_run(None, "6.18", 4, "no-adaptive", ["hogs", "stressng-mutex"],
                                       5, 0, console=console, rt_workloads=wl.RT_WORKLOADS)
    assert cells[1].kernel_limit and problems == []
    assert limits == ["final stop: exit status 1 (after stressng-mutex)"]
    run = Run("6.18", 4, "no-adaptive", 0, 60.0, cells, problems, kernel_limits=limits)
    assert unexpected_count([run]) == 0
    # The same exit after a workload that is no kernel limit stays unexpected.
    console.write_text("\n".join(lines[:3] + ["final stop=1"]) + "\n")
    _, problems, limits = read_run(None, "6.18", 4, "no-adaptive", ["hogs"], 5, 0,
                                   console=console, rt_workloads=wl.RT_WORKLOADS)
    assert problems == ["final stop: exit status 1"] and limits == []


def test_rt_starvation_with_the_ext_server_stays_unexpected(tmp_path):
    cells, problems, limits = _rt_run(tmp_path, "1")
    assert len(cells[1].unexpected) == 2 and cells[1].kernel_limit == []
    assert unexpected_count([Run("7.3", 2, "adaptive", 0, 60.0, cells, problems)]) == 2


def test_a_stall_in_a_workload_without_rt_tasks_stays_unexpected(tmp_path):
    console = tmp_path / "vm-console.log"
    console.write_text("\n".join(["kernel ext_server=0", "[1.0] pandemonium-stress: begin hogs",
                                   STALL, _cell("hogs", rc="1"), "final stop=0"]) + "\n")
    cells, _, _ = read_run(None, "6.18", 2, "adaptive", ["hogs"], 5, 0, console=console,
                           rt_workloads=wl.RT_WORKLOADS)
    assert cells[0].unexpected == [f"kernel: {STALL}"] and cells[0].kernel_limit == []


def test_a_guest_wedged_in_an_rt_workload_is_a_kernel_limit_run(tmp_path):
    cells, problems, limits = _rt_run(tmp_path, "0", wedge=True)
    mutex = cells[2]
    assert mutex.unexpected == [] and mutex.kernel_limit[1] == (
        "not run: the guest ended before this workload")
    assert problems == []
    assert limits == ["guest command exit status 125 (in stressng-mutex)",
                      "the guest wedged (in stressng-mutex)"]
    run = Run("6.18", 2, "adaptive", 125, 60.0, cells, problems, kernel_limits=limits)
    assert unexpected_count([run]) == 0


def test_every_workload_has_a_guest_function():
    driver = wl.DRIVER.read_text()
    defined = set(re.findall(r"^wl_(\w+)\(\)", driver, re.M))
    assert {w.replace("-", "_") for w in wl.WORKLOADS} == defined


@pytest.mark.parametrize("spec,error", [
    ("", "empty"), ("hogs,nope", "unknown nope"),
])
def test_lists_are_checked(spec, error):
    with pytest.raises(ValueError, match=error):
        wl.parse_list(spec, list(wl.WORKLOADS), "--workloads")


@pytest.mark.parametrize("spec", ["0", "x", "2,65", "-1"])
def test_cpu_counts_are_checked(spec):
    with pytest.raises(ValueError, match="--cpus"):
        wl.parse_cpus(spec)


def test_cli_help_and_bad_arguments():
    tool = [sys.executable, str(PROJECT_ROOT / "pandemonium.py"), "bench-stress"]
    ok = subprocess.run(tool + ["--help"], capture_output=True, text=True)
    assert ok.returncode == 0 and "scxci" in ok.stdout and "--quick" in ok.stdout
    for args, msg in ([["--workloads", "bogus"], "unknown bogus"],
                      [["--duration", "0"], "--duration"], [["--cpus", "two"], "--cpus"]):
        bad = subprocess.run(tool + args, capture_output=True, text=True)
        assert bad.returncode == 2, bad.stderr
        assert msg in bad.stderr and "Traceback" not in bad.stderr


def progress_count(text: str) -> int:
    return sum(1 for line in text.splitlines() if is_progress(line))


def test_progress_lines_are_counted():
    assert progress_count("stress-driver: begin a\n[1] x\ncell workload=a rc=0\nfoo\n") == 2


def _fake_guest(tmp_path, script: str):
    """Boots a stand-in for QEMU (a shell script printing a console) as bench-stress boots the
    guest: driver progress lines are progress, 0.3 s without one stops it."""
    fake = tmp_path / "fake-qemu"
    fake.write_text("#!/bin/sh\n" + script)
    fake.chmod(0o755)
    return qemu.boot([str(fake)], ConsoleState("n0nce"), timeout_s=30,
                     log_path=tmp_path / "vm-console.log", echo=False, on_line=is_progress,
                     stall_s=0.3)


def test_the_watch_fires_only_without_progress(tmp_path):
    quiet = _fake_guest(tmp_path, "echo 'stress-driver: begin a'\nexec sleep 20\n")
    assert quiet.stalled and quiet.duration_s < 10
    assert "no progress" in quiet.stop_reason
    busy = _fake_guest(tmp_path, "for i in 0 1 2 3 4 5 6 7; do\n  echo \"cell workload=w$i rc=0\"\n"
                                 "  echo 'kernel chatter is no progress'\n  sleep 0.1\ndone\n")
    assert not busy.stalled and busy.stop_reason is None
    assert progress_count((tmp_path / "vm-console.log").read_text()) == 8

"""`./pandemonium.py test --sched-args`: the scheduler arguments reach every gate layer in the
guest as PANDEMONIUM_GATE_ARGS (tests/gate_support/mod.rs reads it), and bad ones are refused on
the host before a VM boots."""

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

import tools.pandemonium.vm
from tools.pandemonium.common import PandemoniumError
from tools.pandemonium import gate_runner

ROOT = Path(__file__).resolve().parent.parent


def test_sched_args_are_normalised_and_checked():
    assert gate_runner.parse_sched_args(None) == ""
    assert gate_runner.parse_sched_args("") == ""
    assert gate_runner.parse_sched_args("--no-adaptive") == "--no-adaptive"
    assert gate_runner.parse_sched_args("  --compositor  foo  -v ") == "--compositor foo -v"
    with pytest.raises(PandemoniumError, match="'probe' is not an option"):
        gate_runner.parse_sched_args("probe --duration-s 1")


def _fake_vm(monkeypatch, seen):
    def run_in_vm(cmd, **kw):
        seen.append((cmd, kw.get("env")))
        return SimpleNamespace(kernel_version="6.18", rc=0, accel_used="tcg", duration_s=1.0,
                               log_path="/nonexistent", out_dir=None)
    monkeypatch.setattr(tools.pandemonium.vm, "run_in_vm", run_in_vm)
    monkeypatch.setattr(gate_runner, "listed_tests", lambda gate: {"load", "classify"})


def test_run_gate_hands_the_args_to_the_guest(monkeypatch):
    seen = []
    _fake_vm(monkeypatch, seen)
    runs = gate_runner.run_gate(Path("/gate"), ["load", "classify"], [2, 4], "default", "tcg",
                                "--no-adaptive")
    assert [r.passed for r in runs] == [True, True]
    assert [env for _, env in seen] == [{"PANDEMONIUM_GATE_ARGS": "--no-adaptive"}] * 2
    assert all(cmd[-2:] == ["load", "classify"] for cmd, _ in seen)


def test_without_args_the_guest_gets_no_gate_env(monkeypatch):
    seen = []
    _fake_vm(monkeypatch, seen)
    gate_runner.run_gate(Path("/gate"), ["load"], [2], "default", "tcg")
    assert seen[0][1] is None


def test_full_gate_at_several_counts_runs_the_unsized_steps_once_beside_the_last(monkeypatch):
    seen, loader, order = [], [], []

    def run_in_vm(cmd, **kw):
        steps = (kw.get("env") or {}).get("PANDEMONIUM_GATE_STEPS")
        order.append(("vm", kw["cpus"], steps, kw["echo"]))
        seen.append((cmd, kw.get("env")))
        return SimpleNamespace(kernel_version="6.18", rc=0, accel_used="tcg", duration_s=1.0,
                               log_path="/nonexistent", out_dir=f"/out/{kw['cpus']}-{steps}")
    monkeypatch.setattr(tools.pandemonium.vm, "run_in_vm", run_in_vm)
    monkeypatch.setattr(gate_runner, "listed_tests", lambda gate: {"full_gate"})
    checked = []
    monkeypatch.setattr(gate_runner, "check_status_captures",
                        lambda out_dir: checked.append(out_dir) or [])
    monkeypatch.setattr(gate_runner, "start_loader_install", lambda: loader.append(1) or "pending")
    import tools.pandemonium.vm.service as service

    def prepare(kernel, accel, loader):
        # Prepared (the shared caches written) before the last count's VM boots.
        order.append(("prepare", loader))
        return "prep"

    def boot(prep, cpus, echo=True):
        order.append(("service", cpus, prep, echo))
        return SimpleNamespace(phases=[], rc=0, out_dir=None, kernel="6.18", accel="tcg",
                               duration_s=1.0)
    monkeypatch.setattr(service, "prepare_service_layer", prepare)
    monkeypatch.setattr(service, "boot_service_layer", boot)
    monkeypatch.setattr(gate_runner, "run_service", lambda *a: pytest.fail("run after the gate"))
    runs = gate_runner.run_gate(Path("/gate"), ["full_gate"], [2, 4], "default", "tcg")
    # Sized steps at 2 and at 4 vCPUs with their console shown; the service layer and the
    # unsized steps at the first count's size in one thread beside the 4 vCPU boot, quietly.
    assert order[0] == ("vm", 2, "sized", True) and order[1] == ("prepare", "pending")
    assert ("vm", 4, "sized", True) in order[2:]
    beside = [o for o in order[2:] if o != ("vm", 4, "sized", True)]
    assert beside == [("service", 2, "prep", False), ("vm", 2, "unsized", False)]
    assert [(r.cpus, r.layers) for r in runs] == [(2, ["full_gate"]), (4, ["full_gate"]),
                                                  (2, ["service"]), (2, ["full_gate"])]
    # The status layer's captures are read where it ran: in the unsized boot only.
    assert checked == ["/out/2-unsized"] and all(r.passed for r in runs) and loader == [1]


def test_a_failed_unsized_boot_says_where_its_quiet_log_is(monkeypatch):
    def run_in_vm(cmd, **kw):
        return SimpleNamespace(kernel_version="6.18", rc=101, accel_used="tcg", duration_s=1.0,
                               log_path="/logs/vm-console.log", out_dir=None)
    monkeypatch.setattr(tools.pandemonium.vm, "run_in_vm", run_in_vm)
    monkeypatch.setattr(gate_runner, "failure_in_log", lambda path: ["full_gate passed up to x"])
    monkeypatch.setattr(gate_runner, "skipped_in_log", lambda path: [])
    monkeypatch.setattr(gate_runner, "layer_times_in_log", lambda path: [])
    run = gate_runner.gate_boot(Path("/gate"), ["full_gate"], 2, "default", "tcg", "", None,
                                steps="unsized", echo=False)
    assert not run.passed
    assert run.failure == ["full_gate passed up to x", "log: /logs/vm-console.log"]


def test_with_one_vcpu_count_the_service_layer_runs_after_the_gate(monkeypatch):
    seen, order = [], []
    _fake_vm(monkeypatch, seen)
    monkeypatch.setattr(gate_runner, "listed_tests", lambda gate: {"full_gate"})
    monkeypatch.setattr(gate_runner, "check_status_captures", lambda out_dir: [])
    monkeypatch.setattr(gate_runner, "start_loader_install", lambda: "pending")
    monkeypatch.setattr(gate_runner, "start_beside", lambda *a: pytest.fail("nothing beside"))
    monkeypatch.setattr(gate_runner, "run_service",
                        lambda cpus, kernel, accel, extra, pending: order.append(len(seen))
                        or gate_runner.GateRun(cpus, kernel, ["service"], 1, accel, 1.0))
    runs = gate_runner.run_gate(Path("/gate"), ["full_gate"], [2], "default", "tcg")
    assert order == [1] and [r.passed for r in runs] == [True, False]


def test_full_gate_marks_each_step_sized_or_not():
    """Every full_gate step says whether the CPU count changes its outcome: a step added without
    the column would not compile, and the ones rerun at 4 vCPUs are the README's list."""
    src = (ROOT / "tests" / "gate.rs").read_text()
    body = src[src.index("fn full_gate()"):]
    body = body[:body.index("\n}\n")]
    import re
    sized = re.findall(r'\("(\w+)", true,', body)
    assert sized == ["load", "topology", "hybrid", "trust", "admin", "powersave", "latency",
                     "responsiveness", "interactive", "hotplug", "contention", "starvation",
                     "wait_bound"]
    readme = (ROOT / "README.md").read_text()
    assert "(" + ", ".join(sized[:-1]) in " ".join(readme.split())


def _cli(*args):
    return subprocess.run([sys.executable, str(ROOT / "pandemonium.py"), *args],
                          capture_output=True, text=True, cwd=ROOT)


def test_test_help_documents_sched_args():
    out = _cli("test", "--help")
    assert out.returncode == 0
    assert "--sched-args" in out.stdout and "--no-adaptive" in out.stdout


def test_a_bad_sched_args_value_fails_before_any_build():
    out = _cli("test", "--no-host", "--sched-args", "probe")
    assert out.returncode != 0
    assert "is not an option" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr


def test_start_beside_builds_first_and_boots_in_a_thread(monkeypatch):
    """What writes the shared caches runs before start_beside returns (so before the gate's VM
    starts); the boots run in another thread and their result comes back through the join."""
    import threading
    import tools.pandemonium.vm.service as service

    events, release = [], threading.Event()
    monkeypatch.setattr(service, "prepare_service_layer",
                        lambda kernel, accel, loader: events.append(
                            ("prepare", threading.current_thread().name, loader)) or "prep")

    def boot(prep, cpus, echo):
        release.wait(5)
        events.append(("boot", threading.current_thread().name, prep, cpus, echo))
        return SimpleNamespace(kernel="6.18", rc=0, accel="tcg-single", duration_s=2.0,
                               phases=[], out_dir=None)
    monkeypatch.setattr(service, "boot_service_layer", boot)
    join = gate_runner.start_beside(2, "default", "tcg-single", "", "pending", ["service"], None)
    assert events == [("prepare", threading.current_thread().name, "pending")]
    release.set()
    [run] = join()
    assert run.layers == ["service"] and run.passed and run.cpus == 2
    name, prep, cpus, echo = events[1][1:]
    assert name != threading.current_thread().name and (prep, cpus, echo) == ("prep", 2, False)


def test_gate_topology_reaches_every_vm_and_is_checked_first(monkeypatch, capsys):
    from tools.pandemonium import cli
    from tools.pandemonium.vm.qemu import parse_topology

    seen = []

    def run_in_vm(cmd, **kw):
        seen.append(kw.get("topology"))
        return SimpleNamespace(kernel_version="6.18", rc=0, accel_used="tcg", duration_s=1.0,
                               log_path="/nonexistent", out_dir=None)
    monkeypatch.setattr(tools.pandemonium.vm, "run_in_vm", run_in_vm)
    monkeypatch.setattr(gate_runner, "listed_tests", lambda gate: {"load"})
    topo = parse_topology("nodes=2,threads=2")
    gate_runner.run_gate(Path("/gate"), ["load"], [8, 32], "default", "tcg", "", topo)
    assert seen == [topo, topo]
    assert cli.gate_topology(None, [2]) is None
    assert cli.gate_topology("nodes=2,threads=2", [8, 32]) == topo
    with pytest.raises(SystemExit):
        cli.gate_topology("nodes=4,threads=2", [2, 64])  # 2 vCPUs do not split into 4 nodes
    assert "do not split" in capsys.readouterr().err

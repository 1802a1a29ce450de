"""Host tests of the gate runner's pure parts: layer selection and skip reporting."""

import re
import subprocess
import sys

import pytest

from tools.pandemonium.common import PROJECT_ROOT, PandemoniumError
from tools.pandemonium.gate_runner import (GATE_SOURCE, GUEST_COOPBENCH, GUEST_GATE,
                                           HOST_LAYERS, _service_gate_run, failure_in_log,
                                           guest_files, host_layers, known_layers,
                                           layer_times_in_log, parse_layers, skipped_in_log,
                                           slowest_line)


def test_default_is_full_gate():
    assert parse_layers(None) == ["full_gate"]
    assert parse_layers("") == ["full_gate"]


def test_layers_are_split_and_checked():
    assert parse_layers("load, hotplug") == ["load", "hotplug"]
    with pytest.raises(PandemoniumError, match="unknown gate layer"):
        parse_layers("load,nonsense")


def test_skips_are_read_from_the_console_log(tmp_path):
    log = tmp_path / "vm-console.log"
    log.write_text("gate full_gate: load passed\n"
                   "GATE-SKIP contention: not in full_gate yet (run it with --gate contention)\n"
                   "GATE-SKIP hotplug: not in full_gate yet\n")
    assert skipped_in_log(log) == ["contention", "hotplug"]
    assert skipped_in_log(tmp_path / "missing.log") == []


def test_a_failure_names_the_last_layer_passed_and_the_panic(tmp_path):
    log = tmp_path / "vm-console.log"
    log.write_text("gate full_gate: load passed\ngate full_gate: hybrid passed\n"
                   "[   80.1] sched_ext: BPF scheduler \"pandemonium\" disabled\n"
                   "thread 'full_gate' (155) panicked at tests/gate_support/gaming.rs:75:5:\n"
                   "assertion `left == right` failed: --mode gaming: tiers\n"
                   "  left: (Some(Batch), Some(Batch))\n"
                   " right: (Some(LatCritical), Some(Batch))\n"
                   "note: run with `RUST_BACKTRACE=1`\n")
    assert failure_in_log(log) == [
        "full_gate passed up to hybrid",
        "thread 'full_gate' (155) panicked at tests/gate_support/gaming.rs:75:5:",
        "assertion `left == right` failed: --mode gaming: tiers",
        "left: (Some(Batch), Some(Batch))",
        "right: (Some(LatCritical), Some(Batch))",
    ]
    assert failure_in_log(tmp_path / "missing.log") == []


def test_a_failed_service_run_names_its_problems_in_the_summary(tmp_path):
    from tools.pandemonium.vm.service import PhaseResult, ServiceRun
    run = ServiceRun(rc=1, kernel="6.18", accel="tcg-single", duration_s=145.9,
                     image=tmp_path / "img", out_dir=tmp_path)
    run.phases.append(PhaseResult("main", 1, problems=["main: monitor: FAILED: no output"]))
    gate = _service_gate_run(2, run)
    assert not gate.passed
    assert gate.failure == ["main: monitor: FAILED: no output", f"logs in {tmp_path}"]
    run.rc, run.phases = 0, [PhaseResult("main", 0)]
    assert _service_gate_run(2, run).failure == []


def test_step_times_are_read_and_the_slowest_named(tmp_path):
    log = tmp_path / "vm-console.log"
    log.write_text("gate full_gate: load passed in 12.5 s\n"
                   "[   80.1] gate full_gate: not a step line passed in 9 s\n"
                   "gate full_gate: trust passed in 140.2 s\n"
                   "gate full_gate: errors passed in 3.0 s\n")
    times = layer_times_in_log(log)
    assert times == [("load", 12.5), ("trust", 140.2), ("errors", 3.0)]
    assert slowest_line(times, shown=2) == "slowest: trust 140 s, load 12 s (of 156 s in 3 steps)"
    assert layer_times_in_log(tmp_path / "missing.log") == []


def test_the_layers_are_the_gate_tests(tmp_path):
    src = tmp_path / "gate.rs"
    src.write_text("fn layer_load() {}\n#[test]\n#[ignore = \"needs root\"]\nfn full_gate() {}\n"
                   "#[test]\n#[ignore = \"needs root\"]\nfn load() {\n    layer_load();\n}\n"
                   "#[test]\nfn classify() {}\n")
    assert known_layers(src) == ["classify", "load", "service", "full_gate"]
    layers = known_layers()
    assert len(layers) == GATE_SOURCE.read_text().splitlines().count("#[test]") + len(HOST_LAYERS)
    assert layers[-1] == "full_gate"
    assert {"load", "hotplug", "kill9", "procdb_faults", "interactive", "status", "trust",
            "admin", "service"} <= set(layers)


def test_the_service_layer_runs_when_named_or_in_full_gate():
    assert parse_layers("service") == ["service"]
    assert host_layers(["service"]) == ["service"]
    assert host_layers(["full_gate"]) == ["service"]
    assert host_layers(["load", "classify"]) == []
    # Not a #[test] of the gate binary: the guest's libtest would not find it.
    assert "fn service(" not in GATE_SOURCE.read_text()


def test_coopbench_goes_into_the_guest_only_for_the_layers_that_run_it(monkeypatch, tmp_path):
    from tools.pandemonium.bench import driver
    monkeypatch.setattr(driver, "coopbench_binary", lambda: tmp_path / "coopbench")
    gate = tmp_path / "gate"
    assert guest_files(gate, ["load"]) == [(str(gate), GUEST_GATE)]
    assert guest_files(gate, ["load", "coop"])[1] == (str(tmp_path / "coopbench"), GUEST_COOPBENCH)
    assert len(guest_files(gate, ["full_gate"])) == 1  # full_gate does not run coop yet
    assert f'"{GUEST_COOPBENCH}"' in (PROJECT_ROOT / "tests/gate_support/coop.rs").read_text()


def test_test_help_lists_every_layer():
    out = subprocess.run([sys.executable, str(PROJECT_ROOT / "pandemonium.py"), "test", "--help"],
                         capture_output=True, text=True, cwd=PROJECT_ROOT)
    assert out.returncode == 0, out.stderr
    listed = re.search(r"run only these gate layers \(([^)]*)\)", " ".join(out.stdout.split()))
    assert listed and listed.group(1).split(", ") == known_layers()

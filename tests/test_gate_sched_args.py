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
                               log_path="/nonexistent")
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

"""Host tests of the gate runner's pure parts: layer selection and skip reporting."""

import pytest

from pandemonium_common import PandemoniumError
from tools.pandemonium.gate_runner import parse_layers, skipped_in_log


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

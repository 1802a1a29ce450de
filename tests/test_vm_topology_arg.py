"""`./pandemonium.py vm --topology`: the layout reaches the guest's QEMU command, and one the
--cpus or --mem count cannot split into is refused before a VM boots."""

from types import SimpleNamespace

import pytest

import tools.pandemonium.vm
from tools.pandemonium import cli


def _fake_vm(monkeypatch):
    seen = []

    def run_in_vm(cmd, **kw):
        seen.append(kw)
        return SimpleNamespace(rc=0)
    monkeypatch.setattr(tools.pandemonium.vm, "run_in_vm", run_in_vm)
    return seen


def test_the_topology_reaches_the_vm(monkeypatch):
    seen = _fake_vm(monkeypatch)
    assert cli.main(["vm", "--cpus", "8", "--topology", "nodes=2,threads=2", "--", "true"]) == 0
    topo = seen[0]["topology"]
    assert (topo.nodes, topo.threads) == (2, 2)
    assert "8,sockets=2,cores=2,threads=2" in topo.qemu_args(8, 2048)
    assert cli.main(["vm", "--", "true"]) == 0
    assert seen[1]["topology"] is None


@pytest.mark.parametrize("argv, msg", [
    (["--cpus", "6", "--topology", "nodes=4"], "do not split"),
    (["--cpus", "8", "--topology", "nodes=4", "--mem", "256"], "under 128 MB per node"),
    (["--topology", "sockets=2"], "expected nodes=N"),
])
def test_a_bad_topology_is_refused_before_a_boot(monkeypatch, capsys, argv, msg):
    seen = _fake_vm(monkeypatch)
    with pytest.raises(SystemExit) as exc:
        cli.main(["vm", *argv, "--", "true"])
    assert exc.value.code == 2
    assert msg in capsys.readouterr().err
    assert seen == []

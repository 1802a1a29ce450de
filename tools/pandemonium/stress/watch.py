"""A host-side watchdog for one bench-stress guest. The guest driver bounds every workload itself,
but a guest whose user space is starved (an RCU stall, RT tasks on every CPU) runs nothing, not
even its own timeouts, and would sit until the VM's overall timeout. This watches the console
log for the driver's progress lines and stops the guest's QEMU once none has come for too long,
so the cells already done are kept (read back from the console) and the matrix moves on."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from pandemonium_common import log

PROGRESS = ("stress-driver: ", "cell workload=")


def progress_count(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.startswith(PROGRESS))


def own_qemu_children() -> list[int]:
    """PIDs of QEMU processes whose parent is this process (the harness starts QEMU directly)."""
    me, out = os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, _, rest = stat.rpartition(")")
        fields = rest.split()
        if "qemu-system" in comm and len(fields) > 1 and int(fields[1]) == me:
            out.append(int(entry.name))
    return out


class ProgressWatch:
    """Stops this process's QEMU children when `console` shows no driver progress for
    `stall_s` seconds. Use as a context manager around run_in_vm; `fired` tells if it did."""

    def __init__(self, console: Path, stall_s: float, poll_s: float = 5.0) -> None:
        self.console, self.stall_s, self.poll_s = console, stall_s, poll_s
        self.fired = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProgressWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        seen, since = -1, time.monotonic()
        while not self._stop.wait(self.poll_s):
            try:
                count = progress_count(self.console.read_text(errors="replace"))
            except OSError:
                count = seen
            if count != seen:
                seen, since = count, time.monotonic()
            elif time.monotonic() - since > self.stall_s:
                pids = own_qemu_children()
                log.error("bench-stress: no progress from the guest for %.0f s; stopping QEMU "
                          "(pids %s)", self.stall_s, pids)
                for pid in pids:
                    os.kill(pid, signal.SIGTERM)
                self.fired = True
                return

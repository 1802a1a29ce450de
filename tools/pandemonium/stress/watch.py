"""What counts as progress of one bench-stress guest. The guest driver bounds every workload
itself, but a guest whose user space is starved (an RCU stall, RT tasks on every CPU) runs
nothing, not even its own timeouts, and would sit until the VM's overall timeout. bench-stress
hands is_progress to run_in_vm with a no-progress timeout, which stops the guest once no driver
progress line has come for too long, so the cells already done are kept (read back from the
console) and the matrix moves on."""

from __future__ import annotations

PROGRESS = ("stress-driver: ", "cell workload=")


def is_progress(line: str) -> bool:
    return line.startswith(PROGRESS)

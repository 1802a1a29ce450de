"""Run commands inside a QEMU guest booting a sched_ext-capable Debian kernel.

    from tools.pandemonium.vm import run_in_vm
    result = run_in_vm(["uname", "-r"], cpus=2)
"""

from .kernel import KernelInfo, ensure_kernel
from .runner import VmResult, run_in_vm

__all__ = ["KernelInfo", "VmResult", "ensure_kernel", "run_in_vm"]

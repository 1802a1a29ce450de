"""Run commands inside a QEMU guest booting a sched_ext-capable Debian kernel.

    from tests.vm import run_in_vm
    result = run_in_vm(["uname", "-r"], cpus=2)
"""

import sys
from pathlib import Path

# The package needs pandemonium_common from the repo root, also when pytest imports
# it as a top-level `vm` package with only tests/ on sys.path.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from .kernel import KernelInfo, ensure_kernel  # noqa: E402
from .runner import VmResult, run_in_vm  # noqa: E402

__all__ = ["KernelInfo", "VmResult", "ensure_kernel", "run_in_vm"]

"""Pick the QEMU accelerator: KVM only when it really runs a guest, else TCG.

/dev/kvm can exist and open fine while every guest dies with "KVM internal error"
(nested virtualization without the needed features), so KVM is probed by booting
the actual guest kernel once; the verdict is cached per host boot.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log, read_text

from .follow import Stop, follow

MODES = ("auto", "tcg-single", "tcg-multi", "tcg-icount", "kvm")
# What tcg-icount means, for every --accel help that offers it (vm, bench-*).
ICOUNT_HELP = ("tcg-icount: single-threaded TCG whose guest clock counts instructions (1 ns "
               "each, idle skipped), so host load cannot move a figure (repeatable A/B runs); "
               "slower, and an IPI or an idle vCPU's wakeup costs no more than its instructions")
# tcg thread=multi once oopsed the guest ("int3" in __schedule while sched_ext patched
# kernel text); thread=single never did, so it is the safe default.
QEMU_ACCEL_ARGS = {
    "tcg-single": ["-accel", "tcg,thread=single"],
    "tcg-multi": ["-accel", "tcg,thread=multi"],
    # Guest time counts executed instructions (1 ns each) and skips idle time, so host load
    # cannot move a guest timing: hackbench beside busy loops took 0.50-0.52 s (ours) and
    # 0.68-0.73 s (EEVDF) in one boot, against 0.98-1.80 s and 0.96-1.15 s in one tcg-multi
    # boot on a busy host. 1 ns keeps tcg-multi's scale; shift=2 made the work 4x slower against
    # the 4 ms tick and moved the ratio (hackbench 1.0x EEVDF instead of 0.73x). It does not
    # charge the wall-clock price of emulating an IPI or waking a halted vCPU, which tcg-multi
    # overstates; a CPU-bound phase runs ~10x slower than its guest time.
    "tcg-icount": ["-accel", "tcg,thread=single", "-icount", "shift=0,sleep=off"],
    "kvm": ["-accel", "kvm"],
}
# A slower guest against the same tick: tells what the machine's speed does to a figure from what
# the emulation does (tcg-single's wall clock charges every run with the other vCPUs' turns).
ICOUNT_SHIFT_ENV = "PANDEMONIUM_ICOUNT_SHIFT"


def accel_args(accel: str) -> list[str]:
    """QEMU's arguments for @accel; tcg-icount runs 2^$PANDEMONIUM_ICOUNT_SHIFT ns per
    instruction (default 0)."""
    args = list(QEMU_ACCEL_ARGS[accel])
    if accel == "tcg-icount":
        shift = os.environ.get(ICOUNT_SHIFT_ENV, "0")
        if not shift.isdigit() or int(shift) > 10:
            raise PandemoniumError(f"{ICOUNT_SHIFT_ENV}={shift!r}: expected 0-10 (2^N ns per "
                                   "guest instruction)")
        args[-1] = f"shift={int(shift)},sleep=off"
    return args


PROBE_TIMEOUT_S = 20.0
_KVM_FAILURE = ("KVM internal error", "emulation failure", "Could not access KVM",
                "failed to initialize kvm", "KVM: entry failed")
_KVM_BOOTED = ("Kernel panic", "Run /init")  # no root fs: the kernel panics once it booted


def probe_kvm(vmlinuz: Path, qemu: str = "qemu-system-x86_64") -> tuple[bool, str]:
    """Boot the kernel under KVM with no root fs: a working KVM reaches the
    "Kernel panic ... VFS" in about a second and QEMU exits (-no-reboot, panic=-1)."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False, "/dev/kvm missing or not accessible"
    cmd = [qemu, "-accel", "kvm", "-machine", "q35", "-cpu", "host", "-m", "256",
           "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
           "-no-reboot", "-kernel", str(vmlinuz), "-append", "console=ttyS0 panic=-1"]
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT)

    def verdict(line: str) -> None:
        seen = next((s for s in _KVM_FAILURE + _KVM_BOOTED if s in line), None)
        if seen:
            raise Stop(seen)
    try:
        ended = follow(proc, io.BytesIO(), verdict, deadline=time.monotonic() + PROBE_TIMEOUT_S)
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()
    if ended in _KVM_BOOTED:
        return True, "guest kernel booted under KVM"
    if ended in _KVM_FAILURE:
        return False, ended
    return False, "no guest kernel output under KVM within the probe time"


def kvm_works(vmlinuz: Path) -> bool:
    cache = cache_dir() / "kvm-probe.json"
    # Whether KVM works is a property of this host boot and QEMU build, not of the kernel.
    qemu = shutil.which("qemu-system-x86_64") or ""
    if not qemu:
        # The probe would die in Popen with a traceback; the boot would stop on this anyway.
        from ..packages import missing_message
        raise PandemoniumError(missing_message(["qemu-system-x86_64"], "the VM"))
    boot_id = read_text("/proc/sys/kernel/random/boot_id").strip() or "unknown"
    key = {"boot_id": boot_id, "qemu": qemu, "qemu_mtime": os.path.getmtime(qemu)}
    try:
        saved = json.loads(cache.read_text())
        if saved.get("key") == key:
            return bool(saved["works"])
    except (OSError, ValueError, KeyError):
        pass
    log.info("accel: probing KVM (up to %.0f s)...", PROBE_TIMEOUT_S)
    works, why = probe_kvm(vmlinuz)
    log.info("accel: KVM %s: %s", "works" if works else "unusable", why)
    cache.write_text(json.dumps({"key": key, "works": works, "why": why}))
    return works


def resolve(mode: str, vmlinuz: Path) -> str:
    """Concrete mode for `auto`; other modes are taken as asked."""
    if mode not in MODES:
        raise ValueError(f"unknown accel mode {mode!r}; choose from {', '.join(MODES)}")
    if mode != "auto":
        return mode
    return "kvm" if kvm_works(vmlinuz) else "tcg-single"

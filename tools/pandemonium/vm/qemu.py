"""Boot one QEMU guest, stream its serial console, enforce a timeout."""

from __future__ import annotations

import os
import selectors
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from pandemonium_common import PandemoniumError
from pandemonium_packages import missing_message

from .accel import QEMU_ACCEL_ARGS
from .console import ConsoleState

QEMU = "qemu-system-x86_64"
# loglevel=5 lets KERN_WARNING (WARN splats, sched_ext errors) through but not the
# boot chatter. panic=-1 + oops=panic + -no-reboot: an oops ends QEMU at once
# instead of leaving a wedged guest to run into the timeout.
BASE_CMDLINE = "console=ttyS0 loglevel=5 panic=-1 oops=panic rdinit=/init"
# After these QEMU stops the vCPU but keeps running: waiting for the timeout is pointless.
_QEMU_FATAL = (b"KVM internal error", b"emulation failure")


class QemuError(PandemoniumError):
    pass


@dataclass
class BootResult:
    console: ConsoleState
    qemu_rc: int | None
    timed_out: bool
    duration_s: float
    stop_reason: str | None = None  # why the harness stopped QEMU early, if it did

    @property
    def exit_code(self) -> int | None:
        return self.console.exit_code


def qemu_command(vmlinuz: Path, initrd: Path, *, cpus: int, mem_mb: int, accel: str,
                 extra_cmdline: str = "") -> list[str]:
    cmdline = f"{BASE_CMDLINE} {extra_cmdline}".strip()
    # -nodefaults drops the NIC (and its iPXE ROM) and VGA we don't use; the serial
    # port on stdio is the only channel, with stdin closed so the console isn't raw-moded.
    return [QEMU, *QEMU_ACCEL_ARGS[accel], "-machine", "q35", "-cpu", "max",
            "-smp", str(cpus), "-m", str(mem_mb),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot", "-kernel", str(vmlinuz), "-initrd", str(initrd), "-append", cmdline]


def boot(cmd: list[str], console: ConsoleState, *, timeout_s: float, log_path: Path,
         echo: bool = True) -> BootResult:
    if not shutil.which(cmd[0]):
        raise QemuError(missing_message([cmd[0]]))
    start = time.monotonic()
    deadline = start + timeout_s
    with open(log_path, "wb") as logf:
        logf.write(("# " + " ".join(cmd) + "\n").encode())
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        timed_out = False
        stop_reason = None
        pending = b""
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ)
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                if not sel.select(timeout=min(left, 1.0)):
                    continue
                chunk = os.read(proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                logf.write(chunk)
                logf.flush()
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    _handle(line, console, echo)
                fatal = next((f for f in _QEMU_FATAL for line in lines if f in line), None)
                if fatal:
                    stop_reason = f"QEMU reported '{fatal.decode()}'"
                    break
            if pending:
                _handle(pending, console, echo)
        finally:
            sel.close()
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rc = proc.wait()
            proc.stdout.close()
    return BootResult(console, None if timed_out else rc, timed_out, time.monotonic() - start,
                      stop_reason)


def _handle(raw: bytes, console: ConsoleState, echo: bool) -> None:
    line = raw.decode("utf-8", errors="replace")
    dumping = console.in_results
    console.feed(line)
    if echo and not dumping and not console.in_results:
        sys.stdout.write(line.rstrip("\r\n") + "\n")
        sys.stdout.flush()
    elif echo and console.in_results and not dumping:
        sys.stdout.write("[results dump from guest: not echoed, see log]\n")
        sys.stdout.flush()

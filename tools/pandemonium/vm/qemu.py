"""Boot one QEMU guest, stream its serial console, enforce a timeout and a no-progress limit."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..common import PandemoniumError
from ..packages import missing_message

from .accel import accel_args
from .console import ConsoleState, clean
from .follow import EOF, STALLED, TIMEOUT, Stop, follow

QEMU = "qemu-system-x86_64"
# loglevel=5 lets KERN_WARNING (WARN splats, sched_ext errors) through but not the
# boot chatter. panic=-1 + oops=panic + -no-reboot: an oops ends QEMU at once
# instead of leaving a wedged guest to run into the timeout.
BASE_CMDLINE = "console=ttyS0 loglevel=5 panic=-1 oops=panic rdinit=/init"
# After these QEMU stops the vCPU but keeps running: waiting for the timeout is pointless.
_QEMU_FATAL = ("KVM internal error", "emulation failure")


@dataclass
class BootResult:
    console: ConsoleState
    qemu_rc: int | None
    timed_out: bool
    duration_s: float
    stop_reason: str | None = None  # why the harness stopped QEMU early, if it did
    stalled: bool = False  # stopped because no progress line came for stall_s


@dataclass(frozen=True)
class Topology:
    """The guest's CPU layout: `nodes` NUMA nodes (one socket each, memory split evenly) of cores
    with `threads` SMT siblings each. The default, one node of single-thread cores, is QEMU's
    own flat layout (plain -smp N)."""
    nodes: int = 1
    threads: int = 1

    @property
    def flat(self) -> bool:
        return self.nodes == 1 and self.threads == 1

    def __str__(self) -> str:
        return f"nodes={self.nodes},threads={self.threads}"

    def check(self, cpus: int, mem_mb: int | None = None) -> None:
        """PandemoniumError unless `cpus` vCPUs (and `mem_mb` MB) split into this layout."""
        per_core = self.nodes * self.threads
        if cpus % per_core:
            raise PandemoniumError(f"topology {self}: {cpus} vCPUs do not split into "
                                   f"{self.nodes} node(s) of {self.threads}-thread cores")
        if mem_mb is not None and mem_mb < 128 * self.nodes:
            raise PandemoniumError(f"topology {self}: {mem_mb} MB is under 128 MB per node")

    def qemu_args(self, cpus: int, mem_mb: int) -> list[str]:
        """-smp and, with more than one node, a RAM backend and a -numa node per socket."""
        self.check(cpus, mem_mb)
        if self.flat:
            return ["-smp", str(cpus)]
        cores = cpus // (self.nodes * self.threads)
        out = ["-smp", f"{cpus},sockets={self.nodes},cores={cores},threads={self.threads}"]
        if self.nodes == 1:
            return out
        share = mem_mb // self.nodes
        for n in range(self.nodes):
            size = share + (mem_mb - share * self.nodes if n == self.nodes - 1 else 0)
            out += ["-object", f"memory-backend-ram,id=mem{n},size={size}M",
                    "-numa", f"node,nodeid={n},memdev=mem{n}",
                    "-numa", f"cpu,node-id={n},socket-id={n}"]
        return out


def parse_topology(spec: str | None) -> Topology:
    """'nodes=2,threads=2' (either key may be left out) -> Topology; None or '' is flat."""
    if not spec:
        return Topology()
    fields = {}
    for part in spec.split(","):
        key, _, value = part.strip().partition("=")
        if key not in ("nodes", "threads") or not value.isdigit() or int(value) < 1 \
                or key in fields:
            raise PandemoniumError(f"--topology {spec!r}: expected nodes=N,threads=T "
                                   "(each at least 1)")
        fields[key] = int(value)
    return Topology(**fields)


def qemu_command(vmlinuz: Path, initrd: Path, *, cpus: int, mem_mb: int, accel: str,
                 extra_cmdline: str = "", extra_args: list[str] | None = None,
                 topology: Topology | None = None) -> list[str]:
    cmdline = f"{BASE_CMDLINE} {extra_cmdline}".strip()
    # -nodefaults drops the NIC (and its iPXE ROM) and VGA we don't use; the serial
    # port on stdio is the only channel, with stdin closed so the console isn't raw-moded.
    return [QEMU, *accel_args(accel), "-machine", "q35", "-cpu", "max",
            *(topology or Topology()).qemu_args(cpus, mem_mb), "-m", str(mem_mb),
            "-nodefaults", "-no-user-config", "-display", "none", "-serial", "stdio",
            "-no-reboot", *(extra_args or []), "-kernel", str(vmlinuz), "-initrd", str(initrd),
            "-append", cmdline]


def boot(cmd: list[str], console: ConsoleState, *, timeout_s: float, log_path: Path,
         echo: bool = True, on_line: Callable[[str], object] | None = None,
         stall_s: float | None = None) -> BootResult:
    """Run QEMU until the guest powers off, timeout_s passes, QEMU reports a fatal error, or (with
    stall_s) no progress line has come for stall_s seconds. on_line(line) gets each console line
    outside the results dump, cleaned (console.clean), and returns true when it is progress;
    without on_line every line is."""
    if not shutil.which(cmd[0]):
        raise PandemoniumError(missing_message([cmd[0]]))
    start = time.monotonic()
    with open(log_path, "wb") as logf:
        logf.write(("# " + " ".join(cmd) + "\n").encode())
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT)
        try:
            ended = follow(proc, logf, lambda line: _handle(line, console, echo, on_line),
                           deadline=start + timeout_s, stall_s=stall_s)
        finally:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
            rc = proc.wait()
            proc.stdout.close()
    timed_out, stalled = ended == TIMEOUT, ended == STALLED
    stop_reason = (f"no progress from the guest for {stall_s:.0f} s: stopped by the host"
                   if stalled else None if ended in (EOF, TIMEOUT) else ended)
    return BootResult(console, None if timed_out else rc, timed_out, time.monotonic() - start,
                      stop_reason, stalled)


def _handle(line: str, console: ConsoleState, echo: bool,
            on_line: Callable[[str], object] | None) -> bool:
    """Feeds one console line to `console` and the terminal; True when it is progress."""
    dumping = console.in_results
    console.feed(line)
    if echo and not dumping:
        sys.stdout.write("[results dump from guest: not echoed, see log]\n" if console.in_results
                         else line.rstrip("\r\n") + "\n")
        sys.stdout.flush()
    # A guest sending its results is not stuck.
    progress = dumping or console.in_results or on_line is None or bool(on_line(clean(line)))
    fatal = next((f for f in _QEMU_FATAL if f in line), None)
    if fatal:
        raise Stop(f"QEMU reported '{fatal}'")
    return progress

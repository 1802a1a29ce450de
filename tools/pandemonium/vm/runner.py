"""run_in_vm(): kernel + initramfs + QEMU, with one retry when the guest kernel oopses."""

from __future__ import annotations

import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from ..common import PandemoniumError, banner, cache_dir, log, scheduler_binary, \
    tools_binary

from . import accel as accel_mod
from . import initramfs, qemu
from .console import ConsoleState, extract_results
from .kernel import ensure_kernel

RC_TIMEOUT = 124  # as timeout(1)
RC_GUEST_DIED = 125  # QEMU ended without the exit marker: oops, panic, QEMU error
DEFAULT_MEM_MB = 2048
DEFAULT_TIMEOUT_S = 600  # loading a large BPF program alone can take 100 s under TCG
_KEEP_RUNS = 30

@dataclass
class VmResult:
    rc: int
    accel_used: str
    kernel_version: str
    log_path: Path
    oops_seen: bool
    duration_s: float
    timed_out: bool = False
    stalled: bool = False  # stopped by the host: no progress line for progress_timeout seconds
    exit_marker_seen: bool = False
    out_dir: Path | None = None
    result_files: list[str] = field(default_factory=list)
    oops_lines: list[str] = field(default_factory=list)


def _guest_files(add: Iterable, tools: Iterable[str], include_scheduler: bool) -> list[initramfs.GuestFile]:
    files = []
    # The scheduler and the tools binary the benchmarks' guest drivers run (probe, stress).
    for built in (scheduler_binary(), tools_binary()) if include_scheduler else ():
        if built.is_file():
            files.append(initramfs.GuestFile(built, f"{initramfs.DEFAULT_GUEST_DIR}/{built.name}"))
        else:
            log.warning("%s not built yet; not adding it to the guest", built)
    files += [initramfs.tool_file(t) for t in tools]
    for item in add:
        if isinstance(item, str):
            files.append(initramfs.parse_add(item))
        else:
            host, guest = item
            files.append(initramfs.parse_add(f"{host}:{guest}" if guest else str(host)))
    return files


def _run_dir(out_dir: Path | None, nonce: str) -> tuple[Path, Path]:
    """(directory for results, console log path)."""
    if out_dir:
        out_dir.mkdir(parents=True, exist_ok=True)
        return out_dir, out_dir / "vm-console.log"
    runs = cache_dir("runs")
    old = sorted((p for p in runs.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for stale in old[:-_KEEP_RUNS]:
        shutil.rmtree(stale, ignore_errors=True)
    run = runs / f"{time.strftime('%Y%m%d-%H%M%S')}-{nonce}"
    run.mkdir()
    return run / "results", run / "vm-console.log"


def checked_topology(spec: str | None, cpu_counts: list[int]) -> qemu.Topology | None:
    """--topology as a qemu.Topology that every VM size in `cpu_counts` splits into, at the
    default memory (None when not given). Raises PandemoniumError."""
    if not spec:
        return None
    topology = qemu.parse_topology(spec)
    for cpus in cpu_counts:
        topology.check(cpus, DEFAULT_MEM_MB)
    return topology


def run_in_vm(cmd: list[str] | str, cpus: int = 2, mem_mb: int = DEFAULT_MEM_MB,
              kernel: str = "default", accel: str = "auto", timeout: float = DEFAULT_TIMEOUT_S,
              add: Iterable = (), out_dir: Path | str | None = None, retry_on_oops: bool = True,
              env: dict[str, str] | None = None, tools: Iterable[str] = (),
              include_scheduler: bool = True, echo: bool = True,
              extra_cmdline: str = "", on_line: Callable[[str], object] | None = None,
              progress_timeout: float | None = None,
              topology: qemu.Topology | None = None) -> VmResult:
    """Run `cmd` as root in a fresh guest and return its exit status and how it went.

    add: "HOST[:GUEST]" strings or (host, guest-or-None) pairs; files land in
    /usr/local/bin by default, ELF files bring their shared libraries. tools: host
    programs by name (stress-ng, perf, ...). include_scheduler: the built scx_pandemonium and
    pandemonium-tools in /usr/local/bin. Files the command writes to /results are
    copied to out_dir (or a run directory in the cache). echo: stream the console.
    on_line(line): called with each console line as it comes (cleaned, not the results
    dump); its true return value marks the line as progress. progress_timeout: stop the
    guest when no progress line (without on_line: no line at all) has come for that many
    seconds (counted from QEMU's start); the result then says `stalled`. topology: NUMA
    nodes and SMT siblings (qemu.Topology; default flat).
    """
    started = time.monotonic()
    if cpus < 1 or mem_mb < 128:
        raise PandemoniumError("need at least 1 vCPU and 128 MB of guest memory")
    if topology is not None:
        topology.check(cpus, mem_mb)  # before the kernel and initramfs work
    kinfo = ensure_kernel(kernel)
    mode = accel_mod.resolve(accel, kinfo.vmlinuz_path)
    files = _guest_files(add, tools, include_scheduler)
    base = initramfs.build_base(kinfo.version, kinfo.config_path, files)
    nonce = secrets.token_hex(6)
    results_dir, log_path = _run_dir(Path(out_dir) if out_dir else None, nonce)

    attempts = 2 if retry_on_oops else 1
    oops_lines: list[str] = []
    for attempt in range(1, attempts + 1):
        console = ConsoleState(nonce)
        attempt_log = log_path if attempt == 1 else log_path.with_name(f"vm-console-retry{attempt - 1}.log")
        log.info("vm: kernel %s, accel %s, %d vCPU%s, %d MB, timeout %.0f s%s",
                 kinfo.version, mode, cpus,
                 f" ({topology})" if topology and not topology.flat else "", mem_mb, timeout,
                 f" (retry {attempt - 1})" if attempt > 1 else "")
        with tempfile.TemporaryDirectory(prefix="pandemonium-vm-") as tmp:
            initrd = initramfs.assemble(base, initramfs.run_overlay(cmd, nonce, env),
                                        Path(tmp) / "initrd.img")
            qcmd = qemu.qemu_command(kinfo.vmlinuz_path, initrd, cpus=cpus, mem_mb=mem_mb,
                                     accel=mode, extra_cmdline=extra_cmdline,
                                     topology=topology)
            boot = qemu.boot(qcmd, console, timeout_s=timeout, log_path=attempt_log, echo=echo,
                             on_line=on_line, stall_s=progress_timeout)
        oops_lines += console.oops_lines
        if not console.oops_seen or console.exit_code is not None or attempt == attempts:
            break
        banner(f"GUEST KERNEL OOPS under {mode} (not a test result): retrying once. "
               f"First oops line: {console.oops_lines[0]!r}. Log: {attempt_log}")

    result = VmResult(rc=0, accel_used=mode, kernel_version=kinfo.version, log_path=attempt_log,
                      oops_seen=bool(oops_lines),
                      duration_s=time.monotonic() - started, timed_out=boot.timed_out,
                      stalled=boot.stalled, exit_marker_seen=console.exit_code is not None,
                      oops_lines=oops_lines)
    _finish(result, boot, console, results_dir, timeout)
    return result


def _finish(result: VmResult, boot: qemu.BootResult, console: ConsoleState,
            results_dir: Path, timeout: float) -> None:
    if console.exit_code is not None:
        result.rc = console.exit_code
        log.info("vm: guest command exited %d after %.1f s (boot+run %.1f s, accel %s)",
                 result.rc, result.duration_s, boot.duration_s, result.accel_used)
    elif boot.timed_out:
        result.rc = RC_TIMEOUT
        log.error("vm: guest timed out after %.0f s and was killed%s; log: %s", timeout,
                  " (a kernel oops was seen)" if console.oops_seen else "", result.log_path)
    else:
        result.rc = RC_GUEST_DIED
        if console.oops_seen:
            what = "after a kernel oops/panic"
        elif boot.stop_reason:
            what = f"({boot.stop_reason})"
        else:
            what = f"(QEMU exit status {boot.qemu_rc})"
        log.error("vm: guest died without reporting an exit status %s; log: %s", what, result.log_path)
        for line in console.oops_lines[:5]:
            log.error("vm:   %s", line)
    try:
        tar = console.results_tar()
    except ValueError as exc:
        log.error("vm: could not recover /results: %s", exc)
        tar = None
    if tar:
        result.result_files = extract_results(tar, results_dir)
        result.out_dir = results_dir
        log.info("vm: %d result file(s) from /results in %s", len(result.result_files), results_dir)

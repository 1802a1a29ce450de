"""Benchmarks on this machine instead of the VM: when the kernel has sched_ext and we are root,
bench-* runs the same guest driver (guest/driver.sh) here, with the same environment,
writing to <out>/native instead of the guest's /results. `--vm` forces the VM.

It never takes CPUs offline on a user's machine (BENCH_NO_HOTPLUG=1): it runs at the online CPU
count only and refuses any other --cores.
"""

from __future__ import annotations

import os
import platform
import signal
import subprocess
import time
from pathlib import Path

from ..common import PandemoniumError, log, read_text, sched_ext_state, scheduler_binary, \
    tools_binary

from ..vm.follow import follow
from .driver import GUEST_DIR, BenchResult, Progress, _first_line, benchlat_binary, \
    check_tools, coopbench_binary, driver_env
from .parse import parse_results
from .plan import Plan, fmt_duration


def decide(has_sched_ext: bool, is_root: bool, force_vm: bool) -> tuple[bool, str]:
    """(run natively?, why, for the log)."""
    if force_vm:
        return False, "--vm: in the VM"
    if not has_sched_ext:
        return False, "this kernel has no sched_ext: in the VM"
    if not is_root:
        return False, ("this kernel has sched_ext but we are not root: in the VM (run as root "
                       "for figures of this machine)")
    return True, "this kernel has sched_ext and we are root: natively on this machine"


def decide_here(force_vm: bool) -> tuple[bool, str]:
    return decide(os.path.isdir("/sys/kernel/sched_ext"), os.geteuid() == 0, force_vm)


def online_cpus(sysfs: str = "/sys") -> int:
    """CPUs online now, from the sysfs cpulist ('0-3,6')."""
    spec = read_text(Path(sysfs, "devices/system/cpu/online")).strip()
    if not spec:
        return os.cpu_count() or 1
    n = 0
    for part in filter(None, spec.split(",")):
        lo, _, hi = part.partition("-")
        n += int(hi or lo) - int(lo) + 1
    return n


def native_cores(requested: list[int] | None, online: int, command: str) -> list[int]:
    """The core counts of a native run: the online count; anything else would need hotplug."""
    if requested is None or requested == [online]:
        return [online]
    raise PandemoniumError(
        f"{command}: natively this runs at this machine's {online} online CPUs only (it does not "
        f"take your CPUs offline); drop --cores or give --cores {online}, or use --vm to sweep "
        f"{','.join(map(str, requested))} in the VM")


def _bin_dir(out: Path) -> Path:
    """scx_pandemonium, pandemonium-tools, benchlat and coopbench on PATH, as the guest has them
    in /usr/local/bin."""
    d = out / "bin"
    d.mkdir(parents=True, exist_ok=True)
    for src in (scheduler_binary(), tools_binary(), benchlat_binary(), coopbench_binary()):
        (d / src.name).unlink(missing_ok=True)
        (d / src.name).symlink_to(src)
    return d


def run_native(plan: Plan, out_dir: Path, echo: bool = False) -> BenchResult:
    """Run the plan with driver.sh on this machine; the same result as driver.run_bench."""
    check_tools()
    state = sched_ext_state()
    if state is not None and state.attached:
        raise PandemoniumError(f"bench: a sched_ext scheduler ({state.ops or state.state}) is "
                               "attached on this machine; stop it first, or use --vm")
    res_dir = out_dir / "native"
    res_dir.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, **driver_env(plan, lambda e: str(e.path)),
               BENCH_RESULTS=str(res_dir), BENCH_NO_HOTPLUG="1")
    env["PATH"] = f"{_bin_dir(res_dir)}:{env.get('PATH', '/usr/bin:/bin')}"
    timeout = plan.estimate_s() * 2 + 900
    console = res_dir / "console.log"
    log.info("bench: %d runs x %d phases natively at %d CPUs, roughly %s (timeout %s)",
             len(plan.runs()), len(plan.phases), plan.cores[0], fmt_duration(plan.estimate_s()),
             fmt_duration(timeout))
    load_before = os.getloadavg()
    started = time.monotonic()
    timed_out = False
    with open(console, "wb") as out:
        proc = subprocess.Popen(["sh", str(GUEST_DIR / "driver.sh")], env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            follow(proc, out, Progress(plan), deadline=started + timeout)
            rc = proc.wait(timeout=max(0.0, started + timeout - time.monotonic()))
        except subprocess.TimeoutExpired:
            timed_out = True
            rc = _stop(proc)
        finally:
            proc.stdout.close()
    if echo:
        print(console.read_text(errors="replace"), flush=True)
    try:
        records, events, genv = parse_results(res_dir)
    except FileNotFoundError as exc:
        raise PandemoniumError(f"bench: the driver wrote no results (exit {rc}; log {console}): "
                               f"{exc}") from None
    genv.update(native=True, cpus=plan.cores[0], accel="native", kernel=platform.release(),
                vm_rc=rc, vm_duration_s=round(time.monotonic() - started, 1),
                host_cores=os.cpu_count(), host_loadavg_before=load_before,
                host_loadavg_after=os.getloadavg(), vm_timed_out=timed_out,
                git=_first_line(["git", "-C", str(GUEST_DIR), "describe", "--always", "--dirty"]))
    return BenchResult(records, events, genv, rc, out_dir, res_dir)


def _stop(proc: subprocess.Popen) -> int:
    """SIGTERM to the driver's whole session (scheduler, load), then SIGKILL."""
    for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            return proc.wait(timeout=wait_s)
        except subprocess.TimeoutExpired:
            continue
    return proc.wait()

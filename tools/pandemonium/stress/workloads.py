"""The stress matrix's workloads and axes. Each workload name has a `wl_<name>` function (dashes
become underscores) in driver.sh, which runs it in the guest; this module only names them."""

from __future__ import annotations

from pathlib import Path

DRIVER = Path(__file__).resolve().parent / "driver.sh"
GUEST_DRIVER = "/usr/local/bin/stress-driver.sh"
# The build load driver.sh's build workload sources, shared with the bench drivers.
BUILD_LOAD = DRIVER.parent.parent / "guest" / "build_load.sh"
GUEST_BUILD_LOAD = "/usr/local/bin/build-load.sh"

# name -> what it is (shown by --help and in the report).
WORKLOADS = {
    "hogs": "CPU hogs, 4x oversubscribed (long-runners that never yield)",
    "forkexec": "fork/exec storm: one shell per CPU exec'ing `true` in a loop",
    "hackbench-proc": "hackbench, process mode over pipes, repeated",
    "hackbench-thread": "hackbench, thread mode over pipes, repeated",
    "pipe": "pipe ping-pong (stress-ng --pipe, 8-byte writes)",
    "mixed": "nice 10 and -10 workers beside SCHED_BATCH and SCHED_IDLE CPU stressors",
    "threads": "short-lived threads (stress-ng --pthread, up to 256 at a time per worker)",
    "affinity": "tasks changing CPU affinity constantly (stress-ng --affinity) beside yielders",
    "stressng": "stress-ng --switch --fork --yield --futex",
    "build": "make -j over 300 generated steps (busybox gzip/sha256sum: no compiler in the guest)",
    "vmmon": "an I/O thread waking every 2 ms beside one CPU-bound 'vCPU' thread per CPU",
    "scxci": "the sched-ext/scx CI check: stress-ng beside `timeout -s TERM 45 scx_pandemonium -v`",
    # After a hotplug under load the guest's RCU once wedged (before the irq_work fix in
    # README "Hotplug and irq_work"); kept before the RT workloads, which may end a run early.
    "hotplug": "2 hogs pinned to the last CPU while it is unplugged/replugged each second",
    # Last: RT work. RT tasks never reach sched_ext, and on kernels without a deadline server
    # for sched_ext (6.18) RT tasks that keep a CPU busy starve every ext task queued there,
    # kthreads included; the guest has wedged on it. See RT_WORKLOADS.
    "rt-hog": "a SCHED_FIFO hog on the last CPU beside 2x hogs (RT never reaches sched_ext)",
    "schedpolicy": "stress-ng --schedpolicy: workers cycling through every scheduling policy",
    # Very last: on 6.18 it has wedged the whole guest every time (no kernel message at all).
    "stressng-mutex": "stress-ng --mutex (its workers take SCHED_FIFO priorities when root)",
}

# Workloads that run RT (SCHED_FIFO/RR) tasks. On a kernel without the sched_ext deadline server
# (the driver reports it: debugfs sched/ext_server) nothing serves ext tasks on a CPU that RT work
# keeps busy: the kernel's own limit, which ejects any sched_ext scheduler. A stall there is
# reported as a kernel limit, not an unexpected exit; the same workloads must pass on a kernel
# with the server.
RT_WORKLOADS = {"rt-hog", "stressng-mutex", "schedpolicy"}

# Thousands of short-lived threads and forks need headroom beyond the harness's 2 GB default.
GUEST_MEM_MB = 3072

MODES = {"adaptive": "", "no-adaptive": "--no-adaptive"}

# Host programs the guest needs (src/build_support/system_packages.tsv names their packages).
GUEST_TOOLS = ["hackbench", "make", "stress-ng"]

# A cell is one (kernel, vCPUs, mode) guest run through every workload; the full run gives each
# cell at least FULL_CELL_S seconds of workload time, split evenly, and no workload less than
# MIN_WORKLOAD_S.
QUICK = {"cpus": [2], "kernels": ["default"], "modes": ["adaptive"], "duration": 8}
FULL = {"cpus": [2, 4], "kernels": ["default", "latest"], "modes": list(MODES)}
FULL_CELL_S = 300
MIN_WORKLOAD_S = 20


def full_duration(n_workloads: int) -> int:
    """Seconds per workload so that a cell of n_workloads runs at least FULL_CELL_S."""
    return max(MIN_WORKLOAD_S, -(-FULL_CELL_S // max(1, n_workloads)))


def parse_list(spec: str, known: list[str] | None, what: str) -> list[str]:
    """A comma-separated list; every item must be in `known` (if given). Raises ValueError."""
    items = [s.strip() for s in spec.split(",") if s.strip()]
    if not items:
        raise ValueError(f"{what}: empty list")
    if known is not None:
        bad = [i for i in items if i not in known]
        if bad:
            raise ValueError(f"{what}: unknown {', '.join(bad)}; known: {', '.join(known)}")
    return items


def parse_cpus(spec: str) -> list[int]:
    out = []
    for item in parse_list(spec, None, "--cpus"):
        if not item.isdigit() or not 1 <= int(item) <= 64:
            raise ValueError(f"--cpus: {item!r} is not a vCPU count from 1 to 64")
        out.append(int(item))
    return out


# The guest driver bounds every workload itself, but a guest whose user space is starved (an RCU
# stall, RT tasks on every CPU) runs nothing, not even its own timeouts. run_in_vm stops it once no
# line is_progress() accepts has come for progress_timeout(): the cells already done are kept
# (read back from the console) and the matrix moves on.
PROGRESS = ("stress-driver: ", "cell workload=")


def is_progress(line: str) -> bool:
    return line.startswith(PROGRESS)


def progress_timeout(duration: int) -> float:
    """Longest a healthy guest goes without a driver progress line: a BPF load of up to 400 s
    before the first workload, or a workload plus the driver's 180 s grace and a stop."""
    return max(600.0, duration + 180 + 240)


def vm_timeout(n_workloads: int, duration: int) -> float:
    """Boot, a BPF load of up to 400 s, every workload with slack, the scx CI cell, a stop."""
    return 120 + 400 + n_workloads * (duration + 120) + 120 + 60

"""Boot one VM and run a benchmark plan in it: the reusable core of every bench-* command.

API (for other bench commands, e.g. bench-stress):

    from tools.pandemonium.bench.plan import Plan, Sizes, PANDEMONIUM, PANDEMONIUM_BPF
    from tools.pandemonium.bench.driver import run_bench

    plan = Plan(phases=["latency", "burst"], schedulers=[PANDEMONIUM, PANDEMONIUM_BPF],
                cores=[2, 4], iterations=3, bracket=True, sizes=Sizes())
    result = run_bench(plan, out_dir, kernel="default")
    result.records   # parse.Record per (cores, iteration, scheduler, phase)
    result.events    # failures the guest reported (attach-failed, stop-timeout, hotplug-failed...)
    result.env       # kernel, vcpus, accel, versions

native.py (this package) runs the same guest driver on the host instead (a sched_ext kernel, root).

A phase is a `phase_<name>` shell function in guest/driver.sh (its stdout is the raw output) plus a
parser in parse.py PARSERS and an entry in plan.py PHASES (all in tools/pandemonium/bench/).
The guest boots with max(cores) vCPUs and takes CPUs offline between scheduler runs, never while
a sched_ext scheduler is attached. A scheduler that does not stop within
Sizes.stop_timeout_s is reported as a `stop-timeout` event and ends the run (the guest may be
wedged); the records gathered until then are kept.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pandemonium_common import PROJECT_ROOT, PandemoniumError, cache_dir, log
from pandemonium_packages import missing_message

from . import anchors
from .parse import Record, parse_results
from .plan import ATTACH_EST_S, EEVDF, Plan, accel_for, eta_s, fmt_duration

GUEST_DIR = Path(__file__).resolve().parent / "guest"
TOOLS = ["stress-ng", "perf", "cyclictest", "hackbench"]
_STEP = re.compile(r"BENCH-STEP (\d+) (\d+) (\d+) (\d+) (\S+) (\S+) (\S+)")


@dataclass
class BenchResult:
    records: list[Record]
    events: list[str]
    env: dict
    rc: int
    out_dir: Path
    results_dir: Path  # the driver's results (raw/, steps.tsv): out_dir/vm or out_dir/native
    notes: list[str] = field(default_factory=list)


def benchlat_binary() -> Path:
    """Compile the guest's latency helper (C, no dependencies) once per source change."""
    src = GUEST_DIR / "benchlat.c"
    out = cache_dir("bench") / "benchlat"
    if out.is_file() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise PandemoniumError("bench: " + missing_message(
            ["cc"], "a C compiler builds the guest helper benchlat"))
    proc = subprocess.run([cc, "-O2", "-Wall", "-o", str(out), str(src)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise PandemoniumError(f"bench: compiling {src} failed:\n{proc.stderr}")
    return out


def missing_tools() -> list[str]:
    return [t for t in TOOLS if not shutil.which(t)]


class Progress:
    """Called with each line of the driver's output (run_in_vm's on_line, or the native run's),
    it prints one line per finished phase with an ETA."""

    def __init__(self, plan: Plan, attach_s: float = ATTACH_EST_S) -> None:
        self.weights = []
        for run in plan.runs():
            for i, phase in enumerate(plan.phases):
                extra = attach_s if i == 0 and run.scheduler != EEVDF else 0.0
                self.weights.append(plan.step_weight(phase) + extra)
        self.started = time.monotonic()

    def line(self, m: re.Match, elapsed: float) -> str:
        k, total = int(m.group(1)), int(m.group(2))
        done_w = sum(self.weights[:k])
        eta = eta_s(done_w, sum(self.weights), elapsed)
        status = "ok" if m.group(7) == "0" else f"FAILED ({m.group(7)})"
        return (f"bench: [{k}/{total}] {m.group(3)} cores, iteration {m.group(4)}, "
                f"{m.group(5)}, {m.group(6)}: {status} | elapsed {fmt_duration(elapsed)}, "
                f"ETA {fmt_duration(eta)}")

    def __call__(self, raw: str) -> None:
        if "BENCH-START" in raw:
            self.started = time.monotonic()
        elif (m := _STEP.search(raw)):
            log.info("%s", self.line(m, time.monotonic() - self.started))
        elif "BENCH-EVENT" in raw or "BENCH-ATTACHED" in raw:
            log.info("bench: %s", raw.strip())


def check_tools() -> None:
    if missing_tools():
        raise PandemoniumError("bench: " + missing_message(missing_tools(),
                                                           "host tools for the guest"))


def externals_in(plan: Plan) -> list:
    """The plan's external schedulers (anchors.External, resolved: path set)."""
    out = [e for e in plan.external if e.label in plan.schedulers]
    for e in out:
        if e.path is None or not e.path.is_file():
            raise PandemoniumError(f"bench: --external {e.spec!r}: binary {e.path} missing")
    return out


def driver_env(plan: Plan, binary_for) -> dict[str, str]:
    """The guest driver's environment; binary_for(External) is where its binary is there."""
    ext = ";".join(anchors.command_line(e, binary_for(e)) for e in externals_in(plan))
    return {"BENCH_RUNS": " ".join(r.token() for r in plan.runs()),
            "BENCH_PHASES": " ".join(plan.phases), "BENCH_EXTERNALS": ext,
            "BENCH_SCHED_ARGS": " ".join(plan.sched_args), **plan.sizes.guest_env()}


def run_bench(plan: Plan, out_dir: Path, kernel: str = "default", accel: str | None = None,
              echo: bool = False, extra_cmdline: str = "") -> BenchResult:
    """Boot max(plan.cores) vCPUs, run the plan, parse /results. accel None: accel_for()."""
    check_tools()
    from tools.pandemonium.vm import run_in_vm

    vcpus = max(plan.cores)
    mode = accel or accel_for(vcpus, os.cpu_count() or 1)
    add = [(str(GUEST_DIR / "driver.sh"), "/usr/local/bin/bench-driver"),
           (str(benchlat_binary()), "/usr/local/bin/benchlat")]
    # Each external in its own directory: upstream's binary has our scheduler's name.
    add += [(str(e.path), anchors.guest_path(e)) for e in externals_in(plan)]
    env = driver_env(plan, anchors.guest_path)
    estimate = plan.estimate_s()
    timeout = estimate * 2 + 900  # TCG pace varies with the host's other load
    log.info("bench: %d runs x %d phases at %s cores, %s, roughly %s (VM timeout %s)",
             len(plan.runs()), len(plan.phases), ",".join(map(str, sorted(plan.cores))), mode,
             fmt_duration(estimate), fmt_duration(timeout))
    vm_dir = out_dir / "vm"
    vm_dir.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()
    res = run_in_vm(["sh", "/usr/local/bin/bench-driver"], cpus=vcpus, kernel=kernel,
                    accel=mode, timeout=timeout, add=add, out_dir=vm_dir, tools=TOOLS,
                    env=env, echo=echo, retry_on_oops=False, extra_cmdline=extra_cmdline,
                    on_line=Progress(plan))
    try:
        records, events, genv = parse_results(vm_dir)
    except FileNotFoundError as exc:
        raise PandemoniumError(f"bench: no results from the guest (exit {res.rc}; console log "
                               f"{res.log_path}): {exc}") from None
    genv.update(vcpus=vcpus, accel=res.accel_used, kernel=res.kernel_version,
                vm_rc=res.rc, vm_duration_s=round(res.duration_s, 1),
                host_cores=os.cpu_count(), host_loadavg_before=load_before,
                host_loadavg_after=os.getloadavg(), vm_timed_out=res.timed_out,
                qemu=_first_line(["qemu-system-x86_64", "--version"]),
                git=_first_line(["git", "-C", str(PROJECT_ROOT), "describe", "--always",
                                 "--dirty"]))
    return BenchResult(records, events, genv, res.rc, out_dir, vm_dir)


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.strip().splitlines() or ["?"])[0]

"""Boot one VM and run a benchmark plan in it: the reusable core of every bench-* command.

API (for other bench commands, e.g. bench-stress):

    from tools.pandemonium.bench.plan import Plan, Sizes, PANDEMONIUM, PANDEMONIUM_BPF
    from tools.pandemonium.bench.driver import run_bench

    plan = Plan(phases=["latency", "burst"], schedulers=[PANDEMONIUM, PANDEMONIUM_BPF],
                cores=[2, 4], iterations=3, bracket=True, sizes=Sizes())
    result = run_bench(plan, out_dir, kernel="default")
    result.records   # parse.Record per (cores, iteration, scheduler, phase)
    result.events    # failures the guest reported (attach-failed, stop-timeout, hotplug-failed...)
    result.env       # kernel, vcpus, accel, versions; boots, resumes... after a guest crash

native.py (this package) runs the same guest driver on the host instead (a sched_ext kernel, root).

A phase is a `phase_<name>` shell function in guest/driver.sh (its stdout is the raw output) plus a
parser in parse.py PARSERS and an entry in plan.py PHASES (all in tools/pandemonium/bench/).
The guest boots with max(cores) vCPUs and takes CPUs offline between scheduler runs, never while
a sched_ext scheduler is attached. A scheduler that does not stop within
Sizes.stop_timeout_s is reported as a `stop-timeout` event and ends the run (the guest may be
wedged); the records gathered until then are kept.

Nothing measured is lost to a guest crash (multi-threaded TCG's int3 oops): the guest streams each
finished step over the console (stream.py) besides the final /results tar, and when the guest
died before its driver finished, a new boot runs the runs still missing (resume.py), at most
resume.MAX_BOOTS boots in all. The records of all boots are merged into out_dir/merged.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..common import PROJECT_ROOT, PandemoniumError, cache_dir, log
from ..packages import missing_message

from . import anchors
from . import resume as R
from .parse import Record, parse_results
from .plan import ATTACH_EST_S, EEVDF, Plan, accel_for, eta_s, fmt_duration
from .stream import StreamSaver
from ..stress.workloads import BUILD_LOAD, GUEST_BUILD_LOAD

GUEST_DIR = Path(__file__).resolve().parent / "guest"
TOOLS = ["stress-ng", "perf", "cyclictest", "hackbench", "make"]  # make: the admin phase's build
_STEP = re.compile(r"BENCH-STEP (\d+) (\d+) (\d+) (\d+) (\S+) (\S+) (\S+)")


@dataclass
class BenchResult:
    records: list[Record]
    events: list[str]
    env: dict
    rc: int
    out_dir: Path
    # The driver's results (raw/, steps.tsv): out_dir/vm, out_dir/native, or out_dir/merged when
    # they came from the console stream or from more than one boot.
    results_dir: Path
    notes: list[str] = field(default_factory=list)


def _guest_binary(name: str, flags: list[str], why: str) -> Path:
    """Compile guest/NAME.c (C, no dependencies the guest lacks) once per source change."""
    src = GUEST_DIR / f"{name}.c"
    out = cache_dir("bench") / name
    if out.is_file() and out.stat().st_mtime >= src.stat().st_mtime:
        return out
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise PandemoniumError("bench: " + missing_message(["cc"], why))
    proc = subprocess.run([cc, "-O2", "-Wall", *flags, "-o", str(out), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise PandemoniumError(f"bench: compiling {src} failed:\n{proc.stderr}")
    return out


def benchlat_binary() -> Path:
    """The guest's latency helper."""
    return _guest_binary("benchlat", [], "a C compiler builds the guest helper benchlat")


def coopbench_binary() -> Path:
    """The guest's parallel-runtime workload (issue #34): libgomp linked statically, as the
    guest has no libgomp of its own."""
    return _guest_binary("coopbench", ["-fopenmp", "-static"],
                         "a C compiler with libgomp (gcc) builds the guest workload coopbench")


class Progress:
    """Called with each line of the driver's output (run_in_vm's on_line, or the native run's),
    it prints one line per finished phase with an ETA."""

    def __init__(self, plan: Plan, attach_s: float = ATTACH_EST_S,
                 skipped: list[int] = ()) -> None:
        self.weights = []
        for ri, run in enumerate(plan.runs(), start=1):
            for i, phase in enumerate(plan.phases):
                extra = attach_s if i == 0 and run.scheduler != EEVDF else 0.0
                # A resumed boot does not run what an earlier boot finished: no time for it.
                self.weights.append(0.0 if ri in skipped else plan.step_weight(phase) + extra)
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
    missing = [t for t in TOOLS if not shutil.which(t)]
    if missing:
        raise PandemoniumError("bench: " + missing_message(missing, "host tools for the guest"))


def externals_in(plan: Plan) -> list:
    """The plan's external schedulers (anchors.External, resolved: path set)."""
    out = [e for e in plan.external if e.label in plan.schedulers]
    for e in out:
        if e.path is None or not e.path.is_file():
            raise PandemoniumError(f"bench: --external {e.spec!r}: binary {e.path} missing")
    return out


def driver_env(plan: Plan, binary_for) -> dict[str, str]:
    """The guest driver's environment; binary_for(External) is where its binary is there.
    BENCH_EXTERNALS: `label=binary args` per external scheduler, ';' between them."""
    ext = ";".join(f"{e.label}={' '.join([binary_for(e), *e.args])}" for e in externals_in(plan))
    return {"BENCH_RUNS": " ".join(r.token() for r in plan.runs()),
            "BENCH_PHASES": " ".join(plan.phases), "BENCH_EXTERNALS": ext,
            "BENCH_SCHED_ARGS": " ".join(plan.sched_args), **plan.sizes.guest_env()}


def run_bench(plan: Plan, out_dir: Path, kernel: str = "default", accel: str | None = None,
              echo: bool = False, extra_cmdline: str = "", topology=None) -> BenchResult:
    """Boot max(plan.cores) vCPUs, run the plan, parse /results. accel None: accel_for().
    topology: the guest's NUMA nodes and SMT siblings (vm.qemu.Topology; None: flat).
    A guest that dies before its driver finished is booted again for the missing runs."""
    check_tools()
    vcpus = max(plan.cores)
    mode = accel or accel_for(vcpus, os.cpu_count() or 1)
    log.info("bench: %d runs x %d phases at %s cores, %s, roughly %s (VM timeout %s)",
             len(plan.runs()), len(plan.phases), ",".join(map(str, sorted(plan.cores))), mode,
             fmt_duration(plan.estimate_s() * pace(mode)),
             fmt_duration(_timeout(plan, [], mode)))
    load_before = os.getloadavg()
    boots: list[_Boot] = []
    skipped: list[int] = []
    deaths: dict[int, int] = {}  # step the guest died in -> the boot it died in
    stopped = None  # why no further boot was tried although steps are missing
    while True:
        boot = _boot_once(plan, out_dir, len(boots) + 1, skipped, kernel, mode, echo,
                          extra_cmdline, topology)
        boots.append(boot)
        recorded = [b.recorded for b in boots]
        finished_runs = R.finished_runs(plan, recorded)
        if boot.finished or len(finished_runs) == len(plan.runs()):
            break
        planned, kept = len(R.plan_steps(plan)), R.kept_steps(plan, recorded)
        died_at = R.death_step(plan, boot.recorded, skipped)
        if died_at in deaths:
            cores, it, sched, phase = R.plan_steps(plan)[died_at - 1]
            stopped = (f"step {died_at} ({sched} {phase} at {cores} cores, iteration {it}) killed "
                       f"the guest in boot {deaths[died_at]} and again in boot {boot.number}: "
                       "not resuming")
        elif boot.number >= R.MAX_BOOTS:
            stopped = f"the guest died in {boot.number} boots: no further resume"
        if stopped:
            log.error("bench: %s; %d of %d planned steps recorded", stopped, kept, planned)
            break
        deaths[died_at] = boot.number
        skipped = finished_runs
        boot.resume_from = R.first_step_to_run(plan, skipped)
        log.warning("bench: the guest died in step %s (%s) before the driver finished; "
                    "%d of %d planned steps recorded. Resuming in boot %d at step %d, skipping "
                    "the %d run(s) already complete", died_at, boot.why, kept, planned,
                    boot.number + 1, boot.resume_from, len(skipped))
    result = _result(plan, out_dir, boots, stopped, vcpus, load_before)
    if topology is not None and not topology.flat:
        result.env["topology"] = str(topology)
    return result


@dataclass
class _Boot:
    number: int
    res: object  # vm.runner.VmResult
    source: Path  # its results: out_dir/vm (vm-boot2, ...) from the tar, or its streamed/
    from_stream: bool
    recorded: set  # step keys it recorded
    finished: bool  # its driver got to the end (BENCH-DONE or the exit marker)
    why: str  # how it ended, for the log and the notes
    resume_from: int | None = None  # the step the next boot started at, if one did


# Single-threaded TCG brings vCPUs up one after another and runs them in turn: under tcg-icount
# the guest booted in ~70 s at 2 and 8 vCPUs, 4-8 min at 32 and ~7 min at 64 on a busy 2-core host
# (issue #33 item 5's sizes), which the fixed 900 s margin alone would not cover.
BOOT_S_PER_VCPU = 15


# Wall seconds per estimated guest second under tcg-icount. Guest time counts the instructions of
# every vCPU (1 ns each) and one host thread executes them all, so a CPU-bound phase's pace does not
# grow with the vCPUs: the oversub phase at 4 vCPUs (6.18, EEVDF, 600 regions) took 13m51s for ~74 s
# of guest time (~11x), and bench-trace's messaging run at 64 vCPUs took 3m22s with its boot where
# 2.5x per vCPU had estimated 107 minutes. Idle time is skipped, so mostly idle phases run faster:
# an upper bound.
ICOUNT_PACE = 11.0


def pace(mode: str) -> float:
    """Wall seconds per estimated guest second: 1 but under tcg-icount (the estimate is in guest
    seconds, and a CPU-bound phase there runs ~11x slower than its guest time)."""
    return ICOUNT_PACE if mode == "tcg-icount" else 1.0


def _timeout(plan: Plan, skipped: list[int], mode: str) -> float:
    # TCG pace varies with host load; every vCPU lengthens the boot and each attach.
    return (R.remaining_estimate_s(plan, skipped) * pace(mode) * 2 + 900
            + BOOT_S_PER_VCPU * max(plan.cores))


def _both(*callbacks):
    """One on_line callback feeding each of `callbacks` (all of them, always)."""
    return lambda line: any([bool(cb(line)) for cb in callbacks])


def _boot_once(plan: Plan, out_dir: Path, number: int, skipped: list[int], kernel: str,
               mode: str, echo: bool, extra_cmdline: str, topology=None) -> _Boot:
    from ..vm import run_in_vm

    add = [(str(GUEST_DIR / "driver.sh"), "/usr/local/bin/bench-driver"),
           (str(benchlat_binary()), "/usr/local/bin/benchlat"),
           (str(coopbench_binary()), "/usr/local/bin/coopbench"),
           (str(BUILD_LOAD), GUEST_BUILD_LOAD)]
    # Each external in its own directory: upstream's binary has our scheduler's name.
    add += [(str(e.path), anchors.guest_path(e)) for e in externals_in(plan)]
    env = dict(driver_env(plan, anchors.guest_path), BENCH_STREAM="1",
               BENCH_SKIP_RUNS=" ".join(map(str, skipped)))
    vm_dir = out_dir / ("vm" if number == 1 else f"vm-boot{number}")
    vm_dir.mkdir(parents=True, exist_ok=True)
    saver = StreamSaver(vm_dir / "streamed")
    res = run_in_vm(["sh", "/usr/local/bin/bench-driver"], cpus=max(plan.cores), kernel=kernel,
                    accel=mode, timeout=_timeout(plan, skipped, mode), add=add, out_dir=vm_dir,
                    tools=TOOLS, env=env, echo=echo, retry_on_oops=False,
                    extra_cmdline=extra_cmdline, topology=topology,
                    on_line=_both(Progress(plan, skipped=skipped), saver))
    saver.close()
    # The tar is whole or absent (checksummed); without it the stream is what this boot left.
    from_stream = res.out_dir is None or not (vm_dir / "steps.tsv").is_file()
    source = vm_dir / "streamed" if from_stream else vm_dir
    recorded = set(R.recorded_keys(source))
    if from_stream:
        log.warning("bench: boot %d: no results tar from the guest (exit %d); %d step(s) "
                    "recovered from the console stream in %s%s", number, res.rc, len(recorded),
                    source, f", {len(saver.damaged)} damaged" if saver.damaged else "")
    if res.oops_lines:
        why = f"kernel oops: {res.oops_lines[0]}"
    elif res.timed_out:
        why = "timed out"
    elif not res.exit_marker_seen:
        why = f"guest died (exit {res.rc})"
    else:
        why = f"driver exited {res.rc}"
    return _Boot(number, res, source, from_stream, recorded,
                 saver.done or res.exit_marker_seen, why)


def _result(plan: Plan, out_dir: Path, boots: list[_Boot], stopped: str | None, vcpus: int,
            load_before) -> BenchResult:
    last = boots[-1]
    if len(boots) == 1 and not last.from_stream:
        results_dir = last.source  # the usual case: one boot, its tar
    else:
        results_dir = out_dir / "merged"
        merged = R.merge_boots(plan, [b.source for b in boots], results_dir)
    try:
        records, events, genv = parse_results(results_dir)
    except FileNotFoundError as exc:
        raise PandemoniumError(f"bench: no results from the guest (exit {last.res.rc}; console "
                               f"log {last.res.log_path}): {exc}") from None
    if not records and last.from_stream:
        raise PandemoniumError(f"bench: no results from the guest in {len(boots)} boot(s) (exit "
                               f"{last.res.rc}, {last.why}; console log {last.res.log_path})"
                               + (f"; {stopped}" if stopped else ""))
    planned = len(R.plan_steps(plan))
    genv.update(vcpus=vcpus, accel=last.res.accel_used, kernel=last.res.kernel_version,
                vm_rc=last.res.rc, vm_duration_s=round(sum(b.res.duration_s for b in boots), 1),
                host_cores=os.cpu_count(), host_loadavg_before=load_before,
                host_loadavg_after=os.getloadavg(),
                vm_timed_out=any(b.res.timed_out for b in boots),
                steps_planned=planned, steps_recorded=len(records),
                qemu=_first_line(["qemu-system-x86_64", "--version"]),
                git=_first_line(["git", "-C", str(PROJECT_ROOT), "describe", "--always",
                                 "--dirty"]))
    if results_dir != last.source:
        genv.update(
            boots=len(boots),
            resumes=[{"boot": b.number + 1, "from_step": b.resume_from, "after": b.why}
                     for b in boots if b.resume_from is not None],
            recovered_from_stream=[{"boot": b.number, "steps": len(b.recorded), "after": b.why}
                                   for b in boots if b.from_stream],
            step_boots=R.boot_ranges(merged.step_boot),
            cross_boot_brackets=R.cross_boot_brackets(plan, merged.run_boot))
        if stopped:
            genv["resume_stopped"] = stopped
        log.info("bench: %d of %d planned steps recorded over %d boot(s) (%s); merged results "
                 "in %s", len(records), planned, len(boots), genv["step_boots"], results_dir)
    return BenchResult(records, events, genv, last.res.rc, out_dir, results_dir)


def _first_line(cmd: list[str]) -> str:
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return (out.strip().splitlines() or ["?"])[0]

"""The bench-* subcommands of pandemonium.py: argument parsing and what each one reports.

Each command is a Plan (phases x schedulers x core counts) run by driver.run_bench in one VM
boot, then aggregated and written under ~/.cache/pandemonium/bench/<timestamp>-<command>/.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

from pandemonium_common import PandemoniumError, cache_dir, log

from . import plan as P
from .aggregate import aggregate
from .report import markdown, plot, write_json


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    phases: list[str]
    schedulers: list[str]
    cores: str = "2"
    iterations: int = 1
    bracket: bool = True
    sched_args: tuple[str, ...] = ()  # extra arguments for scx_pandemonium
    phase_s: int | None = None  # default timed-phase length when not Sizes().phase_s


COMMANDS = [
    Command("bench-scale", "latency/throughput suite vs EEVDF across core counts (issue #7)",
            P.SCALE_PHASES, [P.PANDEMONIUM, P.PANDEMONIUM_BPF], cores="2,4"),
    Command("bench-contention", "probe P99 under 6 contention shapes, incl. storm and recovery",
            ["latency", "oversub", "burst", "recovery", "longrun", "mixed"],
            [P.PANDEMONIUM, P.PANDEMONIUM_BPF]),
    Command("bench-pcpu", "per-CPU queues: pinned long-runners on every CPU all make progress",
            ["pinned"], [P.PANDEMONIUM, P.PANDEMONIUM_BPF]),
    Command("bench-fork-thread", "perf messaging (processes, threads) + perf stat counters",
            ["messaging", "forkthread"], [P.PANDEMONIUM, P.PANDEMONIUM_BPF]),
    Command("bench-power", "the scheduler's own CPU time and RSS idle/under load, RAPL if any",
            ["idle", "busy", "rapl"], [P.PANDEMONIUM, P.PANDEMONIUM_BPF], bracket=False,
            phase_s=20),  # 20 s windows: 1 tick of CPU time is 0.05 % of one CPU
    Command("bench-trace", "BPF program run counts/time and sched_ext trace events under a "
            "workload", ["bpfstats"], [P.PANDEMONIUM]),
    Command("bench-sys", "live telemetry (-v) captured to a file under load",
            ["telemetry"], [P.PANDEMONIUM], bracket=False, sched_args=("-v",)),
    Command("bench-scx", "scx CI compatibility: load, stress, unload cleanly",
            ["busy"], [P.PANDEMONIUM, P.PANDEMONIUM_BPF], bracket=False),
]
BY_NAME = {c.name: c for c in COMMANDS}
COST_CPU_PCT_MAX = 0.5  # issue #6
COST_RSS_MIB_MAX = 32.0


def add_parser(sub: argparse._SubParsersAction, spec: Command) -> None:
    p = sub.add_parser(
        spec.name, help=spec.help,
        description=f"{spec.help}. Runs inside the QEMU VM (this host has no sched_ext); "
                    "VM timings are 5-12x slower than bare metal and only comparable within "
                    "one boot. Writes JSON, a Markdown table and plots under "
                    "~/.cache/pandemonium/bench/ and prints the path.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"phases: {', '.join(spec.phases)}\nexample:\n  %(prog)s --cores {spec.cores}")
    p.add_argument("--cores", default=spec.cores, metavar="N[,N]",
                   help=f"core counts to sweep by CPU hotplug in one boot (default {spec.cores})")
    p.add_argument("--iterations", type=int, default=spec.iterations, metavar="N",
                   help=f"iterations per core count (default {spec.iterations})")
    p.add_argument("--quick", action="store_true",
                   help="every phase briefly, one iteration, smallest core count (CI smoke)")
    p.add_argument("--pandemonium-only", action="store_true",
                   help="skip EEVDF (no ratios) and --external")
    p.add_argument("--phase-seconds", type=int, metavar="S", default=spec.phase_s,
                   help=f"length of each timed phase (default {spec.phase_s or P.Sizes().phase_s})")
    p.add_argument("--kernel", default="default", metavar="SPEC", help="VM kernel (see vm --help)")
    p.add_argument("--accel", choices=["tcg-single", "tcg-multi", "kvm"],
                   help="default: tcg-multi if vCPUs <= host cores, else tcg-single")
    p.add_argument("--out", metavar="DIR", help="output directory (default: the bench cache)")
    p.add_argument("--echo", action="store_true", help="stream the guest console")
    p.add_argument("--external", nargs=argparse.REMAINDER, metavar="PATH [ARGS]",
                   help="also run this sched_ext scheduler binary with ARGS (must come last)")
    p.set_defaults(func=lambda args, spec=spec: run_command(spec, args))


def add_all(sub: argparse._SubParsersAction) -> None:
    for spec in COMMANDS:
        add_parser(sub, spec)


def plan_from_args(spec: Command, args: argparse.Namespace) -> P.Plan:
    if args.iterations < 1:
        raise PandemoniumError(f"{spec.name}: --iterations must be at least 1")
    try:
        cores = P.parse_cores(args.cores, max_cpus=64)
    except ValueError as exc:
        raise PandemoniumError(f"{spec.name}: {exc}") from None
    sizes = P.Sizes.quick() if args.quick else P.Sizes()
    if args.phase_seconds is not None:
        if args.phase_seconds < 1:
            raise PandemoniumError(f"{spec.name}: --phase-seconds must be at least 1")
        sizes.phase_s = args.phase_seconds
    scheds = list(spec.schedulers)
    external = list(args.external or [])
    if args.external is not None and not external:
        raise PandemoniumError(f"{spec.name}: --external needs a PATH")
    if external and not args.pandemonium_only:
        scheds.append(P.EXTERNAL)
    return P.Plan(phases=list(spec.phases), schedulers=scheds,
                  cores=cores[:1] if args.quick else cores,
                  iterations=1 if args.quick else args.iterations,
                  bracket=spec.bracket and not args.pandemonium_only, sizes=sizes,
                  external=external, sched_args=list(spec.sched_args))


def out_dir_for(spec: Command, args: argparse.Namespace) -> Path:
    if args.out:
        return Path(args.out).expanduser()
    return cache_dir("bench") / f"{time.strftime('%Y%m%d-%H%M%S')}-{spec.name}"


def run_command(spec: Command, args: argparse.Namespace) -> int:
    import pandemonium_build as build

    from .driver import run_bench

    plan = plan_from_args(spec, args)
    build.ensure_packages(vm=True, extra=build.BENCH_PACKAGES)
    build.build_release()
    out = out_dir_for(spec, args)
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    result = run_bench(plan, out, kernel=args.kernel, accel=args.accel, echo=args.echo)
    cells = aggregate(result.records)
    notes = notes_for(spec, result, cells)
    title = f"{spec.name}{' (quick)' if args.quick else ''}"
    md = markdown(title, result.env, cells, plan.phases, notes)
    (out / "report.md").write_text(md)
    write_json(out / "results.json", {
        "command": spec.name, "quick": args.quick, "env": result.env, "events": result.events,
        "plan": {"phases": plan.phases, "schedulers": plan.schedulers, "cores": plan.cores,
                 "iterations": plan.iterations, "bracket": plan.bracket,
                 "sizes": vars(plan.sizes), "runs": [r.token() for r in plan.runs()]},
        "records": [r.to_json() for r in result.records],
        "cells": [c.to_json() for c in cells], "notes": notes})
    plots = plot(out, cells, plan.phases)
    print(md, flush=True)
    log.info("%s: %s; finished in %s", spec.name, plots, P.fmt_duration(time.monotonic() - started))
    print(f"{spec.name}: results in {out}", flush=True)
    failed = result.rc != 0 or any(e.split()[0] in FATAL_EVENTS for e in result.events if e)
    return 1 if failed or any(n.startswith("FAIL") for n in notes) else 0


# stop-status: the scheduler exited non-zero on SIGTERM (not a clean unload); ejected: the
# kernel kicked it out mid-phase (e.g. the sched_ext watchdog saw a runnable task stall).
FATAL_EVENTS = ("stop-timeout", "attach-failed", "skipped", "hotplug-failed", "stop-status",
                "ejected")


def notes_for(spec: Command, result, cells) -> list[str]:
    """The closing notes: failures first, then the per-command verdicts."""
    notes = [f"FAIL guest event: {e}" for e in result.events if e.split()[0] in FATAL_EVENTS]
    notes += [f"guest event: {e}" for e in result.events if e and e.split()[0] not in FATAL_EVENTS]
    bad = [r for r in result.records if r.error]
    notes += [f"phase failed: {r.phase} at {r.cores} cores, {r.scheduler} iteration "
              f"{r.iteration}: {r.error}" for r in bad]
    if result.rc != 0:
        notes.append(f"FAIL the guest exited with status {result.rc}")
    env = result.env
    notes.append(f"host: {env.get('host_cores')} cores, load average "
                 f"{env.get('host_loadavg_before')} before, {env.get('host_loadavg_after')} after "
                 "(other work shares these cores)")
    if env.get("external", "-") != "-":
        notes.append(f"'external' is {env['external']} (attached and detached like pandemonium)")
    notes += VERDICTS.get(spec.name, lambda r, c: [])(result, cells)
    return notes


def _power(result, cells) -> list[str]:
    out = []
    for c in cells:
        if c.phase not in ("idle", "busy") or c.cpu_pct is None:
            continue
        rss_mib = (c.rss_kb or 0) / 1024
        ok = c.cpu_pct < COST_CPU_PCT_MAX and rss_mib < COST_RSS_MIB_MAX
        out.append(f"{'cost within target' if ok else 'cost target MISSED'}: {c.scheduler} "
                   f"{c.phase} at {c.cores} cores: CPU {c.cpu_pct:.3f} % of one CPU (target "
                   f"< {COST_CPU_PCT_MAX} %), VmRSS {rss_mib:.1f} MiB (target < "
                   f"{COST_RSS_MIB_MAX:.0f} MiB) [VM: TCG inflates CPU time]")
    rapl = [r for r in result.records if r.phase == "rapl"]
    if rapl and all(r.value is None for r in rapl):
        why = next((r.extra.get("rapl_unavailable") for r in rapl if r.extra), "no counter")
        out.append(f"RAPL unavailable in this guest (perf stat -e power/energy-pkg/: {why}); "
                   "the scheduler's own CPU time above is the idle-floor cost instead")
    return out


def _pcpu(result, cells) -> list[str]:
    out = []
    for r in result.records:
        if r.phase != "pinned" or r.value is None:
            continue
        stranded = r.extra.get("stranded", 0)
        out.append(f"{'FAIL' if stranded else 'ok'}: {r.scheduler} at {r.cores} cores: "
                   f"{r.extra.get('workers')} pinned long-runners, {stranded} made no progress, "
                   f"worst gap {r.value / 1000:.1f} ms")
    out.append("not checked here: the depth gate and BPF counter consistency (the gate's "
               "topology/contention layers read the BPF maps)")
    return out


def _scx(result, cells) -> list[str]:
    out = []
    for c in cells:
        if c.phase == "busy":
            ok = c.failures == 0 and not any(e.split()[0] in FATAL_EVENTS for e in result.events)
            out.append(f"{'ok' if ok else 'FAIL'}: {c.scheduler} at {c.cores} cores: attached, "
                       "ran the stress workload, detached"
                       + ("" if ok else " (see the events above)"))
    return out


def _forkthread(result, cells) -> list[str]:
    """perf stat counters of the threaded messaging run; unsupported ones are named as such."""
    out, unsupported = [], set()
    for r in result.records:
        if r.phase != "forkthread" or not r.extra:
            continue
        counted = {k: v for k, v in r.extra.items() if isinstance(v, float)}
        unsupported |= {k for k, v in r.extra.items() if not isinstance(v, float)}
        out.append(f"{r.scheduler} at {r.cores} cores, iteration {r.iteration}: "
                   + ", ".join(f"{k} {v:g}" for k, v in sorted(counted.items())))
    if unsupported:
        out.append("hardware counters unavailable in this guest (perf stat: <not supported>): "
                   + ", ".join(sorted(unsupported)))
    return out


def _trace(result, cells) -> list[str]:
    out = []
    for r in result.records:
        if r.phase != "bpfstats" or not r.extra:
            continue
        x = r.extra
        per = x["bpf_ns_per_run"]
        events = ", ".join(f"{k} {v}" for k, v in sorted(x["trace_events"].items())) or "none"
        out.append(f"{r.scheduler} at {r.cores} cores: {x['bpf_progs']} BPF programs ran "
                   f"{x['bpf_run_cnt']} times"
                   + (f", {per:.0f} ns per run (guest time)" if per is not None else "")
                   + f"; trace events (last buffer): {events}")
    return out + [f"raw captures: {result.out_dir / 'vm' / 'raw'}"]


def _sys(result, cells) -> list[str]:
    out = []
    for log_file in sorted((result.out_dir / "vm" / "raw").glob("*.sched.log")):
        lines = [ln for ln in log_file.read_text(errors="replace").splitlines()
                 if ln.startswith("d/s:")]
        out.append(f"{log_file.name}: {len(lines)} telemetry lines"
                   + (f"; last: {lines[-1]}" if lines else " (FAIL: none captured)"))
    return out or ["FAIL no scheduler log captured"]


VERDICTS = {"bench-power": _power, "bench-pcpu": _pcpu, "bench-scx": _scx,
            "bench-fork-thread": _forkthread,
            "bench-trace": _trace, "bench-sys": _sys}

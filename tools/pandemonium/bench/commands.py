"""The bench-* subcommands of pandemonium.py: argument parsing and what each one reports.

Each command is a Plan (phases x schedulers x core counts) run by driver.run_bench in one VM
boot (or natively by native.run_native on a sched_ext kernel as root), then aggregated and
written under ~/.cache/pandemonium/bench/<timestamp>-<command>/.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from ..common import PandemoniumError, cache_dir, log, scheduler_binary, \
    tools_binary

from ..vm.accel import ICOUNT_HELP, MODES
from . import anchors
from . import felt, oversub
from . import plan as P
from . import scoreboard
from .admin import expand
from .aggregate import aggregate
from .plots import ensure_matplotlib, plot
from .report import markdown, write_json
from .verdicts import VERDICTS, event_is_fatal


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
    # What --phases / --schedulers may also name, beyond the defaults above.
    more_phases: tuple[str, ...] = ()
    more_schedulers: tuple[str, ...] = ()


COMMANDS = [
    Command("bench-scale", "latency/throughput suite vs EEVDF across core counts (issue #7)",
            P.SCALE_PHASES, [P.PANDEMONIUM, P.PANDEMONIUM_BPF], cores="2,4",
            more_phases=tuple(P.SCALE_EXTRA_PHASES),
            more_schedulers=(P.PANDEMONIUM_GAMING, P.PANDEMONIUM_COOP, P.PANDEMONIUM_LEARN)),
    Command("bench-contention", "probe P99 under 6 contention shapes, incl. storm and recovery",
            ["latency", "hogs", "burst", "recovery", "longrun", "mixed"],
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
EXTERNAL_HELP = (
    "also run another sched_ext scheduler, bracketed by EEVDF like ours; repeatable. SPEC is "
    "one word: a known name (" + ", ".join(f"{n} = {a.crate} {a.version}" for n, a in
                                        sorted(anchors.BY_NAME.items()) if n == a.label)
    + "; installed with cargo install under ~/.cache/pandemonium/anchors when missing; "
    "scx_bpfland and scx_lavd work too) or a path, optionally followed by the scheduler's own "
    "arguments in the same quoted word")


def add_parser(sub: argparse._SubParsersAction, spec: Command) -> None:
    p = sub.add_parser(
        spec.name, help=spec.help,
        description=f"{spec.help}. Runs inside the QEMU VM, or natively on a kernel with "
                    "sched_ext when run as root (--vm forces the VM); VM timings are 5-12x "
                    "slower than bare metal and only comparable within one boot. Writes JSON, "
                    "a Markdown report (the scoreboard first) and plots under "
                    "~/.cache/pandemonium/bench/ and prints the path.",
        epilog=f"phases: {', '.join(spec.phases)}"
               + (f" (and, with --phases, {', '.join(spec.more_phases)})" if spec.more_phases
                  else "")
               + f"\nexamples:\n  %(prog)s --cores {spec.cores}\n"
               "  %(prog)s --quick --external scx_bpfland --external upstream\n"
               "  %(prog)s --external '/opt/scx_rusty --slice-us-underutil 5000'")
    p.add_argument("--cores", default=None, metavar="N[,N]",
                   help=f"core counts to sweep by CPU hotplug in one boot (default {spec.cores}; "
                        "natively: the online CPUs, the only count allowed)")
    p.add_argument("--iterations", type=int, default=spec.iterations, metavar="N",
                   help=f"iterations per core count (default {spec.iterations})")
    p.add_argument("--quick", action="store_true",
                   help="every phase briefly, one iteration, smallest core count, EEVDF before "
                        "ours only (CI smoke)")
    p.add_argument("--pandemonium-only", action="store_true",
                   help="skip EEVDF (no ratios) and --external")
    p.add_argument("--phase-seconds", type=int, metavar="S", default=spec.phase_s,
                   help=f"length of each timed phase (default {spec.phase_s or P.Sizes().phase_s})")
    p.add_argument("--coop-regions", type=int, metavar="N",
                   help="parallel regions per coopbench process in the oversub phase (default "
                        f"{P.Sizes().coop_regions}); fewer keep a board at 4 or more vCPUs "
                        "under single-threaded TCG within hours")
    p.add_argument("--kernel", default="default", metavar="SPEC", help="VM kernel (see vm --help)")
    p.add_argument("--accel", choices=[m for m in MODES if m != "auto"],
                   help="default: tcg-multi if vCPUs <= host cores, else tcg-single. "
                        + ICOUNT_HELP)
    p.add_argument("--topology", metavar="nodes=N,threads=T",
                   help="the VM's layout: N NUMA nodes (one socket each, memory split evenly) of "
                        "cores with T SMT siblings; the largest --cores count must split into "
                        "them (default: flat, plain -smp)")
    p.add_argument("--vm", action="store_true",
                   help="run in the VM even on a sched_ext kernel as root")
    p.add_argument("--no-build", action="store_true",
                   help="use the release binary as it is (no cargo build first)")
    p.add_argument("--out", metavar="DIR", help="output directory (default: the bench cache)")
    p.add_argument("--echo", action="store_true", help="stream the guest console")
    p.add_argument("--external", action="append", default=[], metavar="SPEC",
                   help=EXTERNAL_HELP)
    p.add_argument("--phases", metavar="P[,P]",
                   help="run only these phases, in the command's order (default: all"
                        + (f" but {', '.join(spec.more_phases)}" if spec.more_phases else "")
                        + ")")
    p.add_argument("--schedulers", metavar="S[,S]",
                   help="run only these of our modes (default: "
                        + ",".join(spec.schedulers)
                        + (f"; also {', '.join(spec.more_schedulers)}" if spec.more_schedulers
                           else "") + "); EEVDF and --external still run")
    p.set_defaults(func=lambda args, spec=spec: run_command(spec, args))


def add_all(sub: argparse._SubParsersAction) -> None:
    for spec in COMMANDS:
        add_parser(sub, spec)


def plan_from_args(spec: Command, args: argparse.Namespace,
                   native_online: int | None = None) -> P.Plan:
    """The plan; native_online: the online CPU count of a native run (the only core count)."""
    from .native import native_cores

    if args.iterations < 1:
        raise PandemoniumError(f"{spec.name}: --iterations must be at least 1")
    try:
        cores = None if args.cores is None else P.parse_cores(args.cores, max_cpus=64)
    except ValueError as exc:
        raise PandemoniumError(f"{spec.name}: {exc}") from None
    if native_online is not None:
        cores = native_cores(cores, native_online, spec.name)
    elif cores is None:
        cores = P.parse_cores(spec.cores)
    sizes = P.Sizes.quick() if args.quick else P.Sizes()
    if args.phase_seconds is not None:
        if args.phase_seconds < 1:
            raise PandemoniumError(f"{spec.name}: --phase-seconds must be at least 1")
        sizes.phase_s = args.phase_seconds
    if args.coop_regions is not None:
        if args.coop_regions < 1:
            raise PandemoniumError(f"{spec.name}: --coop-regions must be at least 1")
        sizes.coop_regions = args.coop_regions
    phases = pick(spec.name, "--phases", args.phases, spec.phases, spec.more_phases)
    scheds = pick(spec.name, "--schedulers", args.schedulers, spec.schedulers,
                  spec.more_schedulers)
    external = [] if args.pandemonium_only else anchors.parse_externals(args.external)
    scheds += [e.label for e in external]
    return P.Plan(phases=phases, schedulers=scheds,
                  cores=cores[:1] if args.quick else cores,
                  iterations=1 if args.quick else args.iterations,
                  bracket=spec.bracket and not args.pandemonium_only, sizes=sizes,
                  external=external, sched_args=list(spec.sched_args),
                  closing_bracket=not args.quick)


def topology_from_args(spec: Command, args: argparse.Namespace, plan: P.Plan):
    """--topology as a vm.qemu.Topology (None when not given), checked against the VM's size."""
    from ..vm.runner import checked_topology

    try:
        return checked_topology(args.topology, [max(plan.cores)])
    except PandemoniumError as exc:
        raise PandemoniumError(f"{spec.name}: {exc}") from None


def pick(command: str, flag: str, spec: str | None, default: list[str],
         more: tuple[str, ...] = ()) -> list[str]:
    """A comma list narrowed from `default` + `more` (kept in that order); a name outside them is
    refused. No list: `default`."""
    if spec is None:
        return list(default)
    allowed = list(default) + [m for m in more if m not in default]
    wanted = [w.strip() for w in spec.split(",") if w.strip()]
    unknown = [w for w in wanted if w not in allowed]
    if unknown or not wanted:
        raise PandemoniumError(f"{command}: {flag} {spec!r}: choose from {', '.join(allowed)}")
    return [a for a in allowed if a in wanted]


def run_command(spec: Command, args: argparse.Namespace) -> int:
    from .. import build
    from .. import packages as pkgs

    from .driver import run_bench
    from .native import decide_here, online_cpus, run_native

    native, why = decide_here(args.vm or bool(args.topology))
    plan = plan_from_args(spec, args, online_cpus() if native else None)
    topology = topology_from_args(spec, args, plan)
    log.info("%s: %s", spec.name, why)
    build.ensure_packages(vm=not native, extra=pkgs.group("bench"))
    if not args.no_build:
        build.build_release()
    else:
        # The guest driver runs both: the scheduler, and the tools binary for probe and stress.
        for built in (scheduler_binary(), tools_binary()):
            if not built.is_file():
                raise PandemoniumError(f"--no-build: {built} is missing; build it first "
                                       "(./pandemonium.py build)")
    plan.external = [anchors.resolve(e) for e in plan.external]
    ensure_matplotlib()
    out = (Path(args.out).expanduser() if args.out
           else cache_dir("bench") / f"{time.strftime('%Y%m%d-%H%M%S')}-{spec.name}")
    out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if native:
        result = run_native(plan, out, echo=args.echo)
    else:
        result = run_bench(plan, out, kernel=args.kernel, accel=args.accel, echo=args.echo,
                           topology=topology)
    result.env["externals"] = {e.label: e.describe() for e in plan.external}
    cells = aggregate(oversub.expand(felt.expand(expand(result.records))))
    shown = P.report_phases(plan.phases)
    notes = notes_for(spec, result, cells)
    title = f"{spec.name}{' (quick)' if args.quick else ''}"
    md = markdown(title, result.env, cells, shown, notes)
    (out / "report.md").write_text(md)
    write_json(out / "results.json", {
        "command": spec.name, "quick": args.quick, "env": result.env, "events": result.events,
        "plan": {"phases": plan.phases, "schedulers": plan.schedulers, "cores": plan.cores,
                 "iterations": plan.iterations, "bracket": plan.bracket,
                 "sizes": vars(plan.sizes), "runs": [r.token() for r in plan.runs()]},
        "records": [asdict(r) for r in result.records],
        "cells": [c.to_json() for c in cells], "notes": notes,
        "scoreboard": scoreboard.to_json(cells, shown)})
    plots = plot(out, cells, shown)
    print(md, flush=True)
    log.info("%s: %s; finished in %s", spec.name, plots, P.fmt_duration(time.monotonic() - started))
    print(f"{spec.name}: results in {out}", flush=True)
    return 1 if failed(result, notes) else 0


def failed(result, notes: list[str]) -> bool:
    """The command's verdict: the driver failed, a fatal event (an external anchor's own
    failure is not one), or a FAIL note."""
    return (result.rc != 0 or any(event_is_fatal(e) for e in result.events if e)
            or any(n.startswith("FAIL") for n in notes))


def notes_for(spec: Command, result, cells) -> list[str]:
    """The closing notes: failures first, then the per-command verdicts."""
    events = [e for e in result.events if e]
    notes = [f"FAIL guest event: {e}" for e in events if event_is_fatal(e)]
    notes += [f"guest event: {e}" for e in events if not event_is_fatal(e)]
    bad = [r for r in result.records if r.error]
    notes += [f"phase failed: {r.phase} at {r.cores} cores, {r.scheduler} iteration "
              f"{r.iteration}: {r.error}" for r in bad]
    if result.rc != 0:
        notes.append(f"FAIL the guest exited with status {result.rc}")
    env = result.env
    notes += crash_notes(env)
    notes.append(f"host: {env.get('host_cores')} cores, load average "
                 f"{env.get('host_loadavg_before')} before, {env.get('host_loadavg_after')} after "
                 "(other work shares these cores)")
    for label, what in (env.get("externals") or {}).items():
        version = env.get(f"version_{label}")
        notes.append(f"'{label}' is {what}" + (f", reporting '{version}'" if version else "")
                     + " (attached and detached like pandemonium)")
    notes += VERDICTS.get(spec.name, lambda r, c: [])(result, cells)
    return notes


def crash_notes(env: dict) -> list[str]:
    """What a guest crash cost (driver.run_bench resumes it, the console stream saves the steps
    a boot finished): boots, where it resumed, steps recovered, brackets spanning two boots."""
    out = []
    planned, got = env.get("steps_planned"), env.get("steps_recorded")
    if env.get("resume_stopped"):
        out.append(f"FAIL not resumed further: {env['resume_stopped']}")
    for r in env.get("recovered_from_stream") or []:
        out.append(f"boot {r['boot']}: no results tar from the guest ({r['after']}); its "
                   f"{r['steps']} finished step(s) were recovered from the console stream")
    if (env.get("boots") or 1) > 1:
        resumed = "; ".join(f"resumed at step {r['from_step']} in boot {r['boot']} after: "
                            f"{r['after']}" for r in env.get("resumes") or [])
        out.append(f"boots: {env['boots']} ({resumed}); {env.get('step_boots')}")
        cross = env.get("cross_boot_brackets") or []
        out.append("EEVDF brackets spanning two boots (not same-boot comparisons; boots differ "
                   "in TCG pace): " + "; ".join(cross) if cross else
                   "every scheduler run and its EEVDF bracket come from the same boot")
    if planned is not None and got is not None and got < planned and \
            (env.get("boots") or env.get("recovered_from_stream")):
        out.append(f"FAIL {got} of {planned} planned steps recorded")
    return out

"""Per-command closing notes of the bench-* commands (commands.notes_for appends them): the
cost targets of bench-power, the pinned workers of bench-pcpu, the scx CI check, perf counters,
BPF program statistics and telemetry captures."""

from __future__ import annotations

import statistics

from . import felt
from .plan import EEVDF, PHASES, is_external

COST_CPU_PCT_MAX = 0.5  # issue #6
COST_RSS_MIB_MAX = 32.0
# stop-status: the scheduler exited non-zero on SIGTERM (not a clean unload); ejected: the
# kernel kicked it out mid-phase (e.g. the sched_ext watchdog saw a runnable task stall).
FATAL_EVENTS = ("stop-timeout", "attach-failed", "skipped", "hotplug-failed", "stop-status",
                "ejected")
# An external anchor that does not attach, is ejected or exits badly is a finding about that
# scheduler (a row in the tables says why), not a failure of the run.
EXTERNAL_FINDINGS = ("attach-failed", "ejected", "stop-status")


def event_scheduler(event: str) -> str | None:
    """The scheduler named by an event's tag ('attach-failed c2-i1-bpfland exited ...')."""
    words = event.split()
    if len(words) < 2:
        return None
    tag = words[1].rstrip(":")
    parts = tag.split("-", 2)
    if len(parts) == 3 and parts[0][:1] == "c" and parts[1][:1] == "i":
        return parts[2]
    return None


def event_is_fatal(event: str) -> bool:
    """A guest event that fails the command: any of FATAL_EVENTS, except an external
    scheduler's own EXTERNAL_FINDINGS (ours failing to attach stays fatal)."""
    kind = event.split()[0] if event.split() else ""
    if kind not in FATAL_EVENTS:
        return False
    sched = event_scheduler(event)
    return not (kind in EXTERNAL_FINDINGS and sched is not None and is_external(sched))


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
            ok = c.failures == 0 and not any(event_is_fatal(e) for e in result.events)
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
        progs = per_prog_line(x)
        if progs:
            out.append(f"{r.scheduler} at {r.cores} cores, ns per call (run_time_ns / run_cnt, "
                       f"guest time): {progs}"
                       + (f"; attached in {x['attach_s']:.2f} s" if "attach_s" in x else "")
                       + (f"; {x['lock_contentions']} contended spinlocks"
                          if "lock_contentions" in x else "")
                       + (f"; daemon CPU {r.sched_cpu_pct:.1f} %"
                          if r.sched_cpu_pct is not None else ""))
        if x.get("profile"):
            out.append(f"{r.scheduler} at {r.cores} cores, {profile_line(x['profile'])}")
    return out + [f"raw captures: {result.results_dir / 'raw'}"]


def profile_line(profile: dict) -> str:
    """A --features profile build's own timing: ns per call without the calls of 20 us or more
    (under an emulator, calls whose vCPU lost its turn), callbacks first, then dispatch steps."""
    def cell(name, p):
        return f"{name} {p['short_ns_per_call']} (n={p['calls']}, {p['long_calls']} longer)"

    steps = sorted((n for n in profile if n.startswith("dispatch step ")),
                   key=lambda n: int(n.rsplit(" ", 1)[1]))
    callbacks = [n for n in profile if n not in steps]
    line = ("ns per call timed inside BPF (--features profile), calls of 20 us or more left out: "
            + ", ".join(cell(n, profile[n]) for n in callbacks))
    if steps:
        line += "; dispatch steps (enum disp_step): " + ", ".join(
            cell(n.rsplit(" ", 1)[1], profile[n]) for n in steps)
    return line


def per_prog_line(extra: dict) -> str:
    """'select_cpu 310 (n=1200), ...': issue #33's hot callbacks first, then the others that ran."""
    from .parse import HOT_CALLBACKS

    per = extra.get("bpf_per_prog") or {}
    names = [c for c in HOT_CALLBACKS if c in per]
    names += sorted(n for n in per if n not in HOT_CALLBACKS and per[n]["run_cnt"])
    return ", ".join(f"{n} {per[n]['ns_per_call']:.0f} (n={per[n]['run_cnt']})"
                     if per[n]["ns_per_call"] is not None else f"{n} - (n=0)" for n in names)


def _sys(result, cells) -> list[str]:
    out = []
    for log_file in sorted((result.results_dir / "raw").glob("*.sched.log")):
        lines = [ln for ln in log_file.read_text(errors="replace").splitlines()
                 if ln.startswith("d/s:")]
        out.append(f"{log_file.name}: {len(lines)} telemetry lines"
                   + (f"; last: {lines[-1]}" if lines else " (FAIL: none captured)"))
    return out or ["FAIL no scheduler log captured"]


def _floor(result, cells) -> list[str]:
    """The latency phases read against the guest's idle floor (the probe with no load): a target
    below every scheduler's floor is one no scheduler can meet in this guest."""
    out = []
    med = {(c.phase, c.cores, c.scheduler): c.median for c in cells if c.median is not None}
    for cores in sorted({c.cores for c in cells if c.phase == "floor"}):
        floors = {s: v for (p, n, s), v in med.items() if p == "floor" and n == cores}
        if not floors:
            continue
        out.append(f"idle floor at {cores} cores (probe P99, no load): "
                   + ", ".join(f"{s} {v:.0f} us" for s, v in sorted(floors.items())))
        eevdf = med.get(("latency", cores, EEVDF))
        goal = PHASES["latency"].target
        if eevdf is not None and goal is not None:
            lowest = min(floors.values())
            side = "below" if eevdf * goal < lowest else "at or above"
            out.append(f"latency target at {cores} cores: {goal}x EEVDF's {eevdf:.0f} us = "
                       f"{eevdf * goal:.0f} us, {side} the lowest idle floor ({lowest:.0f} us)")
    return out


WAKE_RUN_PHASES = ("floor", "latency", "burst", "longrun", "mixed")


def _medians(vals: dict[tuple, list[float]], cores: int, what: str) -> dict[str, float]:
    """Each scheduler's median of its runs at @cores, from @vals keyed (cores, what, scheduler),
    in the order the runs came."""
    return {s: statistics.median(v) for (c, w, s), v in vals.items() if c == cores and w == what}


def _wake_to_run(result) -> list[str]:
    """Per latency-type phase, each scheduler's median wake-to-run P99 (driver.sh probe_split)
    and its ratio to EEVDF's: the part of the probe's figure that the scheduler decides."""
    vals: dict[tuple, list[float]] = {}
    for r in result.records:
        v = (r.extra or {}).get("wake_run_p99_us")
        if r.phase in WAKE_RUN_PHASES and v is not None:
            vals.setdefault((r.cores, r.phase, r.scheduler), []).append(v)
    out = []
    for cores in sorted({k[0] for k in vals}):
        parts = []
        for phase in WAKE_RUN_PHASES:
            med = _medians(vals, cores, phase)
            if not med:
                continue
            base = med.get(EEVDF)
            parts.append(f"{phase}: " + ", ".join(
                f"{s} {m:.0f} us" + (f" ({m / base:.2f}x)" if base and s != EEVDF else "")
                for s, m in sorted(med.items())))
        out.append(f"wake-to-run P99 at {cores} cores (kernel sched_waking to switch-in of the "
                   "probe, the scheduler's own part of its figure; median of runs, ratio to "
                   "EEVDF's median): " + "; ".join(parts))
    return out


# The admin phase's side figures: (figure, extra key, what it is).
ADMIN_SIDE = (("admin-cpumax", "free_cpus", "the unlimited group's CPUs beside the capped one"),
              ("admin-build", "build_cpus", "the cpu.weight=20 build's CPUs while hackbench ran"))


def _step_figures(result, phase: str, picks: dict) -> dict[tuple, list[float]]:
    """(cores, figure, scheduler) -> runs, in plan order, of what picks[figure](its dict) reads
    from each @phase step's extra["figures"] (admin.py, oversub.py). In a failed step a part that
    ended with the scheduler ejected is left out: it was measured partly under EEVDF."""
    vals: dict[tuple, list[float]] = {}
    for r in result.records:
        figs = (r.extra or {}).get("figures") if r.phase == phase else None
        for fig, pick in picks.items() if figs else ():
            f = figs.get(fig) or {}
            if r.error and f.get("state") != "enabled":
                continue
            v = pick(f)
            if v is not None:
                vals.setdefault((r.cores, fig, r.scheduler), []).append(v)
    return vals


def _admin_side(result) -> list[str]:
    """Per core count, each scheduler's median of the admin phase's side figures: where the
    CPU the capped or light group did not get went."""
    def extra(key):
        return lambda f: (f.get("extra") or {}).get(key)

    vals = _step_figures(result, "admin", {fig: extra(key) for fig, key, _ in ADMIN_SIDE})
    out = []
    for cores in sorted({k[0] for k in vals}):
        for fig, _, what in ADMIN_SIDE:
            med = _medians(vals, cores, fig)
            if med:
                out.append(f"{what} at {cores} cores (median of runs): "
                           + ", ".join(f"{s} {m:.3f}" for s, m in med.items()))
    return out


def _launch_side(result) -> list[str]:
    """Per core count, each scheduler's median of the busy loops' CPUs while the launch phase
    ran, against their fair share: a launch figure bought from the loops shows here."""
    vals: dict[tuple, list[float]] = {}  # (cores, "launch", scheduler) -> runs
    fair: dict[int, float] = {}
    for r in result.records:
        x = r.extra or {}
        if r.phase == "launch" and not r.error and x.get("load_cpus") is not None:
            vals.setdefault((r.cores, r.phase, r.scheduler), []).append(x["load_cpus"])
            fair[r.cores] = x["load_fair_cpus"]
    out = []
    for cores in sorted(fair):
        med = _medians(vals, cores, "launch")
        out.append(f"busy loops' CPUs while the launches ran at {cores} cores (median of runs; "
                   f"their fair share beside the launch chain {fair[cores]:.2f}): "
                   + ", ".join(f"{s} {m:.2f} ({m / fair[cores]:.2f}x)" for s, m in med.items()))
    return out


# The oversub figures whose best makespan is k times one active process alone (each team run
# whole, in turn): figure -> k.
OVERSUB_BOUNDED = (("oversub-active", 2), ("oversub-active-3", 3))


def _oversub_bound(result) -> list[str]:
    """Per core count, each scheduler's active-wait makespans against k times one process alone
    (the fastest scheduler's median of that run, one yardstick for all): how far each is from
    running the teams whole, in turn, and for EEVDF how much any scheduler could gain over it in
    this boot (a target of 3x EEVDF is out of reach where EEVDF is within 3x of it)."""
    vals = _step_figures(result, "oversub", {fig: lambda f: f.get("value") for fig in
                                             ("oversub-active-1", *dict(OVERSUB_BOUNDED))})
    out = []
    for cores in sorted({k[0] for k in vals}):
        alone = _medians(vals, cores, "oversub-active-1")
        if not alone:
            continue
        who, best = min(alone.items(), key=lambda a: a[1])
        for fig, k in OVERSUB_BOUNDED:
            med = _medians(vals, cores, fig)
            if med:
                out.append(f"{fig} at {cores} cores against {k} x one process alone ({who}'s "
                           f"median {best:.2f} s, the fastest; near 1.00x the teams run whole, "
                           "in turn): " + ", ".join(f"{s} {m:.2f} s ({m / (k * best):.2f}x)"
                                                    for s, m in med.items()))
    return out


def _oversub_latency(result) -> list[str]:
    """Per core count, each scheduler's cyclictest P99 beside the active-wait processes against
    ours with the cooperative treatment off (the plain `pandemonium` run): #34 asks that the
    treatment cost the interactive wakeups nothing over it. The spread is every run's range."""
    fig = "oversub-cyclictest"
    vals = _step_figures(result, "oversub", {fig: lambda f: f.get("value")})
    out = []
    for cores in sorted({k[0] for k in vals}):
        med = _medians(vals, cores, fig)
        plain = med.get("pandemonium")
        if not plain:
            continue

        def one(s, m):
            runs = vals[(cores, fig, s)]
            return (f"{s} {m / 1e3:.2f} ms ({min(runs) / 1e3:.2f}-{max(runs) / 1e3:.2f}, "
                    f"{m / plain:.2f}x)")
        out.append(f"{fig} at {cores} cores against ours with the cooperative treatment off "
                   f"(median of runs, min-max, ratio to pandemonium's {plain / 1e3:.2f} ms): "
                   + ", ".join(one(s, m) for s, m in med.items()))
    return out


def _scale(result, cells) -> list[str]:
    return _floor(result, cells) + _wake_to_run(result) + _admin_side(result) \
        + _launch_side(result) + _oversub_bound(result) + _oversub_latency(result) \
        + felt.notes(result, cells)


VERDICTS = {"bench-scale": _scale, "bench-power": _power, "bench-pcpu": _pcpu, "bench-scx": _scx,
            "bench-fork-thread": _forkthread,
            "bench-trace": _trace, "bench-sys": _sys}

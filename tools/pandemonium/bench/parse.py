"""Turn what the guest driver wrote to /results into records: one per (cores, iteration,
scheduler, phase), with the phase's headline value (lower is better) and the scheduler's own cost.

Every tool's output format is handled here, on the host, so pytest can check it on fixtures.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..common import read_text

USER_HZ = 100  # /proc/PID/stat ticks; fixed at 100 on x86 Linux whatever CONFIG_HZ is
MIN_COST_WINDOW_S = 2.0
RC_EJECTED = 200  # driver.sh: the scheduler was no longer attached when the phase ended
RC_NOT_ATTACHED = 201  # driver.sh: the scheduler never attached; the output file says why


@dataclass
class Record:
    cores: int
    iteration: int
    scheduler: str
    phase: str
    rc: int
    wall_s: float
    value: float | None = None  # the phase's headline metric in Phase.unit
    p50: float | None = None
    max: float | None = None
    extra: dict = field(default_factory=dict)
    sched_cpu_pct: float | None = None  # scheduler process CPU, % of one CPU over the phase
    sched_rss_kb: int | None = None
    sched_hwm_kb: int | None = None
    error: str | None = None


def tool_json(text: str, tool: str) -> dict | None:
    """The last JSON line of `tool` in `text`; a line cut short (no JSON) is passed over."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                d = json.loads(line)
            except json.JSONDecodeError:
                continue
            if d.get("tool") == tool:
                return d
    return None


def _last_json(text: str, tool: str) -> dict:
    if (d := tool_json(text, tool)) is None:
        raise ValueError(f"no {tool} JSON in the output")
    return d


def _probe(text: str, rec: Record) -> None:
    d = _last_json(text, "probe")
    rec.p50, rec.max = d["p50_ns"] / 1e3, d["max_ns"] / 1e3
    rec.value = d["p99_ns"] / 1e3
    rec.extra = {"p999_us": d["p999_ns"] / 1e3, "count": d["count"],
                 "missed_periods": d.get("missed_periods")}
    # driver.sh probe_split: the scheduler's own part, from the kernel's sched events.
    m = re.search(r"^wake-to-run n=(\d+) p50_us=(\d+) p99_us=(\d+) max_us=(\d+)", text, re.M)
    if m:
        n, p50, p99, mx = (int(g) for g in m.groups())
        rec.extra.update(wake_run_n=n, wake_run_p50_us=p50, wake_run_p99_us=p99,
                         wake_run_max_us=mx)


def _deadline(text: str, rec: Record) -> None:
    _probe(text, rec)
    d = _last_json(text, "probe")
    rec.extra.update(p99_us=rec.value, wake_miss_pct=100.0 * d["wake_miss_ratio"],
                     deadline_misses=d["deadline_misses"])
    rec.value = 100.0 * d["deadline_miss_ratio"]


def _benchlat(text: str, rec: Record) -> None:
    d = _last_json(text, "benchlat")
    rec.value, rec.p50, rec.max = d["p99_ns"] / 1e3, d["p50_ns"] / 1e3, d["max_ns"] / 1e3
    rec.extra = {"count": d["count"], "mean_us": d["mean_ns"] / 1e3}


_LAUNCH_BESIDE = re.compile(
    r"^launch-beside loops (\d+) cpus (\d+) ticks (\d+) window_cs (\d+)$", re.M)


def _launch(text: str, rec: Record) -> None:
    """benchlat's launch times, and the CPUs the busy loops beside them got (driver.sh
    phase_launch): load_cpus against load_fair_cpus, their share if the launch chain counts as
    one more task that always wants a CPU."""
    _benchlat(text, rec)
    m = _LAUNCH_BESIDE.search(text)
    if m:
        loops, cpus, ticks, window_cs = map(int, m.groups())
        if window_cs > 0 and loops > 0:
            rec.extra["load_cpus"] = ticks / window_cs
            rec.extra["load_fair_cpus"] = cpus * loops / (loops + 1)


_PERF_TOTAL = re.compile(r"Total time:\s*([0-9.]+)\s*\[sec\]")


def search_number(rx: re.Pattern, text: str, what: str) -> float:
    m = rx.search(text)
    if not m:
        raise ValueError(f"no {what}")
    return float(m.group(1))


def _messaging(text: str, rec: Record) -> None:
    rec.value = search_number(_PERF_TOTAL, text, "'Total time' line from perf bench")
    rec.extra = perf_stat_counters(text)


def _throughput(text: str, rec: Record) -> None:
    if "successful run completed" not in text and "passed:" not in text:
        raise ValueError("stress-ng did not report a completed run")
    rec.value = rec.wall_s


def cyclictest_percentiles(text: str, quantiles: tuple[float, ...]) -> tuple[list[float],
                                                                              float | None]:
    """([percentile per quantile], max) in us over all threads from `cyclictest -h` rows
    'latency count count ...'. Overflows (beyond the histogram) count as above every bucket: a
    percentile that falls among them reads as the max."""
    counts: dict[int, int] = {}
    overflow = 0
    max_us = None
    for line in text.splitlines():
        if line.startswith("# Histogram Overflows:"):
            overflow += sum(int(x) for x in line.split(":", 1)[1].split())
        elif line.startswith("# Max Latencies:"):
            vals = [int(x) for x in line.split(":", 1)[1].split()]
            max_us = float(max(vals)) if vals else None
        elif re.match(r"^\d+(\s+\d+)+\s*$", line):
            lat, *per_thread = (int(x) for x in line.split())
            counts[lat] = counts.get(lat, 0) + sum(per_thread)
    total = sum(counts.values()) + overflow
    if total == 0:
        raise ValueError("no cyclictest histogram rows")
    out = []
    for q in quantiles:
        need, seen, found = q * total, 0, None
        for lat in sorted(counts):
            seen += counts[lat]
            if seen >= need:
                found = float(lat)
                break
        if found is None:  # among the overflows
            found = float(max_us if max_us is not None else max(counts))
        out.append(found)
    return out, max_us


def _cyclictest(text: str, rec: Record) -> None:
    (rec.p50, rec.value), rec.max = cyclictest_percentiles(text, (0.5, 0.99))


HACKBENCH_TIME = re.compile(r"^Time:\s*([0-9.]+)\s*$", re.M)


def _hackbench(text: str, rec: Record) -> None:
    """hackbench's own wall time ('Time: 1.234', seconds)."""
    rec.value = search_number(HACKBENCH_TIME, text, "'Time:' line from hackbench")


def _stress_gap(text: str, rec: Record) -> None:
    d = _last_json(text, "stress")
    rec.value = d["worst_gap_ns"] / 1e3
    rec.extra = {"workers": d["workers"], "min_iterations": d["min_iterations"],
                 "stranded": sum(1 for w in d["per_worker"] if w["iterations"] == 0)}


def perf_stat_counters(text: str) -> dict[str, float | str]:
    """`perf stat` rows: counter -> value, or '<not supported>' / '<not counted>'."""
    out: dict[str, float | str] = {}
    for line in text.splitlines():
        m = re.match(r"^\s*(<not supported>|<not counted>|[0-9][0-9,.]*)\s+(?:\S+\s+)?"
                     r"([a-zA-Z][\w/=-]*/?|[a-z-]+)\s*(?:#.*)?$", line)
        if not m or m.group(2) in ("seconds", "user", "sys"):
            continue
        raw, name = m.groups()
        out[name.strip("/")] = raw if raw.startswith("<") else float(raw.replace(",", ""))
    return out


def _rapl(text: str, rec: Record) -> None:
    counters = perf_stat_counters(text)
    energy = next((v for k, v in counters.items() if "energy-pkg" in k), None)
    if isinstance(energy, float):
        rec.value = energy
    else:
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        # perf names the problem in its first lines ("event syntax error", "Cannot find PMU").
        why = energy or (" ".join(lines[:2]) if lines else "no output")
        rec.extra = {"rapl_unavailable": str(why)[:200]}
        rec.error = None  # no RAPL counter is a finding of this phase (perf exits 129), not a failure


# sched_ext_ops callbacks, longest first: a struct_ops program is named <scheduler>_<callback>
# (pandemonium_select_cpu, bpfland_select_cpu), and its callback is the longest that ends it.
SCX_CALLBACKS = sorted((
    "select_cpu", "enqueue", "dequeue", "dispatch", "tick", "runnable", "running", "stopping",
    "quiescent", "yield", "core_sched_before", "set_weight", "set_cpumask", "update_idle",
    "cpu_acquire", "cpu_release", "init_task", "exit_task", "enable", "disable", "dump",
    "dump_cpu", "dump_task", "cgroup_init", "cgroup_exit", "cgroup_prep_move", "cgroup_move",
    "cgroup_cancel_move", "cgroup_set_weight", "cgroup_set_bandwidth", "cgroup_set_idle",
    "cpu_online", "cpu_offline", "init", "exit"), key=len, reverse=True)
# The callbacks issue #33 item 5 holds to a flat per-call cost from 2 to 64 CPUs, in its order.
HOT_CALLBACKS = ("select_cpu", "enqueue", "dispatch", "running", "stopping")


def callback_of(prog_name: str) -> str:
    """The sched_ext_ops callback a BPF program implements, from its name; the name itself when
    no callback ends it (a syscall or tracing program), '-' for an unnamed one."""
    for cb in SCX_CALLBACKS:
        if prog_name == cb or prog_name.endswith("_" + cb):
            return cb
    return prog_name or "-"


# A --features profile build's timing, which the guest appends at detach (profile.bpf.h prints
# 'pandemonium profile: NAME calls N ns/call N long N short ns/call N'; NAME a callback or
# 'dispatch step K').
PROFILE_LINE = re.compile(
    r"^profile (.+?) calls (\d+) ns/call (\d+) long (\d+) short ns/call (\d+)\s*$", re.M)


def _bpfstats(text: str, rec: Record) -> None:
    """perf messaging time, plus what phase_bpfstats appends: the BPF program stats ('bpfprog
    name=NAME prog_type: N prog_id: N run_time_ns: N run_cnt: N'; NAME '-' when the guest had no
    symbol for it), trace event counts ('COUNT trace EVENT:'), 'lock_contentions N' (contended
    spinlocks over the load, when perf could count them), 'attach_cs N' and
    'cpus_online N nodes M cpu0_siblings LIST' (SMT: CPU 0's thread siblings). extra['bpf_per_prog'] maps each callback to its run_cnt,
    run_time_ns and ns_per_call; extra['profile'], from a --features profile build, maps each
    timed callback and dispatch step to its calls, ns_per_call, long_calls (20 us or more) and
    short_ns_per_call (without them)."""
    _messaging(text, rec)
    progs = []
    for line in text.splitlines():
        if line.startswith("bpfprog "):
            prog = {k: int(v) for k, v in re.findall(r"(\w+):\s*(\d+)", line)}
            m = re.search(r"\bname=(\S+)", line)
            prog["name"] = m.group(1) if m and m.group(1) != "-" else ""
            progs.append(prog)
    events = {m.group(2).rstrip(":"): int(m.group(1))
              for m in re.finditer(r"^\s*(\d+) trace (\S+)", text, re.M)}
    runs = sum(p.get("run_cnt", 0) for p in progs)
    ns = sum(p.get("run_time_ns", 0) for p in progs)
    per: dict[str, dict] = {}
    for prog in progs:
        key = callback_of(prog["name"]) if prog["name"] else f"prog_id {prog.get('prog_id', '?')}"
        cell = per.setdefault(key, {"run_cnt": 0, "run_time_ns": 0})
        cell["run_cnt"] += prog.get("run_cnt", 0)
        cell["run_time_ns"] += prog.get("run_time_ns", 0)
    for cell in per.values():
        cell["ns_per_call"] = cell["run_time_ns"] / cell["run_cnt"] if cell["run_cnt"] else None
    rec.extra = {"bpf_progs": len(progs), "bpf_run_cnt": runs, "bpf_run_time_ns": ns,
                 "bpf_ns_per_run": ns / runs if runs else None, "trace_events": events,
                 "bpf_per_prog": per}
    m = re.search(r"^lock_contentions (\d+)", text, re.M)
    if m:
        rec.extra["lock_contentions"] = int(m.group(1))
    profile = {m.group(1): {"calls": int(m.group(2)), "ns_per_call": int(m.group(3)),
                            "long_calls": int(m.group(4)), "short_ns_per_call": int(m.group(5))}
               for m in PROFILE_LINE.finditer(text)}
    if profile:
        rec.extra["profile"] = profile
    m = re.search(r"^attach_cs (\d+)", text, re.M)
    if m:
        rec.extra["attach_s"] = int(m.group(1)) / 100.0
    m = re.search(r"^cpus_online (\d+) nodes (\d+)(?: cpu0_siblings (\S+))?", text, re.M)
    if m:
        rec.extra["cpus_online"], rec.extra["nodes"] = int(m.group(1)), int(m.group(2))
        if m.group(3) and m.group(3) != "-":
            rec.extra["cpu0_siblings"] = m.group(3)


def _telemetry(text: str, rec: Record) -> None:
    rec.value = None


def _admin(text: str, rec: Record) -> None:
    from .admin import parse_admin  # admin.py imports this module's cyclictest parser

    parse_admin(text, rec)


def _felt(text: str, rec: Record) -> None:
    from .felt import parse_felt  # felt.py imports this module's Record

    parse_felt(text, rec)


def _oversub(text: str, rec: Record) -> None:
    from .oversub import parse_oversub  # oversub.py imports this module's Record

    parse_oversub(text, rec)


PARSERS = {
    "throughput": _throughput, "floor": _probe, "latency": _probe, "burst": _probe,
    "longrun": _probe, "mixed": _probe, "deadline": _deadline, "ipc": _benchlat, "launch": _launch,
    "messaging": _messaging, "cyclictest": _cyclictest, "hackbench": _hackbench,
    "hogs": _probe, "recovery": _probe,
    "pinned": _stress_gap, "forkthread": _messaging, "bpfstats": _bpfstats, "rapl": _rapl,
    "idle": _telemetry, "busy": _telemetry, "telemetry": _telemetry,
    "admin": _admin, "frames": _felt, "audio": _felt, "oversub": _oversub,
}


def _cost(ticks0: str, ticks1: str, rss: str, hwm: str, rec: Record) -> None:
    if "-" in (ticks0, ticks1):
        return
    # One tick is 10 ms: below a 2 s window a single tick reads as >= 0.5 % of a CPU.
    if rec.wall_s >= MIN_COST_WINDOW_S:
        rec.sched_cpu_pct = 100.0 * (int(ticks1) - int(ticks0)) / USER_HZ / rec.wall_s
    rec.sched_rss_kb = None if rss == "-" else int(rss)
    rec.sched_hwm_kb = None if hwm == "-" else int(hwm)


def parse_step(line: str, raw_dir: Path) -> Record:
    """One steps.tsv line: cores iter sched phase rc t0 t1 ticks0 rss0 hwm0 ticks1 rss1 hwm1
    (times in centiseconds of guest uptime)."""
    f = line.split()
    if len(f) != 13:
        raise ValueError(f"malformed steps.tsv line: {line!r}")
    cores, it, sched, phase, rc, t0, t1 = f[:7]
    rec = Record(int(cores), int(it), sched, phase, int(rc), (int(t1) - int(t0)) / 100.0)
    _cost(f[7], f[10], f[11], f[12], rec)
    out = raw_dir / f"c{cores}-i{it}-{sched}.{phase}.out"
    text = out.read_text(errors="replace") if out.is_file() else ""
    if rec.rc == RC_NOT_ATTACHED:
        why = text.strip().splitlines()[:1] or ["no reason recorded"]
        rec.error = f"did not attach: {why[0][:300]}"
        return rec
    if rec.rc == RC_EJECTED:
        rec.error = "the kernel ejected the scheduler during this phase (see the events)"
    elif rec.rc != 0:
        tail = text.strip().splitlines()[-1:] or ["no output"]
        rec.error = f"exit status {rec.rc}: {tail[0][:200]}"
    if phase not in PARSERS:
        rec.error = rec.error or f"unknown phase {phase!r}"
        return rec
    try:
        PARSERS[phase](text, rec)
    except (ValueError, KeyError, TypeError) as exc:
        rec.error = rec.error or f"{phase}: {exc}"
    if rec.error:
        rec.value = None
    return rec


def parse_results(results: Path) -> tuple[list[Record], list[str], dict[str, str]]:
    """(records, events, guest environment) from a copied /results directory."""
    steps = results / "steps.tsv"
    if not steps.is_file():
        raise FileNotFoundError(f"{steps} missing: the guest driver did not run")
    records = [parse_step(line, results / "raw") for line in steps.read_text().splitlines()
               if line.strip()]
    events = read_text(results / "events.log").splitlines()
    env = {}
    for line in read_text(results / "env.txt").splitlines():
        key, _, value = line.partition(" ")
        env[key] = value
    return records, events, env


def tagged_sections(text: str, tag: str) -> dict[str, str]:
    """NAME -> the lines between `TAG-begin NAME` and `TAG-end NAME` in a guest phase's output
    (an unterminated section runs to the end: the tool was cut off, its parser says what is
    missing)."""
    out: dict[str, str] = {}
    current, lines = None, []
    for line in text.splitlines():
        if line.startswith(f"{tag}-begin "):
            current, lines = line.split(None, 1)[1].strip(), []
        elif line.startswith(f"{tag}-end ") and current is not None:
            out[current] = "\n".join(lines)
            current = None
        elif current is not None:
            lines.append(line)
    if current is not None:
        out[current] = "\n".join(lines)
    return out


def tagged_states(text: str, tag: str) -> dict[str, str]:
    """PART -> the sched_ext state when it ended, from `TAG-state PART STATE` lines ('enabled'
    while a scheduler was attached)."""
    rx = re.compile(rf"^{tag}-state (\S+) (\S+)\s*$")
    return {m.group(1): m.group(2) for line in text.splitlines() if (m := rx.match(line.strip()))}


def tagged_notes(text: str, tag: str) -> dict[str, list[str]]:
    """PART -> the TEXTs of its `TAG-note PART TEXT` lines: why a part's figure is missing or
    unfit."""
    rx = re.compile(rf"^{tag}-note (\S+) (.*)$")
    out: dict[str, list[str]] = {}
    for line in text.splitlines():
        if m := rx.match(line.strip()):
            out.setdefault(m.group(1), []).append(m.group(2).strip())
    return out


def expand_figures(records: list, names_of) -> list:
    """A guest step that yields several figures (admin, frames, audio) becomes one record per
    figure, `names_of(phase)` naming them (None: the record stays as it is). A step that failed as
    a whole gives every figure its error, except that a scheduler the kernel ejected mid-step keeps
    the figures of the parts it was still attached at the end of."""
    out = []
    for r in records:
        names = names_of(r.phase)
        if names is None:
            out.append(r)
            continue
        figs = (r.extra or {}).get("figures", {})
        for i, name in enumerate(names):
            f = figs.get(name)
            # The scheduler's cost is the whole step's: the first figure carries it, once.
            rec = r if i == 0 else replace(r, sched_cpu_pct=None, sched_rss_kb=None,
                                           sched_hwm_kb=None)
            kept = r.rc == RC_EJECTED and f is not None and f.get("state") == "enabled"
            if (r.error and not kept) or f is None:
                out.append(replace(rec, phase=name, value=None, extra={},
                                   error=r.error or f"{name}: not in the output"))
            else:
                out.append(replace(rec, phase=name, value=f["value"], extra=dict(f["extra"]),
                                   error=f["error"]))
    return out

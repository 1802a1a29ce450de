"""Turns one guest run's /results (cells.txt, the stress tools' JSON, sched.log, dmesg.txt) into
per-workload outcomes, and decides which outcomes are unexpected."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..common import read_text

KMSG_MARK = "pandemonium-stress: begin "
SLOG_BEGIN = "@@ begin "
SLOG_END = "@@ end "
_RESCUE = re.compile(r"\brescue: (\d+)")


@dataclass
class Cell:
    kernel: str
    cpus: int
    mode: str
    workload: str
    duration_s: int
    ran: bool = False
    completed: bool = False
    secs: int | None = None
    monitor_wait_ms: float | None = None
    load_wait_ms: float | None = None
    rescues: int | None = None
    mem_avail_mb: int | None = None
    unexpected: list[str] = field(default_factory=list)
    # Outcomes the kernel causes whatever the scheduler does (see workloads.RT_WORKLOADS).
    kernel_limit: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


# Beyond the gate's rule: RCU stalls, starved kthreads, hung tasks and the OOM killer, which is
# how a task starved for too long shows up when sched_ext's own watchdog does not fire.
_SYSTEM_TROUBLE = ("detected stalls on CPUs/tasks", "kthread starved for", "blocked for more than",
                   "invoked oom-killer")


def kernel_complaints(lines: list[str]) -> list[str]:
    """Kernel log lines that mean the scheduler misbehaved or the system wedged: a stall
    ejection, a disable other than the user-space unregister we asked for, a BUG or WARNING, an
    RCU stall, a hung task, the OOM killer."""
    out = []
    for line in lines:
        if ("runnable task stall" in line
                or ("sched_ext" in line and "disabled (" in line
                    and "unregistered from user space" not in line)
                or "BUG:" in line or "WARNING:" in line
                or any(t in line for t in _SYSTEM_TROUBLE)):
            out.append(line.strip())
    return out


def split_kmsg(text: str, workloads: list[str]) -> dict[str, list[str]]:
    """Kernel log lines per workload: from its begin marker to the next one. Lines before the
    first marker (boot, first attach) belong to the first workload."""
    segs: dict[str, list[str]] = {w: [] for w in workloads}
    current = workloads[0] if workloads else None
    for line in text.splitlines():
        idx = line.find(KMSG_MARK)
        if idx >= 0:
            # A workload this run was not asked about owns its lines too: drop them.
            name = line[idx + len(KMSG_MARK):].strip()
            current = name if name in segs else None
            continue
        if current is not None:
            segs[current].append(line)
    return segs


def rescues_by_workload(slog: str) -> dict[str, int]:
    """Sum of the per-second `rescue: N` telemetry between each workload's markers."""
    out: dict[str, int] = {}
    current = None
    for line in slog.splitlines():
        if line.startswith(SLOG_BEGIN):
            current = line[len(SLOG_BEGIN):].strip()
            out[current] = 0
        elif line.startswith(SLOG_END):
            current = None
        elif current and line.startswith("d/s:"):
            m = _RESCUE.search(line)
            if m:
                out[current] += int(m.group(1))
    return out


def parse_cells(text: str) -> tuple[dict[str, dict[str, str]], dict[str, str], dict[str, str]]:
    """cells.txt: one `kernel key=value ...` line (what the guest kernel offers), `cell
    key=value ...` per workload and one `final key=value ...` line."""
    cells: dict[str, dict[str, str]] = {}
    final: dict[str, str] = {}
    kernel: dict[str, str] = {}
    for line in text.splitlines():
        kind, _, rest = line.partition(" ")
        kv = dict(item.split("=", 1) for item in rest.split() if "=" in item)
        if kind == "cell" and "workload" in kv:
            cells[kv["workload"]] = kv
        elif kind == "final":
            final = kv
        elif kind == "kernel":
            kernel = kv
    return cells, final, kernel


# What RT starvation of ext tasks looks like: sched_ext's watchdog ejecting the scheduler, or,
# when the starved task is RCU's or a kworker, the system-wide stall reports.
_STARVATION = ("runnable task stall", "kthread starved for", "detected stalls on CPUs/tasks",
               "blocked for more than")
NO_EXT_SERVER = "kernel limit: RT work starves ext tasks on a kernel without the sched_ext DL server"


def is_starvation(outcome: str) -> bool:
    return any(t in outcome for t in _STARVATION) or outcome.startswith("not run:")


def apply_kernel_limit(cell: Cell, rt_workloads: set[str], ext_server: str | None) -> None:
    """An RT workload's starvation outcomes on a kernel without the ext DL server are the
    kernel's limit: they move from `unexpected` to `kernel_limit` (BUGs and WARNINGs stay)."""
    if cell.workload not in rt_workloads or ext_server != "0":
        return
    if not any(is_starvation(u) for u in cell.unexpected):
        return
    keep = [u for u in cell.unexpected if "BUG:" in u or "WARNING:" in u]
    moved = [u for u in cell.unexpected if u not in keep]
    cell.unexpected = keep
    cell.kernel_limit = [NO_EXT_SERVER] + moved


def worst_gap_ms(path: Path) -> float | None:
    """worst_gap_ns of a `pandemonium-tools stress` JSON report, in ms; None if absent/partial."""
    try:
        data = json.loads(path.read_text())
        return data["worst_gap_ns"] / 1e6
    except (OSError, ValueError, KeyError, TypeError):
        return None


def judge(cell: Cell, kv: dict[str, str] | None, kmsg: list[str]) -> None:
    """Fills in ran/completed/unexpected from the driver's record and the kernel log."""
    if kv is None:
        # A workload the guest never finished may still have left its reason in the kernel log.
        cell.unexpected.append("not run: the guest ended before this workload")
        cell.unexpected += [f"kernel: {c}" for c in kernel_complaints(kmsg)]
        return
    cell.ran = kv.get("rc") != "noattach"
    if not cell.ran:
        cell.unexpected.append("scheduler did not attach")
        return
    cell.completed = kv.get("rc") == "0"
    if kv.get("secs", "").isdigit():
        cell.secs = int(kv["secs"])
    if kv.get("monitor_rc") not in (None, "0"):
        cell.notes.append(f"monitor exit {kv['monitor_rc']}")
    if kv.get("prestop") == "hang":
        cell.unexpected.append("scheduler hung on exit (SIGINT)")
    elif kv.get("prestop") not in (None, "-", "0", "none"):
        cell.unexpected.append(f"scheduler exit status {kv['prestop']} after SIGINT")
    if cell.workload == "scxci":
        if kv.get("sched_exit") != "0":
            cell.unexpected.append(f"scx CI check: exit status {kv.get('sched_exit')} after SIGTERM")
    elif kv.get("sched_alive") != "1":
        cell.unexpected.append(f"scheduler exited during the workload (status {kv.get('sched_exit')})")
    cell.unexpected += [f"kernel: {c}" for c in kernel_complaints(kmsg)]


def _ns_to_ms(v: str | None) -> float | None:
    return int(v) / 1e6 if v and v.isdigit() else None


def read_run(results: Path | None, kernel: str, cpus: int, mode: str, workloads: list[str],
             duration: int, guest_rc: int, console: Path | None = None,
             rt_workloads: set[str] | frozenset[str] = frozenset(),
             host_problems: list[str] | tuple[str, ...] = ()
             ) -> tuple[list[Cell], list[str], list[str]]:
    """The cells of one guest run, the run's own unexpected outcomes (final stop, guest) and
    the run outcomes that are kernel limits (the guest ending in an RT workload on a kernel
    without the ext DL server). `host_problems` are what the host saw (a wedged guest). When
    the guest wedged and /results never came back, the driver's lines and the kernel messages
    are recovered from the console log."""
    base = results or Path("/nonexistent")
    cells_text, kmsg_text = read_text(base / "cells.txt"), read_text(base / "dmesg.txt")
    if not cells_text and console:
        cells_text = kmsg_text = read_text(console)
    kv_cells, final, kinfo = parse_cells(cells_text)
    ext_server = kinfo.get("ext_server")
    kmsg = split_kmsg(kmsg_text, workloads)
    rescues = rescues_by_workload(read_text(base / "sched.log"))
    cells = []
    for w in workloads:
        c = Cell(kernel, cpus, mode, w, duration)
        judge(c, kv_cells.get(w), kmsg.get(w, []))
        kv = kv_cells.get(w, {})
        c.rescues = rescues.get(w)
        if c.rescues is None and kv.get("rescues", "").isdigit():
            c.rescues = int(kv["rescues"])
        c.monitor_wait_ms = worst_gap_ms(base / f"{w}.monitor.json")
        if c.monitor_wait_ms is None:
            c.monitor_wait_ms = _ns_to_ms(kv.get("mon_ns"))
        loads = [worst_gap_ms(p) for p in sorted(base.glob(f"{w}.*.json"))
                 if not p.name.endswith(".monitor.json")]
        loads = [x for x in loads if x is not None]
        c.load_wait_ms = max(loads) if loads else _ns_to_ms(kv.get("load_ns"))
        if kv.get("mem_avail_kb", "").isdigit():
            c.mem_avail_mb = int(kv["mem_avail_kb"]) // 1024
        apply_kernel_limit(c, set(rt_workloads), ext_server)
        cells.append(c)
    run_problems = []
    if final.get("stop") == "hang":
        run_problems.append("scheduler hung on the final stop (SIGINT)")
    elif final.get("stop") not in (None, "0", "none"):
        run_problems.append(f"final stop: exit status {final.get('stop')}")
    if guest_rc != 0:
        run_problems.append(f"guest command exit status {guest_rc}")
    elif not final:
        run_problems.append("the driver did not finish")
    run_problems += host_problems
    # Where the run ended in a workload whose cell is a kernel limit, so is the ending: inside an
    # RT workload, everything but a hang on the final stop; after one that ran to its end and
    # ejected the scheduler, the final stop's exit status, which reports that ejection again.
    unfinished = [c for c in cells if c.workload not in kv_cells]
    ran = [c for c in cells if c.workload in kv_cells]
    if unfinished:
        last, where = unfinished[0], "in"
        moves = [p for p in run_problems if not p.startswith("scheduler hung")]
    else:
        last, where = (ran[-1] if ran else None), "after"
        moves = [p for p in run_problems if p.startswith("final stop: exit status")]
    run_limits: list[str] = []
    if last and last.kernel_limit:
        run_limits = [f"{p} ({where} {last.workload})" for p in moves]
        run_problems = [p for p in run_problems if p not in moves]
    return cells, run_problems, run_limits

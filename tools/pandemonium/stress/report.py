"""The matrix report: the summary line, a Markdown table, and the JSON record."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .results import Cell


@dataclass
class Run:
    """One guest boot: a (kernel, vCPUs, mode) combination running every workload."""
    kernel: str
    cpus: int
    mode: str
    guest_rc: int
    duration_s: float
    cells: list[Cell] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    results_dir: str | None = None
    # Run outcomes that are kernel limits (the guest ended in such a cell).
    kernel_limits: list[str] = field(default_factory=list)


def unexpected_count(runs: list[Run]) -> int:
    return sum(len(c.unexpected) for r in runs for c in r.cells) + sum(len(r.problems) for r in runs)


def kernel_limit_count(runs: list[Run]) -> int:
    """Cells and run endings that are the kernel's limits, not the scheduler's failures."""
    return sum(1 for r in runs for c in r.cells if c.kernel_limit) + sum(
        1 for r in runs if r.kernel_limits)


def incomplete(runs: list[Run]) -> list[Cell]:
    """Cells that did not complete for a reason of ours (kernel-limit cells count as limits)."""
    return [c for r in runs for c in r.cells if not c.completed and not c.kernel_limit]


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def markdown_table(runs: list[Run]) -> str:
    head = ("| kernel | vCPUs | mode | workload | completed | unexpected | kernel limit "
            "| worst wait: monitor ms | worst wait: load ms | rescues | free MB after | notes |")
    rows = [head, "|" + "---|" * 12]
    for r in runs:
        for c in r.cells:
            notes = "; ".join(c.unexpected + c.kernel_limit + c.notes) or ""
            rows.append(f"| {c.kernel} | {c.cpus} | {c.mode} | {c.workload} | "
                        f"{'yes' if c.completed else 'NO'} | {len(c.unexpected)} | "
                        f"{'yes' if c.kernel_limit else '-'} | "
                        f"{_ms(c.monitor_wait_ms)} | {_ms(c.load_wait_ms)} | "
                        f"{'-' if c.rescues is None else c.rescues} | "
                        f"{'-' if c.mem_avail_mb is None else c.mem_avail_mb} | "
                        f"{notes.replace('|', '/')} |")
        for p, n, limit in ([(p, 1, "-") for p in r.problems]
                            + [(p, 0, "yes") for p in r.kernel_limits]):
            rows.append(f"| {r.kernel} | {r.cpus} | {r.mode} | (run) | - | {n} | {limit} | - | - | - "
                        f"| - | {p} |")
    return "\n".join(rows)


def pivot_table(runs: list[Run]) -> str:
    """The matrix at a glance: a row per workload, a column per cell (kernel, vCPUs, mode), each
    entry the monitor's worst wait in ms, `KL` for a kernel limit, `FAIL` for an unexpected
    outcome or an incomplete workload."""
    cols = [f"{r.kernel.split('+')[0]} {r.cpus}c {r.mode}" for r in runs]
    workloads: list[str] = []
    for r in runs:
        workloads += [c.workload for c in r.cells if c.workload not in workloads]
    rows = ["| workload | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]

    def entry(c: Cell | None) -> str:
        if c is None:
            return "-"
        if c.kernel_limit:
            return "KL"
        if c.unexpected or not c.completed:
            return "FAIL"
        return _ms(c.monitor_wait_ms)

    for w in workloads:
        cells = [next((c for c in r.cells if c.workload == w), None) for r in runs]
        rows.append(f"| {w} | " + " | ".join(entry(c) for c in cells) + " |")
    return "\n".join(rows)


def summary(runs: list[Run]) -> str:
    lines = [f"unexpected exits: {unexpected_count(runs)}"]
    limited = [f"{c.kernel}/{c.cpus}/{c.mode}/{c.workload}" for r in runs for c in r.cells
               if c.kernel_limit]
    lines.append(f"kernel limits: {kernel_limit_count(runs)}"
                 + (f" (RT starvation without the sched_ext DL server: {', '.join(limited)})"
                    if limited else ""))
    bad = incomplete(runs)
    lines.append(f"incomplete workloads: {len(bad)}"
                 + (" (" + ", ".join(f"{c.kernel}/{c.cpus}/{c.mode}/{c.workload}" for c in bad) + ")"
                    if bad else ""))
    return "\n".join(lines)


def write_json(runs: list[Run], path: Path, settings: dict) -> None:
    doc = {
        "settings": settings,
        "unexpected_exits": unexpected_count(runs),
        "kernel_limits": kernel_limit_count(runs),
        "runs": [{"kernel": r.kernel, "cpus": r.cpus, "mode": r.mode, "guest_rc": r.guest_rc,
                  "duration_s": round(r.duration_s, 1), "problems": r.problems,
                  "kernel_limits": r.kernel_limits,
                  "results_dir": r.results_dir, "cells": [asdict(c) for c in r.cells]}
                 for r in runs],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")

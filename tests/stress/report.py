"""The matrix report: the summary line, a Markdown table, and the JSON record."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
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


def unexpected_count(runs: list[Run]) -> int:
    return sum(len(c.unexpected) for r in runs for c in r.cells) + sum(len(r.problems) for r in runs)


def incomplete(runs: list[Run]) -> list[Cell]:
    return [c for r in runs for c in r.cells if not c.completed]


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def markdown_table(runs: list[Run]) -> str:
    head = ("| kernel | vCPUs | mode | workload | completed | unexpected | worst wait: monitor ms "
            "| worst wait: load ms | rescues | free MB after | notes |")
    rows = [head, "|" + "---|" * 11]
    for r in runs:
        for c in r.cells:
            notes = "; ".join(c.unexpected + c.notes) or ""
            rows.append(f"| {c.kernel} | {c.cpus} | {c.mode} | {c.workload} | "
                        f"{'yes' if c.completed else 'NO'} | {len(c.unexpected)} | "
                        f"{_ms(c.monitor_wait_ms)} | {_ms(c.load_wait_ms)} | "
                        f"{'-' if c.rescues is None else c.rescues} | "
                        f"{'-' if c.mem_avail_mb is None else c.mem_avail_mb} | "
                        f"{notes.replace('|', '/')} |")
        for p in r.problems:
            rows.append(f"| {r.kernel} | {r.cpus} | {r.mode} | (run) | - | 1 | - | - | - | - | {p} |")
    return "\n".join(rows)


def summary(runs: list[Run]) -> str:
    lines = [f"unexpected exits: {unexpected_count(runs)}"]
    bad = incomplete(runs)
    lines.append(f"incomplete workloads: {len(bad)}"
                 + (" (" + ", ".join(f"{c.kernel}/{c.cpus}/{c.mode}/{c.workload}" for c in bad) + ")"
                    if bad else ""))
    return "\n".join(lines)


def write_json(runs: list[Run], path: Path, settings: dict) -> None:
    doc = {
        "settings": settings,
        "unexpected_exits": unexpected_count(runs),
        "runs": [{"kernel": r.kernel, "cpus": r.cpus, "mode": r.mode, "guest_rc": r.guest_rc,
                  "duration_s": round(r.duration_s, 1), "problems": r.problems,
                  "results_dir": r.results_dir, "cells": [c.to_dict() for c in r.cells]}
                 for r in runs],
    }
    path.write_text(json.dumps(doc, indent=1) + "\n")

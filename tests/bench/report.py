"""Benchmark output: Markdown tables (value + ratio to EEVDF + target), the JSON archive, plots."""

from __future__ import annotations

import json
from pathlib import Path

from .aggregate import Cell, eevdf_drift
from .plan import EEVDF, PHASES


def fmt_value(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    if unit == "%":
        return f"{v:.2f} %"
    if unit == "s":
        return f"{v:.2f} s"
    if unit == "us":
        return f"{v / 1000:.1f} ms" if v >= 10000 else f"{v:.0f} us"
    return f"{v:g} {unit}"


def fmt_ratio(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def verdict(cell: Cell) -> str:
    """Against issue #7's target for pandemonium; '' where no target applies."""
    phase = PHASES.get(cell.phase)
    if cell.scheduler == EEVDF or phase is None or phase.target is None \
            or not cell.scheduler.startswith("pandemonium"):
        return ""
    if cell.ratio is None:
        return "no EEVDF ratio"
    ok = cell.ratio <= phase.target
    if cell.phase == "deadline" and cell.median is not None:
        # No misses at all cannot be improved on, whatever EEVDF did (0/0 reads as ratio 1.0).
        ok = (ok or cell.median == 0) and cell.median <= 1.0
    if ok:
        return "met"
    return f"missed (target <= {phase.target:g}x{' ' + phase.target_note if phase.target_note else ''})"


def phase_table(phase: str, cells: list[Cell]) -> str:
    p = PHASES[phase]
    drift = eevdf_drift(cells)
    rows = [f"### {phase}: {p.metric} (median of iterations; lower is better)", "",
            "| cores | scheduler | median | spread (min-max) | n | ratio to EEVDF | target |",
            "|---|---|---|---|---|---|---|"]
    for c in cells:
        if c.phase != phase:
            continue
        spread = "-" if not c.spread else \
            f"{fmt_value(c.spread[0], p.unit)} - {fmt_value(c.spread[1], p.unit)}"
        n = f"{len(c.values)}" + (f" ({c.failures} failed)" if c.failures else "")
        ratio = fmt_ratio(c.ratio)
        if c.scheduler == EEVDF and (phase, c.cores) in drift:
            ratio = f"(drift {drift[(phase, c.cores)]:.2f}x)"
        rows.append(f"| {c.cores} | {c.scheduler} | {fmt_value(c.median, p.unit)} | {spread} | "
                    f"{n} | {ratio} | {verdict(c)} |")
    return "\n".join(rows) + "\n"


def cost_table(cells: list[Cell]) -> str:
    """The scheduler process's own CPU and memory per phase (issue #6's cost numbers)."""
    rows = ["### scheduler cost (the scx_pandemonium process itself)", "",
            "| phase | cores | scheduler | CPU (% of one CPU) | VmRSS max | VmHWM |",
            "|---|---|---|---|---|---|"]
    for c in cells:
        if c.cpu_pct is None:
            continue
        rss = "-" if c.rss_kb is None else f"{c.rss_kb / 1024:.1f} MiB"
        hwm = "-" if c.hwm_kb is None else f"{c.hwm_kb / 1024:.1f} MiB"
        rows.append(f"| {c.phase} | {c.cores} | {c.scheduler} | {c.cpu_pct:.2f} % | {rss} | {hwm} |")
    return "\n".join(rows) + "\n" if len(rows) > 4 else ""


def markdown(title: str, env: dict, cells: list[Cell], phases: list[str],
             notes: list[str]) -> str:
    head = [f"# {title}", "",
            f"VM benchmark (QEMU {env.get('accel', '?')}, {env.get('vcpus', '?')} vCPUs booted, "
            f"kernel {env.get('kernel', '?')}): guest timings are 5-12x slower than bare metal and "
            "are only comparable with each other, within this boot.", ""]
    # Cost-only phases (idle, busy) and an unavailable RAPL have no values: only notes speak.
    body = [phase_table(p, cells) for p in phases
            if any(c.phase == p and (c.values or c.failures) for c in cells)]
    cost = cost_table(cells)
    tail = ["### notes", ""] + [f"- {n}" for n in notes] if notes else []
    return "\n".join(head + body + ([cost] if cost else []) + tail) + "\n"


def write_json(path: Path, payload: dict) -> None:
    path.write_text(json.dumps(payload, indent=1, sort_keys=True) + "\n")


def plot(out_dir: Path, cells: list[Cell], phases: list[str]) -> str:
    """One PNG per phase: median vs core count per scheduler. Returns a one-line status."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return "plots skipped: matplotlib unavailable"
    made = 0
    for phase in phases:
        sub = [c for c in cells if c.phase == phase and c.median is not None]
        if not sub:
            continue
        p = PHASES[phase]
        fig, ax = plt.subplots(figsize=(6, 4))
        for sched in dict.fromkeys(c.scheduler for c in sub):
            pts = sorted((c.cores, c.median) for c in sub if c.scheduler == sched)
            ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=sched)
        ax.set_xlabel("cores (online vCPUs)")
        ax.set_ylabel(f"{p.metric} ({p.unit})")
        ax.set_title(f"{phase} (VM, lower is better)")
        ax.set_xticks(sorted({c.cores for c in sub}))
        if p.unit == "us" and all(c.median > 0 for c in sub):
            ax.set_yscale("log")  # TCG tails span decades between schedulers
        ax.legend()
        fig.tight_layout()
        fig.savefig(out_dir / f"{phase}.png", dpi=100)
        plt.close(fig)
        made += 1
    return f"{made} plot(s) written"

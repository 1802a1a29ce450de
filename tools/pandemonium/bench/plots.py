"""Benchmark plots (PNG, matplotlib): the scoreboard per core count and one chart per phase.

ensure_matplotlib() installs matplotlib for the interpreter running the tool when it is missing
(pip, --user unless root or in a virtualenv); plot() skips with a message when it still cannot
import it.
"""

from __future__ import annotations

import importlib
import os
import site
import subprocess
import sys
import textwrap
from pathlib import Path

from ..common import log
from ..packages import install_hint

from .aggregate import Cell
from .plan import EEVDF, PHASES
from .scoreboard import schedulers_in


def pip_command(root: bool, in_venv: bool) -> list[str]:
    cmd = [sys.executable, "-m", "pip", "install", "--quiet", "matplotlib"]
    return cmd if root or in_venv else cmd + ["--user"]


def ensure_matplotlib(run=subprocess.run) -> str | None:
    """None when matplotlib imports (installing it first if needed); else why not."""
    try:
        import matplotlib  # noqa: F401
        return None
    except ImportError:
        pass
    cmd = pip_command(os.geteuid() == 0, in_venv=sys.prefix != sys.base_prefix)
    log.info("plots: matplotlib is missing for %s; installing it: %s", sys.executable,
             " ".join(cmd[1:]))
    try:
        proc = run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        lines = (proc.stdout or "").strip().splitlines()
        why = lines[-1] if lines else f"exit {proc.returncode}"
        if proc.returncode == 0:
            site.addsitedir(site.getusersitepackages())  # a --user install made this dir now
            importlib.invalidate_caches()
            import matplotlib  # noqa: F401,F811
            log.info("plots: matplotlib installed")
            return None
    except OSError as exc:
        why = str(exc)
    except ImportError as exc:
        why = f"installed but not importable: {exc}"
    msg = (f"matplotlib could not be installed for {sys.executable} ({why}); install it for "
           f"plots with pip install matplotlib, or the system package:\n{install_hint(['matplotlib'])}")
    log.warning("plots: %s", msg)
    return msg


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    return plt


def colors(cells: list[Cell]) -> dict[str, str]:
    """One colour per scheduler, the same in every plot of a report (EEVDF first)."""
    palette = [f"C{i}" for i in range(10)]
    return {s: palette[i % len(palette)] for i, s in enumerate(schedulers_in(cells))}


def _bars(ax, groups: list[str], series: dict[str, list[float | None]], color: dict[str, str],
          errs: dict[str, list[tuple[float, float] | None]] | None = None) -> None:
    """Grouped bars: one group per x label, one bar per series; None leaves a gap."""
    width = 0.8 / max(1, len(series))
    for k, (name, vals) in enumerate(series.items()):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(groups))]
        pts = [(x, v, (errs or {}).get(name, [None] * len(vals))[i])
               for i, (x, v) in enumerate(zip(xs, vals)) if v is not None]
        if not pts:
            continue
        yerr = [[v - (e[0] if e else v) for _, v, e in pts],
                [(e[1] if e else v) - v for _, v, e in pts]] if errs else None
        ax.bar([x for x, _, _ in pts], [v for _, v, _ in pts], width, label=name, yerr=yerr,
               capsize=2, color=color.get(name))
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=30, ha="right")


def scoreboard_plot(plt, out_dir: Path, cells: list[Cell], phases: list[str]) -> int:
    """Per core count: ratio to EEVDF per phase (groups) and scheduler (bars), log scale, with
    EEVDF's 1.0 as a line. Returns the number of files written."""
    made, color = 0, colors(cells)
    for cores in sorted({c.cores for c in cells}):
        at = [c for c in cells if c.cores == cores and c.ratio is not None]
        shown = [p for p in phases if any(c.phase == p for c in at)]
        scheds = [s for s in schedulers_in(at) if s != EEVDF]
        if not shown or not scheds:
            continue
        # A ratio of 0 (no deadline misses at all) has no place on a log axis: it is drawn as a
        # stub at a tenth of the smallest ratio and labelled 0.
        floor = min([c.ratio for c in at if c.ratio > 0] or [1.0]) / 10
        ratio = {(c.phase, c.scheduler): c.ratio or floor for c in at}
        fig, ax = plt.subplots(figsize=(max(6, 1.1 * len(shown) + 2), 4.5))
        _bars(ax, shown, {s: [ratio.get((p, s)) for p in shown] for s in scheds}, color)
        width = 0.8 / len(scheds)
        for i, p in enumerate(shown):
            for k, s in enumerate(scheds):
                if ratio.get((p, s)) == floor:
                    ax.text(i + (k - (len(scheds) - 1) / 2) * width, floor, "0", ha="center",
                            va="bottom", fontsize="small")
        ax.set_yscale("log")
        ax.axhline(1.0, color="black", linewidth=1, linestyle="--", label="EEVDF (1.0)")
        higher = [p for p in shown if PHASES[p].better == "higher"]
        ax.set_ylabel("ratio to EEVDF (log; lower is better"
                      + (f", but higher on {', '.join(higher)}" if higher else "") + ")")
        ax.set_title(f"scoreboard at {cores} cores")
        ax.legend(fontsize="small")
        fig.tight_layout()
        fig.savefig(out_dir / f"scoreboard-{cores}c.png", dpi=100)
        plt.close(fig)
        made += 1
    return made


def axis_label(metric: str, unit: str, width: int = 40) -> str:
    """A phase plot's y-axis label, wrapped to lines that fit beside the plot."""
    return textwrap.fill(f"{metric} ({unit})", width)


def phase_plot(plt, out_dir: Path, phase: str, cells: list[Cell],
               color: dict[str, str]) -> bool:
    """Median per scheduler (bars) per core count (groups), min-max of the runs as error bars."""
    sub = [c for c in cells if c.phase == phase and c.median is not None]
    if not sub:
        return False
    p = PHASES[phase]
    cores = sorted({c.cores for c in sub})
    scheds = schedulers_in(sub)
    at = {(c.cores, c.scheduler): c for c in sub}
    fig, ax = plt.subplots(figsize=(max(5, 1.2 * len(scheds) * len(cores) / 2 + 3), 4))
    _bars(ax, [f"{n} cores" for n in cores],
          {s: [at[(n, s)].median if (n, s) in at else None for n in cores] for s in scheds},
          color, {s: [at[(n, s)].spread if (n, s) in at else None for n in cores] for s in scheds})
    # The figure is 4 inches high: a metric that names its workload runs past it on one line.
    ax.set_ylabel(axis_label(p.metric, p.unit))
    if p.configured is not None:
        ax.axhline(p.configured, color="black", linewidth=1, linestyle="--",
                   label=f"configured ({p.configured:.3g})")
    best = {"configured": "closest to configured is best",
            "higher": "higher is better"}.get(p.better, "lower is better")
    ax.set_title(f"{phase}\n(median, min-max; {best})")
    if p.unit == "us" and all(c.spread[0] > 0 for c in sub):
        ax.set_yscale("log")  # TCG tails span decades between schedulers
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(out_dir / f"{phase}.png", dpi=100)
    plt.close(fig)
    return True


def plot(out_dir: Path, cells: list[Cell], phases: list[str]) -> str:
    """The scoreboard per core count and one PNG per phase. Returns a one-line status."""
    plt = _pyplot()
    if plt is None:
        return "plots skipped: matplotlib unavailable"
    made = scoreboard_plot(plt, out_dir, cells, phases)
    made += sum(1 for phase in phases if phase_plot(plt, out_dir, phase, cells, colors(cells)))
    return f"{made} plot(s) written"

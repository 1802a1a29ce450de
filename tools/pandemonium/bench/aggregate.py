"""Aggregate records across iterations: median of the per-iteration values, their spread, and the
ratio to EEVDF measured in the same boot.

Ratios: EEVDF runs bracket every iteration (run order EEVDF_0, S_1.., EEVDF_1, S_2.., EEVDF_2 ...),
because under TCG EEVDF itself drifted up to 2x within one boot. Iteration i of a scheduler is
compared with the mean of EEVDF_{i-1} and EEVDF_i (whichever of the two exist), and the reported
ratio is the median of those per-iteration ratios.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

from .parse import Record
from .plan import EEVDF


@dataclass
class Cell:
    """One (phase, cores, scheduler) result."""
    phase: str
    cores: int
    scheduler: str
    values: list[float]  # per iteration, in iteration order; failed iterations left out
    failures: int  # iterations whose phase failed (cost-only phases have no value but succeed)
    median: float | None
    spread: tuple[float, float] | None  # (min, max) over iterations
    ratio: float | None  # median per-iteration ratio to the bracketing EEVDF runs
    cpu_pct: float | None = None  # scheduler's own CPU, median over iterations
    rss_kb: int | None = None  # largest VmRSS seen
    hwm_kb: int | None = None
    errors: list[str] = field(default_factory=list)  # distinct reasons of the failed iterations

    def to_json(self) -> dict:
        return {"phase": self.phase, "cores": self.cores, "scheduler": self.scheduler,
                "values": self.values, "failures": self.failures, "median": self.median,
                "spread": list(self.spread) if self.spread else None, "ratio": self.ratio,
                "sched_cpu_pct": self.cpu_pct, "sched_rss_kb": self.rss_kb,
                "sched_hwm_kb": self.hwm_kb, "errors": self.errors}


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def bracket_ratio(value: float, before: float | None, after: float | None) -> float | None:
    """value / mean of the EEVDF runs around it; None without a usable EEVDF value. An EEVDF value
    of 0 (no deadline misses) gives no ratio either: 0/0 is not "as good as EEVDF", and 1/0 is not
    a number; the verdict judges such a cell by its value."""
    refs = [v for v in (before, after) if v is not None]
    if not refs:
        return None
    ref = sum(refs) / len(refs)
    return None if ref == 0 else value / ref


def aggregate(records: list[Record]) -> list[Cell]:
    """Cells sorted by phase order of first appearance, then cores, then scheduler order."""
    groups: dict[tuple[str, int, str], list[Record]] = {}
    for r in records:
        groups.setdefault((r.phase, r.cores, r.scheduler), []).append(r)
    eevdf = {(p, c): {r.iteration: r.value for r in recs}
             for (p, c, s), recs in groups.items() if s == EEVDF}
    cells = []
    for (phase, cores, sched), recs in groups.items():
        recs = sorted(recs, key=lambda r: r.iteration)
        ok = [r for r in recs if r.value is not None]
        values = [r.value for r in ok]
        ratios = []
        if sched != EEVDF and (phase, cores) in eevdf:
            ref = eevdf[(phase, cores)]
            for r in ok:
                q = bracket_ratio(r.value, ref.get(r.iteration - 1), ref.get(r.iteration))
                if q is not None:
                    ratios.append(q)
        costs = [r.sched_cpu_pct for r in recs if r.sched_cpu_pct is not None]
        rss = [r.sched_rss_kb for r in recs if r.sched_rss_kb is not None]
        hwm = [r.sched_hwm_kb for r in recs if r.sched_hwm_kb is not None]
        failures = sum(1 for r in recs if r.error)
        errors = list(dict.fromkeys(r.error for r in recs if r.error))
        cells.append(Cell(phase, cores, sched, values, failures, median(values),
                          (min(values), max(values)) if values else None, median(ratios),
                          median(costs), max(rss) if rss else None, max(hwm) if hwm else None,
                          errors))
    return cells


def eevdf_drift(cells: list[Cell]) -> dict[tuple[str, int], float]:
    """max/min of EEVDF's own runs per (phase, cores): how noisy the baseline was. No entry for a
    lone run (the CI smoke's): it shows no drift, and "1.00x" would read as a quiet baseline."""
    out = {}
    for c in cells:
        # Two values or more always have a spread (aggregate()).
        if c.scheduler == EEVDF and len(c.values) > 1 and c.spread[0] > 0:
            out[(c.phase, c.cores)] = c.spread[1] / c.spread[0]
    return out

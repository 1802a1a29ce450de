"""The oversub phase (issue #34): oversubscribed parallel runtimes.

guest/driver.sh phase_oversub runs one coopbench process alone with libgomp's active wait (the
yardstick: k processes cannot finish before k times its time), then 2 at once, each with a
thread per CPU, for each way a runtime waits at its barriers (libgomp's OMP_WAIT_POLICY=active
and passive, and a sched_yield() barrier in OpenBLAS's style, after one such process alone),
then 3 at once for libgomp's two waits, then cyclictest beside 2 active-wait processes, and prints

    oversub-begin PART / one coopbench JSON line per process / oversub-end PART
    oversub-state PART STATE        sched_ext's state when PART ended
    oversub-note PART TEXT          what made PART's figure unfit (a process ended early)

Each PART becomes one figure (plan.OVERSUB_FIGURES): the makespan, the later process's
completion time, with each process's own time and the context switches beside it; for the
latency part (LATENCY), cyclictest's P99 over the whole histogram.
"""

from __future__ import annotations

import json

from .parse import Record, cyclictest_percentiles, expand_figures, tagged_notes, \
    tagged_sections, tagged_states
from .plan import OVERSUB_FIGURES

# Figure -> the guest's PART and how many processes it runs at once.
FIGURES = {"oversub-active-1": ("omp-active-1", 1),
           "oversub-active": ("omp-active", 2), "oversub-passive": ("omp-passive", 2),
           "oversub-yield-1": ("yield-1", 1), "oversub-yield": ("yield", 2),
           "oversub-active-3": ("omp-active-3", 3),
           "oversub-passive-3": ("omp-passive-3", 3)}
# Figure -> the guest's PART: cyclictest beside the active-wait processes.
LATENCY = {"oversub-cyclictest": "omp-active-lat"}
assert [*FIGURES, *LATENCY] == [p.name for p in OVERSUB_FIGURES]


def reports(body: str) -> list[dict]:
    """coopbench's reports in a part's output, one per process that finished."""
    out = []
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith('{"coopbench"'):
            continue
        try:
            out.append(json.loads(line)["coopbench"])
        except (json.JSONDecodeError, KeyError):
            continue
    return out


def figures(text: str) -> dict[str, dict]:
    """Figure name -> {"value", "extra", "error", "state"} for one oversub step."""
    parts, states = tagged_sections(text, "oversub"), tagged_states(text, "oversub")
    out = {}
    for name, (part, procs) in FIGURES.items():
        value, extra, error = None, {}, None
        got = reports(parts.get(part, ""))
        if part not in parts:
            error = f"{name}: the {part} part did not run"
        elif len(got) < procs or not all(isinstance(r.get("wall_s"), (int, float)) for r in got):
            error = f"{name}: {len(got)} of {procs} coopbench processes reported"
        else:
            walls = [r["wall_s"] for r in got]
            value = max(walls)
            extra = {"process_s": walls, "threads": got[0].get("threads"),
                     "regions": got[0].get("regions"),
                     "nvcsw": sum(r.get("nvcsw", 0) for r in got),
                     "nivcsw": sum(r.get("nivcsw", 0) for r in got)}
        out[name] = {"value": value, "extra": extra, "error": error, "state": states.get(part)}
    notes = tagged_notes(text, "oversub")
    for name, part in LATENCY.items():
        value, extra, error = None, {}, None
        if part not in parts:
            error = f"{name}: the {part} part did not run"
        elif part in notes:
            error = f"{name}: {notes[part][0]}"
        else:
            try:
                (p50, value), mx = cyclictest_percentiles(parts[part], (0.5, 0.99))
                extra = {"p50_us": p50, "max_us": mx}
            except ValueError as exc:
                error = f"{name}: {exc}"
        out[name] = {"value": value, "extra": extra, "error": error, "state": states.get(part)}
    return out


def parse_oversub(text: str, rec: Record) -> None:
    """parse.PARSERS' entry: the figures go in extra["figures"] (expand() makes the records)."""
    rec.extra = {"figures": figures(text)}


def expand(records: list[Record]) -> list[Record]:
    """Each oversub step's record becomes one record per figure (parse.expand_figures)."""
    return expand_figures(records,
                          lambda phase: [*FIGURES, *LATENCY] if phase == "oversub" else None)

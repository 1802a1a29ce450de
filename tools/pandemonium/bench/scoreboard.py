"""The scoreboard: every scheduler's ratio to EEVDF per phase and core count, and whether
pandemonium (adaptive) is ahead of every other scheduler.

"Ahead" (issue #15: "at or ahead ... within the spread of the runs"), per phase and core count:
pandemonium's median is at most every other scheduler's worst run, i.e. for each other scheduler
S with a value there, median(pandemonium) <= max(S's runs). With one run each this is
median <= value; with several, pandemonium is ahead when its median is below S's median or
inside the spread of S's runs. Lower is better on every phase but the figures with a configured
value (the admin phase's, plan.ADMIN_FIGURES): there "worst" is farthest from the configured
value, so pandemonium is ahead when its median is at most as far from it as S's farthest run;
and the frame rates (better="higher", the frames phase's 1 % low FPS): there "worst" is the
lowest run, so pandemonium is ahead when its median is at least S's lowest run.
The other schedulers are all of
them: EEVDF, pandemonium-bpf and the external anchors. A scheduler without any value there (it did
not attach, or every run failed) is left out of the comparison; a phase where pandemonium has no
value counts as not ahead. A phase counts (is one of the M) when pandemonium ran it and at least
one other scheduler has a value there, unless it is a reference phase (the guest's idle floor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .aggregate import Cell
from .plan import EEVDF, PANDEMONIUM, PHASES


@dataclass
class PhaseScore:
    phase: str
    cores: int
    ahead: bool
    behind: list[str] = field(default_factory=list)  # schedulers it is not ahead of
    missing: list[str] = field(default_factory=list)  # other schedulers without a value


def _cells_at(cells: list[Cell], phase: str, cores: int) -> dict[str, Cell]:
    return {c.scheduler: c for c in cells if c.phase == phase and c.cores == cores}


def score_phase(cells: list[Cell], phase: str, cores: int) -> PhaseScore | None:
    """PhaseScore per the module's definition; None when the phase does not count."""
    if phase in PHASES and PHASES[phase].reference:
        return None
    at = _cells_at(cells, phase, cores)
    ours = at.get(PANDEMONIUM)
    others = {s: c for s, c in at.items() if s != PANDEMONIUM}
    valued = {s: c for s, c in others.items() if c.spread is not None}
    if ours is None or not valued:
        return None
    missing = sorted(s for s in others if s not in valued)
    if ours.median is None:
        return PhaseScore(phase, cores, False, sorted(valued), missing)
    behind = [s for s, c in valued.items() if not _at_least_as_good(phase, ours.median, c)]
    return PhaseScore(phase, cores, not behind, behind, missing)


def _at_least_as_good(phase: str, median: float, other: Cell) -> bool:
    """Lower is better: median <= the other's worst (highest) run. A configured figure:
    median at most as far from the configured value (log distance, so 1.5x over and 1.5x under
    weigh alike) as the other's farthest run."""
    p = PHASES.get(phase)
    if p is not None and p.better == "higher":
        return median >= other.spread[0]
    if p is None or p.better != "configured":
        return median <= other.spread[1]

    def dist(v: float) -> float:
        return math.inf if v <= 0 else abs(math.log(v / p.configured))

    return dist(median) <= max(dist(v) for v in other.values)


def scores(cells: list[Cell], phases: list[str]) -> dict[int, list[PhaseScore]]:
    """Per core count (ascending), the counting phases in plan order."""
    out: dict[int, list[PhaseScore]] = {}
    for cores in sorted({c.cores for c in cells}):
        out[cores] = [s for p in phases if (s := score_phase(cells, p, cores)) is not None]
    return out


def ahead_line(cores: int, phase_scores: list[PhaseScore]) -> str:
    n = sum(1 for s in phase_scores if s.ahead)
    behind = [f"{s.phase} ({', '.join(s.behind)})" for s in phase_scores if not s.ahead]
    return (f"{cores} cores: ahead of every other scheduler on {n} of {len(phase_scores)} phases"
            + (f"; behind on {'; '.join(behind)}" if behind else ""))


def schedulers_in(cells: list[Cell]) -> list[str]:
    """EEVDF first, then in order of first appearance (plan order)."""
    seen = list(dict.fromkeys(c.scheduler for c in cells))
    return ([EEVDF] if EEVDF in seen else []) + [s for s in seen if s != EEVDF]


def _entry(cell: Cell | None, unit: str) -> str:
    from .report import fmt_configured, fmt_ratio, fmt_value, verdict

    if cell is None:
        return ""
    if cell.median is None:
        return "failed" if cell.failures else "-"
    cfg = fmt_configured(cell)
    cfg = f" [{cfg}]" if cfg else ""
    if cell.scheduler == EEVDF:
        return fmt_value(cell.median, unit) + cfg
    v = verdict(cell)
    mark = " (met)" if v == "met" else " (missed)" if v.startswith("missed") else ""
    return (fmt_ratio(cell.ratio) if cell.ratio is not None else fmt_value(cell.median, unit)) \
        + cfg + mark


def table(cells: list[Cell], phases: list[str]) -> str:
    """Markdown: per core count, phases x schedulers (EEVDF's median, the others' ratio to
    EEVDF with pandemonium's target verdict), an 'ahead' column and the ahead line."""
    valued = [p for p in phases if any(c.phase == p and (c.values or c.failures) for c in cells)]
    if not valued:
        return ""
    scheds = schedulers_in([c for c in cells if c.phase in valued])
    by_cores = scores(cells, valued)
    out = ["## scoreboard", "",
           "Ratio to EEVDF in the same boot (median; lower is better); the EEVDF column is its "
           "own median. pandemonium's targets: (met) / (missed). ahead: pandemonium's median is "
           "at most every other scheduler's worst run (tools/pandemonium/bench/scoreboard.py)."
           + (" Figures with a configured value (admin-*, marked '=X'): [the median's ratio to "
              "it]; closest to it is best, and ahead means at most as far from it."
              if any(PHASES[p].configured is not None for p in valued) else "")
           + (" Higher is better on " + ", ".join(p for p in valued if PHASES[p].better == "higher")
              + " (frame rates): there a ratio above 1 is ahead of EEVDF, and ahead means at "
              "least every other scheduler's lowest run."
              if any(PHASES[p].better == "higher" for p in valued) else ""), ""]
    for cores, phase_scores in by_cores.items():
        score_of = {s.phase: s for s in phase_scores}
        out += [f"### {cores} cores", "",
                "| phase | " + " | ".join(scheds) + " | ahead |",
                "|---|" + "---|" * (len(scheds) + 1)]
        for p in valued:
            at = _cells_at(cells, p, cores)
            if not at:
                continue
            s = score_of.get(p)
            ahead = "-" if s is None else "yes" if s.ahead else f"no ({', '.join(s.behind)})"
            label = p + (f" (={PHASES[p].configured:.3g})" if PHASES[p].configured else "")
            out.append(f"| {label} | " + " | ".join(_entry(at.get(x), PHASES[p].unit) for x in scheds)
                       + f" | {ahead} |")
        out += ["", ahead_line(cores, phase_scores), ""]
    return "\n".join(out) + "\n"


def to_json(cells: list[Cell], phases: list[str]) -> dict:
    return {str(cores): {"ahead": sum(1 for s in ps if s.ahead), "phases": len(ps),
                         "per_phase": {s.phase: {"ahead": s.ahead, "behind": s.behind,
                                                 "no_value": s.missing} for s in ps}}
            for cores, ps in scores(cells, phases).items()}

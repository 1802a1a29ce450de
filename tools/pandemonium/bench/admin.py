"""The admin phase (issue #32): what guest/driver.sh phase_admin printed, turned into one figure
per control an administrator sets, and the figures turned into records the report aggregates
like any phase's (one per figure, named as plan.ADMIN_FIGURES).

The guest prints raw counters only ('admin-count FIG LABEL BEFORE AFTER'), tool output between
'admin-begin FIG' and 'admin-end FIG', and 'admin-note FIG TEXT' where something was refused or
missing. A figure the output cannot give (no cgroup controller, a group that got no CPU time)
is a record with an error saying why, never a crash of the report.
"""

from __future__ import annotations

import re

from .parse import HACKBENCH_TIME, Record, cyclictest_percentiles, expand_figures, \
    search_number, tagged_notes, tagged_sections, tagged_states
from .plan import ADMIN_FIGURES

_COUNT = re.compile(r"^admin-count (\S+) (\S+) (-?\d+) (-?\d+)\s*$")


def counters(text: str) -> dict[str, dict[str, int]]:
    """FIG -> LABEL -> AFTER - BEFORE."""
    out: dict[str, dict[str, int]] = {}
    for line in text.splitlines():
        m = _COUNT.match(line.strip())
        if m:
            fig, label, before, after = m.groups()
            out.setdefault(fig, {})[label] = int(after) - int(before)
    return out


def _delta(c: dict[str, dict[str, int]], fig: str, label: str) -> int:
    try:
        return c[fig][label]
    except KeyError:
        raise ValueError(f"no {label} counter") from None


def _ratio(c, fig: str, top: str, bottom: str) -> tuple[float, dict]:
    a, b = _delta(c, fig, top), _delta(c, fig, bottom)
    if b <= 0:
        raise ValueError(f"the {bottom} side got no CPU time ({top} {a})")
    return a / b, {f"{top}_cpu": a, f"{bottom}_cpu": b}


def _cpumax(c, s):
    used_us, window_cs = _delta(c, "cpumax", "capped"), _delta(c, "cpumax", "window_cs")
    if window_cs <= 0:
        raise ValueError("an empty window")
    window_us = window_cs * 1e4
    return used_us / window_us, {"free_cpus": _delta(c, "cpumax", "free") / window_us,
                                 "window_s": window_cs / 100}


def _idle_share(c, s):
    plain, idle = _delta(c, "idleshare", "plain"), _delta(c, "idleshare", "idle")
    if plain + idle <= 0:
        raise ValueError("neither side got CPU time")
    return plain / (plain + idle), {"plain_cpu_ns": plain, "idle_cpu_ns": idle}


def _cyclictest(fig: str):
    def parse(c, s):
        if fig not in s:
            raise ValueError("no cyclictest output")
        (p50, p99), mx = cyclictest_percentiles(s[fig], (0.5, 0.99))
        return p99, {"p50_us": p50, "max_us": mx}
    return parse


def _build(c, s):
    secs = search_number(HACKBENCH_TIME, s.get("build", ""), "'Time:' line from hackbench")
    extra = {}
    light, window = c.get("build", {}).get("light"), c.get("build", {}).get("window_cs")
    if light is not None and window:
        extra["build_cpus"] = light / (window * 1e4)  # the light group's CPUs meanwhile
    return secs, extra


# Figure name -> (the guest's FIG whose notes explain a missing figure, the guest's part that
# measures it, parser(counters, sections)).
FIGURES = {
    "admin-weight": ("weight", "weight", lambda c, s: _ratio(c, "weight", "w300", "w100")),
    "admin-cpumax": ("cpumax", "cpumax", _cpumax),
    "admin-nice": ("nice", "nice", lambda c, s: _ratio(c, "nice", "nice0", "nice19")),
    "admin-nice-lat": ("nicelat", "nice", _cyclictest("nicelat")),
    "admin-idle-lat": ("idlelat", "idle", _cyclictest("idlelat")),
    "admin-idle-share": ("idleshare", "idle", _idle_share),
    "admin-build": ("build", "build", _build),
}
assert list(FIGURES) == [p.name for p in ADMIN_FIGURES]


def figures(text: str) -> dict[str, dict]:
    """Figure name -> {"value": float | None, "extra": {...}, "error": str | None}."""
    c, s = counters(text), tagged_sections(text, "admin")
    n, states = tagged_notes(text, "admin"), tagged_states(text, "admin")
    out = {}
    for name, (fig, part, parse) in FIGURES.items():
        try:
            value, extra = parse(c, s)
            error = None
        except ValueError as exc:
            value, extra = None, {}
            why = "; ".join(n.get(fig, []))
            error = f"{name}: {exc}" + (f" ({why})" if why else "")
        if value is not None and n.get(fig):
            extra["notes"] = n[fig]
        out[name] = {"value": value, "extra": extra, "error": error,
                     "state": states.get(part)}
    return out


def parse_admin(text: str, rec: Record) -> None:
    """parse.PARSERS' entry: the step's record keeps every figure in extra["figures"]; its own
    value stays None (expand() makes the records the report shows)."""
    rec.extra = {"figures": figures(text)}


def expand(records: list[Record]) -> list[Record]:
    """Each admin step's record becomes one record per figure (parse.expand_figures)."""
    return expand_figures(records, lambda phase: list(FIGURES) if phase == "admin" else None)

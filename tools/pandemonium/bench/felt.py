"""The frames and audio phases (issue #33): what gamers and audio users feel beside a build.

guest/driver.sh phase_frames / phase_audio run a pandemonium-tools tool alone (the floor part)
and then beside bench-soak's build load (the build part), and print

    felt-begin PART / the tool's JSON line / felt-end PART
    felt-state PART STATE        sched_ext's state when PART ended
    build-load builds=B objects=O steps=S execs=E

This module turns that into one figure per plan.FRAMES_FIGURES / AUDIO_FIGURES entry (as admin.py
does for the admin phase), and writes the closing notes: every scheduler's figures side by side,
the targets of issue #33 (1 % low FPS at or above each anchor's, frames over budget <= 1 %,
xruns <= 0.1 %) and gaming mode against auto.

The game's figures follow MangoHud's frame-time view (src/cli/frames/metrics.rs): frame time is
present to present; the 1 % low FPS is MangoHud's HUD figure, the frame rate of the 1st
percentile (frame times sorted slowest first, the one at index 0.01 n - 1); its log summary's
"1 % min" (the mean rate of the slowest 1 %) is kept beside it. A frame is over budget when it
took longer than 1/144 s plus 10 % (7.64 ms).
"""

from __future__ import annotations

import re
import statistics

from .parse import Record, expand_figures, tagged_sections, tagged_states, tool_json
from .plan import AUDIO_FIGURES, EEVDF, FRAMES_FIGURES, OURS, PANDEMONIUM, PANDEMONIUM_GAMING, \
    PHASES, is_external

_BUILD = re.compile(r"^build-load builds=(\d+) objects=(\d+) steps=(\d+) execs=(\d+)\s*$", re.M)

# Figure -> (part, the tool JSON's key, factor to the figure's unit).
FIGURES = {
    "frames": {
        "frames-p50": ("build", "p50_ns", 1e-6),
        "frames-p99": ("build", "p99_ns", 1e-6),
        "frames-low": ("build", "fps_1pct_low", 1.0),
        "frames-over": ("build", "over_budget_ratio", 100.0),
        "frames-floor-low": ("floor", "fps_1pct_low", 1.0),
        "frames-floor-over": ("floor", "over_budget_ratio", 100.0),
    },
    "audio": {
        "audio-xruns": ("build", "xrun_ratio", 100.0),
        "audio-wake": ("build", "wake_p99_ns", 1e-3),
        "audio-floor-xruns": ("floor", "xrun_ratio", 100.0),
        "audio-floor-wake": ("floor", "wake_p99_ns", 1e-3),
        "audio-preempted": ("build", "preempted_ratio", 100.0),
        "audio-run-delay": ("build", "run_delay_p99_ns", 1e-3),
    },
}
assert list(FIGURES["frames"]) == [p.name for p in FRAMES_FIGURES]
assert list(FIGURES["audio"]) == [p.name for p in AUDIO_FIGURES]


def build_load(text: str) -> dict | None:
    """What the build got done beside the tool (build_load_stop's line), or None."""
    m = _BUILD.search(text)
    return dict(zip(("builds", "objects", "steps", "execs"), map(int, m.groups()))) if m else None


def _side(d: dict, tool: str) -> dict:
    """The tool report's figures worth keeping beside each figure (the record's extra)."""
    if tool == "frames":
        keys = {"p50_ms": ("p50_ns", 1e-6), "p99_ms": ("p99_ns", 1e-6),
                "max_ms": ("max_ns", 1e-6), "fps_1pct_low": ("fps_1pct_low", 1.0),
                "fps_1pct_min_avg": ("fps_1pct_min_avg", 1.0), "fps_avg": ("fps_avg", 1.0),
                "over_budget_pct": ("over_budget_ratio", 100.0),
                "budget_ms": ("budget_ns", 1e-6), "latency_p99_ms": ("latency_p99_ns", 1e-6),
                "wake_p99_us": ("wake_p99_ns", 1e-3)}
        out = {"frames": d.get("frames"), "steam_game_id": d.get("steam_game_id")}
    else:
        keys = {"xruns_pct": ("xrun_ratio", 100.0), "wake_p50_us": ("wake_p50_ns", 1e-3),
                "wake_p99_us": ("wake_p99_ns", 1e-3), "wake_max_us": ("wake_max_ns", 1e-3),
                "preempted_pct": ("preempted_ratio", 100.0),
                "run_delay_p99_us": ("run_delay_p99_ns", 1e-3),
                "run_delay_max_us": ("run_delay_max_ns", 1e-3)}
        out = {"periods": d.get("periods"), "xruns": d.get("xruns"), "skipped": d.get("skipped")}
    for name, (key, factor) in keys.items():
        if isinstance(d.get(key), (int, float)):
            out[name] = d[key] * factor
    return out


def figures(text: str, phase: str) -> dict[str, dict]:
    """Figure name -> {"value", "extra", "error", "state"} for one frames or audio step."""
    tool = phase  # each phase's tool has its name ("tool" in its JSON)
    parts, states = tagged_sections(text, "felt"), tagged_states(text, "felt")
    load = build_load(text)
    reports = {part: tool_json(body, tool) for part, body in parts.items()}
    out = {}
    for name, (part, key, factor) in FIGURES[phase].items():
        d = reports.get(part)
        value, extra, error = None, {}, None
        if part not in parts:
            error = f"{name}: the {part} part did not run"
        elif d is None:
            tail = [ln for ln in parts[part].splitlines() if ln.strip()][-1:]
            error = f"{name}: no {tool} report in the {part} part" + \
                (f" ({tail[0][:200]})" if tail else "")
        elif d.get("interrupted"):
            error = f"{name}: the {tool} run of the {part} part was interrupted"
        elif not isinstance(d.get(key), (int, float)) or \
                not d.get("frames" if tool == "frames" else "periods"):
            error = f"{name}: the {part} part measured nothing"
        else:
            value = d[key] * factor
            extra = _side(d, tool)
            if part == "build" and load is not None:
                extra["build_load"] = load
        out[name] = {"value": value, "extra": extra, "error": error, "state": states.get(part)}
    return out


def parse_felt(text: str, rec: Record) -> None:
    """parse.PARSERS' entry for both phases: every figure in extra["figures"]; the step's own
    value stays None (expand() makes the records the report shows)."""
    rec.extra = {"figures": figures(text, rec.phase), "build_load": build_load(text)}


def expand(records: list[Record]) -> list[Record]:
    """Each frames or audio step's record becomes one record per figure (parse.expand_figures)."""
    return expand_figures(records, FIGURES.get)


# -- closing notes -----------------------------------------------------------------------------

def _medians(records: list[Record]) -> dict[tuple[int, str, str], dict]:
    """(cores, scheduler, figure) -> {"value": median, "extra": the median run's extra}."""
    runs: dict[tuple[int, str, str], list[Record]] = {}
    for r in records:
        if r.phase in PHASES and PHASES[r.phase].part_of in FIGURES and r.value is not None:
            runs.setdefault((r.cores, r.scheduler, r.phase), []).append(r)
    out = {}
    for key, rs in runs.items():
        rs = sorted(rs, key=lambda r: r.value)
        out[key] = {"value": statistics.median(r.value for r in rs),
                    "extra": rs[(len(rs) - 1) // 2].extra or {}}
    return out


def _order(scheds: set[str]) -> list[str]:
    """EEVDF, ours, then the anchors."""
    return ([EEVDF] if EEVDF in scheds else []) + [s for s in OURS if s in scheds] \
        + sorted(filter(is_external, scheds))


def _fmt(v: float | None, unit: str) -> str:
    if v is None:
        return "-"
    return {"ms": f"{v:.1f} ms", "fps": f"{v:.0f} fps", "%": f"{v:.2f} %",
            "us": f"{v / 1000:.1f} ms" if v >= 1000 else f"{v:.0f} us"}.get(unit, f"{v:g}")


def _build_rate(m: dict, key: tuple) -> str:
    load = (m.get(key) or {}).get("extra", {}).get("build_load")
    return f", build {load['steps']} steps" if load else ""


def _game_line(cores: int, m: dict, scheds: list[str]) -> str | None:
    parts = []
    for s in scheds:
        at = lambda f: (m.get((cores, s, f)) or {}).get("value")  # noqa: E731
        if at("frames-low") is None and at("frames-p99") is None:
            continue
        extra = (m.get((cores, s, "frames-low")) or {}).get("extra", {})
        mins = extra.get("fps_1pct_min_avg")
        parts.append(f"{s} {_fmt(at('frames-p50'), 'ms')} / {_fmt(at('frames-p99'), 'ms')}, "
                     f"1 % low {_fmt(at('frames-low'), 'fps')}"
                     + (f" (1 % min {mins:.0f})" if mins is not None else "")
                     + f", over budget {_fmt(at('frames-over'), '%')}"
                     + _build_rate(m, (cores, s, "frames-low"))
                     + f"; alone 1 % low {_fmt(at('frames-floor-low'), 'fps')}, over "
                     f"{_fmt(at('frames-floor-over'), '%')}")
    if not parts:
        return None
    return (f"game beside a build at {cores} cores (144 Hz, 4 workers x 1 ms and a render "
            "thread, launched with SteamGameId; frame time P50 / P99; 1 % low = MangoHud's HUD "
            "figure, 1 % min = its log summary's; over budget = longer than 7.64 ms; build = "
            "compile steps the build ran meanwhile; median of runs): " + "; ".join(parts))


def _audio_line(cores: int, m: dict, scheds: list[str]) -> str | None:
    parts = []
    for s in scheds:
        at = lambda f: (m.get((cores, s, f)) or {}).get("value")  # noqa: E731
        if at("audio-xruns") is None and at("audio-wake") is None:
            continue
        parts.append(f"{s} xruns {_fmt(at('audio-xruns'), '%')}, wake P99 "
                     f"{_fmt(at('audio-wake'), 'us')}, preempted "
                     f"{_fmt(at('audio-preempted'), '%')}, waited P99 "
                     f"{_fmt(at('audio-run-delay'), 'us')}"
                     + _build_rate(m, (cores, s, "audio-xruns"))
                     + f"; alone {_fmt(at('audio-floor-xruns'), '%')}, "
                     f"{_fmt(at('audio-floor-wake'), 'us')}")
    if not parts:
        return None
    return (f"audio beside a build at {cores} cores (256 frames at 48 kHz = 5.33 ms, 0.5 ms of "
            "CPU per period; preempted = periods whose work was preempted, waited = the "
            "thread's wait for a CPU per period, both the kernel's accounting of it; median of "
            "runs): " + "; ".join(parts))


def _targets(cores: int, m: dict, scheds: list[str]) -> list[str]:
    out = []
    anchors = [s for s in scheds if is_external(s)]
    for ours in (s for s in scheds if s.startswith("pandemonium")):
        at = lambda f, s=ours: (m.get((cores, s, f)) or {}).get("value")  # noqa: E731
        low = at("frames-low")
        if low is not None:
            theirs = {a: (m.get((cores, a, "frames-low")) or {}).get("value") for a in anchors}
            theirs = {a: v for a, v in theirs.items() if v is not None}
            if theirs:
                ok = all(low >= v for v in theirs.values())
                out.append(f"{ours} at {cores} cores: 1 % low FPS {low:.0f} against "
                           + ", ".join(f"{a} {v:.0f}" for a, v in theirs.items())
                           + f" (target: at or above each anchor's): {'met' if ok else 'missed'}")
        for fig, what in (("frames-over", "frames over budget"), ("audio-xruns", "xruns")):
            v, limit = at(fig), PHASES[fig].limit
            if v is not None:
                out.append(f"{ours} at {cores} cores: {what} {v:.2f} % (target <= {limit:g} %): "
                           f"{'met' if v <= limit else 'missed'}")
    gaming = (m.get((cores, PANDEMONIUM_GAMING, "frames-low")) or {}).get("value")
    auto = (m.get((cores, PANDEMONIUM, "frames-low")) or {}).get("value")
    if gaming is not None and auto is not None:
        out.append(f"gaming mode against auto at {cores} cores: 1 % low FPS {gaming:.0f} against "
                   f"{auto:.0f} (target: ahead): {'met' if gaming > auto else 'missed'}")
    return out


def notes(result, cells=None) -> list[str]:
    """The closing notes of the frames and audio figures (verdicts.py's bench-scale list)."""
    m = _medians(expand(result.records))
    if not m:
        return []
    out = []
    for cores in sorted({k[0] for k in m}):
        scheds = _order({k[1] for k in m if k[0] == cores})
        out += [line for line in (_game_line(cores, m, scheds), _audio_line(cores, m, scheds))
                if line]
        out += _targets(cores, m, scheds)
    if out:
        out.append(AUTOGROUP_NOTE)
    return out


# build_load_start() runs the build in a session of its own, as a terminal does. With the
# kernel's autogroup on, EEVDF and ours weigh that whole session as one task against the game's
# or the audio tool's; the other sched_ext schedulers do not see autogroups.
AUTOGROUP_NOTE = (
    "the build runs in a session of its own (setsid): where the kernel's autogroup is on "
    "(CONFIG_SCHED_AUTOGROUP and kernel.sched_autogroup_enabled, as in the guest), EEVDF and "
    "scx_pandemonium give that whole session one task's share; scx_bpfland and the other "
    "anchors do not (README, What the administrator sets comes first)")

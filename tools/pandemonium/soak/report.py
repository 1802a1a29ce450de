"""The soak's Markdown report (a row per window, the verdicts) and its PNG plot."""

from __future__ import annotations

from pathlib import Path

from .parse import Events, Window
from .verdicts import WATCHDOG_NS, Verdict


def _ms(ns: int | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.1f}"


def cpu_pct(windows: list[Window]) -> list[float | None]:
    """The daemon's CPU use over each window, % of one CPU; None where the window before had
    another daemon instance (or none) to difference against."""
    out: list[float | None] = []
    prev = None
    for w in windows:
        pct = None
        if (prev is not None and w.pid is not None and prev.pid == w.pid
                and w.cpu_ms is not None and prev.cpu_ms is not None and w.t > prev.t):
            pct = 100.0 * (w.cpu_ms - prev.cpu_ms) / ((w.t - prev.t) * 1000)
        out.append(pct)
        prev = w
    return out


def markdown(windows: list[Window], events: Events, verdicts: list[Verdict], title: str) -> str:
    rows = [f"# {title}", "",
            "| window | t s | phase | daemon pid | ejections | longest wait: monitor ms "
            "| daemon wake_lat_max ms | probe P99 ms | probe max ms | RSS kB | CPU s | CPU % "
            "| procdb entries |",
            "|" + "---|" * 13]
    for w, pct in zip(windows, cpu_pct(windows)):
        rows.append(
            f"| {w.n} | {w.t} | {w.phase} | {w.pid or '-'} | "
            f"{'-' if w.ejections is None else w.ejections} | {_ms(w.monitor_wait_ns)} | "
            f"{_ms(w.wake_lat_max_ns)} | {_ms(w.probe_p99_ns)} | {_ms(w.probe_max_ns)} | "
            f"{w.rss_kb or '-'} | {'-' if w.cpu_ms is None else f'{w.cpu_ms / 1000:.1f}'} | "
            f"{'-' if pct is None else f'{pct:.1f}'} | {'-' if w.procdb is None else w.procdb} |")
    rows += ["", "Phases, in order (exit status of the phase's workloads): "
             + ", ".join(f"{name} {rc}" for name, rc in events.phases)]
    rows += ["", "Daemon starts (the procdb as each start found it):", ""]
    rows += [f"- pid {s.pid}, mode '{s.mode or 'auto'}', at {s.t} s: {s.load}"
             for s in events.starts]
    rows += ["", "Daemon stops:", ""]
    rows += [f"- SIG{s.signal} pid {s.pid}: exit {s.rc}" for s in events.stops]
    rows += ["", "| verdict | | |", "|---|---|---|"]
    rows += [f"| {v.name} | {'pass' if v.ok else 'FAIL'} | {v.detail.replace('|', '/')} |"
             for v in verdicts]
    return "\n".join(rows) + "\n"


def plot(windows: list[Window], path: Path, title: str) -> str:
    """Waits, RSS, CPU and procdb entries over the run, one panel each. Returns a status line."""
    from ..bench.plots import _pyplot, ensure_matplotlib

    why = ensure_matplotlib()
    plt = _pyplot() if why is None else None
    if plt is None:
        return f"plot skipped: {why or 'matplotlib unavailable'}"
    t = [w.t / 60 for w in windows]

    def series(vals):
        pts = [(x, v) for x, v in zip(t, vals) if v is not None]
        return [p[0] for p in pts], [p[1] for p in pts]

    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    ax = axes[0][0]
    for vals, label in (([w.monitor_wait_ns for w in windows], "monitor: longest wait"),
                        ([w.wake_lat_max_ns for w in windows], "daemon: wake_lat_max"),
                        ([w.probe_p99_ns for w in windows], "probe: wakeup P99")):
        xs, ys = series([None if v is None else max(v, 1000) / 1e6 for v in vals])
        ax.plot(xs, ys, marker="o", label=label)
    ax.axhline(WATCHDOG_NS / 1e6, color="red", linestyle="--", label="watchdog 5 s")
    ax.set_yscale("log")
    ax.set_ylabel("ms (log)")
    ax.set_title("waits per window")
    ax.legend(fontsize="small")
    panels = ((axes[0][1], [None if w.rss_kb is None else w.rss_kb / 1024 for w in windows],
               "daemon RSS (MiB)"),
              (axes[1][0], cpu_pct(windows), "daemon CPU (% of one CPU)"),
              (axes[1][1], [w.procdb for w in windows], "procdb entries"))
    for ax, vals, label in panels:
        xs, ys = series(vals)
        # CPU use is per instance: a line would join windows of different daemons.
        ax.plot(xs, ys, marker="o", linestyle="none" if "CPU" in label else "-")
        ax.set_title(label)
    # Daemon restarts: where the pid changes.
    for prev, w in zip(windows, windows[1:]):
        if prev.pid != w.pid:
            for ax in axes.flat:
                ax.axvline(w.t / 60, color="grey", linewidth=0.6, linestyle=":")
    for ax in axes[1]:
        ax.set_xlabel("minutes (dotted: daemon restarted)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return f"plot: {path}"

"""The soak's verdicts: no ejection, no runnable wait near the watchdog, no daemon memory growth,
the procdb intact through every stop, and a run that went all the way."""

from __future__ import annotations

from dataclasses import dataclass

from .parse import Events, Window, loaded_profiles

# The watchdog timeout our struct_ops asks for (main.bpf.c's timeout_ms): a task left runnable
# this long ejects the scheduler.
WATCHDOG_NS = 5_000_000_000
RSS_GROWTH_MAX_KB = 1024
# A daemon's first samples include its start (the BPF load, the first procdb save, the
# topology probe): its RSS is measured from the first sample at least this long after start.
WARMUP_S = 30


@dataclass
class Verdict:
    name: str
    ok: bool
    detail: str


def longest_wait_ns(windows: list[Window]) -> int | None:
    vals = [v for w in windows for v in (w.monitor_wait_ns, w.wake_lat_max_ns) if v is not None]
    return max(vals) if vals else None


def rss_growth(windows: list[Window], starts: dict[int, int | None]) -> list[tuple[int, int, int, int]]:
    """Per daemon instance with two samples or more after its warm-up: (pid, first kB, last kB,
    seconds between). A process's memory does not outlive it, so growth is per instance.
    `starts` maps a pid to its start time (soak seconds); an unknown start counts from 0."""
    by_pid: dict[int, list[Window]] = {}
    for w in windows:
        if w.pid is not None and w.rss_kb is not None:
            if w.t - (starts.get(w.pid) or 0) >= WARMUP_S:
                by_pid.setdefault(w.pid, []).append(w)
    return [(pid, ws[0].rss_kb, ws[-1].rss_kb, ws[-1].t - ws[0].t)
            for pid, ws in by_pid.items() if len(ws) >= 2]


def judge(windows: list[Window], events: Events, kernel_ejections: list[str],
          procdb_file: tuple[int | None, str] | None, expected_windows: int,
          phases: list[str] | tuple[str, ...] = ()) -> list[Verdict]:
    """`phases`: every phase the run must have gone through at least once."""
    out = []
    last_count = max((w.ejections for w in windows if w.ejections is not None), default=0)
    n_ej = max(len(kernel_ejections), last_count)
    out.append(Verdict("ejections", n_ej == 0,
                       f"{n_ej}" + (f": {kernel_ejections[0]}" if kernel_ejections else "")))

    worst = longest_wait_ns(windows)
    out.append(Verdict(
        "longest wait", worst is not None and worst < WATCHDOG_NS,
        "no measurement" if worst is None
        else f"{worst / 1e6:.0f} ms (watchdog {WATCHDOG_NS / 1e9:.0f} s)"))

    starts = {s.pid: s.t for s in events.starts if s.pid is not None}
    growth = rss_growth(windows, starts)
    if growth:
        pid, first, last, secs = max(growth, key=lambda g: g[2] - g[1])
        out.append(Verdict("RSS growth", all(g[2] - g[1] < RSS_GROWTH_MAX_KB for g in growth),
                           f"largest {last - first:+d} kB (pid {pid}: {first} -> {last} kB over "
                           f"{secs} s; {len(growth)} instance(s) measured; bar "
                           f"< {RSS_GROWTH_MAX_KB} kB)"))
    else:
        out.append(Verdict("RSS growth", False, "no daemon instance sampled twice after warm-up"))

    out.append(procdb_verdict(events, procdb_file))

    problems = []
    if len(windows) < expected_windows:
        problems.append(f"{len(windows)} of {expected_windows} windows")
    if not events.ended:
        problems.append("the guest script did not finish")
    ran = {name for name, _ in events.phases}
    missing = [p for p in phases if p not in ran]
    if missing:
        problems.append(f"phases never run: {', '.join(missing)}")
    problems += [f"{s.signal} stop of pid {s.pid}: {s.rc}" for s in events.stops
                 if s.rc == "hang" or (s.signal in ("TERM", "INT") and s.rc != "0")]
    problems += events.deaths
    if events.failed_starts:
        problems.append(f"{events.failed_starts} failed start(s)")
    out.append(Verdict("completed", not problems, "; ".join(problems) or
                       f"{len(windows)} windows, {len(events.starts)} starts, "
                       f"{len(events.stops)} stops"))
    return out


def procdb_verdict(events: Events, procdb_file: tuple[int | None, str] | None) -> Verdict:
    """Intact: every start after the first found a file it loaded, the file the last clean stop
    left checks out, and the last start loaded as many profiles as it holds."""
    if len(events.starts) < 2:
        return Verdict("procdb intact", False, "fewer than 2 daemon starts: nothing reloaded")
    bad = [s.load for s in events.starts[1:] if loaded_profiles(s.load) is None]
    if bad:
        return Verdict("procdb intact", False, f"a restart did not load it: {bad[0]}")
    if procdb_file is None:
        return Verdict("procdb intact", False, "the file did not come back from the guest")
    entries, problem = procdb_file
    if entries is None:
        return Verdict("procdb intact", False, f"the file is damaged: {problem}")
    last = loaded_profiles(events.starts[-1].load)
    if last != entries:
        return Verdict("procdb intact", False,
                       f"the last start loaded {last} profiles, the file holds {entries}")
    loads = ", ".join(str(loaded_profiles(s.load)) for s in events.starts[1:])
    return Verdict("procdb intact", entries > 0,
                   f"{entries} entries; profiles loaded at each restart: {loads}")
